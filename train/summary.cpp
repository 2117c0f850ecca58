// summary.csv rows (see summary.h).
#include "train/summary.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/parse_number.h"

namespace hg::train {
namespace {

std::string number(double v, const char* format) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

// A cell written by format_summary_row: a decimal number or nan / inf / -inf.
std::optional<double> read_cell(const std::string& text) {
  if (text == "nan" || text == "-nan") return std::numeric_limits<double>::quiet_NaN();
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  return parse_decimal_float(text);
}

}  // namespace

std::string format_summary_row(const SummaryRow& r) {
  return str(r.epoch, ",", number(r.train_loss, "%.8g"), ",", number(r.eval_loss, "%.8g"), ",",
             number(r.eval_top1, "%.6g"), ",", number(r.eval_top5, "%.6g"), ",",
             number(r.lr, "%.8g"), ",", number(r.img_per_sec, "%.1f"), ",",
             number(r.peak_mib, "%.1f"),
             r.has_ema ? str(",", number(r.eval_loss_ema, "%.8g"), ",",
                             number(r.eval_top1_ema, "%.6g"), ",", number(r.eval_top5_ema, "%.6g"))
                       : std::string());
}

SummaryLines read_summary(const std::string& path, int64_t upto) {
  SummaryLines out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return out;  // (an unreadable one fails in read_file, named)
  std::istringstream in(io::read_file(path));
  std::string line;
  std::getline(in, line);  // the header: a run with an EMA ranks by its top-1 (summary.h)
  const size_t top1_at = line.find(",eval_top1_ema,") != std::string::npos ? 9 : 3;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    // a file saved with CR LF (a Windows program, a spreadsheet): its rows as written by us, so
    // that the resumed run's file is one kind of line
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    const auto epoch = cells.empty() ? std::nullopt : parse_decimal_int(cells[0]);
    const auto top1 = cells.size() <= top1_at ? std::nullopt : read_cell(cells[top1_at]);
    HG_CHECK(epoch && top1, path, " line ", line_no, ": expected '", kSummaryHeader,
             "' values, got '", line, "'");
    if (*epoch > upto) continue;  // after the resumed checkpoint: redone
    out.lines.push_back(line);
    auto value = [&](size_t i) {
      const auto v = i < cells.size() ? read_cell(cells[i]) : std::nullopt;
      return v ? *v : std::numeric_limits<double>::quiet_NaN();
    };
    out.rows.push_back(
        SummaryRow{*epoch, value(1), value(2), value(3), value(4), value(5), value(6), value(7)});
    out.eval_top1[*epoch] = std::isfinite(*top1) ? *top1 : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

std::string summary_csv(const std::vector<std::string>& lines, bool ema) {
  std::string csv = std::string(kSummaryHeader) + (ema ? str(",", kSummaryEmaColumns) : "") + "\n";
  for (const auto& l : lines) csv += l + "\n";
  return csv;
}

}  // namespace hg::train
