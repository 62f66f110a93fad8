// What the route handlers share (api.h): answers, query parameters, the store pool, the endpoint index.
#include "api.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

#include "xsp/eval/evaluate.h"

namespace xsp::detail {

using json = nlohmann::json;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(2, ' ', false, json::error_handler_t::replace) + "\n", "application/json");
}

json error_body(int status, const std::string& message, const std::string& field) {
  json e = {{"status", status}, {"message", message}};
  if (!field.empty()) e["field"] = field;
  return {{"error", e}};
}

json tables_json(const std::vector<Table>& tables) {
  json out = json::array();
  for (const Table& t : merge_batch_tables(tables))
    out.push_back(json::parse(to_json(t).dump(-1, ' ', false, json::error_handler_t::replace)));
  return out;
}

std::optional<std::string> header(const httplib::Request& req, const char* name) {
  if (!req.has_header(name)) return std::nullopt;
  return req.get_header_value(name);
}

std::optional<std::string> param(const httplib::Request& req, const std::string& name) {
  if (!req.has_param(name.c_str())) return std::nullopt;
  return req.get_param_value(name.c_str());
}

// Names come from the URL's query string: httplib also files the fields of a form-encoded body under params, and a
// JSON body that curl sent as a form must not read as a parameter.
void check_params(const httplib::Request& req, const std::set<std::string>& known) {
  const auto q = req.target.find('?');
  if (q == std::string::npos) return;
  std::stringstream in(req.target.substr(q + 1));
  for (std::string item; std::getline(in, item, '&');) {
    const std::string name = item.substr(0, item.find('='));
    if (name.empty() || known.count(name) != 0) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw HttpError{
        400,
        "unknown query parameter '" + name + "'; this endpoint takes " + (list.empty() ? std::string("none") : list),
        name};
  }
}

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

std::int64_t parse_id(const std::string& text, const std::string& field) {
  if (!all_digits(text)) throw HttpError{400, field + ": expected a positive integer, got '" + text + "'", field};
  const std::string digits = text.substr(std::min(text.find_first_not_of('0'), text.size()));
  const std::string max = std::to_string(std::numeric_limits<std::int64_t>::max());
  if (digits.size() > max.size() || (digits.size() == max.size() && digits > max))
    throw HttpError{400, field + ": " + text + " is out of range (ids are at most " + max + ")", field};
  const std::int64_t v = digits.empty() ? 0 : std::stoll(digits);
  if (v == 0) throw HttpError{400, field + ": expected a positive integer, got '" + text + "'", field};
  return v;
}

std::int64_t parse_int_param(const std::string& text, const std::string& field, std::int64_t lo, std::int64_t hi) {
  const bool negative = !text.empty() && text[0] == '-';
  const std::string body = negative ? text.substr(1) : text;
  if (!all_digits(body) || body.size() > 18)
    throw HttpError{400,
                    field + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                        ", got '" + text + "'",
                    field};
  const std::int64_t v = negative ? -std::stoll(body) : std::stoll(body);
  if (v < lo || v > hi)
    throw HttpError{
        400, field + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + text,
        field};
  return v;
}

double parse_positive_double(const std::string& text, const std::string& field) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v) || v <= 0)
    throw HttpError{400, field + ": expected a positive number, got '" + text + "'", field};
  return v;
}

std::string parse_time_param(const std::string& text, const std::string& field, bool end_of_day) {
  static const std::regex date(R"(\d{4}-\d{2}-\d{2})");
  static const std::regex time(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");
  if (std::regex_match(text, date)) return end_of_day ? text + "T23:59:59Z" : text;
  if (std::regex_match(text, time)) return text;
  throw HttpError{400, field + ": expected a UTC date YYYY-MM-DD or time YYYY-MM-DDTHH:MM:SSZ, got '" + text + "'",
                  field};
}

std::vector<std::int64_t> id_list(const httplib::Request& req, std::size_t min_ids) {
  const std::string expected =
      min_ids > 1 ? "two or more evaluation ids, e.g. ids=1,2" : "one or more evaluation ids, e.g. ids=1 or ids=1,2";
  const auto text = param(req, "ids");
  if (!text) throw HttpError{400, "ids: expected " + expected, "ids"};
  std::vector<std::int64_t> ids;
  std::stringstream in(*text);
  for (std::string item; std::getline(in, item, ',');) {
    const std::int64_t id = parse_id(item, "ids");
    if (std::find(ids.begin(), ids.end(), id) != ids.end())
      throw HttpError{400, "ids: evaluation " + std::to_string(id) + " is listed twice", "ids"};
    ids.push_back(id);
    if (ids.size() > kMaxCompareIds)
      throw HttpError{400, "ids: at most " + std::to_string(kMaxCompareIds) + " evaluations at once", "ids"};
  }
  if (ids.size() < min_ids)
    throw HttpError{400, "ids: expected " + expected + ", got " + std::to_string(ids.size()), "ids"};
  return ids;
}

ReadPool::Lease ReadPool::acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      auto s = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(s));
    }
  }
  return Lease(*this, Store::open(file_, StoreAccess::kRead));
}

