"""The HTML report: self-contained (no URL, no script), well-formed, one SVG per chart, numbers from the inputs."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import msgspec
import pytest

from searchtrace.analytics import Report, extras_from_db, provider_metrics
from searchtrace.analytics import render as render_page
from searchtrace.store import (
    EventLog,
    FetchCalled,
    FetchCompleted,
    JudgeDefault,
    JudgeItemRef,
    JudgeVerdict,
    Labels,
    ModelResponded,
    NewEvent,
    Payload,
    SearchCalled,
    SearchResult,
    TrajectoryStarted,
    Usage,
    Verdict,
)

VOID = {
    "meta",
    "br",
    "hr",
    "img",
    "input",
    "link",
    "area",
    "base",
    "col",
    "source",
    "wbr",
    "circle",
    "line",
    "path",
}


class Checker(HTMLParser):
    """Fails on unbalanced tags; collects every attribute value and all text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.attrs: list[str] = []
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [v or "" for _, v in attrs]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [v or "" for _, v in attrs]

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def check(page: str) -> Checker:
    c = Checker()
    c.feed(page)
    c.close()
    assert c.errors == [] and c.stack == []
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page and "//" not in "".join(c.attrs)
    assert not {"script", "link", "img", "iframe", "object"} & set(c.tags)
    assert "src" not in page.replace("searchtrace", "")  # no src= / srcset anywhere
    return c


EMPTY: dict[str, Any] = msgspec.to_builtins(provider_metrics([]))  # an arm without trajectories: every field


def provider(partition: dict[str, int], ratio: float | None, **more: Any) -> dict[str, Any]:
    s = partition["SMART"] + partition["MISSED"]
    base: dict[str, Any] = {**EMPTY,
        "trajectories": 4, "audited": 4, "correct": 1, "accuracy": 0.25, "exact_match": 0.25, "token_f1": 0.4,
        "searches_per_trajectory": 3.0, "fetches_per_trajectory": 1.5, "input_tokens_per_trajectory": 12000.0,
        "output_tokens_per_trajectory": 800.0, "items": sum(partition.values()) + 1, "valid_items": sum(partition.values()),
        "invalid_items": 1, "snippet_only_items": sum(partition.values()) - 2, "page_visible_items": 2,
        "partition": partition, "discovered_support": 1, "surface_support_rate": s / sum(partition.values()),
        "surface_answerable_queries": 2, "gold_rank1_share": 0.5 if s else None, "contradiction_gold_ratio": ratio,
        "surface_chars_mean": 640.0 if s else 150.0, "surface_chars_median": 600.0 if s else 150.0,
    }  # fmt: skip
    base.update(more)
    return base


REPORT: dict[str, Any] = {
    "schema": "searchtrace.report/1",
    "judge_run_id": "j<1>",
    "providers": {
        "alpha": provider({"SMART": 3, "MISSED": 9, "BLIND": 5, "NO-OP": 83}, 1.5),
        "<b>&beta": provider({"SMART": 0, "MISSED": 0, "BLIND": 7, "NO-OP": 40}, None),
    },
    "complementarity": {
        "<b>&beta|alpha": {"a_only": 0, "b_only": 2, "both": 0, "neither": 2, "url_jaccard": 0.25}
    },
}
EXTRA: dict[str, Any] = {
    "gold_rank_hist": {"alpha": {1: 6, "2": 3, 7: 1}, "<b>&beta": {}},
    "per_trajectory": {
        "alpha": [
            {"fetches": f, "input_tokens": 1000 * (f + 1), "output_tokens": 100 + f} for f in (0, 1, 1, 4)
        ],
        "<b>&beta": [{"fetches": 2, "input_tokens": 500, "output_tokens": 50}],
    },
}


def render(report: dict[str, Any], *, extra: dict[str, Any] | None = None) -> str:
    """The page of a report written here as its JSON."""
    return render_page(msgspec.convert(report, Report), extra=extra)


def svg_texts(page: str) -> list[list[str]]:
    return [re.findall(r"<text[^>]*>([^<]*)</text>", s) for s in re.findall(r"<svg.*?</svg>", page, re.S)]


def test_render_with_extras() -> None:
    page = render(REPORT, extra=EXTRA)
    c = check(page)
    charts = svg_texts(page)
    # partition, rank, contradiction, surface size, input tokens, output tokens, fetches
    assert page.count("<svg") == 7 and len(charts) == 7
    assert "<b>&beta" not in page and "&lt;b&gt;&amp;beta" in page
    part, ranks, contra, surface, _, _, fetches = charts
    svg = re.findall(r"<svg.*?</svg>", page, re.S)[3]
    assert "<title>mean 640</title>" in svg and "<title>mean 150</title>" in svg  # per provider, docs/how-to/providers.md
    assert "800" in surface  # the axis reaches past the longest surface
    assert "SMART 3 · MISSED 9 · BLIND 5 · NO-OP 83  (of 100 items)" in part
    assert "83%" in part  # NO-OP share of alpha inside its bar
    assert "n=10" in ranks and "60%" in ranks and "30%" in ranks and "10%" in ranks
    assert [str(r) for r in range(1, 11)] == [t for t in ranks if t.isdigit()][-10:]
    # alpha: 12 supporting items, round(1.5 * 12) = 18 contradicting; beta: no supporting item -> ratio shown as –
    assert "12" in contra and "18" in contra and "ratio 1.50" in contra and "ratio –" in contra
    # fetch histogram: alpha 0,1,1,4 -> categories 0..4 with shares 25%, 50%, 25%
    assert "n=4" in fetches and "50%" in fetches and "fetches in the trajectory" in fetches
    assert [t for t in fetches if t.isdigit()] == ["0", "1", "2", "3", "4"]
    text = " ".join(c.text)
    assert "alpha" in text and "url_jaccard" in text and "0.250" in text


