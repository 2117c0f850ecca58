#!/usr/bin/env bash
# Dev use (device tool), eighth session: dev/nvjpeg_probe.cu (nvJPEG hardware decode per output
# format: img/s, interference with compute kernels on the legacy stream, and ncu's list of the
# kernels each format launches). No haargrad build needed.
set -uo pipefail
T0=$(date +%s); el() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
python3 scripts/make-jpeg-folder.py --out /tmp/jp --classes 40 --train-per-class 8 --val-per-class 1 --jobs 16 > /tmp/mk.log 2>&1 &
nvcc -O2 -std=c++17 -arch=sm_90 dev/nvjpeg_probe.cu -lnvjpeg -o /tmp/nvjpeg_probe || exit 1
wait; tail -1 /tmp/mk.log
el built
timeout 150 ncu --clock-control none --kernel-name regex:'^[^b]' --metrics gpu__time_duration.sum --csv --page raw \
  /tmp/nvjpeg_probe /tmp/jp/train 128 list > $OUT/ncu-probe.csv 2> $OUT/ncu-probe.err
grep -E "decoded twice|batch:" $OUT/ncu-probe.csv
python3 - $OUT/ncu-probe.csv <<'PY'
import csv, sys, collections
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
h = rows[0]; ki, ti = h.index("Kernel Name"), h.index("gpu__time_duration.sum")
seq = []
for r in rows[1:]:
    try: t = float(r[ti].replace(",", ""))
    except ValueError: continue
    n = r[ki].split("(")[0][:70]
    if seq and seq[-1][0] == n: seq[-1][1] += 1; seq[-1][2] += t
    else: seq.append([n, 1, t])
for n, c, t in seq: print(f"{c:5d}x {t/1e3:9.1f} us  {n}")
PY
el ncu
timeout 200 /tmp/nvjpeg_probe /tmp/jp/train 128
el done
