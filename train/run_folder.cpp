// Run folder identity and the choice of `--resume auto` (see run_folder.h).
#include "train/run_folder.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/shell_quote.h"
#include "train/checkpoint.h"
#include "train/checkpoint_history.h"
#include "train/config.h"
#include "train/schedule.h"

namespace fs = std::filesystem;

namespace hg::train {

void check_output_file(const std::string& path, const std::string& what,
                       const std::string& contents, const std::vector<CommandInput>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  HG_CHECK(!fs::is_directory(path, ec), what, " ", path, " is a folder; give a file name");
  // before the work: a missing folder would otherwise be found only when the result is written
  const fs::path parent =
      fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  HG_CHECK(fs::is_directory(parent, ec), what, " ", path, ": ",
           fs::exists(parent, ec)
               ? str("'", parent.string(),
                     "' is a file, not a folder")  // (was "the folder ... is not a folder")
               : str("the folder ", parent.string(), " does not exist"));
  // a read-only folder (or file system) too: the file is written into it (a temporary file,
  // renamed)
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    const int err = errno;
    throw Error(str(what, " ", path, ": the folder ", parent.string(), " cannot be written (",
                    std::strerror(err), "); give a file in a folder you can write"));
  }
  const std::string elsewhere = str("write ", contents, " to another file");
  // a run folder's own names, whether the file exists yet or not: the trainer writes, rotates and
  // deletes them (checkpoint-*.safetensors, recovery.safetensors, ...)
  const fs::path p(path);
  const std::string name = p.filename().string();
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const bool run_folder = fs::exists(dir / kRunMarker, ec);
  const bool run_file = name == kRunMarker || name == "args.yaml" || name == "summary.csv" ||
                        name == "log.txt" || p.extension() == ".safetensors" ||
                        p.stem() == "curves";  // curves.png and its .dat / .gp (plot_runs)
  HG_CHECK(!(run_folder && run_file), what, " ", path, " is a file of the training run in ",
           dir.string(), " (the trainer writes, rotates and deletes its .safetensors files, ",
           "logs and curves); ", elsewhere);
  if (!fs::exists(path, ec)) return;
  // a sticky folder (/tmp): the folder is writable, but the rename over another user's file fails
  const std::string sticky = io::sticky_replace_refusal(path);
  HG_CHECK(sticky.empty(), what, " ", sticky, "; give another file name");
  // a file made read-only (chmod a-w) is kept, as by a shell's `>` (the rename alone would not)
  if (fs::is_regular_file(path, ec) && ::access(path.c_str(), W_OK) != 0) {
    const int err = errno;
    throw Error(str(what, " ", path, " is read-only (", std::strerror(err),
                    "): it is not replaced; give another file name, or make it writable"));
  }
  for (const CommandInput& in : inputs)
    HG_CHECK(!fs::equivalent(in.path, path, ec), what, " ", path, " is ", in.role, " itself; ",
             elsewhere);
  // a training state of any format: read_train_state refuses one of another format (a later
  // version's), which is a run's position and optimizer state all the same
  bool checkpoint = false;
  try {
    checkpoint =
        fs::is_regular_file(path, ec) && safetensors::read_metadata(path).count("state") != 0;
  } catch (const Error&) {  // not a safetensors file: not a checkpoint either
  }
  HG_CHECK(!checkpoint, what, " ", path,
           " is a training checkpoint (it holds a run's position and optimizer state); ",
           elsewhere);
}

std::string local_time(std::time_t t, const char* format) {
  char b[64];
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(b, sizeof b, format, &tm);
  return b;
}

namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += c;
    }
  }
  return out;
}

