#!/bin/sh
# Capability `reject-unknown-id`: GET /transactions/<id> for an id that was never
# issued answers 404 {"error":"unknown id"}.
set -eu
: "${APP_URL:?APP_URL must be set to the app's base URL}"

fail() { echo "FAIL: $*" >&2; exit 1; }

# req METHOD PATH [JSON]: sets $status (HTTP code) and $body.
req() {
  if [ $# -ge 3 ]; then
    resp=$(curl -s -w '\n%{http_code}' -X "$1" -H 'Content-Type: application/json' --data "$3" "$APP_URL$2") || fail "cannot reach $APP_URL$2"
  else
    resp=$(curl -s -w '\n%{http_code}' -X "$1" "$APP_URL$2") || fail "cannot reach $APP_URL$2"
  fi
  status=$(printf '%s\n' "$resp" | tail -n 1)
  body=$(printf '%s\n' "$resp" | sed '$d')
}

# has KEY JSON-VALUE: the body holds "KEY": VALUE (a whole value, not a prefix).
has() { printf '%s' "$body" | grep -Eq "\"$1\" *: *$2([,} ]|\$)"; }

for id in "no-such-id-$$" tx-999999999; do
  req GET "/transactions/$id"
  [ "$status" = 404 ] || fail "GET /transactions/$id answered $status, expected 404 (body: $body)"
  has error '"unknown id"' || fail "GET /transactions/$id body is $body, expected {\"error\":\"unknown id\"}"
done
echo "PASS: unknown ids answer 404 {\"error\":\"unknown id\"}"
