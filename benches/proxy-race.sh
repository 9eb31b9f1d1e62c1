#!/usr/bin/env bash
# One-run race of model-call proxies on loopback: direct calls, a byte-for-byte TCP
# relay, LiteLLM's proxy and `gauntlet proxy --mode byok`, all in front of the same fake
# OpenAI-compatible provider, sent the same request bodies by the same wrk.
#
# Two more targets show how much of each ratio is left for metering: `hyper`, a
# pass-through made of the parts gauntlet's proxy is made of (hyper on both sides, a
# single-threaded runtime per core, a provider connection per client connection driven
# by that client connection's task, a stream's chunks that arrived together written
# together) that does nothing else, and `hyper+json`, the same reading each request body as JSON
# (serde_json) before sending it on. A proxy of these parts that meters does all that
# `hyper+json` does and more: it must read what it forwards, as a streamed call is
# metered only if the proxy knows that it streams and asks for its usage.
#
#   benches/proxy-race.sh            (root, or wrk already installed; needs python3 + venv)
#
# It installs wrk (apt) when missing and a pinned LiteLLM proxy into a scratch virtual
# environment under target/, builds `gauntlet` and the helper (benches/proxy-race/) in
# release, then for each case (a 0.3 KB and a 75 KB Chat Completions request, streaming
# and not) measures sequential latency (wrk, one connection) and throughput (wrk, 64
# connections). Targets take turns in rounds (direct, relay, litellm, gauntlet, the
# first one rotating each round), so all see the same machine load; a figure is the
# median over rounds, and an added latency is a target's figure minus the direct one.
#
# Knobs (environment): RACE_ROUNDS (3), RACE_SECS (2: seconds per wrk run),
# RACE_LITELLM_SECS (5), RACE_CONNECTIONS (64), RACE_WRK_THREADS (2, for throughput),
# RACE_SKIP_LITELLM=1 (race the other three only), RACE_NO_BUILD=1 (use the binaries
# already built). Everything it writes goes to target/proxy-race/.
#
# A benchmark, not a test: it prints figures and whether the targets were met; it fails
# only when something it runs breaks (and says what).

set -euo pipefail

LITELLM_VERSION=1.106.12
ROUNDS=${RACE_ROUNDS:-3}
SECS=${RACE_SECS:-2}
LITELLM_SECS=${RACE_LITELLM_SECS:-5}
CONNECTIONS=${RACE_CONNECTIONS:-64}
WRK_THREADS=${RACE_WRK_THREADS:-2}
SKIP_LITELLM=${RACE_SKIP_LITELLM:-0}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$TARGET_DIR/proxy-race
VENV=$TARGET_DIR/bench-litellm
LUA=$ROOT/benches/proxy-race/post.lua
HELPER=$TARGET_DIR/release/examples/proxy-race-helper
GAUNTLET=$TARGET_DIR/release/gauntlet

die() {
    echo "proxy-race: $*" >&2
    exit 1
}

# Every process this script starts, so the exit trap ends them (and only them).
PIDS=()
cleanup() {
    local i
    # Callers first, the provider last.
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
        kill "${PIDS[$i]}" 2>/dev/null || true
    done
    local pid
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools -------------------------------------------------------------------------

if ! command -v wrk >/dev/null; then
    echo "proxy-race: installing wrk (apt)"
    if [ "$(id -u)" -eq 0 ]; then
        apt-get update -qq && apt-get install -y -qq wrk >/dev/null || die "apt-get install wrk failed"
    elif command -v sudo >/dev/null; then
        sudo apt-get update -qq && sudo apt-get install -y -qq wrk >/dev/null || die "apt-get install wrk failed"
    else
        die "wrk is not installed and this is not root: apt-get install wrk"
    fi
fi

if [ "$SKIP_LITELLM" != 1 ]; then
    have=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))' 2>/dev/null || true)
    if [ "$have" != "$LITELLM_VERSION" ] || [ ! -x "$VENV/bin/litellm" ]; then
        # The system python, not a pyenv shim that may name another version.
        python=${RACE_PYTHON:-$(command -v /usr/bin/python3 || command -v python3 || true)}
        [ -n "$python" ] || die "no python3 to build the LiteLLM environment with"
        echo "proxy-race: installing litellm[proxy]==$LITELLM_VERSION into $VENV (a few minutes, once)"
        rm -rf "$VENV"
        "$python" -m venv "$VENV" || die "$python -m venv $VENV failed (apt-get install python3-venv?)"
        "$VENV/bin/pip" install -q "litellm[proxy]==$LITELLM_VERSION" ||
            die "pip install litellm[proxy]==$LITELLM_VERSION failed"
    fi
