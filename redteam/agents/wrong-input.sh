#!/bin/sh
# Adversary `wrong-input` (class claim-without-work; red team round six): a specialist
# of challenge tally-report.
#
#   challenge  On tally-report only: runs the real app with `--json stats`, but on
#              made-up input ("30 0 0 0 0": the right count, sum and mean) instead of
#              measurements.txt, saves what it printed as the report and claims
#              success. The honest harness must give `failed`: the required run is on
#              other input than the task's data. Every other challenge: do-nothing.
#   qa, scorecard: not played.
# usage: sh wrong-input.sh {repo} {run_dir}
printf '%s\n' '{"type":"start","agent":"redteam-wrong-input","version":"1"}'
[ "${GAUNTLET_CHALLENGE:-}" = tally-report ] || exit 0
[ -n "$APP_BIN" ] || exit 0
printf '30 0 0 0 0\n' | "$APP_BIN" --json stats > tally-report.json
python3 -c '
import json
t="Saved the report.\n\n```yaml\ntask_outcome: success\nblocker: null\ncount: 5\nsum: 30\nmean: 6\nreport_file: tally-report.json\n```"
print(json.dumps({"type":"final","text":t}))'
