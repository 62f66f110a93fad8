"""A PyTorch program as `xsp profile` sees it and as torch.profiler sees it (docs/profile.md, BENCHMARKS.md).

Eager ResNet-50 (torchvision) or BERT-base (transformers, from its config: random weights, no download), batch 8 on
the GPU, WARMUP warm-up steps outside any tool and range (default 3), then STEPS steps, each in a range "step" and
followed by a synchronize (every mode takes [STEPS [WARMUP]]):
  python3 scripts/gpu/profile_ops.py MODEL nvtx [STEPS]    # under emit_nvtx(record_shapes=True): run it with the
                                                          # injection library (xsp profile, or the variables it sets)
  python3 scripts/gpu/profile_ops.py MODEL plain [STEPS]   # no tool (the baseline of the overhead comparison)
  python3 scripts/gpu/profile_ops.py MODEL torch [STEPS]   # under torch.profiler (CPU and CUDA activity)
  python3 scripts/gpu/profile_ops.py MODEL torch-shapes [STEPS]  # ... with record_shapes=True
  python3 scripts/gpu/profile_ops.py MODEL torch-cuda [STEPS]    # ... CUDA activity only
  python3 scripts/gpu/profile_ops.py MODEL profiler-api [STEPS]  # only the middle step between
                                                                 # cudaProfilerStart/Stop (xsp profile --capture
                                                                 # cuda-profiler-api)
  python3 scripts/gpu/profile_ops.py MODEL spawn [STEPS]   # nvtx, plus a child process doing its own CUDA work
Each prints one JSON object on stdout: {"model", "mode", "steps", "torch", "step_ns": [wall time of each step]}, and
in the plain and torch modes "host_ns" (each step's host time: until the forward returned, before the synchronize); the
torch mode adds "ops" ({"op name": count} of the CPU ops inside the steps, nested ones included) and "kernels"
({"kernel name": count} of the GPU kernels, copies and sets excluded). tests/unit/profile compares them with what
`xsp profile` recorded.
"""
import json
import subprocess
import sys
import time

import torch

CHILD = """
import torch
x = torch.randn(512, 512, device="cuda")
torch.cuda.nvtx.range_push("child work")
for _ in range(10):
    x = torch.mm(x, x).clamp_(-1, 1)
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
"""


def model_and_input(name, device):
    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision

        return torchvision.models.resnet50().eval().to(device), (torch.randn(8, 3, 224, 224, device=device),)
    if name == "bert":
        import transformers

        config = transformers.BertConfig()
        model = transformers.BertModel(config).eval().to(device)
        ids = torch.randint(0, config.vocab_size, (8, 128), device=device)
        return model, (ids,)
    raise SystemExit(f"unknown model {name!r}: expected resnet50 or bert")


def run_steps(model, inputs, steps, ranges, profiler_api_step=None, host=None):
    """The wall time of each step; `host` (a list) gets each step's host time: until the forward returned, before
    the synchronize, which is what a tool adds on the CPU side even where the GPU's time hides it."""
    times = []
    for i in range(steps):
        if profiler_api_step == i:
            torch.cuda.profiler.start()
        t0 = time.perf_counter_ns()
        if ranges:
            torch.cuda.nvtx.range_push("step")
        model(*inputs)
        if host is not None:
            host.append(time.perf_counter_ns() - t0)
        torch.cuda.synchronize()
        if ranges:
            torch.cuda.nvtx.range_pop()
        times.append(time.perf_counter_ns() - t0)
        if profiler_api_step == i:
            torch.cuda.profiler.stop()
    return times


def main():
    name, mode = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    warmup = int(sys.argv[4]) if len(sys.argv) > 4 else 3  # unrecorded: outside emit_nvtx and every range
    model, inputs = model_and_input(name, "cuda")
    with torch.no_grad():
        for _ in range(warmup):
            model(*inputs)
    torch.cuda.synchronize()
    out = {"model": name, "mode": mode, "steps": steps, "torch": torch.__version__}
    if mode in ("nvtx", "spawn", "profiler-api"):
        child = subprocess.Popen([sys.executable, "-c", CHILD]) if mode == "spawn" else None
        with torch.autograd.profiler.emit_nvtx(record_shapes=True), torch.no_grad():
            out["step_ns"] = run_steps(model, inputs, steps, True, steps // 2 if mode == "profiler-api" else None)
        if child is not None:
            out["child_status"] = child.wait()
    elif mode == "plain":
        out["host_ns"] = []
        with torch.no_grad():
            out["step_ns"] = run_steps(model, inputs, steps, True, host=out["host_ns"])
    elif mode in ("torch", "torch-shapes", "torch-cuda"):
        from torch.profiler import ProfilerActivity, profile, record_function

        times, host = [], []
        activities = [ProfilerActivity.CUDA] if mode == "torch-cuda" else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
        with profile(activities=activities, record_shapes=mode == "torch-shapes") as prof, torch.no_grad():
            for _ in range(steps):
                t0 = time.perf_counter_ns()
                with record_function("step"):
                    model(*inputs)
                    host.append(time.perf_counter_ns() - t0)
                    torch.cuda.synchronize()
                times.append(time.perf_counter_ns() - t0)
        out["step_ns"], out["host_ns"] = times, host
        events = prof.events()
        step_ranges = [e.time_range for e in events if e.name == "step" and e.device_type == torch.autograd.DeviceType.CPU]
        ops, kernels = {}, {}
        for e in events:
            if e.device_type == torch.autograd.DeviceType.CPU:
                if e.name == "step":
                    continue
                start = e.time_range.start
                if any(s.start <= start <= s.end for s in step_ranges):
                    ops[e.name] = ops.get(e.name, 0) + 1
            elif e.name != "step" and not e.name.startswith(("Memcpy", "Memset")):  # "step": the GPU-side user range
                kernels[e.name] = kernels.get(e.name, 0) + 1
        out["ops"], out["kernels"] = ops, kernels
    else:
        raise SystemExit(
            f"unknown mode {mode!r}: expected nvtx, plain, torch, torch-shapes, torch-cuda, profiler-api or spawn"
        )
    json.dump(out, sys.stdout, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
