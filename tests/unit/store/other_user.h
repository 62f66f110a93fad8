// Running a piece of a test as a user without write permission (issue 31, finding 10). Root ignores file modes, and
// CI runs as root, so a test of a read-only store drops to nobody (uid and gid 65534) in a child process, as
// tests/pg/pg_cluster.sh runs PostgreSQL as a non-root user. Without root, the child keeps the test's user, whose
// file modes already apply.
#pragma once

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

namespace xsp::testing {

inline constexpr uid_t kNobody = 65534;

/// Runs `f` in a forked child, as nobody when the test runs as root, and returns what it returned, or "error: " and
/// the message of what it threw. "(child failed: ...)" when the child could not drop root or died. The child shares
/// nothing with the test afterwards (it leaves with _exit, without destructors or atexit handlers).
inline std::string as_other_user(const std::function<std::string()>& f) {
  int fds[2];
  if (::pipe(fds) != 0) return "(child failed: pipe)";
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return "(child failed: fork)";
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(kNobody, kNobody, kNobody) != 0 ||
                             ::setresuid(kNobody, kNobody, kNobody) != 0)) {
      out = "(child failed: cannot drop root)";
    } else {
      try {
        out = f();
      } catch (const std::exception& e) {
        out = std::string("error: ") + e.what();
      }
    }
    for (std::size_t done = 0; done < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "(child failed: status " + std::to_string(status) + ")";
  return out;
}

}  // namespace xsp::testing
