#!/usr/bin/env python3
"""Exports models as users export them in 2026: AOTInductor packages (.pt2) of torch.export programs, and Hugging
Face decoder LLMs through transformers' own static-cache export (docs/models.md "AOTInductor packages").

Needs PyTorch >= 2.6 (torch.export, torch._inductor.aoti_compile_and_package) and, for the LLMs, transformers with
`transformers.integrations.executorch` (5.x); a C++ compiler (AOTInductor compiles the generated code), and for
--device cuda a GPU. Weights are random (torch.manual_seed(0)): the timings are what counts.

    scripts/export_hf.py --models resnet50,llama_tiny_hf --device cuda --out ZOO --record

Models:
  resnet18, resnet50         torchvision, dynamic batch 1..256, fp32 -> RESNET.pt2 (the `aotinductor` entry of
                             models/RESNET.yaml; the TorchScript of export_zoo.py stays the `libtorch` entry)
  llama_tiny_hf              LlamaForCausalLM, 2 layers, 64 wide, 4 query heads, 2 KV heads (GQA), vocab 2000,
                             128 positions, fp32 (CPU or GPU; small enough for any machine)
  llama_1b_hf                LlamaForCausalLM, Llama-3.2-1B's shape (16 layers, 2048 wide, 32 query heads, 8 KV
                             heads, 8192 MLP) but a vocabulary of 32000, 1024 positions, bf16 (GPU)
  gpt2_small_hf              GPT2LMHeadModel, GPT-2 small's shape (12 layers, 768 wide, 12 heads), 1024 positions,
                             fp32 (GPU)

An LLM is wrapped by transformers.integrations.executorch.TorchExportableModuleForDecoderOnlyLM (a StaticCache
registered as buffers key_cache_<i>/value_cache_<i>), exported with a dynamic sequence length (prefill and decode
are one program: forward(input_ids [B, T], cache_position [T]) -> logits [B, T, vocab]) and compiled once per
--batch-sizes entry, since a static cache fixes the batch: the package holds one model per batch size, named b<N>
(AOTIModelPackageLoader(path, "b8")). The manifest (models/NAME.yaml) is written with the signature
`hf-static-cache`, the config's dimensions (n_layer, n_head, n_kv_head, head_dim: analysis G3's formula), and, with
--record, the package's sha256.

Packages are not loaded back here: loading a freshly compiled package in the compiling process crashed once with
torch 2.11 (issue 26); XSP's C++ loader and scripts/aoti_reference.py load them in their own processes.
"""

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = "gpt2_tokenizer.model"
TOKENIZER_SHA = "sha256:c800f87e607dd4a96f2ca4ef92f5b02b88e028f6bdf3c09f19bd284c706ab488"
PROMPTS_SHA = "sha256:4bbfe3755705adbbd35acddf91a2f1e5d71aa02fca7030120343deb5ec96150e"

LLMS = {
    "llama_tiny_hf": dict(kind="llama", vocab_size=2000, hidden_size=64, intermediate_size=172, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, dtype="fp32",
                          prompt_tokens=64, max_new_tokens=32),
    "llama_1b_hf": dict(kind="llama", vocab_size=32000, hidden_size=2048, intermediate_size=8192,
                        num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                        max_position_embeddings=1024, dtype="bf16", prompt_tokens=512, max_new_tokens=128),
    "gpt2_small_hf": dict(kind="gpt2", vocab_size=50257, n_embd=768, n_layer=12, n_head=12, n_positions=1024,
                          dtype="fp32", prompt_tokens=512, max_new_tokens=128),
}
VISION = {"resnet18", "resnet50"}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def torch_dtype(name):
    import torch
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def compile_models(programs, package):
    """Compiles each torch.export program with AOTInductor and writes them into one package, as model NAME each
    (programs: {NAME: ExportedProgram}). aoti_compile_and_package() packages one model; its inner packaging step
    (torch._inductor.package.package_aoti) takes {NAME: files}, so each compile's file list is captured there and
    packaged together at the end."""
    import torch
    import torch._inductor
    import torch._inductor.package as pkg

    real = pkg.package_aoti
    captured = {}

    def capture(archive_file, aoti_files):
        captured["files"] = aoti_files
        return archive_file

    files = {}
    pkg.package_aoti = capture
    try:
        for name, ep in programs.items():
            captured.clear()
            t = time.time()
            torch._inductor.aoti_compile_and_package(ep, package_path=str(package.with_suffix(f".{name}.tmp.pt2")))
            if "files" not in captured:
                sys.exit("export_hf: torch._inductor.aoti_compile_and_package did not call package_aoti; this "
                         f"PyTorch ({torch.__version__}) packages differently: cannot put several models in one .pt2")
            f = captured["files"]
            files[name] = f["model"] if isinstance(f, dict) else f
            print(f"export_hf: compiled {package.name} model {name} in {time.time() - t:.0f} s", file=sys.stderr)
    finally:
        pkg.package_aoti = real
    real(str(package), files)


