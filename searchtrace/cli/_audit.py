"""`searchtrace audit sample|import|agreement`: docs/how-to/audit.md oracle validation by humans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import msgspec

from searchtrace import pipeline

if TYPE_CHECKING:  # the agreement's types only: the command line loads analytics when a command runs
    from searchtrace.analytics import AuditAgreement, LabelTally, Tally

_db = click.option(
    "--db",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("searchtrace.duckdb"),
    show_default=True,
    help="The searchtrace store.",
)
_judge_run = click.option("--judge-run-id", default=None, help="Judge run to audit (default: the latest).")


@click.group("audit")
def audit() -> None:
    """Check the judge against humans: balanced sample, label import, agreement."""


@audit.command("sample")
@_db
@_judge_run
@click.option(
    "--k", "k", default=5, show_default=True, type=int, help="Cases per leaf (all of a leaf when fewer)."
)
@click.option("--seed", default="0", show_default=True, help="Seed string; order is sha256(seed + case key).")
@click.option("--out", required=True, type=click.Path(path_type=Path, dir_okay=False), help="TSV to write.")
@click.option("--target-width", type=float, default=None,
              help="Size the snippet supports/contradicts strata so each corrected rate's 95% interval is about "
                   "this wide (Neyman allocation from the judge's labels; docs/concepts/paired-and-audits.md).")
@click.option("--n", "total", type=int, default=None,
              help="Instead of --target-width: this many labels per provider and snippet label, Neyman-allocated.")
@click.option("--agreement", type=float, default=0.9, show_default=True,
              help="Planning share of cases where the human agrees with the judge (strata without labels yet).")
@click.option("--min-labels", type=int, default=2, show_default=True,
              help="Clear labels every stratum with cases needs before the report gives a corrected figure.")
def sample_cmd(db: Path, judge_run_id: str | None, k: int, seed: str, out: Path, target_width: float | None,
               total: int | None, agreement: float, min_labels: int) -> None:
    """Write k cases per provider × surface × label × judge value as a TSV for human labels (with --target-width or
    --n, the snippet strata sized for the corrected rates), and record the sample's design (audit.design) so the
    report can weight the labels back to the judge run."""
    if target_width is not None and total is not None:
        raise click.UsageError("--target-width and --n: give one")
    drawn = pipeline.audit_sample(db, judge_run_id, k, seed, out, target_width=target_width, total=total,
                                  agreement=agreement, min_labels=min_labels)
    design = "its design recorded" if drawn.design_recorded else "its design already recorded"
    click.echo(f"judge run {drawn.judge_run_id}: {len(drawn.rows)} cases in {drawn.leaves} leaves -> {out} "
               f"(fill the human_value column; {design})")
    if drawn.plan is not None:
        click.echo(_plan_text(drawn.plan))


def _width(x: float | None) -> str:
    return "not computable" if x is None else f"{x:.3f}"


def _plan_text(plan: Any) -> str:
    lines = ["plan (stratum: cases N_h, planning share of human true, labels n_h):"]
    lines += [f"  {s.provider}|snippet|{s.label}|{str(s.judge_value).lower()}: N {s.population}, "
              f"share {s.share:.3f}, n {s.sample}" for s in plan.strata]
    lines.append("expected 95% interval width once labelled:")
    lines += [f"  {f.where} {f.key}: {_width(f.expected_width)} ({f.labels} labels)" for f in plan.figures]
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)


@audit.command("status")
@_db
@_judge_run
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status_cmd(db: Path, judge_run_id: str | None, as_json: bool) -> None:
    """For a partly labelled sample: labels per snippet stratum, which corrected figures are computable now (the
    strata each still misses), and their expected widths now and once the drawn sample is labelled."""
    result = pipeline.audit_status(db, judge_run_id)
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
        return
    lines = [f"judge run {result['judge_run_id']}: {result['designs']} recorded design(s), at least "
             f"{result['min_labels']} clear labels per stratum with cases",
             "stratum: cases, drawn, clear labels"]
    lines += [f"  {r['stratum']}: {r['population']}, {r['drawn']}, {r['clear_labels']}"
              + ("" if r["enough"] else "  (too few)") for r in result["strata"]]
    lines.append("figure: computable now (width now; once the drawn sample is labelled)")
    for f in result["figures"]:
        now = (f"yes ({_width(f['expected_width_now'])}" if f["computable"]
               else f"no, needs {', '.join(f['missing_strata'])} ({_width(None)}")
        lines.append(f"  {f['where']} {f['key']}: {now}; {_width(f['expected_width_when_labelled'])})")
    click.echo("\n".join(lines))


@audit.command("import")
@_db
@click.argument("tsv", type=click.Path(path_type=Path, dir_okay=False))
def import_cmd(db: Path, tsv: Path) -> None:
    """Import human labels (true / false / unclear) as audit.label events; re-importing adds nothing."""
    done = pipeline.audit_import(db, tsv)
    click.echo(
        f"{tsv}: {done.rows} rows, {done.new} new labels, {done.already} already stored, "
        f"{done.unlabelled} without a human value"
    )


@audit.command("agreement")
@_db
@_judge_run
@click.option("--json", "as_json", is_flag=True, help="Print the agreement as JSON.")
def agreement_cmd(db: Path, judge_run_id: str | None, as_json: bool) -> None:
    """Agreement = agreeing / clear cases (unclear excluded), overall and per leaf; Cohen's kappa per label, weighted
    to the judge run by the sample's recorded design."""
    result = pipeline.audit_agreement(db, judge_run_id)
    if as_json:
        click.echo(json.dumps(msgspec.to_builtins(result), indent=2, sort_keys=True))
        return
    click.echo(_table(result))


def _fmt(t: Tally) -> str:
    share = "-" if t.agreement is None else f"{t.agreement:.1%}"
    return f"{t.agree:>6} {t.clear:>6} {t.unclear:>8} {share:>9}"


def _kappa(t: LabelTally) -> str:
    share = "-" if t.agreement_weighted is None else f"{t.agreement_weighted:.1%}"
    kappa = "-" if t.kappa is None else f"{t.kappa:.3f}"
    raw = "-" if t.kappa_unweighted is None else f"{t.kappa_unweighted:.3f}"
    return f"{share:>8} {kappa:>6} {raw:>10}"


def _table(result: AuditAgreement) -> str:
    names = list(result.leaves)
    labels = list(result.labels)
    head = "leaf (provider|surface|label|judge)"
    width = max([len(head), *(len(n) for n in names), *(len(n) for n in labels)])
    lines = [
        f"judge run {result.judge_run_id}" + ("" if names else ": no audit labels imported yet"),
        f"{head:<{width}} {'agree':>6} {'clear':>6} {'unclear':>8} {'agreement':>9}",
    ]
    lines += [f"{n:<{width}} {_fmt(result.leaves[n])}" for n in names]
    lines.append(f"{'overall':<{width}} {_fmt(result.overall)}")
    if labels:
        weighted = any(result.labels[n].weighted for n in labels)
        how = ("weighted by the sample's design (N_h / clear labels of each stratum)" if weighted
               else "unweighted (no design recorded)")
        lines += ["", f"per label across leaves; kappa {how}:",
                  f"{'label':<{width}} {'agree':>6} {'clear':>6} {'unclear':>8} {'agreement':>9} {'weighted':>8} "
                  f"{'kappa':>6} {'unweighted':>10}"]
        lines += [f"{n:<{width}} {_fmt(result.labels[n])} {_kappa(result.labels[n])}" for n in labels]
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)
