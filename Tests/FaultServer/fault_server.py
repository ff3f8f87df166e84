"""An APNs-like HTTP/2 server that is not ForgePush's code: an independent oracle for its tests.

It speaks HTTP/2 through hyper-h2 over Python's own TLS (ALPN h2), verifies ES256 provider tokens
with `cryptography`, injects faults chosen by each device token, and writes one JSON line per
event to the record file, so a test can check every verdict `apnsctl send` prints against what
this server saw. FaultOracleTests.swift (Tests/APNSCtlTests) drives it; `make test` installs its
two packages in .build-venv/.

Run it by hand, from the package root:

    make pydeps
    .build-venv/bin/python Tests/FaultServer/fault_server.py --record /tmp/record.ndjson &
    # it prints "PORT 40123" first; then, e.g.:
    apnsctl send --url https://127.0.0.1:40123 --ca-file keys-example/ca.pem \
        --key-file keys-example/AuthKey_FORGEKEY01.p8 --key-id FORGEKEY01 --team-id FORGETEAM1 \
        --topic com.example.forgepush --title Hi --token b0$(printf '0%.0s' {1..62}) --json
    kill %1            # or close its standard input

Faults per token: the first two hex digits select a behaviour, the third is N where one is used
("the first N times" counts the requests for that token this server processed or refused, on any
connection). Every other token is accepted.

    00..  accept: 200 with an apns-id (the request's, or a new UUID)
    b0    reject 400 BadDeviceToken
    b1    reject 410 Unregistered, with a timestamp
    c1    429 TooManyRequests the first N times, then accept
    c5    500 InternalServerError the first N times, then accept
    c6    503 ServiceUnavailable the first N times, then accept
    d1    RST_STREAM REFUSED_STREAM (not processed) the first N times, then accept
    d2    RST_STREAM REFUSED_STREAM for ever
    e1    process, then close the connection without answering, the first N times, then accept
    e2    the same for ever
    e3    process, then RST_STREAM INTERNAL_ERROR without answering, the first N times, then accept

Connection faults (flags, for every connection):

    --goaway-after N          after answering a connection's Nth request, GOAWAY with that stream
                              as the last one; streams above it are not processed; the connection
                              closes once the streams at or below it are answered
    --stall-after N           after N requests on a connection, stop reading and answering it (no
                              PING answers either); the socket stays open: a dead peer
    --drop-after-handshake    close each connection right after the TLS handshake, before the
                              server's HTTP/2 preface
    --first-connection-serves N
                              the first connection answers N requests, then closes; every later
                              connection is closed as with --drop-after-handshake (a middlebox
                              or a revoked certificate after a good start)
    --abort-plan N1,N2,...    connection i (counting from 1) answers its first Ni requests, then
                              closes at the next one, with the streams still in flight unanswered
                              (that request and later ones are recorded closed-unprocessed);
                              connections after the plan's last serve normally. 600,0,0 is a server
                              that served, then aborted three connections in a row after their
                              HTTP/2 preface (a deploy, a load balancer recycling connections)
    --max-concurrent-streams K

"Close" here shuts down the sending side only and keeps reading, so every request that reaches the
server is recorded even after it has hung up; a stalled connection is read only when the server
stops, and what it held is recorded then.

Record lines, flushed one by one:

    {"event":"connection","conn":3}
    {"event":"request","conn":3,"stream":5,"token":"…","action":…,"status":…,"reason":…,
     "apns_id":…,"body_is_json":true}

where action is one of
    answered            processed and answered (status, reason, apns_id)
    reset               processed, then RST_STREAM INTERNAL_ERROR, no answer
    dropped             processed, then the connection was closed, no answer
    refused             RST_STREAM REFUSED_STREAM, not processed
    goaway-unprocessed  a stream above the GOAWAY's last stream id, not processed
    closed-unprocessed  complete, arrived on a connection the server had closed (or was closing
                        for a drop), not processed and not answered: the client cannot tell
    closed-before-preface
                        complete, arrived on a connection closed before the server sent anything
                        (not even its SETTINGS preface): not processed, and the client can tell
    stalled             complete, arrived on a stalled connection, not processed nor answered:
                        the client cannot tell
    partial             headers without the end of the request when the connection ended
    client-reset        the client reset the stream before its request was complete

The server serves until SIGTERM or until its standard input closes, then reads what stalled
connections still hold, records it, and exits 0.
"""

