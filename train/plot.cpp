// Training curves through gnuplot (see plot.h).
#include "train/plot.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/utf8.h"
#include "train/summary.h"

namespace fs = std::filesystem;

namespace hg::train {
namespace {

// Whether `path` holds a whole PNG (its last chunk IEND with its fixed CRC), synced to the disk.
bool complete_png(const fs::path& path) {
  static const unsigned char kEnd[8] = {'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  unsigned char tail[8] = {};
  const off_t size = ::lseek(fd, 0, SEEK_END);
  const bool whole = size >= 8 && ::pread(fd, tail, 8, size - 8) == 8 &&
                     std::equal(tail, tail + 8, kEnd) && ::fsync(fd) == 0;
  ::close(fd);
  return whole;
}

// Runs argv (no shell), returns the exit status (-1: did not exit normally) and stdout + stderr.
int run_program(const std::vector<std::string>& argv, std::string* output) {
  int fds[2];
  HG_CHECK(::pipe(fds) == 0, "plot: pipe failed");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {  // child: only async-signal-safe calls until exec
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  HG_CHECK(pid > 0, "plot: fork failed");
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    output->append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double parse_cell(const std::string& cell, const std::string& path, int line,
                  const std::string& column) {
  if (cell.empty() || cell == "n/a" || cell == "nan" || cell == "NaN") return NAN;
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  HG_CHECK(end == cell.c_str() + cell.size(), path, " line ", line, ": column '", column,
           "' holds '", cell, "', not a number");
  return v;
}

// A gnuplot string: single-quoted, a quote written twice; but a single-quoted string cannot hold
// a control character (a newline in a run folder's name ended the command: "invalid command", no
// plot), so such a string is double-quoted, with \, " and each control character as a backslash
// escape (\ooo, which gnuplot reads back as the same byte). A backquote is \ooo there too: gnuplot
// runs the shell command between two backquotes anywhere on its line but in a single-quoted
// string (a folder named "x\n`rm ...`" ran its command).
std::string gp_quote(const std::string& s) {
  const auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; };
  if (std::none_of(s.begin(), s.end(), control)) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  }
  std::string out = "\"";
  for (char c : s) {
    if (control(c) || c == '`') {
      char octal[8];
      std::snprintf(octal, sizeof octal, "\\%03o", static_cast<unsigned char>(c));
      out += octal;
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out + "\"";
}

// A value gnuplot cannot place (NaN, and inf, which it read as undefined) is written as the
// missing value: a series of none but those failed the whole plot ("all points y value
// undefined!").
std::string format_value(double v) {
  if (!std::isfinite(v)) return "NaN";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// `notes` gets a line for each plotted column of `summary` that has rows but no finite value
// (a diverged run's inf, nan): its series is left out, and the user is told which and why.
void note_columns_without_values(const fs::path& summary,
                                 const std::map<std::string, std::vector<double>>& columns,
                                 std::vector<std::string>* notes) {
  if (!notes) return;
  for (const std::string& name : plot_columns()) {
    const auto it = columns.find(name);
    if (it == columns.end() || it->second.empty() ||
        std::any_of(it->second.begin(), it->second.end(),
                    [](double v) { return std::isfinite(v); }))
      continue;
    notes->push_back(
        str("plot: ", summary.string(), ": column '", name,
            "' holds no finite value (nan or inf in every row): its curve is left out"));
  }
}

// The data file of one run: plot_columns() in order, a '#' header line first. `has_ema` is set
// when the run has EMA evaluations; `valid` gets the 1-based columns with at least one finite
// value; `lr_not_positive` is set when an lr is <= 0 (lr 0: no place on a log scale).
std::string run_data(const fs::path& run_dir, bool* has_ema, double* max_epoch,
                     std::set<int>* valid, bool* lr_not_positive, std::vector<std::string>* notes) {
  const fs::path summary = run_dir / "summary.csv";
  // a run folder (run.json) whose first epoch has not finished yet has no summary.csv either
  HG_CHECK(fs::exists(summary), "plot: ", run_dir.string(), " holds no summary.csv (",
           fs::exists(run_dir / "run.json") ? "a run folder whose first epoch has not finished"
                                            : "is it a run folder?",
           ")");
  const auto columns = read_csv_columns(summary.string());
  HG_CHECK(columns.count("epoch"), "plot: ", summary.string(), " has no 'epoch' column");
  note_columns_without_values(summary, columns, notes);
  const size_t rows = columns.at("epoch").size();
  for (double e : columns.at("epoch"))
    if (std::isfinite(e)) *max_epoch = std::max(*max_epoch, e);
  if (auto lr = columns.find("lr"); lr != columns.end())
    for (double v : lr->second) *lr_not_positive = *lr_not_positive || v <= 0;
  if (auto ema = columns.find("eval_top1_ema"); ema != columns.end())
    for (double v : ema->second) *has_ema = *has_ema || std::isfinite(v);
  std::string out = "#";
  for (const std::string& c : plot_columns()) out += " " + c;
  out += "\n";
  for (size_t r = 0; r < rows; ++r) {
    std::string line;
    for (size_t c = 0; c < plot_columns().size(); ++c) {
      auto it = columns.find(plot_columns()[c]);
      const double v = it == columns.end() ? NAN : it->second[r];
      if (std::isfinite(v)) valid->insert(static_cast<int>(c) + 1);
      if (!line.empty()) line += ' ';
      line += format_value(v);
    }
    out += line + "\n";
  }
  return out;
}

// One panel: `plot` of column `col` (1-based in plot_columns) of every run, optionally a second
// one. A series is drawn only for the runs that have a value in its column (`valid[r]`: gnuplot
// fails on a series without one); a panel with nothing to draw says so instead.
std::string panel(const std::string& title, const std::string& ylabel,
                  const std::vector<fs::path>& data, const std::vector<std::string>& names,
                  const std::vector<std::set<int>>& valid,
                  const std::vector<std::pair<int, std::string>>& series, bool logscale) {
  std::string s = "set title " + gp_quote(title) + "\nset ylabel " + gp_quote(ylabel) + "\n";
  s += logscale ? "set logscale y\nset format y '%.0e'\n" : "unset logscale y\nset format y '%g'\n";
  std::string plots;
  for (size_t r = 0; r < data.size(); ++r)
    for (size_t k = 0; k < series.size(); ++k) {
      const auto& [col, what] = series[k];
      if (!valid[r].count(col)) continue;
      const std::string label = (data.size() > 1 ? names[r] + " " : std::string()) + what;
      plots += plots.empty() ? "plot " : ", \\\n     ";
      plots += gp_quote(fs::absolute(data[r]).string()) + " using 1:" + std::to_string(col) +
               " with linespoints lc " + std::to_string(r + 1) + " dt " + std::to_string(k + 1) +
               " pt " + std::to_string(k + 6) + " title " + gp_quote(label);
    }
  if (plots.empty())  // an empty frame with a note: keeps the 2 x 2 layout
    return s +
           "unset logscale y\nset format y '%g'\nset label 1 'no data' at graph 0.5, 0.5 center\n"
           "plot [0:1] [0:1] NaN notitle\nunset label 1\n";
  return s + plots + "\n";
}

}  // namespace

const std::vector<std::string>& plot_columns() {
  static const std::vector<std::string> cols = {
      "epoch", "train_loss", "eval_loss", "eval_top1", "eval_top1_ema", "lr", "train_img_per_sec"};
  return cols;
}

std::map<std::string, std::vector<double>> read_csv_columns(const std::string& path) {
  std::error_code ec;  // a folder opens as a stream that reads nothing: it was "an empty file"
  HG_CHECK(!std::filesystem::is_directory(path, ec), path, " is a folder, not a summary.csv file");
  std::ifstream f(path);
  HG_CHECK(f.good(), "cannot open ", path);
  std::string line;
  HG_CHECK(static_cast<bool>(std::getline(f, line)), path, ": empty file (expected a header row)");
  const std::vector<std::string> header = summary_cells(csv_header_line(line, path));
  std::map<std::string, std::vector<double>> out;
  for (const std::string& h : header) out[h];
  for (int n = 2; std::getline(f, line); ++n) {
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> cells = summary_cells(line);
    HG_CHECK(cells.size() == header.size(), path, " line ", n, ": ", cells.size(),
             " cells, the header has ", header.size());
    for (size_t c = 0; c < cells.size(); ++c)
      out[header[c]].push_back(parse_cell(cells[c], path, n, header[c]));
  }
  return out;
}

bool gnuplot_available() {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream ss(path);
  for (std::string dir; std::getline(ss, dir, ':');)
    if (!dir.empty() && ::access((fs::path(dir) / "gnuplot").c_str(), X_OK) == 0) return true;
  return false;
}

void plot_runs(const std::vector<std::string>& run_dirs, const std::string& out_png,
               const PlotOptions& opts, std::vector<std::string>* notes) {
  HG_CHECK(!run_dirs.empty(), "plot: no run folder given");
  HG_CHECK(opts.width >= 64 && opts.height >= 64, "plot: size ", opts.width, "x", opts.height,
           " is too small");
  HG_CHECK(gnuplot_available(), "plot: gnuplot is not on PATH (Debian package gnuplot-nox)");
  const fs::path png = out_png, stem = fs::path(out_png).replace_extension();
  // Each file is drawn from temporaries and takes its place only once the image is whole: a
  // failed gnuplot left the run's curves.gp and .dat rewritten beside the old curves.png.
  std::vector<fs::path> data, drawn_data;
  std::vector<std::string> names;
  std::vector<std::set<int>> valid(run_dirs.size());
  bool has_ema = false, lr_not_positive = false;
  double max_epoch = 1;
  for (size_t r = 0; r < run_dirs.size(); ++r) {
    // cut to fit NAME_MAX, as the PNG's name may be near it (the ".1.dat" of one was too long)
    data.push_back(io::with_fitted_suffix(
        stem.string(), run_dirs.size() == 1 ? std::string(".dat") : str(".", r + 1, ".dat")));
    drawn_data.push_back(io::temp_path(data.back().string()));
    io::write_file_atomic(drawn_data.back().string(), run_data(run_dirs[r], &has_ema, &max_epoch,
                                                               &valid[r], &lr_not_positive, notes));
    names.push_back(fs::path(run_dirs[r]).lexically_normal().filename().string());
    if (names.back().empty())
      names.back() = fs::path(run_dirs[r]).lexically_normal().parent_path().filename().string();
    names.back() = printable(names.back());  // a label of one line: "\n" shown, not obeyed
  }
  std::string title = opts.title;
  if (title.empty())
    for (size_t r = 0; r < names.size(); ++r) title += (r ? ", " : "") + names[r];
  // one per call: a plot beside the training's redraw must not collide; cut to fit NAME_MAX, as a
  // PNG named near that limit made gnuplot fail "File name too long"
  const fs::path tmp_png = io::temp_path(png.string());
  const fs::path script = io::with_fitted_suffix(stem.string(), ".gp");
  const fs::path tmp_script = io::temp_path(script.string());
  // the script that draws `datas` into `output`
  const auto script_text = [&](const std::vector<fs::path>& datas, const fs::path& output) {
    std::string gp =
        "# haargrad training curves (rerun: gnuplot " + script.filename().string() + ")\n";
    gp += "set terminal pngcairo size " + std::to_string(opts.width) + "," +
          std::to_string(opts.height) + " noenhanced font ',10'\n";
    gp += "set output " + gp_quote(output.string()) + "\n";
    gp += "set datafile missing 'NaN'\nset grid\nset key top right\nset xlabel 'epoch'\n";
    // whole epochs on the x axis, about ten ticks
    gp += "set xtics " +
          std::to_string(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(max_epoch / 10)))) +
          "\n";
    gp += "set multiplot layout 2,2 title " + gp_quote(title) + "\n";
    gp += panel("loss", "loss", datas, names, valid, {{2, "train"}, {3, "eval"}}, false);
    std::vector<std::pair<int, std::string>> top1 = {{4, "model"}};
    if (has_ema) top1.emplace_back(5, "EMA");
    gp += panel("top-1", "top-1 (%)", datas, names, valid, top1, false);
    // log-scaled, unless an lr is 0 (lr: 0, warmup_lr: 0): gnuplot drops such points on a log
    // axis, and fails on a series with none left ("all points y value undefined!")
    gp += panel("learning rate", "lr", datas, names, valid, {{6, "lr"}}, !lr_not_positive);
    gp += panel("throughput", "train img/s", datas, names, valid, {{7, "img/s"}}, false);
    gp += "unset multiplot\nset output\n";
    return gp;
  };
  // every failure below leaves the files beside the output as they were (a half-written or
  // unplaceable image would otherwise stay, one per epoch of a run)
  const auto give_up = [&](const std::string& why) {
    std::error_code ignored;
    for (const fs::path& p : drawn_data) fs::remove(p, ignored);
    fs::remove(tmp_script, ignored);
    fs::remove(tmp_png, ignored);
    throw Error(why);
  };
  io::write_file_atomic(tmp_script.string(), script_text(drawn_data, tmp_png));
  std::string output;
  const int rc = run_program({"gnuplot", tmp_script.string()}, &output);
  if (rc != 0 || !fs::exists(tmp_png))
    give_up(str("plot: gnuplot failed (exit status ", rc, ") drawing ", png.string(),
                output.empty() ? std::string() : ":\n" + output,
                output.empty()          ? "; "
                : output.back() == '\n' ? ""
                                        : "\n",
                "the previous image, ", script.filename().string(), " and data are unchanged"));
  // gnuplot exits 0 after a write that ran out of disk: only a whole PNG (its IEND chunk last),
  // on the disk, replaces the previous image
  if (!complete_png(tmp_png))
    give_up(str("plot: gnuplot wrote an incomplete PNG for ", png.string(),
                " (a full disk?); the previous image is unchanged"));
  std::error_code renamed;
  fs::rename(tmp_png, png, renamed);
  // e.g. a folder of that name: what stands at png's path is left as it was (a folder is no
  // image, so no "previous image")
  if (renamed)
    give_up(str("plot: cannot write '", png.string(), "': ", renamed.message(), " (renaming '",
                tmp_png.string(), "' to it); what is at that path is unchanged"));
  for (size_t r = 0; r < data.size(); ++r) {
    fs::rename(drawn_data[r], data[r], renamed);
    if (renamed)  // the image is in place; the script below would name data that is not
      give_up(str("plot: drew ", png.string(), " but cannot write '", data[r].string(),
                  "': ", renamed.message(), "; ", script.filename().string(), " is unchanged"));
  }
  io::sync_folder_of(png.string());  // the renames on the disk, as io::write_file_atomic's
  std::error_code ignored;
  fs::remove(tmp_script, ignored);
  // the script kept beside the image draws it again from anywhere (`gnuplot curves.gp`): its
  // output is the image itself and its data the files beside it
  std::vector<fs::path> kept_data;
  for (const fs::path& d : data) kept_data.push_back(fs::absolute(d));
  io::write_file_atomic(script.string(), script_text(kept_data, fs::absolute(png)));
}

}  // namespace hg::train
