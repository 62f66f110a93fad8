#!/usr/bin/env python3
"""Tables of the issue-10 verification (scripts/gpu/stability.sh) from an XSP store, standard library only.

    stability_report.py STORE.db [timing.txt]

1. Per model and batch size, the M-run median and its 95% interval in each process (evaluation), the verdicts,
   and whether each median lies inside the other processes' intervals when all three are stable.
2. Level overheads with their intervals; any negative beyond its interval is flagged.
3. Wall time per evaluation with the new defaults against the old fixed-count sequential ones.
4. Warnings stored with the runs (throttling, clock changes, load), counted.
"""
import collections
import json
import math
import re
import sqlite3
import statistics
import sys


def ms(ns):
    return float("nan") if ns is None else ns / 1e6


def main():
    db = sqlite3.connect(sys.argv[1])
    runs = db.execute(
        "SELECT e.id, e.model_name, r.batch_size, r.trace_level, r.stability, r.latency_median_ns, "
        "r.latency_ci95_low_ns, r.latency_ci95_high_ns, r.latency_cv, r.drift_fraction, r.measurement, r.warnings "
        "FROM runs r JOIN evaluations e ON e.id = r.evaluation_id ORDER BY e.model_name, r.batch_size, e.id").fetchall()
    m_runs = collections.defaultdict(list)
    warnings = collections.Counter()
    designs = collections.Counter()
    for eid, model, bs, level, verdict, med, lo, hi, cv, drift, meas, warns in runs:
        meas = json.loads(meas)
        designs[(level, meas.get("design", ""))] += 1
        for w in json.loads(warns):
            warnings[re.sub(r"[-+]?\d+(\.\d+)?", "N", w)] += 1
        if level == "model":
            m_runs[(model, bs)].append((eid, verdict, med, lo, hi, cv, drift, meas))

    print("## M-run medians per process (ms, median [95% CI], verdict)\n")
    print("| model | batch | process 1 | process 2 | process 3 | all stable | medians inside the others' CIs | "
          "spread of medians |")
    print("|---|---|---|---|---|---|---|---|")
    inside_all = total_all_stable = 0
    for (model, bs), rs in sorted(m_runs.items()):
        cells = [f"{ms(med):.3f} [{ms(lo):.3f}, {ms(hi):.3f}] {v}" for _, v, med, lo, hi, *_ in rs]
        while len(cells) < 3:
            cells.append("")
        stable = all(r[1] == "stable" for r in rs) and len(rs) >= 2
        inside = all(lo_j <= med_i <= hi_j for i, (_, _, med_i, *_) in enumerate(rs)
                     for j, (_, _, _, lo_j, hi_j, *_) in enumerate(rs) if i != j)
        meds = [r[2] for r in rs]
        spread = (max(meds) - min(meds)) / statistics.mean(meds) * 100 if meds else float("nan")
        if stable:
            total_all_stable += 1
            inside_all += inside
        print(f"| {model} | {bs} | " + " | ".join(cells[:3]) +
              f" | {'yes' if stable else 'no'} | {'yes' if inside else 'no'} | {spread:.1f}% |")
    print(f"\nall three stable: {total_all_stable} of {len(m_runs)} (model, batch) pairs; "
          f"of those, medians inside each other's intervals: {inside_all}\n")

    print("## Level overheads (interleaved; residual = M after kernel tracing began vs M before)\n")
    print("| model | batch | run | over | design | overhead [95% CI] | significant | negative beyond interval |")
    print("|---|---|---|---|---|---|---|---|")
    negative = 0
    rows = db.execute(
        "SELECT e.id, e.model_name, o.batch_size, o.trace_level, o.baseline_trace_level, o.design, "
        "o.overhead_fraction, o.ci95_low_fraction, o.ci95_high_fraction, o.significant "
        "FROM level_overheads o JOIN evaluations e ON e.id = o.evaluation_id ORDER BY e.model_name, o.batch_size, "
        "e.id, o.position").fetchall()
    for eid, model, bs, level, base, design, f, lo, hi, sig in rows:
        neg = design != "residual" and hi is not None and hi < 0
        negative += neg
        fmt = lambda x: "nan" if x is None else f"{100 * x:+.1f}%"
        print(f"| {model} (#{eid}) | {bs} | {level} | {base} | {design} | {fmt(f)} [{fmt(lo)}, {fmt(hi)}] | "
              f"{'yes' if sig else 'no'} | {'YES' if neg else ''} |")
    print(f"\noverheads negative beyond their interval: {negative} of "
          f"{sum(1 for r in rows if r[5] != 'residual')}\n")

    if len(sys.argv) > 2:
        walls = collections.defaultdict(list)
        for line in open(sys.argv[2]):
            m = re.match(r"(new|old) (\S+) \d+ rc=(\d+) wall_s=([\d.]+)", line)
            if m:
                walls[(m[2], m[1])].append((float(m[4]), int(m[3])))
        print("## Wall time per evaluation (s; batch 1 and 32, kernel level, leveled)\n")
        print("| model | new defaults (each process) | old fixed-count, sequential | ratio (median new / old) |")
        print("|---|---|---|---|")
        for model in sorted({k[0] for k in walls}):
            new = walls.get((model, "new"), [])
            old = walls.get((model, "old"), [])
            ratio = (statistics.median(w for w, _ in new) / statistics.median(w for w, _ in old)
                     if new and old else float("nan"))
            print(f"| {model} | {', '.join(f'{w:.1f}' + ('' if rc == 0 else f' (rc {rc})') for w, rc in new)} | "
                  f"{', '.join(f'{w:.1f}' for w, _ in old)} | {ratio:.1f}x |")
    print("\n## Run designs\n")
    for (level, design), n in sorted(designs.items()):
        print(f"- {level}: {design or '(none)'} x{n}")
    print("\n## Warnings stored with the runs (figures replaced by N)\n")
    for w, n in warnings.most_common():
        print(f"- {n} x {w}")
    if not warnings:
        print("- none")


if __name__ == "__main__":
    main()
