#!/usr/bin/env bash
# Dev use (device tool), sixth session, last call: GPU tests of the submitted code, which GELU
# cuBLASLt's epilogue computes (through PyTorch), bench of both models, JPEG against synthetic
# training (100-step epochs), the ConvNeXt-T bf16 breakdown, and timm's peer bench if time is left.
set -uo pipefail
source dev/run-lib.sh
BUDGET=${BUDGET:-500}
el built
JF=/tmp/jf7
jpeg_folder $JF 320 6
gpu_tests
el tests
timeout 60 python3 - <<'PY' 2>&1 | tail -3
import torch, torch.nn.functional as F
torch.manual_seed(0)
a = torch.randn(256, 512, device="cuda", dtype=torch.float32); w = torch.randn(512, 384, device="cuda") / 20; b = torch.randn(384, device="cuda")
torch.backends.cuda.matmul.allow_tf32 = False
pre = torch.addmm(b, a, w)
lt = torch._addmm_activation(b, a, w, use_gelu=True)
print("cuBLASLt GELU epilogue vs exact erf GELU: max abs diff %.3e; vs tanh approximation: %.3e" % ((lt - F.gelu(pre)).abs().max().item(), (lt - F.gelu(pre, approximate="tanh")).abs().max().item()))
PY
el gelu
timeout 120 $HG bench --device cuda --batch 128 --img-size 224 --precision fp32,tf32,bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 --output $OUT/bench.json > $OUT/bench.txt 2>&1; grep -A22 "^model  " $OUT/bench.txt | cut -c1-150 | head -24
el bench
wait $MK; tail -1 /tmp/mk-$(basename $JF).log
eval train3 jpeg_nvjpeg --workers 14 --dataset image_folder --data-dir $JF --val-split validation --decode nvjpeg
eval train3 synth_gpu --workers 14 --dataset synthetic --synthetic-size 12800 --gpu-augment true
el train
timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny --steps 4 --warmup 2 --breakdown > $OUT/breakdown.txt 2>&1; grep -A16 "^op type" $OUT/breakdown.txt | cut -c1-130
el breakdown
if [ $(left) -gt 190 ]; then
  timeout $(( $(left) - 10 )) python3 scripts/peer-bench.py --steps 8 --warmup 3 --modes amp_bf16,compile_bf16 --output $OUT/peer_bench.json > $OUT/peer.txt 2>&1; tail -4 $OUT/peer.txt
fi
el done
