#!/usr/bin/env python3
"""A Python program that runs its model under torch.cuda.graphs, for `xsp profile` (docs/cuda-graphs.md).

Four pre-norm MLP blocks (LayerNorm, Linear, GELU, Linear, residual; width 1024, batch 8 x 128 tokens) on the GPU.
Each module's forward is wrapped in an NVTX range named by its module path ("blocks.2.fc1"), as module hooks or
emit_nvtx do; the ranges are open during the capture only, since a replay runs no Python. Warm-up on a side stream,
capture once, then STEPS replays, each in a range "step" followed by a synchronize.
  python3 graph_program.py [STEPS]          # run it (under xsp profile)
  python3 graph_program.py [STEPS] torch    # under torch.profiler: prints {"kernels_per_step": ...}
"""
import json
import sys

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class Model(nn.Module):
    def __init__(self, width=1024, depth=4):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    mode = sys.argv[2] if len(sys.argv) > 2 else "run"
    torch.manual_seed(0)
    model = Model().cuda().eval()
    # Hooks return None: a value returned by a hook would replace the module's input or output.
    def push(name):
        def hook(module, inputs):
            torch.cuda.nvtx.range_push(name)
        return hook

    def pop(module, inputs, output):
        torch.cuda.nvtx.range_pop()

    for name, m in model.named_modules():
        if name:
            m.register_forward_pre_hook(push(name))
            m.register_forward_hook(pop)
    x = torch.randn(8, 128, 1024, device="cuda")
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = model(x)

    def run():
        for i in range(steps):
            torch.cuda.nvtx.range_push("step")
            g.replay()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()

    if mode == "torch":
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            run()
        kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        print(json.dumps({"steps": steps, "kernels_per_step": kernels / steps}))
    else:
        run()
        print(f"checksum {float(y.float().sum()):.3f}")


if __name__ == "__main__":
    main()
