// The REST API of docs/server.md on cpp-httplib: the route table, the dispatcher and the Server around them. Routing is
// done here, not by httplib's per-method tables, so that a known path with the wrong method is a 405 naming the
// allowed ones and every error has the same JSON shape. The handlers are in routes_*.cc, one file per resource; they
// call the service (xsp/service/service.h) that the CLI calls too.
#include "xsp/server/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "../report/report_assets.h"
#include "api.h"
#include "http_front.h"
#include "ui.h"
#include "xsp/eval/measurement.h"
#include "xsp/manifest/manifest.h"
#include "xsp/queue/postgres_queue.h"
#include "xsp/server/http_policy.h"
#include "xsp/service/service.h"
#include "xsp/store/store.h"

namespace xsp {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using detail::error_body;
using detail::header;
using detail::HttpError;
using detail::kPrefix;
using detail::send_json;

// Timing depends on the secret's length only, never on where the first difference is.
bool constant_time_equal(const std::string& given, const std::string& secret) {
  unsigned char diff = given.size() != secret.size() ? 1 : 0;
  for (std::size_t i = 0; i < secret.size(); ++i)
    diff |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ secret[i]);
  return diff == 0;
}

// What the service throws, as answers. A missing evaluation is named without the store's location, which is the
// server's business, not the client's.
HttpError http_error(const service::ServiceError& e) {
  if (const auto* missing = dynamic_cast<const service::EvaluationNotFound*>(&e))
    return {404, "no evaluation " + std::to_string(missing->id()) + " in the store", e.field()};
  if (dynamic_cast<const service::NotFound*>(&e) != nullptr) return {404, e.what(), e.field()};
  if (dynamic_cast<const service::InvalidArgument*>(&e) != nullptr) return {400, e.what(), e.field()};
  return {503, e.what(), ""};  // Unavailable: not the request's fault
}

enum RouteFlags : unsigned {
  kRead = 0,
  kWrite = 1,  // changes something: Content-Type, Origin and token checks (docs/server.md "Security")
  kHeavy = 2,  // loads whole evaluations and computes over them: ServerOptions::max_heavy_requests
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

struct Server::Impl : detail::Api {
  struct Route {
    std::string method;
    std::regex pattern;
    bool write;
    bool heavy;
    detail::Handler handler;
  };

  detail::GuardedHttpServer http;
  detail::HostNames host_names;
  std::vector<Route> routes;
  std::thread listener;
  int bound_port = -1;
  int listen_fd = -1;  // the listening socket, seen by the socket-options hook before httplib's listen()

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
      : detail::Api(std::move(o)),
        http(front_limits(options)),
        host_names(detail::server_host_names(options.host, options.allowed_hosts)) {}

  void route(const char* method, const char* pattern, unsigned flags, detail::Handler handler) {
    routes.push_back(
        {method, std::regex(std::string(kPrefix) + pattern), (flags & kWrite) != 0, (flags & kHeavy) != 0, handler});
  }

  // The API: one line per endpoint (docs/server.md "Endpoints"); {id} and {analysis} are the groups of the pattern.
  void add_routes() {
    using namespace detail::routes;
    route("GET", "/?", kRead, list_endpoints);
    route("GET", "/models", kRead, list_models);
    route("GET", "/evaluations", kRead, list_evaluations);
    route("GET", "/evaluations/([^/]+)", kRead, get_evaluation);
    route("DELETE", "/evaluations/([^/]+)", kWrite, delete_evaluation);
    route("PATCH", "/evaluations/([^/]+)", kWrite, label_evaluation);
    route("GET", "/evaluations/([^/]+)/analyses", kRead, list_analyses);
    route("GET", "/evaluations/([^/]+)/analyses/([^/]+)", kHeavy, get_analysis);
    route("GET", "/evaluations/([^/]+)/trace", kHeavy, get_trace);
    route("GET", "/compare", kHeavy, get_compare);
    route("GET", "/report", kHeavy, get_report);
    route("POST", "/evaluations", kWrite, submit);
    route("POST", "/jobs", kWrite, submit);
    route("GET", "/jobs", kRead, list_jobs);
    route("GET", "/jobs/([^/]+)", kRead, get_job);
    route("DELETE", "/jobs/([^/]+)", kWrite, delete_job);
    route("POST", "/jobs/([^/]+)/cancel", kWrite, cancel_job);
    route("POST", "/jobs/([^/]+)/retry", kWrite, retry_job);
    route("GET", "/agents", kRead, list_agents);
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
    HeavySlot(HeavyGate& gate, std::size_t max_running, std::size_t max_waiting, httplib::Response& res) : gate_(gate) {
      std::unique_lock lock(gate_.mu);
      if (gate_.running >= max_running) {
        if (gate_.waiting >= max_waiting) refuse(max_running, res);
        ++gate_.waiting;
        const bool got =
            gate_.freed.wait_for(lock, std::chrono::seconds(30), [&] { return gate_.running < max_running; });
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
      throw HttpError{503,
                      std::to_string(max_running) +
                          " requests that load whole evaluations (analyses, compare, "
                          "report, trace) are running and others wait: retry in a moment",
                      ""};
    }
    HeavyGate& gate_;
  };

  void authorize(const httplib::Request& req) const {
    if (options.token.empty()) return;
    if (!req.has_header("Authorization"))
      throw HttpError{401,
                      "this server needs a token for " + req.method + ": send the header 'Authorization: Bearer TOKEN'",
                      "Authorization"};
    const std::string value = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (value.rfind(kBearer, 0) != 0) throw HttpError{401, "Authorization: expected 'Bearer TOKEN'", "Authorization"};
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
        if (r.heavy)
          slot.emplace(heavy, options.max_heavy_requests,
                       std::max<std::size_t>(1, options.threads > 2 ? options.threads - 2 : 1), res);
        try {
          r.handler(*this, req, res, m);
        } catch (const service::ServiceError& e) {
          throw http_error(e);
        }
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
      send_json(res, 503,
                error_body(503,
                           "out of memory while answering " + req.method + " " + req.path +
                               ": the evaluations it reads are too large for this server's memory",
                           ""));
    } catch (const std::exception& e) {
      send_json(res, 500, error_body(500, std::string("internal error: ") + e.what(), ""));
    }
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
    // The list's chart draws with the same Vega, Vega-Lite and vega-embed the report inlines: served from this
    // process, so the UI fetches nothing from another host.
    // Not a structured binding: Clang 14 (the style check's clang-tidy) cannot capture one in a lambda.
    for (const auto& asset :
         {std::pair{"vega.min.js", &report_assets::vega}, std::pair{"vega-lite.min.js", &report_assets::vega_lite},
          std::pair{"vega-embed.min.js", &report_assets::vega_embed}}) {
      auto* text = asset.second;
      http.Get(std::string("/assets/") + asset.first, [text](const httplib::Request&, httplib::Response& res) {
        if (!report_assets::available()) {
          send_json(
              res, 404,
              error_body(404, "this build has no report assets (Vega): run scripts/install-deps.sh, rebuild", ""));
          return;
        }
        res.set_content(std::string(text()), "text/javascript; charset=utf-8");
      });
    }
    // Browsers ask for it on every page; a 404 would be a console error in the UI for nothing.
    http.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
    http.Get("/api", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(detail::index_html(), "text/html; charset=utf-8");
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
    throw std::invalid_argument("host: " + o.host +
                                " is not a loopback address: writes need a token there (give "
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
  impl_->writer =
      Store::open(o.store, is_postgres_location(o.store.string()) ? StoreAccess::kRead : StoreAccess::kReadWrite);
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
