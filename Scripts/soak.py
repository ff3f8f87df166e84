"""A soak run of apnsctl: memory, file descriptors and threads under a steady load for a long time.

Two runs, each sampling /proc every 10 s into a CSV and failing when a resource grows:

  serve  `apnsctl serve --ui-port 0` (h2c) with its inbox and phones judging a steady RATE pushes/s
         from `apnsctl send --tokens-file -` for MINUTES, one event-stream client reading and one
         that never reads. Sampled: serve.
  bulk   `apnsctl send` of TOKENS tokens, as fast as they go, to `apnsctl serve --latency 30ms`.
         Sampled: send (the client under test) and serve.

A run fails when a sampled process's RSS grows more than 10 % between its sample at minute 5
(or at a third of the run, when shorter) and the end, or its open descriptors or threads at the
end exceed what they were then. The figures and a plot of RSS over time (matplotlib, PNG) are
written to the output folder.

    make soak                                    # both runs, 30 minutes and 10,000,000 tokens
    SOAK_MINUTES=5 SOAK_TOKENS=1000000 make soak

Usage: soak.py APNSCTL OUTPUT_FOLDER [--minutes M] [--rate R] [--tokens N] [--only serve|bulk]
"""

import argparse
import csv
import os
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
KEYS = os.path.join(ROOT, "keys-example")
TOPIC = "com.example.soak"
SAMPLE_SECONDS = 10


def sample(pid):
    """RSS in KiB, open descriptors, threads of `pid`; None once it has gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        rss = int(fields["VmRSS"].split()[0])
        threads = int(fields["Threads"])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss, fds, threads
    except (FileNotFoundError, ProcessLookupError, KeyError):
        return None


def start_serve(extra):
    """apnsctl serve on free ports; returns (process, apns port, ui port)."""
    arguments = [APNSCTL, "serve", "--port", "0", "--h2c", "--topic", TOPIC,
                 "--register-key", f"{KEYS}/AuthKey_FORGEKEY01.p8:FORGEKEY01:FORGETEAM1"] + extra
    process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = int(process.stdout.readline())
    ui = None
    if "--ui-port" in extra:
        line = process.stdout.readline().strip()
        ui = int(line.rsplit(":", 1)[1].rstrip("/"))
    # The rest of stdout (verdict lines) is read and dropped, so the server never blocks on it.
    threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
    return process, port, ui


def start_send(port, extra=()):
    arguments = [APNSCTL, "send", "--url", f"http://127.0.0.1:{port}", "--tokens-file", "-", "--json",
                 "--key-file", f"{KEYS}/AuthKey_FORGEKEY01.p8", "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1",
                 "--topic", TOPIC, "--title", "Soak", "--body", "A steady push"] + list(extra)
    return subprocess.Popen(arguments, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def event_clients(ui):
    """One client that reads the event stream as it comes, one that connects and never reads."""
    request = f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1:{ui}\r\nAccept: text/event-stream\r\n\r\n".encode()
    reader = socket.create_connection(("127.0.0.1", ui))
    reader.sendall(request)
    stalled = socket.create_connection(("127.0.0.1", ui))
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.sendall(request)

    def read():
        try:
            while reader.recv(65536):
                pass
        except OSError:
            pass

    threading.Thread(target=read, daemon=True).start()
    return reader, stalled


def token(index):
    return f"{index % 50_000:064x}"


class Sampler:
    """Samples named processes every SAMPLE_SECONDS into rows (seconds, name, rss KiB, fds, threads)."""

    def __init__(self, processes):
        self.processes = processes
        self.rows = []
        self.started = time.monotonic()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while True:
            elapsed = time.monotonic() - self.started
            for name, process in self.processes.items():
                figures = sample(process.pid)
                if figures:
                    self.rows.append((round(elapsed, 1), name, *figures))
            if self.stopping.wait(SAMPLE_SECONDS):
                return

    def stop(self):
        self.stopping.set()
        self.thread.join()


def verdict(rows, name, baseline_seconds):
    """(passed, text) for one process's samples: RSS within 10 % of the baseline, no growth of fds or threads."""
    mine = [row for row in rows if row[1] == name]
    if len(mine) < 2:
        return False, f"{name}: too few samples ({len(mine)})"
    base = next((row for row in mine if row[0] >= baseline_seconds), mine[0])
    end = mine[-1]
    growth = (end[2] - base[2]) / base[2]
    passed = growth <= 0.10 and end[3] <= base[3] and end[4] <= base[4]
    peak = max(row[2] for row in mine)
    text = (f"{name}: RSS {base[2] / 1024:.1f} MiB at {base[0]:.0f} s -> {end[2] / 1024:.1f} MiB at {end[0]:.0f} s "
            f"({growth * 100:+.1f} %, peak {peak / 1024:.1f} MiB); descriptors {base[3]} -> {end[3]}; threads {base[4]} -> {end[4]}")
    return passed, text


