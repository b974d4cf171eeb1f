"""Checkpoint and resume of the training loop (pubench.train.checkpoint, Trainer.run):
a run stopped at an epoch boundary and resumed gives the numbers of an uninterrupted run
bit for bit, a finished stage is skipped, a bad checkpoint is discarded, and the epoch
progress callback."""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from pubench.errors import JobInterrupted
from pubench.tasks import TASKS
from pubench.train import checkpoint
from pubench.train.context import PLAIN, JobContext
from pubench.train.loop import LoopCallback, Progress, Step, TrainConfig, Trainer, batches
from pubench.train.optim import build_scheduler, optimizer_config, schedule_config
from pubench.utils.config import ConfigError
from tests.conftest import record_reliability
from tests.project.test_contracts import SEEDS, TinyEncoder, generated_data, pu_data  # noqa: F401 - a fixture

X = torch.randn(40, 4, generator=torch.Generator().manual_seed(1))
Y = (X[:, 0] > 0).float()


class Toy:
    """A two-stage job: stage 0 trains a small net with dropout (the global RNG), momentum,
    a cosine schedule, a shuffling generator, a numpy generator drawn in the steps and a
    log dict filled by the hooks; stage 1 trains a head on the frozen net's features."""

    def __init__(self, stop_at: tuple[int, int] | None = None, kill_at_step: int | None = None, ctx=PLAIN):
        self.stop_at, self.kill_at_step, self.steps, self.ctx = stop_at, kill_at_step, [0, 0], ctx
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 3))
        self.head = nn.Linear(3, 1)

    def stage(self, k: int, modules, epochs: int) -> Trainer:
        opt = torch.optim.SGD([p for m in modules for p in m.parameters()], lr=0.1, momentum=0.9)
        sched = build_scheduler(schedule_config({"name": "cosine"}), opt, 5, epochs)
        gen, noise, log = torch.Generator().manual_seed(2 + k), np.random.default_rng(3 + k), {"noise": [], "ends": []}
        trainer = Trainer(modules, opt, sched, f"toy stage {k}", state={"order": gen, "noise": noise, "log": log},
                          ctx=self.ctx)

        def step(idx, epoch):
            self.steps[k] += 1
            if k == 0 and self.steps[0] == self.kill_at_step:
                os.kill(os.getpid(), signal.SIGUSR2)  # a real signal in the middle of an epoch
            jitter = float(noise.normal()) * 1e-3
            log["noise"].append(jitter)
            out = self.net(X[idx]) if k == 0 else self.head(self.net(X[idx]).detach())
            loss = nn.functional.binary_cross_entropy_with_logits(out[:, 0], Y[idx]) + jitter
            return Step(loss, weight=len(idx))

        def end_epoch(stats):
            log["ends"].append(random.random())  # python's global RNG, as a hook might
            if self.stop_at == (k, stats.epoch + 1):
                assert self.ctx.session.request_stop(signal.SIGTERM)

        trainer.history = trainer.run(epochs, lambda e: batches(40, 8, gen), step, end_epoch=end_epoch)
        trainer.log = log
        return trainer

    def run(self) -> dict:
        t0 = self.stage(0, [self.net], 6)
        draw = torch.rand(3)  # the global RNG between the stages (e.g. a head's initialization)
        t1 = self.stage(1, [self.head], 4)
        return {"params": [p.detach().clone() for p in [*self.net.parameters(), *self.head.parameters()]],
                "loss": [h.mean for h in t0.history + t1.history], "logs": [t0.log, t1.log], "draw": draw,
                "after": torch.rand(2), "np_after": np.random.rand(), "py_after": random.random()}


def reference() -> dict:
    torch.manual_seed(0), np.random.seed(0), random.seed(0)
    return Toy().run()


def in_session(folder, every: int, stop_at=None, kill_at_step=None) -> tuple[dict | None, Toy, checkpoint.Session]:
    """The toy job with a checkpoint session in its context; with ``kill_at_step``, SIGUSR2
    goes to the worker's handler of that session, as ``execute_job`` installs it."""
    from pubench.executors.worker import stop_handler

    torch.manual_seed(0), np.random.seed(0), random.seed(0)
    session = checkpoint.Session(folder, every, label="toy")
    toy = Toy(stop_at, kill_at_step, JobContext(session=session))
    previous = signal.signal(signal.SIGUSR2, stop_handler(session)) if kill_at_step is not None else None
    try:
        return toy.run(), toy, session
    except JobInterrupted as exc:
        assert exc.signum == (signal.SIGTERM if kill_at_step is None else signal.SIGUSR2)
        return None, toy, session
    finally:
        if previous is not None:
            signal.signal(signal.SIGUSR2, previous)


