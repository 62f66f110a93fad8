#!/usr/bin/env bash
# The style checks CI runs (.ci/run, after the tests): every tracked C++ file laid out as .clang-format says
# (clang-format, Debian's clang-format package), and .clang-tidy's checks (readability-function-size) over every
# library source in build/compile_commands.json (scripts/build.sh writes it). Exits non-zero naming the files.
#   scripts/check_style.sh          check
#   scripts/check_style.sh --fix    rewrite the files clang-format would change
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[ -n "$fmt" ] && [ -n "$tidy" ] || { echo "check_style: clang-format and clang-tidy are missing (Debian: clang-format clang-tidy)"; exit 1; }
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu')
if [ "${1:-}" = --fix ]; then
  "$fmt" -i "${files[@]}"
  exit 0
fi
if ! "$fmt" --dry-run --Werror "${files[@]}" 2> /tmp/check_style_format.$$; then
  grep -o '^[^:]*:[0-9]*:[0-9]*: error' /tmp/check_style_format.$$ | cut -d: -f1 | sort -u | sed 's/^/check_style: not formatted: /'
  rm -f /tmp/check_style_format.$$
  echo "check_style: run scripts/check_style.sh --fix"
  exit 1
fi
rm -f /tmp/check_style_format.$$
echo "check_style: ${#files[@]} C++ files formatted as .clang-format says"
[ -f build/compile_commands.json ] || { echo "check_style: build/compile_commands.json is missing (scripts/build.sh)"; exit 1; }
# The libraries are built in unity batches (CMakeLists.txt, XSP_UNITY_BUILD): the database names the batch files
# (build/CMakeFiles/*/Unity/unity_N_cxx.cxx). clang-tidy gets a copy with one entry per source of each batch, under
# the batch's command, so it checks every source alone (and so that each source includes what it uses).
db=$(mktemp -d /tmp/xsp-tidy-db.XXXXXX)
trap 'rm -rf "$db"' EXIT
mapfile -t sources < <(python3 - "$db" <<'PY'
import json, os, re, sys
root = os.getcwd()
entries, seen = [], set()
for e in json.load(open("build/compile_commands.json")):
    path = os.path.join(e["directory"], e["file"])
    files = [path]
    if "/Unity/" in path:
        files = re.findall(r'^#include "([^"]+)"', open(path).read(), re.M)
    for source in files:
        f = os.path.relpath(source, root)
        entry = dict(e, file=source)
        if "command" in entry:
            entry["command"] = entry["command"].replace(e["file"], source)
        if "arguments" in entry:
            entry["arguments"] = [source if a == e["file"] else a for a in entry["arguments"]]
        entries.append(entry)
        # Clang 14 cannot parse Debian LibTorch 1.13 headers with libstdc++ 12 (c10::IValue is incomplete there): the
        # LibTorch predictor is left to the compiler (g++ builds it) and reviewed by hand.
        if f.startswith("src/predictors/libtorch/"):
            continue
        if f.startswith("src/") and f.endswith(".cc") and f not in seen:
            seen.add(f)
            print(f)
json.dump(entries, open(sys.argv[1] + "/compile_commands.json", "w"))
PY
)
[ "${#sources[@]}" -gt 0 ] || { echo "check_style: no library sources found in build/compile_commands.json"; exit 1; }
report=$(printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -n 4 "$tidy" -p "$db" --quiet 2>&1 || true)
if grep -E ": (warning|error):" <<< "$report"; then
  echo "check_style: .clang-tidy's checks fail (above)"
  exit 1
fi
echo "check_style: ${#sources[@]} library sources within .clang-tidy's checks"
