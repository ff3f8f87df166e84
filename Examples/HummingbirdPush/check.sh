#!/usr/bin/env bash
# Runs one request through the example app against the local APNs server, and checks the answers:
#   apnsctl serve (TLS, token auth) <- HummingbirdPush (APNSClient in a ServiceGroup) <- curl
# Usage: check.sh APNSCTL HUMMINGBIRD_PUSH   (the two built executables; `make example` passes them)
set -euo pipefail

apnsctl=$1
app=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
keys=$root/keys-example
topic=com.example.forgepush
good=$(printf 'ab%.0s' $(seq 32))
unknown=$(printf 'cd%.0s' $(seq 32))
push_to_start=$(printf '5a%.0s' $(seq 32))
update_token=$(printf '7b%.0s' $(seq 32))
work=$(mktemp -d)
server_pid=""
app_pid=""

stop() {
  # Only the two processes started here, by their ids.
  [ -n "$app_pid" ] && kill -TERM "$app_pid" 2>/dev/null && wait "$app_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT

fail() {
  echo "example: FAILED: $*" >&2
  echo "--- apnsctl serve stderr:" >&2; cat "$work/server.err" >&2 || true
  echo "--- app stderr:" >&2; cat "$work/app.err" >&2 || true
  exit 1
}

# Waits (at most 120 s: the first run of a debug binary can be slow on a busy machine) until
# FILE has a first line that is a port number; prints it.
port_of() {
  local file=$1 pid=$2
  for _ in $(seq 1200); do
    local line
    line=$(head -n 1 "$file" 2>/dev/null || true)
    if [[ "$line" =~ ^[0-9]+$ ]]; then echo "$line"; return 0; fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

"$apnsctl" serve --port 0 --cert "$keys/server.pem" --key "$keys/server.key" \
  --register-key "$keys/AuthKey_FORGEKEY01.p8:FORGEKEY01:FORGETEAM1" \
  --topic "$topic" --token "$good" --token "$push_to_start" --token "$update_token" --reject-unknown-tokens --json >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
server_port=$(port_of "$work/server.out" "$server_pid") || fail "apnsctl serve printed no port"

APNS_KEY_FILE="$keys/AuthKey_FORGEKEY01.p8" APNS_KEY_ID=FORGEKEY01 APNS_TEAM_ID=FORGETEAM1 APNS_TOPIC=$topic \
  APNS_URL="https://127.0.0.1:$server_port" APNS_CA_FILE="$keys/ca.pem" PORT=0 \
  "$app" >"$work/app.out" 2>"$work/app.err" &
app_pid=$!
app_port=$(port_of "$work/app.out" "$app_pid") || fail "the app printed no port"

# One accepted push: 200 with the apns-id the local server gave.
answer=$(curl -s --max-time 30 -w '\n%{http_code}' -H 'content-type: application/json' \
  -d '{"title":"Hello","body":"From Hummingbird"}' "http://127.0.0.1:$app_port/notify/$good")
status=$(tail -n 1 <<<"$answer")
body=$(head -n 1 <<<"$answer")
[ "$status" = 200 ] || fail "POST /notify/<known token>: status $status, body $body"
apns_id=$(sed -n 's/.*"apns_id":"\([0-9A-Fa-f-]*\)".*/\1/p' <<<"$body")
[ -n "$apns_id" ] || fail "POST /notify/<known token>: no apns_id in $body"
grep -q "\"token\":\"$good\".*\"status\":200.*\"apns_id\":\"$apns_id\"" "$work/server.out" \
  || fail "the local server did not log apns-id $apns_id as accepted: $(cat "$work/server.out")"

# One rejected push: the app answers APNs' status and reason.
answer=$(curl -s --max-time 30 -w '\n%{http_code}' -H 'content-type: application/json' \
  -d '{"title":"Hello","body":"Nobody"}' "http://127.0.0.1:$app_port/notify/$unknown")
[ "$(tail -n 1 <<<"$answer")" = 400 ] && grep -q '"reason":"BadDeviceToken"' <<<"$answer" \
  || fail "POST /notify/<unknown token>: expected 400 BadDeviceToken, got $answer"

# Managed Live Activities. post PATH BODY: prints the status, then the body.
post() {
  curl -s --max-time 30 -w '\n%{http_code}' -H 'content-type: application/json' -d "$2" "http://127.0.0.1:$app_port$1"
}
# A malformed report: 400 naming the field, nothing applied.
answer=$(post /activities/reports '{"kind":"push_to_start_token","installation":"phone-1","bundle_id":"'$topic'","attributes_type":"OrderAttributes","token":"xyz"}')
[ "$(tail -n 1 <<<"$answer")" = 400 ] && grep -q '"field":"token"' <<<"$answer" || fail "a report with a bad token: $answer"
# No push-to-start token yet: the start is refused and nothing is sent.
answer=$(post /activities/order-17/start '{"installation":"phone-1","order":"17","status":"packing"}')
[ "$(tail -n 1 <<<"$answer")" = 400 ] && grep -q '"code":"no_push_to_start_token"' <<<"$answer" || fail "a start before any report: $answer"
# The app reports its push-to-start token; the start goes to it (the local server accepts it).
answer=$(post /activities/reports '{"kind":"push_to_start_token","installation":"phone-1","bundle_id":"'$topic'","attributes_type":"OrderAttributes","token":"'$push_to_start'","sequence":1,"environment":"sandbox"}')
[ "$(tail -n 1 <<<"$answer")" = 200 ] && grep -q '"applied":true' <<<"$answer" || fail "the push-to-start report: $answer"
answer=$(post /activities/order-17/start '{"installation":"phone-1","order":"17","status":"packing"}')
[ "$(tail -n 1 <<<"$answer")" = 200 ] && grep -q '"state":"starting"' <<<"$answer" || fail "the start: $answer"
grep -q "\"token\":\"$push_to_start\".*\"status\":200" "$work/server.out" || fail "no accepted start to the push-to-start token: $(cat "$work/server.out")"
# An update before the update token is held; the token's report sends it.
answer=$(post /activities/order-17/update '{"status":"shipped"}')
grep -q '"state":"held"' <<<"$answer" || fail "the update before the token: $answer"
answer=$(post /activities/reports '{"kind":"update_token","activity":"order-17","token":"'$update_token'","sequence":2}')
[ "$(tail -n 1 <<<"$answer")" = 200 ] || fail "the update-token report: $answer"
grep -q "\"token\":\"$update_token\".*\"status\":200" "$work/server.out" || fail "the held update was not sent: $(cat "$work/server.out")"
answer=$(post /activities/order-17/end '{}')
grep -q '"state":"ended"' <<<"$answer" || fail "the end: $answer"
answer=$(post /activities/order-17/update '{"status":"late"}')
[ "$(tail -n 1 <<<"$answer")" = 400 ] && grep -q '"code":"not_live"' <<<"$answer" || fail "an update after the end: $answer"

# The client's metrics, as Prometheus text.
metrics=$(curl -s --max-time 30 "http://127.0.0.1:$app_port/metrics")
grep -Eq '^apns_notifications_total\{[^}]*push_type="alert"[^}]*result="accepted"[^}]*\} 1$|^apns_notifications_total\{[^}]*result="accepted"[^}]*push_type="alert"[^}]*\} 1$' <<<"$metrics" \
  || fail "GET /metrics: no accepted alert count of 1 in: $metrics"
grep -Eq '^apns_notifications_total\{[^}]*reason="BadDeviceToken"[^}]*\} 1$' <<<"$metrics" \
  || fail "GET /metrics: no BadDeviceToken count of 1 in: $metrics"

# SIGTERM: the ServiceGroup stops the server, then the client; both exit 0.
kill -TERM "$app_pid"; wait "$app_pid" || fail "the app exited with $? after SIGTERM"; app_pid=""
kill -TERM "$server_pid"; wait "$server_pid" || fail "apnsctl serve exited with $? after SIGTERM"; server_pid=""
echo "example: POST /notify accepted (apns-id $apns_id) and rejected (400 BadDeviceToken); /metrics counted both; a Live Activity reported, started, held, updated and ended"
