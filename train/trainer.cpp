// The training loop (see trainer.h).
#include "train/trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <spdlog/spdlog.h>

#include "core/autograd.h"
#include "core/memory.h"
#include "core/ops.h"
#include "data/from_config.h"
#include "layers/loss.h"
#include "models/convnext.h"
#include "train/checkpoint.h"
#include "train/console.h"
#include "train/optimizer.h"
#include "train/schedule.h"

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

std::vector<int> ints(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

std::string timestamp() {
  std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y%m%d-%H%M%S", std::localtime(&t));
  return b;
}

// Atomic text write: temporary file, then rename.
void write_file_atomic(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    HG_CHECK(f.good(), "cannot write ", tmp.string());
    f << text;
    HG_CHECK(f.good(), "write failed: ", tmp.string());
  }
  fs::rename(tmp, path);
}

struct SummaryRow {
  int64_t epoch;
  double train_loss, eval_loss, eval_top1, eval_top5, lr, img_per_sec, peak_mib;
};

std::string fmt_row(const SummaryRow& r) {
  char b[256];
  std::snprintf(b, sizeof b, "%lld,%.8g,%.8g,%.6g,%.6g,%.8g,%.1f,%.1f", static_cast<long long>(r.epoch),
                r.train_loss, r.eval_loss, r.eval_top1, r.eval_top5, r.lr, r.img_per_sec, r.peak_mib);
  return b;
}
const char* kSummaryHeader = "epoch,train_loss,eval_loss,eval_top1,eval_top5,lr,train_img_per_sec,peak_memory_mib";

// The newest checkpoint under the output root (resume: auto).
std::string find_latest_checkpoint(const std::string& root) {
  fs::path best;
  fs::file_time_type best_time{};
  if (!fs::exists(root)) return "";
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && (name == "last.safetensors" || name == "recovery.safetensors") &&
        (best.empty() || e.last_write_time() > best_time)) {
      best = e.path();
      best_time = e.last_write_time();
    }
  }
  return best.string();
}

// The whole file, or "" when it does not exist.
std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return "";
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

// "key old -> new, ..." for the keys whose values differ between two to_yaml() texts ("resume",
// which names the checkpoint being resumed, is left out).
std::string config_changes(const std::string& before, const std::string& after) {
  auto parse = [](const std::string& text) {
    std::map<std::string, std::string> kv;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      const size_t colon = line.find(": ");
      if (line.empty() || line[0] == '#' || colon == std::string::npos) continue;
      kv[line.substr(0, colon)] = line.substr(colon + 2);
    }
    return kv;
  };
  const auto a = parse(before), b = parse(after);
  std::string out;
  for (const auto& [key, value] : b) {
    if (key == "resume") continue;
    auto it = a.find(key);
    const std::string old = it == a.end() ? "(unset)" : it->second;
    if (old != value) out += (out.empty() ? "" : ", ") + key + " " + old + " -> " + value;
  }
  return out;
}

struct EvalResult {
  double loss = 0, top1 = 0, top5 = 0;
};

EvalResult evaluate(ConvNeXt& model, data::DataLoader& loader, Device device, int64_t epoch) {
  autograd::NoGradGuard no_grad;
  loader.start_epoch(epoch);
  data::Batch b;
  double loss_sum = 0;
  int64_t n = 0, c1 = 0, c5 = 0;
  const int64_t k5 = std::min<int64_t>(5, model.config.num_classes);
  while (loader.next(b)) {
    Tensor x = b.images.to(device), y = b.labels.to(device);
    Tensor logits = model.forward(x, false);
    const int64_t bs = b.labels.numel();
    loss_sum += cross_entropy(logits, y).item() * static_cast<double>(bs);
    c1 += correct_topk(logits, y, 1);
    c5 += correct_topk(logits, y, k5);
    n += bs;
  }
  EvalResult r;
  if (n > 0) {
    r.loss = loss_sum / static_cast<double>(n);
    r.top1 = 100.0 * static_cast<double>(c1) / static_cast<double>(n);
    r.top5 = 100.0 * static_cast<double>(c5) / static_cast<double>(n);
  }
  return r;
}

}  // namespace

