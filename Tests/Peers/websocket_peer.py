#!/usr/bin/env python3
"""The chat rooms over WebSocket (RFC 6455) on orders-server's gRPC port, judged by a client
no one here wrote (the Python `websockets` library), by raw sockets for the frames
`websockets` refuses to send (unmasked, reserved bits, invalid UTF-8, a close without a
status), and by grpcio Chat clients in the same rooms.

  websocket_peer.py --port P [--protos DIR] [--max-message BYTES] [--only 1,2,...]
  websocket_peer.py --bin DIR [...]     (starts DIR/orders-server --port 0 on a new database)

The protocol (that of a Node.js `ws` chat server): ws://HOST:P/ is the default room,
ws://HOST:P/rooms/NAME the room NAME (the gRPC room NAME). Clients send text frames
{"id": "<their own id>", "nickname": "...", "text": "..."}; everyone in the room, the sender
included, gets {"id", "nickname", "text"} in the room's one order (a gRPC sender's id is its
nickname). Joins and leaves come as {"id": "server", "nickname": "server", "text": ...} to everyone
in the room: a WebSocket client's in the seed server's words with the room's count, the moment
it connects (the newcomer hears it too) and when it closes ("새로운 유저가 접속했습니다. 현재 유저 N
명", "유저 한명이 떠났습니다. 현재 유저 N 명"); a gRPC participant's as "NICK joined" / "NICK left".
A bad message gets such a notice, to its sender only.

Checks: 1 the seed protocol (and that a client is in its room once its handshake is done),
2 one order for 1,000 messages from 10 clients sent at once (and paced), also as a gRPC client
sees them, 3 WebSocket <-> gRPC messages and presence, 4 pings, 5 bad messages, 6 close codes
(raw frames), 7 a client that never reads, 8 the handshake; then the server still serves.
Prints "ok NAME" or "FAIL NAME: why" per check (observations indented below it) and a closing
"checks: N ok, M failed"; exits 1 on any failure. Every wait is bounded, and so is the whole run.
"""
import argparse
import asyncio
import base64
import hashlib
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import uuid
from collections import namedtuple

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # the checks report what grpcio saw themselves
import grpc  # noqa: E402 (after its environment)
import websockets  # noqa: E402
from websockets.asyncio.client import connect as ws_connect  # noqa: E402

import processes  # noqa: E402
from peer_checks import exit_now, expect, load, temporary_directory  # noqa: E402

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455, 1.3
WAIT = 10  # seconds for any one expected arrival


# ---------------------------------------------------------------------------------------------
# Results


class Report:
    """Named results, each printed as it comes with its observations indented below it."""

    def __init__(self):
        self.results = []

    def add(self, name, why, observations):
        self.results.append((name, why))
        print(f"ok {name}" if why is None else f"FAIL {name}: {why}", flush=True)
        for line in observations:
            print(f"    {line}", flush=True)

    async def check(self, name, function, limit):
        """Runs one check for at most `limit` seconds; an exception is its failure. `function`
        gets a list to append observations to."""
        notes = []
        started = time.monotonic()
        try:
            await asyncio.wait_for(function(notes), limit)
            why = None
        except asyncio.TimeoutError:
            why = f"no result within {limit} s"
        except AssertionError as error:  # a failed check is a result
            why = f"{type(error).__name__}: {error}"
        except Exception as error:  # so is anything else, with where it happened
            where = traceback.extract_tb(error.__traceback__)[-1]
            why = f"{type(error).__name__}: {error} (at {os.path.basename(where.filename)}:{where.lineno})"
        if time.monotonic() - started > 2:
            notes.append(f"({time.monotonic() - started:.1f} s)")
        self.add(name, why, notes)

    def finish(self):
        failed = sum(why is not None for _, why in self.results)
        print(f"checks: {len(self.results) - failed} ok, {failed} failed", flush=True)
        return 1 if failed else 0


def fresh(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def short(data, limit=160):
    """bytes or text, shortened for a message."""
    text = repr(data)
    return text if len(text) <= limit else text[:limit] + f"... ({len(data)} in all)"


# ---------------------------------------------------------------------------------------------
# The protocol's messages


def payload(ident, nickname, text):
    return json.dumps({"id": ident, "nickname": nickname, "text": text})


def joined_notice(count):
    """The seed server's notice of a connection: "a new user connected, N users now"."""
    return f"새로운 유저가 접속했습니다. 현재 유저 {count} 명"


def left_notice(count):
    """The seed server's notice of a close: "a user left, N users now"."""
    return f"유저 한명이 떠났습니다. 현재 유저 {count} 명"


def is_notice(message):
    return isinstance(message, dict) and message.get("id") == "server" and message.get("nickname") == "server"


def shape_problem(message):
    """Why a message from the server is not {"id": str, "nickname": str, "text": str}, or None."""
    if not isinstance(message, dict):
        return f"not a JSON object: {short(message)}"
    if sorted(message) != ["id", "nickname", "text"]:
        return f"keys {sorted(message)}, expected exactly id, nickname, text: {short(message)}"
    if not all(isinstance(value, str) for value in message.values()):
        return f"a value is not a string: {short(message)}"
    return None


class WSClient:
    """A `websockets` client whose every incoming message is read at once (so it never falls
    behind) into `messages` (parsed JSON, or ("unparsable", frame))."""

    def __init__(self, ws, ident, nickname):
        self.ws, self.ident, self.nickname = ws, ident, nickname
        self.messages = []
        self.closed = None  # (code, reason) once closed
        self.changed = asyncio.Condition()
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, port, path, prefix="ws", **options):
        ws = await ws_connect(f"ws://127.0.0.1:{port}{path}", compression=None, proxy=None, ping_interval=None,
                              open_timeout=WAIT, close_timeout=5, max_queue=None, **options)
        return cls(ws, fresh(f"{prefix}-id"), fresh(prefix))

    async def _read(self):
        try:
            async for data in self.ws:
                try:
                    message = json.loads(data) if isinstance(data, str) else ("binary", data)
                except ValueError:
                    message = ("unparsable", data)
                async with self.changed:
                    self.messages.append(message)
                    self.changed.notify_all()
        except websockets.ConnectionClosed:
            pass
        finally:
            async with self.changed:
                self.closed = (self.ws.close_code, self.ws.close_reason)
                self.changed.notify_all()

    async def say(self, text, ident=None, nickname=None):
        await self.ws.send(payload(ident or self.ident, nickname or self.nickname, text))

    async def wait_until(self, predicate, what, timeout=WAIT):
        """Waits until `predicate(messages)`; fails naming `what` and the last messages."""
        try:
            async with self.changed:
                await asyncio.wait_for(self.changed.wait_for(lambda: predicate(self.messages) or self.closed is not None), timeout)
        except asyncio.TimeoutError:
            pass
        if not predicate(self.messages):
            raise AssertionError(f"{self.nickname}: {what} not within {timeout} s (closed {self.closed}); "
                                 f"{len(self.messages)} messages, the last: {short(self.messages[-3:], 400)}")

    async def wait_for_text(self, text, sender=None, timeout=WAIT):
        await self.wait_until(lambda messages: any(isinstance(m, dict) and m.get("text") == text and
                                                   (sender is None or m.get("nickname") == sender) for m in messages),
                              f"{text!r}" + (f" from {sender}" if sender else ""), timeout)

    async def wait_for_notice(self, text, timeout=WAIT):
        await self.wait_until(lambda messages: any(is_notice(m) and m.get("text") == text for m in messages),
                              f"the notice {text!r}", timeout)

    def chats(self):
        """(id, nickname, text) of the messages that are not server notices."""
        return [(m.get("id"), m.get("nickname"), m.get("text")) for m in self.messages
                if isinstance(m, dict) and not is_notice(m)]

    def notices(self):
        return [m.get("text") for m in self.messages if is_notice(m)]

    def shape_problems(self):
        return [problem for m in self.messages if (problem := shape_problem(m))]

    async def close(self):
        try:
            await asyncio.wait_for(self.ws.close(), 10)
        except (asyncio.TimeoutError, OSError):
            self.ws.transport.abort()
        try:
            await asyncio.wait_for(self.reader, 5)
        except asyncio.TimeoutError:
            self.reader.cancel()


