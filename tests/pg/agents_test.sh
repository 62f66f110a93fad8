#!/usr/bin/env bash
# Agents as processes against a real PostgreSQL (docs/deploy.md "What happens when something dies"), each scenario
# checked in the database itself:
#   1. 4 agents, 200 small jobs: every job done exactly once, one evaluation per job, none doubled;
#   2. SIGKILL an agent mid-job: the job returns to the queue when its lease expires, another agent completes it, the
#      store holds one result for it;
#   3. PostgreSQL restarted while agents run: they reconnect and nothing is lost;
#   4. SIGTERM: the agent hands its job back (attempt not counted) and exits 143;
#   5. a job no agent can run stays queued and says why; a bad request is failed with the reason, not retried;
#   6. the least-privilege roles of deploy/postgres-roles.sql: an agent and a submitter do their work, and nothing else.
# Usage: tests/pg/agents_test.sh XSP ZOO   (starts its own server with pg_cluster.sh; exit 77 without PostgreSQL)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${XSP_TEST_PG_URL:-}" ]; then exec "$here/pg_cluster.sh" run "$0" "$@"; fi

xsp=$1
zoo=$2
url=$XSP_TEST_PG_URL
work=$(mktemp -d /tmp/xsp-agents.XXXXXX)
agents=()
cleanup() {
  for p in "${agents[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  exit 1
}
sql() { PGOPTIONS="-c client_min_messages=warning" psql "$url" -X -Atq -c "$1"; }
expect() {  # expect DESCRIPTION SQL VALUE
  local got
  got=$(sql "$2")
  [ "$got" = "$3" ] || fail "$1: expected $3, got '$got' ($2)"
  echo "ok: $1 ($got)"
}
# Small, fast jobs: one warm-up batch, two measured, synthetic inputs.
small=(--framework libtorch --synthetic --min-batches 2 --warmup 1 --warmup-max-ms 0 --min-duration-ms 0)
submit() { "$xsp" --store "$url" --zoo "$zoo" submit "$@" > /dev/null; }
start_agent() {  # start_agent NAME ARGS...: background agent, pid appended to agents[]
  local name=$1
  shift
  "$xsp" --store "$url" --zoo "$zoo" agent --name "$name" "$@" > "$work/$name.log" 2>&1 &
  agents+=($!)
}
wait_for() {  # wait_for DESCRIPTION SQL VALUE SECONDS
  local deadline=$((SECONDS + $4))
  while [ "$(sql "$2")" != "$3" ]; do
    [ $SECONDS -lt $deadline ] || fail "timed out after $4 s waiting for: $1"
    sleep 0.2
  done
}
reset() { sql "TRUNCATE jobs, job_attempts, agents, evaluations CASCADE"; agents=(); }

# ---- 1. four agents, 200 jobs ---------------------------------------------------------------------------------
submit Digits_CNN "${small[@]}"  # creates the tables
reset
export xsp url zoo
seq 200 | xargs -P 4 -I{} sh -c '"$xsp" --store "$url" --zoo "$zoo" submit Digits_CNN "$@" --seed {} > /dev/null' _ "${small[@]}" ||
  fail "submitting 200 jobs"
for a in 1 2 3 4; do start_agent "a$a" --exit-when-idle-s 2; done
for p in "${agents[@]}"; do wait "$p" || fail "an agent exited non-zero"; done
expect "200 jobs done" "SELECT count(*) FROM jobs WHERE state = 'done'" 200
expect "one attempt each" "SELECT count(*) FROM jobs WHERE attempts <> 1" 0
expect "200 evaluations" "SELECT count(*) FROM evaluations" 200
expect "no evaluation shared by two jobs" "SELECT count(DISTINCT evaluation_id) FROM jobs" 200
expect "each job's own inputs (seed)" \
  "SELECT count(*) FROM jobs j JOIN evaluations e ON e.id = j.evaluation_id WHERE (e.settings::jsonb #>> '{request,inputs,seed}') <> (j.request::jsonb #>> '{inputs,seed}')" 0
