#!/usr/bin/env python3
"""The comparison row for `haargrad bench-data`: torchvision's ImageFolder + DataLoader with PIL
decoding and timm's train transform (RandomResizedCrop, horizontal flip, ToTensor, Normalize), timed
the same way: untimed warm-up epochs, then timed epochs with batches dropped as they come.

    python3 scripts/bench-torchvision-loader.py --data-dir /tmp/jpeg-folder --workers 14

Needs torch and torchvision (not installed by scripts/install-deps.sh: this is a benchmark aid).
"""
import argparse
import os
import time

import torch
from torchvision import datasets, transforms


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True, help="ImageFolder root (its train/ split is read)")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--img-size", type=int, default=224)
    p.add_argument("--bench-warmup", type=int, default=1)
    p.add_argument("--bench-epochs", type=int, default=2)
    a = p.parse_args()
    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.img_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    ])
    ds = datasets.ImageFolder(os.path.join(a.data_dir, "train"), tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
                                     drop_last=True, persistent_workers=a.workers > 0)
    images, seconds = 0, 0.0
    for epoch in range(a.bench_warmup + a.bench_epochs):
        t0 = time.perf_counter()
        n = 0
        for x, _ in dl:
            n += x.shape[0]
        if epoch >= a.bench_warmup:
            seconds += time.perf_counter() - t0
            images += n
    print(f"torchvision+PIL  workers {a.workers}  batch {a.batch_size}  {a.img_size} px  "
          f"{images} images  {images / seconds:.0f} img/s")


if __name__ == "__main__":
    main()
