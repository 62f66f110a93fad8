"""On-demand windows of a running GPU program (docs/profile.md "Capture", BENCHMARKS.md "Windows of a running
program"): runs scripts/gpu/window_server.py under `xsp profile --signal --trace-level kernel`, opens and closes
collection ROUNDS times from outside (`xsp profile --start PID`, then `--stop PID` WINDOW_S later, which stores the
window as an evaluation while the program runs on), and reports per window: the time `--stop` took, the steps and
kernels the window holds, and the steps of the program that overlapped the stop (did the stop stall it?) against the
median step. Writes OUT/windows.json.
  python3 scripts/gpu/profile_window.py XSP OUT [ROUNDS] [WINDOW_S] [TRACE_LEVEL]
TRACE_LEVEL is kernel by default; hardware makes each window a counter run (kernel replay inside the window).
"""
import json
import os
import statistics
import subprocess
import sys
import time

xsp, out = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
window_s = float(sys.argv[4]) if len(sys.argv) > 4 else 3.0
level = sys.argv[5] if len(sys.argv) > 5 else "kernel"
os.makedirs(out, exist_ok=True)
db = os.path.join(out, "windows.db")
steps_json = os.path.join(out, "steps.json")
here = os.path.dirname(os.path.abspath(__file__))
duration = 20 + rounds * (window_s + 3) + 4
server = subprocess.Popen([xsp, "--store", db, "profile", "--signal", "--trace-level", level, "--", "python3",
                           os.path.join(here, "window_server.py"), str(duration), steps_json],
                          stdout=open(os.path.join(out, "server.out"), "w"),
                          stderr=open(os.path.join(out, "server.err"), "w"))
windows = []
for r in range(rounds):
    # The first start waits for the program to load the library (its first NVTX or CUDA call), at most 120 s.
    for attempt in range(240 if r == 0 else 1):
        start = subprocess.run([xsp, "--store", db, "profile", "--start", str(server.pid)], capture_output=True,
                               text=True)
        if start.returncode == 0:
            break
        time.sleep(0.5)
    time.sleep(window_s)
    t0 = time.monotonic_ns()
    stop = subprocess.run([xsp, "--store", db, "profile", "--stop", str(server.pid)], capture_output=True, text=True)
    t1 = time.monotonic_ns()
    ident = ""
    for line in stop.stdout.splitlines():
        if line.startswith("window evaluation "):
            ident = line.split()[2]
    windows.append({"round": r, "start_rc": start.returncode, "stop_rc": stop.returncode, "stop_sent_ns": t0,
                    "stop_done_ns": t1, "stop_ms": (t1 - t0) / 1e6, "id": ident, "stop_out": stop.stdout,
                    "stop_err": stop.stderr[-2000:]})
    time.sleep(3)
rc = server.wait()
steps = json.load(open(steps_json))
durations = [(e - s) / 1e6 for s, e in steps]
median = statistics.median(durations)
def steps_in(lo, hi):
    return [(e - s) / 1e6 for s, e in steps if s >= lo and e <= hi]


for w in windows:
    # Side by side: the steps while collecting (the window's last 2.5 s but its final 0.5 s), the steps of the stop's
    # first second, and those of the 1.5 s after it.
    t = w["stop_sent_ns"]
    for key, lo, hi in (("on", t - 2_500_000_000, t - 500_000_000), ("stop_first_s", t, t + 1_000_000_000),
                        ("after", t + 1_000_000_000, t + 2_500_000_000)):
        x = steps_in(lo, hi)
        w["steps_" + key] = {"n": len(x), "median_ms": statistics.median(x) if x else None,
                             "max_ms": max(x) if x else None}
for w in windows:
    # Steps that overlap the stop's first second (the settle, flush and write happen then, on the library's thread).
    lo, hi = w["stop_sent_ns"], w["stop_sent_ns"] + 1_000_000_000
    around = [(e - s) / 1e6 for s, e in steps if e > lo and s < hi]
    w["steps_around_stop"] = len(around)
    w["max_step_around_stop_ms"] = max(around) if around else None
    w["median_step_around_stop_ms"] = statistics.median(around) if around else None
    if w["id"]:
        trace = os.path.join(out, "w%d.json" % w["round"])
        subprocess.run([xsp, "--store", db, "trace", "export", w["id"], "--format", "chrome", "-o", trace])
        try:
            events = json.load(open(trace))
            events = events["traceEvents"] if isinstance(events, dict) else events
            cats = {}
            for e in events:
                if e.get("ph") == "X":
                    cats[e.get("cat", "")] = cats.get(e.get("cat", ""), 0) + 1
            w["events_by_category"] = cats
            w["steps"] = sum(1 for e in events if e.get("ph") == "X" and e.get("name") == "step")
        except Exception as err:  # noqa: BLE001 - reported, not fatal
            w["export_error"] = str(err)
        os.remove(trace)
    show = subprocess.run([xsp, "--store", db, "show", w["id"]], capture_output=True, text=True)
    w["show"] = show.stdout[-4000:]
listing = subprocess.run([xsp, "--store", db, "list"], capture_output=True, text=True).stdout
result = {"server_rc": rc, "median_step_ms": median, "steps": len(durations),
          "p99_step_ms": sorted(durations)[int(0.99 * (len(durations) - 1))], "windows": windows, "list": listing}
json.dump(result, open(os.path.join(out, "windows.json"), "w"), indent=1)
for w in windows:
    print("window", w["round"], "stop", round(w["stop_ms"], 1), "ms; steps", w.get("steps"), "cats",
          w.get("events_by_category"), "around stop: n", w["steps_around_stop"], "max",
          w["max_step_around_stop_ms"], "median", w["median_step_around_stop_ms"], "side by side",
          w["steps_on"], w["steps_stop_first_s"], w["steps_after"])
print("median step", median, "ms over", len(durations), "steps; p99", result["p99_step_ms"], "; server rc", rc)
