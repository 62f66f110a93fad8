// What the store decodes when it loads a run: the zstd-compressed trace blob (format v1 or v2) and the run's
// measurement JSON. A corrupt or hostile store file must give an error with a message, never a crash.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "fuzz_check.h"
#include "xsp/record/record.h"
#include "xsp/trace/serialize.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)xsp::decode_trace(std::vector<std::uint8_t>(data, data + size));
  } catch (const std::exception& e) {
    xsp::fuzz::require_message(e);
  }
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    try {
      (void)xsp::run_measurement_from_json(j);
    } catch (const std::exception& e) {
      xsp::fuzz::require_message(e);
    }
  }
  return 0;
}
