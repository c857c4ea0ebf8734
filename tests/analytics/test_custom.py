"""`report --metric FILE`: Python and SQL metrics over the documented views, in the table and under "custom"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analytics.analytics_fixture import import_fixture, report_json
from tests.builders import run_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "analytics" / "examples" / "discovered_share.py"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "c.duckdb"
    import_fixture(path, tmp_path / "in")
    return path


def test_example_discovered_share(db: Path) -> None:
    _, rep = report_json(db, "--judge-run-id", "j1", "--metric", str(EXAMPLE))
    # alpha: fetched items with a valid verdict = other.org/b (discovered) and fourth.io/d (S) -> 1/2
    assert rep["custom"] == {"discovered_share": {"alpha": 0.5, "beta": None, "gamma": None}}
    _, rep2 = report_json(db, "--judge-run-id", "j2", "--metric", str(EXAMPLE))
    assert rep2["custom"]["discovered_share"]["alpha"] is None  # j2 judged no fetched item


def test_sql_metric_and_table(db: Path, tmp_path: Path) -> None:
    sql = tmp_path / "valid_verdicts.sql"
    sql.write_text(
        "SELECT provider, count(*) FROM v_verdicts WHERE judge_run_id = $judge_run_id AND valid GROUP BY provider",
        encoding="utf-8",
    )
    _, rep = report_json(db, "--judge-run-id", "j1", "--metric", str(sql), "--metric", str(EXAMPLE))
    assert rep["custom"]["valid_verdicts"] == {"alpha": 4, "beta": 2, "gamma": 1}
    assert set(rep["custom"]) == {"valid_verdicts", "discovered_share"}
    code, out, err = run_cli("report", "--db", str(db), "--metric", str(sql))
    assert code == 0, err
    assert "custom: valid_verdicts" in out


@pytest.mark.parametrize(
    ("name", "body", "needle"),
    [
        ("nofn.py", "x = 1\n", "defines no function metric"),
        ("notdict.py", "def metric(con, run):\n    return [1]\n", "must return a dict"),
        ("boom.py", "def metric(con, run):\n    raise ValueError('bad')\n", "ValueError: bad"),
        ("text.py", "def metric(con, run):\n    return {'alpha': 'x'}\n", "must be a number"),
        ("cols.sql", "SELECT 1, 2, 3", "two columns"),
        ("broken.sql", "SELECT FROM nowhere", "query failed"),
        ("other.txt", "", ".py"),
    ],
)
def test_bad_metric_files_exit_2(
    db: Path, tmp_path: Path, name: str, body: str, needle: str
) -> None:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    code, _, err = run_cli("report", "--db", str(db), "--json", "--metric", str(path))
    assert code == 2
    assert str(path) in err and needle in err, err


def test_html_page(db: Path, tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    code, out, err = run_cli("report", "--db", str(db), "--html", str(page), "--metric", str(EXAMPLE))
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "alpha" in text and "<svg" in text
