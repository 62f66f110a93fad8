#!/usr/bin/python3
"""Export the XSP model zoo (models/*.yaml) to TorchScript (<stem>.pt, LibTorch predictor) and ONNX
(<stem>.onnx, OpenCV DNN and ONNX Runtime predictors).

Every model is a torchvision architecture built after torch.manual_seed(0), in eval mode, with random
weights: the zoo is for performance profiling, so no weights are downloaded and the export works offline.
Both files come from the same instance in the same interpreter, so both frameworks run the same weights.
With torch 1.13 and a fixed PYTHONHASHSEED (set here) both exports are bit-for-bit deterministic (the ONNX
export is done twice and the digests compared), so the manifests carry each file's SHA-256 and XSP verifies
it before use. Another torch version gives other bytes: re-export with --record then.

ONNX export choices, all made so that OpenCV 4.6's ONNX importer (Debian 12) reads the file:
- opset 10: from opset 11 on, Clip takes min/max as inputs, which OpenCV 4.6 rejects (MobileNetV2's ReLU6);
- static shapes [1, C, H, W] (no dynamic_axes: OpenCV 4.6 does not resolve symbolic dimensions); OpenCV
  runs other batch sizes from this batch-1 graph for the CNNs; ONNX Runtime enforces the static batch;
- constant folding (BatchNorm folded into Conv in eval mode);
- torch.onnx deduplicates equal initializers (e.g. the all-zero folded biases of random-init BatchNorm) and
  feeds the duplicates through Identity nodes, which OpenCV 4.6 cannot parse: they are replaced by copies of
  the initializer (needs the `onnx` package, Debian python3-onnx).

Run it with the interpreter that has torch (Debian: /usr/bin/python3):
    scripts/export_zoo.py --models resnet50                # into models/, check against the manifest
    scripts/export_zoo.py --models all --record            # (re)write the checksums in models/*.yaml
    scripts/export_zoo.py --models resnet18 --out /tmp/zoo # copy manifest + labels, export there
Each model gives <stem>.pt and <stem>.onnx; the manifest's `frameworks:` entries name them.

Text generation (gpt2_tiny, gpt2_small, gpt2_medium; export_gpt2 below): a GPT-2 architecture in plain torch with a
KV cache, random weights, TorchScript only, plus two files shared by every GPT-2 manifest: gpt2_tokenizer.model
(SentencePiece BPE, 2000 ids, trained here with Debian's spm_train on the license texts of /usr/share/common-licenses)
and gpt2_prompts.txt (the corpus' paragraphs of >= 40 words, one per line). Exporting another GPT-2 into the same
folder reuses them when their digests match. gpt2_small (~500 MB) and gpt2_medium (~1.4 GB) are exported only when
named: `--models all` means the vision models and gpt2_tiny.
    scripts/export_zoo.py --models gpt2_tiny --out /tmp/zoo  # gpt2_tiny.pt, gpt2_tokenizer.model, gpt2_prompts.txt

Other tasks (export_task, export_bert below), TorchScript only (XSP's OpenCV DNN and ONNX Runtime predictors run
classification only), each with a check inside the export that fails it on a mismatch:
- ssdlite_mobilenet_v3 (object detection): torchvision's SSDlite320 MobileNetV3-Large, 91 COCO classes, wrapped by
  scripts/xsp_tasks.py: forward(images [N,3,320,320]) -> (boxes [N,A,4] x1 y1 x2 y2 pixels, scores [N,A,91]);
  no resize/normalize (XSP's pre-processing) and no NMS (the manifest's nms step);
- lraspp_mobilenet_v3 (semantic segmentation): torchvision's LRASPP MobileNetV3-Large, 21 VOC classes, scripted
  as is: forward(images) -> {"out": [N,21,H,W]};
- bert_tiny, bert_base (text classification): a BERT-style encoder in plain torch (scripts/xsp_bert.py),
  forward(input_ids [N,L], attention_mask [N,L]) -> logits [N, number of license texts], with the GPT-2 tokenizer
  and prompts (write_text_assets); labels: models/license_labels.txt (committed, checked against the corpus).
  bert_base (~350 MB) is exported only when named.
"""

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_MODELS = Path(__file__).resolve().parent.parent / "models"
LABELS = "imagenet_labels.txt"

# stem -> (constructor keyword arguments, input side, preferred export method).
# inception_v3: a scripted Inception3 always returns InceptionOutputs (a tuple) whatever aux_logits says,
# while the predictor expects one tensor; traced in eval mode it returns the logits alone. aux_logits=False
# drops the unused auxiliary head; init_weights=True is what torchvision picks anyway, said to silence its
# warning and to keep the random weights stable should that default change.
MODELS = {
    "resnet18": ({}, 224, "script"),
    "resnet50": ({}, 224, "script"),
    "mobilenet_v2": ({}, 224, "script"),
    "vgg16": ({}, 224, "script"),
    "inception_v3": ({"aux_logits": False, "init_weights": True}, 299, "trace"),
    "densenet121": ({}, 224, "script"),
    "vit_b_16": ({}, 224, "script"),
    "digits_cnn": ({}, 8, "script"),  # trained here on scikit-learn digits (train_digits), not torchvision
}

# Models trained here on a real labeled dataset (not torchvision): stem -> the held-out split file written
# next to the graphs (format in write_split()); its digest is the manifest's `dataset_checksum`.
TRAINED = {"digits_cnn": "digits_test.bin"}

