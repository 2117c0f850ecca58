"""Prints the launch sequence of an ncu --csv --page raw gpu__time_duration.sum run: one line per
launch (index, us, kernel name), from launch FIRST for COUNT launches, and the sum.
Usage: python3 ncu_seq.py FILE.csv FIRST COUNT"""
import csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
head = rows[0]
ki, ti = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
units = rows[1][ti] if rows[1][ti] in ("ns", "usecond", "msecond", "nsecond") else "ns"
scale = {"ns": 1e-3, "nsecond": 1e-3, "usecond": 1, "msecond": 1e3}[units]
data = []
for r in rows[1:]:
    try: data.append((float(r[ti].replace(",", "")) * scale, r[ki].split("(")[0][:100]))
    except ValueError: continue
first, count = int(sys.argv[2]), int(sys.argv[3])
tot = 0
for i, (t, n) in enumerate(data[first:first + count]):
    tot += t
    print(f"{first + i:4d} {t:8.1f} us  {n}")
print(f"sum {tot:.1f} us over {min(count, len(data) - first)} launches (of {len(data)})")
