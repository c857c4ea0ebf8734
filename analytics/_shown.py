"""What the model saw (docs/concepts/shown.md "Shown"): which search results a later model request contained, as a replay.

A search result is *shown* when a model request made after its search completed (a `model.responded` at a later
position of the same stream) contains its URL (raw, or §2-normalised and compared with every URL-like token of the
request normalised the same way), its doc_id (as a whole token), or its title (16 characters or more) verbatim, in
any string of a request message: message text, tool result, tool-call argument (a string that holds JSON is read
as JSON too, so escaped text inside a tool result or an arguments string counts as written).

A request whose messages are unknown (a `model.responded` without `request_messages`, or a message blob missing)
shows every result completed before it; a trajectory none of whose model turns carry `request_messages` (recorded
before docs/concepts/shown.md, or imported) shows every result. Both are marked `assumed`.

The rule is this Python replay only: request messages live in zlib-compressed blobs SQL cannot read. `advance`
materialises it as the table `shown` (one row per search.result), a projection of analytics._projections like the
relations' tables, in `proj` for the database and in the in-memory catalog for read-only reads; `v_shown`, the judge
items and the report read that table. Streams with events after the table's last position are replayed again, the
others kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from searchtrace.adapters import norm_url
from searchtrace.analytics._model import ArmMetrics
from searchtrace.analytics._rules import TRAJECTORIES_CTE
from searchtrace.store import (
    Cursor,
    ModelResponded,
    Payload,
    SearchCompleted,
    SearchResult,
    blobs,
    decode_payload,
)

TITLE_MIN = 16  # shorter titles ("Home", "Wikipedia") are too common to say the result itself was shown
VERSION = "shown/1"  # the rule's version: a table built by another one is built again from position 0
TABLE = "shown"
COLUMNS = "position BIGINT, stream_id VARCHAR, shown BOOLEAN, shown_position BIGINT, shown_by VARCHAR"
_TYPES = ("search.result", "search.completed", "model.responded")

_URL = re.compile(r"https?://[^\s\"'<>\\]+", re.IGNORECASE)
_TRAIL = ".,;:!?)]}'\"*>"  # punctuation a URL written in prose or Markdown is often followed by
_WORD = re.compile(r"\w+")
_json = msgspec.json.Decoder()


class Evidence(msgspec.Struct):
    """One request message read for the rule: its strings joined, its normalised URL tokens, and (made on first
    use: most results match by URL first) its word tokens."""

    text: str
    urls: frozenset[str]
    words_: frozenset[str] | None = None

    def words(self) -> frozenset[str]:
        if self.words_ is None:
            self.words_ = frozenset(_WORD.findall(self.text))
        return self.words_


class Shown(msgspec.Struct, frozen=True):
    """Why one search result counts as shown: the first request that showed it (None: assumed), and by what."""

    position: int | None
    by: str  # "url" | "doc_id" | "title" | "assumed" | "hosted" (docs/how-to/hosted.md: the model API read it itself)


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
        head = value.lstrip()[:1]
        if head in ("{", "["):
            try:
                _strings(_json.decode(value), out)
            except (msgspec.DecodeError, RecursionError):
                pass
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def evidence(message: Any) -> Evidence:
    """A request message (decoded JSON) as the rule reads it."""
    parts: list[str] = []
    _strings(message, parts)
    text = "\x00".join(parts)
    urls: set[str] = set()
    for tok in _URL.findall(text):
        urls.add(norm_url(tok))
        cut = tok.rstrip(_TRAIL)
        if cut and cut != tok:
            urls.add(norm_url(cut))
    return Evidence(text=text, urls=frozenset(urls))


def shows(r: SearchResult, ev: Evidence) -> str | None:
    """By which part the message shows result `r` ("url", "doc_id", "title"), None when it does not."""
    if (r.url and r.url in ev.text) or r.url_normalized in ev.urls or norm_url(r.url) in ev.urls:
        return "url"
    if r.doc_id and (r.doc_id in ev.words() if _WORD.fullmatch(r.doc_id)
                     else re.search(rf"(?<!\w){re.escape(r.doc_id)}(?!\w)", ev.text)):
        return "doc_id"
    if len(r.title) >= TITLE_MIN and r.title in ev.text:
        return "title"
    return None


def is_hosted(r: SearchResult) -> bool:
    """A result of a hosted search layer (docs/how-to/hosted.md): it records which fields the caller received."""
    return not isinstance(r.surface, msgspec.UnsetType)


def replay(events: Iterable[tuple[int, Payload]], messages: Mapping[str, Any]) -> dict[int, Shown]:
    """{position of a search.result: why it is shown} for one trajectory's events (position, payload) in stream
    order; `messages` maps a request message digest to the decoded message (a digest not there is unknown).
    Results not in the answer are not shown."""
    steps = list(events)
    # docs/how-to/hosted.md: a hosted search's result was read by the model API itself, inside the call that ran it
    hosted = {p: Shown(None, "hosted") for p, e in steps if isinstance(e, SearchResult) and is_hosted(e)}
    results = [(p, e) for p, e in steps if isinstance(e, SearchResult) and p not in hosted]
    if not any(isinstance(e, ModelResponded) and not isinstance(e.request_messages, msgspec.UnsetType)
               for _, e in steps):
        return {**hosted, **{p: Shown(None, "assumed") for p, _ in results}}
    by_call: dict[str, list[tuple[int, SearchResult]]] = {}
    for p, r in results:
        by_call.setdefault(r.call_id, []).append((p, r))
    read: dict[str, Evidence | None] = {}
    out: dict[int, Shown] = dict(hosted)
    open_: list[tuple[int, SearchResult]] = []  # results of completed searches not shown yet
    for p, e in steps:
        if isinstance(e, SearchCompleted):
            open_.extend(by_call.pop(e.call_id, []))
        elif isinstance(e, ModelResponded) and open_:
            digests = [] if isinstance(e.request_messages, msgspec.UnsetType) else e.request_messages
            evs: list[Evidence] | None = [] if digests else None
            for d in digests:
                if d not in read:
                    read[d] = evidence(messages[d]) if d in messages else None
                ev = read[d]
                if ev is None or evs is None:
                    evs = None
                    break
                evs.append(ev)
            still: list[tuple[int, SearchResult]] = []
            for rp, r in open_:
                how = "assumed" if evs is None else next((h for ev in evs if (h := shows(r, ev))), None)
                if how is None:
                    still.append((rp, r))
                else:
                    out[rp] = Shown(p, how)
            open_ = still
    return out


# -- the materialised table ------------------------------------------------------------------------------------


def due(to: int) -> str:
    """The SELECT of the rows the table holds when built to position `to`: one per search.result."""
    return f"SELECT position FROM main.events WHERE type = 'search.result' AND position <= {to}"


def advance(con: Cursor, table: str, last: int | None, top: int) -> None:
    """Bring `table` from position `last` (None: build it anew) to `top`: replay the streams with newer events (the
    rule above). Its state and transaction are analytics._projections'."""
    if last is None:
        con.execute(f"CREATE OR REPLACE TABLE {table} ({COLUMNS})")
        last = 0
    types = ", ".join(f"'{t}'" for t in _TYPES)
    touched = [str(r[0]) for r in con.execute(
        f"SELECT DISTINCT stream_id FROM main.events WHERE position > ? AND position <= ? AND type IN ({types})",
        [last, top]).fetchall()]
    if touched:
        con.execute(f"DELETE FROM {table} WHERE stream_id IN (SELECT unnest(?::VARCHAR[]))", [touched])
        asked = [str(r[0]) for r in con.execute(
            "SELECT DISTINCT stream_id FROM main.events WHERE type = 'model.responded' AND position <= ? "
            "AND stream_id IN (SELECT unnest(?::VARCHAR[])) AND json_exists(payload, '$.request_messages')",
            [top, touched]).fetchall()]
        con.execute(
            f"INSERT INTO {table} SELECT position, stream_id, true, NULL, 'assumed' FROM main.events "
            "WHERE type = 'search.result' AND position <= ? AND stream_id IN (SELECT unnest(?::VARCHAR[])) "
            "AND stream_id NOT IN (SELECT unnest(?::VARCHAR[]))", [top, touched, asked])
        if asked:
            _insert(con, table, _replayed(con, asked, top))