def export_vision(name, device, out):
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)().eval().to(device)
    batch = torch.export.Dim("batch", min=1, max=256)
    with torch.inference_mode():
        ep = torch.export.export(model, (torch.randn(2, 3, 224, 224, device=device),),
                                 dynamic_shapes=({0: batch},))
    package = out / f"{name}.pt2"
    compile_models({"model": ep}, package)
    return package


def hf_model(spec, device):
    import torch
    import transformers
    from transformers import GenerationConfig

    torch.manual_seed(0)
    if spec["kind"] == "llama":
        keys = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "max_position_embeddings")
        config = transformers.LlamaConfig(**{k: spec[k] for k in keys})
        model = transformers.LlamaForCausalLM(config)
    else:
        keys = ("vocab_size", "n_embd", "n_layer", "n_head", "n_positions")
        config = transformers.GPT2Config(**{k: spec[k] for k in keys})
        model = transformers.GPT2LMHeadModel(config)
    model = model.eval().to(device=device, dtype=torch_dtype(spec["dtype"]))
    max_len = config.max_position_embeddings if spec["kind"] == "llama" else config.n_positions
    model.generation_config = GenerationConfig(use_cache=True, cache_implementation="static", max_length=max_len)
    return model, config, max_len


def export_llm(name, device, out, batch_sizes):
    import torch
    from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

    spec = LLMS[name]
    model, config, max_len = hf_model(spec, device)
    programs = {}
    for b in batch_sizes:
        wrapped = TorchExportableModuleForDecoderOnlyLM(model, batch_size=b, max_cache_len=max_len, device=device)
        seq = torch.export.Dim("seq_len", min=1, max=max_len - 1)
        ids = torch.zeros(b, 4, dtype=torch.long, device=device)
        pos = torch.arange(4, dtype=torch.long, device=device)
        # Strict (Dynamo) export, transformers' default: non-strict export sees the cache tensors reached through
        # the StaticCache object as constants and refuses their in-place update (torch 2.11, transformers 5.17).
        with torch.no_grad():
            programs[f"b{b}"] = wrapped.export(input_ids=ids, cache_position=pos, strict=True,
                                               dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}})
        names = [n for n, _ in programs[f"b{b}"].named_buffers()]
        if not any("key_cache_" in n for n in names):
            sys.exit(f"export_hf: {name}: the exported program has no key_cache_<i> buffer (buffers: {names[:6]})")
    package = out / f"{name}.pt2"
    compile_models(programs, package)
    text = config.get_text_config()
    n_head = text.num_attention_heads
    dims = dict(n_layer=text.num_hidden_layers, n_head=n_head,
                n_kv_head=getattr(text, "num_key_value_heads", None) or n_head,
                head_dim=getattr(text, "head_dim", None) or text.hidden_size // n_head,
                vocab_size=text.vocab_size, max_cache_len=max_len,
                element_bytes=torch.tensor([], dtype=torch_dtype(spec["dtype"])).element_size())
    return package, dims


