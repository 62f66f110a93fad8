#include "xsp/predictor/generator.h"

#include <stdexcept>

namespace xsp {

void check_prefill_request(const std::string& who, const std::vector<std::int64_t>& prompt_ids, int batch,
                           int prompt_tokens, int max_new_tokens, int max_positions, int vocab_size,
                           const std::string& positions_what) {
  if (batch < 1 || prompt_tokens < 1 || max_new_tokens < 1)
    throw std::invalid_argument(who + ": batch, prompt_tokens and max_new_tokens must be >= 1");
  if (prompt_ids.size() != static_cast<std::size_t>(batch) * static_cast<std::size_t>(prompt_tokens))
    throw std::invalid_argument(who + ": " + std::to_string(prompt_ids.size()) + " prompt ids for " +
                                std::to_string(batch) + " x " + std::to_string(prompt_tokens));
  if (prompt_tokens + max_new_tokens > max_positions)
    throw std::invalid_argument(who + ": " + std::to_string(prompt_tokens) + " + " + std::to_string(max_new_tokens) +
                                " positions exceed " + positions_what + " " + std::to_string(max_positions));
  for (std::size_t i = 0; i < prompt_ids.size(); ++i)
    if (prompt_ids[i] < 0 || prompt_ids[i] >= vocab_size)
      throw std::invalid_argument(who + ": prompt id " + std::to_string(prompt_ids[i]) + " at " + std::to_string(i) +
                                  " is outside [0, " + std::to_string(vocab_size) + ")");
}

}  // namespace xsp