class GrpcChatter:
    """A grpcio (asyncio) Chat participant; every event it gets is kept in `events`."""

    def __init__(self, world, call, nickname, joined):
        self.world, self.call, self.nickname, self.joined = world, call, nickname, joined
        self.events = []
        self.ended = None  # the status once the call ends
        self.changed = asyncio.Condition()
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, world, room, nickname):
        pb = world.chat_pb
        call = world.chat_stub.Chat(timeout=600)
        await call.write(pb.ChatRequest(join=pb.Join(room=room, nickname=nickname)))
        first = await asyncio.wait_for(call.read(), WAIT)
        expect(first is not grpc.aio.EOF and first.WhichOneof("event") == "joined", f"{nickname}: first event {first}")
        return cls(world, call, nickname, first.joined)

    async def _read(self):
        try:
            while (event := await self.call.read()) is not grpc.aio.EOF:
                async with self.changed:
                    self.events.append(event)
                    self.changed.notify_all()
        except (grpc.RpcError, asyncio.CancelledError):
            pass
        finally:
            code = self.call.code() if self.call.done() else None
            code = await code if code is not None else "cancelled"
            async with self.changed:
                self.ended = code
                self.changed.notify_all()

    def messages(self):
        return [(event.message.nickname, event.message.text) for event in self.events if event.WhichOneof("event") == "message"]

    def ids(self):
        return [event.message.id for event in self.events if event.WhichOneof("event") == "message"]

    def presences(self):
        change = self.world.chat_pb.Presence.Change
        return [(event.presence.nickname, change.Name(event.presence.change)) for event in self.events
                if event.WhichOneof("event") == "presence"]

    def counted_presences(self):
        """(nickname, change, participants) of each presence event."""
        change = self.world.chat_pb.Presence.Change
        return [(event.presence.nickname, change.Name(event.presence.change), event.presence.participants)
                for event in self.events if event.WhichOneof("event") == "presence"]

    async def wait_until(self, predicate, what, timeout=WAIT):
        try:
            async with self.changed:
                await asyncio.wait_for(self.changed.wait_for(lambda: predicate(self) or self.ended is not None), timeout)
        except asyncio.TimeoutError:
            pass
        if not predicate(self):
            raise AssertionError(f"gRPC {self.nickname}: {what} not within {timeout} s (ended {self.ended}); "
                                 f"{len(self.events)} events, the last: {[str(e).strip() for e in self.events[-3:]]}")

    async def say(self, text):
        await self.call.write(self.world.chat_pb.ChatRequest(send=self.world.chat_pb.Send(text=text)))

    async def leave(self):
        """Half-closes: the server leaves the room and ends the call."""
        await self.call.done_writing()
        try:
            await asyncio.wait_for(self.reader, WAIT)
        except asyncio.TimeoutError:
            self.call.cancel()

    def cancel(self):
        self.call.cancel()


# ---------------------------------------------------------------------------------------------
# Raw sockets: frames as bytes


Frame = namedtuple("Frame", "fin rsv opcode masked payload")
TEXT, BINARY, CONTINUATION, CLOSE, PING, PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA


