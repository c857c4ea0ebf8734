"""`searchtrace bench replay`: import synthetic traces at 1×/10×/100× the paper's volume and time `report --json`.

1× is the paper: 100 questions × 3 providers = 300 trajectories, ~3 searches of 10 results, ~1.5 fetches and
~23 judge items per trajectory (~7,000 verdicts, ~0.6% invalid), one audit row per trajectory. The files go
through the real `import` (replay.importer) into a fresh store, then the report is built in-process exactly as
the command does (views, projection catch-up, metrics, canonical JSON): once cold (the first report after the
import builds the typed projections) and once warm. Generation time is reported but never counted.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click
import msgspec

from searchtrace.adapters import paper_providers

PROVIDERS = tuple(sorted(paper_providers()))
SUPPORT_RATE = dict(zip(PROVIDERS, (0.07, 0.04, 0.06), strict=True))  # share of items whose snippet supports gold
JUDGE_RUN = "bench-judge"
URL_POOL = 60  # candidate URLs per question, shared by the providers (so complementarity has overlap)
CANDIDATES = 36  # URLs one trajectory draws its results from: ~3.2 searches of 10 give ~23 distinct items
TARGETS = {1: 1.0, 100: 30.0}  # seconds for report --json

_WORDS = (
    "evidence surface provider snippet ranking answer question retrieval freshness topic agent judge document "
    "page fetch index crawler metadata domain result query session oracle gold support archive record season"
).split()
_enc = msgspec.json.Encoder()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(_WORDS, k=n))


def _trajectory(
    rng: random.Random, provider: str, q: int, pool: list[str]
) -> tuple[dict[str, Any], dict[str, bool]]:
    """One docs/reference/interchange.md trace line and its judge items {url_normalized: page_visible}."""
    candidates = rng.sample(pool, CANDIDATES)
    steps: list[dict[str, Any]] = []
    items: dict[str, bool] = {}
    docs: list[tuple[str, str]] = []  # (doc_id, base url)
    n_search = rng.choice((2, 3, 3, 3, 4, 4))
    n_fetch = rng.choice((0, 1, 1, 2, 2, 3))
    fetch_after = [rng.randint(1, n_search) for _ in range(n_fetch)]  # after which search each fetch happens
    it = 0
    in_tokens = 2500
    for s in range(1, n_search + 1):
        it += 1
        in_tokens += rng.randint(1800, 3200)
        steps.append({"kind": "model", "iteration": it, "usage": {"input_tokens": in_tokens, "output_tokens": rng.randint(40, 260), "reasoning_tokens": rng.randint(0, 400)}, "latency_ms": rng.uniform(400, 3000)})  # fmt: skip
        results = []
        for rank, base in enumerate(rng.sample(candidates, 10), start=1):
            doc = f"d{len(docs) + 1}"
            docs.append((doc, base))
            items.setdefault(base, False)
            url = base + "?utm_source=bench" if rng.random() < 0.1 else base  # a variant of the same item
            results.append({"doc_id": doc, "rank": rank, "title": _words(rng, 8), "url": url, "domain": "",
                            "snippet": _words(rng, 30), "metadata": {"age": f"{rng.randint(1, 900)} days ago"}})  # fmt: skip
        steps.append({"kind": "search", "iteration": it, "call_id": f"s{s}", "query": _words(rng, 6), "latency_ms": rng.uniform(300, 1500), "results": results})  # fmt: skip
        for f in range(fetch_after.count(s)):
            doc, base = rng.choice(docs)
            ok = rng.random() < 0.85
            items[base] = items[base] or ok
            steps.append({"kind": "fetch", "iteration": it, "call_id": f"f{s}.{f}", "doc_id": doc, "url": base,
                          "status": "ok" if ok else rng.choice(("timeout", "http_error")),
                          "content": _words(rng, 250) if ok else None, "n_tokens": 2000 if ok else 0,
                          "latency_ms": rng.uniform(500, 4000)})  # fmt: skip
    answered = rng.random() < 0.95
    it += 1
    steps.append({"kind": "model", "iteration": it, "usage": {"input_tokens": in_tokens + 2000, "output_tokens": rng.randint(20, 120), "reasoning_tokens": 0}, "latency_ms": 900.0})  # fmt: skip
    line = {
        "trajectory_id": f"bench:{provider}:q{q:06d}",
        "provider": provider,
        "qid": f"q{q:06d}",
        "question": f"Question {q}: {_words(rng, 12)}?",
        "gold_answer": f"gold {q}",
        "final_answer": (f"gold {q}" if rng.random() < 0.25 else _words(rng, 3)) if answered else None,
        "stop_reason": "answered" if answered else "max_iterations",
        "steps": steps,
    }
    return line, items


def _judgment(rng: random.Random, tid: str, url: str, visible: bool, provider: str) -> dict[str, Any]:
    if rng.random() < 0.006:
        return {"judge_run_id": JUDGE_RUN, "trajectory_id": tid, "url": url, "valid": False, "labels": None, "invalid_reason": "not JSON"}  # fmt: skip
    s = rng.random() < SUPPORT_RATE[provider]

    def labels(p_support: float) -> dict[str, bool]:
        sup = rng.random() < p_support
        return {"supports_gold": sup, "contradicts_gold": (not sup) and rng.random() < 0.08, "relevant": sup or rng.random() < 0.5}  # fmt: skip

    snippet = labels(1.0 if s else 0.0)
    page = labels(0.3) if visible else None
    verdict = {
        "snippet": snippet,
        "page": page,
        "supports_final_answer": rng.random() < 0.1,
        "rationale": "synthetic",
    }
    return {"judge_run_id": JUDGE_RUN, "trajectory_id": tid, "url": url, "valid": True, "labels": verdict, "invalid_reason": None}  # fmt: skip


@dataclass
class Files:
    traces: Path
    judgments: Path
    audit: Path
    trajectories: int
    judge_items: int


def generate(folder: Path, scale: int, seed: int = 1) -> Files:
    """Write traces.jsonl, judgments.jsonl and audit.tsv for `scale` × 100 questions × 3 providers."""
    rng = random.Random(seed * 1_000_003 + scale)
    traces, judgments, audit = folder / "traces.jsonl", folder / "judgments.jsonl", folder / "audit.tsv"
    n_traj = n_items = 0
    with traces.open("wb") as ft, judgments.open("wb") as fj, audit.open("w") as fa:
        fa.write("provider\tqid\tsemantic_match\n")
        for q in range(100 * scale):
            pool = [
                f"https://www.{rng.choice(_WORDS)}{rng.randrange(10_000)}.org/{q}/{k}/{rng.choice(_WORDS)}"
                for k in range(URL_POOL)
            ]
            for provider in PROVIDERS:
                line, items = _trajectory(rng, provider, q, pool)
                ft.write(_enc.encode(line) + b"\n")
                for url, visible in items.items():
                    fj.write(
                        _enc.encode(_judgment(rng, line["trajectory_id"], url, visible, provider)) + b"\n"
                    )
                fa.write(f"{provider}\t{line['qid']}\t{'true' if rng.random() < 0.25 else 'false'}\n")
                n_traj += 1
                n_items += len(items)
    return Files(traces, judgments, audit, n_traj, n_items)


BOOTSTRAP = 2000  # replicates of the interval report (the report default)

@dataclass
class Timing:
    scale: int
    trajectories: int
    judge_items: int
    events: int
    db_mb: float
    generate_s: float
    import_s: float
    report_cold_s: float
    report_warm_s: float
    html_s: float | None
    identical: bool
    report_intervals_s: float = 0.0  # warm report with docs/concepts/statistics.md intervals (B = 2,000), best of two
    interval_ratio: float = 0.0  # report_intervals_s / report_warm_s (target: at most 2)
    intervals_identical: bool = True  # the two interval reports byte-identical
    memory: dict[str, dict[str, float]] | None = None  # with --memory: command -> {"s", "peak_rss_mb"} of a child


_LAUNCHER = r"""
import json, os, subprocess, sys, tempfile, time
for line in sys.stdin:
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(json.loads(line), stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        err.seek(0)
        print(json.dumps([os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss, err.read()[-500:].decode(errors="replace")]), flush=True)
"""


class Launcher:
    """Runs commands as children of a small process started before the benchmark grows: Linux carries a process's
    peak RSS over fork and exec, so a child of the benchmark itself would report at least the benchmark's own size."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)

    def run(self, args: list[str]) -> dict[str, float]:
        """Seconds and peak resident memory (MB) of one `searchtrace` command in a child process of its own (the
        child's resource usage as the kernel reports it at its exit)."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        cmd = [sys.executable, "-c", "from searchtrace.cli import main; main()", *args]
        self._proc.stdin.write(json.dumps(cmd) + "\n")
        self._proc.stdin.flush()
        code, seconds, maxrss_kib, err = json.loads(self._proc.stdout.readline())
        if code != 0:
            raise click.ClickException(f"{' '.join(args)} failed: {err}")
        return {"s": round(seconds, 2), "peak_rss_mb": round(maxrss_kib / 1024, 1)}

    def close(self) -> None:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.close()
        self._proc.wait()
        self._proc.stdout.close()


def memory_of(launcher: Launcher, db: Path, folder: Path) -> dict[str, dict[str, float]]:
    """`export`, `verify` and `report --json` of the store, each in its own child: time and peak RSS."""
    return {
        "export": launcher.run(["export", "--db", str(db), "--out", str(folder / "export")]),
        "verify": launcher.run(["verify", "--db", str(db)]),
        "report": launcher.run(["report", "--db", str(db), "--json"]),
    }


def _report_json(db: Path, bootstrap: int = 0) -> tuple[str, float]:
    """What `searchtrace report --json --bootstrap B --db DB` does, in-process; returns (JSON text, seconds)."""
    from searchtrace.analytics import build_report, to_json
    from searchtrace.store import EventLog

    t0 = time.perf_counter()
    with EventLog(db) as log:
        con = log.cursor()
        try:
            # installs the views and catches the projections up
            text = to_json(build_report(con, writable=True, bootstrap=bootstrap).report)
        finally:
            con.close()
    return text, time.perf_counter() - t0


def run_scale(scale: int, folder: Path, *, html: bool, seed: int, memory: Launcher | None = None) -> Timing:
    from searchtrace.replay.interchange import import_files
    from searchtrace.store import EventLog, bulk_appends

    t0 = time.perf_counter()
    files = generate(folder, scale, seed)
    gen = time.perf_counter() - t0
    db = folder / "bench.duckdb"
    t0 = time.perf_counter()
    with EventLog(db) as log, bulk_appends(log):  # as `searchtrace import` does
        import_files(log, [files.traces], [files.judgments], [files.audit])
        events = log.head
    imp = time.perf_counter() - t0
    cold_text, cold = _report_json(db)
    warm_text, warm = _report_json(db)
    ci_text, ci_s = _report_json(db, bootstrap=BOOTSTRAP)
    ci_again, ci_s2 = _report_json(db, bootstrap=BOOTSTRAP)
    ci_s = min(ci_s, ci_s2)
    html_s = None
    if html:
        from searchtrace.analytics import Report
        from searchtrace.analytics import html as html_mod

        t0 = time.perf_counter()
        with EventLog(db, read_only=True) as log:
            extra = html_mod.extras_from_db(log, JUDGE_RUN)
        html_mod.render(msgspec.json.decode(cold_text, type=Report), extra=extra)
        html_s = time.perf_counter() - t0
    return Timing(
        scale=scale,
        trajectories=files.trajectories,
        judge_items=files.judge_items,
        events=events,
        db_mb=round(db.stat().st_size / 1e6, 1),
        generate_s=round(gen, 3),
        import_s=round(imp, 3),
        report_cold_s=round(cold, 3),
        report_warm_s=round(warm, 3),
        html_s=None if html_s is None else round(html_s, 3),
        identical=cold_text == warm_text,
        report_intervals_s=round(ci_s, 3),
        interval_ratio=round(ci_s / warm, 2) if warm else 0.0,
        intervals_identical=ci_text == ci_again,
        memory=memory_of(memory, db, folder) if memory is not None else None,
    )


def summarise(rows: list[Timing]) -> dict[str, Any]:
    """Targets met, and growth: seconds per 1× of volume relative to the smallest scale (≤ ~1 means linear)."""
    base = rows[0]
    growth = {
        str(r.scale): {
            k: round((getattr(r, k) / r.scale) / (getattr(base, k) / base.scale), 3)
            if getattr(base, k)
            else None
            for k in ("import_s", "report_cold_s", "report_warm_s")
        }
        for r in rows
    }
    targets = {
        f"report_{s}x_under_{limit:g}s": next((r.report_cold_s < limit for r in rows if r.scale == s), None)
        for s, limit in TARGETS.items()
    }
    return {"scales": [asdict(r) for r in rows], "per_unit_growth_vs_smallest": growth, "targets": targets}


def _table(rows: list[Timing]) -> str:
    head = f"{'scale':>5} {'traj':>7} {'items':>9} {'events':>10} {'db MB':>7} {'gen s':>7} {'import s':>9} {'report cold s':>14} {'report warm s':>14} {'html s':>7} same {'+CI s':>7} {'ratio':>6} same"  # fmt: skip
    lines = [head]
    for r in rows:
        html = "-" if r.html_s is None else f"{r.html_s:.2f}"
        lines.append(
            f"{r.scale:>4}x {r.trajectories:>7,} {r.judge_items:>9,} {r.events:>10,} {r.db_mb:>7.1f} {r.generate_s:>7.2f} "
            f"{r.import_s:>9.2f} {r.report_cold_s:>14.3f} {r.report_warm_s:>14.3f} {html:>7} {'yes' if r.identical else 'NO':>4} "
            f"{r.report_intervals_s:>7.3f} {r.interval_ratio:>6.2f} {'yes' if r.intervals_identical else 'NO'}"
            + ("" if r.memory is None else "".join(f"  {k} {v['s']:.1f} s {v['peak_rss_mb']:.0f} MB"
                                                    for k, v in r.memory.items()))
        )
    return "\n".join(lines)


@click.command("replay")
@click.option(
    "--scales",
    default="1,10",
    show_default=True,
    help="Comma-separated multiples of the paper's volume (e.g. 1,10,100).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--html", is_flag=True, help="Also time the HTML page (extras from events + render).")
@click.option("--seed", default=1, show_default=True, type=int)
@click.option("--memory", is_flag=True, help="Also run export, verify and report --json each in a child process: "
              "time and peak resident memory (docs/concepts/performance-memory.md).")
@click.option(
    "--workdir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Keep files here (default: a temporary folder).",
)
def command(scales: str, as_json: bool, html: bool, seed: int, memory: bool, workdir: Path | None) -> None:
    """Import synthetic traces at N× the paper's volume and time report --json (target: 1× < 1 s, 100× < 30 s)."""
    try:
        wanted = sorted({int(s) for s in scales.split(",") if s.strip()})
    except ValueError:
        raise click.UsageError(f"--scales: expected integers like 1,10,100, got {scales!r}") from None
    if not wanted or wanted[0] < 1:
        raise click.UsageError("--scales: give positive integers")
    rows: list[Timing] = []
    launcher = Launcher() if memory else None  # started while this process is small
    for scale in wanted:
        if workdir is not None:
            folder = workdir / f"{scale}x"
            folder.mkdir(parents=True, exist_ok=True)
            for old in folder.glob("bench.duckdb*"):
                old.unlink()
            rows.append(run_scale(scale, folder, html=html, seed=seed, memory=launcher))
        else:
            with tempfile.TemporaryDirectory(prefix=f"searchtrace-bench-{scale}x-") as tmp:
                rows.append(run_scale(scale, Path(tmp), html=html, seed=seed, memory=launcher))
        if not as_json:
            click.echo(_table(rows).splitlines()[-1] if len(rows) > 1 else _table(rows), err=False)
    if launcher is not None:
        launcher.close()
    if as_json:
        click.echo(json.dumps(summarise(rows), indent=2))
        return
    s = summarise(rows)
    click.echo(
        "per-1x cost relative to the smallest scale (≤ ~1: linear or better): "
        + json.dumps(s["per_unit_growth_vs_smallest"])
    )
    click.echo("targets: " + json.dumps(s["targets"]))
