// Every metric of xsp/profilers/hardware_counters.h exists on the GPUs XSP is verified on, checked with CUPTI's
// Profiler Host API, which needs no GPU: a renamed or mistyped metric fails here, not in a counter run.
#include <cupti_profiler_host.h>
#include <gtest/gtest.h>

#include <string>

#include "xsp/profilers/hardware_counters.h"

namespace {

class HostObject {
 public:
  explicit HostObject(const char* chip) {
    CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip;
    result_ = cuptiProfilerHostInitialize(&p);
    host_ = p.pHostObject;
  }
  ~HostObject() {
    if (host_ == nullptr) return;
    CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    p.pHostObject = host_;
    cuptiProfilerHostDeinitialize(&p);
  }
  CUptiResult result() const { return result_; }
  CUpti_Profiler_Host_Object* get() const { return host_; }

 private:
  CUptiResult result_ = CUPTI_SUCCESS;
  CUpti_Profiler_Host_Object* host_ = nullptr;
};

TEST(MetricNames, EveryCounterMetricExistsOnHopper) {
  HostObject host("GH100");  // H100 and H200
  ASSERT_EQ(host.result(), CUPTI_SUCCESS);
  for (const auto& metric : xsp::hw::metric_names()) {
    CUpti_Profiler_Host_GetMetricProperties_Params p{CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
    p.pHostObject = host.get();
    p.pMetricName = metric.c_str();
    EXPECT_EQ(cuptiProfilerHostGetMetricProperties(&p), CUPTI_SUCCESS) << metric;
  }
}

TEST(MetricNames, UnitsMatchTheCounterNames) {
  HostObject host("GH100");
  ASSERT_EQ(host.result(), CUPTI_SUCCESS);
  for (const auto& def : xsp::hw::counter_defs()) {
    const std::string name(def.name);
    for (const auto& term : def.terms) {
      CUpti_Profiler_Host_GetMetricProperties_Params p{CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
      p.pHostObject = host.get();
      const std::string metric(term.metric);
      p.pMetricName = metric.c_str();
      ASSERT_EQ(cuptiProfilerHostGetMetricProperties(&p), CUPTI_SUCCESS) << metric;
      const std::string unit = p.pDimUnit != nullptr ? p.pDimUnit : "";
      if (name.ends_with("_bytes")) EXPECT_EQ(unit, "byte") << name << ": " << metric;
      if (name.ends_with("_percent")) EXPECT_EQ(unit, "percent") << name << ": " << metric;
      if (name.ends_with("_ns")) EXPECT_EQ(unit, "nanosecond") << name << ": " << metric;
      if (name.starts_with("tensor_")) EXPECT_EQ(unit, "math_op") << name << ": " << metric;
      if (name.ends_with("_flops") && !name.starts_with("tensor_")) EXPECT_EQ(unit, "instruction") << metric;
    }
  }
}

}  // namespace
