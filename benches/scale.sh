#!/bin/sh
# Hundreds of scripted trials at high concurrency against a slow, rate-limiting,
# disconnecting provider, on one machine, run by nextest (issue 49, items 4 and 5).
#
# The mix: qa (api-ledger and cli-tally-2, every capability, GAUNTLET_REPEATS times),
# the challenge tally-report (every profile) and the scorecard's world probes. Only qa
# repeats (GAUNTLET_REPEATS multiplies capabilities); the challenge and the probes are
# run as copies made in the bench's own directories, byte for byte the shipped ones but
# for their id (`tally-report-r3`, `p5-2-r3`, and the scripted profile's turns under the
# copies' ids), so each copy is a trial of its own, planned, run and scored as the
# shipped one is. Every scripted answer is served through the fake provider
# (GAUNTLET_SCRIPTED_UPSTREAM), started as a process of its own: log-normal latency with
# a 2 s median, 5% of calls answered 429, 1% of answers cut.
#
# Phases, each a `cargo nextest run` of its own, sampled once a second:
#   floor  one trial of each kind, one at a time (-j 1): the per-trial RSS floor;
#   clean  the whole plan at -j JOBS with the reference agent;
#   soak   (--soak) the whole plan again, the agent being benches/scale/agent.sh, which
#          crashes, hangs or floods stdout in a deterministic tenth of the trials and
#          runs the reference agent in the rest.
# Checks (exit 1 when one fails): every planned trial has a record and `gauntlet
# rescore` agrees; no process of the run is left; the fake's ledger for the key
# gauntlet-scripted billed exactly the tokens the records metered, and what it billed
# but no client could read is the cut calls'; in the soak, every trial that did not
# misbehave has the verdict it had in the clean phase.
# Figures: peak RSS per concurrent trial against the floor, wall time against the ideal
# (answered model calls x 2 s / trials running at once), the machine's busy CPU time per
# trial against the floor's, trials the provider failed (infra), calls the proxy retried. docs/scale.md has the results and the limits.
#
#   sh benches/scale.sh [--trials N] [--jobs J] [--soak] [--soak-only] [--release]
#   (--release: every binary built with cargo's release profile, trials included)
#   (CARGO_TARGET_DIR is honoured; the work directory is kept: SCALE_WORK or a new
#   /tmp/scale.XXXXXX)
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
trials=500 jobs=64 soak=0 clean=1 build=debug
while [ $# -gt 0 ]; do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --soak) soak=1; shift ;;
    --soak-only) soak=1 clean=0; shift ;;
    --release) build=release; shift ;;
    *) echo "usage: scale.sh [--trials N] [--jobs J] [--soak] [--soak-only] [--release]" >&2; exit 2 ;;
  esac
done
# The plan: 12 qa trials a repeat (6 capabilities of each app), 3 a challenge copy, 4 a
# probe copy; about 86% qa, 7% challenge, 6% scorecard (500: 36 repeats, 12 challenge
# copies, 8 probe copies).
probe_copies=$(( (trials * 64 + 2000) / 4000 )); [ "$probe_copies" -ge 1 ] || probe_copies=1
challenge_copies=$(( (trials * 72 + 1500) / 3000 )); [ "$challenge_copies" -ge 1 ] || challenge_copies=1
repeats=$(( (trials - 4 * probe_copies - 3 * challenge_copies) / 12 )); [ "$repeats" -ge 2 ] || repeats=2
cargo_profile=; [ "$build" = debug ] || cargo_profile="--cargo-profile $build"
work=${SCALE_WORK:-$(mktemp -d /tmp/scale.XXXXXX)}
mkdir -p "$work"
echo "work directory: $work"
echo "plan: qa 12 x $repeats repeats, challenge tally-report 3 profiles x $challenge_copies copies, scorecard world 4 probes x $probe_copies copies; -j $jobs; $build build"
uptime

