#!/usr/bin/env python3
"""The peer row for `haargrad bench-data`: torchvision's ImageFolder + DataLoader with PIL decoding and
timm's plain train transform (RandomResizedCrop, horizontal flip, ToTensor, Normalize), timed the same
way (untimed warm-up epochs, then timed epochs, batches dropped as they come) and printed with the same
columns: img/s, compressed MB/s, the workers' busy fraction, what they sustain when never idle, and
their CPU ms per image.

    python3 scripts/peer-data-bench.py --data-dir /tmp/jpeg-folder --workers 14 [--output row.json]

Busy time is the wall time the workers spend inside the dataset's __getitem__ (decode + transform),
summed over workers; collation and the hand-over to the main process are not counted (haargrad's
busy time does include building its batch). CPU ms per image comes from the worker processes' CPU
time (they exit after every epoch: persistent_workers off). Needs torch and torchvision (not
installed by scripts/install-deps.sh: a benchmark aid); without them it says so and exits 2.
"""
import argparse
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time

try:
    import torch
    from torchvision import datasets, transforms
except ImportError as e:  # the peer needs PyTorch; say what is missing instead of a traceback
    print(f"peer-data-bench: torch / torchvision not importable ({e}); no peer row", file=sys.stderr)
    sys.exit(2)


class TimedFolder(datasets.ImageFolder):
    """ImageFolder that adds each sample's time and file size to counters shared with the workers."""

    def __init__(self, root, transform, busy, nbytes):
        super().__init__(root, transform)
        self.busy, self.nbytes = busy, nbytes

    def __getitem__(self, index):
        t0 = time.perf_counter()
        sample = super().__getitem__(index)
        dt = time.perf_counter() - t0
        size = os.path.getsize(self.samples[index][0])
        with self.busy.get_lock():
            self.busy.value += dt
        with self.nbytes.get_lock():
            self.nbytes.value += size
        return sample


def children_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True, help="ImageFolder root (its --split folder is read)")
    p.add_argument("--split", default="train")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--img-size", type=int, default=224)
    p.add_argument("--bench-warmup", type=int, default=1)
    p.add_argument("--bench-epochs", type=int, default=2)
    p.add_argument("--output", help="also write the row as JSON (bench-data's keys) to this file")
    a = p.parse_args()
    if a.workers < 1 or a.bench_epochs < 1 or a.bench_warmup < 0:
        p.error("need --workers >= 1, --bench-epochs >= 1, --bench-warmup >= 0")
    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.img_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    ])
    ctx = multiprocessing.get_context("fork")
    busy, nbytes = ctx.Value("d", 0.0), ctx.Value("d", 0.0)
    ds = TimedFolder(os.path.join(a.data_dir, a.split), tf, busy, nbytes)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
                                     drop_last=True, persistent_workers=False, multiprocessing_context=ctx)
    images, seconds, busy_s, bytes_, cpu_s = 0, 0.0, 0.0, 0.0, 0.0
    for epoch in range(a.bench_warmup + a.bench_epochs):
        busy.value, nbytes.value = 0.0, 0.0
        c0 = children_cpu_seconds()
        t0 = time.perf_counter()
        n = 0
        for x, _ in dl:
            n += x.shape[0]
        dt = time.perf_counter() - t0
        if epoch >= a.bench_warmup:
            seconds += dt
            images += n
            busy_s += busy.value
            bytes_ += nbytes.value
            cpu_s += children_cpu_seconds() - c0  # the epoch's workers have exited by now
    row = {
        "jpeg_decoder": "torchvision_pil", "split": a.split, "workers": a.workers, "batch_size": a.batch_size,
        "img_size": a.img_size, "images": images, "seconds": seconds,
        # a split of fewer images than one batch gives none (drop_last), as bench-data's zero row
        "img_per_sec": images / seconds if seconds > 0 else 0.0,
        "mb_per_sec": bytes_ / 1e6 / seconds if seconds > 0 else 0.0,
        "busy_fraction": min(1.0, busy_s / (seconds * a.workers)) if seconds > 0 else 0.0,
        "worker_img_per_sec": images / busy_s * a.workers if busy_s > 0 else 0.0,
        "cpu_ms_per_img": 1e3 * cpu_s / images if images else 0.0,
        "torch": torch.__version__,
    }
    print(f"{'decoder':<13} {'img/s':>9} {'MB/s':>9} {'busy':>8} {'gpu':>8} {'worker/s':>10} {'cpu ms/img':>10} "
          f"{'stage ms':>9} {'images':>8}  decoded as")
    print(f"{'torchvision':<13} {row['img_per_sec']:9.0f} {row['mb_per_sec']:9.1f} {100 * row['busy_fraction']:7.0f}% "
          f"{'-':>8} {row['worker_img_per_sec']:10.0f} {row['cpu_ms_per_img']:10.2f} {'-':>9} {images:8d}  PIL "
          f"(torch {torch.__version__}, {a.workers} workers, batch {a.batch_size}, {a.img_size} px)")
    if a.output:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(a.output)) or ".", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump([row], f, indent=2)
            f.write("\n")
        os.replace(tmp, a.output)
        print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
