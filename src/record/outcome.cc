// JSON of the workloads' typed outcomes (xsp/record/outcome.h): the store's outcome columns and the REST API.
#include "xsp/record/outcome.h"

#include <cmath>
#include <stdexcept>

#include "xsp/record/record.h"

namespace xsp {
namespace {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// Reads keys of one JSON object, naming the object and key in its errors.
class Reader {
 public:
  Reader(const nlohmann::json& j, std::string what) : j_(j), what_(std::move(what)) {
    if (!j_.is_object()) fail("", "an object", j_);
  }
  [[noreturn]] void fail(const std::string& key, const std::string& expected, const nlohmann::json& got) const {
    throw std::invalid_argument(what_ + (key.empty() ? "" : ": " + key) + ": expected " + expected + ", got " +
                                got.dump());
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  void require(const std::string& key) const {
    if (!has(key)) throw std::invalid_argument(what_ + ": missing key \"" + key + "\"");
  }
  const nlohmann::json& at(const std::string& key) const { return j_.at(key); }
  // null is a figure that does not exist (NaN); a missing key keeps `fallback`.
  double num(const std::string& key, double fallback = kNoValue) const {
    if (!has(key)) return fallback;
    const auto& v = j_[key];
    if (v.is_null()) return kNoValue;
    if (!v.is_number()) fail(key, "a number or null", v);
    return v.get<double>();
  }
  std::int64_t integer(const std::string& key, std::int64_t fallback = 0) const {
    if (!has(key)) return fallback;
    const auto& v = j_[key];
    if (!v.is_number_integer()) fail(key, "an integer", v);
    return v.get<std::int64_t>();
  }
  std::uint64_t uinteger(const std::string& key) const {
    if (!has(key)) return 0;
    const auto& v = j_[key];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      fail(key, "an integer >= 0", v);
    return v.get<std::uint64_t>();
  }
  bool boolean(const std::string& key, bool fallback = false) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) fail(key, "true or false", j_[key]);
    return j_[key].get<bool>();
  }
  std::string text(const std::string& key, const std::string& fallback = "") const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) fail(key, "a string", j_[key]);
    return j_[key].get<std::string>();
  }
  std::vector<std::int64_t> integers(const std::string& key) const {
    std::vector<std::int64_t> out;
    if (!has(key)) return out;
    if (!j_[key].is_array()) fail(key, "an array of integers", j_[key]);
    for (const auto& v : j_[key]) {
      if (!v.is_number_integer()) fail(key, "an array of integers", j_[key]);
      out.push_back(v.get<std::int64_t>());
    }
    return out;
  }
  std::vector<double> nums(const std::string& key) const {
    std::vector<double> out;
    if (!has(key)) return out;
    if (!j_[key].is_array()) fail(key, "an array of numbers", j_[key]);
    for (const auto& v : j_[key]) {
      if (v.is_null())
        out.push_back(kNoValue);
      else if (v.is_number())
        out.push_back(v.get<double>());
      else
        fail(key, "an array of numbers", j_[key]);
    }
    return out;
  }
  LatencySummary summary(const std::string& key) const {
    require(key);
    try {
      return latency_summary_from_json(j_[key]);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(what_ + ": " + key + ": " + e.what());
    }
  }

 private:
  const nlohmann::json& j_;
  std::string what_;
};

nlohmann::json to_json(const TokenLatencyCheck& c) {
  nlohmann::json j = {{"samples", c.samples},
                      {"percentile", c.percentile},
                      {"estimate_ns", number_or_null(c.estimate_ns)},
                      {"enough_samples", c.enough_samples},
                      {"min_samples", c.min_samples}};
  if (c.bound_ns) j["bound_ns"] = *c.bound_ns;
  if (c.meets_bound) j["meets_bound"] = *c.meets_bound;
  return j;
}

TokenLatencyCheck token_check_from_json(const nlohmann::json& j, const std::string& what) {
  const Reader r(j, what);
  TokenLatencyCheck c;
  c.samples = r.integer("samples");
  c.percentile = r.num("percentile", 90);
  c.estimate_ns = r.num("estimate_ns");
  c.enough_samples = r.boolean("enough_samples");
  c.min_samples = r.integer("min_samples");
  if (r.has("bound_ns")) c.bound_ns = r.num("bound_ns");
  if (r.has("meets_bound")) c.meets_bound = r.boolean("meets_bound");
  return c;
}