def _replayed(con: Cursor, streams: Sequence[str], top: int) -> list[tuple[int, str, bool, int | None, str | None]]:
    """The table's rows of `streams` (their events up to position `top`), each stream replayed."""
    types = ", ".join(f"'{t}'" for t in _TYPES)
    rows = con.execute(
        f"SELECT stream_id, position, payload FROM main.events WHERE type IN ({types}) AND position <= ? "
        "AND stream_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY position", [top, list(streams)]).fetchall()
    per: dict[str, list[tuple[int, Payload]]] = {}
    digests: set[str] = set()
    for stream, position, payload in rows:
        e = decode_payload(payload)
        per.setdefault(str(stream), []).append((int(position), e))
        if isinstance(e, ModelResponded) and not isinstance(e.request_messages, msgspec.UnsetType):
            digests.update(e.request_messages)
    messages: dict[str, Any] = {}
    for d, data in blobs.get_many(con, sorted(digests)).items():
        try:
            messages[d] = _json.decode(data)
        except msgspec.DecodeError:
            pass  # not a message: that request is unknown
    out: list[tuple[int, str, bool, int | None, str | None]] = []
    for stream, events in per.items():
        got = replay(events, messages)
        for p, e in events:
            if isinstance(e, SearchResult):
                s = got.get(p)
                out.append((p, stream, s is not None, None if s is None else s.position, None if s is None else s.by))
    return out


