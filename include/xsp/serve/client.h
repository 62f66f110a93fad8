// The load generator of `xsp bench-serve` (issue 27, docs/serving.md): streaming requests to an OpenAI-compatible
// server (vLLM, SGLang, TGI, `transformers serve`) on a schedule, every token's arrival time recorded.
//
// One thread drives every stream through libcurl's multi socket interface over epoll: it releases requests at their
// scheduled arrivals, starts each as soon as the concurrency cap has a free slot, and reads the Server-Sent Events of
// each response as they come. Times are now_ns() (CLOCK_MONOTONIC, the clock of XSP's traces), so a server trace of
// the same host compares directly (xsp/analysis/serving_join.h). A chunk carrying output text is stamped with the time
// the client first saw its socket ready (epoll_wait returning it; during a burst epoll is asked again every 25 µs),
// which is no later than the time libcurl's write callback runs for it: a stream served after hundreds of others in
// one burst is not late by their reads (the wait is kept apart, ClientRun::read_delay_ns). Only the first piece read
// after a sighting takes it (its first bytes were in the socket then); later pieces of the same read may have come
// while the socket waited, and take the time of their write callback: never early, late by at most that wait.
// Parsing happens after the sweep.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "xsp/serve/workload.h"

namespace xsp::serve {

/// Which OpenAI API the requests go to.
enum class Endpoint {
  kCompletions,  ///< POST {url}/completions with "prompt"; output text in choices[0].text
  kChat,         ///< POST {url}/chat/completions with one user message; output in choices[0].delta.content
};
/// "completions" | "chat".
std::string to_string(Endpoint endpoint);
/// Parses the names of to_string(); std::invalid_argument naming the value otherwise.
Endpoint parse_endpoint(const std::string& name);

/// One benchmark run (one point of a sweep).
struct ClientOptions {
  std::string url;    ///< the API base, e.g. "http://127.0.0.1:8000/v1" (a trailing '/' is dropped)
  std::string model;  ///< the "model" field of every request
  Endpoint endpoint = Endpoint::kCompletions;
  /// Prompts, used in turn (request i takes prompts[i % size]). Not empty.
  std::vector<Prompt> prompts;
  std::int64_t output_tokens = 128;  ///< max_tokens (and min_tokens) of a prompt that names none; >= 1
  /// Send vLLM/SGLang's "ignore_eos": true and "min_tokens" = max_tokens, so every request generates exactly its
  /// output tokens. A server that refuses unknown fields answers 400: turn this off for it.
  bool fixed_output_length = true;
  /// Requests per second of the open-loop schedule (arrival_schedule()); +inf = all at time 0, which with
  /// max_concurrency is the closed loop: a new request whenever one finishes.
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;           ///< gamma shape of the gaps (1 = Poisson)
  std::int64_t max_concurrency = 0;  ///< streams open at once at most (0 = no cap)
  /// The run issues no request after num_requests (0 = no limit) or after duration_ns from its start (0 = no limit);
  /// at least one of the two is set. Requests in flight then finish (bounded by request_timeout_ns).
  std::uint64_t num_requests = 0;
  std::int64_t duration_ns = 0;
  std::int64_t request_timeout_ns = 600'000'000'000;  ///< a whole request, connect to last byte; > 0
  std::int64_t connect_timeout_ns = 10'000'000'000;
  std::uint64_t seed = kDefaultSeed;  ///< of the schedule
  std::string api_key;                ///< sent as "Authorization: Bearer KEY" when not empty (never stored)
  /// Prefix of the request ids ("" → "r"): request i of the run is PREFIX + i.
  std::string id_prefix;
  /// A front end's signal flag (0 = go on), read between polls: when set, no request is issued any more and the
  /// ones in flight are cut (reason "cancelled"). nullptr = never.
  const std::atomic<int>* interrupt = nullptr;
};

/// Failure reasons of one request (RequestResult::reason), one word each, as counted in the summary:
///  "connect" (refused, unreachable, DNS), "timeout" (request_timeout_ns or connect_timeout_ns passed),
///  "http_NNN" (a status other than 200; the body's error message in `error`), "server_error" (an error object inside
///  the stream), "malformed_stream" (an event that is not JSON, or not a completion chunk), "incomplete_stream" (the
///  stream ended without `data: [DONE]`), "no_output" (the stream finished without any output text), "cancelled"
///  (released but not sent before the run ended, or cut by an interrupt), "transport" (any other libcurl error).

/// One request as it ran. Times are CLOCK_MONOTONIC ns (now_ns()); the names of ClientRequestTimes
/// (xsp/analysis/serving_join.h) mean the same here.
struct RequestResult {
  std::string request_id;
  std::size_t prompt_index = 0;
  std::int64_t arrival_ns = 0;         ///< scheduled arrival (run start + schedule offset): LoadGen's issue time
  std::int64_t sent_ns = 0;            ///< handed to libcurl to connect and write (0: never sent)
  std::int64_t done_ns = 0;            ///< the transfer ended (last byte, error or cut)
  std::vector<std::int64_t> token_ns;  ///< each chunk with output text; [0] the first token
  std::int64_t output_tokens = 0;      ///< usage.completion_tokens, else chunks with text (usage_reported false)
  std::int64_t prompt_tokens = -1;     ///< usage.prompt_tokens; -1 when the server sent no usage
  bool usage_reported = false;
  std::int64_t requested_output_tokens = 0;
  bool ok = false;
  std::string reason;  ///< empty when ok; see the failure reasons above
  std::string error;   ///< one sentence: what failed, with the server's message where it sent one
  long http_status = 0;
  std::string trace_id;  ///< the 32 hex digits of the request's traceparent
};

/// A whole run: its requests in arrival order, released or not.
struct ClientRun {
  std::int64_t start_ns = 0;  ///< the schedule's time 0
  std::int64_t end_ns = 0;    ///< the last request ended
  /// The time over which the schedule released requests (ns): the duration when it ended the run, else the last
  /// arrival's offset plus one mean gap (1/rate); 0 for rate inf (no offered rate to speak of).
  std::int64_t issue_window_ns = 0;
  std::vector<RequestResult> requests;
  std::string client;  ///< "libcurl/8.x.y ..." (curl_version())
  /// The client's own delay, one per read of a successful response: from the return of the wait that reported its
  /// socket ready (epoll_wait) to the timestamp taken for those bytes. It is the time other streams' reads of the same
  /// wake-up took before this one: what a burst of ready streams adds to the recorded token times.
  std::vector<std::int64_t> read_delay_ns;
  bool interrupted = false;
};

/// Whether this build has the HTTP client (libcurl): false → run_client() throws.
bool have_http_client();

/// Runs one benchmark run against `options.url`, on the calling thread. Every failure of a request is recorded in its
/// RequestResult, never thrown. Throws std::invalid_argument naming the field for bad options (empty url/model/prompts,
/// output_tokens < 1, neither num_requests nor duration_ns, bad rate/burstiness), std::runtime_error when the build
/// has no HTTP client or libcurl cannot start.
ClientRun run_client(const ClientOptions& options);

/// A W3C Trace Context `traceparent` value, version 00, sampled: "00-<32 hex trace id>-<16 hex span id>-01" from
/// 16 and 8 random bytes (std::random_device seeded; never all zero, which the standard forbids).
std::string make_traceparent();

}  // namespace xsp::serve
