"""Hardware counters of a program XSP does not run (`xsp profile --trace-level hardware`, docs/profile.md "Hardware
counters"), checked on a GPU against Nsight Compute on the same program (BENCHMARKS.md). Runs
scripts/gpu/profile_ops.py (eager PyTorch under emit_nvtx, one "step" range per step, warm-up steps outside it):

  fixture/       the part of a 1-step counter run of ResNet-50 (the variables `xsp profile` sets, capture nvtx:step):
                 the fixture of tests/unit/profile (joined there with the 3-step kernel-level part of the same program)
  dump/          the raw ranges of that run (XSP_DUMP_COUNTERS), compared kernel by kernel with ncu
  compare.json   scripts/gpu/ncu_compare.py of the two: per counter, kernels within 1%, and the FLOP totals
  times.json     wall time of the whole program, ROUNDS rounds alternating: no tool; XSP's counter run; ncu with the
                 same metrics on the same step range (--nvtx --nvtx-include step/)
  e2e/           `xsp profile --trace-level hardware --capture nvtx:step` through the xsp binary: show, analyze A8, A9
Usage: python3 scripts/gpu/profile_hardware.py XSP INJECT_LIBRARY SELFTEST OUT [ROUNDS] [MODEL] [all|times]
  SELFTEST: xsp_counter_selftest (its --metrics lists the metrics XSP's counters need, given to ncu as they are)
  times: the timing rounds only (times.json), no fixture, comparison or e2e
"""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = os.path.join(HERE, "profile_ops.py")
NCU_COMPARE = os.path.join(HERE, "ncu_compare.py")


def timed(cmd, env=None, stdout=None, timeout=300):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stderr.write(f"{cmd[:3]}... exit {p.returncode}: {p.stderr[-3000:]}\n")
    return p, wall


def counter_env(inject, parts, dump=None):
    env = dict(os.environ)
    env.update({
        "NVTX_INJECTION64_PATH": inject,
        "CUDA_INJECTION64_PATH": inject,
        "XSP_PROFILE_TRACE_LEVEL": "hardware",
        "XSP_PROFILE_DIR": parts,
        "XSP_CAPTURE_RANGE": "step",
    })
    if dump:
        env["XSP_DUMP_COUNTERS"] = dump
    os.makedirs(parts, exist_ok=True)
    return env


def main():
    xsp, inject, selftest, out = (os.path.abspath(a) for a in sys.argv[1:5])
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    model = sys.argv[6] if len(sys.argv) > 6 else "resnet50"
    times_only = len(sys.argv) > 7 and sys.argv[7] == "times"
    os.makedirs(out, exist_ok=True)
    py = sys.executable
    metrics = subprocess.run([selftest, "--metrics"], capture_output=True, text=True).stdout.strip()
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    times = {"none": [], "xsp-hardware": [], "ncu": []}
    ncu_csv = os.path.join(out, "ncu.csv")
    for r in range(rounds):
        order = ["none", "xsp-hardware", "ncu"] if r % 2 == 0 else ["ncu", "xsp-hardware", "none"]
        for what in order:
            if what == "none":
                p, wall = timed([py, OPS, model, "nvtx", "1"])
            elif what == "xsp-hardware":
                first = r == 0 and not times_only
                parts = os.path.join(out, "fixture" if first else f"parts{r}")
                env = counter_env(inject, parts, os.path.join(out, "dump") if first else None)
                p, wall = timed([py, OPS, model, "nvtx", "1"], env=env)
                if first:
                    with open(os.path.join(out, "counter_run.err"), "w") as f:
                        f.write(p.stderr)
                else:
                    shutil.rmtree(parts, ignore_errors=True)
            else:
                cmd = [ncu, "--metrics", metrics, "--clock-control", "none", "--nvtx", "--nvtx-include", "step/", "--csv", "--page", "raw",
                       "--print-units", "base", py, OPS, model, "plain", "1"]
                p, wall = timed(cmd, timeout=500)
                if r == 0 and not times_only:
                    lines = p.stdout.splitlines()
                    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), len(lines))
                    with open(ncu_csv, "w") as f:
                        f.write("\n".join(lines[start:]) + "\n")
            times[what].append({"round": r, "wall_s": round(wall, 3), "exit": p.returncode})
            print(what, r, round(wall, 2), p.returncode, flush=True)
    with open(os.path.join(out, "times.json"), "w") as f:
        json.dump(times, f, indent=1)
    if times_only:
        return
    dumps = sorted(os.listdir(os.path.join(out, "dump"))) if os.path.isdir(os.path.join(out, "dump")) else []
    if dumps:
        c = subprocess.run([py, NCU_COMPARE, os.path.join(out, "dump", dumps[0]), ncu_csv, "--label", model],
                           capture_output=True, text=True)
        with open(os.path.join(out, "compare.json"), "w") as f:
            f.write(c.stdout + c.stderr)

    e2e = os.path.join(out, "e2e")
    os.makedirs(e2e, exist_ok=True)
    db = os.path.join(e2e, "e2e.db")
    p, wall = timed([xsp, "--store", db, "profile", "--inject-library", inject, "--trace-level", "hardware",
                     "--capture", "nvtx:step", "--sample-range", "step", "--", py, OPS, model, "nvtx", "1"], timeout=400)
    with open(os.path.join(e2e, "profile.err"), "w") as f:
        f.write(f"exit {p.returncode} wall {wall:.1f} s\n{p.stderr}")
    for name, args in (("show.txt", ["show", "1"]), ("a8.txt", ["analyze", "1", "--analysis", "A8"]),
                       ("a9.json", ["analyze", "1", "--analysis", "A9,A15", "--format", "json"])):
        with open(os.path.join(e2e, name), "w") as f:
            subprocess.run([xsp, "--store", db, *args], stdout=f, stderr=subprocess.STDOUT, timeout=120)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)


if __name__ == "__main__":
    main()
