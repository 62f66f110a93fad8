"""The CUPTI part of `xsp profile` on a GPU (docs/profile.md, BENCHMARKS.md): runs scripts/gpu/profile_ops.py with
the injection library as `xsp profile --trace-level kernel` would (the variables it sets, so that no xsp binary is
needed on the GPU machine), and writes under OUT:
  resnet50/, bert/     the parts of 3 steps under emit_nvtx + torch_ops.json (torch.profiler's ops and kernels of the
                       same 3 steps): the fixtures of tests/unit/profile
  spawn/               a program whose child process does its own CUDA work: one part per process
  api/                 --capture cuda-profiler-api: only the middle step is between cudaProfilerStart/Stop
  coexist/             torch.profiler inside a program under the injection (both at once); coexist.json its output
  overhead.json        wall time per step of STEPS steps, ROUNDS rounds interleaved: no tool; the CUPTI parts alone
                       (xsp profile --trace-level kernel without emit_nvtx, torch.profiler with CUDA activity only);
                       xsp profile at framework level (emit_nvtx ranges only); the whole tools (emit_nvtx with shapes
                       + CUPTI, torch.profiler CPU + CUDA with record_shapes)
Usage: python3 scripts/gpu/profile_cuda.py INJECT_LIBRARY OUT [ROUNDS] [STEPS] [overhead|all] [CPUS]
  overhead: that file only; CPUS: a taskset CPU list every run is pinned to (e.g. the GPU's NUMA node's)
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = os.path.join(HERE, "profile_ops.py")
CPUS = ""  # every run on these CPUs (taskset -c): where a process lands changed its step time 2x on the H200 host


def run(model, mode, steps, inject=None, parts=None, level="kernel", extra=None):
    env = dict(os.environ)
    if inject is not None:
        os.makedirs(parts, exist_ok=True)
        env["NVTX_INJECTION64_PATH"] = inject
        env["XSP_PROFILE_DIR"] = parts
        if level in ("system", "kernel"):
            env["CUDA_INJECTION64_PATH"] = inject
            env["XSP_PROFILE_TRACE_LEVEL"] = level
    env.update(extra or {})
    pin = ["taskset", "-c", CPUS] if CPUS else []
    p = subprocess.run(pin + [sys.executable, OPS, model, mode, str(steps)], env=env, capture_output=True, text=True)
    if p.stderr.strip():
        sys.stderr.write(f"[{model} {mode} {level if inject else 'no tool'}] {p.stderr.strip()[-2000:]}\n")
    if p.returncode != 0:
        raise SystemExit(f"{model} {mode}: exit {p.returncode}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    inject, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    global CPUS
    CPUS = sys.argv[6] if len(sys.argv) > 6 else ""
    os.makedirs(out, exist_ok=True)
    if len(sys.argv) <= 5 or sys.argv[5] != "overhead":
        fixtures(inject, out)
    overhead(inject, out, rounds, steps)


def fixtures(inject, out):
    for model in ("resnet50", "bert"):
        run(model, "nvtx", 3, inject, os.path.join(out, model))
        with open(os.path.join(out, model, "torch_ops.json"), "w") as f:
            json.dump(run(model, "torch", 3), f, sort_keys=True)
            f.write("\n")
    print("spawn", run("resnet50", "spawn", 2, inject, os.path.join(out, "spawn")).get("child_status"), flush=True)
    run("resnet50", "profiler-api", 3, inject, os.path.join(out, "api"), extra={"XSP_CAPTURE_PROFILER_API": "1"})
    try:
        co = run("resnet50", "torch", 3, inject, os.path.join(out, "coexist"))
        with open(os.path.join(out, "coexist.json"), "w") as f:
            json.dump({"kernels": sum(co["kernels"].values()), "ops": sum(co["ops"].values())}, f)
    except SystemExit as e:
        with open(os.path.join(out, "coexist.json"), "w") as f:
            json.dump({"error": str(e)}, f)


def overhead(inject, out, rounds, steps):
    # (label, profile_ops mode, injection level or None): the CUPTI parts alone (no emit_nvtx) and whole tools.
    configs = [
        ("none", "plain", None),
        ("xsp-kernel-no-ops", "plain", "kernel"),
        ("torch-cuda", "torch-cuda", None),
        ("xsp-framework", "nvtx", "framework"),
        ("xsp-kernel", "nvtx", "kernel"),
        ("torch-shapes", "torch-shapes", None),
    ]
    results = []
    for r in range(rounds):
        for model in ("resnet50", "bert"):
            for label, mode, level in configs:
                if model == "bert" and label == "xsp-framework":
                    continue
                parts = os.path.join(out, "scratch", f"{model}-{label}-{r}")
                res = run(model, mode, steps, inject if level else None, parts, level=level or "kernel")
                results.append({"round": r, "model": model, "config": label, "step_ns": res["step_ns"]})
                print(model, label, r, sorted(res["step_ns"])[len(res["step_ns"]) // 2], flush=True)
    with open(os.path.join(out, "overhead.json"), "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
