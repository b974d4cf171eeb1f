"""Shared texts (experiments/_shared.yaml): a decision or note several specs use word for
word, written once and named by ``{shared: NAME}`` in a spec's ``decisions``,
``reported.notes`` or ``reported.pm``."""

from __future__ import annotations

import pytest
import yaml

from pubench.registry import SpecError, get_spec, load_all
from pubench.registry.shared import shared_path, shared_texts
from tests.conftest import selftest_spec

SHARED = ('seeds_five: "Seeds: 5 per cell, as the paper states."\nepochs_ours: "Epochs: 30, our choice."\n'
          'pm_std: "std over 5 runs"\n')


def _shared(tmp_registry, text: str = SHARED) -> None:
    (tmp_registry.root / "experiments" / "_shared.yaml").write_text(text)


def test_a_shared_text_reads_as_if_written_in_the_spec(tmp_registry):
    _shared(tmp_registry)
    tmp_registry(selftest_spec(extra='decisions:\n  - "Our own."\n  - {shared: epochs_ours}\n  - {shared: seeds_five}\n')
                 .replace("  pm: std over 3 runs", "  pm: {shared: pm_std}\n  notes: [{shared: seeds_five}, own note]"))
    spec = get_spec("table1-bcl")
    assert spec.decisions == ["Our own.", "Epochs: 30, our choice.", "Seeds: 5 per cell, as the paper states."]
    assert spec.pm == "std over 5 runs"
    assert spec.reported_notes == ["Seeds: 5 per cell, as the paper states.", "own note"]
    # what the plot cache and anything reading the raw spec see
    assert spec.raw["decisions"] == spec.decisions and spec.raw["reported"]["pm"] == spec.pm
    assert spec.raw["reported"]["notes"] == spec.reported_notes


@pytest.mark.parametrize("item, problem", [
    ("{shared: epochs_our}", "unknown shared text 'epochs_our'; did you mean 'epochs_ours'?"),
    ("{shared: nowhere}", "unknown shared text 'nowhere'"),
])
def test_an_unknown_shared_text_is_a_spec_error(tmp_registry, item, problem):
    _shared(tmp_registry)
    path = tmp_registry(selftest_spec(extra=f"decisions: [{item}]\n"))
    with pytest.raises(SpecError) as err:
        get_spec("table1-bcl")
    assert (err.value.file, err.value.key) == (str(path), "decisions[0].shared") and problem in err.value.problem


def test_a_shared_text_takes_only_its_name(tmp_registry):
    _shared(tmp_registry)
    tmp_registry(selftest_spec(extra="decisions: [{shared: seeds_five, text: more}]\n"))
    with pytest.raises(SpecError, match="decisions"):
        get_spec("table1-bcl")


def test_an_empty_shared_text_is_an_error(tmp_registry):
    _shared(tmp_registry, 'blank: ""\n')
    with pytest.raises(SpecError, match="non-empty"):
        shared_texts()


def test_every_real_shared_text_is_used_twice():
    """A text of _shared.yaml is named by two specs or more (one spec's own text belongs in
    that spec), and every spec resolves its names."""
    load_all()
    texts = "".join(p.read_text(encoding="utf-8") for p in sorted(shared_path().parent.glob("*/*.yaml")))
    names = yaml.safe_load(shared_path().read_text(encoding="utf-8"))
    assert names == shared_texts()
    for name in names:
        uses = texts.count(f"{{shared: {name}}}")
        assert uses >= 2, f"shared text {name} is named by {uses} spec(s)"
