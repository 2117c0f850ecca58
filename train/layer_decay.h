// Layer-wise learning-rate decay (config key layer_decay; timm's param_groups_layer_decay, as
// fine-tuning recipes use it): each parameter's learning rate is the schedule's times
//   lr_scale = layer_decay ^ (last_layer - layer_id(name)),
// so the head learns at the full rate and every layer below it at a geometrically smaller one.
// Layer ids follow timm's ConvNeXt group_matcher (fine grouping), which WTConvNeXt shares:
//   stem.*                       -> 0
//   stages.i.blocks.j.*          -> 1 + (blocks of stages 0..i-1) + j
//   stages.i.downsample.*        -> the id of stages.i.blocks.0 (it matches the same ordinal)
//   anything else (head.norm, head.fc) -> last_layer = 1 + (all blocks)
// Weight decay splits each layer's group further, by the rule of param_groups_weight_decay.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "layers/module.h"
#include "train/optimizer.h"

namespace hg::train {

/// timm's layer id of parameter `name` in a ConvNeXt with `depths` blocks per stage (see above).
int64_t convnext_layer_id(const std::string& name, const std::vector<int64_t>& depths);

/// Layers of a ConvNeXt with `depths`: stem, every block, head (= last layer id + 1).
int64_t convnext_num_layers(const std::vector<int64_t>& depths);

/// One group per (layer, decay / no decay), in the order the parameters first reach them (timm's),
/// each with lr = lr * lr_scale and its lr_scale; fixed buffers are left out. Throws hg::Error for
/// a layer_decay outside (0, 1].
std::vector<ParamGroup> param_groups_layer_decay(const std::vector<ParamRef>& params,
                                                 const std::vector<int64_t>& depths, double lr,
                                                 double weight_decay, double layer_decay);

}  // namespace hg::train
