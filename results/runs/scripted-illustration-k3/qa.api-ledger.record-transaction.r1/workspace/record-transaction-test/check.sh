#!/bin/sh
# Capability `record-transaction`: POST /transactions answers 201 with an id, and
# GET /transactions/<id> returns exactly the transaction that was posted.
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

# A fresh account per run, so the test can be re-run against the same app.
acct="rt$$x$(date +%s)"
amount=1234

req POST /transactions "{\"account\":\"$acct\",\"amount\":$amount}"
[ "$status" = 201 ] || fail "POST /transactions answered $status, expected 201 (body: $body)"
has account "\"$acct\"" || fail "POST answer does not echo account $acct: $body"
has amount "$amount" || fail "POST answer does not echo amount $amount: $body"
id=$(printf '%s' "$body" | sed -n 's/.*"id" *: *"\([^"]*\)".*/\1/p')
[ -n "$id" ] || fail "POST answer has no string id: $body"

req GET "/transactions/$id"
[ "$status" = 200 ] || fail "GET /transactions/$id answered $status, expected 200 (body: $body)"
has id "\"$id\"" || fail "GET /transactions/$id has the wrong id: $body"
has account "\"$acct\"" || fail "GET /transactions/$id has the wrong account (posted $acct): $body"
has amount "$amount" || fail "GET /transactions/$id has the wrong amount (posted $amount): $body"
echo "PASS: posted $acct/$amount as $id and read it back: $body"
