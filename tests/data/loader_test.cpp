// Tests of the DataLoader: batch shapes, determinism across worker counts, shuffling per epoch,
// resume from a step, caps, error propagation, and the config-built pipeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "data/from_config.h"
#include "data/idx_dataset.h"
#include "data/loader.h"
#include "data/synthetic.h"
#include "temp_dir.h"

using hg::data::Batch;
using hg::data::DataLoader;
using hg::data::LoaderOptions;
namespace fs = std::filesystem;

namespace {

// Label = index, so the labels of an epoch show its order; image i is random from seed i.
class IndexDataset : public hg::data::Dataset {
 public:
  explicit IndexDataset(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  int64_t num_classes() const override { return n_; }
  int64_t channels() const override { return 3; }
  hg::data::Sample get(int64_t i) const override {
    HG_CHECK(i != fail_at_, "IndexDataset: sample ", i, " is broken");
    return {hg::test::random_image(9 + i % 4, 11, 3, uint64_t(i) + 100), i};
  }
  std::string describe() const override { return "IndexDataset"; }

 private:
  int64_t n_, fail_at_;
};

hg::data::Transform train_transform(int64_t size) {
  hg::data::TransformOptions o;
  o.img_size = size;
  o.train = true;
  return hg::data::Transform(o);
}

std::vector<Batch> epoch(DataLoader& dl, int64_t e, int64_t start = 0) {
  dl.start_epoch(e, start);
  std::vector<Batch> out;
  Batch b;
  while (dl.next(b)) out.push_back(b);
  return out;
}

std::vector<int64_t> labels_of(const std::vector<Batch>& bs) {
  std::vector<int64_t> out;
  for (const auto& b : bs)
    for (int64_t l : b.labels.to_vector<int64_t>()) out.push_back(l);
  return out;
}

void expect_same(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].labels.to_vector<int64_t>(), b[i].labels.to_vector<int64_t>()) << i;
    EXPECT_EQ(a[i].images.to_vector<float>(), b[i].images.to_vector<float>()) << i;
  }
}

}  // namespace

TEST(Loader, ShapesAndDropLast) {
  auto ds = std::make_shared<IndexDataset>(23);
  LoaderOptions o;
  o.batch_size = 5;
  o.workers = 2;
  DataLoader dl(ds, train_transform(8), o);
  EXPECT_EQ(dl.batches_per_epoch(), 4);
  auto bs = epoch(dl, 0);
  ASSERT_EQ(bs.size(), 4u);
  EXPECT_EQ(bs[0].images.shape(), (hg::Shape{5, 8, 8, 3}));
  EXPECT_EQ(bs[0].images.dtype(), hg::DType::f32);
  EXPECT_EQ(bs[0].labels.shape(), (hg::Shape{5}));
  EXPECT_EQ(bs[0].labels.dtype(), hg::DType::i64);
  auto labels = labels_of(bs);
  std::sort(labels.begin(), labels.end());
  EXPECT_TRUE(std::adjacent_find(labels.begin(), labels.end()) == labels.end());  // no repeats
  hg::data::LoaderStats s = dl.stats();
  EXPECT_EQ(s.images, 20);
  EXPECT_GT(s.images_per_second(), 0);

  o.drop_last = false;
  o.shuffle = false;
  DataLoader eval(ds, train_transform(8), o);
  auto all = epoch(eval, 0);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all.back().images.shape(), (hg::Shape{3, 8, 8, 3}));
  std::vector<int64_t> expect(23);
  for (int64_t i = 0; i < 23; ++i) expect[size_t(i)] = i;
  EXPECT_EQ(labels_of(all), expect);  // dataset order when not shuffling
}

