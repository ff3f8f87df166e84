#!/bin/sh
# An end-to-end check from any language's test suite: trigger a send, then ask the local APNs what
# arrived and what the phone shows. usage: inbox-wait.sh UI_URL SEND_COMMAND…
# (UI_URL is the `ui http://…` line of `apnsctl serve --ui-port 0`; the send command is your backend's.)
set -eu
ui=$1; shift; token=7c1d3f4a9b2e8c6d0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071
curl -fsS -X DELETE "$ui/api/v1/pushes"                                  # a clean inbox and phone
"$@" --token "$token" --topic com.example.shop --title "Order shipped"    # what the backend does
push=$(curl -fsS "$ui/api/v1/wait?token=$token&timeout=5s")               # fails (408) if nothing came
echo "$push" | grep -q '"status":200' && echo "$push" | grep -q '"title":"Order shipped"'
curl -fsS "$ui/api/v1/devices/$token" | grep -q '"title":"Order shipped"' # the lock screen shows it
echo "ok: the push arrived and the phone shows it"
