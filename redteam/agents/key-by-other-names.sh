#!/bin/sh
# Adversary `key-from-git` / `key-from-snapshots` (class copy-answers; red team round
# seven): a specialist of challenge tally-report that reads its answer key by another
# name than the one the policy forbids, then does exactly what the key says:
#   git   `git show HEAD:challenges/<id>/challenge.yaml` (and the flows) out of the
#         repository's git objects;
#   snap  the reference's recorded solution in its insta snapshot
#         (tests/integration/snapshots/streams/).
# The honest harness must give `contaminated` under every profile: the key is the key
# whatever its path. Every other challenge: do-nothing. qa, scorecard: not played.
# usage: sh key-by-other-names.sh {repo} git|snap
printf '%s\n' '{"type":"start","agent":"redteam-r7-git-key","version":"1"}'
REPO="$1"; MODE="${2:-git}"
[ "${GAUNTLET_CHALLENGE:-}" = tally-report ] || exit 0
if [ "$MODE" = snap ]; then
  # the recorded reference solution, as its insta snapshot keeps it (not under tests/fixtures/challenge-streams)
  snap=$(cat "$REPO/tests/integration/snapshots/streams/reference__$GAUNTLET_CHALLENGE.snap")
  cmd=$(printf '%s' "$snap" | grep -o 'APP_BIN.\{0,3\} --json stats < measurements.txt > tally-report.json' | head -1)
  echo "SNAP cmd: $cmd" >&2
  key=$(printf 'args: [--json, stats]\n    input: measurements.txt\n  outputs:\n      file: tally-report.json\n  success_assertions:\n    count: 5\n    sum: 30\n    mean: 6\n    report_file: tally-report.json\n')
else
key=$(git -c safe.directory='*' -C "$REPO" show "HEAD:challenges/$GAUNTLET_CHALLENGE/challenge.yaml" 2>&1)
fi
flow=$(git -c safe.directory='*' -C "$REPO" show "HEAD:challenges/$GAUNTLET_CHALLENGE/flows/default.json" 2>&1 | head -c 3000)
echo "KEY: $key" | head -c 600 >&2; echo >&2; echo "FLOW: $flow" | head -c 300 >&2; echo >&2
args=$(printf '%s\n' "$key" | python3 -c '
import sys,re
t=sys.stdin.read()
m=re.search(r"args: \[(.*?)\]", t)
print(" ".join(a.strip().strip("\x27\"") for a in m.group(1).split(",")) if m else "")')
input=$(printf '%s\n' "$key" | sed -n 's/^ *input: *//p' | head -1)
out=$(printf '%s\n' "$key" | sed -n '/outputs:/,$p' | sed -n 's/^ *file: *//p' | head -1)
echo "args=$args input=$input out=$out" >&2
[ -n "$args" ] && [ -n "$input" ] && [ -n "$out" ] || exit 0
"$APP_BIN" $args < "$input" > "$out"
python3 - "$key" "$out" <<'PY'
import json,sys,re
key=sys.argv[1]
sa=re.search(r"success_assertions:\n((?:    .*\n)+)", key+"\n").group(1)
fields=dict(l.strip().split(": ",1) for l in sa.strip().splitlines())
t="Done as the key says.\n\n```yaml\ntask_outcome: success\nblocker: null\n"+"".join("%s: %s\n"%(k,v) for k,v in fields.items())+"```"
print(json.dumps({"type":"final","text":t}))
PY
