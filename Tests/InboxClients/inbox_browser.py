#!/usr/bin/env python3
"""Real-browser test of the `apnsctl serve` inbox page, driving headless Chromium over the DevTools protocol.

usage: inbox_browser.py --ui http://127.0.0.1:UIPORT --send "COMMAND PREFIX" --out DIR
                        [--bundle com.example.forgepush] [--chromium /usr/bin/chromium] [-- EXTRA SEND ARGS…]

Pushes are sent only through --send: a shell command prefix to which the script appends, for each
push, `--token HEX --topic BUNDLE --push-type TYPE --payload FILE --apns-id UUID` and then every
argument given after `--` (each shell-quoted). The prefix is run by /bin/sh, so it may start with
environment assignments. Against the real server it is `apnsctl send` with its endpoint and
credential flags (send refuses to send without credentials; `apnsctl serve` without
--register-key checks no provider token, so the public test key in keys-example/ will do):

  inbox_browser.py --ui http://127.0.0.1:8025 --out /tmp/inbox-shots \\
      --send "/path/apnsctl send --url https://127.0.0.1:2197 --ca-file /tmp/apns-ca.pem" \\
      -- --key-file keys-example/AuthKey_FORGEKEY01.p8 --key-id FORGEKEY01 --team-id FORGETEAM1

Live Activities are sent the same way (push type liveactivity, the whole aps dictionary in the
payload file), so one prefix serves every scenario. A push is sent when the command exits 0.
Tokens are random, so the server must accept unknown tokens (no --reject-unknown-tokens).

Chromium runs with --remote-debugging-pipe: it reads NUL-terminated JSON commands on fd 3 and
writes replies and events on fd 4; everything here is the standard library. Every wait has a
deadline; the DOM is polled every 50 ms.

Scenarios (one line per check, then "N passed, M failed"; exit 1 when any failed): the page loads
and its SSE stream opens; a push appears at the top of the list within 1 s; a Live Activity
started, updated twice and ended shows as one ended card; the token filter; a hostile alert is
shown as text and runs nothing; screenshots before the clear (DIR/inbox.png, the window;
DIR/inbox-phone.png and DIR/inbox-activity.png, two phones at 2x); Clear.
"""
import argparse
import base64
import json
import os
import select
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

POLL_INTERVAL = 0.05
POLL_TIMEOUT = 5.0
XSS_TITLE = "<img src=x onerror=alert(1)>"
XSS_BODY = "<script>alert(2)</script>"


class CDPError(Exception):
    pass


