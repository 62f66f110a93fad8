// Look-ups on an evaluation's runs (SPEC §3: which run each level's latencies come from).
#include "xsp/record/record.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>

namespace xsp {

namespace {

// std::random_device reads the kernel's entropy (getrandom) on Linux: ids from two processes never follow one
// seed, which a PRNG seeded from the clock could.
std::array<std::uint8_t, 16> random_bytes() {
  std::random_device rd;
  std::array<std::uint8_t, 16> out{};
  for (std::size_t i = 0; i < out.size(); i += 4) {
    const std::uint32_t v = rd();
    for (std::size_t k = 0; k < 4; ++k) out[i + k] = static_cast<std::uint8_t>(v >> (8 * k));
  }
  return out;
}

std::string hex(const std::uint8_t* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 0xF];
  }
  return out;
}

}  // namespace

std::string random_trace_id() {
  for (;;) {
    const auto b = random_bytes();
    // The W3C Trace Context forbids the all-zero id ("invalid").
    for (std::uint8_t x : b) {
      if (x != 0) return hex(b.data(), b.size());
    }
  }
}

std::string random_uuid() {
  auto b = random_bytes();
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return hex(&b[0], 4) + "-" + hex(&b[4], 2) + "-" + hex(&b[6], 2) + "-" + hex(&b[8], 2) + "-" + hex(&b[10], 6);
}

const char* run_name(TraceLevel level) {
  switch (level) {
    case TraceLevel::kModel:
      return "M";
    case TraceLevel::kFramework:
      return "M/F";
    case TraceLevel::kLibrary:
      return "M/F/L";
    case TraceLevel::kSystem:
      return "M/F/S";
    case TraceLevel::kKernel:
      return "M/F/K";
    case TraceLevel::kHardware:
      return "M/F/H";
  }
  return "?";
}

const RunRecord* EvaluationRecord::find_run(int batch_size, TraceLevel level) const {
  for (const RunRecord& run : runs) {
    if (run.batch_size == batch_size && run.trace_level == level) return &run;
  }
  return nullptr;
}

const RunRecord* EvaluationRecord::run_for_level(int batch_size, Level level) const {
  // Leveled experimentation: a level's latencies are trustworthy only in the run that adds no profiler
  // deeper than that level, because deeper profilers inflate every enclosing span. Among the runs that
  // record `level`, the one with the shallowest deepest level is therefore the least perturbed one; when
  // it is exactly `level` that is the M / M/F / M/F/K run of SPEC §3, otherwise (non-leveled evaluation)
  // it is the only run that has the level at all.
  const RunRecord* best = nullptr;
  for (const RunRecord& run : runs) {
    if (run.batch_size != batch_size || !enables(run.trace_level, level)) continue;
    if (best == nullptr ||
        static_cast<int>(deepest_level(run.trace_level)) < static_cast<int>(deepest_level(best->trace_level))) {
      best = &run;
    }
  }
  return best;
}

std::string_view to_string(RecordKind kind) {
  switch (kind) {
    case RecordKind::kBatchSweep:
      return "batch-sweep";
    case RecordKind::kScenario:
      return "scenario";
    case RecordKind::kGeneration:
      return "generation";
    case RecordKind::kExternal:
      return "external";
    case RecordKind::kServing:
      return "serving";
  }
  return "batch-sweep";
}

RecordKind record_kind(std::string_view scenario) {
  if (scenario.empty() || scenario == "batch-sweep") return RecordKind::kBatchSweep;
  for (std::string_view s : {"single-stream", "multi-stream", "server", "offline"})
    if (scenario == s) return RecordKind::kScenario;
  if (scenario == "generation") return RecordKind::kGeneration;
  if (scenario == "external") return RecordKind::kExternal;
  if (scenario == "serving") return RecordKind::kServing;
  for (std::string_view s : {"single-stream", "server", "offline"})
    if (scenario == "generation-" + std::string(s)) return RecordKind::kGeneration;
  throw std::invalid_argument("record scenario '" + std::string(scenario) +
                              "': expected batch-sweep, single-stream, multi-stream, server, offline, generation, "
                              "generation-single-stream|server|offline, external or serving");
}

}  // namespace xsp
