// Dataset -> ImageFolder of PNG files (see export.h).
#include "data/export.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace hg::data {

std::vector<std::string> numbered_class_dirs(const std::vector<std::string>& names) {
  const int digits = names.size() > 10 ? static_cast<int>(std::to_string(names.size() - 1).size()) : 1;
  std::vector<std::string> out;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string num = std::to_string(i);
    num.insert(0, static_cast<size_t>(digits) - num.size(), '0');  // zero-pad so they sort numerically
    out.push_back(num + "_" + names[i]);
  }
  return out;
}

int64_t export_image_folder(const Dataset& dataset, const std::string& out_dir, const std::string& split,
                            const std::vector<std::string>& class_dirs, int64_t limit_per_class) {
  namespace fs = std::filesystem;
  HG_CHECK(static_cast<int64_t>(class_dirs.size()) >= dataset.num_classes(), "export_image_folder: ",
           class_dirs.size(), " class folder names for ", dataset.num_classes(), " classes");
  HG_CHECK(std::is_sorted(class_dirs.begin(), class_dirs.end()),
           "export_image_folder: class folder names must sort in label order (ImageFolder sorts them)");
  HG_CHECK(limit_per_class >= 0, "export_image_folder: limit_per_class must be >= 0, got ", limit_per_class);
  for (const auto& name : class_dirs) {
    std::error_code ec;
    fs::create_directories(fs::path(out_dir) / split / name, ec);
    HG_CHECK(!ec, "export_image_folder: cannot create '", (fs::path(out_dir) / split / name).string(), "': ",
             ec.message());
  }
  std::vector<int64_t> written(class_dirs.size(), 0);
  int64_t total = 0;
  for (int64_t i = 0; i < dataset.size(); ++i) {
    Sample s = dataset.get(i);
    int64_t& count = written[static_cast<size_t>(s.label)];
    if (limit_per_class > 0 && count >= limit_per_class) continue;
    char name[32];
    std::snprintf(name, sizeof name, "%05lld.png", static_cast<long long>(i));
    write_png((fs::path(out_dir) / split / class_dirs[static_cast<size_t>(s.label)] / name).string(), s.image);
    ++count;
    ++total;
  }
  return total;
}

}  // namespace hg::data
