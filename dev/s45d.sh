#!/usr/bin/env bash
# Forty-fifth session, last call: the final tree's GPU tests (the review's trainer fixes after
# s45c) and the timm round trip (scripts/timm-check.py: timm -> haargrad infer, haargrad train +
# export -> timm load_state_dict strict, fp32 logits within 1e-4) with the packed program.
# Pack: build the tree, dev/labbin-pack.sh; carry ["build/labpack", ".golden"].
NAME=s45d
source dev/labbin-lib.sh
tests_first
timeout 300 python3 scripts/timm-check.py --haargrad $L/hg_new --out $OUT/timm-check.json \
  > $OUT/timm-check.txt 2>&1
echo "== timm-check (rc $?)"
grep -vE "^\[|^ *$" $OUT/timm-check.txt | tail -8 | cut -c1-220
el timm-check
