"""Task ``selftest``: a tiny deterministic task for pipeline tests and CI checks.

``params = {value: float, sleep: float, fail_if_missing: path | None}``; returns
``value + noise(seed)``. ``fail_if_missing`` makes the job fail until that file exists,
which tests use to exercise failure records and retries.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from pubench.tasks.base import TASKS, Task
from pubench.train.context import JobContext
from pubench.utils.config import ConfigError
from pubench.utils.result import Result


@TASKS.register("selftest")
class SelfTest(Task):
    info_keys = ("seeds",)
    test_config = {"value": 1.0}

    @classmethod
    def validate(cls, params: dict) -> dict:
        unknown = set(params) - {"value", "sleep", "fail_if_missing", "data"}
        if unknown:
            raise ConfigError(f"params: unknown key {sorted(unknown)[0]!r}")
        if "value" not in params:
            raise ConfigError("params: missing key 'value'")
        return params

    @classmethod
    def run(cls, params: dict, seeds: dict[str, int], ctx: JobContext) -> Result:
        cls.validate(params)
        return selftest(params, seeds)


def selftest(params: dict, seeds: dict[str, int]) -> Result:
    started = time.time()
    time.sleep(float(params.get("sleep", 0.0)))
    gate = params.get("fail_if_missing")
    if gate and not Path(gate).exists():
        raise RuntimeError(f"selftest: {gate} does not exist yet")
    noise = np.random.default_rng(seeds["init"]).normal(0.0, 0.1)
    return Result({"score": float(params["value"]) + float(noise)},
                  {"seeds": seeds, "started_unix": started, "ended_unix": time.time()})