# GPT-2 with a KV cache (export_gpt2): stem -> config. TorchScript only: the generation loop (prefill, then one
# decode call per token on a growing cache) is not one static graph, so OpenCV DNN cannot run it; ONNX Runtime
# would need separately exported prefill and decode graphs with the cache as inputs/outputs (left for later).
GPT2 = {
    "gpt2_tiny": dict(n_layer=2, n_embd=64, n_head=2, vocab_size=2000, max_positions=128),  # vocab = the tokenizer's
    "gpt2_small": dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, max_positions=1024),
    "gpt2_medium": dict(n_layer=24, n_embd=1024, n_head=16, vocab_size=50257, max_positions=1024),
}
# Torchvision models for other tasks (export_task): stem -> (constructor, keyword arguments, input side).
# TorchScript only: XSP's OpenCV DNN and ONNX Runtime predictors run classification only.
TASKS = {
    "ssdlite_mobilenet_v3": ("ssdlite320_mobilenet_v3_large", {"weights_backbone": None}, 320),
    "lraspp_mobilenet_v3": ("lraspp_mobilenet_v3_large", {"weights_backbone": None, "num_classes": 21}, 224),
}
# The score threshold and detection count the detection check applies (the manifest's nms step), with torchvision
# SSDlite's own topk_candidates (300 per class) and nms_thresh (0.55).
DETECTION_CHECK = dict(score_thresh=0.01, nms_thresh=0.55, topk_candidates=300, detections_per_img=100)

# BERT-style text classifiers (export_bert, scripts/xsp_bert.py): stem -> config (num_labels: the license texts).
# vocab_size = the shared GPT-2 tokenizer's (gpt2_tokenizer.model), bert_base included.
BERT = {
    "bert_tiny": dict(n_layer=2, hidden=64, n_head=2, vocab_size=2000, max_positions=128),
    "bert_base": dict(n_layer=12, hidden=768, n_head=12, vocab_size=2000, max_positions=512),
}
# One label per license text of the corpus (corpus_files()), committed; the export fails if the corpus differs.
LICENSE_LABELS = "license_labels.txt"

# Exported only when named (large files), never by `--models all`.
LARGE = ("gpt2_small", "gpt2_medium", "bert_base")
MODELS.update({stem: ({}, 0, "script") for stem in GPT2})
MODELS.update({stem: ({}, side, "script") for stem, (_, _, side) in TASKS.items()})
MODELS.update({stem: ({}, 0, "script") for stem in BERT})
# Models that use the shared tokenizer and prompts (write_text_assets).
TEXT = tuple(GPT2) + tuple(BERT)

# Files shared by the GPT-2 manifests (write_text_assets): the tokenizer and the prompts, both from this corpus.
TOKENIZER = "gpt2_tokenizer.model"
PROMPTS = "gpt2_prompts.txt"
CORPUS_DIR = Path("/usr/share/common-licenses")
TOKENIZER_VOCAB = 2000
PROMPT_MIN_WORDS = 40
MAX_PROMPTS = 512

ONNX_OPSET = 10
# Graph file suffixes, in the order they are exported.
SUFFIXES = (".pt", ".onnx")

EXPORT_RE = re.compile(r"^(\s*export:\s*)(\S+)(.*)$", re.M)


def checksum_re(filename: str) -> re.Pattern:
    """Matches the checksum line that follows `graph_path: FILENAME` (every framework entry using the file), or
    `dataset_path:` / `prompts:` FILENAME followed by `dataset_checksum:` / `prompts_checksum:`."""
    return re.compile(r"^(\s*(?:- )?\s*(?:graph_path|dataset_path|prompts):\s*" + re.escape(filename) +
                      r"\s*\n\s*(?:dataset_|prompts_)?checksum:\s*)(\S+)()$", re.M)


def inline_checksum_re(filename: str) -> re.Pattern:
    """Matches the checksum of a step that names the file inline, e.g.
    `- tokenize: {model: FILENAME, checksum: "sha256:...", add_bos: true}` (the digest without its quotes)."""
    return re.compile(r"(\bmodel:\s*" + re.escape(filename) + r"\s*,\s*checksum:\s*\"?)([^\",}\s]+)()")


def checksum_regexes(filename: str) -> list:
    return [checksum_re(filename), inline_checksum_re(filename)]


def has_checksum(text: str, filename: str) -> bool:
    return any(r.search(text) for r in checksum_regexes(filename))


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def manifest_checksum(manifest: Path, filename: str) -> str:
    """The digest recorded for graph file `filename`; every entry naming the file must agree."""
    text = manifest.read_text()
    found = {m.group(2) for r in checksum_regexes(filename) for m in r.finditer(text)}
    if not found or any(not d.startswith("sha256:") for d in found):
        sys.exit(f"export_zoo: {manifest}: no 'graph_path: {filename}' followed by 'checksum: sha256:...' "
                 f"(nor 'model: {filename}, checksum: sha256:...' in a step)")
    if len(found) > 1:
        sys.exit(f"export_zoo: {manifest}: the entries for {filename} record different checksums: "
                 + ", ".join(sorted(found)))
    return found.pop()[len("sha256:"):]


