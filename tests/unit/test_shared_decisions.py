"""Shared decisions (experiments/_decisions.yaml): a decision several specs make word for
word, written once and named by ``- {shared: NAME}`` in a spec's ``decisions``."""

from __future__ import annotations

import pytest
import yaml

from pubench.registry import SpecError, get_spec, load_all
from pubench.registry.decisions import decisions_path, shared_decisions
from tests.conftest import selftest_spec

SHARED = 'seeds_five: "Seeds: 5 per cell, as the paper states."\nepochs_ours: "Epochs: 30, our choice."\n'


def _shared(tmp_registry, text: str = SHARED) -> None:
    (tmp_registry.root / "experiments" / "_decisions.yaml").write_text(text)


def test_a_shared_decision_reads_as_if_written_in_the_spec(tmp_registry):
    _shared(tmp_registry)
    tmp_registry(selftest_spec(extra='decisions:\n  - "Our own."\n  - {shared: epochs_ours}\n  - {shared: seeds_five}\n'))
    spec = get_spec("table1-bcl")
    assert spec.decisions == ["Our own.", "Epochs: 30, our choice.", "Seeds: 5 per cell, as the paper states."]
    assert spec.raw["decisions"] == spec.decisions  # what the reports and the plot cache read


@pytest.mark.parametrize("item, problem", [
    ("{shared: epochs_our}", "unknown shared decision 'epochs_our'; did you mean 'epochs_ours'?"),
    ("{shared: nowhere}", "unknown shared decision 'nowhere'"),
])
def test_an_unknown_shared_decision_is_a_spec_error(tmp_registry, item, problem):
    _shared(tmp_registry)
    path = tmp_registry(selftest_spec(extra=f"decisions: [{item}]\n"))
    with pytest.raises(SpecError) as err:
        get_spec("table1-bcl")
    assert (err.value.file, err.value.key) == (str(path), "decisions[0].shared") and problem in err.value.problem


def test_a_shared_decision_takes_only_its_name(tmp_registry):
    _shared(tmp_registry)
    tmp_registry(selftest_spec(extra="decisions: [{shared: seeds_five, text: more}]\n"))
    with pytest.raises(SpecError, match="decisions"):
        get_spec("table1-bcl")


def test_an_empty_shared_decision_is_an_error(tmp_registry):
    _shared(tmp_registry, 'blank: ""\n')
    with pytest.raises(SpecError, match="non-empty"):
        shared_decisions()


def test_every_real_shared_decision_is_used_twice():
    """A decision of _decisions.yaml is named by two specs or more (one spec's own decision
    belongs in that spec), and every spec resolves its names."""
    specs = load_all()
    texts = "".join(p.read_text(encoding="utf-8") for p in sorted(decisions_path().parent.glob("*/*.yaml")))
    for name in yaml.safe_load(decisions_path().read_text(encoding="utf-8")):
        uses = texts.count(f"{{shared: {name}}}")
        assert uses >= 2, f"shared decision {name} is named by {uses} spec(s)"
    assert any(shared_decisions()[n] in s.decisions for s in specs.values() for n in shared_decisions())
