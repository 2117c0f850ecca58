#!/usr/bin/env python3
"""Makes an ImageNet-like ImageFolder of JPEG files for loader benchmarks and tests.

    python3 scripts/make-jpeg-folder.py --out /tmp/jpeg-folder --classes 10 --train-per-class 100

writes OUT/train/class_NNN/NNNNNN.JPEG and OUT/validation/class_NNN/NNNNNN.JPEG (the splits haargrad's
image_folder dataset reads by default). Images are photo-like texture, not noise: 1/f ("pink")
luminance and chroma fields, which natural photographs follow, plus soft-edged shapes, so they
compress like photos. Sizes follow ImageNet's: short side 300-500 px, aspect up to 1.5, mostly
landscape, quality 80-95, about 110 KiB a file on average. Most files are baseline 4:2:0 JPEG; a few
are progressive, grayscale or Adobe CMYK (the kinds ImageNet also holds; --progressive, --gray and
--cmyk set the fractions, and every split of 3 or more files gets at least one of each).

Everything depends on --seed only: the same arguments give the same bytes. Each file is written under
a temporary name and renamed. Needs numpy and Pillow (Debian: python3-numpy python3-pil).
"""
import argparse
import io
import multiprocessing
import os
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFilter


def pink_field(rng, h, w, exponent):
    """A zero-mean, unit-std random field whose amplitude spectrum falls as 1 / f**exponent."""
    fy = np.fft.fftfreq(h)[:, None]
    fx = np.fft.rfftfreq(w)[None, :]
    f = np.sqrt(fx * fx + fy * fy)
    f[0, 0] = 1.0
    spectrum = (rng.standard_normal(f.shape) + 1j * rng.standard_normal(f.shape)) / f**exponent
    spectrum[0, 0] = 0.0
    field = np.fft.irfft2(spectrum, s=(h, w))
    return field / (field.std() + 1e-12)


def photo_like(rng, h, w):
    """An RGB uint8 array (h, w, 3) that looks and compresses like a photograph."""
    exponent = rng.uniform(0.8, 1.0)  # natural images: about 1 (power spectrum 1/f^2)
    luma = pink_field(rng, h, w, exponent) * rng.uniform(38, 52) + rng.uniform(90, 160)
    chroma = [pink_field(rng, h, w, exponent + 0.3) * rng.uniform(12, 25) for _ in range(2)]
    tint = rng.uniform(-20, 20, size=3)
    rgb = np.stack([luma + 1.4 * chroma[1] + tint[0],
                    luma - 0.35 * chroma[0] - 0.7 * chroma[1] + tint[1],
                    luma + 1.8 * chroma[0] + tint[2]], axis=-1)
    img = Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8), "RGB")
    # Objects: a few soft-edged ellipses and polygons with their own texture, for edges and flat areas.
    layer = Image.new("RGB", (w, h))
    mask = Image.new("L", (w, h), 0)
    draw_l, draw_m = ImageDraw.Draw(layer), ImageDraw.Draw(mask)
    for _ in range(int(rng.integers(2, 6))):
        color = tuple(int(v) for v in rng.integers(20, 235, size=3))
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        rx, ry = rng.uniform(0.05, 0.3) * w, rng.uniform(0.05, 0.3) * h
        box = [cx - rx, cy - ry, cx + rx, cy + ry]
        if rng.uniform() < 0.5:
            draw_l.ellipse(box, fill=color)
            draw_m.ellipse(box, fill=int(rng.integers(150, 255)))
        else:
            pts = [(cx + rx * np.cos(a), cy + ry * np.sin(a)) for a in np.sort(rng.uniform(0, 2 * np.pi, 5))]
            draw_l.polygon(pts, fill=color)
            draw_m.polygon(pts, fill=int(rng.integers(150, 255)))
    mask = mask.filter(ImageFilter.GaussianBlur(rng.uniform(0.5, 2.5)))
    grain = (pink_field(rng, h, w, 0.6) * rng.uniform(8, 16))[..., None]
    objects = np.clip(np.asarray(layer, dtype=np.float32) + grain, 0, 255).astype(np.uint8)
    return Image.composite(Image.fromarray(objects, "RGB"), img, mask)


