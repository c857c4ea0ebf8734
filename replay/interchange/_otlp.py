"""OTLP trace wire formats (docs/how-to/otel.md): `ExportTraceServiceRequest` as protobuf (through the official
`opentelemetry-proto` types) or as OTLP JSON, to and from one plain `Span` shape.

Only this module touches the wire. The protobuf types are imported on first use (extra `searchtrace[otel]`), so the
default paths never load protobuf; OTLP JSON needs nothing beyond msgspec (its mapping differs from protobuf's
canonical JSON: ids are hex, enums numbers, 64-bit integers strings). Bad input is `BadInput` naming where.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from searchtrace.adapters import MAX_DEPTH, json_too_deep
from searchtrace.store import BadInput, shown

# MAX_DEPTH (docs/concepts/security.md JSON nesting of a request body) bounds an attribute's AnyValue too
MAX_ATTRIBUTE = 16 << 20  # bytes of one attribute value: a page or a long conversation fits, a runaway does not
_HEX = frozenset("0123456789abcdef")


class SpanEvent(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    time_ns: int = 0
    attrs: dict[str, Any] = {}


class Span(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One span as the bridge reads it: ids as lowercase hex, attributes as plain values (its resource's too)."""

    trace_id: str
    span_id: str
    parent_id: str = ""
    name: str = ""
    kind: int = 0
    start_ns: int = 0
    end_ns: int = 0
    attrs: dict[str, Any] = {}
    resource: dict[str, Any] = {}
    status: int = 0  # 0 unset, 1 ok, 2 error (OTLP StatusCode)
    status_message: str = ""
    events: list[SpanEvent] = []


def _id(value: Any, size: int, where: str, field: str, *, empty: bool = False) -> str:
    """A hex id of `size` bytes (OTLP JSON), lowercased; all zeros is invalid (W3C trace context)."""
    if (value is None or value == "") and empty:
        return ""
    if not isinstance(value, str) or len(value) != 2 * size or not set(value.lower()) <= _HEX \
            or set(value) == {"0"}:
        raise BadInput(f"{where}: field {field}: {shown(str(value)[:80])} is not a {size}-byte hex id")
    return value.lower()


def _int(value: Any, where: str, field: str) -> int:
    if value is None:
        return 0
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise BadInput(f"{where}: field {field}: {shown(str(value)[:80])} is not an integer") from None
    if not 0 <= n < 1 << 64:
        raise BadInput(f"{where}: field {field}: {n} does not fit 64 bits")
    return n


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    """A field by its OTLP JSON name (lowerCamelCase), or by its protobuf name (both are valid OTLP JSON)."""
    return obj[camel] if camel in obj else obj.get(snake)