def same(a: dict, b: dict) -> None:
    assert all(torch.equal(p, q) for p, q in zip(a["params"], b["params"]))
    assert a["loss"] == b["loss"] and a["logs"] == b["logs"]
    assert torch.equal(a["draw"], b["draw"]) and torch.equal(a["after"], b["after"])
    assert a["np_after"] == b["np_after"] and a["py_after"] == b["py_after"]


@pytest.mark.parametrize("stop_at, every", [((0, 3), 2), ((0, 1), 0), ((1, 2), 5), ((1, 4), 1)])
def test_a_stopped_and_resumed_job_gives_the_uninterrupted_numbers(tmp_path, one_thread, stop_at, every):
    ref = reference()
    out, first, session = in_session(tmp_path, every, stop_at)
    assert out is None  # stopped
    stage, epoch = stop_at
    saved = torch.load(session.path(f"toy stage {stage}.0"), weights_only=False)
    assert saved["epoch"] == epoch and saved["desc"] == f"toy stage {stage}"
    out, second, session = in_session(tmp_path, every)
    same(out, ref)
    # the resumed run trains only what was left: a finished stage 0 trains nothing
    assert second.steps[0] == (6 - epoch) * 5 if stage == 0 else second.steps[0] == 0
    assert [r["epoch"] for r in session.resumed] == ([epoch] if stage == 0 else [6, epoch])


def test_a_real_signal_mid_epoch_stops_at_the_epoch_boundary(tmp_path, one_thread):
    out, toy, session = in_session(tmp_path, 0, kill_at_step=12)  # step 12 = epoch 3 (5 steps an epoch)
    assert out is None and toy.steps[0] == 15  # the epoch was finished, not cut
    assert torch.load(session.path("toy stage 0.0"), weights_only=False)["epoch"] == 3
    out, _, _ = in_session(tmp_path, 0)
    same(out, reference())


def test_the_worker_signal_handler_stops_at_once_outside_a_training_loop(tmp_path):
    from pubench.executors.worker import stop_handler

    session = checkpoint.Session(tmp_path, 1)
    handler = stop_handler(session)
    with pytest.raises(JobInterrupted):
        handler(signal.SIGTERM, None)  # no training loop of the job runs
    session.in_loop = 1
    handler(signal.SIGTERM, None)  # deferred to the epoch boundary
    with pytest.raises(JobInterrupted):
        handler(signal.SIGTERM, None)  # a second signal


def test_slurm_job_hands_a_pre_timeout_signal_to_submitit_for_requeue(monkeypatch, tmp_path):
    from pubench.executors import slurm

    calls = []

    def fake_execute(*args):
        calls.append(("run", args))
        raise JobInterrupted(signal.SIGUSR2)

    job = slurm.CheckpointedJob()

    def submitit_handler(signum, frame):  # submitit's checkpoint_and_try_requeue, in short
        calls.append(("requeue", signum, job.checkpoint(*calls[0][1])))

    monkeypatch.setattr(slurm, "execute_job", fake_execute)
    previous = signal.signal(signal.SIGUSR2, submitit_handler)
    try:
        with pytest.raises(JobInterrupted):
            job({"id": "x"}, str(tmp_path), True, False, 5)
    finally:
        signal.signal(signal.SIGUSR2, previous)
    (_, args), (_, signum, delayed) = calls
    assert args == ({"id": "x"}, str(tmp_path), True, False, 5) and signum == signal.SIGUSR2
    assert delayed.function is job and delayed.args == args  # the requeued call is the same job

    calls.clear()
    monkeypatch.setattr(slurm, "execute_job", lambda *a: (_ for _ in ()).throw(JobInterrupted(signal.SIGTERM)))
    with pytest.raises(JobInterrupted):
        job({"id": "x"}, str(tmp_path))
    assert calls == []  # SIGTERM (scancel, preemption): recorded as interrupted, no requeue


