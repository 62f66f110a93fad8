#!/usr/bin/python3
"""Checks XSP's Perfetto protobuf export (.pftrace) the way a reader of Perfetto's TrackEvent model takes it.

The schema is XSP's own subset of Perfetto's protos (tests/fixtures/perfetto/xsp_pftrace_subset.proto), compiled
with protoc into a temporary folder at run time; the parsing is python3-protobuf's, not the writer's code.

For each trace it checks that:
- every TracePacket parses and carries no field the subset does not declare (so the subset documents the writer);
- the first packet is a ClockSnapshot naming the trace clock; timestamps on a sequence-scoped incremental clock
  (ClockSnapshot.Clock.is_incremental, the clock of TracePacketDefaults.timestamp_clock_id) are deltas from the
  previous packet on that clock, restarting at each ClockSnapshot that gives it, and are rebuilt to absolute host
  clock ns as trace_processor does; packets come in non-decreasing (absolute) timestamp order;
- every interned id (event name, category, annotation name, annotation string value) resolves in the incremental
  state of its sequence, which SEQ_INCREMENTAL_STATE_CLEARED resets; packets that use one carry
  SEQ_NEEDS_INCREMENTAL_STATE after a reset;
- every event's track (its track_uuid, else TrackEventDefaults.track_uuid) was described since the last reset;
  counter events go to counter tracks, slices to others;
- per track, after a stable sort by timestamp (as trace_processor sorts), every BEGIN has its END, slices nest and
  END timestamps never decrease;
- every flow starts at a SYSTEM-level slice (a launch) and steps on at each KERNEL-level slice with the same correlation
  (where a slice with a flow leaves "correlation" out: its first flow id's low 32 bits);
- a device activity's "kind", "device", "context", "stream", where left out, are the previous slice's of its category
  on its sequence since the last reset, less the keys its "xsp.unset" annotation lists;
- extra counter values (TrackEvent.extra_counter_values / extra_double_counter_values, on slices and counter events)
  map by position to the TrackEventDefaults lists of their sequence, onto counter tracks described since the last
  reset; at most 8 per event and no non-zero value after a zero (trace_processor keeps 8, and reads the values after
  an event's first 0 as 0);
- "xsp.span_id", where a slice leaves it out, is the id that continues its category's progression on its sequence
  since the last reset: last + (last - the one before), or last + 1 after one slice (export_perfetto.cc);
- with --expect-sqlite (the same run exported with `xsp trace export --format sqlite`): the span count per level,
  the summed durations, the number of flows and of hardware counter values equal what the store holds, the
  hardware counter values themselves (counter track name, timestamp, value) equal the store's (tag key, span start,
  value) for the numeric tags of its HARDWARE spans, and every
  span's name, duration, level, parent id and parent rule equal its row's, after the writer's implied values are
  filled in: "xsp.level" from the category (CATEGORY_LEVEL), "xsp.parent_id" from the enclosing slice on the
  track (its "xsp.span_id"; 0 at the top; for a cuda_driver slice directly in a cuda_runtime slice, that slice's
  parent), "xsp.parent_rule" "context" where the parent is so implied (the runtime slice's rule for such a driver
  slice), else "correlation" for device activities and "context" for the others; and so do every span's
  correlation id and tags (on HARDWARE spans less the counter values, compared as samples above).

With --max-bytes N (and --xsp, --store): the export is sharded (`xsp trace export --max-bytes N`); every shard must
pass the checks above on its own, there must be more than one, and together they must hold every span of the store
exactly once, each with its row's name, duration and level.

Usage:
  check_pftrace.py TRACE.pftrace... [--expect-sqlite RUN.sqlite]
  check_pftrace.py --xsp path/to/xsp --store FIXTURE.db [--evaluation 1]   # copies the store, exports, checks
  check_pftrace.py --xsp path/to/xsp --store FIXTURE.db --max-bytes 20000  # the same, sharded
Exit status: 0 all good, 1 a check failed, 77 protoc or google.protobuf is missing (CTest's SKIP_RETURN_CODE).
"""

