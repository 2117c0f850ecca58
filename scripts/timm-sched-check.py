#!/usr/bin/env python3
"""timm <-> haargrad learning-rate schedules: the same keys give the same lr, update by update.

For each case (a sched with its keys: step, multistep, poly, tanh, cosine, plateau; warmup,
warmup_prefix, cooldown_epochs; lr cycles, k-decay and noise; stepped per epoch or per update;
grad_accum_steps; a run stopped and resumed),
`haargrad train configs/smoke.yaml` runs on the
CPU (a tiny model on synthetic data, 3 micro-batches an epoch: 3 updates, or fewer with
grad_accum_steps; a log line per update), and timm's
create_scheduler_v2 builds the scheduler of the same keys, stepped as timm's train.py steps it
(step_update after every update, step(epoch + 1) after the epoch's summary row; for plateau
step(epoch + 1, metric) with the metric haargrad's summary.csv records for the epoch: eval_top1,
or train_loss for a case without validation, as timm's train.py hands its scheduler eval top-1 or,
without an eval loader, the train loss). Compared:
  * the number of epochs the run trains (timm's num_epochs);
  * the lr of every update (haargrad's log lines, printed to 3 significant digits);
  * summary.csv's lr column (8 significant digits) against the lr timm's train.py writes there.
Pass: every update's lr within 0.5% (the log's rounding) and every summary lr within 1e-6 relative.
Prints one line per case and exits 0 when all pass, 1 otherwise; --out writes the cases as JSON.

Needs python3 with torch and timm (the GPU machine has both; on a CPU machine a virtual environment
with `pip install timm` is enough) and a built `haargrad`, run from the repository root:

    python3 scripts/timm-sched-check.py --haargrad build/haargrad --out /tmp/sched-check.json
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

MICRO_BATCHES_PER_EPOCH = 3  # configs/smoke.yaml: max_steps_per_epoch 3


def updates_per_epoch(keys):
    """train.py's: (len(loader_train) + grad_accum_steps - 1) // grad_accum_steps."""
    accum = keys.get("grad_accum_steps", 1)
    return (MICRO_BATCHES_PER_EPOCH + accum - 1) // accum