expect "work spread over the agents" "SELECT count(*) > 1 FROM agents WHERE jobs_done > 0" t
expect "agents stopped cleanly" "SELECT count(*) FROM agents WHERE state = 'stopped'" 4

# ---- 2. SIGKILL mid-job ---------------------------------------------------------------------------------------
reset
submit Digits_CNN --framework libtorch --synthetic --min-duration-ms 4000 --warmup 1 --warmup-max-ms 0
start_agent victim --lease-s 1.5 --poll-s 0.2
wait_for "the victim runs the job" "SELECT state FROM jobs" running 30
wait_for "its progress streamed with the lease renewals" \
  "SELECT COALESCE((progress::jsonb ->> 'total')::int, 0) > 0 FROM jobs" t 10
echo "ok: progress $(sql "SELECT progress FROM jobs")"
kill -9 "${agents[0]}"
wait "${agents[0]}" 2> /dev/null || true
start_agent rescuer --lease-s 1.5 --poll-s 0.2 --exit-when-idle-s 3
wait "${agents[1]}" || fail "rescuer exited non-zero"
expect "job done after the victim died" "SELECT state FROM jobs" done
expect "two attempts" "SELECT attempts FROM jobs" 2
expect "the victim's attempt expired" "SELECT outcome FROM job_attempts WHERE agent_name = 'victim'" expired
expect "the rescuer finished it" "SELECT a.name FROM jobs j JOIN agents a ON a.id = j.agent_id" rescuer
expect "one result" "SELECT count(*) FROM evaluations" 1
expect "the victim never said it stopped (xsp agents shows it lost)" "SELECT state FROM agents WHERE name = 'victim'" busy

# ---- 3. PostgreSQL restarted mid-run --------------------------------------------------------------------------
reset
for i in $(seq 6); do
  submit Digits_CNN --framework libtorch --synthetic --min-duration-ms 1000 --warmup 1 --warmup-max-ms 0 --seed "$i"
done
start_agent r1 --lease-s 10 --poll-s 0.5 --exit-when-idle-s 4
start_agent r2 --lease-s 10 --poll-s 0.5 --exit-when-idle-s 4
wait_for "both agents running jobs" "SELECT count(*) FROM jobs WHERE state = 'running'" 2 30
"$here/pg_cluster.sh" restart "$XSP_TEST_PG_DIR"
echo "ok: PostgreSQL restarted"
for p in "${agents[@]}"; do wait "$p" || fail "an agent exited non-zero after the restart"; done
expect "all 6 jobs done" "SELECT count(*) FROM jobs WHERE state = 'done'" 6
expect "6 evaluations, none doubled" "SELECT count(*) FROM evaluations" 6
expect "one result per job" "SELECT count(DISTINCT evaluation_id) FROM jobs" 6
grep -h "reconnects" "$work"/r1.log "$work"/r2.log | grep -qv " 0 reconnects" ||
  fail "no agent reported reconnecting"
echo "ok: $(grep -h reconnects "$work"/r1.log "$work"/r2.log | tr '\n' ' ')"

# ---- 4. SIGTERM hands the job back ----------------------------------------------------------------------------
reset
submit Digits_CNN --framework libtorch --synthetic --min-duration-ms 20000 --warmup 1 --warmup-max-ms 0 --max-attempts 1
start_agent leaver --lease-s 10 --poll-s 0.2
wait_for "the leaver runs the job" "SELECT state FROM jobs" running 30
sleep 0.5
t0=$SECONDS
kill -TERM "${agents[0]}"
set +e
wait "${agents[0]}"
status=$?
set -e
[ "$status" -eq 143 ] || fail "SIGTERM: expected exit 143, got $status"
[ $((SECONDS - t0)) -le 10 ] || fail "SIGTERM: took $((SECONDS - t0)) s to stop"
expect "job queued again" "SELECT state FROM jobs" queued
expect "its attempt not counted" "SELECT attempts FROM jobs" 0
expect "attempt handed back" "SELECT outcome FROM job_attempts" handed_back
expect "agent stopped" "SELECT state FROM agents" stopped
expect "nothing published" "SELECT count(*) FROM evaluations" 0

