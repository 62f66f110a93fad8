#include "xsp/serve/workload.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "xsp/loadgen/loadgen.h"

namespace xsp::serve {

std::vector<std::int64_t> arrival_schedule(double rate_per_s, double burstiness, std::size_t count,
                                           std::uint64_t seed) {
  if (std::isnan(rate_per_s) || rate_per_s <= 0)
    throw std::invalid_argument("request rate " + std::to_string(rate_per_s) + ": expected a rate > 0 or inf");
  if (!std::isfinite(burstiness) || burstiness <= 0)
    throw std::invalid_argument("burstiness " + std::to_string(burstiness) + ": expected a finite number > 0");
  if (std::isinf(rate_per_s)) return std::vector<std::int64_t>(count, 0);
  // The Poisson case is LoadGen's own schedule, so a bench-serve run and a Server scenario of one seed agree.
  if (burstiness == 1.0) return loadgen::poisson_schedule(rate_per_s, count, seed);
  // Gamma gaps of shape `burstiness` and mean 1/rate (vLLM's --burstiness): shape 1 would be exponential.
  return loadgen::schedule_from_gaps(std::gamma_distribution<double>(burstiness, 1.0 / (rate_per_s * burstiness)),
                                     count, seed);
}

namespace {

std::string where(const std::filesystem::path& file, std::size_t line) {
  return "prompts file " + file.string() + " line " + std::to_string(line);
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

std::vector<Prompt> load_prompts(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("prompts file " + file.string() + ": cannot be read");
  std::vector<Prompt> out;
  std::string text;
  std::size_t number = 0;
  int jsonl = -1;  // undecided until the first non-blank line
  while (std::getline(in, text)) {
    ++number;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (blank(text)) continue;
    if (jsonl < 0) jsonl = text[text.find_first_not_of(" \t")] == '{' ? 1 : 0;
    if (jsonl == 0) {
      out.push_back({text, 0, 0});
      continue;
    }
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      throw std::invalid_argument(where(file, number) + ": not a JSON object (a JSON Lines file has one per line)");
    const auto p = j.find("prompt");
    if (p == j.end() || !p->is_string() || p->get<std::string>().empty())
      throw std::invalid_argument(where(file, number) + ": expected a non-empty string \"prompt\"");
    Prompt prompt{p->get<std::string>(), 0, 0};
    if (const auto o = j.find("output_tokens"); o != j.end()) {
      if (!o->is_number_integer() || o->get<std::int64_t>() < 1)
        throw std::invalid_argument(where(file, number) + ": \"output_tokens\" " + o->dump() +
                                    ": expected an integer >= 1");
      prompt.output_tokens = o->get<std::int64_t>();
    }
    out.push_back(std::move(prompt));
  }
  if (in.bad()) throw std::runtime_error("prompts file " + file.string() + ": read error");
  if (out.empty()) throw std::invalid_argument("prompts file " + file.string() + ": holds no prompt");
  return out;
}

std::vector<Prompt> synthetic_prompts(std::size_t count, std::int64_t min_words, std::int64_t max_words,
                                      std::uint64_t seed) {
  if (min_words < 1 || max_words < min_words)
    throw std::invalid_argument("prompt length " + std::to_string(min_words) + ":" + std::to_string(max_words) +
                                ": expected 1 <= A <= B");
  // Common short English words: one BPE token each in GPT-2's and Llama's vocabularies (with the leading space).
  static const char* const kWords[] = {
      "the",   "of",      "and",     "to",    "in",      "is",      "that",    "for",   "it",    "as",     "was",
      "with",  "be",      "by",      "on",    "not",     "he",      "this",    "are",   "or",    "his",    "from",
      "at",    "which",   "but",     "have",  "an",      "had",     "they",    "you",   "were",  "there",  "one",
      "all",   "we",      "can",     "her",   "has",     "been",    "if",      "more",  "when",  "will",   "would",
      "who",   "so",      "no",      "time",  "out",     "up",      "about",   "into",  "than",  "them",   "only",
      "other", "new",     "some",    "could", "these",   "two",     "may",     "first", "then",  "do",     "any",
      "like",  "my",      "now",     "over",  "such",    "our",     "man",     "me",    "even",  "most",   "made",
      "after", "also",    "did",     "many",  "before",  "must",    "through", "back",  "years", "where",  "much",
      "your",  "way",     "well",    "down",  "should",  "because", "each",    "just",  "those", "people", "how",
      "too",   "little",  "state",   "good",  "very",    "make",    "world",   "still", "own",   "see",    "men",
      "work",  "long",    "get",     "here",  "between", "both",    "life",    "being", "under", "never",  "day",
      "same",  "another", "know",    "while", "last",    "might",   "us",      "great", "old",   "year",   "off",
      "come",  "since",   "against", "go",    "came",    "right",   "used",    "take",  "three"};
  constexpr std::size_t kCount = sizeof(kWords) / sizeof(kWords[0]);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> length(min_words, max_words);
  std::uniform_int_distribution<std::size_t> word(0, kCount - 1);
  std::vector<Prompt> out(count);
  for (Prompt& p : out) {
    p.words = length(rng);
    p.text.reserve(static_cast<std::size_t>(p.words) * 6);
    for (std::int64_t w = 0; w < p.words; ++w) {
      if (w) p.text += ' ';
      p.text += kWords[word(rng)];
    }
  }
  return out;
}

std::pair<std::int64_t, std::int64_t> parse_range(const std::string& text, const std::string& flag) {
  auto number = [&](const std::string& part) -> std::int64_t {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || v < 1)
      throw std::invalid_argument(flag + " " + text + ": expected A:B with whole numbers 1 <= A <= B (or one number)");
    return v;
  };
  const std::size_t colon = text.find(':');
  const std::int64_t a = number(text.substr(0, colon));
  const std::int64_t b = colon == std::string::npos ? a : number(text.substr(colon + 1));
  if (b < a) throw std::invalid_argument(flag + " " + text + ": expected A <= B");
  return {a, b};
}

}  // namespace xsp::serve
