// Numbers from text (config values, command-line options): decimal only, whole text, in range.
// YAML and C++ streams also read "010" as octal 8, "0x10" as 16 and ".inf" / "nan"; a setting
// written by a person means none of these, so they are errors here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hg {

/// A decimal integer: an optional sign and digits only ("42", "-7", "+3", "007" = 7). Otherwise
/// nullopt, and `why` (when given) says what is wrong: "not a decimal integer" (e.g. "0x10", "1e3",
/// "2.0", "1_000", " 5") or "out of the 64-bit integer range".
std::optional<int64_t> parse_decimal_int(std::string_view text, std::string* why = nullptr);

/// A finite decimal number: [sign] digits [. digits] [e|E [sign] digits], or [sign] . digits [...]
/// ("0.1", "1e-3", "5", "-2.5E+3", ".5"). Otherwise nullopt and `why`: "not a decimal number"
/// (e.g. "0x1p3", ".inf", "nan", "1,5") or "out of the double range" (e.g. "1e400").
std::optional<double> parse_decimal_float(std::string_view text, std::string* why = nullptr);

}  // namespace hg
