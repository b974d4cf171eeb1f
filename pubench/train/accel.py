"""How a job's training uses its device: mixed precision, memory format, ``torch.compile``,
the training data's placement, and what the record says about speed and memory.

Spec keys (both optional; absent = today's behaviour, so no existing spec changes):

* ``pretrain.precision`` / ``train.precision``: ``fp32`` (default) or ``bf16``. ``bf16``
  runs each step's forward pass and objective under ``torch.autocast(dtype=bfloat16)`` on
  the job's device (backward and the optimizer step stay outside, in the parameters'
  float32). None of the papers (000-004) mentions a precision (no mixed precision,
  fp16 or bf16), so ``fp32``, PyTorch's default, is the default and the record says which one ran (``info.accelerator``).
* ``pretrain.compile`` / ``train.compile``: ``true`` compiles every trained module in place
  (``nn.Module.compile``) before the first epoch. Off by default.

The job's numerics profile may ask for more (``Numerics.fast``, ``pubench run --fast-numerics``):
then every trainer, whatever its spec says, puts its conv nets in ``channels_last`` on the CPU
too and compiles its modules and the modules its steps run without training them (a key
encoder), and the record says so (``info.accelerator``: ``channels_last``, ``compiled``).
What is compiled is what a step calls (:func:`compile_targets`): a container without a
``forward`` of its own (WConPU's and PiCO's query network, an ``nn.ModuleDict`` of backbone,
projector and head, whose parts the step calls one by one) is compiled part by part; compiling
the container itself was a silent no-op.

The image tasks start a job's table (:func:`start_job`) and run each stage in a context
with that stage's two values (:func:`stage`: the pre-training; a PU method's training);
every :class:`pubench.train.loop.Trainer` reads them from the context it is given
(:class:`pubench.train.context.JobContext`), so the PU methods get them without their own
plumbing (the downstream classifiers after a pre-training run in fp32, eager). A
trainer on a CUDA device also puts its convolutional modules in ``channels_last`` memory
format (:func:`prepare_modules`); on the CPU nothing changes (the CPU results stay bit for bit
those of the float32 contiguous code). :func:`data_on_device` moves a uint8 training tensor
to the device once when it fits, so each batch is indexed and augmented there.

Per job :func:`job_info` gives what the record's ``info.accelerator`` holds: the device's
name (GPU model or CPU model), the peak memory (``torch.cuda.max_memory_allocated`` on CUDA;
the process's ``ru_maxrss`` on the CPU, a process-wide peak that includes earlier jobs of
the same worker), the training throughput per trainer (examples / s of the epochs' wall
time: images for the image trainers), the precision and compile switch, and the
determinism flags (cuDNN ``deterministic`` / ``benchmark``, ``torch.use_deterministic_algorithms``).
"""

from __future__ import annotations

import contextlib
import resource
import sys
from typing import Any

import torch
from torch import nn

from pubench.train.context import JobContext, Settings
from pubench.utils.config import ConfigError

PRECISIONS = ("fp32", "bf16")
#: a training tensor is moved to a CUDA device when it takes at most this share of the free memory
DEVICE_DATA_SHARE = 0.25


def check_precision(value: str | None, where: str) -> str:
    """The precision a spec asks for (``None``: absent, ``fp32``)."""
    if value is None:
        return "fp32"
    if value not in PRECISIONS:
        raise ConfigError(f"{where} must be one of {', '.join(PRECISIONS)}, got {value!r}")
    return value


