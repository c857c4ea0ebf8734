"""The application layer: record → judge → grade → report, and demo, replay, import/export, audit, probes, sql, verify,
merge.

Typed functions over a database path that return plain msgspec Structs (or the lower layers' results). The CLI
parses arguments and prints what they return; tests and benchmarks call them directly. One module per area.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.pipeline._auditing import (
        AuditImport,
        AuditSample,
        audit_agreement,
        audit_import,
        audit_sample,
        audit_status,
        judge_compare,
    )
    from searchtrace.pipeline._collecting import collect
    from searchtrace.pipeline._doctor import Check, doctor
    from searchtrace.pipeline._interchange import (
        export,
        export_otlp,
        import_files,
        import_inspect,
        import_otel,
    )
    from searchtrace.pipeline._judging import (
        DEFAULT_RPS,
        SANDBOX_JUDGE,
        BatchPlan,
        JudgePlan,
        backfill_fetcher,
        judge,
        judge_chat,
        make_default,
        plan_judge,
    )
    from searchtrace.pipeline._live import serving_reads
    from searchtrace.pipeline._mcp import mcp_serve, mcp_wrap
    from searchtrace.pipeline._merging import MergeResult, SegmentMerged, merge
    from searchtrace.pipeline._probing import probe_fetch, probe_search
    from searchtrace.pipeline._proxying import proxy
    from searchtrace.pipeline._querying import SqlResult, query, run_sql
    from searchtrace.pipeline._quota import QuotaLedger, hold_share, quota_actor
    from searchtrace.pipeline._ray import (
        RayJudge,
        RayRecord,
        ShardDone,
        judge_on_ray,
        judge_segment_path,
        record_on_ray,
        segment_path,
    )
    from searchtrace.pipeline._ray import connect as connect_ray
    from searchtrace.pipeline._recording import aim, check_sandbox_url, record, record_into, sandbox_rows
    from searchtrace.pipeline._replaying import replay
    from searchtrace.pipeline._reporting import (
        Report,
        grade,
        grade_and_report,
        judge_choice,
        open_for_report,
        report,
    )
    from searchtrace.pipeline._sandbox_demo import DemoResult, demo, demo_providers
    from searchtrace.pipeline._shipping import replicate, ship_segment
    from searchtrace.pipeline._verifying import Verification, verify


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "AuditImport": "searchtrace.pipeline._auditing",
    "AuditSample": "searchtrace.pipeline._auditing",
    "audit_agreement": "searchtrace.pipeline._auditing",
    "audit_import": "searchtrace.pipeline._auditing",
    "audit_sample": "searchtrace.pipeline._auditing",
    "audit_status": "searchtrace.pipeline._auditing",
    "judge_compare": "searchtrace.pipeline._auditing",
    "Check": "searchtrace.pipeline._doctor",
    "doctor": "searchtrace.pipeline._doctor",
    "export": "searchtrace.pipeline._interchange",
    "import_files": "searchtrace.pipeline._interchange",
    "import_inspect": "searchtrace.pipeline._interchange",
    "import_otel": "searchtrace.pipeline._interchange",
    "export_otlp": "searchtrace.pipeline._interchange",
    "collect": "searchtrace.pipeline._collecting",
    "mcp_serve": "searchtrace.pipeline._mcp",
    "mcp_wrap": "searchtrace.pipeline._mcp",
    "MergeResult": "searchtrace.pipeline._merging",
    "SegmentMerged": "searchtrace.pipeline._merging",
    "merge": "searchtrace.pipeline._merging",
    "QuotaLedger": "searchtrace.pipeline._quota",
    "hold_share": "searchtrace.pipeline._quota",
    "quota_actor": "searchtrace.pipeline._quota",
    "RayJudge": "searchtrace.pipeline._ray",
    "RayRecord": "searchtrace.pipeline._ray",
    "ShardDone": "searchtrace.pipeline._ray",
    "judge_on_ray": "searchtrace.pipeline._ray",
    "judge_segment_path": "searchtrace.pipeline._ray",
    "record_on_ray": "searchtrace.pipeline._ray",
    "connect_ray": "searchtrace.pipeline._ray:connect",
    "segment_path": "searchtrace.pipeline._ray",
    "DEFAULT_RPS": "searchtrace.pipeline._judging",
    "JudgePlan": "searchtrace.pipeline._judging",
    "BatchPlan": "searchtrace.pipeline._judging",
    "SANDBOX_JUDGE": "searchtrace.pipeline._judging",
    "judge": "searchtrace.pipeline._judging",
    "backfill_fetcher": "searchtrace.pipeline._judging",
    "judge_chat": "searchtrace.pipeline._judging",
    "make_default": "searchtrace.pipeline._judging",
    "plan_judge": "searchtrace.pipeline._judging",
    "serving_reads": "searchtrace.pipeline._live",
    "probe_fetch": "searchtrace.pipeline._probing",
    "probe_search": "searchtrace.pipeline._probing",
    "proxy": "searchtrace.pipeline._proxying",
    "SqlResult": "searchtrace.pipeline._querying",
    "query": "searchtrace.pipeline._querying",
    "run_sql": "searchtrace.pipeline._querying",
    "aim": "searchtrace.pipeline._recording",
    "check_sandbox_url": "searchtrace.pipeline._recording",
    "record": "searchtrace.pipeline._recording",
    "record_into": "searchtrace.pipeline._recording",
    "sandbox_rows": "searchtrace.pipeline._recording",
    "replay": "searchtrace.pipeline._replaying",
    "Report": "searchtrace.pipeline._reporting",
    "grade": "searchtrace.pipeline._reporting",
    "grade_and_report": "searchtrace.pipeline._reporting",
    "judge_choice": "searchtrace.pipeline._reporting",
    "open_for_report": "searchtrace.pipeline._reporting",
    "report": "searchtrace.pipeline._reporting",
    "DemoResult": "searchtrace.pipeline._sandbox_demo",
    "demo": "searchtrace.pipeline._sandbox_demo",
    "demo_providers": "searchtrace.pipeline._sandbox_demo",
    "replicate": "searchtrace.pipeline._shipping",
    "ship_segment": "searchtrace.pipeline._shipping",
    "Verification": "searchtrace.pipeline._verifying",
    "verify": "searchtrace.pipeline._verifying",
}

__all__ = [
    "backfill_fetcher",
    "AuditImport",
    "AuditSample",
    "Check",
    "DEFAULT_RPS",
    "DemoResult",
    "JudgePlan",
    "BatchPlan",
    "MergeResult",
    "Report",
    "SANDBOX_JUDGE",
    "SegmentMerged",
    "SqlResult",
    "Verification",
    "aim",
    "audit_agreement",
    "audit_status",
    "audit_import",
    "audit_sample",
    "check_sandbox_url",
    "demo",
    "demo_providers",
    "doctor",
    "export",
    "grade",
    "grade_and_report",
    "import_files",
    "import_inspect",
    "import_otel",
    "export_otlp",
    "collect",
    "judge",
    "judge_chat",
    "judge_choice",
    "judge_compare",
    "mcp_serve",
    "mcp_wrap",
    "merge",
    "QuotaLedger",
    "hold_share",
    "quota_actor",
    "RayJudge",
    "RayRecord",
    "ShardDone",
    "judge_on_ray",
    "judge_segment_path",
    "record_on_ray",
    "connect_ray",
    "segment_path",
    "open_for_report",
    "make_default",
    "plan_judge",
    "probe_fetch",
    "probe_search",
    "proxy",
    "query",
    "record",
    "record_into",
    "replay",
    "replicate",
    "report",
    "run_sql",
    "sandbox_rows",
    "serving_reads",
    "ship_segment",
    "verify",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
