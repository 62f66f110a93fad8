// Wall-clock times as text, in one format everywhere: ISO 8601 in UTC to the second, "YYYY-MM-DDTHH:MM:SSZ"
// (RFC 3339 §5.6), as stored in records, ceilings and reports. Thread-safe (gmtime_r, not gmtime's static buffer).
#pragma once

#include <time.h>

#include <cstdint>
#include <ctime>
#include <string>

namespace xsp::util {

/// `unix_s` (seconds since 1970-01-01T00:00:00Z) as "YYYY-MM-DDTHH:MM:SSZ"; "1970-01-01T00:00:00Z" when the
/// time cannot be broken down (outside the years the C library handles).
inline std::string format_utc_iso8601(std::int64_t unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "1970-01-01T00:00:00Z";
  char buf[32];
  if (std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) return "1970-01-01T00:00:00Z";
  return buf;
}

/// Now (the system clock) as format_utc_iso8601() writes it.
inline std::string utc_now_iso8601() { return format_utc_iso8601(static_cast<std::int64_t>(std::time(nullptr))); }

}  // namespace xsp::util
