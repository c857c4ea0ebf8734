"""The application layer: record → judge → grade → report, and demo, replay, import/export, audit, probes, sql, verify.

Typed functions over a database path that return plain msgspec Structs (or the lower layers' results). The CLI
parses arguments and prints what they return; tests and benchmarks call them directly. One module per area.
"""

from searchtrace.pipeline.auditing import (
    AuditImport,
    AuditSample,
    audit_agreement,
    audit_import,
    audit_sample,
    judge_compare,
)
from searchtrace.pipeline.doctor import Check, doctor
from searchtrace.pipeline.interchange import export, import_files, import_inspect
from searchtrace.pipeline.judging import DEFAULT_RPS, SANDBOX_JUDGE, JudgePlan, judge, judge_chat, plan_judge
from searchtrace.pipeline.probing import probe_fetch, probe_search
from searchtrace.pipeline.querying import SqlResult, query, run_sql
from searchtrace.pipeline.recording import aim, check_sandbox_url, record, record_into
from searchtrace.pipeline.replaying import replay
from searchtrace.pipeline.reporting import Report, grade, grade_and_report, open_for_report, report
from searchtrace.pipeline.sandbox_demo import DemoResult, demo, demo_providers
from searchtrace.pipeline.verifying import Verification, verify

__all__ = [
    "DEFAULT_RPS",
    "SANDBOX_JUDGE",
    "JudgePlan",
    "Check",
    "doctor",
    "AuditImport",
    "AuditSample",
    "DemoResult",
    "Report",
    "SqlResult",
    "Verification",
    "aim",
    "audit_agreement",
    "judge_compare",
    "audit_import",
    "audit_sample",
    "check_sandbox_url",
    "demo",
    "demo_providers",
    "export",
    "grade",
    "grade_and_report",
    "import_files",
    "import_inspect",
    "judge",
    "judge_chat",
    "open_for_report",
    "plan_judge",
    "probe_fetch",
    "probe_search",
    "query",
    "record",
    "record_into",
    "replay",
    "report",
    "run_sql",
    "verify",
]
