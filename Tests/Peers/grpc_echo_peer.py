#!/usr/bin/env python3
"""Python grpcio (gRPC C-core) as the judge of Pitlane's HTTP/2 transport.

  client --port N --protos DIR [--tls-ca PEM [--tls-cert PEM --tls-key PEM] [--server-name-override NAME]]
      Calls Pitlane's echo server with every RPC kind, errors, metadata, deadlines and
      unknown methods; prints one line per check ("ok NAME" or "FAIL NAME: why") and a
      closing "checks: N ok, M failed"; exits non-zero on any failure. With --tls-ca over
      TLS, trusting that CA (and presenting a client certificate with --tls-cert/--tls-key).
  server --protos DIR [--tls-cert PEM --tls-key PEM [--tls-ca PEM [--require-client-cert]]]
      Serves the echo service with grpcio (responses compressed with --compress) on
      127.0.0.1 and an ephemeral port, prints
      "listening PORT", and runs until standard input closes. With --tls-cert over TLS,
      asking for client certificates from --tls-ca (requiring one with --require-client-cert).
"""
import argparse
import os
import sys
import threading

import grpc

from peer_checks import Checks, expect, load

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON = sys.executable


def load_echo(proto_dir):
    """echo_pb2 and echo_pb2_grpc, generated with grpc_tools."""
    return load(proto_dir, "echo.proto")


def read_file(path):
    with open(path, "rb") as file:
        return file.read()


def make_channel(args):
    target = f"127.0.0.1:{args.port}"
    if not args.tls_ca:
        return grpc.insecure_channel(target)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=read_file(args.tls_ca),
        private_key=read_file(args.tls_key) if args.tls_key else None,
        certificate_chain=read_file(args.tls_cert) if args.tls_cert else None)
    options = [("grpc.ssl_target_name_override", args.server_name_override)] if args.server_name_override else []
    return grpc.secure_channel(target, credentials, options=options)


def run_client(args):
    pb, rpc = load_echo(args.protos)
    channel = make_channel(args)
    stub = rpc.EchoStub(channel)
    checks = Checks()

    def unary():
        expect(stub.Get(pb.EchoRequest(text="hello"), timeout=10).text == "hello", "echo differs")

    def client_streaming():
        response = stub.Collect(iter([pb.EchoRequest(text=t) for t in ["duck", "pond", "dash"]]), timeout=10)
        expect(response.text == "duck pond dash", response.text)

    def server_streaming():
        responses = list(stub.Expand(pb.EchoRequest(text="lap", repeat=100, payload_bytes=1000), timeout=10))
        expect([r.index for r in responses] == list(range(100)), "indices out of order")
        expect(all(len(r.payload) == 1000 for r in responses), "payload size")

    def bidirectional():
        responses = list(stub.Update(iter([pb.EchoRequest(text=f"m{i}") for i in range(10)]), timeout=10))
        expect([r.text for r in responses] == [f"m{i}" for i in range(10)], "echo differs")

    def ping_pong():
        requests = []
        condition = threading.Condition()
        def generate():
            for index in range(5):
                with condition:
                    condition.wait_for(lambda: len(requests) == index)
                yield pb.EchoRequest(text=f"ping{index}")
        answers = []
        for response in stub.Update(generate(), timeout=10):
            answers.append(response.text)
            with condition:
                requests.append(response.text)
                condition.notify_all()
        expect(answers == [f"ping{i}" for i in range(5)], answers)

    def large_messages():
        response = list(stub.Expand(pb.EchoRequest(repeat=1, payload_bytes=3 * 1024 * 1024), timeout=10))
        expect(len(response[0].payload) == 3 * 1024 * 1024, "payload size")

    def status_and_message():
        try:
            stub.Get(pb.EchoRequest(fail_with_code=5, fail_with_message="no race \u00fc 100% \t"), timeout=10)
            raise AssertionError("no error")
        except grpc.RpcError as error:
            expect(error.code() == grpc.StatusCode.NOT_FOUND, str(error.code()))
            expect(error.details() == "no race \u00fc 100% \t", repr(error.details()))

    def metadata():
        sent = [("x-race", "duck pond"), ("x-trace-bin", b"\x00\x01\xfe\xff")]
        response, call = stub.Get.with_call(pb.EchoRequest(text="m"), metadata=sent, timeout=10)
        initial = dict(call.initial_metadata())
        trailing = dict(call.trailing_metadata())
        for key, value in sent:
            expect(initial.get(key) == value, f"initial {key}: {initial.get(key)!r}")
            expect(trailing.get(key) == value, f"trailing {key}: {trailing.get(key)!r}")

    def deadline():
        try:
            stub.Get(pb.EchoRequest(wait_for_cancellation=True), timeout=0.3)
            raise AssertionError("no error")
        except grpc.RpcError as error:
            expect(error.code() == grpc.StatusCode.DEADLINE_EXCEEDED, str(error.code()))

    def unimplemented():
        method = channel.unary_unary("/pitlane.test.echo.Echo/Missing")
        try:
            method(b"", timeout=10)
            raise AssertionError("no error")
        except grpc.RpcError as error:
            expect(error.code() == grpc.StatusCode.UNIMPLEMENTED, str(error.code()))

    def client_compressed():
        for algorithm in (grpc.Compression.Gzip, grpc.Compression.Deflate):
            response = stub.Get(pb.EchoRequest(text="z" * 10_000), timeout=10, compression=algorithm)
            expect(response.text == "z" * 10_000, f"echo differs with {algorithm}")
            texts = [r.text for r in stub.Update(iter([pb.EchoRequest(text="y" * 5000)] * 3), timeout=10,
                                                 compression=algorithm)]
            expect(texts == ["y" * 5000] * 3, f"stream echo differs with {algorithm}")

    def cancel_after_first_response():
        call = stub.Expand(pb.EchoRequest(repeat=1_000_000, payload_bytes=100), timeout=10)
        next(call)
        call.cancel()
        expect(call.code() == grpc.StatusCode.CANCELLED, str(call.code()))

    for name, function in [
        ("unary", unary), ("client_streaming", client_streaming), ("server_streaming", server_streaming),
        ("bidirectional", bidirectional), ("ping_pong", ping_pong), ("large_messages", large_messages),
        ("status_and_message", status_and_message), ("metadata", metadata), ("deadline", deadline),
        ("unimplemented", unimplemented), ("client_compressed", client_compressed),
        ("cancel_after_first_response", cancel_after_first_response),
        ("unary_after_cancel", unary),
    ]:
        checks.check(name, function)
    checks.report_and_exit()


