#include "xsp/serve/serving.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "xsp/analysis/serving_join.h"

namespace xsp::serve {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double per_s(double count, std::int64_t duration_ns) {
  return duration_ns > 0 ? count / (static_cast<double>(duration_ns) * 1e-9) : kNaN;
}

// JSON has no NaN or infinity: null for NaN, the string "inf" for infinity.
nlohmann::json num(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double read_num(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return kNaN;
  if (it->is_string()) {
    if (*it == "inf") return std::numeric_limits<double>::infinity();
    if (*it == "-inf") return -std::numeric_limits<double>::infinity();
  }
  if (!it->is_number()) throw std::invalid_argument(std::string("serving summary: '") + key + "' is not a number");
  return it->get<double>();
}

nlohmann::json dist_json(const LatencySummary& s) {
  return {{"n", s.n},
          {"mean", num(s.mean)},
          {"median", num(s.p50)},
          {"std", num(s.stddev)},
          {"min", num(s.min)},
          {"p90", num(s.p90)},
          {"p95", num(s.p95)},
          {"p99", num(s.p99)},
          {"p999", num(s.p999)},
          {"max", num(s.max)},
          {"trimmed_mean", num(s.trimmed_mean)}};
}

LatencySummary dist_from_json(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_object())
    throw std::invalid_argument(std::string("serving summary: '") + key + "' missing");
  const nlohmann::json& d = j[key];
  LatencySummary s;
  s.n = d.value("n", std::size_t{0});
  s.mean = read_num(d, "mean");
  s.p50 = read_num(d, "median");
  s.stddev = read_num(d, "std");
  s.min = read_num(d, "min");
  s.p90 = read_num(d, "p90");
  s.p95 = read_num(d, "p95");
  s.p99 = read_num(d, "p99");
  s.p999 = read_num(d, "p999");
  s.max = read_num(d, "max");
  s.trimmed_mean = read_num(d, "trimmed_mean");
  return s;
}

nlohmann::json stability_json(const StabilityAssessment& a) {
  return {{"verdict", to_string(a.verdict)},
          {"samples", a.samples},
          {"spread_fraction", num(a.spread_fraction)},
          {"drift_fraction", num(a.drift_fraction)}};
}

nlohmann::json check_json(const loadgen::TokenMetricCheck& c) {
  return {{"samples", c.samples},         {"bound_ns", num(c.bound_ns)},        {"estimate_ns", num(c.estimate_ns)},
          {"min_samples", c.min_samples}, {"enough_samples", c.enough_samples}, {"meets_bound", c.meets_bound}};
}

}  // namespace

