// Trace assembler (SPEC §2, "Parents"): gives every span its parent by context, correlation id or interval
// containment on the same thread, and counts the spans no rule places.
#pragma once

#include "xsp/trace/trace.h"

namespace xsp {

/// Assembles `trace` in place and returns (and stores in trace.assembly) what each rule placed.
///
/// Rules, in order:
///  (a) context: a span whose parent_id is already set (by the profiler) keeps it, if that id exists in the
///      trace; a dangling id is counted in dangling_parent_ids and the span is re-placed by (b)/(c).
///  (b) correlation: a span with correlation_id != 0 and no parent gets as parent the span of the
///      shallowest level (smaller Level value) that carries the same correlation_id, if that level is
///      shallower than its own. Never by time.
///  (c) containment: otherwise, on the same thread_id, the innermost span of a strictly shallower level
///      whose interval contains it (start <= s.start && s.end <= end, inclusive). "Innermost" = the latest
///      start; ties broken by the deeper level, then by the shorter interval, then by the smaller id.
///  APPLICATION spans with no parent are roots. Any other span left without a parent is kept and counted in
///  `unparented`.
/// Spans are sorted by (start_ns, level, -end_ns, id) afterwards so exporters and analyses see a stable order.
/// Complexity O(n log n + n·d) for n spans and nesting depth d. Never throws on malformed input; spans
/// with end_ns < start_ns are clamped to zero length and counted in trace.counters["assembler.negative_duration"].
AssemblyReport assemble(Trace& trace);

}  // namespace xsp
