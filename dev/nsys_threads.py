#!/usr/bin/env python3
"""Dev use: per thread, the calls of an Nsight Systems trace that took the most time in all.

  python3 dev/nsys_threads.py TRACE.csv [TRACE2.csv ...]

Each TRACE.csv is an `nsys stats -r cuda_api_trace` or `osrt_trace` report in CSV. Prints, for the
six threads with the most traced time, their eight most expensive call names: calls, total ms,
median and max ms. The columns are found by name (Duration, Name, Tid), as nsys versions differ.
"""
import csv
import statistics
import sys
from collections import defaultdict


def column(header, *words):
    for i, h in enumerate(header):
        if all(w.lower() in h.lower() for w in words):
            return i
    raise SystemExit(f"no column with {words} in {header}")


calls = defaultdict(lambda: defaultdict(list))  # tid -> name -> [ms]
for path in sys.argv[1:]:
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        print(f"{path}: {e}")
        continue
    if not rows:
        continue
    h = rows[0]
    dur, name, tid = column(h, "duration"), column(h, "name"), column(h, "tid")
    # the thread's name where the report has it (the loader's: hg-load-N, hg-load-gpu)
    tname = next((i for i, c in enumerate(h) if "thread" in c.lower() and "name" in c.lower()), None)
    for r in rows[1:]:
        if len(r) > max(dur, name, tid):
            who = r[tid] + (f" ({r[tname]})" if tname is not None and len(r) > tname and r[tname] else "")
            calls[who][r[name]].append(float(r[dur]) / 1e6)

threads = sorted(calls, key=lambda t: -sum(sum(v) for v in calls[t].values()))
for t in threads[:6]:
    total = sum(sum(v) for v in calls[t].values())
    print(f"thread {t}: {total:.1f} ms in traced calls")
    for n, v in sorted(calls[t].items(), key=lambda kv: -sum(kv[1]))[:8]:
        print(f"  {n[:48]:48s} {len(v):7d} calls {sum(v):10.1f} ms  median {statistics.median(v):8.3f}  max {max(v):8.2f}")
