#!/usr/bin/env python3
"""Misbehaving HTTP/2 clients, made with the h2 library (and, for what h2 refuses to send, with
frames written as bytes and hpack), against a gRPC server.

  hostile_peer.py --port N [--only CHECK] [--stall-bound SECONDS] [--server-pid PID] [--service echo|interop]
      Runs each attack (or just CHECK, such as idle_connection) on a fresh connection and checks the server's answer per gRPC's
      PROTOCOL-HTTP2.md and RFC 9113; prints "ok NAME" or "FAIL NAME: why", then "checks: N ok, M failed".
      Every check is bounded in time (socket timeouts and deadlines): none can hang.

      --stall-bound: how long half_preface_stall waits for the server to close (default 15: the default
        prefaceTimeout is 10 s).
      --server-pid: the server's process, when it runs alone in one (as pitlane-interop-server does): the
        flood checks then also fail if its resident memory grows by more than 64 MiB.
      --service interop: for development against pitlane-interop-server (grpc.testing.TestService)
        instead of the echo service of Tests/TestSupport/echo.proto.
"""
import argparse
import socket
import struct
import sys
import time

import h2.config
import h2.connection
import h2.events
import hpack

PATH = "/pitlane.test.echo.Echo/Get"
# A unary request that succeeds: EchoRequest{text: "ok"}.
UNARY_MESSAGE = b"\x0a\x02ok"
STREAMING_PATH = "/pitlane.test.echo.Echo/Expand"


def varint(value):
    out = b""
    while True:
        byte, value = value & 0x7F, value >> 7
        if not value:
            return out + bytes([byte])
        out += bytes([byte | 0x80])


def streaming_message(count, size):
    """A server-streaming request for `count` responses of `size` payload bytes each:
    EchoRequest{repeat, payload_bytes}."""
    return b"\x20" + varint(count) + b"\x28" + varint(size)


def use_interop_service():
    """Development only: target pitlane-interop-server's grpc.testing.TestService."""
    global PATH, UNARY_MESSAGE, STREAMING_PATH, streaming_message
    PATH = "/grpc.testing.TestService/UnaryCall"
    UNARY_MESSAGE = b""  # SimpleRequest{}
    STREAMING_PATH = "/grpc.testing.TestService/StreamingOutputCall"

    def interop_streaming_message(count, size):
        # StreamingOutputCallRequest{response_parameters: [{size}] * count}; at most 10,000
        # entries, so the request fits the server's 64 KiB stream window.
        parameters = b"\x08" + varint(size)
        return (b"\x12" + varint(len(parameters)) + parameters) * min(count, 10_000)
    streaming_message = interop_streaming_message


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
    connection.send_data(stream_id, frame(UNARY_MESSAGE), end_stream=True)
    sock.sendall(connection.data_to_send())
    headers = collect(sock, connection, stream_id)
    assert headers.get("grpc-status") == "0", headers
    sock.close()


def well_behaved(port):
    """After the attacks, a normal call on a new connection still works."""
    sock, connection = connect(port)
    connection.send_headers(1, grpc_headers(), end_stream=False)
    connection.send_data(1, frame(UNARY_MESSAGE), end_stream=True)
    sock.sendall(connection.data_to_send())
    headers = collect(sock, connection, 1)
    assert headers.get("grpc-status") == "0", headers


# Raw HTTP/2: the attacks below break rules the h2 library keeps, so they write frames as bytes
# and read the server's frames back as bytes.

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7, 0x8, 0x9
END_STREAM = ACK = 0x1
END_HEADERS, PADDED, PRIORITY = 0x4, 0x8, 0x20
SETTINGS_INITIAL_WINDOW_SIZE = 0x4
FLOW_CONTROL_ERROR, ENHANCE_YOUR_CALM = 0x3, 0xB
MAX_WINDOW = 2**31 - 1
MAX_FRAME = 16_384  # SETTINGS_MAX_FRAME_SIZE, which the server leaves at its default
STALL_BOUND = 15.0  # --stall-bound
SERVER_PID = None  # --server-pid


def h2_frame(kind, flags, stream_id, payload=b""):
    """One frame: 24-bit length, type, flags, 31-bit stream id, payload."""
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + (stream_id & MAX_WINDOW).to_bytes(4, "big") + payload


class Closed(Exception):
    """The server closed the connection (FIN or RST)."""


