// Data-parallel training: broadcast, bucketed gradient reduction during the backward, the step,
// replica checks (see data_parallel.h).
#include "train/data_parallel.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <thread>

#include "core/autograd.h"
#include "core/hash.h"
#include "data/seeds.h"
#include "dist/process_group.h"
#include "train/zero_optimizer.h"

namespace hg::train {
namespace {

// FNV-1a over the parameter's bytes (in CPU memory).
uint64_t hash_bytes(const Tensor& t) {
  const Tensor c = (t.device() == Device::cpu ? t : t.to(Device::cpu)).contiguous();
  return fnv1a(c.data_ptr(), c.nbytes());
}

// Test hook (tests/dist): HAARGRAD_DIST_TEST_STALL_RANK=r makes rank r stop taking part in the
// gradient collectives (it sleeps), so the tests can see the others stop on dist_timeout.
bool stalls_for_test() {
  const char* v = std::getenv("HAARGRAD_DIST_TEST_STALL_RANK");
  return v && *v && std::atoi(v) == dist::rank();
}

}  // namespace

std::string rescale_batch_for_ranks(Config& recorded, int64_t recorded_ranks, int64_t ranks) {
  if (recorded_ranks == ranks || recorded_ranks < 1 || ranks < 1) return "";
  const int64_t global = recorded.batch_size * recorded_ranks;
  auto ranks_of = [](int64_t n) { return str(n, n == 1 ? " rank" : " ranks"); };
  // a batch that does not split: each rank's batch_size compared alone let the run go on with
  // another number of images per step, unsaid (16 on 2 ranks became 24 on 3)
  if (global % ranks != 0) {
    std::string fit;
    for (int64_t n = 1; n <= global && n <= 64; ++n)
      if (global % n == 0) fit += str(fit.empty() ? "" : ", ", n);
    throw Error(str("resume: the run was recorded on ", ranks_of(recorded_ranks),
                    " with batch_size ", recorded.batch_size, " per rank, ", global,
                    " images per step, which do not split over ", ranks_of(ranks),
                    ": resume on a number of ranks that divides ", global, " (", fit,
                    "), or start a new run from its weights (initial_checkpoint)"));
  }
  const int64_t before = recorded.batch_size;
  recorded.batch_size = global / ranks;
  return str("the run was recorded on ", ranks_of(recorded_ranks), " with batch_size ", before,
             " per rank; on ", ranks_of(ranks), " the same ", global,
             " images per step are batch_size ", recorded.batch_size, " per rank");
}

DataParallel::DataParallel(const Config& cfg, ConvNeXt& model, std::unique_ptr<Optimizer>& opt)
    : buckets_(std::make_shared<std::vector<GradBucket>>()) {
  active_ = dist::size() > 1 || cfg.dist_force;
  if (!active_) {
    if (cfg.zero_stage > 0) spdlog::info("zero_stage {} has no effect in a single process", cfg.zero_stage);
    return;
  }
  dist::set_timeout(cfg.dist_timeout);
  check_every_ = cfg.dist_check_every;
  autograd::NoGradGuard no_grad;

  for (const ParamRef& p : model.named_tensors())
    if (p.trainable) named_.push_back(p);
  for (auto it = named_.rbegin(); it != named_.rend(); ++it) params_.push_back(it->tensor);

  // every replica starts from rank 0's parameters (equal already when seeded alike; this makes sure)
  std::vector<dist::Work> casts;
  for (const ParamRef& p : named_) casts.push_back(dist::broadcast(p.tensor, 0, "broadcast of parameter " + p.name));
  for (dist::Work& w : casts) w.wait();

  *buckets_ = plan_buckets(params_, cfg.dist_bucket_mb * 1024.0 * 1024.0, dist::size());
  attach_bucket_grads(*buckets_, params_);
  pending_.assign(buckets_->size(), 0);
  for (size_t b = 0; b < buckets_->size(); ++b)
    for (const BucketEntry& e : (*buckets_)[b].entries)
      params_[e.param].grad_slot()->on_grad_final = [this, b] { on_grad_final(b); };

  if (cfg.zero_stage == 1) {
    auto z = std::make_unique<ZeroOptimizer>(*opt, params_, buckets_);
    zero_opt_ = z.get();
    opt = std::move(z);  // the unsharded optimizer (and any state it loaded) is freed here
    zero_ = true;
  }
  if (dist::rank() > 0)  // own drop-path stream per rank, derived from the shared one
    model.drop_gen = Generator(data::mix_seed(model.drop_gen.next_u64(), 3, static_cast<uint64_t>(dist::rank())));

  int64_t largest = 0;
  for (const GradBucket& b : *buckets_) largest = std::max(largest, b.numel);
  const int64_t elem = params_.empty() ? 4 : static_cast<int64_t>(dtype_size(params_[0].dtype()));
  const std::string ranks =
      str(dist::size(), dist::size() == 1 ? " rank" : " ranks");  // dist_force
  spdlog::info(
      "data parallel: {}, batch {} per rank x {} accumulation steps x {} = {} images per update; "
      "gradient buckets: {} (largest {:.1f} MiB, dist_bucket_mb {}), {} reduction{}",
      ranks, cfg.batch_size, cfg.grad_accum_steps, ranks,
      cfg.batch_size * cfg.grad_accum_steps * dist::size(), buckets_->size(),
      static_cast<double>(largest * elem) / (1 << 20), cfg.dist_bucket_mb,
      !params_.empty() && params_[0].device() == Device::cuda ? "NCCL"
      : dist::info().mpi                                      ? "MPI"
                                                              : "local (one process)",
      zero_ ? ", ZeRO-1 optimizer state sharding" : "");
  if (zero_)
    spdlog::info("ZeRO-1: {:.2f} MiB of optimizer state on this rank", static_cast<double>(zero_opt_->state_bytes()) / (1 << 20));
}

DataParallel::~DataParallel() {
  for (Tensor& p : params_)
    if (auto slot = p.grad_slot()) slot->on_grad_final = nullptr;
}

void DataParallel::backward(const Tensor& loss, bool sync) {
  if (!active_) {
    autograd::backward(loss);
    return;
  }
  sync_ = sync;
  next_launch_ = 0;
  works_.assign(buckets_->size(), dist::Work());
  for (size_t b = 0; b < buckets_->size(); ++b) pending_[b] = static_cast<int>((*buckets_)[b].entries.size());
  autograd::backward(loss);  // launches buckets from on_grad_final as they complete
  if (!sync_) return;
  if (stalls_for_test()) std::this_thread::sleep_for(std::chrono::hours(1));
  launch_ready_buckets(true);  // gradients no entry reached (unused parameters) stay zero
  for (dist::Work& w : works_) w.wait();
  sync_ = false;
}

void DataParallel::on_grad_final(size_t bucket) {
  if (!sync_) return;
  --pending_[bucket];
  launch_ready_buckets(false);
}

void DataParallel::launch_ready_buckets(bool all) {
  if (stalls_for_test()) return;
  while (next_launch_ < buckets_->size() && (all || pending_[next_launch_] == 0)) {
    const size_t b = next_launch_++;
    GradBucket& bucket = (*buckets_)[b];
    // a parameter that no entry reached since zero_grad holds a stale buffer: grad() zero-fills it
    for (const BucketEntry& e : bucket.entries) (void)params_[e.param].grad();
    const std::string what = str(zero_ ? "reduce-scatter" : "all-reduce", " of gradient bucket ", b, " (",
                                 bucket.entries.size(), " parameters)");
    works_[b] = zero_ ? dist::reduce_scatter(bucket.flat, dist::Reduce::avg, what)
                      : dist::all_reduce(bucket.flat.slice(0, 0, bucket.numel), dist::Reduce::avg, what);
  }
}

void DataParallel::clip_and_step(Optimizer& opt, std::optional<double> clip) {
  if (zero_) {
    HG_CHECK(&opt == zero_opt_, "DataParallel: zero_stage 1 steps the optimizer it made");
    if (clip) zero_opt_->clip_grad_norm(*clip);
    zero_opt_->step();
  } else {
    if (clip) clip_gradients(opt, *clip);
    opt.step();
  }
  ++updates_;
  if (active_ && check_every_ > 0 && updates_ % check_every_ == 0) check_replicas_agree();
}

std::vector<double> DataParallel::sum_over_ranks(const std::vector<double>& values) const {
  return active_ ? dist::sum(values, "sum of the step's loss and images over ranks") : values;
}

bool DataParallel::any_rank(bool flag) const { return active_ ? dist::any(flag, "interrupt flag") : flag; }

void DataParallel::reduce_evaluation(EvalResult& ev) const {
  if (!active_) return;
  const auto n = static_cast<double>(ev.images);
  const std::vector<double> sums = dist::sum({ev.loss * n, ev.top1 * n, ev.top5 * n, n, static_cast<double>(ev.nonfinite)},
                                             "evaluation metrics");
  ev.images = static_cast<int64_t>(sums[3]);
  ev.nonfinite = static_cast<int64_t>(sums[4]);
  const double total = sums[3] > 0 ? sums[3] : 1.0;
  ev.loss = sums[0] / total;
  ev.top1 = sums[1] / total;
  ev.top5 = sums[2] / total;
}

void DataParallel::check_replicas_agree() const {
  std::vector<uint64_t> mine;
  for (const ParamRef& p : named_) mine.push_back(hash_bytes(p.tensor));
  const std::vector<uint64_t> all = dist::all_gather(mine, "parameter hashes (dist_check_every)");
  const size_t n = mine.size();
  for (int r = 1; r < dist::size(); ++r)
    for (size_t i = 0; i < n; ++i)
      HG_CHECK(all[static_cast<size_t>(r) * n + i] == all[i], "data parallel: after update ", updates_,
               " parameter ", named_[i].name, " differs between rank 0 and rank ", r,
               " (the replicas diverged: non-deterministic reduction or a rank-dependent step)");
  spdlog::debug("data parallel: replicas agree after update {}", updates_);
}

}  // namespace hg::train
