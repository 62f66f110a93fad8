#include "xsp/serve/client.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "xsp/serve/sse.h"
#include "xsp/trace/trace.h"

#ifdef XSP_WITH_CURL
#include <curl/curl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#endif

namespace xsp::serve {

std::string to_string(Endpoint endpoint) { return endpoint == Endpoint::kChat ? "chat" : "completions"; }

Endpoint parse_endpoint(const std::string& name) {
  if (name == "completions") return Endpoint::kCompletions;
  if (name == "chat") return Endpoint::kChat;
  throw std::invalid_argument("endpoint '" + name + "': expected completions or chat");
}

std::string make_traceparent() {
  // One generator per thread, seeded from the OS: ids must differ across runs and processes, not repeat a seed.
  thread_local std::mt19937_64 rng([] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }());
  auto hex = [](std::uint64_t v, int digits) {
    static const char* const kHex = "0123456789abcdef";
    std::string out(static_cast<std::size_t>(digits), '0');
    for (int i = digits - 1; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kHex[v & 15];
    return out;
  };
  std::uint64_t hi = rng(), lo = rng(), span = rng();
  if (hi == 0 && lo == 0) lo = 1;  // an all-zero id is invalid (W3C Trace Context §3.2.2.3)
  if (span == 0) span = 1;
  return "00-" + hex(hi, 16) + hex(lo, 16) + "-" + hex(span, 16) + "-01";
}

namespace {

void validate(const ClientOptions& o) {
  if (o.url.empty()) throw std::invalid_argument("url: empty (expected e.g. http://127.0.0.1:8000/v1)");
  if (o.model.empty()) throw std::invalid_argument("model: empty (the server's model name)");
  if (o.prompts.empty()) throw std::invalid_argument("prompts: none");
  if (o.output_tokens < 1)
    throw std::invalid_argument("output tokens " + std::to_string(o.output_tokens) + ": expected >= 1");
  if (o.num_requests == 0 && o.duration_ns <= 0)
    throw std::invalid_argument("neither a number of requests nor a duration: the run would not end");
  if (o.max_concurrency < 0)
    throw std::invalid_argument("max concurrency " + std::to_string(o.max_concurrency) + ": expected >= 0");
  if (o.request_timeout_ns <= 0) throw std::invalid_argument("request timeout: expected > 0");
  (void)arrival_schedule(o.request_rate, o.burstiness, 0, o.seed);  // its own checks of rate and burstiness
  if (std::isinf(o.request_rate) && o.max_concurrency == 0 && o.num_requests == 0)
    throw std::invalid_argument(
        "request rate inf without a concurrency cap or a number of requests: every request of the run would be sent "
        "at once, without end");
}

}  // namespace

#ifndef XSP_WITH_CURL

bool have_http_client() { return false; }

ClientRun run_client(const ClientOptions& options) {
  validate(options);
  throw std::runtime_error(
      "xsp bench-serve: this build has no HTTP client (libcurl was not found when XSP was configured: install "
      "libcurl4-openssl-dev, scripts/install-deps.sh, and reconfigure)");
}

#else

bool have_http_client() { return true; }

namespace {

constexpr std::size_t kMaxErrorBody = 64 << 10;

// One request in flight: its easy handle, body, headers and stream state.
struct Stream {
  std::size_t index = 0;  // into ClientRun::requests
  RequestResult* result = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;
  std::string error_body;  // the body of a status other than 200
  long status = 0;
  bool chat = false;
  bool done_seen = false;
  std::string failure_reason, failure;  // set by the parser: the transfer is aborted
  std::int64_t chunk_ns = 0;            // when the bytes being parsed arrived
  std::size_t events = 0;
  char curl_error[CURL_ERROR_SIZE] = {0};
  SseParser parser{[this](std::string_view data) { on_event(data); }};
  // Bytes received and not parsed yet, with when each piece arrived: the write callback only timestamps and copies,
  // so that the sweep over a burst of ready sockets reaches the last one soon; parse() runs after the sweep.
  std::string inbox;
  std::vector<std::pair<std::size_t, std::int64_t> > pieces;  // (end offset in inbox, arrival ns)
  bool queued = false;                                        // in Client::touched_
  std::vector<Stream*>* touched = nullptr;
  const std::int64_t* wake_ns = nullptr;  // when the socket being read was seen ready (Client::seen_ns_)
  std::int64_t sighting_used = -1;        // the sighting that stamped a piece already
  Stream* const* serving = nullptr;       // the stream whose socket's action is running (Client::serving_), or nullptr
  int fd = -1;                            // its socket, as libcurl's socket callback last named it
  std::vector<std::int64_t>* read_delays = nullptr;  // ClientRun::read_delay_ns