class RawPeer:
    """A client connection that writes frames as bytes and reads the server's, decoding header
    blocks with its own HPACK state and acknowledging the server's SETTINGS as they are read
    (unless `quiet`: a write to a connection the server has closed draws a TCP reset, and the
    reset discards what the server sent before, such as its GOAWAY)."""

    quiet = False
    goaway = None

    def __init__(self, port, settings=()):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder(max_header_list_size=1 << 24)  # the echo service echoes request headers
        self.buffer = b""
        self.block = None  # a header block waiting for its CONTINUATIONs: stream id, flags, bytes
        entries = b"".join(struct.pack(">HI", key, value) for key, value in settings)
        self.send(PREFACE + h2_frame(SETTINGS, 0, 0, entries))

    def send(self, data, timeout=10):
        self.sock.settimeout(timeout)
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as error:
            raise Closed(str(error)) from error

    def send_headers(self, stream_id, block, end_stream):
        """A header block as HEADERS and as many CONTINUATIONs as the frame size needs."""
        pieces = [block[i:i + MAX_FRAME] for i in range(0, len(block), MAX_FRAME)] or [b""]
        frames = []
        for index, piece in enumerate(pieces):
            flags = END_HEADERS if index == len(pieces) - 1 else 0
            if index == 0:
                frames.append(h2_frame(HEADERS, flags | (END_STREAM if end_stream else 0), stream_id, piece))
            else:
                frames.append(h2_frame(CONTINUATION, flags, stream_id, piece))
        self.send(b"".join(frames))

    def request(self, stream_id, path, message, extra=(), **overrides):
        """A whole gRPC request: headers (with `extra` fields after the usual ones), then the
        framed message in DATA frames, the last ending the stream."""
        block = self.encoder.encode(grpc_headers(**{":path": path, **overrides}) + list(extra), huffman=False)
        self.send_headers(stream_id, block, end_stream=False)
        body = frame(message)
        pieces = [body[i:i + MAX_FRAME] for i in range(0, len(body), MAX_FRAME)]
        self.send(b"".join(h2_frame(DATA, END_STREAM if index == len(pieces) - 1 else 0, stream_id, piece)
                           for index, piece in enumerate(pieces)))

    def next_frame(self, end):
        """The server's next frame as (type, flags, stream id, payload); a header block comes back
        as one HEADERS frame whose payload is the decoded fields as a dict. Raises Closed when the
        connection ends and TimeoutError at `end`."""
        while True:
            while len(self.buffer) >= 9 and len(self.buffer) >= 9 + int.from_bytes(self.buffer[:3], "big"):
                length = int.from_bytes(self.buffer[:3], "big")
                kind, flags = self.buffer[3], self.buffer[4]
                stream_id = int.from_bytes(self.buffer[5:9], "big") & MAX_WINDOW
                payload, self.buffer = self.buffer[9:9 + length], self.buffer[9 + length:]
                decoded = self._decode(kind, flags, stream_id, payload)
                if decoded:
                    return decoded
            remaining = end - time.time()
            if remaining <= 0:
                raise TimeoutError("no frame in time")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise TimeoutError("no frame in time") from None
            except ConnectionResetError as error:
                raise Closed("connection reset") from error
            if not data:
                raise Closed("end of stream")
            self.buffer += data

    def _decode(self, kind, flags, stream_id, payload):
        if kind == HEADERS:
            if flags & PADDED:
                payload = payload[1:len(payload) - payload[0]]
            if flags & PRIORITY:
                payload = payload[5:]
            self.block = (stream_id, flags, payload)
        elif kind == CONTINUATION and self.block:
            self.block = (self.block[0], self.block[1], self.block[2] + payload)
        else:
            if kind == SETTINGS and not flags & ACK and not self.quiet:
                self.send(h2_frame(SETTINGS, ACK, 0))
            return kind, flags, stream_id, payload
        if not flags & END_HEADERS:
            return None
        stream_id, first_flags, block = self.block
        self.block = None
        return HEADERS, first_flags, stream_id, dict(self.decoder.decode(block))

    def poll_closed(self, wait):
        """Reads what the server sent within `wait` seconds; True if it closed the connection.
        A GOAWAY read on the way is kept in `self.goaway`."""
        end = time.time() + wait
        try:
            while True:
                kind, _, _, payload = self.next_frame(end)
                if kind == GOAWAY:
                    self.goaway = goaway_of(payload)
        except TimeoutError:
            return False
        except Closed:
            return True


