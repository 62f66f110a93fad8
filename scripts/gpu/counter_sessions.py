"""Sessions of the injected counter profiler on a GPU (docs/profile.md "Hardware counters"): a counter data image
holds at most XSP_COUNTER_MAX_RANGES kernels, so a longer capture is collected in several sessions, and a session ends
where the capture closes. Runs two programs under libxsp_inject.so at trace level hardware, capture nvtx:step, and
prints one JSON object:
  small:    3 steps of (matmul 256x256x256 FP32, relu_, add_) with a launch between steps (outside the capture), at
            XSP_COUNTER_MAX_RANGES=2: expect 9 ranges and 9 launches, each matmul 2*256^3 FP32 FLOPs
  resnet50: 1 step of scripts/gpu/profile_ops.py resnet50 at XSP_COUNTER_MAX_RANGES=100 (3 sessions): expect the
            232 ranges and the 74,277,643,968 FLOPs of the single-session run (tests/fixtures/profile/resnet50_counters)
  api:      the small program with cudaProfilerStart/Stop around its second step and capture cuda-profiler-api
            (XSP_CAPTURE_PROFILER_API=1, no range): expect that step's 4 ranges only
Usage: python3 scripts/gpu/counter_sessions.py INJECT_LIBRARY OUT
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ncu_compare import derive  # noqa: E402  (the FLOPs of hardware_counters.h from raw metric values)

SMALL = """
import sys
import torch
torch.backends.cuda.matmul.allow_tf32 = False
api = len(sys.argv) > 1
x = torch.randn(256, 256, device="cuda")
torch.cuda.synchronize()
for i in range(3):
    if api and i == 1:
        torch.cuda.profiler.start()
    torch.cuda.nvtx.range_push("step")
    y = torch.mm(x, x).relu_().add_(1.0)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    if api and i == 1:
        torch.cuda.profiler.stop()
    x = x * 0.5  # a launch outside the capture: the session ends here
    torch.cuda.synchronize()
"""


def run(inject, out, name, argv, max_ranges, capture=None):
    dump = os.path.join(out, name)
    env = dict(os.environ)
    env.update({"NVTX_INJECTION64_PATH": inject, "CUDA_INJECTION64_PATH": inject, "XSP_PROFILE_TRACE_LEVEL": "hardware",
                "XSP_PROFILE_DIR": os.path.join(out, name + "_parts"),
                "XSP_COUNTER_MAX_RANGES": str(max_ranges), "XSP_DUMP_COUNTERS": dump})
    env.update(capture or {"XSP_CAPTURE_RANGE": "step"})
    os.makedirs(env["XSP_PROFILE_DIR"], exist_ok=True)
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    result = {"exit": p.returncode, "stderr": p.stderr[-1500:]}
    files = sorted(os.listdir(dump)) if os.path.isdir(dump) else []
    if not files:
        return result
    c = json.load(open(os.path.join(dump, files[0])))
    flops = [derive(r["metrics"])["flops"] for r in c["ranges"]]
    result.update({"ranges": len(c["ranges"]), "launches": len(c["launches"]), "dropped": c.get("dropped_ranges"),
                   "flops_total": sum(flops), "flops": flops[:12],
                   "names": [l["kernel_name"][:60] for l in c["launches"][:9]],
                   "parts": os.listdir(env["XSP_PROFILE_DIR"])})
    return result


def main():
    inject, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(out, exist_ok=True)
    res = {"small": run(inject, out, "small", [sys.executable, "-c", SMALL], 2),
           "api": run(inject, out, "api", [sys.executable, "-c", SMALL, "api"], 2, {"XSP_CAPTURE_PROFILER_API": "1"}),
           "resnet50": run(inject, out, "resnet50",
                           [sys.executable, os.path.join(HERE, "profile_ops.py"), "resnet50", "nvtx", "1"], 100)}
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
