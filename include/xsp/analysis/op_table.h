// The op table (analysis "ops"), in the style of torch.profiler's key_averages().table(): self and total time per op
// over every FRAMEWORK span of the measured batches, nested ops included (A6 only sees the top-level ones), with
// calls and averages, and, when the evaluation has a KERNEL-level run, the device time of the kernels each op
// launched (docs/ops.md).
//
// Definitions (per FRAMEWORK span under a sample span, detail::is_sample_span(): a MODEL "predict" span):
//  - total (inclusive) time of a call: the span's duration;
//  - self time of a call: its duration minus the union of the intervals of its direct FRAMEWORK children on the same
//    track (clipped to the call; children on other threads ran beside it, not inside it), at least 0. Over one
//    batch the self times of all ops sum to the time covered by the top-level ops;
//  - an op's total sums the inclusive time of every call, as torch does: an op that calls itself (directly or through
//    others) counts the nested call's time twice in its total; self time never counts twice. Grouped by module, a
//    module's total sums only its outermost calls (those whose parent op has another module), since the ops nested
//    in a layer carry the layer's module;
//  - self CUDA time: the durations of the KERNEL spans (kernels, memcpy, memset) whose nearest FRAMEWORK ancestor is
//    the call; CUDA total: those below the call at any depth (counted once per enclosing call, like total).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "xsp/analysis/table.h"
#include "xsp/record/record.h"

namespace xsp {

/// How the op table groups calls into rows.
enum class OpGroupBy {
  kName,    ///< "name": one row per op name ("aten::conv2d")
  kShapes,  ///< "shapes": one row per (op name, "shapes" tag); needs spans that carry the tag
  kModule,  ///< "module": one row per "module" tag (TorchScript module path); ops without it: "(no module)"
};
/// The order of the op table's rows, largest first (ties by op name, then shapes).
enum class OpSort {
  kSelf,      ///< "self": self time
  kTotal,     ///< "total": total (inclusive) time
  kCalls,     ///< "calls": calls per batch
  kAvg,       ///< "avg": average self time per call
  kSelfCuda,  ///< "self_cuda": self CUDA time (kernel time of the op's own kernels)
};

/// "name" | "shapes" | "module"; std::nullopt for anything else.
std::optional<OpGroupBy> parse_op_group_by(std::string_view text);
/// "self" | "total" | "calls" | "avg" | "self_cuda"; std::nullopt for anything else.
std::optional<OpSort> parse_op_sort(std::string_view text);
std::string_view to_string(OpGroupBy group_by);
std::string_view to_string(OpSort sort);
/// The valid values, for error messages and help texts: "name, shapes, module" and "self, total, calls, avg,
/// self_cuda".
inline constexpr const char* kOpGroupByValues = "name, shapes, module";
inline constexpr const char* kOpSortValues = "self, total, calls, avg, self_cuda";

/// What the op table shows (AnalysisOptions::op_group_by, op_top, op_sort parsed).
struct OpTableOptions {
  OpGroupBy group_by = OpGroupBy::kName;
  /// 0: every row; N > 0: the first N rows in sort order, the rest summed into one row "(other K ops)".
  std::size_t top = 0;
  OpSort sort = OpSort::kSelf;
};

/// The op table of `batch_size` (table id "ops", columns of its registry entry; one row per group):
///  - host columns from run_for_level(batch_size, Level::kFramework) (the M/F run): calls (per batch, mean over
///    the measured batches), self_ms and total_ms (trimmed mean over the batches of the group's per-batch sum;
///    a batch without the op counts 0), avg_self_us and avg_total_us (all batches' time / all batches' calls),
///    self_percent (100 × self_ms / the sum of self_ms over every group, i.e. of the framework time);
///  - device columns from run_for_level(batch_size, Level::kKernel) (the M/F/K run) when there is one: self_cuda_ms,
///    cuda_total_ms (trimmed means as above) and kernels (the op's own kernels per batch, mean);
/// sorted by options.sort, then cut by options.top (the rest summed into "(other K ops)", "(other K modules)" when
/// grouped by module). Without an M/F run: no rows and the note kNoFrameworkRun.
/// Throws std::invalid_argument when options.group_by is kShapes and no FRAMEWORK span of the run has a "shapes"
/// tag (the message names `xsp analyze --group-by` and the other values).
Table op_table(const EvaluationRecord& record, int batch_size, const OpTableOptions& options = {});

class AnalysisContext;  // analyses.h
/// The registry's function of "ops": op_table() of context.record() with the context's options (op_group_by,
/// op_top, op_sort). Throws as op_table().
Table op_table(AnalysisContext& context, int batch_size);

}  // namespace xsp
