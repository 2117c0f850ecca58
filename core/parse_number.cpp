// Strict decimal number parsing (see parse_number.h).
#include "core/parse_number.h"

#include <charconv>
#include <cmath>

namespace hg {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Skips a run of digits at text[i]; returns how many there were.
size_t digits(std::string_view text, size_t& i) {
  const size_t start = i;
  while (i < text.size() && is_digit(text[i])) ++i;
  return i - start;
}

template <typename T>
std::optional<T> fail(std::string* why, const char* reason) {
  if (why) *why = reason;
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> parse_decimal_int(std::string_view text, std::string* why) {
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) ++i;
  const size_t first = i;
  if (digits(text, i) == 0 || i != text.size()) return fail<int64_t>(why, "not a decimal integer");
  // from_chars takes no '+'; keep the '-' so that the most negative value still fits.
  std::string_view body = text.substr(first);
  std::string signed_text(body);  // (not "-" + string: GCC 12 warns of a false -Wrestrict there)
  if (negative) signed_text.insert(signed_text.begin(), '-');
  int64_t v = 0;
  auto [end, ec] =
      std::from_chars(signed_text.data(), signed_text.data() + signed_text.size(), v, 10);
  if (ec == std::errc::result_out_of_range)
    return fail<int64_t>(why, "out of the 64-bit integer range");
  if (ec != std::errc() || end != signed_text.data() + signed_text.size())
    return fail<int64_t>(why, "not a decimal integer");
  return v;
}

std::optional<double> parse_decimal_float(std::string_view text, std::string* why) {
  size_t i = 0;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) ++i;
  const size_t mantissa_start = i;
  size_t n = digits(text, i);
  if (i < text.size() && text[i] == '.') {
    ++i;
    n += digits(text, i);
  }
  if (n == 0) return fail<double>(why, "not a decimal number");
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits(text, i) == 0) return fail<double>(why, "not a decimal number");
  }
  if (i != text.size()) return fail<double>(why, "not a decimal number");
  std::string_view body = text.substr(mantissa_start);
  double v = 0;
  auto [end, ec] =
      std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && !std::isfinite(v)))
    return fail<double>(why, "out of the double range");
  if (ec != std::errc() || end != body.data() + body.size())
    return fail<double>(why, "not a decimal number");
  return text[0] == '-' ? -v : v;
}

}  // namespace hg
