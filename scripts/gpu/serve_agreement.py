#!/usr/bin/env python3
"""Two clients' TTFT and TPOT against the server's own times for the same requests (issue 27, BENCHMARKS.md
"bench-serve client"): a check of the clients that a server drifting between rounds cannot blur.

    serve_agreement.py SERVER_LOG [--xsp-db STORE] [--python CLIENT_JSON ...]

SERVER_LOG: scripts/gpu/serve_hf.py --request-log (per request: traceparent trace id, received_ns, token_ns: just
before each token's chunk is written). STORE: an XSP SQLite store whose serving evaluations (xsp bench-serve) hold
per-request rows (settings.serving.requests: trace_id, sent_ns, token_ns). CLIENT_JSON: scripts/gpu/serve_client.py
outputs (per_request: trace_id, sent_ns, token_ns; runs with --keep-alive are a client of their own, "python
keep-alive"). All on CLOCK_MONOTONIC of one host.

Each client request is matched to the server's record by its trace id. Per request:
    client TTFT = first token read − request sent;  server TTFT = first token's write − request read
    client TPOT = (last − first token read) / (n − 1);  server TPOT = the same over the writes
    delivery = each token read − the same token's write (loopback, the client's wake-up and parsing; never
               negative, since the server stamps a chunk before writing it)
Per run (an evaluation or a client file) it prints the medians, client / server − 1, and the delivery's median and
p99; then, per client and offered load (a concurrency or a request rate), the median over its runs of client / server
− 1, and how far XSP's is from each other client's at the same load (the medians' ratio, and paired by round: the i-th
XSP run with the i-th run of the other client, which the benchmark runs next to it). Two clients agree to the extent
that these agree: each is measured against the server's behaviour on its own requests, so the server's drift between
rounds cancels.
"""
import argparse
import json
import sqlite3
import statistics
import sys


def percentile(xs, q):
    xs = sorted(xs)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def tpot(ts):
    return (ts[-1] - ts[0]) / (len(ts) - 1) if len(ts) > 1 else None


def run_figures(label, rows, server):
    """rows: (trace_id, sent_ns, token_ns) of one run's successful requests."""
    c_ttft, s_ttft, c_tpot, s_tpot, delivery, unmatched = [], [], [], [], [], 0
    for trace_id, sent, tokens in rows:
        srv = server.get(trace_id)
        if srv is None or not tokens or len(srv["token_ns"]) != len(tokens):
            unmatched += 1
            continue
        c_ttft.append(tokens[0] - sent)
        s_ttft.append(srv["token_ns"][0] - srv["received_ns"])
        if len(tokens) > 1:
            c_tpot.append(tpot(tokens))
            s_tpot.append(tpot(srv["token_ns"]))
        delivery.extend(c - s for c, s in zip(tokens, srv["token_ns"]))
    if not c_ttft:
        return None
    f = {"label": label, "requests": len(c_ttft), "unmatched": unmatched,
         "ttft_client_ms": statistics.median(c_ttft) / 1e6, "ttft_server_ms": statistics.median(s_ttft) / 1e6,
         "tpot_client_ms": statistics.median(c_tpot) / 1e6 if c_tpot else None,
         "tpot_server_ms": statistics.median(s_tpot) / 1e6 if s_tpot else None,
         "delivery_p50_us": percentile(delivery, 50) / 1e3, "delivery_p99_us": percentile(delivery, 99) / 1e3,
         "delivery_min_us": min(delivery) / 1e3}
    f["ttft_ratio"] = f["ttft_client_ms"] / f["ttft_server_ms"] - 1
    f["tpot_ratio"] = f["tpot_client_ms"] / f["tpot_server_ms"] - 1 if c_tpot else None
    return f


def load(request_rate, max_concurrency):
    """The offered load a run is compared under: "rate R/s" for open-loop arrivals, else "concurrency C"."""
    if isinstance(request_rate, (int, float)) and request_rate > 0:
        return f"rate {request_rate:g}/s"
    return f"concurrency {max_concurrency}"


