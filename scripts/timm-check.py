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
models). Prints one line per check and a JSON summary, exits 0 when both pass, 1 otherwise. Each step
prints a line when it starts and its seconds when it ends (also in the summary, "seconds"), and
haargrad's output is passed through as it comes, so a run stopped by a time limit shows where it was.

Self-contained: needs python3 with torch and timm (no network, no safetensors package: the format is
read and written here), and a built `haargrad`. Where to run it: the GPU machine (torch + timm there),
from the repository root, after a CUDA build, e.g. with the device tool:

    ./scripts/gpu-deps.sh   # on the development machine, once (the .deps folder: cuDNN etc.)
    run(command="STAGES=build ./scripts/gpu-check.sh && python3 scripts/timm-check.py "
                "--haargrad build-gpu/haargrad --out $OUT/timm-check.json", carry=[".deps"])

On a CPU machine (no GPU; about 2 minutes on 2 cores, the haargrad train step the longest): a
virtual environment outside the repository with torch and timm (neither is a haargrad dependency, so
no install script has them; a CPU-only torch wheel is enough where its index is reachable, the plain
PyPI one works too but pulls the CUDA libraries, a few GB), then a CPU build:

    python3 -m venv /tmp/venv-timm && /tmp/venv-timm/bin/pip install torch timm
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHAARGRAD_CUDA=OFF -DBUILD_TESTING=OFF
    cmake --build build -j2 --target haargrad
    /tmp/venv-timm/bin/python scripts/timm-check.py --haargrad build/haargrad --device cpu --out /tmp/timm-check.json
"""
import argparse
import contextlib
import ctypes
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

T0 = time.monotonic()
sys.stdout.reconfigure(line_buffering=True)  # every line out at once, also without python3 -u
import torch  # noqa: E402  (after T0: the import's seconds are reported too)
import timm  # noqa: E402

IMPORT_SECONDS = time.monotonic() - T0
SECONDS = {}  # step name -> seconds, reported and written to the summary

DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}


def save_safetensors(path, tensors):
    """tensors: dict name -> torch.Tensor (written in that order, row-major, little-endian)."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().to("cpu").contiguous()
        # The bytes straight from memory: a torch storage has no buffer protocol, so bytes(storage)
        # would read it one byte per Python call (minutes for ConvNeXt-T's 114 MB).
        data = ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()) if t.numel() else b""
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


@contextlib.contextmanager
def step(name):
    """Times one step: a line when it starts and one with its seconds when it ends, so that a run cut
    short (a time limit) shows which step it was in."""
    print(f"[{time.monotonic() - T0:7.1f}s] {name} ...", flush=True)
    start = time.monotonic()
    yield
    SECONDS[name] = round(time.monotonic() - start, 2)
    print(f"[{time.monotonic() - T0:7.1f}s] {name}: {SECONDS[name]:.1f}s", flush=True)


