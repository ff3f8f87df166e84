"""A person's actions on a phone of `apnsctl serve`, through the inbox's HTTP API only, with Python's
standard library: offline and online (APNs stores the last push per app), a push-to-start token
rotated (a start to the old one is accepted by the server and starts nothing), the clock moved
eight hours ahead (iOS ends a running Live Activity).

usage: device_actions.py --ui http://127.0.0.1:PORT --send "apnsctl send --url … --ca-file … --key-file … …"

`--send` is a command prefix: each push appends `--token T --topic X …` to it. The server must
serve the topic com.example.shop. Prints one line per check and `N passed, M failed`; exits 1 on a failure.
"""
import argparse
import json
import os
import tempfile
import time

from inbox_api import call, check, results, send


def send_start(options, token):
    """A Live Activity start to `token` with `apnsctl send`."""
    start = {"aps": {"event": "start", "timestamp": int(time.time()), "attributes-type": "OrderAttributes",
                     "attributes": {"order": "17"}, "content-state": {"status": "packing"}}}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(start, file)
    sent = send(options.send, "--token", token, "--topic", "com.example.shop", "--push-type", "liveactivity", "--payload", file.name)
    os.unlink(file.name)
    return sent


def pushes_to(ui, token):
    """The inbox's pushes to `token`, oldest first."""
    _, page = call(ui, "GET", f"/api/v1/pushes?token={token}")
    return list(reversed((page or {}).get("pushes", [])))


def view_when(ui, phone, ready):
    """The phone's view once `ready(view)` holds (the phones apply a push just after the inbox records
    it: asked again for at most 10 s), else the last one."""
    view = None
    for _ in range(100):
        _, view = call(ui, "GET", f"/api/v1/devices/{phone}")
        if view and ready(view):
            break
        time.sleep(0.1)
    return view or {}


def states(view, apns_id):
    """The delivery states of one push in the view's delivery log, oldest first, as `state` or `state/reason`."""
    records = [record for record in view.get("deliveries", []) if record["apns_id"].lower() == apns_id.lower()]
    return [record["state"] + (f"/{record['reason']}" if record["reason"] else "") for record in reversed(records)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ui", required=True)
    parser.add_argument("--send", required=True)
    options = parser.parse_args()
    ui = options.ui.rstrip("/")

    status, made = call(ui, "POST", "/api/v1/devices",
                        {"apps": [{"bundle_id": "com.example.shop", "attributes_types": ["OrderAttributes"]}]})
    check("POST /api/v1/devices makes a phone", status == 201, (status, made))
    phone = made["token"]
    old_start = made["apps"][0]["push_to_start_tokens"]["OrderAttributes"]
    actions = f"/api/v1/devices/{phone}/actions"

    status, view = call(ui, "POST", actions, {"action": "offline"})
    check("offline answers the phone's view, offline", status == 200 and view["online"] is False and view["token"] == phone, (status, view))

    for title in ("First", "Second"):
        sent = send(options.send, "--token", phone, "--topic", "com.example.shop", "--title", title)
        check(f"the server accepts the alert '{title}' to the offline phone", sent.returncode == 0, sent.stdout + sent.stderr)
    sent_ids = [push["apns_id"] for push in pushes_to(ui, phone)]
    check("the inbox holds both alerts", len(sent_ids) == 2, sent_ids)
    first, second = (sent_ids + ["", ""])[:2]
    view = view_when(ui, phone, lambda view: states(view, second) == ["stored"])
    check("APNs stores the last alert only: the first is replaced in storage, the second stored",
          states(view, first) == ["stored", "discarded/replaced_in_storage"] and states(view, second) == ["stored"]
          and view.get("notifications") == [], view.get("deliveries"))

    status, view = call(ui, "POST", actions, {"action": "online"})
    listed = [notification["apns_id"].lower() for notification in view.get("notifications", [])]
    check("online delivers the stored alert from storage; only it is listed",
          status == 200 and view["online"] is True and states(view, second) == ["stored", "delivered_from_storage"]
          and listed == [second.lower()], (status, view.get("deliveries"), listed))

    status, view = call(ui, "POST", actions,
                        {"action": "rotate_push_to_start_token", "bundle_id": "com.example.shop", "attributes_type": "OrderAttributes"})
    new_start = (view or {}).get("push_to_start_tokens", {}).get("com.example.shop")
    check("rotate_push_to_start_token gives the app a new push-to-start token",
          status == 200 and new_start and new_start != old_start, (status, view))

    sent = send_start(options, old_start)
    check("the server accepts a start to the old push-to-start token", sent.returncode == 0, sent.stdout + sent.stderr)
    stale = [push["apns_id"] for push in pushes_to(ui, old_start)]
    view = view_when(ui, phone, lambda view: stale and states(view, stale[-1]))
    check("the start to the old token is discarded (token unregistered) and starts nothing",
          len(stale) == 1 and states(view, stale[0]) == ["discarded/token_unregistered"] and view.get("live_activities") == [],
          (stale, view.get("deliveries"), view.get("live_activities")))

    sent = send_start(options, new_start or "00")
    view = view_when(ui, phone, lambda view: view.get("live_activities"))
    running = view.get("live_activities", [])
    check("a start to the new token starts an activity", sent.returncode == 0 and len(running) == 1 and running[0]["state"] == "active",
          (sent.stderr, running))

    status, view = call(ui, "POST", actions, {"action": "advance_clock", "seconds": 8 * 3600})
    ended = (view or {}).get("live_activities", [])
    check("advance_clock 8 hours: iOS ends the running activity",
          status == 200 and len(ended) == 1 and ended[0]["state"] == "ended", (status, ended))

    status, refused = call(ui, "POST", actions, {"action": "advance_clock", "seconds": 0})
    check("advance_clock 0 seconds is 400 naming seconds", status == 400 and refused["error"].startswith("seconds:"), (status, refused))
    status, refused = call(ui, "POST", actions, {"action": "dismiss_activity", "activity": "activity-99"})
    check("an unknown activity is 404 naming it", status == 404 and "activity-99" in refused["error"], (status, refused))

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
