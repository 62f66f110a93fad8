#!/usr/bin/env python3
"""Runs Holistic Trace Analysis (HTA) on XSP's Chrome export of a stored run and sets its figures beside XSP's own.

    scripts/hta_check.py --store K.db --hta-src DIR [--id 1] [--run N] [--xsp build/xsp] [--kineto TRACE.json]

HTA is not packaged; DIR holds its source (the `hta` package of facebookresearch/HolisticTraceAnalysis, e.g.
`git archive HEAD hta | tar x -C DIR`) and runs on Debian's python3-pandas, python3-plotly, python3-networkx and
python3-pydot. The store is copied first (opening a store migrates it), the run is exported with `xsp trace export`
as Chrome JSON (read by HTA) and as SQLite (XSP's own spans), and five HTA analyses run: kernel breakdown, temporal
breakdown, idle time breakdown, CUDA kernel launch statistics and queue length. Each line prints HTA's figure, XSP's
and whether they agree; exit 1 when an analysis fails or a figure that must match does not (launch statistics: one
row per launch of device work; kernel breakdown: the same total device time per kind). With --kineto, HTA also reads
PyTorch's own profiler trace of the same model (scripts/gpu/kineto_trace.py) and the figures per step are set side
by side: HTA should see the same work in both."""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))


