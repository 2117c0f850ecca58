// Layer-wise learning-rate decay groups (see layer_decay.h).
#include "train/layer_decay.h"

#include <cctype>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "core/error.h"
#include "core/parse_number.h"

namespace hg::train {
namespace {

// The number after `prefix` at the start of `s` and the rest after it ("stages.2.blocks" ->
// 2, ".blocks"); nullopt when `s` does not start so.
std::optional<std::pair<int64_t, std::string>> leading_index(const std::string& s,
                                                             const std::string& prefix) {
  if (s.rfind(prefix, 0) != 0) return std::nullopt;
  size_t end = prefix.size();
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
  const auto n = parse_decimal_int(s.substr(prefix.size(), end - prefix.size()));
  if (!n) return std::nullopt;
  return std::make_pair(*n, s.substr(end));
}

}  // namespace

int64_t convnext_num_layers(const std::vector<int64_t>& depths) {
  return 2 + std::accumulate(depths.begin(), depths.end(), int64_t{0});
}

int64_t convnext_layer_id(const std::string& name, const std::vector<int64_t>& depths) {
  const int64_t last = convnext_num_layers(depths) - 1;
  if (name.rfind("stem", 0) == 0) return 0;
  const auto stage = leading_index(name, "stages.");
  if (!stage || stage->first >= static_cast<int64_t>(depths.size())) return last;
  const auto [i, rest] = *stage;
  const int64_t before = 1 + std::accumulate(depths.begin(), depths.begin() + i, int64_t{0});
  if (rest.rfind(".downsample", 0) == 0) return before;  // joins the stage's first block
  const auto block = leading_index(rest, ".blocks.");
  if (!block || block->first >= depths[static_cast<size_t>(i)]) return last;
  return before + block->first;
}

std::vector<ParamGroup> param_groups_layer_decay(const std::vector<ParamRef>& params,
                                                 const std::vector<int64_t>& depths, double lr,
                                                 double weight_decay, double layer_decay) {
  HG_CHECK(layer_decay > 0 && layer_decay <= 1, "layer_decay must be in (0, 1], got ", layer_decay);
  const int64_t last = convnext_num_layers(depths) - 1;
  std::vector<ParamGroup> groups;
  std::map<std::pair<int64_t, bool>, size_t> index;  // (layer, decayed) -> group
  for (const ParamRef& p : params) {
    if (!p.trainable) continue;
    const int64_t layer = convnext_layer_id(p.name, depths);
    const bool decayed = !no_weight_decay(p);
    auto [it, added] = index.emplace(std::make_pair(layer, decayed), groups.size());
    if (added) {
      const double scale = std::pow(layer_decay, static_cast<double>(last - layer));
      groups.push_back(ParamGroup{{}, {}, lr * scale, decayed ? weight_decay : 0.0, scale});
    }
    groups[it->second].params.push_back(p.tensor);
    groups[it->second].names.push_back(p.name);
  }
  return groups;
}

}  // namespace hg::train