nlohmann::json to_json(const GenerationLoadgenView& v) {
  return {{"scenario", v.scenario},
          {"queries", v.queries},
          {"ttft_p50_ns", number_or_null(v.ttft_p50_ns)},
          {"latency_p50_ns", number_or_null(v.latency_p50_ns)},
          {"mean_issue_delay_ns", number_or_null(v.mean_issue_delay_ns)},
          {"harness_ns_per_query", number_or_null(v.harness_ns_per_query)}};
}

GenerationLoadgenView loadgen_view_from_json(const nlohmann::json& j, const std::string& what) {
  const Reader r(j, what);
  GenerationLoadgenView v;
  v.scenario = r.text("scenario");
  v.queries = r.integer("queries");
  v.ttft_p50_ns = r.num("ttft_p50_ns");
  v.latency_p50_ns = r.num("latency_p50_ns");
  v.mean_issue_delay_ns = r.num("mean_issue_delay_ns");
  v.harness_ns_per_query = r.num("harness_ns_per_query");
  return v;
}

nlohmann::json to_json(const GenerationTailStep& s) {
  return {{"kind", s.kind},
          {"rank", s.rank},
          {"request", s.request},
          {"step", s.step},
          {"latency_ns", number_or_null(s.latency_ns)},
          {"percentile", number_or_null(s.percentile)},
          {"span_id", s.span_id},
          {"full_trace", s.full_trace}};
}

GenerationTailStep tail_step_from_json(const nlohmann::json& j, const std::string& what) {
  const Reader r(j, what);
  GenerationTailStep s;
  s.kind = r.text("kind");
  s.rank = r.integer("rank");
  s.request = r.integer("request");
  s.step = r.integer("step");
  s.latency_ns = r.num("latency_ns");
  s.percentile = r.num("percentile");
  s.span_id = r.uinteger("span_id");
  s.full_trace = r.boolean("full_trace");
  return s;
}

}  // namespace

LatencySummary latency_summary_from_json(const nlohmann::json& j) {
  const Reader r(j, "latency summary");
  r.require("n");
  LatencySummary s;
  s.n = static_cast<std::size_t>(r.uinteger("n"));
  s.trimmed_mean = r.num("trimmed_mean");
  s.mean = r.num("mean");
  s.stddev = r.num("stddev");
  s.min = r.num("min");
  s.max = r.num("max");
  s.p50 = r.num("p50");
  s.p90 = r.num("p90");
  s.p95 = r.num("p95");
  s.p99 = r.num("p99");
  s.p999 = r.num("p999");
  return s;
}

nlohmann::json to_json(const TailTraceSelection& s) {
  auto kept = nlohmann::json::array();
  for (const auto& k : s.kept)
    kept.push_back({{"query", k.query},
                    {"latency_ns", k.latency_ns},
                    {"rank", k.rank},
                    {"percentile", k.percentile},
                    {"kind", k.kind},
                    {"spans", k.spans}});
  nlohmann::json j = {{"kept", std::move(kept)},
                      {"traced_queries", s.traced_queries},
                      {"dropped_query_traces", s.dropped_query_traces},
                      {"dropped_spans", s.dropped_spans}};
  if (!s.trace_level.empty()) j["trace_level"] = s.trace_level;
  return j;
}

TailTraceSelection tail_trace_selection_from_json(const nlohmann::json& j) {
  const Reader r(j, "tail_traces");
  TailTraceSelection s;
  if (r.has("kept")) {
    if (!r.at("kept").is_array()) r.fail("kept", "an array", r.at("kept"));
    for (const auto& k : r.at("kept")) {
      const Reader q(k, "tail_traces: kept");
      KeptQuery kq;
      kq.query = q.uinteger("query");
      kq.latency_ns = q.integer("latency_ns");
      kq.rank = q.uinteger("rank");
      kq.percentile = q.num("percentile", 0);
      kq.kind = q.text("kind");
      kq.spans = static_cast<std::size_t>(q.uinteger("spans"));
      s.kept.push_back(std::move(kq));
    }
  }
  s.traced_queries = r.uinteger("traced_queries");
  s.dropped_query_traces = r.uinteger("dropped_query_traces");
  s.dropped_spans = r.uinteger("dropped_spans");
  s.trace_level = r.text("trace_level");
  return s;
}

