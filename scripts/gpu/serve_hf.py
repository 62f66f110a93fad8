#!/usr/bin/env python3
"""A small OpenAI-compatible streaming server around a Hugging Face decoder, written for XSP's serving benchmark only
(issue 27, BENCHMARKS.md "Serving engines"); not a serving engine.

    python3 scripts/gpu/serve_hf.py --port 8000 [--layers 8 --hidden 1024 --heads 16 --kv-heads 4] [--max-batch 8]

What it serves: POST /v1/completions with "stream": true (Server-Sent Events, one chunk per generated token, then a
chunk with "usage" when stream_options.include_usage, then "data: [DONE]"), and without streaming one JSON answer;
GET /v1/models. The model is a Llama-architecture LlamaForCausalLM with random weights from its config (no download:
the lent machine has no internet), bf16 on the GPU, greedy decoding with a DynamicCache.

What it batches: static batching. One engine thread takes up to --max-batch waiting requests, runs their prefill as
one left-padded batch, then decodes the batch step by step until every request of it has its max_tokens (EOS is
never a stop: random weights; "ignore_eos" is accepted and changes nothing); requests arriving meanwhile wait for the
next batch. Each prefill and decode step is an NVTX range ("prefill", "decode_step"), which is what `xsp profile`
records as the server's steps.

Tokens: there is no tokenizer on the machine, so a prompt's tokens are its whitespace-separated words, each mapped
to an id by a stable hash; a generated token id t is sent as the text " t<id>". usage.prompt_tokens and
usage.completion_tokens are exact for that scheme.

--request-log FILE: one JSON line per streamed request, for checking clients against the server's own times
(scripts/gpu/serve_agreement.py): the `traceparent` trace id, received_ns (the request read), token_ns (just before
each token's chunk is written) and peer_port (the client's port: one per connection), on CLOCK_MONOTONIC, the clock of
xsp bench-serve and serve_client.py.

--fake-prefill-ms P --fake-decode-ms D: no model and no GPU; the engine sleeps P ms per prefill and D ms per decode
step of a batch and generates token ids from a counter (the same batching and HTTP), for checking clients on a machine
without a GPU.
"""
import argparse
import json
import queue
import socket
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Request:
    def __init__(self, prompt_ids, max_tokens):
        self.prompt_ids = prompt_ids
        self.max_tokens = max_tokens
        self.tokens = queue.Queue()  # generated ids, then None at the end


class FakeModel:
    """Stands in for the model with --fake-prefill-ms/--fake-decode-ms: sleeps, then gives each sequence an id."""

    def __init__(self, prefill_ms, decode_ms):
        self.prefill_s, self.decode_s, self.next = prefill_ms / 1e3, decode_ms / 1e3, 4

    def step(self, rows, prefill):
        time.sleep(self.prefill_s if prefill else self.decode_s)
        self.next += 1
        return [self.next + i for i in range(rows)]


class Engine(threading.Thread):
    def __init__(self, args):
        super().__init__(daemon=True)
        self.vocab = args.vocab
        self.max_batch = args.max_batch
        self.waiting = queue.Queue()
        self.batches = 0
        self.fake = FakeModel(args.fake_prefill_ms, args.fake_decode_ms) if args.fake_decode_ms is not None else None
        if self.fake:
            return
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
        torch.manual_seed(0)
        config = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=4 * args.hidden,
                             num_hidden_layers=args.layers, num_attention_heads=args.heads,
                             num_key_value_heads=args.kv_heads, max_position_embeddings=4096)
        self.model = LlamaForCausalLM(config).to("cuda", torch.bfloat16).eval()

    def token_ids(self, text):
        return [4 + zlib.crc32(w.encode()) % (self.vocab - 4) for w in text.split()] or [1]

    def next_batch(self):
        batch = [self.waiting.get()]
        while len(batch) < self.max_batch:
            try:
                batch.append(self.waiting.get_nowait())
            except queue.Empty:
                break
        self.batches += 1
        return batch

    def run(self):
        if self.fake:
            return self.run_fake()
        import torch
        nvtx = torch.cuda.nvtx
        while True:
            batch = self.next_batch()
            with torch.inference_mode():
                longest = max(len(r.prompt_ids) for r in batch)
                ids = torch.tensor([[0] * (longest - len(r.prompt_ids)) + r.prompt_ids for r in batch], device="cuda")
                mask = torch.tensor([[0] * (longest - len(r.prompt_ids)) + [1] * len(r.prompt_ids) for r in batch],
                                    device="cuda")
                nvtx.range_push("prefill")
                out = self.model(input_ids=ids, attention_mask=mask, use_cache=True)
                token = out.logits[:, -1].argmax(-1, keepdim=True)
                host = token.flatten().tolist()
                nvtx.range_pop()
                past = out.past_key_values
                for r, t in zip(batch, host):
                    r.tokens.put(t)
                steps = max(r.max_tokens for r in batch)
                for step in range(1, steps):
                    mask = torch.cat([mask, torch.ones((len(batch), 1), dtype=mask.dtype, device="cuda")], dim=1)
                    nvtx.range_push("decode_step")
                    out = self.model(input_ids=token, attention_mask=mask, past_key_values=past, use_cache=True)
                    token = out.logits[:, -1].argmax(-1, keepdim=True)
                    host = token.flatten().tolist()
                    nvtx.range_pop()
                    past = out.past_key_values
                    for r, t in zip(batch, host):
                        if step < r.max_tokens:
                            r.tokens.put(t)
                for r in batch:
                    r.tokens.put(None)

    def run_fake(self):
        while True:
            batch = self.next_batch()
            for step in range(max(r.max_tokens for r in batch)):
                ids = self.fake.step(len(batch), step == 0)
                for r, t in zip(batch, ids):
                    if step < r.max_tokens:
                        r.tokens.put(t)
            for r in batch:
                r.tokens.put(None)


