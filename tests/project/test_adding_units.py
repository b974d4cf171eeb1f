"""docs/contributing.md, measured: a new unit is one file in its package, registered where it
is defined, and the contract suites pick it up with no other edit.

The test copies the package and the tests to a scratch checkout, adds the two files the
guide shows (a toy loss and a toy PU method, verbatim below), and runs there the tests that
loop over every registered unit: the contract tests (``tests/project/test_contracts.py``) and,
for the PU method, the bit-for-bit resume test (``tests/train/test_checkpoint.py``). The toy
PU method overrides no ``check``: the caller's ``check_run`` must work with the base one
(issue 35: it called ``check(cfg)`` without ``where``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: pubench/losses/toy.py, as docs/contributing.md shows it
TOY_LOSS = '''\
"""A toy contrastive loss: InfoNCE with a margin on the positive logit (docs/contributing.md)."""

from pubench.losses._pairs import check_logits, check_reduction, check_temperature, masked_logsumexp, reduce, \\
    two_view_logits
from pubench.losses.base import LOSSES


def toy_from_logits(pos_logits, neg_logits, margin, *, neg_mask=None, reduction="mean"):
    """-(pos - margin) + logsumexp over (pos - margin, negatives); shapes (n,), (n, K)."""
    check_reduction(reduction)
    neg_mask, _ = check_logits(pos_logits, neg_logits, neg_mask)
    pos = pos_logits - margin
    return reduce(masked_logsumexp(neg_logits, neg_mask) - pos, reduction)


@LOSSES.register("toy_loss", from_logits=toy_from_logits, test_config={"temperature": 0.5, "margin": 0.1})
def toy_loss(z1, z2, temperature: float, margin: float, *, reduction: str = "mean"):
    pos, neg = two_view_logits(z1, z2, check_temperature(temperature))
    return toy_from_logits(pos, neg, margin, reduction=reduction)
'''

#: pubench/pu/toy.py, as docs/contributing.md shows it
TOY_PU = '''\
"""A toy PU method: the backbone and a linear head trained with the uPU risk (docs/contributing.md)."""

from dataclasses import dataclass

from torch import nn

from pubench.pu.base import PU_METHODS, PUMethod
from pubench.pu.objective import RiskSettings, make_targets, resolve_prior, train_and_evaluate
from pubench.train.classifier import seeded_head
from pubench.utils.result import Result
from pubench.utils.seeding import sub_seeds


@dataclass(frozen=True)
class ToyConfig:
    name: str
    prior: float | None = None  # default: the split's


@PU_METHODS.register("toy_pu")
class ToyPU(PUMethod):
    config_cls = ToyConfig
    test_config = {}

    @classmethod
    def run(cls, cfg, backbone, train, data, seed, ctx, classifier=None):
        prior, source = resolve_prior(cfg.prior, data.prior, True, "pu_method")
        init_seed, order_seed, aug_seed = sub_seeds(seed, 3)
        model = nn.Sequential(backbone, seeded_head(backbone.out_dim, 1, init_seed)).to(ctx.device)
        targets = make_targets("upu", "pu", data.observed, data.y_true, 2)
        metrics, risks = train_and_evaluate(model, train, targets, RiskSettings("upu", prior), data, order_seed,
                                            aug_seed, ctx, cls.name)
        return Result(metrics, {"risk": "upu", "prior_used": prior, "prior_source": source,
                                "final_train_risk": risks[-1]})
'''


def _scratch_checkout(dest: Path) -> Path:
    """The package, the tests and the project file, without caches, under ``dest``."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("pubench", "tests"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    (dest / "experiments").mkdir()  # the registry of specs is not needed, only its place
    return dest


def _pytest(repo: Path, cache: Path, *args: str) -> str:
    env = {**os.environ, "PUBENCH_CACHE": str(cache), "PYTHONPATH": str(repo)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-rA",
                          *args], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    return out.stdout


def _passed(stdout: str) -> set[str]:
    return set(re.findall(r"^PASSED \S+::(\S+)", stdout, flags=re.M))


@pytest.mark.smoke
def test_a_new_loss_and_pu_method_are_one_file_each(tmp_path):
    repo = _scratch_checkout(tmp_path / "repo")
    (repo / "pubench" / "losses" / "toy.py").write_text(TOY_LOSS)
    (repo / "pubench" / "pu" / "toy.py").write_text(TOY_PU)
    out = _pytest(repo, tmp_path / "cache", "tests/project/test_contracts.py", "tests/train/test_checkpoint.py",
                  "-k", "toy_loss or toy_pu", "-m", "")  # the resume test is slow (tests/markers.py): select it too
    assert _passed(out) == {"test_loss[toy_loss]", "test_pu_method[toy_pu]",
                            "test_every_pu_method_resumes_bit_for_bit[toy_pu]"}, out[-3000:]


def test_the_guide_shows_these_files():
    """docs/contributing.md shows the two files this test adds, verbatim."""
    guide = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    for text in (TOY_LOSS, TOY_PU):
        assert text.strip() in guide
