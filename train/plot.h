// Training curves as a PNG, drawn by gnuplot (Debian gnuplot-nox; found on PATH at run time, so
// haargrad builds and trains without it). Four panels over epochs: train and eval loss; eval top-1
// (and the EMA's top-1 when summary.csv has it); learning rate; train img/s. Several runs are drawn
// in the same panels, one colour per run.
//
// Files, for an output FILE.png: FILE.dat (one run) or FILE.1.dat, FILE.2.dat, ... (one per run):
// whitespace-separated columns `epoch train_loss eval_loss eval_top1 eval_top1_ema lr
// train_img_per_sec` taken from each run's summary.csv by column name (NaN where a column is
// missing), FILE.gp (the gnuplot script: rerun or edit it) and FILE.png; FILE is cut short in the
// names of the .dat and .gp files where they would pass the file system's 255 bytes
// (io::with_fitted_suffix). Every file is written to a temporary name and renamed, so a reader
// never sees a half-written plot.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace hg::train {

/// The columns a plot data file holds, in order.
const std::vector<std::string>& plot_columns();

/// A CSV file with a header row: column name -> values (one per data row). Throws hg::Error naming
/// the file and line for a missing file, a row with another number of cells, or a cell that is not
/// a number.
std::map<std::string, std::vector<double>> read_csv_columns(const std::string& path);

/// True when a gnuplot executable is on PATH.
bool gnuplot_available();

struct PlotOptions {
  int width = 1280, height = 960;  ///< PNG size, pixels
  std::string title;               ///< "" = the run folder names
};

/// Draws the curves of the runs (folders holding summary.csv) into `out_png` (see the file
/// comment). A series without a finite value (a column of nan or inf: a diverged run's loss) is
/// left out, as one whose column is missing; `notes` (may be null) gets a line naming each such
/// summary.csv and column. Throws hg::Error for a run without summary.csv, a bad summary, no
/// gnuplot, or a gnuplot failure (with its output).
void plot_runs(const std::vector<std::string>& run_dirs, const std::string& out_png,
               const PlotOptions& opts = {}, std::vector<std::string>* notes = nullptr);

}  // namespace hg::train