ServingSummary summarize(const ClientRun& run, const ServingBounds& bounds, const StabilityRule& rule) {
  for (const auto& b : {bounds.ttft_ns, bounds.tpot_ns})
    if (b && !(*b > 0)) throw std::invalid_argument("a latency bound must be > 0, got " + std::to_string(*b));
  if (!(bounds.percentile > 0 && bounds.percentile < 100))
    throw std::invalid_argument("percentile " + std::to_string(bounds.percentile) + ": expected in (0, 100)");
  if (!(bounds.confidence > 0 && bounds.confidence < 1))
    throw std::invalid_argument("confidence " + std::to_string(bounds.confidence) + ": expected in (0, 1)");
  ServingSummary s;
  s.requests = run.requests.size();
  std::vector<double> queue, ttft, tpot, itl, e2e;
  std::vector<loadgen::GeneratedRequest> for_check;
  std::vector<std::pair<std::int64_t, int>> edges;  // (time, +1 sent / −1 done) for the client's concurrency
  for (const RequestResult& r : run.requests) {
    if (r.sent_ns > 0) {
      edges.emplace_back(r.sent_ns, +1);
      edges.emplace_back(std::max(r.done_ns, r.sent_ns), -1);
    }
    if (!r.ok) {
      ++s.failed;
      const std::string reason = r.reason.empty() ? "unknown" : r.reason;
      ++s.failures[reason];
      s.failure_examples.emplace(reason, r.error);
      continue;
    }
    ++s.completed;
    const double q = static_cast<double>(r.sent_ns - r.arrival_ns);
    queue.push_back(q);
    const double t = static_cast<double>(r.token_ns.front() - r.sent_ns);
    const double e = static_cast<double>(r.token_ns.back() - r.sent_ns);
    ttft.push_back(t);
    e2e.push_back(e);
    double tp = kNaN;
    if (r.output_tokens >= 2) {
      tp = (e - t) / static_cast<double>(r.output_tokens - 1);
      tpot.push_back(tp);
    }
    for (std::size_t i = 1; i < r.token_ns.size(); ++i)
      itl.push_back(static_cast<double>(r.token_ns[i] - r.token_ns[i - 1]));
    s.output_tokens += r.output_tokens;
    if (r.prompt_tokens >= 0) s.input_tokens += r.prompt_tokens;
    if (!r.usage_reported) ++s.requests_without_usage;
    const bool good =
        (!bounds.ttft_ns || t <= *bounds.ttft_ns) && (!bounds.tpot_ns || std::isnan(tp) || tp <= *bounds.tpot_ns);
    if (good) ++s.good_requests;
    // LoadGen's check reads a request as its token times: first and last chunk with the usage count between them
    // give its TPOT the serving definition ((last − first) / (tokens − 1)).
    loadgen::GeneratedRequest g;
    g.issued_ns = std::min(r.sent_ns, r.token_ns.front());  // never after its first token, whatever a clock did
    const std::int64_t n = std::max<std::int64_t>(1, r.output_tokens);
    g.token_ns.resize(static_cast<std::size_t>(n), r.token_ns.front());
    if (n >= 2) g.token_ns.back() = r.token_ns.back();
    for_check.push_back(std::move(g));
  }
  std::sort(edges.begin(), edges.end());
  std::int64_t open = 0;
  for (const auto& [time, step] : edges) s.max_in_flight = std::max(s.max_in_flight, open += step);
  s.duration_ns = run.end_ns - run.start_ns;
  s.requests_per_s = per_s(static_cast<double>(s.completed), s.duration_ns);
  s.offered_requests_per_s = per_s(static_cast<double>(s.requests), run.issue_window_ns);
  s.input_tokens_per_s = per_s(static_cast<double>(s.input_tokens), s.duration_ns);
  s.output_tokens_per_s = per_s(static_cast<double>(s.output_tokens), s.duration_ns);
  s.total_tokens_per_s = per_s(static_cast<double>(s.input_tokens + s.output_tokens), s.duration_ns);
  s.goodput_per_s = bounds.any() ? per_s(static_cast<double>(s.good_requests), s.duration_ns) : kNaN;
  s.queue_ns = xsp::summarize(queue);
  s.ttft_ns = xsp::summarize(ttft);
  s.tpot_ns = xsp::summarize(tpot);
  s.itl_ns = xsp::summarize(itl);
  s.e2e_ns = xsp::summarize(e2e);
  s.client_read_delay_ns = xsp::summarize(std::vector<double>(run.read_delay_ns.begin(), run.read_delay_ns.end()));
  s.ttft_stability = assess_series(ttft, rule);
  s.tpot_stability = assess_series(tpot, rule);
  if (bounds.ttft_ns && bounds.tpot_ns)
    s.verdict = loadgen::check_token_latencies(for_check, {*bounds.ttft_ns, *bounds.tpot_ns, bounds.percentile},
                                               bounds.confidence);
  return s;
}

