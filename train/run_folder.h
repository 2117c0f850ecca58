// Run folders: where a training run writes (args.yaml, summary.csv, log.txt, checkpoints), how a
// new run gets a folder of its own, and which run `--resume auto` continues.
//
// Identity: a new run claims its folder by creating it (or by finding it empty) and writing the
// marker run.json into it with O_EXCL, so two runs never share a folder, even when started at the
// same moment: a folder that exists and is not empty (a marker, files of an interrupted epoch 1,
// anything) belongs to someone else, and the next name is tried: <name>-2, <name>-3, ...
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "train/checkpoint.h"

namespace hg::train {

/// The marker file of a run folder (JSON: format, id, created, pid, host, folder).
inline constexpr const char* kRunMarker = "run.json";

/// `t` as local time in strftime's `format` (at most 63 characters), for names and lines of the
/// run folder's files.
std::string local_time(std::time_t t, const char* format);

/// "error-rank-<rank>.txt": where rank `rank` > 0 of a data-parallel run leaves its error in the
/// run folder (log.txt is rank 0's, and the MPI_Abort that follows the error ends rank 0 before it
/// could log it).
std::string rank_error_file(int rank);

/// Claims `root/name`, else `root/name-2`, `root/name-3`, ...: the first that this call creates or
/// finds empty and writable, marked with kRunMarker. Creates `root` as needed. Throws hg::Error
/// naming the folder when it cannot be created or marked (read-only or full file system). *created
/// (when given) says whether this call made the folder, rather than finding it empty.
std::filesystem::path claim_run_folder(const std::filesystem::path& root, const std::string& name,
                                       bool* created = nullptr);

/// Holds a run folder for one training process: an exclusive flock(2) on its kRunMarker, kept
/// until this object is destroyed or the process ends, however it ends (the kernel drops the lock
/// of a killed process; nothing stale is left to clean). A second process that wants the folder
/// (`--resume` of one of its checkpoints, `--resume auto`) finds it held and stays out, so that two
/// live runs never write the same checkpoints and summary.csv. On a file system without flock
/// (Lustre without -o flock, some NFS and SMB mounts) it warns and holds nothing. Once it holds
/// the folder it removes the temp files of atomic writes cut off by a kill (`<file>.tmp.<pid>.<n>`
/// whose process is gone; core/atomic_file.h).
class RunFolderLock {
 public:
  RunFolderLock() = default;
  /// Locks `dir`. Throws hg::Error when `dir` has no kRunMarker, or when another process holds
  /// it (naming the pid and host its marker records).
  explicit RunFolderLock(const std::filesystem::path& dir);
  RunFolderLock(RunFolderLock&& o) noexcept;
  RunFolderLock& operator=(RunFolderLock&& o) noexcept;
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;
  ~RunFolderLock();

