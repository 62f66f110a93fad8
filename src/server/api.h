// Inside `xsp serve`: what the route handlers (routes_*.cc) share. A handler parses its request (path parts, query
// parameters, body) with the helpers below, calls the service (xsp/service/service.h) or the job service, and renders
// the typed result as JSON; it throws HttpError for an answer other than 2xx, and the dispatcher (server.cc) renders
// every error in the one shape of docs/server.md "Errors".
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "xsp/analysis/table.h"
#include "xsp/server/server.h"
#include "xsp/store/store.h"

namespace xsp::detail {

constexpr const char* kPrefix = "/api/v1";
constexpr std::size_t kMaxFilterText = 256;  // longer filter values are refused: no model name is that long
constexpr std::int64_t kMaxLimit = 1000;     // evaluations (jobs) per page
constexpr std::size_t kMaxCompareIds = 8;

/// What a handler throws for a 4xx/5xx answer; the dispatcher renders it as {"error": {...}}.
struct HttpError {
  int status;
  std::string message;
  std::string field;
};

// ---- answers ------------------------------------------------------------------------------------------------

/// `body` as the answer (invalid UTF-8 echoed from a request is replaced, so the answer is always valid JSON).
void send_json(httplib::Response& res, int status, const nlohmann::json& body);
/// {"error": {"status", "message", "field" (when not empty)}}.
nlohmann::json error_body(int status, const std::string& message, const std::string& field);
/// Tables as JSON, the per-batch-size tables merged with a batch_size column (as `xsp analyze --format json`).
nlohmann::json tables_json(const std::vector<Table>& tables);

// ---- requests -----------------------------------------------------------------------------------------------

/// A header's value, std::nullopt when absent.
std::optional<std::string> header(const httplib::Request& req, const char* name);
/// A query parameter's value, std::nullopt when absent.
std::optional<std::string> param(const httplib::Request& req, const std::string& name);
/// 400 naming the first query parameter that is not in `known` (a misspelt filter never returns everything).
void check_params(const httplib::Request& req, const std::set<std::string>& known);
/// A positive integer id: digits only (no sign, no space, no "1e3"), 1 .. 2^63-1; else 400 naming `field`.
std::int64_t parse_id(const std::string& text, const std::string& field);
/// An integer from `lo` to `hi`; else 400 naming `field`.
std::int64_t parse_int_param(const std::string& text, const std::string& field, std::int64_t lo, std::int64_t hi);
/// A finite number > 0; else 400 naming `field`.
double parse_positive_double(const std::string& text, const std::string& field);
/// "2026-11-24" or "2026-11-24T12:00:00Z"; `end_of_day` widens a bare date to its last second (for `until`).
std::string parse_time_param(const std::string& text, const std::string& field, bool end_of_day);
/// The query parameter `ids`: `min_ids` to kMaxCompareIds evaluation ids, comma-separated, each once (400 "ids").
std::vector<std::int64_t> id_list(const httplib::Request& req, std::size_t min_ids);

// ---- the server's state -------------------------------------------------------------------------------------

/// Read-only store connections, one per concurrent reader: a Store serializes its own users, so sharing one would
/// make every reader wait for the others.
class ReadPool {
 public:
  explicit ReadPool(std::filesystem::path file) : file_(std::move(file)) {}
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
  /// An idle connection, or a new one (Store::open kRead; throws StoreError).
  Lease acquire();

 private:
  void give_back(std::unique_ptr<Store> s);
  static constexpr std::size_t kMaxIdle = 64;
  std::filesystem::path file_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Store>> idle_;
};

/// What the route handlers work with: the options, the store connections and the job service.
struct Api {
  explicit Api(ServerOptions o) : options(std::move(o)), readers(options.store) {}

  ServerOptions options;
  std::unique_ptr<Store> writer;  // the worker's saves and DELETE; Store serializes its own users
  ReadPool readers;
  std::shared_ptr<JobService> jobs;
  JobQueue* local_jobs = nullptr;  // the server's own queue (in `jobs`) when it runs submissions itself; else null
  std::mutex slurm_mutex;          // options.slurm refreshes its folder's job.json files: one request at a time
  std::atomic<int> stopping{0};    // set by stop(): validation in a handler (hashing a big file) gives up

  /// The context submitted requests are validated and run in: every file they name is confined to the zoo and the
  /// data folders, and validation stops when the server does.
  EvaluationContext context() const;
};

/// A route's handler: `match` holds the path pattern's groups (match[1] = the first {id}).
using Handler = void (*)(Api& api, const httplib::Request& req, httplib::Response& res, const std::smatch& match);

/// One documented endpoint (GET /api/v1, the /api page).
struct Endpoint {
  const char* method;
  const char* path;
  const char* what;
};
const std::vector<Endpoint>& endpoints();
/// The page at "/api": the API's index for a browser (GET /api/v1 gives the same list as JSON).
std::string index_html();

// ---- handlers, one file per resource ------------------------------------------------------------------------

namespace routes {
// api.cc
void list_endpoints(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
// routes_models.cc
void list_models(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
// routes_evaluations.cc
void list_evaluations(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void get_evaluation(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void delete_evaluation(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void label_evaluation(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void list_analyses(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void get_analysis(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void get_trace(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
// routes_reports.cc
void get_compare(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void get_report(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
// routes_jobs.cc
void submit(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void list_jobs(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void get_job(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void delete_job(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void cancel_job(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void retry_job(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
void list_agents(Api&, const httplib::Request&, httplib::Response&, const std::smatch&);
}  // namespace routes

}  // namespace xsp::detail
