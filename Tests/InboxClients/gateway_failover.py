"""Two gateways on one PostgreSQL registry, one killed (SIGKILL) while its pushes are in flight.

usage: gateway_failover.py --gateway "apnsctl activities serve --store postgres://… --port 0 --url … --lease 2s …" \
                           --key KEY --activities 40

Starts the gateway twice (A and B), registers the activities through both (the app's update token
reports), asks A for an update of every activity (step 1), kills A once some of its pushes are in
flight, then asks B for a second update (step 2) of the even-numbered ones. B takes over A's pushes
once their leases end. Every wait is for an outcome, bounded in time. Prints one line per check,
then `ACTIVITIES <json>` (each activity as `GET /v1/activities/{id}` shows it) for the caller to
compare with what the APNs server received, then `N passed, M failed`; exits 1 on a failure.
"""
import argparse
import json
import shlex
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
    parser.add_argument("--key", required=True)
    parser.add_argument("--activities", type=int, default=40)
    options = parser.parse_args()
    key = options.key
    ids = [f"match-{index}" for index in range(options.activities)]

    processes = []
    try:
        for _ in range(2):
            process = subprocess.Popen(shlex.split(options.gateway), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            processes.append(process)
        a, b = [process.stdout.readline().strip() for process in processes]
        check("both gateways print their URLs", a.startswith("http://") and b.startswith("http://"), (a, b))

        for index, activity in enumerate(ids):
            status, answer = call(a if index % 2 else b, "POST", "/v1/reports", key, {
                "kind": "update_token", "activity": activity, "token": f"{index + 1:064x}", "sequence": 1,
                "bundle_id": "com.example.shop", "attributes_type": "MatchAttributes", "installation": f"phone-{index}"})
            if status != 200:
                check(f"{activity}: registered", False, (status, answer))

        for activity in ids:
            status, answer = call(a, "POST", f"/v1/activities/{activity}/update", key, {"content_state": {"step": 1}})
            if status != 202:
                check(f"{activity}: step 1 taken by A", False, (status, answer))
        in_flight = until(lambda: [activity for activity in ids
                                   if call(a, "GET", f"/v1/activities/{activity}", key)[1].get("in_flight")], seconds=30)
        check("A has pushes in flight when it is killed", in_flight, in_flight)
        processes[0].kill()
        processes[0].wait(timeout=30)

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
