// Ctrl-C, SIGTERM and SIGHUP during a long command: the first asks the evaluation to stop after its current batch
// and save what is complete (EvaluationContext::interrupt); a second ends the process at once, as if unhandled.
#pragma once

#include <atomic>
#include <csignal>

namespace xsp::cli {

/// While alive, SIGINT, SIGTERM and SIGHUP set flag() to the signal's number (first signal; it also prints one line
/// on stderr) or, on a second signal, restore the default action and re-raise it. The destructor puts the previous
/// handlers back. One at a time per process.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  /// 0 until a signal came; then its number.
  const std::atomic<int>* flag() const;
  int signal() const { return flag()->load(); }

 private:
  struct sigaction previous_[3];
};

/// The shell's convention for a process ended by signal `sig`: 128 + sig (130 for SIGINT, 143 for SIGTERM, 129 for
/// SIGHUP).
constexpr int exit_code_for_signal(int sig) { return 128 + sig; }

}  // namespace xsp::cli