nlohmann::json to_json(const ScenarioOutcome& o) {
  nlohmann::json j = {{"scenario", o.scenario},
                      {"percentile", o.percentile},
                      {"query_count", o.query_count},
                      {"sample_count", o.sample_count},
                      {"duration_ns", o.duration_ns},
                      {"target_latency_ns", number_or_null(o.target_latency_ns)},
                      {"qps_with_overhead", number_or_null(o.qps_with_overhead)},
                      {"qps_without_overhead", number_or_null(o.qps_without_overhead)},
                      {"samples_per_second", number_or_null(o.samples_per_second)},
                      {"harness_ns_total", o.harness_ns_total},
                      {"harness_ns_per_query", number_or_null(o.harness_ns_per_query)},
                      {"mean_issue_delay_ns", number_or_null(o.mean_issue_delay_ns)},
                      {"overlatency_count", o.overlatency_count},
                      {"early_stopping_latency_ns", number_or_null(o.early_stopping_latency_ns)},
                      {"early_stopping_percentile", number_or_null(o.early_stopping_percentile)},
                      {"target_qps", o.target_qps},
                      {"latency_bound_ns", o.latency_bound_ns},
                      {"meets_bound", o.meets_bound},
                      {"p50_ns", number_or_null(o.p50_ns)},
                      {"p99_ns", number_or_null(o.p99_ns)},
                      {"batch_latency",
                       {{"batches", o.batches},
                        {"p50_ns", number_or_null(o.batch_p50_ns)},
                        {"p99_ns", number_or_null(o.batch_p99_ns)},
                        {"trimmed_mean_ns", number_or_null(o.batch_trimmed_mean_ns)}}}};
  if (o.tail_traces) j["tail_traces"] = to_json(*o.tail_traces);
  return j;
}

ScenarioOutcome scenario_outcome_from_json(const nlohmann::json& j) {
  const Reader r(j, "scenario result");
  r.require("scenario");
  r.require("query_count");
  ScenarioOutcome o;
  o.scenario = r.text("scenario");
  o.percentile = r.num("percentile", 90);
  o.query_count = r.integer("query_count");
  o.sample_count = r.integer("sample_count");
  o.duration_ns = r.integer("duration_ns");
  o.target_latency_ns = r.num("target_latency_ns");
  o.qps_with_overhead = r.num("qps_with_overhead");
  o.qps_without_overhead = r.num("qps_without_overhead");
  o.samples_per_second = r.num("samples_per_second");
  o.harness_ns_total = r.integer("harness_ns_total");
  o.harness_ns_per_query = r.num("harness_ns_per_query");
  o.mean_issue_delay_ns = r.num("mean_issue_delay_ns");
  o.overlatency_count = r.integer("overlatency_count");
  o.early_stopping_latency_ns = r.num("early_stopping_latency_ns");
  o.early_stopping_percentile = r.num("early_stopping_percentile");
  o.target_qps = r.num("target_qps", 0);
  o.latency_bound_ns = r.integer("latency_bound_ns");
  o.meets_bound = r.boolean("meets_bound");
  o.p50_ns = r.num("p50_ns");
  o.p99_ns = r.num("p99_ns");
  if (r.has("batch_latency")) {
    const Reader b(r.at("batch_latency"), "scenario result: batch_latency");
    o.batches = b.integer("batches");
    o.batch_p50_ns = b.num("p50_ns");
    o.batch_p99_ns = b.num("p99_ns");
    o.batch_trimmed_mean_ns = b.num("trimmed_mean_ns");
  }
  if (r.has("tail_traces")) {
    try {
      o.tail_traces = tail_trace_selection_from_json(r.at("tail_traces"));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("scenario result: ") + e.what());
    }
  }
  return o;
}

nlohmann::json to_json(const GenerationOutcome& o) {
  nlohmann::json j = {{"requests", o.requests},
                      {"sequences", o.sequences},
                      {"sequences_per_request", o.sequences_per_request},
                      {"prompt_tokens", o.prompt_tokens},
                      {"output_tokens", o.output_tokens},
                      {"input_tokens", o.input_tokens},
                      {"output_tokens_total", o.output_tokens_total},
                      {"ttft_ns", to_json(o.ttft_ns)},
                      {"tpot_ns", to_json(o.tpot_ns)},
                      {"itl_ns", to_json(o.itl_ns)},
                      {"e2e_ns", to_json(o.e2e_ns)},
                      {"duration_ns", o.duration_ns},
                      {"input_tokens_per_s", number_or_null(o.input_tokens_per_s)},
                      {"output_tokens_per_s", number_or_null(o.output_tokens_per_s)},
                      {"requests_per_s", number_or_null(o.requests_per_s)},
                      {"single_token_requests", o.single_token_requests},
                      {"ttft_stability", std::string(to_string(o.ttft_stability))},
                      {"tpot_stability", std::string(to_string(o.tpot_stability))},
                      {"kv_cache_bytes", o.kv_cache_bytes},
                      {"ttft_values_ns", numbers_or_null(o.ttft_values_ns)},
                      {"tpot_values_ns", numbers_or_null(o.tpot_values_ns)},
                      {"timings_used", o.timings_used}};
  if (o.ttft_check || o.tpot_check) {
    j["early_stopping"] = nlohmann::json::object();
    if (o.ttft_check) j["early_stopping"]["ttft"] = to_json(*o.ttft_check);
    if (o.tpot_check) j["early_stopping"]["tpot"] = to_json(*o.tpot_check);
  }
  if (o.valid) {
    j["valid"] = *o.valid;
    j["invalid_reason"] = o.invalid_reason;
  }
  if (o.loadgen) j["loadgen"] = to_json(*o.loadgen);
  auto tail = nlohmann::json::array();
  for (const auto& s : o.tail) tail.push_back(to_json(s));
  j["tail"] = std::move(tail);
  if (!o.counter_replay.empty()) j["counter_replay"] = o.counter_replay;
  if (!o.counters_unavailable.empty()) j["counters_unavailable"] = o.counters_unavailable;
  return j;
}