  void parse() {
    std::size_t begin = 0;
    for (const auto& [end, t] : pieces) {
      chunk_ns = t;
      parser.feed(std::string_view(inbox).substr(begin, end - begin));
      begin = end;
    }
    inbox.clear();
    pieces.clear();
    if (parser.overflowed()) fail("malformed_stream", "a line of the stream is longer than 16 MiB");
  }

  ~Stream() {
    if (headers != nullptr) curl_slist_free_all(headers);
    if (easy != nullptr) curl_easy_cleanup(easy);
  }

  void fail(std::string reason, std::string what) {
    if (!failure_reason.empty()) return;
    failure_reason = std::move(reason);
    failure = std::move(what);
  }

  void on_event(std::string_view data) {
    ++events;
    if (!failure_reason.empty()) return;
    if (data == "[DONE]") {
      done_seen = true;
      return;
    }
    if (done_seen) return;  // nothing counts after [DONE]
    const nlohmann::json j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      fail("malformed_stream", "event " + std::to_string(events) + " is not a JSON object: '" +
                                   std::string(data.substr(0, 80)) + (data.size() > 80 ? "…'" : "'"));
      return;
    }
    if (const auto e = j.find("error"); e != j.end() && !e->is_null()) {
      const std::string message = e->is_object() ? e->value("message", e->dump()) : e->dump();
      fail("server_error", "the server sent an error in the stream: " + message);
      return;
    }
    if (const auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
      const nlohmann::json& choice = (*c)[0];
      if (!choice.is_object()) {
        fail("malformed_stream", "event " + std::to_string(events) + ": choices[0] is not an object");
        return;
      }
      const nlohmann::json* text = nullptr;
      if (chat) {
        if (const auto d = choice.find("delta"); d != choice.end() && d->is_object())
          if (const auto t = d->find("content"); t != d->end()) text = &*t;
      } else if (const auto t = choice.find("text"); t != choice.end()) {
        text = &*t;
      }
      if (text != nullptr && !text->is_null() && !text->is_string()) {
        fail("malformed_stream", "event " + std::to_string(events) + ": the output text is not a string");
        return;
      }
      if (text != nullptr && text->is_string() && !text->get_ref<const std::string&>().empty())
        result->token_ns.push_back(chunk_ns);
    }
    if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
      const auto ct = u->find("completion_tokens");
      if (ct != u->end() && ct->is_number_integer()) {
        result->output_tokens = ct->get<std::int64_t>();
        result->usage_reported = true;
      }
      const auto pt = u->find("prompt_tokens");
      if (pt != u->end() && pt->is_number_integer()) result->prompt_tokens = pt->get<std::int64_t>();
    }
  }
};

