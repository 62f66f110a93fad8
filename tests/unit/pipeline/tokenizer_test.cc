// The SentencePiece tokenizer, the prompt file and prompts cut to N tokens (include/xsp/pipeline/tokenizer.h).
// Fixture: tests/fixtures/text/tiny.model (400 ids, BPE, byte fallback; made by make_tokenizer.sh).
#include "xsp/pipeline/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

const fs::path kModel = fs::path(XSP_TEST_FIXTURES) / "text" / "tiny.model";

#define SKIP_WITHOUT_SENTENCEPIECE() \
  if (!xsp::have_tokenizer())        \
  GTEST_SKIP() << "XSP was built without SentencePiece (libsentencepiece-dev); the tokenizer is off"

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("xsp-tokenizer-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path write(const std::string& name, const std::string& bytes) const {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string load_error(const fs::path& p) {
  try {
    xsp::Tokenizer::load(p);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string prompts_error(const fs::path& p) {
  try {
    xsp::load_prompts(p);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Tokenizer, WithoutSentencePieceLoadSaysWhy) {
  if (xsp::have_tokenizer()) GTEST_SKIP() << "built with SentencePiece";
  const std::string e = load_error(kModel);
  EXPECT_TRUE(has(e, "XSP was built without SentencePiece (Debian: libsentencepiece-dev)")) << e;
}

TEST(Tokenizer, SpecialIdsAndVocabulary) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const auto t = xsp::Tokenizer::load(kModel);
  EXPECT_EQ(t.vocab_size(), 400);
  EXPECT_EQ(t.unk_id(), 0);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_EQ(t.pad_id(), 3);
  EXPECT_EQ(t.path(), kModel);
}

TEST(Tokenizer, RoundTripOfARealSentence) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const auto t = xsp::Tokenizer::load(kModel);
  const std::string text = "The time to the first token measures the prefill, and each decode step is timed.";
  const auto ids = t.encode(text, false, false);
  ASSERT_GT(ids.size(), 5u);
  EXPECT_LT(ids.size(), text.size());  // merges happened: fewer ids than bytes
  for (const auto id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, t.vocab_size());
  }
  EXPECT_EQ(t.decode(ids), text);
  // Byte fallback: text outside the corpus (other scripts, unseen letters) still round-trips, without <unk>.
  const std::string other = "Zebra \xC3\xBC \xE6\xBC\xA2 Quux";
  const auto other_ids = t.encode(other, false, false);
  for (const auto id : other_ids) EXPECT_NE(id, t.unk_id());
  EXPECT_EQ(t.decode(other_ids), other);
  EXPECT_TRUE(t.encode("", false, false).empty());
}

TEST(Tokenizer, BosAndEosAdded) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const auto t = xsp::Tokenizer::load(kModel);
  const auto plain = t.encode("the model", false, false);
  const auto both = t.encode("the model", true, true);
  ASSERT_EQ(both.size(), plain.size() + 2);
  EXPECT_EQ(both.front(), t.bos_id());
  EXPECT_EQ(both.back(), t.eos_id());
  EXPECT_EQ(std::vector<std::int64_t>(both.begin() + 1, both.end() - 1), plain);
  EXPECT_EQ(t.encode("the model", true, false).front(), t.bos_id());
  EXPECT_EQ(t.encode("the model", false, true).back(), t.eos_id());
  EXPECT_EQ(t.decode(both), "the model");  // control ids decode as nothing
}

TEST(Tokenizer, IdsOutsideTheVocabularyDecodeAsUnk) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const auto t = xsp::Tokenizer::load(kModel);
  const std::string unk = t.decode({t.unk_id()});
  ASSERT_FALSE(unk.empty());
  // A GPT-2-size model has 50257 logits; this tokenizer 400 ids.
  EXPECT_EQ(t.decode({400}), unk);
  EXPECT_EQ(t.decode({50256}), unk);
  EXPECT_EQ(t.decode({-1}), unk);
  const auto the = t.encode("the", false, false);
  auto mixed = the;
  mixed.push_back(1'000'000'000'000LL);
  EXPECT_EQ(t.decode(mixed), t.decode(the) + t.decode({t.unk_id()}));
}

TEST(Tokenizer, MovableAndUsableAfterMove) {
  SKIP_WITHOUT_SENTENCEPIECE();
  auto a = xsp::Tokenizer::load(kModel);
  xsp::Tokenizer b = std::move(a);
  EXPECT_EQ(b.decode(b.encode("the prompt", false, false)), "the prompt");
  auto c = xsp::Tokenizer::load(kModel);
  c = std::move(b);
  EXPECT_EQ(c.vocab_size(), 400);
}

