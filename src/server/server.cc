// The REST API of docs/server.md on cpp-httplib. Routing is done here, not by httplib's per-method tables, so that
// a known path with the wrong method is a 405 naming the allowed ones and every error has the same JSON shape.
#include "xsp/server/server.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "xsp/analysis/analyses.h"
#include "xsp/analysis/compare.h"
#include "xsp/analysis/roofline.h"
#include "xsp/analysis/summary.h"
#include "xsp/analysis/table.h"
#include "xsp/eval/measurement.h"
#include "xsp/manifest/manifest.h"
#include "http_front.h"
#include "ui.h"
#include "xsp/predictor/predictor.h"
#include "xsp/queue/postgres_queue.h"
#include "xsp/server/http_policy.h"
#include "xsp/report/report.h"
#include "xsp/store/store.h"
#include "xsp/store/trace_export.h"

namespace xsp {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kPrefix = "/api/v1";
constexpr std::size_t kMaxFilterText = 256;   // longer filter values are refused: no model name is that long
constexpr std::int64_t kMaxLimit = 1000;      // evaluations per page
constexpr std::size_t kMaxCompareIds = 8;

/// What a handler throws for a 4xx/5xx answer; the dispatcher renders it as {"error": {...}}.
struct HttpError {
  int status;
  std::string message;
  std::string field;
};

// Invalid UTF-8 (echoed from a query or body into a message) is replaced rather than thrown on: an answer always goes
// out, and it is valid JSON.
void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(2, ' ', false, json::error_handler_t::replace) + "\n", "application/json");
}

json error_body(int status, const std::string& message, const std::string& field) {
  json e = {{"status", status}, {"message", message}};
  if (!field.empty()) e["field"] = field;
  return {{"error", e}};
}

