// Helpers shared by the analysis sources; not part of the public API.
#pragma once

#include <vector>

#include "xsp/record/record.h"

namespace xsp::detail {

/// Measured batch sizes, ascending and unique: the evaluation's list, or the runs' when that list is empty.
std::vector<int> measured_batch_sizes(const EvaluationRecord& record);

}  // namespace xsp::detail
