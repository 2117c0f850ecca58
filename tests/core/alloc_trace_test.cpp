// Allocation traces (core/alloc_trace.h): the text form and its errors, extrapolation to another
// batch, and the replay against the allocator's policy (core/block_cache.h) on hand-made traces
// whose figures follow from the policy by hand: separate pools for persistent and step memory, the
// step's free segments made one at its end, growth by half of what a step still had to take.
#include "core/alloc_trace.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>

#include "core/block_cache.h"
#include "core/error.h"

using namespace hg;

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

AllocEvent alloc(int64_t id, int64_t bytes, Category c = Category::activations) {
  AllocEvent e;
  e.kind = AllocEvent::Kind::alloc;
  e.id = id;
  e.bytes = bytes;
  e.category = c;
  return e;
}
AllocEvent release(int64_t id) {
  AllocEvent e;
  e.kind = AllocEvent::Kind::free;
  e.id = id;
  return e;
}
AllocEvent step_end() {
  AllocEvent e;
  e.kind = AllocEvent::Kind::step_end;
  return e;
}

// Appends one step: allocate `sizes` (MiB) in order, ids from *next_id, then free them all.
void add_step(AllocTrace& t, std::initializer_list<int64_t> sizes, int64_t* next_id) {
  const int64_t first = *next_id;
  for (int64_t s : sizes) t.events.push_back(alloc((*next_id)++, s * kMiB));
  for (int64_t id = first; id < *next_id; ++id) t.events.push_back(release(id));
  t.events.push_back(step_end());
}

// A fake system for BlockCache: addresses from a counter, a byte budget, a log of the sizes.
struct FakeSystem {
  uintptr_t next = uintptr_t(1) << 40;
  int64_t budget = int64_t(1) << 50, held = 0;
  std::vector<int64_t> allocs;
  memory::detail::SystemMemory memory() {
    return {[this](size_t bytes) -> void* {
              if (held + static_cast<int64_t>(bytes) > budget)
                throw Error("fake system: out of memory");
              held += static_cast<int64_t>(bytes);
              allocs.push_back(static_cast<int64_t>(bytes));
              void* p = reinterpret_cast<void*>(next);
              next += bytes + 4096;
              return p;
            },
            [](void*) {}};
  }
};

}  // namespace

