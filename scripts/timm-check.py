#!/usr/bin/env python3
"""timm <-> haargrad, ConvNeXt-T: the same weights give the same logits on the same batch, both ways.

  1. timm -> haargrad: timm.create_model("convnext_tiny") with every parameter made to matter (layer
     scale gamma, biases and norm weights drawn at random instead of timm's 1e-6 / 0 / 1 init), its
     state_dict saved as safetensors, loaded by `haargrad infer --model convnext_tiny`; haargrad's
     logits against timm's.
  2. haargrad -> timm: a short `haargrad train` of convnext_tiny (synthetic data, layer scale 0.5 so
     every block counts), `haargrad export last.safetensors --out weights.safetensors`, loaded by
     timm's load_state_dict(strict=True); timm's logits against `haargrad infer` on the checkpoint.

Both in float32 (TF32 off in PyTorch; haargrad's infer is exact fp32); pass when the relative error
max|haargrad - timm| / max|timm| is at most --tol (1e-4, the golden files' bound for whole fp32
models). Prints one line per check and a JSON summary, exits 0 when both pass, 1 otherwise.

Self-contained: needs python3 with torch and timm (no network, no safetensors package: the format is
read and written here), and a built `haargrad`. Where to run it: the GPU machine (torch + timm there),
from the repository root, after a CUDA build, e.g. with the device tool:

    ./scripts/gpu-deps.sh   # on the development machine, once (the .deps folder: cuDNN etc.)
    run(command="STAGES=build ./scripts/gpu-check.sh && python3 scripts/timm-check.py "
                "--haargrad build-gpu/haargrad --out $OUT/timm-check.json", carry=[".deps"])

or anywhere with a CPU build: python3 scripts/timm-check.py --haargrad build/haargrad --device cpu
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import torch
import timm

DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}


def save_safetensors(path, tensors):
    """tensors: dict name -> torch.Tensor (written in that order, row-major, little-endian)."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().to("cpu").contiguous().clone()
        data = bytes(t.untyped_storage())
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    out = {}
    for name, e in header.items():
        a, b = e["data_offsets"]
        buf = bytearray(raw[base + a:base + b])
        dtype = DTYPES[e["dtype"]]
        t = torch.frombuffer(buf, dtype=dtype) if len(buf) else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(e["shape"]).clone()
    return out


def run(cmd, env):
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print(r.stdout)
        raise SystemExit(f"timm-check: command failed with exit code {r.returncode}: {' '.join(cmd)}")
    return r.stdout


def rel_error(ours, ref):
    ours, ref = ours.double(), ref.double()
    return ((ours - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def timm_logits(model, x, device):
    model = model.to(device).eval()
    with torch.no_grad():
        return model(x.to(device)).float().cpu()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--haargrad", default="build-gpu/haargrad" if os.path.exists("build-gpu/haargrad") else "build/haargrad")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cuda", "cpu"])
    ap.add_argument("--model", default="convnext_tiny")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--img-size", type=int, default=224)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--workdir", default="", help="keep the files here (default: a temporary folder)")
    ap.add_argument("--out", default="", help="also write the JSON summary to this file")
    a = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False  # exact fp32, as haargrad's default precision
    torch.backends.cudnn.allow_tf32 = False
    env = dict(os.environ)
    deps = os.path.join(os.getcwd(), ".deps/root/usr/lib/x86_64-linux-gnu")  # cuDNN etc. from gpu-deps.sh
    if os.path.isdir(deps):
        env["LD_LIBRARY_PATH"] = deps + ":" + env.get("LD_LIBRARY_PATH", "")
    hg = os.path.abspath(a.haargrad)
    if not os.path.exists(hg):
        raise SystemExit(f"timm-check: no haargrad program at {hg} (build it, or give --haargrad PATH)")
    work = a.workdir or tempfile.mkdtemp(prefix="timm-check-")
    os.makedirs(work, exist_ok=True)
    print(run([hg, "--version"], env).strip())
    print(f"torch {torch.__version__}, timm {timm.__version__}, device {a.device}, work folder {work}")

    torch.manual_seed(0)
    x = torch.randn(a.batch, 3, a.img_size, a.img_size)
    batch_file = os.path.join(work, "input.safetensors")
    save_safetensors(batch_file, {"input": x})
    results = {}

    # ---- 1. timm -> haargrad ----------------------------------------------------------------------
    m = timm.create_model(a.model, pretrained=False)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("gamma"):
                p.uniform_(0.2, 0.6)  # timm's 1e-6 would hide the blocks
            elif name.endswith("bias"):
                p.normal_(0.0, 0.02)
            elif p.ndim == 1:  # norm weights
                p.normal_(1.0, 0.1)
    ref = timm_logits(m, x, a.device)
    timm_file = os.path.join(work, "timm_weights.safetensors")
    save_safetensors(timm_file, m.state_dict())
    out1 = os.path.join(work, "haargrad_logits_timm_weights.safetensors")
    run([hg, "infer", "--checkpoint", timm_file, "--input", batch_file, "--out", out1, "--model", a.model,
         "--device", a.device], env)
    ours = load_safetensors(out1)["logits"]
    results["timm_to_haargrad"] = {"rel_error": rel_error(ours, ref), "shape": list(ours.shape)}

    # ---- 2. haargrad -> timm ----------------------------------------------------------------------
    config = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "convnext_tiny.yaml")
    run([hg, "train", config, "--model", a.model, "--dataset", "synthetic", "--synthetic-size", "32",
         "--img-size", str(a.img_size), "--batch-size", "8", "--grad-accum-steps", "1", "--epochs", "1",
         "--max-steps-per-epoch", "2", "--warmup-epochs", "0", "--ls-init-value", "0.5", "--precision", "fp32",
         "--device", a.device, "--workers", "2", "--output", work, "--experiment", "haargrad_run", "--plain"], env)
    ckpt = os.path.join(work, "haargrad_run", "last.safetensors")
    exported = os.path.join(work, "haargrad_weights.safetensors")
    run([hg, "export", ckpt, "--out", exported], env)
    sd = load_safetensors(exported)
    m2 = timm.create_model(a.model, pretrained=False)
    want = {k: tuple(v.shape) for k, v in m2.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in sd.items()}
    missing, unexpected = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    misshaped = sorted(k for k in set(want) & set(got) if want[k] != got[k])
    m2.load_state_dict(sd, strict=True)  # raises on any difference
    ref2 = timm_logits(m2, x, a.device)
    out2 = os.path.join(work, "haargrad_logits_own_weights.safetensors")
    run([hg, "infer", "--checkpoint", ckpt, "--input", batch_file, "--out", out2, "--device", a.device], env)
    ours2 = load_safetensors(out2)["logits"]
    results["haargrad_to_timm"] = {"rel_error": rel_error(ours2, ref2), "shape": list(ours2.shape),
                                   "missing": missing, "unexpected": unexpected, "misshaped": misshaped,
                                   "tensors": len(sd)}

    ok = True
    for name, r in results.items():
        passed = r["rel_error"] <= a.tol and not r.get("missing") and not r.get("unexpected") and not r.get("misshaped")
        r["passed"] = passed
        ok &= passed
        print(f"{name:18s} logits {r['shape']} rel error {r['rel_error']:.3g} (tol {a.tol:g}): "
              f"{'PASS' if passed else 'FAIL'}")
    summary = {"model": a.model, "device": a.device, "batch": a.batch, "img_size": a.img_size, "tol": a.tol,
               "torch": torch.__version__, "timm": timm.__version__, "results": results, "passed": ok}
    print(json.dumps(summary, indent=2))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(summary, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
