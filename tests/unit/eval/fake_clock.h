// A clock that only moves when told: the fake predictors of these tests advance it by the latency they
// inject, so every decision of the measurement (warm-up, block size, stopping) is reproducible.
#pragma once

#include <cstdint>

#include "xsp/eval/measurement.h"

namespace xsp::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::int64_t start_ns = 1'000'000'000) : now_(start_ns) {}
  std::int64_t now_ns() const override { return now_; }
  void advance(double ns) { now_ += static_cast<std::int64_t>(ns); }

 private:
  std::int64_t now_;
};

}  // namespace xsp::testing
