#!/usr/bin/env python3
"""Kernel counts and times of the task models (detection, segmentation, text classification; docs/tasks.md) from
XSP's kernel run against torch.profiler, as scripts/gpu/torch_reference.py does for the CNNs (BENCHMARKS.md
"Detection, segmentation and text models on a GPU").

    tasks_check.py xsp TRACE.sqlite            # a run exported with `xsp trace export ID --format sqlite`
    tasks_check.py torchprof MODEL.pt --batch B (--image C,H,W | --text L)

xsp: per predict span (one batch), the kernels launched under it (through the framework ops that launched them) and
their device time; the median over the run's batches, and the share of kernels tied to an op.
torchprof: the same predict step (inputs copied host to device, forward, every output copied back) 20 times for
warm-up, then 10 times under torch.profiler (CPU and CUDA activities): kernels and kernel time per inference.
Both print one JSON object.
"""

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile


def xsp(args):
    con = sqlite3.connect(args.trace)
    spans = {r[0]: r for r in con.execute("SELECT id, parent_id, level, name FROM spans")}
    predict = [s for s in spans.values() if s[2] == "model" and s[3] == "predict"]
    if not predict:
        sys.exit(f"tasks_check: no predict span in {args.trace}")

    def predict_of(span_id):
        while span_id in spans:
            s = spans[span_id]
            if s[2] == "model":
                return s[0] if s[3] == "predict" else None
            span_id = s[1]
        return None

    per = {p[0]: [0, 0] for p in predict}
    tied = total = 0
    for span_id, op_id, duration in con.execute("SELECT span_id, op_id, duration_ns FROM kernels WHERE kind = 'kernel'"):
        total += 1
        tied += op_id is not None
        p = predict_of(span_id)
        if p is None:
            continue
        per[p][0] += 1
        per[p][1] += duration
    counts = [c for c, _ in per.values()]
    times = [d / 1e6 for _, d in per.values()]
    print(json.dumps({"batches": len(predict), "kernels_median": statistics.median(counts), "kernels_min": min(counts),
                      "kernels_max": max(counts), "kernel_ms_median": statistics.median(times),
                      "kernel_ms_min": min(times), "kernel_ms_max": max(times),
                      "kernels_tied_to_an_op_percent": 100.0 * tied / total if total else 0.0}))
    return 0


def torchprof(args):
    import torch
    from torch.profiler import ProfilerActivity, profile
    dev = torch.device("cuda")
    model = torch.jit.load(args.model, map_location=dev).eval()
    g = torch.Generator().manual_seed(0)
    if args.text:
        ids = torch.randint(0, 2000, (args.batch, args.text), generator=g)
        inputs = [ids, torch.ones_like(ids)]
    else:
        c, h, w = (int(x) for x in args.image.split(","))
        inputs = [torch.randn(args.batch, c, h, w, generator=g)]

    def flat(y, out):
        if isinstance(y, torch.Tensor):
            out.append(y.float().cpu())
        elif isinstance(y, dict):
            for v in y.values():
                flat(v, out)
        elif isinstance(y, (tuple, list)):
            for v in y:
                flat(v, out)
        return out

    def predict():
        with torch.inference_mode():
            return flat(model(*[x.to(dev) for x in inputs]), [])

    for _ in range(20):
        predict()
    torch.cuda.synchronize()
    iters = 10
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            predict()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    kernels = [e for e in trace.get("traceEvents", []) if e.get("cat") == "kernel" and e.get("ph") == "X"]
    print(json.dumps({"model": args.model, "batch": args.batch, "torch": torch.__version__,
                      "kernels_per_inference": len(kernels) / iters,
                      "kernel_ms_per_inference": sum(float(e.get("dur", 0)) for e in kernels) / iters / 1e3}))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("xsp")
    a.add_argument("trace")
    b = sub.add_parser("torchprof")
    b.add_argument("model")
    b.add_argument("--batch", type=int, default=1)
    b.add_argument("--image", help="C,H,W of an image input")
    b.add_argument("--text", type=int, help="token length of a text model's input_ids and attention_mask")
    args = ap.parse_args()
    if args.cmd == "torchprof" and not (args.image or args.text):
        ap.error("torchprof needs --image C,H,W or --text L")
    return xsp(args) if args.cmd == "xsp" else torchprof(args)


if __name__ == "__main__":
    sys.exit(main())
