// The Perfetto trace protobuf (.pftrace), written as a stream of TracePacket messages (docs/exports.md
// "Perfetto protobuf (.pftrace)"). No Perfetto SDK and no libprotobuf: the wire format is protobuf's (varints,
// length-delimited and fixed64 fields) written by hand. Every message and field it writes is declared, with the
// upstream Perfetto file it comes from, in XSP's own schema tests/fixtures/perfetto/xsp_pftrace_subset.proto, which
// the tests compile to parse what the writer wrote.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "xsp/trace/export.h"
#include "xsp/trace/trace.h"

namespace xsp {

/// Knobs of a .pftrace stream.
struct PerfettoOptions {
  /// Every this many packets of a sequence the writer clears its incremental state (SEQ_INCREMENTAL_STATE_CLEARED,
  /// interned names re-sent), so that a reader that lost a chunk of the file loses at most this many packets.
  std::size_t reset_interval_packets = 4096;
  /// trusted_packet_sequence_id of the file's first packet sequence; the writer uses one sequence per track with
  /// events, numbered sequence_id, sequence_id + 1, ... in order of first use.
  std::uint32_t sequence_id = 1;
  /// Protobuf strings must be UTF-8. true: bytes of names, tag keys and string values that are not UTF-8 become
  /// U+FFFD and are counted (invalid_utf8_replaced(), and the counter "perfetto.invalid_utf8_replaced" of the final
  /// "xsp.counters" event); false: add() throws std::invalid_argument naming the span.
  bool replace_invalid_utf8 = true;
  /// Launches (SYSTEM spans with a correlation id) whose flow their device activities step on are remembered up to
  /// this many, oldest forgotten first: most runtime calls launch nothing, and memory must not grow with them.
  std::size_t max_pending_flows = 65536;
};

/// Perfetto process id of GPU d: kPerfettoGpuPidBase + d. Host processes keep their pid (kChromeHostPid for the
/// recording process of a one-process trace), all below 2^22, so no GPU shares a pid with a host process.
inline constexpr std::uint32_t kPerfettoGpuPidBase = kChromeHostPid + (1u << 20);

/// Writes one trace as a .pftrace stream, span by span, with memory bounded by the open spans (the nesting depth per
/// track), the tracks, the interning tables (distinct names, categories, annotation keys and string values of up to
/// 64 bytes; cleared at every reset) and PerfettoOptions::max_pending_flows, never by the span count. The file is a
/// valid `perfetto.protos.Trace`, its packets in non-decreasing timestamp order.
///
/// What it writes (Perfetto's TrackEvent model):
/// - one packet sequence per track with events, whose TrackEventDefaults.track_uuid is that track, so its events
///   leave track_uuid out;
/// - first a ClockSnapshot that makes the host clock (ClockInfo::host_clock, CLOCK_MONOTONIC ns) the trace's clock,
///   with CLOCK_REALTIME beside it (host + unix_offset_ns). Event timestamps are on clock 64
///   (TracePacketDefaults.timestamp_clock_id), sequence-scoped and incremental: each is the delta in ns from the
///   previous one of its sequence, from an anchor that a ClockSnapshot (clock 64 = the host clock at the latest
///   timestamp written) sets when the sequence starts and at each of its resets. GPU spans are on the host clock too,
///   as XSP already maps them;
/// - an instant "xsp.resource" (category "xsp_metadata") on the recording process carrying the resource and clock as
///   debug annotations, and at finish() an instant "xsp.counters" with the counters given to add_counters();
/// - a TrackDescriptor, before its first event (and again after each reset), per host process (ProcessDescriptor:
///   the TraceProcess's pid and command line, or kChromeHostPid named "<service> on <host>"), per host thread
///   (ThreadDescriptor, "thread <tid>"), per GPU (a process "GPU d: <device name>", pid kPerfettoGpuPidBase + d) and
///   per GPU stream (a track "stream s" under its GPU), as the Chrome export names them;
/// - per span a TrackEvent TYPE_SLICE_BEGIN and TYPE_SLICE_END on its track, with interned name and Kineto category
///   (as the Chrome export's "cat") and typed debug annotations: its tags (ints, doubles, strings, int lists as
///   arrays; HARDWARE counter values go to counter tracks instead), "correlation" (the correlation id) unless the
///   slice has a flow whose low 32 bits hold it (see flows), "xsp.span_id" unless the id continues its category's
///   ids on its sequence (since the sequence's last reset: the previous slice's id of that category + its step from
///   the one before, modulo 2^64, or + 1 after the category's first slice; a reader rebuilds it the same way), and
///   "xsp.level", "xsp.parent_id", "xsp.parent_rule" unless the event already says them: the level the category
///   implies (user_annotation: model, gpu_user_annotation and cpu_op: framework, cuda_*: system,
///   kernel/gpu_memcpy/gpu_memset: kernel, cuda_profiler_range: hardware), the parent that encloses the slice on its
///   track (or 0 with none) with the rule "context" (for a cuda_driver slice directly inside a cuda_runtime slice:
///   that slice's parent and rule), and with a parent written, the rule "correlation" for device activities
///   (kernel/gpu_memcpy/gpu_memset), "context" for the others. A device activity leaves out its "kind", "device",
///   "context" and "stream" tags where the previous slice of its category on its sequence (since the last reset) had
///   the same (type and value); the keys that slice had and this span lacks are listed, comma-separated, in a string
///   annotation "xsp.unset".
///   Slices on one track nest strictly: a span that overlaps an open one without nesting in it goes to a sibling
///   track "<track> (overlap N)" under the same process;
/// - flows: flow_ids on every SYSTEM span with a correlation id (a launch; runtime and driver calls of one launch
///   chain) and on every KERNEL-level span (kernel, memcpy, memset) with the same correlation id and process after
///   it: an arrow from a launch to its kernel, and for a CUDA graph's replay a chain from the cudaGraphLaunch through
///   its kernels in time order (never terminated: a replay's last kernel is not known while streaming). A flow id is
///   (process position + 1) << 32 | correlation id (process 0 with one process), so that processes of one trace never
///   share one and a reader takes the correlation id from its low 32 bits; a correlation id of more than 32 bits is
///   mixed with the process instead (splitmix64) and written as "correlation";
/// - counters: a counter track (CounterDescriptor) per (GPU, tag) for the numeric tags of HARDWARE-level spans, on
///   the span's GPU (its stream's, its "device" tag, or the run's only GPU; else its process), with a value at the
///   span's start: integral values (integer tags, reals without a fraction up to 2^53) as integers, others as
///   doubles. They ride on the slice's BEGIN as extra counter values (TrackEvent.extra_counter_values /
///   extra_double_counter_values), whose tracks are, by position, the sequence's TrackEventDefaults lists
///   (extra_counter_track_uuids / extra_double_counter_track_uuids, written again, on the packet that needs it,
///   whenever an event's tracks are not the lists' first entries). trace_processor takes at most 8 extra values per
///   event and reads those after an event's first 0 as 0, so the BEGIN carries up to 8 non-zero values and the rest
///   go on TYPE_COUNTER events at the same time on a second sequence of the track (its own value, plus extra values
///   with any zeros after the others and only in an event without doubles). The span's slice repeats the values as
///   annotations only when another HARDWARE span put one on the same counter track at the same ns.
/// Every PerfettoOptions::reset_interval_packets packets of a sequence its incremental state is cleared
/// (SEQ_INCREMENTAL_STATE_CLEARED, interning restarted); packets that use interned ids or the defaults carry
/// SEQ_NEEDS_INCREMENTAL_STATE.
class PerfettoWriter {
 public:
  /// `processes`: Trace::processes (may be empty); `clock`: the trace's clock (its unix_offset_ns goes into the
  /// clock snapshot). Nothing is written until the first add() or finish().
  PerfettoWriter(std::ostream& out, const TraceResource& resource, const ClockInfo& clock,
                 std::vector<TraceProcess> processes = {}, PerfettoOptions options = {});
  ~PerfettoWriter();
  PerfettoWriter(const PerfettoWriter&) = delete;
  PerfettoWriter& operator=(const PerfettoWriter&) = delete;