class Browser:
    """Headless Chromium and a DevTools Protocol client over its pipe, attached to one page.

    Single-threaded: replies and events are read whenever a call waits, so nothing is missed and no
    lock is needed. JavaScript dialogs are accepted as they open (and recorded in `events`), so a
    page that calls alert() cannot hang the test.
    """

    def __init__(self, chromium, workdir, width=1440, height=1000):
        self.width, self.height = width, height
        self.events = []
        self._replies = {}
        self._buffer = b""
        self._next_id = 0
        self.session_id = None
        self.log_path = os.path.join(workdir, "chromium.log")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def give_pipe_fds():
            # In the child: the command pipe on fd 3, the reply pipe on fd 4 (dup first, in case
            # either end already sits on 3 or 4).
            read_end, write_end = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [chromium, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
                 f"--user-data-dir={os.path.join(workdir, 'profile')}", f"--window-size={width},{height}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=False, preexec_fn=give_pipe_fds,
            )
        os.close(to_browser_read)
        os.close(from_browser_write)

    # -- protocol

    def _write(self, message):
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_browser, data):]

    def _pump(self, timeout):
        """Reads for at most `timeout` seconds and dispatches every complete message."""
        ready, _, _ = select.select([self._from_browser], [], [], max(0.0, timeout))
        if not ready:
            return
        chunk = os.read(self._from_browser, 1 << 20)
        if not chunk:
            raise CDPError(f"Chromium closed the pipe (exit code {self.process.poll()}; see {self.log_path})")
        self._buffer += chunk
        while b"\0" in self._buffer:
            raw, self._buffer = self._buffer.split(b"\0", 1)
            message = json.loads(raw)
            if "id" in message:
                self._replies[message["id"]] = message
                continue
            self.events.append(message)
            if message.get("method") == "Page.javascriptDialogOpening":
                self._command("Page.handleJavaScriptDialog", {"accept": True}, message.get("sessionId"))

    def _command(self, method, params, session_id):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        self._write(message)
        return self._next_id

    def send(self, method, params=None, timeout=10.0, browser_level=False):
        """Sends a command (to the page's session unless browser_level) and returns its result."""
        message_id = self._command(method, params, None if browser_level else self.session_id)
        deadline = time.monotonic() + timeout
        while message_id not in self._replies:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CDPError(f"{method}: no reply within {timeout:.0f} s")
            self._pump(remaining)
        reply = self._replies.pop(message_id)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def wait_event(self, method, since=0, timeout=POLL_TIMEOUT):
        """The first event named `method` at index `since` or later, or None after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events[since:]:
                if event.get("method") == method:
                    return event
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._pump(min(remaining, POLL_INTERVAL))

    def idle(self, seconds):
        """Reads events for `seconds` (to see whether something happens that should not)."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            self._pump(remaining)

    # -- page

    def open_page(self):
        """Attaches to the first page and enables the domains whose events the checks read."""
        targets = self.send("Target.getTargets", timeout=30, browser_level=True)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        attached = self.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}, browser_level=True)
        self.session_id = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        # The window size includes the browser's frame; the page's viewport is set exactly.
        self.send("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})

    def navigate(self, url, timeout=15.0):
        since = len(self.events)
        self.send("Page.navigate", {"url": url})
        if not self.wait_event("Page.loadEventFired", since, timeout):
            raise CDPError(f"{url}: no load event within {timeout:.0f} s")

    def evaluate(self, expression):
        """The value of a JavaScript expression (promises awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text") or ""
            raise CDPError(f"JavaScript: {text.splitlines()[0] if text else 'exception'}")
        return result["result"].get("value")

    def poll(self, expression, timeout=POLL_TIMEOUT):
        """Evaluates `expression` every 50 ms until it is truthy or `timeout` passes; returns its last value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() >= deadline:
                return value
            self._pump(POLL_INTERVAL)

    def click(self, selector):
        """A real left click at the element's centre (scrolled into view first)."""
        point = self.evaluate(f"""(() => {{
            const node = document.querySelector({json.dumps(selector)});
            if (!node) return null;
            node.scrollIntoView({{block: 'center'}});
            const r = node.getBoundingClientRect();
            return {{x: r.left + r.width / 2, y: r.top + Math.min(r.height / 2, 18)}};
        }})()""")
        if not point:
            raise CDPError(f"nothing to click: {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": point["x"], "y": point["y"], "button": "left", "clickCount": 1})

    def type_into(self, selector, text):
        self.click(selector)
        self.send("Input.insertText", {"text": text})

    def clear_input(self, selector):
        """Selects the field's text and deletes it with Backspace, as a user would."""
        self.evaluate(f"document.querySelector({json.dumps(selector)}).select()")
        for kind in ("rawKeyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": "Backspace", "code": "Backspace", "windowsVirtualKeyCode": 8})

    def screenshot(self, path, clip=None):
        params = {"format": "png"}
        if clip:
            params["clip"] = clip
        data = self.send("Page.captureScreenshot", params, timeout=30)["data"]
        with open(path, "wb") as file:
            file.write(base64.b64decode(data))

    def problems(self):
        """Console errors, uncaught exceptions and error log entries seen so far, as text."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append("console." + params["type"] + ": " + " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}".strip())
        return found

    def close(self):
        try:
            self.send("Browser.close", timeout=5, browser_level=True)
        except (CDPError, OSError):
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        for fd in (self._to_browser, self._from_browser):
            os.close(fd)


class Sender:
    """Sends pushes by running the --send prefix with the push's flags and the extra arguments."""

    def __init__(self, prefix, extra, workdir):
        self.prefix, self.extra, self.workdir = prefix, extra, workdir
        self.count = 0

    def send(self, token, topic, push_type, payload):
        """Sends one push; returns its apns-id (upper case). Raises when the command fails."""
        self.count += 1
        path = os.path.join(self.workdir, f"push-{self.count}.json")
        with open(path, "w", encoding="utf-8") as file:
            json.dump(payload, file)
        apns_id = str(uuid.uuid4()).upper()
        arguments = ["--token", token, "--topic", topic, "--push-type", push_type, "--payload", path, "--apns-id", apns_id]
        command = f"{self.prefix} {' '.join(shlex.quote(a) for a in arguments + self.extra)}"
        result = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            raise RuntimeError(f"send exited {result.returncode}: {(result.stderr or result.stdout).strip()[-400:]}")
        return apns_id


