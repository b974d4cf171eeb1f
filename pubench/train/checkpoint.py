"""Checkpoint and resume of long jobs, for every :class:`pubench.train.loop.Trainer`.

The worker (:func:`pubench.executors.worker.execute_job`) makes a :class:`Session` per
job and puts it in the job's context (:class:`pubench.train.context.JobContext`): a
folder ``<results>/.checkpoints/<job id>/`` and a period ``every_epochs``. Each
``Trainer.run`` of the job is a *stage* (pre-training, then the probe, ...). A stage
writes ``<stage>.pt``:

* every ``every_epochs`` epochs (0: never periodically),
* after its last epoch (so that a resumed job skips a finished stage),
* at the first epoch boundary after a stop request (SIGTERM, SIGUSR1 / SIGUSR2: see the
  worker), and then the job stops with :class:`pubench.errors.JobInterrupted`.

A checkpoint holds the state of the trainer's modules, optimizer and scheduler, of the
objects the trainer registered (``Trainer(state={...})``: random generators, queues,
memory banks, the state of the hooks), the global random states (torch, CUDA, numpy,
python), the epochs' statistics and the number of epochs done. Restoring all of it at an
epoch boundary continues the run with the very numbers of an uninterrupted one: the job
runs again from the start, everything before a stage is deterministic, and each stage
loads its checkpoint instead of training (a finished stage trains nothing).

A stage is named by the trainer's description and its rank among the job's stages of that
description (``pretrain punce.0``, ``linear probe (nnpu).0``), not by its rank in the job,
so that a stage the job skips on a rerun (an encoder-cache hit skips pre-training) does not
shift the others.

Files are written atomically (temporary file, then rename). A checkpoint names the job
that wrote it (its id and the hash of its resolved config): one that cannot be read, that
another job wrote (copied or misplaced into this job's folder), that belongs to another
stage (its name or epoch count differ) or that other code wrote (the package's source
fingerprint, as the encoder cache's) is deleted with a one-line warning naming both jobs,
and the stage starts over. The worker deletes the folder once the job's record is written
(ok or failed); only an interrupted job keeps it.

Checkpoints are read with ``torch.load(weights_only=True)``: a file in a shared store never
runs code when it is read (a crafted pickle is refused and discarded like any unreadable
file). What they hold beyond tensors is saved in forms that loader accepts (NumPy arrays as
bytes, dtype and shape: :func:`to_safe` / :func:`from_safe`).

A write that fails (disk full, read-only, quota) raises
:class:`pubench.errors.StorageError`: the run stops with one line, the earlier checkpoints
stay, and the rerun resumes from them.
"""

from __future__ import annotations

import collections
import copy
import io
import random
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pubench.errors import PubenchWarning
from pubench.utils.hashing import code_fingerprint
from pubench.utils.io import atomic_write

FORMAT = 2   # 2: names its job; read with weights_only (format 1 files are discarded)
FOLDER = ".checkpoints"
_NDARRAY = "__pubench_ndarray__"


class CheckpointWarning(PubenchWarning):
    """A checkpoint or cache entry was discarded (the stage starts over)."""


# ------------------------------------------------------------------ state of objects
def object_state(obj: Any) -> Any:
    """The saveable state of ``obj``: a torch or numpy random generator, a ``random.Random``,
    anything with ``state_dict()`` (modules, optimizers, schedulers, frameworks with a
    queue; like ``state_dict()``, it refers to the live tensors: save it at once), or a
    dict / list (deep-copied; restored in place)."""
    if isinstance(obj, torch.Generator):
        return obj.get_state()
    if isinstance(obj, np.random.Generator):
        return copy.deepcopy(obj.bit_generator.state)
    if isinstance(obj, random.Random):
        return obj.getstate()
    if hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict"):
        return obj.state_dict()
    if isinstance(obj, (dict, list)):
        return copy.deepcopy(obj)
    raise TypeError(f"cannot checkpoint a {type(obj).__name__}: register a generator, an object with "
                    "state_dict/load_state_dict, or a dict / list")


def load_object_state(obj: Any, state: Any) -> None:
    """Put ``state`` (from :func:`object_state`) back into ``obj``."""
    if isinstance(obj, torch.Generator):
        obj.set_state(state)
    elif isinstance(obj, np.random.Generator):
        obj.bit_generator.state = state
    elif isinstance(obj, random.Random):
        obj.setstate(state)
    elif hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict"):
        obj.load_state_dict(state)
    elif isinstance(obj, dict):
        obj.clear()
        obj.update(state)
    elif isinstance(obj, list):
        obj[:] = state
    else:
        raise TypeError(f"cannot restore a {type(obj).__name__}")