def make_handler(engine, model_name, log=None):
    log_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def setup(self):
            super().setup()
            # Each token is a small write after the headers: without TCP_NODELAY, Nagle holds it until the client's
            # delayed ACK (up to 40 ms on a kept-alive connection), as serving engines' HTTP servers avoid.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                return self.answer(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})
            self.answer(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            received = time.monotonic_ns()
            if self.path.rstrip("/") != "/v1/completions":
                return self.answer(404, {"error": {"message": f"no route {self.path}"}})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                prompt = body["prompt"]
                max_tokens = int(body.get("max_tokens", 16))
                if not isinstance(prompt, str) or max_tokens < 1:
                    raise ValueError("prompt must be a string and max_tokens >= 1")
            except (ValueError, KeyError, TypeError) as e:
                return self.answer(400, {"error": {"message": f"bad request: {e}"}})
            req = Request(engine.token_ids(prompt), max_tokens)
            engine.waiting.put(req)
            rid = "cmpl-" + uuid.uuid4().hex[:16]
            created = int(time.time())
            if not body.get("stream"):
                ids = []
                while (t := req.tokens.get()) is not None:
                    ids.append(t)
                return self.answer(200, {"id": rid, "object": "text_completion", "created": created,
                                         "model": model_name,
                                         "choices": [{"index": 0, "text": "".join(f" t{t}" for t in ids),
                                                      "finish_reason": "length"}],
                                         "usage": {"prompt_tokens": len(req.prompt_ids),
                                                   "completion_tokens": len(ids),
                                                   "total_tokens": len(req.prompt_ids) + len(ids)}})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def send(payload):
                data = f"data: {payload}\n\n".encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            n = 0
            token_ns = []
            while (t := req.tokens.get()) is not None:
                n += 1
                token_ns.append(time.monotonic_ns())  # before the write: no client can read it earlier
                send(json.dumps({"id": rid, "object": "text_completion", "created": created, "model": model_name,
                                 "choices": [{"index": 0, "text": f" t{t}",
                                              "finish_reason": "length" if n == max_tokens else None}]}))
            if (body.get("stream_options") or {}).get("include_usage"):
                send(json.dumps({"id": rid, "object": "text_completion", "created": created, "model": model_name,
                                 "choices": [], "usage": {"prompt_tokens": len(req.prompt_ids),
                                                          "completion_tokens": n,
                                                          "total_tokens": len(req.prompt_ids) + n}}))
            send("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            if log is not None:
                parts = (self.headers.get("traceparent") or "").split("-")
                line = json.dumps({"trace_id": parts[1] if len(parts) == 4 else None, "received_ns": received,
                                   "token_ns": token_ns, "peer_port": self.client_address[1]}) + "\n"
                with log_lock:
                    log.write(line)
                    log.flush()

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--model-name", default="llama-bench")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--fake-prefill-ms", type=float, default=20.0, help="with --fake-decode-ms: no model (see above)")
    ap.add_argument("--fake-decode-ms", type=float, help="no model, no GPU: sleep this long per decode step")
    ap.add_argument("--request-log", help="append one JSON line per streamed request (see above)")
    args = ap.parse_args()
    engine = Engine(args)
    engine.start()
    log = open(args.request_log, "a", encoding="utf-8") if args.request_log else None
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(engine, args.model_name, log))
    print(f"serve_hf: listening on 127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
