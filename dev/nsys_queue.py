#!/usr/bin/env python3
"""Dev use: per thread and kernel, how long launches waited in the GPU's queue (fourteenth session).

  python3 dev/nsys_queue.py KERN_EXEC.csv

KERN_EXEC.csv is an `nsys stats -r cuda_kern_exec_trace --format csv` report. For the kernels
launched by each of the four threads with the most launches, prints their ten most frequent kernel
names: launches, median and 90th-percentile API call, queue wait (from the launch call to the
kernel's start) and kernel time, in microseconds. Question behind it: beside a graphed training
step, do the nvJPEG decoder thread's kernels wait in the queue for the step's work?
Columns are found by name, as nsys versions differ.
"""
import csv
import statistics
import sys
from collections import defaultdict

from nsys_csv import column


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


with open(sys.argv[1], newline="") as f:
    rows = list(csv.reader(f))
if not rows:
    raise SystemExit("empty report")
h = rows[0]
api, queue, kern = column(h, "api", "dur"), column(h, "queue", "dur"), column(h, "kernel", "dur")
tid, name = column(h, "tid"), column(h, "kernel", "name")
by = defaultdict(lambda: defaultdict(lambda: ([], [], [])))  # tid -> kernel -> (api, queue, kernel) us
for r in rows[1:]:
    if len(r) <= max(api, queue, kern, tid, name):
        continue
    q = float(r[queue]) / 1e3 if r[queue] else 0.0
    a, k = by[r[tid]][r[name][:60]], (float(r[api]) / 1e3, q, float(r[kern]) / 1e3)
    for lst, x in zip(a, k):
        lst.append(x)
threads = sorted(by, key=lambda t: -sum(len(v[0]) for v in by[t].values()))
for t in threads[:4]:
    print(f"thread {t}: {sum(len(v[0]) for v in by[t].values())} launches")
    for n, (a, q, k) in sorted(by[t].items(), key=lambda kv: -len(kv[1][0]))[:10]:
        print(f"  {n:60s} {len(a):6d}  api {statistics.median(a):7.1f}/{pct(a, .9):7.1f}"
              f"  queue {statistics.median(q):8.1f}/{pct(q, .9):8.1f}  kernel {statistics.median(k):7.1f}/{pct(k, .9):7.1f}")
