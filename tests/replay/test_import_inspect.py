"""`import --from inspect`: logs made by a real `inspect eval` against the sandbox (tests/data/inspect) report like a
recorded run; what cannot be mapped is named (file, sample, event) and nothing of that log is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchtrace.store import EventLog, SearchResult, TrajectoryStarted
from tests.proxy.support import streams
from tests.replay.test_prompt_file import run

LOGS = Path(__file__).resolve().parents[1] / "data" / "inspect" / "logs"


def count_events(db: Path) -> int:
    with EventLog(db, read_only=True) as log:
        return log.head


class Out:
    """What one in-process command gave (exit code, stdout, stderr)."""

    def __init__(self, capsys: pytest.CaptureFixture[str], *argv: str) -> None:
        self.returncode, self.stdout, self.stderr = run(capsys, *argv)


def test_inspect_logs_import_judge_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inspect_log = pytest.importorskip("inspect_ai.log")  # a dev dependency (pyproject [dev])
    db = tmp_path / "i.duckdb"
    res = Out(capsys, "import", "--db", str(db), "--from", "inspect", "--run-id", "inspect", str(LOGS))
    assert res.returncode == 0, res.stderr
    assert "6 new trajectories" in res.stdout  # both logs in one run (by default each log is a run of its own)
    recorded = streams(db)
    started = [ps[0][2] for ps in recorded.values()]
    assert all(isinstance(t, TrajectoryStarted) for t in started)
    assert sorted((t.provider, t.qid) for t in started if isinstance(t, TrajectoryStarted)).count(
        ("brave", "sbx-9ab3167de8")) == 2  # two epochs
    # the searches are the tool replies of the log: same URLs in the same order
    log = inspect_log.read_eval_log(str(sorted(LOGS.glob("*.eval"))[0]))
    sample = next(s for s in log.samples or [] if s.id == "sbx-9ab3167de8")
    tool = next(e for e in sample.events if e.event == "tool" and e.function == "web_search")
    urls = [r["url"] for r in json.loads(str(tool.result))["results"]]
    stream = next(k for k in recorded if k.endswith(f":{log.eval.task_args['provider']}:sbx-9ab3167de8"))
    assert [p.url for _, _, p in recorded[stream] if isinstance(p, SearchResult)] == urls
    again = Out(capsys, "import", "--db", str(db), "--from", "inspect", "--run-id", "inspect", str(LOGS))
    assert again.returncode == 0 and "0 new trajectories" in again.stdout
    assert Out(capsys, "judge", "--db", str(db), "--sandbox").returncode == 0
    rep = Out(capsys, "report", "--db", str(db), "--json")
    assert rep.returncode == 0, rep.stderr
    providers = json.loads(rep.stdout)["providers"]
    assert {k: v["trajectories"] for k, v in providers.items()} == {"brave": 4, "tavily": 2}
    assert all(v["exact_match"] == 1.0 and v["valid_items"] > 0 and v["fetches_per_trajectory"] > 0
               for v in providers.values())
    assert Out(capsys, "verify", "--db", str(db)).returncode == 0


def _edited(tmp_path: Path, edit: object, name: str) -> Path:
    """A copy of the first log, written as a .json log after `edit(log)`."""
    inspect_log = pytest.importorskip("inspect_ai.log")  # a dev dependency (pyproject [dev])
    log = inspect_log.read_eval_log(str(sorted(LOGS.glob("*.eval"))[0]))
    edit(log)  # type: ignore[operator]
    out = tmp_path / f"{name}.json"
    inspect_log.write_eval_log(log, str(out))
    return out


def _unknown_fetch(log: object) -> None:
    for s in log.samples:  # type: ignore[attr-defined]
        for e in s.events:
            if e.event == "tool" and e.function == "read_page" and s.id == "sbx-cf5d760f25":
                e.arguments["url"] = "https://never-shown.example/x"


def _no_provider(log: object) -> None:
    log.eval.task_args = {}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("edit", "needle"), [
    (_unknown_fetch, "sample sbx-cf5d760f25 (epoch 1), event"),
    (_no_provider, "no provider: pass --provider"),
])
def test_unmappable_log_is_named_and_nothing_written(tmp_path: Path, edit: object, needle: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "i.duckdb"
    assert Out(capsys, "import", "--db", str(db), "--from", "inspect", str(sorted(LOGS.glob("*.eval"))[1])).returncode == 0
    before = count_events(db)
    bad = _edited(tmp_path, edit, "bad")
    res = Out(capsys, "import", "--db", str(db), "--from", "inspect", str(bad))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert needle in res.stderr and str(bad) in res.stderr
    assert count_events(db) == before
    if edit is _no_provider:  # the same log imports once the provider is named
        ok = Out(capsys, "import", "--db", str(db), "--from", "inspect", "--provider", "exa", str(bad))
        assert ok.returncode == 0 and "2 new trajectories" in ok.stdout


def test_not_a_log_and_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "i.duckdb"
    junk = tmp_path / "junk.eval"
    junk.write_bytes(b"not a zip")
    res = Out(capsys, "import", "--db", str(db), "--from", "inspect", str(junk))
    assert res.returncode == 2 and "not an Inspect AI log" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = Out(capsys, "import", "--db", str(db), "--provider", "tavily", str(junk))
    assert res.returncode == 2 and "--from inspect only" in res.stderr


# ---------------------------------------------------------------- docs/concepts/security.md: bounded inputs


def _epoch(value: int) -> object:
    def edit(log: object) -> None:
        log.samples[0].epoch = value  # type: ignore[attr-defined]
    return edit


@pytest.mark.parametrize("value", [1001, 2**64 + 1, 2**70, 10**300, -3])
def test_an_epoch_beyond_1000_is_refused_not_read_as_epoch_1(tmp_path: Path, value: int,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "i.duckdb"
    bad = _edited(tmp_path, _epoch(value), "epoch")
    res = Out(capsys, "import", "--db", str(db), "--from", "inspect", str(bad))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "epoch: must be an integer from 1 to 1000" in res.stderr
    assert str(bad) in res.stderr and len(res.stderr) < 400
    assert not db.exists() or count_events(db) == 0


def _bomb(tmp_path: Path, inflated_mib: int) -> Path:
    """The first log plus one member of `inflated_mib` MiB of spaces (deflated to a few hundred KiB)."""
    import shutil
    import zipfile

    out = tmp_path / "bomb.eval"
    shutil.copyfile(sorted(LOGS.glob("*.eval"))[0], out)
    with zipfile.ZipFile(out, "a", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf, \
            zf.open("samples/bomb_epoch_1.json", "w") as member:
        chunk = b" " * (1 << 20)
        for _ in range(inflated_mib):
            member.write(chunk)
    return out


def _peak_rss_mib(*argv: str) -> tuple[int, float, str]:
    """(exit code, peak RSS of the child in MiB, stderr) of one `searchtrace` command in a child process."""
    import os
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "from searchtrace.cli import main; main()", *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    with proc.stderr:
        err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024, err


def test_a_member_that_inflates_beyond_the_cap_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    from searchtrace.replay.interchange._inspect_logs import MAX_MEMBER_BYTES

    good = tmp_path / "good"
    good.mkdir()
    code, base_mib, err = _peak_rss_mib("import", "--db", str(tmp_path / "g.duckdb"), "--from", "inspect",
                                        str(sorted(LOGS.glob("*.eval"))[0]))
    assert code == 0, err
    bomb = _bomb(tmp_path, (MAX_MEMBER_BYTES >> 20) + 64)
    assert bomb.stat().st_size < 8 << 20  # a small file …
    db = tmp_path / "b.duckdb"
    code, bomb_mib, err = _peak_rss_mib("import", "--db", str(db), "--from", "inspect", str(bomb))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "bomb_epoch_1.json" in err and "inflates beyond 128 MiB" in err, err
    assert bomb_mib < base_mib + 64, (base_mib, bomb_mib)  # … that costs no more than a good log to refuse
    assert not db.exists()


def test_members_under_the_caps_import(tmp_path: Path) -> None:
    from searchtrace.replay.interchange._inspect_logs import check_zip_members

    log = sorted(LOGS.glob("*.eval"))[0]
    check_zip_members(log)  # the real log passes
    with pytest.raises(Exception, match="inflate beyond 0 MiB in all"):
        check_zip_members(log, total_cap=1000)
    with pytest.raises(Exception, match="inflates beyond 0 MiB"):
        check_zip_members(log, member_cap=10)


# ---------------------------------------------------------------- docs/concepts/shown.md: every model turn, scores, stops


def _payloads(db: Path) -> dict[str, list[object]]:
    return {k: [p for _, _, p in v] for k, v in streams(db).items()}


def test_every_model_turn_each_score_and_the_epochs_are_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inspect_log = pytest.importorskip("inspect_ai.log")  # a dev dependency (pyproject [dev])
    from searchtrace.store import ModelResponded, TrajectoryFinished, epoch_of

    db = tmp_path / "i.duckdb"
    res = Out(capsys, "import", "--db", str(db), "--from", "inspect", "--run-id", "inspect", str(LOGS))
    assert res.returncode == 0, res.stderr
    recorded = _payloads(db)
    seen_turns = 0
    with EventLog(db, read_only=True) as store:
        for path in sorted(LOGS.glob("*.eval")):
            # the texts Inspect stored once as attachments are read in place: the model was sent the text itself
            log = inspect_log.read_eval_log(str(path), resolve_attachments=True)
            provider = log.eval.task_args["provider"]
            for sample in log.samples or []:
                suffix = f":{provider}:{sample.id}" + ("" if sample.epoch == 1 else f"~{sample.epoch}")
                payloads = recorded[next(k for k in recorded if k.endswith(suffix))]
                started = payloads[0]
                assert isinstance(started, TrajectoryStarted) and epoch_of(started) == sample.epoch
                model_events = [e for e in sample.events if e.event == "model"]
                turns = [p for p in payloads if isinstance(p, ModelResponded)]
                assert len(turns) == len(model_events) > 0
                for e, t in zip(model_events, turns, strict=True):
                    msg = e.output.choices[0].message
                    assert t.text == (msg.text or None)
                    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in t.tool_calls] == [
                        (c.id, c.function, c.arguments) for c in msg.tool_calls or []]
                    u = e.output.usage  # Inspect reports cache reads and writes apart: the one usage rule sums them in
                    cached, written = u.input_tokens_cache_read or 0, u.input_tokens_cache_write or 0
                    assert (t.usage.input_tokens, t.usage.cached_tokens, t.usage.output_tokens,
                            t.usage.reasoning_tokens) == (u.input_tokens + cached + written, cached, u.output_tokens,
                                                          u.reasoning_tokens or 0)
                    assert t.finish_reason == e.output.choices[0].stop_reason
                    # what the model was sent: Inspect's own messages, one blob each
                    assert isinstance(t.request_messages, list)
                    sent = [json.loads(store.get_blob(d)) for d in t.request_messages]
                    assert [m["content"] for m in sent] == [m.content for m in e.input]
                seen_turns += len(turns)
                finished = payloads[-1]
                assert isinstance(finished, TrajectoryFinished) and finished.reason == "answered"
        cur = store.cursor()
        audits = [json.loads(r[0]) for r in cur.execute(
            "SELECT payload FROM events WHERE type = 'audit.answer' ORDER BY position").fetchall()]
        cur.close()
    assert seen_turns == 18
    assert len(audits) == 6 and {a["source"] for a in audits} == {"inspect:includes"}
    assert all(a["semantic_match"] is True and a["trajectory_id"] for a in audits)
    rep = Out(capsys, "report", "--db", str(db), "--json")
    assert rep.returncode == 0, rep.stderr
    assert all(v["accuracy"] == 1.0 for v in json.loads(rep.stdout)["providers"].values())


def _stops(log: object) -> None:
    from inspect_ai.log import EvalError, EvalSampleLimit

    first, second = log.samples[0], log.samples[1]  # type: ignore[attr-defined]
    first.limit = EvalSampleLimit(type="message", limit=6)
    second.error = EvalError(message="upstream broke\nmid-sample", traceback="", traceback_ansi="")
    first.scores["includes"].value = "I"
    second.scores["includes"].value = 0.5  # a partial score is no yes/no verdict: left out


def test_limit_and_error_stops_keep_their_reasons(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inspect_log = pytest.importorskip("inspect_ai.log")  # a dev dependency (pyproject [dev])
    from searchtrace.store import AuditAnswer, TrajectoryFinished

    edited = _edited(tmp_path, _stops, "stops")
    db = tmp_path / "s.duckdb"
    res = Out(capsys, "import", "--db", str(db), "--from", "inspect", str(edited))
    assert res.returncode == 0, res.stderr
    log = inspect_log.read_eval_log(str(edited))
    finished = {}
    for payloads in _payloads(db).values():
        t, f = payloads[0], payloads[-1]
        assert isinstance(t, TrajectoryStarted) and isinstance(f, TrajectoryFinished)
        finished[t.qid] = (f.reason, f.error)
    assert finished[str(log.samples[0].id)] == ("limit", "message limit 6")
    assert finished[str(log.samples[1].id)] == ("error", "upstream broke mid-sample")
    with EventLog(db, read_only=True) as store:
        audits = [ev.payload for ev in store.read(types=["audit.answer"])]
    assert [(a.source, a.semantic_match) for a in audits if isinstance(a, AuditAnswer)] == [("inspect:includes", False)]