def goaway_of(payload):
    """A GOAWAY's error code and debug data."""
    return int.from_bytes(payload[4:8], "big"), payload[8:]


def stream_outcome(peer, stream_id, bound):
    """Reads until stream `stream_id` ends, or the connection does. Returns a dict: "headers" (response
    headers and trailers), "data" (DATA bytes received), and what ended it: "ended" (END_STREAM),
    "rst" (RST_STREAM's error code) or "closed"; "goaway" (error code, debug) if one came on the way.
    Raises TimeoutError if none of that happens within `bound` seconds."""
    outcome = {"headers": {}, "data": 0}
    end = time.time() + bound
    while True:
        try:
            kind, flags, frame_stream, payload = peer.next_frame(end)
        except Closed:
            outcome["closed"] = True
            return outcome
        if kind == GOAWAY:
            outcome["goaway"] = goaway_of(payload)
        if frame_stream != stream_id:
            continue
        if kind == RST_STREAM:
            outcome["rst"] = int.from_bytes(payload[:4], "big")
            return outcome
        if kind == HEADERS:
            outcome["headers"].update(payload)
        if kind == DATA:
            outcome["data"] += len(payload)
        if kind in (HEADERS, DATA) and flags & END_STREAM:
            outcome["ended"] = True
            return outcome


def read_until_closed(peer, bound, what):
    """Reads the server's frames until it closes the connection; returns how many of each kind
    came ("PING ACK", "GOAWAY", ...) and the last GOAWAY (error code, debug) or None."""
    names = {DATA: "DATA", HEADERS: "HEADERS", RST_STREAM: "RST_STREAM", SETTINGS: "SETTINGS", PING: "PING",
             GOAWAY: "GOAWAY", WINDOW_UPDATE: "WINDOW_UPDATE"}
    counts, goaway = {}, peer.goaway
    peer.quiet = True
    end = time.time() + bound
    while True:
        try:
            kind, flags, _, payload = peer.next_frame(end)
        except Closed:
            return counts, goaway
        except TimeoutError:
            raise AssertionError(f"the connection was still open {bound:g} s after {what}; frames read: {counts}") from None
        name = names.get(kind, str(kind)) + (" ACK" if kind in (SETTINGS, PING) and flags & ACK else "")
        counts[name] = counts.get(name, 0) + 1
        if kind == GOAWAY:
            goaway = goaway_of(payload)


def flood(peer, one, count, batch=500):
    """Sends `one` (bytes of one or more frames) `count` times in writes of `batch`, reading nothing
    back. Returns "sent", "closed" (the server hung up) or "blocked" (it stopped reading: a write
    made no progress for 5 s)."""
    for start in range(0, count, batch):
        try:
            peer.send(one * min(batch, count - start), timeout=5)
        except Closed:
            return "closed"
        except socket.timeout:
            return "blocked"
    return "sent"


def note(text):
    """A line of what a check saw, printed above its "ok"/"FAIL" line."""
    print(f"  {text}")


