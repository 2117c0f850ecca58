#!/usr/bin/env python3
"""Generates golden files (WTConv2d layer cases, ConvNeXt / WTConvNeXt models) in the exact format
of shared/golden/README.md, in float64 on the CPU, and checks that this generator reproduces the
shared files before writing new ones.

Usage (see tools/golden/README.md):
  make_golden.py verify [--golden DIR]     # reproduce the shared files from their x / param.* / input
  make_golden.py generate --out DIR        # write the extra files (other sizes, depths, levels, ...)

Written from docs/wtconv-operator.md (the operator) and timm's ConvNeXt; no code copied.
"""
import argparse
import copy
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import safetensors
import safetensors.torch
import timm
from timm.models.convnext import ConvNeXt

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)  # the machine's 2 cores are shared with other helpers

SOURCE_WTCONV = "reference WTConv2d (Finder et al. 2024), float64 CPU"
SOURCE_MODEL = "timm ConvNeXt / reference WTConvNeXt, float64 CPU"
ADAMW3_TEXT = ("3 AdamW steps on the same batch from param.*: lr 1e-3, betas (0.9, 0.999), eps 1e-8, "
               "weight decay 0.05 on params with ndim > 1 whose name has no 'scale', 0 elsewhere; "
               "adamw3.losses are the losses before each step")

# ---------------------------------------------------------------------------------------------
# WTConv2d, from docs/wtconv-operator.md
# ---------------------------------------------------------------------------------------------


def haar_filters(channels):
    """(4C, 1, 2, 2): channel 4c + s holds sub-band filter s (LL, top-bottom, left-right, diagonal),
    entries exactly +-0.5. Used both for analysis (stride-2 conv) and synthesis (its transpose)."""
    f = torch.tensor([[[0.5, 0.5], [0.5, 0.5]],
                      [[0.5, 0.5], [-0.5, -0.5]],
                      [[0.5, -0.5], [0.5, -0.5]],
                      [[0.5, -0.5], [-0.5, 0.5]]])
    return f.unsqueeze(1).repeat(channels, 1, 1, 1)


class Scale(nn.Module):
    """Per-channel multiplier stored as `weight` of shape (1, C, 1, 1) (checkpoint layout)."""

    def __init__(self, channels, value):
        super().__init__()
        self.weight = nn.Parameter(torch.full((1, channels, 1, 1), float(value)))

    def forward(self, x):
        return x * self.weight