std::size_t on_write(char* data, std::size_t size, std::size_t count, void* user) {
  const std::int64_t t = now_ns();
  auto* s = static_cast<Stream*>(user);
  const std::size_t n = size * count;
  if (s->status == 0) curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
  if (s->status != 200) {
    s->error_body.append(data, std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, s->error_body.size())));
    return n;
  }
  if (!s->failure_reason.empty()) return 0;  // 0 aborts the transfer (CURLE_WRITE_ERROR)
  // The bytes were in the socket when the client saw it ready (Client::sweep()); reading them waited for the streams
  // served before it. That wait is the client's own delay, kept apart (read_delay_ns) instead of added to the token.
  // Only the first piece after a sighting was (at least in part) in the socket then; later pieces may have come while
  // the socket waited in the queue, and get the time of their read, which is never early.
  // libcurl may serve other transfers inside one socket's action (those whose timers expired): their bytes were not
  // what the sighting saw, so only the transfer on the socket being served takes it.
  std::int64_t arrived = t;
  if (s == *s->serving && s->sighting_used != *s->wake_ns) {
    s->sighting_used = *s->wake_ns;
    arrived = std::min(t, *s->wake_ns);
  }
  s->read_delays->push_back(t - arrived);
  s->inbox.append(data, n);
  s->pieces.emplace_back(s->inbox.size(), arrived);
  if (!s->queued) {
    s->queued = true;
    s->touched->push_back(s);
  }
  return n;
}

// The response's header lines consume the sighting of their socket: the body bytes read after them in the same action
// may have come later (a server sends its headers at once and the first token after the prefill).
std::size_t on_header(char*, std::size_t size, std::size_t count, void* user) {
  auto* s = static_cast<Stream*>(user);
  if (s == *s->serving) s->sighting_used = *s->wake_ns;
  return size * count;
}

// The message of an error body: OpenAI's {"error": {"message"}}, FastAPI's {"detail"}, TGI's {"error": "..."},
// {"message"}; else the body's start.
std::string error_message(const std::string& body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object()) {
    if (const auto e = j.find("error"); e != j.end()) {
      if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
        return (*e)["message"].get<std::string>();
      if (e->is_string()) return e->get<std::string>();
    }
    for (const char* key : {"message", "detail"})
      if (const auto m = j.find(key); m != j.end()) return m->is_string() ? m->get<std::string>() : m->dump();
  }
  std::string text = body.substr(0, 200);
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.empty() ? "(empty body)" : text;
}

