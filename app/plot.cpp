// `haargrad plot RUN_DIR [RUN_DIR ...] [--out FILE.png]`: training curves of one or several runs
// side by side (loss, top-1 and EMA top-1, learning rate, img/s per epoch), drawn with gnuplot.
#include <spdlog/spdlog.h>

#include <cctype>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/command.h"
#include "train/plot.h"
#include "train/run_folder.h"

namespace {

struct PlotArgs {
  std::vector<std::string> runs;
  std::string out;
  int width = 1280, height = 960;
  std::string title;
};

void run_plot(const PlotArgs& a) {
  hg::app::refuse_mpirun("plot");
  // a missing folder is no command-line mistake (exit status 1, as every missing file; CLI11's
  // check read "runs: Directory does not exist: X" with status 2)
  for (const std::string& dir : a.runs) {
    std::error_code ec;
    HG_CHECK(std::filesystem::is_directory(dir, ec), "plot: the run folder '", dir, "' ",
             std::filesystem::exists(dir, ec) ? "is not a folder" : "does not exist",
             " (give run folders, each holding summary.csv: output/train/NAME)");
  }
  // One run: its own curves.png; several: compare.png in the current folder unless --out says
  // (not curves.png: run from inside a run folder, that would replace the run's own plot).
  const std::string out =
      !a.out.empty()
          ? a.out
          : (a.runs.size() == 1 ? (std::filesystem::path(a.runs[0]) / "curves.png").string()
                                : "compare.png");
  if (!a.out.empty()) {
    hg::train::check_output_file(a.out, "plot: --out", "the plot");
    std::string ext = std::filesystem::path(a.out).extension().string();
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    HG_CHECK(
        ext == ".png", "plot: --out ", a.out,
        " must end in .png (gnuplot draws a PNG; its data and script go beside it as .dat, .gp)");
  }
  hg::train::PlotOptions opts;
  opts.width = a.width;
  opts.height = a.height;
  opts.title = a.title;
  std::vector<std::string> notes;  // series left out: said, so a missing curve is explained
  hg::train::plot_runs(a.runs, out, opts, &notes);
  for (const std::string& n : notes) spdlog::warn("{}", n);
  spdlog::info("plot: wrote {} ({} run{})", out, a.runs.size(), a.runs.size() == 1 ? "" : "s");
}

}  // namespace

HG_REGISTER_COMMAND([](CLI::App& root) {
  auto args = std::make_shared<PlotArgs>();
  CLI::App* cmd =
      root.add_subcommand("plot",
                          "haargrad plot RUN_DIR [RUN_DIR ...] [--out FILE.png] [--width W] "
                          "[--height H]\n"
                          "Draw training curves (train/eval loss, top-1 and EMA top-1, lr, img/s "
                          "per epoch) of one or more run "
                          "folders into a PNG with gnuplot (Debian package gnuplot-nox)");
  cmd->add_option("runs", args->runs, "run folders (each holding summary.csv)")->required();
  cmd->add_option(
      "--out", args->out,
      "output PNG (default: RUN_DIR/curves.png for one run, ./compare.png for several)");
  cmd->add_option("--width", args->width, "PNG width, pixels")
      ->capture_default_str()
      ->check(CLI::Range(64, 10000));
  cmd->add_option("--height", args->height, "PNG height, pixels")
      ->capture_default_str()
      ->check(CLI::Range(64, 10000));
  cmd->add_option("--title", args->title, "plot title (default: the run folder names)");
  cmd->callback([args] { run_plot(*args); });
});
