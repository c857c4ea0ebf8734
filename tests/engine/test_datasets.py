"""docs/how-to/compare.md, datasets as they come: mapped columns, answers as strings, numbers or alias lists, EM/F1 over aliases."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from searchtrace.adapters.sandbox import default_world, question_rows
from searchtrace.analytics import tokens
from searchtrace.engine import load_config, question_file, sample
from searchtrace.store import BadInput, DatasetQuestion, EventLog
from tests.builders import run_cli

CONFIG = """\
run_id = "simpleqa"
[agent]
model = "sandbox-agent"
rps = 10000.0
concurrency = 16
[providers.brave]
rps = 10000.0
concurrency = 16
[fetch]
rps = 10000.0
concurrency = 16
cache_dir = ""
[dataset]
path = "simpleqa.parquet"
"""


def test_a_simpleqa_parquet_records_on_the_sandbox_and_scores_over_aliases(tmp_path: Path) -> None:
    rows = question_rows(default_world().questions)[:6]
    # SimpleQA's shape: `problem`, and `answer` a list column; every first alias but the last row's is a decoy, so
    # only the second alias can match what the agent answers
    answers = [[f"decoy {i}", r["answer"]] for i, r in enumerate(rows[:-1])] + [[rows[-1]["answer"]]]
    pq.write_table(pa.table({"problem": [r["question"] for r in rows], "answer": answers,
                             "metadata": ["{}"] * len(rows)}), tmp_path / "simpleqa.parquet")
    (tmp_path / "run.toml").write_text(CONFIG)
    db = str(tmp_path / "s.duckdb")
    ran = run_cli("record", "--config", str(tmp_path / "run.toml"), "--db", db, "--sandbox", "--no-progress",
                  "--dataset-columns", "question=problem,answer=answer")
    assert ran.code == 0, ran.err
    assert run_cli("judge", "--db", db, "--sandbox", "--rps", "0").code == 0
    assert run_cli("grade", "--db", db).code == 0
    ran = run_cli("report", "--db", db, "--json", "--bootstrap", "0")
    assert ran.code == 0, ran.err
    brave = msgspec.json.decode(ran.out)["providers"]["brave"]

    with EventLog(db, read_only=True) as log:
        questions = {p.question: p for ev in log.read(types=["dataset.question"])
                     if isinstance(p := ev.payload, DatasetQuestion)}
        raw = dict(log.cursor().execute("SELECT payload->>'$.question', payload::VARCHAR FROM events "
                                        "WHERE type = 'dataset.question'").fetchall())
        supported = {tid.split(":")[-1] for (tid,) in log.cursor().execute(
            "SELECT payload->>'$.item.trajectory_id' FROM events WHERE type = 'judge.verdict' AND "
            "(payload->>'$.labels.snippet.supports_gold' = 'true' OR payload->>'$.labels.page.supports_gold' = 'true')"
        ).fetchall()}
        finals = dict(log.cursor().execute(
            "SELECT t.payload->>'$.qid', a.payload->>'$.text' FROM events t LEFT JOIN events a "
            "ON a.stream_id = t.stream_id AND a.type = 'answer.final' WHERE t.type = 'trajectory.started'").fetchall())
    # the gold answer stays the first alias; the aliases are in the event, and a one-answer question's bytes lack them
    for r, alias in zip(rows, answers, strict=True):
        q = questions[r["question"]]
        assert q.gold_answer == alias[0]
        assert q.gold_aliases == (alias if len(alias) > 1 else msgspec.UNSET)
    assert '"gold_aliases"' not in raw[rows[-1]["question"]] and '"gold_aliases"' in raw[rows[0]["question"]]
    by_qid = {q.qid: r for r in rows for q in questions.values() if q.question == r["question"]}
    right = [qid for qid, text in finals.items() if text is not None and tokens(text) == tokens(by_qid[qid]["answer"])]
    decoyed = [qid for qid in right if by_qid[qid] is not rows[-1]]
    assert decoyed, "the sandbox agent answers some question whose second alias is its answer"
    # EM and F1 take the maximum over aliases (a second alias that matches gives EM 1); the grader sees every alias
    assert brave["trajectories"] == len(rows) and brave["exact_match"] == len(right) / len(rows)
    assert brave["token_f1"] >= brave["exact_match"] and brave["correct"] >= len(right)
    # the judge saw every alias: documents stating the second alias (the decoy is stated nowhere) support the gold
    assert brave["surface_support_rate"] > 0 and set(decoyed) <= supported
    # the aliases survive export and import (run.jsonl), and so do the scores
    out, again = tmp_path / "export", str(tmp_path / "again.duckdb")
    assert run_cli("export", "--db", db, "--out", str(out)).code == 0
    ran = run_cli("import", "--db", again, str(out / "traces.jsonl"), "--judgments", str(out / "judgments.jsonl"),
                  "--audit", str(out / "audit.tsv"))
    assert ran.code == 0, ran.err
    with EventLog(again, read_only=True) as log:
        assert dict(log.cursor().execute("SELECT payload->>'$.question', payload::VARCHAR FROM events "
                                         "WHERE type = 'dataset.question' AND stream_id LIKE 'run:%'").fetchall()) == raw
    ran = run_cli("report", "--db", again, "--json", "--bootstrap", "0")
    assert msgspec.json.decode(ran.out)["providers"]["brave"]["exact_match"] == brave["exact_match"]


def test_answers_as_numbers_and_csv_json_arrays_and_bad_mappings(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_text('{"id": 7, "problem": "P?", "answers": [1987, "nineteen 87"]}\n'
                                      '{"id": 8, "problem": "Q?", "answers": 2.5}\n')
    got = question_file(str(tmp_path / "q.jsonl"), columns={"qid": "id", "answer": "answers"})
    assert [(q.qid, q.question, q.answer, q.aliases) for q in got] == [
        ("7", "P?", "1987", ["1987", "nineteen 87"]), ("8", "Q?", "2.5", [])]
    [drawn] = sample([{"problem": "P?"}, {"problem": "Q?"}], 1, "s", source="m", strata=())  # `problem` samples too
    assert drawn["qid"] == hashlib.sha256(drawn["problem"].encode()).hexdigest()[:16]
    (tmp_path / "q.csv").write_text('question,answer\nA?,"[""x"", ""y""]"\nB?,plain\n')
    assert [q.aliases or [q.answer] for q in question_file(str(tmp_path / "q.csv"))] == [["x", "y"], ["plain"]]
    with pytest.raises(BadInput, match=r"q.jsonl: dataset.columns.answer = 'gold': no such column \(the file has id, problem, answers"):
        question_file(str(tmp_path / "q.jsonl"), columns={"answer": "gold"})
    (tmp_path / "r.toml").write_text(CONFIG.replace("simpleqa.parquet", "q.jsonl"))
    plain = load_config(tmp_path / "r.toml", env={})
    assert "dataset_columns" not in plain.identity() and "columns" not in plain.to_event()["dataset"]  # bytes as before
    (tmp_path / "m.toml").write_text(CONFIG.replace("simpleqa.parquet", "q.jsonl") + 'columns = { answer = "answers" }\n')
    mapped = load_config(tmp_path / "m.toml", env={})
    assert mapped.effective_run_id() == "simpleqa" and mapped.identity_sha256() != plain.identity_sha256()
    assert [q.answer for q in question_file(mapped.dataset.path, columns=mapped.dataset.columns)] == ["1987", "2.5"]
    (tmp_path / "m.toml").write_text(CONFIG.replace("simpleqa.parquet", "q.jsonl") + 'columns = { topic = "x" }\n')
    with pytest.raises(BadInput, match="m.toml: key dataset.columns: unknown role 'topic'"):
        load_config(tmp_path / "m.toml", env={})
    for flag, says in [("answer=gold", "dataset.columns.answer = 'gold': no such column"),
                       ("answer", "--dataset-columns: expected role=column pairs"),
                       ("topic=x", "--dataset-columns: unknown role 'topic' (roles: qid, question, answer)")]:
        ran = run_cli("record", "--config", str(tmp_path / "r.toml"), "--db", str(tmp_path / "r.duckdb"), "--sandbox",
                      "--no-progress", "--dataset-columns", flag)
        assert ran.code == 2 and len(ran.err.splitlines()) == 1 and says in ran.err, ran.err
    assert not (tmp_path / "r.duckdb").exists()