def test_checkpoints_every_k_epochs_and_at_stage_ends(tmp_path, one_thread):
    out, _, session = in_session(tmp_path, 2)
    same(out, reference())  # writing checkpoints changes no number
    assert session.saved == 3 + 2  # stage 0: epochs 2, 4, 6; stage 1: epochs 2, 4
    assert {p.name for p in tmp_path.iterdir()} == {"toy_stage_0.0.pt", "toy_stage_1.0.pt"}
    assert torch.load(session.path("toy stage 0.0"), weights_only=False)["epoch"] == 6


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other_stage", "other_code"])
def test_a_bad_checkpoint_is_discarded_with_a_warning(tmp_path, one_thread, damage):
    _, _, session = in_session(tmp_path, 1, stop_at=(0, 3))
    path = session.path("toy stage 0.0")
    if damage == "garbage":
        path.write_bytes(b"not a checkpoint")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    else:
        payload = torch.load(path, weights_only=False)
        key, value = ("stage", "another trainer.0") if damage == "other_stage" else ("code", "0" * 16)
        torch.save({**payload, key: value}, path)
    with pytest.warns(checkpoint.CheckpointWarning, match="discarding checkpoint"):
        out, toy, session = in_session(tmp_path, 1)
    same(out, reference())
    assert toy.steps[0] == 30 and session.resumed == []  # started over, then finished normally


def test_stop_requests_outside_a_loop_are_refused(tmp_path):
    session = checkpoint.Session(tmp_path, 1)
    assert not session.request_stop(signal.SIGTERM)  # a job, but no training loop runs
    session.in_loop = 1
    assert session.request_stop(signal.SIGUSR2)
    assert not session.request_stop(signal.SIGTERM)  # a second signal: the caller stops at once
    assert session.stop_signal == signal.SIGUSR2


def test_object_states_round_trip():
    g, n, r = torch.Generator().manual_seed(5), np.random.default_rng(5), random.Random(5)
    d, lst, lin = {"a": [1]}, [1, 2], nn.Linear(2, 2)
    states = [checkpoint.object_state(o) for o in (g, n, r, d, lst)]
    states.append(copy.deepcopy(checkpoint.object_state(lin)))  # a state_dict refers to the live tensors
    expect = (torch.rand(3, generator=g), n.normal(3), r.random())
    d["a"].append(2), lst.append(3)
    with torch.no_grad():
        lin.weight.zero_()
    for o, s in zip((g, n, r, d, lst, lin), states):
        checkpoint.load_object_state(o, s)
    assert torch.equal(torch.rand(3, generator=g), expect[0]) and np.array_equal(n.normal(3), expect[1])
    assert r.random() == expect[2] and d == {"a": [1]} and lst == [1, 2] and lin.weight.abs().sum() > 0
    with pytest.raises(TypeError):
        checkpoint.object_state(object())


def test_atomic_save_leaves_no_partial_file(tmp_path, monkeypatch):
    path = tmp_path / "pretrain.0.pt"
    checkpoint.atomic_save({"x": 1}, path)

    def broken(obj, f):
        f.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(OSError):
        checkpoint.atomic_save({"x": 2}, path)
    assert [p.name for p in tmp_path.iterdir()] == ["pretrain.0.pt"]
    monkeypatch.undo()
    assert torch.load(path, weights_only=False) == {"x": 1}


# ---- progress --------------------------------------------------------------------------
def _trainer(epochs: int, callbacks=()) -> list:
    torch.manual_seed(0)
    lin = nn.Linear(4, 1)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    return Trainer([lin], opt, desc="toy", callbacks=callbacks, ctx=PLAIN).run(
        epochs, lambda e: [torch.arange(40)], lambda idx, e: Step(lin(X[idx]).pow(2).mean()))


def test_progress_prints_at_most_one_line_per_interval_when_not_a_terminal(capsys, monkeypatch):
    monkeypatch.delenv("PUBENCH_PROGRESS", raising=False)
    monkeypatch.setenv("PUBENCH_PROGRESS_SECONDS", "0")
    _trainer(5)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4 and lines[0].startswith("pubench: toy epoch 1/5 loss ")  # none after the last epoch
    monkeypatch.setenv("PUBENCH_PROGRESS_SECONDS", "3600")
    _trainer(5)
    assert capsys.readouterr().err == ""  # a short run says nothing
    monkeypatch.setenv("PUBENCH_PROGRESS_SECONDS", "0")
    monkeypatch.setenv("PUBENCH_PROGRESS", "0")
    _trainer(5)
    assert capsys.readouterr().err == ""  # --no-progress


