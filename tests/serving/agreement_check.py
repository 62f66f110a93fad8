#!/usr/bin/env python3
"""CTest serving_agreement_fake_server: `xsp bench-serve` and the plain Python client (scripts/gpu/serve_client.py)
against the benchmark server's fake engine (scripts/gpu/serve_hf.py --fake-prefill-ms 20 --fake-decode-ms 5, no model,
no GPU) with its per-request log, compared by scripts/gpu/serve_agreement.py: every request of both clients is found in
the server's log by its traceparent trace id; a client that keeps connections alive (xsp bench-serve, serve_client.py
--keep-alive) sends every request of a concurrency-1 loop on one connection, one without (serve_client.py) each on
its own (the log's peer port); no token is read before the server stamped it (one clock,
CLOCK_MONOTONIC, on both sides); a client's TTFT holds the server's; each client's TPOT is the server's within 5%.

    agreement_check.py XSP_BINARY
Exit 0 on success, 1 with the failed checks; the server is started on a free loopback port and always stopped.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))
import serve_agreement  # noqa: E402

REQUESTS = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    xsp = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        port = free_port()
        url = f"http://127.0.0.1:{port}/v1"
        log = tmp / "server_requests.jsonl"
        server = subprocess.Popen([sys.executable, str(ROOT / "scripts/gpu/serve_hf.py"), "--port", str(port),
                                   "--fake-prefill-ms", "20", "--fake-decode-ms", "5", "--request-log", str(log)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(url + "/models", timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                sys.exit(f"agreement_check: the server did not answer on {url}: {server.stderr.read()[-500:]!r}")
            env = dict(os.environ, XSP_STORE=str(tmp / "xsp.db"))
            subprocess.run([xsp, "bench-serve", "--url", url, "--model", "llama-bench", "--synthetic",
                            "--prompt-tokens", "16:16", "--output-tokens", "16", "--max-concurrency", "1",
                            "--num-requests", str(REQUESTS)], env=env, check=True, timeout=120,
                           stdout=subprocess.DEVNULL)
            for name, extra in (("py.json", []), ("py_keepalive.json", ["--keep-alive"])):
                client = subprocess.run([sys.executable, str(ROOT / "scripts/gpu/serve_client.py"), "--url", url,
                                         "--model", "llama-bench", "--max-concurrency", "1", "--requests",
                                         str(REQUESTS), "--prompt-words", "16", "--output-tokens", "16"] + extra,
                                        check=True, timeout=120, capture_output=True, text=True)
                (tmp / name).write_text(client.stdout)
        finally:
            server.terminate()
            server.wait(timeout=10)
        srv = {}
        for line in log.read_text().splitlines():
            r = json.loads(line)
            srv[r["trace_id"]] = r
        if len(srv) != 3 * REQUESTS:
            failures.append(f"the server logged {len(srv)} requests with distinct trace ids, {3 * REQUESTS} expected")
        runs = serve_agreement.xsp_runs(str(tmp / "xsp.db")) + serve_agreement.python_runs(
            [str(tmp / "py.json"), str(tmp / "py_keepalive.json")])
        expected = [(c, "concurrency 1") for c in ("xsp", "python", "python keep-alive")]
        if [kind for _, kind, _ in runs] != expected:
            failures.append(f"runs {[kind for _, kind, _ in runs]}, expected {expected}")
        for label, (kind, _), rows in runs:
            ports = {srv[t]["peer_port"] for t, _, _ in rows if t in srv}
            connections = REQUESTS if kind == "python" else 1
            if len(ports) != connections:
                failures.append(f"{label}: {len(ports)} connections for {REQUESTS} requests, {connections} expected")
            f = serve_agreement.run_figures(label, rows, srv)
            if f is None or f["requests"] != REQUESTS or f["unmatched"]:
                failures.append(f"{label}: {f and f['requests']} requests matched, {f and f['unmatched']} not; "
                                f"{REQUESTS} expected")
                continue
            print(f"{label}: TTFT {f['ttft_client_ms']:.3f} / {f['ttft_server_ms']:.3f} ms, TPOT "
                  f"{f['tpot_client_ms']:.3f} / {f['tpot_server_ms']:.3f} ms, delivery min {f['delivery_min_us']:.0f} us")
            if f["delivery_min_us"] < 0:
                failures.append(f"{label}: a token read {-f['delivery_min_us']:.0f} us before the server stamped it")
            if f["ttft_ratio"] < 0:
                failures.append(f"{label}: client TTFT {f['ttft_client_ms']:.3f} ms under the server's "
                                f"{f['ttft_server_ms']:.3f} ms")
            if abs(f["tpot_ratio"]) > 0.05:
                failures.append(f"{label}: TPOT {f['tpot_client_ms']:.3f} ms vs the server's {f['tpot_server_ms']:.3f}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
