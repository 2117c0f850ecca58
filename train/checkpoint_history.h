// The checkpoint-<epoch>.safetensors files of a run (timm's CheckpointSaver, checkpoint_hist): the
// best `keep` epochs by eval top-1 (the EMA's, in a run with a model EMA), or in a run without
// validation by the epoch's mean train loss, lowest first (timm ranks by its train metrics then,
// with decreasing=True for a loss). Every file is ranked by the score recorded in its own
// metadata, so the ranking survives a resume; a file without one (written by an older version)
// takes the summary.csv row of its epoch, else ranks last. Only finite evaluations are ever saved,
// so the best kept file is always a sane model.
//
// Which files rotate: the run's own only, as timm's CheckpointSaver deletes only the files in its
// own list. A checkpoint-N records the run that wrote it (TrainState::run, the folder's run id),
// which is what makes a file the run's own across resumes (match_run in run_folder.h, the test a
// resume in place makes too). Any other file of such a name (another run's copy, a weights file,
// a checkpoint of a version from before run ids, which records no run, an unreadable file; every
// file while the folder's marker holds no id, damaged) is neither deleted by the rotation nor
// replaced by the epoch of its number: it is left as it is and said in the log (by the rotation
// once a session, and by the epoch of its number), and that epoch goes without its checkpoint-N.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hg::train {

/// What ranks a run's epochs (model_best and checkpoint_hist): the eval top-1, higher is better,
/// or in a run without validation (val_split '') the mean train loss, lower is better.
enum class RankMetric { top1, train_loss };

struct HistoryEntry {
  int64_t epoch;  ///< 1-based, as in the file name
  double score;   ///< the recorded eval top-1 (%) or train loss (RankMetric); NaN when unknown
};

/// "checkpoint-<epoch>.safetensors".
std::string history_file_name(int64_t epoch);

/// The epoch of a history file's name (history_file_name's inverse: "checkpoint-12.safetensors"
/// -> 12), or nullopt for any other name ("checkpoint-012.safetensors", "checkpoint-x...").
std::optional<int64_t> history_epoch(const std::string& file_name);

/// Why the file `path` is not the own checkpoint of run `run` (the id in its folder's marker,
/// run_marker_id), for the log ("<path> was written by another run ..."; "... records no run ...";
/// "... cannot be told to be this run's: <folder>/run.json ... holds no run id (why)" when `run`
/// is ""; "...: holds no training state ..."; the reader's error for a file that cannot be read),
/// or "" when it is: its training state records `run` (match_run).
std::string not_the_runs_file(const std::filesystem::path& path, const std::string& run);

/// The checkpoint-<N>.safetensors files of run `run` (its TrainState::run id) in `dir`, with their
/// scores by `metric`; `fallback` gives scores by epoch for files without one. Left alone (not
/// listed, so never deleted): other names (checkpoint-x.safetensors), and every file that is not
/// the run's own (not_the_runs_file: another run's copy, a file that records no run or holds no
/// training state, one whose metadata cannot be read). `notes` (may be null) gets a line for each
/// file left alone or ranked without a score.
std::vector<HistoryEntry> scan_history(const std::filesystem::path& dir,
                                       const std::map<int64_t, double>& fallback,
                                       const std::string& run, std::vector<std::string>* notes,
                                       RankMetric metric = RankMetric::top1);

/// The epochs whose files go when only `keep` (>= 0) may stay: entries ranked by score, the best
/// first (the higher top-1, the lower train loss), an equal score keeping the earlier epoch (timm's
/// stable sort), unknown scores last.
std::vector<int64_t> history_to_delete(std::vector<HistoryEntry> entries, int64_t keep,
                                       RankMetric metric = RankMetric::top1);

}  // namespace hg::train
