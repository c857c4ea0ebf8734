VENV ?= .venv
PY := $(VENV)/bin/python
# Two install stamps, so `make demo` then `make test` (or the reverse) work in one .venv: the demo needs only the
# default dependencies (`pip install -e .`: no Ray, Playwright, mypy or Inspect); the tests, lint, type check, docs
# and benchmarks need the dev and extra sets on top. The full install implies the demo's.
DEMO_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed-dev
BROWSER := $(VENV)/.browser
POSTGRES := $(VENV)/.postgres
NODE := $(VENV)/.node
FIRECRAWL_MCP := firecrawl-mcp@3.22.2

.PHONY: demo test docs docs-build lint typecheck bench clean

$(DEMO_STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e .
	touch $(DEMO_STAMP)

# The postgres and ray extras are part of the development install (mypy checks store/_postgres.py against psycopg's
# types and pipeline/_ray*.py against ray's; the Ray tests start a local two-raylet cluster); the default install
# (`pip install searchtrace`) and `make demo` import neither (tests/test_startup.py).
$(STAMP): pyproject.toml constraints-dev.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,postgres,ray]' -c constraints-dev.txt
	$(PY) -m pip install -q 'arize-phoenix==20.26.1'  # the phoenix extra, on its own (pyproject.toml)
	touch $(STAMP) $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/searchtrace demo

# The user manual (MkDocs Material) on 127.0.0.1:8000; `docs-build` is the strict build `make test` runs first (a
# broken link, a page left out of the nav or a missing include fails it), into the virtualenv, not the tree.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve -a 127.0.0.1:8000

docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir $(VENV)/site

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

# The central-log tests run Debian's PostgreSQL server from a session fixture (tests/conftest.py), as the postgres
# user on a Unix socket only; the package is told not to create (and start) a cluster of its own.
$(POSTGRES):
	@if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		mkdir -p /etc/postgresql-common && [ -e /etc/postgresql-common/createcluster.conf ] || \
			echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Options::=--force-confold \
			postgresql >/dev/null; \
	else echo "no PostgreSQL server and not root: install Debian's postgresql (apt-get install postgresql), else the central-log tests skip"; fi
	@touch $@

# The MCP relay's test runs the real firecrawl-mcp server from the npm registry under Debian's node
# (tests/mcp/test_firecrawl_mcp.py), installed into $(VENV)/node (never a global install).
$(NODE):
	@if ! command -v npm >/dev/null && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; fi
	@if command -v npm >/dev/null; then \
		npm install --prefix $(VENV)/node --no-audit --no-fund --silent $(FIRECRAWL_MCP); \
	else echo "no npm and not root: install Debian's nodejs and npm, else the firecrawl-mcp test skips"; fi
	@touch $@

# The suite on four workers (pytest-xdist; tests are independent: own tmp dirs, port 0, no shared files): many
# tests wait on child processes, servers and deadlines, so two workers per core keep a 2-core machine busy. Each test
# module is one unit of work (its module- and session-scoped servers start once), handed out longest first in the
# order tests/conftest.py gives, so no long module is left to trail at the end.
# Bytecode first: where PYTHONDONTWRITEBYTECODE is set, every CLI process the tests start would compile the package,
# and every worker would rewrite and compile each test module's asserts again (~10 s of CPU per worker): compileall
# writes the package's bytecode, one collection with writing allowed leaves pytest's rewritten test modules.
# The pytest step runs under a few lines of Python that print its wall time and the CPU time (user + system) of it and
# every process it waited for (workers, CLI runs, servers): /usr/bin/time is not on a slim Debian image.
export TIMED
define TIMED
import resource, subprocess, sys, time
start = time.monotonic()
code = subprocess.call(sys.argv[1:])
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"pytest: {time.monotonic() - start:.0f} s wall, {used.ru_utime + used.ru_stime:.0f} s CPU "
      f"(user {used.ru_utime:.0f} s, system {used.ru_stime:.0f} s)")
sys.exit(code if code >= 0 else 128 - code)
endef

test: $(STAMP) $(BROWSER) $(POSTGRES) $(NODE) lint typecheck docs-build
	$(PY) -m compileall -q -j 0 searchtrace store adapters engine analytics replay benchmarks tests examples
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest -q --collect-only -p no:xdist >$(VENV)/collect.log || \
		{ tail -40 $(VENV)/collect.log; exit 1; }
	$(PY) -c "$$TIMED" $(VENV)/bin/pytest -q -n 4 --dist loadfile --no-loadscope-reorder

bench: $(STAMP)
	$(VENV)/bin/searchtrace bench ingest --events 500000
	$(VENV)/bin/searchtrace bench replay
	$(VENV)/bin/searchtrace bench fanout
	$(VENV)/bin/searchtrace bench judge
	$(VENV)/bin/searchtrace bench http
	$(VENV)/bin/searchtrace bench chaos
	$(VENV)/bin/searchtrace bench proxy
	$(VENV)/bin/searchtrace bench otel
	$(VENV)/bin/searchtrace bench live
	$(VENV)/bin/searchtrace bench merge
	$(VENV)/bin/searchtrace bench scale --questions 60
	$(VENV)/bin/searchtrace bench coverage --quick

clean:
	rm -rf $(VENV) build *.egg-info
