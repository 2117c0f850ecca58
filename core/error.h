// haargrad::Error and the HG_CHECK family: every user-facing failure is an exception whose message
// names the thing that is wrong (op, shape, file, key). No fmt here: this header is also used by
// .cu files, which nvcc compiles as C++17 (fmt's consteval format strings break nvcc in C++20).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hg {

/// The one exception type haargrad throws for bad input or failed checks.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Concatenate anything streamable into a string: str("shape ", 3, "x", 4).
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// "[2, 3, 4]" for a shape or any vector of integers.
template <typename T>
std::string shape_str(const std::vector<T>& v) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
  return os.str();
}

}  // namespace hg

/// Throw hg::Error with the message built from the remaining arguments when `cond` is false.
#define HG_CHECK(cond, ...)                                 \
  do {                                                      \
    if (!(cond)) throw ::hg::Error(::hg::str(__VA_ARGS__)); \
  } while (0)
