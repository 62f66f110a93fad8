// Reading a file that someone else named: a manifest (its graph before hashing, labels, tokenizer model, prompts,
// dataset), a request or a command line (input images, the manifest itself). Such a name may be /dev/zero (endless),
// a FIFO (an open that blocks until a writer comes), a folder, or a file that grows while it is read; each would make
// a plain reader hang or loop. Every such reader goes through RegularFile.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace xsp {

/// A regular file opened to read, and never read past the size it had when opened. Movable, not copyable.
class RegularFile {
 public:
  /// Opens `file` with O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY (a FIFO does not block the open; nothing else
  /// is opened at all: it is refused by stat() first) and fstat()s the descriptor. `name` is how messages name the
  /// file, e.g. "labels file /zoo/labels.txt". Throws std::runtime_error "NAME: no such file", "NAME is not a regular
  /// file (it is a character device)" (a folder, a FIFO, a socket, a block device, ...) or "NAME: cannot open: REASON".
  RegularFile(const std::filesystem::path& file, std::string name);
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  /// The file's size in bytes as fstat() gave it at open: read() stops there even if the file grows.
  std::uint64_t size() const { return size_; }
  /// Bytes read so far.
  std::uint64_t position() const { return position_; }
  /// How messages name the file (the constructor's `name`).
  const std::string& name() const { return name_; }
  /// Reads up to `n` bytes into `buf`, never past size(); returns the bytes read, 0 only at size() or when the file
  /// shrank. Throws std::runtime_error naming the file on a read error.
  std::size_t read(void* buf, std::size_t n);
  /// Reads exactly `n` bytes (read() until done). Throws std::runtime_error naming the file and `what` (e.g.
  /// "the header") when fewer are left before size() or the file shrank meanwhile.
  void read_exactly(void* buf, std::size_t n, const std::string& what);

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t position_ = 0;
  std::string name_;
};

/// The whole of a regular file (RegularFile): its size at open, in bytes. Throws std::runtime_error naming the file
/// (`name`, as RegularFile's) when it cannot be opened, is not a regular file, is larger than `max_bytes` ("NAME: N
/// bytes, more than the limit of M") or shrank while it was read.
std::string read_regular_file(const std::filesystem::path& file, const std::string& name, std::uint64_t max_bytes);

/// What kind of file a stat() st_mode says it is, for messages: "a regular file", "a folder", "a character device",
/// "a block device", "a FIFO (named pipe)", "a socket", "a symbolic link" or "an unknown kind of file". Never throws
/// (but std::bad_alloc). Inline, so that the store, which links no manifest code, names what it refuses the same way.
inline std::string file_kind(unsigned int st_mode) {
  const mode_t m = static_cast<mode_t>(st_mode);
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a folder";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "an unknown kind of file";
}

}  // namespace xsp
