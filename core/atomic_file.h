// The one way haargrad writes files: checkpoints, summary.csv, args.yaml, run markers, reports
// (whole files, atomically) and log.txt (appended line by line). Every step is checked: a failed
// write(2) (disk full: ENOSPC; `ulimit -f`: EFBIG), fsync, close or rename throws hg::Error naming
// the file and the system error.
//
// Whole files: the bytes go to `<path>.tmp.<pid>.<n>` in the same folder, which is fsynced, closed
// and renamed over `path`, then the folder is fsynced. On any failure the temporary file is removed
// and `path` keeps its previous content (or stays absent), so a reader never sees a partial file.
// A replaced file's permissions carry over to the new one (a new file: 0644 less the umask).
// A symbolic link at `path` is written through, as a shell's `>` writes: the file it leads to is
// replaced (its temporary file beside that one) and the link stays; a loop of links is an error.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hg::io {

/// Replaces `path` with `bytes` atomically (see above). Throws hg::Error on any failure, e.g.
/// "cannot write 'run/summary.csv': No space left on device (write of the temporary file
/// 'run/summary.csv.tmp.123.4' failed after 0 of 180 bytes); 'run/summary.csv' is unchanged".
void write_file_atomic(const std::string& path, std::string_view bytes);

/// Replaces `to` with a copy of the file `from`, atomically (streamed in chunks; `from` may be
/// large). Throws hg::Error naming both files when reading or writing fails; `to` is then
/// unchanged.
void copy_file_atomic(const std::string& from, const std::string& to);

/// `path` with `suffix` appended to its file name, that name (not the suffix) cut at the start of a
/// UTF-8 character where the two would pass NAME_MAX (255 bytes): a file named near the limit,
/// which the file system takes, made the names of ours beside it fail "File name too long". Throws
/// nothing.
std::string with_fitted_suffix(const std::string& path, const std::string& suffix);

/// fsyncs the folder that holds `path`, so that a rename into it (a file renamed over `path`) is on
/// the disk. Throws hg::Error naming `path` and the system error; the file is in place either way.
void sync_folder_of(const std::string& path);

/// A new temporary file name beside `path`: `<path>.tmp.<pid>.<n>`, n counting this process's
/// names, its file name cut to fit as with_fitted_suffix cuts it.
std::string temp_path(const std::string& path);

/// The writer's pid in a temporary file's name `<path>.tmp.<pid>.<n>` (a file name or a path), or
/// none when `name` is not one: a kill during a write leaves such a file, which a later run can
/// tell is stale when that process is gone.
std::optional<long> temp_file_pid(const std::string& name);

/// Whether the sticky bit of a folder (mode `folder_mode`, owned by `folder_owner`) keeps the user
/// `uid` from replacing (renaming a file over) or removing a file in it owned by `file_owner`: in a
/// sticky folder such as /tmp (mode 1777) only the file's owner, the folder's owner or root may.
bool sticky_folder_refuses_replace(mode_t folder_mode, uid_t folder_owner, uid_t file_owner,
                                   uid_t uid);

/// Why this process cannot replace the existing file `path` although its folder is writable:
/// "PATH belongs to another user (uid N) in the sticky folder DIR, so it cannot be replaced", or
/// "" (no such file, or nothing in the way).
std::string sticky_replace_refusal(const std::string& path);

/// The whole file; throws hg::Error naming it when it cannot be opened or read.
std::string read_file(const std::string& path);

/// Whether the open file `fd` is a device (/dev/zero, a disk): one reads without end, so readers
/// of whole files refuse it by what it is.
bool is_device(int fd);

/// A file opened for appending (log.txt). Each append() writes all its bytes or throws hg::Error
/// naming the file; bytes that were written stay (a log is never rewritten).
class AppendFile {
 public:
  /// Opens (creating it, mode 0644) `path` for appending. Throws hg::Error naming it on failure.
  explicit AppendFile(const std::string& path);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void append(std::string_view bytes);
  /// fsync: the appended bytes are on the disk. Throws hg::Error naming the file.
  void sync();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace hg::io
