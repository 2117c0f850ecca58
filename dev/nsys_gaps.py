#!/usr/bin/env python3
"""Dev use: how much of a graphed training step the GPU spends between kernels (twenty-first session).

  python3 dev/nsys_gaps.py GPU_TRACE.csv WINDOW_MS

GPU_TRACE.csv is an `nsys stats -r cuda_gpu_trace --format csv` report of a run traced with
`--cuda-graph-trace=node` (one row per kernel of the replayed graph). Over the last WINDOW_MS of
kernels (a whole number of steps, e.g. 5 x the step time that `bench` printed) prints the kernels,
the time some kernel ran (the union of their intervals), the idle time between them, and the idle
gaps by size and by the kernel that follows them (question: would programmatic dependent launch,
which overlaps a kernel's launch with its predecessor's tail, pay?).
Columns are found by name, as nsys versions differ.
"""
import csv
import sys
from collections import defaultdict

from nsys_csv import column


rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if any("Start" in c for c in r))
header, rows = rows[head], rows[head + 1:]
cs, cd, cn = column(header, "Start"), column(header, "Duration"), column(header, "Name")
kern, ops = [], []  # kernels; memory operations (copies, sets)
for r in rows:
    if len(r) <= max(cs, cd, cn) or not r[cd]:
        continue
    name = r[cn]
    if name.startswith("[CUDA mem") or "memcpy" in name.lower() or "memset" in name.lower():
        ops.append((float(r[cs]) / 1e3, float(r[cd]) / 1e3, name))
        continue
    kern.append((float(r[cs]) / 1e3, float(r[cd]) / 1e3, name))  # us
kern.sort()
end = max(s + d for s, d, _ in kern)
window = float(sys.argv[2]) * 1e3
kern = [k for k in kern if k[0] >= end - window]
t0 = kern[0][0]
busy = idle = 0.0
cur_end = t0
gaps = []
prev = ""
for s, d, name in kern:
    if s > cur_end:
        gaps.append((s - cur_end, name, prev, cur_end, s))
        idle += s - cur_end
    busy += max(0.0, s + d - max(s, cur_end))
    cur_end = max(cur_end, s + d)
    prev = name
span = cur_end - t0
print(f"{len(kern)} kernels in {span / 1e3:.3f} ms: busy {busy / 1e3:.3f} ms, idle {idle / 1e3:.3f} ms "
      f"({100 * idle / span:.1f}%), sum of kernel times {sum(d for _, d, _ in kern) / 1e3:.3f} ms")
edges = [0, 0.5, 1, 2, 3, 5, 10, 1e9]
hist = [0] * (len(edges) - 1)
for g, *_ in gaps:
    for i in range(len(edges) - 1):
        if edges[i] <= g < edges[i + 1]:
            hist[i] += 1
print("gaps (us): " + ", ".join(f"[{edges[i]}, {edges[i + 1]}): {hist[i]}" for i in range(len(hist))))
by = defaultdict(lambda: [0, 0.0])
for g, name, *_ in gaps:
    short = name.split("(")[0].split("<")[0][-60:]
    by[short][0] += 1
    by[short][1] += g
print("idle before, by kernel (top 15): count, total us")
for name, (n, t) in sorted(by.items(), key=lambda z: -z[1][1])[:15]:
    print(f"  {t:9.1f} {n:6d}  {name}")

def short(name):
    return name.split("(")[0][-70:]


print("by (kernel before, kernel after) (top 12): count, total us")
pairs = defaultdict(lambda: [0, 0.0])
for g, name, prev, *_ in gaps:
    pairs[(short(prev), short(name))][0] += 1
    pairs[(short(prev), short(name))][1] += g
for (a, b), (n, t) in sorted(pairs.items(), key=lambda z: -z[1][1])[:12]:
    print(f"  {t:9.1f} {n:6d}  {a}  ->  {b}")
ops = [o for o in ops if o[0] >= t0]
print(f"memory operations in the window: {len(ops)}, {sum(d for _, d, _ in ops):.1f} us")
big = sorted(gaps, reverse=True)[:4]
for g, name, prev, a, b in big:
    inside = [o for o in ops if a - 1 <= o[0] <= b]
    print(f"gap {g:.1f} us: {short(prev)} -> {short(name)}; memory operations in it: "
          + "; ".join(f"{o[2][:40]} {o[1]:.1f} us" for o in inside[:3]))