ModelConfig model_config_from(const Config& c) {
  ModelConfig m = model_config(c.model);
  m.num_classes = static_cast<int>(c.num_classes);
  m.in_chans = static_cast<int>(c.in_chans);
  m.drop_path_rate = c.drop_path;
  m.ls_init_value = c.ls_init_value;
  if (!c.depths.empty()) m.depths = ints(c.depths);
  if (!c.dims.empty()) m.dims = ints(c.dims);
  if (c.patch_size) m.patch_size = static_cast<int>(*c.patch_size);
  if (c.kernel_size) m.kernel_size = static_cast<int>(*c.kernel_size);
  if (!c.wt_levels.empty()) m.wt_levels = ints(c.wt_levels);
  m.validate();
  return m;
}

Device resolve_device(const std::string& device) {
  bool gpu = false;
#ifdef HAARGRAD_WITH_CUDA
  gpu = hg::cuda::available();
#endif
  if (device == "cpu") return Device::cpu;
  if (device == "cuda") {
    HG_CHECK(gpu, "device 'cuda' requested but no usable GPU (or haargrad was built without CUDA)");
    return Device::cuda;
  }
  HG_CHECK(device == "auto", "device must be auto, cpu or cuda, got '", device, "'");
  return gpu ? Device::cuda : Device::cpu;
}

