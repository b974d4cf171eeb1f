"""Numerics: everything besides a job's config and seeds that can change its numbers.

Measured here (``benchmarks/numerics.py``): the same job gives different numbers with 1
or 2 intra-op threads, and with the CPU code paths the numeric libraries pick at run time
(PyTorch's ATen kernels AVX2 vs AVX-512, oneDNN's convolutions, MKL's GEMMs, which also
differ between Intel and AMD CPUs of one ISA, OpenBLAS and NumPy's SIMD loops). So a job
names a :class:`Numerics` profile and its id hashes it:

* ``device``: ``cpu`` or ``cuda``;
* ``threads``: torch intra-op threads of the job (inter-op: 1). Canonical: 1 on every tier;
  ``pubench run --jobs N`` gives the parallelism;
* ``isa``: ``avx2`` (canonical) pins every library to the AVX2 code path through the
  environment of :data:`CANONICAL_CPU_ENV`, so any x86-64 CPU with AVX2 (Intel or AMD,
  with or without AVX-512) runs the same instructions in the same order; ``native``
  lets each library pick (faster on AVX-512 CPUs, not reproducible across machines);
* ``torch``: the torch version (it fixes the bundled MKL and oneDNN versions);
* ``fast`` (opt-in, ``pubench run --fast-numerics``; absent from the canonical profile's dict,
  so its job ids are those they always were): every trainer's conv nets in ``channels_last``
  memory format and every module a step calls compiled with ``torch.compile``
  (:func:`pubench.train.accel.prepare_modules`). Faster (docs/performance.md) and other
  numbers, hence other job ids; reports and claims never compare its records with the
  other profiles' (:func:`pubench.report.collect.classify_records`).

The pinned variables are read by the libraries when they load or first run, so a process
must start with them: ``pubench run`` re-executes itself with :func:`process_env`, the
SLURM executor exports them in the batch script, and :func:`check_process` refuses to run
a job in a process that cannot deliver its profile. The worker puts the job's profile in
its context (:class:`pubench.train.context.JobContext`), where tasks read its device. What a
job cannot pin (CPU model, library versions, GPU model) is recorded in every record
(:func:`machine`).
"""

from __future__ import annotations

import functools
import os
import platform
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import Any

from pubench.errors import PubenchError

#: The environment that makes CPU numerics the same on any x86-64 machine with AVX2.
#: Cost here (AMD EPYC, AVX-512): 1.0-1.2x the native time of a training step
#: (benchmarks/numerics.py); MKL_CBWR=COMPATIBLE would cost 2.5-3.6x.
CANONICAL_CPU_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",          # PyTorch's own vectorized kernels
    "ONEDNN_MAX_CPU_ISA": "AVX2",           # oneDNN (convolutions, some GEMMs)
    "DNNL_MAX_CPU_ISA": "AVX2",             # the same, older name
    "MKL_CBWR": "AVX2,STRICT",              # MKL's conditional numerical reproducibility
    "OPENBLAS_CORETYPE": "Haswell",         # NumPy's / SciPy's OpenBLAS kernels
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",  # NumPy's SIMD loops
}
#: One thread per job for every library that would start its own pool.
THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
#: glibc's default allocator makes CPU conv training 2-10x slower (speed only, not numerics).
MALLOC_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "100000000000"}
#: cuBLAS needs a fixed workspace for deterministic GEMMs.
CUDA_ENV = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}

DEVICES = ("cpu", "cuda")
ISAS = ("avx2", "native")
CANONICAL_THREADS = 1


class NumericsError(PubenchError):
    """This process or machine cannot deliver a job's numerics profile."""