void ReadPool::give_back(std::unique_ptr<Store> s) {
  if (!s) return;
  std::lock_guard lock(mu_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(s));
}

EvaluationContext Api::context() const {
  EvaluationContext c;
  c.zoo = options.zoo;
  c.default_images_dir = options.default_images_dir;
  c.store = writer.get();
  c.clock = options.clock;
  c.record_machine_state = options.record_machine_state;
  c.interrupt = &stopping;
  c.confine_to = confinement_roots(options.zoo, options.default_images_dir, options.data_dirs);
  return c;
}

const std::vector<Endpoint>& endpoints() {
  static const std::vector<Endpoint> e = {
      {"GET", "/api/v1/models", "the model zoo, and the manifests that could not be used"},
      {"GET", "/api/v1/evaluations",
       "stored evaluations, newest first, with names, tags and key metrics; filters model (exact), model_like "
       "(case-insensitive, '-' and '_' ignored), framework, device, host, tag, since, until; limit, offset"},
      {"GET", "/api/v1/evaluations/{id}", "one evaluation: runs, stability verdicts, system, summary tables"},
      {"DELETE", "/api/v1/evaluations/{id}", "delete an evaluation (token when set)"},
      {"PATCH", "/api/v1/evaluations/{id}",
       "name, tag or annotate an evaluation: {name, tags, note}, each optional (token when set)"},
      {"GET", "/api/v1/evaluations/{id}/analyses", "the analysis ids"},
      {"GET", "/api/v1/evaluations/{id}/analyses/{analysis}", "one analysis as tables; batch_size, latency_bound_ms"},
      {"GET", "/api/v1/evaluations/{id}/trace",
       "download a run's trace (perfetto: streamed); format=chrome|perfetto|otlp|sqlite, run, batch_size, "
       "trace_level, batches=A:B"},
      {"GET", "/api/v1/compare", "evaluations side by side; ids=1,2[,...], batch_size"},
      {"GET", "/api/v1/report", "the HTML report (charts, tables, timeline) of ids=1[,2,...], batch_size"},
      {"POST", "/api/v1/evaluations",
       "submit an evaluation (EvaluationRequest JSON, or a job submission as for "
       "POST /api/v1/jobs): 202 with its job"},
      {"POST", "/api/v1/jobs",
       "submit a job: {request, constraints, priority, max_attempts} (all but request "
       "optional) or a bare EvaluationRequest: 202 with the job"},
      {"GET", "/api/v1/jobs",
       "submitted evaluations, newest first, the queue's and (xsp serve --slurm-dir) Slurm's tasks; "
       "state=queued|running|done|failed|cancelled, engine=queue|slurm, limit"},
      {"GET", "/api/v1/jobs/{id}",
       "one job (a queue id, or a Slurm task's ARRAYID_TASK): state, constraints, priority, attempts, agent, progress, "
       "waiting reason, "
       "evaluation id or error"},
      {"DELETE", "/api/v1/jobs/{id}", "delete a queued or finished job (its evaluation stays)"},
      {"POST", "/api/v1/jobs/{id}/cancel", "cancel a queued or running job"},
      {"POST", "/api/v1/jobs/{id}/retry", "queue a failed or cancelled job again, attempts reset"},
      {"GET", "/api/v1/agents", "the agents that run jobs from a shared PostgreSQL queue (none on SQLite)"},
  };
  return e;
}

std::string index_html() {
  std::string rows;
  for (const Endpoint& e : endpoints())
    rows +=
        std::string("<tr><td>") + e.method + "</td><td><code>" + e.path + "</code></td><td>" + e.what + "</td></tr>\n";
  return "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>XSP server</title></head><body>\n"
         "<h1>XSP server</h1>\n<p>REST API, JSON. Documentation: docs/server.md in the XSP source tree.</p>\n"
         "<table>\n<tr><th>method</th><th>path</th><th>what</th></tr>\n" +
         rows + "</table>\n</body></html>\n";
}

void routes::list_endpoints(Api&, const httplib::Request&, httplib::Response& res, const std::smatch&) {
  json list = json::array();
  for (const Endpoint& e : endpoints()) list.push_back({{"method", e.method}, {"path", e.path}, {"what", e.what}});
  send_json(res, 200, {{"endpoints", list}});
}

}  // namespace xsp::detail
