#!/bin/sh
# What specificity costs a verified trial, per modality: the same scripted trials run by
# a base build (its gate: N app runs and one mutant run) and by this checkout (the same,
# plus up to M runs against independent mutants), one trial at a time, rounds taking
# turns so that the machine's slow minutes weigh on both. Prints each trial's median
# wall, its gate runs, and the ratio to the base; the target is at most 1.5x on every
# modality. The independence matrices are derived before the first timed round (a cold
# cache is a one-off per app content hash, printed apart).
#
#   git worktree add /tmp/base <base commit>
#   (cd /tmp/base && CARGO_TARGET_DIR=/tmp/base/target cargo build --release --bins)
#   cargo build --release --bins && sh benches/specificity.sh /tmp/base [rounds]
#
# The base may predate cli-tally-2: its CLI trial runs cli-tally, the same tool.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
base=${1:?usage: specificity.sh BASE_CHECKOUT [rounds]}
rounds=${2:-3}
new_bin=$repo/target/release/gauntlet
base_bin=$base/target/release/gauntlet
for b in "$new_bin" "$base_bin"; do
  [ -x "$b" ] || { echo "error: $b is not built (cargo build --release --bins)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache="$work/cache"
base_cli=cli-tally
[ -d "$base/apps/cli-tally-2" ] && base_cli=cli-tally-2
trials="api-ledger::balance api-ledger::record-transaction CLI::sum CLI::stats browser-notes::add-note browser-notes::search ext-wordbadge::exact-count ext-wordbadge::live-update"
uptime
# A cold cache: what deriving each app's matrix costs, once.
for app in api-ledger cli-tally-2 browser-notes ext-wordbadge; do
  start=$(date +%s%N)
  GAUNTLET_CACHE_DIR="$cache" GAUNTLET_OUT="$work/warm" "$new_bin" run --filter "qa::$app::" --serial \
    > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
  end=$(date +%s%N)
  echo "cold cache: qa::$app:: (every trial of the app, matrix derived first) $(( (end - start) / 1000000 )) ms"
done
round=1
while [ "$round" -le "$rounds" ]; do
  for config in base new; do
    for t in $trials; do
      if [ "$config" = base ]; then
        bin=$base_bin; cli=$base_cli
      else
        bin=$new_bin; cli=cli-tally-2
      fi
      filter="qa::$(echo "$t" | sed "s/^CLI::/$cli::/")"
      out="$work/$config/$round"
      (cd "$(dirname "$bin")/../.." && GAUNTLET_CACHE_DIR="$cache" GAUNTLET_OUT="$out" \
        "$bin" run --filter "$filter" --serial > "$work/log" 2>&1) || { cat "$work/log"; exit 1; }
    done
  done
  round=$((round + 1))
done
uptime
python3 - "$work" <<'EOF'
import glob, json, os, statistics, sys
work = sys.argv[1]
walls, runs = {}, {}
for config in ("base", "new"):
    for f in glob.glob(f"{work}/{config}/*/*/qa.*/record.json"):
        r = json.load(open(f))
        gate = (r.get("evidence") or {}).get("gate") or {}
        if r["verdict"]["outcome"] != "verified":
            sys.exit(f"error: {f}: {r['verdict']['outcome']}: {r['verdict']['reason']}")
        name = os.path.basename(os.path.dirname(f)).replace("cli-tally-2", "CLI").replace("cli-tally", "CLI")
        walls.setdefault((config, name), []).append(r["wall_ms"])
        runs[(config, name)] = len(gate.get("runs", []))
print(f"{'trial':34} {'base':>8} {'new':>8} {'ratio':>6}  gate runs base -> new")
modality = {"api-ledger": "http-api", "CLI": "cli", "browser-notes": "browser-flow", "ext-wordbadge": "browser-extension"}
per = {}
for n in sorted({n for (_, n) in walls}):
    b = statistics.median(walls[("base", n)])
    a = statistics.median(walls[("new", n)])
    app = n.split(".")[1]
    per.setdefault(app, []).append((b, a))
    print(f"{n:34} {b/1000:7.3f}s {a/1000:7.3f}s {a/b:5.2f}x  {runs[('base', n)]} -> {runs[('new', n)]}")
worst = 0
for app, pairs in per.items():
    ratio = sum(a for _, a in pairs) / sum(b for b, _ in pairs)
    worst = max(worst, ratio)
    print(f"{modality.get(app, app):18} ({app}): {ratio:.2f}x the base gate's trial wall (target <= 1.5x)")
print(f"worst modality: {worst:.2f}x")
EOF