@dataclass(frozen=True)
class Numerics:
    device: str = "cpu"
    threads: int = CANONICAL_THREADS
    isa: str = "avx2"
    torch: str = ""
    fast: bool = False

    def __post_init__(self):
        if self.device not in DEVICES:
            raise NumericsError(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.isa not in ISAS:
            raise NumericsError(f"numerics must be one of {', '.join(ISAS)}, got {self.isa!r}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or not 1 <= self.threads <= 256:
            raise NumericsError(f"threads must be an integer in 1..256, got {self.threads!r}")
        if not isinstance(self.fast, bool):
            raise NumericsError(f"fast must be true or false, got {self.fast!r}")

    @property
    def canonical(self) -> bool:
        """The tier's pinned setting: reproducible bit for bit on any machine of one kind."""
        return self.isa == "avx2" and self.threads == CANONICAL_THREADS and not self.fast

    def to_dict(self) -> dict[str, Any]:
        """What a job's id hashes: ``fast`` only when on (the other profiles' ids predate it)."""
        out = asdict(self)
        if not self.fast:
            del out["fast"]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Numerics":
        return cls(**d)


def torch_version() -> str:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:  # pragma: no cover - torch is a dependency
        return "none"


def resolve(device: str = "cpu", threads: int | None = None, isa: str = "avx2", fast: bool = False) -> Numerics:
    """The profile jobs of a run get: canonical unless asked otherwise."""
    return Numerics(device=device, threads=CANONICAL_THREADS if threads is None else threads, isa=isa,
                    torch=torch_version(), fast=fast)


def is_fast(numerics: dict[str, Any] | None) -> bool:
    """Whether a record's ``job.numerics`` is the opt-in fast profile."""
    return bool((numerics or {}).get("fast"))


def process_env(numerics: Numerics | None = None) -> dict[str, str]:
    """Environment variables a process running ``numerics`` must start with."""
    n = numerics or resolve()
    env = dict(MALLOC_ENV)
    env.update({k: str(n.threads) for k in THREAD_ENV})
    if n.isa == "avx2":
        env.update(CANONICAL_CPU_ENV)
    if n.device == "cuda":
        env.update(CUDA_ENV)
    return env


def env_missing(numerics: Numerics, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables of ``process_env(numerics)`` that ``environ`` lacks or sets otherwise
    (the allocator variables are speed only and never count)."""
    environ = os.environ if environ is None else environ
    want = {k: v for k, v in process_env(numerics).items() if k not in MALLOC_ENV}
    return {k: v for k, v in want.items() if environ.get(k) != v}


def isa_problem(numerics: Numerics) -> str | None:
    """Why this process does not run the pinned code paths (None when it does)."""
    if numerics.isa != "avx2":
        return None
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"the canonical numerics pin x86-64 AVX2 code paths; this machine is {platform.machine()}"
    flags = cpu_flags()
    if flags and "avx2" not in flags:
        return "the canonical numerics need a CPU with AVX2; this one has none"
    bad = env_missing(numerics)
    if bad:
        return "the process did not start with " + " ".join(f"{k}={v}" for k, v in sorted(bad.items()))
    import torch

    cap = torch.backends.cpu.get_cpu_capability()
    if cap != "AVX2":
        return f"torch runs {cap} kernels although ATEN_CPU_CAPABILITY=avx2 (set after torch started?)"
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as npf
    except ImportError:  # pragma: no cover - numpy < 2
        npf = {}
    on = [f for f in ("X86_V4", "AVX512_ICL", "AVX512_SPR") if npf.get(f)]
    if on:
        return f"NumPy dispatches {', '.join(on)} loops (NPY_DISABLE_CPU_FEATURES set after numpy started?)"
    return None


def check_process(numerics: Numerics) -> None:
    """Raise :class:`NumericsError` unless this process can run a job of ``numerics``."""
    if numerics.torch != torch_version():
        raise NumericsError(f"the job asks for torch {numerics.torch}; this process has {torch_version()}")
    why = isa_problem(numerics)
    if why:
        raise NumericsError(f"numerics {numerics.isa!r}: {why} (`pubench run` sets them; "
                            "or run with --numerics native)")
    if numerics.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise NumericsError("the job asks for a CUDA device and this machine has none")


def apply(numerics: Numerics) -> None:
    """Set torch's thread counts and deterministic algorithms for a job (on the CPU without
    the NaN fill of new tensors, :data:`torch.utils.deterministic.fill_uninitialized_memory`)."""
    import torch

    torch.set_num_threads(numerics.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only settable before the first parallel region; 1 is set at start-up by THREAD_ENV
        pass
    torch.use_deterministic_algorithms(True, warn_only=numerics.device == "cpu")
    # Deterministic mode also fills every new tensor with NaN (about 8.5% of a CPU job, issue
    # 61), which only matters to code that reads memory it never wrote; no job does (every
    # record `pubench verify` reran with it off reproduced bit for bit: docs/performance.md).
    # Kept on CUDA, where no record has been checked that way.
    torch.utils.deterministic.fill_uninitialized_memory = numerics.device != "cpu"


# ---- what is recorded ---------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def native_isa() -> str:
    flags = cpu_flags()
    for name, need in (("avx512", {"avx512f", "avx512bw", "avx512vl", "avx512dq"}), ("avx2", {"avx2", "fma"}),
                       ("avx", {"avx"})):
        if need <= flags:
            return name
    return platform.machine()


def machine() -> dict[str, Any]:
    """What a record names about the machine and the numeric libraries that ran it."""
    import torch

    out: dict[str, Any] = {
        "cpu_model": cpu_model(),
        "cpu_native_isa": native_isa(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "mkl": _torch_config_version("Math Kernel Library Version"),
        "onednn": _torch_config_version("MKL-DNN"),
        "env": {k: os.environ.get(k) for k in sorted({*CANONICAL_CPU_ENV, *THREAD_ENV, *CUDA_ENV})},
    }
    if torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name()
        out["cuda"] = torch.version.cuda
    return out


@functools.lru_cache(maxsize=None)
def _torch_config_version(marker: str) -> str | None:
    import torch

    for line in torch.__config__.show().splitlines():
        if marker in line:
            return line.strip(" -").strip()
    return None