class Client {
 public:
  explicit Client(const ClientOptions& o) : o_(o) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw std::runtime_error("libcurl: global init failed");
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
    multi_ = curl_multi_init();
    if (multi_ == nullptr) {
      ::close(epoll_);
      curl_global_cleanup();
      throw std::runtime_error("libcurl: curl_multi_init failed");
    }
    // The socket interface: libcurl says which sockets to watch and when its timer is due, and is told only about the
    // sockets that are ready. curl_multi_poll() would poll() every open stream on every wake-up, O(streams) each
    // time; with hundreds of streams that cost is what delays the timestamps (BENCHMARKS.md, "bench-serve client").
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &Client::on_socket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &Client::on_timer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    base_ = o.url;
    while (!base_.empty() && base_.back() == '/') base_.pop_back();
    target_ = base_ + (o.endpoint == Endpoint::kChat ? "/chat/completions" : "/completions");
  }
  ~Client() {
    for (auto& [easy, stream] : streams_) curl_multi_remove_handle(multi_, easy);
    streams_.clear();
    curl_multi_cleanup(multi_);
    ::close(epoll_);
    curl_global_cleanup();  // balances the constructor's curl_global_init (reference-counted)
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  ClientRun run();

 private:
  std::int64_t offset(std::size_t i);
  void release(std::int64_t arrival_ns);
  void send(std::size_t index);
  void finish(CURL* easy, CURLcode code);
  static int on_socket(CURL* easy, curl_socket_t fd, int what, void* user, void* socket_data) {
    auto* self = static_cast<Client*>(user);
    if (static_cast<std::size_t>(fd) >= self->owner_.size()) self->owner_.resize(static_cast<std::size_t>(fd) + 1);
    Stream*& owner = self->owner_[static_cast<std::size_t>(fd)];
    owner = nullptr;
    if (what != CURL_POLL_REMOVE) {
      char* stream = nullptr;
      curl_easy_getinfo(easy, CURLINFO_PRIVATE, &stream);
      owner = reinterpret_cast<Stream*>(stream);
      if (owner != nullptr) owner->fd = fd;
    }
    if (what == CURL_POLL_REMOVE) {
      ::epoll_ctl(self->epoll_, EPOLL_CTL_DEL, fd, nullptr);  // the socket may be closed already: nothing to undo
      return 0;
    }
    epoll_event ev{};
    ev.data.fd = fd;
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    if (socket_data == nullptr) {
      if (::epoll_ctl(self->epoll_, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
        ::epoll_ctl(self->epoll_, EPOLL_CTL_MOD, fd, &ev);
      curl_multi_assign(self->multi_, fd, self);  // marks the socket as registered
    } else if (::epoll_ctl(self->epoll_, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT) {
      ::epoll_ctl(self->epoll_, EPOLL_CTL_ADD, fd, &ev);
    }
    return 0;
  }
  static int on_timer(CURLM*, long timeout_ms, void* user) {
    auto* self = static_cast<Client*>(user);
    self->timer_ns_ = timeout_ms < 0 ? -1 : now_ns() + static_cast<std::int64_t>(timeout_ms) * 1'000'000;
    return 0;
  }
  // Parses what the last sweep received; a stream found malformed is ended here (its transfer could not be aborted
  // from the write callback, which no longer parses).
  void parse_touched() {
    std::vector<Stream*> touched;
    touched.swap(touched_);
    std::vector<CURL*> failed;
    for (Stream* s : touched) {
      s->queued = false;
      s->parse();
      if (!s->failure_reason.empty()) failed.push_back(s->easy);
    }
    for (CURL* easy : failed) finish(easy, CURLE_WRITE_ERROR);
  }
  void action(curl_socket_t fd, int flags) {
    int running = 0;
    curl_multi_socket_action(multi_, fd, flags, &running);
  }
  // Waits up to `wait_ms` for ready sockets and serves each, noting when it was first seen ready. While a burst of
  // ready streams is served one by one, epoll is asked again (without waiting) every kRepollNs, so a socket that
  // became ready during the sweep is seen within that interval of its data, whatever its place in the queue.
  static constexpr std::int64_t kRepollNs = 25'000;
  void poll_into_queue(int wait_ms) {
    epoll_event events[256];
    const int n = ::epoll_wait(epoll_, events, 256, wait_ms);
    const std::int64_t seen = now_ns();
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      const std::uint32_t e = events[i].events;
      const int flags = (e & EPOLLIN ? CURL_CSELECT_IN : 0) | (e & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                        (e & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
      if (static_cast<std::size_t>(fd) >= queued_.size()) queued_.resize(static_cast<std::size_t>(fd) + 1, 0);
      std::size_t& slot = queued_[static_cast<std::size_t>(fd)];
      if (slot != 0) {
        ready_[slot - 1].flags |= flags;  // still waiting: keeps its first sighting
      } else {
        ready_.push_back({fd, flags, seen});
        slot = ready_.size();
      }
    }
  }
  void sweep(int wait_ms) {
    ready_.clear();
    poll_into_queue(wait_ms);
    std::int64_t polled_ns = now_ns();
    for (std::size_t i = 0; i < ready_.size(); ++i) {
      if (now_ns() - polled_ns > kRepollNs) {
        poll_into_queue(0);
        polled_ns = now_ns();
      }
      const Ready r = ready_[i];
      queued_[static_cast<std::size_t>(r.fd)] = 0;
      seen_ns_ = r.seen_ns;
      serving_ = static_cast<std::size_t>(r.fd) < owner_.size() ? owner_[static_cast<std::size_t>(r.fd)] : nullptr;
      action(r.fd, r.flags);
      serving_ = nullptr;
    }
  }
  bool interrupted() const { return o_.interrupt != nullptr && o_.interrupt->load(std::memory_order_relaxed) != 0; }

  const ClientOptions& o_;
  CURLM* multi_ = nullptr;
  int epoll_ = -1;
  std::vector<Stream*> touched_;  // streams with bytes to parse
  std::int64_t seen_ns_ = 0;      // when the socket now being served was seen ready
  Stream* serving_ = nullptr;     // the stream of the socket now being served (nullptr: a timer action, unknown)
  std::vector<Stream*> owner_;    // by fd: the stream libcurl last named for it in the socket callback
  // The sweep's queue of ready sockets, each with when it was first seen ready; queued_[fd] marks those in it.
  struct Ready {
    int fd;
    int flags;
    std::int64_t seen_ns;
  };
  std::vector<Ready> ready_;
  std::vector<std::size_t> queued_;  // by fd: 1 + index in ready_, 0 when not queued
  std::int64_t timer_ns_ = -1;       // when libcurl's timer is due (-1: none)
  std::string base_, target_;
  ClientRun run_;
  // Streams point at their result: a deque keeps them in place as requests are added.
  std::deque<RequestResult> results_;
  std::vector<std::int64_t> schedule_;
  std::deque<std::size_t> pending_;  // released, waiting for a slot
  std::map<CURL*, std::unique_ptr<Stream> > streams_;
};

std::int64_t Client::offset(std::size_t i) {
  if (std::isinf(o_.request_rate)) return 0;
  if (i >= schedule_.size()) {
    // A prefix of a longer schedule of the same seed is the shorter one: growing it changes no earlier arrival.
    std::size_t count = std::max<std::size_t>(64, schedule_.size() * 2);
    count = std::max(count, i + 1);
    if (o_.num_requests > 0) count = std::min<std::size_t>(count, o_.num_requests);
    schedule_ = arrival_schedule(o_.request_rate, o_.burstiness, std::max(count, i + 1), o_.seed);
  }
  return schedule_[i];
}

void Client::release(std::int64_t arrival_ns) {
  const std::size_t i = results_.size();
  RequestResult r;
  r.request_id = (o_.id_prefix.empty() ? std::string("r") : o_.id_prefix) + std::to_string(i);
  r.prompt_index = i % o_.prompts.size();
  r.arrival_ns = arrival_ns;
  const Prompt& p = o_.prompts[r.prompt_index];
  r.requested_output_tokens = p.output_tokens > 0 ? p.output_tokens : o_.output_tokens;
  results_.push_back(std::move(r));
  pending_.push_back(i);
}

void Client::send(std::size_t index) {
  RequestResult& r = results_[index];
  auto s = std::make_unique<Stream>();
  s->index = index;
  s->result = &r;
  s->chat = o_.endpoint == Endpoint::kChat;
  s->touched = &touched_;
  s->wake_ns = &seen_ns_;
  s->serving = &serving_;
  s->read_delays = &run_.read_delay_ns;
  const Prompt& p = o_.prompts[r.prompt_index];
  nlohmann::json body = {{"model", o_.model},
                         {"max_tokens", r.requested_output_tokens},
                         {"stream", true},
                         {"stream_options", {{"include_usage", true}}}};
  if (s->chat)
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", p.text}}});
  else
    body["prompt"] = p.text;
  if (o_.fixed_output_length) {
    body["ignore_eos"] = true;
    body["min_tokens"] = r.requested_output_tokens;
  }
  s->body = body.dump();
  const std::string traceparent = make_traceparent();
  r.trace_id = traceparent.substr(3, 32);
  s->headers = curl_slist_append(s->headers, "Content-Type: application/json");
  s->headers = curl_slist_append(s->headers, "Accept: text/event-stream");
  s->headers = curl_slist_append(s->headers, "Expect:");  // no 100-continue round trip before the body
  s->headers = curl_slist_append(s->headers, ("traceparent: " + traceparent).c_str());
  if (!o_.api_key.empty()) s->headers = curl_slist_append(s->headers, ("Authorization: Bearer " + o_.api_key).c_str());
  CURL* e = curl_easy_init();
  if (e == nullptr) throw std::runtime_error("libcurl: curl_easy_init failed");
  s->easy = e;
  curl_easy_setopt(e, CURLOPT_URL, target_.c_str());
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, s->body.c_str());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(s->body.size()));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, s.get());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, s.get());
  curl_easy_setopt(e, CURLOPT_PRIVATE, s.get());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, s->curl_error);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(o_.request_timeout_ns / 1'000'000));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min(o_.connect_timeout_ns, o_.request_timeout_ns) / 1'000'000));
  // Proxies from the environment would put another hop inside every timing: a benchmark talks to the server.
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  r.sent_ns = now_ns();
  if (const CURLMcode m = curl_multi_add_handle(multi_, e); m != CURLM_OK)
    throw std::runtime_error(std::string("libcurl: curl_multi_add_handle: ") + curl_multi_strerror(m));
  streams_.emplace(e, std::move(s));
}

