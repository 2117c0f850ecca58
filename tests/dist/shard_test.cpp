// DistributedSampler-style sharding (data/shard.h) and the loader reading one rank's shard.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "data/loader.h"
#include "data/shard.h"
#include "data/synthetic.h"

using namespace hg;

namespace {

std::vector<int64_t> iota_order(int64_t n, int64_t shift) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = (i * 7 + shift) % n;  // a permutation
  return v;
}

// The transform of the loader tests' 8 x 8 gray synthetic images.
data::TransformOptions transform_8px() {
  data::TransformOptions t;
  t.img_size = 8;
  t.mean = {0.5};
  t.std = {0.25};
  return t;
}

// The loader options of rank `rank` of `replicas` reading batches of `batch` (no workers, seed 3).
data::LoaderOptions rank_options(int64_t batch, int64_t rank, int64_t replicas) {
  data::LoaderOptions o;
  o.batch_size = batch;
  o.workers = 0;
  o.seed = 3;
  o.rank = rank;
  o.num_replicas = replicas;
  return o;
}

}  // namespace

TEST(Shard, PaddedShardsAreEqualAndInterleaved) {
  const auto order = iota_order(10, 3);
  std::vector<std::vector<int64_t>> shards;
  for (int r = 0; r < 4; ++r) shards.push_back(data::shard_order(order, r, 4, true));
  for (const auto& s : shards) EXPECT_EQ(s.size(), 3u);  // ceil(10 / 4)
  for (int r = 0; r < 4; ++r) EXPECT_EQ(data::shard_size(10, r, 4, true), 3);
  // rank r takes positions r, r + 4, r + 8 of the order padded with its own first elements
  std::vector<int64_t> padded = order;
  padded.push_back(order[0]);
  padded.push_back(order[1]);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(shards[r][j], padded[static_cast<size_t>(r + 4 * j)]) << r << " " << j;
}

TEST(Shard, UnpaddedShardsCoverEverySampleOnce) {
  const auto order = iota_order(11, 5);
  std::map<int64_t, int> seen;
  int64_t total = 0;
  for (int r = 0; r < 3; ++r) {
    const auto s = data::shard_order(order, r, 3, false);
    EXPECT_EQ(static_cast<int64_t>(s.size()), data::shard_size(11, r, 3, false));
    total += static_cast<int64_t>(s.size());
    for (int64_t i : s) ++seen[i];
  }
  EXPECT_EQ(total, 11);
  EXPECT_EQ(seen.size(), 11u);
  for (auto& [i, c] : seen) EXPECT_EQ(c, 1) << i;
  EXPECT_EQ(data::shard_size(2, 2, 3, false), 0);  // more ranks than samples: an empty shard
  EXPECT_THROW(data::shard_order(order, 3, 3, true), Error);
}

// The property the 1-rank-vs-N-ranks test rests on: step k of R ranks with batch B reads exactly
// the samples of step k of one process with batch R * B.
TEST(Shard, RanksTogetherReadTheSingleProcessBatch) {
  auto ds = std::make_shared<data::SyntheticDataset>(48, 3, 8, 8, 1, 7);
  data::TransformOptions t = transform_8px();
  t.train = true;  // random crops and flips: seeded per sample, so the rank does not matter
  auto loader = [&](int64_t batch, int64_t rank, int64_t replicas) {
    return std::make_unique<data::DataLoader>(ds, data::Transform(t),
                                              rank_options(batch, rank, replicas));
  };
  auto single = loader(12, 0, 1);
  auto r0 = loader(4, 0, 3), r1 = loader(4, 1, 3), r2 = loader(4, 2, 3);
  EXPECT_EQ(single->batches_per_epoch(), 4);
  EXPECT_EQ(r0->batches_per_epoch(), 4);
  EXPECT_EQ(r1->samples_per_epoch(), 16);
  for (auto* l : {single.get(), r0.get(), r1.get(), r2.get()}) l->start_epoch(2);
  data::Batch bs, b0, b1, b2;
  while (single->next(bs)) {
    ASSERT_TRUE(r0->next(b0) && r1->next(b1) && r2->next(b2));
    // sample order within the global batch differs; the sets and every sample's pixels agree
    std::multiset<std::vector<float>> a, b;
    auto add = [](std::multiset<std::vector<float>>& to, const data::Batch& x) {
      const auto px = x.images.to_vector<float>();
      const auto lb = x.labels.to_vector<int64_t>();
      const size_t per = px.size() / lb.size();
      for (size_t i = 0; i < lb.size(); ++i) {
        std::vector<float> s(px.begin() + static_cast<std::ptrdiff_t>(i * per), px.begin() + static_cast<std::ptrdiff_t>((i + 1) * per));
        s.push_back(static_cast<float>(lb[i]));
        to.insert(s);
      }
    };
    add(a, bs);
    add(b, b0);
    add(b, b1);
    add(b, b2);
    EXPECT_TRUE(a == b) << "step " << bs.step;
  }
  EXPECT_FALSE(r0->next(b0));
}

// timm seeds every rank's generators with seed + rank, so each rank draws its own mixup / cutmix
// (lam, method, box) for its part of the global batch. The loader seeds the draw of a batch by
// (seed, epoch, step): without the rank in it, every rank mixed its step-k batch with the same lam,
// so a global batch of R ranks held one draw instead of R. Rank 0 keeps the single process's draws.
TEST(Shard, EveryRankDrawsItsOwnMixup) {
  auto ds = std::make_shared<data::SyntheticDataset>(64, 10, 8, 8, 1, 7);
  const data::TransformOptions t = transform_8px();
  data::MixupOptions m;
  m.mixup_alpha = 1.0;  // batch mode, every batch mixed: one lam per batch
  m.label_smoothing = 0.0;
  m.num_classes = 10;
  const auto mixup = std::make_shared<const data::Mixup>(m);
  auto loader = [&](int64_t rank, int64_t replicas) {
    data::LoaderOptions o = rank_options(8, rank, replicas);
    o.mixup = mixup;
    auto l = std::make_unique<data::DataLoader>(ds, data::Transform(t), o);
    l->start_epoch(1);
    return l;
  };
  // The batch's lam: the target of a sample's own label, in a pair of two different labels.
  auto lam_of = [](const data::Batch& b) {
    const auto y = b.labels.to_vector<int64_t>();
    const auto tg = b.targets.to_vector<float>();
    const size_t n = y.size();
    for (size_t i = 0; i < n; ++i)
      if (y[i] != y[n - 1 - i]) return static_cast<double>(tg[i * 10 + static_cast<size_t>(y[i])]);
    return -1.0;  // every pair of one label: no lam to read
  };
  auto single = loader(0, 1), r0 = loader(0, 2), r1 = loader(1, 2);
  data::Batch bs, b0, b1;
  int compared = 0, same_across_ranks = 0;
  while (r0->next(b0)) {
    ASSERT_TRUE(single->next(bs) && r1->next(b1));
    const double ls = lam_of(bs), l0 = lam_of(b0), l1 = lam_of(b1);
    if (ls < 0 || l0 < 0 || l1 < 0) continue;
    ++compared;
    EXPECT_DOUBLE_EQ(l0, ls) << "step " << b0.step << ": rank 0 draws as one process does";
    same_across_ranks += l0 == l1;
  }
  ASSERT_GE(compared, 3);
  EXPECT_EQ(same_across_ranks, 0) << "of " << compared
                                  << " steps, ranks 0 and 1 mixed with the same lam";
}
