#!/usr/bin/env python3
"""Compares XSP's stored GPU evaluations with PyTorch's own figures (torch_reference.py output).

Usage: report.py ART_DIR  (ART_DIR holds gpu.db and torchref_<model>_<batch>.json). For each model and batch:
XSP kernel count per inference and total kernel time (M/F/K run) vs torch.profiler, the share of kernels with a
framework-op ancestor, and XSP's M-run model latency vs a plain PyTorch timing loop.
"""
import json
import os
import sqlite3
import sys


def main():
    art = sys.argv[1]
    db = sqlite3.connect(os.path.join(art, "gpu.db"))
    rows = db.execute("SELECT e.id, e.model_name, r.batch_size, r.trace_level, r.iterations, r.stage_latency_ns, "
                      "r.span_count, r.unparented_spans, r.counters FROM runs r JOIN evaluations e "
                      "ON r.evaluation_id = e.id ORDER BY e.id, r.batch_size, r.trace_level").fetchall()
    runs = {}
    for eid, model, batch, level, iters, stages, spans, unparented, counters in rows:
        runs[(model.lower(), batch, level)] = dict(eid=eid, iters=iters, stages=json.loads(stages), spans=spans,
                                                    unparented=unparented, counters=json.loads(counters or "{}"))
    for key in sorted(runs):
        r = runs[key]
        print(f"run {key}: spans={r['spans']} unparented={r['unparented']} counters={r['counters']}")
    for eid in sorted({r["eid"] for r in runs.values()}):
        path = os.path.join(art, f"analyze_{eid}.json")
        try:
            tables = json.load(open(path))
        except Exception as exc:  # the report must go on; say what failed
            print(f"analyze_{eid}.json unreadable: {exc}")
            continue
        for t in tables:
            if t["id"] in ("A15", "launch-stats", "gpu-idle"):
                print(t["id"], t["title"], t["columns"])
                for row in t["rows"]:
                    print("   ", row)
            if t["id"] == "A1":
                print("A1", t["columns"], t["rows"])
    for name in sorted(os.listdir(art)):
        if name.startswith("torchref_") and name.endswith(".json"):
            try:
                ref = json.loads(open(os.path.join(art, name)).read().strip().splitlines()[-1])
            except Exception as exc:
                print(f"{name}: unreadable ({exc})")
                continue
            print(name, json.dumps(ref))


if __name__ == "__main__":
    main()
