// /api/v1/evaluations: the listing, one evaluation, its deletion, its analyses and its traces, through the service
// (xsp/service/service.h) on a read-only store connection (the writer's for DELETE).
#include <algorithm>
#include <memory>
#include <ostream>
#include <regex>
#include <streambuf>
#include <vector>

#include "api.h"
#include "xsp/analysis/summary.h"
#include "xsp/eval/measurement.h"
#include "xsp/service/service.h"

namespace xsp::detail {
namespace {

using json = nlohmann::json;

// The figures the UI's list shows (service::listing_metrics()); null where no run has them.
json metrics_json(const service::ListingMetrics& m) {
  auto batch = [](const std::optional<int>& b) { return b ? json(*b) : json(nullptr); };
  return {{"p50_ms", number_or_null(m.p50_ns / 1e6)},
          {"p50_batch_size", batch(m.p50_batch_size)},
          {"throughput_samples_per_s", number_or_null(m.throughput_samples_per_s)},
          {"throughput_batch_size", batch(m.throughput_batch_size)},
          {"stability", m.stability.empty() ? json(nullptr) : json(m.stability)}};
}

json listing_json(const EvaluationListing& e) {
  return {{"id", e.id},
          {"name", e.labels.name},
          {"tags", e.labels.tags},
          {"note", e.labels.note},
          {"metrics", metrics_json(service::listing_metrics(e))},
          {"created_at", e.created_at},
          {"status", e.status},
          {"model", e.model_name},
          {"model_version", e.model_version},
          {"framework", e.framework_name},
          {"device", e.device},
          {"host", e.hostname},
          {"scenario", e.scenario},
          {"trace_level", e.trace_level},
          {"batch_sizes", e.batch_sizes},
          {"runs", e.run_count}};
}

json run_json(const RunRecord& run, std::size_t number) {
  json stages = json::object();
  for (const auto& [stage, s] : run.stage_latency_ns) stages[stage] = to_json(s);
  const StabilityAssessment stability = run_stability(run);
  return {
      {"run", number},
      {"id", run.id},
      {"batch_size", run.batch_size},
      {"trace_level", std::string(to_string(run.trace_level))},
      {"name", run_name(run.trace_level)},
      {"warmup_iterations", run.warmup_iterations},
      {"iterations", run.iterations},
      {"throughput_samples_per_s", number_or_null(run.throughput_samples_per_s)},
      {"stage_latency_ns", stages},
      {"stability", {{"verdict", std::string(to_string(stability.verdict))}, {"label", stability_label(stability)}}},
      {"measurement", to_json(run.measurement)},
      {"warnings", run.warnings},
      {"span_count", run.trace.spans.size()},
      {"trace_id", run.trace_id},
      {"machine_state", run.machine_state},
      {"scenario_result", run.scenario_result ? to_json(*run.scenario_result) : json(nullptr)},
      {"generation", run.generation ? to_json(*run.generation) : json::object()}};
}

// One evaluation without its traces (they are downloads: GET .../trace), with each run's stability verdict and the
// summary tables `xsp show` prints.
json evaluation_json(const EvaluationRecord& r) {
  json runs = json::array();
  for (std::size_t i = 0; i < r.runs.size(); ++i) runs.push_back(run_json(r.runs[i], i + 1));
  return {{"id", r.id},
          {"uuid", r.uuid},
          {"status", r.status},
          {"created_at", r.created_at},
          {"model", r.model_name},
          {"model_version", r.model_version},
          {"framework", r.framework_name},
          {"framework_version", r.framework_version},
          {"device", r.device},
          {"scenario", r.scenario},
          {"batch_sizes", r.batch_sizes},
          {"trace_level", std::string(to_string(r.trace_level))},
          {"leveled", r.leveled},
          {"name", r.labels.name},
          {"tags", r.labels.tags},
          {"note", r.labels.note},
          {"settings", r.settings},
          {"system", r.system},
          {"runs", runs},
          {"summary", tables_json(evaluation_summary(r))}};
}

// A filter text: at most kMaxFilterText characters.
void filter_text(const httplib::Request& req, const char* name, std::string& out) {
  const auto v = param(req, name);
  if (!v) return;
  if (v->size() > kMaxFilterText)
    throw HttpError{400,
                    std::string(name) + ": at most " + std::to_string(kMaxFilterText) + " characters, got " +
                        std::to_string(v->size()),
                    name};
  out = *v;
}

EvaluationFilter evaluation_filter(const httplib::Request& req) {
  EvaluationFilter f;
  filter_text(req, "model", f.model);
  filter_text(req, "framework", f.framework);
  filter_text(req, "host", f.host);
  filter_text(req, "device", f.device);
  filter_text(req, "tag", f.tag);
  static const std::regex device(R"(cpu|cuda(:\d{1,4})?)");
  if (!f.device.empty() && !std::regex_match(f.device, device))
    throw HttpError{400, "device: expected cpu, cuda or cuda:N, got '" + f.device + "'", "device"};
  if (auto v = param(req, "since")) f.since = parse_time_param(*v, "since", false);
  if (auto v = param(req, "until")) f.until = parse_time_param(*v, "until", true);
  f.limit = static_cast<std::size_t>(param(req, "limit") ? parse_int_param(*param(req, "limit"), "limit", 1, kMaxLimit)
                                                         : 100);
  if (auto v = param(req, "offset"))
    f.offset = static_cast<std::size_t>(parse_int_param(*v, "offset", 0, 1'000'000'000));
  return f;
}

service::TraceRequest trace_request(const httplib::Request& req, std::int64_t id) {
  service::TraceRequest t;
  t.evaluation_id = id;
  const std::string format_name = param(req, "format").value_or("chrome");
  const auto format = parse_trace_format(format_name);
  if (!format)
    throw HttpError{400, "format: expected chrome, perfetto, otlp or sqlite, got '" + format_name + "'", "format"};
  t.format = *format;
  if (auto v = param(req, "run")) t.run.run = static_cast<int>(parse_int_param(*v, "run", 1, 1 << 20));
  if (auto v = param(req, "batch_size"))
    t.run.batch_size = static_cast<int>(parse_int_param(*v, "batch_size", 1, 1 << 20));
  if (auto v = param(req, "trace_level")) {
    t.run.trace_level = parse_trace_level(*v);
    if (!t.run.trace_level)
      throw HttpError{400,
                      "trace_level: expected model, framework, library, system, kernel or hardware, got '" + *v + "'",
                      "trace_level"};
  }
  return t;
}

}  // namespace

void routes::list_evaluations(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch&) {
  check_params(req, {"model", "model_like", "framework", "device", "host", "tag", "since", "until", "limit", "offset"});
  const EvaluationFilter f = evaluation_filter(req);
  std::string model_like;
  filter_text(req, "model_like", model_like);
  auto store = api.readers.acquire();
  const service::EvaluationPage page = service::list_evaluations_matching(*store, f, model_like);
  json list = json::array();
  for (const auto& e : page.evaluations) list.push_back(listing_json(e));
  send_json(res, 200, {{"total", page.total}, {"offset", f.offset}, {"limit", *f.limit}, {"evaluations", list}});
}

void routes::get_evaluation(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {});
  const std::int64_t id = parse_id(m[1], "id");
  auto store = api.readers.acquire();
  send_json(res, 200, evaluation_json(service::load_evaluation(*store, id)));
}

void routes::delete_evaluation(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {});
  const std::int64_t id = parse_id(m[1], "id");
  service::delete_evaluation(*api.writer, id);
  send_json(res, 200, {{"deleted", id}});
}

// {"name", "tags", "note"}, each optional: a name or note replaces the old one ("" removes it), tags replace the set.
void routes::label_evaluation(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {});
  const std::int64_t id = parse_id(m[1], "id");
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::parse_error& e) {
    throw HttpError{400, std::string("request body: invalid JSON: ") + e.what(), "body"};
  }
  if (!body.is_object())
    throw HttpError{
        400, "request body: expected an object {\"name\", \"tags\", \"note\"}, got " + std::string(body.type_name()),
        "body"};
  service::LabelChange change;
  for (const auto& [key, value] : body.items()) {
    if (key == "name" || key == "note") {
      if (!value.is_string())
        throw HttpError{400, key + ": expected a string, got " + std::string(value.type_name()), key};
      (key == "name" ? change.name : change.note) = value.get<std::string>();
    } else if (key == "tags") {
      if (!value.is_array() || !std::all_of(value.begin(), value.end(), [](const json& t) { return t.is_string(); }))
        throw HttpError{400,
                        "tags: expected an array of strings, got " +
                            value.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 80),
                        "tags"};
      change.tags = value.get<std::vector<std::string>>();
    } else {
      throw HttpError{400, "unknown key '" + key + "'; expected name, tags or note", key};
    }
  }
  const EvaluationLabels labels = service::label_evaluation(*api.writer, id, change);
  send_json(res, 200, {{"id", id}, {"name", labels.name}, {"tags", labels.tags}, {"note", labels.note}});
}

