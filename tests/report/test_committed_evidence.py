"""Issue 36's acceptance on the committed store: every committed reduced table shows a regime
verdict per block where it has one, every block out of regime says why, and near-one-class seeds
that neither a block out of regime nor the spec's measured ``one_class_why`` accounts for are at
most 5% of a table's records with binary metrics."""

from pathlib import Path

import pytest

from pubench.registry import load_all
from pubench.report import collect
from pubench.report.regime import OUT, RegimeMap, unexplained_one_class
from pubench.store import ResultStore

RESULTS = Path(__file__).resolve().parents[2] / "results"
COMMITTED = sorted(p.name for p in (RESULTS / "reduced").iterdir()) if (RESULTS / "reduced").is_dir() else []
MAX_UNEXPLAINED = 0.05


@pytest.fixture(scope="module")
def store():
    return ResultStore(RESULTS, memo=True)


@pytest.mark.parametrize("spec_id", COMMITTED)
def test_committed_reduced_tables_explain_what_is_out_of_regime_or_one_class(spec_id, store):
    spec = load_all()[spec_id]
    res = collect(spec, "reduced", store)
    regime = RegimeMap(res)
    out = {v.block.name for v in regime.verdicts if v.verdict == OUT}
    assert not [b.name for b in spec.regime if b.name in out and not b.why_at("reduced")], \
        "a block out of regime at the reduced tier needs a measured `why: {reduced: ...}`"
    binary = sum(len(seeds) for seeds in res.binary.values())
    unexplained = unexplained_one_class(res, regime)
    assert sum(unexplained.values()) <= MAX_UNEXPLAINED * binary, (
        f"{sum(unexplained.values())} of {binary} records near-one-class without a reason: {unexplained}")
