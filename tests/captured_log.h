// The default logger's lines while a CapturedLog lives: tests read the warnings an operation
// says. The logger before it is put back when it goes, also when the test fails by exception.
#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

namespace hg::test {

class CapturedLog {
 public:
  CapturedLog() : saved_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_)));
  }
  ~CapturedLog() { spdlog::set_default_logger(saved_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  std::string text() const { return stream_.str(); }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> saved_;
};

}  // namespace hg::test
