#!/usr/bin/env python3
"""The attacks of issue 31 against a real `xsp serve` process, from outside (docs/server.md "Security").

Usage: tests/server/attacks.py XSP [--zoo DIR] [--report-only]

Starts XSP serve on 127.0.0.1 over a copy of the committed H200 ResNet-18 evaluation
(tests/fixtures/gpu/resnet18_bs1_kernel_h200.db) and the zoo (default: the source tree's models/), runs every attack
and prints one line per attack: HELD (the server refused or survived it) or BROKEN (what got through). Exits 1 when
any attack got through, unless --report-only (used to run the same attacks against an older build, BENCHMARKS.md
"Server security"). The image-folder attack runs when the zoo holds an exported resnet18 (CTest passes the test zoo).
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Server:
    def __init__(self, xsp, store, zoo):
        self.proc = subprocess.Popen([xsp, "--store", store, "--zoo", zoo, "serve", "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://[^ ]+) ", line)
        if not m:
            raise RuntimeError("the server did not start: " + line + self.proc.stderr.read())
        self.url = m.group(1)
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def request(self, method, path, body=None, headers=None, timeout=10):
        """(status, body text); status 0 when no answer came."""
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace")
        except (OSError, urllib.error.URLError):
            return 0, ""

    def raw(self, data, timeout=3.0):
        """What the server answers to raw bytes within `timeout` (b"" when nothing)."""
        s = socket.create_connection(("127.0.0.1", self.port))
        s.settimeout(timeout)
        out = b""
        try:
            s.sendall(data)
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                out += chunk
        except OSError:
            pass
        s.close()
        return out


def field_of(text):
    try:
        return json.loads(text)["error"].get("field", "")
    except (ValueError, KeyError, TypeError):
        return ""


def quick(model):
    return {"model": model, "batch_sizes": [1], "trace_level": "model",
            "inputs": {"synthetic": True}, "measurement": {"warmup_min_ms": 1, "warmup_max_ms": 1,
                                                           "min_duration_ms": 1, "min_batches": 1}}


def attacks(srv, model, tmp, image_model):
    results = []

    def report(name, held, detail):
        results.append((name, held, detail))

    # 1. files: an images folder outside the zoo and the data folders (the job would decode what it finds there)
    if image_model:
        outside = os.path.join(tmp, "outside-images")
        os.makedirs(outside, exist_ok=True)
        shutil.copy(os.path.join(SRC, "data", "images", sorted(os.listdir(os.path.join(SRC, "data", "images")))[0]),
                    outside)
        r = quick(image_model)
        r["inputs"] = {"images_dir": outside}
        st, text = srv.request("POST", "/api/v1/evaluations", json.dumps(r).encode(),
                               {"Content-Type": "application/json"})
        report("images folder outside the data folders", st == 400 and field_of(text) == "inputs.images_dir",
               "answered %d %s" % (st, field_of(text)))

    # 2. cross-site writes and DNS rebinding
    body = json.dumps(quick(model)).encode()
    st, _ = srv.request("POST", "/api/v1/evaluations", body,
                        {"Content-Type": "text/plain", "Origin": "http://evil.example"})
    report("text/plain POST from another origin", st in (403, 415), "answered %d" % st)
    st, _ = srv.request("POST", "/api/v1/jobs", body,
                        {"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example"})
    report("form POST from another origin", st in (403, 415), "answered %d" % st)
    st, text = srv.request("GET", "/api/v1/evaluations", headers={"Host": "evil.example"})
    report("foreign Host (DNS rebinding read)", st == 421, "answered %d" % st)

    # 4. sizes: a request line without end, 5,000 batch sizes, a comparison of one id 16 times
    out = srv.raw(b"GET /" + b"a" * (64 << 10))
    report("64 KiB request line", out.startswith(b"HTTP/1.1 414"), (out[:12] or b"no answer in 3 s").decode())
    r = quick(model)
    r["batch_sizes"] = list(range(1, 5001))
    st, text = srv.request("POST", "/api/v1/evaluations", json.dumps(r).encode(), {"Content-Type": "application/json"})
    report("5,000 batch sizes", st == 400 and field_of(text) == "batch_sizes", "answered %d %s" % (st, field_of(text)))
    r = quick(model)
    r["measurement"]["min_duration_ms"] = 31 * 365 * 24 * 3600 * 1000
    st, text = srv.request("POST", "/api/v1/evaluations", json.dumps(r).encode(), {"Content-Type": "application/json"})
    report("31-year min_duration_ms", st == 400 and field_of(text) == "measurement.min_duration_ms",
           "answered %d %s" % (st, field_of(text)))
    t0 = time.time()
    st, _ = srv.request("GET", "/api/v1/compare?ids=" + ",".join(["1"] * 16), timeout=60)
    report("compare one id 16 times", st == 400, "answered %d in %.1f s" % (st, time.time() - t0))

    # 7. client errors
    st, text = srv.request("POST", "/api/v1/evaluations", b'{"model": "\xff\xfe"}', {"Content-Type": "application/json"})
    report("invalid UTF-8 body", st == 400, "answered %d" % st)
    st, text = srv.request("POST", "/api/v1/evaluations", b'{"model": "x", "leveled": 1e400}',
                           {"Content-Type": "application/json"})
    report("1e400 in a body", st == 400, "answered %d" % st)
    st, text = srv.request("POST", "/api/v1/evaluations", json.dumps({"modle": model}).encode(),
                           {"Content-Type": "application/json"})
    report("unknown key", st == 400 and field_of(text) == "modle", "answered %d %s" % (st, field_of(text)))

    # 6. links planted where the server wrote its trace downloads (/tmp/xsp-serve-PID-N.json, through a temporary
    # FILE.tmp-PID that it removed and then opened): a racing local user re-creates the links until the server
    # follows one.
    victim = os.path.join(tmp, "victim.txt")
    with open(victim, "w") as f:
        f.write("untouched")
    pid, downloads = srv.proc.pid, 40
    names = []
    for n in range(downloads):
        base = os.path.join(tempfile.gettempdir(), "xsp-serve-%d-%d.json" % (pid, n))
        names += [base, base + ".tmp-%d" % pid]
    racing = threading.Event()

    def plant():
        while not racing.is_set():
            for name in names:
                try:
                    os.symlink(victim, name)
                except OSError:
                    pass

    racer = threading.Thread(target=plant)
    racer.start()
    statuses = set()
    for _ in range(downloads):
        st, _ = srv.request("GET", "/api/v1/evaluations/1/trace?format=chrome")
        statuses.add(st)
    racing.set()
    racer.join()
    for name in names:
        if os.path.islink(name):
            os.remove(name)
    with open(victim) as f:
        kept = f.read() == "untouched"
    report("links raced into the downloads' temporary names", kept, "downloads %s, victim %s" %
           (sorted(statuses), "untouched" if kept else "OVERWRITTEN"))

    # 3. slow clients: 32 connections trickling a header byte a second; a probe must be answered within 1 s
    stop = threading.Event()
    slow = []
    for _ in range(32):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"GET /api/v1/evaluations HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        slow.append(s)

    def trickle():
        while not stop.is_set():
            for s in slow:
                try:
                    s.sendall(b"a")
                except OSError:
                    pass
            stop.wait(1)

    t = threading.Thread(target=trickle)
    t.start()
    worst, failed = 0.0, 0
    for _ in range(10):
        t0 = time.time()
        st, _ = srv.request("GET", "/api/v1/evaluations", timeout=5)
        worst = max(worst, time.time() - t0)
        failed += st != 200
        time.sleep(0.3)
    stop.set()
    t.join()
    for s in slow:
        s.close()
    report("32 slow clients, probe answered within 1 s", failed == 0 and worst < 1.0,
           "%d of 10 probes failed, slowest %.2f s" % (failed, worst))
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("xsp")
    ap.add_argument("--zoo", default=os.path.join(SRC, "models"))
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="xsp-attacks-")
    try:
        store = os.path.join(tmp, "s.db")
        shutil.copy(os.path.join(SRC, "tests", "fixtures", "gpu", "resnet18_bs1_kernel_h200.db"), store)
        image_model = "resnet18" if os.path.exists(os.path.join(a.zoo, "resnet18.pt")) else None
        srv = Server(os.path.abspath(a.xsp), store, a.zoo)
        try:
            results = attacks(srv, "resnet18", tmp, image_model)
            alive = srv.proc.poll() is None
        finally:
            srv.stop()
        broken = 0
        for name, held, detail in results:
            print("%-7s %-50s %s" % ("HELD" if held else "BROKEN", name, detail))
            broken += not held
        print("server %s; %d of %d attacks got through" % ("alive" if alive else "DIED", broken, len(results)))
        if (broken or not alive) and not a.report_only:
            sys.exit(1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
