// Files that make a plain reader hang or loop (issue 31, finding 5): /dev/zero, a FIFO, a folder. Shared by the
// manifest and pipeline tests.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

namespace xsp::testing {

/// A FIFO (named pipe) at `path`, removed afterwards. Nobody writes to it: a reader that opens it without O_NONBLOCK
/// blocks in open() until unblock() opens and closes the write end.
class Fifo {
 public:
  explicit Fifo(std::filesystem::path path) : path_(std::move(path)) {
    std::filesystem::remove(path_);
    ok_ = ::mkfifo(path_.c_str(), 0600) == 0;
  }
  ~Fifo() {
    unblock();
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;
  bool ok() const { return ok_; }
  const std::filesystem::path& path() const { return path_; }
  /// Lets a reader blocked in open() go on (it then reads end-of-file). Does nothing when no reader waits.
  void unblock() const {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  }

 private:
  std::filesystem::path path_;
  bool ok_ = false;
};

/// What `f` threw (its what()), "(no error)", or, when it has not returned after `limit`, "(still running after N s)":
/// the code before issue 31 blocked on a FIFO and hashed /dev/zero for ever, so the test must fail rather than hang.
/// `on_timeout` (e.g. Fifo::unblock) runs then; a thread still looping is left behind, detached, until the process
/// ends.
inline std::string message_within(const std::function<void()>& f, std::chrono::seconds limit = std::chrono::seconds(10),
                                  const std::function<void()>& on_timeout = {}) {
  auto result = std::make_shared<std::promise<std::string>>();
  std::future<std::string> done = result->get_future();
  std::thread([f, result] {
    try {
      f();
      result->set_value("(no error)");
    } catch (const std::exception& e) {
      result->set_value(e.what());
    }
  }).detach();
  if (done.wait_for(limit) == std::future_status::ready) return done.get();
  if (on_timeout) on_timeout();
  return "(still running after " + std::to_string(limit.count()) + " s)";
}

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace xsp::testing
