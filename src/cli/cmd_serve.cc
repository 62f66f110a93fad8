// xsp serve: the REST API of docs/server.md over the store and evaluate(), until SIGINT/SIGTERM.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "common.h"
#include "signals.h"
#ifdef XSP_WITH_SERVER
#include "xsp/queue/slurm.h"
#include "xsp/server/server.h"
#include "xsp/store/store.h"
#endif

namespace xsp::cli {

void add_serve_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand("serve", "serve the REST API over the store (docs/server.md)");
  struct Args {
    std::string host = "127.0.0.1", token_file, static_dir, slurm_dir;
    int port = 8080;
    std::uint64_t max_body_bytes = 1 << 20;
    std::uint64_t threads = 16;
    std::vector<std::string> allowed_hosts;
    std::vector<std::string> data_dirs;
    double request_timeout_s = 10;
    std::uint64_t max_connections = 512, max_connections_per_client = 64, max_heavy_requests = 4;
  };
  auto a = std::make_shared<Args>();
  sub->add_option("--host", a->host,
                  "address to bind; any address other than loopback needs a token (--token-file or XSP_SERVER_TOKEN)")
      ->capture_default_str();
  sub->add_option("--port", a->port, "TCP port; 0 = any free port (printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  sub->add_option("--token-file", a->token_file,
                  "file holding the bearer token that writes (submit, cancel, delete) need; env XSP_SERVER_TOKEN");
  sub->add_option("--max-body-bytes", a->max_body_bytes, "larger request bodies get 413")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 30));
  sub->add_option("--threads", a->threads, "HTTP worker threads: requests handled at once (slow clients hold none)")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1024}));
  sub->add_option("--allowed-host", a->allowed_hosts,
                  "a host name the server answers to besides IP addresses, localhost and this machine's name, e.g. "
                  "the public name of a TLS proxy in front of it (repeat for more); other names get 421");
  sub->add_option("--data-dir", a->data_dirs,
                  "a folder submitted requests may read images and prompts from, besides the zoo and the default "
                  "images (repeat for more); a request naming any other file is refused")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--request-timeout-s", a->request_timeout_s,
                  "a request must arrive whole (headers and body) within this time of its first byte, else 408")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 3600.0));
  sub->add_option("--max-connections", a->max_connections, "open connections at once; more get 503")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{100000}));
  sub->add_option("--max-heavy-requests", a->max_heavy_requests,
                  "analyses, compare, report and trace downloads run at most this many at once (others wait, or "
                  "get 503 when most workers already wait)")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1024}));
  sub->add_option("--max-connections-per-client", a->max_connections_per_client,
                  "open connections per client address; more get 429")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{100000}));
  sub->add_option("--static-dir", a->static_dir, "folder served under /ui/ (the web UI's files)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--slurm-dir", a->slurm_dir,
                  "the folder of `xsp submit --engine slurm` submissions whose tasks GET /api/v1/jobs lists too "
                  "(default $XSP_SLURM_DIR, else ~/.local/share/xsp/slurm, when it exists)")
      ->check(CLI::ExistingDirectory);
  out.push_back({sub, [&g, a]() -> int {
#ifndef XSP_WITH_SERVER
                   (void)g;
                   throw std::runtime_error(
                       "this xsp was built without the server: install libcpp-httplib-dev (scripts/install-deps.sh) "
                       "and configure and build again");
#else
                   if (g.store_path.empty())
                     throw CLI::ValidationError("--store", "expected a file path, got an empty one (from --store or "
                                                          "XSP_STORE)");
                   ServerOptions o;
                   o.host = a->host;
                   o.port = a->port;
                   o.store = g.store_path;
                   o.zoo = g.zoo_path;
                   o.default_images_dir = default_images();
                   o.max_body_bytes = a->max_body_bytes;
                   o.threads = a->threads;
                   o.allowed_hosts = a->allowed_hosts;
                   for (const auto& d : a->data_dirs) o.data_dirs.emplace_back(d);
                   o.request_timeout = std::chrono::milliseconds(std::llround(a->request_timeout_s * 1000));
                   o.max_connections = a->max_connections;
                   o.max_connections_per_client = a->max_connections_per_client;
                   o.max_heavy_requests = a->max_heavy_requests;
                   o.static_dir = a->static_dir;
                   o.clock = g.env.clock;
                   o.record_machine_state = g.env.record_machine_state;
                   const std::string slurm_dir = a->slurm_dir.empty() ? default_slurm_dir() : a->slurm_dir;
                   if (std::filesystem::is_directory(slurm_dir))
                     o.slurm = std::make_shared<slurm::SlurmEngine>(slurm_dir);
                   if (!a->token_file.empty()) o.token = read_token_file(a->token_file);
                   else if (const char* t = std::getenv("XSP_SERVER_TOKEN"); t && *t) o.token = t;
                   std::unique_ptr<Server> server;
                   try {
                     server = std::make_unique<Server>(o);
                   } catch (const std::invalid_argument& e) {
                     throw CLI::ValidationError(e.what());  // the message names the option (host, port...)
                   }
                   server->bind();
                   InterruptGuard interrupt;
                   std::thread listener([&server] { server->listen(); });
                   std::cout << "xsp serve: listening on " << server->url() << " (API " << server->url()
                             << "/api/v1, store " << redact_location(g.store_path) << ", jobs run "
                             << (is_postgres_location(g.store_path) ? "by xsp agent processes" : "here") << ", writes "
                             << (o.token.empty() ? "open: loopback only" : "need the token")
                             << (o.slurm ? ", Slurm tasks from " + slurm_dir : std::string()) << "); Ctrl-C stops"
                             << std::endl;
                   // The signal handler only sets a flag; stopping happens here, outside it.
                   while (interrupt.signal() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
                   std::cerr << "xsp serve: stopping (a running evaluation saves its complete runs first)\n";
                   server->stop();
                   listener.join();
                   // A signal is how a server is meant to stop: a clean stop, exit 0.
                   return kExitOk;
#endif
                 }});
}

}  // namespace xsp::cli