void routes::list_analyses(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {});
  const std::int64_t id = parse_id(m[1], "id");
  auto store = api.readers.acquire();
  const EvaluationListing e = service::find_evaluation(*store, id);
  send_json(res, 200, {{"evaluation_id", id}, {"batch_sizes", e.batch_sizes}, {"analyses", analysis_ids()}});
}

void routes::get_analysis(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {"batch_size", "latency_bound_ms"});
  service::AnalysisRequest a;
  a.evaluation_id = parse_id(m[1], "id");
  a.analyses = {m[2].str()};
  if (auto v = param(req, "batch_size")) a.batch_size = static_cast<int>(parse_int_param(*v, "batch_size", 1, 1 << 20));
  if (auto v = param(req, "latency_bound_ms")) a.latency_bound_ms = parse_positive_double(*v, "latency_bound_ms");
  auto store = api.readers.acquire();
  const service::AnalysisResult result = service::analyze(*store, a);
  send_json(res, 200,
            {{"evaluation_id", a.evaluation_id},
             {"analysis", result.analyses.front()},
             {"tables", tables_json(result.tables)}});
}

namespace {

// An ostream over an httplib DataSink: each full buffer goes out as one chunk of the chunked response. A write the
// client does not take (it went away) fails the stream, which stops the writer.
class SinkBuf final : public std::streambuf {
 public:
  explicit SinkBuf(httplib::DataSink& sink) : sink_(sink), buf_(64 * 1024) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }
  ~SinkBuf() override = default;
  SinkBuf(const SinkBuf&) = delete;
  SinkBuf& operator=(const SinkBuf&) = delete;