// Creates `dir/run.json` exclusively and writes the marker into it. false: another run's marker
// is there already. Throws naming the file when it cannot be written.
bool write_marker(const fs::path& dir) {
  const fs::path path = dir / kRunMarker;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw Error(str("cannot claim the run folder '", dir.string(), "': creating '", path.string(),
                    "' failed: ", std::strerror(errno)));
  }
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  // a random id tells runs apart that one process starts within a second (tests, sweeps)
  std::random_device rd;
  char id[17];
  std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
  const std::string text =
      str("{\"format\": \"haargrad-run-1\", \"id\": \"", id, "\", \"created\": \"",
          local_time(std::time(nullptr), "%Y-%m-%dT%H:%M:%S%z"), "\", \"pid\": ", ::getpid(),
          ", \"host\": \"", json_escape(host), "\", \"folder\": \"", json_escape(dir.string()),
          "\"}\n");
  size_t done = 0;
  int err = 0;
  while (done < text.size() && err == 0) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) err = n < 0 ? errno : EIO;
    else done += static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(path.c_str());
    throw Error(str("cannot claim the run folder '", dir.string(), "': writing '", path.string(), "' failed: ",
                    std::strerror(err)));
  }
  return true;
}

// ---- resume auto -----------------------------------------------------------------------------------

struct Candidate {
  fs::path dir, checkpoint;
  TrainState state;
  int64_t written_ns = 0;  // modification time, ns since the epoch (runs seconds apart must order)
};

std::optional<int64_t> mtime_ns(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

bool is_family_member(const std::string& name, const std::string& base) {
  if (name == base) return true;
  if (name.size() <= base.size() + 1 || name.compare(0, base.size(), base) != 0 || name[base.size()] != '-')
    return false;
  return std::all_of(name.begin() + static_cast<long>(base.size()) + 1, name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

// The folders that may hold the run to resume.
std::vector<fs::path> family_folders(const fs::path& root, const std::string& experiment) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (experiment.empty()) {
    for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_directory(ec)) out.push_back(it->path());
    return out;
  }
  const fs::path exp(experiment);
  const fs::path parent = root / exp.parent_path();
  const std::string base = exp.filename().string();
  for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->is_directory(ec) && is_family_member(it->path().filename().string(), base)) out.push_back(it->path());
  return out;
}

// Where a candidate stands against this session's length `epochs` (run_epochs). A run that did
// more epochs than this session asks for (resumed with a lower --epochs) is finished too; it was
// said as "finished: 6 of 5 epochs".
std::string progress(const TrainState& s, int64_t epochs) {
  if (s.step_in_epoch > 0) return str("stopped in epoch ", s.epoch + 1, " after step ", s.step_in_epoch);
  if (s.epoch == epochs) return str("finished: ", s.epoch, " of ", epochs, " epochs");
  if (s.epoch > epochs)
    return str("finished: ", s.epoch, " epochs done (this session asks for ", epochs, ")");
  return str(s.epoch, " of ", epochs, epochs == 1 ? " epoch done" : " epochs done");
}

bool resumable(const TrainState& s, int64_t epochs) { return s.step_in_epoch > 0 || s.epoch < epochs; }

/// Whether the run stopped before the end of its own schedule: mid-epoch (a recovery checkpoint),
/// or before the run_epochs of the config stored in its checkpoint (--stop-after-epoch, killed
/// between epochs). Such a run is what `--resume auto` is for, more than one that finished what it
/// asked.
bool stopped_early(const Candidate& c) {
  if (c.state.step_in_epoch > 0) return true;
  try {
    const std::string yaml = checkpoint_config_yaml(c.checkpoint.string());
    return !yaml.empty() &&
           c.state.epoch < run_epochs(config_from_yaml(yaml, c.checkpoint.string()));
  } catch (const Error&) {  // no readable config: judged by the session's epochs alone
    return false;
  }
}

}  // namespace

namespace {
nlohmann::json read_marker(const fs::path& dir);
}  // namespace

