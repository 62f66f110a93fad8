// The connection front of `xsp serve` (docs/server.md "Security"): cpp-httplib parses and routes, but it serves each
// connection on a pool thread with blocking reads, so 16 clients sending one header byte every few seconds hold all 16
// threads and nobody else gets an answer; its request line and header lines are read whole whatever their length.
// GuardedHttpServer keeps httplib's parser and router and replaces only how sockets are read: one event-loop thread
// reads every connection without blocking, under bounds on time, size and count, and hands a worker a request only
// when all of it (head and body) has arrived. A slow or idle client then costs a buffer, never a thread.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace xsp::detail {

/// Bounds of the connection front. Each refusal is answered with the JSON error shape of docs/server.md and the
/// connection is closed.
struct FrontLimits {
  std::size_t workers = 16;                          ///< threads that run requests (handlers) at once
  std::size_t max_connections = 512;                 ///< open connections at once; more get 503
  std::size_t max_connections_per_client = 64;       ///< open connections per remote address; more get 429
  std::size_t max_pending_requests = 1024;           ///< complete requests waiting for a worker; more get 503
  std::size_t max_request_line_bytes = 8192;         ///< "GET /path?query HTTP/1.1" longer gets 414
  std::size_t max_header_bytes = 32768;              ///< request line + headers longer gets 431
  std::size_t max_body_bytes = 1 << 20;              ///< Content-Length larger gets 413 before the body is read
  std::size_t max_buffered_body_bytes = 256u << 20;  ///< bodies held at once over all connections; beyond: 503
  /// A request must arrive whole (head and body) within this time from its first byte; else 408.
  std::chrono::milliseconds request_timeout{10'000};
  /// A connection with no request under way is closed after this long (new connections and keep-alive ones).
  std::chrono::milliseconds idle_timeout{5'000};
  /// A response write that makes no progress for this long ends the connection (a client that stopped reading).
  std::chrono::milliseconds write_timeout{10'000};
  std::size_t max_requests_per_connection = 1000;  ///< then "Connection: close"
};

/// What the front refused or dropped since it started (for logs and tests).
struct FrontCounts {
  std::uint64_t accepted = 0;        ///< connections taken
  std::uint64_t requests = 0;        ///< requests handed to a worker
  std::uint64_t refused_busy = 0;    ///< 503: too many connections, pending requests or buffered bodies
  std::uint64_t refused_client = 0;  ///< 429: too many connections from one address
  std::uint64_t timed_out = 0;       ///< 408: a request that did not arrive whole in time
  std::uint64_t too_large = 0;       ///< 413, 414, 431
  std::uint64_t malformed = 0;       ///< 400, 411 refused by the front
  std::uint64_t idle_closed = 0;     ///< connections closed for idling
};

/// httplib::Server whose sockets are read by the front (see the file comment). Routes, handlers, error and exception
/// handlers are httplib's, set as usual; `new_task_queue` and the read/write timeouts of httplib are not used.
/// Call stop() (httplib's: stops accepting) and then stop_front() (ends the loop and the workers, waiting for
/// requests being handled) before destroying it.
class GuardedHttpServer : public httplib::Server {
 public:
  explicit GuardedHttpServer(FrontLimits limits);
  ~GuardedHttpServer() override;
  GuardedHttpServer(const GuardedHttpServer&) = delete;
  GuardedHttpServer& operator=(const GuardedHttpServer&) = delete;

  /// Starts the event loop and the workers; call once, before listening. Throws std::system_error when epoll or
  /// eventfd cannot be created.
  void start_front();
  /// Closes every connection, ends the loop and the workers (a request being handled finishes first). Idempotent.
  void stop_front();
  FrontCounts counts() const;
  const FrontLimits& limits() const { return limits_; }

  /// Runs one complete request on httplib's parser and router (for the front's workers).
  bool serve(httplib::Stream& stream, bool close_connection, bool& connection_closed);

 private:
  // httplib's accept loop calls this for every accepted socket: the front adopts it and returns at once.
  bool process_and_close_socket(socket_t sock) override;

  struct Front;
  FrontLimits limits_;
  std::unique_ptr<Front> front_;
};

}  // namespace xsp::detail