import argparse
import collections
import importlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "fixtures", "perfetto", "xsp_pftrace_subset.proto")
SKIP = 77
METADATA_CATEGORY = "xsp_metadata"
# Tags of HARDWARE spans that are bookkeeping, not counter values (export_perfetto.cc is_counter_tag).
NON_COUNTER_TAGS = ("range_index", "device", "stream", "batch")
# The level a category implies when the event leaves "xsp.level" out (export_perfetto.cc implied_level).
CATEGORY_LEVEL = {"user_annotation": "model", "gpu_user_annotation": "framework", "cpu_op": "framework",
                  "cuda_runtime": "system", "cuda_driver": "system", "kernel": "kernel", "gpu_memcpy": "kernel",
                  "gpu_memset": "kernel", "cuda_profiler_range": "hardware"}

# Device activities: their slices leave out the tags REPEATED_KERNEL_TAGS that the previous slice of their category
# on their sequence had, and name in "xsp.unset" those of them they lack (export_perfetto.cc kRepeatedKernelTags).
KERNEL_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
REPEATED_KERNEL_TAGS = ("kind", "device", "context", "stream")
# A flow id's low 32 bits are its correlation id (export_perfetto.cc flow_id); a slice with a flow leaves out its
# "correlation" when they are.
FLOW_CORRELATION_MASK = 0xFFFFFFFF
MAX_EXTRA_COUNTERS = 8  # trace_processor's TrackEventData::kMaxNumExtraCounters
U64 = (1 << 64) - 1
SEQ_CLEARED = 1
SEQ_NEEDS_STATE = 2
TYPE_SLICE_BEGIN, TYPE_SLICE_END, TYPE_INSTANT, TYPE_COUNTER = 1, 2, 3, 4


class CheckFailed(Exception):
    pass


def compile_schema(tmp):
    protoc = shutil.which("protoc")
    if protoc is None:
        print("SKIP: protoc not found", file=sys.stderr)
        sys.exit(SKIP)
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        print("SKIP: python3 google.protobuf not installed", file=sys.stderr)
        sys.exit(SKIP)
    schema_dir = os.path.dirname(os.path.abspath(SCHEMA))
    subprocess.run([protoc, "-I" + schema_dir, "--python_out=" + tmp, os.path.basename(SCHEMA)], check=True)
    sys.path.insert(0, tmp)
    return importlib.import_module("xsp_pftrace_subset_pb2")


