// Console: progress bar + spdlog sinks sharing one lock (see console.h).
#include "train/console.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/parse_number.h"

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
  void flush_() override {}

 private:
  Console* console_;
};

// spdlog sink appending to log.txt through io::AppendFile. A failed write is said once on the
// console (naming the file and the system error); later lines go to the console only.
class LogFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  LogFileSink(const std::string& path, Console* c) : file_(path), console_(c) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (failed_) return;
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    try {
      file_.append(std::string_view(buf.data(), buf.size()));
    } catch (const Error& e) {
      failed_ = true;
      console_->write_line(str("warning: ", e.what(), "; later log lines go to the console only"));
    }
  }
  void flush_() override {}

 private:
  io::AppendFile file_;
  Console* console_;
  bool failed_ = false;
};

std::string format_duration(double seconds) {
  const long s = static_cast<long>(std::max(0.0, seconds) + 0.5);
  char b[32];
  std::snprintf(b, sizeof b, "%ld:%02ld", s / 60, s % 60);
  return b;
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

std::string format_bar(const BarState& s, int columns) {
  if (columns < 2) return "";
  const size_t avail = static_cast<size_t>(columns) - 1;
  constexpr size_t kMinBar = 10, kMaxBar = 30;
  const double frac =
      s.total > 0 ? std::clamp(static_cast<double>(s.step) / static_cast<double>(s.total), 0.0, 1.0)
                  : 0.0;
  const double eta = s.step > 0 ? s.elapsed_seconds *
                                      static_cast<double>(std::max<int64_t>(s.total - s.step, 0)) /
                                      static_cast<double>(s.step)
                                : 0.0;
  const std::string counts = str(s.step, "/", s.total);
  const std::string times = format_duration(s.elapsed_seconds) + "<" + format_duration(eta);
  const std::vector<std::string> words = words_of(s.suffix);

  // title [bar] counts [times] [suffix words]: the longest version whose bar gets >= kMinBar.
  auto compose = [&](size_t n_words, bool with_times, size_t bar_width) {
    std::string bar(static_cast<size_t>(frac * static_cast<double>(bar_width)), '#');
    bar.resize(bar_width, '.');
    std::string line = s.title + " [" + bar + "] " + counts;
    if (with_times) line += " " + times;
    for (size_t i = 0; i < n_words; ++i) line += " " + words[i];
    return line;
  };
  for (bool with_times : {true, false}) {
    for (size_t n = words.size();; n -= std::min<size_t>(n, 2)) {
      if (!with_times && n > 0) continue;  // times go before the last suffix words
      const size_t others = compose(n, with_times, 0).size();
      if (others + kMinBar <= avail)
        return compose(n, with_times, std::min(kMaxBar, avail - others));
      if (n == 0) break;
    }
  }
  std::string line = s.title + " " + counts;  // no room for a bar
  if (line.size() > avail) line.resize(avail);
  return line;
}

int terminal_columns(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* env = std::getenv("COLUMNS"))
    if (auto v = parse_decimal_int(env); v && *v > 0 && *v < 100000) return static_cast<int>(*v);
  return 80;
}

Console::Console(const std::string& log_file, bool force_plain, std::FILE* out)
    : out_(out), terminal_(!force_plain && isatty(fileno(out))) {
  auto sink = std::make_shared<ConsoleSink>(this);
  sink->set_pattern("[%H:%M:%S] %^%l%$: %v");
  std::vector<spdlog::sink_ptr> sinks{sink};
  if (!log_file.empty()) {
    auto file = std::make_shared<LogFileSink>(log_file, this);
    file->set_pattern("[%Y-%m-%d %H:%M:%S.%e] %l: %v");
    sinks.push_back(file);
    file_sink_ = file;
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

void Console::log_file_only(spdlog::level::level_enum level, const std::string& text) {
  if (!file_sink_) return;
  file_sink_->log(spdlog::details::log_msg("haargrad", level, text));
  file_sink_->flush();
}

void Console::write_line(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bar_active_) std::fputs("\r\033[2K", out_);  // clear the bar, print the line, redraw
  std::fputs(text.c_str(), out_);
  std::fputc('\n', out_);
  if (bar_active_) draw_locked();
  std::fflush(out_);
}

void Console::start_bar(const std::string& title, int64_t total) {
  if (!terminal_) return;
  std::lock_guard<std::mutex> lock(mu_);
  bar_active_ = true;
  bar_ = BarState{title, 0, total, 0.0, ""};
  bar_start_ = std::chrono::steady_clock::now();
  draw_locked();
  std::fflush(out_);
}

void Console::update_bar(int64_t step, const std::string& suffix) {
  if (!terminal_) return;
  std::lock_guard<std::mutex> lock(mu_);
  bar_.step = step;
  bar_.suffix = suffix;
  std::fputs("\r\033[2K", out_);
  draw_locked();
  std::fflush(out_);
}

void Console::end_bar() {
  if (!terminal_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!bar_active_) return;
  std::fputs("\r\033[2K", out_);
  draw_locked();
  std::fputc('\n', out_);
  std::fflush(out_);
  bar_active_ = false;
}

void Console::draw_locked() {
  bar_.elapsed_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - bar_start_).count();
  // The width is read at every draw: a resized terminal gets a fitting bar at the next step.
  std::fputs(format_bar(bar_, terminal_columns(fileno(out_))).c_str(), out_);
}

}  // namespace hg::train
