#!/usr/bin/env bash
# xsp bench-serve against a serving process on a lent GPU (issue 27; docs/serving.md, BENCHMARKS.md "Serving
# engines"). Run from the repository root after `BUILD_TARGETS="xsp xsp_inject" scripts/gpu-build.sh` (the build needs
# libcurl's headers: .carry/debs holds Debian's libcurl4-openssl-dev). Everything lands in $OUT/serve:
#  - scripts/gpu/serve_hf.py (a random-weight Llama, static batches of up to 8, NVTX "prefill"/"decode_step" ranges)
#    started under `xsp profile --signal --trace-level kernel`, so that its steps and kernels can be collected;
#  - closed loops at concurrency 1 and 4: xsp bench-serve, scripts/gpu/serve_client.py (a connection per request) and
#    serve_client.py --keep-alive in turn, $REPS rounds (the TTFT/TPOT agreement check: same server, same load, no
#    schedule randomness);
#  - xsp bench-serve at the request rates $RATES with --server-pid (one window each) and the serving-tail join, each
#    followed by serve_client.py --keep-alive at the same rate (no collection during it);
#  - agreement.md: each client's figures against the server's own times for the same requests, per load
#    (--request-log; scripts/gpu/serve_agreement.py).
# PARTS picks "closed" and/or "rates" (default both); CONCURRENCY the closed loops' concurrencies (default "1 4");
# PIN_SERVER / PIN_CLIENT are taskset prefixes that keep the server and the clients on separate cores (default
# cores 2-7 and 8-11), so that neither client steals the other's or the server's CPU. SERVER_ARGS go to serve_hf.py
# (e.g. "--fake-decode-ms 5": the script's dry run without a GPU, X=./build/xsp PIN_SERVER= PIN_CLIENT=).
# Time on the H200: about 30 s to start the server, 19 s a closed round of 40 requests at concurrency 1 (three
# clients: about 1 min per REPS), 10-15 s at concurrency 4, 25-50 s a rate with its Python twin; REPS=4 N=40 with both
# concurrencies and three rates took 9 min, past a 10-minute device call's room for the analyses: split PARTS then.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/xsp-out}
ART=$OUT/serve
mkdir -p "$ART"
X=${X:-./build-gpu/xsp}
PORT=${PORT:-8000}
REPS=${REPS:-2}
RATES=${RATES:-2 4 8}
N=${N:-60}
URL=http://127.0.0.1:$PORT/v1
PIN_SERVER=${PIN_SERVER-taskset -c 2-7}
PIN_CLIENT=${PIN_CLIENT-taskset -c 8-11}
want() { [[ " ${PARTS:-closed rates} " == *" $1 "* ]]; }
stamp() { echo "$(date +%T) $*" | tee -a "$ART/report.txt"; }
py_figures() {
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('TTFT p50 %.3f TPOT p50 %.3f ms' % (d['ttft_ns']['median']/1e6, d['tpot_ns']['median']/1e6))" "$1" 2>&1 | tail -1
}
export XSP_STORE=$ART/serve.db

$PIN_SERVER $X profile --signal --trace-level kernel -- python3 scripts/gpu/serve_hf.py --port "$PORT" ${SERVER_ARGS:-} --request-log "$ART/server_requests.jsonl" > "$ART/server.log" 2>&1 &
profile_pid=$!
for _ in $(seq 120); do
  curl -sf "$URL/models" > /dev/null && break
  sleep 1
done
stamp "server up: $(curl -s "$URL/models")"
server_pid=$(pgrep -f "serve_hf.py --port $PORT" | head -1)

for c in ${CONCURRENCY:-1 4}; do
  want closed || break
  for rep in $(seq "$REPS"); do
    $PIN_CLIENT $X bench-serve --url "$URL" --model llama-bench --synthetic --prompt-tokens 256:256 --output-tokens 64 \
      --max-concurrency $c --num-requests "$N" > "$ART/closed_xsp_${c}_$rep.txt" 2>&1
    stamp "closed c=$c xsp rc=$? $(grep -E 'Median (TTFT|TPOT)' "$ART/closed_xsp_${c}_$rep.txt" | tr -s ' ' | tr '\n' ' ')"
    $PIN_CLIENT python3 scripts/gpu/serve_client.py --url "$URL" --model llama-bench --max-concurrency $c --requests "$N" \
      --prompt-words 256 --output-tokens 64 > "$ART/closed_py_${c}_$rep.json" 2>&1
    stamp "closed c=$c python rc=$? $(py_figures "$ART/closed_py_${c}_$rep.json")"
    $PIN_CLIENT python3 scripts/gpu/serve_client.py --url "$URL" --model llama-bench --max-concurrency $c --requests "$N" \
      --prompt-words 256 --output-tokens 64 --keep-alive > "$ART/closed_pyka_${c}_$rep.json" 2>&1
    stamp "closed c=$c python keep-alive rc=$? $(py_figures "$ART/closed_pyka_${c}_$rep.json")"
  done
done

for rate in $RATES; do
  want rates || break
  $PIN_CLIENT $X bench-serve --url "$URL" --model llama-bench --synthetic --prompt-tokens 128:512 --output-tokens 64 \
    --request-rate "$rate" --num-requests "$N" --ttft-bound-ms 500 --tpot-bound-ms 50 --server-pid "$server_pid" \
    > "$ART/rate_$rate.txt" 2>&1
  stamp "rate $rate rc=$? $(grep -E 'evaluation' "$ART/rate_$rate.txt" | tail -1)"
  $PIN_CLIENT python3 scripts/gpu/serve_client.py --url "$URL" --model llama-bench --request-rate "$rate" --requests "$N" \
    --prompt-words 320 --output-tokens 64 --keep-alive > "$ART/rate_pyka_$rate.json" 2>&1
  stamp "rate $rate python keep-alive rc=$? $(py_figures "$ART/rate_pyka_$rate.json")"
done
$X list > "$ART/list.txt" 2>&1
for id in $($X list 2>/dev/null | awk '$1 ~ /^[0-9]+$/ {print $1}'); do
  $X analyze "$id" --analysis serving-tail > "$ART/tail_$id.txt" 2>&1
done
kill -INT "$profile_pid" 2>/dev/null
wait "$profile_pid" 2>/dev/null
stamp "server stopped"
# Each client against the server's own times for its requests: the server's drift between rounds cancels.
shopt -s nullglob
python3 scripts/gpu/serve_agreement.py "$ART/server_requests.jsonl" --xsp-db "$XSP_STORE" \
  --python "$ART"/closed_py*.json "$ART"/rate_py*.json > "$ART/agreement.md" 2>&1
stamp "agreement rc=$? $(grep -E 'differ by' "$ART/agreement.md" | tr '\n' ' ')"