// Timing depends on the secret's length only, never on where the first difference is.
bool constant_time_equal(const std::string& given, const std::string& secret) {
  unsigned char diff = given.size() != secret.size() ? 1 : 0;
  for (std::size_t i = 0; i < secret.size(); ++i)
    diff |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ secret[i]);
  return diff == 0;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// A positive integer id: digits only (no sign, no space, no "1e3"), 1 .. 2^63-1.
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
    throw HttpError{400, field + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                             ", got '" + text + "'",
                    field};
  const std::int64_t v = negative ? -std::stoll(body) : std::stoll(body);
  if (v < lo || v > hi)
    throw HttpError{400, field + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                             ", got " + text,
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

// Every query parameter must be one the endpoint knows: a misspelt filter would otherwise be ignored silently and
// return everything. Names come from the URL's query string: httplib also files the fields of a form-encoded body
// under params, and a JSON body that curl sent as a form must not read as a parameter.
void check_params(const httplib::Request& req, const std::set<std::string>& known) {
  const auto q = req.target.find('?');
  if (q == std::string::npos) return;
  std::stringstream in(req.target.substr(q + 1));
  for (std::string item; std::getline(in, item, '&');) {
    const std::string name = item.substr(0, item.find('='));
    if (name.empty() || known.count(name) != 0) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw HttpError{400, "unknown query parameter '" + name + "'; this endpoint takes " +
                             (list.empty() ? std::string("none") : list),
                    name};
  }
}

std::optional<std::string> param(const httplib::Request& req, const std::string& name) {
  if (!req.has_param(name.c_str())) return std::nullopt;
  return req.get_param_value(name.c_str());
}

// "2026-11-24" or "2026-11-24T12:00:00Z"; `end_of_day` widens a bare date to its last second (for `until`).
std::string parse_time_param(const std::string& text, const std::string& field, bool end_of_day) {
  static const std::regex date(R"(\d{4}-\d{2}-\d{2})");
  static const std::regex time(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");
  if (std::regex_match(text, date)) return end_of_day ? text + "T23:59:59Z" : text;
  if (std::regex_match(text, time)) return text;
  throw HttpError{400, field + ": expected a UTC date YYYY-MM-DD or time YYYY-MM-DDTHH:MM:SSZ, got '" + text + "'",
                  field};
}

json listing_json(const EvaluationListing& e) {
  return {{"id", e.id},
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

json tables_json(const std::vector<Table>& tables) {
  json out = json::array();
  for (const Table& t : merge_batch_tables(tables))
    out.push_back(json::parse(to_json(t).dump(-1, ' ', false, json::error_handler_t::replace)));
  return out;
}

// One evaluation without its traces (they are downloads: GET .../trace), with each run's stability verdict and the
// summary tables `xsp show` prints.
json evaluation_json(const EvaluationRecord& r) {
  json runs = json::array();
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    const RunRecord& run = r.runs[i];
    json stages = json::object();
    for (const auto& [stage, s] : run.stage_latency_ns) stages[stage] = to_json(s);
    const StabilityAssessment stability = run_stability(run);
    runs.push_back({{"run", i + 1},
                    {"id", run.id},
                    {"batch_size", run.batch_size},
                    {"trace_level", std::string(to_string(run.trace_level))},
                    {"name", run_name(run.trace_level)},
                    {"warmup_iterations", run.warmup_iterations},
                    {"iterations", run.iterations},
                    {"throughput_samples_per_s", number_or_null(run.throughput_samples_per_s)},
                    {"stage_latency_ns", stages},
                    {"stability", {{"verdict", std::string(to_string(stability.verdict))},
                                   {"label", stability_label(stability)}}},
                    {"measurement", to_json(run.measurement)},
                    {"warnings", run.warnings},
                    {"span_count", run.trace.spans.size()},
                    {"trace_id", run.trace_id},
                    {"machine_state", run.machine_state},
                    {"generation", run.generation}});
  }
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
          {"settings", r.settings},
          {"system", r.system},
          {"runs", runs},
          {"summary", tables_json(evaluation_summary(r))}};
}

struct Endpoint {
  const char* method;
  const char* path;
  const char* what;
};

const std::vector<Endpoint>& endpoints() {
  static const std::vector<Endpoint> e = {
      {"GET", "/api/v1/models", "the model zoo, and the manifests that could not be used"},
      {"GET", "/api/v1/evaluations", "stored evaluations, newest first; filters model, framework, device, host, "
                                     "since, until; limit, offset"},
      {"GET", "/api/v1/evaluations/{id}", "one evaluation: runs, stability verdicts, system, summary tables"},
      {"DELETE", "/api/v1/evaluations/{id}", "delete an evaluation (token when set)"},
      {"GET", "/api/v1/evaluations/{id}/analyses", "the analysis ids"},
      {"GET", "/api/v1/evaluations/{id}/analyses/{analysis}", "one analysis as tables; batch_size, latency_bound_ms"},
      {"GET", "/api/v1/evaluations/{id}/trace", "download a run's trace; format=chrome|otlp|sqlite, run, batch_size, "
                                                "trace_level"},
      {"GET", "/api/v1/compare", "evaluations side by side; ids=1,2[,...], batch_size"},
      {"GET", "/api/v1/report", "the HTML report (charts, tables, timeline) of ids=1[,2,...], batch_size"},
      {"POST", "/api/v1/evaluations", "submit an evaluation (EvaluationRequest JSON, or a job submission as for "
                                      "POST /api/v1/jobs): 202 with its job"},
      {"POST", "/api/v1/jobs", "submit a job: {request, constraints, priority, max_attempts} (all but request "
                               "optional) or a bare EvaluationRequest: 202 with the job"},
      {"GET", "/api/v1/jobs", "submitted evaluations, newest first; state=queued|running|done|failed|cancelled, limit"},
      {"GET", "/api/v1/jobs/{id}", "one job: state, constraints, priority, attempts, agent, progress, waiting reason, "
                                   "evaluation id or error"},
      {"DELETE", "/api/v1/jobs/{id}", "delete a queued or finished job (its evaluation stays)"},
      {"POST", "/api/v1/jobs/{id}/cancel", "cancel a queued or running job"},
      {"POST", "/api/v1/jobs/{id}/retry", "queue a failed or cancelled job again, attempts reset"},
      {"GET", "/api/v1/agents", "the agents that run jobs from a shared PostgreSQL queue (none on SQLite)"},
  };
  return e;
}

// The page at "/api": the API's index for a browser (GET /api/v1 gives the same list as JSON).
std::string index_html() {
  std::string rows;
  for (const Endpoint& e : endpoints())
    rows += std::string("<tr><td>") + e.method + "</td><td><code>" + e.path + "</code></td><td>" + e.what +
            "</td></tr>\n";
  return "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>XSP server</title></head><body>\n"
         "<h1>XSP server</h1>\n<p>REST API, JSON. Documentation: docs/server.md in the XSP source tree.</p>\n"
         "<table>\n<tr><th>method</th><th>path</th><th>what</th></tr>\n" +
         rows + "</table>\n</body></html>\n";
}

// Read-only store connections, one per concurrent reader: a Store serializes its own users, so sharing one would
// make every reader wait for the others.
class ReadPool {
 public:
  explicit ReadPool(fs::path file) : file_(std::move(file)) {}
  class Lease {
   public:
    Lease(ReadPool& pool, std::unique_ptr<Store> store) : pool_(pool), store_(std::move(store)) {}
    ~Lease() { pool_.give_back(std::move(store_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Store& operator*() { return *store_; }
    Store* operator->() { return store_.get(); }

   private:
    ReadPool& pool_;
    std::unique_ptr<Store> store_;
  };
  Lease acquire() {
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

 private:
  void give_back(std::unique_ptr<Store> s) {
    if (!s) return;
    std::lock_guard lock(mu_);
    if (idle_.size() < kMaxIdle) idle_.push_back(std::move(s));
  }
  static constexpr std::size_t kMaxIdle = 64;
  fs::path file_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Store>> idle_;
};


}  // namespace

bool is_loopback_address(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return false;
}

std::string read_token_file(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("token file " + file.string() + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  const auto first = t.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw std::runtime_error("token file " + file.string() + ": holds no token (empty)");
  t = t.substr(first, t.find_last_not_of(" \t\r\n") - first + 1);
  return t;
}

struct Server::Impl {
  using Handler = std::function<void(const httplib::Request&, httplib::Response&, const std::smatch&)>;
  struct Route {
    std::string method;
    std::regex pattern;
    bool write;
    bool heavy;  // loads whole evaluations and computes over them: ServerOptions::max_heavy_requests
    Handler handler;
  };

  ServerOptions options;
  std::unique_ptr<Store> writer;  // the worker's saves and DELETE; Store serializes its own users
  ReadPool readers;
  std::shared_ptr<JobService> jobs;
  JobQueue* local_jobs = nullptr;  // the server's own queue (in `jobs`) when it runs submissions itself; else null
  detail::GuardedHttpServer http;
  detail::HostNames host_names;
  std::vector<Route> routes;
  std::thread listener;
  int bound_port = -1;
  int listen_fd = -1;  // the listening socket, seen by the socket-options hook before httplib's listen()
  std::atomic<int> stopping{0};  // set by stop(): validation in a handler (hashing a big file) gives up

  static detail::FrontLimits front_limits(const ServerOptions& o) {
    detail::FrontLimits l;
    l.workers = o.threads;
    l.max_body_bytes = o.max_body_bytes;
    l.request_timeout = o.request_timeout;
    l.idle_timeout = o.idle_timeout;
    l.max_connections = o.max_connections;
    l.max_connections_per_client = o.max_connections_per_client;
    return l;
  }

  explicit Impl(ServerOptions o)
      : options(std::move(o)),
        readers(options.store),
        http(front_limits(options)),
        host_names(detail::server_host_names(options.host, options.allowed_hosts)) {}

  // Requests come from other people: every file they name is confined to the zoo and the data folders, and
  // validation stops when the server does.
  EvaluationContext context() const {
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

  void route(const std::string& method, const std::string& pattern, bool write, Handler h, bool heavy = false) {
    routes.push_back({method, std::regex(std::string(kPrefix) + pattern), write, heavy, std::move(h)});
  }

  static std::optional<std::string> header(const httplib::Request& req, const char* name) {
    if (!req.has_header(name)) return std::nullopt;
    return req.get_header_value(name);
  }

  // At most max_heavy_requests run at once. Others wait for a slot, but all workers but two at most, so that listings
  // keep workers to run on; beyond that, or after 30 s, the client is told to come back (503).
  struct HeavyGate {
    std::mutex mu;
    std::condition_variable freed;
    std::size_t running = 0, waiting = 0;
  } heavy;

  class HeavySlot {
   public:
    HeavySlot(HeavyGate& gate, std::size_t max_running, std::size_t max_waiting, httplib::Response& res)
        : gate_(gate) {
      std::unique_lock lock(gate_.mu);
      if (gate_.running >= max_running) {
        if (gate_.waiting >= max_waiting) refuse(max_running, res);
        ++gate_.waiting;
        const bool got = gate_.freed.wait_for(lock, std::chrono::seconds(30),
                                              [&] { return gate_.running < max_running; });
        --gate_.waiting;
        if (!got) refuse(max_running, res);
      }
      ++gate_.running;
    }
    ~HeavySlot() {
      {
        std::lock_guard lock(gate_.mu);
        --gate_.running;
      }
      gate_.freed.notify_one();
    }
    HeavySlot(const HeavySlot&) = delete;
    HeavySlot& operator=(const HeavySlot&) = delete;

   private:
    [[noreturn]] static void refuse(std::size_t max_running, httplib::Response& res) {
      res.set_header("Retry-After", "1");
      throw HttpError{503, std::to_string(max_running) + " requests that load whole evaluations (analyses, compare, "
                                                         "report, trace) are running and others wait: retry in a moment",
                      ""};
    }
    HeavyGate& gate_;
  };

  void authorize(const httplib::Request& req) const {
    if (options.token.empty()) return;
    if (!req.has_header("Authorization"))
      throw HttpError{401, "this server needs a token for " + req.method + ": send the header 'Authorization: Bearer TOKEN'",
                      "Authorization"};
    const std::string value = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (value.rfind(kBearer, 0) != 0)
      throw HttpError{401, "Authorization: expected 'Bearer TOKEN'", "Authorization"};
    if (!constant_time_equal(value.substr(kBearer.size()), options.token))
      throw HttpError{403, "Authorization: wrong token", "Authorization"};
  }

  void dispatch(const httplib::Request& req, httplib::Response& res) {
    try {
      std::set<std::string> allowed;
      for (const Route& r : routes) {
        std::smatch m;
        if (!std::regex_match(req.path, m, r.pattern)) continue;
        allowed.insert(r.method);
        if (r.method != req.method) continue;
        if (r.write) {
          if (auto refused = detail::check_write(req.method, header(req, "Content-Type"), header(req, "Origin"),
                                                 header(req, "Sec-Fetch-Site"), header(req, "Host")))
            throw HttpError{refused->status, refused->message, refused->field};
          authorize(req);
        }
        std::optional<HeavySlot> slot;
        if (r.heavy) slot.emplace(heavy, options.max_heavy_requests, std::max<std::size_t>(1, options.threads > 2 ? options.threads - 2 : 1), res);
        r.handler(req, res, m);
        return;
      }
      if (!allowed.empty()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        res.set_header("Allow", list);
        throw HttpError{405, "method " + req.method + " is not allowed on " + req.path + "; allowed: " + list, ""};
      }
      throw HttpError{404, "no endpoint " + req.method + " " + req.path + " (GET " + kPrefix + " lists them)", ""};
    } catch (const HttpError& e) {
      send_json(res, e.status, error_body(e.status, e.message, e.field));
    } catch (const RequestError& e) {
      send_json(res, 400, error_body(400, e.what(), e.field()));
    } catch (const Interrupted&) {
      send_json(res, 503, error_body(503, "the server is stopping: the request was not finished", ""));
    } catch (const StoreError& e) {
      send_json(res, 503, error_body(503, std::string("store: ") + e.what(), ""));
    } catch (const std::bad_alloc&) {
      // Every input is bounded; what is left is a store whose evaluations are larger than this machine can hold.
      send_json(res, 503, error_body(503, "out of memory while answering " + req.method + " " + req.path +
                                              ": the evaluations it reads are too large for this server's memory",
                                     ""));
    } catch (const std::exception& e) {
      send_json(res, 500, error_body(500, std::string("internal error: ") + e.what(), ""));
    }
  }

  // The query parameter `ids`: `min_ids` to kMaxCompareIds evaluation ids, comma-separated (400 naming "ids").
  static std::vector<std::int64_t> id_list(const httplib::Request& req, std::size_t min_ids) {
    const std::string expected = min_ids > 1 ? "two or more evaluation ids, e.g. ids=1,2"
                                             : "one or more evaluation ids, e.g. ids=1 or ids=1,2";
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

  EvaluationRecord load(std::int64_t id) {
    auto store = readers.acquire();
    auto record = store->load(id);
    if (!record) throw HttpError{404, "no evaluation " + std::to_string(id) + " in the store", "id"};
    return std::move(*record);
  }

  AnalysisOptions analysis_options(const EvaluationRecord& record) {
    AnalysisOptions o;
    std::vector<MachineCeilings> stored;
    {
      auto store = readers.acquire();
      stored = store->list_ceilings();
    }
    std::string note;
    if (const MachineCeilings* c = select_ceilings(stored, evaluation_machine(record), &note)) o.ceilings = *c;
    o.ceilings_note = note;
    return o;
  }

  void add_routes() {
    route("GET", "/?", false, [](const httplib::Request&, httplib::Response& res, const std::smatch&) {
      json list = json::array();
      for (const Endpoint& e : endpoints()) list.push_back({{"method", e.method}, {"path", e.path}, {"what", e.what}});
      send_json(res, 200, {{"endpoints", list}});
    });

    route("GET", "/models", false, [this](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
      check_params(req, {});
      Zoo zoo;
      try {
        zoo = scan_zoo(options.zoo);
      } catch (const std::exception& e) {
        throw HttpError{503, std::string("zoo: ") + e.what(), ""};
      }
      const auto built = registered_predictors();
      json models = json::array();
      json problems = json::array();
      for (const Manifest& m : zoo.models) {
        // One manifest that cannot be listed (a path the file system refuses) is a problem of its own, not a 500.
        try {
          json frameworks = json::array();
          for (const auto& g : m.graphs) {
            std::error_code ec;
            const bool exported = fs::is_regular_file(m.resolved_graph_path(g.framework), ec);
            frameworks.push_back({{"name", g.framework},
                                  {"constraint", g.constraint},
                                  {"graph", g.graph_path},
                                  {"exported", exported},
                                  {"in_this_build", std::find(built.begin(), built.end(), g.framework) != built.end()}});
          }
          json inputs = json::array();
          for (const auto& in : m.inputs) inputs.push_back({{"dimensions", in.dimensions}});
          models.push_back({{"name", m.name},
                            {"version", m.version},
                            {"description", m.description},
                            {"frameworks", frameworks},
                            {"inputs", inputs},
                            {"attributes", m.attributes}});
        } catch (const std::exception& e) {
          problems.push_back({{"file", m.path.string()}, {"message", e.what()}});
        }
      }
      for (const ZooProblem& p : zoo.problems) problems.push_back({{"file", p.file.string()}, {"message", p.message}});
      send_json(res, 200, {{"models", models}, {"problems", problems}, {"predictors_in_this_build", built}});
    });

    route("GET", "/evaluations", false, [this](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
      check_params(req, {"model", "framework", "device", "host", "since", "until", "limit", "offset"});
      EvaluationFilter f;
      auto text = [&](const char* name, std::string& out) {
        if (auto v = param(req, name)) {
          if (v->size() > kMaxFilterText)
            throw HttpError{400, std::string(name) + ": at most " + std::to_string(kMaxFilterText) + " characters, got " +
                                     std::to_string(v->size()),
                            name};
          out = *v;
        }
      };
      text("model", f.model);
      text("framework", f.framework);
      text("host", f.host);
      text("device", f.device);
      static const std::regex device(R"(cpu|cuda(:\d{1,4})?)");
      if (!f.device.empty() && !std::regex_match(f.device, device))
        throw HttpError{400, "device: expected cpu, cuda or cuda:N, got '" + f.device + "'", "device"};
      if (auto v = param(req, "since")) f.since = parse_time_param(*v, "since", false);
      if (auto v = param(req, "until")) f.until = parse_time_param(*v, "until", true);
      std::int64_t limit = 100;
      if (auto v = param(req, "limit")) limit = parse_int_param(*v, "limit", 1, kMaxLimit);
      f.limit = static_cast<std::size_t>(limit);
      if (auto v = param(req, "offset")) f.offset = static_cast<std::size_t>(parse_int_param(*v, "offset", 0, 1'000'000'000));
      auto store = readers.acquire();
      json list = json::array();
      for (const auto& e : store->list(f)) list.push_back(listing_json(e));
      send_json(res, 200, {{"total", store->count(f)}, {"offset", f.offset}, {"limit", limit}, {"evaluations", list}});
    });

    route("GET", "/evaluations/([^/]+)", false,
          [this](const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
            check_params(req, {});
            send_json(res, 200, evaluation_json(load(parse_id(m[1], "id"))));
          });

    route("DELETE", "/evaluations/([^/]+)", true,
          [this](const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
            check_params(req, {});
            const std::int64_t id = parse_id(m[1], "id");
            if (!writer->remove(id)) throw HttpError{404, "no evaluation " + std::to_string(id) + " in the store", "id"};
            send_json(res, 200, {{"deleted", id}});
          });

    route("GET", "/evaluations/([^/]+)/analyses", false,
          [this](const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
            check_params(req, {});
            const std::int64_t id = parse_id(m[1], "id");
            auto store = readers.acquire();
            // The listing has what this needs; no traces to decompress.
            EvaluationFilter all;
            std::optional<EvaluationListing> found;
            for (auto& e : store->list(all))
              if (e.id == id) found = std::move(e);
            if (!found) throw HttpError{404, "no evaluation " + std::to_string(id) + " in the store", "id"};
            send_json(res, 200, {{"evaluation_id", id}, {"batch_sizes", found->batch_sizes}, {"analyses", analysis_ids()}});
          });

    route("GET", "/evaluations/([^/]+)/analyses/([^/]+)", false,
          [this](const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
            check_params(req, {"batch_size", "latency_bound_ms"});
            const std::int64_t id = parse_id(m[1], "id");
            std::string aid = m[2];
            const auto& ids = analysis_ids();
            const auto known = std::find_if(ids.begin(), ids.end(), [&](const std::string& k) {
              return k.size() == aid.size() && std::equal(k.begin(), k.end(), aid.begin(), [](char a, char b) {
                       return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
                     });
            });
            if (known == ids.end()) {
              std::string list;
              for (const auto& k : ids) list += (list.empty() ? "" : ", ") + k;
              throw HttpError{404, "no analysis '" + aid + "'; expected one of " + list, "analysis"};
            }
            const EvaluationRecord record = load(id);
            AnalysisOptions options = analysis_options(record);
            if (auto v = param(req, "batch_size"))
              options.batch_size = static_cast<int>(parse_int_param(*v, "batch_size", 1, 1 << 20));
            if (auto v = param(req, "latency_bound_ms")) options.latency_bound_ms = parse_positive_double(*v, "latency_bound_ms");
            std::vector<Table> tables;
            try {
              tables = run_analyses(record, {*known}, options);
            } catch (const std::invalid_argument& e) {
              throw HttpError{400, e.what(), "batch_size"};
            }
            send_json(res, 200, {{"evaluation_id", id}, {"analysis", *known}, {"tables", tables_json(tables)}});
          }, true);

    route("GET", "/evaluations/([^/]+)/trace", false,
          [this](const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
            check_params(req, {"format", "run", "batch_size", "trace_level"});
            const std::int64_t id = parse_id(m[1], "id");
            const std::string format_name = param(req, "format").value_or("chrome");
            const auto format = parse_trace_format(format_name);
            if (!format) throw HttpError{400, "format: expected chrome, otlp or sqlite, got '" + format_name + "'", "format"};
            RunChoice choice;
            if (auto v = param(req, "run")) choice.run = static_cast<int>(parse_int_param(*v, "run", 1, 1 << 20));
            if (auto v = param(req, "batch_size"))
              choice.batch_size = static_cast<int>(parse_int_param(*v, "batch_size", 1, 1 << 20));
            if (auto v = param(req, "trace_level")) {
              choice.trace_level = parse_trace_level(*v);
              if (!choice.trace_level)
                throw HttpError{400, "trace_level: expected model, framework, library, system, kernel or hardware, got '" +
                                         *v + "'",
                                "trace_level"};
            }
            const EvaluationRecord record = load(id);
            const RunRecord* run = nullptr;
            try {
              run = &choose_run(record, choice);
            } catch (const std::invalid_argument& e) {
              // choose_run names the CLI's flag (--run...); the message still says which values exist.
              const std::string field = choice.run ? "run" : choice.batch_size ? "batch_size" : "trace_level";
              throw HttpError{404, e.what(), field};
            }
            const std::size_t run_number = static_cast<std::size_t>(run - record.runs.data()) + 1;
            const char* ext = *format == TraceFormat::kSqlite ? ".sqlite" : *format == TraceFormat::kOtlp ? ".otlp.json" : ".json";
            const std::string name = "xsp-evaluation-" + std::to_string(id) + "-run-" + std::to_string(run_number) + ext;
            // Exported to memory: no temporary file, so nothing for a local user to plant a link at.
            std::string content = export_run_trace_to_string(record, *run, *format);
            res.status = 200;
            res.set_header("Content-Disposition", "attachment; filename=\"" + name + "\"");
            res.set_content(std::move(content),
                            *format == TraceFormat::kSqlite ? "application/vnd.sqlite3" : "application/json");
          }, true);

    route("GET", "/compare", false, [this](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
      check_params(req, {"ids", "batch_size"});
      const std::vector<std::int64_t> ids = id_list(req, 2);
      CompareOptions options;
      if (auto v = param(req, "batch_size"))
        options.batch_size = static_cast<int>(parse_int_param(*v, "batch_size", 1, 1 << 20));
      std::vector<EvaluationRecord> records;
      for (std::int64_t id : ids) records.push_back(load(id));
      std::vector<Table> tables;
      try {
        tables = compare_evaluations(records, options);
      } catch (const std::invalid_argument& e) {
        throw HttpError{400, e.what(), "batch_size"};
      }
      send_json(res, 200, {{"ids", ids}, {"tables", tables_json(tables)}});
    }, true);

    // The HTML report of one or more evaluations (xsp/report/report.h): the web UI's evaluation and comparison
    // pages, with every analysis as a chart and its table, and the trace timeline of one batch.
    route("GET", "/report", false, [this](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
      check_params(req, {"ids", "batch_size"});
      const std::vector<std::int64_t> ids = id_list(req, 1);
      if (!report_assets_available())
        throw HttpError{503, "this build has no report assets (Vega, Vega-Lite, vega-embed): run "
                             "scripts/install-deps.sh, then rebuild", ""};
      std::optional<int> batch_size;
      if (auto v = param(req, "batch_size")) batch_size = static_cast<int>(parse_int_param(*v, "batch_size", 1, 1 << 20));
      std::vector<ReportEvaluation> evaluations;
      for (std::int64_t id : ids) {
        ReportEvaluation e;
        e.record = load(id);
        e.options = analysis_options(e.record);
        e.options.batch_size = batch_size;
        evaluations.push_back(std::move(e));
      }
      ReportOptions options;
      options.compare.batch_size = batch_size;
      std::string html;
      try {
        html = render_report(evaluations, options);
      } catch (const std::invalid_argument& e) {
        throw HttpError{400, e.what(), "batch_size"};
      }
      res.status = 200;
      res.set_content(html, "text/html; charset=utf-8");
    }, true);

    route("POST", "/evaluations", true, [this](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
      submit(req, res);
    });
    route("POST", "/jobs", true, [this](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
      submit(req, res);
    });

    route("GET", "/jobs", false, [this](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
      check_params(req, {"state", "limit"});
      JobFilter filter;
      if (auto v = param(req, "state")) {
        filter.state = parse_job_state(*v);
        if (!filter.state)
          throw HttpError{400, "state: expected queued, running, done, failed or cancelled, got '" + *v + "'", "state"};
      }
      if (auto v = param(req, "limit")) filter.limit = static_cast<std::size_t>(parse_int_param(*v, "limit", 1, kMaxLimit));
      json list = json::array();
      for (const JobInfo& j : service([&] { return jobs->list(filter); })) list.push_back(to_json(j));
      send_json(res, 200, {{"jobs", list}});
    });

    route("GET", "/jobs/([^/]+)", false, [this](const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
      check_params(req, {});
      send_json(res, 200, {{"job", to_json(job_or_404(parse_id(m[1], "id")))}});
    });

    route("DELETE", "/jobs/([^/]+)", true,
          [this](const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
            check_params(req, {});
            const std::int64_t id = parse_id(m[1], "id");
            switch (service([&] { return jobs->remove(id); })) {
              case JobService::DeleteResult::kNotFound:
                throw not_found(id);
              case JobService::DeleteResult::kRunning:
                throw HttpError{409, "job " + std::to_string(id) + " is running: cancel it first, then delete it", "id"};
              case JobService::DeleteResult::kDeleted:
                send_json(res, 200, {{"deleted", id}});
                return;
            }
          });

    route("POST", "/jobs/([^/]+)/cancel", true,
          [this](const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
            check_params(req, {});
            const std::int64_t id = parse_id(m[1], "id");
            switch (service([&] { return jobs->cancel(id); })) {
              case JobService::CancelResult::kNotFound:
                throw not_found(id);
              case JobService::CancelResult::kAlreadyFinished:
                throw HttpError{409, "job " + std::to_string(id) + " has finished (" +
                                         to_string(job_or_404(id).state) + "): nothing to cancel",
                                "id"};
              case JobService::CancelResult::kRemoved:
                send_json(res, 200, {{"job", to_json(job_or_404(id))}});
                return;
              case JobService::CancelResult::kStopping:
                // Accepted: the evaluation stops after its current batch and saves its complete runs.
                send_json(res, 202, {{"job", to_json(job_or_404(id))}});
                return;
            }
          });

    route("POST", "/jobs/([^/]+)/retry", true,
          [this](const httplib::Request& req, httplib::Response& res, const std::smatch& m) {
            check_params(req, {});
            const std::int64_t id = parse_id(m[1], "id");
            switch (service([&] { return jobs->retry(id); })) {
              case JobService::RetryResult::kNotFound:
                throw not_found(id);
              case JobService::RetryResult::kNotFinished:
                throw HttpError{409, "job " + std::to_string(id) + " is " + to_string(job_or_404(id).state) +
                                         ": nothing to retry (only failed or cancelled jobs are)",
                                "id"};
              case JobService::RetryResult::kDone:
                throw HttpError{409, "job " + std::to_string(id) + " is done: submit its request again to repeat it",
                                "id"};
              case JobService::RetryResult::kRequeued:
                send_json(res, 200, {{"job", to_json(job_or_404(id))}});
                return;
            }
          });

    route("GET", "/agents", false, [this](const httplib::Request& req, httplib::Response& res, const std::smatch&) {
      check_params(req, {});
      json list = json::array();
      for (const AgentInfo& a : service([&] { return jobs->agents(); })) list.push_back(to_json(a));
      send_json(res, 200, {{"agents", list}});
    });
  }

  static HttpError not_found(std::int64_t id) {
    return HttpError{404, "no job " + std::to_string(id) + " (never submitted, deleted, or forgotten)", "id"};
  }

  // A job read back after an operation on it: another client (or an agent) may have deleted it in between.
  JobInfo job_or_404(std::int64_t id) {
    auto job = service([&] { return jobs->get(id); });
    if (!job) throw not_found(id);
    return std::move(*job);
  }

  // Calls the job service, turning what JobService documents it throws into answers: a request or constraint it
  // refuses is the client's 400; a full queue, a stopping server or an unreachable queue are 503s to retry later.
  template <typename F>
  auto service(F&& call) -> decltype(call()) {
    try {
      return call();
    } catch (const RequestError& e) {
      throw HttpError{400, e.what(), e.field()};
    } catch (const std::length_error& e) {
      throw HttpError{503, e.what(), ""};
    } catch (const std::logic_error& e) {
      throw HttpError{503, e.what(), ""};
    } catch (const StoreError&) {
      throw;  // the dispatcher's 503 naming the store
    } catch (const std::runtime_error& e) {
      throw HttpError{503, std::string("job queue: ") + e.what(), ""};
    }
  }

  // The body of a submission (job_submission_from_json). `request_prefix` is set to where the request's fields are
  // in the body ("" or "request."), for the fields of errors found later by validate().
  static JobSubmission submission_from_body(const httplib::Request& req, std::string& request_prefix) {
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::exception& e) {
      // parse_error, and out_of_range for a number beyond a double (1e400): the client's mistake, not the server's.
      throw HttpError{400, std::string("request body: invalid JSON: ") + e.what(), "body"};
    }
    request_prefix = body.is_object() && body.contains("request") ? "request." : "";
    try {
      return job_submission_from_json(body);
    } catch (const RequestError& e) {
      throw HttpError{400, e.what(), e.field()};
    }
  }

  // POST /evaluations and POST /jobs.
  void submit(const httplib::Request& req, httplib::Response& res) {
    check_params(req, {});
    std::string prefix;
    const JobSubmission submission = submission_from_body(req, prefix);
    // Everything checkable without running (model, framework, ranges, files) is a 400 now, not a failed job later.
    // Only when the server runs the job itself: agents have zoos and frameworks of their own, and validate there.
    if (local_jobs != nullptr) {
      try {
        validate(submission.request, context());
      } catch (const RequestError& e) {
        throw HttpError{400, prefix + e.what(), prefix + e.field()};
      }
    }
    const std::int64_t id = service([&] { return jobs->submit(submission); });
    res.set_header("Location", std::string(kPrefix) + "/jobs/" + std::to_string(id));
    send_json(res, 202, {{"job", to_json(job_or_404(id))}});
  }

  void configure_http() {
    // The front (http_front.h) refuses larger bodies before reading them; this is httplib's own check behind it.
    http.set_payload_max_length(options.max_body_bytes);
    // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second server on the same port would
    // start and silently take half of the connections instead of failing to bind.
    http.set_socket_options([this](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      listen_fd = sock;
    });
    http.set_default_headers({{"X-Content-Type-Options", "nosniff"}, {"Cache-Control", "no-store"}});
    // Every request, pages and static files included, must name this server in its Host header: a page that
    // rebound its own name to this address gets 421 and reads nothing.
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      std::optional<detail::Refusal> refused;
      static const std::string kHost = "Host";
      if (req.get_header_value_count(kHost.c_str()) > 1)
        refused = detail::Refusal{400, "Host: sent more than once", "Host"};
      else
        refused = detail::check_host(header(req, "Host"), host_names);
      if (!refused) return httplib::Server::HandlerResponse::Unhandled;
      send_json(res, refused->status, error_body(refused->status, refused->message, refused->field));
      return httplib::Server::HandlerResponse::Handled;
    });
    if (!options.static_dir.empty() && !http.set_mount_point("/ui", options.static_dir.string()))
      throw std::invalid_argument("static_dir: " + options.static_dir.string() + " is not a folder");
    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(detail::ui_html()), "text/html; charset=utf-8");
    });
    // Browsers ask for it on every page; a 404 would be a console error in the UI for nothing.
    http.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
    http.Get("/api", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(index_html(), "text/html; charset=utf-8");
    });
    auto handler = [this](const httplib::Request& req, httplib::Response& res) { dispatch(req, res); };
    http.Get(".*", handler);
    http.Post(".*", handler);
    http.Put(".*", handler);
    http.Patch(".*", handler);
    http.Delete(".*", handler);
    http.Options(".*", handler);
    // Answers httplib gives itself (413 body too large, 414 URI too long, 400 malformed request): the same JSON.
    http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      std::string message = "HTTP " + std::to_string(res.status);
      if (res.status == 413) message = "request body too large: the limit is set by --max-body-bytes";
      if (res.status == 414) message = "request URI too long";
      if (res.status == 400) message = "malformed HTTP request";
      send_json(res, res.status, error_body(res.status, message, res.status == 413 ? "body" : ""));
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      send_json(res, 500, error_body(500, "internal error: " + what, ""));
    });
  }
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  ServerOptions& o = impl_->options;
  if (!is_loopback_address(o.host) && o.token.empty())
    throw std::invalid_argument("host: " + o.host + " is not a loopback address: writes need a token there (give "
                                "--token-file FILE or XSP_SERVER_TOKEN), or bind to 127.0.0.1");
  if (o.max_body_bytes == 0) throw std::invalid_argument("max_body_bytes: expected at least 1, got 0");
  if (o.threads == 0) throw std::invalid_argument("threads: expected at least 1, got 0");
  if (o.request_timeout.count() < 1 || o.idle_timeout.count() < 1)
    throw std::invalid_argument("request_timeout, idle_timeout: expected at least 1 ms");
  if (o.max_connections == 0 || o.max_connections_per_client == 0 || o.max_heavy_requests == 0)
    throw std::invalid_argument("max_connections, max_connections_per_client, max_heavy_requests: expected at least 1");
  if (o.port < 0 || o.port > 65535)
    throw std::invalid_argument("port: expected 0 to 65535, got " + std::to_string(o.port));
  // On PostgreSQL the agents write the evaluations, not the server: a submitter role (deploy/postgres-roles.sql), which
  // may not insert them, must be able to serve. DELETE of an evaluation then works only for a role allowed to delete.
  impl_->writer = Store::open(o.store, is_postgres_location(o.store.string()) ? StoreAccess::kRead : StoreAccess::kReadWrite);
  Impl* impl = impl_.get();
  if (o.jobs) {
    impl_->jobs = o.jobs;
  } else if (is_postgres_location(o.store.string())) {
    impl_->jobs = open_job_service(o.store.string());
  } else {
    auto local = std::make_shared<JobQueue>(
        [impl](const EvaluationRequest& request, const ProgressCallback& progress, const std::atomic<int>* interrupt) {
          EvaluationContext c = impl->context();
          c.progress = progress;
          c.interrupt = interrupt;
          return evaluate(request, c);
        },
        o.max_queued_jobs);
    impl_->local_jobs = local.get();
    impl_->jobs = std::move(local);
  }
  impl_->add_routes();
  impl_->configure_http();
}

Server::~Server() { stop(); }

int Server::bind() {
  Impl& i = *impl_;
  const bool ok = i.options.port == 0 ? (i.bound_port = i.http.bind_to_any_port(i.options.host)) > 0
                                      : i.http.bind_to_port(i.options.host, i.options.port);
  if (!ok)
    throw std::runtime_error("cannot bind " + i.options.host + ":" + std::to_string(i.options.port) +
                             " (address in use, not an address of this machine, or a privileged port)");
  if (i.options.port != 0) i.bound_port = i.options.port;
  i.http.start_front();
  // This cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into Debian's library): with
  // more clients connecting at once the kernel drops SYNs and each retry costs a client 1 s. Calling listen() again
  // on the listening socket raises the backlog (Linux, POSIX: listen() on a listening socket updates it).
  if (i.listen_fd >= 0) ::listen(i.listen_fd, SOMAXCONN);
  return i.bound_port;
}

void Server::listen() { impl_->http.listen_after_bind(); }

void Server::start() {
  bind();
  impl_->listener = std::thread([this] { listen(); });
  // listen_after_bind() only fails on a socket error; give up rather than wait for ever then.
  for (int waited_ms = 0; !impl_->http.is_running(); ++waited_ms) {
    if (waited_ms > 10'000) throw std::runtime_error("the server did not start listening on " + url() + " within 10 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void Server::stop() {
  if (!impl_) return;
  impl_->stopping = 1;  // a handler hashing or validating gives up (Interrupted: 503)
  impl_->http.stop();
  if (impl_->listener.joinable() && impl_->listener.get_id() != std::this_thread::get_id()) impl_->listener.join();
  impl_->http.stop_front();  // ends the connections; waits for the requests being handled
  if (impl_->local_jobs != nullptr) impl_->local_jobs->shutdown();
}

int Server::port() const { return impl_->bound_port; }

std::string Server::url() const {
  const std::string& h = impl_->options.host;
  const bool v6 = h.find(':') != std::string::npos && h.front() != '[';
  return "http://" + (v6 ? "[" + h + "]" : h) + ":" + std::to_string(impl_->bound_port);
}

JobService& Server::jobs() { return *impl_->jobs; }

}  // namespace xsp