def rewrite(manifest: Path, regex: re.Pattern, value: str, count: int = 1) -> None:
    text = manifest.read_text()
    new, n = regex.subn(lambda m: m.group(1) + value + m.group(3), text, count=count)
    if n == 0:
        sys.exit(f"export_zoo: {manifest}: cannot find the line to rewrite ({regex.pattern})")
    manifest.write_text(new)


def rewrite_checksum(manifest: Path, filename: str, value: str) -> None:
    """Writes `value` into every checksum the manifest records for `filename` (graph, split, step, prompts)."""
    text, total = manifest.read_text(), 0
    for r in checksum_regexes(filename):
        text, n = r.subn(lambda m: m.group(1) + value + m.group(3), text)
        total += n
    if total == 0:
        sys.exit(f"export_zoo: {manifest}: no checksum recorded for {filename} to rewrite")
    manifest.write_text(text)


def artifacts(stem: str, out: Path) -> list:
    """The files exporting `stem` writes into `out`, each with a checksum in the manifest."""
    if stem in TEXT:
        return [out / f"{stem}.pt", out / TOKENIZER, out / PROMPTS]
    if stem in TASKS:
        return [out / f"{stem}.pt"]
    files = [out / f"{stem}{suffix}" for suffix in SUFFIXES]
    if stem in TRAINED:
        files.append(out / TRAINED[stem])
    return files


def prepare_out(stem: str, out: Path) -> Path:
    """Returns the manifest that describes OUT/<stem>.{pt,onnx}, copying it (and the labels) when OUT is not
    models/."""
    src = REPO_MODELS / f"{stem}.yaml"
    if not src.is_file():
        sys.exit(f"export_zoo: no manifest {src}")
    if out.resolve() == REPO_MODELS.resolve():
        return src
    out.mkdir(parents=True, exist_ok=True)
    dst = out / src.name
    # A copy may carry checksums recorded earlier for this torch version (--record): keep them when the
    # files they describe are still there, so that a repeated run skips the export instead of redoing it.
    kept = {}
    for graph in artifacts(stem, out):
        name = graph.name
        if dst.is_file() and graph.is_file() and has_checksum(dst.read_text(), name):
            old = manifest_checksum(dst, name)
            if old != manifest_checksum(src, name) and sha256_file(graph) == old:
                kept[name] = old
    shutil.copyfile(src, dst)
    for name, digest in kept.items():
        rewrite_checksum(dst, name, "sha256:" + digest)
    for labels in set(re.findall(r"^\s*labels:\s*(\S+)\s*(?:#.*)?$", src.read_text(), re.M)) | {LABELS}:
        shutil.copyfile(REPO_MODELS / labels, out / labels)
    return dst


def inline_identity_initializers(path: Path) -> int:
    """Replaces every Identity node whose input is an initializer by a copy of that initializer under the
    node's output name (same values, same graph semantics). Returns how many were replaced."""
    import onnx

    model = onnx.load(str(path))
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    kept, replaced = [], 0
    for node in graph.node:
        if node.op_type == "Identity" and len(node.input) == 1 and node.input[0] in inits:
            copy = onnx.TensorProto()
            copy.CopyFrom(inits[node.input[0]])
            copy.name = node.output[0]
            graph.initializer.append(copy)
            inits[copy.name] = copy
            replaced += 1
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return replaced


def write_split(path: Path, features, labels) -> None:
    """Held-out split for the C++ side (src/pipeline/dataset.cc), little-endian, no numpy needed to read it:
    8 bytes magic "XSPDS1\\0\\0", uint32 count, uint32 rank, uint32 dims[rank], then per sample
    prod(dims) float32 features followed by one int32 label."""
    import struct

    n, dims = features.shape[0], features.shape[1:]
    with open(path, "wb") as f:
        f.write(b"XSPDS1\0\0" + struct.pack("<II", n, len(dims)) + struct.pack(f"<{len(dims)}I", *dims))
        for x, y in zip(features, labels):
            f.write(x.astype("<f4").tobytes() + struct.pack("<i", int(y)))


def train_digits(stem: str, path: Path, split_path: Path):
    """Trains a small CNN on scikit-learn's digits (8x8 grey images, 10 classes; train split 80%, stratified,
    seed 0), deterministically (one thread, fixed seeds), and returns (model, test accuracy %)."""
    import numpy as np
    import torch
    from torch import nn
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]  # pixel values 0..16 -> [0, 1]
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
    gen = torch.Generator().manual_seed(0)
    for _ in range(15):
        model.train()
        for idx in torch.randperm(len(xt), generator=gen).split(32):
            opt.zero_grad()
            nn.functional.cross_entropy(model(xt[idx]), yt[idx]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(torch.from_numpy(x_te)).argmax(1).numpy() == y_te).mean() * 100
    write_split(split_path, x_te, y_te)
    print(f"  {stem}: {len(y_tr)} training, {len(y_te)} held-out samples, top-1 {acc:.2f}%", file=sys.stderr)
    return model


