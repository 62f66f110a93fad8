#!/usr/bin/env python3
"""Strict check of an OTLP/JSON trace export against the OpenTelemetry protobuf definitions.

    scripts/otlp_check.py TRACE.otlp.json [--stored-run] [--proto-dir DIR]

Compiles opentelemetry/proto/collector/trace/v1/trace_service.proto (from DIR, by default the copy pinned in
tools/trace-check's node_modules) with protoc, then parses the file as an ExportTraceServiceRequest with unknown
fields rejected (google.protobuf.json_format.Parse, ignore_unknown_fields=False). OTLP/JSON writes trace and span
ids as hex where protobuf's JSON mapping expects base64 (OTLP specification, "JSON Protobuf Encoding"), so ids are
checked as hex of 16 / 8 bytes and converted first. Then checks what a backend relies on: one non-zero trace id,
unique non-zero span ids, every parentSpanId naming a span of the file, start <= end, and the resource attributes
service.name and service.instance.id (with --stored-run, the export of a stored run, also service.version and
host.name, which a store records and a bare trace file lacks).

Exit status: 0 when all hold, 1 with the failed checks listed, 2 on a usage error, 77 when protoc or Python's
protobuf is missing (CTest skips the test)."""
import argparse
import base64
import collections
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTOS = os.path.join(HERE, "..", "tools", "trace-check", "node_modules", "@opentelemetry",
                              "otlp-grpc-exporter-base", "build", "protos")
ID_BYTES = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def hex_ids_to_base64(node, where, errors):
    """Rewrites OTLP/JSON hex ids in place to protobuf-JSON base64, recording malformed ones in `errors`."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            hex_ids_to_base64(item, f"{where}[{i}]", errors)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ID_BYTES and isinstance(value, str):
                if value == "" and key == "parentSpanId":
                    continue
                try:
                    raw = bytes.fromhex(value)
                except ValueError:
                    errors.append(f"{where}.{key} = {value!r}: not hex")
                    continue
                if len(raw) != ID_BYTES[key]:
                    errors.append(f"{where}.{key} = {value!r}: {len(raw)} bytes, expected {ID_BYTES[key]}")
                node[key] = base64.b64encode(raw).decode()
            else:
                hex_ids_to_base64(value, f"{where}.{key}", errors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--stored-run", action="store_true", help="also require service.version and host.name")
    ap.add_argument("--proto-dir", default=DEFAULT_PROTOS)
    args = ap.parse_args()
    service = os.path.join(args.proto_dir, "opentelemetry", "proto", "collector", "trace", "v1", "trace_service.proto")
    protoc = shutil.which("protoc")
    try:
        from google.protobuf import json_format
    except ImportError:
        json_format = None
    if protoc is None or json_format is None or not os.path.exists(service):
        print(f"skipped: needs protoc, python3-protobuf and {service} (scripts/install-deps.sh)", file=sys.stderr)
        return 77
    try:
        with open(args.trace, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{args.trace}: {e}", file=sys.stderr)
        return 2

    failures = []
    hex_ids_to_base64(doc, "$", failures)
    with tempfile.TemporaryDirectory() as out:
        protos = [os.path.relpath(os.path.join(d, n), args.proto_dir)
                  for d, _, names in os.walk(os.path.join(args.proto_dir, "opentelemetry"))
                  for n in names if n.endswith(".proto")]
        subprocess.run([protoc, f"-I{args.proto_dir}", f"--python_out={out}", *protos], check=True)
        sys.path.insert(0, out)
        pb = importlib.import_module("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
        request = pb.ExportTraceServiceRequest()
        try:
            json_format.Parse(json.dumps(doc), request, ignore_unknown_fields=False)
        except json_format.ParseError as e:
            print(f"FAIL: {args.trace} is not a strict ExportTraceServiceRequest: {e}")
            return 1

    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    resource = {kv.key: kv.value for rs in request.resource_spans for kv in rs.resource.attributes}
    trace_ids = {s.trace_id for s in spans}
    span_ids = collections.Counter(s.span_id for s in spans)
    kinds = collections.Counter(kv.value.WhichOneof("value") for s in spans for kv in s.attributes)
    if not spans:
        failures.append("no spans")
    if len(trace_ids) != 1:
        failures.append(f"{len(trace_ids)} trace ids, expected one per run")
    if any(t == bytes(16) for t in trace_ids):
        failures.append("an all-zero trace id (invalid in W3C Trace Context)")
    dups = [i.hex() for i, n in span_ids.items() if n > 1]
    if dups:
        failures.append(f"{len(dups)} duplicate span ids, e.g. {dups[0]}")
    if bytes(8) in span_ids:
        failures.append("an all-zero span id")
    orphans = sum(1 for s in spans if s.parent_span_id and s.parent_span_id not in span_ids)
    if orphans:
        failures.append(f"{orphans} spans name a parentSpanId that is not in the file")
    backwards = sum(1 for s in spans if s.end_time_unix_nano < s.start_time_unix_nano)
    if backwards:
        failures.append(f"{backwards} spans end before they start")
    required = ["service.name", "service.instance.id"]
    if args.stored_run:
        required += ["service.version", "host.name"]
    for key in required:
        if key not in resource:
            failures.append(f"resource attribute {key} missing")

    print(f"{args.trace}: strict ExportTraceServiceRequest parse ok; {len(spans)} spans, trace id "
          f"{next(iter(trace_ids)).hex() if trace_ids else '-'}, {len(span_ids)} unique span ids, "
          f"{sum(1 for s in spans if not s.parent_span_id)} roots; attribute values "
          + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
          + "; resource " + ", ".join(f"{k}={v.string_value or v.int_value}" for k, v in sorted(resource.items())
                                      if k.startswith(("service.", "host."))))
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
