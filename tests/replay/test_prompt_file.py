"""Judge prompt files: a second judge run with the user's own words, versioned by content and kept in the store."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from searchtrace.cli import main
from searchtrace.replay._judge_prompt import _SYSTEM_1
from searchtrace.store import EventLog, JudgeStarted

PROMPT = '''\
name = "strict"
schema_version = 1
system = """{system}"""
user = """Question: {{question}}
Gold: {{gold_answer}}
Answer: {{final}}
{{document}}"""
'''


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """One searchtrace command in-process: (exit code, stdout, stderr)."""
    try:
        main(list(argv))
        rc = 0
    except SystemExit as exc:
        rc = int(exc.code or 0)
    out = capsys.readouterr()
    return rc, out.out, out.err


def starts(db: Path) -> dict[str, JudgeStarted]:
    log = EventLog(db, read_only=True)
    try:
        return {e.payload.judge_run_id: e.payload for e in log.read(types=["judge.started"])
                if isinstance(e.payload, JudgeStarted)}
    finally:
        log.close()


def test_prompt_file_judge_run_recorded_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.duckdb"
    assert run(capsys, "demo", "--db", str(db), "--out", str(tmp_path / "demo"), "--n", "3", "--json")[0] == 0
    pf = tmp_path / "strict.toml"
    pf.write_text(PROMPT.format(system=_SYSTEM_1.replace("evidence judge", "strict evidence judge")))
    rc, out, err = run(capsys, "judge", "--db", str(db), "--sandbox", "--prompt-file", str(pf), "--json")
    assert rc == 0, err
    import tomllib

    doc = tomllib.loads(pf.read_text())
    canonical = msgspec.json.encode({k: doc[k] for k in ("name", "schema_version", "system", "user")}, order="sorted")
    sha = hashlib.sha256(canonical).hexdigest()
    version = f"strict@{sha[:12]}"
    jrid = json.loads(out)["judge_run_id"]
    assert jrid == f"sandbox-judge@{version}"
    started = starts(db)
    assert set(started) == {"sandbox-judge@judge/1", jrid}
    assert started[jrid].prompt_version == version and started[jrid].prompt_sha256 == sha
    log = EventLog(db, read_only=True)
    try:
        assert log.get_blob(sha) == canonical  # the words themselves, in the store
    finally:
        log.close()
    reports: dict[str, Any] = {}
    for j in started:
        rc, out, err = run(capsys, "report", "--db", str(db), "--judge-run-id", j, "--json")
        assert rc == 0, err
        reports[j] = json.loads(out)
        assert reports[j]["judge_run_id"] == j
    # `judge compare` sets the two judge runs side by side
    rc, out, err = run(capsys, "judge", "compare", "--db", str(db), "sandbox-judge@judge/1", jrid, "--json")
    assert rc == 0, err
    cmp = json.loads(out)
    assert jrid in json.dumps(cmp) and "sandbox-judge@judge/1" in json.dumps(cmp)
    # the re-judge needs no file: the same version resolves from the store and resumes (nothing left to judge)
    pf.unlink()
    rc, out, err = run(capsys, "judge", "--db", str(db), "--sandbox", "--prompt-version", version, "--json")
    assert rc == 0, err
    again = json.loads(out)
    assert again["judge_run_id"] == jrid and again["done"] == 0 and again["already"] == again["items"] > 0
    rc, out, err = run(capsys, "judge", "--db", str(db), "--sandbox", "--judge-run-id", jrid, "--json")
    assert rc == 0 and json.loads(out)["already"] == again["items"], err


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('name = "x"\nsystem = "s"\nuser = "{question} {colour}"\n', "unknown template field {colour}"),
        ('name = "x"\nsystem = "s"\nuser = "{question"\n', "not a valid template"),
        ('name = "x"\nsystem = "s"\nuser = "{0} {document}"\n', "not a valid template ({0}"),
        # docs/concepts/security.md: plain fields only (these loaded, then failed or ate memory when formatted), {document} required
        ('name = "x"\nsystem = "s"\nuser = "{question:>30000000} {document}"\n', "{question:>30000000}"),
        ('name = "x"\nsystem = "s"\nuser = "{document:d}"\n', "no conversion or format spec"),
        ('name = "x"\nsystem = "s"\nuser = "{document!z}"\n', "not a valid template"),
        ('name = "x"\nsystem = "s"\nuser = "{document!r}"\n', "no conversion or format spec"),
        ('name = "x"\nsystem = "s"\nuser = "{document:{question}}"\n', "no conversion or format spec"),
        ('name = "x"\nsystem = "s"\nuser = "{question.__class__} {document}"\n', "only plain named fields"),
        ('name = "x"\nsystem = "s"\nuser = "{document[0]}"\n', "only plain named fields"),
        ('name = "x"\nsystem = "s"\nuser = "{} {document}"\n', "only plain named fields"),
        ('name = "x"\nsystem = "s"\nuser = "{question} {gold}"\n', "must name {document}"),
        ('name = "x"\nsystem = "s"\n', "must name {document}"),
        ('name = "x"\nsystem = "s"\nschema_version = 2\n', "schema_version"),
        ('name = "x"\nsystem = "s\n', "not a valid TOML prompt file"),
        ('name = "x"\n', "not a prompt file"),
        ('name = "x"\nsystem = "s"\nextra = 1\n', "not a prompt file"),
    ],
)
def test_bad_prompt_file_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, needle: str) -> None:
    db = tmp_path / "s.duckdb"
    EventLog(db).close()
    pf = tmp_path / "p.toml"
    pf.write_text(body)
    rc, out, err = run(capsys, "judge", "--db", str(db), "--sandbox", "--prompt-file", str(pf))
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and needle in err and str(pf) in err, err
    assert starts(db) == {}


AGENT_PROMPT = '''\
name = "terse-agent"
system = """You answer with web search. Tools: search_web(query), fetch_page(doc_id).
Reply `FINAL ANSWER:` followed by the answer when done."""
user = "{question}"
'''


def test_agent_prompt_file_recorded_and_replayed_without_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "agent.toml").write_text(AGENT_PROMPT)
    (tmp_path / "run.toml").write_text(
        '[agent]\nmodel = "sandbox-agent"\nprompt_file = "agent.toml"\n[providers.brave]\n[dataset]\npath = "sandbox"\n'
        "[sample]\nn = 2\n[fetch]\ncache_dir = \"\"\n"
    )
    db = tmp_path / "s.duckdb"
    rc, out, err = run(capsys, "record", "--config", str(tmp_path / "run.toml"), "--sandbox", "--db", str(db), "--json")
    assert rc == 0, err
    log = EventLog(db, read_only=True)
    try:
        config = next(iter(log.read(types=["run.started"]))).payload.config  # type: ignore[union-attr]
        sha = config["prompt"]["sha256"]
        assert config["prompt"]["version"] == f"terse-agent@{sha[:12]}" == config["agent"]["prompt_version"]
        assert b"You answer with web search" in log.get_blob(sha)
        first = next(e.payload for e in log.read(types=["model.responded"]))
    finally:
        log.close()
    assert first.request_sha256 is not None  # type: ignore[union-attr]
    (tmp_path / "agent.toml").unlink()
    rc, out, err = run(capsys, "replay", "--db", str(db), "--json")
    assert rc == 0, out + err
    rep = json.loads(out)
    assert rep["trajectories"] == 2 and rep["matched"] == 2, rep


def test_agent_prompt_file_with_unknown_field_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "agent.toml").write_text('name = "a"\nsystem = "s"\nuser = "{question} {gold}"\n')
    (tmp_path / "run.toml").write_text(
        '[agent]\nmodel = "sandbox-agent"\nprompt_file = "agent.toml"\n[providers.brave]\n[dataset]\npath = "sandbox"\n'
    )
    db = tmp_path / "s.duckdb"
    rc, out, err = run(capsys, "record", "--config", str(tmp_path / "run.toml"), "--sandbox", "--db", str(db))
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "unknown template field {gold}" in err, err
    assert not db.exists() or not list(EventLog(db, read_only=True).read())
