#include "xsp/serve/workload.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "xsp/loadgen/loadgen.h"

namespace xsp::serve {
namespace {

std::vector<double> gaps_s(const std::vector<std::int64_t>& schedule) {
  std::vector<double> out;
  for (std::size_t i = 1; i < schedule.size(); ++i)
    out.push_back(static_cast<double>(schedule[i] - schedule[i - 1]) * 1e-9);
  return out;
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev(const std::vector<double>& v) {
  const double m = mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

TEST(ArrivalSchedule, PoissonIsLoadGensSchedule) {
  EXPECT_EQ(arrival_schedule(8, 1, 500, 42), loadgen::poisson_schedule(8, 500, 42));
  EXPECT_EQ(arrival_schedule(8, 1, 10, 42)[0], 0);
  // A prefix of a longer schedule of the same seed is the shorter schedule (the client grows it on demand).
  const auto long_one = arrival_schedule(3, 0.5, 100, 9);
  const auto short_one = arrival_schedule(3, 0.5, 40, 9);
  EXPECT_TRUE(std::equal(short_one.begin(), short_one.end(), long_one.begin()));
}

// 20,000 gaps at 4 requests/s, seed fixed: the mean gap within 3 standard errors of 1/rate, and the gaps pass a
// Kolmogorov–Smirnov test against the exponential distribution at the 1% level (critical D = 1.628 / √n).
TEST(ArrivalSchedule, PoissonGapsHaveTheRateAndTheExponentialShape) {
  const double rate = 4;
  std::vector<double> g = gaps_s(arrival_schedule(rate, 1, 20'001, 2027));
  const double n = static_cast<double>(g.size());
  const double se = (1 / rate) / std::sqrt(n);  // an exponential's sd is its mean
  EXPECT_NEAR(mean(g), 1 / rate, 3 * se);
  std::sort(g.begin(), g.end());
  double d = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double cdf = 1 - std::exp(-rate * g[i]);
    d = std::max({d, cdf - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - cdf});
  }
  EXPECT_LT(d, 1.628 / std::sqrt(n)) << "KS statistic";
}

// Gamma gaps of shape b and mean 1/rate have a coefficient of variation 1/√b: b = 0.25 is twice as variable as
// Poisson, b = 4 half. Checked within 3 standard errors for the mean and 5% for the CV (20,000 gaps: the CV's
// sampling error is below 1.5% for these shapes).
TEST(ArrivalSchedule, BurstinessKeepsTheRateAndSetsTheVariability) {
  for (double b : {0.25, 4.0}) {
    const double rate = 10;
    const std::vector<double> g = gaps_s(arrival_schedule(rate, b, 20'001, 5));
    const double n = static_cast<double>(g.size());
    const double sd = (1 / rate) / std::sqrt(b);
    EXPECT_NEAR(mean(g), 1 / rate, 3 * sd / std::sqrt(n)) << "burstiness " << b;
    EXPECT_NEAR(stddev(g) / mean(g), 1 / std::sqrt(b), 0.05 / std::sqrt(b)) << "burstiness " << b;
  }
}

TEST(ArrivalSchedule, InfiniteRateSendsEverythingAtOnceAndBadValuesAreRefused) {
  EXPECT_EQ(arrival_schedule(INFINITY, 1, 5, 1), std::vector<std::int64_t>(5, 0));
  EXPECT_THROW(arrival_schedule(0, 1, 5, 1), std::invalid_argument);
  EXPECT_THROW(arrival_schedule(NAN, 1, 5, 1), std::invalid_argument);
  EXPECT_THROW(arrival_schedule(1, 0, 5, 1), std::invalid_argument);
  EXPECT_THROW(arrival_schedule(1, INFINITY, 5, 1), std::invalid_argument);
}

class PromptFile : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& text) {
    path_ = std::filesystem::temp_directory_path() /
            ("xsp-prompts-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt");
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

TEST_F(PromptFile, PlainLinesAreOnePromptEach) {
  const auto prompts = load_prompts(write("first prompt\r\n\nsecond {not json}\n"));
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(prompts[0].text, "first prompt");
  EXPECT_EQ(prompts[1].text, "second {not json}");
  EXPECT_EQ(prompts[1].output_tokens, 0);
}

TEST_F(PromptFile, JsonLinesCarryPromptAndOutputTokens) {
  const auto prompts = load_prompts(write("{\"prompt\": \"a\", \"output_tokens\": 12}\n\n{\"prompt\": \"b\"}\n"));
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(prompts[0].output_tokens, 12);
  EXPECT_EQ(prompts[1].text, "b");
}

TEST_F(PromptFile, ABadLineIsNamedWithItsFileAndNumber) {
  const auto file = write("{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"output_tokens\": 0}\n");
  try {
    (void)load_prompts(file);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + " line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("output_tokens"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)load_prompts(write("{\"prompt\": \"a\"}\n{oops\n")), std::invalid_argument);
  EXPECT_THROW((void)load_prompts(write("{\"text\": \"a\"}\n")), std::invalid_argument);
  EXPECT_THROW((void)load_prompts(write("\n\n")), std::invalid_argument);
  EXPECT_THROW((void)load_prompts("/nonexistent/prompts.txt"), std::runtime_error);
}

TEST(SyntheticPrompts, LengthsAreUniformInTheRangeAndSeeded) {
  const auto a = synthetic_prompts(2000, 5, 9, 3);
  std::vector<int> seen(10, 0);
  for (const Prompt& p : a) {
    ASSERT_GE(p.words, 5);
    ASSERT_LE(p.words, 9);
    EXPECT_EQ(std::count(p.text.begin(), p.text.end(), ' ') + 1, p.words);
    ++seen[static_cast<std::size_t>(p.words)];
  }
  for (int w = 5; w <= 9; ++w) EXPECT_GT(seen[static_cast<std::size_t>(w)], 300) << w;  // 400 expected each
  const auto b = synthetic_prompts(2000, 5, 9, 3);
  EXPECT_EQ(a[17].text, b[17].text);
  EXPECT_THROW(synthetic_prompts(1, 0, 3, 1), std::invalid_argument);
  EXPECT_THROW(synthetic_prompts(1, 4, 3, 1), std::invalid_argument);
}

TEST(ParseRange, AcceptsAToBAndOneNumber) {
  EXPECT_EQ(parse_range("512:2048", "--prompt-tokens"), (std::pair<std::int64_t, std::int64_t>{512, 2048}));
  EXPECT_EQ(parse_range("64", "--prompt-tokens"), (std::pair<std::int64_t, std::int64_t>{64, 64}));
  for (const char* bad : {"", "0:4", "4:2", "a:b", "3:", "1.5:2", "-1:3"}) {
    try {
      (void)parse_range(bad, "--prompt-tokens");
      FAIL() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--prompt-tokens"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace xsp::serve
