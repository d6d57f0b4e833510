#!/usr/bin/env python3
"""Opens N idle HTTP/2 connections to a server and holds them, to measure memory per connection.

  idle_connections.py --port P --connections N [--hold SECONDS]

Each connection sends the client preface and an empty SETTINGS, acknowledges the server's
SETTINGS, and then sends nothing. Prints "connections open N" once all are set up, holds
them for --hold seconds (default 5), and closes them.
"""
import argparse
import resource
import selectors
import socket
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = struct.pack(">I", 0)[1:] + b"\x04\x00" + b"\x00\x00\x00\x00"
SETTINGS_ACK = struct.pack(">I", 0)[1:] + b"\x04\x01" + b"\x00\x00\x00\x00"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--connections", type=int, default=10_000)
    parser.add_argument("--hold", type=float, default=5)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.connections + 100)), hard))

    selector = selectors.DefaultSelector()
    sockets = []
    pending = set()
    deadline = time.time() + 120
    for _ in range(args.connections):
        sock = socket.create_connection(("127.0.0.1", args.port), timeout=10)
        sock.sendall(PREFACE + SETTINGS)
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        sockets.append(sock)
        pending.add(sock)
        # Answer the SETTINGS that have arrived so far, so no backlog builds up.
        pending.difference_update(acknowledge(selector, 0))
    while pending and time.time() < deadline:
        pending.difference_update(acknowledge(selector, 1))
    if pending:
        sys.exit(f"{len(pending)} connections got no SETTINGS from the server")
    print(f"connections open {len(sockets)}", flush=True)
    time.sleep(args.hold)
    for sock in sockets:
        sock.close()


def acknowledge(selector, timeout):
    """Reads what the server sent on ready sockets and acknowledges its SETTINGS; returns them."""
    answered = []
    for key, _ in selector.select(timeout):
        sock = key.fileobj
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            continue
        if data:
            sock.sendall(SETTINGS_ACK)
        selector.unregister(sock)
        answered.append(sock)
    return answered


if __name__ == "__main__":
    main()
