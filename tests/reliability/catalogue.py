"""The bad-input catalogue: every case must give exactly one `searchtrace: error:` line, exit 2, and leave the store as it was.

Used by tests/reliability/test_bad_inputs.py (one test per case), so `make test` runs every case. Commands run
in-process through `searchtrace.cli.main`; the "database in use" cases hold the store open read-write from a
second process.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from tests.builders import run_cli

SECRET_FREE_ENV = ("OPENAI_API_KEY", "BRAVE_API_KEY", "TAVILY_API_KEY", "FIRECRAWL_API_KEY", "JINA_API_KEY")

GOOD_CONFIG = """run_id = "{run_id}"
[agent]
model = "sandbox-agent"
rps = 10000
concurrency = 16
timeout_s = 5
[providers.brave]
rps = 10000
[providers.tavily]
rps = 10000
[providers.firecrawl]
rps = 10000
[fetch]
rps = 10000
cache_dir = ""
[dataset]
path = "{questions}"
"""


@dataclass
class Env:
    """The folder of one catalogue run: a populated store and the files the cases read."""

    root: Path
    db: Path
    questions: Path  # a good question file (JSONL, the sandbox's questions)
    # the store as last checked: (its bytes' digest with its WAL's, its snapshot); cases that leave the bytes as
    # they were cannot have changed it, so only a case that wrote the file pays for a full snapshot
    checked: tuple[str, tuple[object, ...]] | None = None

    def path(self, name: str) -> Path:
        return self.root / name

    def store_state(self) -> tuple[str, tuple[object, ...]]:
        """(bytes digest, snapshot) of the store now, reusing the last snapshot while its bytes are unchanged."""
        digest = file_digest(self.db) + file_digest(Path(f"{self.db}.wal"))
        if self.checked is None or self.checked[0] != digest:
            self.checked = (digest, snapshot(self.db))
        return self.checked


@dataclass
class Case:
    """One bad input: how to build it, the command line, and words the error line must contain."""

    name: str
    argv: Callable[[Env], list[str]]
    expect: tuple[str, ...] = ()  # each must appear in the error line (case-insensitive); "{db}" etc. are formatted
    locked: bool = False  # run while a second process holds the store read-write
    target: str = "store"  # "store": the populated store must be unchanged; else a file name under root whose bytes must not change
    absent: tuple[str, ...] = ()  # files that must not exist afterwards
    env: dict[str, str] = field(default_factory=dict)  # environment variables set while it runs
    forbid: tuple[str, ...] = ()  # text that must appear nowhere in its output (a password, a key)
    code: int = 2  # the exit code due (1: a check that failed)


@dataclass
class Result:
    name: str
    ok: bool
    problem: str = ""
    stderr: str = ""
    code: int | None = None
    extra: dict[str, object] = field(default_factory=dict)


def snapshot(db: Path) -> tuple[object, ...]:
    """What must not change: event count, last position, a digest over every row's (position, id, hash), blobs, tables."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT position, event_id::VARCHAR, hash FROM events ORDER BY position").fetchall()
        blobs = con.execute("SELECT sha256 FROM blobs ORDER BY sha256").fetchall()
        tables = con.execute(  # views and projections are derived from events (report may install them)
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
            "AND table_schema = 'main' AND table_name NOT LIKE 'proj%' ORDER BY 1").fetchall()
        meta = con.execute("SELECT * FROM searchtrace_meta ORDER BY ALL").fetchall()
        from searchtrace.store import verify

        ok = verify(con).ok
    finally:
        con.close()
    digest = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
    return (ok, len(rows), rows[-1][0] if rows else 0, digest, len(blobs), hashlib.sha256(str(blobs).encode()).hexdigest(),
            tuple(t[0] for t in tables), str(meta))


def file_digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else "absent"


# ---------------------------------------------------------------- the environment


def build_env(root: Path) -> Env:
    """A store with a small sandbox run and its judge run, plus good files to start bad ones from."""
    from searchtrace.adapters.sandbox import write_questions_jsonl

    root.mkdir(parents=True, exist_ok=True)
    questions = write_questions_jsonl(root / "questions.jsonl")
    env = Env(root=root, db=root / "store.duckdb", questions=questions)
    cfg = root / "good.toml"
    cfg.write_text(GOOD_CONFIG.format(run_id="good", questions=questions) + "[sample]\nn = 2\nseed = \"x\"\n")
    for argv in (["record", "--config", str(cfg), "--sandbox", "--db", str(env.db), "--no-progress"],
                 ["judge", "--sandbox", "--db", str(env.db), "--no-progress"]):
        code, _, err = run_cli(*argv)
        if code != 0:
            raise RuntimeError(f"building the catalogue store failed: {argv[0]}: {err}")
    write_files(env)
    return env


def _rows(env: Env, n: int = 6) -> list[dict[str, object]]:
    return [json.loads(line) for line in env.questions.read_text().splitlines()[:n]]


