// Measured machine ceilings as `xsp machine ceilings --import FILE` reads them (JSON).
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "xsp/analysis/roofline.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    (void)xsp::machine_ceilings_from_json(j);
  } catch (const std::exception& e) {
    xsp::fuzz::require_message(e);
  }
  return 0;
}
