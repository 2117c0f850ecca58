#!/usr/bin/env bash
# bf16 against fp32 on real images (issue 10, item 6): ConvNeXt-T and WTConvNeXt-T at 224 px, the
# first 300 steps from the same seed (same initial weights, same batches), on Fashion-MNIST written
# as a PNG image folder (haargrad export-png) and read through the image_folder loader.
# Writes OUT/loss-curves.csv: step, model, precision, the running-mean train loss the log prints
# every 10 steps, and the mean loss of those 10 steps alone (from two running means); and per run
# its log. A run that fails (a bf16 run that diverges stops at its non-finite loss) keeps the
# steps it logged in the file, and the script exits 1 after the others.
# Usage (GPU machine): scripts/bf16-loss-curves.sh HAARGRAD FASHION_MNIST_DIR OUT_DIR
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 HAARGRAD FASHION_MNIST_DIR OUT_DIR" >&2; exit 2; }
HG=$1 FM=$2 OUT=$3
mkdir -p "$OUT"
IMG=$OUT/fmnist-png
if [ ! -d "$IMG/train" ] &&
   ! "$HG" export-png --data-dir "$FM" --out "$IMG" --limit-per-class 4000 > "$OUT/export.log" 2>&1; then
  echo "export-png failed:" >&2
  tail -5 "$OUT/export.log" >&2
  exit 1
fi
cat > "$OUT/curves.yaml" <<YAML
dataset: image_folder
data_dir: $IMG
train_split: train
val_split: val
num_classes: 10
in_chans: 3
img_size: 224
batch_size: 128
epochs: 1
max_steps_per_epoch: 300
log_interval: 10
opt: adamw
lr: 1.0e-3
weight_decay: 0.05
warmup_epochs: 0
sched: none
seed: 1
workers: 14
device: cuda
YAML
echo "step,model,precision,running_loss,window_loss" > "$OUT/loss-curves.csv"
failed=()
for m in convnext_tiny wtconvnext_tiny; do
  for p in fp32 bf16; do
    if ! "$HG" train "$OUT/curves.yaml" --model $m --precision $p --output "$OUT/runs" \
      --experiment $m-$p --plain > "$OUT/$m-$p.log" 2>&1; then
      echo "$m $p failed:"
      tail -5 "$OUT/$m-$p.log"
      failed+=("$m-$p")
    fi
    grep -oE "step [0-9]+/[0-9]+ loss [0-9.]+" "$OUT/$m-$p.log" |
      awk -v m=$m -v p=$p '{split($2, a, "/"); s = a[1]; l = $4;
        w = (s * l - ps * pl) / (s - ps); printf "%d,%s,%s,%.5f,%.5f\n", s, m, p, l, w; ps = s; pl = l}' \
      >> "$OUT/loss-curves.csv" || true  # a run that failed before its first log line has none
    grep -E "top-1" "$OUT/$m-$p.log" | tail -1 || true
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "bf16-loss-curves: ${failed[*]} failed (their logs in $OUT; their logged steps are in the CSV)" >&2
  exit 1
fi
