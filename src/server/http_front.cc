// The connection front of `xsp serve`: see http_front.h.
#include "http_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

namespace xsp::detail {
namespace {

using Clock = std::chrono::steady_clock;

const char* reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// A complete HTTP response in the error shape of docs/server.md, ending the connection.
std::string error_response(int status, const std::string& message, const std::string& field) {
  nlohmann::json e = {{"status", status}, {"message", message}};
  if (!field.empty()) e["field"] = field;
  const std::string body =
      nlohmann::json{{"error", e}}.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
                  "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                  "\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n";
  if (status == 503 || status == 429) r += "Retry-After: 1\r\n";
  return r + "\r\n" + body;
}

void address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &v4.sin_addr, buf, sizeof buf);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, buf, sizeof buf);
    port = ntohs(v6.sin6_port);
  }
  ip = buf;
}

// Best effort: a refusal is small and the socket's buffer is empty when it is sent.
void send_now(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

bool ci_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// httplib's accept loop "enqueues" process_and_close_socket; ours only hands the socket over, so it runs inline.
class InlineQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

struct Peer {
  std::string remote_ip, local_ip;
  int remote_port = 0, local_port = 0;
};

// What a worker gives httplib: the request's bytes from memory (all of them arrived before the worker got it), the
// response written to the socket with a bound on how long a write may make no progress.
class RequestStream final : public httplib::Stream {
 public:
  RequestStream(int fd, std::string_view request, const Peer& peer, std::chrono::milliseconds write_timeout)
      : fd_(fd), request_(request), peer_(peer), timeout_ms_(static_cast<int>(write_timeout.count())) {}

  bool is_readable() const override { return pos_ < request_.size(); }
  bool is_writable() const override {
    pollfd p{fd_, POLLOUT, 0};
    return ::poll(&p, 1, timeout_ms_) > 0 && (p.revents & POLLOUT) != 0;
  }
  // httplib reads no further than the head and Content-Length, which is what the front buffered: the end of the
  // buffer is the end of the request.
  ssize_t read(char* ptr, size_t size) override {
    const std::size_t n = std::min(size, request_.size() - pos_);
    std::memcpy(ptr, request_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::send(fd_, ptr + done, size - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{fd_, POLLOUT, 0};
        const int r = ::poll(&p, 1, timeout_ms_);
        if (r > 0 || (r < 0 && errno == EINTR)) continue;
      }
      failed_ = true;
      return -1;
    }
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = peer_.remote_ip;
    port = peer_.remote_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = peer_.local_ip;
    port = peer_.local_port;
  }
  socket_t socket() const override { return fd_; }
  bool failed() const { return failed_; }

 private:
  int fd_;
  std::string_view request_;
  const Peer& peer_;
  int timeout_ms_;
  std::size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace

struct GuardedHttpServer::Front {
  enum class State {
    kIdle,     // no byte of the next request yet
    kReading,  // a request under way
    kBusy,     // a worker has it (not in epoll)
    kClosing,  // refused: the answer is sent, input is drained until the peer closes or a short deadline
  };
  struct Conn {
    int fd = -1;
    Peer peer;
    std::string in;  // received and not yet consumed
    State state = State::kIdle;
    Clock::time_point deadline;
    std::size_t head_end = 0;     // bytes of request line + headers once the head is complete, else 0
    std::size_t request_len = 0;  // head + body once known
    std::size_t reserved = 0;     // body bytes counted against max_buffered_body_bytes
    std::size_t served = 0;
    bool peer_closed = false;
  };

  Front(GuardedHttpServer& s, const FrontLimits& l) : server(s), limits(l) {}

  GuardedHttpServer& server;
  const FrontLimits& limits;
  int ep = -1, wake_fd = -1;
  std::thread loop;
  std::vector<std::thread> workers;
  std::atomic<bool> stopping{false};
  bool started = false, stopped = false;

  // Handed to the loop by the accept thread (sockets) and by the workers (finished requests).
  std::mutex hand_mu;
  std::vector<int> adopted;
  std::vector<std::pair<Conn*, bool>> returned;  // keep-alive?

  std::mutex work_mu;
  std::condition_variable work_cv;
  std::deque<Conn*> work;
  bool work_closed = false;

  // Owned by the loop thread (and by stop_front() once the threads are joined).
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  std::unordered_map<std::string, std::size_t> per_client;
  std::size_t buffered_body = 0;
  std::size_t in_flight = 0;  // requests queued for or held by workers

  struct AtomicCounts {
    std::atomic<std::uint64_t> accepted{0}, requests{0}, refused_busy{0}, refused_client{0}, timed_out{0}, too_large{0},
        malformed{0}, idle_closed{0};
  } n;

  void wake() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = ::write(wake_fd, &one, sizeof one);
  }

  void adopt(int fd) {
    {
      std::lock_guard lock(hand_mu);
      if (!stopping) {
        adopted.push_back(fd);
        fd = -1;
      }
    }
    if (fd >= 0) {
      ::close(fd);
      return;
    }
    wake();
  }

  void give_back(Conn* c, bool keep) {
    {
      std::lock_guard lock(hand_mu);
      returned.emplace_back(c, keep);
    }
    wake();
  }

  // ---- the loop --------------------------------------------------------------------------------------------

  void run() {
    std::vector<epoll_event> events(256);
    while (!stopping) {
      const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), next_timeout_ms());
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < n; ++i) {
        if (events[static_cast<std::size_t>(i)].data.fd == wake_fd) {
          std::uint64_t v = 0;
          [[maybe_unused]] const ssize_t r = ::read(wake_fd, &v, sizeof v);
        } else {
          on_readable(events[static_cast<std::size_t>(i)].data.fd);
        }
      }
      take_handovers();
      expire();
    }
    // Not busy: closed now. Busy ones are closed by stop_front() once their workers have given them back.
    std::vector<int> idle;
    for (const auto& [fd, c] : conns)
      if (c->state != State::kBusy) idle.push_back(fd);
    for (int fd : idle) close_conn(*conns.at(fd));
  }

  int next_timeout_ms() const {
    const auto now = Clock::now();
    auto soonest = now + std::chrono::milliseconds(1000);
    for (const auto& [fd, c] : conns)
      if (c->state != State::kBusy) soonest = std::min(soonest, c->deadline);
    return static_cast<int>(
        std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(soonest - now).count() + 1));
  }

  void take_handovers() {
    std::vector<int> fds;
    std::vector<std::pair<Conn*, bool>> back;
    {
      std::lock_guard lock(hand_mu);
      fds.swap(adopted);
      back.swap(returned);
    }
    for (int fd : fds) accept_conn(fd);
    for (auto [c, keep] : back) resume(*c, keep);
  }

  void accept_conn(int fd) {
    n.accepted++;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    // httplib writes the head and the body of a response separately: without this, Nagle's algorithm holds the
    // body until the client's delayed ACK of the head (40 ms per response).
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      address_of(a, c->peer.remote_ip, c->peer.remote_port);
    len = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      address_of(a, c->peer.local_ip, c->peer.local_port);
    if (conns.size() >= limits.max_connections) {
      n.refused_busy++;
      send_now(fd, error_response(503,
                                  "the server has " + std::to_string(conns.size()) +
                                      " connections open, its limit: retry in a moment",
                                  ""));
      ::close(fd);
      return;
    }
    if (per_client[c->peer.remote_ip] >= limits.max_connections_per_client) {
      n.refused_client++;
      send_now(fd, error_response(429,
                                  "address " + c->peer.remote_ip + " has " +
                                      std::to_string(limits.max_connections_per_client) +
                                      " connections open, the limit per client: reuse them (keep-alive)",
                                  ""));
      if (per_client[c->peer.remote_ip] == 0) per_client.erase(c->peer.remote_ip);
      ::close(fd);
      return;
    }
    per_client[c->peer.remote_ip]++;
    c->deadline = Clock::now() + limits.idle_timeout;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    Conn& ref = *c;
    conns.emplace(fd, std::move(c));
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) close_conn(ref);
  }

  void close_conn(Conn& c) {
    ::epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    buffered_body -= c.reserved;
    if (auto it = per_client.find(c.peer.remote_ip); it != per_client.end() && --it->second == 0) per_client.erase(it);
    conns.erase(c.fd);  // destroys c
  }

  void on_readable(int fd) {
    const auto it = conns.find(fd);
    if (it == conns.end()) return;
    Conn& c = *it->second;
    if (c.state == State::kBusy) return;
    // At most one head beyond the current request: a client cannot make the front buffer without bound.
    const std::size_t cap = c.head_end == 0 ? limits.max_header_bytes + 1 : c.request_len + limits.max_header_bytes;
    char buf[16384];
    bool error = false;
    while (c.state == State::kClosing || c.in.size() < cap) {
      const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
      if (r > 0) {
        if (c.state != State::kClosing) c.in.append(buf, static_cast<std::size_t>(r));
        continue;
      }
      if (r == 0) {
        c.peer_closed = true;
      } else if (errno == EINTR) {
        continue;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        error = true;
      }
      break;
    }
    if (error || (c.state == State::kClosing && c.peer_closed)) return close_conn(c);
    if (c.state == State::kClosing) return;
    if (c.state == State::kIdle && !c.in.empty()) {
      c.state = State::kReading;
      c.deadline = Clock::now() + limits.request_timeout;
    }
    advance(c);
    // A client that closed its side with a request half sent will never finish it; one that sent a whole request
    // and then shut down its writing side (HTTP/1.0 style) gets its answer first (advance() dispatched it).
    if (c.peer_closed && c.state != State::kBusy && conns.count(fd) != 0) close_conn(c);
  }

  // Parses what arrived: refuses what breaks a limit, and hands a complete request to a worker.
  void advance(Conn& c) {
    if (c.head_end == 0 && !parse_head(c)) return;
    if (c.in.size() >= c.request_len) dispatch(c);
  }

  // Returns true once the head is complete and acceptable (c.head_end and c.request_len set); false while it is
  // incomplete or after refusing it.
  bool parse_head(Conn& c) {
    const std::size_t line_end = c.in.find('\n');
    if ((line_end == std::string::npos ? c.in.size() : line_end) > limits.max_request_line_bytes) {
      refuse(c, 414,
             "request line longer than " + std::to_string(limits.max_request_line_bytes) +
                 " bytes (the limit of a method, path and query)",
             "");
      return false;
    }
    // httplib ends the head at an empty CRLF line; lines ending in a bare LF are skipped by it, and so here.
    const std::size_t blank = c.in.find("\r\n\r\n");
    if (blank == std::string::npos) {
      if (c.in.size() > limits.max_header_bytes)
        refuse(
            c, 431,
            "request head (request line and headers) longer than " + std::to_string(limits.max_header_bytes) + " bytes",
            "");
      return false;
    }
    std::size_t head_end = blank + 4;
    if (head_end > limits.max_header_bytes) {
      refuse(
          c, 431,
          "request head (request line and headers) longer than " + std::to_string(limits.max_header_bytes) + " bytes",
          "");
      return false;
    }
    std::optional<std::uint64_t> length;
    std::size_t expect_begin = std::string::npos, expect_end = 0;
    for (std::size_t pos = line_end + 1; pos < blank + 2;) {
      const std::size_t eol = c.in.find('\n', pos);
      const std::string_view line(c.in.data() + pos, eol - pos);
      const std::size_t next = eol + 1;
      if (line.empty() || line.back() != '\r') {
        pos = next;
        continue;
      }
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0) {
        pos = next;
        continue;  // httplib ignores it too
      }
      const std::string_view name = line.substr(0, colon);
      if (name.find_first_of(" \t") != std::string_view::npos) {
        refuse(c, 400,
               "header '" + std::string(trim(name)) +
                   "': no whitespace is allowed before the colon "
                   "(RFC 9112 §5.1)",
               "");
        return false;
      }
      const std::string_view value = trim(line.substr(colon + 1));
      if (ci_equal(name, "Transfer-Encoding")) {
        refuse(c, 411, "Transfer-Encoding: not accepted; send the body with a Content-Length", "Transfer-Encoding");
        return false;
      }
      if (ci_equal(name, "Content-Length")) {
        const bool digits = !value.empty() && value.size() <= 19 &&
                            std::all_of(value.begin(), value.end(), [](unsigned char ch) { return std::isdigit(ch); });
        const std::uint64_t v = digits ? std::stoull(std::string(value)) : 0;
        if (!digits || (length && *length != v)) {
          refuse(c, 400, "Content-Length: expected one non-negative integer, got '" + std::string(value) + "'",
                 "Content-Length");
          return false;
        }
        length = v;
      }
      if (ci_equal(name, "Expect") && ci_equal(value, "100-continue")) {
        expect_begin = pos;
        expect_end = next;
      }
      pos = next;
    }
    const std::uint64_t body = length.value_or(0);
    if (body > limits.max_body_bytes) {
      refuse(c, 413,
             "request body: " + std::to_string(body) + " bytes, more than the limit of " +
                 std::to_string(limits.max_body_bytes) + " (--max-body-bytes)",
             "body");
      return false;
    }
    if (buffered_body + body > limits.max_buffered_body_bytes) {
      refuse(c, 503,
             "the server holds " + std::to_string(buffered_body) +
                 " bytes of request bodies, its limit: retry "
                 "in a moment",
             "");
      n.refused_busy++;
      return false;
    }
    c.reserved = static_cast<std::size_t>(body);
    buffered_body += c.reserved;
    if (expect_begin != std::string::npos) {
      // The client waits for this before it sends the body. httplib would send its own after the body arrived,
      // so the header is taken out of what it sees.
      c.in.erase(expect_begin, expect_end - expect_begin);
      head_end -= expect_end - expect_begin;
      if (c.in.size() < head_end + body) send_now(c.fd, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    c.head_end = head_end;
    c.request_len = head_end + static_cast<std::size_t>(body);
    return true;
  }

  void refuse(Conn& c, int status, const std::string& message, const std::string& field) {
    if (status == 413 || status == 414 || status == 431) n.too_large++;
    if (status == 400 || status == 411) n.malformed++;
    if (status == 408) n.timed_out++;
    send_now(c.fd, error_response(status, message, field));
    ::shutdown(c.fd, SHUT_WR);
    buffered_body -= c.reserved;
    c.reserved = 0;
    c.in.clear();
    // Draining what the client still sends lets it read the answer: closing with unread input would reset the
    // connection, and a reset can reach the client before the answer does.
    c.state = State::kClosing;
    c.deadline = Clock::now() + std::chrono::milliseconds(1000);
  }

  void dispatch(Conn& c) {
    if (in_flight >= limits.workers + limits.max_pending_requests) {
      n.refused_busy++;
      return refuse(c, 503,
                    std::to_string(in_flight) + " requests are waiting for the server's " +
                        std::to_string(limits.workers) + " workers: retry in a moment",
                    "");
    }
    ::epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    c.state = State::kBusy;
    ++in_flight;
    n.requests++;
    {
      std::lock_guard lock(work_mu);
      work.push_back(&c);
    }
    work_cv.notify_one();
  }

  void resume(Conn& c, bool keep) {
    --in_flight;
    buffered_body -= c.reserved;
    c.reserved = 0;
    c.served++;
    c.in.erase(0, std::min(c.request_len, c.in.size()));
    c.head_end = c.request_len = 0;
    if (!keep || stopping) return close_conn(c);
    c.state = c.in.empty() ? State::kIdle : State::kReading;
    c.deadline = Clock::now() + (c.in.empty() ? limits.idle_timeout : limits.request_timeout);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c.fd;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) != 0) return close_conn(c);
    if (!c.in.empty()) advance(c);  // a pipelined request that arrived with the last one
  }

  void expire() {
    const auto now = Clock::now();
    std::vector<Conn*> due;
    for (const auto& [fd, c] : conns)
      if (c->state != State::kBusy && c->deadline <= now) due.push_back(c.get());
    for (Conn* c : due) {
      if (c->state == State::kReading) {
        refuse(*c, 408,
               "request: not received whole within " + std::to_string(limits.request_timeout.count()) +
                   " ms of its first byte",
               "");
      } else {
        if (c->state == State::kIdle) n.idle_closed++;
        close_conn(*c);
      }
    }
  }

  // ---- the workers -----------------------------------------------------------------------------------------

  void work_loop() {
    for (;;) {
      Conn* c = nullptr;
      {
        std::unique_lock lock(work_mu);
        work_cv.wait(lock, [&] { return !work.empty() || work_closed; });
        if (work.empty()) return;
        c = work.front();
        work.pop_front();
      }
      RequestStream stream(c->fd, std::string_view(c->in).substr(0, c->request_len), c->peer, limits.write_timeout);
      const bool close_after = c->peer_closed || stopping || c->served + 1 >= limits.max_requests_per_connection;
      bool closed = false, ok = false;
      try {
        ok = server.serve(stream, close_after, closed);
      } catch (...) {
        ok = false;  // httplib's exception handler answers handler errors; this is a failed write or worse
      }
      give_back(c, ok && !closed && !close_after && !stream.failed());
    }
  }
};

