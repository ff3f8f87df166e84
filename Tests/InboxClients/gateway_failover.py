"""Two gateways on one PostgreSQL registry, one killed (SIGKILL) while its pushes are in flight.

usage: gateway_failover.py --gateway "apnsctl activities serve --store postgres://… --port 0 --lease 2s …" \
                           --apns https://127.0.0.1:PORT --key KEY --activities 40

Starts gateway A, its APNs address a socket of this script that takes connections and never
answers, registers the activities (the app's update token reports), asks A for an update of every
activity (step 1), and kills A once all of those pushes are in flight (taken by A, no verdict: it
cannot get one); then starts gateway B on the same registry, with the real server `--apns`, and
asks it for a second update (step 2) of the even-numbered ones. B takes A's pushes over once their
leases end, so the server gets each activity's push from B alone. Every wait is for an outcome, bounded in time. Prints one line per check,
then `ACTIVITIES <json>` (each activity as `GET /v1/activities/{id}` shows it) for the caller to
compare with what the APNs server received, then `N passed, M failed`; exits 1 on a failure.
"""
import argparse
import json
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


def call(base, method, path, key, body=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {"authorization": "Bearer " + key}
    if data:
        headers["content-type"] = "application/json"
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def until(condition, seconds=60):
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--apns", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--activities", type=int, default=40)
    options = parser.parse_args()
    key = options.key
    ids = [f"match-{index}" for index in range(options.activities)]

    processes = []
    # An APNs address that never answers: connections queue in its backlog, and no TLS handshake ends.
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    silent.bind(("127.0.0.1", 0))
    silent.listen(128)

    def start_gateway(apns):
        process = subprocess.Popen(shlex.split(options.gateway) + ["--url", apns],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        processes.append(process)
        return process.stdout.readline().strip()

    try:
        a = start_gateway(f"https://127.0.0.1:{silent.getsockname()[1]}")
        check("gateway A prints its URL", a.startswith("http://"), a)
        for index, activity in enumerate(ids):
            status, answer = call(a, "POST", "/v1/reports", key, {
                "kind": "update_token", "activity": activity, "token": f"{index + 1:064x}", "sequence": 1,
                "bundle_id": "com.example.shop", "attributes_type": "MatchAttributes", "installation": f"phone-{index}"})
            if status != 200:
                check(f"{activity}: registered", False, (status, answer))

        for activity in ids:
            status, answer = call(a, "POST", f"/v1/activities/{activity}/update", key, {"content_state": {"step": 1}})
            if status != 202:
                check(f"{activity}: step 1 taken by A", False, (status, answer))
        in_flight = until(lambda: all(call(a, "GET", f"/v1/activities/{activity}", key)[1].get("in_flight") for activity in ids),
                          seconds=30)
        check("all of A's pushes are in flight when it is killed", in_flight)
        processes[0].kill()
        processes[0].wait(timeout=30)
        b = start_gateway(options.apns)
        check("gateway B, on the same registry, prints its URL", b.startswith("http://"), b)

        for index, activity in enumerate(ids):
            if index % 2 == 0:
                status, answer = call(b, "POST", f"/v1/activities/{activity}/update", key, {"content_state": {"step": 2}})
                if status != 202:
                    check(f"{activity}: step 2 taken by B", False, (status, answer))

        def settled():
            shown = [call(b, "GET", f"/v1/activities/{activity}", key)[1] for activity in ids]
            return shown if all(item["waiting"] is None and item["in_flight"] is None for item in shown) else None
        shown = until(settled, seconds=90)
        check("every activity settled through B (A's pushes taken over after their lease)", shown, shown and shown[:2])
        shown = shown or [call(b, "GET", f"/v1/activities/{activity}", key)[1] for activity in ids]
        wrong = [item["id"] for index, item in enumerate(shown)
                 if item.get("content_state") != {"step": 2 if index % 2 == 0 else 1}]
        check("every activity's last state is the last one asked for", not wrong, wrong)
        check("nothing failed", all(item["failed"] == 0 for item in shown), [item for item in shown if item["failed"]][:2])
        print("ACTIVITIES " + json.dumps({item["id"]: item for item in shown}), flush=True)
    finally:
        silent.close()
        for process in processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
