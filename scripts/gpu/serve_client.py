#!/usr/bin/env python3
"""A plain Python streaming client: the reference `xsp bench-serve`'s TTFT/TPOT are compared with (issue 27,
BENCHMARKS.md "Serving engines"). Standard library only (http.client, threads), nothing of XSP.

    python3 scripts/gpu/serve_client.py --url http://127.0.0.1:8000/v1 --model NAME --request-rate 4 \
        --requests 200 --prompt-words 256 --output-tokens 64 [--seed 0] > client.json

Requests arrive as a Poisson process at --request-rate (exponential gaps from random.Random(seed)), each on its own
thread, or (--max-concurrency C) in a closed loop of C clients: POST /completions with "stream": true, "max_tokens" =
"min_tokens" = --output-tokens, "ignore_eos": true, stream_options.include_usage. Per request: TTFT = first chunk
carrying text − request sent, TPOT = (last − first) / (chunks − 1), ITL = each gap between chunks; times from
time.monotonic_ns() right after the chunk's line is read.
--keep-alive: connections are kept open and reused (a pool of idle ones, so a closed loop of C clients uses C),
as xsp bench-serve, vLLM's and SGLang's clients do; without it each request opens its own connection, whose set-up
then counts in TTFT.
Every request carries a `traceparent` with a fresh random trace id (as xsp bench-serve's), which a server log can name
(serve_hf.py --request-log; scripts/gpu/serve_agreement.py matches them).
Prints one JSON object: summaries (median, p90, p99, mean) of TTFT, TPOT, ITL and E2E in ns, failures, and
per_request: each request's trace_id, sent_ns and token_ns (CLOCK_MONOTONIC).
"""
import argparse
import http.client
import json
import queue
import random
import statistics
import sys
import threading
import time
import urllib.parse


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(xs):
    if not xs:
        return None
    return {"median": percentile(xs, 50), "p90": percentile(xs, 90), "p99": percentile(xs, 99),
            "mean": statistics.fmean(xs), "n": len(xs)}


def one(url, model, prompt, output_tokens, out, trace_id, pool=None):
    """One streamed request; pool: a queue.LifoQueue of idle kept-alive connections, or None for a fresh one."""
    u = urllib.parse.urlparse(url)
    out["trace_id"] = trace_id
    try:
        conn = pool.get_nowait() if pool is not None else None
    except queue.Empty:
        conn = None
    conn = conn or http.client.HTTPConnection(u.hostname, u.port or 80, timeout=600)
    reusable = False
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": output_tokens, "min_tokens": output_tokens,
                       "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}})
    try:
        sent = time.monotonic_ns()
        conn.request("POST", u.path.rstrip("/") + "/completions", body,
                     {"Content-Type": "application/json", "traceparent": f"00-{trace_id}-{'0' * 15}1-01"})
        resp = conn.getresponse()
        if resp.status != 200:
            out["error"] = f"HTTP {resp.status}"
            return
        tokens = []
        while True:
            line = resp.readline()
            if not line:
                break
            now = time.monotonic_ns()
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            chunk = json.loads(data)
            if any(c.get("text") for c in chunk.get("choices", [])):
                tokens.append(now)
            if chunk.get("usage"):
                out["usage"] = chunk["usage"]
        out.update({"sent_ns": sent, "token_ns": tokens})
        if pool is not None:
            resp.read()  # the chunked body's end, so that the connection can carry the next request
            reusable = not resp.will_close
    except Exception as e:  # a failed request is counted with its reason, the run goes on
        out["error"] = repr(e)
    finally:
        if reusable:
            pool.put(conn)
        else:
            conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--request-rate", type=float, help="Poisson arrivals at this rate (requests/s)")
    ap.add_argument("--max-concurrency", type=int, help="without --request-rate: a closed loop of this many "
                    "clients, each sending its next request when its last one ended (as xsp bench-serve's)")
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--prompt-words", type=int, default=256)
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep-alive", action="store_true", help="reuse connections (see above)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    ids = random.Random()  # trace ids differ between runs, whatever the seed

    def trace_id():
        return f"{ids.getrandbits(128):032x}"

    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    if (args.request_rate is None) == (args.max_concurrency is None):
        sys.exit("serve_client: give --request-rate or --max-concurrency")
    results, threads = [], []
    pool = queue.LifoQueue() if args.keep_alive else None
    start = time.monotonic_ns()
    due = start
    if args.max_concurrency:
        prompts = [" ".join(rng.choice(words) for _ in range(args.prompt_words)) for _ in range(args.requests)]
        lock = threading.Lock()

        def worker():
            while True:
                with lock:
                    if len(results) == args.requests:
                        return
                    out = {}
                    results.append(out)
                    prompt = prompts[len(results) - 1]
                one(args.url, args.model, prompt, args.output_tokens, out, trace_id(), pool)

        threads = [threading.Thread(target=worker) for _ in range(args.max_concurrency)]
        for t in threads:
            t.start()
    for _ in range(args.requests if not args.max_concurrency else 0):
        due += int(rng.expovariate(args.request_rate) * 1e9)
        while (wait := due - time.monotonic_ns()) > 0:
            time.sleep(wait / 1e9)
        prompt = " ".join(rng.choice(words) for _ in range(args.prompt_words))
        out = {}
        results.append(out)
        t = threading.Thread(target=one, args=(args.url, args.model, prompt, args.output_tokens, out, trace_id(),
                                               pool))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    ttft, tpot, itl, e2e, failed = [], [], [], [], {}
    for r in results:
        if "error" in r or not r.get("token_ns"):
            failed[r.get("error", "no tokens")] = failed.get(r.get("error", "no tokens"), 0) + 1
            continue
        ts = r["token_ns"]
        ttft.append(ts[0] - r["sent_ns"])
        e2e.append(ts[-1] - r["sent_ns"])
        if len(ts) > 1:
            tpot.append((ts[-1] - ts[0]) / (len(ts) - 1))
            itl.extend(b - a for a, b in zip(ts, ts[1:]))
    json.dump({"url": args.url, "request_rate": args.request_rate, "max_concurrency": args.max_concurrency,
               "requests": args.requests, "keep_alive": args.keep_alive,
               "duration_s": (time.monotonic_ns() - start) / 1e9, "ttft_ns": summary(ttft), "tpot_ns": summary(tpot),
               "itl_ns": summary(itl), "e2e_ns": summary(e2e), "failed": failed,
               "per_request": [{k: r.get(k) for k in ("trace_id", "sent_ns", "token_ns", "error")} for r in results]},
              sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
