#!/usr/bin/env python3
"""Hostile HTTP clients for the listener tests and bench/serve_attacks.sh.

Every attack is bounded in bytes, connections and time, and stops as soon
as the server closes the connection.

  http_attack.py line     HOST:PORT BYTES      1 request line with no newline
  http_attack.py headers  HOST:PORT BYTES      4 KB header lines, no end
  http_attack.py chunked  HOST:PORT BYTES      a chunked POST body
  http_attack.py slowloris HOST:PORT N SECONDS INTERVAL SOURCE
                                               N connections, one byte of a
                                               head every INTERVAL s each
  http_attack.py idle     HOST:PORT N SECONDS SOURCE[,SOURCE...]
                                               N connections spread over the
                                               source addresses, sending
                                               nothing; closed ones reopen
  http_attack.py noauth   HOST:PORT N SECONDS SOURCE[,SOURCE...]
                                               N connections, each sends one
                                               GET without credentials and
                                               reads the answer; prints READY,
                                               then waits up to SECONDS for
                                               the server to close them
  http_attack.py fields   HOST:PORT N FIELDS SOURCE[,SOURCE...]
                                               the same with a head of FIELDS
                                               empty header fields ("a:")
  http_attack.py unread   HOST:PORT N SECONDS PATH [trickle]
                                               N connections that each GET
                                               PATH and read only its first
                                               512 bytes, with the smallest
                                               receive buffer, held SECONDS;
                                               with trickle, then 1 KiB each
                                               every 0.2 s

Prints one line: what was sent, and the status line the server answered.
"""
import collections
import resource
import selectors
import socket
import sys
import time


def connect(addr, source=None):
    host, port = addr.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if source:
        s.bind((source, 0))
    s.settimeout(5)
    s.connect((host, int(port)))
    return s


def status_line(s):
    s.settimeout(2)
    try:
        data = s.recv(4096)
    except OSError:
        return "(none)"
    return data.split(b"\r\n", 1)[0].decode("latin-1") if data else "(closed)"


def flood(addr, total, head, piece, deadline_s=120):
    """Sends head then piece repeatedly up to total bytes; stops when the
    server closes (a send fails) or after deadline_s."""
    s = connect(addr)
    sent = 0
    deadline = time.monotonic() + deadline_s
    s.settimeout(5)
    try:
        s.sendall(head)
        sent += len(head)
        while sent < total and time.monotonic() < deadline:
            s.sendall(piece)
            sent += len(piece)
    except OSError:
        pass
    answer = status_line(s)
    s.close()
    print(f"sent {sent} bytes; answer: {answer}")


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 64)), hard))