def export_onnx(model, side: int, path: Path, channels: int = 3) -> None:
    import torch

    # No torch.no_grad() here: under no_grad, nn.MultiheadAttention (ViT) takes its fused fast path,
    # aten::_native_multi_head_attention, which has no ONNX symbolic.
    torch.onnx.export(model, torch.zeros(1, channels, side, side), str(path), opset_version=ONNX_OPSET,
                      do_constant_folding=True, input_names=["input"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.EVAL)
    inline_identity_initializers(path)


def export(stem: str, path: Path) -> str:
    """Builds the model and saves its TorchScript to `path` (<stem>.pt) and its ONNX graph next to it
    (<stem>.onnx), both from the same instance; returns the TorchScript method used."""
    import torch
    import torchvision

    kwargs, side, preferred = MODELS[stem]
    channels = 1 if stem in TRAINED else 3
    torch.manual_seed(0)
    if stem in TRAINED:
        model = train_digits(stem, path, path.parent / TRAINED[stem])
    else:
        model = getattr(torchvision.models, stem)(weights=None, **kwargs).eval()
    # Neither export may change the weights: compare a digest of the state before and after.
    state_before = hashlib.sha256(b"".join(t.detach().cpu().numpy().tobytes()
                                           for t in model.state_dict().values())).hexdigest()
    module, method = None, preferred
    if preferred == "script":
        try:
            module = torch.jit.script(model)
            # The predictor expects one tensor out; anything else (tuple, namedtuple) means: trace instead.
            out_type = str(module.forward.schema.returns[0].type)
            if out_type != "Tensor":
                print(f"  {stem}: scripted forward returns {out_type}, tracing instead", file=sys.stderr)
                module = None
        except Exception as e:  # torch.jit.script raises several unrelated types
            print(f"  {stem}: torch.jit.script failed ({type(e).__name__}: {str(e).splitlines()[0]}), "
                  "tracing instead", file=sys.stderr)
            module = None
        if module is None:
            method = "trace"
    if module is None:
        with torch.no_grad():
            module = torch.jit.trace(model, torch.zeros(1, channels, side, side))
    # TorchScript's zip archive embeds the file's base name, so the bytes (and the checksum) depend on it:
    # save under the final name inside a temporary directory, then move the file into place.
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".export-") as tmp:
        tmp_path = Path(tmp) / path.name
        torch.jit.save(module, str(tmp_path))
        os.replace(tmp_path, path)

        # ONNX, twice: the digests must agree or no checksum could be recorded.
        onnx_path = path.with_suffix(".onnx")
        digests = []
        for attempt in range(2):
            tmp_onnx = Path(tmp) / f"{attempt}-{onnx_path.name}"
            export_onnx(model, side, tmp_onnx, channels)
            digests.append(sha256_file(tmp_onnx))
        if digests[0] != digests[1]:
            sys.exit(f"export_zoo: the ONNX export of {stem} is not deterministic: two exports in one process "
                     f"gave sha256:{digests[0]} and sha256:{digests[1]}")
        os.replace(Path(tmp) / f"0-{onnx_path.name}", onnx_path)
    state_after = hashlib.sha256(b"".join(t.detach().cpu().numpy().tobytes()
                                          for t in model.state_dict().values())).hexdigest()
    if state_before != state_after:
        sys.exit(f"export_zoo: exporting {stem} changed its weights; the two graphs would differ")
    return "torch.jit." + method


def corpus_files() -> list:
    """The license texts of the corpus: regular files of /usr/share/common-licenses, sorted by name."""
    if not CORPUS_DIR.is_dir():
        sys.exit(f"export_zoo: no {CORPUS_DIR} (Debian's base-files package); the GPT-2 tokenizer needs it")
    return [f for f in sorted(CORPUS_DIR.iterdir(), key=lambda p: p.name) if not f.is_symlink() and f.is_file()]


def corpus_paragraphs() -> list:
    """The license texts Debian's base-files ships (/usr/share/common-licenses), regular files only (GPL, LGPL and
    GFDL are symlinks to a versioned file), in sorted order, split at blank lines, whitespace normalized: one
    paragraph per entry."""
    paragraphs = []
    for f in corpus_files():
        for block in re.split(r"\n\s*\n", f.read_text(encoding="utf-8")):
            line = " ".join(block.split())
            if line:
                paragraphs.append(line)
    return paragraphs


