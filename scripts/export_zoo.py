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

ONNX_OPSET = 10
# Graph file suffixes, in the order they are exported.
SUFFIXES = (".pt", ".onnx")

EXPORT_RE = re.compile(r"^(\s*export:\s*)(\S+)(.*)$", re.M)


def checksum_re(filename: str) -> re.Pattern:
    """Matches the checksum line that follows `graph_path: FILENAME` (every framework entry using the file)."""
    return re.compile(r"^(\s*(?:- )?\s*(?:graph_path|dataset_path):\s*" + re.escape(filename) +
                      r"\s*\n\s*(?:dataset_)?checksum:\s*)(\S+)()$", re.M)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def manifest_checksum(manifest: Path, filename: str) -> str:
    """The digest recorded for graph file `filename`; every entry naming the file must agree."""
    found = {m.group(2) for m in checksum_re(filename).finditer(manifest.read_text())}
    if not found or any(not d.startswith("sha256:") for d in found):
        sys.exit(f"export_zoo: {manifest}: no 'graph_path: {filename}' followed by 'checksum: sha256:...'")
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
    for suffix in SUFFIXES:
        name = stem + suffix
        graph = out / name
        if dst.is_file() and graph.is_file() and checksum_re(name).search(dst.read_text()):
            old = manifest_checksum(dst, name)
            if old != manifest_checksum(src, name) and sha256_file(graph) == old:
                kept[name] = old
    shutil.copyfile(src, dst)
    for name, digest in kept.items():
        rewrite(dst, checksum_re(name), "sha256:" + digest, count=0)
    for labels in set(re.findall(r"^\s*labels:\s*(\S+)\s*$", src.read_text(), re.M)) | {LABELS}:
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
        print(export(args.export_one[0], Path(args.export_one[1])))
        return 0

    names = list(MODELS) if args.models == "all" else [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown or not names:
        sys.exit(f"export_zoo: unknown model(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(MODELS)}")

    failures = []
    for stem in names:
        manifest = prepare_out(stem, args.out)
        graphs = [args.out / f"{stem}{suffix}" for suffix in SUFFIXES]
        if stem in TRAINED:
            graphs.append(args.out / TRAINED[stem])
        expected = {g.name: manifest_checksum(manifest, g.name) for g in graphs}
        t0 = time.monotonic()
        if not args.force and all(g.is_file() and sha256_file(g) == expected[g.name] for g in graphs):
            for g in graphs:
                print(f"{stem:13s} {g}  {g.stat().st_size / 1e6:8.1f} MB  sha256:{expected[g.name]}  "
                      f"(up to date, skipped; --force to redo)")
            continue
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
            how = {".pt": method, ".onnx": f"torch.onnx opset {ONNX_OPSET}"}.get(g.suffix, "held-out split")
            print(f"{stem:13s} {g}  {g.stat().st_size / 1e6:8.1f} MB  sha256:{digest}  {secs:6.1f} s  {how}",
                  flush=True)
            if digest == expected[g.name]:
                continue
            if args.record:
                rewrite(manifest, checksum_re(g.name), "sha256:" + digest, count=0)
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