def analyze(analyzer, db, keep_ns, idle_json, row, failures):
    """One pass of HTA's five analyses, each beside XSP's figure."""

    print("launch statistics (get_cuda_kernel_launch_stats, memory events included):")
    stats = analyzer.get_cuda_kernel_launch_stats(ranks=[0], visualize=False)[0]
    # HTA counts the device work of four runtime calls only (cuda_kernel_analysis.py); kernels that libraries
    # launch through the driver (cuLaunchKernel) or synchronous copies have no row there, nor in a Kineto trace.
    hta_calls = "('cudaLaunchKernel', 'cudaLaunchKernelExC', 'cudaMemcpyAsync', 'cudaMemsetAsync')"
    total, other = db.execute("SELECT COUNT(*), SUM(l.name IS NULL OR l.name NOT IN " + hta_calls + ") "
                              "FROM kernels k LEFT JOIN launches l ON k.launch_id = l.span_id").fetchone()
    launched = db.execute("SELECT COUNT(*), COUNT(DISTINCT k.correlation_id) FROM kernels k JOIN launches l "
                          "ON k.launch_id = l.span_id WHERE l.name IN " + hta_calls).fetchone()
    print(f"    XSP: {total} device events; {other or 0} launched otherwise (driver API, synchronous copies)")
    row("rows = launches by those four runtime calls", len(stats), launched[0], must_match=True)
    row("distinct correlation ids", stats["correlation"].nunique(), launched[1], must_match=True)
    delays_us = [r[0] / 1e3 for r in db.execute(
        "SELECT k.start_ns - l.end_ns FROM kernels k JOIN launches l ON k.launch_id = l.span_id "
        "WHERE l.name IN " + hta_calls)]
    row("median launch delay (us)", float(stats["launch_delay"].median()), statistics.median(delays_us),
        must_match=True, within=0.001 if keep_ns else 2.0)

    print("kernel breakdown (get_gpu_kernel_breakdown):")
    by_type, _ = analyzer.get_gpu_kernel_breakdown(visualize=False)
    hta_sum = dict(zip(by_type["kernel_type"], by_type["sum"]))
    kinds = {k: (n, us) for k, n, us in
             db.execute("SELECT kind, COUNT(*), SUM(duration_ns) / 1e3 FROM kernels GROUP BY kind")}
    n_compute, xsp_compute = kinds.get("kernel", (0, 0.0))
    n_memory = kinds.get("memcpy", (0, 0))[0] + kinds.get("memset", (0, 0))[0]
    xsp_memory = kinds.get("memcpy", (0, 0.0))[1] + kinds.get("memset", (0, 0.0))[1]
    # The breakdown sums whole microseconds per kernel even with nanoseconds kept: up to 1 us less per event.
    per_event = 1.0 if keep_ns else 3.0
    row("COMPUTATION time (us)", float(hta_sum.get("COMPUTATION", 0)), xsp_compute, True, per_event * n_compute)
    row("MEMORY time (us)", float(hta_sum.get("MEMORY", 0)), xsp_memory, True, per_event * n_memory)
    for t, pct in zip(by_type["kernel_type"], by_type["percentage"]):
        print(f"    HTA {t}: {pct:.1f}%")

    print("temporal breakdown (get_temporal_breakdown):")
    temporal = analyzer.get_temporal_breakdown(visualize=False).iloc[0]
    first, last = db.execute("SELECT MIN(start_ns), MAX(end_ns) FROM kernels").fetchone()
    window_us = (last - first) / 1e3
    # One stream here, so the union of busy time is the sum; several streams would need the union.
    streams = db.execute("SELECT COUNT(DISTINCT stream) FROM kernels").fetchone()[0]
    exact = keep_ns and streams == 1
    row("kernel_time = first to last device event (us)", float(temporal["kernel_time(us)"]), window_us, exact,
        1.0 if keep_ns else 2.0)
    row("compute_time (us)", float(temporal["compute_time(us)"]), xsp_compute, exact,
        1.0 if keep_ns else 2.0 * n_compute)
    row("non_compute_time (us)", float(temporal["non_compute_time(us)"]), xsp_memory, exact,
        1.0 if keep_ns else 2.0 * n_memory)
    row("idle_time (us)", float(temporal["idle_time(us)"]), window_us - xsp_compute - xsp_memory, exact,
        1.0 if keep_ns else 2.0 * (n_compute + n_memory))

    print("idle time breakdown (get_idle_time_breakdown):")
    idle, _ = analyzer.get_idle_time_breakdown(ranks=[0], visualize=False)
    for _, r in idle.iterrows():
        print(f"    HTA stream {r['stream']} {r['idle_category']}: {r['idle_time']:,.1f} us "
              f"({r['idle_time_ratio']:.2f})")
    row("idle time, all categories (us)", float(idle["idle_time"].sum()), window_us - xsp_compute - xsp_memory,
        exact, 1.0 if keep_ns else 2.0 * (n_compute + n_memory))
    for t in json.loads(idle_json):
        if t.get("id") != "gpu-idle":
            continue
        for r in t.get("rows", []):
            named = r if isinstance(r, dict) else dict(zip(t.get("columns", []), r))
            print("    XSP gpu-idle, mean per predict span (ms): " +
                  ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in named.items()))
    print("    (HTA splits idle time over a stream's first to last event across the trace, host_wait vs "
          "kernel_wait by a 30 us gap rule; XSP's gpu-idle works inside each predict span, host-bound vs launch "
          "latency by when the next launch call started, so those splits differ by definition.)")

    print("queue length (get_queue_length_summary):")
    queue = analyzer.get_queue_length_summary(ranks=[0])
    if queue is None:
        print("  FAIL: HTA returned no queue length summary")
        failures.append("queue length")
    else:
        print("    " + queue.to_string().replace("\n", "\n    "))


def per_step(TraceAnalysis, trace_dir):
    """HTA's figures per ProfilerStep of one trace (nanoseconds kept)."""
    analyzer = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)
    steps = len(analyzer.get_profiler_steps())
    launches = analyzer.get_cuda_kernel_launch_stats(ranks=[0], visualize=False)[0]
    by_type, _ = analyzer.get_gpu_kernel_breakdown(visualize=False)
    temporal = analyzer.get_temporal_breakdown(visualize=False).iloc[0]
    pct = dict(zip(by_type["kernel_type"], by_type["percentage"]))
    return {"ProfilerSteps": steps,
            "launch-stats rows / step": len(launches) / max(steps, 1),
            "median launch delay (us)": float(launches["launch_delay"].median()),
            "median CPU launch call (us)": float(launches["cpu_duration"].median()),
            "COMPUTATION % of device time": float(pct.get("COMPUTATION", 0)),
            "compute_time / step (us)": float(temporal["compute_time(us)"]) / max(steps, 1)}


