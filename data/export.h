// Writes a dataset out as an ImageFolder tree of PNG files (<out>/<split>/<class>/<index>.png), e.g.
// Fashion-MNIST for a run that reads real image files.
#pragma once

#include <string>
#include <vector>

#include "data/dataset.h"

namespace hg::data {

/// Writes up to `limit_per_class` images of each class (0 = all) of `dataset`, in index order, to
/// <out_dir>/<split>/<class_dirs[label]>/<index, 5+ digits>.png. Class folder names must sort in
/// label order so ImageFolder reads the same labels back. Returns the number of files written.
/// The images are read in index order on the calling thread; several threads write them, each file
/// atomically (core/atomic_file.h). Throws hg::Error if class_dirs is shorter than num_classes, the
/// names do not sort in label order, or a file cannot be written (the first such in index order).
int64_t export_image_folder(const Dataset& dataset, const std::string& out_dir, const std::string& split,
                            const std::vector<std::string>& class_dirs, int64_t limit_per_class = 0);

/// "<label>_<name>" for each name: folder names that sort in label order (up to 10 classes).
std::vector<std::string> numbered_class_dirs(const std::vector<std::string>& names);

}  // namespace hg::data
