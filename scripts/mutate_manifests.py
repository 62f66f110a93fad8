#!/usr/bin/env python3
"""Mutated model manifests through the real CLI: no crash, no hang, and a message for every rejected file.

    scripts/mutate_manifests.py [--count 1500] [--seed 0] [--xsp build/xsp] [--jobs N]

Makes COUNT mutants of the zoo's manifests (models/*.yaml): byte flips, insertions, deletions, duplicated or
dropped lines, values replaced by huge numbers, long strings, negative or fractional numbers, lists, maps, YAML
tags, anchors and aliases. Each goes alone into a zoo folder (m00000.yaml ...) and `xsp --zoo FOLDER models` runs
on it (N at a time, 60 s limit each). Every mutant must come out as a listed model (exit 0) or a rejection whose
message names the file. Prints the counts and exits 1 on any crash, hang or silent rejection."""
import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")

VALUES = ["4294967520", "18446744073709551616", "-1", "0", "1e308", "nan", ".inf", "-.inf", "3.5", "''", "~",
          "[]", "{}", "[1, [2, [3]]]", "{a: {b: {c: 1}}}", "!!binary aGVsbG8=", "&a x", "*a", "'" + "a" * 40000 + "'",
          "99999999999.0.0", "1.0.0-" + "a" * 50000, "\"\\u0000\"", "|\n  multi\n  line", "yes", "0x10"]


def mutate(text, rng):
    lines = text.split("\n")
    kind = rng.randrange(8)
    if kind == 0:  # flip bytes
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 8)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == 1:  # insert random bytes
        b = bytearray(text.encode())
        at = rng.randrange(len(b) + 1)
        b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        return bytes(b)
    if kind == 2:  # delete a range
        b = text.encode()
        a = rng.randrange(len(b))
        return b[:a] + b[a + rng.randint(1, 200):]
    if kind == 3:  # duplicate or drop lines
        i = rng.randrange(len(lines))
        if rng.random() < 0.5:
            lines.insert(i, lines[rng.randrange(len(lines))])
        else:
            del lines[i]
        return "\n".join(lines).encode()
    if kind == 4:  # replace a scalar value
        cands = [i for i, l in enumerate(lines) if re.match(r"^\s*-?\s*[A-Za-z_]+:\s*\S", l)]
        if cands:
            i = rng.choice(cands)
            key = lines[i].split(":", 1)[0]
            lines[i] = key + ": " + rng.choice(VALUES)
        return "\n".join(lines).encode()
    if kind == 5:  # re-indent a line
        i = rng.randrange(len(lines))
        lines[i] = " " * rng.randint(0, 9) + lines[i].lstrip()
        return "\n".join(lines).encode()
    if kind == 6:  # swap two lines
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines).encode()
    # splice two manifests
    return text.encode()[: rng.randrange(len(text) + 1)]


def run(xsp, zoo):
    try:
        p = subprocess.run([xsp, "--zoo", zoo, "models"], capture_output=True, text=True, errors="replace",
                           timeout=60)  # noqa: S603
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--xsp", default=os.path.join(ROOT, "build", "xsp"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sources = sorted(os.path.join(ROOT, "models", f) for f in os.listdir(os.path.join(ROOT, "models"))
                     if f.endswith(".yaml"))
    texts = [open(f, encoding="utf-8").read() for f in sources]
    crashes, hangs, silent, listed, problems = [], [], [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        zoos = []
        for n in range(args.count):
            d = os.path.join(tmp, f"z{n:05d}")
            os.mkdir(d)
            with open(os.path.join(d, f"m{n:05d}.yaml"), "wb") as f:
                f.write(mutate(rng.choice(texts), rng))
            zoos.append(d)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(lambda d: run(args.xsp, d), zoos))
        for d, (rc, out) in zip(zoos, results):
            name = os.path.basename(d).replace("z", "m") + ".yaml"
            if rc == "timeout":
                hangs.append(name)
            elif rc < 0 or rc >= 128:
                crashes.append(f"{name} (rc {rc})")
            elif name in out:
                problems += 1  # rejected, and the message names the file
            elif rc == 0 and out.strip():
                listed += 1  # accepted: the model is listed
            else:
                silent.append(f"{name} (rc {rc}): {out.strip()[:200]!r}")
    print(f"{args.count} mutants (seed {args.seed}): {len(crashes)} crashes, {len(hangs)} hangs, "
          f"{len(silent)} without a message; {problems} rejected with a message naming the file, "
          f"{listed} accepted or named otherwise")
    for what, xs in (("crash", crashes), ("hang", hangs), ("silent", silent)):
        for x in xs[:20]:
            print(f"  {what}: {x}")
    return 1 if crashes or hangs or silent else 0


if __name__ == "__main__":
    sys.exit(main())
