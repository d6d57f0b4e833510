"""Browsers' and web services' protocols against a Pitlane server, judged by clients no one
here wrote: the official Connect runtime for Python (`connectrpc`, stubs generated from the
project's protos by its plugin `protoc-gen-connectrpc`), which speaks Connect, gRPC-Web and
gRPC over HTTP/1.1 and HTTP/2; `httpx` for hand-made gRPC-Web text bodies and CORS
preflights; and `curl` with JSON.

  web_peer.py --port P --protos DIR --service swiftkart|orders
"""
import argparse
import base64
import importlib
import json
import os
import struct
import subprocess
import sys
import threading
import uuid

import httpx
import pyqwest
from connectrpc.errors import ConnectError
from connectrpc.code import Code
from connectrpc.protocol import ProtocolType
from connectrpc.compat import google_protobuf_json_codec

from peer_checks import Checks, expect, temporary_directory


_stub_package = None


def generate_connect_stubs(proto_dir, proto):
    """Messages (protoc's Python) and Connect clients (protoc-gen-connectrpc), generated into
    one package in a temporary directory: the Connect stubs import their messages relatively."""
    global _stub_package
    if _stub_package is None:
        root = temporary_directory("pitlane-connect-stubs-")
        _stub_package = os.path.join(root, "connectstubs")
        os.mkdir(_stub_package)
        open(os.path.join(_stub_package, "__init__.py"), "w").close()
        sys.path.insert(0, root)
    plugin = os.path.join(os.path.dirname(sys.executable), "protoc-gen-connectrpc")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"--python_out={_stub_package}", f"--plugin=protoc-gen-connectrpc={plugin}",
                    f"--connectrpc_out={_stub_package}", "--connectrpc_opt=protobuf=google", "-I", proto_dir, proto], check=True)
    module = proto.removesuffix(".proto")
    return importlib.import_module(f"connectstubs.{module}_pb2"), importlib.import_module(f"connectstubs.{module}_connect")


def http_clients():
    """One HTTP/1.1 client and one HTTP/2 (prior knowledge, plaintext) client."""
    return {
        "HTTP/1.1": pyqwest.SyncClient(pyqwest.SyncHTTPTransport(http_version=pyqwest.HTTPVersion.HTTP1)),
        "HTTP/2": pyqwest.SyncClient(pyqwest.SyncHTTPTransport(http_version=pyqwest.HTTPVersion.HTTP2)),
    }


def grpc_web_frame(message, flag=0):
    return struct.pack(">BI", flag, len(message)) + message


def split_grpc_web(body):
    """A gRPC-Web response body as (flag, payload) frames."""
    frames, offset = [], 0
    while offset < len(body):
        flag, length = struct.unpack(">BI", body[offset:offset + 5])
        frames.append((flag, body[offset + 5:offset + 5 + length]))
        offset += 5 + length
    expect(offset == len(body), "the body ends inside a frame")
    return frames


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--protos", required=True)
    parser.add_argument("--service", choices=["swiftkart", "orders"], required=True)
    parser.add_argument("--origin", default="https://app.example")
    args = parser.parse_args()
    address = f"http://127.0.0.1:{args.port}"
    clients = http_clients()
    checks = Checks()
    if args.service == "swiftkart":
        swiftkart_checks(checks, address, clients, args)
    else:
        orders_checks(checks, address, clients, args)
    checks.report_and_exit()


