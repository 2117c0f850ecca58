#!/usr/bin/env python3
"""PyTorch + timm ConvNeXt-T on the same GPU, in the same columns as `haargrad bench`.

Run on the GPU machine (it has torch and timm; no network needed: the model is built, not
downloaded), in the same call as `haargrad bench`, so every published ratio is measured in one run:

    python3 scripts/peer-bench.py --output gpu-out/peer_bench.json [--modes fp32,tf32,amp_bf16,compile_bf16]

Modes (timm train.py's options):
  fp32          torch defaults (cuDNN convolutions may use TF32, matmuls do not)
  tf32          torch.backends.{cuda.matmul,cudnn}.allow_tf32 = True
  amp_bf16      torch.autocast(bfloat16), channels-last
  compile_bf16  torch.compile + channels-last + autocast(bfloat16)
Each row: a training step (zero_grad, forward, cross-entropy, backward, AdamW lr 1e-3 wd 0.05 as
`haargrad bench`) timed with CUDA events after warm-up (at least one step, as bench: torch.compile's
and cuDNN's autotuning stay out of the timed steps), median of --steps; inference likewise. Memory
as bench measures it: the peak of allocated (live) and reserved (held from the driver) bytes of the
timed steps (the peaks reset after the warm-up) of each phase, the cache emptied between inference
and training, their ratio, and the driver's figure (cudaMemGetInfo used after the steps minus
before the model). The rows hold every key of bench's JSON rows: what torch has no figure for
(bench's memory categories, host syncs, graph nodes) is null. `precision` is bench's name (fp32,
tf32, bf16), `mode` the row's, `impl` timm's and torch's versions. Exit status 1 when a mode failed
(its row says why).
"""
import argparse
import json
import statistics
import sys


# bench's precision column for each mode
PRECISION = {"fp32": "fp32", "tf32": "tf32", "amp_bf16": "bf16", "compile_bf16": "bf16"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="convnext_tiny")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--img-size", type=int, default=224)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--modes", default="fp32,tf32,amp_bf16,compile_bf16")
    p.add_argument("--output", default="", help="a .json file for the rows (stdout table always)")
    return p.parse_args()


def timed(torch, fn, warmup, steps, after_warmup=None):
    """Median/mean/min/max milliseconds of fn() over `steps` calls, after max(1, warmup) calls.

    The steps are timed between consecutive CUDA events with one host wait at the end, as bench
    times them between device marks; `after_warmup` runs once the warm-up is done (a peak reset).
    """
    for _ in range(max(1, warmup)):
        fn()
    torch.cuda.synchronize()
    if after_warmup is not None:
        after_warmup()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    events[0].record()
    for i in range(steps):
        fn()
        events[i + 1].record()
    events[-1].synchronize()
    ms = [events[i].elapsed_time(events[i + 1]) for i in range(steps)]
    return {"median": statistics.median(ms), "mean": statistics.mean(ms), "min": min(ms), "max": max(ms)}


def peaks(torch):
    """(live, reserved) peak bytes since the last reset_peak_memory_stats."""
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()


def impl(torch, timm):
    return "timm " + timm.__version__ + " / torch " + torch.__version__


def device_used(torch):
    """Bytes in use on the device by the driver's count (all processes), as bench's driver column."""
    free, total = torch.cuda.mem_get_info()
    return total - free


