// summary.csv of a run: one row per finished epoch, timm's summary columns (with our throughput and
// memory; a run with a model EMA adds the EMA's evaluation, timm-style names with an _ema suffix).
// Written whole through io::write_file_atomic after every epoch; on resume the rows up
// to the resumed checkpoint are kept and the later ones redone.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hg::train {

inline constexpr const char* kSummaryHeader =
    "epoch,train_loss,eval_loss,eval_top1,eval_top5,lr,train_img_per_sec,peak_memory_mib";
/// The columns after kSummaryHeader in a run with a model EMA.
inline constexpr const char* kSummaryEmaColumns = "eval_loss_ema,eval_top1_ema,eval_top5_ema";

struct SummaryRow {
  int64_t epoch;  ///< 1-based
  double train_loss, eval_loss, eval_top1, eval_top5, lr, img_per_sec, peak_mib;
  bool has_ema = false;  ///< the run keeps a model EMA: the three values below are written
  double eval_loss_ema = 0, eval_top1_ema = 0, eval_top5_ema = 0;
};

/// One CSV line (no newline); non-finite values are written "nan" / "inf" / "-inf".
std::string format_summary_row(const SummaryRow& row);

struct SummaryLines {
  std::vector<std::string> lines;  ///< rows as written, epochs <= upto, file order
  /// The same rows parsed (the first eight columns; a cell that does not parse is NaN; the EMA
  /// columns are left at their defaults)
  std::vector<SummaryRow> rows;
  /// epoch -> eval_top1 of those rows (eval_top1_ema when the file has that column, as the run
  /// ranks its checkpoints by it; NaN when not finite)
  std::map<int64_t, double> eval_top1;
};

/// The rows of an existing summary.csv (none when the file does not exist) for epochs <= `upto`.
/// Throws hg::Error naming the file and line for a row whose epoch or eval_top1 is not a number.
SummaryLines read_summary(const std::string& path, int64_t upto);

/// The whole file: header (with kSummaryEmaColumns when `ema`) and rows, one per line.
std::string summary_csv(const std::vector<std::string>& lines, bool ema = false);

}  // namespace hg::train
