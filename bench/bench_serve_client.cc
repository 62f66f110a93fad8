// bench-serve's client timing error (issue 27): N concurrent streams against the scripted streaming server of the
// tests (tests/unit/serve/test_server.h), in this process, on this machine.
//
// What is measured, per repeat:
//  - token lateness: for every output chunk, the client's recorded time (now_ns() on entry to libcurl's write
//    callback) minus the server's now_ns() just before it wrote that chunk to its socket. Same clock, so this is the
//    whole delay from the server's write to the recorded timestamp: loopback, the client's wake-up from
//    curl_multi_poll, libcurl's read and any callbacks of other streams handled first. It bounds the "socket read →
//    recorded timestamp" error from above (the read itself is inside it).
//    The client stamps a chunk with the time it first saw its socket ready (client.h), so its place in a burst of
//    ready streams does not delay it; token_min < 0 would mean a chunk stamped before the server wrote it (one that
//    arrived while its socket waited in the queue).
//  - read delay: the client's own queueing (ClientRun::read_delay_ns): from the sighting of a socket to the read of
//    its bytes, i.e. the reads of other streams of the same burst served first.
//  - send lateness: open loop, the same streams released by a Poisson schedule with no cap: sent_ns − scheduled
//    arrival, the client's lateness against its own schedule.
// The server's threads (one per stream) share the machine's cores with the client, as a real server on the same host
// would (server_nice > 0 runs them at that nice level instead). server_nice -1 (the default) uses EventServer below
// instead: one thread, as an engine's event loop.
// Usage: bench_serve_client [streams=500] [repeats=5] [tokens=32] [itl_ms=20] [server_nice=-1]
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <queue>
#include <string>
#include <vector>

#include "../tests/unit/serve/test_server.h"
#include "xsp/serve/client.h"
#include "xsp/stats/stats.h"

