#!/usr/bin/env bash
# The whole GPU check, run ON the GPU machine from the repo root (see README "GPU"):
#   configure with CUDA for sm_90, build, run the gpu-labelled tests (incl. the golden test on the
#   GPU and the op harness's device tests), compute-sanitizer memcheck on the WTConv / conv tests,
#   the op harness's perf table, the layer benchmark and the model benchmark, the data loader per
#   decode backend beside torchvision (data-bench), then print a summary table last. Results go to
#   $OUT (or ./gpu-out).
# Prepare first, on the development machine:  ./scripts/gpu-deps.sh  (creates .deps/) and
#   mkdir -p .golden && cp ../shared/golden/*.safetensors .golden/   (the golden files travel too)
# Device tool:  run(command="./scripts/gpu-check.sh", carry=[".deps", ".golden"])
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
D=$PWD/.deps/root/usr
export LD_LIBRARY_PATH=$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export HAARGRAD_GOLDEN_DIR=${HAARGRAD_GOLDEN_DIR:-$PWD/.golden}
STAGES=${STAGES:-build,test,sanitize,ops-perf,bench-layer,bench,peer,data-bench,train}
BUILD=${BUILD:-build-gpu}   # an existing build folder may be given (then leave "build" out of STAGES)
declare -A status

has() { [[ ",$STAGES," == *",$1,"* ]]; }
# A GPU test that skips on the GPU machine (no device found, nvJPEG or NCCL left out of the build)
# checked nothing while gtest still exits 0: such a skip fails its stage, unless ALLOW_SKIPS=1
# (the one expected skip, the hardware JPEG decoder test on a GPU without one, is let through).
skipped() {
  local skips  # gtest's line per skipped test (its summary lists them again, without a time)
  skips=$(grep -E "^\[  SKIPPED \] [A-Za-z].* \([0-9]+ ms\)$" "$1" |
    grep -v "NvjpegDecode.HardwareWritesNothingPastItsImage")
  if [ -n "$skips" ] && [ "${ALLOW_SKIPS:-0}" != 1 ]; then
    echo "$(echo "$skips" | wc -l) GPU test(s) skipped on the GPU machine (ALLOW_SKIPS=1 to accept):"
    echo "$skips" | head -10
    status[$2]=1
  fi
}
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
if has build; then
  log "configure + build"
  { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHAARGRAD_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$D" -DCMAKE_INCLUDE_PATH="$D/include" \
    && cmake --build "$BUILD" -j"$(nproc)"; } > "$OUT/build.log" 2>&1
  status[build]=$?
  tail -20 "$OUT/build.log"
  [ "${status[build]}" -eq 0 ] || { log "BUILD FAILED"; grep -m20 -E "error" "$OUT/build.log"; exit 1; }
fi
if has test; then
  log "gpu tests"
  # the test binaries directly (gtest), so a build folder made elsewhere works too
  "$BUILD/tests/test_gpu" > "$OUT/gpu-tests.log" 2>&1
  status[gpu_tests]=$?
  skipped "$OUT/gpu-tests.log" gpu_tests
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|golden f32 cuda|FAILED  \]" "$OUT/gpu-tests.log" | tail -25
  log "op harness on the GPU (f32, tf32, bf16 against the CPU; CUDA kernel tests)"
  "$BUILD/tests/test_ops" --gtest_filter='*Gpu*' > "$OUT/ops-gpu-tests.log" 2>&1
  status[ops_gpu_tests]=$?
  skipped "$OUT/ops-gpu-tests.log" ops_gpu_tests
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED  \]|PENDING" "$OUT/ops-gpu-tests.log" | tail -40
  if [ -x "$BUILD/tests/test_models" ]; then
    log "golden test on the CPU (f64, f32, bf16)"
    "$BUILD/tests/test_models" --gtest_filter='Golden*' > "$OUT/golden-cpu.log" 2>&1
    status[golden_cpu]=$?
    grep -E "golden (f|bf)|PASSED|FAILED" "$OUT/golden-cpu.log"
  fi