def _insert(con: Cursor, table: str, rows: list[tuple[int, str, bool, int | None, str | None]]) -> None:
    if not rows:
        return
    cols = list(zip(*rows, strict=True))
    con.execute(
        f"INSERT INTO {table} SELECT unnest(?::BIGINT[]), unnest(?::VARCHAR[]), unnest(?::BOOLEAN[]), "
        "unnest(?::BIGINT[]), unnest(?::VARCHAR[])", [list(c) for c in cols])


SHOWN_CTE = """
sh AS (
  SELECT r.position, r.stream_id, coalesce(s.shown, true) AS shown, s.shown_position,
         CASE WHEN s.position IS NULL THEN 'assumed' ELSE s.shown_by END AS shown_by
  FROM search_results r LEFT JOIN shown s ON s.position = r.position
)"""
"""`sh`: every search.result (by position) with the docs/concepts/shown.md shown rule's outcome from the `shown` table
(analytics._shown); a result the table has no row for yet (a read session of a running record) counts as shown."""


# -- per provider, for the report ------------------------------------------------------------------------------

def assumed_note(n: int) -> str:
    """The report's one line for trajectories whose requests are unknown (docs/concepts/shown.md: said once)."""
    return (f"{n} trajectories were recorded without their model requests (before request messages were stored, "
            "or imported): every result they returned counts as shown")


def provider_shown(con: Cursor, blocks: Mapping[str, ArmMetrics]) -> int:
    """Each block's `results_returned`, `results_shown` and `shown_share` over the results of current trajectories;
    returns the number of those trajectories whose results count as shown because no request of theirs was
    recorded. An arm is the provider unless the report names another axis. Run inside analytics._sources.reading."""
    rows = con.execute(f"""WITH {TRAJECTORIES_CTE}, {SHOWN_CTE}
SELECT tr.arm, count(*), count(*) FILTER (WHERE sh.shown),
       count(DISTINCT sh.stream_id) FILTER (WHERE sh.shown_by = 'assumed' AND sh.shown_position IS NULL)
FROM sh JOIN tr USING (stream_id) GROUP BY tr.arm ORDER BY tr.arm""").fetchall()
    for arm, n, s, _ in rows:
        if (block := blocks.get(str(arm))) is not None:
            block.results_returned, block.results_shown = int(n), int(s)
            block.shown_share = None if not n else s / n
    return sum(int(r[3]) for r in rows)