def write(rows, folder, run):
    path = os.path.join(folder, f"soak-{run}.csv")
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["seconds", "process", "rss_kib", "fds", "threads"])
        writer.writerows(rows)
    return path


def plot(runs, folder):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    figure, axes = pyplot.subplots(len(runs), 1, figsize=(9, 3.2 * len(runs)), squeeze=False)
    for axis, (run, rows, title) in zip(axes[:, 0], runs):
        for name in sorted({row[1] for row in rows}):
            mine = [row for row in rows if row[1] == name]
            axis.plot([row[0] / 60 for row in mine], [row[2] / 1024 for row in mine], label=f"apnsctl {name}")
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("minutes")
        axis.set_ylabel("RSS (MiB)")
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
        axis.legend(loc="lower right")
    figure.tight_layout()
    path = os.path.join(folder, "soak-rss.png")
    figure.savefig(path, dpi=110)
    return path


def serve_run(minutes, rate):
    serve, port, ui = start_serve(["--ui-port", "0"])
    clients = event_clients(ui)
    send = start_send(port)
    sampler = Sampler({"serve": serve})
    sent = 0
    started = time.monotonic()
    deadline = started + minutes * 60
    try:
        # A tenth of a second's pushes every tenth of a second: a steady rate, not bursts of a second.
        step = max(1, rate // 10)
        while time.monotonic() < deadline:
            lines = "".join(token(sent + i) + "\n" for i in range(step))
            send.stdin.write(lines.encode())
            send.stdin.flush()
            sent += step
            pause = started + sent / rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
    finally:
        send.stdin.close()
        send.wait(timeout=120)
        sampler.stop()
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
        for client in clients:
            client.close()
    elapsed = time.monotonic() - started
    return sampler.rows, f"serve: {sent:,} pushes in {elapsed / 60:.1f} min ({sent / elapsed:,.0f}/s), send exit {send.returncode}"


def bulk_run(tokens):
    serve, port, _ = start_serve(["--latency", "30ms"])
    send = start_send(port)
    sampler = Sampler({"send": send, "serve": serve})
    started = time.monotonic()
    try:
        chunk = 10_000
        for first in range(0, tokens, chunk):
            send.stdin.write("".join(token(i) + "\n" for i in range(first, min(tokens, first + chunk))).encode())
        send.stdin.close()
        send.wait()
    finally:
        sampler.stop()
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
    elapsed = time.monotonic() - started
    return sampler.rows, f"bulk: {tokens:,} tokens in {elapsed / 60:.1f} min ({tokens / elapsed:,.0f}/s), send exit {send.returncode}"


def main():
    global APNSCTL
    parser = argparse.ArgumentParser()
    parser.add_argument("apnsctl")
    parser.add_argument("output")
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--tokens", type=int, default=10_000_000)
    parser.add_argument("--only", choices=["serve", "bulk"])
    options = parser.parse_args()
    APNSCTL = os.path.abspath(options.apnsctl)
    os.makedirs(options.output, exist_ok=True)
    failed = False
    runs = []
    if options.only in (None, "serve"):
        rows, summary = serve_run(options.minutes, options.rate)
        print(summary, flush=True)
        baseline = min(300, options.minutes * 60 / 3)
        passed, text = verdict(rows, "serve", baseline)
        print(("ok    " if passed else "FAIL  ") + text, flush=True)
        failed |= not passed
        print("wrote", write(rows, options.output, "serve"))
        runs.append(("serve", rows, f"apnsctl serve, inbox and phones, {options.rate:,} pushes/s for {options.minutes:g} min"))
    if options.only in (None, "bulk"):
        rows, summary = bulk_run(options.tokens)
        print(summary, flush=True)
        duration = max(row[0] for row in rows)
        for name in ("send", "serve"):
            passed, text = verdict(rows, name, min(300, duration / 3))
            print(("ok    " if passed else "FAIL  ") + text, flush=True)
            failed |= not passed
        print("wrote", write(rows, options.output, "bulk"))
        runs.append(("bulk", rows, f"apnsctl send of {options.tokens:,} tokens to serve --latency 30ms"))
    print("wrote", plot(runs, options.output))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
