"""A backend in Python that runs Live Activities on simulated phones through the gateway, and never
imports Swift: the phones of `apnsctl serve` report their tokens to `apnsctl activities serve`
(through `--report-tokens-to`), the backend starts, updates and ends activities over the gateway's
HTTP API, and reads what each phone shows through the inbox's API.

usage: gateway_phones.py --serve "apnsctl serve --port 0 --ui-port 0 --topic com.example.shop …" \
                         --gateway "apnsctl activities serve --store sqlite:FILE --port 0 --ca-file … --key-file … …" \
                         --phones 3

The phones' reports go to a forwarder of this script on 127.0.0.1 (port 0), which answers 503 until
the gateway is up (the server retries) and then passes each report to the gateway's /v1/reports: so
each server starts on port 0 and learns the other's address. Every wait is for an outcome, bounded
in time. Prints one line per check and `N passed, M failed`; exits 1 on a failure.
"""
import argparse
import http.server
import json
import shlex
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

BUNDLE = "com.example.shop"
TYPE = "OrderAttributes"
results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


def call(base, method, path, body=None, key=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json"} if data else {}
    if key:
        headers["authorization"] = "Bearer " + key
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, json.loads(text) if text else None


class Forwarder:
    """The phones' report URL: 503 until `target` is set, then each report passed to the gateway."""

    def __init__(self):
        self.target = None
        self.forwarded = []
        self.lock = threading.Lock()
        forwarder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                status = 503
                with forwarder.lock:
                    target = forwarder.target
                if target:
                    status, answer = call(target[0], "POST", "/v1/reports", json.loads(body), key=target[1])
                    with forwarder.lock:
                        forwarder.forwarded.append((json.loads(body), status, answer))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *arguments):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/reports"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def until(condition, seconds=30):
    """`condition()`'s value once it is true, polled; its last value after `seconds` otherwise."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def phone_activity(ui, token):
    status, view = call(ui, "GET", f"/api/v1/devices/{token}")
    activities = view.get("live_activities", []) if status == 200 else []
    return activities[0] if len(activities) == 1 else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", required=True)
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--phones", type=int, default=3)
    options = parser.parse_args()

    forwarder = Forwarder()
    serve = subprocess.Popen(shlex.split(options.serve) + ["--report-tokens-to", forwarder.url],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    gateway = None
    try:
        port = int(serve.stdout.readline().strip())
        ui = serve.stdout.readline().strip()[len("ui "):]
        gateway = subprocess.Popen(shlex.split(options.gateway) + ["--url", f"https://127.0.0.1:{port}"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        base = gateway.stdout.readline().strip()
        check("the gateway prints its URL first", base.startswith("http://127.0.0.1:"), base)
        with forwarder.lock:
            forwarder.target = (base, options.key)

        phones = []
        for index in range(options.phones):
            status, made = call(ui, "POST", "/api/v1/devices", {"apps": [{"bundle_id": BUNDLE, "attributes_types": [TYPE]}]})
            phones.append((made or {}).get("token"))
            check(f"phone {index}: made with the app installed", status == 201 and phones[-1], (status, made))

        # Start one activity a phone, once its push-to-start token has reached the gateway.
        for index, token in enumerate(phones):
            start = {"installation": token, "bundle_id": BUNDLE, "attributes_type": TYPE,
                     "attributes": {"activity_id": f"order-{index}"}, "content_state": {"status": "packing", "step": 0},
                     "alert": {"title": f"Order {index}", "body": "Packing"}}
            answer = until(lambda: (lambda got: got if got[0] == 202 else None)(
                call(base, "POST", f"/v1/activities/order-{index}/start", start, key=options.key)))
            check(f"order-{index}: started once its push-to-start token was reported", answer and answer[1]["state"] == "starting", answer)

        # Each phone starts its activity and reports its update token; the gateway then has it active.
        for index in range(options.phones):
            shown = until(lambda: (lambda got: got[1] if got[0] == 200 and got[1]["state"] == "active" else None)(
                call(base, "GET", f"/v1/activities/order-{index}", key=options.key)))
            token = (phone_activity(ui, phones[index]) or {}).get("push_token")
            check(f"order-{index}: active with the update token its phone shows", shown and shown["update_token"] == token, (shown, token))

        # Five states at once for each: the latest is what the phone ends up showing.
        for step in range(1, 6):
            for index in range(options.phones):
                status, answer = call(base, "POST", f"/v1/activities/order-{index}/update",
                                      {"content_state": {"status": "on its way", "step": step}}, key=options.key)
                if status != 202:
                    check(f"order-{index}: update {step} taken", False, (status, answer))
        for index, token in enumerate(phones):
            shown = until(lambda: (lambda activity: activity if activity and activity["content_state"].get("step") == 5 else None)(
                phone_activity(ui, token)))
            check(f"phone {index} shows the latest state", shown and shown["content_state"] == {"status": "on its way", "step": 5}, shown)
            status, counted = call(base, "GET", f"/v1/activities/order-{index}", key=options.key)
            check(f"order-{index}: 5 asked for, fewer sent (the rest superseded)",
                  counted["requested"] == 5 and counted["sent"] + counted["superseded"] == 5 and counted["sent"] < 5, counted)

        # The end, with the final state, on every phone.
        for index in range(options.phones):
            status, answer = call(base, "POST", f"/v1/activities/order-{index}/end",
                                  {"content_state": {"status": "delivered", "step": 6}, "dismissal_date": 0}, key=options.key)
            check(f"order-{index}: end taken", status == 202 and answer["state"] == "ending", (status, answer))
        for index, token in enumerate(phones):
            shown = until(lambda: (lambda activity: activity if activity and activity["state"] != "active" else None)(
                phone_activity(ui, token)))
            check(f"phone {index} shows the activity ended with the final state",
                  shown and shown["state"] in ("ended", "dismissed") and shown["content_state"] == {"status": "delivered", "step": 6}, shown)
            status, ended = call(base, "GET", f"/v1/activities/order-{index}", key=options.key)
            check(f"order-{index}: ended in the registry", status == 200 and ended["state"] == "ended", ended)

        with forwarder.lock:
            refused = [entry for entry in forwarder.forwarded if entry[1] != 200]
        check("every report the phones posted was applied", not refused, refused[:3])
    finally:
        for process in (gateway, serve):
            if process:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
        forwarder.close()

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
