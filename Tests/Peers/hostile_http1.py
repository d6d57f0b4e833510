"""HTTP/1.1 clients that break the rules, with raw sockets: each gets its status and a closed
connection (or, where the request is legal, a correct answer), and the server goes on serving.

  hostile_http1.py --port P
The server under test serves pitlane.test.echo.Echo (Tests/TestSupport/echo.proto) with a head
timeout of about a second and a header limit of 16 KiB.
"""
import argparse
import json
import socket
import threading
import time

from peer_checks import Checks, expect, exit_now


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_all(sock, limit=10):
    """Everything until the server closes (or `limit` seconds pass: a failure)."""
    data, deadline = b"", time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            break
        if not chunk:
            return data, True
        data += chunk
    return data, False


def send_ignoring_reset(sock, data):
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def status_of(response):
    line = response.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def echo_request(text="hi", extra="", version="HTTP/1.1", host=True):
    body = json.dumps({"text": text}).encode()
    head = f"POST /pitlane.test.echo.Echo/Get {version}\r\n" + ("host: test\r\n" if host else "") + \
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    checks = Checks()

    def rejected(request, status, send_slowly=False):
        def run():
            sock = connect(port)
            if send_slowly:
                threading.Thread(target=send_ignoring_reset, args=(sock, request), daemon=True).start()
            else:
                send_ignoring_reset(sock, request)
            response, closed = read_all(sock)
            expect(status_of(response) == status, f"status {status_of(response)}, expected {status}: {response[:200]!r}")
            expect(closed, "the connection stayed open")
            sock.close()
        return run

    def served_then(request, closes):
        sock = connect(port)
        sock.sendall(request)
        if closes:
            response, closed = read_all(sock)
            expect(closed, "the connection stayed open")
        else:
            sock.settimeout(5)
            response = b""
            while b"}" not in response:
                chunk = sock.recv(65536)
                expect(chunk, "closed early")
                response += chunk
        sock.close()
        return response

    body = b"x" * 100
    checks.check("headers over the limit: 431", rejected(
        b"POST /pitlane.test.echo.Echo/Get HTTP/1.1\r\nhost: t\r\nx-big: " + b"a" * 20000 + b"\r\n\r\n", 431))
    checks.check("a 10 MB request line: 414", rejected(b"GET /" + b"a" * 10_000_000 + b" HTTP/1.1\r\n\r\n", 414, send_slowly=True))
    checks.check("a body over the limit (content-length): 413", rejected(
        b"POST /pitlane.test.echo.Echo/Get HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\ncontent-length: 100000000\r\n\r\n" + body, 413))
    checks.check("a chunked body over the limit: 413", rejected(
        b"POST /pitlane.test.echo.Echo/Get HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        + (b"10000\r\n" + b"x" * 0x10000 + b"\r\n") * 80, 413, send_slowly=True))
    checks.check("broken chunked encoding: 400", rejected(
        b"POST /pitlane.test.echo.Echo/Get HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nxx\r\n", 400))
    checks.check("content-length with transfer-encoding (smuggling): 400", rejected(
        b"POST /pitlane.test.echo.Echo/Get HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\ncontent-length: 4\r\n"
        b"transfer-encoding: chunked\r\n\r\n0\r\n\r\n", 400))
    checks.check("two content-lengths: 400", rejected(
        b"POST /pitlane.test.echo.Echo/Get HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\ncontent-length: 2\r\n"
        b"content-length: 3\r\n\r\n{}", 400))
    checks.check("HTTP/1.1 without host: 400", rejected(echo_request(host=False), 400))
    checks.check("garbage instead of a request line: 400", rejected(b"\x16\x03\x01\x02\x00 hello\r\n\r\n", 400))

    def slow_head():
        sock = connect(port)
        start = time.monotonic()
        for byte in b"POST /pitlane.test.echo.Echo/Get HTTP/1.1\r\nhost: t\r\n":
            try:
                sock.send(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.2)
            if time.monotonic() - start > 8:
                break
        response, closed = read_all(sock)
        expect(status_of(response) == 408 and closed, f"{response[:100]!r} closed={closed}")

    def pipelined():
        sock = connect(port)
        sock.sendall(echo_request("one") + echo_request("two") + echo_request("three"))
        sock.settimeout(5)
        response = b""
        while response.count(b"HTTP/1.1 200") < 3 or not response.endswith(b"}"):
            chunk = sock.recv(65536)
            expect(chunk, f"closed after {response!r}")
            response += chunk
        order = [word for word in (b"one", b"two", b"three") if word in response]
        expect(order == [b"one", b"two", b"three"] and response.index(b"one") < response.index(b"two") < response.index(b"three"),
               f"{response!r}")
        sock.close()

    def http10():
        response = served_then(echo_request("old", version="HTTP/1.0", host=False), closes=True)
        expect(status_of(response) == 200 and b"old" in response, f"{response!r}")

    def upgrade_declined():
        response = served_then(echo_request("plain", extra="connection: upgrade, http2-settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAAQAAP__\r\n"),
                               closes=False)
        expect(status_of(response) == 200 and b"plain" in response, f"{response!r}")

    def expect_continue():
        sock = connect(port)
        request = echo_request("later", extra="expect: 100-continue\r\n")
        head, body = request.split(b"\r\n\r\n", 1)
        sock.sendall(head + b"\r\n\r\n")
        sock.settimeout(5)
        interim = sock.recv(65536)
        expect(interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), f"{interim!r}")
        sock.sendall(body)
        response = interim
        while b"later" not in response:
            response += sock.recv(65536)
        sock.close()

    def still_serving():
        response = served_then(echo_request("after all that"), closes=False)
        expect(status_of(response) == 200 and b"after all that" in response, f"{response!r}")

    checks.check("one header byte every 0.2 s: 408 at the head timeout", slow_head)
    checks.check("three pipelined requests: three responses, in order, on one connection", pipelined)
    checks.check("HTTP/1.0 without host: served, then closed", http10)
    checks.check("upgrade: h2c is declined: the request is served as HTTP/1.1", upgrade_declined)
    checks.check("expect: 100-continue gets 100, then the answer", expect_continue)
    checks.check("a well-behaved request afterwards is served", still_serving)
    checks.report_and_exit()


if __name__ == "__main__":
    main()
