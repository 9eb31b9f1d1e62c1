#!/bin/sh
# Peak RSS of `gauntlet run` over 1,008 qa trials, beside `gauntlet list` of the same
# plan (the baseline: the same binary with the suites loaded and planned, nothing run).
# Apps api-ledger and cli-tally-2 (12 capabilities) x K = 84, the honest-balance command
# agent (a verified claim of `balance`: those trials run the gate; the rest end fast).
#
#   cargo build --release --bins && sh benches/rss.sh [target/release/gauntlet]
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$repo/target/release/gauntlet}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/apps"
ln -s "$repo/apps/api-ledger" "$work/apps/api-ledger"
ln -s "$repo/apps/cli-tally-2" "$work/apps/cli-tally-2"
export GAUNTLET_APPS_DIR="$work/apps" GAUNTLET_REPEATS=84 GAUNTLET_OUT="$work/out"
export GAUNTLET_AGENT=command GAUNTLET_AGENT_CMD="sh $repo/tests/fixtures/agents/honest-balance.sh"
cd "$repo"
uptime
/usr/bin/time -f '%M' -o "$work/list.kb" "$bin" list > /dev/null
/usr/bin/time -f '%M' -o "$work/run.kb" "$bin" run --filter 'qa::' --jobs 2 > "$work/run.log" 2>&1 || true
tail -1 "$work/run.log"
list=$(cat "$work/list.kb"); run=$(tail -1 "$work/run.kb")
echo "gauntlet list (baseline): $list KB; gauntlet run: $run KB; run / list $(echo "scale=2; $run / $list" | bc)x; target 48 MB: $(echo "scale=2; $run / 49152" | bc)x"
uptime
