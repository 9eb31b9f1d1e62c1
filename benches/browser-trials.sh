#!/bin/sh
# Wall-clock of every scripted browser trial (browser-notes, ext-wordbadge-2), one trial
# at a time, beside the same trials with every page in Debian's full Chromium (the
# baseline: GAUNTLET_CHROMIUM names it, so pages without an extension do not get the
# headless shell), rounds taking turns. Prints each trial's median wall, its agent run
# and gate runs, and the ratio to the baseline; targets: browser-notes <= 3 s,
# ext-wordbadge-2 <= 6 s.
#
#   cargo build --release --bins && sh benches/browser-trials.sh [rounds]
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$repo/target/release/gauntlet
rounds=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$repo"
uptime
round=1
while [ "$round" -le "$rounds" ]; do
  for config in shipped full-chromium; do
    for app in browser-notes ext-wordbadge-2; do
      out="$work/$config/$round-$app"
      if [ "$config" = full-chromium ]; then
        GAUNTLET_CHROMIUM=/usr/lib/chromium/chromium GAUNTLET_OUT="$out" \
          "$bin" run --filter "qa::$app::" --serial > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
      else
        GAUNTLET_OUT="$out" "$bin" run --filter "qa::$app::" --serial > "$work/log" 2>&1 \
          || { cat "$work/log"; exit 1; }
      fi
    done
  done
  round=$((round + 1))
done
python3 - "$work" <<'EOF'
import glob, json, os, statistics, sys
work = sys.argv[1]
walls = {}
parts = {}
for config in ("shipped", "full-chromium"):
    for f in glob.glob(f"{work}/{config}/*/*/qa.*/record.json"):
        r = json.load(open(f))
        gate = (r.get("evidence") or {}).get("gate") or {}
        if not gate.get("runs"):
            continue  # an ambiguous capability: no claim, no gate
        name = os.path.basename(os.path.dirname(f))
        walls.setdefault((config, name), []).append(r["wall_ms"])
        if config == "shipped":
            e = r["evidence"]
            parts.setdefault(name, []).append(
                (e["agent"]["end"]["duration_ms"],
                 [x["end"]["duration_ms"] for x in gate["runs"] if x["target"] == "app"],
                 [x["end"]["duration_ms"] for x in gate["runs"] if x["target"] == "mutant"]))
names = sorted({n for (_, n) in walls})
print(f"{'trial':38} {'wall':>7} {'full chromium':>14} {'ratio':>6}  agent / app runs / mutant run (ms, last round)")
for n in names:
    a = statistics.median(walls.get(("shipped", n), [0]))
    b = statistics.median(walls.get(("full-chromium", n), [0]))
    agent, apps, mutant = parts[n][-1]
    print(f"{n:38} {a/1000:6.2f}s {b/1000:13.2f}s {a/b if b else 0:5.2f}x  {agent} / {apps} / {mutant}")
for app, target in (("browser-notes", 3.0), ("ext-wordbadge-2", 6.0)):
    worst = max(statistics.median(walls[("shipped", n)]) for n in names if app in n) / 1000
    print(f"{app}: slowest trial {worst:.2f}s (target {target:.0f} s): {'met' if worst <= target else 'missed'}")
EOF
uptime
