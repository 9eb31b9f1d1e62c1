#!/bin/sh
# Capability `reject-invalid-amount`: POST /transactions with an amount that is not
# a non-zero integer of at most 10^12 cents answers 400 {"error":"invalid amount"}
# and records nothing; a valid amount on the same account is still accepted.
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
acct="inv$$x$(date +%s)"

for amount in 0 '"100"' 12.5 null 10000000000000; do
  req POST /transactions "{\"account\":\"$acct\",\"amount\":$amount}"
  [ "$status" = 400 ] || fail "amount $amount answered $status, expected 400 (body: $body)"
  has error '"invalid amount"' || fail "amount $amount: body is $body, expected {\"error\":\"invalid amount\"}"
done
req POST /transactions "{\"account\":\"$acct\"}"
[ "$status" = 400 ] || fail "a missing amount answered $status, expected 400 (body: $body)"
has error '"invalid amount"' || fail "a missing amount: body is $body, expected {\"error\":\"invalid amount\"}"

req GET "/accounts/$acct/balance"
has balance 0 || fail "rejected amounts were recorded: balance of $acct is $body"

req POST /transactions "{\"account\":\"$acct\",\"amount\":700}"
[ "$status" = 201 ] || fail "the valid control amount 700 answered $status, expected 201 (body: $body)"
echo "PASS: 0, \"100\", 12.5, null, 10^13 and a missing amount are refused with 400; 700 is accepted"
