"""Heads on top of a backbone: the contrastive projector and the linear (online / probe) head.

``projection_head(in_dim, hidden, out, layers=2, batchnorm=True, hidden_bias=True)`` builds
``[Linear(d, hidden, bias=hidden_bias) - BatchNorm1d(hidden) - ReLU] x (layers - 1) -
Linear(hidden, out)`` (``layers=1``: a single ``Linear(in_dim, out)``). The printed heads
of the papers are instances:

======================================  ==========================================================  ==========
source                                   call                                                         parameters
======================================  ==========================================================  ==========
001 A.1.3 (MLP) projector               ``projection_head(50, 300, 50)``                               30,950
001 A.1.4 (AllConv) projector           ``projection_head(1000, 1000, 1000)``                       2,004,000
001 A.1.5 (ResNet-18) projector         ``projection_head(512, 256, 128, hidden_bias=False)``          164,480
000/002 (DCL/HCL code, ResNet-50) head  ``projection_head(2048, 512, 128, hidden_bias=False)``       1,115,264
SimCLR v1 head (Chen et al. 2020)       ``projection_head(d, d, 128, batchnorm=False)``
001 ``online_head``                     ``linear_head(d, 1)``                                          d + 1
======================================  ==========================================================  ==========

The bias of the hidden Linear is redundant before BatchNorm; the printouts differ on it
(001's MLP and AllConv projectors keep it, its ResNet-18 projector and the DCL code drop
it), hence ``hidden_bias``: set it per spec to reproduce a printed count. ``hidden=None``
(or the spec string ``"features"``) means ``hidden = in_dim`` (SimCLR's choice).
Each returned module carries ``out_dim``.
"""

from __future__ import annotations

from torch import nn


def projection_head(in_dim: int, hidden: int | str | None, out: int, layers: int = 2, batchnorm: bool = True,
                    hidden_bias: bool = True, out_bias: bool = True) -> nn.Sequential:
    """MLP projector ``in_dim -> hidden (BN, ReLU) x (layers-1) -> out``."""
    if hidden is None or hidden == "features":
        hidden = in_dim
    if not isinstance(hidden, int) or isinstance(hidden, bool):
        raise TypeError(f"projection_head: hidden must be an int, None or 'features', got {hidden!r}")
    if layers < 1 or in_dim < 1 or out < 1 or hidden < 1:
        raise ValueError(f"projection_head: need layers, in_dim, hidden, out >= 1 (got {layers}, {in_dim}, {hidden}, {out})")
    mods: list[nn.Module] = []
    d = in_dim
    for _ in range(layers - 1):
        mods.append(nn.Linear(d, hidden, bias=hidden_bias))
        if batchnorm:
            mods.append(nn.BatchNorm1d(hidden))
        mods.append(nn.ReLU(inplace=True))
        d = hidden
    mods.append(nn.Linear(d, out, bias=out_bias))
    head = nn.Sequential(*mods)
    head.out_dim = out
    return head


def linear_head(in_dim: int, n_out: int) -> nn.Linear:
    """``Linear(in_dim, n_out)`` with bias: 001's ``online_head`` (n_out = 1), a linear probe,
    or the output layer of an end-to-end PU classifier."""
    head = nn.Linear(in_dim, n_out)
    head.out_dim = n_out
    return head
