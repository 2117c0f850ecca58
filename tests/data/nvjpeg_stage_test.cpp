// The CPU-side logic of the nvJPEG decode stage (data/nvjpeg_decoder.h, data/slot_ring.h):
//   * stored_region: what each backend stores (the whole image for the hardware decoder, the crop's
//     reach otherwise) and the kernel item that reads the crop from it. The CPU transform
//     (Transform::apply_plan, the crop kernel's reference) fed those pixels and the item's box
//     gives the values of the whole image with the plan's box, finite, for eval center crops
//     (fractional boxes) and train crops on photo sizes, both orientations, odd and tiny images;
//   * SlotRing: the order of waits before the decoder writes a buffer outside stream order.
#include <gtest/gtest.h>

#include <cmath>

#include "core/random.h"
#include "data/nvjpeg_decoder.h"
#include "data/slot_ring.h"
#include "data/transforms.h"

using namespace hg;
using namespace hg::data;

namespace {

Image random_image(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  Generator g(seed);
  Image img{h, w, c, std::vector<uint8_t>(static_cast<size_t>(h * w * c))};
  for (auto& p : img.pixels) p = static_cast<uint8_t>(g.randint(256));
  return img;
}

// The pixels of `rect` of `img`.
Image cut(const Image& img, const PixelRect& rect) {
  const int64_t w = rect.x1 - rect.x0, h = rect.y1 - rect.y0, C = img.channels;
  Image out{h, w, C, std::vector<uint8_t>(static_cast<size_t>(h * w * C))};
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w * C; ++x)
      out.pixels[size_t(y * w * C + x)] =
          img.pixels[size_t((y + rect.y0) * img.width * C + rect.x0 * C + x)];
  return out;
}

// apply_plan of the stored pixels with the item's box against apply_plan of the whole image.
void expect_same_output(const Transform& t, const Image& img, const CropPlan& plan,
                        NvjpegBackend backend) {
  const int64_t S = t.options().img_size;
  const StoredRegion r =
      stored_region(backend, CropRequest{plan.box, S, S}, img.height, img.width, "x.jpg");
  ASSERT_EQ(r.item.height, r.rect.y1 - r.rect.y0);
  ASSERT_EQ(r.item.width, r.rect.x1 - r.rect.x0);
  ASSERT_EQ(r.item.offset, 0);
  EXPECT_DOUBLE_EQ(r.item.box_w, plan.box.w);
  EXPECT_DOUBLE_EQ(r.item.box_h, plan.box.h);
  if (backend == NvjpegBackend::hardware) {  // no ROI: the whole image, the box as it is
    EXPECT_EQ(r.rect.x0, 0);
    EXPECT_EQ(r.rect.y0, 0);
    EXPECT_EQ(r.item.height, img.height);
    EXPECT_EQ(r.item.width, img.width);
    EXPECT_DOUBLE_EQ(r.item.box_x, plan.box.x);
  }
  CropPlan stored = plan;
  stored.box = CropBox{r.item.box_x, r.item.box_y, r.item.box_w, r.item.box_h};
  std::vector<float> want(size_t(t.output_numel())), got(size_t(t.output_numel()));
  t.apply_plan(img, plan, want.data());
  t.apply_plan(cut(img, r.rect), stored, got.data());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << "value " << i;
    worst = std::max(worst, double(std::abs(got[i] - want[i])));
  }
  // The same taps at the same fractional positions; only the box offset's rounding may differ.
  EXPECT_LE(worst, 1e-5);
}

}  // namespace

TEST(NvjpegStage, StoredRegionsResampleLikeTheWholeImage) {
  for (int64_t C : {3, 1}) {
    for (const auto& [h, w] : std::vector<std::pair<int64_t, int64_t>>{
             {375, 500}, {500, 375}, {333, 457}, {300, 300}, {41, 23}, {9, 13}}) {
      const Image img = random_image(h, w, C, uint64_t(h * 1000 + w));
      // eval at crop_pct 1.3 too: a box past the image on every side (the crop is padded)
      for (const auto& [train, crop_pct] :
           std::vector<std::pair<bool, double>>{{false, 0.875}, {false, 1.3}, {true, 0.875}}) {
        TransformOptions o;
        o.train = train;
        o.crop_pct = crop_pct;
        o.img_size =
            train ? 32 : 224;  // eval at the model's size: fractional boxes, up- and downscaling
        o.interpolation = train ? "random" : "bicubic";  // eval: one filter (timm: bicubic)
        o.mean.assign(size_t(C), 0.45);
        o.std.assign(size_t(C), 0.23);
        const Transform t(o);
        for (uint64_t seed = 0; seed < (train ? 6u : 1u); ++seed) {
          Generator g(seed);
          const CropPlan plan = t.plan(h, w, g);
          for (NvjpegBackend b :
               {NvjpegBackend::hardware, NvjpegBackend::gpu, NvjpegBackend::cpu}) {
            SCOPED_TRACE(testing::Message()
                         << h << "x" << w << "x" << C << (train ? " train" : " eval")
                         << " crop_pct " << crop_pct << " seed " << seed << " "
                         << nvjpeg_backend_name(b) << " box (" << plan.box.x << ", " << plan.box.y
                         << ", " << plan.box.w << ", " << plan.box.h << ")");
            expect_same_output(t, img, plan, b);
          }
        }
      }
    }
  }
}