def test_render_without_extras_falls_back_to_report_numbers() -> None:
    page = render(REPORT)
    check(page)
    charts = svg_texts(page)
    assert len(charts) == 7
    assert "50%" in charts[1]  # gold rank-1 share of alpha
    assert any("mean only" in t for t in re.findall(r'aria-label="([^"]*)"', page))
    assert render(REPORT) == page  # deterministic


def test_render_empty_report() -> None:
    page = render(
        {"schema": "searchtrace.report/1", "judge_run_id": "x", "providers": {}, "complementarity": {}}
    )
    check(page)
    assert page.count("<svg") == 7


def build(path: Path) -> None:
    """Two trajectories of one provider plus one of another; verdicts hand-chosen below."""
    with EventLog(path) as log:

        def traj(
            tid: str,
            prov: str,
            results: list[tuple[str, str, int]],
            fetch_docs: list[str],
            usage: list[tuple[int, int]],
        ) -> None:
            evs: list[Payload] = [
                TrajectoryStarted(trajectory_id=tid, qid=tid, provider=prov),
                SearchCalled(call_id="s", iteration=0, query="q"),
            ]
            for doc, url_n, rank in results:
                evs.append(
                    SearchResult(
                        call_id="s",
                        doc_id=doc,
                        rank=rank,
                        title="t",
                        url=url_n + "?utm_x=1",
                        url_normalized=url_n,
                        domain="d",
                        snippet="s",
                    )
                )
            for i, doc in enumerate(fetch_docs):
                evs.append(FetchCalled(call_id=f"f{i}", iteration=1, doc_id=doc, url=""))
                evs.append(
                    FetchCompleted(
                        call_id=f"f{i}",
                        doc_id=doc,
                        status="ok",
                        content_digest=None,
                        n_bytes=0,
                        n_tokens=0,
                        cache_hit=False,
                        latency_ms=0,
                    )
                )
            evs += [
                ModelResponded(iteration=i, text="", usage=Usage(input_tokens=a, output_tokens=b))
                for i, (a, b) in enumerate(usage)
            ]
            log.append([NewEvent(stream_id=f"traj:{tid}", run_id="r", payload=p) for p in evs])

        # u1 appears at ranks 1 and 3 (two appearances of one item), u2 at rank 2, u3 at rank 4
        traj(
            "t1",
            "alpha",
            [("d1", "u1", 1), ("d2", "u2", 2), ("d3", "u1", 3), ("d4", "u3", 4)],
            ["d2", "d2", "d4"],
            [(100, 10), (200, 20)],
        )
        traj("t2", "alpha", [("d1", "v1", 1), ("d2", "v2", 2)], [], [(50, 5)])
        traj("t3", "beta", [("d1", "w1", 1)], ["d1"], [(7, 1)])

        def verdict(jr: str, tid: str, url_n: str, s: bool | None) -> JudgeVerdict:
            labels = (
                None
                if s is None
                else Verdict(
                    snippet=Labels(supports_gold=s, contradicts_gold=False, relevant=True),
                    page=None,
                    supports_final_answer=False,
                    rationale="",
                )
            )
            return JudgeVerdict(
                judge_run_id=jr,
                item=JudgeItemRef(trajectory_id=tid, url_normalized=url_n),
                surface="snippet",
                valid=s is not None,
                labels=labels,
            )

        vs = [verdict("old", "t1", "u2", True), verdict("j", "t1", "u1", True), verdict("j", "t1", "u2", False), verdict("j", "t1", "u3", None),
              verdict("j", "t2", "v2", True), verdict("j", "t3", "w1", False)]  # fmt: skip
        log.append([NewEvent(stream_id="judge", run_id="j", payload=v) for v in vs])
        log.append([NewEvent(stream_id="judge:j", run_id="j", payload=JudgeDefault(judge_run_id="j"))])  # judge --default


def test_extras_from_db(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    build(db)
    with EventLog(db, read_only=True) as log:
        extra = extras_from_db(log, None)  # the default judge run: j
        old = extras_from_db(log, "old")
    # supported items of j: t1/u1 (ranks 1 and 3), t2/v2 (rank 2); u3 is invalid, w1 unsupported
    assert extra["gold_rank_hist"] == {"alpha": {1: 1, 3: 1, 2: 1}, "beta": {}}
    assert old["gold_rank_hist"] == {"alpha": {2: 1}, "beta": {}}
    per = extra["per_trajectory"]
    assert [
        (r["trajectory_id"], r["fetches"], r["input_tokens"], r["output_tokens"]) for r in per["alpha"]
    ] == [
        ("t1", 3, 300, 30),
        ("t2", 0, 50, 5),
    ]
    assert per["beta"][0]["fetches"] == 1 and per["beta"][0]["searches"] == 1
    report = {"schema": "searchtrace.report/1", "judge_run_id": "j", "providers": {
        "alpha": provider({"SMART": 0, "MISSED": 2, "BLIND": 2, "NO-OP": 2}, 0.0),
        "beta": provider({"SMART": 0, "MISSED": 0, "BLIND": 1, "NO-OP": 0}, None)}}  # fmt: skip
    page = render(report, extra=extra)
    check(page)
    assert "n=3" in svg_texts(page)[1]


@pytest.mark.parametrize("bad", [{"providers": {"p": EMPTY}}, {}])
def test_render_tolerates_sparse_reports(bad: dict[str, Any]) -> None:
    check(render(bad))
