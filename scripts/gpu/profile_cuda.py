"""The CUPTI part of `xsp profile` on a GPU (docs/profile.md, BENCHMARKS.md): runs scripts/gpu/profile_ops.py with
the injection library as `xsp profile --trace-level kernel` would (the variables it sets, so that no xsp binary is
needed on the GPU machine), and writes under OUT:
  resnet50/, bert/     the parts of 3 steps under emit_nvtx + torch_ops.json (torch.profiler's ops and kernels of the
                       same 3 steps): the fixtures of tests/unit/profile
  spawn/               a program whose child process does its own CUDA work: one part per process
  api/                 --capture cuda-profiler-api: only the middle step is between cudaProfilerStart/Stop
  coexist/             torch.profiler inside a program under the injection (both at once); coexist.json its output
  overhead.json        wall time (and host time, profile_ops.py) per step of STEPS steps, ROUNDS rounds
                       interleaved (XSP_OVERHEAD_CONFIGS=a,b: only those configs, by label; XSP_OVERHEAD_MODELS=bert: only
                       that model): no tool; the CUPTI parts alone
                       (xsp profile --trace-level kernel without ops, torch.profiler with CUDA activity only); the
                       whole tools: xsp with the op observer (without, then with shapes) against torch.profiler CPU +
                       CUDA (without, then with record_shapes); with XSP_OVERHEAD_EMIT_NVTX=1 also xsp with
                       emit_nvtx(record_shapes=True)
  resnet50_observer/, bert_observer/   (observer) the parts of 3 steps without emit_nvtx, ops from the RecordFunction
                       observer with shapes (xsp profile --op-shapes), + torch_ops.json as above
Usage: python3 scripts/gpu/profile_cuda.py INJECT_LIBRARY OUT [ROUNDS] [STEPS] [overhead|observer|all] [CPUS]
  overhead: that file only; observer: those fixtures only; CPUS: a taskset CPU list every run is pinned to (e.g. the GPU's NUMA node's)
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = os.path.join(HERE, "profile_ops.py")
CPUS = ""  # every run on these CPUs (taskset -c): where a process lands changed its step time 2x on the H200 host


def run(model, mode, steps, inject=None, parts=None, level="kernel", extra=None, ops="nvtx"):
    """ops: where the injection library takes PyTorch's ops from (xsp profile --torch-ops): "nvtx" (emit_nvtx's
    ranges) or "observer" (libxsp_torch_ops.so's RecordFunction callback); "observer-shapes" adds --op-shapes."""
    env = dict(os.environ)
    if inject is not None:
        os.makedirs(parts, exist_ok=True)
        env["NVTX_INJECTION64_PATH"] = inject
        env["XSP_PROFILE_DIR"] = parts
        env["XSP_PROFILE_TRACE_LEVEL"] = level
        env["XSP_PROFILE_TORCH_OPS"] = "nvtx" if ops == "nvtx" else "observer"
        if ops == "observer-shapes":
            env["XSP_PROFILE_OP_SHAPES"] = "1"
        if level in ("system", "kernel") or ops != "nvtx":
            env["CUDA_INJECTION64_PATH"] = inject
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
    what = sys.argv[5] if len(sys.argv) > 5 else "all"
    if what == "observer":
        observer_fixtures(inject, out)
        return
    if what != "overhead":
        fixtures(inject, out)
    overhead(inject, out, rounds, steps)


def observer_fixtures(inject, out):
    """The parts of 3 steps with no emit_nvtx, ops from the RecordFunction observer (with shapes), beside
    torch.profiler's ops and kernels of the same 3 steps: tests/fixtures/profile/MODEL_observer."""
    for model in ("resnet50", "bert"):
        d = os.path.join(out, model + "_observer")
        run(model, "plain", 3, inject, d, ops="observer-shapes")
        with open(os.path.join(d, "torch_ops.json"), "w") as f:
            json.dump(run(model, "torch", 3), f, sort_keys=True)
            f.write("\n")


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
    # (label, profile_ops mode, injection level or None, ops): the CUPTI parts alone (no ops) and whole tools;
    # ops: where the ops come from (run()). "xsp-observer" against "torch" and "xsp-observer-shapes" against
    # "torch-shapes" are the like-for-like whole tools; "xsp-kernel" is the emit_nvtx way.
    configs = [
        ("none", "plain", None, "nvtx"),
        ("xsp-kernel-no-ops", "plain", "kernel", "nvtx"),
        ("torch-cuda", "torch-cuda", None, "nvtx"),
        ("xsp-observer", "plain", "kernel", "observer"),
        ("torch", "torch", None, "nvtx"),
        ("xsp-observer-shapes", "plain", "kernel", "observer-shapes"),
        ("torch-shapes", "torch-shapes", None, "nvtx"),
    ]
    if os.environ.get("XSP_OVERHEAD_EMIT_NVTX") == "1":  # the emit_nvtx way too (BENCHMARKS.md 2026-11-27)
        configs.append(("xsp-kernel", "nvtx", "kernel", "nvtx"))
    only = os.environ.get("XSP_OVERHEAD_CONFIGS")  # e.g. "none,xsp-observer,torch": more rounds in a device call
    if only:
        configs = [c for c in configs if c[0] in only.split(",")]
    models = os.environ.get("XSP_OVERHEAD_MODELS", "resnet50,bert").split(",")  # e.g. "bert": one model's rounds only
    results = []
    for r in range(rounds):
        for model in models:
            for label, mode, level, ops in configs:
                parts = os.path.join(out, "scratch", f"{model}-{label}-{r}")
                res = run(model, mode, steps, inject if level else None, parts, level=level or "kernel", ops=ops)
                results.append({"round": r, "model": model, "config": label, "step_ns": res["step_ns"],
                                "host_ns": res.get("host_ns")})
                print(model, label, r, sorted(res["step_ns"])[len(res["step_ns"]) // 2], flush=True)
        with open(os.path.join(out, "overhead.json"), "w") as f:  # after every round: a cut-short run keeps its rounds
            json.dump(results, f)


if __name__ == "__main__":
    main()
