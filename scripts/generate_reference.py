#!/usr/bin/python3
"""Reference greedy generation loop in plain PyTorch: the baseline XSP's own TTFT/TPOT are compared against.

Loads a GPT-2 TorchScript file of scripts/export_zoo.py (gpt2_tiny.pt, gpt2_small.pt, ...) and runs R requests of
B sequences, each: t0, init_cache, prefill, argmax on the device, the token copied to the host (the sync point:
the first token is out), then N-1 decode steps, each followed by argmax and the copy to the host. Per request
    TTFT = first token on the host - t0
    TPOT = (last token on the host - first token on the host) / (N - 1)
(docs/generation.md: vLLM's and MLPerf's definitions). Times from time.perf_counter_ns(). Nothing else runs in the
loop: torch.inference_mode(), no profiler, no logging; W warm-up requests first, not recorded.

Prompts: the first B prompts of gpt2_prompts.txt (next to the model unless --prompts) with at least T tokens,
tokenized with the Python SentencePiece (python3-sentencepiece) and gpt2_tokenizer.model, bos first, cut to T
tokens (as xsp::tokenize_prompts); or, with --synthetic, ids drawn from torch.Generator().manual_seed(--seed).
The same B prompts are used by every request.

    scripts/generate_reference.py models/gpt2_small.pt --device cuda --dtype fp16 --batch 8 \
        --prompt-tokens 128 --output-tokens 128 --requests 50 --warmup 5 > ref.json

Prints one JSON object: the settings, TTFT and TPOT summaries in ns (median, p90, p99, mean; percentiles by
linear interpolation, as NumPy), output tokens/s (B*N*R over the recorded requests' summed wall time) and the
per-request lists.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def percentile(values, q):
    """Linear interpolation between closest ranks (NumPy's default), q in [0, 100]."""
    xs = sorted(values)
    if len(xs) == 1:
        return float(xs[0])
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(values):
    if not values:
        return None
    return {"median": percentile(values, 50), "p90": percentile(values, 90), "p99": percentile(values, 99),
            "mean": statistics.fmean(values), "min": min(values), "max": max(values)}


def prompt_ids(args, model_vocab):
    import torch

    if args.synthetic:
        gen = torch.Generator().manual_seed(args.seed)
        return torch.randint(4, min(model_vocab, 2000), (args.batch, args.prompt_tokens), generator=gen), None
    import sentencepiece

    folder = args.model.parent
    tokenizer = args.tokenizer or folder / "gpt2_tokenizer.model"
    prompts = args.prompts or folder / "gpt2_prompts.txt"
    sp = sentencepiece.SentencePieceProcessor(model_file=str(tokenizer))
    rows, too_short = [], 0
    for line in prompts.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        ids = [sp.bos_id()] + sp.encode(line)
        if len(ids) < args.prompt_tokens:
            too_short += 1
            continue
        rows.append(ids[:args.prompt_tokens])
        if len(rows) == args.batch:
            break
    if len(rows) < args.batch:
        sys.exit(f"generate_reference: only {len(rows)} prompts of {prompts} have {args.prompt_tokens} tokens; "
                 f"{args.batch} needed")
    return torch.tensor(rows, dtype=torch.int64), {"tokenizer": str(tokenizer), "prompts": str(prompts),
                                                   "too_short_skipped": too_short}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", type=Path, help="GPT-2 TorchScript file (scripts/export_zoo.py), or an AOTInductor "
                    "package .pt2 of a Hugging Face static-cache export (scripts/export_hf.py)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default %(default)s)")
    ap.add_argument("--dtype", choices=["fp32", "fp16", "bf16"], default="fp32")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--output-tokens", type=int, default=32)
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--synthetic", action="store_true", help="random prompt ids instead of gpt2_prompts.txt")
    ap.add_argument("--seed", type=int, default=0, help="seed of the --synthetic ids")
    ap.add_argument("--tokenizer", type=Path, help="default: gpt2_tokenizer.model next to the model")
    ap.add_argument("--prompts", type=Path, help="default: gpt2_prompts.txt next to the model")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (CPU)")
    ap.add_argument("--cuda-graphs", action="store_true", help="decode steps replay a CUDA graph of decode_static, "
                    "as `xsp evaluate --cuda-graphs` (the cache kept per batch and length)")
    args = ap.parse_args()
    if min(args.batch, args.prompt_tokens, args.output_tokens, args.requests) < 1 or args.warmup < 0:
        sys.exit("generate_reference: --batch, --prompt-tokens, --output-tokens and --requests must be >= 1")

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    length = args.prompt_tokens + args.output_tokens
    P, N, B = args.prompt_tokens, args.output_tokens, args.batch
    if args.model.suffix == ".pt2":
        # An AOTInductor package of a Hugging Face static-cache export (scripts/export_hf.py): model b<B>,
        # forward(input_ids [B, T], cache_position [T]) -> logits [B, T, vocab], the cache is the model's state.
        import torch._inductor.package as aoti_package

        model = aoti_package.load_package(str(args.model), model_name=f"b{B}")
        ids_cpu, source = prompt_ids(args, 2000)
        ids = ids_cpu.to(device)
        prefill_positions = torch.arange(P, dtype=torch.long, device=device)

        def request():
            clock = time.perf_counter_ns
            t0 = clock()
            token = model(input_ids=ids, cache_position=prefill_positions)[:, -1].argmax(-1, keepdim=True)
            first_tokens = token.cpu()  # sync point: the first token is on the host
            t_first = clock()
            t_last = t_first
            for step in range(1, N):
                position = torch.full((1,), P + step - 1, dtype=torch.long, device=device)
                token = model(input_ids=token, cache_position=position)[:, -1].argmax(-1, keepdim=True)
                token.cpu()  # sync point: this token is on the host
                t_last = clock()
            return t0, t_first, t_last, first_tokens

        return run(args, torch, device, request, source)
    model = torch.jit.load(str(args.model), map_location=device)
    model.to(dtype)
    model.eval()
    if length > model.max_positions:
        sys.exit(f"generate_reference: {args.prompt_tokens} + {args.output_tokens} tokens exceed the model's "
                 f"{model.max_positions} positions")
    ids_cpu, source = prompt_ids(args, model.vocab_size)
    ids = ids_cpu.to(device)

    if args.cuda_graphs:
        return run(args, torch, device, graph_request(args, torch, model, ids, device), source)

    def request():
        clock = time.perf_counter_ns
        t0 = clock()
        k, v = model.init_cache(B, length)
        token = model.prefill(ids, k, v).argmax(-1, keepdim=True)
        first_tokens = token.cpu()  # sync point: the first token is on the host
        t_first = clock()
        t_last = t_first
        for step in range(1, N):
            token = model.decode(token, P + step - 1, k, v).argmax(-1, keepdim=True)
            token.cpu()  # sync point: this token is on the host
            t_last = clock()
        return t0, t_first, t_last, first_tokens

    return run(args, torch, device, request, source)


