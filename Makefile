# Two commands do all set-up on a fresh machine:
#   make demo   venv + install, run fig5-bcl at paper tier (5 seeds) and, when ../shared/data
#               exists, two reduced-tier cells of table2-punce into a scratch store; render the
#               reports and the HTML site there and print where they are, with a line per stage
#               (and the run's progress bar), and how to remove the scratch folder
#   make test      venv + install, the fast tests: every unit and contract test, the references, the CLI's
#                  bad inputs, the goldens (-m "not slow"; what is slow and why: tests/markers.py)
#   make test-all  venv + install, every test: also the SLURM cluster, Chromium, LaTeX, the real data, the
#                  bit-for-bit resume of every unit and the subprocess-heavy tests (what CI runs: .ci/run)
VENV ?= .venv
PY := $(VENV)/bin/python
PUBENCH := $(VENV)/bin/pubench
STAMP := $(VENV)/.installed
export MALLOC_MMAP_MAX_ := 0
export MALLOC_TRIM_THRESHOLD_ := 100000000000

.PHONY: install demo test test-all smoke gpu-check gpu-paper clean-venv

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,text]'
	touch $(STAMP)

install: $(STAMP)

# The demo never touches the committed results/ and reports/: it runs into a fresh scratch
# store, so a clone whose results are committed still runs jobs.
SHARED_DATA ?= ../shared/data
demo: install
	@set -e; scratch=$$(mktemp -d "$${TMPDIR:-/tmp}/pubench-demo-XXXXXX"); \
	export PUBENCH_RESULTS="$$scratch/results" PUBENCH_REPORTS="$$scratch/reports" PUBENCH_PROGRESS=0; \
	echo "== demo: results, reports and the site go to the scratch folder $$scratch"; \
	echo "   (nothing else is written there; remove it afterwards with: rm -rf $$scratch)"; \
	echo "== demo 1/3: BCL Fig. 5 (a simulation), the paper's own configuration, 5 seeds: 360 jobs, about 20 s of CPU (1-4 min at load 6-9)"; \
	echo "   (jobs take machine-wide core slots: while other pubench runs hold every core, this waits for one)"; \
	$(PUBENCH) run fig5-bcl --tier paper --seeds 5 --jobs 2; \
	if [ -d "$(SHARED_DATA)" ]; then \
	  echo "== demo 2/3: MNIST from $(SHARED_DATA) into $${PUBENCH_DATA:-./data}, then two cells of puNCE Table 2 (reduced tier, 1 seed: about 70 s of CPU, 4.5-16 min at load 6-9)"; \
	  $(PUBENCH) prepare mnist --from "$(SHARED_DATA)"; \
	  $(PUBENCH) run table2-punce --tier reduced --seeds 1 --jobs 2 \
	    --only 'MLP nnPU|n_P=1k' --only 'MLP puNCE|n_P=1k'; \
	else \
	  echo "== demo 2/3: skipped: no $(SHARED_DATA) (data tables need \`pubench prepare\`, see README)"; \
	fi; \
	echo "== demo 3/3: status, reports and the HTML site"; \
	$(PUBENCH) status; \
	$(PUBENCH) report --html; \
	echo; echo "Reports (markdown, standalone LaTeX, PNG plots):"; \
	find "$$scratch/reports" -path "$$scratch/reports/site" -prune -o -type f \( -name '*.md' -o -name '*.tex' -o -name '*.png' \) -print | sort | sed 's/^/  /'; \
	echo "HTML site (opens offline): $$scratch/reports/site/index.html"; \
	echo "Optional, where LaTeX is installed: a report as a PDF (cd $$scratch/reports/paper && pdflatex fig5-bcl.tex)"; \
	echo "== demo done. Everything it wrote is in $$scratch; remove it with: rm -rf $$scratch"

test: install
	$(PY) -m ruff check --select F,E9 --quiet pubench tests benchmarks .ci
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow"

test-all: install
	$(PY) -m ruff check --select F,E9 --quiet pubench tests benchmarks .ci
	$(PY) -m pytest -q -n 2 --dist loadfile -m ""

smoke: install
	$(PY) -m pytest -q -m smoke

# The whole GPU path on a machine with one CUDA GPU, in at most 8 minutes (docs/performance.md "Speed on
# GPUs"): runs from the source tree with the machine's own python3 and torch (no install;
# wheels in .whl/ are installed into /tmp/pubench-site where pydantic is missing). Without
# CUDA: one line, exit 0. GPU_PY=... picks the interpreter, GPU_CHECK_ARGS=... adds options.
GPU_PY ?= python3
gpu-check:
	@PYTHONPATH=.$${PYTHONPATH:+:$$PYTHONPATH} PYTHONUNBUFFERED=1 $(GPU_PY) -m pubench.tools.gpu_check $(GPU_CHECK_ARGS)

# A campaign window on a machine with one CUDA GPU, one lease's command (docs/gpu.md, "The lease, step by
# step"): python -m pubench.tools.gpu_paper, run as gpu-check runs (the source tree, the machine's own
# python3 and torch, no install): it takes the command's start as the window's, installs the wheels
# of .whl/ into /tmp/pubench-site where pydantic is missing, says in one line what this python lacks
# (exit 2), then runs the queue of campaigns/paper-gpu.yaml for GPU_BUDGET (default the lease's
# 9m30s, from the command's start) with what `pubench campaign pack` put in .campaign/ (the data sets,
# the commit, stopped jobs' checkpoints). The archive of new records and the window's summary go to
# $$OUT (default ./campaign-out) as jobs finish; `pubench campaign import` brings them into results/.
# GPU_PAPER_ARGS=... adds options (e.g. --dry-run --for nvidia-h200, --concurrency 4).
GPU_BUDGET ?=
gpu-paper:
	@PYTHONPATH=.$${PYTHONPATH:+:$$PYTHONPATH} PYTHONUNBUFFERED=1 $(GPU_PY) -m pubench.tools.gpu_paper \
	  $(if $(GPU_BUDGET),--budget $(GPU_BUDGET)) --out $${OUT:-campaign-out} $(GPU_PAPER_ARGS)

clean-venv:
	rm -rf $(VENV)
