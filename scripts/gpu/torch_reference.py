#!/usr/bin/env python3
"""Reference figures from PyTorch itself for XSP's GPU verification (issue: GPU across-stack tracing).

For a TorchScript model or an AOTInductor package (.pt2) on CUDA, with the same predict step XSP times (input copied host->device, forward,
output copied device->host):
  * plain: median latency of a timing loop without any profiler (compare with XSP's M run);
  * torch.profiler (CUDA activities): kernels / memcpy / memset per inference and their total device time
    (compare with XSP's M/F/K run).
Prints one JSON object. Usage: python3 torch_reference.py MODEL.pt BATCH [ITERS] [SIDE]
"""
import json
import statistics
import sys
import tempfile
import time

import torch


def make_predict(model_path, batch, side=224):
    """XSP's predict step for a TorchScript model on CUDA: a random NCHW input copied host->device, forward, the
    (first) output copied device->host. Returns the step as a function, after 20 warm-up calls."""
    dev = torch.device("cuda")
    if model_path.endswith(".pt2"):  # an AOTInductor package (scripts/export_hf.py), loaded as PyTorch loads it
        import torch._inductor.package as aoti_package

        model = aoti_package.load_package(model_path)
    else:
        model = torch.jit.load(model_path, map_location=dev).eval()
    x_cpu = torch.randn(batch, 3, side, side)

    def predict():
        with torch.inference_mode():
            y = model(x_cpu.to(dev))
            if isinstance(y, (tuple, list)):
                y = y[0]
            return y.float().cpu()

    for _ in range(20):
        predict()
    torch.cuda.synchronize()
    return predict


def main():
    model_path, batch = sys.argv[1], int(sys.argv[2])
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    side = int(sys.argv[4]) if len(sys.argv) > 4 else 224
    predict = make_predict(model_path, batch, side)
    lat = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        predict()
        lat.append(time.perf_counter_ns() - t0)
    plain_ms = statistics.median(lat) / 1e6

    prof_iters = 10
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(prof_iters):
            predict()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    counts = {"kernel": 0, "gpu_memcpy": 0, "gpu_memset": 0}
    dur_us = {"kernel": 0.0, "gpu_memcpy": 0.0, "gpu_memset": 0.0}
    names = {}
    for e in trace.get("traceEvents", []):
        cat = e.get("cat")
        if cat in counts and e.get("ph") == "X":
            counts[cat] += 1
            dur_us[cat] += float(e.get("dur", 0))
            if cat == "kernel":
                names[e["name"]] = names.get(e["name"], 0) + 1
    lat_prof = []
    with torch.profiler.profile(activities=acts):
        for _ in range(iters):
            t0 = time.perf_counter_ns()
            predict()
            lat_prof.append(time.perf_counter_ns() - t0)
    out = {
        "model": model_path, "batch": batch, "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "plain_median_ms": plain_ms,
        "profiled_median_ms": statistics.median(lat_prof) / 1e6,
        "per_inference": {k: counts[k] / prof_iters for k in counts},
        "device_time_ms_per_inference": {k: dur_us[k] / prof_iters / 1e3 for k in dur_us},
        "distinct_kernels": len(names),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
