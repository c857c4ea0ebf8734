"""Oracle validation (docs/how-to/audit.md): a balanced audit sample as TSV, its human labels as events, and agreement."""

from __future__ import annotations

import csv
import hashlib
import io
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import msgspec

from searchtrace.analytics._agreement import cohen_kappa
from searchtrace.analytics._audit_plan import AGREEMENT, SNIPPET_LABELS, AuditPlan, Group, plan
from searchtrace.analytics._items import JudgeItem, judge_items
from searchtrace.analytics._lookups import (
    CaseKey,
    HasCursor,
    current_labels,
    judge_run,
    known_judge_runs,
    label_key,
    providers,
    trajectory_qids,
    verdicts,
)
from searchtrace.analytics._model import AuditAgreement, LabelTally, LeafTally, Tally
from searchtrace.analytics._rules import RECORDED_ORDER
from searchtrace.store import (
    AuditCase,
    AuditDesign,
    AuditLabel,
    AuditStratum,
    BadInput,
    JudgeItemRef,
    JudgeVerdict,
    NewEvent,
    blobs,
    copy_bounded,
    decode_payload,
    shown,
    stable_event_id,
)

SURFACES: tuple[Literal["snippet", "page"], ...] = ("snippet", "page")
LABELS: tuple[Literal["supports_gold", "contradicts_gold", "relevant"], ...] = (
    "supports_gold",
    "contradicts_gold",
    "relevant",
)
COLUMNS = (
    "judge_run_id",
    "provider",
    "trajectory_id",
    "qid",
    "url",
    "url_normalized",
    "surface",
    "label",
    "judge_value",
    "question",
    "gold_answer",
    "title",
    "evidence",
    "human_value",
)
REQUIRED = (
    "judge_run_id",
    "trajectory_id",
    "url_normalized",
    "surface",
    "label",
    "judge_value",
    "human_value",
)
EXCERPT_CHARS = 1500
HumanValue = bool | Literal["unclear"]
Judged = dict[tuple[str, str], JudgeVerdict]  # (trajectory_id, url_normalized) -> first verdict of one judge run


@dataclass(frozen=True)
class Case:
    """One label of one judge item on one surface: the unit a human checks."""

    judge_run_id: str
    provider: str
    trajectory_id: str
    url_normalized: str
    surface: str
    label: str
    judge_value: bool

    @property
    def leaf(self) -> tuple[str, str, str, bool]:
        return (self.provider, self.surface, self.label, self.judge_value)

    @property
    def key(self) -> CaseKey:
        return (self.judge_run_id, self.trajectory_id, self.url_normalized, self.surface, self.label)


def leaf_name(leaf: tuple[str, str, str, bool]) -> str:
    provider, surface, label, value = leaf
    return f"{provider}|{surface}|{label}|{str(value).lower()}"


def cases(judged: Mapping[tuple[str, str], JudgeVerdict], provider_of: Mapping[str, str]) -> list[Case]:
    """Every (item, surface, label) of the valid verdicts of a judge run whose trajectory is known."""
    out: list[Case] = []
    for (tid, url_n), v in judged.items():
        provider = provider_of.get(tid)
        if not v.valid or v.labels is None or provider is None:
            continue
        for surface, labels in (("snippet", v.labels.snippet), ("page", v.labels.page)):
            if labels is None:
                continue
            for label in LABELS:
                value = bool(getattr(labels, label))
                out.append(Case(v.judge_run_id, provider, tid, url_n, surface, label, value))
    return out


def case_order(seed: str, case: Case) -> str:
    """Deterministic order inside a leaf: sha256(seed + trajectory_id|url_normalized|surface|label)."""
    item_key = "|".join((case.trajectory_id, case.url_normalized, case.surface, case.label))
    return hashlib.sha256((seed + item_key).encode("utf-8")).hexdigest()


def balanced_sample(all_cases: Iterable[Case], k: int, seed: str,
                    sizes: Mapping[tuple[str, str, str, bool], int] | None = None) -> list[Case]:
    """k cases per leaf (or `sizes`[leaf] where given; all when fewer), leaves in sorted order, cases by their
    seeded hash."""
    if k <= 0:
        raise BadInput(f"--k must be positive, got {k}")
    leaves: dict[tuple[str, str, str, bool], list[Case]] = {}
    for c in all_cases:
        leaves.setdefault(c.leaf, []).append(c)
    chosen: list[Case] = []
    for leaf in sorted(leaves):
        chosen.extend(sorted(leaves[leaf], key=lambda c: case_order(seed, c))[:(sizes or {}).get(leaf, k)])
    return chosen


