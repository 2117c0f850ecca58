// summary.csv rows (see summary.h).
#include "train/summary.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/parse_number.h"
#include "core/utf8.h"

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
  if (!r.has_eval)  // kSummaryNoEvalHeader's columns
    return str(r.epoch, ",", number(r.train_loss, "%.8g"), ",", number(r.lr, "%.8g"), ",",
               number(r.img_per_sec, "%.1f"), ",", number(r.peak_mib, "%.1f"));
  return str(r.epoch, ",", number(r.train_loss, "%.8g"), ",", number(r.eval_loss, "%.8g"), ",",
             number(r.eval_top1, "%.6g"), ",", number(r.eval_top5, "%.6g"), ",",
             number(r.lr, "%.8g"), ",", number(r.img_per_sec, "%.1f"), ",",
             number(r.peak_mib, "%.1f"),
             r.has_ema ? str(",", number(r.eval_loss_ema, "%.8g"), ",",
                             number(r.eval_top1_ema, "%.6g"), ",", number(r.eval_top5_ema, "%.6g"))
                       : std::string());
}

std::vector<std::string> summary_cells(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) return {};
  std::vector<std::string> cells(1);
  bool quoted = false;  // inside a cell's double quotes
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c != '"') {
        cells.back() += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {  // "" is one quote
        cells.back() += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c == '"' && cells.back().empty()) {  // a quoted cell starts with its quote
      quoted = true;
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string without_bom(std::string first_line) {
  if (first_line.rfind("\xef\xbb\xbf", 0) == 0) first_line.erase(0, 3);
  return first_line;
}

std::string csv_header_line(const std::string& first_line, const std::string& path) {
  using namespace std::string_view_literals;
  const auto starts = [&first_line](std::string_view p) {
    return std::string_view(first_line).substr(0, p.size()) == p;
  };
  const char* what = nullptr;
  if (starts("\xff\xfe\0\0"sv) || starts("\0\0\xfe\xff"sv))
    what = "it starts with a UTF-32 byte-order mark";
  else if (starts("\xff\xfe"sv) || starts("\xfe\xff"sv))
    what = "it starts with a UTF-16 byte-order mark";
  else if (first_line.find('\0') != std::string::npos)
    what = "its first line holds NUL bytes (UTF-16 text?)";
  if (what == nullptr) return without_bom(first_line);
  throw Error(str(path, " is not UTF-8 text: ", what,
                  " (a spreadsheet's \"Unicode text\" is UTF-16); haargrad writes and reads "
                  "summary.csv as UTF-8: save it as \"CSV UTF-8\" or plain CSV, or restore the "
                  "run's own"));
}

SummaryLines read_summary(const std::string& path, int64_t upto) {
  SummaryLines out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return out;  // (an unreadable one fails in read_file, named)
  const std::string text = io::read_file(path);
  // an empty file holds no rows (a run stopped before its first summary line, or a file emptied)
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return out;
  std::istringstream in(text);
  std::string header;
  std::getline(in, header);
  header = csv_header_line(header, path);
  if (!header.empty() && header.back() == '\r') header.pop_back();
  // columns by name: a run without validation has no eval columns (kSummaryNoEvalHeader)
  std::map<std::string, size_t> column;
  {
    size_t i = 0;
    for (const std::string& c : summary_cells(header)) column.emplace(c, i++);
  }
  const auto at = [&column](const char* name) {
    const auto it = column.find(name);
    return it == column.end() ? std::string::npos : it->second;
  };
  // the score the run ranks its checkpoints by (summary.h)
  const size_t score_at = at("eval_top1_ema") != std::string::npos ? at("eval_top1_ema")
                          : at("eval_top1") != std::string::npos   ? at("eval_top1")
                                                                   : at("train_loss");
  // a first line without the epoch and score columns is no summary header (a file overwritten):
  // said of line 1, not as "line 2: expected '<garbage>' values"
  HG_CHECK(at("epoch") == 0 && score_at != std::string::npos, path,
           " line 1 is not the summary's header (expected columns epoch, ..., train_loss or "
           "eval_top1), got '",
           printable(header.substr(0, 120)), header.size() > 120 ? "...'" : "'",
           ": restore the run's summary.csv, or move it away (the run's checkpoints do not need "
           "it)");
  std::string line;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    // a file saved with CR LF (a Windows program, a spreadsheet): its rows as written by us, so
    // that the resumed run's file is one kind of line
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::vector<std::string> cells = summary_cells(line);
    const auto epoch = cells.empty() ? std::nullopt : parse_decimal_int(cells[0]);
    const auto score = score_at < cells.size() ? read_cell(cells[score_at]) : std::nullopt;
    HG_CHECK(epoch && score, path, " line ", line_no, ": expected '", printable(header),
             "' values, got '", printable(line), "'");
    if (*epoch > upto) continue;  // after the resumed checkpoint: redone
    out.lines.push_back(line);
    auto value = [&](const char* name) {
      const size_t i = at(name);
      const auto v = i < cells.size() ? read_cell(cells[i]) : std::nullopt;
      return v ? *v : std::numeric_limits<double>::quiet_NaN();
    };
    out.rows.push_back(SummaryRow{*epoch, value("train_loss"), value("eval_loss"),
                                  value("eval_top1"), value("eval_top5"), value("lr"),
                                  value("train_img_per_sec"), value("peak_memory_mib")});
    SummaryRow& row = out.rows.back();
    row.has_eval = at("eval_top1") != std::string::npos;
    row.has_ema = at("eval_top1_ema") != std::string::npos;
    if (row.has_ema) {
      row.eval_loss_ema = value("eval_loss_ema");
      row.eval_top1_ema = value("eval_top1_ema");
      row.eval_top5_ema = value("eval_top5_ema");
    }
    out.score[*epoch] = std::isfinite(*score) ? *score : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

std::string summary_header(bool validation, bool ema) {
  if (!validation) return kSummaryNoEvalHeader;
  return ema ? str(kSummaryHeader, ",", kSummaryEmaColumns) : std::string(kSummaryHeader);
}

std::string summary_csv(const std::string& header, const std::vector<std::string>& lines) {
  std::string csv = header + "\n";
  for (const auto& l : lines) csv += l + "\n";
  return csv;
}

}  // namespace hg::train
