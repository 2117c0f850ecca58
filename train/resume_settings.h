// What a resumed session runs, given the config the run recorded (its args.yaml) and the config of
// this session, so that args.yaml always reruns what was run.
//
// Keys fall into three kinds:
//  - the schedule (epochs, lr, sched, warmup_epochs, warmup_lr, min_lr, sched_on_updates,
//    decay_epochs, decay_milestones, decay_rate, warmup_prefix, cooldown_epochs, lr_noise,
//    lr_noise_pct, lr_noise_std, lr_cycle_mul, lr_cycle_decay, lr_cycle_limit, lr_k_decay,
//    patience_epochs) may change: the schedule the run used up to the resume position joins
//    schedule_history, args.yaml gets the new values, and the notes say what changes from which
//    epoch / step / update, with the learning rate there before and after; but not for sched
//    plateau, whose lr follows the metrics counted so far (the checkpoint's PlateauState): a
//    resume of a plateau run, or to plateau, may change epochs alone;
//  - keys of the session (device, precision, deterministic, wtconv_mode, workers, pin_mem,
//  data_dir,
//    corrupt_images, validation_batch_size, log_interval, checkpoint_hist, output, experiment,
//    resume, and the data-parallel keys dist_bucket_mb, zero_stage, dist_check_every,
//    dist_timeout, dist_force, no_resume_opt, recovery_interval, initial_checkpoint: a resume
//    does not load it) may change for this session;
//    args.yaml keeps the run's values;
//  - every other key shapes the results (model, data, augmentation, optimizer, batch, seed, ...):
//    a change is an error naming each key with both values (start_epoch has a message of its own:
//    a resume goes on at its checkpoint's position).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/config.h"
#include "train/schedule.h"

namespace hg::train {

struct ResumeSettings {
  Config session;                  ///< what this session runs (schedule_history merged)
  Config args;                     ///< what args.yaml holds from now on (resume is always "")
  bool args_changed = false;       ///< args differs from the recorded config
  std::vector<std::string> notes;  ///< what changes, for the log
};

/// `recorded`: the run's config, from `recorded_source` (named in messages); the position: `epoch`
/// epochs done plus `step` micro-batches of the next, `updates` optimizer updates made. A session
/// schedule_history must be empty or the recorded one. `plateau`: a plateau run's state in the
/// checkpoint, for the lr the notes name. Throws hg::Error for a changed result key, and for a
/// change of a plateau run's schedule keys but epochs (or of sched to or from plateau).
ResumeSettings reconcile_resume(const Config& recorded, const std::string& recorded_source,
                                const Config& session, int64_t epoch, int64_t step, int64_t updates,
                                int64_t updates_per_epoch,
                                const std::optional<PlateauState>& plateau = std::nullopt);

/// The first check of reconcile_resume, which a resume of a finished run makes too (so that a
/// config it trains nothing with is not taken unsaid): throws hg::Error naming each key that shapes
/// the results (neither the schedule's nor the session's) whose value differs from `recorded` (from
/// `recorded_source`) to `session`, with both values. A val_split turned on or off ('' is no
/// validation) has an error of its own: it changes what ranks the run's epochs.
void check_result_keys(const Config& recorded, const std::string& recorded_source,
                       const Config& session);

/// The schedule keys but epochs whose values differ from `a` to `b`, as "key a -> b, ..."; "" when
/// none.
std::string schedule_differences(const Config& a, const Config& b);

/// The keys other than the session's (the schedule and schedule_history included) whose values
/// differ from `a` to `b`, as "key a -> b, ..."; "" when none. Two records of one run (its
/// args.yaml and the config its checkpoint stores) must agree on all of them.
std::string record_differences(const Config& a, const Config& b);

/// The keys that shape a run's results (all but the schedule's and the session's, the ones a
/// resume may not change: check_result_keys) in which `session` differs from `recorded`, as
/// "model a -> b, lr 0.1 -> 0.2"; "" when none does.
std::string result_key_differences(const Config& recorded, const Config& session);

/// The keys whose values differ from `a` (rank 0's config) to `b` (another rank's), as "key a ->
/// b, ..."; "" when none. Every key counts but the per-host ones (data_dir, workers, pin_mem,
/// threads, output, experiment, resume): the others shape the results or the ranks' collectives
/// (log_interval, zero_stage, precision, ...), so they must be the same on every rank.
std::string rank_differences(const Config& a, const Config& b);

}  // namespace hg::train