def snippet_groups(population: Iterable[Case], qid_of: Mapping[str, str]) -> dict[tuple[str, str], Group]:
    """The judge's snippet supports_gold / contradicts_gold cases per (provider, label), counted per question: what
    an audit plan (analytics._audit_plan) sizes the corrected rates' strata from."""
    groups: dict[tuple[str, str], Group] = {}
    for c in population:
        if c.surface != "snippet" or c.label not in SNIPPET_LABELS:
            continue
        cell = groups.setdefault((c.provider, c.label), Group()).per_q[qid_of.get(c.trajectory_id, c.trajectory_id)]
        cell[0] += c.judge_value
        cell[1] += 1
    return groups


def planned_sizes(audit_plan: AuditPlan) -> dict[tuple[str, str, str, bool], int]:
    """The plan's n_h per leaf (provider, snippet, label, judge value)."""
    return {(s.provider, "snippet", s.label, s.judge_value): s.sample for s in audit_plan.strata}


def _excerpt(text: str, needle: str, width: int = EXCERPT_CHARS) -> str:
    """A window of the page around the first mention of the gold answer (else its start), on one line."""
    flat = " ".join(text.split())
    at = flat.lower().find(needle.lower().strip()) if needle.strip() else -1
    start = max(0, at - width // 3) if at >= 0 else 0
    body = flat[start : start + width]
    return ("…" if start else "") + body + ("…" if start + width < len(flat) else "")


def rows_for(chosen: Sequence[Case], source: HasCursor) -> list[dict[str, str]]:
    """The TSV rows a human reads: question, gold answer and the evidence of that surface (the judge item's snippet,
    or the page the judge read: the content of the item's first ok fetch)."""
    cur = source.cursor()
    found = judge_items(cur, trajectory_ids=sorted({c.trajectory_id for c in chosen}))
    items: dict[tuple[str, str], JudgeItem] = {(i.trajectory_id, i.url_normalized): i for i in found}
    out: list[dict[str, str]] = []
    for c in chosen:
        item = items.get((c.trajectory_id, c.url_normalized))
        if c.surface == "snippet" or item is None:
            evidence = " ".join((item.snippet if item else "").split())
        elif not item.page_digest:
            evidence = "(page fetched but its content is not stored)"
        else:
            try:
                text = blobs.get(cur, item.page_digest).decode("utf-8", "replace")
            except KeyError:
                text = "(page content blob missing from the store)"
            evidence = _excerpt(text, item.gold_answer)
        out.append(
            {
                "judge_run_id": c.judge_run_id,
                "provider": c.provider,
                "trajectory_id": c.trajectory_id,
                "qid": item.qid if item else "",
                "url": item.url if item else c.url_normalized,
                "url_normalized": c.url_normalized,
                "surface": c.surface,
                "label": c.label,
                "judge_value": str(c.judge_value).lower(),
                "question": " ".join((item.question if item else "").split()),
                "gold_answer": " ".join((item.gold_answer if item else "").split()),
                "title": " ".join((item.title if item else "").split()),
                "evidence": evidence,
                "human_value": "",
            }
        )
    cur.close()
    return out


def to_tsv(rows: Sequence[dict[str, str]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMNS), delimiter="\t", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def sample_design(population: Sequence[Case], chosen: Sequence[Case], judge_run_id: str, k: int,
                  seed: str, min_labels: int = 2) -> AuditDesign:
    """docs/concepts/statistics.md: the sample as a stratified design, every leaf a stratum with its N_h (cases of the judge run) and
    n_h (cases drawn), so human labels can be weighted back to the population."""
    size = Counter(c.leaf for c in population)
    drawn = Counter(c.leaf for c in chosen)
    strata = [
        AuditStratum(provider=leaf[0], surface=_surface(leaf[1]), label=_label(leaf[2]), judge_value=leaf[3],
                     population=size[leaf], sampled=drawn[leaf])
        for leaf in sorted(size)
    ]
    picked = [AuditCase(trajectory_id=c.trajectory_id, url_normalized=c.url_normalized, surface=_surface(c.surface),
                        label=_label(c.label)) for c in chosen]
    return AuditDesign(judge_run_id=judge_run_id, seed=seed, k=k, strata=strata, cases=picked, min_labels=min_labels)


def _surface(name: str) -> Literal["snippet", "page"]:
    return "page" if name == "page" else "snippet"


def _label(name: str) -> Literal["supports_gold", "contradicts_gold", "relevant"]:
    for label in LABELS:
        if label == name:
            return label
    raise ValueError(name)


def design_event(design: AuditDesign) -> NewEvent:
    """The `audit.design` event of a drawn sample (stream `audit:<judge_run_id>`); its id derives from the whole
    design, so drawing the same sample again adds nothing, and a sample drawn after the judge run changed is new."""
    content = hashlib.sha256(msgspec.json.encode(design)).hexdigest()
    eid = stable_event_id("audit.design", design.judge_run_id, content)
    return NewEvent(stream_id=f"audit:{design.judge_run_id}", run_id=design.judge_run_id, payload=design, event_id=eid)


def audit_sample(
    source: HasCursor, judge_run_id: str | None, k: int, seed: str, *, target_width: float | None = None,
    total: int | None = None, agreement: float = AGREEMENT, min_labels: int = 2,
) -> tuple[str, list[dict[str, str]], AuditDesign, AuditPlan | None]:
    """(judge run, TSV rows, design, plan) of the sample: k cases per leaf, or with `target_width` / `total` the
    snippet supports_gold / contradicts_gold strata sized by the plan (docs/concepts/paired-and-audits.md)."""
    if min_labels < 1:
        raise BadInput(f"--min-labels must be at least 1, got {min_labels}")
    if target_width is not None and not 0 < target_width < 2:
        raise BadInput(f"--target-width must be between 0 and 2, got {target_width:g}")
    if total is not None and total < 1:
        raise BadInput(f"--n must be positive, got {total}")
    if not 0 < agreement < 1:
        raise BadInput(f"--agreement must be strictly between 0 and 1, got {agreement:g}")
    jr = judge_run(source, judge_run_id)
    judged = verdicts(source, jr)
    if not judged:
        raise BadInput(f"judge run {shown(jr)} has no verdicts in this database")
    population = cases(judged, providers(source))
    audit_plan = None
    if target_width is not None or total is not None:
        audit_plan = plan(snippet_groups(population, trajectory_qids(source)), target_width=target_width,
                          total=total, agreement=agreement, min_labels=min_labels)
    chosen = balanced_sample(population, k, seed, None if audit_plan is None else planned_sizes(audit_plan))
    design = sample_design(population, chosen, jr, k, seed, min_labels)
    return jr, rows_for(chosen, source), design, audit_plan


def audit_status(source: HasCursor, judge_run_id: str | None) -> dict[str, Any]:
    """For the recorded sample of a judge run and the labels imported so far: per snippet stratum N_h, drawn n_h
    and clear labels, and per corrected figure whether it is computable now (the strata it still misses) and its
    expected width now and once the drawn sample is fully labelled (analytics._audit_plan)."""
    jr = judge_run(source, judge_run_id)
    designs = audit_designs(source, jr)
    min_labels = max((d.min_labels for d in designs), default=2)
    judged = verdicts(source, jr)
    groups = snippet_groups(cases(judged, providers(source)), trajectory_qids(source))
    drawn: Counter[tuple[str, str, bool]] = Counter()
    for d in designs:
        for st in d.strata:
            if st.surface == "snippet":
                drawn[(st.provider, st.label, st.judge_value)] = max(drawn[(st.provider, st.label, st.judge_value)],
                                                                     st.sampled)
    tallies = {k: v for k, v in _tallies(source, jr)[1].items() if k[1] == "snippet"}
    clear = {(p, label, v): (t.agree if v else t.clear - t.agree, t.clear) for (p, _, label, v), t in tallies.items()}
    now = plan(groups, fixed={k: v[1] for k, v in clear.items()}, labelled=clear, min_labels=min_labels)
    full = plan(groups, fixed=dict(drawn), labelled=clear, min_labels=min_labels)
    strata: list[dict[str, Any]] = []
    short: list[tuple[str, str, str]] = []  # (provider, label, stratum name) of strata without enough labels
    for s in now.strata:
        key = (s.provider, s.label, s.judge_value)
        name = f"{s.provider}|snippet|{s.label}|{str(s.judge_value).lower()}"
        labels = clear.get(key, (0, 0))[1]
        enough = s.population == 0 or labels >= min_labels
        strata.append({"stratum": name, "population": s.population, "drawn": drawn.get(key, 0),
                       "clear_labels": labels, "enough": enough})
        if not enough:
            short.append((s.provider, s.label, name))
    figures = []
    for f_now, f_full in zip(now.figures, full.figures, strict=True):
        label = "supports_gold" if f_now.key.startswith("surface_support") else "contradicts_gold"
        missing = sorted(name for provider, lab, name in short if lab == label and provider in f_now.where.split("|"))
        figures.append({"where": f_now.where, "key": f_now.key, "computable": not missing,
                        "missing_strata": missing, "expected_width_now": f_now.expected_width,
                        "expected_width_when_labelled": f_full.expected_width})
    return {"judge_run_id": jr, "min_labels": min_labels, "designs": len(designs), "strata": strata,
            "figures": figures}


# -- import --------------------------------------------------------------------
_BOOL = {"true": True, "1": True, "false": False, "0": False}


def _parse_human(raw: str, where: str) -> HumanValue | None:
    v = raw.strip().lower()
    if v == "":
        return None
    if v == "unclear":
        return "unclear"
    if v in _BOOL:
        return _BOOL[v]
    raise BadInput(f"{where}: field human_value: {shown(raw)} is not true, false or unclear")


def _rows(path: Path, fh: Iterable[str]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line, where, row) of every row of a labelled TSV as it is read, each with every field of the header."""
    reader = csv.DictReader(fh, delimiter="\t", strict=True)
    try:
        header = reader.fieldnames or []
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise BadInput(f"{path}: line 1: missing column {shown(missing[0])}")
        for row in reader:
            where = f"{path}: line {reader.line_num}"
            if None in row or any(v is None for v in row.values()):
                raise BadInput(f"{where}: expected {len(header)} tab-separated fields")
            yield reader.line_num, where, row
    except csv.Error as exc:
        raise BadInput(f"{path}: line {reader.line_num}: malformed TSV ({exc})") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: line {reader.line_num + 1}: not valid UTF-8") from None


def _row_form(row: dict[str, Any], where: str, known_runs: set[str]) -> tuple[
        str, Literal["snippet", "page"], Literal["supports_gold", "contradicts_gold", "relevant"]]:
    """(judge run, surface, label) of a row whose values have their form (checked before any verdict is read)."""
    jr = row["judge_run_id"].strip()
    if jr not in known_runs:
        raise BadInput(f"{where}: field judge_run_id: no judge run {shown(jr)} in this database")
    surface, label = row["surface"].strip(), row["label"].strip()
    if surface not in SURFACES:
        raise BadInput(f"{where}: field surface: {shown(surface)} is not snippet or page")
    if label not in LABELS:
        raise BadInput(f"{where}: field label: {shown(label)} is not one of {', '.join(LABELS)}")
    if row["judge_value"].strip().lower() not in _BOOL:
        raise BadInput(f"{where}: field judge_value: {shown(row['judge_value'])} is not true or false")
    _parse_human(row["human_value"], where)
    return jr, _surface(surface), _label(label)


def parse_labels(
    path: Path, fh: Iterable[str], judged_by_run: dict[str, Judged], provider_of: Mapping[str, str]
) -> tuple[list[AuditLabel], int]:
    """Validated labels of a filled-in TSV (rows with an empty human_value are skipped and counted)."""
    labels: list[AuditLabel] = []
    seen: dict[CaseKey, int] = {}
    skipped = 0
    for line, where, row in _rows(path, fh):
        label = _validate_row(row, where, judged_by_run, provider_of)
        if label is None:
            skipped += 1
            continue
        key = (
            label.judge_run_id,
            label.item.trajectory_id,
            label.item.url_normalized,
            label.surface,
            label.label,
        )
        if key in seen:
            raise BadInput(
                f"{where}: field url_normalized: the same case is already labelled on line {seen[key]}"
            )
        seen[key] = line
        labels.append(label)
    return labels, skipped


def _validate_row(
    row: dict[str, Any], where: str, judged_by_run: dict[str, Judged], provider_of: Mapping[str, str]
) -> AuditLabel | None:
    jr, surface, label = _row_form(row, where, set(judged_by_run))
    judged = judged_by_run[jr]
    judge_raw = row["judge_value"].strip().lower()
    tid, url_n = row["trajectory_id"].strip(), row["url_normalized"].strip()
    verdict = judged.get((tid, url_n))
    if verdict is None or not verdict.valid or verdict.labels is None:
        raise BadInput(
            f"{where}: field url_normalized: no valid verdict for ({tid}, {url_n}) in judge run {shown(jr)}"
        )
    labels = verdict.labels.snippet if surface == "snippet" else verdict.labels.page
    if labels is None:
        why = "not page-visible, it has no page labels" if surface == "page" else "never shown, it has no snippet labels"
        raise BadInput(f"{where}: field surface: the item was {why}")
    recorded = bool(getattr(labels, label))
    if _BOOL[judge_raw] != recorded:
        raise BadInput(
            f"{where}: field judge_value: {judge_raw} but judge run {shown(jr)} recorded {str(recorded).lower()}"
        )
    traj_provider = provider_of.get(tid)
    if traj_provider is None:
        raise BadInput(f"{where}: field trajectory_id: {shown(tid)} is not a current trajectory (a later attempt supersedes it)")
    provider = (row.get("provider") or "").strip()
    if provider and provider != traj_provider:
        raise BadInput(f"{where}: field provider: {shown(provider)} but trajectory {shown(tid)} is {shown(traj_provider)}")
    human = _parse_human(row["human_value"], where)
    if human is None:
        return None
    return AuditLabel(
        judge_run_id=jr,
        item=JudgeItemRef(trajectory_id=tid, url_normalized=url_n),
        surface=surface,
        label=label,
        judge_value=recorded,
        human_value=human,
    )


def label_events(
    labels: Sequence[AuditLabel], history: dict[CaseKey, list[AuditLabel]]
) -> tuple[list[NewEvent], int]:
    """Events for labels that change a case's current value; ids count prior labels, so re-import is a no-op."""
    events: list[NewEvent] = []
    unchanged = 0
    for a in labels:
        prior = history.get(label_key(a), [])
        if prior and prior[-1].human_value == a.human_value:
            unchanged += 1
            continue
        eid = stable_event_id("audit.label", *label_key(a), str(a.human_value).lower(), str(len(prior)))
        events.append(
            NewEvent(stream_id=f"audit:{a.judge_run_id}", run_id=a.judge_run_id, payload=a, event_id=eid)
        )
    return events, unchanged


# -- agreement -----------------------------------------------------------------
Leaf = tuple[str, str, str, bool]  # provider, surface, label, judge value: a stratum of the sample


def _settle(t: Tally) -> None:
    """A tally's derived figures, once its labels are counted."""
    t.clear = t.labelled - t.unclear
    t.agreement = t.agree / t.clear if t.clear else None


def audit_designs(source: HasCursor, judge_run_id: str) -> list[AuditDesign]:
    """Every `audit.design` recorded for a judge run, oldest first."""
    cur = source.cursor()
    try:
        cur.execute(
            "SELECT payload FROM events WHERE type = 'audit.design' "
            f"AND json_extract_string(payload, '$.judge_run_id') = ? ORDER BY {RECORDED_ORDER}",
            [judge_run_id],
        )
        found = [decode_payload(payload) for (payload,) in cur.fetchall()]
    finally:
        cur.close()
    return [d for d in found if isinstance(d, AuditDesign)]


def stratum_sizes(designs: Sequence[AuditDesign]) -> dict[Leaf, int]:
    """N_h of every stratum, from the latest design that has it (a sample drawn later saw the judge run later)."""
    out: dict[Leaf, int] = {}
    for d in designs:
        for st in d.strata:
            out[(st.provider, st.surface, st.label, st.judge_value)] = st.population
    return out


def _kappa_of(cases: Sequence[tuple[Leaf, bool, bool]], sizes: Mapping[Leaf, int] | None
              ) -> tuple[float | None, float | None, float | None]:
    """Cohen's kappa of (judge, human) over clear cases of one label; with `sizes`, each case of stratum h weighs
    N_h / m_h (m_h: the clear cases of h), so the table is the judge run's population, not the balanced sample."""
    clear = Counter(leaf for leaf, _, _ in cases)
    table = [Fraction(0)] * 4  # (judge, human): TT, TF, FT, FF
    for leaf, judge, human in cases:
        w = Fraction(sizes[leaf], clear[leaf]) if sizes is not None else Fraction(1)
        table[(0 if judge else 2) + (0 if human else 1)] += w
    total = sum(table)
    return (cohen_kappa((table[0], table[1], table[2], table[3])),  # kappa, agreement weighted, population
            float((table[0] + table[3]) / total) if total and sizes is not None else None,
            float(total) if sizes is not None else None)


def _tallies(source: HasCursor, jr: str) -> tuple[Tally, dict[Leaf, LeafTally], dict[str, LabelTally],
                                                  dict[str, list[tuple[Leaf, bool, bool]]]]:
    """The current human labels of judge run `jr`: tallies overall, per leaf and per surface.label, and the clear
    (leaf, judge, human) cases per surface.label."""
    provider_of = providers(source)
    overall = Tally()
    leaves: dict[Leaf, LeafTally] = {}
    per_label: dict[str, LabelTally] = {}
    clear_cases: dict[str, list[tuple[Leaf, bool, bool]]] = {}
    for history in current_labels(source, jr).values():
        a = history[-1]
        leaf: Leaf = (provider_of.get(a.item.trajectory_id, "?"), a.surface, a.label, a.judge_value)
        name = f"{a.surface}.{a.label}"
        for t in (overall, leaves.setdefault(leaf, LeafTally()), per_label.setdefault(name, LabelTally())):
            t.labelled += 1
            if a.human_value == "unclear":
                t.unclear += 1
            elif a.human_value == a.judge_value:
                t.agree += 1
        if a.human_value != "unclear":
            clear_cases.setdefault(name, []).append((leaf, a.judge_value, a.human_value))
    for t in (overall, *leaves.values(), *per_label.values()):
        _settle(t)
    return overall, leaves, per_label, clear_cases


def agreement(source: HasCursor, judge_run_id: str | None) -> AuditAgreement:
    """Agreeing / clear cases (unclear excluded from the denominator), overall and per leaf; Cohen's kappa per label
    (surface.label) across leaves, weighted to the judge run by the sample's design (docs/concepts/statistics.md). A leaf's judge value
    is constant, so a per-leaf kappa could only be 0 or undefined: there is none."""
    jr = judge_run(source, judge_run_id)
    designs = audit_designs(source, jr)
    sizes = stratum_sizes(designs)
    overall, leaves, per_label, clear_cases = _tallies(source, jr)
    notes: list[str] = []
    outside = sorted({leaf for cs in clear_cases.values() for leaf, _, _ in cs if leaf not in sizes})
    if not designs and clear_cases:
        notes.append(f"no audit.design is recorded for judge run {jr}: kappa is unweighted (the balanced sample "
                     "over-represents small leaves); draw the sample again with `audit sample` to record it")
    elif outside:
        notes.append(f"{len(outside)} labelled lea{'ves' if len(outside) != 1 else 'f'} outside every recorded "
                     f"design ({', '.join(leaf_name(x) for x in outside)}): the weighted kappa leaves them out")
    for name, t in per_label.items():
        cs = clear_cases.get(name, [])
        t.weighted = bool(designs)
        kept = [c for c in cs if c[0] in sizes] if t.weighted else cs
        t.kappa, t.agreement_weighted, t.population = _kappa_of(kept, sizes if t.weighted else None)
        t.kappa_unweighted = _kappa_of(cs, None)[0]
    for leaf, row in leaves.items():
        if leaf in sizes:
            row.population = sizes[leaf]
    return AuditAgreement(judge_run_id=jr, designs=len(designs), overall=overall,
                          leaves={leaf_name(leaf): leaves[leaf] for leaf in sorted(leaves)},
                          labels={name: per_label[name] for name in sorted(per_label)}, notes=notes)


def prepare_import(source: HasCursor, path: Path) -> tuple[list[NewEvent], dict[str, int]]:
    """Validate a whole labelled TSV against the store; returns the events to append and counts. The file is read
    once, bounded, into a private copy that both passes stream: a bad row fails where it is read."""
    action = "nothing was imported"
    known = known_judge_runs(source)
    with tempfile.TemporaryDirectory(prefix="searchtrace-audit-") as tmp:
        copy = Path(tmp) / "labels.tsv"
        copy_bounded(path, copy, "audit", "the labels", action)
        wanted: dict[str, set[str]] = {}  # judge run -> trajectories the file names
        with copy.open(encoding="utf-8-sig", newline="") as fh:
            for _, where, row in _rows(path, fh):
                jr, _, _ = _row_form(row, where, known)
                wanted.setdefault(jr, set()).add(row["trajectory_id"].strip())
        judged_by_run = {jr: verdicts(source, jr, only=wanted[jr]) for jr in sorted(wanted)}
        with copy.open(encoding="utf-8-sig", newline="") as fh:
            labels, skipped = parse_labels(path, fh, judged_by_run, providers(source))
    events, unchanged = label_events(labels, current_labels(source))
    return events, {"rows": len(labels) + skipped, "unlabelled": skipped, "unchanged": unchanged}
