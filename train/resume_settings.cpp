// reconcile_resume (see resume_settings.h).
#include "train/resume_settings.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "core/error.h"
#include "train/schedule.h"

namespace hg::train {
namespace {

// (lr_base and its companions only say how a null lr was computed: the run's config holds the
// computed lr, resolve_lr)
const std::set<std::string> kScheduleKeys = {"epochs",          "lr",
                                             "lr_base",         "lr_base_size",
                                             "lr_base_scale",   "sched",
                                             "warmup_epochs",   "warmup_lr",
                                             "min_lr",          "sched_on_updates",
                                             "decay_epochs",    "decay_milestones",
                                             "decay_rate",      "warmup_prefix",
                                             "cooldown_epochs", "lr_noise",
                                             "lr_noise_pct",    "lr_noise_std",
                                             "lr_cycle_mul",    "lr_cycle_decay",
                                             "lr_cycle_limit",  "lr_k_decay",
                                             "patience_epochs"};
const std::set<std::string> kSessionKeys = {
    "device", "precision", "wtconv_mode", "workers", "pin_mem", "data_dir", "corrupt_images",
    "validation_batch_size", "log_interval", "checkpoint_hist", "output",
    "threads",  // CPU kernel threads: same results
    // how the GPU runs the same step: a graph replays it exactly, and a timed GEMM algorithm
    // changes the last bits only, as a device does
    "cuda_graph", "gemm_autotune", "experiment", "resume",
    // data parallel: how the same updates are computed
    // (a batch_size per rank follows the ranks' count:
    // rescale_batch_for_ranks in train/data_parallel.h)
    "dist_bucket_mb", "zero_stage", "dist_check_every", "dist_timeout", "dist_force",
    // what this resume restores (the optimizer state or not), and how often the position is
    // saved: the same run either way; args.yaml keeps the run's (run_session records
    // no_resume_opt false for a new run too)
    "no_resume_opt", "recovery_interval",
    // the weights a new run starts from: a resume loads its checkpoint's instead (timm), so a
    // moved file, or its path spelt otherwise, is no reason to refuse one
    "initial_checkpoint"};

void set_schedule(Config& c, const Config& from) {
  set_schedule_keys(c, schedule_segment(from, 0, 0, "resume"));
  c.cooldown_epochs = from.cooldown_epochs;  // (no segment's: it sets the run's length, no lr)
  c.patience_epochs = from.patience_epochs;  // (no segment's: plateau's, which cannot change)
  c.lr_base = from.lr_base;
  c.lr_base_size = from.lr_base_size;
  c.lr_base_scale = from.lr_base_scale;
}

// The keys as they act on the lr: sched none is lr throughout (timm's create_scheduler_v2 makes
// no scheduler for it: no warmup, no decay, no noise; LrSchedule::at), so its other keys are left
// out. (What they do to the run's length, warmup_epochs with warmup_prefix, the note says apart.)
ScheduleSegment acting(ScheduleSegment s) {
  if (s.sched != "none") return s;
  ScheduleSegment only_lr;
  only_lr.sched = s.sched;
  only_lr.lr = s.lr;
  only_lr.until_epoch = s.until_epoch;
  only_lr.until_step = s.until_step;
  return only_lr;
}

// The same keys as they act (under sched none a change of any key but lr adds no schedule_history
// entry), wherever each ends.
bool same_schedule(const ScheduleSegment& a, const ScheduleSegment& b) {
  ScheduleSegment x = acting(a), y = acting(b);
  x.until_epoch = y.until_epoch;
  x.until_step = y.until_step;
  return x == y;
}

// The schedule keys a resume may change, for messages: "epochs, lr, sched, ..." in table order
// (not lr_base and its companions, which only say how a null lr was computed).
std::string schedule_key_list() {
  std::string out;
  for (const std::string& k : config_keys())
    if (kScheduleKeys.count(k) && k.rfind("lr_base", 0) != 0)
      out += str(out.empty() ? "" : ", ", k);
  return out;
}

// "key old -> new, ..." over `keys` for the values that differ.
std::string differences(const Config& a, const Config& b, const std::set<std::string>& keys) {
  std::string out;
  for (const std::string& k : config_keys()) {
    if (!keys.count(k)) continue;
    const std::string va = value_text(a, k), vb = value_text(b, k);
    if (va != vb) out += str(out.empty() ? "" : ", ", k, " ", va, " -> ", vb);
  }
  return out;
}

// How many of `keys` differ between a and b (differences' count: a list value holds commas).
size_t changed_keys(const Config& a, const Config& b, const std::set<std::string>& keys) {
  size_t n = 0;
  for (const std::string& k : keys) n += value_text(a, k) != value_text(b, k) ? 1 : 0;
  return n;
}

// The note of a resume that changes schedule keys (`changes`, "key old -> new, ...", of
// `changed_keys` keys) from `where` on. A change that sets no lr (cooldown_epochs: the run's
// length; `same_lrs`: the recorded schedule from there on is the session's) is said as what it
// is: it was said as a schedule change whose "lr there 1e-05 -> 1e-05" and "schedule_history what
// ran before" were about nothing (no entry joins schedule_history). A change of the lrs that adds
// no entry (nothing ran with the recorded keys: a resume where the last change took effect) is
// still a schedule change, whatever its lr at `where`.
std::string schedule_note(const Config& recorded, const Config& session, const std::string& where,
                          const std::string& changes, size_t changed_keys, bool same_lrs,
                          double lr_before, double lr_after, bool recorded_what_ran) {
  const int64_t length_before = run_epochs(recorded), length_after = run_epochs(session);
  const std::string length =
      length_before == length_after
          ? std::string()
          : str("the run is ", length_after, " epochs long (was ", length_before, ")");
  const std::string args = str(" args.yaml takes the new value", changed_keys == 1 ? "" : "s",
                               " with this session's first checkpoint");
  if (same_lrs && lr_before == lr_after && !changes.empty())
    return str("resume: ", changes, " from ", where, " on: ",
               length.empty() ? std::string("it changes neither the run's length nor")
                              : str(length, "; it changes none of"),
               " its learning rates.", args);
  return str(
      "resume: the schedule changes from ", where, " on: ",
      changes.empty() ? std::string("the recorded changes after this point are dropped") : changes,
      length.empty() ? std::string() : str("; ", length), "; lr there ", lr_before, " -> ",
      lr_after, ".", args, recorded_what_ran ? ", and schedule_history what ran before" : "");
}

// A plateau run's lr comes from its metrics so far, a state its checkpoint keeps for the keys it
// was counted with: a resume may lengthen or shorten it (epochs), nothing else of its schedule,
// nor switch to or from plateau (the metrics before it were never counted, or the state would
// be dropped).
void check_plateau_unchanged(const Config& recorded, const std::string& recorded_source,
                             const Config& session) {
  if (recorded.sched != "plateau" && session.sched != "plateau") return;
  std::set<std::string> keys = kScheduleKeys;
  keys.erase("epochs");
  const std::string changed = differences(recorded, session, keys);
  if (changed.empty()) return;
  throw Error(str("resume: ", changed, " (the run's: ", recorded_source,
                  "): a plateau schedule's lr follows the metrics the run has counted, whose "
                  "state the checkpoint keeps for the keys it was counted with, so a resume of "
                  "a run with sched plateau, or to it, may change epochs alone; resume with the "
                  "run's values"));
}

// The lr at a position by `cfg`'s schedule, a plateau's from the checkpoint's state.
double resumed_lr(const Config& cfg, int64_t updates_per_epoch,
                  const std::optional<PlateauState>& plateau, int64_t epoch, int64_t step,
                  int64_t updates) {
  RunSchedule sched(cfg, updates_per_epoch);
  if (plateau && sched.plateau()) sched.set_plateau(*plateau);
  return sched.lr(epoch, step, updates);
}

}  // namespace

std::string record_differences(const Config& a, const Config& b) {
  std::set<std::string> keys;
  for (const std::string& k : config_keys())
    if (!kSessionKeys.count(k)) keys.insert(k);
  return differences(a, b, keys);
}

std::string rank_differences(const Config& a, const Config& b) {
  const std::set<std::string> per_host = {"data_dir", "workers",    "pin_mem", "threads",
                                          "output",   "experiment", "resume"};
  std::set<std::string> keys;
  for (const std::string& k : config_keys())
    if (!per_host.count(k)) keys.insert(k);
  return differences(a, b, keys);
}

std::string result_key_differences(const Config& recorded, const Config& session) {
  std::set<std::string> fixed;
  for (const std::string& k : config_keys())
    if (!kScheduleKeys.count(k) && !kSessionKeys.count(k) && k != "schedule_history")
      fixed.insert(k);
  return differences(recorded, session, fixed);
}

void check_result_keys(const Config& recorded, const std::string& recorded_source,
                       const Config& session) {
  // with validation a run ranks its epochs (model_best, checkpoint_hist) by eval top-1, without it
  // by train loss: the two do not compare, so a resume cannot turn it on or off
  if (has_validation(recorded) != has_validation(session))
    throw Error(str("resume: val_split ", value_text(recorded, "val_split"), " -> ",
                    value_text(session, "val_split"), " would turn validation ",
                    has_validation(session) ? "on" : "off", ", which a resume cannot (the run's ",
                    "val_split is from ", recorded_source,
                    "): it ranks its epochs (model_best, "
                    "checkpoint_hist) by ",
                    has_validation(recorded) ? "eval top-1" : "train loss (it has no validation)",
                    ", and the two do not compare; resume with the run's val_split, or start a "
                    "new run from its weights (initial_checkpoint)"));
  // timm's --start-epoch overrides the resumed epoch; here a resume goes on at its checkpoint's
  // position (the summary rows, the best epoch, a partial epoch's step), and start_epoch is how
  // the run began, which args.yaml records
  if (recorded.start_epoch != session.start_epoch)
    throw Error(str("resume: start_epoch ", value_text(recorded, "start_epoch"), " -> ",
                    value_text(session, "start_epoch"),
                    " cannot change on a resume (the run's start_epoch is from ", recorded_source,
                    "): a resume goes on at its checkpoint's position, which start_epoch does "
                    "not override here (timm's does); to train on from these weights at another "
                    "epoch, start a new run with initial_checkpoint and start_epoch"));
  const std::string changed = result_key_differences(recorded, session);
  if (!changed.empty())
    throw Error(str("resume: this session's settings differ from the run's (", recorded_source,
                    ") in keys that shape its results: ", changed,
                    ". A resumed run may change only its schedule (", schedule_key_list(),
                    ") and session keys (device, workers, ...): resume with the ",
                    "run's values (e.g. its args.yaml) or start a new run"));
}

std::string schedule_differences(const Config& a, const Config& b) {
  std::set<std::string> keys = kScheduleKeys;
  keys.erase("epochs");
  return differences(a, b, keys);
}

ResumeSettings reconcile_resume(const Config& recorded, const std::string& recorded_source,
                                const Config& session, int64_t epoch, int64_t step, int64_t updates,
                                int64_t updates_per_epoch,
                                const std::optional<PlateauState>& plateau) {
  // ---- keys that shape the results must not change ----
  check_result_keys(recorded, recorded_source, session);
  check_plateau_unchanged(recorded, recorded_source, session);

  // ---- the schedule: what ran up to the position stays in the history ----
  const std::pair<int64_t, int64_t> pos{epoch, step};
  std::vector<ScheduleSegment> history;
  ScheduleSegment active =
      schedule_segment(recorded, 0, 0, "resume");  // the recorded schedule in use at `pos`
  bool found_active = false;
  for (const ScheduleSegment& s : recorded.schedule_history) {
    if (std::pair(s.until_epoch, s.until_step) <= pos) {
      history.push_back(s);
    } else if (!found_active) {
      active = s;
      found_active = true;
    }
  }
  const ScheduleSegment next = schedule_segment(session, 0, 0, "resume");
  const std::pair<int64_t, int64_t> last_end =
      history.empty() ? std::pair<int64_t, int64_t>{0, 0} : std::pair(history.back().until_epoch, history.back().until_step);
  // The session's schedule_history must tell what the checkpoint's run did up to `pos`. It may
  // be a record written after this checkpoint (the run's args.yaml, when an older checkpoint of a
  // run extended since is resumed): up to `pos` that holds the recorded segments, and perhaps the
  // recorded schedule closed at `pos`; its later segments ran after this checkpoint, and this
  // resume drops them. Only the whole record was taken, so checkpoint-1 of such a run was refused
  // with its own args.yaml too.
  if (!session.schedule_history.empty() && session.schedule_history != recorded.schedule_history) {
    std::vector<ScheduleSegment> told;  // the session's segments up to the position
    for (const ScheduleSegment& s : session.schedule_history)
      if (std::pair(s.until_epoch, s.until_step) <= pos) told.push_back(s);
    std::vector<ScheduleSegment> closed = history;  // the recorded ones, the schedule in use closed
    if (pos > last_end) {
      ScheduleSegment a = active;
      a.until_epoch = epoch;
      a.until_step = step;
      closed.push_back(a);
    }
    if (told != history && told != closed)
      throw Error(
          str("resume: schedule_history of this session differs from the run's (", recorded_source,
              ") up to this checkpoint; leave it out (the run's record is used) or resume with the "
              "run's args.yaml"));
  }
  // whether this resume adds the schedule that ran to the history (its note says so only then)
  const bool recorded_what_ran = !same_schedule(active, next) && pos > last_end;
  if (recorded_what_ran) {  // (nothing ran with `active` when pos == last_end)
    active.until_epoch = epoch;
    active.until_step = step;
    history.push_back(active);
  }

  ResumeSettings out;
  out.session = session;
  out.session.schedule_history = history;
  out.args = recorded;
  set_schedule(out.args, session);
  out.args.schedule_history = history;
  out.args.resume = "";
  Config recorded_args = recorded;
  recorded_args.resume = "";
  out.args_changed = !(out.args == recorded_args);

  const std::string where = str("epoch ", epoch + 1, " step ", step + 1, " (after ", updates,
                                updates == 1 ? " update)" : " updates)");
  const std::string sched_changes = differences(recorded, session, kScheduleKeys);
  const double lr_before = resumed_lr(recorded, updates_per_epoch, plateau, epoch, step, updates);
  const double lr_after = resumed_lr(out.session, updates_per_epoch, plateau, epoch, step, updates);
  if (!sched_changes.empty() || lr_before != lr_after)
    out.notes.push_back(schedule_note(
        recorded, session, where, sched_changes, changed_keys(recorded, session, kScheduleKeys),
        !found_active && same_schedule(active, next), lr_before, lr_after, recorded_what_ran));
  else if (out.args_changed)
    out.notes.push_back(str("resume: from ", where, " the run follows its args.yaml again; the schedule changes ",
                            "recorded after this point are dropped from schedule_history"));
  // "resume" names the checkpoint of every resume: not worth a note; output and experiment say
  // where a run goes, which the trainer tells (a resume in place ignores them: resume_location)
  std::string shown;
  for (const std::string& k : kSessionKeys)
    if (k != "resume" && k != "output" && k != "experiment" &&
        value_text(recorded, k) != value_text(session, k))
      shown += str(shown.empty() ? "" : ", ", k, " ", value_text(recorded, k), " -> ", value_text(session, k));
  // "this session only" is not true of what it deletes: a lower checkpoint_hist removes the
  // run's checkpoints beyond it when this session's first epoch ends
  const bool fewer =
      session.checkpoint_hist > 0 && recorded.checkpoint_hist > session.checkpoint_hist;
  if (!shown.empty())
    out.notes.push_back(
        str("resume: settings of this session only: ", shown, " (args.yaml keeps the run's)",
            fewer ? str("; checkpoint_hist ", session.checkpoint_hist,
                        " removes the run's checkpoint-N files beyond its best ",
                        session.checkpoint_hist, " when this session's first epoch ends")
                  : std::string()));
  return out;
}

}  // namespace hg::train