TEST(NvjpegStage, StoredRegionNamesTheFileWhenTheBoxMissesTheImage) {
  try {
    stored_region(NvjpegBackend::hardware, CropRequest{CropBox{500, 0, 10, 10}, 8, 8}, 100, 200,
                  "far.jpg");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("far.jpg"), std::string::npos) << e.what();
  }
  EXPECT_THROW(stored_region(NvjpegBackend::gpu, CropRequest{CropBox{0, 0, 10, 10}, 8, 8}, 0, 200,
                             "empty.jpg"),
               Error);
}

TEST(SlotRing, SlotsInTurnWaitForMarkedReadersOrTheStream) {
  SlotRing ring(2);
  // First use of each slot: nothing to wait for, a buffer to make (with a quarter more, >= 1 MiB).
  SlotUse u0 = ring.acquire(4 << 20);
  EXPECT_EQ(u0.slot, 0);
  EXPECT_EQ(u0.ticket, 0);
  EXPECT_EQ(u0.wait, SlotUse::Wait::none);
  EXPECT_EQ(u0.grow_to, 5 << 20);
  ring.grown(u0.slot, u0.grow_to);
  ring.reads_queued(u0.ticket);
  SlotUse u1 = ring.acquire(100);
  EXPECT_EQ(u1.slot, 1);
  EXPECT_EQ(u1.wait, SlotUse::Wait::none);
  EXPECT_EQ(u1.grow_to, 1 << 20);
  ring.grown(u1.slot, u1.grow_to);
  // Slot 0 again: its readers were marked, so the wait is for them only; it is big enough.
  SlotUse u2 = ring.acquire(5 << 20);
  EXPECT_EQ(u2.slot, 0);
  EXPECT_EQ(u2.wait, SlotUse::Wait::reads);
  EXPECT_EQ(u2.grow_to, 0);
  EXPECT_EQ(ring.capacity(0), 5 << 20);
  // Slot 1: use 1's readers were never marked, so the whole stream is drained first; it must grow.
  SlotUse u3 = ring.acquire(2 << 20);
  EXPECT_EQ(u3.slot, 1);
  EXPECT_EQ(u3.wait, SlotUse::Wait::stream);
  EXPECT_EQ(u3.grow_to, (2 << 20) + (2 << 20) / 4);
  // A failed allocation (grown not called) leaves the old size: the next use of the slot grows
  // again.
  ring.reads_queued(u3.ticket);
  ring.acquire(0);
  SlotUse u5 = ring.acquire(2 << 20);
  EXPECT_EQ(u5.slot, 1);
  EXPECT_EQ(u5.wait, SlotUse::Wait::reads);
  EXPECT_GT(u5.grow_to, 0);
}

TEST(SlotRing, MarkingOverwrittenOrUnknownUsesIsAnError) {
  SlotRing ring(2);
  const SlotUse a = ring.acquire(10), b = ring.acquire(10);
  ring.reads_queued(b.ticket);
  ring.reads_queued(a.ticket);  // still a's: fine
  ring.acquire(10);             // slot 0 again: a's pixels are overwritten
  try {
    ring.reads_queued(a.ticket);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overwritten"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ring.reads_queued(99), Error);
  EXPECT_THROW(ring.reads_queued(-1), Error);
  EXPECT_THROW(ring.acquire(-1), Error);
  EXPECT_THROW(SlotRing(0), Error);
  // One slot: every use waits for the one before.
  SlotRing one(1);
  one.reads_queued(one.acquire(10).ticket);
  EXPECT_EQ(one.acquire(10).wait, SlotUse::Wait::reads);
}