def mask_bytes(data, key):
    """`data` XOR the repeated 4-byte `key`, fast for large payloads."""
    if not data:
        return b""
    repeated = (key * (len(data) // 4 + 1))[:len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(data), "big")


def encode_frame(opcode, data, fin=True, mask=True, rsv=0, length=None):
    """One frame; `length` may claim another payload length than `data`'s."""
    length = len(data) if length is None else length
    head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
    bit = 0x80 if mask else 0
    if length < 126:
        head += bytes([bit | length])
    elif length < 65536:
        head += bytes([bit | 126]) + struct.pack(">H", length)
    else:
        head += bytes([bit | 127]) + struct.pack(">Q", length)
    if mask:
        key = os.urandom(4)
        return head + key + mask_bytes(data, key)
    return head + data


def parse_frame(data, start=0):
    """The frame at `start` in `data` and the offset after it, or (None, start) if incomplete."""
    if len(data) < start + 2:
        return None, start
    b0, b1 = data[start], data[start + 1]
    length, at = b1 & 0x7F, start + 2
    if length == 126:
        if len(data) < at + 2:
            return None, start
        length, at = struct.unpack(">H", data[at:at + 2])[0], at + 2
    elif length == 127:
        if len(data) < at + 8:
            return None, start
        length, at = struct.unpack(">Q", data[at:at + 8])[0], at + 8
    key = None
    if b1 & 0x80:
        if len(data) < at + 4:
            return None, start
        key, at = data[at:at + 4], at + 4
    if len(data) < at + length:
        return None, start
    body = data[at:at + length]
    return Frame(bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0x0F, key is not None, mask_bytes(body, key) if key else body), at + length


def parse_frames(data):
    """The complete frames at the start of `data`, and the bytes after them."""
    frames, offset = [], 0
    while True:
        frame, offset = parse_frame(data, offset)
        if frame is None:
            return frames, data[offset:]
        frames.append(frame)


def close_code(frame):
    """The status of a close frame: 1005 when it carries none (as a client reports it)."""
    return struct.unpack(">H", frame.payload[:2])[0] if len(frame.payload) >= 2 else 1005


def describe_frame(frame):
    kind = {TEXT: "text", BINARY: "binary", CONTINUATION: "continuation", CLOSE: "close", PING: "ping", PONG: "pong"}.get(frame.opcode, f"opcode {frame.opcode:#x}")
    extra = f" code {close_code(frame)} reason {frame.payload[2:]!r}" if frame.opcode == CLOSE else f" {short(frame.payload, 80)}"
    flags = ("" if frame.fin else " !fin") + (f" rsv={frame.rsv}" if frame.rsv else "") + (" MASKED" if frame.masked else "")
    return f"{kind}{flags}{extra}"


def http_request(path, port, key=None, version="13", extra=""):
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + (f"Sec-WebSocket-Key: {key}\r\n" if key else "")
            + (f"Sec-WebSocket-Version: {version}\r\n" if version else "") + extra + "\r\n").encode()


def read_head(sock, timeout=WAIT):
    """An HTTP response head (status, lowercased headers, raw head) and the bytes after it."""
    data, deadline = b"", time.monotonic() + timeout
    while b"\r\n\r\n" not in data:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            raise AssertionError(f"no complete response head within {timeout} s: {short(data)}")
        if not chunk:
            raise AssertionError(f"closed before a complete response head: {short(data)}")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode(errors="replace").split("\r\n")
    parts = lines[0].split(" ")
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    return status, headers, head, rest


class RawWS:
    """A WebSocket connection by hand: the handshake, frames as bytes, and what comes back."""

    def __init__(self, port, path="/", rcvbuf=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:  # before connecting: a small window from the start, and no autotuning
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(WAIT)
        self.sock.connect(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(http_request(path, port, key))
        status, headers, head, self.buffer = read_head(self.sock)
        accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
        expect(status == 101 and headers.get("sec-websocket-accept") == [accept],
               f"handshake for {path}: {short(head, 400)}, expected 101 with Sec-WebSocket-Accept {accept}")
        self.sent = []

    def expect_alone_notice(self):
        """Reads the first frame, which in a room of its own is the seed server's notice of
        this very connection, counting one user."""
        frame = self.next_frame(5)
        want = json.dumps({"id": "server", "nickname": "server", "text": joined_notice(1)}, ensure_ascii=False)
        expect(frame is not None and frame.opcode == TEXT and json.loads(frame.payload) == json.loads(want),
               f"the first frame of a connection alone in its room: {describe_frame(frame) if frame else None}, expected {want}")

    def send(self, data):
        """Sends bytes; False if the server had already closed (EPIPE, reset)."""
        self.sent.append(data)
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def frames_until_close(self, timeout=WAIT):
        """Reads frames until a close frame, then on to the end of the connection. Returns
        (frames, end): the frames read (the close frame last, if there was one) and how the TCP
        connection ended: "eof", "reset", or "open" (still open `timeout` seconds later)."""
        frames, deadline, closing = [], time.monotonic() + timeout, False
        while True:
            parsed, self.buffer = parse_frames(self.buffer)
            for frame in parsed:
                frames.append(frame)
                if frame.opcode == CLOSE and not closing:
                    closing, deadline = True, min(deadline, time.monotonic() + 5)  # then the end of the connection
            left = deadline - time.monotonic()
            if left <= 0:
                return frames, "open"
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return frames, "open"
            except ConnectionResetError:
                return frames, "reset"
            if not chunk:
                parsed, self.buffer = parse_frames(self.buffer)
                return frames + parsed, "eof"
            self.buffer += chunk

    def next_frame(self, timeout=WAIT):
        """The next frame, or None if the connection ends (or `timeout` passes) first."""
        deadline = time.monotonic() + timeout
        while True:
            frame, end = parse_frame(self.buffer)
            if frame is not None:
                self.buffer = self.buffer[end:]
                return frame
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, ConnectionResetError):
                return None
            if not chunk:
                return None
            self.buffer += chunk

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def expect_close(raw, code, what, timeout=WAIT, allow_data_frames=False):
    """Reads to the server's close; expects a close frame with `code` (1005: no status), no
    data frames before it unless allowed, and the TCP connection ended after it."""
    frames, end = raw.frames_until_close(timeout)
    sent = " + ".join(short(data, 120) for data in raw.sent)
    seen = "; ".join(describe_frame(frame) for frame in frames[-5:]) or "no frames"
    closes = [frame for frame in frames if frame.opcode == CLOSE]
    expect(closes, f"{what}: sent {sent}; no close frame came back ({seen}; connection {end})")
    close = closes[0]
    codes = code if isinstance(code, tuple) else (code,)
    expect(close_code(close) in codes, f"{what}: sent {sent}; close {describe_frame(close)}, expected {' or '.join(map(str, codes))}")
    expect(not close.masked, f"{what}: the server's close frame is masked")
    if code == 1005:
        expect(close.payload == b"", f"{what}: the close reply carries {close.payload!r}, expected no payload")
    data_frames = [frame for frame in frames if frame.opcode in (TEXT, BINARY, CONTINUATION)]
    expect(allow_data_frames or not data_frames, f"{what}: data frames before the close: {seen}")
    expect(frames[-1] is close, f"{what}: frames after the close: {seen}")
    expect(end in ("eof", "reset"), f"{what}: the TCP connection stayed open after the close frame")
    return close, end, frames[:-1]


# ---------------------------------------------------------------------------------------------
# The checks


class World:
    def __init__(self, port, protos, max_message):
        self.port, self.max_message = port, max_message
        self.chat_pb, self.chat_rpc = load(protos, "chat.proto")
        self.channel = None

    async def start(self):
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.port}")
        self.chat_stub = self.chat_rpc.ChatRoomStub(self.channel)

    async def ws(self, room, prefix="ws"):
        return await WSClient.open(self.port, f"/rooms/{room}" if room is not None else "/", prefix)

    async def grpc(self, room, prefix="grpc"):
        return await GrpcChatter.open(self, room, fresh(prefix))


async def close_all(*clients):
    await asyncio.gather(*(client.close() for client in clients if isinstance(client, WSClient)), return_exceptions=True)
    for client in clients:
        if isinstance(client, GrpcChatter):
            client.cancel()


async def settle(clients):
    """Each client says hello (its first message, which names it) and waits for its own echo:
    the server reads a connection's messages only once it is in the room, so after this every
    client hears everything (the end of its handshake is not enough: see `in_room_at_once`).
    Then one more message, heard by all: whatever came before it in the room's order (the
    hellos, the join notices) has arrived everywhere, so later arrivals can be counted."""
    async def one(client):
        await client.say(f"hello from {client.nickname}")
        await client.wait_for_text(f"hello from {client.nickname}", client.nickname)
    await asyncio.gather(*(one(client) for client in clients))
    mark = fresh("everyone here")
    await clients[0].say(mark)
    await asyncio.gather(*(client.wait_for_text(mark, clients[0].nickname) for client in clients))


def seed_protocol(world, path_room):
    async def run(notes):
        a, b = await world.ws(path_room, "alice"), await world.ws(path_room, "bob")
        outsider = await world.ws(fresh("elsewhere"), "outsider")
        try:
            await settle([a, b])
            await settle([outsider])
            start = {a: len(a.messages), b: len(b.messages)}
            await a.say("a message from alice")
            await b.wait_for_text("a message from alice", a.nickname)
            await a.wait_for_text("a message from alice", a.nickname)
            await b.say("a message from bob")
            await a.wait_for_text("a message from bob", b.nickname)
            await b.wait_for_text("a message from bob", b.nickname)
            wanted = [{"id": a.ident, "nickname": a.nickname, "text": "a message from alice"},
                      {"id": b.ident, "nickname": b.nickname, "text": "a message from bob"}]
            for client in (a, b):
                problems = client.shape_problems()
                expect(not problems, f"{client.nickname} got {problems[:1]}")
                got = client.messages[start[client]:]
                expect(got == wanted, f"{client.nickname} got {got}, expected {wanted}")
            notes.append(f"{a.nickname} got notices {a.notices()}; {b.nickname}: {b.notices()}")
            await asyncio.sleep(0.3)
            ours = {a.ident, b.ident}
            expect(not [chat for chat in outsider.chats() if chat[0] in ours], f"a client in another room got {outsider.chats()}")
        finally:
            await close_all(a, b, outsider)
    return run


def in_room_at_once(world, rounds=30):
    """A client whose handshake has completed is in the room: the next message said there
    reaches it (the Node.js server registers a client before it reads anything more)."""
    async def run(notes):
        missed = []
        for i in range(rounds):
            room = fresh("at-once")
            a = await world.ws(room, "first")
            b = await world.ws(room, "second")
            try:
                await a.say(f"probe {i}")
                await a.wait_for_text(f"probe {i}", a.nickname)
                await a.say(f"again {i}")
                await b.wait_for_text(f"again {i}", a.nickname)
                if not any(text == f"probe {i}" for _, _, text in b.chats()):
                    missed.append(b.messages[:])
            finally:
                await close_all(a, b)
        expect(not missed, f"in {len(missed)} of {rounds} rounds a client that had just connected (websockets' connect "
               f"had returned) missed the message (and the join notice) its room-mate sent next; it got only "
               f"{short(missed[:1], 300)}")
    return run


class TcpQueues:
    """The kernel's queues of some loopback connections to the server, sampled from
    /proc/net/tcp while a check runs: the most bytes each client's socket held unread, and the
    most the server's end of it held unsent (or unacknowledged). Tells a client that does not
    keep up from a server that does not write."""

    def __init__(self, server_port, clients):
        self.server_port = server_port
        self.ports = {client.ws.transport.get_extra_info("sockname")[1]: client.nickname for client in clients}
        self.unread = dict.fromkeys(self.ports, 0)
        self.unsent = dict.fromkeys(self.ports, 0)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.stopped.set()
        self.thread.join(2)

    def _run(self):
        while not self.stopped.is_set():
            try:
                with open("/proc/net/tcp") as table:
                    lines = table.readlines()[1:]
            except OSError:
                return
            for line in lines:
                fields = line.split()
                local, remote = int(fields[1].split(":")[1], 16), int(fields[2].split(":")[1], 16)
                tx, rx = (int(part, 16) for part in fields[4].split(":"))
                if local in self.ports and remote == self.server_port:
                    self.unread[local] = max(self.unread[local], rx)
                elif local == self.server_port and remote in self.ports:
                    self.unsent[remote] = max(self.unsent[remote], tx)
            self.stopped.wait(0.02)

    def of(self, client):
        port = next(port for port, nickname in self.ports.items() if nickname == client.nickname)
        return self.unread[port], self.unsent[port]

    def summary(self):
        return (f"at most {max(self.unread.values(), default=0)} bytes unread in a client's socket, "
                f"{max(self.unsent.values(), default=0)} unsent in the server's end")


def thousand_in_one_order(world, senders=10, each=100, window=None):
    """`senders` WebSocket clients each send `each` messages at once (or, with `window`, with
    at most `window` of its own not yet echoed back); every client and a gRPC client must get
    them all, in one order."""
    async def run(notes):
        room = fresh("order")
        watcher = await world.grpc(room, "grpc-watcher")
        clients = [await world.ws(room, f"c{k}") for k in range(senders)]
        total = senders * each
        try:
            texts = {client.nickname: [f"{client.nickname} #{i}" for i in range(each)] for client in clients}
            ident = {client.nickname: client.ident for client in clients}

            load_texts = {text for own in texts.values() for text in own}

            def load_of(messages):
                """The (id, nickname, text) of the load's messages, without the hellos."""
                return [m for m in messages if m[2] in load_texts]

            await settle(clients)
            started = time.monotonic()

            async def send_all(client):
                for i, text in enumerate(texts[client.nickname]):
                    if window and i >= window:
                        await client.wait_for_text(texts[client.nickname][i - window], client.nickname, 60)
                    await client.say(text)

            limit = 120
            with TcpQueues(world.port, clients) as queues:
                await asyncio.gather(*(send_all(client) for client in clients))
                sent = time.monotonic() - started
                try:
                    await asyncio.gather(*(client.wait_until(lambda _m, c=client: len(load_of(c.chats())) >= total,
                                                             f"all {total} messages", limit) for client in clients),
                                         watcher.wait_until(lambda w: len(load_of([(None, *m) for m in w.messages()])) >= total,
                                                            f"all {total} messages", limit))
                except AssertionError:
                    closed = [f"{c.nickname} (after {len(load_of(c.chats()))} messages; its socket held at most "
                              f"{queues.of(c)[0]} bytes unread, the server's end at most {queues.of(c)[1]} unsent)"
                              for c in clients if c.closed is not None]
                    if closed:
                        codes = sorted({f"{c.closed[0]} {c.closed[1]!r}" for c in clients if c.closed is not None})
                        raise AssertionError(
                            f"{len(closed)} of {senders} reading clients were closed with {', '.join(codes)} "
                            f"{time.monotonic() - started:.2f} s into the burst: {'; '.join(closed[:3])}"
                            + ("; ..." if len(closed) > 3 else "")
                            + f". The gRPC client: {len(watcher.messages())} events, ended {watcher.ended}") from None
                    raise
            took = time.monotonic() - started
            notes.append(f"{total} messages from {senders} WebSocket clients reached all {senders} and a gRPC client in "
                         f"{took:.2f} s ({total / took:.0f} messages/s; sending took {sent:.2f} s); {queues.summary()}")
            reference = [(nickname, text) for _, nickname, text in load_of(clients[0].chats())]
            expect(len(reference) == total, f"{clients[0].nickname} got {len(reference)} messages")
            for client in clients:
                problems = client.shape_problems()
                expect(not problems, f"{client.nickname} got {problems[:1]}")
                chats = load_of(client.chats())
                wrong_ids = [chat for chat in chats if chat[0] != ident[chat[1]]]
                expect(not wrong_ids, f"{client.nickname}: ids not the sender's: {wrong_ids[:3]}")
                sequence = [(nickname, text) for _, nickname, text in chats]
                expect(len(sequence) == total, f"{client.nickname} got {len(sequence)} messages, expected {total}")
                if sequence != reference:
                    at = next(i for i, (x, y) in enumerate(zip(sequence, reference)) if x != y)
                    raise AssertionError(f"{client.nickname}'s order differs from {clients[0].nickname}'s at {at}: "
                                         f"{sequence[at:at + 3]} vs {reference[at:at + 3]}")
            grpc_sequence = [(nickname, text) for _, nickname, text in load_of([(None, *m) for m in watcher.messages()])]
            if grpc_sequence != reference:
                at = next((i for i, (x, y) in enumerate(zip(grpc_sequence, reference)) if x != y), min(len(grpc_sequence), len(reference)))
                raise AssertionError(f"the gRPC client's order differs at {at} ({len(grpc_sequence)} messages): "
                                     f"{grpc_sequence[at:at + 3]} vs {reference[at:at + 3]}")
            for nickname, own in texts.items():
                theirs = [text for who, text in reference if who == nickname]
                expect(theirs == own, f"{nickname}'s messages are not in the order it sent them: {theirs[:5]}...")
            ids = watcher.ids()
            expect(ids == list(range(ids[0], ids[0] + len(ids))), f"gRPC message ids not consecutive: {ids[:10]}...")
            # Stored: a gRPC client joining now gets the room's last messages, read from SQLite.
            late = await world.grpc(room, "grpc-late")
            try:
                await late.wait_until(lambda late: late.messages(), "history", WAIT)
                await asyncio.sleep(0.5)
                history = late.messages()
                expect(history and history == grpc_sequence[-len(history):],
                       f"a late gRPC joiner's history ({len(history)}) is not the tail of the room: {history[:3]}")
                notes.append(f"a late gRPC joiner got the last {len(history)} messages as history")
            finally:
                late.cancel()
        finally:
            await close_all(watcher, *clients)
    return run


def grpc_and_ws_messages(world):
    async def run(notes):
        room = fresh("mixed")
        g = await world.grpc(room, "grpc-g")
        w1, w2 = await world.ws(room, "w1"), await world.ws(room, "w2")
        try:
            await settle([w1, w2])
            await w1.say("hi from ws")
            await g.wait_until(lambda g: (w1.nickname, "hi from ws") in g.messages(), "the WebSocket message")
            await w2.wait_for_text("hi from ws", w1.nickname)
            await g.say("hi from grpc")
            for client in (w1, w2):
                await client.wait_for_text("hi from grpc", g.nickname)
                got = [m for m in client.messages if isinstance(m, dict) and m.get("text") == "hi from grpc"]
                expect(got == [{"id": g.nickname, "nickname": g.nickname, "text": "hi from grpc"}],
                       f"{client.nickname} got {got}, expected id = nickname = {g.nickname!r}")
            await g.wait_until(lambda g: (g.nickname, "hi from grpc") in g.messages(), "its own message")
            expect(g.messages()[-2:] == [(w1.nickname, "hi from ws"), (g.nickname, "hi from grpc")], f"gRPC got {g.messages()}")
            expect(w1.chats()[-2:] == w2.chats()[-2:], f"{w1.chats()} vs {w2.chats()}")
        finally:
            await close_all(g, w1, w2)
    return run


def presence_both_ways(world):
    async def run(notes):
        room = fresh("presence")
        g = await world.grpc(room, "grpc-g")
        # As the seed's server does: every client hears each connection at once, with the count
        # (the gRPC participant counts too), the newcomer included; before any message.
        w1 = await world.ws(room, "w1")
        await w1.wait_for_notice(joined_notice(2))
        await g.wait_until(lambda g: ("", "CHANGE_JOINED", 2) in g.counted_presences(), "an anonymous Presence JOINED, 2 here")
        w2 = await world.ws(room, "w2")
        for client in (w1, w2):
            await client.wait_for_notice(joined_notice(3))
        await g.wait_until(lambda g: ("", "CHANGE_JOINED", 3) in g.counted_presences(), "an anonymous Presence JOINED, 3 here")
        try:
            await settle([w2])
            await w1.say("naming myself")
            await w1.wait_for_text("naming myself", w1.nickname)
            expect(f"{w1.nickname} joined" not in w2.notices(), f"{w2.nickname} heard a named join the seed never sends")
            g2 = await world.grpc(room, "grpc-h")
            notes.append(f"the second gRPC client's Joined.participants: {list(g2.joined.participants)}")
            for client in (w1, w2):
                await client.wait_for_notice(f"{g2.nickname} joined")
            await g.wait_until(lambda g: (g2.nickname, "CHANGE_JOINED") in g.presences(), f"Presence JOINED {g2.nickname}")
            await g2.leave()
            for client in (w1, w2):
                await client.wait_for_notice(f"{g2.nickname} left")
            await g.wait_until(lambda g: (g2.nickname, "CHANGE_LEFT") in g.presences(), f"Presence LEFT {g2.nickname}")
            await w1.close()
            await g.wait_until(lambda g: ("", "CHANGE_LEFT", 2) in g.counted_presences(), "an anonymous Presence LEFT, 2 here")
            await w2.wait_for_notice(left_notice(2))
            problems = w2.shape_problems()
            expect(not problems, f"{w2.nickname} got {problems[:1]}")
            notes.append(f"{w2.nickname} got notices {w2.notices()}; gRPC presences {g.presences()}")
        finally:
            await close_all(g, w1, w2)
    return run


def pings(world):
    async def run(notes):
        client = await world.ws(fresh("ping"))
        try:
            latencies = []
            for data in (b"", b"pitlane", os.urandom(125)):
                waiter = await client.ws.ping(data)
                latencies.append(await asyncio.wait_for(waiter, 5))
            notes.append("pong latencies " + ", ".join(f"{latency * 1000:.1f} ms" for latency in latencies))
        finally:
            await client.close()
    return run


def raw_ping(world):
    def run_sync():
        raw = RawWS(world.port, f"/rooms/{fresh('ping')}")
        try:
            raw.expect_alone_notice()
            data = os.urandom(125)
            raw.send(encode_frame(PING, data))
            frame = raw.next_frame(5)
            expect(frame is not None, "no answer to a ping of 125 bytes")
            expect(frame.opcode == PONG and frame.payload == data and not frame.masked and frame.fin,
                   f"answer {describe_frame(frame)}, expected an unmasked pong with the ping's 125 bytes")
        finally:
            raw.close()

    async def run(notes):
        await asyncio.to_thread(run_sync)
    return run


def bad_message(world, data, mentions):
    """`data` (a text frame's content) from a client that has named itself: a server notice
    naming the problem (one word of each group in `mentions`), to it only; then a good
    message still works."""
    async def run(notes):
        room = fresh("bad")
        a, b = await world.ws(room, "sender"), await world.ws(room, "other")
        try:
            await settle([a, b])
            before_a, before_b = len(a.messages), len(b.messages)
            await a.ws.send(data)
            await a.wait_until(lambda messages: len(messages) > before_a, "a notice")
            notice = a.messages[before_a]
            expect(is_notice(notice) and shape_problem(notice) is None,
                   f"sent {data!r}; got {short(notice)}, expected a notice from \"server\"")
            for words in mentions:  # each group: one of its words
                expect(any(word in notice["text"].lower() for word in words),
                       f"sent {data!r}; the notice {notice['text']!r} does not name the problem (it has none of {words})")
            notes.append(f"{data!r} -> {notice['text']!r}")
            await a.say("after")
            await b.wait_for_text("after", a.nickname)
            await a.wait_for_text("after", a.nickname)
            got_b = b.messages[before_b:]
            expect(got_b == [{"id": a.ident, "nickname": a.nickname, "text": "after"}],
                   f"the other client got {short(got_b, 300)} (expected only the later good message)")
            got_a = a.messages[before_a:]
            expect(len(got_a) == 2 and got_a[1] == {"id": a.ident, "nickname": a.nickname, "text": "after"},
                   f"the sender got {short(got_a, 300)} (expected the notice, then its good message)")
            expect(a.closed is None, f"the sender was closed: {a.closed}")
        finally:
            await close_all(a, b)
    return run


def close_case(world, frames, code, what, name_first=False):
    """Sends `frames` (bytes) on a raw connection; expects the close `code` and the end."""
    def run_sync():
        raw = RawWS(world.port, f"/rooms/{fresh('close')}")
        try:
            raw.expect_alone_notice()
            if name_first:
                raw.send(encode_frame(TEXT, payload("raw-id", fresh("raw"), "hello").encode()))
                echo = raw.next_frame(5)
                expect(echo is not None and echo.opcode == TEXT, f"no echo of a good message: {echo}")
            sender = threading.Thread(target=lambda: [raw.send(data) for data in frames], daemon=True)
            sender.start()  # reads go on while a large frame is written: the server may answer early
            close, end, before = expect_close(raw, code, what, allow_data_frames=True)
            sender.join(5)
            return (f"frames before the close: {'; '.join(describe_frame(f) for f in before)}; " if before else "") \
                + f"close {describe_frame(close)}, then {end}"
        finally:
            raw.close()

    async def run(notes):
        notes.append(await asyncio.to_thread(run_sync))
    return run


def close_checks(world):
    limit = world.max_message
    json_text = payload("raw-id", "raw", "x").encode()
    big = payload("raw-id", "raw", "x" * (limit + 1 - len(payload("raw-id", "raw", "")))).encode()
    assert len(big) == limit + 1
    half = len(big) // 2
    return [
        ("invalid UTF-8 in a text frame: close 1007",
         close_case(world, [encode_frame(TEXT, b'{"id":"raw","nickname":"raw","text":"\xc3\x28 \xff"}')], 1007, "invalid UTF-8")),
        ("invalid UTF-8 split across two fragments of a text message: close 1007",
         close_case(world, [encode_frame(TEXT, b'{"id":"raw","nickname":"raw","text":"\xe2\x82', fin=False),
                            encode_frame(CONTINUATION, b'("}')], 1007, "invalid UTF-8 across fragments")),
        ("an unmasked client frame: close 1002",
         close_case(world, [encode_frame(TEXT, json_text, mask=False)], 1002, "an unmasked frame")),
        ("RSV1 set (no extension negotiated): close 1002",
         close_case(world, [encode_frame(TEXT, json_text, rsv=4)], 1002, "RSV1")),
        (f"a text frame of {limit + 1} bytes (limit {limit}): close 1009",
         close_case(world, [encode_frame(TEXT, big)], 1009, "a frame over the limit")),
        (f"a message of {limit + 1} bytes in two fragments: close 1009",
         close_case(world, [encode_frame(TEXT, big[:half], fin=False), encode_frame(CONTINUATION, big[half:])], 1009,
                    "a fragmented message over the limit")),
        ("a ping of 126 bytes (control frames carry at most 125): close 1002",
         close_case(world, [encode_frame(PING, b"p" * 126)], 1002, "a ping of 126 bytes")),
        ("a fragmented ping (FIN clear on a control frame): close 1002",
         close_case(world, [encode_frame(PING, b"ping", fin=False)], 1002, "a fragmented ping")),
        ("a continuation frame with no message to continue: close 1002",
         close_case(world, [encode_frame(CONTINUATION, json_text)], 1002, "a lone continuation frame")),
        ("a new text frame inside an unfinished message: close 1002",
         close_case(world, [encode_frame(TEXT, json_text[:5], fin=False), encode_frame(TEXT, json_text[5:])], 1002,
                    "a text frame where a continuation belongs")),
        ("a reserved opcode (0x3): close 1002",
         close_case(world, [encode_frame(0x3, b"?")], 1002, "opcode 3")),
        ("a close frame with a 1-byte payload: close 1002",
         close_case(world, [encode_frame(CLOSE, b"\x03")], 1002, "a 1-byte close payload")),
        ("a close frame carrying 1005 (which must never be sent): close 1002",
         close_case(world, [encode_frame(CLOSE, struct.pack(">H", 1005))], 1002, "close 1005 on the wire")),
        ("a close frame whose reason is invalid UTF-8: close 1007 (or 1002)",
         close_case(world, [encode_frame(CLOSE, struct.pack(">H", 1000) + b"\xff\xfe")], (1007, 1002), "a close reason of invalid UTF-8")),
        ("a close frame without a status: the reply has none (1005)",
         close_case(world, [encode_frame(CLOSE, b"")], 1005, "a close frame without a status")),
        ("a close frame with 1000: echoed as 1000",
         close_case(world, [encode_frame(CLOSE, struct.pack(">H", 1000) + b"bye")], 1000, "close 1000", name_first=True)),
    ]


def at_the_limit(world):
    """A message of exactly the limit is not a protocol error (the server may refuse its text
    with a notice): the connection stays open and answers a ping."""
    def run_sync():
        limit = world.max_message
        data = payload("raw-id", "raw", "y" * (limit - len(payload("raw-id", "raw", "")))).encode()
        assert len(data) == limit
        raw = RawWS(world.port, f"/rooms/{fresh('limit')}")
        try:
            raw.expect_alone_notice()
            raw.send(encode_frame(TEXT, data))
            raw.send(encode_frame(PING, b"still there?"))
            seen = []
            while (frame := raw.next_frame(WAIT)) is not None:
                seen.append(frame)
                if frame.opcode in (PONG, CLOSE):
                    break
            expect(seen and seen[-1].opcode == PONG, f"sent a {limit}-byte text frame and a ping; got "
                   + ("; ".join(describe_frame(f) for f in seen) or "nothing"))
            if not any(f.opcode == TEXT for f in seen):
                later = raw.next_frame(3)
                seen += [later] if later is not None else []
            return "the answers: " + "; ".join(describe_frame(f) for f in seen)
        finally:
            raw.close()

    async def run(notes):
        notes.append(await asyncio.to_thread(run_sync))
    return run


def websockets_normal_close(world):
    async def run(notes):
        client = await world.ws(fresh("bye"))
        await client.say("hello")
        await client.wait_for_text("hello")
        await asyncio.wait_for(client.ws.close(1000, "bye"), WAIT)
        received = client.ws.protocol.close_rcvd
        expect(received is not None and received.code == 1000, f"the server answered close 1000 with {received}")
        notes.append(f"server's close: {received}")
    return run


def slow_reader(world):
    async def run(notes):
        room = fresh("slow")
        slow_nick = fresh("slow")
        observer = await world.ws(room, "observer")
        senders = [await world.ws(room, "loud"), await world.ws(room, "louder")]
        raw = await asyncio.to_thread(RawWS, world.port, f"/rooms/{room}", 4096)
        try:
            await settle([observer, *senders])
            raw.send(encode_frame(TEXT, payload("slow-id", slow_nick, "I will never read").encode()))
            await observer.wait_for_text("I will never read", slow_nick)
            # The room is the observer, two senders and the slow client: its leaving leaves three.
            slow_left = left_notice(3)
            text = "z" * 3000
            round_size, rounds, sent, tripped = 50, 80, 0, False
            started = time.monotonic()
            for round_number in range(rounds):
                for sender in senders:
                    for i in range(round_size):
                        await sender.say(f"{round_number}.{i} {text}")
                sent += round_size * len(senders)
                loud = {sender.nickname for sender in senders}
                await observer.wait_until(lambda _m, want=sent: sum(1 for c in observer.chats() if c[1] in loud) >= want,
                                          f"{sent} messages", 60)
                if slow_left in observer.notices():
                    tripped = True
                    break
                if time.monotonic() - started > 90:
                    break
            notes.append(f"{'tripped' if tripped else 'not tripped'} after {sent} messages of ~3 KB "
                         f"({sent * 3 / 1024:.1f} MB) in {time.monotonic() - started:.1f} s")
            frames, end = await asyncio.to_thread(raw.frames_until_close, 20)
            closes = [frame for frame in frames if frame.opcode == CLOSE]
            notes.append(f"the slow client then read {len(frames)} frames; "
                         + (f"close {describe_frame(closes[0])}" if closes else "no close frame") + f"; connection {end}")
            expect(end != "open" or closes, f"the slow client is still connected after {sent} messages "
                   f"(no {slow_left!r} notice; {len(frames)} frames drained, no close)")
            if closes:
                expect(close_code(closes[0]) == 1008, f"closed with {describe_frame(closes[0])}, expected 1008")
            expect(tripped, f"the slow client was closed ({end}) but the room heard no {slow_left!r}")
            for client in [observer, *senders]:
                expect(client.closed is None, f"{client.nickname}, which reads, was closed too: {client.closed}")
            await senders[0].say("still serving?")
            await observer.wait_for_text("still serving?", senders[0].nickname)
        finally:
            raw.close()
            await close_all(observer, *senders)
    return run


def handshake_cases(world):
    port = world.port

    def exchange(request):
        sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        try:
            sock.sendall(request)
            return read_head(sock)
        finally:
            sock.close()

    def case(request, want, header=None):
        def run_sync():
            status, headers, head, _ = exchange(request)
            ok = (400 <= (status or 0) < 500) if want == "4xx" else status == want
            expect(ok, f"sent {short(request, 300)}; got {short(head, 300)}, expected {want}")
            if header:
                name, value = header
                expect(value in [v.strip() for line in headers.get(name.lower(), []) for v in line.split(",")],
                       f"{status} without {name}: {value}: {short(head, 300)}")
            return head.decode(errors="replace").split("\r\n")[0]

        async def run(notes):
            notes.append(await asyncio.to_thread(run_sync))
        return run

    def good():
        def run_sync():
            raw = RawWS(port, f"/rooms/{fresh('hello')}")
            raw.close()
            raw = RawWS(port, "/")
            raw.close()

        async def run(notes):
            await asyncio.to_thread(run_sync)
        return run

    key = base64.b64encode(os.urandom(16)).decode()
    return [
        ("a good handshake (/ and /rooms/NAME): 101 with the right Sec-WebSocket-Accept", good()),
        ("no Sec-WebSocket-Key: 4xx", case(http_request("/", port, key=None), "4xx")),
        ("Sec-WebSocket-Version: 8: 426 with Sec-WebSocket-Version: 13",
         case(http_request("/", port, key=key, version="8"), 426, ("Sec-WebSocket-Version", "13"))),
        ("no Sec-WebSocket-Version: 4xx", case(http_request("/", port, key=key, version=None), "4xx")),
        ("an unknown path: 404", case(http_request("/no/such/place", port, key=key), 404)),
    ]


def still_serving(world, server):
    async def run(notes):
        room = fresh("after")
        g = await world.grpc(room, "grpc-after")
        w = await world.ws(room, "after")
        try:
            await w.say("the end")
            await g.wait_until(lambda g: (w.nickname, "the end") in g.messages(), "the last message")
            await w.wait_for_text("the end", w.nickname)
            if server is not None:
                expect(server.alive(), f"orders-server exited: {server.tail()}")
                stats = processes.proc_stats(server.pid)
                notes.append(f"orders-server: {stats}")
        finally:
            await close_all(g, w)
    return run


async def run_checks(args, server):
    world = World(args.port, args.protos, args.max_message)
    await world.start()
    report = Report()
    chosen = set(args.only.split(",")) if args.only else None

    def wanted(number):
        return chosen is None or number in chosen

    if wanted("8"):
        for name, function in handshake_cases(world):
            await report.check(f"8. handshake: {name}", function, 20)
    if wanted("1"):
        await report.check("1. seed protocol: two clients in /rooms/NAME; each message reaches both, sender included, "
                           "with exactly id, nickname, text", seed_protocol(world, fresh("seed")), 30)
        await report.check("1. seed protocol in the default room (ws://HOST:PORT/); another room hears nothing",
                           seed_protocol(world, None), 30)
        await report.check("1. a client is in its room once its handshake completes: the next message said there reaches it "
                           "(30 rounds)", in_room_at_once(world), 60)
    if wanted("3"):
        await report.check("3. a gRPC client's message reaches WebSocket clients (id = its nickname) and theirs reach it",
                           grpc_and_ws_messages(world), 30)
        await report.check("3. joins and leaves: gRPC Presence for WebSocket clients, WebSocket notices for gRPC clients",
                           presence_both_ways(world), 40)
    if wanted("4"):
        await report.check("4. pings (empty, 7 and 125 bytes) answered with pongs within 5 s", pings(world), 20)
        await report.check("4. a raw ping of 125 bytes: an unmasked pong with the same bytes", raw_ping(world), 20)
    if wanted("5"):
        for data, mentions, name in [
            ('{"id": "x", "nickname": "y", "text": ', [["json"]], "malformed JSON"),
            ("[1, 2, 3]", [["object", "{"]], "a JSON array"),
            ('{"id": "x", "nickname": "y"}', [["text"], ["no ", "missing", "without", "lacks", "required"]], 'a missing "text"'),
            ('{"id": "x", "nickname": "y", "text": 5}', [["text"], ["string", "type"]], '"text": 5 (a number)'),
        ]:
            await report.check(f"5. {name}: a notice from \"server\" naming it, to its sender only; the connection "
                               "stays open", bad_message(world, data, mentions), 30)
    if wanted("6"):
        for name, function in close_checks(world):
            await report.check(f"6. close codes: {name}", function, 30)
        await report.check(f"6. a text frame of exactly {world.max_message} bytes is no protocol error", at_the_limit(world), 30)
        await report.check("6. websockets' close(1000): the server answers 1000", websockets_normal_close(world), 20)
    if wanted("2"):
        await report.check("2. 1,000 messages from 10 WebSocket clients: every client and a gRPC client see them all, "
                           "in one order", thousand_in_one_order(world), 200)
        await report.check("2. the same, paced (each sender at most 10 messages ahead of its echo): all of them, in one order",
                           thousand_in_one_order(world, window=10), 200)
    if wanted("7"):
        await report.check("7. a client that never reads is closed with 1008 and the room goes on", slow_reader(world), 200)
    await report.check("the server still serves WebSocket and gRPC", still_serving(world, server), 30)
    await world.channel.close()
    return report.finish()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, help="a running orders-server's port")
    parser.add_argument("--bin", help="start DIR/orders-server (--port 0, a new database) instead")
    parser.add_argument("--protos", default=os.path.join(ROOT, "Protos"))
    parser.add_argument("--max-message", type=int, help="the server's message limit in bytes (default 65536; "
                        "with --bin, passed on as --ws-max-message)")
    parser.add_argument("--only", help="comma-separated check numbers (1-8)")
    parser.add_argument("--time-limit", type=int, default=900, help="seconds for the whole run")
    args = parser.parse_args()
    if (args.port is None) == (args.bin is None):
        parser.error("give --port or --bin")
    processes.install_cleanup()
    signal.signal(signal.SIGALRM, lambda *_: (print("FAIL global time limit", flush=True), processes.stop_all(), os._exit(1)))
    signal.alarm(args.time_limit)
    server = None
    if args.bin:
        database = os.path.join(temporary_directory("pitlane-ws-"), "orders.sqlite")
        limit = ["--ws-max-message", str(args.max_message)] if args.max_message else []
        server, args.port = processes.start_server([os.path.join(os.path.abspath(args.bin), "orders-server"), "--port", "0",
                                                    "--database", database, *limit], "orders-server")
        print(f"    orders-server pid {server.pid} port {args.port} database {database}", flush=True)
    args.max_message = args.max_message or 64 * 1024
    status = asyncio.run(run_checks(args, server))
    if server is not None:
        server.stop(grace=10)
    exit_now(status)  # no interpreter shutdown, which can hang a grpcio client


if __name__ == "__main__":
    main()