def compare_with_kineto(TraceAnalysis, kineto, xsp_dir, tmp):
    kdir = os.path.join(tmp, "kineto")
    os.mkdir(kdir)
    shutil.copy(kineto, os.path.join(kdir, "rank0.json"))
    print(f"== HTA on XSP's export and on Kineto's trace of the same model ({os.path.basename(kineto)}), per step")
    x, k = per_step(TraceAnalysis, xsp_dir), per_step(TraceAnalysis, kdir)
    for key in x:
        print(f"  {key:<34} XSP {x[key]:>12,.3f}   Kineto {k[key]:>12,.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, help="an XSP store (copied, never opened in place)")
    ap.add_argument("--hta-src", required=True, help="directory holding HTA's `hta` package")
    ap.add_argument("--id", type=int, default=1, help="evaluation id (default 1)")
    ap.add_argument("--run", type=int, help="the N-th run of the evaluation (default: xsp's default run)")
    ap.add_argument("--xsp", default=os.path.join(HERE, "..", "build", "xsp"))
    ap.add_argument("--kineto", help="a torch.profiler trace of the same model (scripts/gpu/kineto_trace.py)")
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.hta_src, "hta")):
        sys.exit(f"--hta-src {args.hta_src}: no hta/ package there")
    sys.path.insert(0, args.hta_src)
    warnings.simplefilter("ignore")
    from hta.trace_analysis import TraceAnalysis  # noqa: E402  (needs the path above)

    failures = []

    def row(what, hta, xsp, must_match=False, within=0.0):
        """`within`: the absolute difference HTA's rounding to whole microseconds allows."""
        agree = abs(hta - xsp) <= within
        mark = ("agree" if abs(hta - xsp) < 1e-3 else f"agree within {within:g} us (HTA's rounding)") if agree \
            else ("DIFFER" if must_match else "differ")
        print(f"  {what:<46} HTA {hta:>14,.3f}   XSP {xsp:>14,.3f}   {mark}")
        if must_match and not agree:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store.db")
        shutil.copy(args.store, store)
        trace_dir = os.path.join(tmp, "trace")
        os.mkdir(trace_dir)
        chrome = os.path.join(trace_dir, "rank0.json")
        tables = os.path.join(tmp, "spans.sqlite")
        run = ["--run", str(args.run)] if args.run else []
        for fmt, out in (("chrome", chrome), ("sqlite", tables)):
            subprocess.run([args.xsp, "--store", store, "trace", "export", str(args.id), *run, "--format", fmt,
                            "-o", out], check=True, stdout=subprocess.DEVNULL)
        idle_json = subprocess.run([args.xsp, "--store", store, "analyze", str(args.id), "--analysis",
                                    "gpu-idle,launch-stats", "--format", "json"], check=True, capture_output=True,
                                   text=True).stdout
        db = sqlite3.connect(tables)
        meta = dict(db.execute("SELECT key, value FROM meta"))
        print(f"run {meta.get('run_id')} of evaluation {args.id}: {meta.get('model')}, batch size "
              f"{meta.get('batch_size')}, trace level {meta.get('trace_level')}")

        # HTA drops the last ProfilerStep by default (a Kineto trace's last step is often cut short); XSP's steps
        # are whole measured batches, so all of them are compared. HTA also rounds fractional-microsecond events
        # inward to whole microseconds by default (ts up, end down: up to 2 us shorter each); a second pass with
        # HTA's own HTA_DISABLE_NS_ROUNDING keeps the nanoseconds, and there times must match exactly.
        from hta.configs.env_options import HTAEnvOptions  # noqa: E402
        for keep_ns in (False, True):
            HTAEnvOptions.instance().set_disable_ns_rounding(keep_ns)
            print(f"== HTA {'with HTA_DISABLE_NS_ROUNDING (nanoseconds kept)' if keep_ns else 'as users run it (rounds to whole us)'}")
            analyze(TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True), db, keep_ns, idle_json,
                    row, failures)
        if args.kineto:
            compare_with_kineto(TraceAnalysis, args.kineto, trace_dir, tmp)
        db.close()

    print("PASS" if not failures else "FAIL: " + ", ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
