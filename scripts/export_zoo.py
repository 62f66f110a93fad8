#!/usr/bin/python3
"""Export the XSP model zoo (models/*.yaml) to TorchScript files that the LibTorch predictor loads.

Every model is a torchvision architecture built after torch.manual_seed(0), in eval mode, with random
weights: the zoo is for performance profiling, so no weights are downloaded and the export works offline.
With torch 1.13 and a fixed PYTHONHASHSEED (set here) the export is bit-for-bit deterministic, so the manifests can carry the files' SHA-256 and
XSP verifies it before use. Another torch version gives other bytes: re-export with --record then.

Run it with the interpreter that has torch (Debian: /usr/bin/python3):
    scripts/export_zoo.py --models resnet50                # into models/, check against the manifest
    scripts/export_zoo.py --models all --record            # (re)write the checksums in models/*.yaml
    scripts/export_zoo.py --models resnet18 --out /tmp/zoo # copy manifest + labels, export there
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
}

CHECKSUM_RE = re.compile(r"^(\s*checksum:\s*)(\S+)(.*)$", re.M)
EXPORT_RE = re.compile(r"^(\s*export:\s*)(\S+)(.*)$", re.M)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def manifest_checksum(manifest: Path) -> str:
    m = CHECKSUM_RE.search(manifest.read_text())
    if not m or not m.group(2).startswith("sha256:"):
        sys.exit(f"export_zoo: {manifest}: no 'checksum: sha256:...' line under model:")
    return m.group(2)[len("sha256:"):]


def rewrite(manifest: Path, regex: re.Pattern, value: str) -> None:
    text = manifest.read_text()
    new, n = regex.subn(lambda m: m.group(1) + value + m.group(3), text, count=1)
    if n == 0:
        sys.exit(f"export_zoo: {manifest}: cannot find the line to rewrite ({regex.pattern})")
    manifest.write_text(new)


def prepare_out(stem: str, out: Path) -> Path:
    """Returns the manifest that describes OUT/<stem>.pt, copying it (and the labels) when OUT is not models/."""
    src = REPO_MODELS / f"{stem}.yaml"
    if not src.is_file():
        sys.exit(f"export_zoo: no manifest {src}")
    if out.resolve() == REPO_MODELS.resolve():
        return src
    out.mkdir(parents=True, exist_ok=True)
    dst = out / src.name
    # A copy may carry a checksum recorded earlier for this torch version (--record): keep it when the
    # file it describes is still there, so that a repeated run skips the export instead of redoing it.
    kept = None
    pt = out / f"{stem}.pt"
    if dst.is_file() and pt.is_file():
        old = manifest_checksum(dst)
        if old != manifest_checksum(src) and sha256_file(pt) == old:
            kept = old
    shutil.copyfile(src, dst)
    if kept:
        rewrite(dst, CHECKSUM_RE, "sha256:" + kept)
    shutil.copyfile(REPO_MODELS / LABELS, out / LABELS)
    return dst


def export(stem: str, path: Path) -> str:
    """Builds the model and saves its TorchScript to `path`; returns the method used."""
    import torch
    import torchvision

    kwargs, side, preferred = MODELS[stem]
    torch.manual_seed(0)
    model = getattr(torchvision.models, stem)(weights=None, **kwargs).eval()
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
            module = torch.jit.trace(model, torch.zeros(1, 3, side, side))
    # TorchScript's zip archive embeds the file's base name, so the bytes (and the checksum) depend on it:
    # save under the final name inside a temporary directory, then move the file into place.
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".export-") as tmp:
        tmp_path = Path(tmp) / path.name
        torch.jit.save(module, str(tmp_path))
        os.replace(tmp_path, path)
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
        pt = args.out / f"{stem}.pt"
        expected = manifest_checksum(manifest)
        t0 = time.monotonic()
        if not args.force and pt.is_file() and sha256_file(pt) == expected:
            print(f"{stem:13s} {pt}  {pt.stat().st_size / 1e6:8.1f} MB  sha256:{expected}  "
                  f"(up to date, skipped; --force to redo)")
            continue
        # One fresh interpreter per model: TorchScript mangles the names of classes it has already compiled in
        # the process (___torch_mangle_N), so a model's bytes would depend on which models came before it.
        child = subprocess.run([sys.executable, __file__, "--export-one", stem, str(pt)],
                               stdout=subprocess.PIPE, text=True)
        if child.returncode != 0:
            sys.exit(f"export_zoo: exporting {stem} failed (exit {child.returncode})")
        method = child.stdout.strip().splitlines()[-1]
        digest = sha256_file(pt)
        secs = time.monotonic() - t0
        print(f"{stem:13s} {pt}  {pt.stat().st_size / 1e6:8.1f} MB  sha256:{digest}  {secs:6.1f} s  {method}",
              flush=True)
        if digest != expected:
            if args.record:
                rewrite(manifest, CHECKSUM_RE, "sha256:" + digest)
                print(f"  recorded sha256:{digest} in {manifest}")
            else:
                failures.append(f"{stem}: {pt} has sha256:{digest} but {manifest} expects sha256:{expected} "
                                f"(another torch/torchvision version exports other bytes; rerun with --record "
                                f"to write the new digest into the manifest)")
        if args.record and EXPORT_RE.search(manifest.read_text()):
            rewrite(manifest, EXPORT_RE, method)
    for f in failures:
        print(f"export_zoo: checksum mismatch: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