def swiftkart_checks(checks, address, clients, args):
    pb, connect = generate_connect_stubs(args.protos, "swiftkart.proto")

    def client(version, protocol=ProtocolType.CONNECT, json_codec=False):
        extra = {"codec": google_protobuf_json_codec()} if json_codec else {}
        return connect.SwiftKartServiceClientSync(address, protocol=protocol, http_client=clients[version], timeout_ms=10_000, **extra)

    def list_races(version, protocol, json_codec=False, use_get=False):
        def run():
            kart = client(version, protocol, json_codec)
            races = kart.list_races(pb.ListRacesRequest(limit=3), use_get=use_get).races if use_get else \
                kart.list_races(pb.ListRacesRequest(limit=3)).races
            expect(len(races) == 3 and all(race.name for race in races), f"{len(races)} races")
        return run

    for version in ["HTTP/1.1", "HTTP/2"]:
        checks.check(f"Connect unary, proto, {version}", list_races(version, ProtocolType.CONNECT))
        checks.check(f"Connect unary, JSON, {version}", list_races(version, ProtocolType.CONNECT, json_codec=True))
        checks.check(f"Connect unary GET, proto, {version}", list_races(version, ProtocolType.CONNECT, use_get=True))
        checks.check(f"Connect unary GET, JSON, {version}", list_races(version, ProtocolType.CONNECT, json_codec=True, use_get=True))
        checks.check(f"gRPC-Web unary, {version}", list_races(version, ProtocolType.GRPC_WEB))
    checks.check("gRPC unary through the Connect runtime, HTTP/2", list_races("HTTP/2", ProtocolType.GRPC))

    def follow(version, protocol):
        def run():
            kart = client(version, protocol)
            request = pb.FollowRaceRequest(race_name="Duck Pond Dash", event_types=[pb.RACE_EVENT_TYPE_STANDINGS])
            done = threading.Event()

            def requests():
                yield request
                done.wait(120)  # the request side stays open: a follow ends when its client leaves

            standings = 0
            try:
                for response in kart.follow_race(requests()):
                    expect(response.WhichOneof("event") == "standings", f"{response}")
                    standings += 1
            finally:
                done.set()
            expect(standings >= 2, f"{standings} standings")
        return run

    checks.check("Connect bidirectional stream, HTTP/2: follow the Duck Pond Dash to the finish", follow("HTTP/2", ProtocolType.CONNECT))

    def follow_unknown(protocol):
        def run():
            try:
                for _ in client("HTTP/2", protocol).follow_race(iter([pb.FollowRaceRequest(race_name="Atlantis")])):
                    pass
            except ConnectError as error:
                expect(error.code == Code.NOT_FOUND, f"{error.code} {error}")
                return
            raise AssertionError("no error")
        return run

    checks.check("Connect stream error: NOT_FOUND in the end-of-stream message", follow_unknown(ProtocolType.CONNECT))
    checks.check("gRPC error through the Connect runtime: NOT_FOUND", follow_unknown(ProtocolType.GRPC))

    path = f"{address}/SwiftKartService/ListRaces"
    request = pb.ListRacesRequest(limit=2).SerializeToString()

    def grpc_web_binary():
        with httpx.Client() as http:
            response = http.post(path, content=grpc_web_frame(request), headers={"content-type": "application/grpc-web+proto"})
        expect(response.status_code == 200, f"HTTP {response.status_code}")
        frames = split_grpc_web(response.content)
        expect([flag for flag, _ in frames] == [0, 0x80], f"flags {[flag for flag, _ in frames]}")
        expect(len(pb.ListRacesResponse.FromString(frames[0][1]).races) == 2, "two races")
        trailers = dict(line.split(": ", 1) for line in frames[1][1].decode().strip().split("\r\n"))
        expect(trailers.get("grpc-status") == "0", f"{trailers}")

    def grpc_web_text_in_chunks():
        # The request as two base64 pieces, each padded, sent in separate body chunks.
        frame = grpc_web_frame(request)
        pieces = [base64.b64encode(frame[:4]), base64.b64encode(frame[4:])]
        with httpx.Client() as http:
            response = http.post(path, content=iter(pieces), headers={"content-type": "application/grpc-web-text"})
        expect(response.status_code == 200, f"HTTP {response.status_code}")
        expect(response.headers["content-type"].startswith("application/grpc-web-text"), response.headers["content-type"])
        frames = split_grpc_web(decode_text(response.content))
        expect(len(pb.ListRacesResponse.FromString(frames[0][1]).races) == 2 and frames[-1][0] == 0x80, "message, then trailers")

    def cors_preflight():
        with httpx.Client() as http:
            allowed = http.options(path, headers={"origin": args.origin, "access-control-request-method": "POST",
                                                  "access-control-request-headers": "content-type,x-grpc-web,authorization"})
            refused = http.options(path, headers={"origin": "https://evil.example", "access-control-request-method": "POST"})
            actual = http.post(path, content=grpc_web_frame(request),
                               headers={"content-type": "application/grpc-web+proto", "origin": args.origin})
        expect(allowed.status_code == 204, f"preflight HTTP {allowed.status_code}")
        expect(allowed.headers.get("access-control-allow-origin") == args.origin, f"{allowed.headers}")
        expect("authorization" in allowed.headers.get("access-control-allow-headers", ""), f"{allowed.headers}")
        expect("access-control-allow-origin" not in refused.headers, f"refused origin allowed: {refused.headers}")
        exposed = actual.headers.get("access-control-expose-headers", "")
        expect("grpc-status" in exposed and "grpc-message" in exposed, f"exposed: {exposed}")

    def connect_error_json():
        with httpx.Client() as http:
            response = http.post(path, content=b"{not json", headers={"content-type": "application/json"})
        body = response.json()
        expect(response.status_code == 400 and body["code"] == "invalid_argument", f"HTTP {response.status_code} {body}")

    def unknown_method():
        with httpx.Client() as http:
            response = http.post(f"{address}/SwiftKartService/Nope", content=b"{}", headers={"content-type": "application/json"})
        expect(response.json()["code"] == "unimplemented", f"HTTP {response.status_code} {response.text}")

    def curl_json(flag):
        def run():
            output = subprocess.run(["curl", "-sS", "--fail-with-body", flag, "-H", "content-type: application/json",
                                     "-d", '{"limit": 4}', path], capture_output=True, check=True, timeout=30).stdout
            races = json.loads(output)["races"]
            expect(len(races) == 4 and races[0]["name"], f"{output[:200]!r}")
        return run

    checks.check("gRPC-Web binary: the message, then the trailers frame (0x80) with grpc-status 0", grpc_web_binary)
    checks.check("gRPC-Web text: a request in base64 pieces sent as separate chunks", grpc_web_text_in_chunks)
    checks.check("CORS: preflight allowed for the configured origin only; statuses exposed", cors_preflight)
    checks.check("Connect unary: malformed JSON is 400 invalid_argument", connect_error_json)
    checks.check("Connect unary: an unknown method is unimplemented", unknown_method)
    checks.check("curl --http1.1 with JSON lists races", curl_json("--http1.1"))
    checks.check("curl --http2-prior-knowledge with JSON lists races", curl_json("--http2-prior-knowledge"))


