"""The momentum update of a slow copy of a network (MoCo's key encoder, WConPU's and PiCO's
key network, the mean teachers of P3Mix and Self-PU): one function for all of them."""

from __future__ import annotations

import torch


@torch.no_grad()
def momentum_update_(target: list[torch.Tensor], source: list[torch.Tensor], lam: float) -> None:
    """In place, ``theta_t := lam theta_t + (1 - lam) theta_s`` for each pair of tensors
    (He et al. 2020 eq. 2; 004 eq. 6)."""
    if len(target) != len(source):
        raise ValueError(f"momentum update over {len(target)} target and {len(source)} source tensors")
    source = [s.detach() for s in source]
    torch._foreach_mul_(target, lam)
    torch._foreach_add_(target, source, alpha=1.0 - lam)