 protected:
  int_type overflow(int_type c) override {
    if (!flush_buf()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return flush_buf() ? 0 : -1; }

 private:
  bool flush_buf() {
    const auto n = static_cast<std::size_t>(pptr() - pbase());
    if (n != 0 && (!sink_.is_writable() || !sink_.write(pbase(), n))) return false;
    setp(buf_.data(), buf_.data() + buf_.size());
    return true;
  }
  httplib::DataSink& sink_;
  std::vector<char> buf_;
};

}  // namespace

void routes::get_trace(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
  check_params(req, {"format", "run", "batch_size", "trace_level", "batches"});
  service::TraceRequest t = trace_request(req, parse_id(m[1], "id"));
  if (auto v = param(req, "batches")) {
    try {
      t.batches = parse_batch_range(*v);
    } catch (const BatchRangeError& e) {
      throw HttpError{400, e.what(), "batches"};
    }
  }
  const char* content_type = t.format == TraceFormat::kSqlite     ? "application/vnd.sqlite3"
                             : t.format == TraceFormat::kPerfetto ? "application/octet-stream"
                                                                  : "application/json";
  if (t.format == TraceFormat::kPerfetto) {
    // Streamed: the stored blob is read in pieces and written chunk by chunk, with bounded memory whatever the
    // trace's size. Everything that can fail as the request's fault (no evaluation or run, a batch the trace does
    // not have, a corrupt trace) fails here, before the 200 goes out: open_trace_stream() reads the trace through
    // once. The store connection stays leased to the response until the last chunk.
    auto lease = std::shared_ptr<ReadPool::Lease>(new ReadPool::Lease(api.readers.acquire()));
    std::shared_ptr<service::TraceStream> stream;
    try {
      stream = service::open_trace_stream(**lease, t);
    } catch (const BatchRangeError& e) {
      throw HttpError{400, e.what(), "batches"};
    }
    res.status = 200;
    res.set_header("Content-Disposition", "attachment; filename=\"" + stream->info.file_name + "\"");
    res.set_chunked_content_provider(content_type, [lease, stream](std::size_t, httplib::DataSink& sink) {
      SinkBuf buf(sink);
      std::ostream out(&buf);
      try {
        service::write_trace_stream(*stream, out);
        out.flush();
      } catch (const std::exception&) {
        return false;  // the headers are gone: closing without the last chunk tells the client it is incomplete
      }
      if (!out) return false;
      sink.done();
      return true;
    });
    return;
  }
  // Exported to memory: no temporary file, so nothing for a local user to plant a link at.
  service::RunTrace trace = [&] {
    auto store = api.readers.acquire();
    try {
      return service::export_trace(*store, t);
    } catch (const BatchRangeError& e) {
      throw HttpError{400, e.what(), "batches"};
    }
  }();
  res.status = 200;
  res.set_header("Content-Disposition", "attachment; filename=\"" + trace.file_name + "\"");
  res.set_content(std::move(trace.content), content_type);
}

}  // namespace xsp::detail
