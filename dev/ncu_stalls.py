"""Prints, per launch of an ncu --csv --page raw run with the stall metrics of dev/s18c.sh, the
kernel, its time, issue-active %, warps-active % and the stall reasons (warps stalled per issued
instruction) above 0.05, largest first.
Usage: python3 ncu_stalls.py FILE.csv"""
import csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
head = rows[0]
ki = head.index("Kernel Name")
for r in rows[2:]:
    if len(r) != len(head): continue
    vals = dict(zip(head, r))
    def num(k):
        try: return float(vals.get(k, "nan").replace(",", ""))
        except ValueError: return float("nan")
    stalls = []
    for k in head:
        if k.startswith("smsp__average_warps_issue_stalled_") and k.endswith("_per_issue_active.ratio"):
            v = num(k)
            if v > 0.05: stalls.append((v, k[len("smsp__average_warps_issue_stalled_"):-len("_per_issue_active.ratio")]))
    stalls.sort(reverse=True)
    print(f"{r[ki].split('(')[0][:70]}: {num('gpu__time_duration.sum')/1e3:.1f} us, issue active "
          f"{num('smsp__issue_active.avg.pct_of_peak_sustained_active'):.1f}%, warps active "
          f"{num('sm__warps_active.avg.pct_of_peak_sustained_active'):.1f}%, inst {num('smsp__inst_executed.sum')/1e6:.2f} M")
    print("   " + ", ".join(f"{n} {v:.2f}" for v, n in stalls))