class GraphDecode:
    """A TorchScript generation model whose decode() replays a CUDA graph of decode_static, as `xsp evaluate
    --cuda-graphs` runs it (docs/cuda-graphs.md): one cache per (batch, length), kept across requests; static token and
    position buffers; decode_static captured after 3 warm-up runs on a side stream, then replayed at every step. Also
    used by bench/generation_check.py's torchprof."""

    def __init__(self, torch, model):
        self.torch, self.m = torch, model
        self.vocab_size = model.vocab_size
        self.caches = {}
        self.c = None

    def init_cache(self, batch, length):
        torch = self.torch
        if (batch, length) not in self.caches:
            k, v = self.m.init_cache(batch, length)
            self.caches[(batch, length)] = {"k": k, "v": v,
                                            "token": torch.zeros((batch, 1), dtype=torch.long, device=k.device),
                                            "position": torch.zeros((1,), dtype=torch.long, device=k.device)}
        self.c = self.caches[(batch, length)]
        return self.c["k"], self.c["v"]

    def prefill(self, ids, k, v):
        return self.m.prefill(ids, k, v)

    def decode(self, token, position, k, v):
        torch, c = self.torch, self.c
        c["token"].copy_(token)
        c["position"].fill_(position)
        if "graph" not in c:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    self.m.decode_static(c["token"], c["position"], k, v)
            torch.cuda.current_stream().wait_stream(side)
            c["graph"] = torch.cuda.CUDAGraph()
            with torch.cuda.graph(c["graph"]):
                c["logits"] = self.m.decode_static(c["token"], c["position"], k, v)
        c["graph"].replay()
        return c["logits"]


def graph_request(args, torch, model, ids, device):
    """The request of --cuda-graphs: prefill eager, every decode step a replay (GraphDecode)."""
    P, N, B = args.prompt_tokens, args.output_tokens, args.batch
    m = GraphDecode(torch, model)
    k, v = m.init_cache(B, P + N)  # once: the graph reads this cache at the addresses it was captured with

    def request():
        clock = time.perf_counter_ns
        t0 = clock()
        token = m.prefill(ids, k, v).argmax(-1, keepdim=True)
        first_tokens = token.cpu()  # sync point: the first token is on the host
        t_first = clock()
        t_last = t_first
        for step in range(1, N):
            token = m.decode(token, P + step - 1, k, v).argmax(-1, keepdim=True)
            token.cpu()  # sync point: this token is on the host
            t_last = clock()
        return t0, t_first, t_last, first_tokens

    return request


def run(args, torch, device, request, source):
    """Runs the warm-up and the measured requests of `request` and prints the JSON summary."""
    P, N, B = args.prompt_tokens, args.output_tokens, args.batch
    ttft, tpot, wall, first = [], [], [], None
    with torch.inference_mode():
        for _ in range(args.warmup):
            request()
        for _ in range(args.requests):
            t0, t_first, t_last, first_tokens = request()
            ttft.append(t_first - t0)
            if N > 1:
                tpot.append((t_last - t_first) / (N - 1))
            wall.append(t_last - t0)
            first = first_tokens
    total_s = sum(wall) / 1e9
    out = {
        "model": str(args.model), "device": str(device), "dtype": args.dtype, "batch": B, "prompt_tokens": P,
        "output_tokens": N, "requests": args.requests, "warmup": args.warmup, "cuda_graphs": args.cuda_graphs,
        "torch": torch.__version__, "prompts": "synthetic" if source is None else source,
        "first_tokens_of_last_request": first.flatten().tolist(),
        "ttft_ns": summary(ttft), "tpot_ns": summary(tpot),
        "output_tokens_per_s": B * N * args.requests / total_s if total_s > 0 else None,
        "per_request": {"ttft_ns": ttft, "tpot_ns": tpot, "e2e_ns": wall},
    }
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
