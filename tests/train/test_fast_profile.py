"""The opt-in fast numerics profile (issue 61): channels_last and torch.compile for every
trainer, its own job ids, never compared with the canonical profile's records."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch
from torch import nn

from pubench import numerics
from pubench.frameworks import FRAMEWORKS
from pubench.jobs import expand
from pubench.pu import PU_METHODS
from pubench.registry import get_spec
from pubench.train import accel
from pubench.train.context import PLAIN, JobContext
from pubench.train.loop import Trainer
from pubench.train.optim import optimizer_config
from tests.conftest import selftest_spec
from tests.project.test_contracts import TRAIN, TinyEncoder, images, pu_data

FAST = JobContext(numerics=numerics.resolve(fast=True))


# ------------------------------------------------------------------ the profile and its ids
def test_the_fast_profile_has_its_own_job_ids_and_leaves_the_canonical_ones_alone(tmp_registry):
    tmp_registry(selftest_spec())
    spec = get_spec("table1-bcl")
    canonical = expand(spec, "smoke", numerics=numerics.resolve()).jobs
    fast = expand(spec, "smoke", numerics=numerics.resolve(fast=True)).jobs
    assert {j.id for j in canonical}.isdisjoint({j.id for j in fast})
    assert all("fast" not in j.numerics for j in canonical)  # the canonical dict, hence its ids, as before
    assert all(j.numerics["fast"] is True for j in fast)
    n = numerics.Numerics.from_dict(fast[0].numerics)
    assert n.fast and not n.canonical and numerics.Numerics.from_dict(canonical[0].numerics).canonical
    with pytest.raises(numerics.NumericsError):
        numerics.resolve(fast="yes")


# ------------------------------------------------------------------ what is compiled
class _Calls:
    """The modules a training step calls itself (not through another module's forward), and
    the modules compiled (``nn.Module.compile`` recorded, not run)."""

    def __init__(self, monkeypatch):
        self.compiled, self.roots, self.depth, self.in_step = set(), {}, 0, False
        monkeypatch.setattr(nn.Module, "compile", lambda m, *a, **k: self.compiled.add(id(m)))
        real_run = Trainer.run

        def run(trainer, epochs, batches, step, **kw):
            def watched(*a):
                self.in_step = True
                try:
                    return step(*a)
                finally:
                    self.in_step = False
            return real_run(trainer, epochs, batches, watched, **kw)

        monkeypatch.setattr(Trainer, "run", run)

    @contextlib.contextmanager
    def hooks(self):
        def pre(module, args):
            if self.in_step and self.depth == 0:
                self.roots[id(module)] = type(module).__name__
            self.depth += 1

        def post(module, args, out):
            self.depth -= 1

        handles = [nn.modules.module.register_module_forward_pre_hook(pre),
                   nn.modules.module.register_module_forward_hook(post)]
        try:
            yield self
        finally:
            for h in handles:
                h.remove()

    def uncompiled(self) -> list[str]:
        return sorted(name for mid, name in self.roots.items() if mid not in self.compiled)


def _extra(unit):
    from pubench.models.heads import projection_head

    torch.manual_seed(3)
    return {"projector": projection_head(8, 8, 4)} if unit.uses_projector else {}


@pytest.mark.parametrize("name", PU_METHODS.names())
def test_every_pu_method_compiles_every_module_its_steps_call(name, monkeypatch):
    """With the fast profile every module a step of the method calls is compiled: WConPU's and
    PiCO's query network (a ModuleDict whose parts the step calls) and key encoder included."""
    unit = PU_METHODS.get(name)
    cfg = unit.config({"name": name, **unit.test_config}, "pu_method")
    calls = _Calls(monkeypatch)
    with calls.hooks():
        unit.run(cfg, TinyEncoder(2), TRAIN, pu_data(), seed=7, ctx=FAST, **_extra(unit))
    assert calls.roots, "no step ran a module"
    assert calls.uncompiled() == []


@pytest.mark.parametrize("name", FRAMEWORKS.names())
def test_every_framework_compiles_every_module_its_steps_call(name, monkeypatch):
    from pubench.frameworks.pretrain import PretrainConfig, build_models, pretrain
    from pubench.models.heads import projection_head

    block = {"name": name, **FRAMEWORKS.get(name).test_config}
    x = torch.cat([images(48, 0)[0], images(48, 1)[0], images(48, 2)[0]], dim=1)
    cfg = PretrainConfig(framework=block, loss={"name": "info_nce", "temperature": 0.5}, epochs=1, batch_size=16,
                         optimizer=optimizer_config({"name": "adam", "lr": 0.01}), augment={"name": "mnist_crop", "scale": [0.7, 1.0]})
    enc, proj = build_models(block, lambda ch, s: TinyEncoder(s % 1000, d_in=36 * ch),
                             lambda dim, s: projection_head(dim, 8, 4), 3, (1, 2), [0.3] * 3, [0.3] * 3)
    calls = _Calls(monkeypatch)
    with calls.hooks():
        pretrain(enc, proj, x, None, cfg, normalization=([0.3] * 3, [0.3] * 3), prior=None, seed=5,
                 ctx=accel.start_job(FAST))
    assert calls.roots and calls.uncompiled() == []


def test_the_canonical_profile_compiles_nothing_and_keeps_the_memory_format(monkeypatch):
    unit = PU_METHODS.get("wconpu")
    cfg = unit.config({"name": "wconpu", **unit.test_config}, "pu_method")
    calls = _Calls(monkeypatch)
    with calls.hooks():
        unit.run(cfg, TinyEncoder(2), TRAIN, pu_data(), seed=7, ctx=PLAIN, **_extra(unit))
    assert calls.compiled == set()


def test_compile_targets_are_every_module_with_a_forward():
    parts = {"backbone": nn.Linear(2, 2), "head": nn.Sequential(nn.Linear(2, 2), nn.ReLU())}
    box = nn.ModuleDict(parts)
    head = parts["head"]
    assert accel.compile_targets(box) == [parts["backbone"], head, head[0], head[1]]
    assert accel.compile_targets(nn.ModuleList([box])) == accel.compile_targets(box)
    assert accel.compile_targets(parts["backbone"]) == [parts["backbone"]]


def test_conv_nets_go_channels_last_on_the_cpu_in_the_fast_profile_only(monkeypatch):
    from pubench.train.loop import Step

    monkeypatch.setattr(nn.Module, "compile", lambda m, *a, **k: None)
    x, y = images(8, 0)
    nets = {}
    for fast in (False, True):
        m = nets[fast] = nn.Sequential(nn.Conv2d(2, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(64, 2))
        Trainer([m], torch.optim.SGD(m.parameters(), lr=0.1), ctx=JobContext(numerics=numerics.resolve(fast=fast))).run(
            1, lambda e: [0], lambda b, e: Step(nn.functional.cross_entropy(m(x.float().repeat(1, 2, 1, 1)), y)))
    assert not nets[False][0].weight.is_contiguous(memory_format=torch.channels_last)
    assert nets[True][0].weight.is_contiguous(memory_format=torch.channels_last)


def test_wconpu_really_runs_compiled_in_the_fast_profile(monkeypatch):
    """Not only the calls: the step's modules are entered through torch.compile (dynamo
    captures frames; backend ``eager`` keeps the test fast). Before, ``train.compile: true``
    compiled WConPU's ModuleDict, which nothing calls, and no frame was captured."""
    from torch._dynamo.utils import counters

    real = nn.Module.compile
    monkeypatch.setattr(nn.Module, "compile", lambda m, *a, **k: real(m, backend="eager"))
    torch._dynamo.reset()
    counters.clear()
    unit = PU_METHODS.get("wconpu")
    cfg = unit.config({"name": "wconpu", **copy.deepcopy(unit.test_config)}, "pu_method")
    metrics, info = unit.run(cfg, TinyEncoder(2), TRAIN, pu_data(), seed=7, ctx=FAST, **_extra(unit))
    assert counters["frames"]["ok"] > 0 and metrics["acc"] >= 0
    torch._dynamo.reset()


# ------------------------------------------------------------------ never mixed in a report
def test_reports_leave_the_fast_profiles_records_out_and_say_so(tmp_registry):
    """A table reads one profile: a cell with only fast records stays empty, a cell with both
    shows the canonical numbers, and the report counts what it left out."""
    from pubench.cli import main
    from pubench.report.collect import FAST_PROFILE, classify_records, collect
    from pubench.report.markdown import render_markdown
    from pubench.store import ResultStore

    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--only", "A|*", "--no-progress"]) == 0
    assert main(["run", "table1-bcl", "--tier", "smoke", "--fast-numerics", "--no-progress"]) == 0
    store = ResultStore(tmp_registry.root / "results")
    records = store.records("smoke", "table1-bcl")
    fast = [r for r in records if r["job"]["numerics"].get("fast")]
    assert fast and len(fast) < len(records)
    spec = get_spec("table1-bcl")
    chosen, left_out = classify_records(spec, "smoke", records)
    assert all(not r["job"]["numerics"].get("fast") for r in chosen)
    assert sorted(id(r) for r, why in left_out if why == FAST_PROFILE) == sorted(id(r) for r in fast)
    res = collect(spec, "smoke", store)
    assert res.fast_profile == len(fast)
    assert {row for row, _, _ in res.stats} == {"A"}  # B ran only under the fast profile
    assert all("fast" not in label for label in res.numerics)
    assert f"{len(fast)} record(s) of the opt-in fast numerics profile" in render_markdown(res)