def write_text_assets(out: Path) -> None:
    """Trains the SentencePiece tokenizer on the corpus and writes out/gpt2_tokenizer.model and out/gpt2_prompts.txt.

    spm_train (Debian's sentencepiece 0.1.97) with one thread, no sampling of the input (--input_sentence_size=0,
    no shuffling) and a fixed seed gives the same bytes run to run: trained twice here and compared. The model
    stores the trainer's options, the input and model_prefix names included, so training runs in a temporary
    folder under fixed relative names. BPE, byte fallback (any UTF-8 text encodes, nothing is lost to <unk>),
    identity normalization (decode(encode(s)) == s for whitespace-normalized text, as GPT-2's byte-level BPE),
    ids: <unk> 0, <s> 1, </s> 2, <pad> 3."""
    spm_train = shutil.which("spm_train")
    if not spm_train:
        sys.exit("export_zoo: spm_train not found (Debian: apt-get install sentencepiece); the GPT-2 tokenizer needs it")
    paragraphs = corpus_paragraphs()
    digests = []
    with tempfile.TemporaryDirectory(dir=out, prefix=".tokenizer-") as tmp:
        for attempt in range(2):
            work = Path(tmp) / str(attempt)
            work.mkdir()
            (work / "corpus.txt").write_text("\n".join(paragraphs) + "\n", encoding="utf-8")
            cmd = [spm_train, "--input=corpus.txt", "--model_prefix=gpt2_tokenizer", "--model_type=bpe",
                   f"--vocab_size={TOKENIZER_VOCAB}", "--character_coverage=1.0", "--byte_fallback=true",
                   "--normalization_rule_name=identity", "--num_threads=1", "--random_seed=0",
                   "--input_sentence_size=0", "--shuffle_input_sentence=false", "--max_sentence_length=65536",
                   "--unk_id=0", "--bos_id=1", "--eos_id=2", "--pad_id=3", "--minloglevel=2"]
            child = subprocess.run(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if child.returncode != 0:
                sys.exit(f"export_zoo: spm_train failed (exit {child.returncode}): {child.stdout[-2000:]}")
            digests.append(sha256_file(work / TOKENIZER))
        if digests[0] != digests[1]:
            sys.exit(f"export_zoo: spm_train is not deterministic: two trainings gave sha256:{digests[0]} and "
                     f"sha256:{digests[1]}")
        os.replace(Path(tmp) / "0" / TOKENIZER, out / TOKENIZER)
    prompts = [p for p in paragraphs if len(p.split()) >= PROMPT_MIN_WORDS][:MAX_PROMPTS]
    tmp_prompts = out / f".{PROMPTS}.tmp"
    tmp_prompts.write_text("".join(p + "\n" for p in prompts), encoding="utf-8")
    os.replace(tmp_prompts, out / PROMPTS)
    print(f"  tokenizer: {TOKENIZER_VOCAB} ids, {len(paragraphs)} paragraphs of {CORPUS_DIR}; "
          f"{len(prompts)} prompts (>= {PROMPT_MIN_WORDS} words)", file=sys.stderr)


def gpt2_module(cfg: dict):
    """The GPT-2 of scripts/xsp_gpt2.py (its docstring has the TorchScript contract), built from torch.manual_seed(0).
    The file is compiled under the fixed name "xsp_gpt2.py", registered in linecache where inspect (and so
    torch.jit.script) finds its source: TorchScript saves file names in the .pt's debug info, and the path of the
    checkout must not change the bytes."""
    return load_fixed("xsp_gpt2").build(cfg)


def load_fixed(module_name: str):
    """Imports scripts/<module_name>.py compiled under the fixed file name "<module_name>.py" and registered in
    linecache, where inspect (and so torch.jit.script) finds its source: the .pt's debug info then names that file,
    not the checkout's path."""
    import linecache
    import types

    name = module_name + ".py"
    source = (Path(__file__).resolve().parent / name).read_text()
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    module = types.ModuleType(module_name)
    module.__file__ = name
    sys.modules[module_name] = module
    exec(compile(source, name, "exec"), module.__dict__)
    return module


def check_gpt2_cache(path: Path, stem: str, prompt_tokens: int, new_tokens: int) -> None:
    """Loads the saved TorchScript back and checks that greedy generation with init_cache + prefill + decode gives
    the same tokens (and logits within tolerance) as re-running forward() on the growing sequence. Exits on a
    mismatch. Runs on the loaded file, so the check cannot change the saved bytes."""
    import torch

    m = torch.jit.load(str(path))
    vocab, batch = m.vocab_size, 2
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(4, min(vocab, TOKENIZER_VOCAB), (batch, prompt_tokens), generator=gen)
    worst = 0.0
    with torch.inference_mode():
        k, v = m.init_cache(batch, prompt_tokens + new_tokens)
        expect = [m.n_layer, batch, m.n_head, prompt_tokens + new_tokens, m.head_dim]
        if list(k.shape) != expect or k.dtype != torch.float32:
            sys.exit(f"export_zoo: {stem}: init_cache gave {list(k.shape)} {k.dtype}, expected {expect} float32")
        logits = m.prefill(ids, k, v)
        seq = ids
        for step in range(new_tokens):
            full = m.forward(seq)[:, -1, :]
            worst = max(worst, (full - logits).abs().max().item())
            if not torch.allclose(full, logits, rtol=1e-4, atol=1e-4) or \
                    not torch.equal(full.argmax(-1), logits.argmax(-1)):
                sys.exit(f"export_zoo: {stem}: prefill/decode with the KV cache differs from forward() at generated "
                         f"token {step} (max |delta logit| {(full - logits).abs().max().item():.3g})")
            token = logits.argmax(-1, keepdim=True)
            seq = torch.cat([seq, token], dim=1)
            if step + 1 < new_tokens:
                # decode_static on a copy of the cache must agree with decode (the CUDA-graph path, issue 25).
                k2, v2 = k.clone(), v.clone()
                static = m.decode_static(token, torch.tensor([prompt_tokens + step]), k2, v2)
                logits = m.decode(token, prompt_tokens + step, k, v)
                worst = max(worst, (static - logits).abs().max().item())
                if not torch.allclose(static, logits, rtol=1e-4, atol=1e-4) or \
                        not torch.equal(static.argmax(-1), logits.argmax(-1)) or \
                        not torch.allclose(k2, k, rtol=1e-4, atol=1e-5) or not torch.allclose(v2, v, rtol=1e-4, atol=1e-5):
                    # Not bitwise: attending over the whole (masked) cache sums in another order, and a layer's
                    # keys follow the previous layer's output (3.7e-8 apart on torch 2.11, H200 host).
                    sys.exit(f"export_zoo: {stem}: decode_static differs from decode at generated token {step}: "
                             f"max |delta logit| {(static - logits).abs().max().item():.3g}, argmax equal "
                             f"{torch.equal(static.argmax(-1), logits.argmax(-1))}, max |delta K| {(k2 - k).abs().max().item():.3g}, "
                             f"max |delta V| {(v2 - v).abs().max().item():.3g}")
        # The cache follows the parameters' dtype (model.to(half/bfloat16/cuda) in C++ carries over).
        if stem == "gpt2_tiny":
            m.to(torch.float64)
            if m.init_cache(1, 4)[0].dtype != torch.float64:
                sys.exit(f"export_zoo: {stem}: init_cache does not follow the parameters' dtype")
    print(f"  {stem}: KV cache check passed: prefill+decode == decode_static == forward, batch {batch}, {prompt_tokens} prompt + "
          f"{new_tokens} greedy tokens, max |delta logit| {worst:.3g}", file=sys.stderr)


def export_gpt2(stem: str, path: Path) -> str:
    import torch

    torch.set_num_threads(1)
    model = gpt2_module(GPT2[stem])
    module = torch.jit.script(model)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".export-") as tmp:
        tmp_path = Path(tmp) / path.name
        torch.jit.save(module, str(tmp_path))
        os.replace(tmp_path, path)
    tiny = stem == "gpt2_tiny"
    check_gpt2_cache(path, stem, prompt_tokens=16 if tiny else 8, new_tokens=32 if tiny else 8)
    return "torch.jit.script"


