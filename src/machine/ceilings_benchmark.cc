#include "xsp/profilers/ceilings_benchmark.h"

#include <ctime>

#include "ceilings_kernels.h"
#include "xsp/util/time.h"

namespace xsp {

bool have_ceilings_benchmark() { return true; }

MachineCeilings measure_machine_ceilings(const CeilingOptions& options) {
  RawCeilingOptions raw_options;
  raw_options.device = options.device;
  raw_options.repetitions = options.repetitions;
  const RawCeilings raw = run_ceiling_benchmarks(raw_options);
  MachineCeilings out;
  out.hostname = raw.hostname;
  out.gpu_name = raw.gpu_name;
  out.gpu_uuid = raw.gpu_uuid;
  out.measured_at = util::utc_now_iso8601();
  out.clocks_note = "clocks as found (XSP never changes them)";
  for (const auto& c : raw.ceilings) out.ceilings.push_back({c.name, c.value, c.unit, c.method});
  return out;
}

}  // namespace xsp