def server_rss_kib():
    """The server's resident memory in KiB, when --server-pid names it; else None."""
    if SERVER_PID is None:
        return None
    with open(f"/proc/{SERVER_PID}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def assert_memory_bounded(before, what):
    """With --server-pid: the server's resident memory grew by 64 MiB at most during `what`."""
    after = server_rss_kib()
    if before is None or after is None:
        return
    note(f"server RSS {before // 1024} MiB before {what}, {after // 1024} MiB after")
    assert after - before <= 64 * 1024, f"the server grew by {(after - before) // 1024} MiB during {what}"


def still_serving(port):
    """A normal unary call on a new connection succeeds: the server survived."""
    try:
        well_behaved(port)
    except Exception as error:
        raise AssertionError(f"afterwards, a normal call on a new connection failed: {type(error).__name__}: {error}") from None


def served_or_closed(peer, what):
    """After a flood the connection either still works (a unary call on it succeeds) or the server
    closed it, saying ENHANCE_YOUR_CALM if it sent a GOAWAY. Returns which, for a note."""
    # First, without writing, whether the server closes the connection.
    peer.quiet = True
    if peer.poll_closed(1):
        outcome = {"closed": True}
    else:
        peer.quiet = False
        try:
            peer.request(1, PATH, UNARY_MESSAGE)
            outcome = stream_outcome(peer, 1, 15)
        except Closed:
            outcome = {"closed": True}
        except TimeoutError:
            raise AssertionError(f"after {what} the connection neither answered a call within 15 s nor closed") from None
    goaway = outcome.get("goaway") or peer.goaway
    if goaway:
        assert goaway[0] == ENHANCE_YOUR_CALM, f"GOAWAY {goaway} after {what}, not ENHANCE_YOUR_CALM"
    if outcome.get("closed"):
        return f"closed, {'with GOAWAY %s' % (goaway,) if goaway else 'without GOAWAY'}"
    assert not goaway and outcome["headers"].get("grpc-status") == "0", f"after {what}: {outcome}"
    return "still served a call"


def settings_flood(port):
    """20,000 empty SETTINGS frames sent without reading one ACK. nghttp2 keeps at most 1,000
    unsent SETTINGS and PING ACKs (nghttp2_option_set_max_outbound_ack; default 1,000) and then
    fails the session (NGHTTP2_ERR_FLOODED), so the server must either keep up and still answer a
    call on the connection, or close it (GOAWAY, if any, ENHANCE_YOUR_CALM). Then one SETTINGS
    frame of 100 entries, past nghttp2's 32 (nghttp2_option_set_max_settings): served, or GOAWAY
    ENHANCE_YOUR_CALM. New connections are served afterwards."""
    before = server_rss_kib()
    peer = RawPeer(port)
    flood(peer, h2_frame(SETTINGS, 0, 0), 20_000)
    note(f"20,000 SETTINGS: {served_or_closed(peer, 'a SETTINGS flood')}")
    peer = RawPeer(port)
    entries = struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, 65_535) * 100
    flood(peer, h2_frame(SETTINGS, 0, 0, entries), 1)
    note(f"a SETTINGS frame of 100 entries: {served_or_closed(peer, 'a SETTINGS frame of 100 entries')}")
    assert_memory_bounded(before, "the SETTINGS floods")
    still_serving(port)


def window_update_flood(port):
    """10,000 WINDOW_UPDATEs of 1 byte, on the connection and on an open stream, are taken without
    complaint; then an increment that takes the stream's window past 2^31-1
    gets RST_STREAM FLOW_CONTROL_ERROR and leaves the connection working, and one that takes the
    connection's window past it gets GOAWAY FLOW_CONTROL_ERROR (RFC 9113 §6.9.1)."""
    peer = RawPeer(port)
    # Stream 1 stays open: its request has no body yet.
    peer.send_headers(1, peer.encoder.encode(grpc_headers()), end_stream=False)
    increment = (1).to_bytes(4, "big")
    sent = flood(peer, h2_frame(WINDOW_UPDATE, 0, 0, increment) + h2_frame(WINDOW_UPDATE, 0, 1, increment), 5_000)
    assert sent == "sent", f"the connection was {sent} during 10,000 WINDOW_UPDATEs within the limits"
    peer.send(h2_frame(WINDOW_UPDATE, 0, 1, MAX_WINDOW.to_bytes(4, "big")))
    outcome = stream_outcome(peer, 1, 10)
    assert outcome.get("rst") == FLOW_CONTROL_ERROR, f"stream window past 2^31-1: {outcome}"
    peer.request(3, PATH, UNARY_MESSAGE)
    outcome = stream_outcome(peer, 3, 10)
    assert outcome["headers"].get("grpc-status") == "0" and "goaway" not in outcome, \
        f"a call after the stream's overflow: {outcome}"
    peer.send(h2_frame(WINDOW_UPDATE, 0, 0, MAX_WINDOW.to_bytes(4, "big")))
    _, goaway = read_until_closed(peer, 10, "the connection's window went past 2^31-1")
    assert goaway and goaway[0] == FLOW_CONTROL_ERROR, f"connection window past 2^31-1: GOAWAY {goaway}"
    still_serving(port)