nlohmann::json to_json(const ServingSummary& s) {
  nlohmann::json j = {{"requests", s.requests},
                      {"completed", s.completed},
                      {"failed", s.failed},
                      {"failures", s.failures},
                      {"failure_examples", s.failure_examples},
                      {"duration_ns", s.duration_ns},
                      {"input_tokens", s.input_tokens},
                      {"output_tokens", s.output_tokens},
                      {"requests_without_usage", s.requests_without_usage},
                      {"offered_requests_per_s", num(s.offered_requests_per_s)},
                      {"requests_per_s", num(s.requests_per_s)},
                      {"input_tokens_per_s", num(s.input_tokens_per_s)},
                      {"output_tokens_per_s", num(s.output_tokens_per_s)},
                      {"total_tokens_per_s", num(s.total_tokens_per_s)},
                      {"queue_ns", dist_json(s.queue_ns)},
                      {"ttft_ns", dist_json(s.ttft_ns)},
                      {"tpot_ns", dist_json(s.tpot_ns)},
                      {"itl_ns", dist_json(s.itl_ns)},
                      {"e2e_ns", dist_json(s.e2e_ns)},
                      {"good_requests", s.good_requests},
                      {"goodput_per_s", num(s.goodput_per_s)},
                      {"ttft_stability", stability_json(s.ttft_stability)},
                      {"tpot_stability", stability_json(s.tpot_stability)},
                      {"max_in_flight", s.max_in_flight},
                      {"client_read_delay_ns", dist_json(s.client_read_delay_ns)}};
  if (s.verdict)
    j["verdict"] = {{"valid", s.verdict->valid},
                    {"reason", s.verdict->reason},
                    {"ttft", check_json(s.verdict->ttft)},
                    {"tpot", check_json(s.verdict->tpot)}};
  else
    j["verdict"] = nullptr;
  return j;
}

ServingSummary summary_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("serving summary: not an object");
  ServingSummary s;
  try {
    s.requests = j.at("requests").get<std::uint64_t>();
    s.completed = j.at("completed").get<std::uint64_t>();
    s.failed = j.at("failed").get<std::uint64_t>();
    s.failures = j.at("failures").get<std::map<std::string, std::uint64_t>>();
    s.failure_examples = j.value("failure_examples", std::map<std::string, std::string>{});
    s.duration_ns = j.at("duration_ns").get<std::int64_t>();
    s.input_tokens = j.at("input_tokens").get<std::int64_t>();
    s.output_tokens = j.at("output_tokens").get<std::int64_t>();
    s.requests_without_usage = j.value("requests_without_usage", std::uint64_t{0});
    s.good_requests = j.value("good_requests", std::uint64_t{0});
    s.max_in_flight = j.value("max_in_flight", std::int64_t{0});
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("serving summary: ") + e.what());
  }
  s.requests_per_s = read_num(j, "requests_per_s");
  s.offered_requests_per_s = read_num(j, "offered_requests_per_s");
  s.input_tokens_per_s = read_num(j, "input_tokens_per_s");
  s.output_tokens_per_s = read_num(j, "output_tokens_per_s");
  s.total_tokens_per_s = read_num(j, "total_tokens_per_s");
  s.goodput_per_s = read_num(j, "goodput_per_s");
  s.queue_ns = dist_from_json(j, "queue_ns");
  s.ttft_ns = dist_from_json(j, "ttft_ns");
  s.tpot_ns = dist_from_json(j, "tpot_ns");
  s.itl_ns = dist_from_json(j, "itl_ns");
  s.e2e_ns = dist_from_json(j, "e2e_ns");
  if (j.contains("client_read_delay_ns")) s.client_read_delay_ns = dist_from_json(j, "client_read_delay_ns");
  if (const auto v = j.find("verdict"); v != j.end() && v->is_object()) {
    loadgen::TokenLatencyVerdict verdict;
    verdict.valid = v->value("valid", false);
    verdict.reason = v->value("reason", "");
    auto check = [](const nlohmann::json& c) {
      loadgen::TokenMetricCheck m;
      m.samples = c.value("samples", std::size_t{0});
      m.bound_ns = read_num(c, "bound_ns");
      m.estimate_ns = read_num(c, "estimate_ns");
      m.min_samples = c.value("min_samples", std::uint64_t{0});
      m.enough_samples = c.value("enough_samples", false);
      m.meets_bound = c.value("meets_bound", false);
      return m;
    };
    verdict.ttft = check(v->value("ttft", nlohmann::json::object()));
    verdict.tpot = check(v->value("tpot", nlohmann::json::object()));
    s.verdict = verdict;
  }
  return s;
}

