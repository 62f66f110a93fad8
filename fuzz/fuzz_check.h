// What every fuzz target asserts beyond "no crash, no sanitizer report": a rejection always says why.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace xsp::fuzz {

/// Aborts (a libFuzzer finding) when a rejected input produced an exception without a message.
inline void require_message(const std::exception& e) {
  if (e.what() == nullptr || e.what()[0] == '\0') {
    std::fprintf(stderr, "rejected without a message\n");
    std::abort();
  }
}

}  // namespace xsp::fuzz