def run_server(args):
    from concurrent import futures
    pb, rpc = load_echo(args.protos)

    class Echo(rpc.EchoServicer):
        def _obey(self, request, context):
            if request.fail_with_code:
                context.abort(grpc.StatusCode(
                    next(code for code in grpc.StatusCode if code.value[0] == request.fail_with_code)),
                    request.fail_with_message)
            if request.wait_for_cancellation:
                done = threading.Event()
                context.add_callback(done.set)
                done.wait()
                context.abort(grpc.StatusCode.CANCELLED, "cancelled")

        def _echo_metadata(self, context):
            metadata = [(k, v) for k, v in context.invocation_metadata() if k.startswith("x-")]
            context.send_initial_metadata(metadata)
            context.set_trailing_metadata(metadata)

        def Get(self, request, context):
            self._obey(request, context)
            self._echo_metadata(context)
            return pb.EchoResponse(text=request.text)

        def Collect(self, requests, context):
            texts = []
            for request in requests:
                self._obey(request, context)
                texts.append(request.text)
            return pb.EchoResponse(text=" ".join(texts))

        def Expand(self, request, context):
            self._obey(request, context)
            payload = b"\xa5" * request.payload_bytes
            for index in range(request.repeat):
                yield pb.EchoResponse(text=request.text, index=index, payload=payload)

        def Update(self, requests, context):
            for index, request in enumerate(requests):
                self._obey(request, context)
                yield pb.EchoResponse(text=request.text, index=index)

    compression = {"gzip": grpc.Compression.Gzip, "deflate": grpc.Compression.Deflate}.get(args.compress)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), compression=compression)
    rpc.add_EchoServicer_to_server(Echo(), server)
    if args.tls_cert:
        credentials = grpc.ssl_server_credentials(
            [(read_file(args.tls_key), read_file(args.tls_cert))],
            root_certificates=read_file(args.tls_ca) if args.tls_ca else None,
            require_client_auth=args.require_client_cert)
        port = server.add_secure_port("127.0.0.1:0", credentials)
    else:
        port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening {port}", flush=True)
    sys.stdin.read()
    server.stop(grace=1).wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    client = commands.add_parser("client")
    client.add_argument("--port", type=int, required=True)
    client.add_argument("--protos", required=True)
    client.add_argument("--tls-ca", help="use TLS, trusting the CA certificates in this PEM file")
    client.add_argument("--tls-cert", help="client certificate chain (PEM) for mutual TLS")
    client.add_argument("--tls-key", help="client private key (PEM) for mutual TLS")
    client.add_argument("--server-name-override", help="the name expected in the server's certificate")
    server = commands.add_parser("server")
    server.add_argument("--protos", required=True)
    server.add_argument("--compress", choices=["gzip", "deflate"], help="compress every response")
    server.add_argument("--tls-cert", help="use TLS with this certificate chain (PEM)")
    server.add_argument("--tls-key", help="the certificate's private key (PEM)")
    server.add_argument("--tls-ca", help="CA certificates (PEM) client certificates must chain to")
    server.add_argument("--require-client-cert", action="store_true", help="mutual TLS: require a client certificate")
    args = parser.parse_args()
    run_client(args) if args.command == "client" else run_server(args)


if __name__ == "__main__":
    main()
