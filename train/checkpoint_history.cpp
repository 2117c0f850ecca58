// checkpoint-N ranking and rotation (see checkpoint_history.h).
#include "train/checkpoint_history.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/parse_number.h"
#include "train/checkpoint.h"
#include "train/run_folder.h"

namespace fs = std::filesystem;

namespace hg::train {

std::string history_file_name(int64_t epoch) { return str("checkpoint-", epoch, ".safetensors"); }

std::optional<int64_t> history_epoch(const std::string& name) {
  const std::string prefix = "checkpoint-", suffix = ".safetensors";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const auto epoch =
      parse_decimal_int(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
  if (!epoch || *epoch < 1 || name != history_file_name(*epoch)) return std::nullopt;
  return epoch;
}

namespace {

// The reader's error about a file found in the run folder, without the advice it gives for a file
// named on the command line ("...: give a run folder's last.safetensors ..."): nobody gave this
// one.
std::string found_file_error(const std::string& what) {
  const size_t advice = what.find(": give a run folder's");
  return advice == std::string::npos ? what : what.substr(0, advice);
}

// The score a checkpoint records for `metric`; NaN when none (-1 in its state). A run with a model
// EMA ranks by the EMA's top-1, as it picks its best (checkpoint.h).
double recorded_score(const TrainState& st, RankMetric metric) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  if (metric == RankMetric::train_loss) return st.train_loss >= 0 ? st.train_loss : none;
  if (st.eval_top1_ema >= 0) return st.eval_top1_ema;
  return st.eval_top1 >= 0 ? st.eval_top1 : none;
}

// The training state of `path` when it is run `run`'s own checkpoint; otherwise nothing, and
// *why says why not (not_the_runs_file).
std::optional<TrainState> own_state(const fs::path& path, const std::string& run,
                                    std::string* why) {
  std::optional<TrainState> st;
  try {
    st = read_train_state(path.string());
  } catch (const Error& e) {  // unreadable: not deleted on a guess, the file may matter to someone
    *why = found_file_error(e.what());
    return std::nullopt;
  }
  const std::string name = path.string();
  if (!st)  // a weights file (an export, timm's): the trainer never writes one of these names
    *why = str(name, ": holds no training state (a weights file, not a checkpoint of this run)");
  else if (const std::string not_own = why_not_the_runs(path.parent_path(), st->run, run);
           !not_own.empty())  // the test a resume in place makes too (match_run)
    *why = name + not_own;
  return why->empty() ? st : std::nullopt;
}

}  // namespace

std::string not_the_runs_file(const fs::path& path, const std::string& run) {
  std::string why;
  own_state(path, run, &why);
  return why;
}

std::vector<HistoryEntry> scan_history(const fs::path& dir,
                                       const std::map<int64_t, double>& fallback,
                                       const std::string& run, std::vector<std::string>* notes,
                                       RankMetric metric) {
  std::vector<HistoryEntry> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const auto epoch = history_epoch(it->path().filename().string());
    if (!epoch) continue;  // not one of ours
    std::string why;
    const std::optional<TrainState> st = own_state(it->path(), run, &why);
    if (!st) {
      if (notes) notes->push_back(str(why, "; left alone"));
      continue;
    }
    double score = recorded_score(*st, metric);
    if (std::isnan(score)) {
      auto f = fallback.find(*epoch);
      if (f != fallback.end() && std::isfinite(f->second))
        score = f->second;
      else if (notes)
        notes->push_back(str(it->path().string(), ": no ",
                             metric == RankMetric::top1 ? "eval score" : "train loss",
                             " in its metadata or in summary.csv; ranked last"));
    }
    out.push_back({*epoch, score});
  }
  return out;
}

std::vector<int64_t> history_to_delete(std::vector<HistoryEntry> entries, int64_t keep,
                                       RankMetric metric) {
  const bool lower_first = metric == RankMetric::train_loss;  // timm's decreasing=True
  std::sort(entries.begin(), entries.end(),
            [lower_first](const HistoryEntry& a, const HistoryEntry& b) {
              const bool ka = std::isfinite(a.score), kb = std::isfinite(b.score);
              if (ka != kb) return ka;  // known scores first
              if (ka && a.score != b.score)
                return lower_first ? a.score < b.score : a.score > b.score;
              return a.epoch < b.epoch;  // ties: the earlier stays (timm)
            });
  std::vector<int64_t> out;
  for (size_t i = static_cast<size_t>(std::max<int64_t>(keep, 0)); i < entries.size(); ++i)
    out.push_back(entries[i].epoch);
  return out;
}

}  // namespace hg::train
