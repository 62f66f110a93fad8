// Text side of generation (docs/generation.md "Tokenizer, prompts and the GPT-2 export"): a SentencePiece
// tokenizer (Debian's libsentencepiece-dev), the prompt file, and prompts cut to a fixed token count.
// The tokenize and detokenize stages are timed by the evaluation runner as MODEL spans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace xsp {

/// True when XSP was built with SentencePiece (XSP_WITH_SENTENCEPIECE); without it Tokenizer::load throws.
bool have_tokenizer();

/// A loaded SentencePiece model (.model file, e.g. gpt2_tokenizer.model from scripts/export_zoo.py: BPE, 2000 ids,
/// byte fallback, <unk> 0, <s> 1, </s> 2, <pad> 3). Ids are int64, as the models take them. Movable, not copyable;
/// const methods may be called from several threads at once (SentencePieceProcessor's encode/decode are const).
class Tokenizer {
 public:
  /// Loads `model_file`, a regular file of at most kMaxTokenizerModelBytes (RegularFile, xsp/manifest/files.h: a
  /// folder, /dev/zero or a FIFO is refused without reading it). Throws std::runtime_error naming the file when it is
  /// missing, not a regular file, too large, unreadable or not a SentencePiece model, or, in a build without
  /// SentencePiece, "XSP was built without SentencePiece (Debian: libsentencepiece-dev); text inputs cannot be
  /// tokenized".
  static Tokenizer load(const std::filesystem::path& model_file);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  /// The ids of `text` (UTF-8), with bos_id() first when `add_bos` and eos_id() last when `add_eos` (each only
  /// when the model defines it, i.e. the id is >= 0). Throws std::runtime_error when SentencePiece fails.
  std::vector<std::int64_t> encode(std::string_view text, bool add_bos, bool add_eos) const;
  /// The text of `ids`. Ids outside [0, vocab_size()) decode as the unk piece ("<unk>" as text, written " ⁇ " by
  /// SentencePiece): a model's logits can outnumber the tokenizer's ids (gpt2_small has 50257 logits, the
  /// tokenizer 2000 ids), so generated ids need not be the tokenizer's. Control ids (bos, eos, pad) decode as "".
  std::string decode(const std::vector<std::int64_t>& ids) const;

  /// Number of ids (pieces), the special ones included.
  int vocab_size() const;
  /// Ids of the special pieces; -1 when the model does not define one.
  int bos_id() const;
  int eos_id() const;
  int pad_id() const;
  int unk_id() const;
  /// The model file it was loaded from.
  const std::filesystem::path& path() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Limit of Tokenizer::load(): the model file, bytes (SentencePiece models are a few MB).
inline constexpr std::uintmax_t kMaxTokenizerModelBytes = 1ull << 30;

/// Limits of load_prompts().
inline constexpr std::uintmax_t kMaxPromptFileBytes = 64ull << 20;  ///< the whole file, bytes
inline constexpr std::size_t kMaxPromptLineBytes = 1u << 20;        ///< one line (prompt), bytes

/// The prompts of `file`: one per line (\n or \r\n), UTF-8, blank (whitespace-only) lines skipped, lines kept as
/// they are otherwise. Throws std::runtime_error naming the file, and the line (1-based) where one is at fault,
/// when the file cannot be read, is not a regular file (RegularFile: a folder, /dev/zero, a FIFO), is larger than
/// kMaxPromptFileBytes, has a line longer than kMaxPromptLineBytes or
/// a line that is not valid UTF-8, or holds no prompt.
std::vector<std::string> load_prompts(const std::filesystem::path& file);

/// One prompt cut to a fixed number of tokens.
struct PromptTokens {
  std::vector<std::int64_t> ids;  ///< exactly prompt_tokens ids
  std::size_t source_index;       ///< index of the prompt in the input vector
};

/// Tokenizes each prompt (with the bos id first when `add_bos`) and keeps its first `prompt_tokens` ids, in input
/// order. A prompt with fewer tokens is left out and counted in *too_short (when not null), as vLLM's benchmark
/// datasets filter prompts by length. Throws std::invalid_argument when prompt_tokens < 1, or when no prompt is
/// long enough (the message gives prompt_tokens, the number of prompts and the longest one's token count).
std::vector<PromptTokens> tokenize_prompts(const Tokenizer& tokenizer, const std::vector<std::string>& prompts,
                                           int prompt_tokens, bool add_bos, std::size_t* too_short);

}  // namespace xsp