# haargrad's keys (configs/smoke.yaml gives lr 1e-3, warmup_lr 1e-5, min_lr 1e-5 unless set here)
CASES = {
    "step": dict(sched="step", epochs=7, warmup_epochs=1, decay_epochs=2, decay_rate=0.5),
    "step_fractional": dict(sched="step", epochs=6, warmup_epochs=0, decay_epochs=1.5, decay_rate=0.3),
    "multistep": dict(sched="multistep", epochs=6, warmup_epochs=0, decay_milestones=[2, 4], decay_rate=0.3),
    "poly_cooldown": dict(sched="poly", epochs=5, warmup_epochs=1, decay_rate=2.0, cooldown_epochs=2),
    "tanh_prefix": dict(sched="tanh", epochs=6, warmup_epochs=2, warmup_prefix=True),
    "tanh": dict(sched="tanh", epochs=5, warmup_epochs=2),
    "cosine_prefix_cooldown": dict(sched="cosine", epochs=5, warmup_epochs=1, warmup_prefix=True,
                                   cooldown_epochs=2, min_lr=1e-4),
    "cosine_updates": dict(sched="cosine", epochs=4, warmup_epochs=1, sched_on_updates=True),
    "step_updates": dict(sched="step", epochs=5, warmup_epochs=1, decay_epochs=1.5, decay_rate=0.5,
                         sched_on_updates=True),
    "multistep_updates": dict(sched="multistep", epochs=5, warmup_epochs=0, decay_milestones=[1, 3],
                              decay_rate=0.2, sched_on_updates=True),
    "poly_updates_prefix": dict(sched="poly", epochs=4, warmup_epochs=1, decay_rate=0.5, warmup_prefix=True,
                                sched_on_updates=True),
    # grad_accum_steps 2 of 3 micro-batches: 2 updates an epoch (the last one of a single micro-batch)
    "cosine_updates_accum": dict(sched="cosine", epochs=4, warmup_epochs=1, sched_on_updates=True,
                                 grad_accum_steps=2),
    "multistep_updates_accum": dict(sched="multistep", epochs=4, warmup_epochs=1, decay_milestones=[2, 3],
                                    decay_rate=0.5, sched_on_updates=True, grad_accum_steps=2),
    "tanh_upd_prefix_cool_accum": dict(sched="tanh", epochs=3, warmup_epochs=1, warmup_prefix=True,
                                               cooldown_epochs=1, sched_on_updates=True, grad_accum_steps=3),
    "multistep_prefix_zero": dict(sched="multistep", epochs=5, warmup_epochs=1, warmup_prefix=True,
                                  decay_milestones=[0, 1, 3], decay_rate=0.5),
    "tanh_no_warmup_updates": dict(sched="tanh", epochs=3, warmup_epochs=0, sched_on_updates=True),
    "poly_default_power": dict(sched="poly", epochs=4, warmup_epochs=0, cooldown_epochs=1),
    # resumed after epoch N (resume_after: haargrad's --stop-after-epoch, then --resume), against
    # timm's run, which a resume does not change: inside a warmup_prefix warmup, per update too
    "cosine_prefix_resumed_in_warmup": dict(sched="cosine", epochs=3, warmup_epochs=3, warmup_prefix=True,
                                            cooldown_epochs=1, resume_after=2),
    "multistep_updates_prefix_resumed": dict(sched="multistep", epochs=4, warmup_epochs=2, warmup_prefix=True,
                                             decay_milestones=[1, 2], decay_rate=0.5, sched_on_updates=True,
                                             grad_accum_steps=2, resume_after=1),
    "tanh_cooldown_resumed_in_cooldown": dict(sched="tanh", epochs=2, warmup_epochs=1, cooldown_epochs=2,
                                              resume_after=3),
    "step_epochs_accum": dict(sched="step", epochs=4, warmup_epochs=2, warmup_prefix=True, decay_epochs=1,
                              decay_rate=0.5, grad_accum_steps=2),
    # timm's cycles (lr_cycle_mul, lr_cycle_decay, lr_cycle_limit: the run trains every cycle),
    # k-decay (cosine, poly) and noise (lr_noise a start or [start, end] of epochs, drawn with
    # torch's generator seeded with seed + t: the same values)
    "cosine_cycles": dict(sched="cosine", epochs=3, warmup_epochs=1, lr_cycle_limit=3),
    "cosine_cycle_mul_prefix_cooldown": dict(sched="cosine", epochs=2, warmup_epochs=1, warmup_prefix=True,
                                             lr_cycle_mul=2.0, lr_cycle_limit=3, lr_cycle_decay=0.3,
                                             cooldown_epochs=1),
    "tanh_cycle_mul": dict(sched="tanh", epochs=2, warmup_epochs=1, lr_cycle_mul=1.5, lr_cycle_limit=3,
                           lr_cycle_decay=0.7),
    "tanh_cycles_updates": dict(sched="tanh", epochs=2, warmup_epochs=0, lr_cycle_mul=2.0, lr_cycle_limit=2,
                                sched_on_updates=True),
    "cosine_shrinking_cycles_updates": dict(sched="cosine", epochs=4, warmup_epochs=1, lr_cycle_mul=0.5,
                                            lr_cycle_limit=2, sched_on_updates=True, grad_accum_steps=2),
    "cosine_k_decay": dict(sched="cosine", epochs=4, warmup_epochs=0, lr_k_decay=2.0, cooldown_epochs=1),
    "poly_k_decay_cycles_updates": dict(sched="poly", epochs=2, warmup_epochs=1, decay_rate=2.0,
                                        lr_k_decay=0.5, lr_cycle_limit=2, sched_on_updates=True),
    "cosine_noise_from": dict(sched="cosine", epochs=6, warmup_epochs=1, lr_noise=[0.5]),
    "cosine_noise_range_updates": dict(sched="cosine", epochs=3, warmup_epochs=1, lr_noise=[0.3, 0.8],
                                       lr_noise_pct=0.3, lr_noise_std=0.5, sched_on_updates=True, seed=5),
    "step_noise_range_updates_accum": dict(sched="step", epochs=4, warmup_epochs=0, decay_epochs=1,
                                           decay_rate=0.5, lr_noise=[0.25, 0.75], sched_on_updates=True,
                                           grad_accum_steps=2, seed=3),
    "multistep_noise": dict(sched="multistep", epochs=5, warmup_epochs=1, decay_milestones=[2, 4],
                            decay_rate=0.5, lr_noise=[0.2, 0.8], lr_noise_std=2.0, seed=7),
    "tanh_noise_cycles_resumed": dict(sched="tanh", epochs=2, warmup_epochs=1, lr_cycle_limit=2,
                                      lr_noise=[0.5], resume_after=2),
    # plateau: decays after more than patience_epochs epochs without a new best of the epoch's
    # metric (max mode on eval top-1; min mode on the train loss without validation); its warmup
    # (whose metrics are not counted), noise after the warmup, warmup_prefix adding to the run,
    # cooldown_epochs ignored; resumed after a decay (haargrad's checkpoint keeps the plateau's
    # state, so its lrs are those of timm's run straight through)
    "plateau_top1": dict(sched="plateau", epochs=7, warmup_epochs=1, patience_epochs=0, decay_rate=0.5,
                         lr=3e-3),
    "plateau_top1_patience": dict(sched="plateau", epochs=8, warmup_epochs=2, patience_epochs=1,
                                  decay_rate=0.3, min_lr=2e-4, lr=3e-3),
    "plateau_loss_no_val": dict(sched="plateau", epochs=7, warmup_epochs=0, patience_epochs=0,
                                decay_rate=0.5, lr=0.05, val_split=""),
    "plateau_noise_prefix_cooldown": dict(sched="plateau", epochs=5, warmup_epochs=2, warmup_prefix=True,
                                          cooldown_epochs=2, patience_epochs=0, decay_rate=0.5,
                                          lr_noise=[0.4], seed=9, lr=3e-3),
    "plateau_resumed": dict(sched="plateau", epochs=7, warmup_epochs=1, patience_epochs=0, decay_rate=0.5,
                            lr=3e-3, resume_after=4),
}
SMOKE = dict(lr=1e-3, warmup_lr=1e-5, min_lr=1e-5, seed=0)


