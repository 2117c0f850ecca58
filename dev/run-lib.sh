#!/usr/bin/env bash
# Sourced by the dev/s6*.sh device scripts, from the repository root: builds into /tmp/b
# (dev/gpu-build.sh), then defines what each of them used to repeat:
#   el MSG            seconds since the build ended, and MSG
#   left              seconds of $BUDGET (default 570) still left
#   ok LOG            the gtest PASSED / FAILED lines of LOG
#   HG                the program
#   gpu_tests         test_gpu and test_ops' GPU / CUDA cases, logs $OUT/gpu.log, $OUT/ops.log;
#                     prints the PASSED / FAILED lines and the first failures
#   train3 NAME [--key value ...]
#                     WTConvNeXt-T bf16, 3 epochs on 40 classes, augmentation off (the JPEG against
#                     synthetic runs; give --workers and the dataset), log $OUT/train-NAME.log;
#                     prints its done line and the img/s of each epoch; call it through eval
#   stage NAME        the last "GPU data stage" line of train3 NAME's log
#   jpeg_vs_synth DIR train3 from DIR's JPEGs (decode nvjpeg, 14 workers) and from synthetic data
#                     through the same GPU transform, each followed by its stage line
#   jpeg_folder DIR PER_CLASS JOBS
#                     scripts/make-jpeg-folder.py into DIR (40 classes, PER_CLASS training and 4
#                     validation images each) in the background unless DIR/train exists; MK is its
#                     pid, its log /tmp/mk-$(basename DIR).log
#   folder_ready DIR  waits for jpeg_folder DIR (its pid in MK) and prints its summary line
#   variant_tree DIR  a copy of the tree's sources in DIR, to edit into a same-call "before"
#   build_program SRC BUILD
#                     configures SRC into BUILD against .deps and builds the program only (log
#                     BUILD.log; prints its errors on failure)
#   test_gpu_only     test_gpu alone, log $OUT/gpu.log; its PASSED / FAILED lines and first failures
#   data_bench DIR    bench-data (20 batches of 128, bf16, 14 workers, every decoder) on DIR's JPEGs
#                     and torchvision + PIL (scripts/peer-data-bench.py) on the same folder
#   bench_layer_ab B...
#                     bench-layer K = 5 in bf16 and fp32 with the program of each /tmp/B, WTConv's
#                     and our 7x7's rows
#   model_bench_ab B...
#                     the bf16 model bench (B = 128, 224 px) with each /tmp/B's program:
#                     WTConvNeXt-T, and ConvNeXt-T too for /tmp/b (the product)
#   model_bench_in P...
#                     both models with $HG in precisions P, each while 60 s of $BUDGET are left
source dev/gpu-build.sh
T0=$(date +%s)
el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( ${BUDGET:-570} - ($(date +%s) - T0) )); }
ok() { grep -E "^\[  (FAILED|PASSED)|FAILED  \]" "$1" | head -8; }
HG=/tmp/b/haargrad
jpeg_folder() {
  ( [ -d "$1/train" ] || python3 scripts/make-jpeg-folder.py --out "$1" --classes 40 --train-per-class "$2" \
      --val-per-class 4 --jobs "$3" > "/tmp/mk-$(basename "$1").log" 2>&1 ) &
  MK=$!
}
folder_ready() { wait $MK; tail -1 "/tmp/mk-$(basename "$1").log"; }
gpu_tests() {
  timeout 120 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
  timeout 170 /tmp/b/tests/test_ops --gtest_filter='*Gpu*:*Cuda*' > $OUT/ops.log 2>&1; ok $OUT/ops.log
  grep -A4 "Failure" $OUT/gpu.log $OUT/ops.log | head -20
}
TRAIN3="configs/wtconvnext_tiny.yaml --num-classes 40 --output /tmp/runs --plain --device cuda --precision bf16 --warmup-epochs 1 --lr 1e-3 --epochs 3 --grad-accum-steps 1 --aa '' --reprob 0 --mixup 0 --cutmix 0 --color-jitter 0 --model-ema false"
train3() {
  n=$1; shift
  timeout $(( $(left) > 100 ? 100 : $(left) )) $HG train $TRAIN3 --experiment $n "$@" > $OUT/train-$n.log 2>&1
  echo "== $n: $(grep -E 'done:|error' $OUT/train-$n.log | tail -1 | cut -c1-220)"
  grep -E "epoch [0-9]/3:" $OUT/train-$n.log | sed -E 's/.*(epoch [0-9]\/3).*top-5 [0-9.]+%, /\1 /' | cut -c1-150
}
stage() { grep -E "GPU data stage" $OUT/train-$1.log | tail -1 | cut -c1-200; }
jpeg_vs_synth() {
  eval train3 jpeg_nvjpeg --workers 14 --dataset image_folder --data-dir "$1" --val-split validation --decode nvjpeg
  stage jpeg_nvjpeg
  eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
  stage synth_gpu
}
variant_tree() {
  rm -rf "$1" && mkdir -p "$1" &&
    cp -r CMakeLists.txt app core data dist kernels layers models train tests tools scripts configs dev "$1/"
}
build_program() {
  local D=$PWD/.deps/root/usr
  ( cd "$1" && cmake -S . -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHAARGRAD_CUDA=ON \
      -DBUILD_TESTING=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$D -DCMAKE_INCLUDE_PATH=$D/include \
      > "$2.log" 2>&1 && cmake --build "$2" --target haargrad -j8 >> "$2.log" 2>&1 ) ||
    { echo "build $2 failed"; grep -A5 error "$2.log" | head -20; }
}
bench_layer_ab() {
  local v p
  for v in "$@"; do
    for p in bf16 fp32; do
      timeout 45 /tmp/$v/haargrad bench-layer --kernel 5 --precision $p > $OUT/bl-$v-$p.txt 2>&1
      echo "== $v $p"; grep -E "^(wtconv fused|ours dw 7)" $OUT/bl-$v-$p.txt
    done
  done
}
model_bench_ab() {
  local v m
  for v in "$@"; do
    m=wtconvnext_tiny; [ $v = b ] && m=convnext_tiny,wtconvnext_tiny
    timeout 60 /tmp/$v/haargrad bench --device cuda --batch 128 --img-size 224 --precision bf16 --models $m \
      --wtconv fused --steps 10 --warmup 3 --output $OUT/bench-$v.json > $OUT/bench-$v.txt 2>&1
    echo "== $v"; grep -A30 "^model  " $OUT/bench-$v.txt | cut -c1-170 |
      grep -v "^$\|^timed\|^syncs\|replayed\|^peak\|^held\|^model    .*phase" | head -8
  done
}
model_bench_in() {
  local p
  for p in "$@"; do
    [ $(left) -lt 60 ] && { echo "no budget for $p"; continue; }
    timeout 55 $HG bench --device cuda --batch 128 --img-size 224 --precision $p \
      --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 10 --warmup 3 \
      --output $OUT/bench-$p.json > $OUT/bench-$p.txt 2>&1
    echo "== $p"; grep -A3 "^model  " $OUT/bench-$p.txt | head -3 | cut -c1-130
  done
}
test_gpu_only() {
  timeout 170 /tmp/b/tests/test_gpu > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
  grep -A4 "Failure" $OUT/gpu.log | head -20
}
data_bench() {
  timeout 90 $HG bench-data configs/convnext_tiny.yaml --device cuda --precision bf16 --dataset image_folder \
    --data-dir "$1" --val-split validation --workers 14 --batch-size 128 --img-size 224 --aa '' --reprob 0 \
    --color-jitter 0 --mixup 0 --cutmix 0 --train-interpolation bilinear --max-steps-per-epoch 20 \
    --bench-warmup 1 --bench-epochs 1 --decoders stb,turbo,nvjpeg,nvjpeg_gpu --output $OUT/bench_data.json \
    > $OUT/bench_data.txt 2>&1
  grep -E "^decoder|^(stb|turbo|nvjpeg)" $OUT/bench_data.txt | cut -c1-100
  python3 -c "import json; [print(r['jpeg_decoder'], r['decoded']) for r in json.load(open('$OUT/bench_data.json'))]"
  timeout 60 python3 scripts/peer-data-bench.py --data-dir "$1" --workers 14 --batch-size 128 --img-size 224 \
    --bench-warmup 1 --bench-epochs 1 --output $OUT/peer_data.json > $OUT/peer_data.txt 2>&1
  tail -2 $OUT/peer_data.txt
}