fs::path claim_run_folder(const fs::path& root, const std::string& name, bool* made) {
  std::error_code ec;
  // one folder, one run: a run folder inside another run's would be moved, copied or deleted with
  // it, and a resume auto of the outer output root would find the inner one. A run's folder is one
  // whose run.json is our marker (its format), not any file of that common name.
  const auto is_run_folder = [](const fs::path& p) {
    const nlohmann::json j = read_marker(p);
    return j.is_object() && j.contains("format") && j["format"].is_string() &&
           j["format"].get<std::string>().rfind("haargrad-run-", 0) == 0;
  };
  for (fs::path p = fs::absolute(root / name, ec).parent_path(); !ec && !p.empty();
       p = p.parent_path()) {
    HG_CHECK(!is_run_folder(p), "cannot create a run folder in '",
             (root / name).parent_path().string(), "': '", p.string(),
             "' is a run's folder (it holds ", kRunMarker,
             "); give an output folder outside every run's folder");
    if (p == p.parent_path()) break;
  }
  for (int i = 1; i <= 100000; ++i) {
    const fs::path dir = root / (i == 1 ? name : name + "-" + std::to_string(i));
    fs::create_directories(dir.parent_path(), ec);
    if (ec) {
      // "Not a directory": name the file in the way (the root itself or a folder above it)
      std::string why = ec.message();
      std::error_code e2;
      for (fs::path p = dir.parent_path(); !p.empty(); p = p.parent_path()) {
        if (fs::is_symlink(p, e2) && !fs::exists(p, e2)) {
          why = str("'", p.string(), "' is a symbolic link to '", fs::read_symlink(p, e2).string(),
                    "', which does not exist");
          break;
        }
        if (fs::exists(p, e2) && !fs::is_directory(p, e2)) {
          why = str("'", p.string(), "' is a file, not a folder");
          break;
        }
        if (p == p.parent_path()) break;
      }
      throw Error(str("cannot create the output folder '", dir.parent_path().string(), "': ", why));
    }
    const bool created = fs::create_directory(dir, ec);
    // a file of that name is taken, as a folder holding files is (EEXIST: no folder was made)
    if (ec && ec != std::errc::file_exists)
      throw Error(str("cannot create the run folder '", dir.string(), "': ", ec.message()));
    // An existing folder is free only when empty; anything in it belongs to another run.
    if (!created && (!fs::is_directory(dir, ec) || !fs::is_empty(dir, ec) || ec)) continue;
    // an empty one this process cannot write (another user's, in a shared root like /tmp) too
    if (!created && ::access(dir.c_str(), W_OK | X_OK) != 0) continue;
    try {
      if (write_marker(dir)) {
        if (made != nullptr) *made = created;
        return dir;
      }
    } catch (const Error&) {
      if (created) fs::remove(dir, ec);  // leave nothing of this attempt behind
      throw;
    }
  }
  throw Error(str("cannot find a free run folder for '", name, "' under '", root.string(), "' (", name, "-2 .. ",
                  name, "-100000 are taken)"));
}

namespace {

// The pid holding an flock on `path`, from /proc/locks (lines "1: FLOCK ADVISORY WRITE <pid>
// <major>:<minor>:<inode> ..."): the live holder, on this host. nullopt when none is listed.
std::optional<long> flock_holder(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream in(line);
    std::string n, kind, mode, access, id;
    long pid = 0;
    if (!(in >> n >> kind >> mode >> access >> pid >> id) || kind != "FLOCK") continue;
    // <major>:<minor>:<inode>, the device numbers in hex
    unsigned major_id = 0, minor_id = 0;
    unsigned long long inode = 0;
    if (std::sscanf(id.c_str(), "%x:%x:%llu", &major_id, &minor_id, &inode) != 3) continue;
    if (inode == static_cast<unsigned long long>(st.st_ino) && major_id == major(st.st_dev) &&
        minor_id == minor(st.st_dev))
      return pid > 0 ? std::optional<long>(pid) : std::nullopt;  // 0: another pid namespace
  }
  return std::nullopt;
}

// Temp files that a writer of this folder left when it was killed mid-write (a second Ctrl-C
// during a checkpoint: a full-size last.safetensors.tmp.<pid>.<n>). Called with the folder's
// lock held, so no training process writes it; a file whose pid is a live process here (another
// command writing into the folder) stays.
void remove_stale_temp_files(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::optional<long> pid = io::temp_file_pid(e.path().filename().string());
    if (!pid || !e.is_regular_file(ec)) continue;
    if (*pid > 0 && (::kill(pid_t(*pid), 0) == 0 || errno != ESRCH)) continue;  // alive, or unknown
    if (fs::remove(e.path(), ec))
      spdlog::info("run folder {}: removed {}, left by a write that was cut off (pid {} is gone)",
                   dir.string(), e.path().filename().string(), *pid);
  }
}

}  // namespace