def run_mode(torch, timm, args, mode):
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.allow_tf32 = True  # PyTorch's default in every mode (anchors.md "fp32")
    torch.backends.cudnn.benchmark = True
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    baseline = device_used(torch)
    torch.manual_seed(0)
    model = timm.create_model(args.model, num_classes=1000).cuda()
    channels_last = mode in ("amp_bf16", "compile_bf16")
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    step_model = torch.compile(model) if mode == "compile_bf16" else model
    amp = mode in ("amp_bf16", "compile_bf16")
    x = torch.rand(args.batch, 3, args.img_size, args.img_size, device="cuda")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (args.batch,), device="cuda")
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()

    def infer():
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            step_model(x)

    def train():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = loss_fn(step_model(x), y)
        loss.backward()
        opt.step()

    model.eval()
    inf = timed(torch, infer, args.warmup, args.steps, torch.cuda.reset_peak_memory_stats)
    inf_peak, inf_reserved = peaks(torch)
    inf_driver = device_used(torch) - baseline
    torch.cuda.empty_cache()  # as bench between its phases: training starts from its own cache
    model.train()
    tr = timed(torch, train, args.warmup, args.steps, torch.cuda.reset_peak_memory_stats)
    peak, reserved = peaks(torch)
    driver = device_used(torch) - baseline
    mib = 1024.0 * 1024.0
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    fixed = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    row = {
        "model": args.model, "precision": PRECISION[mode], "wtconv": None, "device": "cuda",
        "status": "ok", "error": "",
        "infer_samples_per_sec": round(args.batch * 1000.0 / inf["median"], 2),
        "infer_step_time": round(inf["median"], 3), "infer_step_time_min": round(inf["min"], 3),
        "infer_step_time_max": round(inf["max"], 3), "infer_step_time_mean": round(inf["mean"], 3),
        "infer_batch_size": args.batch, "infer_img_size": args.img_size,
        "train_samples_per_sec": round(args.batch * 1000.0 / tr["median"], 2),
        "train_step_time": round(tr["median"], 3), "train_step_time_min": round(tr["min"], 3),
        "train_step_time_max": round(tr["max"], 3), "train_step_time_mean": round(tr["mean"], 3),
        "train_batch_size": args.batch, "train_img_size": args.img_size,
        "param_count": round(params / 1e6, 2), "param_count_exact": params,
        "param_count_fixed": fixed, "requested_batch_size": args.batch,
        "steps": args.steps, "warmup": args.warmup,  # as bench: the value asked (timed(): >= 1)
        "opt": "adamw", "lr": 1e-3, "weight_decay": 0.05, "smoothing": 0.0,
    }
    for phase, live, held, used in (("infer", inf_peak, inf_reserved, inf_driver),
                                    ("train", peak, reserved, driver)):
        for category in ("parameters", "gradients", "optimizer_state", "activations", "workspace"):
            row[f"{phase}_peak_{category}_mib"] = None  # torch's allocator keeps no categories
        row[f"{phase}_peak_total_mib"] = round(live / mib, 2)
        row[f"{phase}_reserved_mib"] = round(held / mib, 2)
        row[f"{phase}_reserved_ratio"] = round(held / live, 3) if live else None
        row[f"{phase}_system_allocs"] = None
        row[f"{phase}_host_syncs"] = None
        row[f"{phase}_device_used_mib"] = round(used / mib, 2)
    row["train_graph_nodes"] = None
    row["baseline_device_used_mib"] = round(baseline / mib, 2)
    row["mode"] = mode
    row["impl"] = impl(torch, timm)
    del model, step_model, opt
    return row


def main():
    args = parse_args()
    try:
        import torch
        import timm
    except ImportError as e:
        sys.exit(f"peer-bench: needs torch and timm ({e}); run it on the GPU machine")
    if not torch.cuda.is_available():
        sys.exit("peer-bench: no CUDA device")
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in PRECISION]
    if unknown:
        sys.exit(f"peer-bench: unknown mode(s) {', '.join(unknown)} (known: {', '.join(PRECISION)})")
    rows = []
    for mode in modes:
        try:
            rows.append(run_mode(torch, timm, args, mode))
        except Exception as e:  # one failing mode must not hide the others' figures
            rows.append({"model": args.model, "precision": PRECISION.get(mode, mode), "device": "cuda",
                         "status": "failed", "error": str(e)[:300], "mode": mode,
                         "impl": impl(torch, timm)})
    # a failed mode's row holds every key too (null), as bench's rows do, so a reader keyed on
    # bench's JSON finds them
    keys = next((list(r) for r in rows if r["status"] == "ok"), [])
    rows = [r if r["status"] == "ok" else {**{k: None for k in keys}, **r} for r in rows]
    print(f"{'model':<16} {'mode':<13} {'train img/s':>11} {'ms/step':>8} {'live MiB':>9} "
          f"{'reserved MiB':>12} {'ratio':>6} {'driver MiB':>10} {'infer img/s':>11}")
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['model']:<16} {r['mode']:<13} failed: {r['error']}")
            continue
        print(f"{r['model']:<16} {r['mode']:<13} {r['train_samples_per_sec']:>11.1f} "
              f"{r['train_step_time']:>8.2f} {r['train_peak_total_mib']:>9.0f} {r['train_reserved_mib']:>12.0f} "
              f"{r['train_reserved_ratio'] or 0:>6.3f} {r['train_device_used_mib']:>10.0f} "
              f"{r['infer_samples_per_sec']:>11.1f}")
    if args.output:
        with open(args.output + ".tmp", "w") as f:
            json.dump(rows, f, indent=2)
        import os
        os.replace(args.output + ".tmp", args.output)
    failed = [r["mode"] for r in rows if r["status"] != "ok"]
    if failed:
        sys.exit(f"peer-bench: mode(s) {', '.join(failed)} failed (their rows say why)")


if __name__ == "__main__":
    main()
