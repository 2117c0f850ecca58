#!/usr/bin/env bash
# Dev use (device tool), thirteenth session: issue 13's next step, hw_decoder_load (DALI's name):
# the workers decode a share of each batch with libjpeg-turbo beside nvJPEG's hardware decoder,
# which beside a graphed step took 39 ms a batch of 128 (twelfth session). The trainer's step
# graphed with decode: nvjpeg again (kernels/cuda/context.h capture_mutex). WTConvNeXt-T bf16 from
# JPEGs, 100-step epochs: synthetic graphed; nvjpeg op by op at load 1 (the product until now);
# nvjpeg graphed at loads 0.6, 0.45, 0.3. GPU data and graph tests first.
set -uo pipefail
source dev/run-lib.sh
jpeg_folder /tmp/jf8 320 14
el built
timeout 150 /tmp/b/tests/test_gpu --gtest_filter='GpuLoader*:Nvjpeg*:GpuCropResize*:StepGraph*' > $OUT/gpu.log 2>&1; ok $OUT/gpu.log
grep -A4 "Failure" $OUT/gpu.log | head -20
el tests
folder_ready /tmp/jf8
J="--workers 14 --dataset image_folder --data-dir /tmp/jf8 --val-split validation --decode nvjpeg"
eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
eval train3 nv_eager_1 $J --cuda-graph false
for l in 0.6 0.45 0.3; do eval train3 nv_graph_$l $J --hw-decoder-load $l; done
grep -H "training step:\|JPEG decoder thread\|GPU data stage" $OUT/train-*.log | sed -E 's/^[^:]*train-//' | cut -c1-230
el done