fi
if has sanitize; then
  log "compute-sanitizer memcheck (WTConv, conv, depthwise, the elementwise / row ops' harness cases, pinned memory)"
  SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  d=Gpu/OpDevice.MatchesCpu  # the op harness's device cases of WTConv's kernel variants and the row ops
  "$SAN" --tool memcheck --error-exitcode 3 $BUILD/tests/test_ops \
    --gtest_filter="*WTConvGpu*:*GpuConv2d*:*GpuDepthwise*:$d/wtconv2d_*_ulp_*:$d/gelu_*:$d/*layer_scale_*:$d/scale_samples_*:$d/drop_path_*:$d/global_avg_pool_*:$d/layer_norm_*" \
    > "$OUT/memcheck.log" 2>&1
  status[memcheck]=$?
  tail -4 "$OUT/memcheck.log"
  "$SAN" --tool memcheck --error-exitcode 3 $BUILD/tests/test_gpu --gtest_filter='*Pinned*' \
    > "$OUT/memcheck-pinned.log" 2>&1
  status[memcheck_pinned]=$?
  tail -2 "$OUT/memcheck-pinned.log"
fi
if has ops-perf; then
  log "op harness perf table (ConvNeXt-T / WTConvNeXt-T layer shapes, f32 / tf32 / bf16)"
  $BUILD/tests/test_ops --perf 2>&1 | tee "$OUT/ops_perf.txt"
  status[ops_perf]=${PIPESTATUS[0]}
fi
if has bench-layer; then
  log "bench-layer"
  $BUILD/haargrad bench-layer --output "$OUT/bench_layer.json" 2>&1 | tee "$OUT/bench_layer.txt"
  status[bench_layer]=${PIPESTATUS[0]}
  log "bench-layer, bf16 activations"
  $BUILD/haargrad bench-layer --precision bf16 --output "$OUT/bench_layer_bf16.json" 2>&1 | tee "$OUT/bench_layer_bf16.txt"
  status[bench_layer_bf16]=${PIPESTATUS[0]}
  log "bench-layer --cudnn-dw: cuDNN's depthwise convs beside ours (the dw rows)"
  $BUILD/haargrad bench-layer --cudnn-dw --iters 10 --output "$OUT/bench_layer_cudnn.json" 2>&1 \
    | tee "$OUT/bench_layer_cudnn.log" | grep -E "^impl|dw |error" | tee "$OUT/bench_layer_cudnn.txt"
  status[bench_layer_cudnn]=${PIPESTATUS[0]}
fi
if has bench; then
  log "bench (ConvNeXt-T vs WTConvNeXt-T, batch 128, 224 px)"
  $BUILD/haargrad bench --device cuda --batch 128 --img-size 224 --precision ${PRECISIONS:-fp32,tf32,bf16} \
    --wtconv ${WTCONV:-fused,unfused} --output "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
  status[bench]=${PIPESTATUS[0]}
  log "bench --breakdown (where the time of one training step goes, bf16)"
  $BUILD/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --wtconv fused \
    --steps 5 --warmup 3 --breakdown --output "$OUT/bench_breakdown.json" 2>&1 | tee "$OUT/bench_breakdown.txt" | tail -40
  status[breakdown]=${PIPESTATUS[0]}
fi
if has peer; then
  log "peer: timm ConvNeXt-T on the same GPU in the same run (scripts/peer-bench.py)"
  python3 scripts/peer-bench.py --output "$OUT/peer_bench.json" 2>&1 | tee "$OUT/peer_bench.txt"
  status[peer]=${PIPESTATUS[0]}
