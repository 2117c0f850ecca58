// Checked, atomic file writes (see atomic_file.h).
#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <new>

#include "core/error.h"

namespace hg::io {
namespace {

std::string sys_error(int err) { return std::strerror(err); }

}  // namespace

std::optional<long> temp_file_pid(const std::string& name) {
  const size_t at = name.rfind(".tmp.");  // the name TempFile makes: "<target>.tmp.<pid>.<n>"
  if (at == std::string::npos) return std::nullopt;
  const std::string rest = name.substr(at + 5);
  const size_t dot = rest.find('.');
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 18 &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
  };
  if (dot == std::string::npos || !digits(rest.substr(0, dot)) || !digits(rest.substr(dot + 1)))
    return std::nullopt;
  return std::stol(rest.substr(0, dot));
}

std::string with_fitted_suffix(const std::string& path, const std::string& suffix) {
  const std::filesystem::path p(path);
  std::string name = p.filename().string();
  // cut where the suffix would take the name past NAME_MAX, keeping whole UTF-8 characters
  if (name.size() + suffix.size() > NAME_MAX) {
    size_t keep = suffix.size() < NAME_MAX ? NAME_MAX - suffix.size() : 0;
    while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
    name.resize(keep);
  }
  return (p.parent_path() / (name + suffix)).string();
}

std::string temp_path(const std::string& path) {
  static std::atomic<uint64_t> counter{0};  // unique among threads of this process
  return with_fitted_suffix(path, str(".tmp.", ::getpid(), ".", counter++));
}

namespace {

// The folder that holds `path` ("." for a bare file name).
std::string folder_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

void sync_folder_of(const std::string& path) {
  const int dfd = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    throw Error(
        str("wrote '", path, "' but cannot open its folder to fsync it: ", sys_error(errno)));
  const int frc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (frc != 0)
    throw Error(str("wrote '", path, "' but the fsync of its folder failed: ", sys_error(err)));
}

namespace {

// The file a write to `path` replaces: path itself, or the file a symbolic link at path leads to
// (a shell's `>` writes through the link; renaming over the link would replace the link itself
// with a file and leave its target as it was).
std::string written_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = path;
  // a chain of links (40 at most, as the kernel follows them), each relative to its own folder;
  // the last may lead to a file not made yet (a shell's `>` makes it)
  for (int hops = 0; hops < 40 && fs::is_symlink(p, ec); ++hops) {
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) return path;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  // still a link after 40: a loop (a -> b -> a), which a shell's `>` refuses (ELOOP); the rename
  // replaced one of its links with a regular file
  if (fs::is_symlink(p, ec))
    throw Error(str("cannot write '", path, "': ", sys_error(ELOOP),
                    " (a loop of symbolic links?); '", path, "' is unchanged"));
  if (p == fs::path(path)) return path;
  const fs::path resolved = fs::weakly_canonical(p, ec);
  return ec ? p.string() : resolved.string();
}

// A temporary file beside `target` (beside the file a link there leads to) that becomes that file
// on commit() and is removed otherwise.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(written_file(target)) {
    struct stat before {};
    existed_ = ::lstat(target_.c_str(), &before) == 0;
    // beside the file written, not beside a link to it: a rename cannot cross file systems, and a
    // link to a file on another one (a shared results folder) failed "Invalid cross-device link"
    tmp_ = temp_path(target_);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno == EEXIST) {  // left by a crashed process that had our pid: no one else owns it
      ::unlink(tmp_.c_str());
      fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (fd_ < 0) {
      const int err = errno;
      // a folder that is not there holds no file to keep unchanged: named as missing
      std::error_code ec;
      if (err == ENOENT && !std::filesystem::is_directory(folder_of(target_), ec))
        throw Error(str("cannot write '", target_, "': its folder '", folder_of(target_),
                        "' does not exist (deleted or moved away?)"));
      throw Error(str("cannot write '", target_, "': ", sys_error(err),
                      " (creating the temporary file '", tmp_, "' failed); ", outcome()));
    }
    // the file it replaces keeps its permissions (a private 0600 file must not become 0644)
    struct stat old {};
    if (::stat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode) &&
        ::fchmod(fd_, old.st_mode & 07777) != 0) {
      const int err = errno;  // a constructor that throws runs no destructor: clean up here
      ::close(fd_);
      ::unlink(tmp_.c_str());
      throw Error(str("cannot write '", target_, "': ", sys_error(err),
                      " (giving the temporary file '", tmp_, "' the permissions of '", target_,
                      "'); ", outcome()));
    }
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());  // never leave a partial file behind
  }

  // Appends all of `bytes`; `total` (for the message) is the size of the whole file being written.
  void write(std::string_view bytes, uint64_t total) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        fail(str(sys_error(err), " (write of the temporary file '", tmp_, "' failed after ", written_ + done,
                 " of ", total, " bytes)"));
      }
      done += static_cast<size_t>(n);
    }
    written_ += done;
  }

  // fsync, close, rename over the target, fsync the folder; throws (and cleans up) on any failure.
  void commit() {
    if (::fsync(fd_) != 0) fail(str(sys_error(errno), " (fsync of '", tmp_, "')"));
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) fail(str(sys_error(errno), " (closing '", tmp_, "')"));
    if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
      const int err = errno;
      const std::string sticky = err == EPERM ? sticky_replace_refusal(target_) : "";
      fail(str(sys_error(err), " (renaming '", tmp_, "' to it", sticky.empty() ? "" : ": ", sticky,
               ")"));
    }
    committed_ = true;
    sync_folder_of(target_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    throw Error(str("cannot write '", target_, "': ", why, "; ", outcome()));
  }
  // what a failed write left: the file as it was, or none (a new file's message said "unchanged")
  std::string outcome() const {
    return existed_ ? str("'", target_, "' is unchanged") : str("'", target_, "' was not created");
  }
  std::string target_, tmp_;
  bool existed_ = false;  // the target was there before (a file, or a link to replace)
  int fd_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace

