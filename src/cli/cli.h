// The `xsp` command line, as a library so that tests can run it in-process (tests/e2e/cli_library_test.cc).
// Thin by design: each command (one file each, cmd_*.cc) maps its flags onto one library call.
#pragma once

namespace xsp {
class Clock;
}

namespace xsp::cli {

/// What the process around the CLI provides; tests inject a fake clock.
struct CliEnvironment {
  const Clock* clock = nullptr;  ///< nullptr = the system clock
  bool record_machine_state = true;
};

/// Parses argv and runs one command. Returns the exit status: 0 on success, 1 when the work failed (an evaluation,
/// a bad input file), 2 on a usage error (bad option or value, unknown command: the message names the option), 3 on
/// an I/O or store error; 130/143 are reserved for SIGINT/SIGTERM (README "Exit codes"). Results go to stdout; every
/// error is one line "xsp: error: MESSAGE" on stderr.
int run_cli(int argc, const char* const* argv, const CliEnvironment& env = {});

}  // namespace xsp::cli
