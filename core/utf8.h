// UTF-8 checks for text that goes into JSON (safetensors headers, the results files): JSON holds
// UTF-8 only, and nlohmann::json throws on any other byte when it writes, so a Linux path in
// another encoding (a Latin-1 "caf\xe9") must be named before the work whose result it would lose.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hg {

/// The offset of the first byte of `s` that starts no valid UTF-8 sequence (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or std::string_view::npos when all of it is.
size_t invalid_utf8_at(std::string_view s);

/// `s` for a message: every byte of an invalid sequence written as \xHH ("caf\xe9"), the rest as
/// is.
std::string utf8_shown(std::string_view s);

/// `s` (a file name, a path) for a terminal or log line: as utf8_shown, and every control
/// character written out too, so that a name cannot break the line or drive the terminal (a "\n"
/// faking a log line, an ESC sequence): \n, \r and \t as such, the other C0 bytes and DEL as
/// \xHH, and the C1 controls U+0080..U+009F (which some terminals obey; 0x9b is a CSI) as the
/// \xHH of their two bytes. Everything else, non-ASCII letters included, is kept.
std::string printable(std::string_view s);

}  // namespace hg