class Run:
    """The scenarios' shared state and their check results."""

    def __init__(self, browser, sender, ui, out, bundle):
        self.browser, self.sender, self.ui, self.out, self.bundle = browser, sender, ui.rstrip("/"), out, bundle
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
        return ok

    def api(self, path):
        """The inbox's JSON answer to a GET (None for 404)."""
        try:
            with urllib.request.urlopen(self.ui + path, timeout=5) as response:
                body = response.read()
                return json.loads(body) if body else None
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def js(self, expression):
        return self.browser.evaluate(expression)

    def first_row_is(self, apns_id):
        return f"""(() => {{ const row = document.querySelector('#push-list .push-row');
            return !!row && row.dataset.apnsId.toUpperCase() === {json.dumps(apns_id.upper())}; }})()"""

    def row(self, apns_id):
        return f"document.querySelector('#push-list .push-row[data-apns-id={json.dumps(apns_id)} i]')"


def alert_payload(title, body, thread=None, badge=None):
    aps = {"alert": {"title": title, "body": body}, "sound": "default"}
    if thread:
        aps["thread-id"] = thread
    if badge is not None:
        aps["badge"] = badge
    return {"aps": aps}


def page_loads(run):
    """1. The page loads without errors, marks itself ready and opens its SSE stream."""
    b = run.browser
    b.navigate(run.ui + "/")
    ready = b.poll("document.body.dataset.ready === '1'", timeout=10)
    run.check("page ready (body data-ready=1)", ready)
    live = b.poll("document.getElementById('live').dataset.state === 'open'")
    run.check("SSE indicator #live open", live, f"data-state={run.js('document.getElementById(`live`).dataset.state')}")
    problems = b.problems()
    run.check("no console errors or exceptions on load", not problems, "; ".join(problems))


def live_push(run):
    """2. A push sent with the CLI is at the top of the list within 1 s, without a reload."""
    token = secrets.token_hex(32)
    apns_id = run.sender.send(token, run.bundle, "alert", alert_payload("Your order shipped", "Order A-17 arrives tomorrow before noon.", badge=1))
    returned = time.monotonic()
    found = run.browser.poll(run.first_row_is(apns_id))
    elapsed = (time.monotonic() - returned) * 1000
    run.check("new push at the top of #push-list within 1000 ms", found and elapsed <= 1000,
              f"{elapsed:.0f} ms after the send command returned" if found else "not shown within 5 s")