void Client::finish(CURL* easy, CURLcode code) {
  const auto it = streams_.find(easy);
  if (it == streams_.end()) return;
  Stream& s = *it->second;
  RequestResult& r = *s.result;
  r.done_ns = now_ns();
  if (s.queued) {
    s.queued = false;
    touched_.erase(std::find(touched_.begin(), touched_.end(), &s));
  }
  if (s.fd >= 0 && static_cast<std::size_t>(s.fd) < owner_.size() && owner_[static_cast<std::size_t>(s.fd)] == &s)
    owner_[static_cast<std::size_t>(s.fd)] = nullptr;
  s.parse();
  curl_multi_remove_handle(multi_, easy);
  if (s.status == 0) curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &s.status);
  r.http_status = s.status;
  auto failed = [&r](std::string reason, std::string what) {
    r.ok = false;
    r.reason = std::move(reason);
    r.error = std::move(what);
  };
  const std::string detail = s.curl_error[0] != 0 ? std::string(s.curl_error) : curl_easy_strerror(code);
  if (!s.failure_reason.empty()) {
    failed(s.failure_reason, s.failure);
  } else if (code == CURLE_OPERATION_TIMEDOUT) {
    failed("timeout", "timed out: " + detail);
  } else if (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
             code == CURLE_COULDNT_RESOLVE_PROXY) {
    failed("connect", "cannot connect to " + base_ + ": " + detail);
  } else if (code != CURLE_OK) {
    failed("transport", detail);
  } else if (s.status != 200) {
    std::string what = "HTTP " + std::to_string(s.status) + " from " + target_ + ": " + error_message(s.error_body);
    if (s.status == 400 && o_.fixed_output_length)
      what +=
          " (a server that refuses unknown fields rejects vLLM's ignore_eos and min_tokens: run again with "
          "--no-fixed-output-length; not retried, so that the schedule stays the one measured)";
    failed("http_" + std::to_string(s.status), what);
  } else {
    s.parser.finish();
    if (!s.failure_reason.empty())
      failed(s.failure_reason, s.failure);
    else if (!s.done_seen)
      failed("incomplete_stream",
             "the stream ended without data: [DONE] after " + std::to_string(s.events) + " events" +
                 (s.events == 0 ? " (the response was no Server-Sent Events stream: does the server stream?)" : ""));
    else if (r.token_ns.empty())
      failed("no_output", "the stream ended without any output text");
    else
      r.ok = true;
  }
  if (!r.usage_reported) r.output_tokens = static_cast<std::int64_t>(r.token_ns.size());
  streams_.erase(it);
}

