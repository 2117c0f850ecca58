#!/usr/bin/env bash
# Dev use (device tool), seventh session, last call: GPU tests and the bf16 bench of the submitted
# commit (the plane path's bound a constant now).
set -uo pipefail
source dev/run-lib.sh
el built
gpu_tests
el tests
timeout 60 $HG bench --device cuda --batch 128 --img-size 224 --precision bf16 --models convnext_tiny,wtconvnext_tiny --wtconv fused --steps 6 --warmup 2 2>&1 | grep -A3 "^model  " | cut -c1-150
el done
