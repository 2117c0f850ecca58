// summary.csv of a run: one row per finished epoch, timm's summary columns (with our throughput and
// memory; a run with a model EMA adds the EMA's evaluation, timm-style names with an _ema suffix;
// a run without validation has no eval columns at all, as timm's update_summary writes none
// without eval metrics). Written whole through io::write_file_atomic after every epoch; on resume
// the rows up to the resumed checkpoint are kept and the later ones redone.
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
/// The header of a run without validation (val_split ''): no eval columns, the EMA's neither.
inline constexpr const char* kSummaryNoEvalHeader =
    "epoch,train_loss,lr,train_img_per_sec,peak_memory_mib";

struct SummaryRow {
  int64_t epoch;  ///< 1-based
  double train_loss, eval_loss, eval_top1, eval_top5, lr, img_per_sec, peak_mib;
  bool has_ema = false;  ///< the run keeps a model EMA: the three values below are written
  double eval_loss_ema = 0, eval_top1_ema = 0, eval_top5_ema = 0;
  bool has_eval = true;  ///< false: a run without validation, no eval value is written (nor EMA's)
};

/// One CSV line (no newline); non-finite values are written "nan" / "inf" / "-inf".
std::string format_summary_row(const SummaryRow& row);

/// The cells of one record of a CSV file, read as RFC 4180 says: a cell in double quotes may hold
/// commas, line breaks and quotes (each written twice), and is read without its quotes. The
/// trainer writes numbers only (never quoted), but a spreadsheet that saves the file may quote
/// every cell ("epoch","train_loss",...): its header names were read with their quotes. A record
/// ended by CR (a line of a CR LF file, saved by a Windows program) reads as one ended by LF; a
/// last empty cell ("a,b,") is kept; an empty record has no cells. The file readers (read_summary,
/// plot's read_csv_columns) give it one line at a time, so they do not read a quoted line break in
/// a file back: the files they read hold numbers, which have none.
std::vector<std::string> summary_cells(std::string line);

/// `text` as one cell of a CSV line (RFC 4180): as is, unless it holds a comma, a double quote, a
/// CR or an LF; then in double quotes, each double quote in it written twice. summary_cells reads
/// it back from its record's text (a line break in it too; the file readers, which split lines
/// first, would not). For the CSV files of text (bench --output), which spreadsheets read;
/// summary.csv holds numbers only.
std::string csv_cell(const std::string& text);

/// The first line of a CSV file without a leading UTF-8 byte-order mark (EF BB BF, which Excel's
/// "CSV UTF-8" writes): the header's first name read "\xef\xbb\xbfepoch" and was not found.
std::string without_bom(std::string first_line);

/// The header of the CSV file `path` from its first line, `first_line`: without_bom's. Throws
/// hg::Error naming `path` when the line is not 8-bit text: a UTF-16 or UTF-32 byte-order mark,
/// or NUL bytes (Excel's "Unicode text" is UTF-16, and its message came cut at the first NUL,
/// naming line 2).
std::string csv_header_line(const std::string& first_line, const std::string& path);

struct SummaryLines {
  std::vector<std::string> lines;  ///< rows as written, epochs <= upto, file order
  /// The same rows parsed, by the header's column names (a column the file lacks, or a cell
  /// that does not parse, is NaN); has_eval and has_ema say whether the file has the eval and
  /// the EMA's columns (the EMA's values are left at their defaults without them)
  std::vector<SummaryRow> rows;
  /// epoch -> the score that ranks the epoch's checkpoint, as the run ranks them: eval_top1_ema
  /// when the file has that column, else eval_top1, else (a run without validation) train_loss;
  /// NaN when not finite
  std::map<int64_t, double> score;
};

/// The rows of an existing summary.csv (none when the file does not exist) for epochs <= `upto`.
/// Throws hg::Error naming the file and line for a row whose epoch or score is not a number, and
/// for a file that is not 8-bit text (check_csv_encoding).
SummaryLines read_summary(const std::string& path, int64_t upto);

/// The header of a run's file: kSummaryHeader (with kSummaryEmaColumns when `ema`), or without
/// validation kSummaryNoEvalHeader.
std::string summary_header(bool validation, bool ema);

/// The whole file: `header` and the rows, one per line.
std::string summary_csv(const std::string& header, const std::vector<std::string>& lines);

}  // namespace hg::train