def check_compile(value: bool | None, where: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


# ------------------------------------------------------------------ the job's settings
def start_job(ctx: JobContext) -> JobContext:
    """``ctx`` with a fresh throughput table for the job's trainers (fp32, not compiled unless
    a :func:`stage` says otherwise). Resets the CUDA peak memory counter, so that
    :func:`job_info` reports this job's peak."""
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    return ctx.replace(accel=Settings(throughput={}))


def stage(ctx: JobContext, precision: str | None, compile: bool | None, where: str) -> JobContext:
    """``ctx`` for a stage of the job (pre-training, a PU method's training) with the spec's
    ``<where>.precision`` / ``<where>.compile`` (``None``: absent); throughput goes to the
    job's table."""
    return ctx.replace(accel=Settings(check_precision(precision, f"{where}.precision"),
                                      check_compile(compile, f"{where}.compile"), ctx.accel.throughput))


# ------------------------------------------------------------------ what a trainer does
def module_device(modules: list[nn.Module]) -> torch.device:
    for m in modules:
        for p in m.parameters():
            return p.device
    return torch.device("cpu")


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The forward pass's context: nothing for fp32; bf16 autocast on ``device`` otherwise."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def has_conv(module: nn.Module) -> bool:
    return any(isinstance(m, nn.modules.conv._ConvNd) for m in module.modules())


def compile_targets(module: nn.Module) -> list[nn.Module]:
    """The modules to compile so that ``module``'s computation runs compiled whichever way its
    trainer calls it: ``module`` and every module inside it that has a ``forward`` (containers
    without one, ``nn.ModuleDict`` / ``nn.ModuleList``, are only the way to their parts).
    Steps call parts directly: WConPU's and PiCO's the backbone, projector and head of a
    ModuleDict (compiling the container alone was a silent no-op), puLNS's the two halves of
    an ``nn.Sequential``, CMC's the L and ab networks of its encoder. Compiling is lazy and a
    compiled part called inside a compiled module is traced into it (one graph, no break), so
    a part is compiled on its own only when a step calls it directly."""
    return [m for m in module.modules() if type(m).forward is not nn.Module.forward]


#: torch.compile's limit of compiled versions of one code object; every compiled module's
#: ``_call_impl`` shares one (a version per module type, grad mode, shape), and past the limit
#: dynamo falls back to eager without an error
RECOMPILE_LIMIT = 64


def prepare_modules(modules: list[nn.Module], device: torch.device, compile: bool,
                    channels_last: bool = False) -> None:
    """In place: conv nets to ``channels_last`` on CUDA, and on any device when asked (the fast
    numerics profile); compile what each module's callers run when asked (:func:`compile_targets`;
    ``nn.Module.compile``: the trainers' closures keep calling the same objects). Idempotent."""
    for m in modules:
        if (device.type == "cuda" or channels_last) and has_conv(m):
            m.to(memory_format=torch.channels_last)
        if compile:
            import torch._dynamo as dynamo

            cfg = dynamo.config
            for name in ("recompile_limit", "cache_size_limit"):
                if hasattr(cfg, name) and getattr(cfg, name) < RECOMPILE_LIMIT:
                    setattr(cfg, name, RECOMPILE_LIMIT)
            for target in compile_targets(m):
                if getattr(target, "_compiled_call_impl", None) is None:
                    target.compile()


def input_format(x: torch.Tensor) -> torch.Tensor:
    """A batch of images in the memory format of the conv nets on its device."""
    if x.device.type == "cuda" and x.dim() == 4:
        return x.contiguous(memory_format=torch.channels_last)
    return x


def data_on_device(x: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """``x`` on ``device`` when it fits (at most :data:`DEVICE_DATA_SHARE` of the free device
    memory), else ``x`` unchanged (batches are then moved one by one). On the CPU: ``x``."""
    device = torch.device(device)
    if device.type != "cuda" or x.device == device:
        return x
    free, _total = torch.cuda.mem_get_info(device)
    if x.numel() * x.element_size() > DEVICE_DATA_SHARE * free:
        return x
    return x.to(device)


def record_throughput(settings: Settings, desc: str, examples: float, seconds: float) -> None:
    """A trainer's epochs: ``examples`` (the steps' weights) in ``seconds``, into the job's
    table (nothing when ``settings`` has none)."""
    table = settings.throughput
    if table is None:
        return
    key, i = desc, 2
    while key in table:
        key, i = f"{desc} ({i})", i + 1
    table[key] = {"examples": examples, "seconds": round(seconds, 3),
                  "examples_per_s": round(examples / seconds, 1) if seconds > 0 else None,
                  "precision": settings.precision, "compile": settings.compile}


# ------------------------------------------------------------------ the record
def device_name(device: torch.device | str) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    from pubench.numerics import cpu_model

    return cpu_model()


def peak_memory(device: torch.device | str) -> dict[str, Any]:
    device = torch.device(device)
    if device.type == "cuda":
        return {"bytes": int(torch.cuda.max_memory_allocated(device)), "kind": "torch.cuda.max_memory_allocated"}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in KiB on Linux, bytes on macOS
    return {"bytes": int(rss if sys.platform == "darwin" else rss * 1024),
            "kind": "ru_maxrss (process peak, includes earlier jobs of this worker)"}


def determinism() -> dict[str, Any]:
    return {"cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
            "deterministic_algorithms": bool(torch.are_deterministic_algorithms_enabled()),
            "deterministic_warn_only": bool(torch.is_deterministic_algorithms_warn_only_enabled()),
            "fill_uninitialized_memory": bool(torch.utils.deterministic.fill_uninitialized_memory)}


def job_info(settings: Settings, device: torch.device | str, fast: bool = False) -> dict[str, Any]:
    """What ``info.accelerator`` of a job's record holds (module docstring); each trainer's
    throughput entry says its precision (fp32 unless the spec says bf16). ``fast``: the job ran
    the fast numerics profile (channels_last and compiled on every device; the key is only
    there then, so the other records' info is what it was)."""
    device = torch.device(device)
    out = {"device_name": device_name(device), "peak_memory": peak_memory(device),
           "throughput": dict(settings.throughput or {}), "channels_last": device.type == "cuda" or fast,
           "determinism": determinism()}
    if fast:
        out["compiled"] = True
    return out