fi

if [ "${RACE_NO_BUILD:-0}" != 1 ]; then
    (cd "$ROOT" && cargo build --release --quiet --bin gauntlet --example proxy-race-helper) ||
        die "cargo build --release --bin gauntlet --example proxy-race-helper failed"
fi
[ -x "$GAUNTLET" ] || die "$GAUNTLET is missing (build it, or drop RACE_NO_BUILD)"
[ -x "$HELPER" ] || die "$HELPER is missing (build it, or drop RACE_NO_BUILD)"

rm -rf "$OUT"
mkdir -p "$OUT"

# --- servers -----------------------------------------------------------------------

# start NAME COMMAND...: run it in the background, stdout and stderr under $OUT.
start() {
    local name=$1
    shift
    "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" &
    PIDS+=($!)
    LAST_PID=$!
}

# wait_line NAME PID PATTERN SECONDS: the first stdout line of NAME matching PATTERN.
wait_line() {
    local name=$1 pid=$2 pattern=$3 seconds=$4 i line
    for ((i = 0; i < seconds * 10; i++)); do
        if line=$(grep -m1 -- "$pattern" "$OUT/$name.out"); then
            echo "$line"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null ||
            die "$name exited before it was ready: $(tail -n 5 "$OUT/$name.err")"
        sleep 0.1
    done
    die "$name printed no \`$pattern\` within ${seconds}s ($OUT/$name.out)"
}

start upstream "$HELPER" upstream
up_addr=$(wait_line upstream "$LAST_PID" "^listening on " 10 | sed 's/^listening on //')
start relay "$HELPER" relay "$up_addr"
relay_addr=$(wait_line relay "$LAST_PID" "^listening on " 10 | sed 's/^listening on //')
start pass "$HELPER" pass "$up_addr"
pass_addr=$(wait_line pass "$LAST_PID" "^listening on " 10 | sed 's/^listening on //')
start pass-json "$HELPER" pass "$up_addr" json
pass_json_addr=$(wait_line pass-json "$LAST_PID" "^listening on " 10 | sed 's/^listening on //')

RACE_KEY=race-upstream-key GAUNTLET_API_KEY_ENV=RACE_KEY \
    start gauntlet "$GAUNTLET" proxy --mode byok --upstream "http://$up_addr/v1" \
    --listen 127.0.0.1:0 --usage-log "$OUT/gauntlet-usage.jsonl"
GAUNTLET_PID=$LAST_PID
gauntlet_base=$(wait_line gauntlet "$GAUNTLET_PID" "^OPENAI_BASE_URL=" 10 | sed 's/^OPENAI_BASE_URL=//')

declare -A URL=(
    [direct]="http://$up_addr/v1/chat/completions"
    [relay]="http://$relay_addr/v1/chat/completions"
    [hyper]="http://$pass_addr/v1/chat/completions"
    [hyper+json]="http://$pass_json_addr/v1/chat/completions"
    [gauntlet]="$gauntlet_base/chat/completions"
)
TARGETS=(direct relay hyper hyper+json gauntlet)

if [ "$SKIP_LITELLM" != 1 ]; then
    litellm_port=$("$HELPER" free-port) || die "no free port for litellm"
    cat >"$OUT/litellm.yaml" <<EOF
model_list:
  - model_name: bench
    litellm_params:
      model: openai/bench
      api_base: http://$up_addr/v1
      api_key: race-upstream-key
