// checkpoint-N ranking and rotation (see checkpoint_history.h).
#include "train/checkpoint_history.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/parse_number.h"
#include "train/checkpoint.h"

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

}  // namespace

std::vector<HistoryEntry> scan_history(const fs::path& dir,
                                       const std::map<int64_t, double>& fallback_top1,
                                       const std::string& run, std::vector<std::string>* notes) {
  std::vector<HistoryEntry> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const auto epoch = history_epoch(it->path().filename().string());
    if (!epoch) continue;  // not one of ours
    double top1 = std::numeric_limits<double>::quiet_NaN();
    std::string why;
    try {
      const auto st = read_train_state(it->path().string());
      if (st && !st->run.empty() && !run.empty() && st->run != run) {  // a copy from another run
        if (notes)
          notes->push_back(str(it->path().string(), ": written by another run; left alone"));
        continue;
      }
      // a run with a model EMA ranks by the EMA's top-1, as it picks its best (checkpoint.h)
      if (st && st->eval_top1_ema >= 0)
        top1 = st->eval_top1_ema;
      else if (st && st->eval_top1 >= 0)
        top1 = st->eval_top1;
    } catch (
        const Error& e) {  // unreadable: not deleted on a guess, the file may matter to someone
      if (notes) notes->push_back(str(found_file_error(e.what()), "; left alone"));
      continue;
    }
    if (std::isnan(top1) && why.empty()) {
      auto f = fallback_top1.find(*epoch);
      if (f != fallback_top1.end() && std::isfinite(f->second)) top1 = f->second;
      else why = "no eval score in its metadata or in summary.csv";
    }
    if (std::isnan(top1) && notes) notes->push_back(str(it->path().string(), ": ", why, "; ranked last"));
    out.push_back({*epoch, top1});
  }
  return out;
}

std::vector<int64_t> history_to_delete(std::vector<HistoryEntry> entries, int64_t keep) {
  std::sort(entries.begin(), entries.end(), [](const HistoryEntry& a, const HistoryEntry& b) {
    const bool ka = std::isfinite(a.top1), kb = std::isfinite(b.top1);
    if (ka != kb) return ka;                          // known scores first
    if (ka && a.top1 != b.top1) return a.top1 > b.top1;  // higher first
    return a.epoch < b.epoch;                         // ties: the earlier stays (timm)
  });
  std::vector<int64_t> out;
  for (size_t i = static_cast<size_t>(std::max<int64_t>(keep, 0)); i < entries.size(); ++i)
    out.push_back(entries[i].epoch);
  return out;
}

}  // namespace hg::train
