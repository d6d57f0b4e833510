#!/usr/bin/env python3
"""Misbehaving HTTP/2 clients, made with the h2 library, against a gRPC server.

  hostile_peer.py --port N [--only CHECK]
      Runs each attack (or just CHECK, such as idle_connection) on a fresh connection and checks the server's answer per gRPC's
      PROTOCOL-HTTP2.md; prints "ok NAME" or "FAIL NAME: why", then "checks: N ok, M failed".
"""
import argparse
import socket
import struct
import sys
import time

import h2.config
import h2.connection
import h2.events

PATH = "/pitlane.test.echo.Echo/Get"


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    connection.initiate_connection()
    sock.sendall(connection.data_to_send())
    return sock, connection


def grpc_headers(**overrides):
    headers = {":method": "POST", ":scheme": "http", ":path": PATH, ":authority": "localhost",
               "content-type": "application/grpc", "te": "trailers"}
    headers.update(overrides)
    return [(k, v) for k, v in headers.items() if v is not None]


def frame(message):
    return struct.pack(">BI", 0, len(message)) + message


def collect(sock, connection, stream_id, deadline=10):
    """Reads until the stream ends; returns all headers seen on it (response and trailers)."""
    headers = {}
    end = time.time() + deadline
    while time.time() < end:
        data = sock.recv(65536)
        if not data:
            headers["<closed>"] = "1"
            return headers
        for event in connection.receive_data(data):
            if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)) and event.stream_id == stream_id:
                headers.update(dict(event.headers))
            if isinstance(event, h2.events.DataReceived):
                connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)) and event.stream_id == stream_id:
                sock.sendall(connection.data_to_send())
                return headers
            if isinstance(event, h2.events.ConnectionTerminated):
                headers["<goaway>"] = str(event.error_code)
                return headers
        sock.sendall(connection.data_to_send())
    raise TimeoutError("the server did not answer")


