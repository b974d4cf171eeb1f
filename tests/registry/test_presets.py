"""Presets (experiments/_presets/*.yaml): named param blocks included at any depth with
deep-merge semantics and overrides."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from pubench.registry import SpecError, get_spec, load_all
from pubench.registry.presets import expand_presets, presets
from tests.conftest import selftest_spec


def _presets(tmp_registry, text: str, name: str = "test.yaml") -> None:
    folder = tmp_registry.root / "experiments" / "_presets"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text))


def _spec_with(experiment_params: str, tier_params: str = "{sleep: 0.0}") -> str:
    return (selftest_spec()
            .replace("  params: {value: 0.0}", f"  params: {experiment_params}")
            .replace("    params: {sleep: 0.0}", f"    params: {tier_params}"))


PRESETS = """\
    adam:                  # a block of a block
      name: adam
      lr: 1.0e-3
      weight_decay: 0.0
    recipe:                # a preset using a preset, two levels down
      epochs: 10
      optimizer: {preset: adam, weight_decay: 1.0e-6}
      schedule: {name: cosine, warmup_epochs: 0}
    extra_epochs:
      epochs: 20
      batch_size: 64
    """


def test_preset_at_depth_with_overrides(tmp_registry):
    _presets(tmp_registry, PRESETS)
    tmp_registry(_spec_with("{value: 0.0, data: {train: {preset: recipe, optimizer: {lr: 0.5}}}}"))
    train = get_spec("table1-bcl").resolve("paper", "A", "x")["params"]["data"]["train"]
    assert train == {"epochs": 10, "schedule": {"name": "cosine", "warmup_epochs": 0},
                     "optimizer": {"name": "adam", "lr": 0.5, "weight_decay": 1.0e-6}}


def test_presets_merge_in_order_then_the_mapping_wins(tmp_registry):
    _presets(tmp_registry, PRESETS)
    block = expand_presets({"t": {"preset": ["recipe", "extra_epochs"], "batch_size": 8}}, "f", "x")["t"]
    assert block["epochs"] == 20 and block["batch_size"] == 8 and block["optimizer"]["name"] == "adam"


def test_null_override_deletes_also_from_earlier_layers(tmp_registry):
    _presets(tmp_registry, PRESETS)
    tmp_registry(_spec_with("{value: 0.0, data: {train: {preset: recipe}}}",
                            tier_params="{sleep: 0.0, data: {train: {preset: recipe, schedule: null}}}"))
    spec = get_spec("table1-bcl")
    assert "schedule" in spec.resolve("paper", "A", "x")["params"]["data"]["train"]
    assert "schedule" not in spec.resolve("smoke", "A", "x")["params"]["data"]["train"]


def test_tier_layer_may_use_a_preset_for_all_its_params(tmp_registry):
    _presets(tmp_registry, "fast: {sleep: 0.0, value: 9.0}\n")
    tmp_registry(_spec_with("{value: 0.0}", tier_params="{preset: fast}"))
    spec = get_spec("table1-bcl")
    assert spec.resolve("smoke", "B", "y")["params"] == {"value": 9.0, "sleep": 0.0}
    assert spec.resolve("paper", "B", "y")["params"] == {"value": 2.0}


@pytest.mark.parametrize("params,key,problem", [
    ("{value: 0.0, data: {preset: nowhere}}", "experiment.params.data.preset", "unknown preset 'nowhere'"),
    ("{value: 0.0, data: {preset: adamm}}", "experiment.params.data.preset", "did you mean 'adam'?"),
    ("{value: 0.0, data: {preset: [adam, 3]}}", "experiment.params.data.preset", "expected a preset name"),
])
def test_bad_preset_reference_is_a_spec_error(tmp_registry, params, key, problem):
    _presets(tmp_registry, PRESETS)
    path = tmp_registry(_spec_with(params))
    with pytest.raises(SpecError) as err:
        get_spec("table1-bcl")
    assert (err.value.file, err.value.key) == (str(path), key) and problem in err.value.problem


def test_preset_cycle_and_duplicate_names_are_errors(tmp_registry):
    _presets(tmp_registry, "a: {preset: b}\nb: {x: {preset: a}}\n")
    with pytest.raises(SpecError, match="preset cycle: a -> b -> a"):
        expand_presets({"p": {"preset": "a"}}, "f", "x")
    _presets(tmp_registry, "a: {y: 1}\n", name="other.yaml")
    with pytest.raises(SpecError, match="preset defined twice"):
        presets()


def test_every_real_preset_is_used_and_explained():
    """Each preset of experiments/_presets is used by some spec and has a comment saying
    where its values come from (the line defining it)."""
    from pubench.registry.presets import presets_folder

    texts = "".join(p.read_text() for p in sorted(presets_folder().parent.glob("*/*.yaml")))
    for name, (block, file) in presets().items():
        line = next(ln for ln in open(file, encoding="utf-8") if ln.startswith(f"{name}:"))
        assert "#" in line, f"{name}: say where the values come from"
        assert f"preset: {name}" in texts or f"preset: [{name}" in texts, f"preset {name} is never used"
        assert isinstance(yaml.safe_load(yaml.safe_dump(block)), dict)
    load_all()  # every spec expands
