// See similar_names.h.
#include "core/similar_names.h"

#include <algorithm>
#include <utility>

namespace hg {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

namespace {
std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}
}  // namespace

std::vector<std::string> similar_names(const std::string& name,
                                       const std::vector<std::string>& candidates) {
  const size_t max_edits = name.size() <= 5 ? 1 : 1 + (name.size() - 2) / 4;
  std::vector<std::pair<size_t, std::string>> found;
  // a name in another case ("EPOCHS", "Weight_Decay") is no typo: case costs nothing
  const std::string lower = ascii_lower(name);
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(lower, ascii_lower(c));
    if (d <= max_edits) found.emplace_back(d, c);
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < found.size() && i < 3; ++i) out.push_back(found[i].second);
  return out;
}

}  // namespace hg