def garbage_preface(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\x00" * 64)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    # The server may answer with a SETTINGS and a GOAWAY first; it must then close.
    assert b"HTTP/1.1 200" not in data, "answered HTTP/1.1"


def missing_content_type(port):
    sock, connection = connect(port)
    connection.send_headers(1, grpc_headers(**{"content-type": None}), end_stream=True)
    sock.sendall(connection.data_to_send())
    headers = collect(sock, connection, 1)
    assert headers.get(":status") == "415", headers


def invalid_timeout(port):
    sock, connection = connect(port)
    connection.send_headers(1, grpc_headers(**{"grpc-timeout": "forever"}), end_stream=False)
    connection.send_data(1, frame(b""), end_stream=True)
    sock.sendall(connection.data_to_send())
    headers = collect(sock, connection, 1)
    assert headers.get("grpc-status") not in (None, "0"), headers


def oversized_message(port):
    sock, connection = connect(port)
    connection.send_headers(1, grpc_headers(), end_stream=False)
    # Announce a 1 GiB message, send only its prefix and a few bytes.
    connection.send_data(1, struct.pack(">BI", 0, 1 << 30) + b"x" * 100, end_stream=True)
    sock.sendall(connection.data_to_send())
    headers = collect(sock, connection, 1)
    assert headers.get("grpc-status") == "8", headers


def unknown_compression(port):
    sock, connection = connect(port)
    connection.send_headers(1, grpc_headers(**{"grpc-encoding": "snappy"}), end_stream=False)
    connection.send_data(1, frame(b""), end_stream=True)
    sock.sendall(connection.data_to_send())
    headers = collect(sock, connection, 1)
    assert headers.get("grpc-status") == "12", headers
    assert "gzip" in headers.get("grpc-accept-encoding", ""), headers


def wait_for_goaway(sock, connection, what):
    """Reads until the server sends GOAWAY; returns that event."""
    end = time.time() + 10
    while time.time() < end:
        data = sock.recv(65536)
        assert data, "closed without GOAWAY"
        for event in connection.receive_data(data):
            if isinstance(event, h2.events.ConnectionTerminated):
                return event
        sock.sendall(connection.data_to_send())
    raise TimeoutError(f"no GOAWAY {what}")


def ping_flood(port):
    sock, connection = connect(port)
    for index in range(5):
        connection.ping(struct.pack(">Q", index))
    sock.sendall(connection.data_to_send())
    event = wait_for_goaway(sock, connection, "after a ping flood")
    assert event.error_code == 11, event  # ENHANCE_YOUR_CALM
    assert event.additional_data == b"too_many_pings", event


def idle_connection(port):
    """With maxConnectionIdle set, a connection without streams gets GOAWAY NO_ERROR."""
    sock, connection = connect(port)
    event = wait_for_goaway(sock, connection, "on an idle connection")
    assert event.error_code == 0, event


def rapid_reset(port):
    """Streams opened and reset in bursts, as the 2023 "rapid reset" attack does: past the
    server's reset budget (1,000 at once by default) the connection gets GOAWAY
    ENHANCE_YOUR_CALM. Resets within the budget are served normally."""
    sock, connection = connect(port)
    stream_id = 1
    for _ in range(12):
        for _ in range(100):
            connection.send_headers(stream_id, grpc_headers(), end_stream=False)
            connection.reset_stream(stream_id)
            stream_id += 2
        try:
            sock.sendall(connection.data_to_send())
        except OSError:
            break  # the server already hung up; its GOAWAY is in our receive buffer
    error_code, debug = raw_goaway(sock)
    assert error_code == 11 and debug == b"too_many_resets", (error_code, debug)  # ENHANCE_YOUR_CALM
    sock.close()


def raw_goaway(sock):
    """Reads frames as bytes until a GOAWAY; returns its error code and debug data. (The h2
    library refuses frames that follow a GOAWAY in the same read, and servers send some.)"""
    buffer = b""
    end = time.time() + 10
    while time.time() < end:
        while len(buffer) >= 9:
            length = int.from_bytes(buffer[:3], "big")
            if len(buffer) < 9 + length:
                break
            kind, payload = buffer[3], buffer[9:9 + length]
            buffer = buffer[9 + length:]
            if kind == 0x7:  # GOAWAY: last stream id, error code, debug data
                return int.from_bytes(payload[4:8], "big"), payload[8:]
        data = sock.recv(65536)
        assert data, "closed without GOAWAY"
        buffer += data
    raise TimeoutError("no GOAWAY")


def resets_within_budget(port):
    """500 streams opened and reset, then a normal call on the same connection works."""
    sock, connection = connect(port)
    stream_id = 1
    for _ in range(500):
        connection.send_headers(stream_id, grpc_headers(), end_stream=False)
        connection.reset_stream(stream_id)
        stream_id += 2
    connection.send_headers(stream_id, grpc_headers(), end_stream=False)
    connection.send_data(stream_id, frame(b"\x0a\x02ok"), end_stream=True)
    sock.sendall(connection.data_to_send())
    headers = collect(sock, connection, stream_id)
    assert headers.get("grpc-status") == "0", headers
    sock.close()


def well_behaved(port):
    """After the attacks, a normal call on a new connection still works."""
    sock, connection = connect(port)
    connection.send_headers(1, grpc_headers(), end_stream=False)
    connection.send_data(1, frame(b"\x0a\x02ok"), end_stream=True)
    sock.sendall(connection.data_to_send())
    headers = collect(sock, connection, 1)
    assert headers.get("grpc-status") == "0", headers


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--only", help="run this one check")
    args = parser.parse_args()
    port = args.port
    failed = 0
    checks = [garbage_preface, missing_content_type, invalid_timeout, oversized_message, unknown_compression,
              ping_flood, rapid_reset, resets_within_budget, well_behaved]
    if args.only:
        checks = [globals()[args.only]]
    for check in checks:
        try:
            check(port)
            print(f"ok {check.__name__}")
        except Exception as error:  # a failed check is a result
            failed += 1
            print(f"FAIL {check.__name__}: {type(error).__name__}: {error}")
    print(f"checks: {len(checks) - failed} ok, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