def _list(value: Any, where: str, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadInput(f"{where}: field {field}: not a list")
    return value


def _size(value: Any, where: str, key: str) -> Any:
    if isinstance(value, str | bytes) and len(value) > MAX_ATTRIBUTE:
        raise BadInput(f"{where}: attribute {shown(key[:80])}: {len(value)} bytes, over the {MAX_ATTRIBUTE >> 20} MiB cap")
    return value


def _json_value(v: Any, where: str, depth: int = 0) -> Any:
    """An OTLP JSON AnyValue as a plain value."""
    if depth > MAX_DEPTH:
        raise BadInput(f"{where}: an attribute value nests deeper than {MAX_DEPTH} levels")
    if not isinstance(v, dict):
        return None
    if "stringValue" in v or "string_value" in v:
        s = _get(v, "stringValue", "string_value")
        return s if isinstance(s, str) else None
    if "boolValue" in v or "bool_value" in v:
        return bool(_get(v, "boolValue", "bool_value"))
    if "intValue" in v or "int_value" in v:
        try:
            return int(_get(v, "intValue", "int_value"))
        except (TypeError, ValueError):
            return None
    if "doubleValue" in v or "double_value" in v:
        d = _get(v, "doubleValue", "double_value")
        return float(d) if isinstance(d, int | float | str) and _float_ok(d) else None
    if "arrayValue" in v or "array_value" in v:
        arr = _get(v, "arrayValue", "array_value") or {}
        return [_json_value(x, where, depth + 1) for x in (arr.get("values") or []) if isinstance(arr, dict)]
    if "kvlistValue" in v or "kvlist_value" in v:
        kv = _get(v, "kvlistValue", "kvlist_value") or {}
        return _json_attrs(kv.get("values") if isinstance(kv, dict) else None, where, depth + 1)
    if "bytesValue" in v or "bytes_value" in v:
        try:
            return base64.b64decode(str(_get(v, "bytesValue", "bytes_value"))).decode("utf-8", "replace")
        except ValueError:
            return None
    return None


def _float_ok(d: Any) -> bool:
    try:
        float(d)
    except ValueError:
        return False
    return True


def _json_attrs(items: Any, where: str, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in items if isinstance(items, list) else []:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = _size(_json_value(kv.get("value"), where, depth), where, kv["key"])
    return out


def decode_json(body: bytes, where: str) -> list[Span]:
    """The spans of one OTLP JSON ExportTraceServiceRequest."""
    if json_too_deep(body, MAX_DEPTH):
        raise BadInput(f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        doc = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise BadInput(f"{where}: not OTLP JSON ({str(exc)[:120]})") from None
    if not isinstance(doc, dict) or not ("resourceSpans" in doc or "resource_spans" in doc):
        raise BadInput(f"{where}: not an OTLP ExportTraceServiceRequest (no resourceSpans)")
    out: list[Span] = []
    for i, rs in enumerate(_list(_get(doc, "resourceSpans", "resource_spans"), where, "resourceSpans")):
        if not isinstance(rs, dict):
            raise BadInput(f"{where}: resourceSpans[{i}]: not an object")
        res: dict[str, Any] = rs["resource"] if isinstance(rs.get("resource"), dict) else {}
        resource = _json_attrs(res.get("attributes"), f"{where}: resourceSpans[{i}].resource")
        for j, ss in enumerate(_list(_get(rs, "scopeSpans", "scope_spans"), where, f"resourceSpans[{i}].scopeSpans")):
            if not isinstance(ss, dict):
                raise BadInput(f"{where}: resourceSpans[{i}].scopeSpans[{j}]: not an object")
            for k, sp in enumerate(_list(ss.get("spans"), where, f"resourceSpans[{i}].scopeSpans[{j}].spans")):
                at = f"{where}: resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                if not isinstance(sp, dict):
                    raise BadInput(f"{at}: not an object")
                status: dict[str, Any] = sp["status"] if isinstance(sp.get("status"), dict) else {}
                events = [SpanEvent(name=str(e.get("name") or ""),
                                    time_ns=_int(_get(e, "timeUnixNano", "time_unix_nano"), at, "events.timeUnixNano"),
                                    attrs=_json_attrs(e.get("attributes"), at))
                          for e in _list(sp.get("events"), at, "events") if isinstance(e, dict)]
                code: Any = status.get("code", 0)
                codes = {"STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
                out.append(Span(
                    trace_id=_id(_get(sp, "traceId", "trace_id"), 16, at, "traceId"),
                    span_id=_id(_get(sp, "spanId", "span_id"), 8, at, "spanId"),
                    parent_id=_id(_get(sp, "parentSpanId", "parent_span_id"), 8, at, "parentSpanId", empty=True),
                    name=str(sp.get("name") or ""), kind=_int(sp.get("kind"), at, "kind") if isinstance(
                        sp.get("kind"), int | str) and str(sp.get("kind")).isdigit() else 0,
                    start_ns=_int(_get(sp, "startTimeUnixNano", "start_time_unix_nano"), at, "startTimeUnixNano"),
                    end_ns=_int(_get(sp, "endTimeUnixNano", "end_time_unix_nano"), at, "endTimeUnixNano"),
                    attrs=_json_attrs(sp.get("attributes"), at), resource=resource,
                    status=codes.get(code, 0) if isinstance(code, str) else int(code) if isinstance(code, int) else 0,
                    status_message=str(status.get("message") or ""), events=events))
    return out


def _pb() -> Any:
    """The official generated types (opentelemetry-proto), imported on first use."""
    try:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    except ImportError:
        raise BadInput("OTLP protobuf needs the opentelemetry-proto package: pip install 'searchtrace[otel]' "
                       "(OTLP JSON works without it)") from None
    return trace_service_pb2


def _pb_value(v: Any, where: str, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise BadInput(f"{where}: an attribute value nests deeper than {MAX_DEPTH} levels")
    which = v.WhichOneof("value")
    if which == "string_value":
        return v.string_value
    if which == "bool_value":
        return v.bool_value
    if which == "int_value":
        return v.int_value
    if which == "double_value":
        return v.double_value
    if which == "array_value":
        return [_pb_value(x, where, depth + 1) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _pb_value(kv.value, where, depth + 1) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return bytes(v.bytes_value).decode("utf-8", "replace")
    return None


def _pb_attrs(items: Iterable[Any], where: str) -> dict[str, Any]:
    return {kv.key: _size(_pb_value(kv.value, where), where, kv.key) for kv in items}


def decode_protobuf(body: bytes, where: str) -> list[Span]:
    """The spans of one protobuf ExportTraceServiceRequest."""
    pb = _pb()
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

    req = pb.ExportTraceServiceRequest()
    try:
        req.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise BadInput(f"{where}: not a protobuf ExportTraceServiceRequest ({str(exc)[:120]})") from None
    out: list[Span] = []
    for i, rs in enumerate(req.resource_spans):
        resource = _pb_attrs(rs.resource.attributes, f"{where}: resource_spans[{i}].resource")
        for j, ss in enumerate(rs.scope_spans):
            for k, sp in enumerate(ss.spans):
                at = f"{where}: resource_spans[{i}].scope_spans[{j}].spans[{k}]"
                out.append(Span(
                    trace_id=_id(bytes(sp.trace_id).hex(), 16, at, "trace_id"),
                    span_id=_id(bytes(sp.span_id).hex(), 8, at, "span_id"),
                    parent_id=_id(bytes(sp.parent_span_id).hex(), 8, at, "parent_span_id", empty=True),
                    name=sp.name, kind=int(sp.kind), start_ns=int(sp.start_time_unix_nano),
                    end_ns=int(sp.end_time_unix_nano), attrs=_pb_attrs(sp.attributes, at), resource=resource,
                    status=int(sp.status.code), status_message=sp.status.message,
                    events=[SpanEvent(name=e.name, time_ns=int(e.time_unix_nano), attrs=_pb_attrs(e.attributes, at))
                            for e in sp.events]))
    return out


def decode(body: bytes, where: str, *, protobuf: bool | None = None) -> list[Span]:
    """Protobuf or JSON (None: JSON when the body starts with `{`)."""
    if protobuf is None:
        protobuf = not body.lstrip()[:1] == b"{"
    return decode_protobuf(body, where) if protobuf else decode_json(body, where)


def requests_in(data: bytes, where: str) -> Iterator[tuple[str, list[Span]]]:
    """Each ExportTraceServiceRequest of a file: one JSON document, JSON lines, or one protobuf message."""
    head = data.lstrip()[:1]
    if head != b"{":
        yield where, decode_protobuf(data, where)
        return
    try:
        whole = decode_json(data, where)
    except BadInput:
        whole = None
    if whole is not None:
        yield where, whole
        return
    for n, line in enumerate(data.splitlines(), 1):
        if line.strip():
            yield f"{where}: line {n}", decode_json(line, f"{where}: line {n}")


# -- out --------------------------------------------------------------------------------------------------------------


def _json_any(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_json_any(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _json_any(x)} for k, x in v.items()]}}
    return {"stringValue": str(v)}


def _json_kv(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _json_any(v)} for k, v in attrs.items()]


def encode_json(spans: list[Span], scope: str) -> bytes:
    """One OTLP JSON ExportTraceServiceRequest (spans grouped by their resource, in order)."""
    groups: dict[bytes, tuple[dict[str, Any], list[Span]]] = {}
    for s in spans:
        groups.setdefault(msgspec.json.encode(s.resource, order="sorted"), (s.resource, []))[1].append(s)
    return msgspec.json.encode({"resourceSpans": [
        {"resource": {"attributes": _json_kv(res)}, "scopeSpans": [{"scope": {"name": scope}, "spans": [
            {"traceId": s.trace_id, "spanId": s.span_id, **({"parentSpanId": s.parent_id} if s.parent_id else {}),
             "name": s.name, "kind": s.kind, "startTimeUnixNano": str(s.start_ns), "endTimeUnixNano": str(s.end_ns),
             "attributes": _json_kv(s.attrs),
             "events": [{"timeUnixNano": str(e.time_ns), "name": e.name, "attributes": _json_kv(e.attrs)}
                        for e in s.events],
             "status": {"code": s.status, **({"message": s.status_message} if s.status_message else {})}}
            for s in group]}]}
        for res, group in groups.values()]})


def _pb_set(target: Any, v: Any) -> None:
    if isinstance(v, bool):
        target.bool_value = v
    elif isinstance(v, int):
        target.int_value = v
    elif isinstance(v, float):
        target.double_value = v
    elif isinstance(v, list):
        target.array_value.SetInParent()
        for x in v:
            _pb_set(target.array_value.values.add(), x)
    elif isinstance(v, dict):
        target.kvlist_value.SetInParent()
        for k, x in v.items():
            kv = target.kvlist_value.values.add()
            kv.key = k
            _pb_set(kv.value, x)
    else:
        target.string_value = str(v)


def _pb_kv(target: Any, attrs: dict[str, Any]) -> None:
    for k, v in attrs.items():
        kv = target.add()
        kv.key = k
        _pb_set(kv.value, v)


def encode_protobuf(spans: list[Span], scope: str) -> bytes:
    """One protobuf ExportTraceServiceRequest, built with the official types."""
    req = _pb().ExportTraceServiceRequest()
    groups: dict[bytes, Any] = {}
    for s in spans:
        key = msgspec.json.encode(s.resource, order="sorted")
        if key not in groups:
            rs = req.resource_spans.add()
            _pb_kv(rs.resource.attributes, s.resource)
            ss = rs.scope_spans.add()
            ss.scope.name = scope
            groups[key] = ss
        sp = groups[key].spans.add()
        sp.trace_id, sp.span_id = bytes.fromhex(s.trace_id), bytes.fromhex(s.span_id)
        if s.parent_id:
            sp.parent_span_id = bytes.fromhex(s.parent_id)
        sp.name, sp.kind = s.name, s.kind
        sp.start_time_unix_nano, sp.end_time_unix_nano = s.start_ns, s.end_ns
        _pb_kv(sp.attributes, s.attrs)
        for e in s.events:
            pe = sp.events.add()
            pe.name, pe.time_unix_nano = e.name, e.time_ns
            _pb_kv(pe.attributes, e.attrs)
        sp.status.code = s.status
        if s.status_message:
            sp.status.message = s.status_message
    data: bytes = req.SerializeToString()
    return data


def encode_response(rejected: int, message: str, *, protobuf: bool) -> tuple[bytes, str]:
    """An ExportTraceServiceResponse (partial success when spans were rejected) and its content type."""
    if not protobuf:
        body: dict[str, Any] = {}
        if rejected or message:
            body["partialSuccess"] = {"rejectedSpans": str(rejected), "errorMessage": message}
        return msgspec.json.encode(body), "application/json"
    resp = _pb().ExportTraceServiceResponse()
    if rejected or message:
        resp.partial_success.rejected_spans = rejected
        resp.partial_success.error_message = message
    data: bytes = resp.SerializeToString()
    return data, "application/x-protobuf"