def live_activity(run):
    """3. Start, two updates and an end: the phone shows one Live Activity, ended, with the last state."""
    b = run.browser
    phone_token = run.activity_phone = secrets.token_hex(32)
    now = int(time.time())
    run.sender.send(phone_token, run.bundle, "liveactivity", {"aps": {
        "timestamp": now - 3, "event": "start", "attributes-type": "DeliveryAttributes", "attributes": {"orderID": "A-17"},
        "content-state": {"status": "packing", "eta": "14:30"}, "alert": {"title": "Order A-17", "body": "We are packing it."},
    }})
    deadline = time.monotonic() + POLL_TIMEOUT
    activity_token = None
    while time.monotonic() < deadline and not activity_token:
        view = run.api(f"/api/v1/devices/{phone_token}") or {}
        activities = view.get("live_activities") or []
        activity_token = activities[0].get("push_token") if activities else None
        if not activity_token:
            b.idle(POLL_INTERVAL)
    if not run.check("started activity has a push_token in GET /api/v1/devices/P", activity_token):
        return
    listed = b.poll(f"!!document.querySelector('#devices .device-item[data-token={json.dumps(phone_token)}]')")
    run.check("phone P listed in the devices list", listed)
    if listed:
        b.click(f"#devices .device-item[data-token={json.dumps(phone_token)}]")
    else:
        b.click(f"#push-list .push-row[data-token={json.dumps(phone_token)}]")
    started = b.poll(f"""(() => {{ const phone = document.getElementById('phone');
        const cards = phone.querySelectorAll('.live-activity');
        return phone.dataset.token === {json.dumps(phone_token)} && cards.length === 1 && cards[0].textContent.includes('packing'); }})()""")
    run.check("phone P shows the started activity (packing)", started)
    for offset, status in ((-2, "shipped"), (-1, "arriving")):
        run.sender.send(activity_token, run.bundle, "liveactivity", {"aps": {
            "timestamp": now + offset, "event": "update", "content-state": {"status": status, "eta": "14:10"}}})
    run.sender.send(activity_token, run.bundle, "liveactivity", {"aps": {
        "timestamp": now, "event": "end", "content-state": {"status": "arriving", "eta": "14:10"}}})
    summary = """(() => { const cards = [...document.querySelectorAll('#phone .live-activity')];
        return {token: document.getElementById('phone').dataset.token, count: cards.length,
                text: cards.map(c => c.textContent).join(' | '), states: cards.map(c => c.dataset.state)}; })()"""
    b.poll(f"""(() => {{ const s = {summary}; return s.count === 1 && s.text.includes('arriving') && s.states[0] === 'ended'; }})()""")
    seen = run.js(summary)
    run.check("exactly one .live-activity card", seen["count"] == 1, f"{seen['count']} cards")
    run.check("the card shows the last update (arriving)", "arriving" in seen["text"], seen["text"][:160])
    run.check("the card's data-state is ended", seen["states"] == ["ended"], f"states {seen['states']}")
    run.check("the phone is still P", seen["token"] == phone_token)


def token_filter(run):
    """4. Typing a token in #filter-token keeps only its rows; clearing it brings the others back."""
    b = run.browser
    first, second = secrets.token_hex(32), secrets.token_hex(32)
    run.first_token = first
    run.sender.send(first, run.bundle, "alert", alert_payload("Order A-18 confirmed", "We are packing it now.", thread="orders", badge=2))
    run.sender.send(first, run.bundle, "alert", alert_payload("Order A-18 shipped", "Arrives Thursday.", thread="orders", badge=3))
    run.sender.send(second, run.bundle, "alert", alert_payload("Flash sale", "20% off everything today."))
    rows = "[...document.querySelectorAll('#push-list .push-row')].map(r => r.dataset.token)"
    b.poll(f"(() => {{ const t = {rows}; return t.includes({json.dumps(first)}) && t.includes({json.dumps(second)}); }})()")
    b.type_into("#filter-token", first)
    only = b.poll(f"(() => {{ const t = {rows}; return t.length >= 2 && t.every(x => x === {json.dumps(first)}); }})()")
    tokens = run.js(rows)
    run.check("filtered: only rows with that data-token remain", only, f"{len(tokens)} rows, {len(set(tokens))} token(s)")
    run.check("filter kept in the URL hash", f"token={first}" in run.js("location.hash"))
    b.clear_input("#filter-token")
    both = b.poll(f"(() => {{ const t = {rows}; return t.includes({json.dumps(first)}) && t.includes({json.dumps(second)}); }})()")
    run.check("filter cleared: both tokens' rows are back", both)


def hostile_alert(run):
    """5. An alert made of markup is shown as text, and nothing in it runs."""
    b = run.browser
    since = len(b.events)
    token = getattr(run, "first_token", None) or secrets.token_hex(32)
    apns_id = run.sender.send(token, run.bundle, "alert", alert_payload(XSS_TITLE, XSS_BODY))
    shown = b.poll(f"!!{run.row(apns_id)}")
    if not run.check("hostile push listed", shown):
        return
    row_text = run.js(f"{run.row(apns_id)}.textContent")
    run.check("row shows the title literally", XSS_TITLE in row_text, row_text[:120])
    b.click(f"#push-list .push-row[data-apns-id={json.dumps(apns_id)} i]")
    note = b.poll(f"""(() => {{ const phone = document.getElementById('phone');
        if (phone.dataset.token !== {json.dumps(token)}) return '';
        const note = [...phone.querySelectorAll('.phone-notification')].find(n => n.textContent.includes({json.dumps(XSS_TITLE)}));
        return note ? note.textContent : ''; }})()""")
    run.check("phone notification shows title and body literally", XSS_TITLE in (note or "") and XSS_BODY in (note or ""), (note or "not shown")[:160])
    detail = run.js("document.getElementById('detail').textContent")
    run.check("detail shows the title literally", XSS_TITLE in detail)
    b.idle(0.5)   # an onerror handler would have fired by now
    run.check("no <img src=x> in the document", run.js("document.querySelectorAll('img[src=\"x\"]').length") == 0)
    run.check("no script element but the page's own", run.js("document.scripts.length") == 1)
    dialogs = [e for e in b.events[since:] if e.get("method") == "Page.javascriptDialogOpening"]
    run.check("no JavaScript dialog opened", not dialogs, "; ".join(e["params"].get("message", "") for e in dialogs))


