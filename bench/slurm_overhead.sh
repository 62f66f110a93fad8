#!/usr/bin/env bash
# Issue 28's benchmark: what a task costs around its evaluation, Slurm against the PostgreSQL agents, on this machine.
# N null evaluations (Digits_CNN, synthetic inputs, 1 warm-up and 2 measured batches: about a second of work each),
# one at a time in both (Slurm: --max-concurrent 1; queue: one `xsp agent`), so the per-task figure is the engine's:
#   standalone  wall time of one `xsp evaluate` process (load, run, store): the work itself
#   slurm       (sbatch of the array -> the last result stored) / N   (sbatch, scheduling, slurmd's launch, the
#               batch script, a fresh xsp process per task, tagging)
#   agents      (first `xsp submit` -> the last job done) / N         (one long-lived agent: claim, run, publish)
# Each REPS times on a throw-away single-host Slurm (tests/slurm/slurm_cluster.sh) and PostgreSQL (tests/pg). Prints
# each repetition and mean ± standard deviation per task in ms.
# Usage: bench/slurm_overhead.sh XSP ZOO [N=30] [REPS=3]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${XSP_TEST_PG_URL:-}" ]; then exec "$here/../tests/pg/pg_cluster.sh" run "$0" "$@"; fi
if [ -z "${SLURM_CONF:-}" ]; then exec "$here/../tests/slurm/slurm_cluster.sh" run "$0" "$@"; fi
xsp=$(realpath "$1")
zoo=$(realpath "$2")
n=${3:-30}
reps=${4:-3}
url=$XSP_TEST_PG_URL
work=$(mktemp -d /tmp/xsp-slurm-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
export XSP_SLURM_DIR=$work/jobs
small=(--framework libtorch --synthetic --min-batches 2 --warmup 1 --warmup-max-ms 0 --min-duration-ms 0)
sql() { PGOPTIONS="-c client_min_messages=warning" psql "$url" -X -Atq -c "$1"; }
now_ms() { date +%s%3N; }
x() { "$xsp" --store "$url" --zoo "$zoo" "$@"; }
x evaluate Digits_CNN "${small[@]}" > /dev/null  # creates the schema; warms the page cache
models=$(printf 'Digits_CNN,%.0s' $(seq "$n"))
models=${models%,}
declare -a s_standalone s_slurm s_agents
for r in $(seq "$reps"); do
  t0=$(now_ms)
  for _ in 1 2 3 4 5; do x evaluate Digits_CNN "${small[@]}" > /dev/null; done
  s_standalone+=($((($(now_ms) - t0) / 5)))

  t0=$(now_ms)
  x submit --engine slurm --max-concurrent 1 --wait --wait-timeout-s 600 "$models" "${small[@]}" > "$work/slurm.log"
  s_slurm+=($((($(now_ms) - t0) / n)))

  sql "TRUNCATE jobs, job_attempts, agents CASCADE" > /dev/null 2>&1 || true
  t0=$(now_ms)
  for _ in $(seq "$n"); do x submit Digits_CNN "${small[@]}" > /dev/null; done
  x agent --name bench --exit-when-idle-s 0.5 --poll-s 0.1 > "$work/agent.log" 2>&1
  done_jobs=$(sql "SELECT count(*) FROM jobs WHERE state = 'done'")
  [ "$done_jobs" = "$n" ] || { echo "agents: $done_jobs of $n jobs done" >&2; exit 1; }
  # The agent exits 0.5 s after its last job: that idle wait is not the engine's cost.
  s_agents+=($((($(now_ms) - t0 - 500) / n)))
  echo "rep $r: standalone ${s_standalone[-1]} ms, slurm ${s_slurm[-1]} ms/task, agents ${s_agents[-1]} ms/task"
done
stats() { python3 -c 'import statistics,sys; v=[float(a) for a in sys.argv[1:]]; print(f"{statistics.mean(v):.0f} ± {statistics.stdev(v) if len(v)>1 else 0:.0f} ms (n={len(v)}, min {min(v):.0f}, max {max(v):.0f})")' "$@"; }
echo "per task, $n tasks one at a time, $reps repetitions:"
echo "  standalone xsp evaluate: $(stats "${s_standalone[@]}")"
echo "  slurm (sbatch -> stored): $(stats "${s_slurm[@]}")"
echo "  agents (submit -> done):  $(stats "${s_agents[@]}")"
