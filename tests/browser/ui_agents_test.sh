#!/usr/bin/env bash
# The web UI over a shared PostgreSQL store with a real agent (docs/deploy.md): a throw-away PostgreSQL
# (tests/pg/pg_cluster.sh), `xsp serve` on it, one `xsp agent`, then tests/browser/ui_agents_check.mjs in headless
# Chromium. Exit 77 (skipped) without node, Chromium, the npm packages, a server build or PostgreSQL.
# Usage: ui_agents_test.sh XSP SOURCE_DIR OUT_DIR TEST_ZOO
set -euo pipefail
xsp=$1 src=$2 out=$3 zoo=$4
if [ -z "${XSP_TEST_PG_URL:-}" ]; then exec "$src/tests/pg/pg_cluster.sh" run "$0" "$@"; fi
source "$src/tests/browser/needs_browser.sh"
if "$xsp" serve --help 2>&1 | grep -q "built without the server"; then echo "skipped: built without the server"; exit 77; fi

rm -rf "$out" && mkdir -p "$out"
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
common=(--zoo "$zoo" --store "$XSP_TEST_PG_URL")

"$xsp" "${common[@]}" serve --port 0 >"$tmp/serve.out" 2>"$tmp/serve.err" &
pids+=($!)
url=
for _ in $(seq 1 100); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$tmp/serve.out" | head -1 || true)
  [[ -n $url ]] && break
  sleep 0.1
done
[[ -n $url ]] || { echo "xsp serve printed no URL"; cat "$tmp/serve.out" "$tmp/serve.err"; exit 1; }
"$xsp" "${common[@]}" agent --name ui-agent --poll-s 0.5 >"$tmp/agent.log" 2>&1 &
pids+=($!)

status=0
timeout 300 node "$src/tests/browser/ui_agents_check.mjs" "$url/" "$out" Digits_CNN ui-agent || status=$?
if ((status != 0)); then echo "--- agent log"; tail -n 20 "$tmp/agent.log"; echo "--- server"; tail -n 20 "$tmp/serve.err"; fi
kill -TERM "${pids[1]}"
agent_status=0
wait "${pids[1]}" || agent_status=$?
if ((agent_status != 0 && agent_status != 143)); then echo "xsp agent exited $agent_status after SIGTERM"; status=1; fi
kill -INT "${pids[0]}"
wait "${pids[0]}" || { echo "xsp serve exited non-zero after SIGINT"; status=1; }
pids=()
exit $status
