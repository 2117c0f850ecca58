#!/usr/bin/env bash
# Prepared in the forty-fourth session (not run): why the period-2 forward runs at ~600 GB/s
# (dev/wtconv_p2/README.md: 128.3 us at 96/56 where its shared loads allow ~56 us). In order:
# the tree's GPU tests; the lab's checks and times (with this session's untimed variants, p2 n16
# 1blk and p2 wgrad 8x2); Nsight Compute's stall reasons (dev/ncu_stalls.py) of the forward
# variants and, for scale, the product's synthesis and Haar-conv kernels at 96/56/5, B = 64,
# bf16; the tree's bench-layer bf16 and both models in bf16 (a closing note's figures). About 6
# minutes. Pack: build with -DHAARGRAD_DEV=ON, `cp build/dev/wtconv_p2/wtconv_p2_lab
# build/labbin/hg_p2lab`, then dev/labbin-pack.sh (it copies build/haargrad as hg_new and the
# test programs); carry ["build/labpack", ".golden"].
NAME=s45a
source dev/labbin-lib.sh
tests_first
timeout 200 $L/hg_p2lab 20 > $OUT/p2lab.txt 2>&1  # every check, and the new variants' times
el p2lab
grep -E "FAILED|time|all checks|SOME" $OUT/p2lab.txt | cut -c1-200
timeout 240 $NCU --clock-control none -k regex:"p2_forward" -c 3 --metrics "$STALLS" --csv \
  --page raw $L/hg_p2lab 3 stage > $R/stalls.csv 2> $R/stalls.err
python3 dev/ncu_stalls.py $R/stalls.csv | tee $OUT/stalls-p2.txt
el p2-stalls
ncu_stalls hg_new 'synth_staged|haar_conv' 2 | tee $OUT/stalls-product.txt
el product-stalls
layer_rows bf16 hg_new > $OUT/bench-layer.txt 2>&1; el bench-layer; cat $OUT/bench-layer.txt
model_rows bf16 convnext_tiny,wtconvnext_tiny hg_new > $OUT/model.txt 2>&1; el model
grep -E "^==|128 " $OUT/model.txt | cut -c1-150
