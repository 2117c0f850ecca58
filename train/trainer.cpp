// The training loop (see trainer.h). The pieces it relies on live in their own files: the run folder
// and resume choice (run_folder.h), what a resume may change (resume_settings.h), evaluation
// (evaluate.h), summary.csv (summary.h), checkpoint-N ranking (checkpoint_history.h), and the one
// file writer (core/atomic_file.h).
#include "train/trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "core/atomic_file.h"
#include "core/autograd.h"
#include "core/memory.h"
#include "core/ops.h"
#include "data/from_config.h"
#include "dist/process_group.h"
#include "layers/loss.h"
#include "models/convnext.h"
#include "train/checkpoint.h"
#include "train/checkpoint_history.h"
#include "train/console.h"
#include "train/data_parallel.h"
#include "train/evaluate.h"
#include "train/optimizer.h"
#include "train/resume_settings.h"
#include "train/run_folder.h"
#include "train/schedule.h"
#include "train/summary.h"

#ifdef HAARGRAD_WITH_CUDA
#include "kernels/cuda/context.h"
#endif

namespace fs = std::filesystem;

namespace hg::train {
namespace {

std::atomic<bool> g_interrupt{false};
void on_sigint(int) {
  g_interrupt = true;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C kills at once
}

// Installs the Ctrl-C handler for the training loop and restores the previous one on every exit.
struct SigintGuard {
  SigintGuard() : previous(std::signal(SIGINT, on_sigint)) { g_interrupt = false; }
  ~SigintGuard() { std::signal(SIGINT, previous); }
  void (*previous)(int);
};

std::string timestamp() {
  std::time_t t = std::time(nullptr);
  char b[32];
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(b, sizeof b, "%Y%m%d-%H%M%S", &tm);
  return b;
}

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The checkpoints a stopped run can be taken up from, for the messages that stop it: only files
// this run wrote after a finite evaluation (or the checkpoint it resumed from) are named.
struct GoodCheckpoints {
  std::optional<std::string> resumable;  // path, with where it stands
  std::string resumable_at;
  std::optional<std::string> best;       // model_best.safetensors, with its epoch and top-1
  std::string best_is;

