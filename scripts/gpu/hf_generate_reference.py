#!/usr/bin/python3
"""transformers' own generate() as the reference for an exported static-cache LLM (issue 26; BENCHMARKS.md
"AOTInductor packages and a Hugging Face static-cache Llama").

Builds the model scripts/export_hf.py exports (the same config, torch.manual_seed(0) weights, the same dtype) and
times model.generate(ids, max_new_tokens=N, min_new_tokens=N, do_sample=False) on a StaticCache of the package's
length (max_cache_len = the config's positions, as TorchExportableModuleForDecoderOnlyLM allocates it), built once
and reset before every request, as the package's cache is its state. min_new_tokens keeps EOS out, so every
request makes exactly N tokens, as XSP's generator does.

Timestamps: generate() hands a streamer each step's tokens after copying them to the host (`streamer.put(tokens.cpu())`),
the sync point of XSP's generator and of scripts/generate_reference.py; the first put() is the prompt and is skipped.
    TTFT = first generated token's put() - t0 (just before generate())
    TPOT = (last put() - first generated put()) / (N - 1)

Modes (--modes, in this order within one process):
    eager     generation_config.disable_compile = True: the modules run eagerly over the static cache;
    compiled  transformers' default for a static cache: generate() compiles the decode forward itself
              (its CompileConfig, printed in the output); the prefill stays eager.
Writes PREFIX_<mode>.json per mode in generate_reference.py's format (bench/generation_check.py compare reads it);
a mode that fails writes {"error": ...} and the others still run.

    scripts/gpu/hf_generate_reference.py llama_1b_hf --batch 8 --prompt-tokens 512 --output-tokens 64 \
        --requests 10 --warmup 3 --out-prefix /tmp/hfgen_8_1
"""

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from export_hf import LLMS, hf_model  # noqa: E402  (the exported model, built the same way)
from generate_reference import summary  # noqa: E402


class Stamps:
    """A generate() streamer that keeps the host time of every put() (tokens already copied to the host)."""

    def __init__(self):
        self.times = []

    def put(self, value):
        self.times.append(time.perf_counter_ns())

    def end(self):
        pass


def static_cache(transformers, model, batch, length, device, dtype):
    """A StaticCache of `length` positions; the constructor changed between transformers 4.x and 5.x."""
    try:
        return transformers.StaticCache(config=model.config, max_cache_len=length)
    except TypeError:
        return transformers.StaticCache(config=model.config, max_batch_size=batch, max_cache_len=length,
                                        device=device, dtype=dtype)


def run_mode(args, torch, transformers, model, ids, max_len, mode):
    P, N, B = args.prompt_tokens, args.output_tokens, args.batch
    config = model.generation_config
    config.disable_compile = mode == "eager"
    config.cache_implementation = None  # the cache is passed in; generate() refuses both
    cache = static_cache(transformers, model, B, max_len, ids.device, model.dtype)
    ttft, tpot, wall = [], [], []
    with torch.inference_mode():
        for i in range(args.warmup + args.requests):
            cache.reset()
            stamps = Stamps()
            t0 = time.perf_counter_ns()
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=N, min_new_tokens=N,
                                 do_sample=False, past_key_values=cache, streamer=stamps)
            if out.shape[1] != P + N or len(stamps.times) != N + 1:
                raise RuntimeError(f"generate made {out.shape[1] - P} tokens and {len(stamps.times)} puts; "
                                   f"{N} tokens and {N + 1} puts expected")
            if i < args.warmup:
                continue
            first, last = stamps.times[1], stamps.times[-1]
            ttft.append(first - t0)
            if N > 1:
                tpot.append((last - first) / (N - 1))
            wall.append(last - t0)
    total_s = sum(wall) / 1e9
    compile_config = getattr(config, "compile_config", None)
    return {
        "model": args.model, "reference": "transformers.generate", "mode": mode, "device": str(ids.device),
        "dtype": str(model.dtype), "batch": B, "prompt_tokens": P, "output_tokens": N, "requests": args.requests,
        "warmup": args.warmup, "max_cache_len": max_len, "torch": torch.__version__,
        "transformers": transformers.__version__,
        "compile_config": None if mode == "eager" or compile_config is None else repr(compile_config),
        "ttft_ns": summary(ttft), "tpot_ns": summary(tpot),
        "output_tokens_per_s": B * N * args.requests / total_s if total_s > 0 else None,
        "per_request": {"ttft_ns": ttft, "tpot_ns": tpot, "e2e_ns": wall},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", choices=sorted(LLMS), help="a model of scripts/export_hf.py")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0, help="seed of the synthetic prompt ids")
    ap.add_argument("--modes", default="eager,compiled")
    ap.add_argument("--out-prefix", required=True, type=Path)
    args = ap.parse_args()
    modes = args.modes.split(",")
    if not set(modes) <= {"eager", "compiled"} or min(args.batch, args.prompt_tokens, args.output_tokens,
                                                        args.requests) < 1 or args.warmup < 0:
        sys.exit("hf_generate_reference: --modes takes eager,compiled; --batch, --prompt-tokens, --output-tokens and "
                 "--requests must be >= 1")

    import torch
    import transformers

    model, config, max_len = hf_model(LLMS[args.model], args.device)
    if args.prompt_tokens + args.output_tokens > max_len:
        sys.exit(f"hf_generate_reference: {args.prompt_tokens} + {args.output_tokens} tokens exceed the cache's "
                 f"{max_len} positions")
    vocab = config.get_text_config().vocab_size
    gen = torch.Generator().manual_seed(args.seed)
    ids = torch.randint(4, min(vocab, 2000), (args.batch, args.prompt_tokens), generator=gen).to(args.device)
    rc = 0
    for mode in modes:
        path = Path(f"{args.out_prefix}_{mode}.json")
        try:
            out = run_mode(args, torch, transformers, model, ids, max_len, mode)
        except Exception as e:  # noqa: BLE001  (one mode's failure is a result to report, not the end of the run)
            out = {"model": args.model, "mode": mode, "batch": args.batch, "error": repr(e),
                   "traceback": traceback.format_exc()}
            rc = 1
        path.write_text(json.dumps(out, indent=1) + "\n")
        print(f"{mode}: " + (out.get("error") or f"TTFT p50 {out['ttft_ns']['median'] / 1e6:.3f} ms, "
                             f"TPOT p50 {out['tpot_ns']['median'] / 1e6:.3f} ms"))
    return rc


if __name__ == "__main__":
    sys.exit(main())