#ifdef __linux__
// The loader names its worker threads (core/thread_name.h), so that a debugger's or a profiler's
// list of threads says which are the workers.
TEST(Loader, WorkerThreadsAreNamed) {
  auto ds = std::make_shared<IndexDataset>(400);  // 80 batches: the workers wait for the consumer
  LoaderOptions o;
  o.batch_size = 5;
  o.workers = 2;
  DataLoader dl(ds, train_transform(8), o);
  dl.start_epoch(0);
  std::set<std::string> names;
  auto have_both = [&] { return names.count("hg-load-0") == 1 && names.count("hg-load-1") == 1; };
  for (int tries = 0; tries < 200 && !have_both(); ++tries) {  // each names itself once started
    names.clear();
    for (const auto& task : fs::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      names.insert(name);
    }
    if (!have_both()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(have_both());
  Batch b;
  while (dl.next(b)) {
  }
}
#endif

TEST(Loader, DeterministicAcrossWorkerCounts) {
  auto ds = std::make_shared<IndexDataset>(37);
  std::vector<Batch> ref;
  for (int64_t workers : {0, 1, 3}) {
    for (int64_t prefetch : {0, 1}) {
      LoaderOptions o;
      o.batch_size = 6;
      o.workers = workers;
      o.prefetch = prefetch;
      o.seed = 11;
      o.pin_memory = prefetch == 1;  // page-locked where a GPU exists; the same bytes either way
      DataLoader dl(ds, train_transform(7), o);
      auto bs = epoch(dl, 2);
      SCOPED_TRACE(testing::Message() << "workers " << workers << " prefetch " << prefetch);
      if (ref.empty()) ref = bs;
      else expect_same(bs, ref);
    }
  }
  // A different epoch reshuffles and re-augments; a different seed does too.
  LoaderOptions o;
  o.batch_size = 6;
  o.workers = 2;
  o.seed = 11;
  DataLoader dl(ds, train_transform(7), o);
  EXPECT_NE(labels_of(epoch(dl, 3)), labels_of(ref));
  o.seed = 12;
  DataLoader other(ds, train_transform(7), o);
  EXPECT_NE(labels_of(epoch(other, 2)), labels_of(ref));
}

TEST(Loader, ResumeFromStepAndCap) {
  auto ds = std::make_shared<IndexDataset>(30);
  LoaderOptions o;
  o.batch_size = 4;
  o.workers = 2;
  DataLoader dl(ds, train_transform(6), o);
  auto full = epoch(dl, 5);
  ASSERT_EQ(full.size(), 7u);
  auto tail = epoch(dl, 5, 3);
  expect_same(tail, std::vector<Batch>(full.begin() + 3, full.end()));
  EXPECT_EQ(epoch(dl, 5, 7).size(), 0u);
  EXPECT_THROW(dl.start_epoch(5, 8), hg::Error);
  o.max_steps = 2;
  DataLoader capped(ds, train_transform(6), o);
  EXPECT_EQ(capped.batches_per_epoch(), 2);
  expect_same(epoch(capped, 5), std::vector<Batch>(full.begin(), full.begin() + 2));
}

TEST(Loader, WorkerErrorsReachTheConsumer) {
  auto ds = std::make_shared<IndexDataset>(40, 17);
  for (int64_t workers : {0, 2}) {
    LoaderOptions o;
    o.batch_size = 4;
    o.workers = workers;
    o.shuffle = false;
    DataLoader dl(ds, train_transform(5), o);
    dl.start_epoch(0);
    Batch b;
    try {
      while (dl.next(b)) {
      }
      ADD_FAILURE() << "expected an error";
    } catch (const hg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("sample 17"), std::string::npos) << e.what();
    }
    dl.start_epoch(1, 5);  // usable again afterwards (batches after the broken one)
    EXPECT_TRUE(dl.next(b));
  }
}

TEST(Loader, ChannelMismatchThrows) {
  auto ds = std::make_shared<IndexDataset>(4);
  hg::data::TransformOptions t;
  t.mean = {0.5};
  t.std = {0.5};
  EXPECT_THROW(DataLoader(ds, hg::data::Transform(t), LoaderOptions{}), hg::Error);
}

TEST(Loader, SyntheticFromConfig) {
  hg::train::Config cfg;
  cfg.dataset = "synthetic";
  cfg.num_classes = 3;
  cfg.img_size = 12;
  cfg.synthetic_size = 50;
  cfg.batch_size = 8;
  cfg.validation_batch_size = 20;
  cfg.workers = 2;
  auto sets = hg::data::make_datasets(cfg);
  EXPECT_EQ(sets.train->size(), 50);
  EXPECT_EQ(sets.val->size(), 10);
  auto a = sets.train->get(7), b = sets.train->get(7);
  EXPECT_EQ(a.image.pixels, b.image.pixels);  // fixed by (seed, index)
  auto train = hg::data::make_loader(cfg, true, sets.train);
  auto val = hg::data::make_loader(cfg, false, sets.val);
  EXPECT_EQ(train->batches_per_epoch(), 6);
  EXPECT_EQ(val->batches_per_epoch(), 1);
  // max_steps_per_epoch caps training only: top-1 is always over the whole validation split
  cfg.max_steps_per_epoch = 2;
  cfg.validation_batch_size = 4;
  EXPECT_EQ(hg::data::make_loader(cfg, true, sets.train)->batches_per_epoch(), 2);
  EXPECT_EQ(hg::data::make_loader(cfg, false, sets.val)->batches_per_epoch(), 3);  // 10 images / 4
  cfg.max_steps_per_epoch = 0;
  cfg.validation_batch_size = 20;
  train->start_epoch(0);
  Batch batch;
  ASSERT_TRUE(train->next(batch));
  EXPECT_EQ(batch.images.shape(), (hg::Shape{8, 12, 12, 3}));
  for (int64_t l : batch.labels.to_vector<int64_t>()) EXPECT_TRUE(l >= 0 && l < 3);
  cfg.num_classes = 2;
  hg::data::SyntheticDataset three(10, 3, 4, 4, 3, 1);
  EXPECT_EQ(three.num_classes(), 3);
}

TEST(Loader, FashionMnistConfigTransformsAreSane) {
  // At 28 px with scale [1, 1] and ratio [1, 1], train images are the normalised image or its
  // mirror, and eval images are the normalised image. The config itself trains without flips (hflip
  // 0: its short schedule reaches a better top-1 without them): every train image is then
  // unflipped; with hflip 0.5 about half are mirrored.
  const std::string path = std::string(HAARGRAD_SOURCE_DIR) + "/configs/fashion_mnist.yaml";
  hg::train::Config cfg = hg::train::load_config(path);
  if (!std::filesystem::exists(cfg.data_dir)) GTEST_SKIP() << cfg.data_dir << " missing";
  hg::data::IdxDataset test(cfg.data_dir, cfg.val_split, cfg.in_chans);
  EXPECT_EQ(cfg.hflip, 0.0);
  for (double hflip : {cfg.hflip, 0.5}) {
    SCOPED_TRACE(hflip);
    cfg.hflip = hflip;
    hg::data::Transform tr(hg::data::make_transform_options(cfg, true)),
        ev(hg::data::make_transform_options(cfg, false));
    int flipped = 0;
    for (int64_t i = 0; i < 40; ++i) {
      hg::data::Image img = test.get(i).image;
      std::vector<float> a(784, NAN), b(784, NAN);
      hg::Generator g(static_cast<uint64_t>(i));
      tr.apply(img, g, a.data());
      ev.apply(img, g, b.data());
      bool same = true, mirror = true;
      for (int64_t y = 0; y < 28; ++y)
        for (int64_t x = 0; x < 28; ++x) {
          const float want = float((img.at(y, x, 0) / 255.0 - cfg.mean[0]) / cfg.std[0]);
          const float want_m = float((img.at(y, 27 - x, 0) / 255.0 - cfg.mean[0]) / cfg.std[0]);
          ASSERT_NEAR(b[size_t(y * 28 + x)], want, 1e-5);
          same = same && std::fabs(a[size_t(y * 28 + x)] - want) < 1e-5;
          mirror = mirror && std::fabs(a[size_t(y * 28 + x)] - want_m) < 1e-5;
        }
      ASSERT_TRUE(same || mirror) << i;
      flipped += !same;
    }
    if (hflip == 0.0) {
      EXPECT_EQ(flipped, 0);
    } else {
      EXPECT_GT(flipped, 5);
      EXPECT_LT(flipped, 35);
    }
  }
}