GenerationOutcome generation_outcome_from_json(const nlohmann::json& j) {
  const Reader r(j, "generation result");
  r.require("requests");
  GenerationOutcome o;
  o.requests = r.integer("requests");
  o.sequences = r.integer("sequences", o.requests);
  o.sequences_per_request = r.integer("sequences_per_request", 1);
  o.prompt_tokens = r.integers("prompt_tokens");
  o.output_tokens = r.integers("output_tokens");
  o.input_tokens = r.integer("input_tokens");
  o.output_tokens_total = r.integer("output_tokens_total");
  o.ttft_ns = r.summary("ttft_ns");
  o.tpot_ns = r.summary("tpot_ns");
  if (r.has("itl_ns")) o.itl_ns = r.summary("itl_ns");
  if (r.has("e2e_ns")) o.e2e_ns = r.summary("e2e_ns");
  o.duration_ns = r.integer("duration_ns");
  o.input_tokens_per_s = r.num("input_tokens_per_s");
  o.output_tokens_per_s = r.num("output_tokens_per_s");
  o.requests_per_s = r.num("requests_per_s");
  o.single_token_requests = r.integer("single_token_requests");
  for (auto [key, field] : {std::pair{"ttft_stability", &o.ttft_stability}, {"tpot_stability", &o.tpot_stability}}) {
    const std::string text = r.text(key, "not_assessed");
    const auto v = parse_verdict(text);
    if (!v) r.fail(key, "stable, unstable or not_assessed", r.at(key));
    *field = *v;
  }
  o.kv_cache_bytes = r.integer("kv_cache_bytes");
  o.ttft_values_ns = r.nums("ttft_values_ns");
  o.tpot_values_ns = r.nums("tpot_values_ns");
  if (r.has("early_stopping")) {
    const Reader es(r.at("early_stopping"), "generation result: early_stopping");
    if (es.has("ttft")) o.ttft_check = token_check_from_json(es.at("ttft"), "generation result: early_stopping: ttft");
    if (es.has("tpot")) o.tpot_check = token_check_from_json(es.at("tpot"), "generation result: early_stopping: tpot");
  }
  if (r.has("valid")) {
    o.valid = r.boolean("valid");
    o.invalid_reason = r.text("invalid_reason");
  }
  if (r.has("loadgen")) o.loadgen = loadgen_view_from_json(r.at("loadgen"), "generation result: loadgen");
  if (r.has("tail")) {
    if (!r.at("tail").is_array()) r.fail("tail", "an array", r.at("tail"));
    for (const auto& s : r.at("tail")) o.tail.push_back(tail_step_from_json(s, "generation result: tail"));
  }
  o.timings_used = r.boolean("timings_used", true);
  o.counter_replay = r.text("counter_replay");
  o.counters_unavailable = r.text("counters_unavailable");
  return o;
}

// NaN is a figure that does not exist: two outcomes that both lack it are equal, which == on doubles denies. The JSON
// forms compare NaN as null.
bool ScenarioOutcome::operator==(const ScenarioOutcome& o) const { return to_json(*this) == to_json(o); }
bool TokenLatencyCheck::operator==(const TokenLatencyCheck& o) const { return to_json(*this) == to_json(o); }
bool GenerationLoadgenView::operator==(const GenerationLoadgenView& o) const { return to_json(*this) == to_json(o); }
bool GenerationOutcome::operator==(const GenerationOutcome& o) const { return to_json(*this) == to_json(o); }

}  // namespace xsp
