// A scripted OpenAI-compatible streaming server for the tests of bench-serve: cpp-httplib's server in-process on
// 127.0.0.1 at an ephemeral port. Each request's prompt is its script, "key=value" words:
//   ttft=MS        delay before the first chunk (default 0)
//   itl=MS         delay between chunks (default 0)
//   tokens=N       chunks with text (default: the request's max_tokens)
//   per_chunk=K    tokens per chunk, as usage reports them (default 1)
//   stall_at=I stall=MS   an extra delay before chunk I (0-based)
//   usage=0        no usage chunk
//   mode=ok | http500 | http400 | malformed | nodone | error_event | empty | garbage (64 KiB of random bytes)
// The server records, per trace id (from the traceparent header), when it wrote each text chunk (now_ns(), the
// client's clock), and counts the streams open at once.
#pragma once

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "xsp/trace/trace.h"

namespace xsp::testing {

struct Script {
  double ttft_ms = 0, itl_ms = 0, stall_ms = 0;
  int tokens = -1, per_chunk = 1, stall_at = -1;
  bool usage = true;
  std::string mode = "ok";
};

inline Script parse_script(const std::string& text) {
  Script s;
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    const auto eq = w.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = w.substr(0, eq), v = w.substr(eq + 1);
    if (k == "ttft") s.ttft_ms = std::stod(v);
    if (k == "itl") s.itl_ms = std::stod(v);
    if (k == "tokens") s.tokens = std::stoi(v);
    if (k == "per_chunk") s.per_chunk = std::stoi(v);
    if (k == "stall_at") s.stall_at = std::stoi(v);
    if (k == "stall") s.stall_ms = std::stod(v);
    if (k == "usage") s.usage = v != "0";
    if (k == "mode") s.mode = v;
  }
  return s;
}