bool sticky_folder_refuses_replace(mode_t folder_mode, uid_t folder_owner, uid_t file_owner,
                                   uid_t uid) {
  return (folder_mode & S_ISVTX) != 0 && uid != 0 && uid != folder_owner && uid != file_owner;
}

std::string sticky_replace_refusal(const std::string& path) {
  const std::string dir = folder_of(path);
  struct stat folder {
  }, file{};
  if (::stat(dir.c_str(), &folder) != 0 || ::lstat(path.c_str(), &file) != 0) return "";
  if (!sticky_folder_refuses_replace(folder.st_mode, folder.st_uid, file.st_uid, ::geteuid()))
    return "";
  return str(path, " belongs to another user (uid ", file.st_uid, ") in the sticky folder ", dir,
             ", so it cannot be replaced");
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  TempFile f(path);
  f.write(bytes, bytes.size());
  f.commit();
}

void copy_file_atomic(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw Error(str("cannot copy '", from, "' to '", to, "': cannot open it: ", sys_error(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{in};
  struct stat st {};
  if (::fstat(in, &st) != 0) throw Error(str("cannot copy '", from, "': fstat failed: ", sys_error(errno)));
  TempFile out(to);
  std::string buf(1 << 20, '\0');
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw Error(str("cannot copy '", from, "' to '", to, "': reading it failed: ", sys_error(errno), "; '", to,
                      "' is unchanged"));
    if (n == 0) break;
    out.write(std::string_view(buf.data(), static_cast<size_t>(n)), static_cast<uint64_t>(st.st_size));
  }
  out.commit();
}

bool is_device(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode));
}

std::string read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(str("cannot read '", path, "': ", sys_error(errno)));
  // infer --input /dev/zero took every byte of memory
  if (is_device(fd)) {
    ::close(fd);
    throw Error(str("cannot read '", path, "': it is a device, not a file"));
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Error(str("cannot read '", path, "': ", sys_error(err)));
    }
    if (n == 0) break;
    try {
      out.append(buf, static_cast<size_t>(n));
    } catch (const std::bad_alloc&) {
      ::close(fd);
      throw Error(str("cannot read '", path, "': out of host memory after ", out.size(), " bytes"));
    }
  }
  ::close(fd);
  return out;
}

AppendFile::AppendFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(str("cannot open '", path, "' for appending: ", sys_error(errno)));
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::append(std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(str("cannot append to '", path_, "': ", sys_error(n < 0 ? errno : EIO), " (", done, " of ",
                      bytes.size(), " bytes written)"));
    done += static_cast<size_t>(n);
  }
}

void AppendFile::sync() {
  if (::fsync(fd_) != 0) throw Error(str("fsync of '", path_, "' failed: ", sys_error(errno)));
}

}  // namespace hg::io
