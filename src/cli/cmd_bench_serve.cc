// xsp bench-serve --url URL --model NAME (--prompts FILE | --synthetic) (--request-rate R | --max-concurrency C) ...:
// a load generator against an OpenAI-compatible streaming server (issue 27, docs/serving.md). Maps the flags onto
// serve::ClientOptions, runs one point or a sweep through serve::run_client(), prints vLLM's result block per point and
// stores one evaluation of kind "serving" (with the server's trace window when --server-pid names a server running
// under `xsp profile --signal`).
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>

#include "common.h"
#include "signals.h"
#include "xsp/profile/external.h"
#include "xsp/serve/client.h"
#include "xsp/serve/serving.h"

namespace xsp::cli {
namespace {

struct BenchServeFlags {
  std::string url, model, prompts_file, endpoint = "completions";
  bool synthetic = false;
  std::string prompt_tokens = "512:2048";
  std::optional<std::uint64_t> num_prompts;
  std::int64_t output_tokens = 128;
  std::optional<std::string> request_rate;
  std::optional<double> burstiness;
  std::optional<std::int64_t> max_concurrency;
  std::optional<double> duration_s;
  std::optional<std::uint64_t> num_requests;
  std::optional<double> ttft_bound_ms, tpot_bound_ms;
  double slo_percentile = 99;
  double request_timeout_s = 600;
  std::uint64_t seed = serve::kDefaultSeed;
  bool no_fixed_output_length = false;
  std::string sweep;
  std::optional<std::int64_t> server_pid;
  std::string api_key_env = "OPENAI_API_KEY";
};

double parse_rate(const std::string& text) {
  if (text == "inf") return std::numeric_limits<double>::infinity();
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(v) || v <= 0)
    throw CLI::ValidationError("--request-rate " + text + ": expected requests per second > 0, or inf");
  return v;
}

// The flags as one run's options (the sweep then changes one field per point); every check names its flag.
serve::ClientOptions client_options(const BenchServeFlags& f, const std::optional<serve::Sweep>& sweep,
                                    nlohmann::json& prompts_info) {
  serve::ClientOptions o;
  o.url = f.url;
  o.model = f.model;
  try {
    o.endpoint = serve::parse_endpoint(f.endpoint);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError(std::string("--endpoint: ") + e.what());
  }
  if (f.url.rfind("http://", 0) != 0 && f.url.rfind("https://", 0) != 0)
    throw CLI::ValidationError("--url " + f.url +
                               ": expected an http:// or https:// API base, e.g. "
                               "http://127.0.0.1:8000/v1");
  if (f.output_tokens < 1)
    throw CLI::ValidationError("--output-tokens " + std::to_string(f.output_tokens) + ": expected >= 1");
  o.output_tokens = f.output_tokens;
  o.fixed_output_length = !f.no_fixed_output_length;
  const bool sweeps_rate = sweep && sweep->parameter == "request-rate";
  const bool sweeps_cap = sweep && sweep->parameter == "max-concurrency";
  if (sweeps_rate && f.request_rate)
    throw CLI::ValidationError("--request-rate and --sweep request-rate=...: give the rates once");
  if (sweeps_cap && f.max_concurrency)
    throw CLI::ValidationError("--max-concurrency and --sweep max-concurrency=...: give the caps once");
  if (!f.request_rate && !f.max_concurrency && !sweep)
    throw CLI::ValidationError(
        "give --request-rate R (open loop, Poisson arrivals) or --max-concurrency C alone (closed loop)");
  o.request_rate = f.request_rate ? parse_rate(*f.request_rate) : std::numeric_limits<double>::infinity();
  if (f.max_concurrency) {
    if (*f.max_concurrency < 1)
      throw CLI::ValidationError("--max-concurrency " + std::to_string(*f.max_concurrency) + ": expected >= 1");
    o.max_concurrency = *f.max_concurrency;
  }
  if (f.burstiness) {
    if (!(*f.burstiness > 0) || !std::isfinite(*f.burstiness))
      throw CLI::ValidationError("--burstiness " + std::to_string(*f.burstiness) + ": expected a number > 0");
    if (!sweeps_rate && std::isinf(o.request_rate))
      throw CLI::ValidationError("--burstiness shapes the gaps of a finite --request-rate; there is none");
    o.burstiness = *f.burstiness;
  }
  if (!f.duration_s && !f.num_requests)
    throw CLI::ValidationError("give --duration-s S or --num-requests N (or both): the run needs an end");
  if (f.duration_s) {
    if (!(*f.duration_s > 0)) throw CLI::ValidationError("--duration-s: expected > 0");
    o.duration_ns = static_cast<std::int64_t>(*f.duration_s * 1e9);
  }
  if (f.num_requests) {
    if (*f.num_requests < 1) throw CLI::ValidationError("--num-requests 0: expected >= 1");
    o.num_requests = *f.num_requests;
  }
  if (std::isinf(o.request_rate) && o.max_concurrency == 0 && o.num_requests == 0 && !sweeps_cap && !sweeps_rate)
    throw CLI::ValidationError(
        "--request-rate inf without --max-concurrency needs --num-requests: every request is "
        "sent at once");
  if (!(f.request_timeout_s > 0)) throw CLI::ValidationError("--request-timeout-s: expected > 0");
  o.request_timeout_ns = static_cast<std::int64_t>(f.request_timeout_s * 1e9);
  o.seed = f.seed;
  if (const char* key = std::getenv(f.api_key_env.c_str()); key != nullptr) o.api_key = key;
  if (f.synthetic == !f.prompts_file.empty())
    throw CLI::ValidationError("give --prompts FILE or --synthetic (one of them)");
  if (f.synthetic) {
    std::pair<std::int64_t, std::int64_t> range;
    try {
      range = serve::parse_range(f.prompt_tokens, "--prompt-tokens");
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError(e.what());
    }
    const std::uint64_t count = f.num_prompts.value_or(f.num_requests.value_or(1000));
    if (count < 1) throw CLI::ValidationError("--num-prompts 0: expected >= 1");
    o.prompts = serve::synthetic_prompts(count, range.first, range.second, f.seed);
    prompts_info = {{"source", "synthetic"}, {"count", count}, {"words", {range.first, range.second}}};
  } else {
    try {
      o.prompts = serve::load_prompts(f.prompts_file);
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError(std::string("--prompts: ") + e.what());
    } catch (const std::runtime_error& e) {
      throw IoError(std::string("--prompts: ") + e.what());
    }
    prompts_info = {{"source", "file"}, {"file", f.prompts_file}, {"count", o.prompts.size()}};
  }
  return o;
}

int run_bench_serve(const Globals& g, const BenchServeFlags& f) {
  std::optional<serve::Sweep> sweep;
  if (!f.sweep.empty()) {
    try {
      sweep = serve::parse_sweep(f.sweep);
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError(e.what());
    }
  }
  serve::ServingStudy study;
  study.sweep = sweep;
  const serve::ClientOptions base = client_options(f, sweep, study.prompts);
  if (f.ttft_bound_ms) {
    if (!(*f.ttft_bound_ms > 0)) throw CLI::ValidationError("--ttft-bound-ms: expected > 0");
    study.bounds.ttft_ns = *f.ttft_bound_ms * 1e6;
  }
  if (f.tpot_bound_ms) {
    if (!(*f.tpot_bound_ms > 0)) throw CLI::ValidationError("--tpot-bound-ms: expected > 0");
    study.bounds.tpot_ns = *f.tpot_bound_ms * 1e6;
  }
  if (!(f.slo_percentile > 0 && f.slo_percentile < 100))
    throw CLI::ValidationError("--slo-percentile " + std::to_string(f.slo_percentile) + ": expected in (0, 100)");
  study.bounds.percentile = f.slo_percentile;
  if (!serve::have_http_client())
    throw std::runtime_error(
        "xsp bench-serve: this build has no HTTP client (libcurl was not found when XSP was "
        "configured: install libcurl4-openssl-dev, scripts/install-deps.sh, and reconfigure)");
  // Opened first: a store that cannot take the result must not cost a benchmark.
  auto store = open_store(g, StoreAccess::kReadWrite);
  study.server_pid = f.server_pid;
  if (f.server_pid) {
    const auto pids = external::signal_capture(*f.server_pid, true);
    std::cerr << "xsp: started collection in the server (" << pids.size()
              << (pids.size() == 1 ? " process)\n" : " processes)\n");
  }
  InterruptGuard guard;
  const std::vector<double> values = sweep ? sweep->values : std::vector<double>{0};
  for (std::size_t i = 0; i < values.size(); ++i) {
    serve::ServingPoint point;
    point.options = base;
    if (sweep) {
      point.parameter = sweep->parameter;
      point.value = values[i];
      if (sweep->parameter == "request-rate")
        point.options.request_rate = values[i];
      else
        point.options.max_concurrency = static_cast<std::int64_t>(values[i]);
      point.options.id_prefix = "p" + std::to_string(i) + "-";
      std::cerr << "xsp: sweep point " << i + 1 << " of " << values.size() << ": " << sweep->parameter << "="
                << values[i] << "\n";
    }
    point.options.interrupt = guard.flag();
    point.run = serve::run_client(point.options);
    point.summary = serve::summarize(point.run, study.bounds);
    std::cout << serve::format_result(point, study.bounds);
    point.options.prompts.clear();  // stored as the prompts' description, not their text
    point.options.api_key.clear();
    const serve::ServingSummary* previous = study.points.empty() ? nullptr : &study.points.back().summary;
    const auto stop = sweep ? serve::saturation(*sweep, values[i], point.summary, previous) : std::nullopt;
    const bool interrupted = point.run.interrupted;
    study.points.push_back(std::move(point));
    if (interrupted) break;
    if (stop) {
      study.stopped_by = *stop;
      if (i + 1 < values.size()) std::cerr << "xsp: sweep stopped: " << *stop << "\n";
      break;
    }
  }
  EvaluationRecord record = serve::serving_record(study);
  if (f.server_pid) {
    // The client's results are saved whatever happens to the window.
    try {
      EvaluationRecord window = external::window_record(external::stop_window(*f.server_pid, std::chrono::seconds(30)));
      for (RunRecord& run : window.runs) record.runs.push_back(std::move(run));
      record.trace_level = window.trace_level;
      record.settings["serving"]["server_window"] = window.settings;
      record.system = window.system;
    } catch (const std::exception& e) {
      std::cerr << "xsp: warning: the server's trace window was not collected: " << e.what() << "\n";
      record.settings["serving"]["server_window_error"] = e.what();
    }
  }
  store->save(record);
  std::cout << "evaluation " << record.id << " (xsp show " << record.id << ")\n";
  if (record.settings["serving"]["output_tokens_estimated"].get<bool>())
    std::cerr << "xsp: warning: the server sent no usage for some requests: their output tokens are counted chunks, "
                 "an estimate\n";
  if (guard.signal() != 0) return exit_code_for_signal(guard.signal());
  bool any_ok = false;
  for (const serve::ServingPoint& p : study.points) any_ok = any_ok || p.summary.completed > 0;
  return any_ok ? kExitOk : kExitFailure;
}

}  // namespace

