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
  data::TransformOptions t;
  t.img_size = 8;
  t.mean = {0.5};
  t.std = {0.25};
  t.train = true;  // random crops and flips: seeded per sample, so the rank does not matter
  auto loader = [&](int64_t batch, int64_t rank, int64_t replicas) {
    data::LoaderOptions o;
    o.batch_size = batch;
    o.workers = 0;
    o.seed = 3;
    o.rank = rank;
    o.num_replicas = replicas;
    return std::make_unique<data::DataLoader>(ds, data::Transform(t), o);
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
