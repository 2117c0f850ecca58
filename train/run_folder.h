// Run folders: where a training run writes (args.yaml, summary.csv, log.txt, checkpoints), how a
// new run gets a folder of its own, and which run `--resume auto` continues.
//
// Identity: a new run claims its folder by creating it (or by finding it empty) and writing the
// marker run.json into it with O_EXCL, so two runs never share a folder, even when started at the
// same moment: a folder that exists and is not empty (a marker, files of an interrupted epoch 1,
// anything) belongs to someone else, and the next name is tried: <name>-2, <name>-3, ...
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace hg::train {

/// The marker file of a run folder (JSON: format, created, pid, host, folder).
inline constexpr const char* kRunMarker = "run.json";

/// Claims `root/name`, else `root/name-2`, `root/name-3`, ...: the first that this call creates or
/// finds empty, marked with kRunMarker. Creates `root` as needed. Throws hg::Error naming the
/// folder when it cannot be created or marked (read-only or full file system). *created (when
/// given) says whether this call made the folder, rather than finding it empty.
std::filesystem::path claim_run_folder(const std::filesystem::path& root, const std::string& name,
                                       bool* created = nullptr);

/// A file a command reads, which its output must not replace: {"the checkpoint", path}.
struct CommandInput {
  std::string role, path;
};

/// Throws hg::Error when `what` (e.g. "infer: --out") writing `contents` (e.g. "the logits") to
/// `path` would replace one of the command's `inputs` (the same file, by any name), or a run's own
/// file: a training checkpoint (a file holding a run position), or a file of a run folder (one
/// holding kRunMarker) named run.json, args.yaml, summary.csv, log.txt or *.safetensors; or when
/// `path` is a folder. Any other path (curves.png of a run included) is fine, existing or not.
void check_output_file(const std::string& path, const std::string& what,
                       const std::string& contents, const std::vector<CommandInput>& inputs = {});

/// What `--resume auto` chose, and why (a sentence for the log).
struct ResumePick {
  std::string checkpoint;  ///< last.safetensors or recovery.safetensors of the chosen run
  std::string reason;
  bool finished = false;  ///< no run of the family was resumable: this is the newest finished one
};

/// The run `--resume auto` continues. Candidates: with an experiment name, the folders
/// `<root>/<experiment>` and `<root>/<experiment>-N` (the family one name gives, see
/// claim_run_folder); without, every folder under `root` that holds a checkpoint. A candidate's
/// checkpoint is the further of its recovery.safetensors and last.safetensors (by epoch and step
/// in their metadata). Resumable: fewer than `epochs` epochs done, or stopped inside an epoch. The
/// pick is the resumable candidate whose checkpoint was written last; if none is resumable, the
/// newest finished one (`finished`). Throws hg::Error naming where it looked when there is no
/// candidate at all.
ResumePick pick_resume_checkpoint(const std::filesystem::path& root, const std::string& experiment,
                                  int64_t epochs);

}  // namespace hg::train