def run(cmd, env, echo=True):
    """Runs a haargrad command, its output passed through line by line as it comes (indented)."""
    print("$ " + " ".join(cmd), flush=True)
    lines = []
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        for line in p.stdout:
            lines.append(line)
            if echo:
                print("  | " + line.rstrip("\n"), flush=True)
    if p.returncode != 0:
        if not echo:
            print("".join(lines), end="", flush=True)
        raise SystemExit(f"timm-check: command failed with exit code {p.returncode}: {' '.join(cmd)}")
    return "".join(lines)


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
    ap.add_argument("--workdir", default="",
                    help="keep the files here (default: a temporary folder, removed when both checks pass)")
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
    print(run([hg, "--version"], env, echo=False).strip())
    print(f"torch {torch.__version__}, timm {timm.__version__}, device {a.device}, work folder {work}, "
          f"python imports {IMPORT_SECONDS:.1f}s")

    with step("input batch"):
        torch.manual_seed(0)
        x = torch.randn(a.batch, 3, a.img_size, a.img_size)
        batch_file = os.path.join(work, "input.safetensors")
        save_safetensors(batch_file, {"input": x})
    results = {}

    # ---- 1. timm -> haargrad ----------------------------------------------------------------------
    with step("1. timm model"):
        m = timm.create_model(a.model, pretrained=False)
        with torch.no_grad():
            for name, p in m.named_parameters():
                if name.endswith("gamma"):
                    p.uniform_(0.2, 0.6)  # timm's 1e-6 would hide the blocks
                elif name.endswith("bias"):
                    p.normal_(0.0, 0.02)
                elif p.ndim == 1:  # norm weights
                    p.normal_(1.0, 0.1)
    with step(f"1. timm forward ({a.device})"):
        ref = timm_logits(m, x, a.device)
    with step("1. save timm state_dict"):
        timm_file = os.path.join(work, "timm_weights.safetensors")
        save_safetensors(timm_file, m.state_dict())
    with step(f"1. haargrad infer on timm weights ({a.device})"):
        out1 = os.path.join(work, "haargrad_logits_timm_weights.safetensors")
        run([hg, "infer", "--checkpoint", timm_file, "--input", batch_file, "--out", out1, "--model", a.model,
             "--device", a.device], env)
        ours = load_safetensors(out1)["logits"]
    results["timm_to_haargrad"] = {"rel_error": rel_error(ours, ref), "shape": list(ours.shape)}
    print(f"timm -> haargrad rel error {results['timm_to_haargrad']['rel_error']:.3g}", flush=True)

    # ---- 2. haargrad -> timm ----------------------------------------------------------------------
    config = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "convnext_tiny.yaml")
    with step(f"2. haargrad train, 2 steps ({a.device})"):
        run([hg, "train", config, "--model", a.model, "--dataset", "synthetic", "--synthetic-size", "32",
             "--img-size", str(a.img_size), "--batch-size", "8", "--grad-accum-steps", "1", "--epochs", "1",
             "--max-steps-per-epoch", "2", "--warmup-epochs", "0", "--ls-init-value", "0.5", "--precision", "fp32",
             "--device", a.device, "--workers", "2", "--output", work, "--experiment", "haargrad_run", "--plain"],
            env)
    ckpt = os.path.join(work, "haargrad_run", "last.safetensors")
    exported = os.path.join(work, "haargrad_weights.safetensors")
    with step("2. haargrad export"):
        run([hg, "export", ckpt, "--out", exported], env)
    with step("2. timm load_state_dict(strict=True)"):
        sd = load_safetensors(exported)
        m2 = timm.create_model(a.model, pretrained=False)
        want = {k: tuple(v.shape) for k, v in m2.state_dict().items()}
        got = {k: tuple(v.shape) for k, v in sd.items()}
        missing, unexpected = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        misshaped = sorted(k for k in set(want) & set(got) if want[k] != got[k])
        if missing or unexpected or misshaped:
            print(f"export vs timm: missing {missing[:8]}, unexpected {unexpected[:8]}, misshaped {misshaped[:8]}",
                  flush=True)
        m2.load_state_dict(sd, strict=True)  # raises on any difference
    with step(f"2. timm forward ({a.device})"):
        ref2 = timm_logits(m2, x, a.device)
    with step(f"2. haargrad infer on its checkpoint ({a.device})"):
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
               "torch": torch.__version__, "timm": timm.__version__, "results": results, "passed": ok,
               "seconds": {"python imports": round(IMPORT_SECONDS, 2), **SECONDS,
                           "total": round(time.monotonic() - T0, 2)}}
    print(json.dumps(summary, indent=2))
    if a.out:  # atomic: a complete file or none
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(summary, f, indent=2)
        os.replace(tmp, a.out)
    if not a.workdir:  # the run's checkpoints make about 1.6 GB; kept after a failure, for a look
        if ok:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"the files are kept in {work} (remove it when done)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
