#!/usr/bin/env bash
# `xsp submit --engine slurm` against a real single-host Slurm (tests/slurm/slurm_cluster.sh: Debian 12's Slurm 22.05,
# two fake GPUs) and a throw-away PostgreSQL store (tests/pg/pg_cluster.sh), each scenario checked in Slurm and in the
# store:
#   1. 30 small evaluations as one array with %4: all done once, 30 results in PostgreSQL, each tagged with its Slurm
#      array and task, `xsp jobs` saying done for each as squeue says COMPLETED;
#   2. a task cancelled mid-run with `xsp jobs cancel` (scancel): cancelled in both, and the results of the tasks that
#      ended before it are kept;
#   3. a task that exits non-zero (a model not in the zoo: a usage error, not retried): failed, with the exit code;
#   4. a task over its --time of 1 minute: TIMEOUT in squeue, failed "over its time limit" in `xsp jobs`;
#   5. a task whose first attempt fails (exit 1): resubmitted by `xsp jobs` as a new one-task array, done at attempt 2;
#   6. the node set down mid-run (scontrol update state=down): Slurm requeues a task (queued, "requeued by Slurm"
#      in `xsp jobs`, PENDING in squeue) that then runs again and is done; a --no-requeue task ends NODE_FAIL.
# Usage: tests/slurm/slurm_test.sh XSP ZOO   (exit 77 without Slurm, munge or PostgreSQL)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${XSP_TEST_PG_URL:-}" ]; then exec "$here/../pg/pg_cluster.sh" run "$0" "$@"; fi
if [ -z "${SLURM_CONF:-}" ]; then exec "$here/slurm_cluster.sh" run "$0" "$@"; fi

xsp=$(realpath "$1")
zoo=$(realpath "$2")
url=$XSP_TEST_PG_URL
work=$(mktemp -d /tmp/xsp-slurm-test.XXXXXX)
trap 'scancel --user="$(id -un)" 2>/dev/null || true; rm -rf "$work"' EXIT
export XSP_SLURM_DIR=$work/jobs