RunFolderLock::RunFolderLock(const fs::path& dir) {
  const fs::path marker = dir / kRunMarker;
  // open for writing where allowed: NFS emulates an exclusive flock with a write lock, which
  // needs a writable descriptor
  fd_ = ::open(marker.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0 && (errno == EACCES || errno == EROFS))
    fd_ = ::open(marker.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    throw Error(str("cannot hold the run folder '", dir.string(), "': opening '", marker.string(),
                    "' failed: ", std::strerror(errno)));
  int err = 0;
  for (int attempt = 0; attempt < 5;
       ++attempt) {  // a probe (run_folder_in_use) holds it for an instant
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
      remove_stale_temp_files(dir);
      return;
    }
    err = errno;
    if (err != EWOULDBLOCK) break;
    ::usleep(20000);
  }
  if (err == ENOLCK || err == ENOSYS || err == EOPNOTSUPP || err == EINVAL || err == EBADF) {
    // a file system without flock (Lustre without -o flock, some NFS and SMB mounts): go on
    // unlocked rather than not at all
    spdlog::warn(
        "run folder {}: cannot lock {} ({}): nothing keeps a second process from resuming this run "
        "while it trains",
        dir.string(), marker.string(), std::strerror(err));
    return;
  }
  ::close(fd_);
  fd_ = -1;
  if (err == EWOULDBLOCK) {
    const std::optional<long> pid = flock_holder(marker);
    const std::string owner = run_marker_owner(dir);
    throw Error(str(
        "the run folder '", dir.string(), "' is in use by another training process",
        pid ? str(" (pid ", *pid, " on this host)")
        : owner.empty()
            ? std::string()
            : str(" (not on this host, or not found; ", kRunMarker, ": created by ", owner, ")"),
        ": two runs must not write one folder; wait for it to end or stop it (Ctrl-C writes a "
        "recovery checkpoint), then resume"));
  }
  throw Error(str("cannot hold the run folder '", dir.string(), "': locking '", marker.string(),
                  "' failed: ", std::strerror(err)));
}

RunFolderLock::RunFolderLock(RunFolderLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}

RunFolderLock& RunFolderLock::operator=(RunFolderLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

RunFolderLock::~RunFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor drops the lock
}