TEST(AllocTrace, TextFormRoundTripsAndNamesBadLines) {
  AllocTrace t;
  t.note = "hand-made";
  t.events = {alloc(1, 512, Category::parameters), alloc(2, 256), release(2), step_end(),
              release(1)};
  const AllocTrace back = trace_from_text(trace_to_text(t), "mem");
  EXPECT_EQ(back.note, "hand-made");
  ASSERT_EQ(back.events.size(), t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_EQ(back.events[i].kind, t.events[i].kind) << i;
    EXPECT_EQ(back.events[i].id, t.events[i].id) << i;
    EXPECT_EQ(back.events[i].bytes, t.events[i].bytes) << i;
    EXPECT_EQ(back.events[i].category, t.events[i].category) << i;
  }
  EXPECT_EQ(back.steps(), 1);

  const std::string head = "# haargrad allocation trace v1\n# note\n";
  auto error_of = [](const std::string& text) {
    try {
      trace_from_text(text, "t.trace");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("hello\n").find("t.trace is not a haargrad allocation trace"),
            std::string::npos);
  EXPECT_NE(error_of(head + "a 1 256 weights\n").find("t.trace line 3: unknown category 'weights'"),
            std::string::npos);
  EXPECT_NE(error_of(head + "a 1 -256 activations\n").find("t.trace line 3: bytes '-256'"),
            std::string::npos);
  EXPECT_NE(error_of(head + "s\nx 3\n").find("t.trace line 4: expected"), std::string::npos);
  EXPECT_NE(error_of("").find("t.trace is empty"), std::string::npos);

  // Files: written atomically, read back; a missing file is named.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("hg_trace_" + std::to_string(::getpid()) + ".trace"))
                               .string();
  save_trace(t, path);
  EXPECT_EQ(load_trace(path).events.size(), t.events.size());
  std::filesystem::remove(path);
  EXPECT_THROW(load_trace(path), Error);
}

TEST(AllocTrace, ExtrapolationIsAffineInTheBatchAndNeedsTheSameRun) {
  AllocTrace a, b;
  // Parameter bytes do not depend on the batch; activations are affine in it (a header + B rows).
  a.events = {alloc(1, 4096, Category::parameters), alloc(2, 1024 + 1 * 2048), release(2),
              step_end()};
  b.events = {alloc(1, 4096, Category::parameters), alloc(2, 1024 + 3 * 2048), release(2),
              step_end()};
  const AllocTrace x = extrapolate_trace(a, 1, b, 3, 128);
  ASSERT_EQ(x.events.size(), 4u);
  EXPECT_EQ(x.events[0].bytes, 4096);
  EXPECT_EQ(x.events[1].bytes, 1024 + 128 * 2048);
  EXPECT_EQ(x.events[2].kind, AllocEvent::Kind::free);
  // Bytes are rounded up to 256, and never below 256 (a batch below the recorded ones).
  b.events[1].bytes = 1024 + 2048 + 100;
  EXPECT_EQ(extrapolate_trace(a, 1, b, 3, 2).events[1].bytes, 3328);  // 3122 -> 3328
  EXPECT_EQ(extrapolate_trace(b, 3, a, 1, -100).events[1].bytes, 256);

  AllocTrace c = b;
  c.events[1].category = Category::workspace;
  try {
    extrapolate_trace(a, 1, c, 3, 128);
    ADD_FAILURE() << "no error for traces of different runs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("event 1 differs"), std::string::npos) << e.what();
  }
  c.events.pop_back();
  EXPECT_THROW(extrapolate_trace(a, 1, c, 3, 128), Error);
  EXPECT_THROW(extrapolate_trace(a, 2, b, 2, 128), Error);
}

// alloc-trace --load checks each file's recorded batch against --batches: the note is where the
// batch is, as the recording writes it and as an extrapolation appends its own.
TEST(AllocTrace, RecordedBatchIsTheNotesLastBatch) {
  AllocTrace t;
  t.note = "wtconvnext_fmnist fp32 batch 2 @28 on cpu, 1 training steps (zero_grad, forward)";
  EXPECT_EQ(recorded_batch(t), 2);
  t.note = "m fp32 batch 12, 1 training steps";
  EXPECT_EQ(recorded_batch(t), 12);
  AllocTrace a, b;
  a.note = "m fp32 batch 1 @28 on cpu";
  b.note = "m fp32 batch 3 @28 on cpu";
  a.events = b.events = {alloc(1, 4096), release(1), step_end()};
  const AllocTrace x = extrapolate_trace(a, 1, b, 3, 128);
  EXPECT_EQ(recorded_batch(x), 128) << x.note;  // not the batches it came from
  t.note = "written by hand";
  EXPECT_EQ(recorded_batch(t), std::nullopt);
  t.note = "batch sizes vary; batch x";
  EXPECT_EQ(recorded_batch(t), std::nullopt);
  // through the text form, as --load reads it
  t.note = "m bf16 batch 7 @32 on cuda";
  EXPECT_EQ(recorded_batch(trace_from_text(trace_to_text(t), "t")), 7);
}

TEST(AllocTrace, ReplayCountsLiveReservedAndSystemAllocationsPerStep) {
  AllocTrace t;
  int64_t id = 1;
  t.events.push_back(alloc(id++, 8 * kMiB, Category::parameters));  // persistent: a 20 MiB segment
  // Step 1: two 64 MiB activations, each a segment of its own; at the step's end the two (free)
  // are replaced by one of the step's peak, 128 MiB: three system allocations in all.
  add_step(t, {64, 64}, &id);
  // Step 2: the same requests are carved from the 128 MiB segment: nothing new.
  add_step(t, {64, 64}, &id);
  const std::vector<ReplayStep> s = replay_trace(t);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].live_peak, (8 + 128) * kMiB);
  EXPECT_EQ(s[0].reserved_peak, (20 + 128) * kMiB);
  EXPECT_EQ(s[0].reserved_end, (20 + 128) * kMiB);
  EXPECT_EQ(s[0].system_allocs, 4);  // the parameter's segment, two, one
  EXPECT_EQ(s[1].live_peak, (8 + 128) * kMiB);
  EXPECT_EQ(s[1].reserved_peak, (20 + 128) * kMiB);
  EXPECT_EQ(s[1].system_allocs, 0);

  AllocTrace bad;
  bad.events = {alloc(1, 256), alloc(1, 256)};
  EXPECT_THROW(replay_trace(bad), Error);
  bad.events = {release(7)};
  EXPECT_THROW(replay_trace(bad), Error);
  EXPECT_TRUE(replay_trace(AllocTrace{}).empty());
}