def flag(key, value):
    name = "--" + key.replace("_", "-")
    if isinstance(value, bool):
        return [name, "true" if value else "false"]
    if isinstance(value, list):
        return [name, "[" + ", ".join(str(v) for v in value) + "]"]
    return [name, str(value)]


def run_haargrad(exe, name, keys, out_dir):
    keys = dict(keys)
    resume_after = keys.pop("resume_after", None)
    smoke = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "smoke.yaml")
    cmd = [exe, "train", smoke, "--device", "cpu", "--plain", "--output", out_dir,
           "--experiment", name, "--log-interval", "1"]
    for k, v in keys.items():
        cmd += flag(k, v)
    # resume_after N: the run stops after epoch N and a second session resumes it in place from
    # its last.safetensors (timm's --resume: its scheduler is stepped to the resumed epoch, which
    # gives the lr of a run never stopped)
    sessions = [cmd] if resume_after is None else [
        cmd + ["--stop-after-epoch", str(resume_after)],
        cmd + ["--resume", os.path.join(out_dir, name, "last.safetensors")]]
    used = []
    for c in sessions:
        p = subprocess.run(c, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(c)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        used += [float(m.group(1)) for m in re.finditer(
            r"epoch \d+/\d+ step \d+/\d+ loss \S+ lr (\S+)", p.stdout + p.stderr)]
    with open(os.path.join(out_dir, name, "summary.csv")) as f:
        rows = list(csv.DictReader(f))
    summary = [float(row["lr"]) for row in rows]
    # the metric timm's train.py would step a plateau with: eval top-1, or the train loss without
    # validation (haargrad's summary has no eval columns then)
    metric = "train_loss" if keys.get("val_split") == "" else "eval_top1"
    metrics = [float(row[metric]) for row in rows]
    return used, summary, metrics


def run_timm(keys, metrics):
    import warnings
    warnings.filterwarnings("ignore", category=FutureWarning)  # timm deprecates its plateau
    import torch
    from timm.scheduler import create_scheduler_v2

    k = dict(SMOKE, **keys)
    k.pop("resume_after", None)  # timm's schedule is a function of the position (plateau: and of
    # the metrics, haargrad's, fed in the same order: its resumed run keeps the plateau's state)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=k["lr"])
    on_updates = k.get("sched_on_updates", False)
    # train.py's defaults for the keys a case leaves out (its argparse), as haargrad's config has them
    # (lr_cycle_decay 0.5, where create_scheduler_v2's own default is 0.1; noise_seed is train.py's seed)
    sched, num_epochs = create_scheduler_v2(
        opt, sched=k["sched"], num_epochs=k["epochs"], decay_epochs=k.get("decay_epochs", 90),
        decay_milestones=k.get("decay_milestones", [90, 180, 270]),
        cooldown_epochs=k.get("cooldown_epochs", 0), decay_rate=k.get("decay_rate", 0.1),
        min_lr=k["min_lr"], warmup_lr=k["warmup_lr"], warmup_epochs=k["warmup_epochs"],
        warmup_prefix=k.get("warmup_prefix", False), noise=k.get("lr_noise"),
        noise_pct=k.get("lr_noise_pct", 0.67), noise_std=k.get("lr_noise_std", 1.0), noise_seed=k["seed"],
        cycle_mul=k.get("lr_cycle_mul", 1.0), cycle_decay=k.get("lr_cycle_decay", 0.5),
        cycle_limit=k.get("lr_cycle_limit", 1), k_decay=k.get("lr_k_decay", 1.0),
        patience_epochs=k.get("patience_epochs", 10),
        # train.py: eval_metric top1 with an eval loader, else 'loss' (decreasing)
        plateau_mode="min" if k.get("val_split") == "" else "max",
        step_on_epochs=not on_updates, updates_per_epoch=updates_per_epoch(keys))
    used, summary = [], []
    updates = 0
    for epoch in range(num_epochs):  # train.py: start_epoch 0, no step before the first epoch
        for _ in range(updates_per_epoch(keys)):
            used.append(opt.param_groups[0]["lr"])
            updates += 1
            sched.step_update(num_updates=updates)
        summary.append(opt.param_groups[0]["lr"])  # update_summary, then lr_scheduler.step
        if k["sched"] == "plateau":
            sched.step(epoch + 1, metrics[epoch] if epoch < len(metrics) else None)
        else:
            sched.step(epoch + 1)
    return used, summary


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap.add_argument("--haargrad", default=os.path.join(repo, "build", "haargrad"))
    ap.add_argument("--out", help="write the cases' lrs and verdicts as JSON here")
    args = ap.parse_args()
    results, ok = {}, True
    width = max(len(name) for name in CASES)
    with tempfile.TemporaryDirectory() as tmp:
        for name, keys in CASES.items():
            h_used, h_summary, h_metrics = run_haargrad(args.haargrad, name, keys, tmp)
            t_used, t_summary = run_timm(keys, h_metrics)
            problems = []
            if len(h_summary) != len(t_summary):
                problems.append(f"epochs: haargrad {len(h_summary)}, timm {len(t_summary)}")
            if len(h_used) != len(t_used):
                problems.append(f"updates: haargrad {len(h_used)}, timm {len(t_used)}")
            for i, (h, t) in enumerate(zip(h_used, t_used)):
                if not close(h, t, 5e-3):
                    problems.append(f"update {i}: haargrad lr {h:.6g}, timm {t:.6g}")
            for i, (h, t) in enumerate(zip(h_summary, t_summary)):
                if not close(h, t, 1e-6):
                    problems.append(f"summary epoch {i + 1}: haargrad lr {h:.9g}, timm {t:.9g}")
            ok &= not problems
            results[name] = dict(keys=keys, haargrad_summary=h_summary, timm_summary=t_summary,
                                 haargrad_used=h_used, timm_used=t_used, problems=problems)
            print(f"{name:{width}s} {'ok' if not problems else 'FAILED'}: {len(h_summary)} epochs, "
                  f"{len(h_used)} updates" + "".join("\n    " + p for p in problems[:6]), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    print("all schedules as timm's" if ok else "some schedules differ from timm's")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
