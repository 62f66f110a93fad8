"""A long-running GPU program that never stops by itself before DURATION_S, as a server does: torchvision ResNet-50
steps (batch 8, CUDA), each inside an NVTX range "step", back to back. At exit it writes every step's
(start_ns, end_ns) on CLOCK_MONOTONIC (time.monotonic_ns, the clock of XSP's spans) to STEPS_JSON, so that a driver
can see whether a step was slowed when collection stopped (scripts/gpu/profile_window.py).
  python3 scripts/gpu/window_server.py DURATION_S STEPS_JSON
"""
import json
import sys
import time

import torch
import torchvision

duration_s, out = float(sys.argv[1]), sys.argv[2]
model = torchvision.models.resnet50().cuda().eval()
x = torch.randn(8, 3, 224, 224, device="cuda")
steps = []
with torch.no_grad():
    for _ in range(5):
        model(x)
    torch.cuda.synchronize()
    end = time.monotonic() + duration_s
    while time.monotonic() < end:
        t0 = time.monotonic_ns()
        torch.cuda.nvtx.range_push("step")
        model(x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        steps.append((t0, time.monotonic_ns()))
with open(out, "w") as f:
    json.dump(steps, f)
print("steps", len(steps))
