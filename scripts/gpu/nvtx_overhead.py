"""What framework-level tracing costs a PyTorch program, per forward: plain, emit_nvtx with no tool attached, emit_nvtx
with libxsp_inject.so attached (NVTX_INJECTION64_PATH set by the caller), and torch.profiler recording CPU ops.
One mode per process (injection is process-wide); scripts/gpu/nvtx_overhead.sh alternates them.
  python3 nvtx_overhead.py MODE    MODE: plain | nvtx | profiler     prints "MODE us_per_forward <median> <min> <max>"
"""
import statistics
import sys
import time

import torch

mode = sys.argv[1]
torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) if i % 2 == 0 else torch.nn.ReLU() for i in range(16)])
model = model.to(device).eval()
x = torch.randn(8, 256, device=device)


def block(n):
    t0 = time.perf_counter()
    for _ in range(n):
        model(x)
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


with torch.no_grad():
    for _ in range(200):
        model(x)
    samples = []
    if mode == "plain":
        samples = [block(500) for _ in range(7)]
    elif mode == "nvtx":
        with torch.autograd.profiler.emit_nvtx(record_shapes=True):
            block(50)
            samples = [block(500) for _ in range(7)]
    elif mode == "profiler":
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True):
            block(50)
            samples = [block(500) for _ in range(7)]
    else:
        raise SystemExit(f"unknown mode {mode}")
print(mode, "us_per_forward", f"{statistics.median(samples):.2f}", f"{min(samples):.2f}", f"{max(samples):.2f}")
