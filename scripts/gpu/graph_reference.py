#!/usr/bin/env python3
"""PyTorch's own figures for a TorchScript model run eagerly and as a CUDA graph (docs/cuda-graphs.md, BENCHMARKS.md).

The predict step is XSP's (input copied host->device, forward, first output copied device->host); in graph mode the
forward is captured once (static input buffer, 3 warm-up runs on a side stream, capture) and each step copies its
input into the static buffer and replays. Eager and graph steps alternate in rounds (drift hits both alike).
Prints one JSON object: medians and quartiles of both, and torch.profiler's kernel/memcpy/memset counts per step in
each mode. Usage: python3 graph_reference.py MODEL.pt BATCH [ITERS]
"""
import json
import statistics
import sys
import tempfile
import time

import torch


def quartiles(xs):
    q = statistics.quantiles(xs, n=4)
    return {"median_ms": statistics.median(xs) / 1e6, "q1_ms": q[0] / 1e6, "q3_ms": q[2] / 1e6, "n": len(xs)}


def device_counts(step, steps):
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    counts = {"kernel": 0, "gpu_memcpy": 0, "gpu_memset": 0}
    gpu_us = 0.0
    for e in trace.get("traceEvents", []):
        if e.get("cat") in counts and e.get("ph") == "X":
            counts[e["cat"]] += 1
            gpu_us += float(e.get("dur", 0))
    return {k: v / steps for k, v in counts.items()} | {"gpu_time_ms_per_step": gpu_us / 1e3 / steps}


def main():
    path, batch = sys.argv[1], int(sys.argv[2])
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    dev = torch.device("cuda")
    model = torch.jit.load(path, map_location=dev).eval()
    x_cpu = torch.randn(batch, 3, 224, 224)

    def first(y):
        return y[0] if isinstance(y, (tuple, list)) else y

    def eager():
        with torch.inference_mode():
            return first(model(x_cpu.to(dev))).float().cpu()

    with torch.inference_mode():
        static_x = x_cpu.to(dev).clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(static_x)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_y = first(model(static_x))

    def graph():
        with torch.inference_mode():
            static_x.copy_(x_cpu.to(dev))
            g.replay()
            return static_y.float().cpu()

    for _ in range(20):
        eager()
        graph()
    lat = {"eager": [], "graph": []}
    for i in range(iters):
        for mode, step in (("eager", eager), ("graph", graph)) if i % 2 == 0 else (("graph", graph), ("eager", eager)):
            t0 = time.perf_counter_ns()
            step()
            lat[mode].append(time.perf_counter_ns() - t0)
    out = {"model": path, "batch": batch, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
           "eager": quartiles(lat["eager"]) | device_counts(eager, 10),
           "graph": quartiles(lat["graph"]) | device_counts(graph, 10),
           "same_output": bool(torch.allclose(eager(), graph(), rtol=1e-3, atol=1e-3))}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
