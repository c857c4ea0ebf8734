"""Round four of the bad-input catalogue (issue #32, integrity): segments cut short or edited, PostgreSQL URLs that
are broken or hold a password with URL signs, endless inputs, empty gold answers, roles named twice, cells and keys
far too long, prices no report can show. Each case: one line, exit 2, nothing written, no traceback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from typing import Any

import duckdb

from tests.reliability.catalogue import GOOD_CONFIG, Case, Env

PG_PASSWORD = "p/a#b?c@d"  # every URL sign a password may hold unescaped
PG_FRAGMENTS = (PG_PASSWORD, "a#b", "b?c", "p/a")  # what libpq could have printed of it as a host or a port
HUGE_QID = 64 * 1024 * 1024  # characters of one qid cell
LONG_KEY = "k" * 100_000


def _edited_segment(env: Env, name: str) -> None:
    """A copy of the catalogue store whose second event's payload was edited after it was written."""
    seg = env.path(name)
    shutil.copyfile(env.db, seg)
    con = duckdb.connect(str(seg))
    try:
        con.execute("UPDATE events SET run_id = 'forged' WHERE position = 2")
    finally:
        con.close()


def write_round_four(env: Env, trace: Mapping[str, Any]) -> None:
    """The files of the round-four cases."""
    w = env.path
    other = w("seg_other.duckdb")  # another segment (a copy under a new id): cut short where its tables lie
    shutil.copyfile(env.db, other)
    con = duckdb.connect(str(other))
    try:
        con.execute("UPDATE searchtrace_meta SET value = 'c4c4c4c4c4c4' WHERE key = 'segment_id'")
        con.execute("CHECKPOINT")
    finally:
        con.close()
    data = other.read_bytes()
    w("seg_truncated.duckdb").write_bytes(data[: len(data) * 3 // 4])  # its header reads, its tables do not
    other.unlink()
    _edited_segment(env, "seg_edited.duckdb")
    rows = [json.loads(x) for x in env.questions.read_text().splitlines()[:6]]
    base = GOOD_CONFIG.format(run_id="bad", questions=env.questions)

    def questions(stem: str, edit: Callable[[dict[str, Any]], None]) -> None:
        changed = [dict(r) for r in rows]
        edit(changed[2])
        w(f"q4_{stem}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in changed))
        w(f"c4_{stem}.toml").write_text(GOOD_CONFIG.format(run_id="bad", questions=w(f"q4_{stem}.jsonl")))

    questions("emptyanswer", lambda r: r.update(answer=""))
    questions("blankanswer", lambda r: r.update(answer=" \t "))
    questions("emptyalias", lambda r: r.update(answer=[r["answer"], ""]))
    questions("longqid", lambda r: r.update(qid="q" * 2_000))
    questions("longquestion", lambda r: r.update(question="why " * 300_000))
    with w("q4_hugeqid.jsonl").open("w") as fh:  # a 64 MiB qid cell, written without holding it twice
        for i, r in enumerate(rows):
            if i == 2:
                fh.write('{"qid": "' + "q" * HUGE_QID + '", ' + json.dumps({k: v for k, v in r.items() if k != "qid"})[1:] + "\n")
            else:
                fh.write(json.dumps(r) + "\n")
    w("c4_hugeqid.toml").write_text(GOOD_CONFIG.format(run_id="bad", questions=w("q4_hugeqid.jsonl")))
    # an audit row whose epoch has 5,000 digits
    w("a4_epoch_digits.tsv").write_text("provider\tqid\tsemantic_match\tepoch\nbrave\tq\ttrue\t" + "9" * 5_000 + "\n")
    # a run line whose [prices] no report could show
    for name, price in (("huge", 1e308), ("negative", -1.0)):
        folder = w(f"t4_prices_{name}")
        folder.mkdir(exist_ok=True)
        (folder / "traces.jsonl").write_text(json.dumps({**trace, "run_id": "r4"}) + "\n")
        run = {"run_id": "r4", "config": {"prices": {"as_of": "2026-01-01", "search": {"brave": price}}},
               "code_version": "x", "questions": []}
        (folder / "run.jsonl").write_text(json.dumps(run) + "\n")
    w("p4_1e308.toml").write_text('as_of = "2026-01-01"\nsearch.brave = 1e308\n')
    w("c4_shipto.toml").write_text(base)


def _pg(*args: str) -> Callable[[Env], list[str]]:
    return lambda e: [a.replace("{db}", str(e.db)).replace("{root}", str(e.root)) for a in args]


def round_four_cases() -> list[Case]:
    """Issue #32's integrity findings, each a case."""
    secret = f"postgresql://u:{PG_PASSWORD}@127.0.0.1:9/db"
    out = [
        Case("merge-truncated-segment", lambda e: ["merge", "--into", str(e.db), str(e.path("seg_truncated.duckdb"))],
             ("seg_truncated.duckdb", "truncated")),
        Case("merge-edited-segment", lambda e: ["merge", "--into", str(e.db), str(e.path("seg_edited.duckdb"))],
             ("seg_edited.duckdb", "position 2")),
        Case("import-audit-epoch-5000-digits", lambda e: ["import", "--db", str(e.db), str(e.path("t_good.jsonl")),
                                                          "--audit", str(e.path("a4_epoch_digits.tsv"))],
             ("a4_epoch_digits.tsv", "line 2", "epoch")),
        Case("import-otel-device-zero", lambda e: ["import", "--from", "otel", "--db", str(e.db), "/dev/zero"], ("/dev/zero",)),
        Case("import-otel-device-urandom", lambda e: ["import", "--from", "otel", "--db", str(e.db), "/dev/urandom"],
             ("/dev/urandom",)),
        Case("audit-import-device", lambda e: ["audit", "import", "--db", str(e.db), "/dev/zero"], ("/dev/zero",)),
        Case("record-config-device", lambda e: ["record", "--config", "/dev/zero", "--sandbox", "--db", str(e.db),
                                                "--no-progress"], ("/dev/zero",)),
        Case("report-prices-device", lambda e: ["report", "--db", str(e.db), "--prices", "/dev/zero"], ("/dev/zero",)),
        Case("judge-prompt-file-device", lambda e: ["judge", "--sandbox", "--db", str(e.db), "--prompt-file", "/dev/zero"],
             ("/dev/zero",)),
        Case("report-prices-1e308", lambda e: ["report", "--db", str(e.db), "--json", "--prices", str(e.path("p4_1e308.toml"))],
             ("p4_1e308.toml", "search.brave")),
        Case("record-dataset-columns-role-twice", lambda e: ["record", "--config", str(e.path("cfg_lock.toml")), "--sandbox",
                                                             "--db", str(e.db), "--no-progress", "--dataset-columns",
                                                             "answer=answer,answer=question"],
             ("--dataset-columns", "answer", "twice")),
        Case("report-by-100k-key", lambda e: ["report", "--db", str(e.db), "--by", LONG_KEY], ("--by", "100,000 characters")),
        Case("report-by-100k-config-key", lambda e: ["report", "--db", str(e.db), "--by", "config:" + LONG_KEY], ("--by",)),
        Case("ship-broken-ipv6-url", _pg("ship", "--db", "{db}", "--to", "postgresql://u@[::1/db"), ("ipv6",)),
        Case("replica-broken-ipv6-url", _pg("replica", "--from", "postgresql://u@[::1/db", "--db", "{root}/r4.duckdb"),
             ("ipv6",), absent=("r4.duckdb",)),
        Case("ship-password-url-signs", _pg("ship", "--db", "{db}", "--to", secret), ("password",), forbid=PG_FRAGMENTS),
        Case("replica-password-url-signs", _pg("replica", "--from", secret, "--db", "{root}/r4.duckdb"), ("password",),
             forbid=PG_FRAGMENTS, absent=("r4.duckdb",)),
        Case("record-ship-to-password-url-signs", lambda e: ["record", "--config", str(e.path("c4_shipto.toml")), "--sandbox",
                                                             "--db", str(e.db), "--no-progress", "--ship-to", secret],
             ("password",), forbid=PG_FRAGMENTS),
        Case("replica-query-password", _pg("replica", "--from", "postgresql://u@[::1/db?password=qsecret-catalogue",
                                           "--db", "{root}/r4.duckdb"), ("ipv6",), forbid=("qsecret-catalogue",),
             absent=("r4.duckdb",)),
    ]
    for stem, words in (("emptyanswer", ("row 3", "empty answer")), ("blankanswer", ("row 3", "empty answer")),
                        ("emptyalias", ("row 3", "empty answer")), ("longqid", ("row 3", "2,000 characters")),
                        ("longquestion", ("row 3", "question")), ("hugeqid", ("row 3", "67,108,864 characters"))):
        out.append(Case(f"record-{stem}", lambda e, s=stem: ["record", "--config", str(e.path(f"c4_{s}.toml")), "--sandbox",
                                                              "--db", str(e.db), "--no-progress"],
                        (f"q4_{stem}.jsonl", *words)))
    out.append(Case("sample-longqid", lambda e: ["sample", "--questions", str(e.path("q4_longqid.jsonl")), "--n", "2"],
                    ("q4_longqid.jsonl", "row 3")))
    for name in ("huge", "negative"):
        out.append(Case(f"import-run-prices-{name}", lambda e, n=name: [
            "import", "--db", str(e.db), str(e.path(f"t4_prices_{n}") / "traces.jsonl")],
            ("run.jsonl", "line 1", "config.prices", "search.brave")))
    return out