fi
if has data-bench; then
  # An ImageNet-like folder (scripts/make-jpeg-folder.py: 300-500 px, ~110 KiB, a few progressive /
  # grayscale / CMYK files), then the loader alone per decode backend and torchvision + PIL with the same
  # workers, batch and transform (RandomResizedCrop 224 + flip + normalise: no RandAugment, erasing or
  # mixup, which the GPU transform lacks). GPU rows give bf16 batches (--precision bf16).
  JPEG_DIR=${JPEG_DIR:-/tmp/hg-jpeg-folder}
  DATA_WORKERS=${DATA_WORKERS:-14}
  log "data-bench: make $JPEG_DIR (scripts/make-jpeg-folder.py), bench-data per decode backend, torchvision peer"
  if [ ! -d "$JPEG_DIR/train" ]; then
    python3 scripts/make-jpeg-folder.py --out "$JPEG_DIR" --classes ${JPEG_CLASSES:-20} \
      --train-per-class ${JPEG_PER_CLASS:-250} --val-per-class 10 > "$OUT/make_jpeg_folder.log" 2>&1
    status[make_jpeg_folder]=$?
    tail -2 "$OUT/make_jpeg_folder.log"
  fi
  $BUILD/haargrad bench-data configs/convnext_tiny.yaml --device cuda --precision bf16 --dataset image_folder \
    --data-dir "$JPEG_DIR" --val-split validation --workers "$DATA_WORKERS" --batch-size 128 --img-size 224 --aa '' --reprob 0 --color-jitter 0 \
    --mixup 0 --cutmix 0 --train-interpolation bilinear --decoders "${DATA_DECODERS:-stb,turbo,turbo_gpu_aug,nvjpeg,nvjpeg_gpu}" \
    --output "$OUT/bench_data.json" 2>&1 | tee "$OUT/bench_data.txt"
  status[bench_data]=${PIPESTATUS[0]}
  python3 scripts/peer-data-bench.py --data-dir "$JPEG_DIR" --workers "$DATA_WORKERS" --batch-size 128 \
    --img-size 224 --output "$OUT/peer_data.json" 2>&1 | tee "$OUT/peer_data.txt"
  status[peer_data]=${PIPESTATUS[0]}
fi
if has train; then
  # Fashion-MNIST: Debian's package path, or a copy carried in .fmnist/ (the GPU machine lacks the package)
  FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
  [ -d .fmnist ] && FMNIST=$PWD/.fmnist
  log "train: configs/fashion_mnist.yaml on cuda"
  $BUILD/haargrad train configs/fashion_mnist.yaml --device cuda --data-dir "$FMNIST" \
    --output "$OUT/runs" --experiment fmnist_cuda --workers 8 > "$OUT/train_fmnist.log" 2>&1
  status[train_fmnist]=$?
  tail -4 "$OUT/train_fmnist.log"
  log "train: configs/fashion_mnist.yaml on cuda in bf16 mixed precision"
  $BUILD/haargrad train configs/fashion_mnist.yaml --device cuda --precision bf16 --data-dir "$FMNIST" \
    --output "$OUT/runs" --experiment fmnist_cuda_bf16 --workers 8 > "$OUT/train_fmnist_bf16.log" 2>&1
  status[train_fmnist_bf16]=$?
  tail -4 "$OUT/train_fmnist_bf16.log"
  log "train: ConvNeXt-T and WTConvNeXt-T at 224 px from an ImageFolder of Fashion-MNIST PNGs (40 steps)"
  rm -rf /tmp/fmnist_png  # export-png writes into a new or empty folder only
  $BUILD/haargrad export-png --data-dir "$FMNIST" --out /tmp/fmnist_png --limit-per-class 600 > "$OUT/export.log" 2>&1
  status[export_png]=$?
  for m in convnext_tiny wtconvnext_tiny; do
    $BUILD/haargrad train configs/$m.yaml --device cuda --data-dir /tmp/fmnist_png --val-split val \
      --num-classes 10 --epochs 1 --max-steps-per-epoch 40 --grad-accum-steps 1 --warmup-epochs 0 \
      --workers 14 --output "$OUT/runs" --experiment ${m}_png > "$OUT/train_$m.log" 2>&1
    status[train_$m]=$?
    tail -3 "$OUT/train_$m.log"
  done
fi
echo
echo "== summary ($(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
for k in "${!status[@]}"; do printf '%-12s %s\n' "$k" "$([ "${status[$k]}" -eq 0 ] && echo ok || echo "FAILED (${status[$k]})")"; done
[ -f "$OUT/gpu-tests.log" ] && grep -hE "^\[  (PASSED|FAILED)" "$OUT/gpu-tests.log" "$OUT/ops-gpu-tests.log"
# exit status: 0 only when every stage that ran passed
for k in "${!status[@]}"; do [ "${status[$k]}" -eq 0 ] || exit 1; done
exit 0
