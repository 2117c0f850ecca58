// The one output path of a training run: log lines (spdlog, also from loader threads and layers)
// and the progress bar go through Console, so a log line never garbles the bar.
//
// On a terminal the bar is redrawn in place ("\r", cleared line); when stdout is not a terminal
// (a pipe, a file, CI) there is no bar at all: the trainer prints a plain line every log_interval
// steps instead, and no bar characters ever reach the log.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include <spdlog/logger.h>

namespace hg::train {

class Console {
 public:
  /// `log_file` (may be empty) receives every log line too (never the bar).
  explicit Console(const std::string& log_file = "", bool force_plain = false);
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

 private:
  void draw_locked();
  bool terminal_;
  std::mutex mu_;
  bool bar_active_ = false;
  std::string title_, suffix_;
  int64_t total_ = 0, step_ = 0;
  std::chrono::steady_clock::time_point bar_start_;
  std::shared_ptr<spdlog::logger> previous_, logger_;
};

}  // namespace hg::train