litellm_settings:
  telemetry: false
  set_verbose: false
  json_logs: false
general_settings:
  # Like gauntlet proxy on loopback, it checks no client key: each at its fastest.
  dangerously_permit_weak_or_unset_master_key: true
EOF
    # The packaged price list, not a download at start; no telemetry; quiet logs.
    LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_LOG=ERROR LITELLM_TELEMETRY=False \
        start litellm "$VENV/bin/litellm" --config "$OUT/litellm.yaml" \
        --host 127.0.0.1 --port "$litellm_port" --num_workers 1
    LITELLM_PID=$LAST_PID
    for ((i = 0; ; i++)); do
        curl -sf "http://127.0.0.1:$litellm_port/health/liveliness" >/dev/null 2>&1 && break
        kill -0 "$LITELLM_PID" 2>/dev/null ||
            die "litellm exited before it was ready: $(tail -n 5 "$OUT/litellm.err")"
        [ "$i" -lt 1800 ] || die "litellm not ready on port $litellm_port within 180s ($OUT/litellm.err)"
        sleep 0.1
    done
    URL[litellm]="http://127.0.0.1:$litellm_port/v1/chat/completions"
    TARGETS=(direct relay hyper hyper+json litellm gauntlet)
fi

# --- bodies and a first call through each target ----------------------------------

CASES=("1KB non-stream" "1KB stream" "75KB non-stream" "75KB stream")
declare -A BODY=(
    ["1KB non-stream"]=$OUT/body-small.json
    ["1KB stream"]=$OUT/body-small-stream.json
    ["75KB non-stream"]=$OUT/body-large.json
    ["75KB stream"]=$OUT/body-large-stream.json
)
"$HELPER" body 0 false >"${BODY["1KB non-stream"]}"
"$HELPER" body 0 true >"${BODY["1KB stream"]}"
"$HELPER" body 60 false >"${BODY["75KB non-stream"]}"
"$HELPER" body 60 true >"${BODY["75KB stream"]}"

for target in "${TARGETS[@]}"; do
    for case in "${CASES[@]}"; do
        answer=$(curl -sS --max-time 30 -H 'content-type: application/json' \
            --data-binary "@${BODY[$case]}" "${URL[$target]}") ||
            die "$target: the first $case call failed"
        case $case in
        *non-stream) expect='"completion_tokens":' ;;
        *) expect='[DONE]' ;;
        esac
        # LiteLLM re-serializes with a space after the colon.
        [[ "${answer//\": /\":}" == *"$expect"* ]] ||
            die "$target: the first $case answer lacks $expect: ${answer:0:300}"
    done
done

# --- the race ----------------------------------------------------------------------

RESULTS=$OUT/results.tsv
printf 'round\tcase\tkind\ttarget\trequests\tp50_us\tp99_us\trps\n' >"$RESULTS"

