#!/usr/bin/python3
"""Checks of XSP's token generation against plain PyTorch (issue 15; BENCHMARKS.md "Token generation").

    generation_check.py compare XSP_DB REF_JSON...   XSP's TTFT/TPOT (M runs in the store) vs the reference loop
    generation_check.py tail TRACE_SQLITE            the decode step nearest p99 of a kernel-level run: its ops, kernels
    generation_check.py torchprof MODEL_PT [...]     kernels per prefill and per decode step under torch.profiler

compare: every evaluation of the store (in id order) is paired with the REF_JSON files given in the same order
(scripts/generate_reference.py outputs, alternating with the XSP runs); per (model, batch size) it prints the median
over the repetitions of each side's median TTFT and TPOT, the range over the repetitions, and XSP / reference − 1.

tail: reads a run exported with `xsp trace export ID --format sqlite` (trace level kernel, generation tail traces):
the decode step whose tail_percentile is nearest 99, its duration, the kernels launched under it (through the ops
that launched them) with their total device time, the largest kernels, and the same for the median of the other
kept decode steps of its request, for comparison.

torchprof: runs the same prefill + decode loop as generate_reference.py under torch.profiler (CUDA activities) and
counts the kernels of one prefill and of one decode step (the median over the steps), the figure XSP's kernel run is
compared with (analysis G4).
"""

import argparse
import json
import sqlite3
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from generate_reference import GraphDecode  # noqa: E402  (the graph decode loop XSP's graph mode is checked against)


def xsp_runs(db):
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT e.id, e.model_name, r.batch_size, r.trace_level, r.generation FROM runs r "
        "JOIN evaluations e ON e.id = r.evaluation_id WHERE r.trace_level = 'model' ORDER BY e.id, r.id").fetchall()
    return [(eid, model, bs, json.loads(g)) for eid, model, bs, _, g in rows]


