"""Drives `apnsctl serve`'s inbox API from outside Swift, with Python's standard library only.

usage: inbox_api.py --ui http://127.0.0.1:PORT --send "apnsctl send --url … --ca-file … --key-file … …"

`--send` is a command prefix: each push appends `--token T --topic X …` to it. The server must
serve only the topic com.example.shop (`apnsctl serve --topic com.example.shop`), so that a push to
com.other.app is rejected. Prints one line per check and `N passed, M failed`; exits 1 on a failure.
"""
import argparse
import json
import os
import shlex
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

TOKEN_A = "a1" * 32
TOKEN_B = "b2" * 32
TOKEN_C = "c3" * 32
results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


def call(ui, method, path, body=None):
    """(status, parsed JSON or None) of one request (`body` sent as JSON); errors are answers too."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(ui + path, data=data, method=method, headers={"content-type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            return response.status, (json.loads(body) if body else None)
    except urllib.error.HTTPError as error:
        body = error.read()
        return error.code, (json.loads(body) if body else None)


def send(prefix, *arguments):
    command = shlex.split(prefix) + list(arguments)
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def start_activity(options, ui, phone, push_to_start, order):
    """Sends a Live Activity start for `order` to a push-to-start token with `apnsctl send`; the
    phone's activities once one shows (the phones apply it just after the inbox records it: asked
    again for at most 10 s), with the send's result."""
    start = {"aps": {"event": "start", "timestamp": int(time.time()), "attributes-type": "OrderAttributes",
                     "attributes": {"order": order}, "content-state": {"status": "packing"},
                     "alert": {"title": f"Order {order}", "body": "Packing"}}}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(start, file)
    sent = send(options.send, "--token", push_to_start, "--topic", "com.example.shop", "--push-type", "liveactivity",
                "--payload", file.name)
    os.unlink(file.name)
    activities = []
    for _ in range(100 if sent.returncode == 0 else 0):
        _, view = call(ui, "GET", f"/api/v1/devices/{phone}")
        activities = (view or {}).get("live_activities", [])
        if activities:
            break
        time.sleep(0.1)
    return sent, activities


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ui", required=True)
    parser.add_argument("--send", required=True)
    options = parser.parse_args()
    ui = options.ui.rstrip("/")

    status, _ = call(ui, "DELETE", "/api/v1/pushes")
    check("DELETE /api/v1/pushes answers 204", status == 204, status)
    status, ready = call(ui, "GET", "/readyz")
    check("GET /readyz: 200, ready, with the inbox's counts", status == 200 and ready == {"ready": True, "entries": 0, "dropped": 0},
          (status, ready))

    # A wait started before the push returns it once it is judged.
    waited = {}

    def wait():
        started = time.monotonic()
        waited["answer"] = call(ui, "GET", f"/api/v1/wait?token={TOKEN_A}&timeout=20s")
        waited["at"] = time.monotonic()
        waited["took"] = waited["at"] - started

    waiter = threading.Thread(target=wait)
    waiter.start()
    sent = send(options.send, "--token", TOKEN_A, "--topic", "com.example.shop", "--title", "Parcel shipped",
                "--body", "Your order A-17 is on its way", "--collapse-id", "order-17")
    returned = time.monotonic()
    waiter.join(30)
    check("apnsctl send to a served topic exits 0", sent.returncode == 0, sent.stderr)
    status, entry = waited.get("answer", (None, None))
    check("a wait started before the push returns it", status == 200 and entry and entry["token"] == TOKEN_A, (status, entry))
    check("the wait returned within 1 s of the send's end", waited.get("at", 1e9) - returned < 1.0, waited)
    check("the entry has the push's fields", entry and entry["topic"] == "com.example.shop" and entry["push_type"] == "alert"
          and entry["collapse_id"] == "order-17" and entry["status"] == 200
          and entry["payload"]["aps"]["alert"]["title"] == "Parcel shipped", entry)
    check("authorization is redacted", entry and entry["headers"].get("authorization") == "bearer <redacted>", entry and entry["headers"])

    rejected = send(options.send, "--token", TOKEN_B, "--topic", "com.other.app", "--title", "Not served")
    check("a push to a topic not served exits 1", rejected.returncode == 1, rejected.stdout + rejected.stderr)

    status, page = call(ui, "GET", "/api/v1/pushes")
    check("the list has both, newest first", status == 200 and page["total"] == 2 and page["pushes"][0]["token"] == TOKEN_B, page)
    newest = page["pushes"][0] if page and page["pushes"] else {}
    check("the rejection says why", newest.get("reason") == "TopicDisallowed"
          and newest.get("why") == "topic com.other.app is not served: --topic serves com.example.shop", newest)
    for query, expected in [(f"token={TOKEN_A}", 1), ("status=rejected", 1), ("status=accepted", 1), ("status=400", 1),
                            ("topic=com.example.shop", 1), ("push_type=alert", 2), ("q=order%20A-17", 1), ("q=nothing-like-it", 0),
                            ("since=2000-01-01T00:00:00Z", 2), ("since=2999-01-01T00:00:00.000Z", 0)]:
        status, filtered = call(ui, "GET", f"/api/v1/pushes?{query}")
        check(f"filter {query} matches {expected}", status == 200 and filtered["total"] == expected, filtered)
    status, limited = call(ui, "GET", "/api/v1/pushes?limit=1")
    check("limit=1: one entry, the total before the limit", status == 200 and len(limited["pushes"]) == 1 and limited["total"] == 2, limited)

    status, one = call(ui, "GET", f"/api/v1/pushes/{entry['apns_id'] if entry else 'x'}")
    check("GET /api/v1/pushes/{apns_id}", status == 200 and one["token"] == TOKEN_A, (status, one))
    status, missing = call(ui, "GET", "/api/v1/pushes/00000000-0000-4000-8000-000000000000")
    check("an unknown apns_id is 404 with an error", status == 404 and "error" in missing, (status, missing))

    started = time.monotonic()
    status, timeout = call(ui, "GET", f"/api/v1/wait?token={TOKEN_C}&timeout=300ms")
    check("a wait that nothing satisfies is 408 after its timeout", status == 408 and "error" in timeout
          and 0.25 <= time.monotonic() - started < 5, (status, timeout))

    status, phone = call(ui, "GET", f"/api/v1/devices/{TOKEN_A}")
    notifications = (phone or {}).get("notifications", [])
    check("the phone shows the notification", status == 200 and len(notifications) == 1
          and notifications[0]["title"] == "Parcel shipped" and notifications[0]["body"] == "Your order A-17 is on its way", phone)
    check("the notification keeps its apns-id and collapse id", notifications and notifications[0]["collapse_id"] == "order-17"
          and notifications[0]["apns_id"] == (entry or {}).get("apns_id"), notifications)
    with urllib.request.urlopen(ui + "/metrics", timeout=30) as response:
        metrics = response.read().decode()
    check("GET /metrics serves the Prometheus text on the inbox's port", "apns_local_requests_total" in metrics, metrics[:200])
    status, _ = call(ui, "GET", f"/api/v1/devices/{TOKEN_B}")
    check("a rejected push reaches no phone: 404", status == 404, status)

    for path, needle in [("/api/v1/pushes?limit=0", "limit: must be 1…10000 (got 0)"),
                         ("/api/v1/pushes?colour=red", "colour: unknown parameter"),
                         ("/api/v1/pushes?since=yesterday", "since: must be an ISO 8601 time"),
                         ("/api/v1/pushes/not-a-uuid", "apns_id: must be a UUID"),
                         ("/api/v1/wait?timeout=1s", "wait: give at least one of"),
                         ("/api/v1/devices/not-hex", "token: must be hex digits"),
                         ("/api/v1/pushes?token=xyz", "token: must be hex digits")]:
        status, error = call(ui, "GET", path)
        check(f"{path} is 400 naming the rule", status == 400 and needle in (error or {}).get("error", ""), (status, error))

    # The event stream: a push sent while it is open arrives as `event: push`.
    events = urllib.request.urlopen(ui + "/api/v1/events", timeout=30)
    check("GET /api/v1/events is text/event-stream", events.headers.get("Content-Type", "").startswith("text/event-stream"),
          events.headers.get("Content-Type"))
    send(options.send, "--token", TOKEN_C, "--topic", "com.example.shop", "--title", "Streamed")
    deadline = time.monotonic() + 10
    streamed = None
    event = None
    while time.monotonic() < deadline and streamed is None:
        line = events.readline().decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event == "push":
            streamed = json.loads(line[6:])
    events.close()
    check("the pushed entry arrives on the stream", streamed is not None and streamed["token"] == TOKEN_C, streamed)

    # A phone with an app installed, made before any push: a start to its push-to-start token starts
    # an activity on it, which shows with its own push token.
    status, made = call(ui, "POST", "/api/v1/devices",
                        {"apps": [{"bundle_id": "com.example.shop", "attributes_types": ["OrderAttributes"]}]})
    start_token = (made or {}).get("apps", [{}])[0].get("push_to_start_tokens", {}).get("OrderAttributes")
    check("POST /api/v1/devices makes a phone with a push-to-start token", status == 201 and start_token, (status, made))
    status, refused = call(ui, "POST", "/api/v1/devices", {"apps": [{"bundle_id": "not a bundle id"}]})
    check("a bad app is 400 naming the field", status == 400 and refused["error"].startswith("apps[0].bundle_id:"), (status, refused))
    if start_token:
        sent, activities = start_activity(options, ui, made["token"], start_token, "A-17")
        check("a start to the push-to-start token is accepted", sent.returncode == 0, sent.stdout + sent.stderr)
        check("the activity shows on the made phone with its own push token",
              len(activities) == 1 and activities[0]["push_token"] not in (start_token, made["token"])
              and activities[0]["content_state"] == {"status": "packing"}, activities)

    # A phone that asks before Live Activities (iOS 17.2 and later): a remotely started activity
    # waits for the person's Allow with no push token; the actions endpoint taps Allow.
    status, asking = call(ui, "POST", "/api/v1/devices",
                          {"apps": [{"bundle_id": "com.example.shop", "attributes_types": ["OrderAttributes"]}],
                           "ask_before_activities": True})
    ask_start = (asking or {}).get("apps", [{}])[0].get("push_to_start_tokens", {}).get("OrderAttributes")
    check("POST /api/v1/devices with ask_before_activities makes a phone that asks, with its installation id",
          status == 201 and ask_start and asking["ask_before_activities"] is True and asking["installation"] == asking["token"],
          (status, asking))
    status, refused = call(ui, "POST", "/api/v1/devices",
                           {"apps": [{"bundle_id": "com.example.shop"}], "ask_before_activities": "yes"})
    check("a non-boolean ask_before_activities is 400 naming it",
          status == 400 and refused["error"].startswith("ask_before_activities:"), (status, refused))
    if ask_start:
        sent, activities = start_activity(options, ui, asking["token"], ask_start, "A-18")
        check("a start to the asking phone is accepted", sent.returncode == 0, sent.stdout + sent.stderr)
        check("the activity awaits permission, with no push token",
              len(activities) == 1 and activities[0]["state"] == "awaiting_permission" and activities[0]["push_token"] is None,
              activities)
        actions = f"/api/v1/devices/{asking['token']}/actions"
        status, view = call(ui, "POST", actions, {"action": "allow_activity", "bundle_id": "com.example.shop"})
        allowed = (view or {}).get("live_activities", [])
        check("allow_activity answers the phone's view: the activity is active with its push token",
              status == 200 and len(allowed) == 1 and allowed[0]["state"] == "active"
              and len(allowed[0]["push_token"] or "") == 64, (status, view))
    status, refused = call(ui, "POST", f"/api/v1/devices/{(asking or {}).get('token', 'ab')}/actions",
                           {"action": "shake", "bundle_id": "com.example.shop"})
    check("an unknown action is 400 naming it",
          status == 400 and refused["error"].startswith("action: unknown action 'shake'"), (status, refused))
    status, refused = call(ui, "POST", f"/api/v1/devices/{'de' * 32}/actions",
                           {"action": "deny_activity", "bundle_id": "com.example.shop"})
    check("an action on a token no phone has is 404", status == 404 and refused["error"].startswith("token:"), (status, refused))

    status, _ = call(ui, "DELETE", "/api/v1/pushes")
    status_list, cleared = call(ui, "GET", "/api/v1/pushes")
    status_phone, _ = call(ui, "GET", f"/api/v1/devices/{TOKEN_A}")
    check("a clear empties the inbox and the phones", status == 204 and cleared["total"] == 0 and status_phone == 404,
          (status, cleared, status_phone))

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