# ---- 5. unrunnable and bad jobs -------------------------------------------------------------------------------
reset
submit Digits_CNN --framework libtorch --device cuda --gpu "*H100*" --synthetic
submit no_such_model --framework libtorch --synthetic
start_agent cpu-only --poll-s 0.2 --exit-when-idle-s 2
wait "${agents[0]}" || fail "cpu-only agent exited non-zero"
expect "bad request failed at once" "SELECT state || ' ' || attempts || ' ' || error_field FROM jobs WHERE model = 'no_such_model'" "failed 1 model"
sql "SELECT error FROM jobs WHERE model = 'no_such_model'" | grep -q "no_such_model" || fail "the error does not name the model"
expect "GPU job still queued" "SELECT state FROM jobs WHERE model = 'Digits_CNN'" queued
start_agent cpu-idle --poll-s 0.2
wait_for "agent registered" "SELECT count(*) FROM agents WHERE name = 'cpu-idle' AND state = 'idle'" 1 30
jobs_out=$("$xsp" --store "$url" jobs --state queued)
echo "$jobs_out" | grep -q "cpu-idle: needs a CUDA device" || fail "xsp jobs does not say why: $jobs_out"
echo "ok: xsp jobs says why the GPU job waits"
"$xsp" --store "$url" agents | grep -q "cpu-idle" || fail "xsp agents does not list cpu-idle"
kill -TERM "${agents[1]}"
wait "${agents[1]}" || true

# ---- 6. least-privilege roles (deploy/postgres-roles.sql) -------------------------------------------------------
reset
PGOPTIONS="-c client_min_messages=warning" psql "$url" -X -q -v ON_ERROR_STOP=1 -f "$here/../../deploy/postgres-roles.sql" > /dev/null
sql "CREATE ROLE gpu1 LOGIN IN ROLE xsp_agent; CREATE ROLE alice LOGIN IN ROLE xsp_submitter"
as_role() { echo "$url" | sed "s#postgresql://xsp@#postgresql://$1@#"; }
agent_url=$(as_role gpu1)
alice_url=$(as_role alice)
"$xsp" --store "$agent_url" --zoo "$zoo" agent --name gpu1 --poll-s 0.2 --exit-when-idle-s 3 > "$work/gpu1.log" 2>&1 &
agents+=($!)
waited=$("$xsp" --store "$alice_url" --zoo "$zoo" submit Digits_CNN "${small[@]}" --wait 2> /dev/null) ||
  fail "alice's submit --wait did not end with the job done: $waited"
echo "$waited" | grep -q "done: evaluation" || fail "submit --wait printed: $waited"
wait "${agents[0]}" || fail "the agent role cannot run a job"
expect "job done under the roles" "SELECT state || ' ' || submitted_by FROM jobs" "done alice"
expect "the agent's role recorded" "SELECT role FROM agents" gpu1
expect "its result stored" "SELECT count(*) FROM evaluations" 1
job=$(sql "SELECT id FROM jobs")
"$xsp" --store "$alice_url" jobs retry "$job" > /dev/null 2>&1 && fail "retry of a done job should be refused"
"$xsp" --store "$alice_url" jobs delete "$job" > /dev/null || fail "alice cannot delete her finished job"
for who in gpu1 alice; do
  if psql "$(as_role $who)" -X -Atq -c "DELETE FROM evaluations" > /dev/null 2>&1; then
    fail "$who could delete evaluations"
  fi
done
psql "$alice_url" -X -Atq -c "INSERT INTO agents (id, name, hostname, capabilities, system, state) VALUES ('00000000-0000-0000-0000-000000000000', 'fake', 'h', '{}', '{}', 'idle')" > /dev/null 2>&1 &&
  fail "a submitter could register an agent"
psql "$agent_url" -X -Atq -c "INSERT INTO jobs (request, model, device, max_attempts) VALUES ('{}', 'm', 'cpu', 1)" > /dev/null 2>&1 &&
  fail "an agent could submit a job"
expect "evaluations untouched" "SELECT count(*) FROM evaluations" 1
echo "ok: roles: each may do its work and nothing else"
echo "all agent scenarios passed"