def global_rng_state() -> dict[str, Any]:
    """The process-wide random states (CUDA's only when CUDA is in use: never initialize it)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return {"torch": torch.get_rng_state(), "cuda": cuda, "numpy": np.random.get_state(),
            "python": random.getstate()}


def set_global_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None:
        torch.cuda.set_rng_state_all(state["cuda"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])


# ------------------------------------------------------------------ files
def to_safe(obj: Any) -> Any:
    """``obj`` with its NumPy arrays and scalars in forms ``torch.load(weights_only=True)``
    reads (an array as its bytes, dtype and shape; a scalar as a Python number). Containers
    without NumPy inside are returned as they are (a module's state dict keeps its
    ``_metadata``)."""
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError("cannot checkpoint a NumPy array of Python objects")
        return {_NDARRAY: obj.tobytes(), "dtype": obj.dtype.str, "shape": list(obj.shape)}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        new = {k: to_safe(v) for k, v in obj.items()}
        if all(new[k] is v for k, v in obj.items()):
            return obj
        return type(obj)(new) if type(obj) in (dict, collections.OrderedDict) else new
    if isinstance(obj, (list, tuple)):
        new = [to_safe(v) for v in obj]
        if all(a is b for a, b in zip(new, obj)):
            return obj
        return new if isinstance(obj, list) else tuple(new)
    return obj


def from_safe(obj: Any) -> Any:
    """The inverse of :func:`to_safe`."""
    if isinstance(obj, dict):
        if _NDARRAY in obj:
            return np.frombuffer(obj[_NDARRAY], dtype=np.dtype(obj["dtype"])).reshape(obj["shape"]).copy()
        new = {k: from_safe(v) for k, v in obj.items()}
        if all(new[k] is v for k, v in obj.items()):
            return obj
        return type(obj)(new) if type(obj) in (dict, collections.OrderedDict) else new
    if isinstance(obj, (list, tuple)):
        new = [from_safe(v) for v in obj]
        if all(a is b for a, b in zip(new, obj)):
            return obj
        return new if isinstance(obj, list) else tuple(new)
    return obj


def atomic_save(payload: Any, path: Path) -> None:
    """Serialize in memory, then write atomically: a full disk is an ``OSError`` naming the
    folder (:class:`pubench.errors.StorageError`), never a half-written file or a message
    from torch's zip writer."""
    buf = io.BytesIO()
    torch.save(to_safe(payload), buf)
    atomic_write(path, lambda f: f.write(buf.getbuffer()), binary=True)


def safe_load(path: Path) -> Any:
    """A file written by :func:`atomic_save`, read without running code from it."""
    return from_safe(torch.load(path, map_location="cpu", weights_only=True))


