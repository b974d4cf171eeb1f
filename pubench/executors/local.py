"""Local executor: jobs one after another in this process, or in ``--jobs N`` worker processes."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tqdm import tqdm

from pubench.executors.worker import execute_job
from pubench.jobs.plan import Job


def _init_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


class LocalExecutor:
    """Runs jobs here. Each job writes its own record as it finishes, so killing the
    runner loses only the jobs that were running."""

    def __init__(self, results_root: str | Path, n_jobs: int = 1, progress: bool = True, threads: int | None = None):
        if n_jobs < 1:
            raise ValueError("--jobs must be at least 1")
        if threads is not None and threads < 1:
            raise ValueError("--threads must be at least 1")
        self.results_root = str(results_root)
        self.n_jobs = n_jobs
        self.progress = progress
        self.threads = threads or max(1, (os.cpu_count() or 1) // n_jobs)

    def run(self, jobs: list[Job], desc: str = "jobs") -> Counter:
        counts: Counter = Counter()
        bar = tqdm(total=len(jobs), desc=desc, unit="job", disable=not self.progress, dynamic_ncols=True)
        if self.n_jobs == 1 or len(jobs) <= 1:
            _init_worker(self.threads)
            for job in jobs:
                bar.set_postfix_str(f"{job.row}|{job.col} s{job.seed_index}", refresh=False)
                counts[execute_job(job, self.results_root)] += 1
                bar.update()
        else:
            ctx = mp.get_context("spawn")  # fork after torch has threads is unsafe
            with ProcessPoolExecutor(self.n_jobs, mp_context=ctx, initializer=_init_worker,
                                     initargs=(self.threads,)) as pool:
                futures = [pool.submit(execute_job, job.to_dict(), self.results_root) for job in jobs]
                try:
                    for fut in as_completed(futures):
                        counts[fut.result()] += 1
                        bar.update()
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
        bar.close()
        return counts