Sweep parse_sweep(const std::string& text) {
  const std::size_t eq = text.find('=');
  const std::string expected =
      ": expected request-rate=R1,R2,... (rates > 0 or inf) or max-concurrency=C1,C2,... (whole numbers >= 1)";
  if (eq == std::string::npos) throw std::invalid_argument("--sweep " + text + expected);
  Sweep s;
  s.parameter = text.substr(0, eq);
  if (s.parameter != "request-rate" && s.parameter != "max-concurrency")
    throw std::invalid_argument("--sweep " + text + ": unknown parameter '" + s.parameter + "'" + expected);
  std::stringstream items(text.substr(eq + 1));
  for (std::string item; std::getline(items, item, ',');) {
    double v = 0;
    std::size_t used = 0;
    try {
      v = item == "inf" ? std::numeric_limits<double>::infinity() : std::stod(item, &used);
      if (item == "inf") used = item.size();
    } catch (const std::exception&) {
      used = 0;
    }
    const bool whole = std::isfinite(v) && v == std::floor(v);
    if (item.empty() || used != item.size() || !(v > 0) || std::isnan(v) ||
        (s.parameter == "max-concurrency" && (!whole || v < 1)))
      throw std::invalid_argument("--sweep " + text + ": value '" + item + "'" + expected);
    s.values.push_back(v);
  }
  if (s.values.empty()) throw std::invalid_argument("--sweep " + text + ": no values" + expected);
  return s;
}

std::optional<std::string> saturation(const Sweep& sweep, double value, const ServingSummary& current,
                                      const ServingSummary* previous) {
  std::ostringstream os;
  os << std::setprecision(3);
  if (sweep.parameter == "request-rate") {
    if (std::isinf(value) || std::isnan(current.requests_per_s) || std::isnan(current.offered_requests_per_s))
      return std::nullopt;
    if (current.requests_per_s < 0.9 * current.offered_requests_per_s) {
      os << "saturated at request-rate " << value << ": achieved " << current.requests_per_s
         << " requests/s, below 90% of the " << current.offered_requests_per_s
         << " offered (rule: achieved < 0.9 x offered)";
      return os.str();
    }
    return std::nullopt;
  }
  if (previous == nullptr || std::isnan(previous->output_tokens_per_s) || std::isnan(current.output_tokens_per_s))
    return std::nullopt;
  if (current.output_tokens_per_s <= 1.05 * previous->output_tokens_per_s) {
    os << "saturated at max-concurrency " << value << ": output " << current.output_tokens_per_s
       << " tokens/s, not more than 5% over the previous point's " << previous->output_tokens_per_s
       << " (rule: throughput rising <= 5%)";
    return os.str();
  }
  return std::nullopt;
}