def _jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _parquet(path: Path, rows: list[dict[str, object]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def _csv(rows: list[dict[str, object]]) -> str:
    import csv

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _without(rows: list[dict[str, object]], col: str) -> list[dict[str, object]]:
    return [{k: v for k, v in r.items() if k != col} for r in rows]


def _with(rows: list[dict[str, object]], col: str, value: object) -> list[dict[str, object]]:
    return [{**r, col: value} if i == 2 else dict(r) for i, r in enumerate(rows)]


def write_files(env: Env) -> None:
    """Every bad file the cases point at."""
    rows = _rows(env)
    good = _jsonl(rows)
    w = env.path
    # question files
    lines = good.splitlines(keepends=True)
    w("q_broken.jsonl").write_text(lines[0] + '{"qid": "x", "question": \n' + "".join(lines[1:]))
    w("q_truncated.jsonl").write_text(good[: len(good) - len(lines[-1]) // 2])
    w("q_array.jsonl").write_text(lines[0] + "[1, 2, 3]\n")
    w("q_noquestion.jsonl").write_text(_jsonl(_without(rows, "question")))
    w("q_noanswer.jsonl").write_text(_jsonl(_without(rows, "answer")))
    w("q_nostrata.jsonl").write_text(_jsonl(_without(rows, "topic")))
    w("q_intquestion.jsonl").write_text(_jsonl(_with(rows, "question", 42)))
    w("q_nestedanswer.jsonl").write_text(_jsonl(_with(rows, "answer", [["a"], "b"])))  # a flat list is aliases (docs/how-to/datasets.md)
    w("q_intstratum.jsonl").write_text(_jsonl(_with(rows, "topic", 3)))
    text = _csv(rows)
    w("q_truncated.csv").write_text(text[: len(text) - 25].rsplit(",", 1)[0] + ',"cut in the mid')
    w("q_ragged.csv").write_text(text + "q-extra,one,two,three,four,five,six,seven,eight\n")
    w("q_noquestion.csv").write_text(_csv(_without(rows, "question")))
    w("q_noanswer.csv").write_text(_csv(_without(rows, "answer")))
    w("q_binary.csv").write_bytes(bytes(range(256)) * 8)
    _parquet(w("q_good.parquet"), rows)
    data = w("q_good.parquet").read_bytes()
    w("q_truncated.parquet").write_bytes(data[: len(data) // 2])
    w("q_random.parquet").write_bytes(os.urandom(4096))
    _parquet(w("q_noanswer.parquet"), _without(rows, "answer"))
    _parquet(w("q_noquestion.parquet"), _without(rows, "question"))
    _parquet(w("q_intquestion.parquet"), [{**r, "question": i} for i, r in enumerate(rows)])
    w("q_words.txt").write_text("what is this\n")
    w("q_dupqid.jsonl").write_text(_jsonl([rows[0], {**rows[1], "qid": rows[0]["qid"]}]))
    for stem in ("broken.jsonl", "truncated.jsonl", "noquestion.jsonl", "noanswer.jsonl", "intquestion.jsonl",
                 "nestedanswer.jsonl", "truncated.csv", "ragged.csv", "noanswer.csv", "binary.csv", "truncated.parquet",
                 "random.parquet", "noanswer.parquet", "intquestion.parquet", "words.txt", "dupqid.jsonl"):
        w(f"cfg_{stem}.toml").write_text(GOOD_CONFIG.format(run_id="bad", questions=w(f"q_{stem}")))
    # run configs
    base = GOOD_CONFIG.format(run_id="bad", questions=env.questions)
    w("c_unknown_provider.toml").write_text(base + "[providers.bing]\nrps = 5\n")
    w("c_negative_rps.toml").write_text(base.replace("[agent]\n", "[agent]\n", 1).replace("rps = 10000\nconcurrency = 16",
                                                                                          "rps = -1\nconcurrency = 16"))
    w("c_zero_iterations.toml").write_text(base + "[limits]\nmax_iterations = 0\n")
    w("c_unknown_key.toml").write_text(base + "[limits]\nmax_iteration = 5\n")
    w("c_wrong_type.toml").write_text(base.replace("timeout_s = 5", 'timeout_s = "fast"'))
    w("c_not_toml.toml").write_text(base + "[limits\nmax_iterations = 3\n")
    w("c_no_model.toml").write_text(base.replace('model = "sandbox-agent"\n', ""))
    w("c_sample_too_big.toml").write_text(base + "[sample]\nn = 1000\n")
    w("c_negative_concurrency.toml").write_text(base.replace("concurrency = 16", "concurrency = -3"))
    # interchange files
    trace = {"trajectory_id": "imp-1", "provider": "brave", "qid": "imp-q1", "question": "Q?", "gold_answer": "A",
             "final_answer": "A", "stop_reason": "answered", "steps": [
                 {"kind": "model", "iteration": 1, "usage": {"input_tokens": 1, "output_tokens": 1, "reasoning_tokens": 0},
                  "latency_ms": 1.0},
                 {"kind": "search", "iteration": 1, "call_id": "c1", "query": "q", "latency_ms": 1.0, "results": [
                     {"doc_id": "d1", "rank": 1, "title": "t", "url": "https://imp.test/a", "domain": "imp.test",
                      "snippet": "s", "metadata": {}}]}]}
    t1 = json.dumps(trace)
    t2 = json.dumps({**trace, "trajectory_id": "imp-2", "qid": "imp-q2"})
    w("t_good.jsonl").write_text(t1 + "\n")
    w("t_broken.jsonl").write_text(t1 + "\n" + t2[:-20] + "\n")
    w("t_truncated.jsonl").write_text(t1 + "\n" + t2[: len(t2) // 2])
    bad_fetch = {**trace, "trajectory_id": "imp-3", "qid": "imp-q3", "steps": trace["steps"] + [  # type: ignore[operator]
        {"kind": "fetch", "iteration": 2, "call_id": "c2", "doc_id": "d9", "url": "https://imp.test/a", "status": "ok",
         "content": "x", "n_tokens": 1, "latency_ms": 1.0}]}
    w("t_unknown_doc.jsonl").write_text(t1 + "\n" + json.dumps(bad_fetch) + "\n")
    w("t_no_provider.jsonl").write_text(json.dumps({k: v for k, v in trace.items() if k != "provider"}) + "\n")
    w("t_duplicate.jsonl").write_text(t1 + "\n" + json.dumps({**trace, "trajectory_id": "imp-9"}) + "\n")
    w("t_not_object.jsonl").write_text("42\n")
    con = duckdb.connect(str(env.db), read_only=True)
    try:
        tid, url = con.execute("SELECT payload->>'$.item.trajectory_id', payload->>'$.item.url_normalized' FROM events "
                               "WHERE type = 'judge.verdict' LIMIT 1").fetchone() or ("", "")
        provider, qid = con.execute("SELECT payload->>'provider', payload->>'qid' FROM events "
                                    "WHERE type = 'trajectory.started' LIMIT 1").fetchone() or ("", "")
    finally:
        con.close()
    labels = {"snippet": {"supports_gold": True, "contradicts_gold": False, "relevant": True}, "page": None,
              "supports_final_answer": True, "rationale": "r"}
    j = {"judge_run_id": "imported", "trajectory_id": tid, "url": url, "valid": True, "labels": labels,
         "invalid_reason": None}
    w("j_broken.jsonl").write_text(json.dumps(j) + "\n" + '{"judge_run_id": "imported", "trajectory_id": \n')
    w("j_unknown_trajectory.jsonl").write_text(json.dumps({**j, "trajectory_id": "nope"}) + "\n")
    w("j_no_labels.jsonl").write_text(json.dumps({**j, "labels": None}) + "\n")
    w("j_bad_labels.jsonl").write_text(json.dumps({**j, "labels": {"snippet": {"supports_gold": "yes"}}}) + "\n")
    w("j_duplicate.jsonl").write_text((json.dumps(j) + "\n") * 2)
    w("a_bad_value.tsv").write_text(f"provider\tqid\tsemantic_match\n{provider}\t{qid}\tmaybe\n")
    w("a_no_header.tsv").write_text(f"{provider}\t{qid}\ttrue\n")
    w("a_duplicate.tsv").write_text(f"provider\tqid\tsemantic_match\n{provider}\t{qid}\ttrue\n{provider}\t{qid}\tfalse\n")
    w("a_broken.tsv").write_text(f"provider\tqid\tsemantic_match\n{provider}\t{qid}\n")
    # databases that are not stores
    w("junk.duckdb").write_bytes(os.urandom(64 * 1024))
    other = duckdb.connect(str(w("other.duckdb")))
    other.execute("CREATE TABLE customers(id INTEGER, name VARCHAR); INSERT INTO customers VALUES (1, 'a')")
    other.close()
    write_round_two(env, trace, j)
    write_round_three(env, trace)
    from tests.reliability.catalogue_integrity import write_round_four

    write_round_four(env, trace)


# ---------------------------------------------------------------- the cases


def _sample(name: str) -> Callable[[Env], list[str]]:
    return lambda e: ["sample", "--questions", str(e.path(name)), "--n", "2"]


def _record(cfg: str, db: str | None = None) -> Callable[[Env], list[str]]:
    return lambda e: ["record", "--config", str(e.path(cfg)), "--sandbox", "--db", str(e.path(db) if db else e.db),
                      "--no-progress"]


def _imp(*args: str) -> Callable[[Env], list[str]]:
    return lambda e: ["import", "--db", str(e.db), *[str(e.path(a)) if "." in a and not a.startswith("-") else a
                                                    for a in args]]


def _sql(query: str) -> Callable[[Env], list[str]]:
    return lambda e: ["sql", "--db", str(e.db), query]


def _on(db_name: str | None, command: str) -> Callable[[Env], list[str]]:
    """One of the store commands aimed at `db_name` (None: the populated store)."""

    def argv(e: Env) -> list[str]:
        db = str(e.path(db_name) if db_name else e.db)
        return {
            "record": ["record", "--config", str(e.path("cfg_lock.toml")), "--sandbox", "--db", db, "--no-progress"],
            "judge": ["judge", "--sandbox", "--db", db, "--no-progress"],
            "import": ["import", "--db", db, str(e.path("t_good.jsonl"))],
            "report": ["report", "--db", db, "--json"],
            "sql": ["sql", "--db", db, "SELECT count(*) FROM events"],
            "verify": ["verify", "--db", db],
            "export": ["export", "--db", db, "--out", str(e.path(f"export-{command}-{db_name}"))],
        }[command]

    return argv


STORE_COMMANDS = ("record", "judge", "import", "report", "sql", "verify", "export")

QUESTION_FILES: list[tuple[str, str, bool, bool]] = [  # (stem, what, for sample, for record)
    ("broken.jsonl", "malformed JSONL line", True, True),
    ("truncated.jsonl", "truncated JSONL", True, True),
    ("array.jsonl", "JSONL line that is not an object", True, False),
    ("noquestion.jsonl", "missing question column", True, True),
    ("noanswer.jsonl", "missing answer column", False, True),
    ("nostrata.jsonl", "missing strata column", True, False),
    ("intquestion.jsonl", "question of the wrong type", True, True),
    ("nestedanswer.jsonl", "answer of the wrong type (a nested list)", False, True),
    ("intstratum.jsonl", "stratum of the wrong type", True, False),
    ("truncated.csv", "truncated CSV", True, True),
    ("ragged.csv", "CSV row with extra fields", True, True),
    ("noquestion.csv", "CSV without a question column", True, False),
    ("noanswer.csv", "CSV without an answer column", False, True),
    ("binary.csv", "binary bytes named .csv", True, True),
    ("truncated.parquet", "truncated Parquet", True, True),
    ("random.parquet", "random bytes named .parquet", True, True),
    ("noanswer.parquet", "Parquet without an answer column", False, True),
    ("noquestion.parquet", "Parquet without a question column", True, False),
    ("intquestion.parquet", "Parquet question of the wrong type", True, True),
    ("words.txt", "unknown question file format", True, True),
    ("dupqid.jsonl", "two rows with one qid", True, True),
]


def _proxy_max_body(size: str) -> Callable[[Env], list[str]]:
    return lambda e: ["proxy", "--db", str(e.db), "--questions", str(e.questions), "--run-id", "r", "--max-body", size]


def cases() -> list[Case]:
    out: list[Case] = []
    for stem, _what, for_sample, for_record in QUESTION_FILES:
        if for_sample:
            out.append(Case(f"sample-{stem}", _sample(f"q_{stem}"), (f"q_{stem}",)))
        if for_record:
            out.append(Case(f"record-{stem}", _record(f"cfg_{stem}.toml"), (f"q_{stem}",)))
            out.append(Case(f"record-new-db-{stem}", _record(f"cfg_{stem}.toml", "fresh.duckdb"), (f"q_{stem}",),
                            absent=("fresh.duckdb",)))
    config_cases: list[tuple[str, tuple[str, ...]]] = [
        ("unknown_provider", ("providers.bing", "bing")), ("negative_rps", ("agent.rps",)),
        ("zero_iterations", ("limits.max_iterations",)), ("unknown_key", ("max_iteration",)),
        ("wrong_type", ("timeout_s",)), ("not_toml", ("toml",)), ("no_model", ("agent.model",)),
        ("negative_concurrency", ("concurrency",)),
    ]
    for cfg, words in config_cases:
        out.append(Case(f"config-{cfg}", _record(f"c_{cfg}.toml"), (f"c_{cfg}.toml", *words)))
    import_cases: list[tuple[str, Callable[[Env], list[str]], tuple[str, ...]]] = [
        ("traces-broken-line", _imp("t_broken.jsonl"), ("t_broken.jsonl", "line 2")),
        ("traces-truncated", _imp("t_truncated.jsonl"), ("t_truncated.jsonl", "line 2")),
        ("traces-unknown-doc-id", _imp("t_unknown_doc.jsonl"), ("t_unknown_doc.jsonl", "line 2", "d9")),
        ("traces-missing-field", _imp("t_no_provider.jsonl"), ("t_no_provider.jsonl", "line 1", "provider")),
        ("traces-duplicate-cell", _imp("t_duplicate.jsonl"), ("t_duplicate.jsonl", "line 2")),
        ("traces-not-object", _imp("t_not_object.jsonl"), ("t_not_object.jsonl", "line 1")),
        ("judgments-broken-line", _imp("--judgments", "j_broken.jsonl"), ("j_broken.jsonl", "line 2")),
        ("judgments-unknown-trajectory", _imp("--judgments", "j_unknown_trajectory.jsonl"),
         ("j_unknown_trajectory.jsonl", "line 1")),
        ("judgments-valid-without-labels", _imp("--judgments", "j_no_labels.jsonl"), ("j_no_labels.jsonl", "line 1")),
        ("judgments-bad-labels", _imp("--judgments", "j_bad_labels.jsonl"), ("j_bad_labels.jsonl", "line 1")),
        ("judgments-duplicate", _imp("--judgments", "j_duplicate.jsonl"), ("j_duplicate.jsonl", "line 2")),
        ("audit-bad-value", _imp("--audit", "a_bad_value.tsv"), ("a_bad_value.tsv", "line 2", "maybe")),
        ("audit-no-header", _imp("--audit", "a_no_header.tsv"), ("a_no_header.tsv", "line 1")),
        ("audit-duplicate", _imp("--audit", "a_duplicate.tsv"), ("a_duplicate.tsv", "line 3")),
        ("audit-broken-line", _imp("--audit", "a_broken.tsv"), ("a_broken.tsv", "line 2")),
        ("traces-good-then-broken", _imp("t_good.jsonl", "t_broken.jsonl"), ("t_broken.jsonl", "line 2")),
    ]
    for name, argv, words in import_cases:
        out.append(Case(f"import-{name}", argv, words))
    usage: list[tuple[str, Callable[[Env], list[str]], tuple[str, ...]]] = [
        ("sample-n-zero", lambda e: ["sample", "--questions", str(e.questions), "--n", "0"], ("--n",)),
        ("sample-n-too-big", lambda e: ["sample", "--questions", str(e.questions), "--n", "1000"], ("1000",)),
        ("sample-no-such-file", lambda e: ["sample", "--questions", str(e.path("nope.jsonl")), "--n", "2"],
         ("nope.jsonl",)),
        ("sample-unknown-stratum", lambda e: ["sample", "--questions", str(e.questions), "--n", "2", "--strata", "nosuch"],
         ("nosuch",)),
        ("sample-out-in-missing-folder", lambda e: ["sample", "--questions", str(e.questions), "--n", "2", "--out",
                                                    str(e.path("nodir/x.jsonl"))], ("nodir",)),
        ("report-unknown-judge-run", lambda e: ["report", "--db", str(e.db), "--judge-run-id", "nosuch"], ("nosuch",)),
        ("report-html-in-missing-folder", lambda e: ["report", "--db", str(e.db), "--html", str(e.path("nodir/r.html"))],
         ("nodir",)),
        ("judge-negative-rps", lambda e: ["judge", "--sandbox", "--db", str(e.db), "--rps", "-1"], ("--rps",)),
        ("judge-unknown-prompt", lambda e: ["judge", "--sandbox", "--db", str(e.db), "--prompt-version", "nope"],
         ("prompt-version",)),
        ("audit-agreement-unknown-run", lambda e: ["audit", "agreement", "--db", str(e.db), "--judge-run-id", "nosuch"],
         ("nosuch",)),
        ("audit-status-unknown-run", lambda e: ["audit", "status", "--db", str(e.db), "--judge-run-id", "nosuch"],
         ("nosuch",)),
        ("audit-sample-target-width-out-of-range", lambda e: ["audit", "sample", "--db", str(e.db), "--target-width",
                                                              "0", "--out", str(e.path("w.tsv"))], ("--target-width",)),
        ("audit-sample-agreement-out-of-range", lambda e: ["audit", "sample", "--db", str(e.db), "--n", "10",
                                                           "--agreement", "1", "--out", str(e.path("a.tsv"))],
         ("--agreement",)),
        ("config-sample-bigger-than-file", _record("c_sample_too_big.toml"), ("sample.n", "questions.jsonl")),
        ("sql-syntax-error", _sql("SELEC 1"), ("sql", "SELEC")),
        ("sql-unknown-table", _sql("SELECT * FROM nosuch"), ("sql", "nosuch")),
        ("record-db-in-missing-folder", lambda e: ["record", "--config", str(e.path("cfg_lock.toml")), "--sandbox", "--db",
                                                   str(e.path("nodir/x.duckdb")), "--no-progress"], ("nodir",)),
    ]
    for name, size in (("not-a-size", "12XB"), ("zero", "0"), ("too-big", "10GiB"), ("negative", "-5MiB"),
                       ("non-ascii-digits", "\u0661\u0666MiB"), ("fraction", "1.5MiB"), ("empty", "")):
        usage.append((f"proxy-max-body-{name}", _proxy_max_body(size), ("--max-body",)))
    for name, argv, words in usage:
        out.append(Case(name, argv, words, absent=("nodir",)))
    for db_name in ("junk.duckdb", "other.duckdb"):
        for command in STORE_COMMANDS:
            out.append(Case(f"not-a-store-{db_name.split('.')[0]}-{command}", _on(db_name, command), (db_name,),
                            target=db_name))
    for command in STORE_COMMANDS:
        out.append(Case(f"locked-{command}", _on(None, command), ("store.duckdb",), locked=True))
    for name, query in (
        ("insert", "INSERT INTO events SELECT * FROM events LIMIT 1"),
        ("delete", "DELETE FROM events"),
        ("update", "UPDATE events SET type = 'x'"),
        ("drop", "DROP TABLE events"),
        ("create", "CREATE TABLE t AS SELECT 1"),
        ("second-statement", "SELECT 1; DELETE FROM events"),
        ("copy-out", "COPY (SELECT * FROM events) TO 'copied.csv'"),
        ("attach", "ATTACH 'attached.duckdb' AS x"),
        ("set", "SET enable_external_access = true"),
        ("checkpoint", "CHECKPOINT"),
        ("read-file", "SELECT * FROM read_csv('questions.jsonl')"),
        ("cte-delete", "WITH x AS (SELECT 1) DELETE FROM events"),
    ):
        out.append(Case(f"sql-{name}", _sql(query), ("sql",), absent=("copied.csv", "attached.duckdb")))
    # read sessions and `sql` share one rule set: functions beyond the store or that change state are refused
    for name, query in (
        ("read-environ", "SELECT content FROM read_text('/proc/self/environ')"),
        ("read-blob", "SELECT * FROM read_blob('questions.jsonl')"),
        ("glob", "SELECT * FROM glob('*')"),
        ("checkpoint-function", "SELECT * FROM checkpoint()"),
        ("query-function", "SELECT * FROM query('SELECT 1')"),
        ("serialized-sql", "FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))"),
        ("enable-logging", "SELECT * FROM enable_logging()"),
        ("nextval", "SELECT nextval('s')"),
        ("nested-read", "SELECT (SELECT count(*) FROM read_csv('questions.jsonl'))"),
        ("summarize-read", "SUMMARIZE SELECT * FROM read_text('questions.jsonl')"),
        ("temp-view", "CREATE TEMP VIEW v AS SELECT 1"),
        ("set-variable", "SET VARIABLE x = 1"),
    ):
        out.append(Case(f"sql-{name}", _sql(query), ("sql",)))
    from tests.reliability.catalogue_integrity import round_four_cases

    return out + round_two_cases() + round_three_cases() + collect_cases() + round_four_cases() + reads_cases()


# ---------------------------------------------------------------- running them


HOLDER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("SELECT count(*) FROM events").fetchone()
print("holding", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def held(db: Path) -> Iterator[subprocess.Popen[str]]:
    """A second process holding the store open read-write until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "holding" not in line:
            raise RuntimeError("the holder process did not open the store")
        yield proc
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


def check(case: Case, code: int, err: str, out: str = "") -> str:
    """Why the command's outcome is not a clean rejection ('' when it is)."""
    lines = err.splitlines()
    leaked = [f for f in case.forbid if f in err or f in out]
    if leaked:
        return f"the output holds {leaked}"
    if code != case.code:
        return f"exit {code}, not {case.code}; stderr: {err.strip()[-500:]}"
    if len(lines) != 1:
        return f"{len(lines)} stderr lines, not 1: {err.strip()[-500:]}"
    if len(lines[0]) > 1_200:  # every error line bounded (a value quoted in it is cut, the line is cut)
        return f"an error line of {len(lines[0])} characters: {lines[0][:300]}"
    if not lines[0].startswith("searchtrace: error: "):
        return f"line does not start with 'searchtrace: error: ': {lines[0]}"
    missing = [w for w in case.expect if w.lower() not in lines[0].lower()]
    if missing:
        return f"line does not name {missing}: {lines[0]}"
    return ""


def run_case(env: Env, case: Case) -> Result:
    """Runs one case and checks the error line, the exit code and that nothing changed."""
    if case.target == "store":
        before: object = env.store_state()[1]
    else:
        before = file_digest(env.path(case.target))
    cwd = os.getcwd()
    os.chdir(env.root)  # relative paths in SQL cases resolve inside the catalogue folder
    saved = {k: os.environ.get(k) for k in case.env}
    os.environ.update(case.env)
    try:
        if case.locked:
            env.path("cfg_lock.toml").write_text(GOOD_CONFIG.format(run_id="lock", questions=env.questions))
            with held(env.db):
                code, out, err = run_cli(*case.argv(env))
        else:
            if not env.path("cfg_lock.toml").exists():
                env.path("cfg_lock.toml").write_text(GOOD_CONFIG.format(run_id="lock", questions=env.questions))
            code, out, err = run_cli(*case.argv(env))
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    problem = check(case, code, err, out)
    after = env.store_state()[1] if case.target == "store" else file_digest(env.path(case.target))
    if not problem and after != before:
        problem = f"the {case.target} changed: {before} -> {after}"
    if not problem and case.target == "store" and not (isinstance(after, tuple) and after[0]):
        problem = "the store no longer verifies"
    present = [a for a in case.absent if env.path(a).exists()]
    if not problem and present:
        problem = f"files were created: {present}"
    return Result(case.name, not problem, problem, err, code)


def run_catalogue(root: Path) -> list[Result]:
    """Every case against one freshly built environment."""
    env = build_env(root)
    return [run_case(env, c) for c in cases()]


# ---------------------------------------------------------------- round two (issue #15): what a fresh adversary found

PASSWORD = "hunter2pw-catalogue"  # in base URLs: must never be echoed
CONTROL_KEY = "ctlkey-first\nctlkey-second"  # a key value with a line break


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def write_round_two(env: Env, trace: Mapping[str, Any], judgment: Mapping[str, Any]) -> None:
    """The files of the round-two cases: metrics that try to write, out-of-range imports, configs that hang."""
    w = env.path
    # 1. user metrics that try to write, copy, read files, attach, install, or re-enable file access
    for name, sql in (
        ("delete", "DELETE FROM events"), ("copy", "COPY (SELECT 1) TO 'copied.csv'"),
        ("read_file", "SELECT 'x', count(*) FROM read_text('questions.jsonl')"),
        ("two", "SELECT 'a', 1; DELETE FROM events"), ("attach", "ATTACH 'attached.duckdb' AS x"),
        ("install", "INSTALL httpfs"), ("cte_update", "WITH x AS (SELECT 1) UPDATE events SET type = 'x'"),
        ("set_access", "SET enable_external_access = true"), ("pragma", "PRAGMA enable_profiling"),
    ):
        w(f"m_{name}.sql").write_text(sql + "\n")
    for name, stmt in (
        ("delete", "DELETE FROM events"), ("copy", "COPY (SELECT 1) TO 'copied.csv'"),
        ("set_access", "SET enable_external_access = true"), ("attach", "ATTACH 'attached.duckdb' AS x"),
        ("update", "UPDATE events SET type = 'x'"),
        ("drop", "DROP TABLE blobs"), ("insert", "INSERT INTO searchtrace_meta VALUES ('k', 'v')"),
    ):
        w(f"m_{name}.py").write_text(f"def metric(con, judge_run_id):\n    con.execute({stmt!r})\n    return {{}}\n")
    # 2. imports with a value its column cannot hold, on the second line (nothing of the first may be written)

    def variant(tid: str, edit: Callable[[dict[str, Any]], object]) -> str:
        t: dict[str, Any] = json.loads(json.dumps({**trace, "trajectory_id": tid, "qid": f"{tid}-q"}))
        edit(t)
        return json.dumps(t)

    fetch = {"kind": "fetch", "iteration": 2, "call_id": "c2", "doc_id": "d1", "url": "https://imp.test/a",
             "status": "ok", "content": "x", "n_tokens": 1, "latency_ms": 1.0}
    good = variant("r2-good", lambda t: None)
    ranges: dict[str, Callable[[dict[str, Any]], object]] = {
        "rank_2e40": lambda t: t["steps"][1]["results"][0].update(rank=2**40),
        "rank_2e31": lambda t: t["steps"][1]["results"][0].update(rank=2**31),
        "iteration_2e33": lambda t: t["steps"][0].update(iteration=2**33),
        "tokens_2e62": lambda t: t["steps"][0]["usage"].update(input_tokens=2**62),
        "tokens_2e70": lambda t: t["steps"][0]["usage"].update(output_tokens=2**70),
        "latency_1e300": lambda t: t["steps"][0].update(latency_ms=1e300),
        "latency_negative": lambda t: t["steps"][0].update(latency_ms=-3.5),
        "fetch_tokens_2e50": lambda t: t["steps"].append({**fetch, "n_tokens": 2**50}),
        "fetch_latency_1e20": lambda t: t["steps"].append({**fetch, "latency_ms": 1e20}),
        "nested_metadata": lambda t: None,
    }
    for name, edit in ranges.items():
        line = variant("r2-bad", edit)
        if name == "nested_metadata":  # deeper than any parser follows
            line = line.replace('"metadata": {}', '"metadata": {"x": ' + _deep(100_000) + "}", 1)
        w(f"t_range_{name}.jsonl").write_text(good + "\n" + line + "\n")
    w("q_nested.jsonl").write_text(env.questions.read_text().splitlines(keepends=True)[0] + _deep(100_000) + "\n")
    w("j_nested.jsonl").write_text(
        json.dumps(judgment).replace('"rationale": "r"', '"rationale": ' + _deep(100_000), 1) + "\n")
    # 6. a SQLite database given as --db
    import sqlite3

    lite = sqlite3.connect(w("lite.sqlite"))
    lite.execute("CREATE TABLE events(x)")
    lite.commit()
    lite.close()
    # 9 + 4. rates and timeouts that hang, names with a trailing newline, a cache folder that is a file, credentials
    base = GOOD_CONFIG.format(run_id="bad", questions=env.questions)
    for name, (old, new) in {
        "rps_inf": ("rps = 10000\nconcurrency", "rps = inf\nconcurrency"),
        "rps_nan": ("rps = 10000\nconcurrency", "rps = nan\nconcurrency"),
        "rps_tiny": ("[providers.brave]\nrps = 10000", "[providers.brave]\nrps = 1e-9"),
        "rps_huge": ("[fetch]\nrps = 10000", "[fetch]\nrps = 1e300"),
        "timeout_inf": ("timeout_s = 5", "timeout_s = inf"),
        "timeout_nan": ("timeout_s = 5", "timeout_s = nan"),
        "max_wait_inf": ("[providers.tavily]\nrps = 10000", "[providers.tavily]\nrps = 10000\nmax_wait_s = inf"),
        "name_newline": ("[providers.brave]", '[providers."brave\\n"]'),
        "run_id_newline": ('run_id = "bad"', 'run_id = "bad\\n"'),
        "cache_dir_file": ('cache_dir = ""', f'cache_dir = "{env.questions}"'),
        "cache_dir_under_file": ('cache_dir = ""', f'cache_dir = "{env.questions}/pages"'),
        "userinfo_agent": ("[agent]\n", f'[agent]\nbase_url = "http://user:{PASSWORD}@127.0.0.1:9/v1"\n'),
        "userinfo_provider": ("[providers.brave]\n", f'[providers.brave]\nbase_url = "https://k:{PASSWORD}@127.0.0.1:9/"\n'),
        "userinfo_fetch": ("[fetch]\n", f'[fetch]\nbase_url = "http://{PASSWORD}@127.0.0.1:9"\n'),
        "bad_port": ("[fetch]\n", '[fetch]\nbase_url = "http://127.0.0.1:port/"\n'),
    }.items():
        assert old in base, name
        w(f"c2_{name}.toml").write_text(base.replace(old, new, 1))


def _report_metric(name: str) -> Callable[[Env], list[str]]:
    return lambda e: ["report", "--db", str(e.db), "--json", "--metric", str(e.path(name))]


def round_two_cases() -> list[Case]:
    """Issue #15's classes, each with variants: one line, exit 2, nothing written, no secret echoed."""
    out: list[Case] = []
    # 1. metrics run read-only, offline, with the sql rules
    for stem in ("delete", "copy", "read_file", "two", "attach", "install", "cte_update", "set_access", "pragma"):
        out.append(Case(f"metric-sql-{stem}", _report_metric(f"m_{stem}.sql"), (f"m_{stem}.sql",),
                        absent=("copied.csv", "attached.duckdb")))
    for stem in ("delete", "copy", "set_access", "attach", "update", "drop", "insert"):
        out.append(Case(f"metric-py-{stem}", _report_metric(f"m_{stem}.py"), (f"m_{stem}.py",),
                        absent=("copied.csv", "attached.duckdb")))
    # 2. import: every value against its column's range; deep nesting; nothing written, no store left behind
    for name in ("rank_2e40", "rank_2e31", "iteration_2e33", "tokens_2e62", "tokens_2e70", "latency_1e300",
                 "latency_negative", "fetch_tokens_2e50", "fetch_latency_1e20", "nested_metadata"):
        f = f"t_range_{name}.jsonl"
        out.append(Case(f"import-range-{name.replace('_', '-')}", _imp(f), (f, "line 2")))
    out.append(Case("import-range-new-db", lambda e: ["import", "--db", str(e.path("fresh-import.duckdb")),
                                                      str(e.path("t_range_rank_2e40.jsonl"))],
                    ("t_range_rank_2e40.jsonl",), absent=("fresh-import.duckdb", "fresh-import.duckdb.wal")))
    out.append(Case("import-judgments-nested", _imp("--judgments", "j_nested.jsonl"), ("j_nested.jsonl", "line 1")))
    out.append(Case("sample-nested-json", _sample("q_nested.jsonl"), ("q_nested.jsonl", "line 2")))
    # 8. sql: odd statement types, errors raised while fetching rows
    for name, query in (("explain-broken", "EXPLAIN SELEC 1"), ("error-while-fetching", "SELECT CAST('x' || range AS "
                        "INTEGER) FROM range(5000)"), ("error-function", "SELECT error('boom')"),
                        ("prepare", "PREPARE p AS SELECT 1"), ("load", "LOAD httpfs"), ("vacuum", "VACUUM"),
                        ("call", "CALL pragma_version()"), ("export-database", "EXPORT DATABASE 'dumped'")):
        out.append(Case(f"sql-{name}", _sql(query), ("sql",), absent=("dumped",)))
    # 3. inputs that are neither files nor pipes
    out.append(Case("import-device", lambda e: ["import", "--db", str(e.db), "/dev/zero"], ("/dev/zero",)))
    out.append(Case("import-device-audit", lambda e: ["import", "--db", str(e.db), str(e.path("t_good.jsonl")),
                                                      "--audit", "/dev/urandom"], ("/dev/urandom",)))
    # 6. a SQLite file as --db: no extension download, one line
    for command in STORE_COMMANDS:
        out.append(Case(f"sqlite-db-{command}", _on("lite.sqlite", command), ("lite.sqlite",), target="lite.sqlite"))
    # 9 + 4. configs: rates, names, cache folder, credentials in base URLs
    config_words: list[tuple[str, tuple[str, ...]]] = [("rps_inf", ("agent.rps",)), ("rps_nan", ("agent.rps",)), ("rps_tiny", ("providers.brave.rps",)),
                        ("rps_huge", ("fetch.rps",)), ("timeout_inf", ("timeout_s",)), ("timeout_nan", ("timeout_s",)),
                        ("max_wait_inf", ("max_wait_s",)), ("name_newline", ("providers.brave",)),
                        ("run_id_newline", ("run_id",)), ("cache_dir_file", ("cache_dir",)),
                        ("cache_dir_under_file", ("cache_dir",)), ("userinfo_agent", ("agent.base_url",)),
                        ("userinfo_provider", ("providers.brave.base_url",)), ("userinfo_fetch", ("fetch.base_url",)),
                        ("bad_port", ("fetch.base_url",))]
    for name, words in config_words:
        out.append(Case(f"config-{name.replace('_', '-')}", _record(f"c2_{name}.toml"), (f"c2_{name}.toml", *words),
                        forbid=(PASSWORD,)))
    cred = f"http://user:{PASSWORD}@127.0.0.1:9"
    dummy = {"OPENAI_API_KEY": "sk-catalogue-dummy"}
    probes: list[tuple[str, Callable[[Env], list[str]], tuple[str, ...], dict[str, str]]] = [
        ("search-base-url-userinfo", lambda e: ["search", "-p", "brave", "--base-url", cred, "q"], ("base URL",), {}),
        ("fetch-base-url-userinfo", lambda e: ["fetch", "--no-cache", "--base-url", cred, "https://x.test/"],
         ("base URL",), {}),
        ("judge-base-url-userinfo", lambda e: ["judge", "--db", str(e.db), "--model", "m", "--base-url", cred],
         ("base URL",), dummy),
        ("judge-env-base-url-userinfo", lambda e: ["judge", "--db", str(e.db), "--model", "m"], ("base URL",),
         {"OPENAI_BASE_URL": cred, **dummy}),
        ("search-env-base-url-userinfo", lambda e: ["search", "-p", "tavily", "q"], ("base URL",),
         {"SEARCHTRACE_TAVILY_BASE_URL": cred, "TAVILY_API_KEY": "tvly-catalogue-dummy"}),
        ("record-env-base-url-userinfo", _record("cfg_lock.toml"), ("base_url",), {"SEARCHTRACE_BRAVE_BASE_URL": cred}),
        ("search-base-url-bad-port", lambda e: ["search", "-p", "brave", "--base-url", "http://h:99999999/", "q"],
         ("base URL",), {"BRAVE_API_KEY": "brave-catalogue-dummy"}),
        ("judge-rps-inf", lambda e: ["judge", "--sandbox", "--db", str(e.db), "--rps", "inf"], ("--rps",), {}),
        ("judge-rps-nan", lambda e: ["judge", "--sandbox", "--db", str(e.db), "--rps", "nan"], ("--rps",), {}),
        ("judge-rps-tiny", lambda e: ["judge", "--sandbox", "--db", str(e.db), "--rps", "1e-9"], ("--rps",), {}),
        ("judge-timeout-nan", lambda e: ["judge", "--sandbox", "--db", str(e.db), "--timeout", "nan"], ("--timeout",), {}),
        ("judge-timeout-inf", lambda e: ["judge", "--sandbox", "--db", str(e.db), "--timeout", "inf"], ("--timeout",), {}),
        ("search-timeout-nan", lambda e: ["search", "-p", "brave", "--sandbox", "--timeout", "nan", "q"], ("timeout",), {}),
        ("fetch-timeout-inf", lambda e: ["fetch", "--sandbox", "--no-cache", "--timeout", "inf", "https://x.test/"],
         ("timeout",), {}),
        # 8. keys with a line break or a control character
        ("search-key-newline", lambda e: ["search", "-p", "brave", "--sandbox", "q"], ("BRAVE_API_KEY",),
         {"BRAVE_API_KEY": CONTROL_KEY}),
        ("fetch-key-control", lambda e: ["fetch", "--sandbox", "--no-cache", "https://x.test/"], ("JINA_API_KEY",),
         {"JINA_API_KEY": "ctlkey-first\x07ctlkey-second"}),
        ("record-key-newline", _record("cfg_lock.toml"), ("OPENAI_API_KEY",), {"OPENAI_API_KEY": CONTROL_KEY}),
        ("judge-key-newline", lambda e: ["judge", "--db", str(e.db), "--model", "m", "--base-url", "http://127.0.0.1:9"],
         ("OPENAI_API_KEY",), {"OPENAI_API_KEY": CONTROL_KEY}),
        # 10. every missing key named at once
        ("record-missing-keys", lambda e: ["record", "--config", str(e.path("cfg_lock.toml")), "--db", str(e.db),
                                           "--no-progress"], ("OPENAI_API_KEY", "BRAVE_API_KEY", "TAVILY_API_KEY"),
         {"OPENAI_API_KEY": "", "BRAVE_API_KEY": "", "TAVILY_API_KEY": "", "FIRECRAWL_API_KEY": ""}),
    ]
    for name, argv, words, env in probes:
        out.append(Case(name, argv, words, env=env, forbid=(PASSWORD, "ctlkey-first", "ctlkey-second")))
    return out


# ---------------------------------------------------------------- round three (issue #21): bounded inputs, no traceback

EPOCHS_BAD = {"1001": "1001", "1e9": "1000000000", "2e64": str(2**64 + 1), "2e70": str(2**70), "zero": "0",
              "negative": "-4"}
PRICES_BAD = {"inf": "search.brave = inf", "neg_inf": "fetch.jina = -inf", "nan": "search.brave = nan",
              "negative": "search.brave = -1.0", "huge": "search.brave = 1e300",
              "model_inf": "models.gpt.input = 1.0\nmodels.gpt.output = inf",
              "model_cached_nan": "models.gpt.input = 1.0\nmodels.gpt.output = 2.0\nmodels.gpt.cached_input = nan"}
TEMPLATES_BAD = {"format_spec": "{question:>30000000} {document}", "conversion": "{document!r}",
                 "bad_conversion": "{document!z}", "attribute": "{question.__class__} {document}",
                 "index": "{document[0]}", "nested_spec": "{document:{question}}", "positional": "{0} {document}",
                 "empty_field": "{} {document}", "no_document": "{question} {gold_answer}"}


def write_round_three(env: Env, trace: Mapping[str, Any]) -> None:
    """The files of the round-three cases: epochs beyond 1,000, prices that are not finite, templates that would
    fail (or eat memory) only when formatted."""
    w = env.path
    base = GOOD_CONFIG.format(run_id="bad", questions=env.questions)
    for name, value in EPOCHS_BAD.items():
        w(f"c3_epochs_{name}.toml").write_text(base + f"[run]\nepochs = {value}\n")
        t = json.loads(json.dumps({**trace, "trajectory_id": f"r3-{name}", "qid": f"r3-{name}-q"}))
        t["epoch"] = int(value)
        good = json.dumps({**trace, "trajectory_id": "r3-good", "qid": "r3-good-q"})
        w(f"t_epoch_{name}.jsonl").write_text(good + "\n" + json.dumps(t) + "\n")
    w("t_epoch_5000_digits.jsonl").write_text(
        json.dumps({**trace, "trajectory_id": "r3-digits", "qid": "r3-digits-q"})[:-1] + ', "epoch": ' + "9" * 5000
        + "}\n")
    for name, lines in PRICES_BAD.items():
        w(f"p3_{name}.toml").write_text(f'as_of = "2026-01-01"\n{lines}\n')
        w(f"c3_prices_{name}.toml").write_text(base + f'[prices]\nas_of = "2026-01-01"\n{lines}\n')
    for name, template in TEMPLATES_BAD.items():
        w(f"pf3_{name}.toml").write_text(f'name = "bad"\nsystem = "s"\nuser = "{template}"\n')
        w(f"apf3_{name}.toml").write_text(f'name = "bad"\nsystem = "s"\nuser = "{template.replace("document", "question")}"\n')
        w(f"c3_agent_prompt_{name}.toml").write_text(base.replace("[agent]\n", f'[agent]\nprompt_file = "{w(f"apf3_{name}.toml")}"\n'))


def round_three_cases() -> list[Case]:
    """Issue #21's bounded inputs, each with variants: one line, exit 2, nothing written."""
    out: list[Case] = []
    for name in EPOCHS_BAD:
        out.append(Case(f"config-epochs-{name}", _record(f"c3_epochs_{name}.toml"), (f"c3_epochs_{name}.toml", "run.epochs")))
        out.append(Case(f"import-epoch-{name}", _imp(f"t_epoch_{name}.jsonl"), (f"t_epoch_{name}.jsonl", "line 2", "epoch")))
    out.append(Case("import-epoch-5000-digits", _imp("t_epoch_5000_digits.jsonl"), ("t_epoch_5000_digits.jsonl", "line 1")))
    for value in ("1001", "1000000000", str(2**70), "0"):
        out.append(Case(f"record-epochs-flag-{value[:12]}", lambda e, v=value: [*_record("cfg_lock.toml")(e), "--epochs", v],
                        ("--epochs",)))
        out.append(Case(f"demo-epochs-flag-{value[:12]}", lambda e, v=value: ["demo", "--out", str(e.path("demo-out")),
                                                                              "--epochs", v], ("--epochs",),
                        absent=("demo-out",)))
    for name in PRICES_BAD:
        out.append(Case(f"report-prices-{name.replace('_', '-')}", lambda e, n=name: [
            "report", "--db", str(e.db), "--json", "--prices", str(e.path(f"p3_{n}.toml"))],
            (f"p3_{name}.toml", "a price must be a finite number")))
        out.append(Case(f"config-prices-{name.replace('_', '-')}", _record(f"c3_prices_{name}.toml"),
                        (f"c3_prices_{name}.toml", "[prices]", "a price must be a finite number")))
    for name in TEMPLATES_BAD:
        out.append(Case(f"judge-prompt-file-{name.replace('_', '-')}", lambda e, n=name: [
            "judge", "--sandbox", "--db", str(e.db), "--no-progress", "--prompt-file", str(e.path(f"pf3_{n}.toml"))],
            (f"pf3_{name}.toml", "key user")))
        if name != "no_document":  # an agent template need not name {document}
            out.append(Case(f"config-agent-prompt-{name.replace('_', '-')}", _record(f"c3_agent_prompt_{name}.toml"),
                            (f"apf3_{name}.toml", "key user")))
    return out


# ---------------------------------------------------------------- issue #32: collect's options (docs/reliability.md "collect")


def collect_cases() -> list[Case]:
    """`collect` refuses a bad option at once, before it binds a port or opens the store."""
    def argv(provider: str) -> Callable[[Env], list[str]]:
        return lambda e: ["collect", "--db", str(e.db), "--questions", str(e.questions), "--run-id", "c32",
                          "--port", "0", "--provider", provider]

    return [Case("collect-provider-unknown", argv("nope"), ("--provider", "nope", "tavily")),
            Case("collect-provider-huge", argv("p" * 100_000), ("--provider", "not a search provider"),
                 forbid=("p" * 200,)),
            Case("collect-provider-empty", argv(""), ("--provider",))]


# ---------------------------------------------------------------- reads (issues #31, #32): sql from a file, judge --default


def _written(name: str, data: bytes) -> Callable[[Env], str]:
    """The path of a file under the catalogue's root, written when the case runs."""
    def path(e: Env) -> str:
        e.path(name).write_bytes(data)
        return str(e.path(name))
    return path


def reads_cases() -> list[Case]:
    """`sql --file` / `sql -` and `judge --default`: one line, exit 2, nothing written."""
    big, latin, refused = (_written("q_big.sql", b"SELECT 1 -- " + b"x" * (1 << 20) + b"\n"),
                           _written("q_latin.sql", "-- caf\xe9\nSELECT 1".encode("latin-1")),
                           _written("q_copy.sql", b"-- a comment first\nCOPY events TO 'copied.csv'"))
    return [
        Case("sql-file-missing", lambda e: ["sql", "--db", str(e.db), "--file", str(e.path("nosuch.sql"))],
             ("--file", "nosuch.sql")),
        Case("sql-file-folder", lambda e: ["sql", "--db", str(e.db), "--file", str(e.root)], ("--file", "a folder")),
        Case("sql-file-too-big", lambda e: ["sql", "--db", str(e.db), "--file", big(e)], ("q_big.sql", "at most")),
        Case("sql-file-not-utf8", lambda e: ["sql", "--db", str(e.db), "--file", latin(e)], ("q_latin.sql", "UTF-8")),
        Case("sql-file-refused", lambda e: ["sql", "--db", str(e.db), "--file", refused(e)], ("sql", "COPY"),
             absent=("copied.csv",)),
        Case("sql-query-and-file", lambda e: ["sql", "--db", str(e.db), "SELECT 1", "--file", refused(e)], ("--file",)),
        Case("sql-no-query", lambda e: ["sql", "--db", str(e.db)], ("QUERY", "--file")),
        Case("judge-default-unknown-run", lambda e: ["judge", "--db", str(e.db), "--default", "--judge-run-id", "nope"],
             ("judge run 'nope' not found",)),
        Case("export-out-judge-run-id", lambda e: ["export", "--db", str(e.db), "--out", str(e.path("exp-jr")),
                                                   "--judge-run-id", "x"], ("--judge-run-id",), absent=("exp-jr",)),
    ]
