"""Tools the tests use and the GPU figures of docs/ come from, run from the source tree as
``python -m pubench.tools.<name>`` (``make gpu-check`` runs :mod:`pubench.tools.gpu_check`):
the GPU check, a framework's step time on a GPU (:mod:`~pubench.tools.gpu_step`), a short
run of one paper-tier cell (:mod:`~pubench.tools.paper_cell`), the paper tier's GPU cost
from FLOP counts (:mod:`~pubench.tools.paper_cost`) and the sections of docs/gpu.md they
write (:mod:`~pubench.tools.gpu_report`). Nothing in the package imports them;
``benchmarks/`` keeps the scripts that only measure."""
