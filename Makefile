VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BROWSER := $(VENV)/.browser

.PHONY: demo test lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/searchtrace demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy -p searchtrace

# The explorer's browser tests drive Debian's chromium through Playwright (never a browser download).
$(BROWSER):
	@if command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "no chromium and not root: install Debian's chromium (apt-get install chromium), else the browser tests skip"; fi
	@touch $@

# The suite on four workers (pytest-xdist; tests are independent: own tmp dirs, port 0, no shared files): many
# tests wait on child processes, servers and deadlines, so two workers per core keep a 2-core machine busy, and
# work stealing keeps the long tests from trailing at the end.
# Bytecode first: where PYTHONDONTWRITEBYTECODE is set, every CLI process the tests start would compile the package.
test: $(STAMP) $(BROWSER) lint typecheck
	$(PY) -m compileall -q -j 0 searchtrace store adapters engine analytics replay benchmarks tests examples
	$(VENV)/bin/pytest -q -n 4 --dist worksteal

bench: $(STAMP)
	$(VENV)/bin/searchtrace bench ingest --events 500000
	$(VENV)/bin/searchtrace bench replay
	$(VENV)/bin/searchtrace bench fanout
	$(VENV)/bin/searchtrace bench judge
	$(VENV)/bin/searchtrace bench http
	$(VENV)/bin/searchtrace bench chaos
	$(VENV)/bin/searchtrace bench proxy
	$(VENV)/bin/searchtrace bench live
	$(VENV)/bin/searchtrace bench merge
	$(VENV)/bin/searchtrace bench coverage --quick

clean:
	rm -rf $(VENV) build *.egg-info