def llm_manifest(name, dims, batch_sizes, spec, checksum):
    arch = (f"{spec['kind']} (n_layer {dims['n_layer']}, n_head {dims['n_head']}, n_kv_head {dims['n_kv_head']}, "
            f"head_dim {dims['head_dim']}, vocab {dims['vocab_size']}), static KV cache of {dims['max_cache_len']}")
    prompt = min(spec["prompt_tokens"], dims["max_cache_len"] - spec["max_new_tokens"])
    return f"""# {name}: a Hugging Face {spec['kind']} decoder exported as Hugging Face exports it (written by
# scripts/export_hf.py; docs/models.md "AOTInductor packages"). transformers.integrations.executorch's
# TorchExportableModuleForDecoderOnlyLM with a StaticCache, torch.export with a dynamic sequence length, compiled by
# AOTInductor once per batch size (models b{', b'.join(map(str, batch_sizes))} in one package). Random weights
# (torch.manual_seed(0)): the timings are what counts. The package is compiled for the device it was exported on.
name: {name}
version: 1.0.0
description: {arch}; random weights, for performance profiling only
frameworks:
  - name: aotinductor
    version: ">=2.6"
    graph_path: {name}.pt2
    checksum: {checksum}
precisions: [{spec['dtype']}]
inputs:
  - name: prompt
    type: text
    element_type: int64
    dimensions: [{dims['max_cache_len']}]
    steps:
      - tokenize: {{model: {TOKENIZER}, checksum: "{TOKENIZER_SHA}", add_bos: true}}
outputs:
  - name: tokens
    type: generation
    steps:
      - generate: {{max_new_tokens: {spec['max_new_tokens']}, sampling: greedy, signature: hf-static-cache}}
      - detokenize: {{model: {TOKENIZER}, checksum: "{TOKENIZER_SHA}"}}
attributes:
  task: text_generation
  architecture: "{arch}"
  weights: random (torch.manual_seed(0))
  prompts: gpt2_prompts.txt
  prompts_checksum: {PROMPTS_SHA}
  source: scripts/export_hf.py
  export: transformers.integrations.executorch + torch._inductor.aoti_compile_and_package
  static_batch_sizes: "{','.join(map(str, batch_sizes))}"
  max_cache_len: "{dims['max_cache_len']}"
  vocab_size: "{dims['vocab_size']}"
  n_layer: "{dims['n_layer']}"
  n_head: "{dims['n_head']}"
  n_kv_head: "{dims['n_kv_head']}"
  head_dim: "{dims['head_dim']}"
  element_bytes: "{dims['element_bytes']}"
  aotinductor_precision: {spec['dtype']}
  suggested_prompt_tokens: "{prompt}"
"""


def add_vision_entry(name, checksum, manifest_dir):
    """Adds (or updates) the `aotinductor` framework entry of models/NAME.yaml, after its other entries."""
    path = manifest_dir / f"{name}.yaml"
    text = path.read_text()
    entry = (f"  - name: aotinductor\n    version: \">=2.6\"\n    graph_path: {name}.pt2\n"
             f"    checksum: {checksum}\n")
    if "name: aotinductor" in text:
        start = text.index("  - name: aotinductor")
        end = text.index("\n", text.index("checksum:", start)) + 1
        text = text[:start] + entry + text[end:]
    else:
        import re
        frameworks = re.search(r"^frameworks:.*\n", text, re.M)
        after = re.search(r"^\S", text[frameworks.end():], re.M)  # the next top-level key
        at = frameworks.end() + (after.start() if after else len(text) - frameworks.end())
        text = text[:at] + entry + text[at:]
    path.write_text(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", required=True, help="comma-separated: " + ", ".join(sorted(VISION | set(LLMS))))
    parser.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    parser.add_argument("--out", type=Path, default=ROOT / "models", help="where the packages go")
    parser.add_argument("--manifests", type=Path, default=ROOT / "models", help="where the manifests are written")
    parser.add_argument("--batch-sizes", default="1,8", help="LLMs: one compiled model per batch size")
    parser.add_argument("--record", action="store_true", help="write the packages' sha256 into the manifests")
    args = parser.parse_args()
    import torch

    if tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 6):
        sys.exit(f"export_hf: PyTorch {torch.__version__} has no AOTInductor packages (needs >= 2.6)")
    args.out.mkdir(parents=True, exist_ok=True)
    batch_sizes = sorted({int(b) for b in args.batch_sizes.split(",") if b})
    report = {}
    for name in [m for m in args.models.split(",") if m]:
        t = time.time()
        if name in VISION:
            package = export_vision(name, args.device, args.out)
            checksum = sha256(package)
            if args.record:
                add_vision_entry(name, checksum, args.manifests)
        elif name in LLMS:
            package, dims = export_llm(name, args.device, args.out, batch_sizes)
            checksum = sha256(package)
            text = llm_manifest(name, dims, batch_sizes, LLMS[name], checksum if args.record else "sha256:" + "0" * 64)
            (args.manifests / f"{name}.yaml").write_text(text)
        else:
            sys.exit(f"export_hf: unknown model '{name}' (known: {', '.join(sorted(VISION | set(LLMS)))})")
        report[name] = {"package": str(package), "bytes": package.stat().st_size, "checksum": checksum,
                        "seconds": round(time.time() - t, 1), "device": args.device}
        print(f"export_hf: {name}: {package} ({package.stat().st_size / 1e6:.1f} MB) in {time.time() - t:.0f} s",
              file=sys.stderr)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
