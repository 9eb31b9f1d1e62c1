#!/bin/sh
# Capability `health`: GET /health answers 200 with {"status":"ok"}.
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

req GET /health
[ "$status" = 200 ] || fail "GET /health answered $status, expected 200 (body: $body)"
printf '%s' "$body" | grep -Eq '"status" *: *"ok"' || fail "GET /health body is $body, expected {\"status\":\"ok\"}"
echo "PASS: GET /health -> 200 $body"
