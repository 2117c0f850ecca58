#!/usr/bin/env bash
# Forty-second session, second call. dev/s42a.sh: the tensor-core forward with cp.async staging
# took ~100 us at 96/56 whatever K, like the forty-first session's: not the staging. Suspect: the
# grid order. Blocks were launched spatial index first (blockIdx.x), so a wave of resident blocks
# reads and writes the same 32 (16) channels of every pixel: 64 (32) of the 192 bytes of a bf16
# pixel at C = 96, the rest of each DRAM page in later waves. Here every launch of conv_staged,
# conv_mma and haar_conv is channel groups first (HG_S42_CFIRST=0: as before); HG_S42_NO_MMA=1
# takes the CUDA-core kernels. The tensor-core weight gradient is rewritten the same way (rows
# staged as they are, fragments by byte permutes, 8 channels a warp), and the forward's blocks
# walk the row tiles two buffers deep (HG_S42_PERSIST=0: one block a tile). Against hg_base
# (4336bbe). To run it: build the tree as build/labbin/hg_base, apply
# dev/s42/tensor-core-depthwise-raw.patch, build; pack with KEEP_NEW=0 dev/labbin-pack.sh;
# carry ["build/labpack", ".golden"]. The switches (environment) exist only in the patch.
NAME=s42b
source dev/labbin-lib.sh
nvidia-smi --query-gpu=name --format=csv,noheader
# the quick figures first, so that a short call still brings them back
layer_rows bf16 hg_new hg_base > $OUT/bench-layer.txt 2>&1; el bench-layer
cat $OUT/bench-layer.txt
seq_each 96 hg_new; el seq
grep -E "mma|staged_kernel<__nv_bfloat16, 7|haar_conv" $OUT/seq-96-hg_new.txt | head -9
gpu_tests; el tests; cat $OUT/tests.txt
model_rows bf16 convnext_tiny,wtconvnext_tiny hg_new hg_base > $OUT/model.txt 2>&1
el model
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model.txt | cut -c1-120
{ echo "-- HG_S42_PERSIST=0"; HG_S42_PERSIST=0 layer_rows bf16 hg_new
  echo "-- HG_S42_PERSIST=0 HG_S42_CFIRST=0"; HG_S42_PERSIST=0 HG_S42_CFIRST=0 layer_rows bf16 hg_new
  echo "-- HG_S42_NO_MMA=1"; HG_S42_NO_MMA=1 layer_rows bf16 hg_new
  echo "-- HG_S42_NO_MMA=1 HG_S42_CFIRST=0"; HG_S42_NO_MMA=1 HG_S42_CFIRST=0 layer_rows bf16 hg_new
} > $OUT/bench-layer-var.txt 2>&1; el variants
cat $OUT/bench-layer-var.txt
layer_rows fp32 hg_new hg_base > $OUT/bench-layer-fp32.txt 2>&1; el fp32
cat $OUT/bench-layer-fp32.txt
HG_S42_NO_MMA=1 ncu_seq_at hg_new 96; mv $OUT/seq-96.txt $OUT/seq-96-nomma.txt
HG_S42_NO_MMA=1 HG_S42_CFIRST=0 ncu_seq_at hg_new 96; mv $OUT/seq-96.txt $OUT/seq-96-old.txt
el seq2
for f in seq-96-nomma seq-96-old; do
  echo "== $f"; grep -E "staged_kernel<__nv_bfloat16, 7|haar_conv" $OUT/$f.txt | head -5
done
HG_S42_NO_MMA=1 model_rows bf16 convnext_tiny,wtconvnext_tiny hg_new > $OUT/model-nomma.txt 2>&1
grep -E "^==|^(conv|wtconv)next_tiny.* bf16 +128 " $OUT/model-nomma.txt | cut -c1-120
ncu_stalls hg_new "conv_mma_kernel" 1 > $OUT/stalls-conv.txt 2>&1
ncu_stalls hg_new "wgrad_mma_kernel" 1 > $OUT/stalls-wgrad.txt 2>&1
el stalls; head -30 $OUT/stalls-conv.txt; head -30 $OUT/stalls-wgrad.txt
