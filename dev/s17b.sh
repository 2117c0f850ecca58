#!/usr/bin/env bash
# Dev use (device tool), seventeenth session: Nsight Compute's launch sequence of one bench-layer
# pass (bf16, K = 5) at 96/56, 192/28 and 384/14 with s17a's hg_lpt (carry ["build/labpack"]);
# only the three sequence files come back (the tool returns a limited count of files).
set -uo pipefail
T0=$(date +%s)
[ -x /tmp/labbin/hg_lpt ] || tar -C /tmp -xJf build/labpack/labbin.tar.xz
export LD_LIBRARY_PATH=/tmp/labbin:/usr/local/cuda/lib64:/usr/local/cuda/lib
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for c in 96 192 384; do
  timeout 100 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
    /tmp/labbin/hg_lpt bench-layer --precision bf16 --channels $c --warmup 0 --iters 1 > /tmp/ncu-$c.csv 2> /tmp/ncu-$c.err
  python3 dev/ncu_seq.py /tmp/ncu-$c.csv 0 100000 > $OUT/seq-$c.txt; tail -1 $OUT/seq-$c.txt
  echo "[+$(( $(date +%s) - T0 ))s] ncu $c"
done
