// Opening and reading files someone else named; see include/xsp/manifest/files.h.
#include "xsp/manifest/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace xsp {

RegularFile::RegularFile(const std::filesystem::path& file, std::string name) : name_(std::move(name)) {
  const auto fail = [&](int err) -> std::runtime_error {
    if (err == ENOENT) return std::runtime_error(name_ + ": no such file");
    return std::runtime_error(name_ + ": cannot open: " + std::generic_category().message(err));
  };
  const auto not_regular = [&](mode_t mode) {
    return std::runtime_error(name_ + " is not a regular file (it is " + file_kind(mode) + ")");
  };
  // stat() first, so that a device is never opened at all (opening some has effects); the descriptor's own fstat()
  // below decides, since the name may point elsewhere by then.
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) throw fail(errno);
  if (!S_ISREG(st.st_mode)) throw not_regular(st.st_mode);
  fd_ = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0) throw fail(errno);
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw fail(err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw not_regular(st.st_mode);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      position_(other.position_),
      name_(std::move(other.name_)) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    position_ = other.position_;
    name_ = std::move(other.name_);
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t RegularFile::read(void* buf, std::size_t n) {
  if (fd_ < 0) throw std::logic_error(name_ + ": read from a moved-from RegularFile");
  const std::uint64_t left = size_ - position_;
  if (n > left) n = static_cast<std::size_t>(left);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd_, static_cast<char*>(buf) + done, n - done);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(name_ + ": read error: " + std::generic_category().message(errno));
    }
    if (got == 0) break;  // the file shrank since fstat()
    done += static_cast<std::size_t>(got);
  }
  position_ += done;
  return done;
}

void RegularFile::read_exactly(void* buf, std::size_t n, const std::string& what) {
  const std::uint64_t at = position_;
  if (n > size_ - position_)
    throw std::runtime_error(name_ + ": truncated: " + what + " needs " + std::to_string(n) + " bytes at offset " +
                             std::to_string(at) + ", the file has " + std::to_string(size_) + " bytes");
  if (read(buf, n) != n)
    throw std::runtime_error(name_ + ": reading " + what + " at offset " + std::to_string(at) +
                             ": the file shrank while it was read (it had " + std::to_string(size_) + " bytes)");
}

std::string read_regular_file(const std::filesystem::path& file, const std::string& name, std::uint64_t max_bytes) {
  RegularFile f(file, name);
  if (f.size() > max_bytes)
    throw std::runtime_error(name + ": " + std::to_string(f.size()) + " bytes, more than the limit of " +
                             std::to_string(max_bytes));
  std::string bytes(static_cast<std::size_t>(f.size()), '\0');
  if (!bytes.empty()) f.read_exactly(bytes.data(), bytes.size(), "the file");
  return bytes;
}

}  // namespace xsp
