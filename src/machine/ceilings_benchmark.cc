#include "xsp/profilers/ceilings_benchmark.h"

#include <ctime>

#include "ceilings_kernels.h"

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
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  out.measured_at = buf;
  out.clocks_note = "clocks as found (XSP never changes them)";
  for (const auto& c : raw.ceilings) out.ceilings.push_back({c.name, c.value, c.unit, c.method});
  return out;
}

}  // namespace xsp