def ping_flood_acks(port):
    """20,000 PINGs at once, and not one ACK read while sending: far past the ping policy (two
    early pings tolerated) and past nghttp2's 1,000 queued ACKs. The server must close the
    connection within 15 s (GOAWAY, if it gets out, ENHANCE_YOUR_CALM) rather than go on
    answering; with --server-pid, its memory must stay bounded."""
    before = server_rss_kib()
    peer = RawPeer(port)
    sent = flood(peer, h2_frame(PING, 0, 0, b"\0" * 8), 20_000)
    counts, goaway = read_until_closed(peer, 15, "a flood of 20,000 PINGs")
    note(f"flood {sent}; then read {counts}, GOAWAY {goaway}")
    assert goaway is None or goaway[0] == ENHANCE_YOUR_CALM, f"GOAWAY {goaway}, not ENHANCE_YOUR_CALM"
    assert_memory_bounded(before, "the PING flood")
    still_serving(port)


def continuation_flood(port):
    """HEADERS without END_HEADERS, then CONTINUATION after CONTINUATION of 15 KiB of header
    fields, never ending the block (CVE-2024-27316, CVE-2024-28182): the server must close the
    connection well before the block grows without end. Asserted: closed within 32 CONTINUATIONs
    (about 480 KiB, 30 times the 16 KiB header list limit); nghttp2 allows 8 by default
    (nghttp2_option_set_max_continuations) and then fails the session."""
    before = server_rss_kib()
    peer = RawPeer(port)
    peer.quiet = True  # a SETTINGS ACK amid the header block would be a protocol error of ours
    peer.send(h2_frame(HEADERS, 0, 1, peer.encoder.encode(grpc_headers())))
    # Never-indexed literals: the HPACK tables stay as they are, frame after frame.
    fields = [(f"x-flood-{index:02}", "f" * 1_000, True) for index in range(15)]
    filler = peer.encoder.encode(fields, huffman=False)
    sent, closed = 0, False
    while sent < 32 and not closed:
        try:
            peer.send(h2_frame(CONTINUATION, 0, 1, filler))
            sent += 1
            closed = peer.poll_closed(0.05)
        except Closed:
            closed = True
    if not closed:
        read_until_closed(peer, 5, f"{sent} CONTINUATIONs ({sent * len(filler) // 1024} KiB of one header block)")
    note(f"closed after {sent} CONTINUATIONs ({sent * len(filler) // 1024} KiB), GOAWAY {peer.goaway}")
    assert_memory_bounded(before, "the CONTINUATION flood")
    still_serving(port)


def headers_over_limit(port):
    """A request whose header list (RFC 9113 §6.5.2: name + value + 32 per field) is over the 16 KiB
    the server announces in SETTINGS_MAX_HEADER_LIST_SIZE. nghttp2 does not enforce that setting on
    what it receives (only 64 KiB per field); the server must, in its header callback: reset the
    stream (NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE sends RST_STREAM INTERNAL_ERROR) or answer 431
    or a gRPC error status. nghttp2 still decodes the block, so HPACK stays in step and the
    connection must go on serving: that is what is asserted. Twice: 20 KiB of literal fields, and
    a 4 KiB field repeated 200 times by HPACK index (800 KiB decoded from 4 KiB on the wire)."""
    peer = RawPeer(port)
    padding = [(f"x-pad-{index:02}", "p" * 1_000) for index in range(20)]
    bomb_entry = ("x-bomb", "b" * 4_000)
    attempts = [(1, "20 KiB of literal header fields", padding),
                (3, "a 4 KiB header field indexed 200 times", [bomb_entry] * 201)]
    for stream_id, what, extra in attempts:
        peer.request(stream_id, PATH, UNARY_MESSAGE, extra=extra)
        outcome = stream_outcome(peer, stream_id, 10)
        assert not outcome.get("closed"), f"{what}: the connection closed ({outcome})"
        status = outcome["headers"].get("grpc-status")
        refused = "rst" in outcome or outcome["headers"].get(":status") == "431" or status not in (None, "0")
        assert refused, f"{what}: served as if under the 16 KiB limit ({outcome['headers'].get(':status')}, grpc-status {status})"
        note(f"{what}: RST_STREAM {outcome.get('rst')}, :status {outcome['headers'].get(':status')}, grpc-status {status}")
    peer.request(5, PATH, UNARY_MESSAGE)
    outcome = stream_outcome(peer, 5, 10)
    assert outcome["headers"].get("grpc-status") == "0", f"a normal call on the same connection afterwards: {outcome}"
    still_serving(port)


