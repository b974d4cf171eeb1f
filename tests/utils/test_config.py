"""build_config: unit configs stay dataclasses; params are validated by a strict pydantic
model generated from the dataclass, errors are one line with a dotted location."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pubench.utils.config import ConfigError, build_config


@dataclass(frozen=True)
class Inner:
    lr: float
    betas: list[float] | None = None


@dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner
    sizes: tuple[int, ...] = ()
    hidden: int | str | None = None
    schedule: dict = field(default_factory=lambda: {"name": "constant"})
    flag: bool = False


def test_builds_the_dataclass_with_nested_dataclasses_and_defaults():
    cfg = build_config(Outer, {"name": "x", "inner": {"lr": 1, "betas": [0.5, 1]}, "sizes": [1, 2]})
    assert isinstance(cfg, Outer) and isinstance(cfg.inner, Inner)
    assert cfg.inner.lr == 1.0 and isinstance(cfg.inner.lr, float) and cfg.inner.betas == [0.5, 1.0]
    assert cfg.sizes == (1, 2) and cfg.schedule == {"name": "constant"} and cfg.hidden is None
    assert build_config(Outer, {"name": "x", "inner": {"lr": 0.1}, "hidden": "features"}).hidden == "features"


@pytest.mark.parametrize("params,message", [
    ({"name": "x"}, "params: missing key 'inner'"),
    ({"name": "x", "inner": {}}, "params.inner: missing key 'lr'"),
    ({"name": "x", "inner": {"lr": 0.1, "momentun": 0.9}}, "params.inner: unknown key 'momentun' (known: betas, lr)"),
    ({"name": "x", "inner": {"lr": "1e-3"}}, "params.inner.lr: expected float, got '1e-3'"),
    ({"name": "x", "inner": {"lr": True}}, "params.inner.lr: expected float, got True"),
    ({"name": "x", "inner": {"lr": 0.1}, "flag": "yes"}, "params.flag: expected bool, got 'yes'"),
    ({"name": "x", "inner": {"lr": 0.1}, "sizes": [1, 2.5]}, "params.sizes[1]: expected int, got 2.5"),
    ({"name": "x", "inner": {"lr": 0.1}, "hidden": 2.5}, "params.hidden: 2.5 does not match int | str"),
    ({"name": "x", "inner": {"lr": 0.1}, "schedule": ["cosine"]}, "params.schedule: expected a mapping, got ['cosine']"),
    (["x"], "params: expected a mapping, got ['x']"),
])
def test_errors_are_one_line_with_the_dotted_key(params, message):
    with pytest.raises(ConfigError) as err:
        build_config(Outer, params, "params")
    assert str(err.value) == message
