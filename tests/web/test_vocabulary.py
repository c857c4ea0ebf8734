"""The explorer's words and colours are defined once, in analytics' read model: the partition's cells, what the rows
behind each count are called, the complementarity classes, the human audit labels, a verdict's label chips and the
report view's extra rows. The explorer serves them (GET /api/vocabulary) and its page draws with what it loads,
keeping no copy of its own."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import msgspec

from searchtrace.analytics import (
    COMPLEMENTARITY,
    LABEL_COUNTS,
    PARTITION,
    REPORT_ROWS,
    VERDICT_KEYS,
    Cell,
    Vocabulary,
)
from searchtrace.analytics._audit_plan import SNIPPET_LABELS
from searchtrace.web import _data
from tests.web.test_api import get_all

TEXTS = [f for f in Vocabulary.__struct_fields__ if f != "partition"]  # the vocabularies of label texts


def texts(vocabulary: Vocabulary) -> dict[str, str]:
    """Every label text of the vocabulary, by its key."""
    out: dict[str, str] = {}
    for name in TEXTS:
        out.update(msgspec.structs.asdict(getattr(vocabulary, name)))
    return out


def test_the_vocabulary_route_serves_the_read_models_vocabularies(demo_db: Path) -> None:
    (r,) = get_all(demo_db, ("GET", "/api/vocabulary", None))
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.content == msgspec.json.encode(Vocabulary())  # every vocabulary, as the model defines it, in its order
    assert list(r.json()) == ["partition", "counts", "classes", "audit_labels", "verdict", "extra_rows"]
    assert msgspec.convert(r.json()["partition"], tuple[Cell, ...]) == PARTITION
    assert [c["name"] for c in r.json()["partition"]] == ["SMART", "MISSED", "BLIND", "NO-OP", "UNOBSERVED"]
    assert r.json()["classes"]["a_only"] == "answerable by A only"
    assert r.json()["counts"]["surface_supported_items"] == "items whose surface supports gold"


def test_each_vocabulary_names_exactly_the_keys_it_labels(demo_db: Path) -> None:
    """A label the API gains without a text (or a text whose key is gone) fails here, not on the page."""
    v = Vocabulary()
    accepted = {*_data.TRAJECTORY_LABELS, *_data.ITEM_LABELS, *_data.RESULT_LABELS, *_data.FETCH_LABELS,
                *LABEL_COUNTS, *_data._PAIR_LABELS} - {"partition"}  # a partition count is named by its cell
    assert set(msgspec.structs.asdict(v.counts)) == accepted
    assert tuple(msgspec.structs.asdict(v.classes)) == COMPLEMENTARITY
    assert tuple(msgspec.structs.asdict(v.audit_labels)) == SNIPPET_LABELS
    assert set(msgspec.structs.asdict(v.verdict)) <= set(VERDICT_KEYS)
    (r,) = get_all(demo_db, ("GET", "/api/report?bootstrap=0", None))
    arms = r.json()["providers"]
    extra = list(msgspec.structs.asdict(v.extra_rows))
    assert not set(extra) & {k for k, _ in REPORT_ROWS}  # rows after the table's, none of them twice
    assert all(k in block for block in arms.values() for k in extra), (extra, sorted(next(iter(arms.values()))))


def test_the_page_keeps_no_copy_of_the_vocabularies() -> None:
    static = resources.files("searchtrace.web").joinpath("static")
    words = texts(Vocabulary())
    app = static.joinpath("app.js").read_text(encoding="utf-8")
    for name in ("app.js", "app.css", "index.html"):
        code = static.joinpath(name).read_text(encoding="utf-8")
        text = code.lower()
        copied = [c.meaning for c in PARTITION if c.meaning.lower() in text]
        copied += [c.colour for c in PARTITION if c.colour.lower() in text]
        # a label text is copied where it stands as a string of the page's code (prose may use its words); one equal
        # to its own key (`trajectories`) is the key the page reads it by
        strings = {m.group(2) for m in re.finditer(r"""(["'`])((?:(?!\1).)*)\1""", code)}
        copied += [w for k, w in words.items() if w != k and w in strings]
        assert not copied, (name, copied)
    assert "/api/vocabulary" in app
    assert all(f"V.{name}" in app for name in TEXTS)  # and draws with each of them


def test_the_page_names_no_pair_metric_and_draws_the_read_models_pair_columns(demo_db: Path) -> None:
    from searchtrace.analytics import CORRECTED_PAIR_COLUMNS, PAIRED_COLUMNS, Pair

    app = resources.files("searchtrace.web").joinpath("static", "app.js").read_text(encoding="utf-8")
    # the pair blocks' metrics: no field of the read model's Pair whose name says which metric it is
    named = [f for f in Pair.__struct_fields__ if "_" in f and f in app]
    assert not named, named
    layout = get_all(demo_db, ("GET", "/api/report-links", None))[0].json()
    assert [c["key"] for c in layout["paired"]] == [c.key for c in PAIRED_COLUMNS]
    assert [c["key"] for c in layout["corrected_paired"]] == [c.key for c in CORRECTED_PAIR_COLUMNS]
    assert all(c.key in Pair.__struct_fields__ for c in PAIRED_COLUMNS + CORRECTED_PAIR_COLUMNS)
