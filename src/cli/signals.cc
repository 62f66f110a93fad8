#include "signals.h"

#include <unistd.h>

namespace xsp::cli {
namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the flag is written from a signal handler");

extern "C" void on_signal(int sig) {
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, sig)) {
    // Second signal: the user means it. Default action, re-raised: the process ends at once with the signal.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  static constexpr char kMessage[] =
      "\nxsp: interrupted: stopping after the current batch or query and saving the complete runs (again: stop at "
      "once)\n";
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal.store(0);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &action, &previous_[i]);
}

InterruptGuard::~InterruptGuard() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
}

const std::atomic<int>* InterruptGuard::flag() const { return &g_signal; }

}  // namespace xsp::cli
