#!/usr/bin/env bash
# Forty-third session (prepared, not run: nineteen tries got no machine): the two prepared calls
# of the forty-second session in one (device time is scarce): dev/s42c.sh first (the period-2
# lab: its forward, backward data, whole forward at L levels and weight gradient, each checked
# and timed; ~1-2 min), then dev/s42b.sh (the tensor-core depthwise patch's variants and stall
# reasons). Pack: build/labbin/hg_base = the tree
# (a70efa4), hg_p2lab = build/dev/wtconv_p2/wtconv_p2_lab, then apply
# dev/s42/tensor-core-depthwise-raw.patch, build, KEEP_NEW=0 dev/labbin-pack.sh (61 MB);
# carry ["build/labpack", ".golden"].
bash dev/s42c.sh
bash dev/s42b.sh