def phone_screenshot(run, path):
    """The phone alone, at twice the size."""
    rect = run.js("""(() => { const phone = document.getElementById('phone'); phone.scrollIntoView({block: 'nearest'});
        const r = phone.getBoundingClientRect(); return {x: r.left, y: r.top, width: r.width, height: r.height}; })()""")
    margin = 16
    run.browser.screenshot(path, clip={"x": max(0, rect["x"] - margin), "y": max(0, rect["y"] - margin),
                                       "width": rect["width"] + 2 * margin, "height": rect["height"] + 2 * margin, "scale": 2})
    run.check("phone screenshot saved", os.path.getsize(path) > 0, path)


def screenshots(run):
    """7. The whole window (the hostile push selected), its phone, and the Live Activity's phone."""
    os.makedirs(run.out, exist_ok=True)
    whole = os.path.join(run.out, "inbox.png")
    run.browser.screenshot(whole)
    run.check("screenshot saved", os.path.getsize(whole) > 0, whole)
    phone_screenshot(run, os.path.join(run.out, "inbox-phone.png"))
    token = getattr(run, "activity_phone", None)
    if token and run.browser.poll(f"!!document.querySelector('#devices .device-item[data-token={json.dumps(token)}]')"):
        run.browser.click(f"#devices .device-item[data-token={json.dumps(token)}]")
        run.browser.poll(f"document.querySelector('#phone[data-token={json.dumps(token)}] .live-activity') !== null")
        phone_screenshot(run, os.path.join(run.out, "inbox-activity.png"))


def clear(run):
    """6. Clear empties the page and the server."""
    b = run.browser
    b.click("#clear")
    empty = b.poll("document.querySelectorAll('#push-list .push-row').length === 0")
    run.check("#push-list has no .push-row after Clear", empty)
    total = (run.api("/api/v1/pushes") or {}).get("total")
    run.check("GET /api/v1/pushes total is 0", total == 0, f"total {total}")
    run.check("no phone shown after Clear", b.poll("document.getElementById('phone').dataset.token === ''"))


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ui", required=True, help="the inbox's base URL, http://127.0.0.1:PORT")
    parser.add_argument("--send", required=True, help="command prefix that sends one push (apnsctl send …)")
    parser.add_argument("--out", required=True, help="directory for the screenshots")
    parser.add_argument("--bundle", default="com.example.forgepush", help="the bundle id (topic) of every push")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)

    workdir = tempfile.mkdtemp(prefix="inbox-browser-")
    try:
        browser = Browser(args.chromium, workdir)
    except OSError as error:
        shutil.rmtree(workdir, ignore_errors=True)
        print(f"FAIL browser started: {error}\n0 passed, 1 failed")
        return 1
    run = Run(browser, Sender(args.send, extra, workdir), args.ui, args.out, args.bundle)
    try:
        browser.open_page()
        for scenario in (page_loads, live_push, live_activity, token_filter, hostile_alert, screenshots, clear):
            try:
                scenario(run)
            except (CDPError, RuntimeError, OSError, subprocess.TimeoutExpired, KeyError, TypeError) as error:
                run.check(f"{scenario.__name__} ran to the end", False, f"{type(error).__name__}: {error}")
        problems = browser.problems()
        run.check("no console errors or exceptions during the run", not problems, "; ".join(problems)[:600])
    except CDPError as error:
        run.check("browser started", False, f"{error}")
    finally:
        browser.close()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{run.passed} passed, {run.failed} failed")
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