bool run_folder_in_use(const fs::path& dir) {
  const int fd = ::open((dir / kRunMarker).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // also drops the lock this probe took
  return held;
}

namespace {

// The marker's JSON object; a null value when it cannot be read.
nlohmann::json read_marker(const fs::path& dir) {
  std::error_code ec;  // a folder (or a FIFO) named run.json reads as an unreadable marker
  if (!fs::is_regular_file(dir / kRunMarker, ec)) return nlohmann::json();
  std::ifstream f(dir / kRunMarker);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json();
}

// The position of `file`, a neighbour of the checkpoint `path` (position `state`) in its run
// folder, when it is further along; nothing when it is missing, `path` itself, unreadable (it
// holds no position to protect) or not further along.
std::optional<TrainState> further_along(const fs::path& file, const std::string& path,
                                        const TrainState& state) {
  std::error_code ec;
  if (!fs::exists(file, ec) || fs::equivalent(file, path, ec)) return std::nullopt;
  std::optional<TrainState> o;
  try {
    o = read_train_state(file.string());
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!o || std::pair(o->epoch, o->step_in_epoch) <= std::pair(state.epoch, state.step_in_epoch))
    return std::nullopt;
  return o;
}

std::string at_position(const TrainState& s) {
  return s.step_in_epoch > 0 ? str("in epoch ", s.epoch + 1, " after step ", s.step_in_epoch)
                             : str(s.epoch, s.epoch == 1 ? " epoch done" : " epochs done");
}

}  // namespace

std::string rank_error_file(int rank) { return str("error-rank-", rank, ".txt"); }

std::string run_marker_id(const fs::path& dir) {
  const nlohmann::json j = read_marker(dir);
  if (j.is_null()) return "";
  const auto text = [&](const char* key) {
    return j.contains(key) ? (j[key].is_string() ? j[key].get<std::string>() : j[key].dump())
                           : std::string();
  };
  if (j.contains("id")) return text("id");
  // a marker from before ids has all three; one without them (edited by hand) names no run, and
  // "::" made of nothing was taken for another run's id ("run.json names run ::")
  if (!j.contains("host") || !j.contains("pid") || !j.contains("created")) return "";
  return str(text("host"), ":", text("pid"), ":", text("created"));
}

std::string why_no_run_marker_id(const fs::path& dir) {
  if (read_marker(dir).is_null()) return "not a file holding a JSON object";
  if (run_marker_id(dir).empty())
    return "a JSON object without its \"id\" field, nor the host, pid and created of a marker "
           "from before run ids";
  return "";
}

RunMatch match_run(const std::string& recorded, const std::string& id) {
  if (id.empty()) return RunMatch::marker_without_id;
  if (recorded.empty()) return RunMatch::records_no_run;
  return recorded == id ? RunMatch::own : RunMatch::other_run;
}

std::string why_not_the_runs(const fs::path& dir, const std::string& recorded,
                             const std::string& id) {
  switch (match_run(recorded, id)) {
    case RunMatch::own: return "";
    case RunMatch::other_run:
      return str(" was written by another run than the one of its folder (it records ", recorded,
                 ", ", (dir / kRunMarker).string(), " names ", id, ")");
    case RunMatch::records_no_run:
      return " records no run (a checkpoint of a version from before run ids, or a copy), so it "
             "cannot be told from another run's";
    case RunMatch::marker_without_id: break;
  }
  return str(" cannot be told to be this run's: ", (dir / kRunMarker).string(),
             ", the folder's marker, holds no run id (", why_no_run_marker_id(dir), ")");
}

std::string why_not_resumed_in_place(const fs::path& dir, const std::string& path,
                                     const TrainState& state) {
  std::error_code ec;
  if (!fs::exists(dir / kRunMarker, ec))
    return str(path, " is not in a run folder (no ", kRunMarker, " beside it)");
  // the checkpoint and the folder must be the same run's (match_run, as the rotation tells the
  // run's files); a marker without an id still makes this the checkpoint's folder (a warning
  // follows: trainer.cpp), as nothing is written over that the run did not write
  const std::string id = run_marker_id(dir);
  const RunMatch match = match_run(state.run, id);
  if (match == RunMatch::other_run || match == RunMatch::records_no_run)
    return str(path, why_not_the_runs(dir, state.run, id));
  // recovery.safetensors is not counted: resuming last.safetensors in place only redoes the
  // partial epoch the recovery holds (the trainer replaces or removes it)
  const std::optional<TrainState> o = further_along(dir / "last.safetensors", path, state);
  if (o)
    return str(
        path, " (", at_position(state), ") is behind its run's last.safetensors (", at_position(*o),
        "): going on in that folder would replace the later epochs' checkpoints and summary rows");
  return "";
}

std::string newer_recovery_note(const fs::path& dir, const std::string& path,
                                const TrainState& state) {
  const fs::path recovery = dir / "recovery.safetensors";
  const std::optional<TrainState> r = further_along(recovery, path, state);
  if (!r || (!state.run.empty() && !r->run.empty() && r->run != state.run)) return "";
  return str("resume: ", recovery.string(), " (", at_position(*r), ") is further along than ", path,
             " (", at_position(state),
             "): this resume redoes those steps and replaces it "
             "when the epoch ends; to go on from it, stop now and resume with --resume ",
             shell_quote(recovery.string()));
}

std::string readable_checkpoint_hint(const fs::path& dir, const fs::path& except) {
  std::error_code ec;
  std::optional<std::pair<TrainState, fs::path>> best;  // the furthest run position
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool ours = name == "recovery.safetensors" || name == "last.safetensors" ||
                      history_epoch(name).has_value();
    if (!ours || fs::equivalent(it->path(), except, ec)) continue;
    try {
      const std::optional<TrainState> st = read_train_state(it->path().string());
      if (st && (!best || std::pair(st->epoch, st->step_in_epoch) >
                              std::pair(best->first.epoch, best->first.step_in_epoch)))
        best = std::pair(*st, it->path());
    } catch (const Error&) {  // cut short too, or not a checkpoint: not offered
    }
  }
  if (!best) return "";
  const TrainState& st = best->first;  // epoch: those finished (0-based: the one in progress)
  return str("; ", best->second.string(), " can be read (written ",
             st.step_in_epoch > 0 ? str("at step ", st.step_in_epoch, " of epoch ", st.epoch + 1)
                                  : str("after epoch ", st.epoch),
             "): --resume ", shell_quote(best->second.string()));
}

