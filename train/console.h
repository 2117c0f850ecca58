// The one output path of a training run: log lines (spdlog, also from loader threads and layers)
// and the progress bar go through Console, so a log line never garbles the bar.
//
// On a terminal the bar is redrawn in place ("\r", cleared line) and always fits the terminal's
// current width (read at every draw, so a resized window gets a fitting bar at the next step): it
// never wraps, so it never leaves stale lines behind. When the output is not a terminal (a pipe, a
// file, CI) there is no bar at all: the trainer prints a plain line every log_interval optimizer
// updates instead, and no bar characters ever reach the log.
//
// log.txt is appended through io::AppendFile (every write checked); if it cannot be written (disk
// full), the console says so once, naming the file and the error, and the run goes on.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include <spdlog/logger.h>

namespace hg::train {

/// What the bar shows.
struct BarState {
  std::string title;  ///< e.g. "epoch 3/12"
  int64_t step = 0;   ///< steps done (0..total)
  int64_t total = 0;
  double elapsed_seconds = 0;
  std::string suffix;  ///< free form, space-separated items, e.g. "loss 0.51 lr 0.001 123 img/s"
};

/// The bar as one line of at most `columns - 1` characters (a character in the last column makes
/// some terminals wrap), ASCII only. When space runs short it drops, in order: trailing suffix
/// items (two words at a time: "loss 0.51"), the times, the bar itself; the rest is cut.
/// `columns` < 2 gives "".
std::string format_bar(const BarState& state, int columns);

/// The width of the terminal on `fd` (TIOCGWINSZ), else $COLUMNS, else 80.
int terminal_columns(int fd);

class Console {
 public:
  /// `log_file` (may be empty) receives every log line too (never the bar); throws hg::Error naming
  /// it when it cannot be opened. `out` is the console (stdout; a test passes a pseudo-terminal).
  explicit Console(const std::string& log_file = "", bool force_plain = false,
                   std::FILE* out = stdout);
  ~Console();
  bool is_terminal() const { return terminal_; }

  /// Logs through spdlog's default logger (which this Console installs).
  void info(const std::string& line);
  /// Starts a bar of `total` steps for `title` (no-op when not a terminal).
  void start_bar(const std::string& title, int64_t total);
  /// Updates the bar: step (1-based), and a free-form suffix "loss 0.51 lr 1e-3 123 img/s".
  void update_bar(int64_t step, const std::string& suffix);
  /// Ends the bar (prints the final state on its own line).
  void end_bar();

  /// Used by the spdlog sink: writes a formatted log line above the bar.
  void write_line(const std::string& text);

  /// One line for log.txt alone, formatted as every log line there (the error that ends a run,
  /// which main prints on the console itself); nothing without a log file.
  void log_file_only(spdlog::level::level_enum level, const std::string& text);

 private:
  void draw_locked();
  std::FILE* out_;
  bool terminal_;
  std::mutex mu_;
  bool bar_active_ = false;
  BarState bar_;
  std::chrono::steady_clock::time_point bar_start_;
  std::shared_ptr<spdlog::logger> previous_, logger_;
  spdlog::sink_ptr file_sink_;  // log.txt's, when there is one
};

}  // namespace hg::train