# The bench's data: the two apps (and cli-tally, the challenge's app), the challenge
# copies beside the challenge suite's shared layers, the scorecard with probe copies.
mkdir -p "$work/apps" "$work/challenges"
for a in api-ledger cli-tally cli-tally-2; do ln -sfn "$repo/apps/$a" "$work/apps/$a"; done
for f in "$repo"/challenges/*; do
  [ -f "$f/challenge.yaml" ] || ln -sfn "$f" "$work/challenges/$(basename "$f")"
done
rm -f "$work/challenges/scorecard"
python3 "$repo/benches/scale/data.py" "$repo" "$work" "$challenge_copies" "$probe_copies"
filter='test(/^qa::(api-ledger|cli-tally-2)::/) | test(/^challenge::tally-report-r[0-9]+::/) | test(/^scorecard::world::p5-[0-9]-r[0-9]+$/)'
floor_filter='test(=qa::api-ledger::balance::r1) | test(=qa::cli-tally-2::stats::r1) | test(=challenge::tally-report-r1::skills) | test(=scorecard::world::p5-4-r1)'

export GAUNTLET_APPS_DIR="$work/apps" GAUNTLET_CHALLENGES_DIR="$work/challenges"
export GAUNTLET_SCORECARD_DIR="$work/scorecard" GAUNTLET_REPEATS=$repeats GAUNTLET_MODE=scripted
export CARGO_TARGET_DIR="$target"
unset GAUNTLET_CONFIG GAUNTLET_RESUME GAUNTLET_RETRY_INFRA GAUNTLET_AGENT_CMD 2>/dev/null || true
cd "$repo"
# One build serves the trials and gauntlet itself: nextest builds every binary too.
cargo nextest run $cargo_profile --no-run --cargo-quiet 2> "$work/build.log" || { cat "$work/build.log"; exit 1; }
cargo nextest list $cargo_profile --profile scale -E "$filter" --message-format json > "$work/list.json"
python3 -c '
import json, sys
plan = json.load(open(sys.argv[1]))
names = sorted(n for s in plan["rust-suites"].values() for n, t in s["testcases"].items()
               if t["filter-match"]["status"] == "matches")
open(sys.argv[2], "w").write("\n".join(names) + "\n")
print(f"{len(names)} trials planned")' "$work/list.json" "$work/planned.txt"

# The slowed provider, a process of its own; its ledger is written when it is stopped.
"$target/$build/gauntlet-fake-provider" --latency lognormal:2000:0.5 --rate-limited 0.05 \
  --fault-latency 100 --disconnect 0.01 --seed 49 --ledger "$work/ledger.json" \
  > "$work/fake.log" 2>&1 &
fake=$!
stop_fake() { kill "$fake" 2>/dev/null || true; wait "$fake" 2>/dev/null || true; }
trap stop_fake EXIT INT TERM
for _ in $(seq 100); do
  grep -q 'listening on' "$work/fake.log" && break
  sleep 0.1
done
upstream="$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$work/fake.log" | head -1)"
[ -n "$upstream" ] || { cat "$work/fake.log"; exit 1; }
export GAUNTLET_SCRIPTED_UPSTREAM="${upstream%/}/v1"
echo "fake provider: $GAUNTLET_SCRIPTED_UPSTREAM (pid $fake)"

# One phase: nextest over FILTER at -j J into GAUNTLET_OUT=$work/PHASE, sampled.
phase() {
  name=$1 j=$2 f=$3
  rm -f "$repo/target/nextest/scale/junit.xml"
  head -1 /proc/stat > "$work/$name.cpu"
  start=$(date +%s%N)
  GAUNTLET_OUT="$work/$name" cargo nextest run $cargo_profile --profile scale -j "$j" -E "$f" \
    > "$work/$name.log" 2>&1 &
  pid=$!
  python3 "$repo/benches/scale/sample.py" "$pid" "$target" "$work/$name.peaks.json" &
  sampler=$!
  wait "$pid" || true
  wait "$sampler" || true
  end=$(date +%s%N)
  head -1 /proc/stat >> "$work/$name.cpu"
  echo "$(( (end - start) / 1000000 ))" > "$work/$name.wall_ms"
  cp "$repo/target/nextest/scale/junit.xml" "$work/$name.junit.xml" 2>/dev/null || true
  tail -3 "$work/$name.log"
  # What is left of the run: processes of this build's binaries or naming the work
  # directory (environment or command line), the fake provider aside.
  sleep 2
  python3 "$repo/benches/scale/leftover.py" "$target" "$work" "$fake" > "$work/$name.leftover"
  for run in "$work/$name"/*/; do
    "$target/$build/gauntlet" rescore "$run" > "$work/$name.rescore" 2>&1
    echo $? > "$work/$name.rescore.rc"
    "$target/$build/gauntlet" report "$run" > /dev/null 2>&1 || true
  done
}

if [ "$clean" = 1 ]; then
  phase floor 1 "$floor_filter"
  phase clean "$jobs" "$filter"
fi
if [ "$soak" = 1 ]; then
  (
    export GAUNTLET_AGENT=command GAUNTLET_TIMEOUT_SECS="${SCALE_SOAK_TIMEOUT_SECS:-240}"
    export GAUNTLET_AGENT_CMD="sh $repo/benches/scale/agent.sh {capability} {target} {graph_file} {n} {prompt_file} {workspace} {session_id} {session_resume} {state_dir}"
    export GAUNTLET_CHALLENGE_TIMEOUT_SECS="$GAUNTLET_TIMEOUT_SECS"
    phase soak "$jobs" "$filter"
  )
fi
stop_fake
trap - EXIT INT TERM
uptime
python3 "$repo/benches/scale/check.py" "$work" "$jobs"