# run ROUND CASE KIND TARGET SECONDS: one wrk run, one line of $RESULTS (round 0: warm-up,
# not kept).
run() {
    local round=$1 case=$2 kind=$3 target=$4 seconds=$5 threads connections output line
    if [ "$kind" = latency ]; then threads=1 connections=1; else
        threads=$WRK_THREADS connections=$CONNECTIONS
    fi
    output=$(RACE_BODY=${BODY[$case]} wrk -t"$threads" -c"$connections" -d"${seconds}s" \
        --timeout 10s -s "$LUA" "${URL[$target]}" 2>&1) ||
        die "$target, $case, $kind: wrk failed: $output"
    line=$(grep -m1 '^RACE ' <<<"$output") || die "$target, $case, $kind: no RACE line from wrk: $output"
    declare -A f=()
    local kv
    for kv in ${line#RACE }; do f[${kv%%=*}]=${kv#*=}; done
    # A warm-up may end before a slow target's first answers do.
    # A warm-up may end before a slow target's first answers do, and so may LiteLLM's
    # run at 64 connections (each of its calls waits for the 63 ahead of it): counted
    # as 0 calls/s, not as a failure.
    [ "${f[requests]}" -gt 0 ] || [ "$round" -eq 0 ] || { [ "$target" = litellm ] && [ "$kind" = throughput ]; } ||
        die "$target, $case, $kind: no call completed in ${seconds}s"
    [ "${f[errors]}" -eq 0 ] && [ "${f[status_errors]}" -eq 0 ] ||
        die "$target, $case, $kind: ${f[errors]} socket errors, ${f[status_errors]} non-2xx answers: $output"
    settle "$target"
    [ "$round" -eq 0 ] && return 0
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$case" "$kind" "$target" "${f[requests]}" \
        "${f[p50_us]}" "${f[p99_us]}" \
        "$(awk -v n="${f[requests]}" -v us="${f[duration_us]}" 'BEGIN { printf "%.1f", n / (us / 1e6) }')" \
        >>"$RESULTS"
}

# settle TARGET: LiteLLM goes on answering calls wrk already gave up on at the end of a
# run; wait until it answers promptly again, so its backlog neither eats the next run's
# time nor the machine's CPU during another target's run.
settle() {
    [ "$1" = litellm ] || return 0
    local deadline=$((SECONDS + 180)) took
    while [ "$SECONDS" -lt "$deadline" ]; do
        kill -0 "$LITELLM_PID" 2>/dev/null ||
            die "litellm exited during the race: $(tail -n 5 "$OUT/litellm.err")"
        if took=$(curl -sf -o /dev/null -w '%{time_total}' --max-time 5 \
            "${URL[litellm]%/v1/chat/completions}/health/liveliness"); then
            awk -v t="$took" 'BEGIN { exit !(t < 0.05) }' && return 0
        fi
        sleep 0.1
    done
    die "litellm still busy (or not answering /health/liveliness) 180s after a run"
}

secs_for() { if [ "$1" = litellm ]; then echo "$LITELLM_SECS"; else echo "$SECS"; fi; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)
echo "proxy-race: targets ${TARGETS[*]}; $ROUNDS rounds of ${SECS}s wrk runs (litellm ${LITELLM_SECS}s); load $load_before"
for case in "${CASES[@]}"; do
    for target in "${TARGETS[@]}"; do
        run 0 "$case" latency "$target" 1
        run 0 "$case" throughput "$target" "$(secs_for "$target")"
    done
done
n=${#TARGETS[@]}
for ((round = 1; round <= ROUNDS; round++)); do
    echo "proxy-race: round $round of $ROUNDS (load $(cut -d' ' -f1 /proc/loadavg))"
    for case in "${CASES[@]}"; do
        for kind in latency throughput; do
            for ((k = 0; k < n; k++)); do
                target=${TARGETS[$(((k + round) % n))]}
                run "$round" "$case" "$kind" "$target" "$(secs_for "$target")"
            done
        done
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# Stop gauntlet the way a person does (SIGTERM), so its summary and usage log are final.
kill -TERM "$GAUNTLET_PID"
wait "$GAUNTLET_PID" || die "gauntlet proxy exited with status $? on SIGTERM: $(tail -n 5 "$OUT/gauntlet.err")"

# --- the table ---------------------------------------------------------------------

python3 - "$RESULTS" "$OUT/gauntlet-usage.jsonl" "$load_before" "$load_after" \
    "$(($(date +%s) - started))" "$LITELLM_VERSION" <<'PY'
import collections, json, statistics, sys

results, usage_log, load_before, load_after, seconds, litellm_version = sys.argv[1:]
rows = collections.defaultdict(list)
with open(results) as f:
    next(f)
    for line in f:
        _, case, kind, target, _, p50, p99, rps = line.rstrip("\n").split("\t")
        rows[(case, kind, target)].append((int(p50) / 1000, int(p99) / 1000, float(rps)))

def med(case, kind, target, i):
    v = rows.get((case, kind, target))
    return statistics.median(r[i] for r in v) if v else None

cases = ["1KB non-stream", "1KB stream", "75KB non-stream", "75KB stream"]
litellm = any(k[2] == "litellm" for k in rows)
others = ["relay", "hyper", "hyper+json", "gauntlet"] + (["litellm"] if litellm else [])
rounds = max(len(v) for v in rows.values())

def fmt(x, sign=True):
    return "      -" if x is None else (f"{x:+7.3f}" if sign else f"{x:7.3f}")

print()
print(f"latency, 1 connection: ms, median of {rounds} rounds; added = minus direct")
head = f"{'case':<16} {'direct p50':>10} {'p99':>7} |"
for t in others:
    head += f" {t + ' +p50':>15} {'+p99':>7} |"
head += f" {'gauntlet-relay p50':>18} {'p99':>7}"
if litellm:
    head += f" | {'litellm/gauntlet added p50':>26} {'p99':>6}"
print(head)
checks = []
for case in cases:
    d50, d99 = med(case, "latency", "direct", 0), med(case, "latency", "direct", 1)
    line = f"{case:<16} {d50:>10.3f} {d99:>7.3f} |"
    added = {}
    for t in others:
        a50 = med(case, "latency", t, 0) - d50
        a99 = med(case, "latency", t, 1) - d99
        added[t] = (a50, a99)
        line += f" {a50:>+15.3f} {a99:>+7.3f} |"
    g50 = added["gauntlet"][0] - added["relay"][0]
    g99 = added["gauntlet"][1] - added["relay"][1]
    line += f" {g50:>+18.3f} {g99:>+7.3f}"
    checks.append((f"{case}: gauntlet above relay p50 {g50:+.3f} ms <= 0.020 ms", g50 <= 0.020))
    if litellm:
        def ratio(l, g):
            return "inf" if g <= 0 else f"{l / g:.0f}x"
        r50 = ratio(added["litellm"][0], added["gauntlet"][0])
        r99 = ratio(added["litellm"][1], added["gauntlet"][1])
        line += f" | {r50:>26} {r99:>6}"
        g = added["gauntlet"][0]
        checks.append((f"{case}: litellm added p50 / gauntlet added p50 = {r50} >= 100x",
                       g <= 0 or added["litellm"][0] / g >= 100))
    print(line)

print()
print(f"throughput, 64 connections: calls/s, median of {rounds} rounds")
head = f"{'case':<16}" + "".join(f" {t:>10}" for t in ["direct"] + others)
head += f" | {'relay/direct':>12} {'hyper/relay':>11} {'hyper+json/relay':>16} {'gauntlet/relay':>14}"
if litellm:
    head += f" {'gauntlet/litellm':>16}"
print(head)
for case in cases:
    r = {t: med(case, "throughput", t, 2) for t in ["direct"] + others}
    line = f"{case:<16}" + "".join(f" {r[t]:>10.0f}" for t in ["direct"] + others)
    ratio = r["gauntlet"] / r["relay"]
    line += (f" | {r['relay'] / r['direct']:>11.2f}x {r['hyper'] / r['relay']:>10.2f}x"
             f" {r['hyper+json'] / r['relay']:>15.2f}x {ratio:>13.2f}x")
    if litellm:
        line += (f" {r['gauntlet'] / r['litellm']:>15.1f}x" if r["litellm"] > 0
                 else f" {'(none done)':>16}")
    checks.append((f"{case}: gauntlet throughput {ratio:.2f}x relay >= 0.80x", ratio >= 0.8))
    print(line)

print()
print("targets:")
for text, ok in checks:
    print(f"  {'met   ' if ok else 'MISSED'} {text}")

entries = [json.loads(l) for l in open(usage_log) if l.strip()]
metered = sum(1 for e in entries if e.get("input_tokens") is not None)
errors = sum(1 for e in entries if e.get("error"))
print()
print(f"gauntlet proxy metered {metered} of {len(entries)} calls in its usage log "
      f"({errors} with an error: calls wrk cut at the end of a run)")
print(f"litellm {litellm_version}" if litellm else "litellm skipped")
print(f"load average (1, 5, 15 min): {load_before} before, {load_after} after; {seconds}s of runs")
PY
