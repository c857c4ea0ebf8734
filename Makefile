VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/searchtrace demo

lint: $(STAMP)
	$(VENV)/bin/ruff check searchtrace/cli searchtrace/*.py engine adapters store replay analytics tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy -p searchtrace

test: $(STAMP) lint typecheck
	$(VENV)/bin/pytest -q

bench: $(STAMP)
	$(VENV)/bin/searchtrace bench ingest --events 500000
	$(VENV)/bin/searchtrace bench replay
	$(VENV)/bin/searchtrace bench fanout
	$(VENV)/bin/searchtrace bench judge
	$(VENV)/bin/searchtrace bench http
	$(VENV)/bin/searchtrace bench chaos

clean:
	rm -rf $(VENV) build *.egg-info
