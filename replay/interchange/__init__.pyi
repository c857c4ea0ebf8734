from searchtrace.replay.interchange import _otel_export, _otlp
from searchtrace.replay.interchange._common import append_chunked as append_chunked
from searchtrace.replay.interchange._export import export_all as export_all
from searchtrace.replay.interchange._formats import JudgmentLine as JudgmentLine
from searchtrace.replay.interchange._formats import TraceLine as TraceLine
from searchtrace.replay.interchange._importer import ImportResult as ImportResult
from searchtrace.replay.interchange._importer import import_files as import_files
from searchtrace.replay.interchange._inspect_logs import log_files as log_files
from searchtrace.replay.interchange._inspect_logs import log_traces as log_traces
from searchtrace.replay.interchange._otel import Collector as Collector
from searchtrace.replay.interchange._otel import OtelImport as OtelImport
from searchtrace.replay.interchange._otel import ToolNames as ToolNames
from searchtrace.replay.interchange._otel import default_search_tools as default_search_tools
from searchtrace.replay.interchange._otel import import_spans as import_spans
from searchtrace.replay.interchange._otel import map_spans as map_spans
from searchtrace.replay.interchange._otel_export import export_traces as export_traces
from searchtrace.replay.interchange._otel_export import phoenix_annotations as phoenix_annotations
from searchtrace.replay.interchange._otlp import Span as Span
from searchtrace.replay.interchange._otlp import encode_json as encode_json
from searchtrace.replay.interchange._otlp import encode_protobuf as encode_protobuf
from searchtrace.replay.interchange._otlp import requests_in as requests_in

OTLP_PROJECT = _otel_export.PROJECT
OTLP_SCOPE = _otel_export.SCOPE
decode_spans = _otlp.decode
otlp_response = _otlp.encode_response
