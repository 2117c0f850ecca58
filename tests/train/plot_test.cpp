// Training curves: summary.csv read by column name, the data file gnuplot plots (it matches
// summary.csv), and a PNG of the requested size. gnuplot comes with scripts/install-deps.sh
// (gnuplot-nox); without it these tests fail and say so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>

#include "core/error.h"
#include "train/config.h"
#include "train/plot.h"
#include "train/summary.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace hg;

namespace {
class PlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("hg_plot_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path run(const std::string& name, const std::string& csv) {
    fs::create_directories(root_ / name);
    std::ofstream(root_ / name / "summary.csv") << csv;
    return root_ / name;
  }
  fs::path root_;
};

const char* kSummary =
    "epoch,train_loss,eval_loss,eval_top1,eval_top5,lr,train_img_per_sec,peak_memory_mib,eval_loss_"
    "ema,"
    "eval_top1_ema,eval_top5_ema\n"
    "1,2.25,2.0,31.5,80,0.001,1200.5,50.1,2.1,28,79\n"
    "2,1.5,1.25,55.25,90,0.0005,1250,50.1,1.4,52.5,91\n"
    "3,1.125,1.0,61,95,1e-05,1249.5,50.1,1.1,60.5,94\n";

}  // namespace

// PNG: 8-byte signature, then the IHDR chunk whose data starts with width and height (big endian).
std::pair<uint32_t, uint32_t> png_size(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  unsigned char b[24] = {};
  f.read(reinterpret_cast<char*>(b), 24);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(b) + 1, 3), "PNG");
  EXPECT_EQ(std::string(reinterpret_cast<char*>(b) + 12, 4), "IHDR");
  auto be = [&](int o) {
    return uint32_t(b[o]) << 24 | uint32_t(b[o + 1]) << 16 | uint32_t(b[o + 2]) << 8 | b[o + 3];
  };
  return {be(16), be(20)};
}

// Rows of a plot data file (the '#' header line skipped).
std::vector<std::vector<double>> data_rows(const fs::path& p) {
  std::ifstream f(p);
  std::vector<std::vector<double>> rows;
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::vector<double> row;
    for (std::string cell; in >> cell;) row.push_back(cell == "NaN" ? NAN : std::stod(cell));
    rows.push_back(row);
  }
  return rows;
}

TEST_F(PlotTest, ReadsSummaryColumnsByName) {
  const auto cols = train::read_csv_columns((run("a", kSummary) / "summary.csv").string());
  EXPECT_EQ(cols.at("epoch"), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(cols.at("eval_top1_ema"), (std::vector<double>{28, 52.5, 60.5}));
  EXPECT_EQ(cols.at("lr")[2], 1e-5);
  // the same file saved with CR LF line ends (a spreadsheet on Windows): every value read, none
  // ending in a CR that made it "not a number"
  std::string crlf;
  for (char ch : std::string(kSummary))
    crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
  const auto cr_cols = train::read_csv_columns((run("crlf", crlf) / "summary.csv").string());
  EXPECT_EQ(cr_cols, cols);
  const train::SummaryLines kept = train::read_summary((root_ / "crlf/summary.csv").string(), 2);
  ASSERT_EQ(kept.lines.size(), 2u);
  EXPECT_EQ(kept.lines[1].find('\r'), std::string::npos) << "a resume rewrites the rows with LF";
  // an empty file is no rows (a resume went on with one before), a line of garbage no header
  EXPECT_TRUE(train::read_summary((run("empty", "") / "summary.csv").string(), 5).lines.empty());
  const fs::path junk = run("junk", "\xb6\xde\x01\n1,2\n") / "summary.csv";
  try {
    train::read_summary(junk.string(), 5);
    ADD_FAILURE() << "garbage read as a summary";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 1 is not the summary's header"), std::string::npos)
        << e.what();
  }
  const fs::path bad = run("bad", "epoch,lr\n1,0.1\n2,fast\n");
  try {
    train::read_csv_columns((bad / "summary.csv").string());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'lr'"), std::string::npos) << e.what();
  }
  // a folder named summary.csv was "an empty file (expected a header row)"
  const fs::path folder = run("folder", "") / "summary.csv";
  fs::remove(folder);
  fs::create_directories(folder);
  try {
    train::read_csv_columns(folder.string());
    ADD_FAILURE() << "a folder read as a summary";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(folder.string() + " is a folder"), std::string::npos)
        << e.what();
  }
}