def save_script(module, path: Path) -> None:
    """torch.jit.save under the final name in a temporary folder, then moved into place (the archive embeds the
    file's base name)."""
    import torch

    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".export-") as tmp:
        tmp_path = Path(tmp) / path.name
        torch.jit.save(module, str(tmp_path))
        os.replace(tmp_path, path)


def postprocess_detections(boxes, scores, score_thresh: float, nms_thresh: float, topk_candidates: int,
                           detections_per_img: int) -> list:
    """torchvision SSD's postprocess_detections on already decoded, clipped boxes [N, A, 4] and softmax scores
    [N, A, C] (what XSP's nms step does): per class >= 1, scores > score_thresh, the topk_candidates best, then
    batched NMS over all classes and the detections_per_img best. One dict (boxes, scores, labels) per image."""
    import torch
    from torchvision.ops import boxes as box_ops

    out = []
    for image_boxes, image_scores in zip(boxes, scores):
        all_boxes, all_scores, all_labels = [], [], []
        for label in range(1, image_scores.size(-1)):
            score = image_scores[:, label]
            keep = score > score_thresh
            score, box = score[keep], image_boxes[keep]
            score, idxs = score.topk(min(topk_candidates, score.size(0)))
            all_boxes.append(box[idxs])
            all_scores.append(score)
            all_labels.append(torch.full_like(score, label, dtype=torch.int64))
        b, s, l = torch.cat(all_boxes), torch.cat(all_scores), torch.cat(all_labels)
        keep = box_ops.batched_nms(b, s, l, nms_thresh)[:detections_per_img]
        out.append({"boxes": b[keep], "scores": s[keep], "labels": l[keep]})
    return out


