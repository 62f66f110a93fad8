#!/usr/bin/env bash
# The web UI in a real browser (issue 13): a store with the recorded H200 kernel-level fixture and CPU evaluations
# made here, `xsp serve` on a free loopback port, then tests/browser/ui_check.mjs drives headless Chromium through
# list → filter → open → compare → submit → watch → open. Screenshots are left in OUT_DIR. The server is stopped
# with SIGINT and must exit 0. Exit 77 (skipped) without node, Chromium, the npm packages or a server build.
# Usage: ui_test.sh XSP SOURCE_DIR OUT_DIR TEST_ZOO
set -euo pipefail
xsp=$1 src=$2 out=$3 zoo=$4
source "$src/tests/browser/needs_browser.sh"
if "$xsp" serve --help 2>&1 | grep -q "built without the server"; then echo "skipped: built without the server"; exit 77; fi

rm -rf "$out" && mkdir -p "$out"
tmp=$(mktemp -d)
server=
cleanup() {
  if [[ -n $server ]] && kill -0 "$server" 2>/dev/null; then kill -KILL "$server"; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

store=$tmp/store.db
cp "$src/tests/fixtures/gpu/resnet18_bs1_kernel_h200.db" "$store"   # evaluation 1: ResNet-18 on an H200
common=(--zoo "$zoo" --store "$store")
"$xsp" "${common[@]}" evaluate digits_cnn --synthetic --trace-level framework --leveled --batch-sizes 1,8 \
  --warmup-min-ms 50 --min-duration-ms 200 --no-progress >/dev/null
"$xsp" "${common[@]}" evaluate digits_cnn --synthetic --batch-sizes 1,8 --warmup-min-ms 50 --min-duration-ms 200 \
  --no-progress >/dev/null

"$xsp" "${common[@]}" serve --port 0 >"$tmp/serve.out" 2>"$tmp/serve.err" &
server=$!
url=
for _ in $(seq 1 100); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$tmp/serve.out" | head -1 || true)
  [[ -n $url ]] && break
  kill -0 "$server" 2>/dev/null || { cat "$tmp/serve.err"; echo "xsp serve exited early"; exit 1; }
  sleep 0.1
done
[[ -n $url ]] || { echo "xsp serve printed no URL"; cat "$tmp/serve.out" "$tmp/serve.err"; exit 1; }

status=0
timeout 600 node "$src/tests/browser/ui_check.mjs" "$url/" "$out" Digits_CNN || status=$?
kill -INT "$server"
server_status=0
wait "$server" || server_status=$?
server=
if ((server_status != 0)); then echo "xsp serve exited $server_status after SIGINT"; cat "$tmp/serve.err"; status=1; fi
echo "screenshots in $out"
exit $status
