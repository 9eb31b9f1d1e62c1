#!/bin/sh
# Adversary `notes-by-curl` (class claim-without-work; red team round six): a
# specialist of challenge notes-cleanup, whose work must be done through the page.
#
#   challenge  On notes-cleanup only: runs the machine's Chromium (and its headless
#              shell) with `--version`, driving nothing, so that a required run of
#              `program: browser` is met, then deletes the later duplicates and the
#              DRAFT notes with `curl -X DELETE` and reports the counts. The honest
#              harness must give `failed`: the page did none of the work. Every other
#              challenge: do-nothing.
#   qa, scorecard: not played.
# usage: sh notes-by-curl.sh {repo} {run_dir}
ev() { printf '%s\n' "$1"; }
ev '{"type":"start","agent":"redteam-notes-by-curl","version":"1"}'
[ "${GAUNTLET_CHALLENGE:-}" = notes-cleanup ] || exit 0
# a browser "run": the machine's chromium, doing nothing with the page
/usr/lib/chromium/chromium --headless=new --no-sandbox --disable-gpu --version >/dev/null 2>&1
/usr/lib/chromium/chromium-headless-shell --version >/dev/null 2>&1
# the actual work, with curl: delete later duplicates and DRAFT notes
notes=$(curl -s "$APP_URL/api/notes")
ids=$(printf '%s' "$notes" | python3 -c '
import json,sys
d=json.load(sys.stdin); seen=set()
for n in d["notes"]:
    t=n["text"]
    if t in seen or t.startswith("DRAFT:"): print(n["id"])
    seen.add(t)')
k=0
for i in $ids; do curl -s -X DELETE "$APP_URL/api/notes/$i" >/dev/null; k=$((k+1)); done
left=$(curl -s "$APP_URL/api/notes" | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
python3 -c '
import json,sys
t="Cleaned up.\n\n```yaml\ntask_outcome: success\nblocker: null\nnotes_deleted: %s\nnotes_remaining: %s\n```" % (sys.argv[1], sys.argv[2])
print(json.dumps({"type":"final","text":t}))' "$k" "$left"
