// Model manifests (YAML): any text is either a Manifest or a ManifestError/std::exception with a message.
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "xsp/manifest/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)xsp::parse_manifest(text, "/fuzz/model.yaml");
  } catch (const std::exception& e) {
    xsp::fuzz::require_message(e);
  }
  return 0;
}