EvaluationRecord serving_record(const ServingStudy& study) {
  if (study.points.empty()) throw std::invalid_argument("serving_record: no points");
  const ClientOptions& o = study.points.front().options;
  EvaluationRecord r;
  r.model_name = o.model;
  r.framework_name = "openai-api";
  r.device = "remote";
  r.scenario = "serving";
  r.trace_level = TraceLevel::kModel;
  nlohmann::json requests = nlohmann::json::array();
  nlohmann::json summaries = nlohmann::json::array();
  bool estimated = false;
  for (std::size_t p = 0; p < study.points.size(); ++p) {
    const ServingPoint& point = study.points[p];
    for (const RequestResult& q : point.run.requests) {
      estimated = estimated || (q.ok && !q.usage_reported);
      requests.push_back({{"request_id", q.request_id},
                          {"arrival_ns", q.arrival_ns},
                          {"sent_ns", q.sent_ns},
                          {"token_ns", q.token_ns},
                          {"output_tokens", q.output_tokens},
                          {"ok", q.ok},
                          {"error", q.error},
                          {"point", p},
                          {"prompt_index", q.prompt_index},
                          {"prompt_tokens", q.prompt_tokens},
                          {"usage_reported", q.usage_reported},
                          {"requested_output_tokens", q.requested_output_tokens},
                          {"reason", q.reason},
                          {"http_status", q.http_status},
                          {"trace_id", q.trace_id},
                          {"done_ns", q.done_ns},
                          {"scheduled_offset_ns", q.arrival_ns - point.run.start_ns}});
    }
    nlohmann::json s = to_json(point.summary);
    s["point"] = p;
    s["parameter"] = point.parameter;
    s["value"] = num(point.value);
    s["offered_request_rate"] = num(point.options.request_rate);
    s["burstiness"] = point.options.burstiness;
    s["max_concurrency"] = point.options.max_concurrency;
    s["start_ns"] = point.run.start_ns;
    s["end_ns"] = point.run.end_ns;
    s["interrupted"] = point.run.interrupted;
    summaries.push_back(std::move(s));
  }
  nlohmann::json bounds = {{"ttft_ns", study.bounds.ttft_ns ? num(*study.bounds.ttft_ns) : nlohmann::json(nullptr)},
                           {"tpot_ns", study.bounds.tpot_ns ? num(*study.bounds.tpot_ns) : nlohmann::json(nullptr)},
                           {"percentile", study.bounds.percentile},
                           {"confidence", study.bounds.confidence}};
  nlohmann::json sweep = nullptr;
  if (study.sweep) {
    nlohmann::json values = nlohmann::json::array();
    for (double v : study.sweep->values) values.push_back(num(v));
    sweep = {{"parameter", study.sweep->parameter},
             {"values", values},
             {"points_run", study.points.size()},
             {"stopped_by", study.stopped_by}};
  }
  r.settings["serving"] = {
      {"version", 1},
      {"options",
       {{"url", o.url},
        {"model", o.model},
        {"endpoint", to_string(o.endpoint)},
        {"output_tokens", o.output_tokens},
        {"fixed_output_length", o.fixed_output_length},
        {"request_rate", num(o.request_rate)},
        {"burstiness", o.burstiness},
        {"max_concurrency", o.max_concurrency},
        {"num_requests", o.num_requests},
        {"duration_ns", o.duration_ns},
        {"request_timeout_ns", o.request_timeout_ns},
        {"seed", o.seed}}},
      {"client", study.points.front().run.client},
      {"bounds", bounds},
      {"prompts", study.prompts},
      {"sweep", sweep},
      {"output_tokens_estimated", estimated},
      {"server_pid", study.server_pid ? nlohmann::json(*study.server_pid) : nlohmann::json(nullptr)},
      {"summary", summaries},
      {"requests", requests}};
  return r;
}

namespace {

Cell ms(double ns) { return std::isnan(ns) ? Cell{} : Cell{ns / 1e6}; }
Cell real(double v) { return std::isnan(v) ? Cell{} : Cell{v}; }

std::string point_label(const nlohmann::json& s) {
  const std::string parameter = s.value("parameter", "");
  const nlohmann::json& v = s.contains("value") ? s["value"] : nlohmann::json(nullptr);
  if (parameter.empty()) return "run";
  std::ostringstream os;
  os << parameter << "=";
  if (v.is_number())
    os << v.get<double>();
  else if (v.is_string())
    os << v.get<std::string>();
  return os.str();
}

}  // namespace