ClientRun Client::run() {
  run_.client = curl_version();
  const bool open_loop = !std::isinf(o_.request_rate);
  const auto cap = static_cast<std::size_t>(o_.max_concurrency);
  const std::int64_t start = now_ns();
  run_.start_ns = start;
  const std::int64_t stop_issuing_ns = o_.duration_ns > 0 ? start + o_.duration_ns : INT64_MAX;
  bool issuing = true;
  for (;;) {
    std::int64_t now = now_ns();
    // The run's end (or an interrupt) cancels what waits for a slot; the last request released does not.
    const bool ended = interrupted() || now >= stop_issuing_ns;
    if (issuing && (ended || (o_.num_requests > 0 && results_.size() >= o_.num_requests))) issuing = false;
    if (issuing) {
      if (open_loop) {
        while ((o_.num_requests == 0 || results_.size() < o_.num_requests) && start + offset(results_.size()) <= now &&
               start + offset(results_.size()) < stop_issuing_ns)
          release(start + offset(results_.size()));
      } else {
        // Closed loop (or everything at once): a request arrives when a slot is free for it.
        while ((o_.num_requests == 0 || results_.size() < o_.num_requests) &&
               (cap == 0 || streams_.size() + pending_.size() < cap))
          release(now);
      }
    }
    if (ended) {
      for (std::size_t i : pending_) {
        RequestResult& r = results_[i];
        r.reason = "cancelled";
        r.error = "released by the schedule but not sent before the run ended (every slot was busy)";
      }
      pending_.clear();
    }
    while (!pending_.empty() && (cap == 0 || streams_.size() < cap)) {
      send(pending_.front());
      pending_.pop_front();
    }
    if (interrupted()) {
      run_.interrupted = true;
      touched_.clear();
      for (auto& [easy, stream] : streams_) {
        stream->parse();  // the tokens received before the cut count
        curl_multi_remove_handle(multi_, easy);
        RequestResult& r = *stream->result;
        r.done_ns = now_ns();
        r.reason = "cancelled";
        r.error = "cut by an interrupt";
        if (!r.usage_reported) r.output_tokens = static_cast<std::int64_t>(r.token_ns.size());
      }
      streams_.clear();
    }
    if (!issuing && pending_.empty() && streams_.empty()) break;
    if (timer_ns_ >= 0 && now_ns() >= timer_ns_) {
      timer_ns_ = -1;
      seen_ns_ = now_ns();
      action(CURL_SOCKET_TIMEOUT, 0);
    }
    parse_touched();
    bool finished_any = false;
    int queued = 0;
    while (CURLMsg* m = curl_multi_info_read(multi_, &queued)) {
      if (m->msg != CURLMSG_DONE) continue;
      finish(m->easy_handle, m->data.result);
      finished_any = true;
    }
    if (finished_any) continue;  // a slot is free: fill it before waiting
    // Wait for the sockets, libcurl's timer, the next arrival or the end of issuing, whichever comes first; at most
    // 50 ms, so that an interrupt is seen. epoll waits in whole ms: the last millisecond before a deadline is spun.
    now = now_ns();
    std::int64_t wait_ns = 50'000'000;
    if (issuing && open_loop && (o_.num_requests == 0 || results_.size() < o_.num_requests))
      wait_ns = std::min(wait_ns, start + offset(results_.size()) - now);
    if (issuing) wait_ns = std::min(wait_ns, stop_issuing_ns - now);
    if (timer_ns_ >= 0) wait_ns = std::min(wait_ns, timer_ns_ - now);
    const int wait_ms = wait_ns < 1'000'000 ? 0 : static_cast<int>(wait_ns / 1'000'000);
    sweep(wait_ms);
  }
  run_.end_ns = start;
  for (const RequestResult& r : results_) run_.end_ns = std::max(run_.end_ns, r.done_ns);
  if (open_loop && !results_.empty()) {
    const bool by_duration = o_.duration_ns > 0 && (o_.num_requests == 0 || results_.size() < o_.num_requests);
    run_.issue_window_ns = by_duration
                               ? o_.duration_ns
                               : results_.back().arrival_ns - start + static_cast<std::int64_t>(1e9 / o_.request_rate);
  }
  run_.requests.assign(std::make_move_iterator(results_.begin()), std::make_move_iterator(results_.end()));
  return std::move(run_);
}

}  // namespace

ClientRun run_client(const ClientOptions& options) {
  validate(options);
  Client client(options);
  return client.run();
}

#endif

}  // namespace xsp::serve