def xsp_runs(db):
    """(label, (client, load), rows) of every serving evaluation in an XSP SQLite store."""
    con = sqlite3.connect(db)
    out = []
    for eid, settings in con.execute("SELECT id, settings FROM evaluations WHERE scenario = 'serving' ORDER BY id"):
        serving = json.loads(settings).get("serving", {})
        options = serving.get("options", {})
        out.append((f"xsp evaluation {eid}", ("xsp", load(options.get("request_rate"), options.get("max_concurrency"))),
                    [(r.get("trace_id"), r["sent_ns"], r["token_ns"]) for r in serving.get("requests", [])
                     if r.get("ok")]))
    return out


def python_runs(paths):
    out = []
    for p in paths:
        d = json.load(open(p, encoding="utf-8"))
        if "per_request" not in d:
            sys.exit(f"serve_agreement: {p} has no per_request (a serve_client.py older than its trace ids)")
        client = "python keep-alive" if d.get("keep_alive") else "python"
        kind = (client, load(d.get("request_rate"), d.get("max_concurrency")))
        out.append((f"{client} {p}", kind, [(r["trace_id"], r["sent_ns"], r["token_ns"]) for r in d["per_request"]
                                                if not r.get("error") and r.get("token_ns")]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("server_log")
    ap.add_argument("--xsp-db")
    ap.add_argument("--python", nargs="*", default=[])
    args = ap.parse_args()
    server = {}
    with open(args.server_log, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"serve_agreement: {args.server_log}:{n}: not JSON ({e})")
            if r.get("trace_id"):
                server[r["trace_id"]] = r
    runs = (xsp_runs(args.xsp_db) if args.xsp_db else []) + python_runs(args.python)
    figures = {}
    print("| run | requests (unmatched) | TTFT client / server ms | client/server − 1 | TPOT client / server ms | "
          "client/server − 1 | delivery p50 / p99 / min µs |")
    print("|---|---|---|---|---|---|---|")
    for label, kind, rows in runs:
        f = run_figures(label, rows, server)
        if f is None:
            print(f"| {label} | 0 ({len(rows)}) | | | | | |")
            continue
        figures.setdefault(kind, []).append(f)
        print(f"| {label} | {f['requests']} ({f['unmatched']}) | {f['ttft_client_ms']:.3f} / {f['ttft_server_ms']:.3f} "
              f"| {f['ttft_ratio'] * 100:+.2f}% | {f['tpot_client_ms']:.3f} / {f['tpot_server_ms']:.3f} | "
              f"{f['tpot_ratio'] * 100:+.2f}% | {f['delivery_p50_us']:.0f} / {f['delivery_p99_us']:.0f} / "
              f"{f['delivery_min_us']:.0f} |")
    print()
    for (client, where), fs in figures.items():
        for key in ("ttft_ratio", "tpot_ratio"):
            xs = [f[key] for f in fs if f[key] is not None]
            print(f"{client} at {where}: {key[:4].upper()} client/server − 1 over {len(xs)} runs: median "
                  f"{statistics.median(xs) * 100:+.2f}% ({min(xs) * 100:+.2f}…{max(xs) * 100:+.2f})")
    for (client, where) in figures:
        if client == "xsp" or ("xsp", where) not in figures:
            continue
        for key in ("ttft_ratio", "tpot_ratio"):
            a, b = (statistics.median(f[key] for f in figures[(c, where)] if f[key] is not None)
                    for c in ("xsp", client))
            print(f"{key[:4].upper()} at {where}: xsp vs {client} differ by {((1 + a) / (1 + b) - 1) * 100:+.2f}% "
                  "on the server's own times")
            # Rounds run in turn (xsp, then the other client): the i-th of each is a pair under the same server state.
            pairs = [(x[key], y[key]) for x, y in zip(figures[("xsp", where)], figures[(client, where)])
                     if x[key] is not None and y[key] is not None]
            if len(pairs) > 1:
                d = sorted(((1 + x) / (1 + y) - 1) * 100 for x, y in pairs)
                print(f"{key[:4].upper()} at {where}: xsp vs {client} paired by round over {len(d)} pairs: median "
                      f"{statistics.median(d):+.2f}% ({d[0]:+.2f}…{d[-1]:+.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