def closed_by_server(socks, seconds):
    """How many of socks the server closes (end of stream or reset) within
    seconds."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    closed = 0
    end = time.monotonic() + seconds
    while closed < len(socks) and time.monotonic() < end:
        for key, _ in sel.select(timeout=max(0.0, end - time.monotonic())):
            try:
                if key.fileobj.recv(65536):
                    continue
            except BlockingIOError:
                continue
            except OSError:
                pass
            sel.unregister(key.fileobj)
            closed += 1
    return closed


def one_request_each(addr, n, seconds, sources, head):
    """Opens n connections in turn, each sending head and reading the status
    line of the answer; then waits up to seconds for the server to close
    them, holding every one open meanwhile."""
    raise_nofile(n)
    socks, answers = [], collections.Counter()
    for i in range(n):
        try:
            s = connect(addr, sources[i % len(sources)])
        except OSError:
            answers["(connect failed)"] += 1
            continue
        socks.append(s)
        try:
            s.sendall(head)
        except OSError:
            pass
        answers[status_line(s)] += 1
    print("READY", flush=True)
    closed = closed_by_server(socks, seconds)
    for s in socks:
        s.close()
    summary = ", ".join(f"{count} x {line}" for line, count in sorted(answers.items()))
    print(f"answers: {summary}; {closed} of {len(socks)} closed by the server")


def keep_open(addr, n, seconds, sources, interval=None):
    """Holds n connections for seconds, reopening those the server closed
    (at most once per round); with interval, sends one byte of a request
    head on each every interval s."""
    raise_nofile(n)
    socks = [None] * n
    opened = refused = 0
    end = time.monotonic() + seconds
    next_byte = time.monotonic()
    while time.monotonic() < end:
        for i in range(n):
            s = socks[i]
            if s is not None:
                try:
                    s.setblocking(False)
                    data = s.recv(4096)
                    if data == b"" or data.startswith(b"HTTP/"):
                        refused += 1
                        s.close()
                        socks[i] = None
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    socks[i] = None
            if socks[i] is None:
                try:
                    socks[i] = connect(addr, sources[i % len(sources)])
                    opened += 1
                except OSError:
                    socks[i] = None
        if interval is not None and time.monotonic() >= next_byte:
            for s in socks:
                if s is not None:
                    try:
                        s.setblocking(False)
                        s.send(b"G")
                    except OSError:
                        pass
            next_byte += interval
        time.sleep(0.5)
    for s in socks:
        if s is not None:
            s.close()
    print(f"opened {opened} connections; {refused} closed by the server")


def unread(addr, n, seconds, path, trickle=False):
    """Opens n connections that each ask for path and read only the first
    512 bytes (the head): the rest of each reply waits in the server. With
    trickle they go on reading 1 KiB every 0.2 s, as a client that makes
    just enough progress to keep a per-read timeout from expiring. Prints
    how many got each status line."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 64)), hard))
    host, port = addr.rsplit(":", 1)
    end = time.monotonic() + seconds
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(5)
        s.connect((host, int(port)))
        s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\n\r\n")
        socks.append(s)
    statuses = {}
    for s in socks:
        s.settimeout(max(1, end - time.monotonic()))
        try:
            head = s.recv(512)
            line = head.split(b"\r\n", 1)[0].decode("latin-1") or "(closed)"
            if b"\r\nRetry-After: " in head:
                line += " with Retry-After"
        except OSError:
            line = "(none)"
        statuses[line] = statuses.get(line, 0) + 1
    while trickle and time.monotonic() < end:
        for s in socks:
            try:
                s.setblocking(False)
                s.recv(1024)
            except OSError:
                pass
        time.sleep(0.2)
    time.sleep(max(0, end - time.monotonic()))
    for s in socks:
        s.close()
    print("; ".join(f"{k}: {v}" for k, v in sorted(statuses.items())))


def main():
    mode, addr = sys.argv[1], sys.argv[2]
    if mode == "line":
        flood(addr, int(sys.argv[3]), b"GET /", b"a" * 65536)
    elif mode == "headers":
        flood(addr, int(sys.argv[3]), b"GET / HTTP/1.1\r\nHost: x\r\n",
              b"X-Pad: " + b"a" * 4000 + b"\r\n")
    elif mode == "chunked":
        chunk = b"a" * 1048576
        flood(addr, int(sys.argv[3]),
              b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
              b"%x\r\n" % len(chunk) + chunk + b"\r\n")
    elif mode == "slowloris":
        keep_open(addr, int(sys.argv[3]), float(sys.argv[4]), [sys.argv[6]],
                  interval=float(sys.argv[5]))
    elif mode == "noauth":
        one_request_each(addr, int(sys.argv[3]), float(sys.argv[4]), sys.argv[5].split(","),
                         b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    elif mode == "fields":
        one_request_each(addr, int(sys.argv[3]), 10, sys.argv[5].split(","),
                         b"GET / HTTP/1.1\r\nHost: x\r\n" + b"a:\r\n" * int(sys.argv[4]) +
                         b"\r\n")
    elif mode == "idle":
        keep_open(addr, int(sys.argv[3]), float(sys.argv[4]), sys.argv[5].split(","))
    elif mode == "unread":
        unread(addr, int(sys.argv[3]), float(sys.argv[4]), sys.argv[5],
               trickle=sys.argv[6:] == ["trickle"])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
