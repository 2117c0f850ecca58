// Console: progress bar + spdlog sink sharing one lock (see console.h).
#include "train/console.h"

#include <unistd.h>

#include <cstdio>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

namespace hg::train {
namespace {

// spdlog sink that hands each formatted line to the Console.
class ConsoleSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ConsoleSink(Console* c) : console_(c) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    std::string line(buf.data(), buf.size());
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    console_->write_line(line);
  }
  void flush_() override { std::fflush(stdout); }

 private:
  Console* console_;
};

std::string format_duration(double seconds) {
  const int s = static_cast<int>(seconds + 0.5);
  char b[32];
  std::snprintf(b, sizeof b, "%d:%02d", s / 60, s % 60);
  return b;
}

}  // namespace

Console::Console(const std::string& log_file, bool force_plain)
    : terminal_(!force_plain && isatty(STDOUT_FILENO)) {
  auto sink = std::make_shared<ConsoleSink>(this);
  sink->set_pattern("[%H:%M:%S] %^%l%$: %v");
  std::vector<spdlog::sink_ptr> sinks{sink};
  if (!log_file.empty()) {
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file, false);
    file->set_pattern("[%Y-%m-%d %H:%M:%S.%e] %l: %v");
    sinks.push_back(file);
  }
  logger_ = std::make_shared<spdlog::logger>("haargrad", sinks.begin(), sinks.end());
  logger_->flush_on(spdlog::level::info);
  previous_ = spdlog::default_logger();
  spdlog::set_default_logger(logger_);
}

Console::~Console() {
  end_bar();
  logger_->flush();
  spdlog::set_default_logger(previous_);
}

void Console::info(const std::string& line) { spdlog::info("{}", line); }

void Console::write_line(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bar_active_) std::fputs("\r\033[2K", stdout);  // clear the bar, print the line, redraw
  std::fputs(text.c_str(), stdout);
  std::fputc('\n', stdout);
  if (bar_active_) draw_locked();
  std::fflush(stdout);
}

void Console::start_bar(const std::string& title, int64_t total) {
  if (!terminal_) return;
  std::lock_guard<std::mutex> lock(mu_);
  bar_active_ = true;
  title_ = title;
  total_ = total;
  step_ = 0;
  suffix_.clear();
  bar_start_ = std::chrono::steady_clock::now();
  draw_locked();
  std::fflush(stdout);
}

void Console::update_bar(int64_t step, const std::string& suffix) {
  if (!terminal_) return;
  std::lock_guard<std::mutex> lock(mu_);
  step_ = step;
  suffix_ = suffix;
  std::fputs("\r\033[2K", stdout);
  draw_locked();
  std::fflush(stdout);
}

void Console::end_bar() {
  if (!terminal_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!bar_active_) return;
  std::fputs("\r\033[2K", stdout);
  draw_locked();
  std::fputc('\n', stdout);
  std::fflush(stdout);
  bar_active_ = false;
}

void Console::draw_locked() {
  const int width = 30;
  const double frac = total_ > 0 ? static_cast<double>(step_) / static_cast<double>(total_) : 0.0;
  const int filled = static_cast<int>(frac * width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - bar_start_).count();
  const double eta = step_ > 0 ? elapsed * static_cast<double>(total_ - step_) / static_cast<double>(step_) : 0.0;
  std::fprintf(stdout, "%s [%s] %lld/%lld %s<%s %s", title_.c_str(), bar.c_str(), static_cast<long long>(step_),
               static_cast<long long>(total_), format_duration(elapsed).c_str(), format_duration(eta).c_str(),
               suffix_.c_str());
}

}  // namespace hg::train
