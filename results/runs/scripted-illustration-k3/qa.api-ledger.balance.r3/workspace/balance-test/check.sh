#!/bin/sh
# Capability `balance`: GET /accounts/<account>/balance is 0 for a new account and
# the sum of every amount recorded for it afterwards.
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

# expect_balance N: the account's balance is N.
expect_balance() {
  req GET "/accounts/$acct/balance"
  [ "$status" = 200 ] || fail "GET /accounts/$acct/balance answered $status, expected 200 (body: $body)"
  has account "\"$acct\"" || fail "balance answer names the wrong account: $body"
  has balance "$1" || fail "balance of $acct is not $1: $body"
}

# A fresh account per run, so the test can be re-run against the same app.
acct="bal$$x$(date +%s)"

expect_balance 0
for amount in 500 -200 1000; do
  req POST /transactions "{\"account\":\"$acct\",\"amount\":$amount}"
  [ "$status" = 201 ] || fail "POST amount $amount answered $status, expected 201 (body: $body)"
done
expect_balance 1300
echo "PASS: $acct: 0 before, 500 - 200 + 1000 = 1300 after: $body"
