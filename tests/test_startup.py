"""Command-line start-up: a command's module, and the package surfaces it imports, load neither DuckDB nor Arrow
until the command runs (each `searchtrace` process the tests and users start pays for what its import loads)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("duckdb", "pyarrow", "numpy")


def loaded(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    return set(out.stdout.split())


def test_command_modules_load_no_duckdb_or_arrow() -> None:
    commands = sorted(p.stem[1:] for p in (ROOT / "searchtrace" / "cli").glob("_*.py") if not p.stem.startswith("__"))
    assert len(commands) >= 15
    heavy = {name for name in commands if loaded(f"searchtrace.cli._{name}")}
    assert heavy == set()


_HELP = """
import sys
from searchtrace.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
print("loaded:", *(m for m in {heavy!r} if m in sys.modules))
"""


def test_help_loads_neither_duckdb_nor_numpy() -> None:
    """`searchtrace --help` imports every command's module (click asks each for its one-line help), and `report
    --help` shows the bootstrap defaults: neither loads DuckDB, numpy or Arrow."""
    for argv in (["--help"], ["report", "--help"]):
        done = subprocess.run([sys.executable, "-c", _HELP.format(heavy=HEAVY), *argv], capture_output=True,
                              text=True, check=True, cwd="/", timeout=120)
        assert done.stdout.rstrip().endswith("loaded:"), done.stdout[-300:]
    from searchtrace.analytics import DEFAULT_BOOTSTRAP

    assert f"[default: {DEFAULT_BOOTSTRAP}; x>=0]" in " ".join(done.stdout.split())


def test_the_package_surfaces_load_nothing_heavy() -> None:
    assert loaded("searchtrace.cli") == set()
    assert loaded("searchtrace.store") == set()
    assert loaded("searchtrace.pipeline") == set()


def test_no_command_module_loads_psycopg_or_ray() -> None:
    """The central PostgreSQL log, the Ray fan-out and the MCP SDK are extras: each loads only when a command uses
    it."""
    code = ("import sys, pathlib, importlib, searchtrace.cli as c, searchtrace.benchmarks as b; "
            "[importlib.import_module(t.split(':')[0]) for t in c.COMMANDS.values()]; "
            "import searchtrace.pipeline as p; p.record, p.merge; "
            "print('psycopg' in sys.modules, 'ray' in sys.modules, 'mcp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.split() == ["False", "False", "False"]


# psycopg and ray made unimportable, as in an install without the extras; then the commands the demo is made of
_WITHOUT_EXTRA = """
import sys
class NoExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("psycopg", "psycopg_binary", "ray"):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, NoExtra())
from searchtrace.cli import main
open("r.toml", "w").write('[agent]\\nmodel = "sandbox-agent"\\n[providers.brave]\\n[dataset]\\npath = "sandbox"\\n')
for argv in (["demo", "--n", "2", "--out", "d"], ["verify", "--db", "d/demo.duckdb"],
             ["ship", "--db", "d/demo.duckdb", "--to", "postgresql:///x"],
             ["record", "--config", "r.toml", "--sandbox", "--db", "d/r.duckdb", "--ray", "auto", "--shards", "2"]):
    try:
        main(argv)
    except SystemExit as exc:
        print("exit", argv[0], exc.code, file=sys.stderr)
print("psycopg loaded:", "psycopg" in sys.modules, "ray loaded:", "ray" in sys.modules)
"""


def test_the_demo_runs_without_the_postgres_and_ray_extras(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _WITHOUT_EXTRA], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert "exit demo" not in done.stderr and "exit verify" not in done.stderr, done.stderr
    assert (tmp_path / "d" / "report.html").exists()
    assert "searchtrace: error: a PostgreSQL log needs the postgres extra: pip install 'searchtrace[postgres]'" \
        in done.stderr and "exit ship 2" in done.stderr
    assert "searchtrace: error: --ray needs the ray extra: pip install 'searchtrace[ray]'" in done.stderr \
        and "exit record 2" in done.stderr
    assert done.stdout.strip().endswith("psycopg loaded: False ray loaded: False")


_RECORD = """
import sys
from searchtrace.benchmarks._startup import ONE_QUESTION
from searchtrace.cli import main
open("r.toml", "w").write(ONE_QUESTION)
try:
    main(["record", "--config", "r.toml", "--sandbox", "--db", "r.duckdb", "--no-progress"])
except SystemExit as exc:
    assert not exc.code, exc.code
print("loaded:", *(m for m in ("pyarrow", "pandas") if m in sys.modules))
"""


def test_a_recorded_run_appends_without_loading_pandas(tmp_path: Path) -> None:
    """The store builds its Arrow columns from buffers: `pa.array` would import pandas wherever it is installed
    (this environment has it), a third of a small run's CPU."""
    import importlib.util

    assert importlib.util.find_spec("pandas") is not None  # else this test proves nothing
    done = subprocess.run([sys.executable, "-c", _RECORD], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "loaded: pyarrow", done.stdout[-500:]
