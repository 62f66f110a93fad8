// What `xsp bench-serve` sends and when (issue 27, docs/serving.md): the arrival schedule and the prompts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace xsp::serve {

/// The seed of the schedule and of the synthetic prompts when none is given (recorded with the run either way).
inline constexpr std::uint64_t kDefaultSeed = 0x5eed'2027;

/// Scheduled arrival offsets (ns from the run's start, non-decreasing, the first at 0) of `count` requests at a mean
/// of `rate_per_s` requests per second, from std::mt19937_64(seed):
///  - burstiness 1: a Poisson process (exponential gaps of mean 1/rate): exactly loadgen::poisson_schedule(), the
///    schedule of LoadGen's Server scenario;
///  - burstiness b ≠ 1: gamma-distributed gaps of shape b and scale 1/(rate·b), so the mean gap stays 1/rate and the
///    coefficient of variation is 1/√b (b < 1 burstier, b > 1 more regular), as vLLM's `bench serve --burstiness`;
///  - rate +inf: every request at 0 (vLLM's `--request-rate inf`).
/// Same arguments → same schedule. Throws std::invalid_argument for rate ≤ 0 or NaN, burstiness ≤ 0 or not finite.
std::vector<std::int64_t> arrival_schedule(double rate_per_s, double burstiness, std::size_t count, std::uint64_t seed);

/// One prompt as sent.
struct Prompt {
  std::string text;
  /// Output tokens asked for this prompt (max_tokens and min_tokens); 0 = the run's --output-tokens.
  std::int64_t output_tokens = 0;
  /// Words of a synthetic prompt (its length is what was asked for; the server's usage gives its real tokens); 0 for
  /// a file's prompt.
  std::int64_t words = 0;
};

/// Reads a prompts file: JSON Lines when its first non-blank line starts with '{' (each line an object with a
/// non-empty string "prompt" and an optional positive integer "output_tokens"), otherwise one prompt per line. Blank
/// lines are skipped. Throws std::invalid_argument naming the file and the 1-based line for a line that is not valid
/// JSON, lacks "prompt", or has a bad "output_tokens", and for a file with no prompt; std::runtime_error when the
/// file cannot be read.
std::vector<Prompt> load_prompts(const std::filesystem::path& file);

/// `count` synthetic prompts of a uniform random number of words in [min_words, max_words] (inclusive), the words
/// drawn uniformly from a fixed list of common English words, from std::mt19937_64(seed). A word of that list is
/// about one token of the common BPE vocabularies (GPT-2, Llama), so --prompt-tokens A:B asks for roughly A..B
/// tokens; the server's usage.prompt_tokens is what the figures use. Throws std::invalid_argument for min_words < 1
/// or max_words < min_words.
std::vector<Prompt> synthetic_prompts(std::size_t count, std::int64_t min_words, std::int64_t max_words,
                                      std::uint64_t seed);

/// Parses "A:B" (or "A", meaning A:A) into positive integers A ≤ B. Throws std::invalid_argument naming `flag` and
/// the text otherwise.
std::pair<std::int64_t, std::int64_t> parse_range(const std::string& text, const std::string& flag);

}  // namespace xsp::serve
