// `haargrad export-png`: writes Fashion-MNIST as an ImageFolder of PNG files (DIR/train/<class>/ and
// DIR/val/<class>/), so image-folder loading can be run on real image files.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <system_error>

#include <memory>
#include <string>

#include "app/command.h"
#include "data/export.h"
#include "data/idx_dataset.h"

namespace {

struct ExportArgs {
  std::string out;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t limit_per_class = 0;
};

void run_export(const ExportArgs& a) {
  // A folder of an earlier export would keep its other images: a training run reads them all.
  std::error_code ec;
  // '' is no folder to the checks below (exists('') is false) but the writes made train/ and val/
  // in the working folder, beside its files
  HG_CHECK(!a.out.empty(), "export-png: --out is empty; give a new or an empty folder");
  HG_CHECK(!std::filesystem::exists(a.out, ec) || std::filesystem::is_directory(a.out, ec),
           "export-png: --out ", a.out, " is a file; give a new or an empty folder");
  HG_CHECK(!std::filesystem::exists(a.out, ec) || std::filesystem::is_empty(a.out, ec),
           "export-png: --out ", a.out,
           " is not empty (the images of an earlier export there would "
           "stay beside the new ones and be trained on); give a new or an empty folder");
  // Folder names "0_t-shirt_top" ... "9_ankle_boot" sort in label order, so labels survive the trip.
  const auto dirs = hg::data::numbered_class_dirs(hg::data::fashion_mnist_classes());
  // both splits read before the first file is written: a missing test split found after the
  // minutes of the train split's export left a half export, which a rerun then refuses (not empty)
  const hg::data::IdxDataset train(a.data_dir, "train", 1), test(a.data_dir, "test", 1);
  const std::pair<const hg::data::IdxDataset*, const char*> splits[] = {{&train, "train"},
                                                                        {&test, "val"}};
  for (const auto& [ds, folder] : splits) {
    const int64_t n = hg::data::export_image_folder(*ds, a.out, folder, dirs, a.limit_per_class);
    spdlog::info("export-png: wrote {} PNG files to {}/{}", n, a.out, folder);
  }
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = root.add_subcommand("export-png", "Write Fashion-MNIST as DIR/{train,val}/<class>/<i>.png (train on it with --dataset image_folder --data-dir DIR --val-split val --num-classes 10)");
  cmd->add_option("--out", args->out, "output folder")->required();
  cmd->add_option("--limit-per-class", args->limit_per_class,
                  "images per class and split (0 = all)")
      ->check(hg::app::at_least(0));
  cmd->add_option("--data-dir", args->data_dir, "folder of the Fashion-MNIST IDX files")->capture_default_str();
  cmd->callback([args] { run_export(*args); });
});