def compare(args):
    runs = xsp_runs(args.db)
    refs = [json.loads(Path(p).read_text()) for p in args.refs]
    failed = [f"{p}: {r['error']}" for p, r in zip(args.refs, refs) if "error" in r]
    if failed:
        sys.exit("generation_check: reference runs failed:\n  " + "\n  ".join(failed))
    if len(runs) != len(refs):
        sys.exit(f"generation_check: {len(runs)} XSP M runs in {args.db} but {len(refs)} reference files")
    groups = {}
    for (eid, model, bs, g), ref in zip(runs, refs):
        if ref["batch"] != bs:
            sys.exit(f"generation_check: evaluation {eid} has batch {bs}, its reference {ref['batch']}")
        key = (model, bs)
        groups.setdefault(key, {"xsp_ttft": [], "xsp_tpot": [], "ref_ttft": [], "ref_tpot": []})
        groups[key]["xsp_ttft"].append(g["ttft_ns"]["p50"])
        groups[key]["xsp_tpot"].append(g["tpot_ns"]["p50"])
        groups[key]["ref_ttft"].append(ref["ttft_ns"]["median"])
        groups[key]["ref_tpot"].append(ref["tpot_ns"]["median"])
        # The fastest request of each side over all repetitions: on a machine whose host side drifts between
        # regimes, the least disturbed requests of each program.
        groups[key].setdefault("xsp_min", [float("inf")] * 2)
        groups[key].setdefault("ref_min", [float("inf")] * 2)
        for i, name in enumerate(("ttft_values_ns", "tpot_values_ns")):
            groups[key]["xsp_min"][i] = min([groups[key]["xsp_min"][i]] + g[name])
        for i, name in enumerate(("ttft_ns", "tpot_ns")):
            groups[key]["ref_min"][i] = min([groups[key]["ref_min"][i]] + ref["per_request"][name])
    # Each XSP run and the reference run right after it form a pair (alternating, so slow drifts of the machine
    # hit both); the figure is the median over the pairs of XSP / reference − 1, with its range.
    print("| model | batch | pairs | XSP TTFT p50 ms (range) | ref TTFT ms (range) | TTFT XSP/ref−1 median (range) | "
          "XSP TPOT p50 ms (range) | ref TPOT ms (range) | TPOT XSP/ref−1 median (range) |")
    print("|---|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for (model, bs), v in sorted(groups.items()):
        def cell(xs):
            return f"{statistics.median(xs) / 1e6:.3f} ({min(xs) / 1e6:.3f}–{max(xs) / 1e6:.3f})"

        def paired(a, b):
            d = [x / y - 1 for x, y in zip(a, b)]
            return statistics.median(d), f"{statistics.median(d) * 100:+.1f}% ({min(d) * 100:+.1f}…{max(d) * 100:+.1f})"
        d_ttft, c_ttft = paired(v["xsp_ttft"], v["ref_ttft"])
        d_tpot, c_tpot = paired(v["xsp_tpot"], v["ref_tpot"])
        worst = max(worst, abs(d_ttft), abs(d_tpot))
        print(f"| {model} | {bs} | {len(v['xsp_ttft'])} | {cell(v['xsp_ttft'])} | {cell(v['ref_ttft'])} | {c_ttft} | "
              f"{cell(v['xsp_tpot'])} | {cell(v['ref_tpot'])} | {c_tpot} |")
    print(f"largest |median XSP/ref − 1|: {worst * 100:.1f}%")
    print()
    print("| model | batch | fastest TTFT XSP / ref ms | XSP/ref−1 | fastest TPOT XSP / ref ms | XSP/ref−1 |")
    print("|---|---|---|---|---|---|")
    for (model, bs), v in sorted(groups.items()):
        (xf, xt), (rf, rt) = v["xsp_min"], v["ref_min"]
        print(f"| {model} | {bs} | {xf / 1e6:.3f} / {rf / 1e6:.3f} | {(xf / rf - 1) * 100:+.1f}% | "
              f"{xt / 1e6:.3f} / {rt / 1e6:.3f} | {(xt / rt - 1) * 100:+.1f}% |")
    return 0


def tail(args):
    con = sqlite3.connect(args.trace)
    tags = {}
    for span_id, key, value in con.execute("SELECT span_id, key, value FROM tags"):
        tags.setdefault(span_id, {})[key] = value
    spans = {r[0]: r for r in con.execute("SELECT id, parent_id, level, name, start_ns, end_ns, duration_ns FROM spans")}
    decode = [s for s in spans.values() if s[3] == "decode" and "tail_percentile" in tags.get(s[0], {})
              and tags[s[0]].get("tail") == "decode"]
    if not decode:
        sys.exit(f"generation_check: no tail decode step in {args.trace} (a kernel-level generation run?)")
    step = min(decode, key=lambda s: abs(float(tags[s[0]]["tail_percentile"]) - 99))
    children = {}
    for s in spans.values():
        children.setdefault(s[1], []).append(s[0])

    def under(root):
        out, todo = set(), [root]
        while todo:
            x = todo.pop()
            for c in children.get(x, []):
                if c not in out:
                    out.add(c)
                    todo.append(c)
        return out

    def kernels_of(step_id):
        ops = {s for s in under(step_id) if spans[s][2] == "framework"}
        rows = con.execute("SELECT k.name, k.duration_ns, k.op_id FROM kernels k WHERE k.kind = 'kernel'").fetchall()
        return [(n, d) for n, d, op in rows if op in ops]

    def report(label, s):
        ks = kernels_of(s[0])
        total = sum(d for _, d in ks)
        print(f"{label}: span {s[0]} step {tags[s[0]].get('step')} of request span {s[1]}: {s[6] / 1e6:.3f} ms, "
              f"{len(ks)} kernels, {total / 1e6:.3f} ms of kernel time ({100 * total / s[6]:.0f}% of the step)")
        return ks

    t = tags[step[0]]
    print(f"p99 decode step: tail rank {t.get('tail_rank')}, percentile {float(t['tail_percentile']):.2f}")
    ks = report("  slowest-tail step", step)
    by = {}
    for n, d in ks:
        c = by.setdefault(n, [0, 0])
        c[0] += 1
        c[1] += d
    for n, (count, d) in sorted(by.items(), key=lambda x: -x[1][1])[:8]:
        print(f"    {d / 1e3:9.1f} us  {count:3d}x  {n[:110]}")
    siblings = [s for s in spans.values() if s[1] == step[1] and s[3] == "decode" and s[0] != step[0]]
    if siblings:
        med = sorted(siblings, key=lambda s: s[6])[len(siblings) // 2]
        report("  median decode step of the same request", med)
    return 0


def torchprof(args):
    import torch
    from torch.profiler import ProfilerActivity, profile
    m = torch.jit.load(str(args.model), map_location=args.device).eval()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, int(m.vocab_size), (args.batch, args.prompt_tokens), generator=g).to(args.device)
    if args.cuda_graphs:
        m = GraphDecode(torch, m)
    with torch.inference_mode():
        for _ in range(3):  # warm-up (TorchScript's profiling executor specializes in its first runs)
            k, v = m.init_cache(args.batch, args.prompt_tokens + args.output_tokens)
            tok = m.prefill(ids, k, v).argmax(-1).view(-1, 1)
            for i in range(args.output_tokens - 1):
                tok = m.decode(tok, args.prompt_tokens + i, k, v).argmax(-1).view(-1, 1)
        torch.cuda.synchronize()
        marks = []
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            k, v = m.init_cache(args.batch, args.prompt_tokens + args.output_tokens)
            with torch.profiler.record_function("xsp_prefill"):
                tok = m.prefill(ids, k, v).argmax(-1).view(-1, 1).cpu()
            for i in range(args.output_tokens - 1):
                with torch.profiler.record_function(f"xsp_decode_{i}"):
                    tok = m.decode(tok.to(args.device), args.prompt_tokens + i, k, v).argmax(-1).view(-1, 1).cpu()
    events = prof.events()
    ranges = {e.name: (e.time_range.start, e.time_range.end) for e in events if e.name.startswith("xsp_")}
    if args.cuda_graphs:
        return torchprof_graph_counts(args, events, ranges)
    # Kernels belong to the step whose CPU range holds their launch (correlated runtime call).
    launches = [e for e in events if e.device_type == torch.autograd.DeviceType.CPU and
                e.name in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")]
    counts = {}
    for e in launches:
        for name, (a, b) in ranges.items():
            if a <= e.time_range.start <= b:
                counts[name] = counts.get(name, 0) + 1
    kernels = sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
    decode = [counts.get(f"xsp_decode_{i}", 0) for i in range(args.output_tokens - 1)]
    print(json.dumps({"model": str(args.model), "batch": args.batch, "prefill_launches": counts.get("xsp_prefill", 0),
                      "decode_launches_median": statistics.median(decode), "decode_launches_min": min(decode),
                      "decode_launches_max": max(decode), "device_events_total": kernels}))
    return 0


def torchprof_graph_counts(args, events, ranges):
    """Graph mode: a replay is one cudaGraphLaunch, so kernels are counted by time: the device activities that start
    inside a step's range (each step ends with its tokens copied to the host, so its device work lies within it)."""
    import torch
    device = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]

    def counts(name):
        a, b = ranges[name]
        inside = [e for e in device if a <= e.time_range.start <= b]
        memcpy = sum(1 for e in inside if e.name.startswith("Memcpy"))
        memset = sum(1 for e in inside if e.name.startswith("Memset"))
        return len(inside) - memcpy - memset, memcpy, memset

    decode = [counts(f"xsp_decode_{i}") for i in range(args.output_tokens - 1)]
    kernels = [d[0] for d in decode]
    print(json.dumps({"model": str(args.model), "batch": args.batch, "cuda_graphs": True,
                      "prefill_kernels": counts("xsp_prefill")[0], "decode_kernels_median": statistics.median(kernels),
                      "decode_kernels_min": min(kernels), "decode_kernels_max": max(kernels),
                      "decode_memcpy_median": statistics.median(d[1] for d in decode),
                      "decode_memset_median": statistics.median(d[2] for d in decode)}))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("db")
    c.add_argument("refs", nargs="+")
    t = sub.add_parser("tail")
    t.add_argument("trace")
    p = sub.add_parser("torchprof")
    p.add_argument("model", type=Path)
    p.add_argument("--device", default="cuda")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--output-tokens", type=int, default=16)
    p.add_argument("--cuda-graphs", action="store_true", help="decode steps replay a CUDA graph (as xsp --cuda-graphs)")
    args = ap.parse_args()
    return {"compare": compare, "tail": tail, "torchprof": torchprof}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
