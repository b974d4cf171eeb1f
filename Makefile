# Two commands do all set-up on a fresh machine:
#   make demo   venv + install, run fig5-bcl at paper tier (5 seeds), render its report
#   make test   venv + install, run the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
PUBENCH := $(VENV)/bin/pubench
STAMP := $(VENV)/.installed
export MALLOC_MMAP_MAX_ := 0
export MALLOC_TRIM_THRESHOLD_ := 100000000000

.PHONY: install demo test smoke clean-venv

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(PUBENCH) run fig5-bcl --tier paper --seeds 5
	$(PUBENCH) report fig5-bcl --tier paper

test: install
	$(PY) -m ruff check --select F,E9 --quiet pubench tests benchmarks
	$(PY) -m pytest -q -n 2 --dist loadfile

smoke: install
	$(PY) -m pytest -q -m smoke

clean-venv:
	rm -rf $(VENV)