// RFC 4180: a cell in double quotes is read without them. A summary.csv saved by a spreadsheet
// that quotes every cell ("epoch","train_loss",...) was read with its quotes: its columns were
// named '"epoch"', and the plot said it had no 'epoch' column (a resume: no score). The text a CSV
// writer quotes (csv_cell: commas, quotes, CR, LF) reads back as it was.
TEST_F(PlotTest, QuotedCellsReadAsRfc4180Says) {
  std::string quoted;  // kSummary with every cell quoted, CR LF line ends
  std::istringstream in(kSummary);
  for (std::string row; std::getline(in, row);) {
    std::istringstream cells(row);
    std::string out;
    for (std::string c; std::getline(cells, c, ',');) {
      out += out.empty() ? "\"" : ",\"";
      out += c;
      out += '"';
    }
    quoted += out;
    quoted += "\r\n";
  }
  const auto plain = train::read_csv_columns((run("plain", kSummary) / "summary.csv").string());
  const auto cols = train::read_csv_columns((run("quoted", quoted) / "summary.csv").string());
  EXPECT_EQ(cols, plain);
  const train::SummaryLines a = train::read_summary((root_ / "plain/summary.csv").string(), 3);
  const train::SummaryLines b = train::read_summary((root_ / "quoted/summary.csv").string(), 3);
  ASSERT_EQ(b.rows.size(), 3u);
  EXPECT_EQ(b.score, a.score);  // ranked by eval_top1_ema, found by its name
  EXPECT_EQ(b.rows[2].eval_top1, 61);
  EXPECT_TRUE(b.rows[2].has_ema);

  const std::vector<std::string> texts = {"plain",      "",         "a,b", "say \"hi\"",
                                          "two\nlines", "cr\ronly", "\"",  "trailing,"};
  std::string line;
  for (const std::string& t : texts) {
    if (&t != &texts.front()) line += ',';
    line += train::csv_cell(t);
  }
  EXPECT_EQ(train::summary_cells(line), texts) << line;
  EXPECT_EQ(train::csv_cell("cr\ronly"), "\"cr\ronly\"");
  EXPECT_EQ(train::csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(train::summary_cells("1,,3,"), (std::vector<std::string>{"1", "", "3", ""}));
  EXPECT_TRUE(train::summary_cells("").empty());
}

// Excel's "CSV UTF-8" starts the file with a byte-order mark (EF BB BF): the header's first name
// was read as "\xef\xbb\xbfepoch", so the plot found no 'epoch' column and a resume's
// summary.csv failed on its rows' epochs. A leading mark is skipped.
TEST_F(PlotTest, AByteOrderMarkBeforeTheHeaderIsSkipped) {
  const std::string bom = std::string("\xef\xbb\xbf") + kSummary;
  const auto plain = train::read_csv_columns((run("plain", kSummary) / "summary.csv").string());
  EXPECT_EQ(train::read_csv_columns((run("bom", bom) / "summary.csv").string()), plain);
  const train::SummaryLines a = train::read_summary((root_ / "plain/summary.csv").string(), 3);
  const train::SummaryLines b = train::read_summary((root_ / "bom/summary.csv").string(), 3);
  ASSERT_EQ(b.rows.size(), 3u);
  EXPECT_EQ(b.score, a.score);
  EXPECT_EQ(b.rows[0].epoch, 1);
  EXPECT_EQ(train::without_bom("\xef\xbb\xbf"
                               "epoch,lr"),
            "epoch,lr");
  EXPECT_EQ(train::without_bom("epoch,\xef\xbb\xbf"), "epoch,\xef\xbb\xbf");  // only a leading one
}

// A summary.csv saved as UTF-16 (a spreadsheet's "Unicode text"): the resume's and the plot's
// messages came cut at the first NUL byte, blaming line 2. Both now name the encoding.
TEST_F(PlotTest, AUtf16SummaryIsNamedAsSuch) {
  std::string utf16 = "\xff\xfe";  // UTF-16 LE: each ASCII byte, then a NUL
  for (const char c : std::string(kSummary)) utf16 += std::string{c, '\0'};
  const std::string path = (run("u16", utf16) / "summary.csv").string();
  for (const auto& read : std::vector<std::function<void()>>{
           [&] { train::read_summary(path, 3); }, [&] { train::read_csv_columns(path); }}) {
    try {
      read();
      ADD_FAILURE() << "no throw";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path + " is not UTF-8 text: it starts with a UTF-16 byte-order mark"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find("CSV UTF-8"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\0'), std::string::npos) << msg;
    }
  }
  // without the mark, the NUL bytes say it
  const std::string bare = (run("u16bare", utf16.substr(2)) / "summary.csv").string();
  EXPECT_THROW(
      {
        try {
          train::read_summary(bare, 3);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("NUL bytes"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

TEST_F(PlotTest, PngOfTheRightSizeAndDataMatchingTheSummary) {
  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  const fs::path dir = run("run1", kSummary);
  train::PlotOptions opts;
  opts.width = 800;
  opts.height = 600;
  train::plot_runs({dir.string()}, (dir / "curves.png").string(), opts);
  EXPECT_EQ(png_size(dir / "curves.png"), std::make_pair(800u, 600u));
  EXPECT_TRUE(fs::exists(dir / "curves.gp"));
  EXPECT_FALSE(fs::exists(dir / "curves.png.tmp"));
  // epoch train_loss eval_loss eval_top1 eval_top1_ema lr train_img_per_sec, from summary.csv
  const auto rows = data_rows(dir / "curves.dat");
  const auto cols = train::read_csv_columns((dir / "summary.csv").string());
  ASSERT_EQ(rows.size(), 3u);
  for (size_t r = 0; r < 3; ++r) {
    ASSERT_EQ(rows[r].size(), train::plot_columns().size());
    for (size_t c = 0; c < rows[r].size(); ++c)
      EXPECT_DOUBLE_EQ(rows[r][c], cols.at(train::plot_columns()[c])[r])
          << train::plot_columns()[c];
  }
}

// A run without validation (val_split '') writes no eval columns, as timm's summary.csv without
// eval metrics: a resume reads its rows by the header's names (it read eval_top1 as the fourth
// cell, here img/s, and ranked the checkpoints by it), and the curves draw its train loss with an
// empty top-1 panel (beside a run with validation too).
TEST_F(PlotTest, ASummaryWithoutEvalColumnsReadsAndPlots) {
  const std::string csv =
      std::string(train::kSummaryNoEvalHeader) +
      "\n1,2.25,0.001,1200.5,50.1\n2,1.5,0.0005,1250.0,50.1\n3,1.75,1e-05,1249.5,50.1\n";
  const fs::path dir = run("noval", csv);
  const train::SummaryLines kept = train::read_summary((dir / "summary.csv").string(), 2);
  ASSERT_EQ(kept.rows.size(), 2u);
  EXPECT_EQ(kept.lines[1], "2,1.5,0.0005,1250.0,50.1");
  EXPECT_EQ(kept.rows[1].train_loss, 1.5);
  EXPECT_EQ(kept.rows[1].lr, 0.0005);
  EXPECT_EQ(kept.rows[1].img_per_sec, 1250);
  EXPECT_TRUE(std::isnan(kept.rows[1].eval_top1));
  // the checkpoints' score is the train loss
  EXPECT_EQ(kept.score, (std::map<int64_t, double>{{1, 2.25}, {2, 1.5}}));
  // the file the trainer writes is the same text
  train::SummaryRow row{2, 1.5, NAN, NAN, NAN, 0.0005, 1250, 50.1};
  row.has_eval = false;
  EXPECT_EQ(train::format_summary_row(row), kept.lines[1]);
  EXPECT_EQ(train::summary_header(false, true), train::kSummaryNoEvalHeader);

  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  const fs::path with_eval = run("val", kSummary);
  train::plot_runs({dir.string()}, (dir / "curves.png").string());
  EXPECT_TRUE(fs::exists(dir / "curves.png"));
  for (const std::vector<double>& r : data_rows(dir / "curves.dat"))
    EXPECT_TRUE(std::isnan(r[2]) && std::isnan(r[3])) << "eval_loss and eval_top1 are no data";
  train::plot_runs({dir.string(), with_eval.string()}, (root_ / "compare.png").string());
  EXPECT_TRUE(fs::exists(root_ / "compare.png"));
}

// A PNG named near the file system's limit (255 bytes) was not drawn: gnuplot wrote into the
// name plus ".tmp.<pid>", which was too long ("system error: File name too long"); and for
// several runs the data files' names (the PNG's, ".png" made ".1.dat") were too long.
TEST_F(PlotTest, APngNamedNearTheLengthLimitIsDrawn) {
  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  const fs::path dir = run("run1", kSummary), dir2 = run("run2", kSummary);
  for (const std::vector<std::string>& runs :
       {std::vector<std::string>{dir.string()}, {dir.string(), dir2.string()}}) {
    SCOPED_TRACE(runs.size());
    const fs::path png = root_ / (std::string(250, 'p') + ".png");
    fs::remove(png);
    std::string error;
    try {
      train::plot_runs(runs, png.string(), train::PlotOptions{});
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_EQ(error, "");
    EXPECT_TRUE(fs::exists(png));
    for (const auto& e : fs::directory_iterator(root_))
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
  // the script names itself as it is named (its rerun line), and draws the PNG
  fs::path script;
  for (const auto& e : fs::directory_iterator(root_))
    if (e.path().extension() == ".gp") script = e.path();
  std::ifstream in(script);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("(rerun: gnuplot " + script.filename().string() + ")"), std::string::npos)
      << text;
}

// A PNG that could not take the drawn image's place (a folder of that name) left the image gnuplot
// drew behind as curves.png.tmp.<pid>.<n>, one more each epoch of a run, and said only
// "filesystem error: cannot rename: Is a directory [...]". The temporary goes; the message says
// which file could not be written, as the atomic writer's do.
TEST_F(PlotTest, APngThatCannotBeReplacedLeavesNoTemporaryFile) {
  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  const fs::path dir = run("run1", kSummary);
  fs::create_directories(dir / "curves.png" / "inside");  // rename(2) cannot replace it
  std::string error;
  try {
    train::plot_runs({dir.string()}, (dir / "curves.png").string(), train::PlotOptions{});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("plot: cannot write '" + (dir / "curves.png").string() + "'"),
            std::string::npos)
      << error;
  // a folder there is no previous image to speak of
  EXPECT_EQ(error.find("previous image"), std::string::npos) << error;
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST_F(PlotTest, SeveralRunsAndRunsWithoutEma) {
  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  const fs::path a = run("a", kSummary);
  const fs::path b = run(
      "b",
      "epoch,train_loss,eval_loss,eval_top1,eval_top5,lr,train_img_per_sec\n1,2,2,30,70,0.1,900\n");
  const fs::path out = root_ / "both.png";
  train::plot_runs({a.string(), b.string()}, out.string());
  EXPECT_EQ(png_size(out), std::make_pair(1280u, 960u));
  const auto rb = data_rows(root_ / "both.2.dat");
  ASSERT_EQ(rb.size(), 1u);
  EXPECT_TRUE(std::isnan(rb[0][4]));  // no EMA column in run b
  EXPECT_EQ(rb[0][3], 30);
  EXPECT_EQ(data_rows(root_ / "both.1.dat").size(), 3u);
  EXPECT_THROW(train::plot_runs({(root_ / "nothing").string()}, out.string()), Error);
  // a run folder before its first epoch ends: said so, not "is it a run folder?"
  const fs::path early = root_ / "early";
  fs::create_directories(early);
  std::ofstream(early / "run.json") << "{}";
  try {
    train::plot_runs({early.string()}, out.string());
    ADD_FAILURE() << "a run folder without summary.csv was plotted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("first epoch has not finished"), std::string::npos)
        << e.what();
  }
}

// A summary without some plotted column (here lr, as in a summary rebuilt from a log, or an older
// run) still plots: the series without values are left out (gnuplot fails on an empty one: "x range
// is invalid") and their panel says "no data"; a run that has the column keeps its curve.
TEST_F(PlotTest, AColumnWithoutValuesLeavesItsSeriesOut) {
  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  const fs::path a = run("no_lr",
                         "epoch,train_loss,eval_loss,eval_top1,train_img_per_sec\n"
                         "1,2,2,30,900\n2,1.5,1.8,35,950\n");
  const fs::path alone = root_ / "alone.png";
  train::plot_runs({a.string()}, alone.string());
  EXPECT_EQ(png_size(alone), std::make_pair(1280u, 960u));
  std::ifstream gp(root_ / "alone.gp");
  const std::string script((std::istreambuf_iterator<char>(gp)), std::istreambuf_iterator<char>());
  EXPECT_EQ(script.find("using 1:6"), std::string::npos) << script;  // no lr series
  EXPECT_NE(script.find("no data"), std::string::npos) << script;
  const fs::path b = run("with_lr", kSummary), both = root_ / "both.png";
  train::plot_runs({a.string(), b.string()}, both.string());
  std::ifstream gp2(root_ / "both.gp");
  const std::string s2((std::istreambuf_iterator<char>(gp2)), std::istreambuf_iterator<char>());
  EXPECT_NE(s2.find("both.2.dat' using 1:6"), std::string::npos) << s2;  // b's lr curve stays
  EXPECT_EQ(s2.find("both.1.dat' using 1:6"), std::string::npos) << s2;
  EXPECT_FALSE(fs::exists(root_ / "both.png.tmp"));
}

// A column whose every value is non-finite: a diverged run's train loss of inf made gnuplot fail
// the whole plot ("all points y value undefined!"); an eval top-1 of nan in every row (a column
// present, no value) was left out unsaid. Both series are left out, as a missing column's, and
// the notes name the file and each column.
TEST_F(PlotTest, AColumnWithoutFiniteValuesIsLeftOutAndSaid) {
  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  const fs::path a = run("diverged",
                         "epoch,train_loss,eval_loss,eval_top1,lr,train_img_per_sec\n"
                         "1,inf,2,nan,0.001,900\n2,inf,1.8,nan,0.0005,950\n");
  std::vector<std::string> notes;
  train::plot_runs({a.string()}, (root_ / "d.png").string(), {}, &notes);
  EXPECT_EQ(png_size(root_ / "d.png"), std::make_pair(1280u, 960u));
  std::ifstream gp(root_ / "d.gp");
  const std::string script((std::istreambuf_iterator<char>(gp)), std::istreambuf_iterator<char>());
  EXPECT_EQ(script.find("using 1:2 "), std::string::npos) << script;  // no train loss series
  EXPECT_EQ(script.find("using 1:4 "), std::string::npos) << script;  // no top-1 series
  EXPECT_NE(script.find("using 1:3 "), std::string::npos) << script;  // the eval loss stays
  for (const auto& row : data_rows(root_ / "d.dat")) EXPECT_TRUE(std::isnan(row[1]));
  std::string text;
  for (const std::string& n : notes) text += n + "\n";
  const std::string summary = (a / "summary.csv").string();
  EXPECT_NE(text.find("plot: " + summary + ": column 'train_loss' holds no finite value"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("plot: " + summary + ": column 'eval_top1' holds no finite value"),
            std::string::npos)
      << text;
  EXPECT_EQ(notes.size(), 2u) << text;
}

// An experiment name is anyone's text, and a run folder is named by it: one with a newline ended
// its gnuplot command inside the single-quoted label ("invalid command"), and no plot was drawn
// (the trainer's per-epoch plot: a warning every epoch). The folder is read through a
// double-quoted path (its newline as \012), and labelled with the newline shown as "\n".
TEST_F(PlotTest, ARunFolderNamedWithControlCharactersIsPlotted) {
  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  const fs::path a = run("two\nlines \"q\" \\ 'x'", kSummary);
  const fs::path b = run("plain", kSummary);
  const fs::path out = a / "curves.png";
  train::plot_runs({a.string()}, out.string());
  EXPECT_EQ(png_size(out), std::make_pair(1280u, 960u));
  train::plot_runs({a.string(), b.string()}, (root_ / "both.png").string());
  EXPECT_EQ(png_size(root_ / "both.png"), std::make_pair(1280u, 960u));
  const auto script = [](const fs::path& p) {
    std::ifstream f(p);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  // the label and title: the name on one line, its newline shown as backslash-n and its backslash
  // doubled (printable; single-quoted: as is)
  EXPECT_NE(script(root_ / "both.gp").find("'two\\nlines \"q\" \\\\ ''x'' train'"),
            std::string::npos)
      << script(root_ / "both.gp");
  // the data file inside that folder: a double-quoted path, its newline as \012
  EXPECT_NE(script(a / "curves.gp").find("two\\012lines \\\"q\\\" \\\\ 'x'/curves.dat\""),
            std::string::npos)
      << script(a / "curves.gp");
}

// gnuplot runs the shell command of a `...` in a double-quoted string (only a single-quoted one is
// safe), and a name with a control character is written double-quoted: a run folder named with a
// newline and a backquote ran its command when plotted (an experiment name is anyone's text). The
// backquote is written \140 there, which gnuplot reads back as the same byte, never a command.
TEST_F(PlotTest, ABackquoteInADoubleQuotedNameRunsNoCommand) {
  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  const fs::path a = run("bq\n`echo x`", kSummary);
  const fs::path out = a / "curves.png";
  train::plot_runs({a.string()}, out.string());
  EXPECT_EQ(png_size(out), std::make_pair(1280u, 960u));
  std::ifstream f(a / "curves.gp");
  const std::string script((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(script.find("bq\\012\\140echo x\\140/curves.dat\""), std::string::npos) << script;
  // no backquote in a double-quoted string (a single-quoted label may show one: not run there)
  bool in_double = false, in_single = false;
  for (size_t i = 0; i < script.size(); ++i) {
    const char c = script[i];
    if (in_double && c == '\\')
      ++i;
    else if (!in_single && c == '"')
      in_double = !in_double;
    else if (!in_double && c == '\'')
      in_single = !in_single;
    else
      EXPECT_FALSE(in_double && c == '`') << "at " << i << ": " << script;
  }
}

// The lr panel is log-scaled, where an lr of 0 (a run with lr 0, timm's way to measure throughput;
// warmup_lr 0) has no place: gnuplot failed on a run of lr 0 alone ("all points y value
// undefined!"). With a value <= 0 the panel is linear; otherwise it stays logarithmic.
TEST_F(PlotTest, AnLrOfZeroIsPlottedOnALinearScale) {
  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  const std::string lr_panel = "set title 'learning rate'\nset ylabel 'lr'\n";
  const auto script = [&](const std::string& gp) {
    std::ifstream f(root_ / gp);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  const fs::path zero = run("zero",
                            "epoch,train_loss,eval_loss,eval_top1,lr,train_img_per_sec\n"
                            "1,2,2,30,0,900\n2,2,2,30,0,950\n");
  train::plot_runs({zero.string()}, (root_ / "zero.png").string());
  EXPECT_EQ(png_size(root_ / "zero.png"), std::make_pair(1280u, 960u));
  EXPECT_NE(script("zero.gp").find(lr_panel + "unset logscale y"), std::string::npos)
      << script("zero.gp");
  const fs::path b = run("with_lr", kSummary);
  train::plot_runs({b.string()}, (root_ / "b.png").string());
  EXPECT_NE(script("b.gp").find(lr_panel + "set logscale y"), std::string::npos) << script("b.gp");
  train::plot_runs({b.string(), zero.string()}, (root_ / "both.png").string());
  EXPECT_NE(script("both.gp").find(lr_panel + "unset logscale y"), std::string::npos)
      << script("both.gp");
}

// The trainer redraws RUN/curves.png after every epoch: after a short CPU run with a model EMA the
// PNG has the default size and its data file holds summary.csv's values (EMA top-1 included).
TEST_F(PlotTest, TheTrainerPlotsItsRunAfterEveryEpoch) {
  ASSERT_TRUE(train::gnuplot_available())
      << "gnuplot is not on PATH: run scripts/install-deps.sh (gnuplot-nox)";
  train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
  c.output = root_.string();
  c.device = "cpu";
  c.model_ema = true;
  c.model_ema_decay = 0.9;
  train::TrainOptions quiet;
  quiet.plain_output = true;
  const fs::path dir = train::train(c, quiet).run_dir;
  EXPECT_EQ(png_size(dir / "curves.png"), std::make_pair(1280u, 960u));
  const auto rows = data_rows(dir / "curves.dat");
  const auto cols = train::read_csv_columns((dir / "summary.csv").string());
  ASSERT_EQ(rows.size(), 2u);  // the smoke config's 2 epochs
  for (size_t r = 0; r < rows.size(); ++r) {
    ASSERT_EQ(rows[r].size(), train::plot_columns().size());
    for (size_t k = 0; k < rows[r].size(); ++k)
      EXPECT_DOUBLE_EQ(rows[r][k], cols.at(train::plot_columns()[k])[r])
          << train::plot_columns()[k];
  }
  EXPECT_FALSE(std::isnan(rows[1][4])) << "eval_top1_ema is plotted";
}

// A gnuplot that fails costs a warning, never the run.
// A failed gnuplot leaves the image, its script and its data as they were (the script and data
// were rewritten beside the old image: `--title changed` showed in curves.gp, not in curves.png),
// and no temporary file.
TEST_F(PlotTest, AFailedDrawLeavesTheImageScriptAndDataAsTheyWere) {
  ASSERT_TRUE(train::gnuplot_available());
  const fs::path dir = run("kept", kSummary);
  train::PlotOptions opts;
  opts.title = "first";
  train::plot_runs({dir.string()}, (dir / "curves.png").string(), opts);
  const auto slurp = [](const fs::path& p) {
    std::ifstream f(p);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  const std::string png = slurp(dir / "curves.png"), gp = slurp(dir / "curves.gp"),
                    dat = slurp(dir / "curves.dat");
  ASSERT_NE(gp.find("first"), std::string::npos) << gp;
  // the kept script draws the image from its own data
  EXPECT_NE(gp.find((fs::absolute(dir) / "curves.dat").string()), std::string::npos) << gp;
  std::ofstream(dir / "summary.csv", std::ios::app) << "4,1,0.9,62,96,1e-06,1250,50.1,1,61,95\n";
  const fs::path bin = root_ / "failbin";
  fs::create_directories(bin);
  std::ofstream(bin / "gnuplot") << "#!/bin/sh\nexit 3\n";
  fs::permissions(bin / "gnuplot", fs::perms::owner_all);
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (bin.string() + ":" + old_path).c_str(), 1);
  opts.title = "changed";
  std::string why;
  try {
    train::plot_runs({dir.string()}, (dir / "curves.png").string(), opts);
  } catch (const Error& e) {
    why = e.what();
  }
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_NE(why.find("gnuplot failed (exit status 3)"), std::string::npos) << why;
  EXPECT_EQ(slurp(dir / "curves.png"), png);
  EXPECT_EQ(slurp(dir / "curves.gp"), gp);
  EXPECT_EQ(slurp(dir / "curves.dat"), dat);
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST_F(PlotTest, APlotFailureIsAWarningOnly) {
  const fs::path bin = root_ / "bin";
  fs::create_directories(bin);
  std::ofstream(bin / "gnuplot") << "#!/bin/sh\necho broken >&2\nexit 3\n";
  fs::permissions(bin / "gnuplot", fs::perms::owner_all);
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (bin.string() + ":" + old_path).c_str(), 1);
  train::Config c = train::load_config(std::string(HAARGRAD_SOURCE_DIR) + "/configs/smoke.yaml");
  c.output = root_.string();
  c.device = "cpu";
  c.epochs = 1;
  train::TrainOptions quiet;
  quiet.plain_output = true;
  train::TrainResult r;
  EXPECT_NO_THROW(r = train::train(c, quiet));
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(r.best_epoch, 1);
  std::ifstream log(fs::path(r.run_dir) / "log.txt");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("plot: no curves.png this epoch"), std::string::npos) << text;
}
