// Shell quoting for suggested commands (see shell_quote.h).
#include "core/shell_quote.h"

#include <algorithm>
#include <cstring>

namespace hg {

namespace {

// Characters that stand for themselves anywhere in a word: no splitting, globbing, expansion or
// quoting. '~' is not one (a word starting with it is a home folder), nor is a non-ASCII byte.
bool plain(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != '\0' && std::strchr("@%+=:,./_-", c) != nullptr);  // (strchr finds the NUL too)
}

}  // namespace

std::string shell_quote(const std::string& path) {
  // "-x" read as an option by the program the command runs, "./-x" as the same file
  const std::string word = !path.empty() && path[0] == '-' ? "./" + path : path;
  if (!word.empty() && std::all_of(word.begin(), word.end(), plain)) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace hg
