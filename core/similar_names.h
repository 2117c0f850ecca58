// "Did you mean ...?" for a mistyped name: the candidates a few typos away from it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hg {

/// Edits (insert, delete, substitute; adjacent transposition counted once: "wieght" -> "weight"
/// is 1) between a and b.
size_t edit_distance(const std::string& a, const std::string& b);

/// The candidates close to `name`, best first, at most 3; empty when nothing is close. Close
/// means a few typos for the name's length: 1 up to 5 letters, then one more per 4 letters
/// ("lrr" -> "lr", "wieght_decay" -> "weight_decay", "trian" -> "train"; "aa" gets nothing). ASCII
/// case is ignored ("EPOCHS" -> "epochs").
std::vector<std::string> similar_names(const std::string& name,
                                       const std::vector<std::string>& candidates);

}  // namespace hg
