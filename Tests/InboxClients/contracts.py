#!/usr/bin/env python3
"""A content-state contract on apnsctl serve's phones, through HTTP and apnsctl send only: a phone
with an app whose Live Activity type has a contract (serve --activity-type), a start that decodes,
updates that do not (discarded as decoding_failed, the field, the type and the value named), one
that does, and a start whose attributes do not decode. Standard library only (the checks and calls
of inbox_api.py)."""

import argparse
import json
import os
import shlex
import subprocess
import tempfile
import time

from inbox_api import call, check, results


def send(options, token, payload):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(payload, file)
    command = shlex.split(options.send) + ["--token", token, "--topic", "com.example.shop", "--push-type", "liveactivity",
                                           "--payload", file.name, "--json"]
    sent = subprocess.run(command, capture_output=True, text=True, timeout=60)
    os.unlink(file.name)
    apns_id = None
    for line in sent.stdout.splitlines():
        try:
            apns_id = json.loads(line).get("apns_id") or apns_id
        except ValueError:
            pass
    return sent, apns_id


def view(ui, phone):
    return call(ui, "GET", f"/api/v1/devices/{phone}")[1] or {}


def until(condition, seconds=10):
    """Asks again every 0.1 s for at most `seconds`: the phones apply a push just after the inbox records it."""
    deadline = time.time() + seconds
    while True:
        value = condition()
        if value or time.time() > deadline:
            return value
        time.sleep(0.1)


def delivery(ui, phone, apns_id):
    return until(lambda: next((d for d in view(ui, phone).get("deliveries", []) if d["apns_id"] == apns_id and d["state"] != "delivered"), None))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ui", required=True)
    parser.add_argument("--send", required=True)
    options = parser.parse_args()
    ui = options.ui

    status, made = call(ui, "POST", "/api/v1/devices", {"apps": [{"bundle_id": "com.example.shop", "attributes_types": ["ScoreAttributes"]}]})
    phone = (made or {}).get("token")
    start_token = ((made or {}).get("apps") or [{}])[0].get("push_to_start_tokens", {}).get("ScoreAttributes")
    check("a phone with the app whose type has a contract", status == 201 and phone and start_token, made)
    now = int(time.time())

    sent, _ = send(options, start_token, {"aps": {"event": "start", "timestamp": now, "attributes-type": "ScoreAttributes",
                                                  "attributes": {"match": "final"}, "content-state": {"home": 0, "away": 0},
                                                  "alert": {"title": "Kick-off", "body": "0-0"}}})
    activities = until(lambda: view(ui, phone).get("live_activities"))
    check("a start that decodes starts the activity", sent.returncode == 0 and activities and activities[0]["content_state"] == {"home": 0, "away": 0},
          (sent.stderr, activities))
    token = (activities or [{}])[0].get("push_token")

    sent, apns_id = send(options, token, {"aps": {"event": "update", "timestamp": now + 1, "content-state": {"home": 1.5, "away": 0}}})
    record = delivery(ui, phone, apns_id)
    check("APNs accepts a float sent into an Int field", sent.returncode == 0 and apns_id, (sent.stdout, sent.stderr))
    check("the phone discards it as decoding_failed", record and record["state"] == "discarded" and record["reason"] == "decoding_failed", record)
    why = (record or {}).get("why") or ""
    check("the why names the field, the type and the value", "content-state.home" in why and "Int" in why and "1.5" in why, why)

    sent, apns_id = send(options, token, {"aps": {"event": "update", "timestamp": now + 2, "content-state": {"home": 2}}})
    record = delivery(ui, phone, apns_id)
    why = (record or {}).get("why") or ""
    check("a missing required field: discarded, named", record and record["reason"] == "decoding_failed" and "content-state.away" in why
          and "missing" in why, record)

    sent, apns_id = send(options, token, {"aps": {"event": "update", "timestamp": now + 3, "content-state": {"home": None, "away": 1}}})
    record = delivery(ui, phone, apns_id)
    check("null into a field that is not optional: discarded", record and record["reason"] == "decoding_failed" and "null" in record["why"], record)

    sent, apns_id = send(options, token, {"aps": {"event": "update", "timestamp": now + 4,
                                                  "content-state": {"home": 3, "away": 1, "note": "unknown keys are ignored"}}})
    shown = until(lambda: (view(ui, phone).get("live_activities") or [{}])[0].get("content_state", {}).get("home") == 3)
    check("an update that decodes is shown (unknown keys ignored)", sent.returncode == 0 and shown, view(ui, phone).get("live_activities"))

    status, second = call(ui, "POST", "/api/v1/devices", {"apps": [{"bundle_id": "com.example.shop", "attributes_types": ["ScoreAttributes"]}]})
    other = (second or {}).get("token")
    other_start = ((second or {}).get("apps") or [{}])[0].get("push_to_start_tokens", {}).get("ScoreAttributes")
    sent, apns_id = send(options, other_start, {"aps": {"event": "start", "timestamp": now, "attributes-type": "ScoreAttributes",
                                                        "attributes": {"match": 42}, "content-state": {"home": 0, "away": 0},
                                                        "alert": {"title": "Kick-off", "body": "0-0"}}})
    record = delivery(ui, other, apns_id)
    check("a start whose attributes do not decode: discarded, the attribute named",
          record and record["reason"] == "decoding_failed" and "attributes.match" in record["why"] and not view(ui, other).get("live_activities"),
          record)

    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    raise SystemExit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