def test_callbacks_see_every_epoch_and_change_no_number(monkeypatch):
    monkeypatch.delenv("PUBENCH_PROGRESS", raising=False)
    monkeypatch.setenv("PUBENCH_PROGRESS_SECONDS", "0")
    seen = []

    class Record(LoopCallback):
        def begin(self, trainer, epochs, first):
            seen.append(("begin", epochs, first))

        def epoch_end(self, trainer, stats, epochs):
            seen.append(stats.epoch)

        def end(self, trainer):
            seen.append("end")

    with_cb = [h.mean for h in _trainer(3, [Record()])]
    monkeypatch.setenv("PUBENCH_PROGRESS", "0")
    assert [h.mean for h in _trainer(3)] == with_cb
    assert seen == [("begin", 3, 0), 0, 1, 2, "end"]
    assert isinstance(Progress("x"), LoopCallback)


# ---- a real `pubench run` killed by SIGTERM mid-training, then rerun -------------------
REPO = Path(__file__).resolve().parents[2]


def smoke_variant(tmp_registry, spec: str, **epochs: int) -> None:
    """The committed spec ``experiments/<spec>.yaml`` (its presets and shared texts with it) in
    ``tmp_registry``, its smoke tier's ``<block>.epochs`` set to ``epochs[block]``: built as
    data, so a reworded spec changes nothing here."""
    import yaml

    from pubench.registry.notes import read_raw

    shutil.copytree(REPO / "experiments" / "_presets", tmp_registry.root / "experiments" / "_presets")
    shutil.copy(REPO / "experiments" / "_shared.yaml", tmp_registry.root / "experiments" / "_shared.yaml")
    raw = read_raw(REPO / "experiments" / f"{spec}.yaml")  # with its notes: one file in tmp_registry
    params = raw["tiers"]["smoke"]["params"]
    for block, n in epochs.items():
        assert isinstance(params[block].get("epochs"), int), (spec, block)
        params[block]["epochs"] = n
    tmp_registry(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=1000))


def _long_smoke_spec(tmp_registry) -> None:
    """table1-punce with a smoke tier long enough to be killed mid pre-training."""
    smoke_variant(tmp_registry, "punce/table1-punce", pretrain=150, downstream=20)


