"""What the numerics pins cost, and that they change the numbers (so they matter).

Usage: python benchmarks/numerics.py [--rounds 5] [--batch 128]

For three backbones at their reduced-tier size (mlp_001 on MNIST shapes, allconv_001 at
width 0.5 and resnet18_cifar at width 1/4 on CIFAR shapes), a training step (forward,
backward, SGD update) at 1 thread, in a fresh process per profile (the variables are read
when the libraries load):

* ``native``: every library picks its code path (AVX-512 on this CPU where it has it);
* ``avx2``: the canonical pins of ``pubench.numerics.CANONICAL_CPU_ENV``;
* ``compatible``: MKL_CBWR=COMPATIBLE with ATen's and oneDNN's most generic paths.

Prints the best step time of each profile, its ratio to ``native``, and the loss after a
few fixed steps: the same within a profile run twice, different across profiles.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pubench.numerics import CANONICAL_CPU_ENV, MALLOC_ENV, THREAD_ENV  # noqa: E402

PROFILES = {
    "native": {},
    "avx2": CANONICAL_CPU_ENV,
    "compatible": {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}

CHILD = r'''
import sys, time, torch
torch.set_num_threads(1); torch.manual_seed(0)
from pubench.models import build_backbone, linear_head
rounds, batch = int(sys.argv[1]), int(sys.argv[2])
for name, kw, (c, s) in [("mlp_001", {}, (1, 28)), ("allconv_001", {"width": 0.5}, (3, 32)),
                         ("resnet18_cifar", {"width": 0.25}, (3, 32))]:
    m = build_backbone(name, c, seed=0, **kw); h = linear_head(m.out_dim, 1)
    opt = torch.optim.SGD(list(m.parameters()) + list(h.parameters()), lr=0.01)
    x = torch.randn(batch, c, s, s, generator=torch.Generator().manual_seed(0))
    def step():
        opt.zero_grad(); loss = h(m(x)).square().mean(); loss.backward(); opt.step(); return loss.item()
    step(); best = 1e9
    for _ in range(rounds):
        t = time.perf_counter(); step(); best = min(best, time.perf_counter() - t)
    print(name, best, repr(step()), torch.backends.cpu.get_cpu_capability())
'''


def run(profile: dict, rounds: int, batch: int) -> dict[str, tuple[float, str, str]]:
    env = {k: v for k, v in os.environ.items() if k not in CANONICAL_CPU_ENV}
    env.update(MALLOC_ENV)
    env.update(THREAD_ENV)
    env.update(profile)
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", CHILD, str(rounds), str(batch)], env=env, capture_output=True,
                         text=True, check=True)
    res = {}
    for line in out.stdout.splitlines():
        name, t, loss, cap = line.split()
        res[name] = (float(t), loss, cap)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args()
    results = {p: [run(env, a.rounds, a.batch) for _ in range(2)] for p, env in PROFILES.items()}
    base = {k: min(r[k][0] for r in results["native"]) for k in results["native"][0]}
    print(f"{'profile':12s} {'model':16s} {'step ms':>8s} {'x native':>9s} {'ATen':>8s}  loss after 7 steps "
          "(run 1 | run 2)")
    for p, runs in results.items():
        for k in runs[0]:
            t = min(r[k][0] for r in runs)
            print(f"{p:12s} {k:16s} {1e3 * t:8.2f} {t / base[k]:9.2f} {runs[0][k][2]:>8s}  "
                  f"{runs[0][k][1]} | {runs[1][k][1]}")
    for k in base:
        same_within = all(results[p][0][k][1] == results[p][1][k][1] for p in PROFILES)
        differ = len({results[p][0][k][1] for p in PROFILES}) > 1
        print(f"{k}: repeatable within each profile: {same_within}; profiles give different numbers: {differ}")


if __name__ == "__main__":
    main()
