#!/usr/bin/env python3
"""A PyTorch profiler (Kineto) trace of the predict step XSP times, for setting HTA's reading of XSP's Chrome export
beside its reading of Kineto's own (docs/exports.md, scripts/hta_check.py --kineto).

    python3 scripts/gpu/kineto_trace.py MODEL.pt BATCH OUT.json [STEPS]

Input copied host to device, forward, output copied back, as in torch_reference.py; 20 warm-up steps unprofiled,
then one profiler warm-up step and STEPS (default 2) active steps, each marked ProfilerStep#N by prof.step()."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import make_predict  # noqa: E402  (the same predict step)


def main():
    model_path, batch, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    predict = make_predict(model_path, batch)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    sched = torch.profiler.schedule(wait=0, warmup=1, active=steps, repeat=1)
    with torch.profiler.profile(activities=acts, schedule=sched,
                                on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for _ in range(1 + steps):
            predict()
            prof.step()
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
