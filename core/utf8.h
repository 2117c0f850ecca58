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
/// \xHH of their two bytes. A backslash is written \\, so that what it writes reads one way only
/// (a name holding a backslash and an n is not one holding a line break). The invisible format
/// characters (invisible_format) are written \u{XXXX}: a bidi override (U+202E) reorders the
/// rest of the line as shown, and a zero-width one hides in a name. Everything else, non-ASCII
/// letters included, is kept.
std::string printable(std::string_view s);

/// Whether printable writes code point `cp` as \u{XXXX}: the bidi embeddings, overrides and
/// isolates (U+202A..U+202E, U+2066..U+2069), the other invisible format characters (soft hyphen
/// U+00AD, U+061C, U+180E, the zero-width ones and marks U+200B..U+200F, U+2060..U+2064,
/// U+206A..U+206F, U+FEFF, U+FFF9..U+FFFB, the tags U+E0001 and U+E0020..U+E007F) and the line and
/// paragraph separators U+2028, U+2029 (which some viewers break a line at).
bool invisible_format(char32_t cp);

}  // namespace hg