def compare_detections(stem: str, wrapper, model, side: int, what: str) -> str:
    """postprocess_detections on the wrapper's outputs vs torchvision's SSD `model` (transform made identity,
    DETECTION_CHECK's thresholds set on it) for one random batch of 2: same labels, scores within 1e-6, boxes within
    1e-4. Exits on a mismatch; returns a summary."""
    import torch
    from torch import nn
    from torchvision.models.detection.image_list import ImageList

    class IdentityTransform(nn.Module):  # no resize, no normalization; postprocess keeps the boxes as they are
        def forward(self, images, targets=None):
            return ImageList(torch.stack(images), [(int(i.shape[-2]), int(i.shape[-1])) for i in images]), targets

        def postprocess(self, detections, image_shapes, original_image_sizes):
            return detections

    for key, value in DETECTION_CHECK.items():
        setattr(model, key, value)
    model.transform = IdentityTransform()
    x = torch.randn(2, 3, side, side, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        boxes, scores = wrapper(x)
        expected = model(list(x))
    n_anchors = boxes.shape[1]
    if list(boxes.shape) != [2, n_anchors, 4] or list(scores.shape) != [2, n_anchors, 91] or \
            boxes.dtype != torch.float32 or scores.dtype != torch.float32:
        sys.exit(f"export_zoo: {stem} ({what}): outputs {list(boxes.shape)} {boxes.dtype}, {list(scores.shape)} "
                 f"{scores.dtype}")
    if not torch.allclose(scores.sum(-1), torch.ones(2, n_anchors), atol=1e-5) or boxes.min() < 0 or boxes.max() > side:
        sys.exit(f"export_zoo: {stem} ({what}): scores are not a softmax over the classes or boxes leave [0, {side}]")
    got = postprocess_detections(boxes, scores, **DETECTION_CHECK)
    worst, count = 0.0, 0
    for i, (g, e) in enumerate(zip(got, expected)):
        if not torch.equal(g["labels"], e["labels"]) or g["boxes"].shape != e["boxes"].shape:
            sys.exit(f"export_zoo: {stem} ({what}): image {i}: {len(g['labels'])} detections after NMS, torchvision "
                     f"gives {len(e['labels'])} (or other labels)")
        if not torch.allclose(g["boxes"], e["boxes"], rtol=0, atol=1e-4) or \
                not torch.allclose(g["scores"], e["scores"], rtol=0, atol=1e-6):
            sys.exit(f"export_zoo: {stem} ({what}): image {i}: boxes or scores differ from torchvision's "
                     f"(max |delta box| {(g['boxes'] - e['boxes']).abs().max().item():.3g})")
        if len(g["boxes"]):
            worst = max(worst, (g["boxes"] - e["boxes"]).abs().max().item())
        count += len(g["labels"])
    return (f"{what}: {count} detections, max |delta box| {worst:.3g}, class scores "
            f"{scores[..., 1:].min().item():.4g}..{scores[..., 1:].max().item():.4g}")


def check_detection(path: Path, model, stem: str, side: int) -> None:
    """Loads the saved wrapper back and checks that wrapper + postprocess_detections gives what torchvision's SSD
    gives (compare_detections). The random-init backbone's features vanish (~1e-13), so its scores are all 1/91 and
    its boxes the anchors: the same comparison runs again on a copy whose Conv and BatchNorm biases are random
    (N(0, 0.5), seed 1), wrapped and scripted from the same source in memory, where scores and boxes vary."""
    import copy
    import torch
    from torch import nn

    perturbed = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for mod in perturbed.modules():
            if isinstance(mod, (nn.BatchNorm2d, nn.Conv2d)) and mod.bias is not None:
                mod.bias.copy_(torch.randn(mod.bias.shape, generator=gen) * 0.5)
    saved = torch.jit.load(str(path))
    n_anchors = saved.anchors.shape[0]
    first = compare_detections(stem, saved, model, side, "saved graph")
    wrapper = torch.jit.script(sys.modules["xsp_tasks"].ssdlite_detector(perturbed, side))
    second = compare_detections(stem, wrapper, perturbed, side, "random biases")
    print(f"  {stem}: detection check passed: wrapper + NMS == torchvision SSD, batch 2, {n_anchors} anchors, "
          f"score > {DETECTION_CHECK['score_thresh']}; {first}; {second}", file=sys.stderr)


def check_segmentation(path: Path, model, stem: str, side: int) -> None:
    """Loads the saved module back: forward returns Dict[str, Tensor] whose "out" is [N, 21, H, W] and equals the
    eager model's for a random batch of 2."""
    import torch

    m = torch.jit.load(str(path))
    ret = str(m.forward.schema.returns[0].type)
    x = torch.randn(2, 3, side, side, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        got, expected = m(x)["out"], model(x)["out"]
    if ret != "Dict[str, Tensor]" or list(got.shape) != [2, 21, side, side] or got.dtype != torch.float32:
        sys.exit(f"export_zoo: {stem}: forward returns {ret}, out {list(got.shape)} {got.dtype}")
    delta = (got - expected).abs().max().item()
    if delta > 1e-5:
        sys.exit(f"export_zoo: {stem}: the scripted output differs from the eager model's (max |delta| {delta:.3g})")
    print(f"  {stem}: segmentation check passed: forward -> Dict[str, Tensor], out [2, 21, {side}, {side}] == eager "
          f"(max |delta| {delta:.3g})", file=sys.stderr)


def export_task(stem: str, path: Path) -> str:
    """ssdlite_mobilenet_v3 (wrapped by scripts/xsp_tasks.py) or lraspp_mobilenet_v3 (as is), TorchScript only."""
    import torch
    import torchvision

    torch.set_num_threads(1)
    constructor, kwargs, side = TASKS[stem]
    torch.manual_seed(0)
    model = getattr(torchvision.models.detection if stem.startswith("ssd") else torchvision.models.segmentation,
                    constructor)(weights=None, **kwargs).eval()
    if stem.startswith("ssd"):
        module = torch.jit.script(load_fixed("xsp_tasks").ssdlite_detector(model, side))
        save_script(module, path)
        check_detection(path, model, stem, side)
    else:
        module = torch.jit.script(model)
        save_script(module, path)
        check_segmentation(path, model, stem, side)
    return "torch.jit.script"


def check_license_labels() -> list:
    """The committed models/license_labels.txt must list the corpus' files (corpus_files()), one per line."""
    names = [f.name for f in corpus_files()]
    labels = (REPO_MODELS / LICENSE_LABELS).read_text().splitlines()
    if labels != names:
        sys.exit(f"export_zoo: models/{LICENSE_LABELS} ({len(labels)} labels) does not list the license texts of "
                 f"{CORPUS_DIR} ({len(names)}: {', '.join(names)}); update it and re-record the BERT checksums")
    return names


def check_bert_mask(path: Path, stem: str, max_len: int) -> None:
    """Loads the saved module back: the logits of a right-padded batch equal (within 1e-5) those of each sequence
    run alone without padding, so the attention mask hides the padding."""
    import torch

    m = torch.jit.load(str(path))
    gen = torch.Generator().manual_seed(0)
    lengths = [max_len, max_len // 2, 5]
    ids = torch.full((len(lengths), max_len), 3, dtype=torch.long)  # pad id 3
    mask = torch.zeros(len(lengths), max_len, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(4, TOKENIZER_VOCAB, (n,), generator=gen)
        ids[i, 0] = 1  # <s>
        mask[i, :n] = 1
    worst = 0.0
    with torch.inference_mode():
        batch = m(ids, mask)
        if list(batch.shape) != [len(lengths), m.num_labels] or batch.dtype != torch.float32:
            sys.exit(f"export_zoo: {stem}: logits {list(batch.shape)} {batch.dtype}")
        for i, n in enumerate(lengths):
            alone = m(ids[i:i + 1, :n], mask[i:i + 1, :n])[0]
            worst = max(worst, (alone - batch[i]).abs().max().item())
    if worst > 1e-5:
        sys.exit(f"export_zoo: {stem}: padded and unpadded logits differ (max |delta| {worst:.3g}): the mask leaks")
    print(f"  {stem}: attention mask check passed: padded batch == each sequence alone, lengths {lengths} of "
          f"{max_len}, max |delta logit| {worst:.3g}", file=sys.stderr)


def export_bert(stem: str, path: Path) -> str:
    import torch

    torch.set_num_threads(1)
    labels = check_license_labels()
    model = load_fixed("xsp_bert").build(dict(BERT[stem], num_labels=len(labels)))
    save_script(torch.jit.script(model), path)
    check_bert_mask(path, stem, 64 if stem == "bert_tiny" else 128)
    return "torch.jit.script"


def main() -> int:
    # TorchScript writes a module's constants (e.g. Linear's `out_features : Final[int]`) in the iteration
    # order of a Python set, which follows string hashing, randomized per process. Fix the hash seed, or two
    # exports of the same model differ in a few bytes and no checksum can be recorded. It must be set before
    # the interpreter starts, hence the re-exec.
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50",
                    help="comma-separated model names or 'all' (known: %s)" % ", ".join(MODELS))
    ap.add_argument("--out", type=Path, default=REPO_MODELS, help="output folder (default: %(default)s)")
    ap.add_argument("--record", action="store_true",
                    help="write the digest into the manifest (the copy in --out, or models/*.yaml)")
    ap.add_argument("--force", action="store_true", help="export even when the file already matches")
    ap.add_argument("--export-one", nargs=2, metavar=("NAME", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.export_one:
        stem = args.export_one[0]
        exporter = export_gpt2 if stem in GPT2 else export_task if stem in TASKS else export_bert if stem in BERT \
            else export
        print(exporter(stem, Path(args.export_one[1])))
        return 0

    names = [m for m in MODELS if m not in LARGE] if args.models == "all" else [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown or not names:
        sys.exit(f"export_zoo: unknown model(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(MODELS)}")

    failures = []
    for stem in names:
        manifest = prepare_out(stem, args.out)
        graphs = artifacts(stem, args.out)
        expected = {g.name: manifest_checksum(manifest, g.name) for g in graphs}
        t0 = time.monotonic()
        if not args.force and all(g.is_file() and sha256_file(g) == expected[g.name] for g in graphs):
            for g in graphs:
                print(f"{stem:13s} {g}  {g.stat().st_size / 1e6:8.1f} MB  sha256:{expected[g.name]}  "
                      f"(up to date, skipped; --force to redo)")
            continue
        if stem in TEXT:
            text_files = [g for g in graphs if g.name in (TOKENIZER, PROMPTS)]
            if args.force or not all(g.is_file() and sha256_file(g) == expected[g.name] for g in text_files):
                write_text_assets(args.out)
            else:
                print(f"  {stem}: reusing {TOKENIZER} and {PROMPTS} in {args.out} (checksums match)", file=sys.stderr)
        # One fresh interpreter per model: TorchScript mangles the names of classes it has already compiled in
        # the process (___torch_mangle_N), so a model's bytes would depend on which models came before it.
        child = subprocess.run([sys.executable, __file__, "--export-one", stem, str(graphs[0])],
                               stdout=subprocess.PIPE, text=True)
        if child.returncode != 0:
            sys.exit(f"export_zoo: exporting {stem} failed (exit {child.returncode})")
        method = child.stdout.strip().splitlines()[-1]
        secs = time.monotonic() - t0
        for g in graphs:
            digest = sha256_file(g)
            how = {".pt": method, ".onnx": f"torch.onnx opset {ONNX_OPSET}", ".model": "spm_train",
                   ".txt": "prompts"}.get(g.suffix, "held-out split")
            print(f"{stem:13s} {g}  {g.stat().st_size / 1e6:8.1f} MB  sha256:{digest}  {secs:6.1f} s  {how}",
                  flush=True)
            if digest == expected[g.name]:
                continue
            if stem in TRAINED and g.name != TRAINED[stem] and args.out.resolve() != REPO_MODELS.resolve():
                # Trained here: the weights' last bits follow the CPU's floating-point code paths (AVX2 or AVX-512
                # kernels sum in other orders), so another machine's digest cannot be matched. The copy of the
                # manifest beside this export records what this machine produced; the data split above must match.
                rewrite_checksum(manifest, g.name, "sha256:" + digest)
                print(f"  {stem}: trained on this machine; its {g.name} differs from the committed "
                      f"sha256:{expected[g.name]} (floating-point order of this CPU), recorded in {manifest}",
                      file=sys.stderr)
                continue
            if args.record:
                rewrite_checksum(manifest, g.name, "sha256:" + digest)
                print(f"  recorded sha256:{digest} for {g.name} in {manifest}")
            else:
                failures.append(f"{stem}: {g} has sha256:{digest} but {manifest} expects "
                                f"sha256:{expected[g.name]} (another torch/torchvision version exports other "
                                f"bytes; rerun with --record to write the new digest into the manifest)")
        if args.record and EXPORT_RE.search(manifest.read_text()):
            rewrite(manifest, EXPORT_RE, method)
    for f in failures:
        print(f"export_zoo: checksum mismatch: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