TrainResult train(Config cfg, const TrainOptions& opts) {
  // ---- resume: the checkpoint's folder is the run folder ----
  std::string resume_path = cfg.resume;
  const std::string out_root = cfg.output.empty() ? "output/train" : cfg.output;
  if (resume_path == "auto") {
    // the newest checkpoint of this experiment (its folder), or of any run under the output root
    const std::string where = cfg.experiment.empty() ? out_root : (fs::path(out_root) / cfg.experiment).string();
    resume_path = find_latest_checkpoint(where);
    HG_CHECK(!resume_path.empty(), "resume: auto found no last.safetensors / recovery.safetensors under ", where);
  }
  fs::path run_dir;
  if (!resume_path.empty()) {
    HG_CHECK(fs::exists(resume_path), "resume: checkpoint ", resume_path, " does not exist");
    run_dir = fs::path(resume_path).parent_path();
  } else {
    std::string name = cfg.experiment.empty() ? timestamp() + "-" + cfg.model + "-" + std::to_string(cfg.img_size)
                                              : cfg.experiment;
    run_dir = fs::path(out_root) / name;
    // never mix two runs in one folder: number a repeated experiment name
    for (int i = 2; fs::exists(run_dir / "summary.csv"); ++i) run_dir = fs::path(out_root) / (name + "-" + std::to_string(i));
  }
  fs::create_directories(run_dir);
  const std::string config_yaml = to_yaml(cfg);
  // A resumed run keeps the args.yaml it started with (so `haargrad train run/args.yaml` reruns it);
  // what this session changes is said once below, and every checkpoint stores the config it used.
  const std::string run_args = read_file(run_dir / "args.yaml");
  if (resume_path.empty() || run_args.empty()) write_file_atomic(run_dir / "args.yaml", config_yaml);

  Console console((run_dir / "log.txt").string(), opts.plain_output);
  const Device device = resolve_device(cfg.device);
#ifdef HAARGRAD_WITH_CUDA
  if (device == Device::cuda) hg::cuda::set_allow_tf32(cfg.precision == "tf32");
#endif
  spdlog::info("run folder {}", run_dir.string());
  if (!resume_path.empty() && !run_args.empty()) {
    const std::string changed = config_changes(run_args, config_yaml);
    if (!changed.empty()) spdlog::warn("resuming with settings that differ from the run's args.yaml: {}", changed);
  }

  // ---- data ----
  data::Datasets ds = data::make_datasets(cfg);
  auto train_loader = data::make_loader(cfg, true, ds.train);
  auto val_loader = data::make_loader(cfg, false, ds.val);
  spdlog::info("train: {}", ds.train->describe());
  spdlog::info("val:   {}", ds.val->describe());

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

  const int64_t steps_per_epoch = train_loader->batches_per_epoch();
  HG_CHECK(steps_per_epoch > 0, "the training set (", ds.train->size(), " images) gives no full batch of ", cfg.batch_size);
  const int64_t accum = cfg.grad_accum_steps;
  const int64_t updates_per_epoch = std::max<int64_t>(1, steps_per_epoch / accum);
  LrSchedule sched;
  sched.kind = cfg.sched;
  sched.lr = cfg.lr;
  sched.warmup_lr = cfg.warmup_lr;
  sched.min_lr = cfg.min_lr;
  const double unit = cfg.sched_on_updates ? static_cast<double>(updates_per_epoch) : 1.0;
  sched.warmup_t = static_cast<double>(cfg.warmup_epochs) * unit;
  sched.t_total = static_cast<double>(cfg.epochs) * unit;

  TrainState st;
  std::vector<std::string> summary_lines;
  if (!resume_path.empty()) {
    st = load_checkpoint(resume_path, model, opt.get());
    if (st.epoch < cfg.epochs)
      spdlog::info("resumed from {}: {} epochs done, continuing at epoch {} step {}", resume_path, st.epoch,
                   st.epoch + 1, st.step_in_epoch);
    std::ifstream f(run_dir / "summary.csv");
    std::string line;
    for (std::getline(f, line); std::getline(f, line);)  // skip the header
      if (!line.empty()) {
        int64_t e = std::stoll(line.substr(0, line.find(',')));
        if (e <= st.epoch) summary_lines.push_back(line);  // 1-based; rows after the checkpoint are redone
      }
  }

  // best checkpoints by top-1 (timm CheckpointSaver: keep checkpoint_hist)
  std::vector<std::pair<double, int64_t>> kept;  // (top1, epoch)
  for (const auto& e : fs::directory_iterator(run_dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind("checkpoint-", 0) == 0 && e.path().extension() == ".safetensors") {
      // metric unknown from the name: treat as kept with its epoch; re-ranked when saving
      int64_t ep = std::stoll(n.substr(11));
      kept.emplace_back(-1.0, ep);
    }
  }

  if (st.epoch >= cfg.epochs) {
    spdlog::warn("nothing to train: all {} epochs of this run are done (best top-1 {:.2f}% at epoch {}); "
                 "set --epochs higher to train on", cfg.epochs, st.best_top1, st.best_epoch);
    TrainResult done;
    done.run_dir = run_dir.string();
    done.best_top1 = st.best_top1;
    done.best_epoch = st.best_epoch;
    return done;
  }

  g_interrupt = false;
  auto old_handler = std::signal(SIGINT, on_sigint);
  TrainResult result;
  result.run_dir = run_dir.string();
  double total_train_seconds = 0, total_data_wait = 0;
  int64_t total_train_images = 0;
  const int64_t last_epoch = opts.stop_after_epoch >= 0 ? std::min<int64_t>(cfg.epochs, opts.stop_after_epoch) : cfg.epochs;

  for (int64_t epoch = st.epoch; epoch < last_epoch; ++epoch) {
    memory::reset_peak(device);
    const int64_t start_step = (epoch == st.epoch) ? st.step_in_epoch : 0;
    double loss_sum = start_step > 0 ? st.epoch_loss_sum : 0.0;
    int64_t images = start_step > 0 ? st.epoch_images : 0;
    train_loader->start_epoch(epoch, start_step);
    const double epoch_lr_t = static_cast<double>(epoch) * unit;
    if (!cfg.sched_on_updates) opt->set_lr(sched.at(epoch_lr_t));
    console.start_bar(str("epoch ", epoch + 1, "/", cfg.epochs), steps_per_epoch);
    auto t0 = std::chrono::steady_clock::now();
    int64_t epoch_images_timed = 0;
    data::Batch b;
    int64_t step = start_step;
    while (train_loader->next(b)) {
      Tensor x = b.images.to(device), y = b.labels.to(device);
      Tensor loss = cross_entropy(model.forward(x, true), y, cfg.smoothing);
      const double lv = loss.item();
      HG_CHECK(std::isfinite(lv), "non-finite loss (", lv, ") at epoch ", epoch + 1, " step ", step + 1,
               ": stopping; the last good checkpoint is kept");
      autograd::backward(accum > 1 ? ops::scale(loss, 1.0 / static_cast<double>(accum)) : loss);
      ++step;
      const int64_t bs = b.labels.numel();
      loss_sum += lv * static_cast<double>(bs);
      images += bs;
      epoch_images_timed += bs;
      if (step % accum == 0 || step == steps_per_epoch) {
        if (cfg.sched_on_updates) opt->set_lr(sched.at(static_cast<double>(st.updates)));
        if (cfg.clip_grad) clip_grad_norm(opt->parameters(), *cfg.clip_grad);
        opt->step();
        opt->zero_grad();
        ++st.updates;
      }
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double lr_now = opt->param_groups()[0].lr;
      const double ips = secs > 0 ? static_cast<double>(epoch_images_timed) / secs : 0.0;
      if (console.is_terminal()) {
        char s[128];
        std::snprintf(s, sizeof s, "loss %.4f lr %.3g %.0f img/s", loss_sum / static_cast<double>(images), lr_now, ips);
        console.update_bar(step, s);
      } else if (step % cfg.log_interval == 0 || step == steps_per_epoch) {
        spdlog::info("epoch {}/{} step {}/{} loss {:.4f} lr {:.3g} {:.0f} img/s", epoch + 1, cfg.epochs, step,
                     steps_per_epoch, loss_sum / static_cast<double>(images), lr_now, ips);
      }
      if (g_interrupt) break;
    }
    console.end_bar();
    const double train_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total_train_seconds += train_secs;
    total_train_images += epoch_images_timed;
    const double epoch_data_wait = train_loader->stats().wait_seconds;
    total_data_wait += epoch_data_wait;

    if (g_interrupt) {  // Ctrl-C: save where we are (only whole steps), then leave cleanly
      TrainState rs = st;
      rs.epoch = epoch;
      rs.step_in_epoch = step;
      rs.epoch_loss_sum = loss_sum;
      rs.epoch_images = images;
      const fs::path p = run_dir / "recovery.safetensors";
      save_checkpoint(p.string(), model, opt.get(), rs, config_yaml);
      spdlog::warn("interrupted at epoch {} step {}: recovery checkpoint {} (resume with --resume {})", epoch + 1,
                   step, p.string(), p.string());
      result.interrupted = true;
      break;
    }

    // ---- evaluate, summarise, checkpoint ----
    EvalResult ev = evaluate(model, *val_loader, device, epoch);
    const double peak_mib = static_cast<double>(memory::stats(device).total_peak) / (1 << 20);
    SummaryRow row{epoch + 1, loss_sum / static_cast<double>(std::max<int64_t>(images, 1)), ev.loss, ev.top1, ev.top5,
                   opt->param_groups()[0].lr,
                   train_secs > 0 ? static_cast<double>(epoch_images_timed) / train_secs : 0.0, peak_mib};
    summary_lines.push_back(fmt_row(row));
    std::string csv = std::string(kSummaryHeader) + "\n";
    for (const auto& l : summary_lines) csv += l + "\n";
    write_file_atomic(run_dir / "summary.csv", csv);
    // Share of the epoch's step time spent blocked on the loader: above a few % the loader is the step.
    const double data_wait = train_secs > 0 ? std::min(1.0, epoch_data_wait / train_secs) : 0.0;
    spdlog::info("epoch {}/{}: train loss {:.4f}, eval loss {:.4f}, top-1 {:.2f}%, top-5 {:.2f}%, {:.0f} img/s, "
                 "waited for data {:.1f}% of the time, peak {:.1f} MiB",
                 epoch + 1, cfg.epochs, row.train_loss, ev.loss, ev.top1, ev.top5, row.img_per_sec, 100 * data_wait,
                 peak_mib);
    result.last_top1 = ev.top1;
    result.last_top5 = ev.top5;
    st.epoch = epoch + 1;
    st.step_in_epoch = 0;
    st.epoch_loss_sum = 0;
    st.epoch_images = 0;
    const bool is_best = ev.top1 > st.best_top1;
    if (is_best) {
      st.best_top1 = ev.top1;
      st.best_epoch = epoch + 1;
    }
    save_checkpoint((run_dir / "last.safetensors").string(), model, opt.get(), st, config_yaml);
    if (is_best) fs::copy_file(run_dir / "last.safetensors", run_dir / "model_best.safetensors",
                               fs::copy_options::overwrite_existing);
    if (cfg.checkpoint_hist > 0) {
      const fs::path cp = run_dir / ("checkpoint-" + std::to_string(epoch + 1) + ".safetensors");
      fs::copy_file(run_dir / "last.safetensors", cp, fs::copy_options::overwrite_existing);
      kept.emplace_back(ev.top1, epoch + 1);
      std::sort(kept.begin(), kept.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second > b.second); });
      while (static_cast<int64_t>(kept.size()) > cfg.checkpoint_hist) {
        fs::remove(run_dir / ("checkpoint-" + std::to_string(kept.back().second) + ".safetensors"));
        kept.pop_back();
      }
    }
    if (fs::exists(run_dir / "recovery.safetensors")) fs::remove(run_dir / "recovery.safetensors");
  }
  std::signal(SIGINT, old_handler);

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