void add_bench_serve_command(CLI::App& app, Globals& g, Commands& out) {
  auto* sub = app.add_subcommand(
      "bench-serve",
      "benchmark an OpenAI-compatible streaming server (vLLM, SGLang, TGI, transformers serve): TTFT, TPOT, ITL, E2E, "
      "goodput, per request and per sweep point, stored as an evaluation of kind serving (docs/serving.md)");
  auto f = std::make_shared<BenchServeFlags>();
  sub->add_option("--url", f->url, "the API base, e.g. http://127.0.0.1:8000/v1")->required();
  sub->add_option("--model", f->model, "the model name the server serves")->required();
  sub->add_option("--endpoint", f->endpoint, "completions (/completions) or chat (/chat/completions)")
      ->check(CLI::IsMember({"completions", "chat"}))
      ->capture_default_str();
  sub->add_option("--prompts", f->prompts_file,
                  "prompts file: one prompt per line, or JSON Lines with \"prompt\" and optional \"output_tokens\"");
  sub->add_flag("--synthetic", f->synthetic, "random-word prompts of --prompt-tokens words");
  sub->add_option("--prompt-tokens", f->prompt_tokens,
                  "synthetic prompt length A:B (uniform; words, about one token each; the server's usage gives the "
                  "real count)")
      ->capture_default_str();
  sub->add_option("--num-prompts", f->num_prompts, "synthetic prompts made (default: --num-requests, else 1000)");
  sub->add_option("--output-tokens", f->output_tokens, "max_tokens (and min_tokens) of each request")
      ->capture_default_str();
  sub->add_flag("--no-fixed-output-length", f->no_fixed_output_length,
                "do not send vLLM/SGLang's ignore_eos and min_tokens (for servers that refuse unknown fields)");
  sub->add_option("--request-rate", f->request_rate,
                  "requests per second (Poisson arrivals; inf = all at once); without it, --max-concurrency alone "
                  "is a closed loop");
  sub->add_option("--burstiness", f->burstiness,
                  "gamma shape of the arrival gaps (1 = Poisson, < 1 burstier, > 1 more regular), as vLLM's");
  sub->add_option("--max-concurrency", f->max_concurrency, "requests in flight at most (a request waits for a slot)");
  sub->add_option("--duration-s", f->duration_s, "stop issuing after this many seconds (in-flight requests finish)");
  sub->add_option("--num-requests", f->num_requests, "stop issuing after this many requests");
  sub->add_option("--request-timeout-s", f->request_timeout_s, "a request's limit, connect to last byte")
      ->capture_default_str();
  sub->add_option("--ttft-bound-ms", f->ttft_bound_ms, "TTFT bound: goodput and LoadGen's early-stopping check");
  sub->add_option("--tpot-bound-ms", f->tpot_bound_ms, "TPOT bound: goodput and LoadGen's early-stopping check");
  sub->add_option("--slo-percentile", f->slo_percentile, "percentile the bounds are checked at (early stopping)")
      ->capture_default_str();
  sub->add_option("--seed", f->seed, "seed of the arrival schedule and of the synthetic prompts")
      ->capture_default_str();
  sub->add_option("--sweep", f->sweep,
                  "request-rate=R1,R2,... or max-concurrency=C1,C2,...: one run per value, stopping past saturation");
  sub->add_option("--server-pid", f->server_pid,
                  "the server runs under `xsp profile --signal`: collect its trace during the benchmark and store it "
                  "in the same evaluation");
  sub->add_option("--api-key-env", f->api_key_env,
                  "environment variable holding the API key sent as a bearer token (never stored)")
      ->capture_default_str();
  out.push_back({sub, [&g, f] { return run_bench_serve(g, *f); }});
}

}  // namespace xsp::cli