GuardedHttpServer::GuardedHttpServer(FrontLimits limits)
    : limits_(limits), front_(std::make_unique<Front>(*this, limits_)) {
  new_task_queue = [] { return new InlineQueue(); };
  // Only for the Keep-Alive header httplib writes: the front enforces both.
  set_keep_alive_max_count(limits_.max_requests_per_connection);
  set_keep_alive_timeout(std::max<time_t>(1, static_cast<time_t>(limits_.idle_timeout.count() / 1000)));
}

GuardedHttpServer::~GuardedHttpServer() { stop_front(); }

void GuardedHttpServer::start_front() {
  Front& f = *front_;
  if (f.started) return;
  f.ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (f.ep < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  f.wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (f.wake_fd < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = f.wake_fd;
  ::epoll_ctl(f.ep, EPOLL_CTL_ADD, f.wake_fd, &ev);
  f.started = true;
  f.loop = std::thread([&f] { f.run(); });
  for (std::size_t i = 0; i < std::max<std::size_t>(1, limits_.workers); ++i)
    f.workers.emplace_back([&f] { f.work_loop(); });
}

void GuardedHttpServer::stop_front() {
  Front& f = *front_;
  if (!f.started || f.stopped) return;
  f.stopped = true;
  f.stopping = true;
  f.wake();
  if (f.loop.joinable()) f.loop.join();
  {
    std::lock_guard lock(f.work_mu);
    f.work_closed = true;
  }
  f.work_cv.notify_all();
  for (auto& t : f.workers) t.join();
  // Sockets accepted or given back after the loop ended, and the connections the workers held.
  for (int fd : f.adopted) ::close(fd);
  f.adopted.clear();
  f.returned.clear();
  while (!f.conns.empty()) f.close_conn(*f.conns.begin()->second);
  ::close(f.wake_fd);
  ::close(f.ep);
}

FrontCounts GuardedHttpServer::counts() const {
  const auto& n = front_->n;
  return {n.accepted,  n.requests,  n.refused_busy, n.refused_client,
          n.timed_out, n.too_large, n.malformed,    n.idle_closed};
}

bool GuardedHttpServer::serve(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
  return process_request(stream, close_connection, connection_closed, nullptr);
}

bool GuardedHttpServer::process_and_close_socket(socket_t sock) {
  front_->adopt(sock);
  return true;
}

}  // namespace xsp::detail