  /// Appends one span. Spans must come in the assembler's order, start_ns ascending (put_in_order: start, then level,
  /// then longer first); throws std::invalid_argument naming the span id when a span starts before the previous one,
  /// when its end precedes its start, when it starts before 0 ns (Perfetto timestamps are unsigned), or (with
  /// replace_invalid_utf8 off) when a string of it is not UTF-8. A rejected span writes nothing. Writes nothing
  /// either once `out` has failed (the failure stays in its state for the caller). add() after finish() throws
  /// std::logic_error.
  void add(const Span& span);
  /// Adds `counters` (the trace's "nothing is silent" counters, Trace::counters) to those written at finish() as the
  /// debug annotations of an instant "xsp.counters"; counters of the same name are summed.
  void add_counters(const std::map<std::string, std::uint64_t>& counters);
  /// The assembly report as counters for add_counters(): "assembly.by_context", "assembly.by_correlation",
  /// "assembly.by_containment", "assembly.roots", "assembly.unparented", "assembly.dangling_parent_ids" (span counts).
  static std::map<std::string, std::uint64_t> assembly_counters(const AssemblyReport& assembly);
  /// Ends every open slice (at its own end time), writes the "xsp.counters" instant at the latest timestamp written,
  /// and flushes. Call once; add() or finish() after it throws std::logic_error.
  void finish();

  /// Bytes written to `out` so far (the sharded export cuts files on this).
  std::uint64_t bytes_written() const;
  /// Spans add()ed so far.
  std::uint64_t spans_written() const;
  /// Strings whose non-UTF-8 bytes were replaced by U+FFFD so far.
  std::uint64_t invalid_utf8_replaced() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes a whole in-memory trace with a PerfettoWriter: its spans in put_in_order order (sorted by an index when they
/// are not; the trace is not changed), its counters and assembly report ("assembly.by_context", ...) as the
/// "xsp.counters" instant. Stops early once `out` fails and leaves the failure in its state; throws what
/// PerfettoWriter::add throws for a bad span (end before start, non-UTF-8 with replace_invalid_utf8 off).
void write_perfetto_trace(std::ostream& out, const Trace& trace, const TraceResource& resource,
                          const PerfettoOptions& options = {});

}  // namespace xsp
