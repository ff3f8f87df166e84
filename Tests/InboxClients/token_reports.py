"""A backend's receiver for `apnsctl serve --report-tokens-to`, with Python's standard library only.

usage: token_reports.py --serve "apnsctl serve --port 0 --ui-port 0 --topic com.example.shop …" \
                        --send "apnsctl send --ca-file … --key-file … …"

Starts an HTTP receiver on 127.0.0.1 (port 0), then the server with `--report-tokens-to
http://127.0.0.1:PORT/reports` appended to `--serve`; `--send` is a command prefix to which each push
appends `--url … --token T --topic X …`. The receiver answers its first POST with 503, so the server's
retry is exercised. Every wait is for a report arriving (a condition variable), bounded in time.
Prints one line per check and `N passed, M failed`; exits 1 on a failure.
"""
import argparse
import http.server
import json
import os
import shlex
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


class Receiver:
    """Every POST it got, as (path, content type, parsed body), and a condition to wait on."""

    def __init__(self):
        self.attempts = []
        self.condition = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver.condition:
                    first = not receiver.attempts
                    try:
                        parsed = json.loads(body)
                    except ValueError:
                        parsed = None
                    receiver.attempts.append((self.path, self.headers.get("content-type"), parsed, 503 if first else 200))
                    receiver.condition.notify_all()
                self.send_response(503 if first else 200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *arguments):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/reports"

    def delivered(self):
        """The reports answered 200, in arrival order."""
        return [attempt[2] for attempt in self.attempts if attempt[3] == 200]

    def wait(self, predicate, timeout=30):
        """The delivered reports once `predicate` holds for them; as they are after `timeout` otherwise."""
        with self.condition:
            self.condition.wait_for(lambda: predicate(self.delivered()), timeout=timeout)
            return list(self.delivered())

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def call(ui, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(ui + path, data=data, method=method, headers={"content-type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return response.status, text
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def start_push(send_prefix, port, token, order):
    start = {"aps": {"event": "start", "timestamp": int(time.time()), "attributes-type": "OrderAttributes",
                     "attributes": {"activity_id": order}, "content-state": {"status": "packing"},
                     "alert": {"title": f"Order {order}", "body": "Packing"}}}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(start, file)
    command = shlex.split(send_prefix) + ["--url", f"https://127.0.0.1:{port}", "--token", token, "--topic", "com.example.shop",
                                          "--push-type", "liveactivity", "--payload", file.name]
    sent = subprocess.run(command, capture_output=True, text=True, timeout=60)
    os.unlink(file.name)
    return sent


def kinds(reports, installation):
    return [report["kind"] for report in reports if report.get("installation") == installation]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", required=True)
    parser.add_argument("--send", required=True)
    options = parser.parse_args()

    receiver = Receiver()
    serve = subprocess.Popen(shlex.split(options.serve) + ["--report-tokens-to", receiver.url],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(serve.stdout.readline().strip())
        ui = serve.stdout.readline().strip()[len("ui "):]
        check("serve prints its port and the inbox's URL", ui.startswith("http://127.0.0.1:"), ui)

        status, text = call(ui, "POST", "/api/v1/devices",
                            {"apps": [{"bundle_id": "com.example.shop", "attributes_types": ["OrderAttributes"]}]})
        made = json.loads(text) if status == 201 else {}
        installation = made.get("installation")
        start_token = made.get("apps", [{}])[0].get("push_to_start_tokens", {}).get("OrderAttributes")
        check("POST /api/v1/devices answers the installation id its reports name", status == 201 and installation == made.get("token"),
              (status, text))

        reports = receiver.wait(lambda got: "push_to_start_token" in kinds(got, installation))
        first = next((report for report in reports if report.get("installation") == installation), {})
        check("the push-to-start token report arrives with the app's fields",
              first == {"kind": "push_to_start_token", "installation": installation, "bundle_id": "com.example.shop",
                        "attributes_type": "OrderAttributes", "token": start_token, "sequence": 1, "environment": "sandbox"},
              first)
        path, content_type, _, _ = receiver.attempts[0]
        check("it is POSTed as JSON to the URL's path", path == "/reports" and content_type == "application/json",
              (path, content_type))
        check("the 503 answer was retried", len(receiver.attempts) >= 2 and receiver.attempts[0][3] == 503
              and receiver.attempts[1][2] == receiver.attempts[0][2], receiver.attempts)

        sent = start_push(options.send, port, start_token, "A-17")
        check("a start to the push-to-start token is accepted", sent.returncode == 0, sent.stdout + sent.stderr)
        reports = receiver.wait(lambda got: "update_token" in kinds(got, installation))
        update = next((report for report in reports if report.get("installation") == installation and report["kind"] == "update_token"), {})
        status, text = call(ui, "GET", f"/api/v1/devices/{installation}")
        activities = json.loads(text).get("live_activities", []) if status == 200 else []
        check("the activity's update token report follows, naming the activity from its attributes",
              update.get("activity") == "A-17" and update.get("sequence") == 2 and len(activities) == 1
              and update.get("token") == activities[0]["push_token"], (update, activities))

        # A phone that asks: its update token is reported only after the person's Allow.
        status, text = call(ui, "POST", "/api/v1/devices",
                            {"apps": [{"bundle_id": "com.example.shop", "attributes_types": ["OrderAttributes"]}],
                             "ask_before_activities": True})
        asking = json.loads(text) if status == 201 else {}
        ask_installation = asking.get("installation")
        ask_start = asking.get("apps", [{}])[0].get("push_to_start_tokens", {}).get("OrderAttributes")
        receiver.wait(lambda got: "push_to_start_token" in kinds(got, ask_installation))
        sent = start_push(options.send, port, ask_start, "A-18")
        check("a start to the asking phone is accepted", sent.returncode == 0, sent.stdout + sent.stderr)
        # The phones apply a push just after the inbox records it: asked again for at most 10 s.
        awaiting = []
        for _ in range(100):
            status, text = call(ui, "GET", f"/api/v1/devices/{ask_installation}")
            awaiting = json.loads(text).get("live_activities", []) if status == 200 else []
            if awaiting:
                break
            time.sleep(0.1)
        check("it awaits permission", len(awaiting) == 1 and awaiting[0]["state"] == "awaiting_permission", awaiting)
        status, text = call(ui, "POST", f"/api/v1/devices/{ask_installation}/actions",
                            {"action": "allow_activity", "bundle_id": "com.example.shop"})
        allowed = json.loads(text).get("live_activities", []) if status == 200 else []
        reports = receiver.wait(lambda got: "update_token" in kinds(got, ask_installation))
        update = next((report for report in reports if report.get("installation") == ask_installation and report["kind"] == "update_token"), {})
        check("after Allow, and not before, its update token is reported",
              kinds(reports, ask_installation) == ["push_to_start_token", "update_token"] and len(allowed) == 1
              and update.get("token") == allowed[0]["push_token"] and update.get("activity") == "A-18", (reports, allowed))

        status, text = call(ui, "GET", "/metrics")
        check("the inbox's /metrics counts the reports",
              status == 200 and 'apns_local_token_reports_total{outcome="sent"}' in text.decode(), text.decode()[-2000:])
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            code = serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
            code = serve.wait()
        receiver.close()
    check("serve stops cleanly on SIGTERM", code == 0, (code, serve.stderr.read()[-2000:]))

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