class WTConv2d(nn.Module):
    """Y = base_scale * (dwconv(x) + bias) + multi-level Haar-domain depthwise convs (NCHW)."""

    def __init__(self, channels, kernel_size, wt_levels):
        super().__init__()
        assert kernel_size % 2 == 1
        c, k = channels, kernel_size
        self.channels, self.levels = c, wt_levels
        self.register_buffer("wt_filter", haar_filters(c))
        self.register_buffer("iwt_filter", haar_filters(c))
        self.base_conv = nn.Conv2d(c, c, k, padding=k // 2, groups=c, bias=True)
        self.base_scale = Scale(c, 1.0)
        self.wavelet_convs = nn.ModuleList(
            nn.Conv2d(4 * c, 4 * c, k, padding=k // 2, groups=4 * c, bias=False) for _ in range(wt_levels))
        self.wavelet_scale = nn.ModuleList(Scale(4 * c, 0.1) for _ in range(wt_levels))

    def forward(self, x):
        c = self.channels
        ll, shapes, t = x, [], []
        for l in range(self.levels):
            h, w = ll.shape[2], ll.shape[3]
            shapes.append((h, w))
            if h % 2 or w % 2:  # zeros at the bottom / right to even sizes
                ll = F.pad(ll, (0, w % 2, 0, h % 2))
            coeff = F.conv2d(ll, self.wt_filter, stride=2, groups=c)  # (B, 4C, h', w')
            ll = coeff[:, 0::4]  # the raw LL band feeds the next level
            t.append(self.wavelet_scale[l](self.wavelet_convs[l](coeff)))
        rec = None
        for l in reversed(range(self.levels)):
            tl = t[l]
            if rec is not None:
                b, _, h2, w2 = tl.shape
                t5 = tl.reshape(b, c, 4, h2, w2)
                tl = torch.cat([t5[:, :, :1] + rec.unsqueeze(2), t5[:, :, 1:]], dim=2).reshape(b, 4 * c, h2, w2)
            h, w = shapes[l]
            rec = F.conv_transpose2d(tl, self.iwt_filter, stride=2, groups=c)[:, :, :h, :w]
        return self.base_scale(self.base_conv(x)) + rec


def haar_by_formula(x):
    """The 2x2-block formulas of wtconv.md, written out; checks the filter-based analysis."""
    a, b, c, d = x[:, :, 0::2, 0::2], x[:, :, 0::2, 1::2], x[:, :, 1::2, 0::2], x[:, :, 1::2, 1::2]
    s = torch.stack([a + b + c + d, a + b - c - d, a - b + c - d, a - b - c + d], dim=2) / 2
    return s.reshape(x.shape[0], -1, x.shape[2] // 2, x.shape[3] // 2)


WTCONV_PARAM_NAMES = ["base_conv.weight", "base_conv.bias", "base_scale.weight"]


def wtconv_param_names(levels):
    return (WTCONV_PARAM_NAMES + [f"wavelet_convs.{l}.weight" for l in range(levels)]
            + [f"wavelet_scale.{l}.weight" for l in range(levels)])


# ---------------------------------------------------------------------------------------------
# Random values (never the init: every parameter must matter)
# ---------------------------------------------------------------------------------------------


def randomize(module, gen):
    """Every trainable tensor random: weights ~ N(0, 0.25^2), scales / gamma ~ U(-1.2, 1.2), norm
    weights ~ 1 + N(0, 0.2^2), biases ~ N(0, 0.2^2). Buffers (Haar filters) stay fixed."""
    norm_weights = {id(m.weight) for m in module.modules() if isinstance(m, nn.LayerNorm) and m.weight is not None}
    with torch.no_grad():
        for name, p in module.named_parameters():
            leaf = name.split(".")[-1]
            n = torch.randn(p.shape, generator=gen)
            if "scale" in name or leaf == "gamma":
                p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * 1.2)
            elif id(p) in norm_weights:
                p.copy_(1 + 0.2 * n)
            elif leaf == "bias":
                p.copy_(0.2 * n)
            else:
                p.copy_(0.25 * n)


# ---------------------------------------------------------------------------------------------
# WTConv2d cases file
# ---------------------------------------------------------------------------------------------


def wtconv_case(layer, x, grad_y):
    """y and the gradients of sum(y * grad_y) w.r.t. x and every parameter."""
    x = x.clone().requires_grad_()
    layer.zero_grad()
    y = layer(x)
    (y * grad_y).sum().backward()
    params = dict(layer.named_parameters())
    grads = {"x": x.grad.detach()}
    for n in wtconv_param_names(layer.levels):
        grads[n] = params[n].grad.detach().clone()
    return y.detach(), grads


def make_wtconv_file(cases, seed):
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for i, cs in enumerate(cases):
        layer = WTConv2d(cs["C"], cs["kernel_size"], cs["wt_levels"])
        randomize(layer, gen)
        x = torch.randn(cs["B"], cs["C"], cs["H"], cs["W"], generator=gen)
        grad_y = torch.randn(x.shape, generator=gen)
        y, grads = wtconv_case(layer, x, grad_y)
        p = f"case{i}."
        tensors[p + "x"], tensors[p + "y"], tensors[p + "grad_y"] = x, y, grad_y
        params = dict(layer.named_parameters())
        for n in wtconv_param_names(cs["wt_levels"]):
            tensors[p + n] = params[n].detach().clone()
        for n, g in grads.items():
            tensors[p + "grad." + n] = g
    meta = {"source": SOURCE_WTCONV, "cases": json.dumps(cases), "loss": "sum(y * grad_y)"}
    return tensors, meta


# ---------------------------------------------------------------------------------------------
# Model files
# ---------------------------------------------------------------------------------------------


def build_model(cfg, in_chans):
    """timm ConvNeXt (patch cfg["patch_size"], default 4; eval, no drop path); for wtconvnext every
    block's conv_dw becomes a WTConv2d(dim, kernel_size, wt_levels[stage])."""
    k, n = cfg["kernel_size"], len(cfg["depths"])
    assert 1 <= n <= 4 and len(cfg["dims"]) == n
    # timm always builds 4 stages: pad with stages of the last width (so the head is built for
    # dims[-1]), then keep the first n. The names stay stages.{i}.
    depths = list(cfg["depths"]) + [1] * (4 - n)
    dims = list(cfg["dims"]) + [cfg["dims"][-1]] * (4 - n)
    model = ConvNeXt(in_chans=in_chans, num_classes=cfg["num_classes"], depths=tuple(depths),
                     dims=tuple(dims), kernel_sizes=k, patch_size=cfg.get("patch_size", 4),
                     drop_path_rate=0.0, drop_rate=0.0)
    model.stages = model.stages[:n]
    if cfg["model"] == "wtconvnext":
        for i, stage in enumerate(model.stages):
            for block in stage.blocks:
                block.conv_dw = WTConv2d(cfg["dims"][i], k, cfg["wt_levels"][i])
    return model.double().eval()


def forward_with_acts(model, x):
    acts = {}
    h = model.stem(x)
    acts["act.stem"] = h.detach().clone()
    for i, stage in enumerate(model.stages):
        h = stage(h)
        acts[f"act.stages.{i}"] = h.detach().clone()
    return model.forward_head(h), acts


def adamw_groups(model):
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (decay if p.ndim > 1 and "scale" not in n else no_decay).append(p)
    return [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}]


def model_outputs(model, x, labels):
    """Everything a model golden file holds, from the model's current parameters."""
    start = copy.deepcopy(model.state_dict())
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    model.zero_grad()
    logits, acts = forward_with_acts(model, x)
    assert torch.equal(logits, model(x)), "stem/stages/head split differs from model.forward"
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    params = dict(model.named_parameters())
    out = {"logits": logits.detach(), "loss": loss.detach().reshape(1), **acts}
    for n in trainable:
        out["grad." + n] = params[n].grad.detach().clone()

    opt = torch.optim.AdamW(adamw_groups(model), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        l = F.cross_entropy(model(x), labels)
        losses.append(l.item())
        l.backward()
        opt.step()
    out["adamw3.losses"] = torch.tensor(losses)
    for n in trainable:
        out["adamw3." + n] = params[n].detach().clone()
    model.load_state_dict(start)
    return out


def make_model_file(cfg, input_shape, seed):
    gen = torch.Generator().manual_seed(seed)
    model = build_model(cfg, input_shape[1])
    randomize(model, gen)
    x = torch.randn(*input_shape, generator=gen)
    labels = torch.randint(0, cfg["num_classes"], (input_shape[0],), generator=gen, dtype=torch.int64)
    tensors = {"input": x, "labels": labels}
    for n, t in model.state_dict().items():
        tensors["param." + n] = t.detach().clone()
    tensors.update(model_outputs(model, x, labels))
    meta = {"source": SOURCE_MODEL, "config": json.dumps(cfg), "input_shape": json.dumps(list(input_shape)),
            "loss": "mean cross entropy over the batch", "mode": "eval (no drop path)", "adamw3": ADAMW3_TEXT}
    return tensors, meta


# ---------------------------------------------------------------------------------------------
# Verification against the shared files
# ---------------------------------------------------------------------------------------------


def rel(a, b):
    """max |a - b| / max |b| (the project's relative error)."""
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-300)).item()


def verify_wtconv(path):
    f = safetensors.torch.load_file(path)
    with safetensors.safe_open(path, "pt") as h:
        meta = h.metadata()
    cases = json.loads(meta["cases"])
    worst = 0.0
    for i, cs in enumerate(cases):
        p = f"case{i}."
        layer = WTConv2d(cs["C"], cs["kernel_size"], cs["wt_levels"])
        with torch.no_grad():
            for n, q in layer.named_parameters():
                q.copy_(f[p + n])
        y, grads = wtconv_case(layer, f[p + "x"], f[p + "grad_y"])
        worst = max(worst, rel(y, f[p + "y"]), *(rel(g, f[p + "grad." + n]) for n, g in grads.items()))
        expected = {p + k for k in ["x", "y", "grad_y", "grad.x"] + wtconv_param_names(cs["wt_levels"])
                    + ["grad." + n for n in wtconv_param_names(cs["wt_levels"])]}
        present = {k for k in f if k.startswith(p)}
        assert present == expected, f"{path} case {i}: keys differ: {present ^ expected}"
    print(f"verify {os.path.basename(path)}: {len(cases)} cases, worst rel error {worst:.3g}")
    return worst


def verify_model(path):
    f = safetensors.torch.load_file(path)
    with safetensors.safe_open(path, "pt") as h:
        meta = h.metadata()
    cfg = json.loads(meta["config"])
    x, labels = f["input"], f["labels"]
    model = build_model(cfg, x.shape[1])
    state = {k[len("param."):]: v for k, v in f.items() if k.startswith("param.")}
    model.load_state_dict(state, strict=True)  # also checks the names and buffer shapes / order
    for n, b in model.named_buffers():
        assert torch.equal(b, state[n]), f"buffer {n} differs from the file"
    out = model_outputs(model, x, labels)
    worst, worst_key = 0.0, ""
    for k, v in out.items():
        assert k in f, f"{path}: file has no {k}"
        e = rel(v, f[k])
        if e >= worst:
            worst, worst_key = e, k
    mine = set(out) | {"input", "labels"} | {"param." + n for n in state}
    assert mine == set(f), f"{path}: key sets differ: {mine ^ set(f)}"
    print(f"verify {os.path.basename(path)}: {len(out)} tensors, worst rel error {worst:.3g} ({worst_key})")
    return worst


def self_checks():
    """Analysis filters == the block formulas of wtconv.md; synthesis inverts analysis."""
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(2, 3, 6, 10, generator=gen)
    coeff = F.conv2d(x, haar_filters(3), stride=2, groups=3)
    assert (coeff - haar_by_formula(x)).abs().max() < 1e-14
    back = F.conv_transpose2d(coeff, haar_filters(3), stride=2, groups=3)
    assert (back - x).abs().max() < 1e-14


# ---------------------------------------------------------------------------------------------
# The extra files
# ---------------------------------------------------------------------------------------------

# WTConv2d cases: odd / prime / degenerate sizes, K = 1..9, L = 1..5, C = 1..5, B = 1..3.
EXTRA_WTCONV_CASES = [
    {"B": 1, "C": 1, "H": 9, "W": 13, "kernel_size": 3, "wt_levels": 2},
    {"B": 2, "C": 2, "H": 17, "W": 5, "kernel_size": 7, "wt_levels": 3},
    {"B": 3, "C": 3, "H": 1, "W": 7, "kernel_size": 5, "wt_levels": 3},
    {"B": 1, "C": 5, "H": 3, "W": 3, "kernel_size": 9, "wt_levels": 5},
    {"B": 2, "C": 4, "H": 13, "W": 11, "kernel_size": 1, "wt_levels": 4},
    {"B": 1, "C": 2, "H": 1, "W": 1, "kernel_size": 3, "wt_levels": 2},
    {"B": 2, "C": 3, "H": 23, "W": 19, "kernel_size": 9, "wt_levels": 1},
    {"B": 1, "C": 4, "H": 37, "W": 2, "kernel_size": 5, "wt_levels": 5},
    {"B": 3, "C": 1, "H": 8, "W": 8, "kernel_size": 7, "wt_levels": 3},
    {"B": 1, "C": 5, "H": 29, "W": 31, "kernel_size": 3, "wt_levels": 5},
]

# (file name, config, input shape (B, in_chans, H, W)); patch 4 unless the config says "patch_size".
EXTRA_MODELS = [
    ("convnext_d21_k3_c1_36x36",
     {"model": "convnext", "depths": [2, 1], "dims": [4, 12], "num_classes": 3, "kernel_size": 3}, (2, 1, 36, 36)),
    ("convnext_d111_k5_52x44",
     {"model": "convnext", "depths": [1, 1, 1], "dims": [6, 10, 14], "num_classes": 7, "kernel_size": 5},
     (3, 3, 52, 44)),
    ("convnext_d1211_k7_44x60",
     {"model": "convnext", "depths": [1, 2, 1, 1], "dims": [4, 8, 12, 16], "num_classes": 3, "kernel_size": 7},
     (2, 3, 44, 60)),
    ("wtconvnext_d21_k3_l31_36x36",
     {"model": "wtconvnext", "depths": [2, 1], "dims": [4, 12], "num_classes": 7, "kernel_size": 3,
      "wt_levels": [3, 1]}, (2, 3, 36, 36)),
    ("wtconvnext_d111_k7_l121_c1_52x44",
     {"model": "wtconvnext", "depths": [1, 1, 1], "dims": [6, 10, 14], "num_classes": 3, "kernel_size": 7,
      "wt_levels": [1, 2, 1]}, (1, 1, 52, 44)),
    ("wtconvnext_d1211_k5_l4321_44x60",
     {"model": "wtconvnext", "depths": [1, 2, 1, 1], "dims": [4, 8, 12, 16], "num_classes": 7, "kernel_size": 5,
      "wt_levels": [4, 3, 2, 1]}, (2, 3, 44, 60)),
    # Repeated widths: timm still downsamples a stage whose width does not change (its stride is 2).
    ("convnext_d121_k3_w688_36x44",
     {"model": "convnext", "depths": [1, 2, 1], "dims": [6, 8, 8], "num_classes": 5, "kernel_size": 3},
     (2, 3, 36, 44)),
    # Patch 2: timm strides stage 0 too (a downsample with the stem's width), and widths repeat.
    ("wtconvnext_d1111_k3_l2111_w6699_p2_40x40",
     {"model": "wtconvnext", "depths": [1, 1, 1, 1], "dims": [6, 6, 9, 9], "num_classes": 4, "kernel_size": 3,
      "wt_levels": [2, 1, 1, 1], "patch_size": 2}, (1, 3, 40, 40)),
]

# Beyond the shapes above: an input not a multiple of the patch (stem and downsample floor), one
# stage only, in_chans 2, batch 1, more wavelet levels than the map has halvings.
STRESS_MODELS = [
    ("convnext_d2_k3_38x42",
     {"model": "convnext", "depths": [2], "dims": [8], "num_classes": 3, "kernel_size": 3}, (1, 2, 38, 42)),
    ("convnext_d111_k5_39x45",
     {"model": "convnext", "depths": [1, 1, 1], "dims": [4, 6, 8], "num_classes": 7, "kernel_size": 5},
     (2, 3, 39, 45)),
    ("wtconvnext_d2_k7_l5_38x42",
     {"model": "wtconvnext", "depths": [2], "dims": [8], "num_classes": 7, "kernel_size": 7, "wt_levels": [5]},
     (1, 2, 38, 42)),
    ("wtconvnext_d111_k3_l253_39x45",
     {"model": "wtconvnext", "depths": [1, 1, 1], "dims": [4, 6, 8], "num_classes": 3, "kernel_size": 3,
      "wt_levels": [2, 5, 3]}, (2, 3, 39, 45)),
]


def save(path, tensors, meta):
    safetensors.torch.save_file({k: v.contiguous() for k, v in tensors.items()}, path, metadata=meta)
    size = os.path.getsize(path)
    print(f"wrote {path} ({size / 1e6:.2f} MB, {len(tensors)} tensors)")
    assert size < 2e6, f"{path} is over 2 MB"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify", help="reproduce the shared golden files")
    v.add_argument("--golden", default=os.path.join(os.path.dirname(__file__), "../../../shared/golden"))
    v.add_argument("--tol", type=float, default=1e-12)
    g = sub.add_parser("generate", help="write the extra golden files")
    g.add_argument("--out", required=True)
    g.add_argument("--seed", type=int, default=2024)
    g.add_argument("--stress", action="store_true", help="write STRESS_MODELS instead of the extra files")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, timm {timm.__version__}")
    self_checks()

    if args.cmd == "verify":
        ok = True
        for name in sorted(os.listdir(args.golden)):
            if not name.endswith(".safetensors"):
                continue
            path = os.path.join(args.golden, name)
            with safetensors.safe_open(path, "pt") as h:
                meta = h.metadata() or {}
            worst = verify_wtconv(path) if "cases" in meta else verify_model(path)
            ok &= worst <= args.tol
        print("verify:", "OK" if ok else f"FAILED (tolerance {args.tol})")
        return 0 if ok else 1

    os.makedirs(args.out, exist_ok=True)
    if args.stress:
        for i, (name, cfg, shape) in enumerate(STRESS_MODELS):
            tensors, meta = make_model_file(cfg, shape, args.seed + 100 + i)
            save(os.path.join(args.out, name + "_golden.safetensors"), tensors, meta)
        return 0
    tensors, meta = make_wtconv_file(EXTRA_WTCONV_CASES, args.seed)
    save(os.path.join(args.out, "wtconv_extra_golden.safetensors"), tensors, meta)
    for i, (name, cfg, shape) in enumerate(EXTRA_MODELS):
        tensors, meta = make_model_file(cfg, shape, args.seed + 1 + i)
        save(os.path.join(args.out, name + "_golden.safetensors"), tensors, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
