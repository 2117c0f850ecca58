// Commands the program suggests in its messages ("go on with `haargrad train A --resume B`") are
// meant to be pasted into a shell: a path in them must come back as the same one word.
#pragma once

#include <string>

namespace hg {

/// `path` as one word of a POSIX shell command: unchanged when it holds only characters no shell
/// treats specially (ASCII letters and digits, and @%+=:,./_-), else in single quotes, with each '
/// in it written as '\'' (close, an escaped quote, reopen); "" is ''. As Python's shlex.quote,
/// except that a relative path starting with '-' gets "./" in front ("-runs/x" is "./-runs/x"):
/// the same file, which the command does not read as an option.
std::string shell_quote(const std::string& path);

}  // namespace hg