import argparse
import base64
import json
import os
import selectors
import signal
import socket
import ssl
import sys
import threading
import time
import uuid

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from hyperframe.frame import GoAwayFrame

KEY_ID = "FORGEKEY01"
TEAM_ID = "FORGETEAM1"
# (status, reason) of the fixed rejections and of the "first N times" error answers.
REJECTIONS = {"b0": (400, "BadDeviceToken"), "b1": (410, "Unregistered")}
TRANSIENT = {"c1": (429, "TooManyRequests"), "c5": (500, "InternalServerError"), "c6": (503, "ServiceUnavailable")}


class Recorder:
    """The record file: one JSON object a line, written and flushed under a lock."""

    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8")
        self.lock = threading.Lock()

    def write(self, **fields):
        line = json.dumps(fields, separators=(",", ":")) + "\n"
        with self.lock:
            self.file.write(line)
            self.file.flush()


class TokenVerifier:
    """Checks `authorization: bearer <JWT>`: ES256 by the test key, kid and iss as the test ids."""

    def __init__(self, public_key_path):
        with open(public_key_path, "rb") as f:
            self.key = serialization.load_pem_public_key(f.read())
        self.good = set()
        self.lock = threading.Lock()

    def reason(self, authorization):
        """None for a valid token, else the APNs reason for the 403."""
        if authorization is None:
            return "MissingProviderToken"
        scheme, _, jwt = authorization.partition(" ")
        if scheme.lower() != "bearer" or not jwt:
            return "MissingProviderToken"
        with self.lock:
            if jwt in self.good:
                return None
        try:
            header_b64, claims_b64, signature_b64 = jwt.split(".")
            header = json.loads(b64url(header_b64))
            claims = json.loads(b64url(claims_b64))
            signature = b64url(signature_b64)
            if header.get("alg") != "ES256" or header.get("kid") != KEY_ID or claims.get("iss") != TEAM_ID:
                return "InvalidProviderToken"
            if abs(time.time() - int(claims.get("iat", 0))) > 3600:
                return "ExpiredProviderToken"
            # A JWT's ES256 signature is r||s, 32 bytes each; cryptography wants DER.
            if len(signature) != 64:
                return "InvalidProviderToken"
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            self.key.verify(der, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
        except (ValueError, TypeError, InvalidSignature):
            return "InvalidProviderToken"
        with self.lock:
            self.good.add(jwt)
        return None


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Server:
    def __init__(self, options):
        self.options = options
        self.recorder = Recorder(options.record)
        self.verifier = TokenVerifier(os.path.join(options.keys, "AuthKey_FORGEKEY01.pub.pem"))
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(os.path.join(options.keys, "server.pem"), os.path.join(options.keys, "server.key"))
        self.tls.set_alpn_protocols(["h2"])
        self.seen = {}  # token -> requests processed or refused so far, on any connection
        self.seen_lock = threading.Lock()
        self.stopping = threading.Event()
        self.connections = 0
        self.threads = []

    def count(self, token):
        """How many earlier requests for `token` were processed or refused; counts this one."""
        with self.seen_lock:
            earlier = self.seen.get(token, 0)
            self.seen[token] = earlier + 1
            return earlier

    def serve(self, listener, wake):
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        while not self.stopping.is_set():
            for key, _ in selector.select():
                if key.fileobj is wake:
                    self.stopping.set()
                    break
                sock, _ = listener.accept()
                self.connections += 1
                thread = threading.Thread(target=Connection(self, sock, self.connections).run, daemon=True)
                self.threads.append(thread)
                thread.start()
        listener.close()
        # Stalled connections drain now; the others end when their clients have gone. Bounded.
        deadline = time.monotonic() + 5
        for thread in self.threads:
            thread.join(max(0, deadline - time.monotonic()))


class Connection:
    def __init__(self, server, sock, number):
        self.server = server
        self.raw = sock
        self.number = number
        self.sock = None
        self.h2 = None
        self.streams = {}  # stream id -> {"headers": dict, "body": bytearray}
        self.handled = set()  # stream ids already recorded
        self.requests = 0  # complete requests on this connection, in arrival order
        self.last_stream = None  # set once GOAWAY is sent
        self.closed_for = None  # why the server hung up: "closed" or "stalled"

    def record(self, stream_id, action, **fields):
        self.handled.add(stream_id)
        headers = self.streams.get(stream_id, {}).get("headers", {})
        path = headers.get(":path", "")
        token = path[len("/3/device/"):].lower() if path.startswith("/3/device/") else None
        self.server.recorder.write(event="request", conn=self.number, stream=stream_id, token=token, action=action,
                                   **fields)

    def run(self):
        options = self.server.options
        try:
            self.raw.settimeout(10)
            self.sock = self.server.tls.wrap_socket(self.raw, server_side=True)
            self.sock.settimeout(None)
        except (OSError, ssl.SSLError) as error:
            self.server.recorder.write(event="tls-failed", conn=self.number, error=str(error))
            self.raw.close()
            return
        self.server.recorder.write(event="connection", conn=self.number)
        if self.sock.selected_alpn_protocol() != "h2":
            self.sock.close()
            return
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8", validate_inbound_headers=False)
        self.h2 = h2.connection.H2Connection(config=config)
        self.h2.initiate_connection()
        if options.max_concurrent_streams:
            # A second SETTINGS frame: h2 enforces it once the client has acknowledged it, as
            # RFC 9113 allows a client to open streams before it has read the server's settings.
            self.h2.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: options.max_concurrent_streams})
        self.h2.increment_flow_control_window(1 << 24)
        if options.drop_after_handshake or (options.first_connection_serves is not None and self.number > 1):
            self.h2.data_to_send()  # not even the SETTINGS frame leaves
            self.hang_up("before-preface")
        else:
            self.flush()
        try:
            while True:
                if self.closed_for == "stalled":
                    self.server.stopping.wait()
                    self.sock.setblocking(False)
                try:
                    data = self.sock.recv(65536)
                except (ssl.SSLWantReadError, BlockingIOError):
                    break  # a stalled connection, drained
                if not data:
                    break
                self.receive(data)
        except Exception as error:  # noqa: BLE001 - a broken connection is recorded, never fatal
            self.server.recorder.write(event="connection-error", conn=self.number, error=str(error))
        for stream_id in self.streams:
            if stream_id not in self.handled:
                self.record(stream_id, "partial")
        self.sock.close()

    def receive(self, data):
        for event in self.h2.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = {"headers": dict(event.headers), "body": bytearray()}
                if self.last_stream is not None and event.stream_id > self.last_stream:
                    self.record(event.stream_id, "goaway-unprocessed")
            elif isinstance(event, h2.events.DataReceived):
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                if event.stream_id in self.streams:
                    self.streams[event.stream_id]["body"] += event.data
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id not in self.handled:
                self.complete(event.stream_id)
            elif isinstance(event, h2.events.StreamReset) and event.stream_id not in self.handled:
                self.record(event.stream_id, "client-reset")
        if self.closed_for is None:
            self.flush()
            if self.last_stream is not None and all(s in self.handled for s in self.streams if s <= self.last_stream):
                self.hang_up("closed")

    def complete(self, stream_id):
        options = self.server.options
        if self.last_stream is not None and stream_id > self.last_stream:
            self.record(stream_id, "goaway-unprocessed")  # the client knows from the GOAWAY
            return
        if self.closed_for is not None:
            actions = {"closed": "closed-unprocessed", "before-preface": "closed-before-preface", "stalled": "stalled"}
            self.record(stream_id, actions[self.closed_for])
            return
        plan = options.abort_plan
        if plan is not None and self.number <= len(plan) and self.requests == plan[self.number - 1]:
            self.hang_up("closed")
            self.record(stream_id, "closed-unprocessed")
            return
        self.requests += 1
        if options.stall_after is not None and self.requests > options.stall_after:
            self.flush()  # the answers so far leave; nothing after them does
            self.closed_for = "stalled"
            self.record(stream_id, "stalled")
            return
        self.process(stream_id)
        if options.first_connection_serves == self.requests and self.number == 1 and self.closed_for is None:
            self.hang_up("closed")
        if options.goaway_after is not None and self.requests == options.goaway_after and self.closed_for is None:
            self.flush()
            self.last_stream = stream_id
            goaway = GoAwayFrame(stream_id=0, last_stream_id=stream_id, error_code=0)
            self.sock.sendall(goaway.serialize())

    def process(self, stream_id):
        stream = self.streams[stream_id]
        headers = stream["headers"]
        body = bytes(stream["body"])
        try:
            body_is_json = isinstance(json.loads(body.decode("utf-8")), dict)
        except ValueError:
            body_is_json = False
        path = headers.get(":path", "")
        token = path[len("/3/device/"):].lower() if path.startswith("/3/device/") else ""
        apns_id = headers.get("apns-id") or str(uuid.uuid4()).upper()
        common = {"body_is_json": body_is_json}

        def answer(status, reason=None, **extra):
            self.respond(stream_id, status, apns_id, reason, extra)
            self.record(stream_id, "answered", status=status, reason=reason, apns_id=apns_id, **common)

        if headers.get(":method") != "POST":
            return answer(405, "MethodNotAllowed")
        if not token or len(token) % 2 or any(c not in "0123456789abcdef" for c in token):
            return answer(404 if not token else 400, "BadPath" if not token else "BadDeviceToken")
        problem = self.server.verifier.reason(headers.get("authorization"))
        if problem:
            return answer(403, problem)
        marker, n = token[:2], int(token[2], 16)
        earlier = self.server.count(token)
        if marker in REJECTIONS:
            status, reason = REJECTIONS[marker]
            return answer(status, reason, **({"timestamp": int(time.time() * 1000)} if status == 410 else {}))
        if marker in TRANSIENT and earlier < n:
            status, reason = TRANSIENT[marker]
            return answer(status, reason)
        if (marker == "d1" and earlier < n) or marker == "d2":
            self.h2.reset_stream(stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
            return self.record(stream_id, "refused")
        if (marker == "e1" and earlier < n) or marker == "e2":
            self.record(stream_id, "dropped", **common)
            return self.hang_up("closed")
        if marker == "e3" and earlier < n:
            self.h2.reset_stream(stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
            return self.record(stream_id, "reset", **common)
        return answer(200)

    def respond(self, stream_id, status, apns_id, reason, extra):
        headers = [(":status", str(status)), ("apns-id", apns_id)]
        if reason is None:
            self.h2.send_headers(stream_id, headers + [("content-length", "0")], end_stream=True)
            return
        body = json.dumps({"reason": reason, **extra}).encode()
        headers += [("content-type", "application/json"), ("content-length", str(len(body)))]
        self.h2.send_headers(stream_id, headers)
        self.h2.send_data(stream_id, body, end_stream=True)

    def hang_up(self, why):
        """Sends what is pending, then the FIN; keeps reading, so later requests are still recorded."""
        self.flush()
        self.closed_for = why
        try:
            # socket.socket.shutdown, not SSLSocket.shutdown, which would drop TLS for the reading side.
            socket.socket.shutdown(self.sock, socket.SHUT_WR)
        except OSError:
            pass

    def flush(self):
        data = self.h2.data_to_send()
        if data and self.closed_for is None:
            self.sock.sendall(data)


def main():
    parser = argparse.ArgumentParser(description="APNs-like HTTP/2 server with faults chosen by device token.")
    parser.add_argument("--record", required=True, help="file to append one JSON line per event to")
    parser.add_argument("--keys", default=os.path.join(os.path.dirname(__file__), "..", "..", "keys-example"))
    parser.add_argument("--goaway-after", type=int)
    parser.add_argument("--stall-after", type=int)
    parser.add_argument("--drop-after-handshake", action="store_true")
    parser.add_argument("--first-connection-serves", type=int)
    parser.add_argument("--max-concurrent-streams", type=int)
    parser.add_argument("--abort-plan", type=lambda text: [int(n) for n in text.split(",")])
    options = parser.parse_args()

    server = Server(options)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)

    def stop(*_):
        try:
            os.write(wake_write, b"x")
        except BlockingIOError:
            pass  # already woken

    # Any thread may receive SIGTERM, and Python runs handlers on the main thread only when it next
    # runs Python code, never while it waits in select: the wakeup fd has the C handler write to
    # the pipe that select waits on.
    signal.signal(signal.SIGTERM, lambda *_: None)
    signal.set_wakeup_fd(wake_write)
    # A parent may start us with SIGTERM blocked (swift-testing's Foundation.Process does: the mask
    # is inherited through posix_spawn). Unblocked before any thread starts, so all inherit it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

    def watch_stdin():
        while sys.stdin.buffer.read1(4096):
            pass
        stop()

    threading.Thread(target=watch_stdin, daemon=True).start()
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    server.serve(listener, os.fdopen(wake_read, "rb", buffering=0))
    # Not sys.exit: the standard input thread may still hold its reader, which would abort the
    # interpreter's shutdown. Every record line is already flushed.
    os._exit(0)


if __name__ == "__main__":
    main()