def image_size(rng):
    short = int(rng.integers(300, 501))
    long_side = int(round(short * rng.uniform(1.0, 1.5)))
    return (short, long_side) if rng.uniform() < 0.75 else (long_side, short)  # (h, w): mostly landscape


def kinds_for(n, fractions, rng):
    """File kinds for a split of n files: baseline except the given fractions, at least one each of 3+."""
    kinds = ["baseline"] * n
    order = rng.permutation(n)
    at = 0
    for kind, frac in fractions:
        count = max(int(round(frac * n)), 1 if n >= 3 and frac > 0 else 0)
        for i in order[at:at + count]:
            kinds[i] = kind
        at += count
    return kinds


def write_atomic(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def make_one(job):
    path, seed, kind = job
    rng = np.random.default_rng(seed)
    h, w = image_size(rng)
    img = photo_like(rng, h, w)
    quality = int(rng.integers(80, 96))
    opts = {"quality": quality, "subsampling": 2}  # 4:2:0, as most cameras and ImageNet
    if kind == "progressive":
        opts["progressive"] = True
    elif kind == "gray":
        img = img.convert("L")
        opts.pop("subsampling")
    elif kind == "cmyk":
        img = img.convert("CMYK")  # Pillow writes Adobe-style inverted CMYK, as Photoshop does
    buf = io.BytesIO()
    img.save(buf, "JPEG", **opts)
    write_atomic(path, buf.getvalue())
    return len(buf.getvalue()), kind


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder to create (train/ and validation/ inside)")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--train-per-class", type=int, default=100)
    p.add_argument("--val-per-class", type=int, default=10)
    p.add_argument("--progressive", type=float, default=0.02, help="fraction of progressive files")
    p.add_argument("--gray", type=float, default=0.02, help="fraction of grayscale files")
    p.add_argument("--cmyk", type=float, default=0.01, help="fraction of CMYK files")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = p.parse_args()
    if a.classes < 1 or a.train_per_class < 1 or a.val_per_class < 0:
        p.error("--classes and --train-per-class must be >= 1, --val-per-class >= 0")
    for name in ("progressive", "gray", "cmyk"):
        if not 0 <= getattr(a, name) <= 1:
            p.error(f"--{name} must be a fraction in [0, 1]")
    if a.progressive + a.gray + a.cmyk > 1:
        p.error("--progressive + --gray + --cmyk must be <= 1")

    fractions = [("progressive", a.progressive), ("gray", a.gray), ("cmyk", a.cmyk)]
    jobs = []
    for split_index, (split, per_class) in enumerate([("train", a.train_per_class), ("validation", a.val_per_class)]):
        n = a.classes * per_class
        if n == 0:
            continue
        kinds = kinds_for(n, fractions, np.random.default_rng([a.seed, split_index, 0]))
        for c in range(a.classes):
            folder = os.path.join(a.out, split, f"class_{c:03d}")
            os.makedirs(folder, exist_ok=True)
            for k in range(per_class):
                i = c * per_class + k
                jobs.append((os.path.join(folder, f"{i:06d}.JPEG"), [a.seed, split_index, 1, i], kinds[i]))

    with multiprocessing.Pool(max(1, a.jobs)) as pool:
        results = pool.map(make_one, jobs, chunksize=8)
    sizes = np.array([r[0] for r in results], dtype=np.float64)
    counts = {k: sum(1 for r in results if r[1] == k) for k in ("baseline", "progressive", "gray", "cmyk")}
    print(f"{a.out}: {len(results)} JPEG files, {sizes.mean() / 1024:.1f} KiB mean "
          f"({sizes.sum() / 2**20:.1f} MiB), " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