class ScriptedServer {
 public:
  /// `threads`: the server's pool (one per open stream). `nice`: the pool's threads run at this nice level (0: as the
  /// caller), so that a benchmark of the client can keep the server's hundreds of threads from taking its CPU.
  explicit ScriptedServer(int threads = 64, int nice = 0) : nice_(nice) {
    // Each open stream holds one of the server's threads for its whole life.
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
    auto handler = [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); };
    // As serving engines do (uvicorn sets TCP_NODELAY): without it Nagle holds a chunk until the client's delayed ACK,
    // ~40 ms, and two tokens arrive as one.
    server_.set_tcp_nodelay(true);
    server_.Post("/v1/completions", handler);
    server_.Post("/v1/chat/completions", handler);
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("test server: cannot bind");
    widen_backlog();
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~ScriptedServer() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int max_concurrent() const { return max_open_.load(); }
  int requests() const { return requests_.load(); }
  /// When the server wrote each text chunk of the request with this trace id (ns, now_ns()).
  std::vector<std::int64_t> writes(const std::string& trace_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    return writes_[trace_id];
  }
  /// The request bodies as received, in arrival order.
  std::vector<nlohmann::json> bodies() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bodies_;
  }
  std::vector<std::string> traceparents() {
    std::lock_guard<std::mutex> lock(mutex_);
    return traceparents_;
  }

 private:
  // Debian's compiled cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed in the library): a
  // burst of connects beyond it has its SYNs dropped and retried a second later, which would put a 1 s connect into
  // the timings under test. listen() again on the bound socket raises the backlog (Linux takes a second listen()).
  void widen_backlog() const {
    for (int fd = 0; fd < 4096; ++fd) {
      int listening = 0;
      socklen_t len = sizeof(listening);
      if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
      sockaddr_in addr{};
      socklen_t addr_len = sizeof(addr);
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0 || addr.sin_family != AF_INET ||
          ntohs(addr.sin_port) != port_)
        continue;
      ::listen(fd, 4096);
      return;
    }
  }

  static void sleep_ms(double ms) {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::microseconds(static_cast<std::int64_t>(ms * 1000)));
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    ++requests_;
    if (nice_ != 0) {
      thread_local bool niced = false;
      if (!niced) ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice_);
      niced = true;
    }
    const nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
    const bool chat = req.path.find("chat") != std::string::npos;
    std::string prompt;
    if (body.is_object()) {
      if (chat && body.contains("messages")) prompt = body["messages"][0].value("content", "");
      if (!chat) prompt = body.value("prompt", "");
    }
    const std::string traceparent = req.get_header_value("traceparent");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      bodies_.push_back(body);
      traceparents_.push_back(traceparent);
    }
    const std::string trace_id = traceparent.size() >= 35 ? traceparent.substr(3, 32) : "";
    Script s = parse_script(prompt);
    if (s.tokens < 0) s.tokens = body.is_object() ? body.value("max_tokens", 4) : 4;
    if (s.mode == "http500") {
      res.status = 500;
      res.set_content(R"({"error": {"message": "scripted failure", "type": "internal"}})", "application/json");
      return;
    }
    if (s.mode == "http400") {
      res.status = 400;
      res.set_content(R"({"detail": "extra fields not permitted: ignore_eos"})", "application/json");
      return;
    }
    const int open = ++open_;
    for (int seen = max_open_.load(); open > seen && !max_open_.compare_exchange_weak(seen, open);) {
    }
    // A stream stops counting as open when its last event is about to be written: the client may see that event
    // and send its next request before cpp-httplib runs the releaser below (late under load).
    auto closed = std::make_shared<std::atomic<bool>>(false);
    auto close_once = [this, closed] {
      if (!closed->exchange(true)) --open_;
    };
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, s, chat, trace_id, close_once](std::size_t, httplib::DataSink& sink) {
          auto send = [&sink](const std::string& event) { return sink.write(event.data(), event.size()); };
          sleep_ms(s.ttft_ms);
          if (s.mode == "malformed") {
            send("data: {\"choices\": [{\"text\": \"a\"}]}\n\ndata: {not json\n\n");
            sink.done();
            return true;
          }
          if (s.mode == "garbage") {  // bytes of every value, lines of any length, seeded by the script's ttft
            std::uint64_t x = 0x9e3779b97f4a7c15ull ^ static_cast<std::uint64_t>(s.ttft_ms);
            std::string bytes(64 << 10, '\0');
            for (char& c : bytes) {
              x ^= x << 13, x ^= x >> 7, x ^= x << 17;
              c = static_cast<char>(x & 0xff);
            }
            send("data: {\"choices\": [{\"text\": \"a\"}]}\n\n" + bytes);
            sink.done();
            return true;
          }
          if (s.mode == "error_event") {
            send("data: {\"error\": {\"message\": \"out of KV cache\"}}\n\n");
            sink.done();
            return true;
          }
          const int chunks = s.mode == "empty" ? 0 : s.tokens;
          for (int i = 0; i < chunks; ++i) {
            if (i > 0) sleep_ms(s.itl_ms);
            if (i == s.stall_at) sleep_ms(s.stall_ms);
            nlohmann::json chunk;
            if (chat)
              chunk = {{"choices", {{{"index", 0}, {"delta", {{"content", "tok"}}}}}}};
            else
              chunk = {{"choices", {{{"index", 0}, {"text", "tok"}}}}};
            const std::string event = ": keep-alive\r\ndata: " + chunk.dump() + "\r\n\r\n";
            {
              std::lock_guard<std::mutex> lock(mutex_);
              writes_[trace_id].push_back(now_ns());
            }
            if (!send(event)) return false;
          }
          close_once();
          if (s.usage && s.mode != "nodone") {
            nlohmann::json usage = {{"choices", nlohmann::json::array()},
                                    {"usage",
                                     {{"prompt_tokens", 7},
                                      {"completion_tokens", chunks * s.per_chunk},
                                      {"total_tokens", 7 + chunks * s.per_chunk}}}};
            send("data: " + usage.dump() + "\n\n");
          }
          if (s.mode != "nodone") send("data: [DONE]\n\n");
          sink.done();
          return true;
        },
        [close_once](bool) { close_once(); });
  }

  httplib::Server server_;
  int nice_ = 0;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> open_{0}, max_open_{0}, requests_{0};
  std::mutex mutex_;
  std::map<std::string, std::vector<std::int64_t>> writes_;
  std::vector<nlohmann::json> bodies_;
  std::vector<std::string> traceparents_;
};

}  // namespace xsp::testing
