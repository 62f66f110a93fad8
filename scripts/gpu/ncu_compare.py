#!/usr/bin/env python3
"""Compare XSP's counter run (XSP_DUMP_COUNTERS JSON) with Nsight Compute on the same model, kernel by kernel.

usage: ncu_compare.py XSP_COUNTERS.json NCU_RAW.csv [--label L]

The ncu CSV is `ncu --csv --page raw --print-units base --metrics <xsp_counter_selftest --metrics>` of a program
that runs the same model and batch size; its last N kernels (N = XSP's ranges) are the steady-state batch that
XSP profiled. Per kernel: the FLOPs of each precision (FMA = 2, as xsp/profilers/hardware_counters.h), DRAM bytes
read/written, and achieved occupancy. Prints a summary (kernels within 1%, occupancy within 1 point) and the
kernels that differ. Standard library only (runs on the GPU machine).
"""
import csv, json, sys

W = {"dadd": 1, "dmul": 1, "dfma": 2, "fadd": 1, "fmul": 1, "ffma": 2, "hadd": 1, "hmul": 1, "hfma": 2}
SASS = "sm__sass_thread_inst_executed_op_%s_pred_on.sum"
DERIVED = {
    "fp64_flops": [(SASS % o, W[o]) for o in ("dadd", "dmul", "dfma")],
    "fp32_flops": [(SASS % o, W[o]) for o in ("fadd", "fmul", "ffma")],
    "fp16_flops": [(SASS % o, W[o]) for o in ("hadd", "hmul", "hfma")],
    "tensor_fp16_flops": [("sm__ops_path_tensor_src_fp16.sum", 1)],
    "tensor_bf16_flops": [("sm__ops_path_tensor_src_bf16_dst_fp32.sum", 1)],
    "tensor_tf32_flops": [("sm__ops_path_tensor_src_tf32_dst_fp32.sum", 1)],
    "dram_read_bytes": [("dram__bytes_read.sum", 1)],
    "dram_write_bytes": [("dram__bytes_write.sum", 1)],
    "l2_bytes": [("lts__t_bytes.sum", 1)],
    "l1_bytes": [("l1tex__t_bytes.sum", 1)],
}
OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"


def derive(metrics):
    out = {k: sum(w * float(metrics.get(m, 0) or 0) for m, w in terms) for k, terms in DERIVED.items()}
    out["flops"] = sum(out[k] for k in out if k.endswith("_flops"))
    out["occupancy"] = float(metrics.get(OCC, 0) or 0)
    return out


def num(v):
    try:
        return float(str(v).replace(",", ""))
    except ValueError:
        return 0.0


def main():
    xsp = json.load(open(sys.argv[1]))
    label = sys.argv[sys.argv.index("--label") + 1] if "--label" in sys.argv else sys.argv[1]
    rows = list(csv.DictReader(open(sys.argv[2], newline="")))
    rows = [r for r in rows if r.get("ID", "").strip().isdigit()]  # drop the units row
    n = len(xsp["ranges"])
    if len(rows) < n:
        print(json.dumps({"label": label, "error": f"ncu has {len(rows)} kernels, XSP {n}"}))
        return
    ncu = rows[-n:]
    keys = list(DERIVED) + ["flops"]
    within = {k: 0 for k in keys}
    nonzero = {k: 0 for k in keys}
    occ_ok = 0
    worst = []
    name_mismatch = 0
    for i, (rng, nr) in enumerate(zip(xsp["ranges"], ncu)):
        a = derive(rng["metrics"])
        b = derive({m: num(nr.get(m, 0)) for terms in DERIVED.values() for m, _ in terms} | {OCC: num(nr.get(OCC, 0))})
        xname = xsp["launches"][i]["kernel_name"] if i < len(xsp["launches"]) else ""
        nname = nr.get("Kernel Name", "")
        if nname.split("(")[0].split("<")[0].strip() not in xname:
            name_mismatch += 1
        for k in keys:
            if a[k] == 0 and b[k] == 0:
                within[k] += 1
                continue
            nonzero[k] += 1
            rel = abs(a[k] - b[k]) / max(abs(b[k]), 1.0)
            if rel <= 0.01:
                within[k] += 1
            elif k in ("flops", "dram_read_bytes", "dram_write_bytes"):
                worst.append((rel, i, k, a[k], b[k], nname[:70]))
        if abs(a["occupancy"] - b["occupancy"]) <= 1.0:
            occ_ok += 1
        else:
            worst.append((abs(a["occupancy"] - b["occupancy"]), i, "occupancy_pp", a["occupancy"], b["occupancy"], nname[:70]))
    totals = {k: (sum(derive(r["metrics"])[k] for r in xsp["ranges"]),
                  sum(derive({m: num(x.get(m, 0)) for t in DERIVED.values() for m, _ in t})[k] for x in ncu))
              for k in ("flops", "dram_read_bytes", "dram_write_bytes", "l2_bytes")}
    worst.sort(reverse=True)
    print(json.dumps({"label": label, "kernels": n, "name_mismatches": name_mismatch,
                      "within_1pct": within, "kernels_with_nonzero": nonzero, "occupancy_within_1pp": occ_ok,
                      "totals_xsp_vs_ncu": totals,
                      "worst": [dict(zip(("rel_or_pp", "kernel", "what", "xsp", "ncu", "name"), w)) for w in worst[:15]]},
                     indent=1))


if __name__ == "__main__":
    main()
