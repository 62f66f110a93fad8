// Semantic versions (semver.org 2.0.0) and npm-style constraints, for manifest framework checks.
#pragma once

#include <optional>
#include <string>

namespace xsp {

struct SemVer {
  long major = 0, minor = 0, patch = 0;
  std::string prerelease;  ///< without the '-'; build metadata is dropped
  auto operator<=>(const SemVer&) const = default;
};

/// The largest number a version component may have (9 digits), so that every parsed component fits a long.
inline constexpr long kMaxVersionNumber = 999'999'999;

/// Parses "1", "1.13", "1.13.1", "v1.13.1", "1.13.0a0", "2.11.0+cu130" leniently (missing parts are 0;
/// a trailing non-numeric suffix of the patch becomes the prerelease; "+..." build metadata is dropped).
/// std::nullopt when there is no leading number or a component is larger than kMaxVersionNumber.
std::optional<SemVer> parse_semver(const std::string& text);

/// True when `version` satisfies `constraint`: comma- or space-separated clauses that must all hold, each
/// one of ">=X", ">X", "<=X", "<X", "=X", "==X", "X" (exact), "^X" (same major), "~X" (same major.minor),
/// "*" (any). Prerelease versions compare by numbers only (1.13.0a0 satisfies >=1.13), since Debian and
/// PyTorch tag releases with suffixes. Throws std::invalid_argument naming the bad clause.
bool satisfies(const std::string& version, const std::string& constraint);

/// Validates constraint syntax without a version; throws std::invalid_argument naming the bad clause.
void check_constraint(const std::string& constraint);

}  // namespace xsp
