// Commands the program suggests in its messages ("go on with `haargrad train A --resume B`") are
// meant to be pasted into a shell: a path in them must come back as the same one word.
#pragma once

#include <string>

namespace hg {

/// `word` as one word of a POSIX shell command: unchanged when it holds only characters no shell
/// treats specially (ASCII letters and digits, and @%+=:,./_-), else in single quotes, with each '
/// in it written as '\'' (close, an escaped quote, reopen); "" is ''. As Python's shlex.quote.
std::string shell_quote(const std::string& word);

}  // namespace hg
