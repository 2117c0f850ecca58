"""Sums ncu --csv --page raw gpu__time_duration.sum per kernel name: python3 ncu_sum.py FILE.csv STEPS"""
import csv, sys, collections
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
head = rows[0]
ki, ti = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
units = rows[1][ti] if rows[1][ti] in ("ns", "usecond", "msecond", "nsecond") else "ns"
tot, cnt = collections.Counter(), collections.Counter()
for r in rows[1:]:
    try: t = float(r[ti].replace(",", ""))
    except ValueError: continue
    name = r[ki].split("(")[0][:90]
    tot[name] += t; cnt[name] += 1
steps = float(sys.argv[2]); scale = {"ns": 1e-3, "nsecond": 1e-3, "usecond": 1, "msecond": 1e3}[units]
all_us = sum(tot.values()) * scale / steps
print(f"total {all_us:.0f} us per step ({sum(cnt.values())/steps:.0f} launches/step; units {units})")
for n, t in tot.most_common():
    print(f"{t*scale/steps:9.1f} us {cnt[n]/steps:6.1f}x  {n}")
