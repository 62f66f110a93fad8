// Autoregressive token generation with a KV cache, one step per call, so that the evaluation runner can put each
// step in its own MODEL span and see when each token is out (docs/generation.md). A predictor whose loaded model
// generates text returns one from Predictor::generator().
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace xsp {

/// Greedy generation of a batch of sequences that share one prompt length. The call order of one request is
/// prefill(), decode() up to max_new_tokens − 1 times, end(). Not thread-safe (the predictor's thread drives it).
class Generator {
 public:
  virtual ~Generator() = default;
  /// Positions (prompt plus generated tokens) the model can attend over.
  virtual int max_positions() const = 0;
  /// Entries of the model's logits (token ids are 0 .. vocab_size − 1).
  virtual int vocab_size() const = 0;
  /// Starts a request: `prompt_ids` holds `batch` prompts of `prompt_tokens` ids each, row-major. Allocates the
  /// KV cache for prompt_tokens + max_new_tokens positions, runs the prompts through the model and returns each
  /// sequence's first generated token (argmax of the last position's logits), copied to the host: the call is
  /// synchronized, the token is out when it returns. Throws std::invalid_argument when batch or prompt_tokens is
  /// < 1, max_new_tokens < 1, prompt_ids.size() != batch × prompt_tokens, prompt_tokens + max_new_tokens >
  /// max_positions(), or an id is outside [0, vocab_size()); std::logic_error when a request is already open.
  virtual std::vector<std::int64_t> prefill(const std::vector<std::int64_t>& prompt_ids, int batch, int prompt_tokens,
                                            int max_new_tokens) = 0;
  /// One decode step: feeds each sequence's last token at the next position and returns each one's next token
  /// (synchronized, as prefill()). Throws std::logic_error before prefill() or once max_new_tokens tokens are out.
  virtual std::vector<std::int64_t> decode() = 0;
  /// Bytes of the open request's KV cache (keys and values of every layer) as allocated; 0 when none is open.
  virtual std::uint64_t kv_cache_bytes() const = 0;
  /// Ends the request and frees its cache. Idempotent.
  virtual void end() = 0;
  /// What the KV cache's size follows from, when the model says: "n_layer", "n_head", "head_dim" and
  /// "element_bytes" (of the cache's dtype), and where they apply "n_kv_head" (the heads the cache holds: fewer than
  /// n_head with grouped-query attention, 1 with multi-query; without it G3 assumes n_head) and "cache_positions"
  /// (the length a static cache is allocated for, e.g. Hugging Face StaticCache's max_cache_len); positive integers,
  /// empty when unknown. Recorded in settings["generation"]["model"] (analysis G3 checks kv_cache_bytes against
  /// 2 × n_layer × n_kv_head × head_dim × positions × batch × element_bytes, positions = cache_positions if given).
  virtual std::map<std::string, std::int64_t> model_dimensions() const { return {}; }
};

/// Checks a prefill() request as every Generator must (its documented std::invalid_argument cases): batch,
/// prompt_tokens and max_new_tokens >= 1, batch × prompt_tokens ids, prompt_tokens + max_new_tokens <= max_positions
/// (`positions_what` names that limit in the message, e.g. "the model's"), every id in [0, vocab_size). `who`
/// prefixes the messages ("libtorch generator").
void check_prefill_request(const std::string& who, const std::vector<std::int64_t>& prompt_ids, int batch,
                           int prompt_tokens, int max_new_tokens, int max_positions, int vocab_size,
                           const std::string& positions_what = "the model's");

}  // namespace xsp
