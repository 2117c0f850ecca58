// `haargrad export-png`: writes Fashion-MNIST as an ImageFolder of PNG files (DIR/train/<class>/ and
// DIR/val/<class>/), so image-folder loading can be run on real image files.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <vector>

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

// An earlier export's staging folder (".export-png-PID" in --out, left by one that was stopped
// half-way): ours by its name, so it does not make --out "not empty" and is cleared.
bool staging_folder(const std::filesystem::path& p) {
  return p.filename().string().rfind(".export-png-", 0) == 0;
}

void run_export(const ExportArgs& a) {
  namespace fs = std::filesystem;
  // A folder of an earlier export would keep its other images: a training run reads them all.
  std::error_code ec;
  // '' is no folder to the checks below (exists('') is false) but the writes made train/ and val/
  // in the working folder, beside its files
  HG_CHECK(!a.out.empty(), "export-png: --out is empty; give a new or an empty folder");
  HG_CHECK(!fs::exists(a.out, ec) || fs::is_directory(a.out, ec), "export-png: --out ", a.out,
           " is a file; give a new or an empty folder");
  std::vector<fs::path> stale;  // earlier exports' staging folders
  if (fs::is_directory(a.out, ec))
    for (const fs::directory_entry& e : fs::directory_iterator(a.out, ec)) {
      HG_CHECK(staging_folder(e.path()), "export-png: --out ", a.out,
               " is not empty (the images of an earlier export there would "
               "stay beside the new ones and be trained on); give a new or an empty folder");
      stale.push_back(e.path());
    }
  // Folder names "0_t-shirt_top" ... "9_ankle_boot" sort in label order, so labels survive the trip.
  const auto dirs = hg::data::numbered_class_dirs(hg::data::fashion_mnist_classes());
  // both splits read before the first file is written: a missing test split found after the
  // minutes of the train split's export left a half export, which a rerun then refuses (not empty)
  const hg::data::IdxDataset train(a.data_dir, "train", 1), test(a.data_dir, "test", 1);
  const std::pair<const hg::data::IdxDataset*, const char*> splits[] = {{&train, "train"},
                                                                        {&test, "val"}};
  // and their labels checked: a label past Fashion-MNIST's ten classes was found by the writer
  // of its split, after the train split's export ("10 class folder names for 58 classes")
  const int64_t classes = static_cast<int64_t>(dirs.size());
  for (const auto& [ds, folder] : splits)
    HG_CHECK(ds->num_classes() <= classes, "export-png: the ",
             folder == std::string("val") ? "test" : "train", " split of ", a.data_dir,
             " is no Fashion-MNIST split, whose labels are 0 to ", classes - 1,
             ds->labels_at_or_above(classes), "; nothing was written");
  for (const fs::path& p : stale) {
    spdlog::info("export-png: removing {}, an earlier export stopped half-way", p.string());
    fs::remove_all(p);
  }
  // Written into a staging folder inside --out, whose train/ and val/ then move into place: an
  // export stopped half-way (Ctrl-C) left a partial train/ in --out, which a rerun refused as not
  // empty; now it leaves only the staging folder, which a rerun clears. Inside --out, not beside
  // it: --out may be '.', a link, or a mount point, and stays the user's folder.
  fs::create_directories(a.out);
  const fs::path staging =
      fs::path(a.out) / (".export-png-" + std::to_string(static_cast<long long>(getpid())));
  int64_t written[2] = {0, 0};
  try {
    for (size_t i = 0; i < 2; ++i)
      written[i] = hg::data::export_image_folder(*splits[i].first, staging.string(),
                                                 splits[i].second, dirs, a.limit_per_class);
    for (const auto& [ds, folder] : splits) fs::rename(staging / folder, fs::path(a.out) / folder);
    fs::remove(staging);
  } catch (...) {  // a full disk, say: no partial staging tree is left for the next run to find
    fs::remove_all(staging, ec);
    throw;
  }
  for (size_t i = 0; i < 2; ++i)
    spdlog::info("export-png: wrote {} PNG files to {}", written[i],
                 (fs::path(a.out) / splits[i].second).string());
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
