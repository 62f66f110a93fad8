// Generation metrics and the Server check of token latencies on hand-made timestamps with known answers.
#include "xsp/loadgen/token_latency.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "xsp/loadgen/loadgen.h"

namespace xsp::loadgen {
namespace {

constexpr std::int64_t kMs = 1'000'000;

// A request issued at `issued`, whose first token comes `prefill` later and each next one `per_token` after the
// one before: `tokens` output tokens in all.
GeneratedRequest fixed(std::int64_t issued, std::int64_t prefill, std::int64_t per_token, int tokens,
                       std::int64_t input_tokens = 10) {
  GeneratedRequest r{issued, input_tokens, {}};
  for (int k = 0; k < tokens; ++k) r.token_ns.push_back(issued + prefill + k * per_token);
  return r;
}

// The message of the std::invalid_argument that `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// Four requests with fixed delays (ms):
//   0: issued 0,   TTFT 50, 10 per token, 20 tokens -> TPOT 10, E2E 50 + 19·10 = 240, last token at 240
//   1: issued 100, TTFT 60, 20 per token, 11 tokens -> TPOT 20, E2E 60 + 10·20 = 260, last at 360
//   2: issued 200, TTFT 70, one token               -> no TPOT, E2E 70,                last at 270
//   3: issued 300, TTFT 40, 5 per token,  41 tokens -> TPOT 5,  E2E 40 + 40·5 = 240,  last at 540
std::vector<GeneratedRequest> four_requests() {
  return {fixed(0, 50 * kMs, 10 * kMs, 20, 100), fixed(100 * kMs, 60 * kMs, 20 * kMs, 11, 200),
          fixed(200 * kMs, 70 * kMs, 0, 1, 50), fixed(300 * kMs, 40 * kMs, 5 * kMs, 41, 150)};
}

TEST(GenerationMetrics, ExactAnswersOnFixedDelays) {
  const GenerationMetrics m = generation_metrics(four_requests(), StabilityRule{});
  EXPECT_EQ(m.requests, 4u);
  EXPECT_EQ(m.input_tokens, 500);
  EXPECT_EQ(m.output_tokens, 20 + 11 + 1 + 41);
  // TTFT {50, 60, 70, 40}: sorted 40 50 60 70; p50 at rank 1.5 = 55, p99 at rank 2.97 = 60 + 0.97·10.
  EXPECT_EQ(m.ttft_ns.n, 4u);
  EXPECT_DOUBLE_EQ(m.ttft_ns.mean, 55.0 * kMs);
  EXPECT_DOUBLE_EQ(m.ttft_ns.min, 40.0 * kMs);
  EXPECT_DOUBLE_EQ(m.ttft_ns.max, 70.0 * kMs);
  EXPECT_DOUBLE_EQ(m.ttft_ns.p50, 55.0 * kMs);
  EXPECT_NEAR(m.ttft_ns.p99, 69.7 * kMs, 1e-3);
  // TPOT {10, 20, 5}: the one-token request has none.
  EXPECT_EQ(m.tpot_ns.n, 3u);
  EXPECT_DOUBLE_EQ(m.tpot_ns.min, 5.0 * kMs);
  EXPECT_DOUBLE_EQ(m.tpot_ns.p50, 10.0 * kMs);
  EXPECT_DOUBLE_EQ(m.tpot_ns.max, 20.0 * kMs);
  EXPECT_NEAR(m.tpot_ns.mean, 35.0 / 3 * kMs, 1e-3);
  // ITL pooled: 19 gaps of 10, 10 of 20, 40 of 5 = 69 gaps (output tokens − requests). Sorted: ranks 0..39 are
  // 5, 40..58 are 10, 59..68 are 20; p50 at rank 34 = 5, p90 at rank 61.2 = 20.
  EXPECT_EQ(m.itl_ns.n, 69u);
  EXPECT_DOUBLE_EQ(m.itl_ns.p50, 5.0 * kMs);
  EXPECT_DOUBLE_EQ(m.itl_ns.p90, 20.0 * kMs);
  EXPECT_DOUBLE_EQ(m.itl_ns.max, 20.0 * kMs);
  EXPECT_NEAR(m.itl_ns.mean, (19 * 10 + 10 * 20 + 40 * 5) / 69.0 * kMs, 1e-3);
  // E2E {240, 260, 70, 240}.
  EXPECT_EQ(m.e2e_ns.n, 4u);
  EXPECT_DOUBLE_EQ(m.e2e_ns.min, 70.0 * kMs);
  EXPECT_DOUBLE_EQ(m.e2e_ns.p50, 240.0 * kMs);
  EXPECT_DOUBLE_EQ(m.e2e_ns.max, 260.0 * kMs);
  // Rates over the wall time: first issue (0) to last token (540 ms).
  EXPECT_EQ(m.duration_ns, 540 * kMs);
  EXPECT_NEAR(m.output_tokens_per_s, 73 / 0.540, 1e-9);
  EXPECT_NEAR(m.input_tokens_per_s, 500 / 0.540, 1e-9);
  EXPECT_NEAR(m.requests_per_s, 4 / 0.540, 1e-9);
}

TEST(GenerationMetrics, OneTokenRequestCountsInTtftButHasNoTpot) {
  const GenerationMetrics m = generation_metrics(four_requests(), StabilityRule{});
  EXPECT_EQ(m.single_token_requests, 1u);
  EXPECT_EQ(m.ttft_ns.n, 4u);
  EXPECT_EQ(m.e2e_ns.n, 4u);
  EXPECT_EQ(m.tpot_ns.n, 3u);
  // Only one-token requests: TPOT and ITL are empty, the rest is there.
  const GenerationMetrics only =
      generation_metrics({fixed(0, 5 * kMs, 0, 1), fixed(0, 7 * kMs, 0, 1)}, StabilityRule{});
  EXPECT_EQ(only.single_token_requests, 2u);
  EXPECT_EQ(only.tpot_ns.n, 0u);
  EXPECT_TRUE(std::isnan(only.tpot_ns.p50));
  EXPECT_EQ(only.itl_ns.n, 0u);
  EXPECT_DOUBLE_EQ(only.ttft_ns.max, 7.0 * kMs);
  EXPECT_EQ(only.output_tokens, 2);
}

TEST(GenerationMetrics, RatesOverAGivenDuration) {
  const GenerationMetrics m = generation_metrics(four_requests(), 1000 * kMs, StabilityRule{});
  EXPECT_EQ(m.duration_ns, 1000 * kMs);
  EXPECT_DOUBLE_EQ(m.output_tokens_per_s, 73.0);
  EXPECT_DOUBLE_EQ(m.input_tokens_per_s, 500.0);
  EXPECT_DOUBLE_EQ(m.requests_per_s, 4.0);
  EXPECT_DOUBLE_EQ(m.tpot_ns.p50, 10.0 * kMs);  // the distributions do not depend on the duration
  EXPECT_NE(error_of([] { generation_metrics(four_requests(), 0, StabilityRule{}); }).find("duration_ns"),
            std::string::npos);
}

TEST(GenerationMetrics, NoRequests) {
  const GenerationMetrics m = generation_metrics({}, StabilityRule{});
  EXPECT_EQ(m.requests, 0u);
  EXPECT_EQ(m.output_tokens, 0);
  EXPECT_EQ(m.ttft_ns.n, 0u);
  EXPECT_TRUE(std::isnan(m.ttft_ns.p99));
  EXPECT_TRUE(std::isnan(m.output_tokens_per_s));
  EXPECT_EQ(m.ttft_stability.verdict, Verdict::kNotAssessed);
  EXPECT_EQ(m.tpot_stability.verdict, Verdict::kNotAssessed);
}

TEST(GenerationMetrics, ErrorsNameTheRequestAndTheField) {
  auto with = [](GeneratedRequest bad) {
    std::vector<GeneratedRequest> rs = four_requests();
    rs[2] = std::move(bad);
    return error_of([&] { generation_metrics(rs, StabilityRule{}); });
  };
  GeneratedRequest out_of_order = fixed(0, kMs, kMs, 5);
  out_of_order.token_ns[3] = out_of_order.token_ns[1];  // token 3 set back to 2 ms, before token 2 (3 ms)
  std::string e = with(out_of_order);
  EXPECT_NE(e.find("request 2"), std::string::npos) << e;
  EXPECT_NE(e.find("token_ns[3]"), std::string::npos) << e;
  EXPECT_NE(e.find("token_ns[2]"), std::string::npos) << e;

  e = with(fixed(10 * kMs, -kMs, kMs, 3));
  EXPECT_NE(e.find("request 2"), std::string::npos) << e;
  EXPECT_NE(e.find("issued_ns"), std::string::npos) << e;

  e = with(fixed(0, kMs, kMs, 3, -1));
  EXPECT_NE(e.find("request 2"), std::string::npos) << e;
  EXPECT_NE(e.find("input_tokens"), std::string::npos) << e;

  e = with(GeneratedRequest{0, 5, {}});
  EXPECT_NE(e.find("request 2"), std::string::npos) << e;
  EXPECT_NE(e.find("token_ns is empty"), std::string::npos) << e;

  // Equal token times are not out of order (several tokens in one step).
  EXPECT_EQ(with(fixed(0, kMs, 0, 4)), "");
  // The Server check validates the same way.
  std::vector<GeneratedRequest> rs = four_requests();
  rs[1].token_ns.clear();
  e = error_of([&] { check_token_latencies(rs, {60.0 * kMs, 15.0 * kMs}); });
  EXPECT_NE(e.find("request 1"), std::string::npos) << e;
}

TEST(GenerationMetrics, StabilityStableForConstantDelaysUnstableForDrift) {
  std::vector<GeneratedRequest> steady, drifting, decode_drifts;
  for (int i = 0; i < 30; ++i) {
    steady.push_back(fixed(i * 300 * kMs, 50 * kMs, 10 * kMs, 20));
    // TTFT 50, 55, ... 195 ms: window medians 72.5, 122.5, 172.5 -> spread 100 / 122.5, far above 10%.
    drifting.push_back(fixed(i * 300 * kMs, (50 + 5 * i) * kMs, (10 + i) * kMs, 20));
    // TTFT constant, decode slowing down.
    decode_drifts.push_back(fixed(i * 300 * kMs, 50 * kMs, (10 + i) * kMs, 20));
  }
  const StabilityRule rule{3, 0.10};
  GenerationMetrics m = generation_metrics(steady, rule);
  EXPECT_EQ(m.ttft_stability.verdict, Verdict::kStable);
  EXPECT_EQ(m.tpot_stability.verdict, Verdict::kStable);
  EXPECT_DOUBLE_EQ(m.ttft_stability.spread_fraction, 0.0);

  m = generation_metrics(drifting, rule);
  EXPECT_EQ(m.ttft_stability.verdict, Verdict::kUnstable);
  EXPECT_EQ(m.tpot_stability.verdict, Verdict::kUnstable);
  ASSERT_EQ(m.ttft_stability.window_medians_ns.size(), 3u);
  EXPECT_DOUBLE_EQ(m.ttft_stability.window_medians_ns[0], 72.5 * kMs);
  EXPECT_DOUBLE_EQ(m.ttft_stability.window_medians_ns[2], 172.5 * kMs);
  EXPECT_NEAR(m.ttft_stability.spread_fraction, 100.0 / 122.5, 1e-12);

  m = generation_metrics(decode_drifts, rule);
  EXPECT_EQ(m.ttft_stability.verdict, Verdict::kStable);
  EXPECT_EQ(m.tpot_stability.verdict, Verdict::kUnstable);

  EXPECT_THROW(generation_metrics(steady, StabilityRule{1, 0.1}), std::invalid_argument);
}

// ---- Server scenario with token latencies ----------------------------------------------------------------------

constexpr int kRequests = 1000;
const TokenLatencyBounds kBounds{60.0 * kMs, 15.0 * kMs, 99};

// kRequests requests of TTFT 50 ms and TPOT 10 ms over 20 tokens; the first `slow_ttft` have TTFT 100 ms and the
// first `slow_tpot` TPOT 30 ms.
std::vector<GeneratedRequest> server_run(int slow_ttft, int slow_tpot, int requests = kRequests) {
  std::vector<GeneratedRequest> rs;
  for (int i = 0; i < requests; ++i)
    rs.push_back(fixed(i * 10 * kMs, (i < slow_ttft ? 100 : 50) * kMs, (i < slow_tpot ? 30 : 10) * kMs, 20));
  return rs;
}

TEST(TokenLatencyServer, NominalRunIsValid) {
  const TokenLatencyVerdict v = check_token_latencies(server_run(0, 0), kBounds);
  EXPECT_TRUE(v.valid);
  EXPECT_EQ(v.reason, "");
  EXPECT_EQ(v.ttft.samples, 1000u);
  EXPECT_EQ(v.tpot.samples, 1000u);
  EXPECT_DOUBLE_EQ(v.ttft.estimate_ns, 50.0 * kMs);
  EXPECT_DOUBLE_EQ(v.tpot.estimate_ns, 10.0 * kMs);
  EXPECT_DOUBLE_EQ(v.ttft.bound_ns, 60.0 * kMs);
  EXPECT_EQ(v.ttft.max_overlatency, early_stopping_max_overlatency(1000, 99, 0.99));
}

TEST(TokenLatencyServer, TpotOverItsBoundIsInvalidNamingTpot) {
  // Early stopping may let t requests exceed the estimate: t slow ones still pass, t + 1 fail.
  const std::int64_t t = early_stopping_max_overlatency(kRequests, 99, 0.99);
  ASSERT_GE(t, 0);
  ASSERT_LE(t + 1, 9);  // so that the plain p99 below stays at 10 ms
  TokenLatencyVerdict v = check_token_latencies(server_run(0, static_cast<int>(t)), kBounds);
  EXPECT_TRUE(v.valid) << v.reason;
  EXPECT_DOUBLE_EQ(v.tpot.estimate_ns, 10.0 * kMs);

  const auto failing = server_run(0, static_cast<int>(t) + 1);
  v = check_token_latencies(failing, kBounds);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(v.ttft.meets_bound);
  EXPECT_FALSE(v.tpot.meets_bound);
  EXPECT_TRUE(v.tpot.enough_samples);
  EXPECT_DOUBLE_EQ(v.tpot.estimate_ns, 30.0 * kMs);
  EXPECT_EQ(v.reason.rfind("TPOT", 0), 0u) << v.reason;
  EXPECT_EQ(v.reason.find("TTFT"), std::string::npos) << v.reason;
  // The decision is the early-stopping estimate's, not the plain p99's: at most 9 of 1000 requests are slow,
  // so the plain p99 (rank 989.01 of 0..999) is still 10 ms.
  EXPECT_DOUBLE_EQ(generation_metrics(failing, StabilityRule{}).tpot_ns.p99, 10.0 * kMs);
}

TEST(TokenLatencyServer, TtftOverItsBoundIsInvalidNamingTtft) {
  const std::int64_t t = early_stopping_max_overlatency(kRequests, 99, 0.99);
  const TokenLatencyVerdict v = check_token_latencies(server_run(static_cast<int>(t) + 1, 0), kBounds);
  EXPECT_FALSE(v.valid);
  EXPECT_FALSE(v.ttft.meets_bound);
  EXPECT_TRUE(v.tpot.meets_bound);
  EXPECT_DOUBLE_EQ(v.ttft.estimate_ns, 100.0 * kMs);
  EXPECT_EQ(v.reason.rfind("TTFT", 0), 0u) << v.reason;
  EXPECT_EQ(v.reason.find("TPOT"), std::string::npos) << v.reason;
}

TEST(TokenLatencyServer, BothOverTheirBoundsNameBoth) {
  const TokenLatencyVerdict v = check_token_latencies(server_run(100, 100), kBounds);
  EXPECT_FALSE(v.valid);
  EXPECT_NE(v.reason.find("TTFT"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("TPOT"), std::string::npos) << v.reason;
}

TEST(TokenLatencyServer, TpotIsPerRequestNotPerGap) {
  // Every request stalls 100 ms once among 10 ms gaps: ITL's tail is 100 ms, but each request's TPOT is
  // (18·10 + 100) / 19 = 14.74 ms, under the 15 ms bound. MLPerf's TPOT is the per-request mean.
  std::vector<GeneratedRequest> rs = server_run(0, 0);
  for (auto& r : rs)
    for (std::size_t k = 10; k < r.token_ns.size(); ++k) r.token_ns[k] += 90 * kMs;
  const TokenLatencyVerdict v = check_token_latencies(rs, kBounds);
  EXPECT_TRUE(v.valid) << v.reason;
  EXPECT_NEAR(v.tpot.estimate_ns, 280.0 / 19 * kMs, 1e-3);
  EXPECT_DOUBLE_EQ(generation_metrics(rs, StabilityRule{}).itl_ns.max, 100.0 * kMs);
}

TEST(TokenLatencyServer, TooFewRequestsForEarlyStopping) {
  // p99 at 99% confidence: 0.99^n <= 0.01 first holds at n = 459 (0.99^458 = 0.01002).
  TokenLatencyVerdict v = check_token_latencies(server_run(0, 0, 458), kBounds);
  EXPECT_FALSE(v.valid);
  EXPECT_FALSE(v.ttft.enough_samples);
  EXPECT_FALSE(v.ttft.meets_bound);
  EXPECT_EQ(v.ttft.max_overlatency, -1);
  EXPECT_EQ(v.ttft.min_samples, 459u);
  EXPECT_TRUE(std::isnan(v.ttft.estimate_ns));
  EXPECT_NE(v.reason.find("too few"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("459"), std::string::npos) << v.reason;

  v = check_token_latencies(server_run(0, 0, 459), kBounds);
  EXPECT_TRUE(v.valid) << v.reason;
  EXPECT_EQ(v.ttft.max_overlatency, 0);
  EXPECT_DOUBLE_EQ(v.ttft.estimate_ns, 50.0 * kMs);  // t = 0: the largest

  // Enough requests for TTFT, too few with a TPOT: one-token requests have none.
  std::vector<GeneratedRequest> rs = server_run(0, 0, 500);
  for (int i = 0; i < 100; ++i) rs[i].token_ns.resize(1);
  v = check_token_latencies(rs, kBounds);
  EXPECT_FALSE(v.valid);
  EXPECT_TRUE(v.ttft.meets_bound);
  EXPECT_EQ(v.ttft.samples, 500u);
  EXPECT_EQ(v.tpot.samples, 400u);
  EXPECT_FALSE(v.tpot.enough_samples);
  EXPECT_EQ(v.reason.rfind("TPOT: too few", 0), 0u) << v.reason;
}

TEST(TokenLatencyServer, BadBoundsAreRejected) {
  const auto rs = server_run(0, 0, 10);
  EXPECT_THROW(check_token_latencies(rs, {0, 15.0 * kMs}), std::invalid_argument);
  EXPECT_THROW(check_token_latencies(rs, {60.0 * kMs, -1}), std::invalid_argument);
  EXPECT_THROW(check_token_latencies(rs, {60.0 * kMs, 15.0 * kMs, 100}), std::invalid_argument);
  EXPECT_THROW(check_token_latencies(rs, kBounds, 1.0), std::invalid_argument);
}

}  // namespace
}  // namespace xsp::loadgen
