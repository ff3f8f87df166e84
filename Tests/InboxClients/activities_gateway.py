"""Drives `apnsctl activities serve` (the Live Activity gateway) from outside Swift: Python's
urllib and curl, every answer checked against the gateway's own OpenAPI document.

usage: activities_gateway.py --url http://127.0.0.1:PORT --key KEY --max-body BYTES

The gateway must run with `--api-key-file` holding KEY and `--max-body BYTES`, over an empty
store, with an APNs endpoint that accepts every push (`apnsctl serve`). Prints one line per check
and `N passed, M failed`; exits 1 on a failure.
"""
import argparse
import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from openapi_schema_validator import OAS30Validator

PUSH_TO_START = "5a" * 32
UPDATE_TOKEN = "ab" * 32
GROUP = "match-1"
# The update tokens of the group's members, fan-1 to fan-3.
MEMBER_TOKENS = {f"fan-{n}": f"c{n}" * 32 for n in (1, 2, 3)}
results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


class Gateway:
    def __init__(self, url, key):
        self.url = url
        self.key = key
        self.document = None

    def urllib(self, method, path, body=None, key=True, raw=None, headers=None):
        """(status, content type, parsed body) of one request with urllib, checked against the document."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        sent = {"content-type": "application/json"} if data is not None else {}
        if key is True:
            sent["authorization"] = f"Bearer {self.key}"
        elif key:
            sent["authorization"] = key
        sent.update(headers or {})
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, ctype, text = response.status, response.headers.get("content-type", ""), response.read()
        except urllib.error.HTTPError as error:
            status, ctype, text = error.code, error.headers.get("content-type", ""), error.read()
        return self.answer(method, path, status, ctype, text)

    def curl(self, method, path, body=None, key=True):
        """The same with curl: `-w` puts the status and content type on the last two lines."""
        command = ["curl", "-sS", "-X", method, "-w", "\n%{http_code}\n%{content_type}", self.url + path]
        if key:
            command += ["-H", f"Authorization: Bearer {self.key}"]
        if body is not None:
            command += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
        run = subprocess.run(command, capture_output=True, timeout=30)
        if run.returncode != 0:
            raise RuntimeError(f"curl failed: {run.stderr.decode()}")
        text, status, ctype = run.stdout.rsplit(b"\n", 2)
        return self.answer(method, path, int(status), ctype.decode(), text)

    def answer(self, method, path, status, ctype, text):
        parsed = json.loads(text) if ctype.startswith("application/json") else text.decode()
        if self.document is not None:
            problem = self.validate(method, path, status, ctype, parsed)
            check(f"{method} {path} {status}: as the OpenAPI document says", problem is None, problem)
        return status, parsed

    def validate(self, method, path, status, ctype, body):
        """None when the answer is one the document describes, else what is wrong."""
        route = urllib.parse.urlsplit(path).path
        segments = route.split("/")
        template = next((t for t in self.document["paths"]
                         if len(t.split("/")) == len(segments)
                         and all(p == s or (p.startswith("{") and s) for p, s in zip(t.split("/"), segments))), None)
        if template is None:
            return f"no path of the document matches {route}"
        operation = self.document["paths"][template].get(method.lower())
        if operation is None:
            return f"the document has no {method} {template}"
        response = operation["responses"].get(str(status))
        if response is None:
            return f"{method} {template} answered {status}, which the document does not list"
        if "$ref" in response:
            # A response shared by several routes: #/components/responses/NAME.
            response = self.document["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
        content = response.get("content", {})
        media = next((m for m in content if ctype.startswith(m)), None)
        if media is None:
            return f"content type {ctype} is not among {list(content)}"
        schema = dict(content[media]["schema"], components=self.document["components"])
        errors = [e.message for e in OAS30Validator(schema).iter_errors(body)]
        return "; ".join(errors) if errors else None


def wait_for(gateway, path, predicate, seconds=30):
    """The activity's JSON once `predicate` holds for it: the gateway answers an update or an end
    when it has recorded it, and its delivery loop sends it (paced: at most one a second)."""
    deadline = time.monotonic() + seconds
    while True:
        status, body = gateway.urllib("GET", path)
        if status == 200 and predicate(body) or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def group(gateway, start):
    """Three activities in a group, updated and ended by one call each (after the metrics above,
    which count the first activity's pushes only). apnsctl serve's phones report no channels: each
    member gets the group's pushes through its own update token."""
    for member in MEMBER_TOKENS:
        installation = "i-" + member
        status, body = gateway.urllib("POST", "/v1/reports", {
            "kind": "push_to_start_token", "installation": installation, "bundle_id": "com.example.shop",
            "attributes_type": "OrderAttributes", "token": PUSH_TO_START, "environment": "sandbox", "sequence": 1})
        check(f"{member}: its install's push-to-start token", status == 200 and body == {"applied": True}, body)
        status, body = gateway.urllib("POST", f"/v1/activities/{member}/start", dict(start, installation=installation, group=GROUP))
        check(f"{member}: started in {GROUP}", status == 202 and body == {"id": member, "state": "starting"}, (status, body))
    status, body = gateway.urllib("POST", "/v1/activities/fan-4/start", dict(start, installation="i-fan-1", group="g" * 65))
    check("400 for a start with a group over 64 bytes, naming group", status == 400 and body["error"]["field"] == "group", body)
    status, body = gateway.curl("GET", f"/v1/activities?group={GROUP}")
    check("list ?group: the members, each with its group and no channel",
          status == 200 and [a["id"] for a in body] == list(MEMBER_TOKENS)
          and all(a["group"] == GROUP and a["channel_id"] is None for a in body), body)
    status, body = gateway.urllib("GET", f"/v1/activities?group={GROUP}&state=ended")
    check("list ?group&state=ended: none yet", status == 200 and body == [], body)
    status, body = gateway.urllib("GET", "/v1/activities/order-17")
    check("an activity of no group: group and channel_id null", status == 200 and body["group"] is None and body["channel_id"] is None, body)
    for sequence, (member, token) in enumerate(MEMBER_TOKENS.items(), start=10):
        status, body = gateway.curl("POST", "/v1/reports", {"kind": "update_token", "activity": member, "token": token, "sequence": sequence})
        check(f"{member}: its update token reported", status == 200 and body == {"applied": True}, body)

    # Two updates of the group at once: every member ends up showing the latest.
    status, body = gateway.urllib("POST", f"/v1/groups/{GROUP}/update", {"content_state": {"home": 1}, "importance": "alerting"})
    check("group update: 202 accepted, the three members by token", status == 202 and body == {
        "id": GROUP, "state": "accepted", "members": 3, "channels": 0, "on_channels": 0, "superseded": 0, "skipped": 0}, (status, body))
    status, body = gateway.curl("POST", f"/v1/groups/{GROUP}/update", {"content_state": {"home": 2}})
    check("a second group update (curl): 202, the three members", status == 202 and body["members"] == 3
          and body["superseded"] <= 3 and body["skipped"] == 0, (status, body))
    for member in MEMBER_TOKENS:
        body = wait_for(gateway, f"/v1/activities/{member}", lambda activity: activity["content_state"] == {"home": 2}
                        and activity["waiting"] is None and activity["in_flight"] is None)
        check(f"{member}: shows the latest state, sent", body["content_state"] == {"home": 2} and body["waiting"] is None
              and body["requested"] == 2 and body["sent"] + body["superseded"] == 2 and body["failed"] == 0, body)
    status, body = gateway.urllib("GET", f"/v1/groups/{GROUP}")
    check("show the group: three members, all active; no channel", status == 200 and body == {
        "id": GROUP, "members": {"total": 3, "by_state": {"starting": 0, "active": 3, "stale": 0, "ending": 0, "ended": 0, "dead": 0}},
        "channels": []}, body)
    status, body = gateway.curl("GET", f"/v1/activities?state=active&group={GROUP}")
    check("list ?state=active&group (curl): the members", status == 200 and [a["id"] for a in body] == list(MEMBER_TOKENS), body)

    # Refusals, named; nothing changes.
    for name, method, path, payload, expected, field in [
        ("an unknown field", "POST", f"/v1/groups/{GROUP}/update", {"content_state": {}, "colour": "red"}, 400, "colour"),
        ("an update without a content state", "POST", f"/v1/groups/{GROUP}/update", {"importance": "alerting"}, 400, "content_state"),
        ("an importance of neither kind", "POST", f"/v1/groups/{GROUP}/update", {"content_state": {}, "importance": "high"}, 400, "importance"),
        ("a dismissal date as a string", "POST", f"/v1/groups/{GROUP}/end", {"dismissal_date": "2026-11-29T10:00:00Z"}, 400, "dismissal_date"),
        ("a group over 64 bytes", "POST", "/v1/groups/" + "g" * 65 + "/update", {"content_state": {}}, 400, "group"),
        ("a group with no member", "POST", "/v1/groups/match-9/update", {"content_state": {}}, 404, "group"),
        ("the end of a group with no member", "POST", "/v1/groups/match-9/end", {}, 404, "group"),
        ("showing a group with no member", "GET", "/v1/groups/match-9", None, 404, "group"),
    ]:
        status, body = gateway.urllib(method, path, payload)
        check(f"{expected} for {name}, naming {field}", status == expected and body["error"].get("field") == field, (status, body))
    status, body = gateway.urllib("GET", f"/v1/groups/{GROUP}")
    check("nothing changed by the refusals", status == 200 and body["members"]["by_state"]["active"] == 3, body)

    status, body = gateway.urllib("POST", f"/v1/groups/{GROUP}/end", {"content_state": {"home": 3}, "dismissal_date": 0})
    check("group end: 202 accepted, the three members", status == 202 and body == {
        "id": GROUP, "state": "accepted", "members": 3, "channels": 0, "on_channels": 0, "superseded": 0, "skipped": 0}, (status, body))
    for member in MEMBER_TOKENS:
        body = wait_for(gateway, f"/v1/activities/{member}", lambda activity: activity["state"] == "ended")
        check(f"{member}: ended on the final state", body["state"] == "ended" and body["content_state"] == {"home": 3}, body)
    status, body = gateway.curl("GET", f"/v1/groups/{GROUP}")
    check("show the group (curl): all three ended", status == 200 and body["members"] == {
        "total": 3, "by_state": {"starting": 0, "active": 0, "stale": 0, "ending": 0, "ended": 3, "dead": 0}}, body)
    status, body = gateway.urllib("POST", f"/v1/groups/{GROUP}/update", {"content_state": {"home": 4}})
    check("an update of the ended group: every member skipped", status == 202 and body["members"] == 0 and body["skipped"] == 3, body)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--max-body", type=int, required=True)
    options = parser.parse_args()
    gateway = Gateway(options.url, options.key)

    status, document = gateway.urllib("GET", "/v1/openapi.json")
    check("the OpenAPI document", status == 200 and document.get("openapi", "").startswith("3.0"), document)
    gateway.document = document
    gateway.validate("GET", "/v1/openapi.json", status, "application/json", document)

    # The API key.
    missing = gateway.urllib("GET", "/v1/activities", key=False)
    wrong = gateway.curl("GET", "/v1/activities", key=False)
    other = gateway.urllib("GET", "/v1/activities", key="Bearer " + options.key + "x")
    check("401 without the key, with curl too, and with a wrong one; one body for all",
          missing[0] == wrong[0] == other[0] == 401 and missing[1] == wrong[1] == other[1], (missing, wrong, other))
    check("the 401 does not quote the key", options.key not in json.dumps(missing[1]))
    check("/readyz needs no key", gateway.urllib("GET", "/readyz", key=False) == (200, {"ready": True}))

    # The app reports its push-to-start token; the backend starts an activity.
    status, body = gateway.urllib("POST", "/v1/reports", {
        "kind": "push_to_start_token", "installation": "i-1", "bundle_id": "com.example.shop",
        "attributes_type": "OrderAttributes", "token": PUSH_TO_START, "environment": "sandbox", "sequence": 1})
    check("report a push-to-start token (urllib)", status == 200 and body == {"applied": True}, body)
    start = {"installation": "i-1", "bundle_id": "com.example.shop", "attributes_type": "OrderAttributes",
             "attributes": {"order": "17"}, "content_state": {"status": "packing"},
             "alert": {"title": "Order 17", "body": "Packing"}}
    status, body = gateway.curl("POST", "/v1/reports", {"kind": "push_to_start_token", "installation": "i-1",
                                                        "bundle_id": "com.example.shop", "attributes_type": "OrderAttributes",
                                                        "token": PUSH_TO_START, "sequence": 0})
    check("400 for a report older than one applied, naming sequence (curl)",
          status == 400 and body["applied"] is False and body["error"]["field"] == "sequence", body)
    status, body = gateway.urllib("POST", "/v1/reports", {"kind": "ended", "activity": "order-17", "colour": "red"})
    check("400 for a report with an unknown field, naming it", status == 400 and body["error"]["field"] == "colour", body)
    status, body = gateway.urllib("POST", "/v1/activities/order-17/start", start)
    check("start: 202 starting", status == 202 and body == {"id": "order-17", "state": "starting"}, (status, body))

    # The app reports the activity's update token (curl); the backend updates it.
    status, body = gateway.curl("POST", "/v1/reports", {"kind": "update_token", "activity": "order-17", "token": UPDATE_TOKEN,
                                                        "sequence": 2})
    check("report the update token (curl)", status == 200 and body == {"applied": True}, body)
    status, body = gateway.curl("POST", "/v1/activities/order-17/update", {"content_state": {"status": "shipped"}})
    check("update, routine (curl): 202 active", status == 202 and body == {"id": "order-17", "state": "active"}, (status, body))
    status, body = gateway.urllib("POST", "/v1/activities/order-17/update",
                                  {"content_state": {"status": "near"}, "importance": "alerting"})
    check("update, alerting (urllib): 202", status == 202 and body["state"] == "active", body)
    body = wait_for(gateway, "/v1/activities/order-17", lambda activity: activity["sent"] == 2)
    check("both updates sent by the delivery loop, one a second", body["sent"] == 2 and body["requested"] == 2
          and body["waiting"] is None, body)

    status, body = gateway.urllib("GET", "/v1/activities?state=active")
    check("list ?state=active", status == 200 and [a["id"] for a in body] == ["order-17"], body)
    status, body = gateway.curl("GET", "/v1/activities/order-17")
    check("show: the token, the history", status == 200 and body["update_token"] == UPDATE_TOKEN
          and [h["event"] for h in body["history"]] == ["start_sent", "update_token"], body)

    # Bad input, named; nothing changes.
    for name, path, payload, field in [
        ("an unknown field", "/v1/activities/order-17/update", {"content_state": {}, "colour": "red"}, "colour"),
        ("a content state that is not an object", "/v1/activities/order-17/update", {"content_state": "shipped"}, "content_state"),
        ("an importance of neither kind", "/v1/activities/order-17/update", {"content_state": {}, "importance": "high"}, "importance"),
        ("a dismissal date as a string", "/v1/activities/order-17/end", {"dismissal_date": "2026-11-29T10:00:00Z"}, "dismissal_date"),
        ("an id over 64 bytes", "/v1/activities/" + "a" * 65 + "/update", {"content_state": {}}, "id"),
        ("an id with a control character", "/v1/activities/bad%07id/update", {"content_state": {}}, "id"),
        ("a start without its alert", "/v1/activities/order-18/start", dict(start, alert=None), "alert"),
    ]:
        status, body = gateway.urllib("POST", path, payload)
        check(f"400 for {name}, naming {field}", status == 400 and body["error"].get("field") == field, (status, body))
    status, body = gateway.curl("GET", "/v1/activities?group=" + "g" * 65)
    check("400 for ?group over 64 bytes, naming group", status == 400 and body["error"]["field"] == "group", body)
    status, body = gateway.urllib("GET", "/v1/activities/order-18")
    check("404 for an unknown id, named", status == 404 and "order-18" in body["error"]["rule"], body)

    big = {"content_state": {"note": "x" * options.max_body}}
    status, body = gateway.urllib("POST", "/v1/activities/order-17/update", big)
    check("413 for a body over --max-body", status == 413 and body["error"]["code"] == "body_too_large", (status, body))

    status, body = gateway.urllib("POST", "/v1/activities/order-17/end", {"content_state": {"status": "delivered"}, "dismissal_date": 0})
    check("end: 202 ending", status == 202 and body == {"id": "order-17", "state": "ending"}, (status, body))
    body = wait_for(gateway, "/v1/activities/order-17", lambda activity: activity["state"] == "ended")
    check("the end sent: ended", body["state"] == "ended" and body["sent"] == 3, body)
    status, body = gateway.curl("POST", "/v1/activities/order-17/update", {"content_state": {"status": "late"}})
    check("409 for an update of the ended activity, with its state and why",
          status == 409 and body["error"]["state"] == "ended" and body["error"]["why"] == "ended by the backend", body)
    status, body = gateway.urllib("GET", "/v1/activities?state=ended")
    check("list ?state=ended", status == 200 and [a["state"] for a in body] == ["ended"], body)

    status, text = gateway.curl("GET", "/metrics")
    check("/metrics: requests by route and status", status == 200
          and 'forge_gateway_requests_total{route="/v1/activities/{id}/update",status="202"} 2' in text, text[:2000])
    check("/metrics: activities by state", 'forge_gateway_activities{state="ended"} 1' in text, text[:2000])
    check("/metrics: the manager's sends by kind", 'forge_live_activity_sent_total{kind="update"} 2' in text
          and 'forge_live_activity_sent_total{kind="end"} 1' in text, text)
    check("/metrics: the lag from request to verdict, a histogram", 'forge_live_activity_update_lag_seconds_count{kind="update"} 2' in text, text)

    group(gateway, start)

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