def goaway_survives_late_writes(port):
    """A client that goes on writing after the server's final GOAWAY (pings past the strikes,
    then 100 more) still reads that GOAWAY, then the end of the connection (FIN, not a reset).
    A server that closed its socket at once would answer the late bytes with a reset, and the
    reset discards the GOAWAY before the client reads it; the server lingers instead: it stops
    writing and reads and discards for a moment before it closes."""
    peer = RawPeer(port)
    pings = b"".join(h2_frame(PING, 0, 0, struct.pack(">Q", index)) for index in range(5))
    late = h2_frame(WINDOW_UPDATE, 0, 0, (1).to_bytes(4, "big")) * 20_000
    try:
        peer.send(pings + late)
    except Closed:
        pass
    time.sleep(0.5)  # the GOAWAY is out, and the late bytes have arrived
    peer.quiet = True
    goaway, ending = None, None
    end = time.time() + 10
    while ending is None:
        try:
            kind, _, _, payload = peer.next_frame(end)
        except Closed as closed:
            ending = str(closed)
            break
        if kind == GOAWAY:
            goaway = goaway_of(payload)
    note(f"GOAWAY {goaway}, then {ending}")
    assert goaway == (ENHANCE_YOUR_CALM, b"too_many_pings"), f"GOAWAY {goaway}, then {ending}"
    assert ending == "end of stream", f"the connection ended with {ending}, not FIN"
    still_serving(port)


def half_preface_stall(port):
    """Half the client preface, then nothing: the server must close the connection within its
    preface timeout (asserted: within --stall-bound seconds)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(PREFACE[:len(PREFACE) // 2])
    start = time.time()
    while True:
        remaining = start + STALL_BOUND - time.time()
        assert remaining > 0, f"the connection was still open {STALL_BOUND:g} s after half a preface"
        sock.settimeout(remaining)
        try:
            if not sock.recv(65536):  # the server's SETTINGS may come first
                break
        except socket.timeout:
            continue
        except ConnectionResetError:
            break
    note(f"closed after {time.time() - start:.1f} s")
    sock.close()
    still_serving(port)


def zero_window_client(port):
    """A client whose SETTINGS_INITIAL_WINDOW_SIZE is 0 and that never sends WINDOW_UPDATE calls a
    server-streaming method that would send 100 MB, with grpc-timeout 2S. No DATA may come (that
    would break flow control); by the deadline the server must end the stream (RST_STREAM, or
    trailers with DEADLINE_EXCEEDED) or close the connection, rather than hold the stream and its
    queued responses forever. Asserted: within 6 s of the deadline."""
    before = server_rss_kib()
    peer = RawPeer(port, settings=[(SETTINGS_INITIAL_WINDOW_SIZE, 0)])
    peer.request(1, STREAMING_PATH, streaming_message(100_000, 1_000), **{"grpc-timeout": "2S"})
    start = time.time()
    try:
        outcome = stream_outcome(peer, 1, 2 + 6)
    except TimeoutError:
        raise AssertionError("the stream was still open 6 s after its 2 s deadline: no RST_STREAM, no trailers, "
                             "the connection open") from None
    note(f"stream ended after {time.time() - start:.1f} s: {outcome}")
    assert outcome["data"] == 0, f"{outcome['data']} bytes of DATA sent into a zero window"
    if outcome.get("ended"):
        assert outcome["headers"].get("grpc-status") == "4", f"trailers without DEADLINE_EXCEEDED: {outcome}"
    assert_memory_bounded(before, "the zero-window stream")
    still_serving(port)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--only", help="run this one check")
    parser.add_argument("--stall-bound", type=float, default=15.0, help="seconds half_preface_stall waits for the close")
    parser.add_argument("--server-pid", type=int, help="the server's process, to bound its memory growth in floods")
    parser.add_argument("--service", choices=["echo", "interop"], default="echo", help="interop: development only")
    args = parser.parse_args()
    global STALL_BOUND, SERVER_PID
    STALL_BOUND, SERVER_PID = args.stall_bound, args.server_pid
    if args.service == "interop":
        use_interop_service()
    port = args.port
    failed = 0
    # Not here: idle_connection and half_preface_stall, which need a server configured for them.
    checks = [garbage_preface, missing_content_type, invalid_timeout, oversized_message, unknown_compression,
              ping_flood, rapid_reset, resets_within_budget, settings_flood, window_update_flood, ping_flood_acks,
              continuation_flood, headers_over_limit, zero_window_client, goaway_survives_late_writes, well_behaved]
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