 private:
  int fd_ = -1;
};

/// Whether a live process holds `dir` now (RunFolderLock); false when it has no kRunMarker.
bool run_folder_in_use(const std::filesystem::path& dir);

/// "pid 1234 on host gpu-7, started 2026-12-05T08:00:00+0000": who made `dir`'s kRunMarker, for
/// messages; "" when it cannot be read.
std::string run_marker_owner(const std::filesystem::path& dir);

/// The identity of `dir`'s run: the random id in its kRunMarker ("<host>:<pid>:<created>" in older
/// markers; "" when it cannot be read). Checkpoints record it (TrainState::run).
std::string run_marker_id(const std::filesystem::path& dir);

/// Why run_marker_id(dir) is "", for messages: "not a file holding a JSON object", or the marker
/// lacks its "id" field (and the fields older markers are named by); "" when it names a run.
std::string why_no_run_marker_id(const std::filesystem::path& dir);

/// Whether a checkpoint of the run folder `dir` is its run's own, the one test both the
/// checkpoint_hist rotation (checkpoint_history.h) and a resume in place (why_not_resumed_in_place)
/// make. `recorded` is the checkpoint's TrainState::run, `id` the folder's run_marker_id(dir). Own
/// only when both name the same run: a checkpoint that records no run (written before run ids) or
/// a folder whose marker holds no id cannot be told from another run's, and what cannot be told is
/// not taken as the run's, so that no file is deleted or written over on a guess (timm's
/// CheckpointSaver deletes only the files it wrote itself).
enum class RunMatch { own, other_run, records_no_run, marker_without_id };
RunMatch match_run(const std::string& recorded, const std::string& id);

/// Why a checkpoint of `dir` recording run `recorded` is not the run's own (match_run against
/// `id`), for messages after its path (": written by another run (...)", ": records no run ...",
/// ": cannot be told to be this run's: DIR/run.json holds no run id (why)"); "" when it is.
std::string why_not_the_runs(const std::filesystem::path& dir, const std::string& recorded,
                             const std::string& id);

/// Why the checkpoint `path` (its run position `state`) cannot go on in its own folder `dir`, ""
/// when it can: the folder is no run folder (no kRunMarker: a copy, a download), or another run's
/// (match_run: the checkpoint's TrainState::run is not the marker's, or the checkpoint records no
/// run, being of a version from before run ids: its folder's rotation could not tell its files
/// from another run's, so it goes on in a new folder, the old one left as it is; a folder whose
/// marker holds no id, damaged, is still where its checkpoints are: the resume goes on in it, and
/// the trainer warns that its rotation takes none of the files as the run's), or the folder's
/// last.safetensors is further along (going on would replace the later epochs' checkpoints and
/// summary rows; a recovery.safetensors further along is not counted: going on from
/// last.safetensors only redoes its partial epoch). The trainer then continues the run in a new
/// folder.
std::string why_not_resumed_in_place(const std::filesystem::path& dir, const std::string& path,
                                     const TrainState& state);

/// For a checkpoint `path` (position `state`) that goes on in its own folder `dir`: a warning when
/// the folder's recovery.safetensors (of the same run) is further along, "" otherwise. Going on
/// from `path` redoes the steps the recovery holds and replaces it when the epoch ends; the
/// warning names it and how to continue from it instead.
std::string newer_recovery_note(const std::filesystem::path& dir, const std::string& path,
                                const TrainState& state);

/// What to resume from instead of `except`, a checkpoint in `dir` that cannot be read (cut short):
/// "; FILE can be read (written after epoch E): --resume FILE" for the checkpoint of
/// `dir` (recovery.safetensors, last.safetensors, checkpoint-N.safetensors) whose run position is
/// furthest and that reads, or "" when none does.
std::string readable_checkpoint_hint(const std::filesystem::path& dir,
                                     const std::filesystem::path& except);

/// The error for a folder given to resume where a checkpoint file goes: it names the folder and
/// the checkpoints in it to resume from (recovery.safetensors, last.safetensors: those resume: auto
/// picks from), each as what to give instead: the option `--resume FILE` when a config was given,
/// else the command `haargrad train --resume FILE` (which reads the run's args.yaml beside FILE),
/// or `haargrad train CONFIG.yaml --resume FILE` when the folder holds no args.yaml.
std::string resume_folder_error(const std::string& folder, bool config_given);

/// The error for a YAML config (train::yaml_name) given to resume where a checkpoint file goes
/// (`--resume RUN/args.yaml`): what --resume takes, a run's checkpoint file or auto, and where a
/// config goes instead; `config_given`: the command has its config already.
std::string resume_config_error(const std::string& path, bool config_given);

/// A file a command reads, which its output must not replace: {"the checkpoint", path}.
struct CommandInput {
  std::string role, path;
};

/// Throws hg::Error when `what` (e.g. "infer: --out") writing `contents` (e.g. "the logits") to
/// `path` would replace one of the command's `inputs` (the same file, by any name), or a run's own
/// file: a training checkpoint (a file holding a run position), or a file of a run folder (one
/// holding kRunMarker) named run.json, args.yaml, summary.csv, log.txt or *.safetensors; or when
/// `path` is a folder or its folder does not exist or cannot be written, or `path` is another
/// user's file in a sticky folder such as /tmp (the final rename over it would fail), or a file
/// this process may not write (made read-only: kept, as a shell's `>` keeps it; all checked
/// before the command's work). Any other
/// path (curves.png of a run included) is fine, existing or not.
void check_output_file(const std::string& path, const std::string& what,
                       const std::string& contents, const std::vector<CommandInput>& inputs = {});

/// What `--resume auto` chose, and why (a sentence for the log).
struct ResumePick {
  std::string checkpoint;  ///< last.safetensors or recovery.safetensors of the chosen run; "":
                           ///< no run to go on with, a new run starts (`reason` says so)
  std::string reason;
  bool finished = false;  ///< no run of the family was resumable: this is the newest finished one
};

/// The run `--resume auto` continues. Candidates: with an experiment name, the folders
/// `<root>/<experiment>` and `<root>/<experiment>-N` (the family one name gives, see
/// claim_run_folder); without, every folder under `root` that holds a checkpoint. A candidate's
/// checkpoint is the further of its recovery.safetensors and last.safetensors (by epoch and step
/// in their metadata). Resumable: fewer than `epochs` epochs (the run's length, run_epochs) done,
/// or stopped inside an epoch. The
/// pick is the resumable candidate whose checkpoint was written last (a folder that a live process
/// holds, RunFolderLock, is no candidate: it is named in the reason); if none is resumable, the
/// newest finished one (`finished`). When no folder of the family holds a checkpoint (no run yet,
/// or runs stopped before their first one), an empty `checkpoint`: the run starts afresh, as the
/// first launch of the same command did. Throws hg::Error naming where it looked when every
/// candidate is in use or its checkpoints cannot be read. `other_run`, when given: why a
/// checkpoint is of another run than this session's ("" when it is not), which then is no
/// candidate (named in the reason as left alone); the trainer passes it without an experiment
/// name, where every run under `root` would be one (an unrelated run, the quick start's say).
ResumePick pick_resume_checkpoint(
    const std::filesystem::path& root, const std::string& experiment, int64_t epochs,
    const std::function<std::string(const std::string& checkpoint)>& other_run = {});

}  // namespace hg::train