def read_varint(data, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise CheckFailed("truncated varint at byte %d" % pos)
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def raw_packets(data):
    """The bytes of each Trace.packet, so that a packet that does not parse is named by its position."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        if key != (1 << 3 | 2):
            raise CheckFailed("byte %d: field %d wire type %d where Trace.packet was expected"
                              % (pos, key >> 3, key & 7))
        size, pos = read_varint(data, pos)
        if pos + size > len(data):
            raise CheckFailed("packet at byte %d runs past the end of the file" % pos)
        yield data[pos:pos + size]
        pos += size


def unknown_fields(message):
    """Names of fields present on the wire that the subset does not declare (recursively)."""
    found = []
    try:
        if len(message.UnknownFields()):
            found.append(message.DESCRIPTOR.full_name)
    except (AttributeError, NotImplementedError):
        return found
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        values = value if field.label == field.LABEL_REPEATED else [value]
        for v in values:
            found.extend(unknown_fields(v))
    return found


def annotation_value(a, resolve):
    kind = a.WhichOneof("value")
    if kind == "string_value_iid":
        return resolve("values", a.string_value_iid).decode("utf-8")
    if kind is not None:
        return getattr(a, kind)
    return [v.int_value for v in a.array_values]


def check_file(pb, path):
    """Checks one .pftrace; returns what was counted, for the comparison with the store."""
    data = open(path, "rb").read()
    state = {}  # sequence id -> {"valid": bool, "names": {}, "categories": {}, "keys": {}}
    tracks = {}  # uuid -> TrackDescriptor
    events = collections.defaultdict(list)  # track uuid -> [(ts, order, kind, slice index)]
    slices = []  # dicts: name, category, level, start, end, args, flow_ids, terminating, track
    counter_values = 0
    samples = collections.Counter()  # (counter track name, ts, value)
    last_ts = 0
    primary_clock = None
    packets = 0
    for index, raw in enumerate(raw_packets(data)):
        packets += 1
        where = "%s packet %d" % (os.path.basename(path), index)
        try:
            packet = pb.TracePacket.FromString(raw)
        except Exception as e:  # DecodeError, or anything the parser raises on a malformed packet
            raise CheckFailed("%s does not parse: %s" % (where, e))
        unknown = unknown_fields(packet)
        if unknown:
            raise CheckFailed("%s has fields the subset schema does not declare, in %s" % (where, ", ".join(unknown)))
        if not packet.HasField("trusted_packet_sequence_id"):
            raise CheckFailed("%s has no trusted_packet_sequence_id" % where)
        seq = state.setdefault(packet.trusted_packet_sequence_id,
                               {"valid": False, "names": {}, "categories": {}, "keys": {}, "values": {},
                                "described": set(), "clocks": {}, "clock": None, "track": None, "int_uuids": [],
                                "double_uuids": [], "span_ids": {}, "kernel_tags": {}})
        if index == 0:
            if not packet.HasField("clock_snapshot") or not packet.clock_snapshot.HasField("primary_trace_clock"):
                raise CheckFailed("%s: the first packet is not a ClockSnapshot naming the trace clock" % where)
            primary_clock = packet.clock_snapshot.primary_trace_clock
        if packet.sequence_flags & SEQ_CLEARED:
            # A new generation starts without defaults (trace_processor's OnIncrementalStateCleared).
            seq.update(valid=True, names={}, categories={}, keys={}, values={}, described=set(), clock=None,
                       track=None, int_uuids=[], double_uuids=[], span_ids={}, kernel_tags={})
        if packet.HasField("trace_packet_defaults"):
            d = packet.trace_packet_defaults
            seq["clock"] = d.timestamp_clock_id if d.HasField("timestamp_clock_id") else None
            seq["track"] = (d.track_event_defaults.track_uuid
                            if d.track_event_defaults.HasField("track_uuid") else None)
            seq["int_uuids"] = list(d.track_event_defaults.extra_counter_track_uuids)
            seq["double_uuids"] = list(d.track_event_defaults.extra_double_counter_track_uuids)
        if packet.HasField("clock_snapshot"):
            clocks = {c.clock_id: c for c in packet.clock_snapshot.clocks}
            if primary_clock not in clocks:
                raise CheckFailed("%s: a ClockSnapshot without the trace clock %d" % (where, primary_clock))
            for c in clocks.values():
                if 64 <= c.clock_id < 128:
                    # Sequence-scoped: its value maps to the trace clock by this snapshot's offset; an incremental
                    # one restarts at the snapshot's value.
                    seq["clocks"][c.clock_id] = {"incremental": c.is_incremental, "last": c.timestamp,
                                                 "offset": clocks[primary_clock].timestamp - c.timestamp}
                elif c.is_incremental:
                    raise CheckFailed("%s: builtin clock %d marked incremental" % (where, c.clock_id))
        if packet.HasField("interned_data"):
            for table, entries in (("categories", packet.interned_data.event_categories),
                                   ("names", packet.interned_data.event_names),
                                   ("keys", packet.interned_data.debug_annotation_names),
                                   ("values", packet.interned_data.debug_annotation_string_values)):
                for e in entries:
                    if e.iid in seq[table]:
                        raise CheckFailed("%s interns %s iid %d twice in one generation" % (where, table, e.iid))
                    seq[table][e.iid] = e.str if table == "values" else e.name

        def resolve(table, iid):
            if not (packet.sequence_flags & SEQ_NEEDS_STATE) or not seq["valid"]:
                raise CheckFailed("%s uses an interned id without SEQ_NEEDS_INCREMENTAL_STATE after a reset" % where)
            if iid not in seq[table]:
                raise CheckFailed("%s: %s iid %d does not resolve" % (where, table, iid))
            return seq[table][iid]

        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            if d.uuid in tracks and tracks[d.uuid] != d:
                raise CheckFailed("%s describes track %d differently than before" % (where, d.uuid))
            if d.HasField("parent_uuid") and d.parent_uuid not in tracks:
                raise CheckFailed("%s: track %d's parent %d is not described before it" % (where, d.uuid,
                                                                                          d.parent_uuid))
            tracks[d.uuid] = d
            seq["described"].add(d.uuid)
        ts = None
        if packet.HasField("timestamp"):
            clock = seq["clock"] if seq["clock"] is not None else primary_clock
            if clock == primary_clock:
                ts = packet.timestamp
            elif clock in seq["clocks"]:
                c = seq["clocks"][clock]
                if c["incremental"]:
                    c["last"] += packet.timestamp
                    ts = c["last"] + c["offset"]
                else:
                    ts = packet.timestamp + c["offset"]
            else:
                raise CheckFailed("%s: timestamp on clock %d, which no ClockSnapshot of its sequence gave" % (
                    where, clock))
            if ts < last_ts:
                raise CheckFailed("%s: timestamp %d before the previous packet's %d" % (where, ts, last_ts))
            last_ts = ts
        if not packet.HasField("track_event"):
            continue
        e = packet.track_event
        if ts is None:
            raise CheckFailed("%s: track event without a timestamp" % where)
        track = e.track_uuid if e.HasField("track_uuid") else seq["track"]
        if track is None:
            raise CheckFailed("%s: event without a track_uuid and without a default track" % where)
        if track not in seq["described"]:
            # XSP re-sends descriptors after each reset: a reader that starts there still knows every track.
            raise CheckFailed("%s: event on track %d, not described since the last reset" % (where, track))
        is_counter_track = tracks[track].HasField("counter")
        if (e.type == TYPE_COUNTER) != is_counter_track:
            raise CheckFailed("%s: event type %d on %s track %d" % (where, e.type,
                                                                   "a counter" if is_counter_track else "a slice",
                                                                   track))
        # Extra counter values: by position onto the sequence's default lists, integers first.
        extras = []
        for values, uuids in ((e.extra_counter_values, seq["int_uuids"]), (e.extra_double_counter_values,
                                                                           seq["double_uuids"])):
            if len(values) > len(uuids):
                raise CheckFailed("%s: %d extra counter values for %d default tracks" % (where, len(values),
                                                                                        len(uuids)))
            for value, uuid in zip(values, uuids):
                if uuid not in seq["described"] or not tracks[uuid].HasField("counter"):
                    raise CheckFailed("%s: extra counter value on track %d, not a counter track described since "
                                      "the last reset" % (where, uuid))
                extras.append((uuid, value))
        if len(extras) > MAX_EXTRA_COUNTERS:
            raise CheckFailed("%s: %d extra counter values (trace_processor keeps %d)" % (where, len(extras),
                                                                                     MAX_EXTRA_COUNTERS))
        for k in range(1, len(extras)):
            if extras[k][1] != 0 and any(v == 0 for _, v in extras[:k]):
                raise CheckFailed("%s: a non-zero extra counter value after a zero (trace_processor reads it as 0)"
                                  % where)
        if e.type == TYPE_COUNTER:
            kind = e.WhichOneof("counter_value_field")
            if kind not in ("counter_value", "double_counter_value"):
                raise CheckFailed("%s: counter event without a value" % where)
            extras.insert(0, (track, getattr(e, kind)))
        for uuid, value in extras:
            samples[(tracks[uuid].name, ts, float(value))] += 1
        counter_values += len(extras)
        if e.type == TYPE_COUNTER:
            continue
        if e.type in (TYPE_SLICE_BEGIN, TYPE_INSTANT):
            args = {resolve("keys", a.name_iid): annotation_value(a, resolve) for a in e.debug_annotations}
            category = ",".join(resolve("categories", c) for c in e.category_iids)
            if e.type == TYPE_SLICE_BEGIN and category != METADATA_CATEGORY:
                # A left-out span id continues its category's ids on this sequence (see the docstring).
                run = seq["span_ids"].get(category)
                if "xsp.span_id" not in args:
                    if run is None:
                        raise CheckFailed("%s: the first %s slice of a generation without xsp.span_id" % (where,
                                                                                                      category))
                    args["xsp.span_id"] = (run[0] + run[1]) & U64
                span_id = args["xsp.span_id"] & U64
                seq["span_ids"][category] = (span_id, (span_id - run[0]) & U64 if run else 1)
            if e.type == TYPE_SLICE_BEGIN and category in KERNEL_CATEGORIES:
                # The repeated kernel tags it leaves out are the previous slice's of its category, less "xsp.unset".
                unset = args.pop("xsp.unset", "")
                unset = set(unset.split(",")) if unset else set()
                for key, value in seq["kernel_tags"].get(category, {}).items():
                    if key not in args and key not in unset:
                        args[key] = value
                seq["kernel_tags"][category] = {k: args[k] for k in REPEATED_KERNEL_TAGS if k in args}
            flow = (list(e.flow_ids) + list(e.terminating_flow_ids))[:1]
            if e.type == TYPE_SLICE_BEGIN and "correlation" not in args and flow:
                args["correlation"] = flow[0] & FLOW_CORRELATION_MASK
            s = {
                "name": resolve("names", e.name_iid),
                "category": category,
                "start": ts,
                "end": ts if e.type == TYPE_INSTANT else None,
                "args": args,
                "level": args.get("xsp.level", CATEGORY_LEVEL.get(category)),
                "flow_ids": list(e.flow_ids),
                "terminating": list(e.terminating_flow_ids),
                "track": track,
                "where": where,
            }
            slices.append(s)
            if e.type == TYPE_SLICE_BEGIN:
                events[track].append((ts, index, TYPE_SLICE_BEGIN, len(slices) - 1))
        elif e.type == TYPE_SLICE_END:
            events[track].append((ts, index, TYPE_SLICE_END, None))
        else:
            raise CheckFailed("%s: unexpected track event type %d" % (where, e.type))

    # Per track, as trace_processor orders them: by timestamp, ties in file order.
    for uuid, evs in events.items():
        evs.sort(key=lambda x: (x[0], x[1]))
        stack, last_end = [], None
        for ts, index, kind, si in evs:
            if kind == TYPE_SLICE_BEGIN:
                if stack and slices[stack[-1]]["start"] > ts:
                    raise CheckFailed("track %d: slice begins before its parent" % uuid)
                # Without "xsp.parent_id" the span's parent is the enclosing slice (trace_processor's parent_id), with
                # the rule "context"; a cuda_driver slice directly in a cuda_runtime slice has that slice's parent
                # and rule. With it, the rule is "correlation" for device activities, else "context".
                args = slices[si]["args"]
                enclosing = slices[stack[-1]]["args"].get("xsp.span_id", 0) if stack else 0
                rule_if_implied = "context"
                outer = slices[stack[-1]] if stack else None
                if outer and slices[si]["category"] == "cuda_driver" and outer["category"] == "cuda_runtime":
                    enclosing, rule_if_implied = outer["parent_id"], outer["parent_rule"]
                slices[si]["parent_id"] = args.get("xsp.parent_id", enclosing)
                if "xsp.parent_id" not in args:
                    implied_rule = rule_if_implied
                else:
                    implied_rule = "correlation" if slices[si]["category"] in KERNEL_CATEGORIES else "context"
                slices[si]["parent_rule"] = args.get("xsp.parent_rule", implied_rule)
                stack.append(si)
                continue
            if not stack:
                raise CheckFailed("track %d packet %d: END without an open slice" % (uuid, index))
            s = slices[stack.pop()]
            s["end"] = ts
            if last_end is not None and ts < last_end:
                raise CheckFailed("track %d packet %d: END at %d before an earlier END at %d" % (uuid, index, ts,
                                                                                                  last_end))
            last_end = ts
            if stack and slices[stack[-1]]["end"] is not None:
                raise CheckFailed("track %d: slices do not nest" % uuid)
        if stack:
            raise CheckFailed("track %d: %d slices never end (first: %s)" % (uuid, len(stack),
                                                                             slices[stack[0]]["where"]))

    # Flows: a launch (SYSTEM) starts each (its driver call may step it on), then every KERNEL-level slice of the same
    # correlation steps it on (one arrow each: launch -> kernel, or a graph replay's chain through its kernels).
    started = {}
    flows = 0
    for s in sorted(slices, key=lambda s: s["start"]):
        for f in s["flow_ids"] + s["terminating"]:
            launch = started.get(f)
            if launch is None:
                if s["level"] != "system":
                    raise CheckFailed("%s: flow %d starts at a %s slice" % (s["where"], f, s["level"]))
                started[f] = s
                continue
            if s["level"] not in ("system", "kernel"):
                raise CheckFailed("%s: flow %d steps on at a %s slice" % (s["where"], f, s["level"]))
            if launch["args"].get("correlation") != s["args"].get("correlation"):
                raise CheckFailed("%s: flow %d joins correlation %s to %s" % (
                    s["where"], f, launch["args"].get("correlation"), s["args"].get("correlation")))
            if s["level"] == "kernel":
                flows += 1
        for f in s["terminating"]:
            started.pop(f, None)

    spans = [s for s in slices if s["category"] != METADATA_CATEGORY]
    per_level = collections.Counter(s["level"] for s in spans)
    by_id = {}
    for s in spans:
        if "xsp.span_id" not in s["args"]:
            raise CheckFailed("%s: a span without xsp.span_id" % s["where"])
        tags = {k: v for k, v in s["args"].items() if not k.startswith("xsp.") and k != "correlation"}
        by_id[s["args"]["xsp.span_id"]] = (s["name"], s["end"] - s["start"], s["level"], s["parent_id"],
                                          s["parent_rule"], s["args"].get("correlation", 0),
                                          span_tags(tags, s["level"]))
    return {
        "by_id": by_id,
        "packets": packets,
        "bytes": len(data),
        "spans": len(spans),
        "per_level": dict(per_level),
        "duration_ns": sum(s["end"] - s["start"] for s in spans),
        "flows": flows,
        "counter_values": counter_values,
        "samples": samples,
        "tracks": len(tracks),
        "primary_clock": primary_clock,
    }


def span_tags(tags, level):
    """A span's tags, comparable between the .pftrace (annotations) and the store (the tags table): int lists as the
    store's text, and on HARDWARE spans without the counter values (on counter tracks, compared as samples)."""
    out = []
    for key, value in tags.items():
        if level == "hardware" and key not in NON_COUNTER_TAGS and isinstance(value, (int, float)):
            continue
        out.append((key, ",".join(str(v) for v in value) if isinstance(value, list) else value))
    return tuple(sorted(out))


def expected_from_sqlite(path):
    db = sqlite3.connect(path)
    spans, duration = db.execute("SELECT count(*), coalesce(sum(duration_ns), 0) FROM spans").fetchone()
    per_level = dict(db.execute("SELECT level, count(*) FROM spans GROUP BY level").fetchall())
    placeholders = ",".join("?" * len(NON_COUNTER_TAGS))
    counter_values = db.execute(
        "SELECT count(*) FROM tags JOIN spans ON spans.id = tags.span_id WHERE spans.level = 'hardware' AND "
        "typeof(tags.value) IN ('integer', 'real') AND tags.key NOT IN (%s)" % placeholders,
        NON_COUNTER_TAGS).fetchone()[0]
    # An arrow per KERNEL-level span whose correlation id was launched before it in the assembler's order (start,
    # then level): the writer steps the launch's flow on at every such span.
    flows = db.execute("""
        SELECT count(*) FROM spans k JOIN (
          SELECT correlation_id, min(start_ns) AS launch_ns FROM spans
          WHERE level = 'system' AND correlation_id IS NOT NULL AND correlation_id != 0 GROUP BY correlation_id) l
        ON k.correlation_id = l.correlation_id
        WHERE k.level = 'kernel' AND k.start_ns >= l.launch_ns""").fetchone()[0]
    samples = collections.Counter((key, start, float(value)) for key, start, value in db.execute(
        "SELECT tags.key, spans.start_ns, tags.value FROM tags JOIN spans ON spans.id = tags.span_id WHERE "
        "spans.level = 'hardware' AND typeof(tags.value) IN ('integer', 'real') AND tags.key NOT IN (%s)"
        % placeholders, NON_COUNTER_TAGS))
    tags = collections.defaultdict(dict)
    for span_id, key, value in db.execute("SELECT span_id, key, value FROM tags"):
        tags[span_id][key] = value
    by_id = {row[0]: tuple(row[1:]) + (span_tags(tags[row[0]], row[3]),) for row in db.execute(
        "SELECT id, name, duration_ns, level, coalesce(parent_id, 0), parent_rule, coalesce(correlation_id, 0) "
        "FROM spans")}
    return {"spans": spans, "duration_ns": duration, "per_level": per_level, "flows": flows,
            "counter_values": counter_values, "samples": samples, "by_id": by_id}


def compare(got, want, name):
    problems = []
    for key in ("spans", "duration_ns", "per_level", "flows", "counter_values"):
        if got[key] != want[key]:
            problems.append("%s: %s is %r in the .pftrace, %r in the store" % (name, key, got[key], want[key]))
    if got["samples"] != want["samples"]:
        extra, missing = got["samples"] - want["samples"], want["samples"] - got["samples"]
        problems.append("%s: hardware counter values differ from the store's: %d not in the store (e.g. %s), %d "
                        "missing (e.g. %s)" % (name, sum(extra.values()), list(extra)[:2], sum(missing.values()),
                                               list(missing)[:2]))
    if got["by_id"].keys() != want["by_id"].keys():
        problems.append("%s: span ids differ from the store's (%d in the .pftrace, %d in the store)" % (
            name, len(got["by_id"]), len(want["by_id"])))
    else:
        fields = ("name", "duration_ns", "level", "parent_id", "parent_rule", "correlation", "tags")
        differ = [(i, f, got["by_id"][i][k], want["by_id"][i][k]) for i in sorted(want["by_id"])
                  for k, f in enumerate(fields) if got["by_id"][i][k] != want["by_id"][i][k]]
        for i, f, g, w in differ[:10]:
            problems.append("%s: span %d's %s is %r in the .pftrace, %r in the store" % (name, i, f, g, w))
        if len(differ) > 10:
            problems.append("%s: ... %d differences in all" % (name, len(differ)))
    if problems:
        raise CheckFailed("\n".join(problems))


def check_shards(pb, tmp, args):
    """Exports each store sharded at args.max_bytes; 0 when every shard checks and the shards hold each span once."""
    failed = 0
    for store in args.store:
        base = os.path.splitext(os.path.basename(store))[0]
        copy = os.path.join(tmp, base + ".db")
        shutil.copyfile(store, copy)
        target, sqlite_path = os.path.join(tmp, base + ".pftrace"), os.path.join(tmp, base + ".sqlite")
        subprocess.run([args.xsp, "--store", copy, "trace", "export", args.evaluation, "--format", "perfetto",
                        "--max-bytes", str(args.max_bytes), "-o", target], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([args.xsp, "--store", copy, "trace", "export", args.evaluation, "--format", "sqlite", "-o",
                        sqlite_path], check=True, stdout=subprocess.DEVNULL)
        shards = sorted(f for f in os.listdir(tmp) if f.startswith(base + "-") and f.endswith(".pftrace"))
        want = expected_from_sqlite(sqlite_path)["by_id"]
        seen = collections.Counter()
        try:
            if len(shards) < 2:
                raise CheckFailed("%s: %d shard(s) at --max-bytes %d: nothing was split" % (base, len(shards),
                                                                                         args.max_bytes))
            for shard in shards:
                got = check_file(pb, os.path.join(tmp, shard))
                for span_id, row in got["by_id"].items():
                    name, dur, level = row[:3]
                    seen[span_id] += 1
                    if want.get(span_id, (None,))[:3] != (name, dur, level):
                        raise CheckFailed("%s: span %d is %r in the shard, %r in the store" % (
                            shard, span_id, (name, dur, level), want.get(span_id)))
            missing = want.keys() - seen.keys()
            twice = [i for i, n in seen.items() if n > 1]
            if missing or twice:
                raise CheckFailed("%s: %d spans in no shard, %d in several (e.g. %s)" % (
                    base, len(missing), len(twice), sorted(missing)[:3] + twice[:3]))
        except CheckFailed as e:
            failed += 1
            print("FAIL %s\n%s" % (base, e), file=sys.stderr)
            continue
        print("ok %s: %d shards hold its %d spans once each" % (base, len(shards), len(want)))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*", help=".pftrace files")
    ap.add_argument("--expect-sqlite", help="the same run exported with --format sqlite: counts to compare")
    ap.add_argument("--xsp", help="the xsp binary: export --store's evaluation to .pftrace and sqlite, then check")
    ap.add_argument("--store", action="append", default=[], help="a store (copied first: opening migrates it)")
    ap.add_argument("--evaluation", default="1")
    ap.add_argument("--max-bytes", type=int, help="shard the export at this many bytes and check the shards together")
    args = ap.parse_args()
    if not args.traces and not (args.xsp and args.store):
        ap.error("give .pftrace files, or --xsp and --store")

    with tempfile.TemporaryDirectory(prefix="xsp-pftrace-") as tmp:
        pb = compile_schema(tmp)
        jobs = [(t, args.expect_sqlite) for t in args.traces]
        if args.max_bytes:
            return check_shards(pb, tmp, args)
        for store in args.store:
            base = os.path.splitext(os.path.basename(store))[0]
            copy = os.path.join(tmp, base + ".db")
            shutil.copyfile(store, copy)
            out = {}
            for fmt, ext in (("perfetto", ".pftrace"), ("sqlite", ".sqlite")):
                out[fmt] = os.path.join(tmp, base + ext)
                subprocess.run([args.xsp, "--store", copy, "trace", "export", args.evaluation, "--format", fmt, "-o",
                                out[fmt]], check=True, stdout=subprocess.DEVNULL)
            jobs.append((out["perfetto"], out["sqlite"]))
        failed = 0
        for trace, sqlite_path in jobs:
            name = os.path.basename(trace)
            try:
                got = check_file(pb, trace)
                if sqlite_path:
                    compare(got, expected_from_sqlite(sqlite_path), name)
            except CheckFailed as e:
                failed += 1
                print("FAIL %s\n%s" % (name, e), file=sys.stderr)
                continue
            print("ok %s: %d packets, %d spans (%s), %d flows, %d counter values, %d tracks, %.1f bytes/span" % (
                name, got["packets"], got["spans"], ", ".join("%s %d" % kv for kv in sorted(got["per_level"].items(),
                                                                                          key=str)),
                got["flows"], got["counter_values"], got["tracks"], got["bytes"] / max(got["spans"], 1)))
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