namespace {

// A streaming server on one thread (epoll, timerfd), as serving engines are (vLLM and SGLang answer from one asyncio
// loop): every stream's chunks are due at their scripted times (test_server.h's scripts) and written in one pass when
// due, so a decode step of N streams is a burst of N writes, as a batched engine's is. Unlike the test server's
// thread per stream, it leaves the client a core instead of hundreds of threads waking against it.
class EventServer {
 public:
  EventServer() {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(listen_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_, 4096) != 0)
      throw std::runtime_error("event server: cannot listen");
    socklen_t len = sizeof(addr);
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    timer_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    add(listen_);
    add(timer_);
    thread_ = std::thread([this] { loop(); });
  }
  ~EventServer() {
    stop_ = true;
    thread_.join();
    for (auto& [fd, c] : conns_) ::close(fd);
    ::close(timer_);
    ::close(epoll_);
    ::close(listen_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::vector<std::int64_t> writes(const std::string& trace_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return writes_[trace_id];
  }
  int max_concurrent() const { return max_open_; }

 private:
  struct Conn {
    std::string in;
    std::string trace_id;
    xsp::testing::Script script;
    int next = -1;  // the next chunk to write; -1: no request being answered
  };
  struct Due {
    std::int64_t at_ns;
    int fd;
    bool operator>(const Due& o) const { return at_ns > o.at_ns; }
  };

  void add(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  }
  void arm() {
    itimerspec when{};
    if (!due_.empty()) {
      const std::int64_t at = std::max<std::int64_t>(due_.top().at_ns, 1);
      when.it_value.tv_sec = at / 1'000'000'000;
      when.it_value.tv_nsec = at % 1'000'000'000;
    }
    ::timerfd_settime(timer_, TFD_TIMER_ABSTIME, &when, nullptr);
  }
  void send_all(int fd, const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0)
        sent += static_cast<std::size_t>(n);
      else if (n < 0 && errno == EAGAIN)
        std::this_thread::yield();  // a full buffer: the client reads on
      else
        return;
    }
  }
  static std::string chunk(const std::string& data) {
    char size[16];
    std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
    return size + data + "\r\n";
  }
  void on_readable(int fd) {
    Conn& c = conns_[fd];
    char buf[8192];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n > 0) {
        c.in.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        if (c.next >= 0) --open_;
        ::close(fd);
        conns_.erase(fd);
        return;
      }
      break;
    }
    const std::size_t head_end = c.in.find("\r\n\r\n");
    if (c.next >= 0 || head_end == std::string::npos) return;
    const std::string head = c.in.substr(0, head_end);
    std::size_t length = 0;
    for (const char* key : {"Content-Length: ", "content-length: "})
      if (const auto at = head.find(key); at != std::string::npos) length = std::stoul(head.substr(at + 16));
    if (c.in.size() < head_end + 4 + length) return;
    const auto body = nlohmann::json::parse(c.in.substr(head_end + 4, length), nullptr, false);
    c.in.erase(0, head_end + 4 + length);
    c.trace_id.clear();
    for (const char* key : {"traceparent: 00-", "Traceparent: 00-"})
      if (const auto at = head.find(key); at != std::string::npos) c.trace_id = head.substr(at + 16, 32);
    c.script = xsp::testing::parse_script(body.is_object() ? body.value("prompt", "") : "");
    if (c.script.tokens < 0) c.script.tokens = body.is_object() ? body.value("max_tokens", 4) : 4;
    c.next = 0;
    max_open_ = std::max(max_open_.load(), ++open_);
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
    due_.push({xsp::now_ns() + static_cast<std::int64_t>(c.script.ttft_ms * 1e6), fd});
  }
  void on_due(int fd) {
    const auto it = conns_.find(fd);
    if (it == conns_.end() || it->second.next < 0) return;
    Conn& c = it->second;
    const std::string event = "data: {\"choices\": [{\"index\": 0, \"text\": \"tok\"}]}\n\n";
    {
      std::lock_guard<std::mutex> lock(mutex_);
      writes_[c.trace_id].push_back(xsp::now_ns());
    }
    send_all(fd, chunk(event));
    if (++c.next < c.script.tokens) {
      due_.push({xsp::now_ns() + static_cast<std::int64_t>(c.script.itl_ms * 1e6), fd});
      return;
    }
    send_all(fd, chunk("data: {\"choices\": [], \"usage\": {\"prompt_tokens\": 7, \"completion_tokens\": " +
                       std::to_string(c.script.tokens) + "}}\n\n") +
                     chunk("data: [DONE]\n\n") + "0\r\n\r\n");
    c.next = -1;
    --open_;
  }
  void loop() {
    epoll_event events[256];
    while (!stop_) {
      const int ready = ::epoll_wait(epoll_, events, 256, 50);
      for (int i = 0; i < ready; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listen_) {
          for (int c; (c = ::accept4(listen_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
            int one = 1;
            ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            conns_[c];
            add(c);
          }
        } else if (fd == timer_) {
          std::uint64_t expirations = 0;
          (void)!::read(timer_, &expirations, sizeof(expirations));
        } else {
          on_readable(fd);
        }
      }
      // Every chunk that is due, in due order: one pass, as one engine step writes its streams' tokens.
      for (const std::int64_t now = xsp::now_ns(); !due_.empty() && due_.top().at_ns <= now;) {
        const int fd = due_.top().fd;
        due_.pop();
        on_due(fd);
      }
      arm();
    }
  }

  int listen_ = -1, epoll_ = -1, timer_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::map<int, Conn> conns_;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
  int open_ = 0;
  std::atomic<int> max_open_{0};
  std::mutex mutex_;
  std::map<std::string, std::vector<std::int64_t>> writes_;
};

double pct(std::vector<double> v, double p) { return v.empty() ? 0 : xsp::percentile(std::move(v), p); }

struct Repeat {
  double token_p50_us = 0, token_p99_us = 0, token_max_us = 0, token_min_us = 0;
  double read_p50_us = 0, read_p99_us = 0;
  double send_p50_us = 0, send_p99_us = 0;
  std::size_t tokens = 0, ok = 0, max_concurrent = 0;
};