std::string resume_folder_error(const std::string& folder, bool config_given) {
  std::error_code ec;
  // without a config, `train --resume FILE` reads the args.yaml beside FILE: a folder without one
  // was sent to that command, which then asked for the config
  const std::string config =
      fs::is_regular_file(fs::path(folder) / "args.yaml", ec) ? "" : "CONFIG.yaml ";
  std::string instead;  // "--resume A or --resume B" (without a config: each a whole command)
  for (const char* name : {"recovery.safetensors", "last.safetensors"}) {
    const fs::path file = fs::path(folder) / name;
    if (!fs::is_regular_file(file, ec)) continue;
    const std::string option = str("--resume ", shell_quote(file.string()));
    instead += str(instead.empty() ? "" : " or ",
                   config_given ? option : str("`haargrad train ", config, option, "`"));
  }
  // --resume auto searches the config's output: no help without a config
  const std::string auto_hint =
      config_given ? " (or --resume auto: the newest unfinished run of the experiment)" : "";
  if (instead.empty())
    return str("resume: ", folder,
               " is a folder, not a checkpoint, and holds no recovery.safetensors or "
               "last.safetensors to resume from",
               auto_hint);
  return str("resume: ", folder, " is a folder, not a checkpoint: resume from a checkpoint in it, ",
             instead, auto_hint);
}

std::string resume_config_error(const std::string& path, bool config_given) {
  // read as a checkpoint, a config said "give ... or the folder itself where the command takes
  // one" (the safetensors reader's hint for any command), and --resume refuses folders; auto
  // searches a config's output, so this one is the config that --resume auto needs
  const std::string config =
      config_given ? std::string("this command has one")
                   : str("`haargrad train ", shell_quote(path),
                         " --resume auto` resumes the newest unfinished run of its output and "
                         "experiment");
  return str("resume: ", path,
             " is a YAML config, not a checkpoint: --resume takes a checkpoint file of a run "
             "(RUN/last.safetensors, RUN/recovery.safetensors or RUN/checkpoint-N.safetensors) "
             "or auto; a config goes as the CONFIG argument (",
             config, ")");
}

std::string run_marker_owner(const fs::path& dir) {
  const nlohmann::json j = read_marker(dir);
  if (j.is_null() || !j.contains("pid")) return "";
  std::string out = str("pid ", j["pid"].dump());
  if (j.contains("host") && j["host"].is_string())
    out += str(" on host ", j["host"].get<std::string>());
  if (j.contains("created") && j["created"].is_string())
    out += str(", started ", j["created"].get<std::string>());
  return out;
}

