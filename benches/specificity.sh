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
# Each side runs the newest version of each app it plans (cli-tally or cli-tally-2,
# ext-wordbadge or ext-wordbadge-2: the same tool, the same extension).
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
base=${1:?usage: specificity.sh BASE_CHECKOUT [rounds]}
rounds=${2:-3}
# The checkout measured against the base: this one, or NEW_CHECKOUT (a worktree of its
# own, so that its release build does not hold this target directory's lock).
new=${NEW_CHECKOUT:-$repo}
new_bin=$new/target/release/gauntlet
base_bin=$base/target/release/gauntlet
for b in "$new_bin" "$base_bin"; do
  [ -x "$b" ] || { echo "error: $b is not built (cargo build --release --bins)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache="$work/cache"
# The newest version of an app each checkout plans (a superseded one is not planned).
pick() {
  dir=$1; shift
  for a in "$@"; do
    if [ -d "$dir/apps/$a" ] && ! grep -q superseded_by "$dir/apps/$a/app.json"; then
      echo "$a"; return
    fi
  done
  echo "error: none of $* is planned in $dir" >&2; exit 2
}
base_cli=$(pick "$base" cli-tally-2 cli-tally)
new_cli=$(pick "$new" cli-tally-2 cli-tally)
base_ext=$(pick "$base" ext-wordbadge-2 ext-wordbadge)
new_ext=$(pick "$new" ext-wordbadge-2 ext-wordbadge)
trials="api-ledger::balance api-ledger::record-transaction CLI::sum CLI::stats browser-notes::add-note browser-notes::search EXT::exact-count EXT::live-update"
uptime
# A cold cache: what deriving each app's matrix costs, once.
for app in api-ledger "$new_cli" browser-notes "$new_ext"; do
  start=$(date +%s%N)
  (cd "$new" && GAUNTLET_CACHE_DIR="$cache" GAUNTLET_OUT="$work/warm" "$new_bin" run --filter "qa::$app::" --serial \
    > "$work/log" 2>&1) || { cat "$work/log"; exit 1; }
  end=$(date +%s%N)
  echo "cold cache: qa::$app:: (every trial of the app, matrix derived first) $(( (end - start) / 1000000 )) ms"
done
round=1
while [ "$round" -le "$rounds" ]; do
  for config in base new; do
    for t in $trials; do
      if [ "$config" = base ]; then
        dir=$base; bin=$base_bin; cli=$base_cli; ext=$base_ext
      else
        dir=$new; bin=$new_bin; cli=$new_cli; ext=$new_ext
      fi
      filter="qa::$(echo "$t" | sed -e "s/^CLI::/$cli::/" -e "s/^EXT::/$ext::/")"
      out="$work/$config/$round"
      (cd "$dir" && GAUNTLET_CACHE_DIR="$cache" GAUNTLET_OUT="$out" \
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
        name = os.path.basename(os.path.dirname(f))
        for old, new in (("cli-tally-2", "CLI"), ("cli-tally", "CLI"), ("ext-wordbadge-2", "EXT"), ("ext-wordbadge", "EXT")):
            name = name.replace(old, new)
        walls.setdefault((config, name), []).append(r["wall_ms"])
        runs[(config, name)] = len(gate.get("runs", []))
print(f"{'trial':34} {'base':>8} {'new':>8} {'ratio':>6}  gate runs base -> new")
modality = {"api-ledger": "http-api", "CLI": "cli", "browser-notes": "browser-flow", "EXT": "browser-extension"}
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