fail() {
  echo "FAIL: $*" >&2
  "$xsp" --store "$url" jobs --limit 100 >&2 || true
  squeue -t all >&2 || true
  for f in "$work"/jobs/*/task-*.out; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 5 "$f" >&2; }; done
  exit 1
}
sql() { PGOPTIONS="-c client_min_messages=warning" psql "$url" -X -Atq -c "$1"; }
x() { "$xsp" --store "$url" --zoo "$zoo" "$@"; }
# The state `xsp jobs` shows for a task id (csv: id,engine,state,...).
xsp_state() { x jobs --format csv --limit 100 | awk -F, -v id="$1" '$1 == id { print $3 }'; }
# The state Slurm shows for it.
slurm_state() { squeue -h -t all -j "$1" -o %T 2>/dev/null | head -n 1; }
wait_for() {  # wait_for DESCRIPTION SECONDS COMMAND...
  local what=$1 limit=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || fail "timed out after $limit s waiting for: $what"
    sleep 0.5
  done
}
agree() {  # agree ID XSP_STATE SLURM_STATE: both views say so
  local got_x got_s
  got_x=$(xsp_state "$1")
  got_s=$(slurm_state "$1")
  [ "$got_x" = "$2" ] && [ "$got_s" = "$3" ]
}
expect_agree() {
  agree "$1" "$2" "$3" || fail "task $1: xsp jobs says '$(xsp_state "$1")', squeue '$(slurm_state "$1")'; expected $2 / $3"
  echo "ok: task $1 is $2 in xsp jobs and $3 in squeue"
}
small=(--framework libtorch --synthetic --min-batches 2 --warmup 1 --warmup-max-ms 0 --min-duration-ms 0)
array_of() { sed -n 's/^submitted Slurm array \([0-9]*\) .*/\1/p'; }

sql "SELECT 1" > /dev/null
x submit Digits_CNN --dry-run --engine slurm "${small[@]}" > "$work/dry.sh"  # creates nothing
bash -n "$work/dry.sh" || fail "the dry-run script is not valid bash"
[ ! -d "$XSP_SLURM_DIR" ] || fail "--dry-run made the Slurm folder"

# ---- 4 first: its minute runs while the others do -------------------------------------------------------------------
long=(--framework libtorch --synthetic --warmup 1 --warmup-max-ms 0 --min-duration-ms 600000 --min-batches 10000000)
t=$(x submit --engine slurm --time 1 --max-attempts 1 --gres gpu:fake:1 Digits_CNN "${long[@]}" | array_of)
[ -n "$t" ] || fail "no array id for the timeout task"
timeout_id=${t}_0
wait_for "the timeout task runs" 30 agree "$timeout_id" running RUNNING
expect_agree "$timeout_id" running RUNNING

# ---- 2 and 3: cancel mid-run, a non-zero exit --------------------------------------------------------------------
b=$(x submit --engine slurm --max-attempts 1 Digits_CNN,No_Such_Model "${long[@]}" | array_of)
victim=${b}_0
bad=${b}_1
wait_for "the bad task fails" 60 agree "$bad" failed FAILED
expect_agree "$bad" failed FAILED
x jobs --format csv | grep "^$bad," | grep -q "exit code 2 (usage error: not retried)" || fail "the bad task's reason"
wait_for "the victim runs" 60 agree "$victim" running RUNNING
sleep 2  # into its measured batches
x jobs cancel "$victim" | grep -q "scancel sent" || fail "xsp jobs cancel did not say it sent scancel"
wait_for "the victim is cancelled" 30 agree "$victim" cancelled CANCELLED
expect_agree "$victim" cancelled CANCELLED
if out=$(x jobs cancel "$victim" 2>&1); then fail "cancelling twice exited 0"; fi
echo "$out" | grep -q "has finished already" || fail "cancelling twice should say it finished: $out"

# ---- 5: a task whose first attempt fails -------------------------------------------------------------------------
cat > "$work/flaky.sh" << FLAKY
#!/bin/bash
# The first run fails (exit 1, a retryable failure); later ones are xsp.
if [ ! -e "$work/flaky.ran" ]; then touch "$work/flaky.ran"; echo "flaky: failing once" >&2; exit 1; fi
exec "$xsp" "\$@"
FLAKY
chmod +x "$work/flaky.sh"
f=$(x submit --engine slurm --max-attempts 2 --xsp-binary "$work/flaky.sh" Digits_CNN "${small[@]}" | array_of)
slurm_is() { [ "$(slurm_state "$1")" = "$2" ]; }
wait_for "the flaky task's first attempt fails" 60 slurm_is "${f}_0" FAILED
wait_for "the flaky task is retried and done" 90 \
  sh -c "'$xsp' --store '$url' jobs --format csv | grep -E '^[0-9]+_0,slurm,done,Digits_CNN,.*,2/2,' | grep -qv '^${f}_0,'"

# ---- 1: 30 evaluations, %4 ---------------------------------------------------------------------------------------
models=$(printf 'Digits_CNN,%.0s' $(seq 30))
models=${models%,}
start=$SECONDS
a=$(x submit --engine slurm --max-concurrent 4 --gres gpu:fake:1 "$models" "${small[@]}" | array_of)
[ -n "$a" ] || fail "no array id for the 30 tasks"
wait_for "30 tasks done" 240 sh -c "[ \$('$xsp' --store '$url' jobs --format csv --limit 200 | grep -c '^${a}_[0-9]*,slurm,done,') = 30 ]"
echo "ok: 30 tasks done in $((SECONDS - start)) s"
for i in 0 17 29; do expect_agree "${a}_$i" done COMPLETED; done
dir=$(ls -d "$XSP_SLURM_DIR"/* | while read -r d; do grep -q "\"array_job_id\": $a," "$d/job.json" && echo "$d"; done)
[ "$(ls "$dir"/result-*.json | wc -l)" = 30 ] || fail "30 result files in $dir"
tagged=$(sql "SELECT count(*) FROM evaluations WHERE tags::text LIKE '%\"slurm-array:$a\"%'")
[ "$tagged" = 30 ] || fail "30 evaluations tagged slurm-array:$a, got '$tagged'"
ids=$(for r in "$dir"/result-*.json; do python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["evaluation_id"])' "$r"; done)
[ "$(echo "$ids" | sort -u | wc -l)" = 30 ] || fail "30 distinct evaluations"
[ "$(sql "SELECT count(*) FROM evaluations WHERE id IN ($(echo $ids | tr ' ' ,)) AND status = 'complete'")" = 30 ] ||
  fail "the 30 evaluations are in PostgreSQL, complete"
echo "ok: 30 evaluations in PostgreSQL, one per task, each tagged with its array"

# ---- 4 ends ------------------------------------------------------------------------------------------------------
wait_for "the timeout task times out" 150 agree "$timeout_id" failed TIMEOUT
expect_agree "$timeout_id" failed TIMEOUT
x jobs --format csv | grep "^$timeout_id," | grep -q "over its time limit (TIMEOUT)" || fail "the timeout's reason"
# ---- 6 last (it would requeue whatever runs): the node goes down mid-run ---------------------------------------------
# A requeueable task (Slurm's default) is requeued, runs again and is done; one submitted with --no-requeue ends
# NODE_FAIL.
node=$(hostname -s)
mid=(--framework libtorch --synthetic --warmup 1 --warmup-max-ms 0 --min-duration-ms 4000)
d=$(x submit --engine slurm --max-attempts 1 Digits_CNN "${mid[@]}" | array_of)
nf=$(x submit --engine slurm Digits_CNN --max-attempts 1 --sbatch-arg=--no-requeue "${mid[@]}" | array_of)
both_run() { agree "${d}_0" running RUNNING && agree "${nf}_0" running RUNNING; }
wait_for "the tasks on the doomed node run" 60 both_run
scontrol update nodename="$node" state=down reason=xsp-slurm-test
wait_for "the task is requeued" 30 agree "${d}_0" queued PENDING
x jobs --format csv | grep "^${d}_0," | grep -q "requeued by Slurm after restart 1" || fail "the requeue's reason"
echo "ok: task ${d}_0 is queued (requeued by Slurm) in xsp jobs and PENDING in squeue"
wait_for "the --no-requeue task fails" 30 agree "${nf}_0" failed NODE_FAIL
x jobs --format csv | grep "^${nf}_0," | grep -q "its node failed (NODE_FAIL)" || fail "the node failure's reason"
expect_agree "${nf}_0" failed NODE_FAIL
scontrol update nodename="$node" state=resume 2> /dev/null || true  # ReturnToService=2 may have resumed it already
scontrol update jobid="${d}_0" starttime=now  # not Slurm's requeue delay: the test has no minutes to spare
wait_for "the requeued task is done" 90 agree "${d}_0" done COMPLETED
expect_agree "${d}_0" done COMPLETED

# Nothing half-written: the store holds the 30, the flaky task's one, and at most the incomplete records of the
# cancelled and timed-out runs (each stored whole by its own transaction when its process was stopped).
total=$(sql "SELECT count(*) FROM evaluations")
complete=$(sql "SELECT count(*) FROM evaluations WHERE status = 'complete'")
[ "$complete" = 32 ] || fail "32 complete evaluations (30, the flaky task, the requeued one), got $complete"
[ "$total" -le 36 ] || fail "at most 4 incomplete evaluations besides, got $((total - complete))"
echo "ok: $complete complete evaluations, $((total - complete)) incomplete (stopped runs), nothing else"
echo "PASS"
