// Helpers of the end-to-end tests that run the real `xsp` binary: a shell command's exit status and output, and a
// fresh temporary folder.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

namespace xsp::e2e {

/// Runs `command` through /bin/sh; returns its exit status (-1 when it did not exit normally) and stdout+stderr.
inline std::pair<int, std::string> sh(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  char buf[4096];
  while (pipe && std::fgets(buf, sizeof buf, pipe)) output += buf;
  const int status = pipe ? ::pclose(pipe) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// An empty folder xsp-e2e-NAME-PID in the system's temporary folder (emptied first when it exists).
inline std::filesystem::path temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("xsp-e2e-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace xsp::e2e