class Session:
    """The checkpoints of one job (see the module docstring)."""

    def __init__(self, folder: str | Path, every_epochs: int, label: str = "", job_id: str | None = None,
                 config_hash: str | None = None):
        if isinstance(every_epochs, bool) or not isinstance(every_epochs, int) or every_epochs < 0:
            raise ValueError(f"checkpoint every_epochs must be an integer >= 0, got {every_epochs!r}")
        self.folder, self.every_epochs, self.label = Path(folder), every_epochs, label
        self.job_id, self.config_hash = job_id, config_hash   # written into, and checked on, every checkpoint
        self.stages: dict[str, int] = {}
        self.saved = 0
        self.resumed: list[dict[str, Any]] = []   # {stage, epoch} of every checkpoint loaded
        self.stop_signal: int | None = None       # a stop request waiting for the next epoch boundary
        self.in_loop = 0                          # Trainer.run calls in progress

    def next_stage(self, desc: str) -> str:
        """The name of the job's next stage run by a trainer described as ``desc``."""
        k = self.stages.get(desc, 0)
        self.stages[desc] = k + 1
        return f"{desc}.{k}"

    def path(self, stage: str) -> Path:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in stage)
        return self.folder / f"{safe}.pt"

    def save(self, stage: str, desc: str, epochs: int, epoch: int, trainer_state: dict, history: list) -> None:
        atomic_save({"format": FORMAT, "code": code_fingerprint(), "job_id": self.job_id,
                     "config_hash": self.config_hash, "stage": stage, "desc": desc, "epochs": epochs, "epoch": epoch,
                     "trainer": trainer_state, "rng": global_rng_state(), "history": history}, self.path(stage))
        self.saved += 1

    def load(self, stage: str, desc: str, epochs: int) -> dict[str, Any] | None:
        """The checkpoint of ``stage``, or None (none, or a bad one: deleted with a warning)."""
        path = self.path(stage)
        if not path.exists():
            return None
        try:
            payload = safe_load(path)
            ok = isinstance(payload, dict) and payload.get("format") == FORMAT
            reason = "it is not a pubench checkpoint of this format"
            if ok and self.job_id is not None and payload.get("job_id") != self.job_id:
                ok, reason = False, f"it was written by job {payload.get('job_id')}, not by this job {self.job_id}"
            elif ok and self.config_hash is not None and payload.get("config_hash") != self.config_hash:
                ok, reason = False, (f"its config hash {payload.get('config_hash')} differs from this job's "
                                     f"{self.config_hash}")
            elif ok and not (payload.get("stage") == stage and _is_int(payload.get("epochs"))
                             and payload["epochs"] == epochs):
                ok, reason = False, "it belongs to another stage"
            elif ok and payload.get("code") != code_fingerprint():
                ok, reason = False, "the pubench code changed since it was written"
            elif ok and (why := progress_problem(payload, 1, epochs)):
                ok, reason = False, why
        except Exception as exc:  # noqa: BLE001 - any unreadable or unsafe file is discarded, never a crash loop
            ok, reason = False, f"unreadable: {type(exc).__name__}: {_first_line(exc)}"
        if not ok:
            self.discard(stage, reason)
            return None
        self.resumed.append({"stage": stage, "epoch": payload["epoch"]})
        return payload

    def discard(self, stage: str, reason: str) -> None:
        """Delete the checkpoint of ``stage`` with a one-line warning saying why; the stage starts over."""
        path = self.path(stage)
        warnings.warn(f"{self.label or self.folder.name}: discarding checkpoint {path} ({reason}); "
                      "the stage starts over", CheckpointWarning, stacklevel=4)
        path.unlink(missing_ok=True)
        self.resumed = [r for r in self.resumed if r["stage"] != stage]

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def record(self) -> dict[str, Any]:
        """What the job's record says about its checkpoints."""
        return {"every_epochs": self.every_epochs, "saved": self.saved, "resumed": list(self.resumed)}

    def wants_save(self, epoch_done: int, epochs: int) -> bool:
        """Whether to write after ``epoch_done`` epochs of ``epochs``."""
        return (epoch_done == epochs or self.stop_signal is not None
                or (self.every_epochs > 0 and epoch_done % self.every_epochs == 0))

    def request_stop(self, signum: int) -> bool:
        """Ask the job's running training loop to checkpoint and stop at its next epoch
        boundary (the worker's signal handler). False when none of its loops runs, or a
        request waits already (then the caller stops at once)."""
        if self.in_loop == 0 or self.stop_signal is not None:
            return False
        self.stop_signal = signum
        return True


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: an epoch's statistics as :class:`pubench.train.loop.EpochStats` holds them
_EPOCH_FIELDS = {"epoch": int, "mean": float, "sums": dict, "steps": int, "seconds": float}


def progress_problem(payload: dict[str, Any], lowest: int, epochs: int) -> str | None:
    """Why a checkpoint's (or prefix-cache entry's) progress cannot be resumed: its ``epoch``
    not an integer in ``lowest..epochs``, its ``history`` not one epoch's statistics per epoch
    done, its ``trainer`` or ``rng`` not a mapping (a damaged or planted file; None when fine)."""
    epoch, history = payload.get("epoch"), payload.get("history")
    if not _is_int(epoch) or not lowest <= epoch <= epochs:
        return f"its epoch {epoch!r} is not one of {lowest}..{epochs}"
    if not isinstance(history, list) or len(history) != epoch:
        return "its history is not one entry per epoch done"
    for h in history:
        if not isinstance(h, dict) or set(h) != set(_EPOCH_FIELDS) or not all(
                _is_int(h[k]) if t is int else isinstance(h[k], t) and not isinstance(h[k], bool)
                for k, t in _EPOCH_FIELDS.items()):
            return "its history holds an entry that is not an epoch's statistics"
    if not isinstance(payload.get("trainer"), dict) or not isinstance(payload.get("rng"), dict):
        return "it holds no trainer state or random states"
    return None


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:160] + ("..." if len(text) > 160 else "")


def checkpoint_root(results_root: str | Path) -> Path:
    return Path(results_root) / FOLDER


class AttributeState:
    """Checkpoint ``state_dict`` / ``load_state_dict`` over attributes of ``owner`` that it
    rebinds or holds as plain values (a queue tensor and its pointer, memory banks): the
    values are copied on save and set back on load, so the owner may rebind them freely."""

    def __init__(self, owner: Any, names: tuple[str, ...]):
        self.owner, self.names = owner, names

    def state_dict(self) -> dict[str, Any]:
        return {n: _detached_copy(getattr(self.owner, n)) for n in self.names}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if set(state) != set(self.names):
            raise ValueError(f"checkpoint holds {sorted(state)}, expected {sorted(self.names)}")
        for n in self.names:
            current = getattr(self.owner, n)
            value = state[n]
            if isinstance(current, torch.Tensor) and isinstance(value, torch.Tensor):
                value = value.to(current.device)
            setattr(self.owner, n, _detached_copy(value))


def _detached_copy(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else copy.deepcopy(value)