template <typename Server>
Repeat one_repeat(Server& server, int streams, int tokens, int itl_ms, std::uint64_t seed) {
  Repeat out;
  xsp::serve::ClientOptions o;
  o.url = server.url();
  o.model = "bench";
  o.prompts = {{"ttft=50 itl=" + std::to_string(itl_ms) + " tokens=" + std::to_string(tokens), 0, 0}};
  o.num_requests = static_cast<std::uint64_t>(streams);
  o.max_concurrency = streams;  // closed loop: every stream open at once
  o.request_timeout_ns = 120'000'000'000;
  const xsp::serve::ClientRun closed = xsp::serve::run_client(o);
  std::vector<double> late;
  for (const auto& r : closed.requests) {
    out.ok += r.ok ? 1 : 0;
    const auto writes = server.writes(r.trace_id);
    for (std::size_t k = 0; k < std::min(writes.size(), r.token_ns.size()); ++k)
      late.push_back(static_cast<double>(r.token_ns[k] - writes[k]) / 1e3);
  }
  out.tokens = late.size();
  out.max_concurrent = static_cast<std::size_t>(server.max_concurrent());
  out.token_p50_us = pct(late, 50);
  out.token_p99_us = pct(late, 99);
  out.token_max_us = late.empty() ? 0 : *std::max_element(late.begin(), late.end());
  out.token_min_us = late.empty() ? 0 : *std::min_element(late.begin(), late.end());  // < 0: stamped before written
  std::vector<double> read(closed.read_delay_ns.begin(), closed.read_delay_ns.end());
  for (double& v : read) v /= 1e3;
  out.read_p50_us = pct(read, 50);
  out.read_p99_us = pct(read, 99);
  // Open loop: the same number of streams arriving at 1000/s (all open together by the end), no cap.
  o.max_concurrency = 0;
  o.request_rate = 1000;
  o.seed = seed;
  const xsp::serve::ClientRun open = xsp::serve::run_client(o);
  std::vector<double> send;
  for (const auto& r : open.requests) send.push_back(static_cast<double>(r.sent_ns - r.arrival_ns) / 1e3);
  out.send_p50_us = pct(send, 50);
  out.send_p99_us = pct(send, 99);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int streams = argc > 1 ? std::atoi(argv[1]) : 500;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  const int tokens = argc > 3 ? std::atoi(argv[3]) : 32;
  const int itl_ms = argc > 4 ? std::atoi(argv[4]) : 20;
  // -1 (the default): the one-thread event server; 0..19: the test server's thread per stream at that nice level.
  const int server_nice = argc > 5 ? std::atoi(argv[5]) : -1;
  if (streams < 1 || repeats < 1 || tokens < 1 || itl_ms < 0) {
    std::fprintf(stderr, "usage: bench_serve_client [streams>=1] [repeats>=1] [tokens>=1] [itl_ms>=0]\n");
    return 2;
  }
  std::printf(
      "bench-serve client: %d concurrent streams, %d tokens each, ITL %d ms, %d repeats, server %s\n", streams, tokens,
      itl_ms, repeats,
      server_nice < 0 ? "one thread (epoll)" : ("thread per stream, nice " + std::to_string(server_nice)).c_str());
  std::printf("%-7s %8s %6s %9s %13s %13s %13s %13s %12s %12s %12s %12s\n", "repeat", "tokens", "ok", "max_conc",
              "token_min_us", "token_p50_us", "token_p99_us", "token_max_us", "read_p50_us", "read_p99_us",
              "send_p50_us", "send_p99_us");
  std::vector<double> p50s, p99s, read50s, read99s, send50s, send99s;
  for (int i = 0; i < repeats; ++i) {
    Repeat r;
    if (server_nice < 0) {
      EventServer server;
      r = one_repeat(server, streams, tokens, itl_ms, 100 + static_cast<std::uint64_t>(i));
    } else {
      xsp::testing::ScriptedServer server(streams + 16, server_nice);
      r = one_repeat(server, streams, tokens, itl_ms, 100 + static_cast<std::uint64_t>(i));
    }
    std::printf("%-7d %8zu %6zu %9zu %13.1f %13.1f %13.1f %13.1f %12.1f %12.1f %12.1f %12.1f\n", i + 1, r.tokens, r.ok,
                r.max_concurrent, r.token_min_us, r.token_p50_us, r.token_p99_us, r.token_max_us, r.read_p50_us,
                r.read_p99_us, r.send_p50_us, r.send_p99_us);
    p50s.push_back(r.token_p50_us);
    p99s.push_back(r.token_p99_us);
    read50s.push_back(r.read_p50_us);
    read99s.push_back(r.read_p99_us);
    send50s.push_back(r.send_p50_us);
    send99s.push_back(r.send_p99_us);
  }
  auto spread = [](const char* name, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::printf("%-14s median over repeats %9.1f us  (min %.1f, max %.1f)\n", name, xsp::percentile(v, 50), v.front(),
                v.back());
  };
  spread("token p50", p50s);
  spread("token p99", p99s);
  spread("read p50", read50s);
  spread("read p99", read99s);
  spread("send p50", send50s);
  spread("send p99", send99s);
  return 0;
}