TEST(Tokenizer, LoadErrorsNameTheFile) {
  SKIP_WITHOUT_SENTENCEPIECE();
  TempDir dir;
  const auto missing = dir.path() / "missing.model";
  std::string e = load_error(missing);
  EXPECT_TRUE(has(e, missing.string()) && has(e, "no such file")) << e;

  const auto junk = dir.write("junk.model", "this is not a protobuf \xff\xfe\x01 at all");
  e = load_error(junk);
  EXPECT_TRUE(has(e, junk.string()) && has(e, "not a SentencePiece model")) << e;

  const auto empty = dir.write("empty.model", "");
  e = load_error(empty);
  EXPECT_TRUE(has(e, empty.string())) << e;

  e = load_error(dir.path());
  EXPECT_TRUE(has(e, dir.path().string()) && has(e, "not a regular file")) << e;
}

TEST(Prompts, OnePerLineBlankLinesSkipped) {
  TempDir dir;
  const auto f = dir.write("p.txt", "first prompt\n\n   \nsecond \xC3\xBC prompt\r\n\t\nthird\n");
  EXPECT_EQ(xsp::load_prompts(f), (std::vector<std::string>{"first prompt", "second \xC3\xBC prompt", "third"}));
  const auto no_newline = dir.write("q.txt", "only line");
  EXPECT_EQ(xsp::load_prompts(no_newline), (std::vector<std::string>{"only line"}));
}

TEST(Prompts, ErrorsNameTheFileAndLine) {
  TempDir dir;
  const auto missing = dir.path() / "none.txt";
  std::string e = prompts_error(missing);
  EXPECT_TRUE(has(e, missing.string()) && has(e, "no such file")) << e;

  const auto blank = dir.write("blank.txt", "\n  \n\t\n");
  e = prompts_error(blank);
  EXPECT_TRUE(has(e, blank.string()) && has(e, "no prompt")) << e;
  const auto empty = dir.write("empty.txt", "");
  e = prompts_error(empty);
  EXPECT_TRUE(has(e, empty.string()) && has(e, "no prompt")) << e;

  const auto bad = dir.write("bad.txt", "fine\nalso fine\nbroken \xC3\x28 here\nnot reached\n");
  e = prompts_error(bad);
  EXPECT_TRUE(has(e, bad.string()) && has(e, "line 3") && has(e, "not valid UTF-8")) << e;
  // Overlong encodings and surrogates are not UTF-8 either.
  e = prompts_error(dir.write("overlong.txt", "a\n\xC0\xAF\n"));
  EXPECT_TRUE(has(e, "line 2") && has(e, "UTF-8")) << e;
  e = prompts_error(dir.write("surrogate.txt", "\xED\xA0\x80\n"));
  EXPECT_TRUE(has(e, "line 1") && has(e, "UTF-8")) << e;

  const auto long_line = dir.write("long.txt", "ok\n" + std::string(xsp::kMaxPromptLineBytes + 1, 'a') + "\n");
  e = prompts_error(long_line);
  EXPECT_TRUE(has(e, long_line.string()) && has(e, "line 2") && has(e, "limit")) << e;

  e = prompts_error(dir.path());
  EXPECT_TRUE(has(e, dir.path().string()) && has(e, "not a regular file")) << e;
}

TEST(Prompts, TokenizeKeepsExactlyNIdsAndCountsShortOnes) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const auto t = xsp::Tokenizer::load(kModel);
  const std::vector<std::string> prompts = {
      "The evaluation runner puts the tokenize stage, the prefill and every decode step in spans.",
      "short",
      "Greedy sampling takes the token with the largest logit; the next step feeds that token.",
      "",
  };
  std::size_t too_short = 99;
  const auto kept = xsp::tokenize_prompts(t, prompts, 8, true, &too_short);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(too_short, 2u);
  EXPECT_EQ(kept[0].source_index, 0u);
  EXPECT_EQ(kept[1].source_index, 2u);
  for (const auto& p : kept) {
    EXPECT_EQ(p.ids.size(), 8u);
    EXPECT_EQ(p.ids.front(), t.bos_id());
    const auto full = t.encode(prompts[p.source_index], true, false);
    EXPECT_EQ(p.ids, std::vector<std::int64_t>(full.begin(), full.begin() + 8));  // the first 8
  }
  // Without bos, the first id is the text's.
  const auto no_bos = xsp::tokenize_prompts(t, prompts, 8, false, nullptr);
  ASSERT_EQ(no_bos.size(), 2u);
  EXPECT_NE(no_bos[0].ids.front(), t.bos_id());

  // Exactly as long as asked is long enough.
  const auto exact = static_cast<int>(t.encode(prompts[0], false, false).size());
  EXPECT_EQ(xsp::tokenize_prompts(t, {prompts[0]}, exact, false, &too_short).at(0).ids.size(),
            static_cast<std::size_t>(exact));
  EXPECT_EQ(too_short, 0u);
}

TEST(Prompts, NoneLongEnoughNamesTheCount) {
  SKIP_WITHOUT_SENTENCEPIECE();
  const auto t = xsp::Tokenizer::load(kModel);
  try {
    xsp::tokenize_prompts(t, {"short", "tiny"}, 64, true, nullptr);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(has(e.what(), "64 tokens") && has(e.what(), "2 prompt(s)")) << e.what();
  }
  EXPECT_THROW(xsp::tokenize_prompts(t, {"short"}, 0, true, nullptr), std::invalid_argument);
}