std::vector<RequestFigures> request_figures(const EvaluationRecord& record) {
  const auto serving = record.settings.find("serving");
  if (serving == record.settings.end() || !serving->is_object() || !serving->contains("requests"))
    throw std::invalid_argument("evaluation " + std::to_string(record.id) + ": no settings.serving.requests");
  const std::vector<ClientRequestTimes> rows = client_requests_from_json((*serving)["requests"]);
  std::vector<RequestFigures> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ClientRequestTimes& r = rows[i];
    if (!r.ok) continue;
    if (r.token_ns.empty())
      throw std::invalid_argument("evaluation " + std::to_string(record.id) + ": settings.serving.requests[" +
                                  std::to_string(i) + "]: a successful request without token_ns");
    RequestFigures f;
    f.point = r.point;
    f.ttft_ns = static_cast<double>(r.token_ns.front() - r.sent_ns);
    f.e2e_ns = static_cast<double>(r.token_ns.back() - r.sent_ns);
    f.tpot_ns = r.output_tokens >= 2 ? (f.e2e_ns - f.ttft_ns) / static_cast<double>(r.output_tokens - 1) : kNaN;
    for (std::size_t k = 1; k < r.token_ns.size(); ++k)
      f.itl_ns.push_back(static_cast<double>(r.token_ns[k] - r.token_ns[k - 1]));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Table> serving_tables(const EvaluationRecord& record) {
  const nlohmann::json* serving = nullptr;
  if (const auto it = record.settings.find("serving"); it != record.settings.end() && it->is_object()) serving = &*it;
  if (serving == nullptr || !serving->contains("summary") || !(*serving)["summary"].is_array())
    throw std::invalid_argument("evaluation " + std::to_string(record.id) + ": no settings.serving.summary");
  Table s1{"S1", "Serving summary", {}, {}, {}, -1, std::nullopt, ""};
  s1.columns = {{"point", "point"},
                {"requests", "requests"},
                {"completed", "ok"},
                {"failed", "failed"},
                {"duration_s", "duration s"},
                {"requests_per_s", "req/s"},
                {"input_tokens_per_s", "in tok/s"},
                {"output_tokens_per_s", "out tok/s"},
                {"goodput_per_s", "goodput/s"},
                {"ttft_p50_ms", "TTFT p50 ms"},
                {"ttft_p99_ms", "TTFT p99 ms"},
                {"tpot_p50_ms", "TPOT p50 ms"},
                {"tpot_p99_ms", "TPOT p99 ms"},
                {"itl_p99_ms", "ITL p99 ms"},
                {"e2e_p99_ms", "E2E p99 ms"},
                {"queue_p50_ms", "queue p50 ms"},
                {"verdict", "bounds (early stopping)", /*in_text=*/false}};
  Table s2{"S2", "Latency distributions (ms)", {}, {}, {}, -1, std::nullopt, ""};
  s2.columns = {{"point", "point"},      {"figure", "figure"}, {"n", "n"},        {"mean_ms", "mean"},
                {"median_ms", "median"}, {"std_ms", "std"},    {"p90_ms", "p90"}, {"p95_ms", "p95"},
                {"p99_ms", "p99"},       {"max_ms", "max"}};
  Table s3{"S3", "Failed requests by reason", {}, {}, {}, -1, std::nullopt, ""};
  s3.columns = {{"point", "point"}, {"reason", "reason"}, {"requests", "requests"}, {"example", "first error"}};
  for (const nlohmann::json& j : (*serving)["summary"]) {
    const ServingSummary s = summary_from_json(j);
    const std::string label = point_label(j);
    std::string verdict = "no bounds";
    if (s.verdict) {
      verdict = s.verdict->valid ? "met" : "not met: " + s.verdict->reason;
      s1.notes.push_back(label + ": bounds by LoadGen's early-stopping check: " + verdict);
    }
    s1.rows.push_back({label, static_cast<std::int64_t>(s.requests), static_cast<std::int64_t>(s.completed),
                       static_cast<std::int64_t>(s.failed), real(static_cast<double>(s.duration_ns) / 1e9),
                       real(s.requests_per_s), real(s.input_tokens_per_s), real(s.output_tokens_per_s),
                       real(s.goodput_per_s), ms(s.ttft_ns.p50), ms(s.ttft_ns.p99), ms(s.tpot_ns.p50),
                       ms(s.tpot_ns.p99), ms(s.itl_ns.p99), ms(s.e2e_ns.p99), ms(s.queue_ns.p50), verdict});
    for (const auto& [name, d] : std::vector<std::pair<std::string, LatencySummary>>{
             {"TTFT", s.ttft_ns}, {"TPOT", s.tpot_ns}, {"ITL", s.itl_ns}, {"E2E", s.e2e_ns}, {"queue", s.queue_ns}})
      s2.rows.push_back({label, name, static_cast<std::int64_t>(d.n), ms(d.mean), ms(d.p50), ms(d.stddev), ms(d.p90),
                         ms(d.p95), ms(d.p99), ms(d.max)});
    for (const auto& [reason, count] : s.failures) {
      const auto e = s.failure_examples.find(reason);
      s3.rows.push_back(
          {label, reason, static_cast<std::int64_t>(count), e == s.failure_examples.end() ? std::string() : e->second});
    }
    if (s.requests_without_usage > 0)
      s1.notes.push_back(label + ": " + std::to_string(s.requests_without_usage) +
                         " successful requests came without usage: their output tokens are counted chunks (an "
                         "estimate) and their prompt tokens are unknown");
    if (j.contains("ttft_stability"))
      s1.notes.push_back(label + ": stability of TTFT " + j["ttft_stability"].value("verdict", "?") + ", of TPOT " +
                         j["tpot_stability"].value("verdict", "?") + " (docs/measurement.md)");
  }
  s1.notes.push_back(
      "TTFT, TPOT, ITL and E2E from the send (docs/serving.md); queue = send − scheduled arrival; goodput = requests "
      "meeting every bound given, per second");
  if (const auto& sweep = (*serving)["sweep"]; sweep.is_object()) {
    const std::string stopped = sweep.value("stopped_by", "");
    s1.notes.push_back("sweep over " + sweep.value("parameter", "?") + ": " +
                       (stopped.empty() ? "every value run" : stopped));
  }
  if (s3.rows.empty()) s3.notes.push_back("no request failed");
  return {s1, s2, s3};
}

std::string format_result(const ServingPoint& point, const ServingBounds& bounds) {
  const ServingSummary& s = point.summary;
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  auto line = [&os](const std::string& name, const auto& value) {
    os << std::left << std::setw(42) << (name + ":") << value << "\n";
  };
  auto dist = [&](const std::string& title, const std::string& name, const LatencySummary& d) {
    const std::string pad = std::string(std::max<std::size_t>(0, (50 - title.size() - 2) / 2), '-');
    os << pad << title << pad << "\n";
    line("Mean " + name + " (ms)", d.mean / 1e6);
    line("Median " + name + " (ms)", d.p50 / 1e6);
    line("Std " + name + " (ms)", d.stddev / 1e6);
    line("P90 " + name + " (ms)", d.p90 / 1e6);
    line("P95 " + name + " (ms)", d.p95 / 1e6);
    line("P99 " + name + " (ms)", d.p99 / 1e6);
    line("Max " + name + " (ms)", d.max / 1e6);
  };
  os << "============ Serving Benchmark Result ============\n";
  if (!point.parameter.empty()) {
    std::ostringstream v;
    v << point.value;
    line("Sweep point", point.parameter + "=" + v.str());
  }
  line("Successful requests", s.completed);
  line("Failed requests", s.failed);
  for (const auto& [reason, count] : s.failures) line("  " + reason, count);
  line("Benchmark duration (s)", static_cast<double>(s.duration_ns) / 1e9);
  line("Total input tokens", s.input_tokens);
  line("Total generated tokens", s.output_tokens);
  if (!std::isnan(s.offered_requests_per_s)) line("Offered request rate (req/s)", s.offered_requests_per_s);
  line("Request throughput (req/s)", s.requests_per_s);
  if (bounds.any()) line("Request goodput (req/s)", s.goodput_per_s);
  line("Output token throughput (tok/s)", s.output_tokens_per_s);
  line("Total token throughput (tok/s)", s.total_tokens_per_s);
  line("Max requests in flight", s.max_in_flight);
  if (s.client_read_delay_ns.n > 0) line("Client read delay p99 (us)", s.client_read_delay_ns.p99 / 1e3);
  dist("Time to First Token", "TTFT", s.ttft_ns);
  dist("Time per Output Token (excl. 1st token)", "TPOT", s.tpot_ns);
  dist("Inter-token Latency", "ITL", s.itl_ns);
  dist("End-to-end Latency", "E2EL", s.e2e_ns);
  dist("Queueing delay (arrival to send)", "queue", s.queue_ns);
  if (s.verdict) {
    os << "---------------SLO check (early stopping)-----------\n";
    line("Bounds p" + std::to_string(static_cast<int>(bounds.percentile)), s.verdict->valid ? "met" : "not met");
    if (!s.verdict->valid) os << "  " << s.verdict->reason << "\n";
  }
  os << "==================================================\n";
  return os.str();
}

}  // namespace xsp::serve