def decode_text(body):
    """A grpc-web-text response: base64 pieces (each padded), concatenated."""
    decoded, text = b"", body.decode().replace("\r", "").replace("\n", "")
    while text:
        end = text.find("=")
        if end < 0:
            decoded += base64.b64decode(text)
            break
        while end < len(text) and text[end] == "=":
            end += 1
        decoded += base64.b64decode(text[:end])
        text = text[end:]
    return decoded


def orders_checks(checks, address, clients, args):
    pb, connect = generate_connect_stubs(args.protos, "orders.proto")
    alice = {"authorization": "Bearer alice-token"}
    order_id = f"web-{uuid.uuid4().hex[:8]}"
    state = {}

    def client(version, protocol=ProtocolType.CONNECT, json_codec=False):
        extra = {"codec": google_protobuf_json_codec()} if json_codec else {}
        return connect.OrderTrackingClientSync(address, protocol=protocol, http_client=clients[version], timeout_ms=10_000, **extra)

    def create_and_read():
        snapshot = client("HTTP/1.1", json_codec=True).create_order(
            pb.CreateOrderRequest(order_id=order_id, eta_display="20 min"), headers=alice)
        expect(snapshot.customer_id == "alice", f"{snapshot}")
        state["start"] = snapshot.latest_update_id
        client("HTTP/2").publish_update(pb.PublishUpdateRequest(
            order_id=order_id, eta_changed=pb.EtaChanged(eta_display="15 min")), headers=alice)
        again = client("HTTP/1.1").get_order(pb.GetOrderRequest(order_id=order_id), headers=alice, use_get=True)
        expect(again.eta_display == "15 min", f"{again}")

    def unauthenticated():
        try:
            client("HTTP/1.1").get_order(pb.GetOrderRequest(order_id=order_id))
        except ConnectError as error:
            expect(error.code == Code.UNAUTHENTICATED, f"{error.code} {error}")
            return
        raise AssertionError("no error")

    def not_found(protocol):
        def run():
            try:
                client("HTTP/1.1", protocol).get_order(pb.GetOrderRequest(order_id="no-such-order"), headers=alice)
            except ConnectError as error:
                expect(error.code == Code.NOT_FOUND, f"{error.code} {error}")
                return
            raise AssertionError("no error")
        return run

    def watch(version, protocol):
        def run():
            updates = []
            request = pb.WatchOrderRequest(order_id=order_id, since_update_id=state["start"])
            stream = client(version, protocol).watch_order(request, headers=alice, timeout_ms=1_500)
            try:
                for update in stream:
                    updates.append(update)
            except ConnectError as error:
                # A watch stays live until its deadline; the history came first.
                expect(error.code == Code.DEADLINE_EXCEEDED, f"{error.code} {error}")
            expect(len(updates) >= 1 and updates[0].eta_changed.eta_display == "15 min", f"{updates}")
        return run

    def rich_error(protocol):
        """A token from another epoch of the log (the epoch digits changed) is OUT_OF_RANGE, and
        the Connect runtime reads the google.rpc.ErrorInfo that says so from the error's details
        (the server's grpc-status-details-bin, in Connect's end-of-stream form)."""
        def run():
            from google.rpc import error_details_pb2
            token = state["start"]
            other_epoch = token[:2] + format(int(token[2:18], 16) ^ 1, "016x") + token[18:]
            try:
                for _ in client("HTTP/2", protocol).watch_order(
                        pb.WatchOrderRequest(order_id=order_id, since_update_id=other_epoch), headers=alice, timeout_ms=5_000):
                    pass
            except ConnectError as error:
                expect(error.code == Code.OUT_OF_RANGE, f"{error.code} {error}")
                infos = [error_details_pb2.ErrorInfo.FromString(detail.message_bytes) for detail in error.details
                         if detail.type_name == "google.rpc.ErrorInfo"]
                expect(infos and infos[0].reason == "EPOCH_CHANGED", f"details {[d.type_name for d in error.details]}: {infos}")
                return
            raise AssertionError("no error")
        return run

    chat_pb, chat_connect = generate_connect_stubs(args.protos, "chat.proto")

    def chat_round():
        room = f"web-{uuid.uuid4().hex[:6]}"
        done = threading.Event()

        def requests():
            yield chat_pb.ChatRequest(join=chat_pb.Join(room=room, nickname="web"))
            yield chat_pb.ChatRequest(send=chat_pb.Send(text="hello over Connect"))
            done.wait(30)

        chat = chat_connect.ChatRoomClientSync(address, http_client=clients["HTTP/2"], timeout_ms=10_000)
        events = chat.chat(requests())
        try:
            joined = next(events)
            expect(joined.WhichOneof("event") == "joined" and list(joined.joined.participants) == ["web"], f"{joined}")
            message = next(events)
            expect(message.message.text == "hello over Connect" and message.message.nickname == "web", f"{message}")
        finally:
            done.set()
            events.close()

    def health_json():
        with httpx.Client() as http:
            response = http.post(f"{address}/grpc.health.v1.Health/Check", json={"service": ""})
        expect(response.status_code == 200 and response.json().get("status") == "SERVING", f"HTTP {response.status_code} {response.text}")

    checks.check("Connect bidirectional stream, HTTP/2: chat: join, send, receive", chat_round)
    checks.check("health over Connect JSON, HTTP/1.1: SERVING", health_json)
    checks.check("Connect unary: create (JSON, HTTP/1.1), publish (HTTP/2), read back (GET)", create_and_read)
    checks.check("Connect unary without a token: UNAUTHENTICATED", unauthenticated)
    checks.check("Connect unary: an unknown order is NOT_FOUND", not_found(ProtocolType.CONNECT))
    checks.check("gRPC-Web unary: an unknown order is NOT_FOUND", not_found(ProtocolType.GRPC_WEB))
    checks.check("Connect server stream: another epoch's token is OUT_OF_RANGE with ErrorInfo EPOCH_CHANGED in the details",
                 rich_error(ProtocolType.CONNECT))
    for version in ["HTTP/1.1", "HTTP/2"]:
        checks.check(f"Connect server stream, {version}: WatchOrder replays the history", watch(version, ProtocolType.CONNECT))
        checks.check(f"gRPC-Web server stream, {version}: WatchOrder replays the history", watch(version, ProtocolType.GRPC_WEB))


if __name__ == "__main__":
    main()
