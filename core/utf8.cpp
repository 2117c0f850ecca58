// UTF-8 checks (see utf8.h).
#include "core/utf8.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace hg {
namespace {

// The length of the valid UTF-8 sequence at s[i], or 0 when none starts there.
size_t sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b = byte(i);
  if (b < 0x80) return 1;
  // the lead byte gives the length and the allowed range of the second byte (which rules out
  // overlong forms, surrogates and code points above U+10FFFF)
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;  // a continuation byte, or a lead byte no valid sequence has
  }
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

// The code point of the valid n-byte sequence at s[i].
char32_t code_point(std::string_view s, size_t i, size_t n) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  if (n == 1) return byte(0);
  char32_t cp = byte(0) & (0x7F >> n);  // the lead byte's payload: 5, 4 or 3 bits
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (byte(k) & 0x3F);
  return cp;
}

}  // namespace

bool invisible_format(char32_t cp) {
  const auto in = [cp](char32_t lo, char32_t hi) { return cp >= lo && cp <= hi; };
  return cp == 0xAD || cp == 0x61C || cp == 0x180E || in(0x200B, 0x200F) || in(0x2028, 0x202E) ||
         in(0x2060, 0x2064) || in(0x2066, 0x206F) || cp == 0xFEFF || in(0xFFF9, 0xFFFB) ||
         cp == 0xE0001 || in(0xE0020, 0xE007F);
}

size_t invalid_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string utf8_shown(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_length(s, i);
    if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<uint8_t>(s[i]));
      out += hex;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  const auto hex = [&out](uint8_t b) {
    char text[8];
    std::snprintf(text, sizeof text, "\\x%02x", b);
    out += text;
  };
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_length(s, i);
    const auto b = static_cast<uint8_t>(s[i]);
    const bool c1 = n == 2 && b == 0xC2 && static_cast<uint8_t>(s[i + 1]) < 0xA0;
    if (n == 0 || c1) {  // an invalid byte, or a C1 control's two: each as \xHH
      const size_t bytes = std::max<size_t>(n, 1);
      for (size_t k = 0; k < bytes; ++k) hex(static_cast<uint8_t>(s[i + k]));
      i += bytes;
    } else if (n > 1 && invisible_format(code_point(s, i, n))) {
      char text[16];
      std::snprintf(text, sizeof text, "\\u{%04x}", static_cast<unsigned>(code_point(s, i, n)));
      out += text;
      i += n;
    } else if (b == '\\') {  // doubled: a name's backslash and n must not read as a line break
      out += "\\\\";
      ++i;
    } else if (b == '\n' || b == '\r' || b == '\t') {
      out += b == '\n' ? "\\n" : b == '\r' ? "\\r" : "\\t";
      ++i;
    } else if (b < 0x20 || b == 0x7F) {
      hex(b);
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace hg