TEST(BlockCache, PersistentAndStepBlocksNeverShareASegment) {
  FakeSystem sys;
  memory::detail::BlockCache cache(sys.memory());
  void* p = cache.allocate(3 * kMiB, Category::parameters);   // a 20 MiB segment
  void* g = cache.allocate(3 * kMiB, Category::gradients);    // the same segment: both persistent
  void* a = cache.allocate(3 * kMiB, Category::activations);  // a segment of its own
  void* w = cache.allocate(3 * kMiB, Category::workspace);    // shares the activation's
  EXPECT_EQ(sys.allocs, (std::vector<int64_t>{20 * kMiB, 20 * kMiB}));
  auto at = [](void* q) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(q)); };
  EXPECT_EQ(at(g) - at(p), 3 * kMiB);
  EXPECT_EQ(at(w) - at(a), 3 * kMiB);
  EXPECT_GE(at(a) - at(p), 20 * kMiB) << "the activation's segment comes after the parameters'";
  for (void* q : {p, g, a, w}) cache.free(q);
  EXPECT_EQ(cache.reserved(), 40 * kMiB);
  EXPECT_EQ(cache.release_free_segments(), size_t(40 * kMiB));
  EXPECT_EQ(cache.reserved(), 0);
}

TEST(BlockCache, AStepThatStillDoesNotFitGrowsByHalfOfWhatItTook) {
  FakeSystem sys;
  memory::detail::BlockCache cache(sys.memory());
  // A step that fragments: X (64) and Y (32) side by side, X freed, then Z (96) needs a block
  // of 96.
  auto step = [&cache] {
    void* x = cache.allocate(64 * kMiB, Category::activations);
    void* y = cache.allocate(32 * kMiB, Category::activations);
    cache.free(x);
    void* z = cache.allocate(96 * kMiB, Category::activations);
    cache.free(y);
    cache.free(z);
    cache.step_done();
  };
  step();  // three segments (64, 32, 96); peak 128: they become one of 128
  EXPECT_EQ(sys.allocs, (std::vector<int64_t>{64 * kMiB, 32 * kMiB, 96 * kMiB, 128 * kMiB}));
  EXPECT_EQ(cache.reserved(), 128 * kMiB);
  step();  // X and Y at 0 and 64; Z finds 64 and 32 free: a segment of 96, then 128 + 96 / 2
  EXPECT_EQ(cache.reserved(), 176 * kMiB);
  step();  // Z finds 64 and 80 free: once more, 176 + 96 / 2
  EXPECT_EQ(cache.reserved(), 224 * kMiB);
  const size_t n = sys.allocs.size();
  step();  // Z fits behind Y now: the steady state
  step();
  EXPECT_EQ(sys.allocs.size(), n);
  EXPECT_EQ(cache.reserved(), 224 * kMiB);
  EXPECT_EQ(cache.free_blocks(), 1u);
}

TEST(BlockCache, StepDoneKeepsSegmentsInUseAndNeverThrows) {
  FakeSystem sys;
  memory::detail::BlockCache cache(sys.memory());
  void* kept = cache.allocate(40 * kMiB, Category::activations);  // alive across the step's end
  void* a = cache.allocate(50 * kMiB, Category::activations);
  cache.free(a);
  sys.budget = sys.held;  // the system has nothing left: the new segment cannot be had
  EXPECT_NO_THROW(cache.step_done());
  EXPECT_EQ(cache.reserved(), 40 * kMiB)
      << "the free 50 MiB segment went back; the one in use stayed";
  sys.budget = int64_t(1) << 50;
  void* b = cache.allocate(50 * kMiB, Category::activations);  // the next step takes what it needs
  EXPECT_EQ(cache.reserved(), 90 * kMiB);
  cache.free(b);
  cache.free(kept);
}