def _run(env, store: Path, *extra, wait=True, progress=False):
    cmd = [sys.executable, "-m", "pubench", "run", "table1-punce", "--tier", "smoke", "--only", "MNIST n_P=1k|puNCE",
           "--checkpoint-every", "1", *([] if progress else ["--no-progress"]), *extra]
    proc = subprocess.Popen(cmd, env={**env, "PUBENCH_RESULTS": str(store)}, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if wait:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        proc.stderr_text = err
    return proc


def _records(store: Path) -> dict[str, dict]:
    folder = store / "smoke" / "table1-punce"
    return {p.name: json.loads(p.read_text()) for p in folder.glob("*.json")}


def test_sigterm_mid_training_then_rerun_resumes_bit_for_bit(tmp_registry, shared_image_root, tmp_path):
    _long_smoke_spec(tmp_registry)
    env = {**os.environ, "PUBENCH_DATA": str(shared_image_root), "PUBENCH_CORE_SLOTS": "off",
           "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    t0 = time.monotonic()
    err = _run({**env, "PUBENCH_PROGRESS_SECONDS": "2"}, whole, progress=True).stderr_text
    lines = [line for line in err.splitlines() if "pretrain punce epoch" in line]
    # epoch progress in a log: one line at most every 2 s, naming the job
    assert 1 <= len(lines) <= (time.monotonic() - t0) / 2 + 1, err
    assert lines[0].startswith("pubench: table1-punce/MNIST n_P=1k|puNCE/seed=0: pretrain punce epoch "), lines[0]
    proc = _run(env, killed, wait=False)
    deadline = time.time() + 300
    while time.time() < deadline and not list((killed / ".checkpoints").glob("*/pretrain_punce.0.pt")):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    [failed] = _records(killed).values()
    assert "interrupted by SIGTERM" in failed["error"]["message"]
    [ckpt] = list((killed / ".checkpoints").glob("*/pretrain_punce.0.pt"))
    stopped_at = torch.load(ckpt, weights_only=False)["epoch"]
    assert 0 < stopped_at < 150

    _run(env, killed)
    ok_whole, ok_killed = _records(whole), {k: v for k, v in _records(killed).items() if "failed" not in k}
    assert ok_whole.keys() == ok_killed.keys()  # the same job id
    [(name, a)] = ok_whole.items()
    b = ok_killed[name]
    assert a["metrics"] == b["metrics"]  # bit for bit (JSON floats round-trip exactly)
    assert a["info"]["pretrain"]["loss"] == b["info"]["pretrain"]["loss"]
    assert b["info"]["checkpoint"]["resumed"] == [{"stage": "pretrain punce.0", "epoch": stopped_at}]
    assert a["info"]["checkpoint"]["resumed"] == []
    assert not (killed / ".checkpoints" / ckpt.parent.name).exists()  # deleted with the record
    record_reliability("resume", "SIGTERM of pubench run mid pre-training, then a rerun", {
        "exit": proc.returncode, "stopped_at_epoch": stopped_at, "of_epochs": 150,
        "metrics_equal": a["metrics"] == b["metrics"], "same_job_id": ok_whole.keys() == ok_killed.keys()})


def test_stages_are_named_by_description_and_rank(tmp_path):
    session = checkpoint.Session(tmp_path, 1)
    assert [session.next_stage(d) for d in ("pretrain x", "probe", "probe")] == ["pretrain x.0", "probe.0", "probe.1"]
    assert session.path("linear probe (nnpu).0").name == "linear_probe__nnpu_.0.pt"
    # a rerun that skips pre-training (an encoder-cache hit) still finds the probe's checkpoint
    assert checkpoint.Session(tmp_path, 1).next_stage("probe") == "probe.0"


# ---- every registered unit resumes bit for bit ------------------------------------------
# A unit that draws from a generator it did not register with its Trainer (state=...) fails
# here: its resumed run would continue from a fresh generator.


def _stop_after_first_epoch(monkeypatch) -> None:
    """The first epoch boundary of the job asks for a stop, as a signal handler would."""
    original, asked = Progress.epoch_end, []

    def epoch_end(self, trainer, stats, epochs):
        original(self, trainer, stats, epochs)
        if not asked:
            asked.append(stats.epoch)
            assert trainer.ctx.session.request_stop(signal.SIGTERM)

    monkeypatch.setattr(Progress, "epoch_end", epoch_end)


def _same_after_resume(run, folder, monkeypatch):
    """``run(ctx)`` uninterrupted, and ``run(ctx)`` with a checkpoint session in ``ctx``, stopped
    at its first epoch boundary then run again; skips a unit without a training loop."""
    whole = run(PLAIN)
    with monkeypatch.context() as m:
        _stop_after_first_epoch(m)
        try:
            run(JobContext(session=checkpoint.Session(folder, 0)))
        except JobInterrupted:
            pass
        else:
            pytest.skip("no training loop")
    session = checkpoint.Session(folder, 0)
    resumed = run(JobContext(session=session))
    assert session.resumed and session.resumed[0]["epoch"] == 1
    return whole, resumed


def _units(registry_name: str) -> list[str]:
    from pubench.downstream import DOWNSTREAM
    from pubench.frameworks import FRAMEWORKS
    from pubench.pu import PU_METHODS

    return {"pu": PU_METHODS, "downstream": DOWNSTREAM, "framework": FRAMEWORKS}[registry_name].names()


@pytest.mark.parametrize("name", _units("pu"))
def test_every_pu_method_resumes_bit_for_bit(name, tmp_path, monkeypatch, one_thread):
    from pubench.pu import PU_METHODS

    unit = PU_METHODS.get(name)
    cfg = unit.config({"name": name, **unit.test_config}, "pu_method")
    train = TrainConfig(epochs=3, batch_size=16, optimizer=optimizer_config({"name": "adam", "lr": 0.01}),
                        augment={"name": "mnist_crop", "scale": [0.7, 1.0]})
    try:
        unit.check_train(cfg, train, "params")
    except ConfigError:  # a method that draws its views itself (WConPU)
        train = TrainConfig(epochs=3, batch_size=16, optimizer=optimizer_config({"name": "adam", "lr": 0.01}))
    data = pu_data()

    def run(ctx):
        from pubench.models.heads import projection_head

        torch.manual_seed(0)
        extra = {"projector": projection_head(8, 8, 4)} if unit.uses_projector else {}
        metrics, info = unit.run(cfg, TinyEncoder(2), train, data, seed=7, ctx=ctx, **extra)
        drop = set(unit.wall_clock_metrics) | set(unit.wall_clock_info)
        return {k: v for k, v in metrics.items() if k not in drop}, {k: v for k, v in info.items() if k not in drop}

    (m1, i1), (m2, i2) = _same_after_resume(run, tmp_path, monkeypatch)
    assert m1 == m2 and str(i1) == str(i2)


@pytest.mark.parametrize("name", _units("downstream"))
def test_every_downstream_classifier_resumes_bit_for_bit(name, tmp_path, monkeypatch, one_thread):
    from pubench.downstream import DOWNSTREAM

    unit = DOWNSTREAM.get(name)
    block = {"name": name, **unit.test_config, "epochs": 3}
    if "augment" in unit.config_cls.__dataclass_fields__:
        block["augment"] = {"name": "mnist_crop", "scale": [0.7, 1.0]}
    cfg = unit.config(block, "downstream")
    data = pu_data()

    def run(ctx):
        torch.manual_seed(0)
        return unit.run(cfg, TinyEncoder(3), data, seed=9, ctx=ctx)

    (m1, i1), (m2, i2) = _same_after_resume(run, tmp_path, monkeypatch)
    assert m1 == m2 and str(i1) == str(i2)


@pytest.mark.parametrize("name", _units("framework"))
def test_every_framework_resumes_bit_for_bit(name, tmp_path, monkeypatch, one_thread):
    """Queues, banks, momentum encoders and the framework's generator are in the checkpoint:
    MoCo / CMC stopped after an epoch resume to the same weights and losses."""
    from pubench.frameworks import FRAMEWORKS
    from pubench.frameworks.pretrain import PretrainConfig, build_models, pretrain
    from pubench.models.heads import projection_head
    from tests.project.test_contracts import TinyEncoder as ContractEncoder
    from tests.project.test_contracts import images

    block = {"name": name, **FRAMEWORKS.get(name).test_config}
    x = torch.cat([images(48, 0)[0], images(48, 1)[0], images(48, 2)[0]], dim=1)  # RGB (CMC needs colour)
    mean, std = [0.3] * 3, [0.3] * 3
    cfg = PretrainConfig(framework=block, loss={"name": "info_nce", "temperature": 0.5}, epochs=3, batch_size=16,
                         optimizer=optimizer_config({"name": "adam", "lr": 0.01}), augment={"name": "mnist_crop", "scale": [0.7, 1.0]})

    def run(ctx):
        torch.manual_seed(0)
        enc, proj = build_models(block, lambda ch, s: ContractEncoder(s % 1000, d_in=36 * ch),
                                 lambda dim, s: projection_head(dim, 8, 4), 3, (1, 2), mean, std)
        hist = pretrain(enc, proj, x, None, cfg, normalization=(mean, std), prior=None, seed=5, ctx=ctx)
        return hist, [t.detach().clone() for t in enc.state_dict().values()]

    (h1, w1), (h2, w2) = _same_after_resume(run, tmp_path, monkeypatch)
    assert h1 == h2 and all(torch.equal(a, b) for a, b in zip(w1, w2, strict=True))


@pytest.mark.usefixtures("generated_data")
@pytest.mark.parametrize("name", TASKS.names())
def test_every_training_task_resumes_bit_for_bit(name, tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("PUBENCH_ENCODER_CACHE", "0")
    task = TASKS.get(name)

    def run(ctx):
        return task.run(copy.deepcopy(task.test_config), dict(SEEDS), ctx)

    a, b = _same_after_resume(run, tmp_path / "ckpt", monkeypatch)
    assert a.metrics == b.metrics


def test_a_checkpoint_that_does_not_fit_is_discarded_before_anything_is_loaded(tmp_path, one_thread):
    """Other shapes (or no trainer state of this shape, no random states) are found before a
    tensor is loaded: the checkpoint is deleted with one warning and the stage starts over in
    the same run, with a clean run's numbers (it used to fail the job once)."""
    _, _, session = in_session(tmp_path, 1, stop_at=(0, 3))
    path = session.path("toy stage 0.0")
    payload = torch.load(path, weights_only=False)
    weight = payload["trainer"]["modules"][0]["0.weight"]
    payload["trainer"]["modules"][0]["0.weight"] = torch.zeros(weight.shape[0] + 1, weight.shape[1])
    torch.save(payload, path)
    with pytest.warns(checkpoint.CheckpointWarning, match="holds other modules or state"):
        out, _, session = in_session(tmp_path, 1)
    same(out, reference())
    assert session.resumed == []