ResumePick pick_resume_checkpoint(
    const fs::path& root, const std::string& experiment, int64_t epochs,
    const std::function<std::string(const std::string& checkpoint)>& other_run) {
  std::error_code ec;
  // an output root that is a file holds no run: said as such, not as a run without checkpoints
  HG_CHECK(!fs::exists(root, ec) || fs::is_directory(root, ec), "resume auto: the output ",
           root.string(), " is a file, not a folder of runs");
  std::vector<Candidate> found;
  std::vector<std::string> unreadable, in_use, others_runs;
  std::string fallback;  // a readable checkpoint beside an unreadable file (the first such folder)
  for (const fs::path& dir : family_folders(root, experiment)) {
    if (run_folder_in_use(dir)) {
      in_use.push_back(dir.filename().string());
      continue;
    }
    std::optional<Candidate> best;
    for (const char* file : {"recovery.safetensors", "last.safetensors"}) {
      const fs::path p = dir / file;
      const auto written = mtime_ns(p);
      if (!written) continue;
      try {
        Candidate c{dir, p, read_train_state(p.string()).value_or(TrainState{}), *written};
        if (!best || std::pair(c.state.epoch, c.state.step_in_epoch) > std::pair(best->state.epoch, best->state.step_in_epoch))
          best = c;
      } catch (const Error& e) {
        unreadable.push_back(e.what());
        if (fallback.empty()) fallback = readable_checkpoint_hint(dir, p);
      }
    }
    if (best && other_run)
      if (const std::string why = other_run(best->checkpoint.string()); !why.empty()) {
        others_runs.push_back(str(dir.filename().string(), " (", why, ")"));
        continue;
      }
    if (best) found.push_back(*best);
  }
  const std::string family = experiment.empty() ? str("under ", root.string())
                                                : str("of experiment '", experiment, "' (", (root / experiment).string(),
                                                      " and its -N siblings)");
  std::string busy;
  for (const std::string& name : in_use) busy += str(busy.empty() ? "" : ", ", name);
  if (!busy.empty()) busy = str("; in use by a live training process, left alone: ", busy);
  if (!others_runs.empty())
    busy += str("; runs of other settings, left alone: ", others_runs.front(),
                others_runs.size() > 1 ? str(" and ", others_runs.size() - 1, " more") : "");
  if (found.empty() && unreadable.empty() && !in_use.empty())
    throw Error(str("resume auto: every run ", family, " is in use by a live training process (",
                    busy.substr(busy.find(": ") + 2), "): two runs must not write one folder"));
  // a checkpoint that cannot be read is a run that might be lost: said, never trained over
  if (found.empty() && !unreadable.empty())
    throw Error(str("resume auto: no run ", family,
                    " has a last.safetensors or recovery.safetensors that can be read (",
                    unreadable.front(), ")", fallback, busy));
  // Nothing to go on with (no run yet, or runs stopped before their first checkpoint): auto-resume
  // is the same command launched again after a preemption, whose first launch starts the run, so
  // this one starts it too, and says so.
  if (found.empty()) {
    ResumePick fresh;
    fresh.reason = str("resume auto: no run ", family,
                       " has a last.safetensors or recovery.safetensors to go on from: a new run "
                       "starts",
                       busy);
    return fresh;
  }

  // newest first; a run that stopped before its own end before one that finished it
  std::sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) { return a.written_ns > b.written_ns; });
  auto pick = std::find_if(found.begin(), found.end(), [&](const Candidate& c) {
    return resumable(c.state, epochs) && stopped_early(c);
  });
  const bool stopped = pick != found.end();
  if (!stopped)
    pick = std::find_if(found.begin(), found.end(),
                        [&](const Candidate& c) { return resumable(c.state, epochs); });
  const bool finished = pick == found.end();
  if (finished) pick = found.begin();

  std::string others;
  int listed = 0;
  for (const Candidate& c : found) {
    if (&c == &*pick) continue;
    if (++listed > 6) {
      others += ", ...";
      break;
    }
    others += str(others.empty() ? "" : ", ", c.dir.filename().string(), " (", progress(c.state, epochs), ")");
  }
  ResumePick out;
  out.checkpoint = pick->checkpoint.string();
  out.finished = finished;
  out.reason = str(
      "resume auto: ", pick->checkpoint.string(), " (", progress(pick->state, epochs), ", written ",
      local_time(static_cast<std::time_t>(pick->written_ns / 1000000000), "%Y-%m-%d %H:%M:%S"),
      "): ",
      finished  ? str("no run ", family, " is unfinished; this is the newest")
      : stopped ? str("the newest run ", family, " that stopped before its own end")
                : str("the newest unfinished run ", family),
      others.empty() ? std::string() : str("; also found: ", others),
      unreadable.empty() ? std::string() : str("; unreadable: ", unreadable.front()), busy);
  return out;
}

}  // namespace hg::train
