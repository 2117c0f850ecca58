// summary.csv of a run: one row per finished epoch, timm's summary columns (with our throughput and
// memory). Written whole through io::write_file_atomic after every epoch; on resume the rows up
// to the resumed checkpoint are kept and the later ones redone.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hg::train {

inline constexpr const char* kSummaryHeader =
    "epoch,train_loss,eval_loss,eval_top1,eval_top5,lr,train_img_per_sec,peak_memory_mib";

struct SummaryRow {
  int64_t epoch;  ///< 1-based
  double train_loss, eval_loss, eval_top1, eval_top5, lr, img_per_sec, peak_mib;
};

/// One CSV line (no newline); non-finite values are written "nan" / "inf" / "-inf".
std::string format_summary_row(const SummaryRow& row);

struct SummaryLines {
  std::vector<std::string> lines;        ///< rows as written, epochs <= upto, file order
  std::map<int64_t, double> eval_top1;   ///< epoch -> eval_top1 of those rows (NaN when not finite)
};

/// The rows of an existing summary.csv (none when the file does not exist) for epochs <= `upto`.
/// Throws hg::Error naming the file and line for a row whose epoch or eval_top1 is not a number.
SummaryLines read_summary(const std::string& path, int64_t upto);

/// The whole file: header and rows, one per line.
std::string summary_csv(const std::vector<std::string>& lines);

}  // namespace hg::train