  std::string describe() const {
    if (!resumable) return "no checkpoint of this run was written yet";
    std::string s = str("the run can go on from ", *resumable, " (", resumable_at, ")");
    if (best) s += str("; the best model is ", *best, " (", best_is, ")");
    return s;
  }
};

std::string position(int64_t epoch, int64_t step) {
  return step > 0 ? str("epoch ", epoch + 1, " after step ", step) : str("end of epoch ", epoch);
}

}  // namespace

Device resolve_device(const std::string& device) {
  bool gpu = false;
#ifdef HAARGRAD_WITH_CUDA
  gpu = hg::cuda::available();
#endif
  if (device == "cpu") return Device::cpu;
  if (device == "cuda") {
    HG_CHECK(gpu, "device 'cuda' requested but no usable GPU (or haargrad was built without CUDA); "
                  "run on the CPU with --device cpu");
    return Device::cuda;
  }
  HG_CHECK(device == "auto", "device must be auto, cpu or cuda, got '", device, "'");
  return gpu ? Device::cuda : Device::cpu;
}

TrainResult train(Config cfg, const TrainOptions& opts) {
  // Configuration time: the model exists, its keys fit together, img_size reaches through it.
  validate(cfg);
  // train/model_ema.h and train/finetune.h exist and are tested, but the epoch loop does not use
  // them yet: refuse rather than silently ignore (issue 14).
  HG_CHECK(!cfg.model_ema, "model_ema: true (decay ", cfg.model_ema_decay, ", warmup ",
           cfg.model_ema_warmup ? "on" : "off",
           ") is not wired into `haargrad train` yet; set model_ema: false (or --model-ema false)");
  HG_CHECK(cfg.initial_checkpoint.empty(), "initial_checkpoint '", cfg.initial_checkpoint,
           "': fine-tuning from a checkpoint is not wired into `haargrad train` yet; use --resume to "
           "continue a run");
  const fs::path out_root = cfg.output.empty() ? "output/train" : cfg.output;

  // ---- the run folder: the resumed checkpoint's, or one claimed for this run alone ----
  std::string resume_path = cfg.resume, resume_reason;
  if (resume_path == "auto") {
    const ResumePick pick = pick_resume_checkpoint(out_root, cfg.experiment, cfg.epochs);
    resume_path = pick.checkpoint;
    resume_reason = pick.reason;
  }
  // data parallel: rank 0 picks the checkpoint and the run folder, and alone writes (dist/)
  resume_path = dist::broadcast(resume_path, 0, "checkpoint to resume");
  fs::path run_dir;
  std::optional<TrainState> resumed;  // the position of the checkpoint resumed from
  if (!resume_path.empty()) {
    HG_CHECK(file_exists(resume_path), "resume: checkpoint ", resume_path, " does not exist");
    run_dir = fs::path(resume_path).parent_path();
    if (run_dir.empty()) run_dir = ".";
    resumed = read_train_state(resume_path).value_or(TrainState{});
  } else {
    const std::string name = cfg.experiment.empty()
                                 ? timestamp() + "-" + cfg.model + "-" + std::to_string(cfg.img_size)
                                 : cfg.experiment;
    if (dist::is_main()) {
      run_dir = claim_run_folder(out_root, name);
      io::write_file_atomic((run_dir / "args.yaml").string(), to_yaml(cfg));
    }
    run_dir = dist::broadcast(run_dir.string(), 0, "run folder");
  }

  Console console(dist::is_main() ? (run_dir / "log.txt").string() : "", opts.plain_output);
  if (!dist::is_main()) spdlog::set_level(spdlog::level::warn);  // rank 0 speaks for the run
  spdlog::info("run folder {}", run_dir.string());
  if (!resume_reason.empty()) spdlog::info("{}", resume_reason);
  if (resumed && resumed->step_in_epoch == 0 && resumed->epoch >= cfg.epochs) {
    spdlog::warn("nothing to train: all {} epochs of this run are done (best top-1 {:.2f}% at epoch {}); "
                 "set --epochs higher to train on", cfg.epochs, resumed->best_top1, resumed->best_epoch);
    TrainResult done;
    done.run_dir = run_dir.string();
    done.best_top1 = resumed->best_top1;
    done.best_epoch = resumed->best_epoch;
    return done;
  }
  const Device device = resolve_device(cfg.device);
#ifdef HAARGRAD_WITH_CUDA
  if (device == Device::cuda) hg::cuda::set_allow_tf32(cfg.precision == "tf32");
#endif

  // ---- data ----
  data::Datasets ds = data::make_datasets(cfg);
  auto train_loader = data::make_loader(cfg, true, ds.train);
  auto val_loader = data::make_loader(cfg, false, ds.val);
  spdlog::info("train: {}", ds.train->describe());
  spdlog::info("val:   {}", ds.val->describe());
  const int64_t steps_per_epoch = train_loader->batches_per_epoch();
  HG_CHECK(steps_per_epoch > 0, "the training set (", ds.train->size(), " images) gives no full batch of ", cfg.batch_size);
  const int64_t accum = cfg.grad_accum_steps;
  const int64_t updates_per_epoch = std::max<int64_t>(1, steps_per_epoch / accum);

  // ---- a resume: what this session may change, and args.yaml kept rerunnable ----
  const fs::path args_path = run_dir / "args.yaml";
  if (resumed) {
    const bool have_args = file_exists(args_path);
    const std::string recorded_text = have_args ? io::read_file(args_path.string()) : checkpoint_config_yaml(resume_path);
    const std::string source = have_args ? args_path.string() : str("the config stored in ", resume_path);
    if (!recorded_text.empty()) {
      Config recorded = config_from_yaml(recorded_text, source);
      // another number of ranks: the same images per update need another batch_size per rank
      const std::string rescaled = rescale_batch_for_ranks(recorded, resumed->world_size, dist::size());
      if (!rescaled.empty()) spdlog::info("{}", rescaled);
      const ResumeSettings rs = reconcile_resume(recorded, source, cfg, resumed->epoch, resumed->step_in_epoch,
                                                 resumed->updates, updates_per_epoch);
      for (const std::string& note : rs.notes) spdlog::warn("{}", note);
      cfg = rs.session;
      if (dist::is_main() && (rs.args_changed || !have_args)) io::write_file_atomic(args_path.string(), to_yaml(rs.args));
    } else {  // a plain state_dict: this session's config is the run's
      Config args = cfg;
      args.resume = "";
      if (dist::is_main()) io::write_file_atomic(args_path.string(), to_yaml(args));
    }
  }
  const std::string config_yaml = to_yaml(cfg);

  // ---- model, optimizer, schedule ----
  ModelConfig mcfg = model_config_from(cfg);
  ConvNeXt model(mcfg, static_cast<uint64_t>(cfg.seed), DType::f32, device);
  model.set_wtconv_mode(cfg.wtconv_mode == "reference" ? WTConvMode::reference : WTConvMode::fused);
  // bf16: mixed precision (f32 master weights and optimizer state, bf16 activations; no loss scaling
  // is needed: bf16 has f32's exponent range, so gradients do not underflow as in fp16)
  model.compute_dtype = cfg.precision == "bf16" ? DType::bf16 : DType::f32;
  std::vector<ParamRef> params;
  for (const ParamRef& p : model.named_tensors())
    if (p.trainable) params.push_back(p);
  std::unique_ptr<Optimizer> opt;
  auto groups = param_groups_weight_decay(params, cfg.lr, cfg.weight_decay);
  if (cfg.opt == "adamw")
    opt = std::make_unique<AdamW>(groups);
  else
    opt = std::make_unique<SGD>(groups, cfg.momentum);
  spdlog::info("model {}: {} trainable parameters ({} fixed), {:.4g} GMACs/image at {} px, device {}", cfg.model,
               model.num_trainable(), model.num_fixed(), forward_macs(mcfg, static_cast<int>(cfg.img_size)) / 1e9,
               cfg.img_size, device_name(device));
  const RunSchedule sched(cfg, updates_per_epoch);

  TrainState st;
  SummaryLines summary;
  GoodCheckpoints good;
  const fs::path summary_path = run_dir / "summary.csv", last_path = run_dir / "last.safetensors",
                 best_path = run_dir / "model_best.safetensors", recovery_path = run_dir / "recovery.safetensors";
  if (resumed) {
    st = load_checkpoint(resume_path, model, opt.get());
    spdlog::info("resumed from {}: {} epochs done, continuing at epoch {} step {}", resume_path, st.epoch,
                 st.epoch + 1, st.step_in_epoch);
    summary = read_summary(summary_path.string(), st.epoch);
    good.resumable = resume_path;
    good.resumable_at = position(st.epoch, st.step_in_epoch);
    if (st.best_epoch >= 1 && file_exists(best_path)) {
      good.best = best_path.string();
      good.best_is = str("epoch ", st.best_epoch, ", top-1 ", st.best_top1, "%");
    }
  }

  DataParallel dp(cfg, model, opt);  // mpirun -np N: averages gradients over the ranks (no-op alone)
  st.world_size = dist::size();

  SigintGuard sigint;
  TrainResult result;
  result.run_dir = run_dir.string();
  double total_train_seconds = 0, total_data_wait = 0;
  int64_t total_train_images = 0;
  std::set<std::string> history_notes_said;
  const int64_t last_epoch = opts.stop_after_epoch >= 0 ? std::min<int64_t>(cfg.epochs, opts.stop_after_epoch) : cfg.epochs;

  for (int64_t epoch = st.epoch; epoch < last_epoch; ++epoch) {
    memory::reset_peak(device);
    const int64_t start_step = (epoch == st.epoch) ? st.step_in_epoch : 0;
    double loss_sum = start_step > 0 ? st.epoch_loss_sum : 0.0;
    int64_t images = start_step > 0 ? st.epoch_images : 0;
    train_loader->start_epoch(epoch, start_step);
    opt->set_lr(sched.lr(epoch, start_step, st.updates));
    console.start_bar(str("epoch ", epoch + 1, "/", cfg.epochs), steps_per_epoch);
    auto t0 = std::chrono::steady_clock::now();
    int64_t epoch_images_timed = 0;
    data::Batch b;
    int64_t step = start_step;
    while (train_loader->next(b)) {
      Tensor x = b.images.to(device), y = b.labels.to(device);
      // mixup / cutmix batches carry soft targets (with the label smoothing already in them)
      Tensor loss = b.targets.defined()
                        ? soft_target_cross_entropy(model.forward(x, true), b.targets.to(device))
                        : cross_entropy(model.forward(x, true), y, cfg.smoothing);
      const double lv = loss.item();
      HG_CHECK(std::isfinite(lv), "non-finite loss (", lv, ") at epoch ", epoch + 1, " step ", step + 1,
               ": stopping; nothing of this epoch is saved; ", good.describe());
      dp.backward(accum > 1 ? ops::scale(loss, 1.0 / static_cast<double>(accum)) : loss,
                  (step + 1) % accum == 0 || step + 1 == steps_per_epoch);  // only an update's last micro-step syncs
      ++step;
      const std::vector<double> global = dp.sum_over_ranks({lv * static_cast<double>(b.labels.numel()),
                                                            static_cast<double>(b.labels.numel())});
      const auto bs = static_cast<int64_t>(global[1]);  // images of the step over all ranks
      loss_sum += global[0];
      images += bs;
      epoch_images_timed += bs;
      if (step % accum == 0 || step == steps_per_epoch) {
        opt->set_lr(sched.lr(epoch, step - 1, st.updates));
        dp.clip_and_step(*opt, cfg.clip_grad);
        opt->zero_grad();
        ++st.updates;
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double lr_now = opt->param_groups()[0].lr;
      const double ips = secs > 0 ? static_cast<double>(epoch_images_timed) / secs : 0.0;
      if (console.is_terminal()) {
        console.update_bar(step, str("loss ", fmt::format("{:.4f}", loss_sum / static_cast<double>(images)), " lr ",
                                     fmt::format("{:.3g}", lr_now), " ", fmt::format("{:.0f}", ips), " img/s"));
      } else if (step % cfg.log_interval == 0 || step == steps_per_epoch) {
        spdlog::info("epoch {}/{} step {}/{} loss {:.4f} lr {:.3g} {:.0f} img/s", epoch + 1, cfg.epochs, step,
                     steps_per_epoch, loss_sum / static_cast<double>(images), lr_now, ips);
      }
      if (opts.after_step && opts.after_step(epoch, step, model)) g_interrupt = true;
      if (dp.any_rank(g_interrupt)) break;
    }
    console.end_bar();
    const double train_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total_train_seconds += train_secs;
    total_train_images += epoch_images_timed;
    const double epoch_data_wait = train_loader->stats().wait_seconds;
    total_data_wait += epoch_data_wait;

    if (dp.any_rank(g_interrupt)) {  // Ctrl-C: save where we are (only whole steps), then leave cleanly
      TrainState rs = st;
      rs.epoch = epoch;
      rs.step_in_epoch = step;
      rs.epoch_loss_sum = loss_sum;
      rs.epoch_images = images;
      rs.eval_top1 = rs.eval_top5 = rs.eval_loss = -1;  // no evaluation closes a partial epoch
      save_checkpoint(recovery_path.string(), model, opt.get(), rs, config_yaml);
      spdlog::warn("interrupted at epoch {} step {}: recovery checkpoint {} (resume with --resume {})", epoch + 1,
                   step, recovery_path.string(), recovery_path.string());
      result.interrupted = true;
      break;
    }

    // ---- evaluate, summarise; a non-finite evaluation stops the run and saves nothing ----
    EvalResult ev = evaluate(model, *val_loader, device, epoch);
    dp.reduce_evaluation(ev);  // data parallel: each rank evaluated its shard
    const double peak_mib = static_cast<double>(memory::stats(device).total_peak) / (1 << 20);
    const SummaryRow row{epoch + 1, loss_sum / static_cast<double>(std::max<int64_t>(images, 1)), ev.loss, ev.top1,
                         ev.top5, opt->param_groups()[0].lr,
                         train_secs > 0 ? static_cast<double>(epoch_images_timed) / train_secs : 0.0, peak_mib};
    summary.lines.push_back(format_summary_row(row));
    summary.eval_top1[epoch + 1] = ev.finite() ? ev.top1 : NAN;
    if (dist::is_main()) io::write_file_atomic(summary_path.string(), summary_csv(summary.lines));
    // Share of the epoch's step time spent blocked on the loader: above a few % the loader is the step.
    const double data_wait = train_secs > 0 ? std::min(1.0, epoch_data_wait / train_secs) : 0.0;
    spdlog::info("epoch {}/{}: train loss {:.4f}, eval loss {:.4f}, top-1 {:.2f}%, top-5 {:.2f}%, {:.0f} img/s, "
                 "waited for data {:.1f}% of the time, peak {:.1f} MiB",
                 epoch + 1, cfg.epochs, row.train_loss, ev.loss, ev.top1, ev.top5, row.img_per_sec, 100 * data_wait,
                 peak_mib);
    result.last_top1 = ev.top1;
    result.last_top5 = ev.top5;
    HG_CHECK(ev.finite(), "epoch ", epoch + 1, ": the evaluation gave non-finite outputs for ", ev.nonfinite, " of ",
             ev.images, " images (eval loss ", ev.loss, "): the model has diverged (a lower lr or clip_grad may help); ",
             "stopping; nothing of this epoch is saved (summary.csv records it); ", good.describe());

    st.epoch = epoch + 1;
    st.step_in_epoch = 0;
    st.epoch_loss_sum = 0;
    st.epoch_images = 0;
    st.eval_top1 = ev.top1;
    st.eval_top5 = ev.top5;
    st.eval_loss = ev.loss;
    const bool is_best = ev.top1 > st.best_top1;
    if (is_best) {
      st.best_top1 = ev.top1;
      st.best_epoch = epoch + 1;
    }
    save_checkpoint(last_path.string(), model, opt.get(), st, config_yaml);
    good.resumable = last_path.string();
    good.resumable_at = position(st.epoch, 0);
    // every rank called save_checkpoint (a ZeRO-1 optimizer gathers its shards); rank 0 wrote it
    if (is_best) {
      if (dist::is_main()) io::copy_file_atomic(last_path.string(), best_path.string());
      good.best = best_path.string();
      good.best_is = str("epoch ", st.best_epoch, ", top-1 ", st.best_top1, "%");
    }
    if (dist::is_main() && cfg.checkpoint_hist > 0) {
      io::copy_file_atomic(last_path.string(), (run_dir / history_file_name(epoch + 1)).string());
      std::vector<std::string> notes;
      const std::vector<HistoryEntry> kept = scan_history(run_dir, summary.eval_top1, &notes);
      for (const std::string& n : notes)
        if (history_notes_said.insert(n).second) spdlog::warn("checkpoint_hist: {}", n);
      for (int64_t victim : history_to_delete(kept, cfg.checkpoint_hist)) {
        std::error_code ec;
        fs::remove(run_dir / history_file_name(victim), ec);
        if (ec) spdlog::warn("checkpoint_hist: cannot remove {}: {}", (run_dir / history_file_name(victim)).string(), ec.message());
      }
    }
    std::error_code ec;
    if (dist::is_main() && (fs::remove(recovery_path, ec), ec))
      spdlog::warn("cannot remove the stale {}: {}", recovery_path.string(), ec.message());
  }

  result.best_top1 = st.best_top1;
  result.best_epoch = st.best_epoch;
  result.train_img_per_sec = total_train_seconds > 0 ? static_cast<double>(total_train_images) / total_train_seconds : 0;
  result.data_img_per_sec = train_loader->stats().images_per_second();
  result.data_wait_fraction = total_train_seconds > 0 ? std::min(1.0, total_data_wait / total_train_seconds) : 0.0;
  result.peak_mib = static_cast<double>(memory::stats(device).total_peak) / (1 << 20);
  result.corrupt_skipped = ds.train->corrupt_skipped() + ds.val->corrupt_skipped();
  if (result.best_epoch >= 1)
    spdlog::info("done: best top-1 {:.2f}% (epoch {}), train {:.0f} img/s, data loading {:.0f} img/s, "
                 "waited for data {:.1f}% of the time",
                 result.best_top1, result.best_epoch, result.train_img_per_sec, result.data_img_per_sec,
                 100 * result.data_wait_fraction);
  else
    spdlog::info("done: no epoch finished yet, train {:.0f} img/s, data loading {:.0f} img/s, waited for data "
                 "{:.1f}% of the time",
                 result.train_img_per_sec, result.data_img_per_sec, 100 * result.data_wait_fraction);
  spdlog::info("{}", memory::format_stats(device));
  if (result.corrupt_skipped > 0) spdlog::warn("{} corrupt images were skipped", result.corrupt_skipped);
  spdlog::info("run folder {}", run_dir.string());
  return result;
}

}  // namespace hg::train
