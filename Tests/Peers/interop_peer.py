#!/usr/bin/env python3
"""Python grpcio (gRPC C-core) as the other side of gRPC's interop tests.

  server --protos DIR [--port N | --unix_socket PATH] [--tls_cert_file PEM --tls_key_file PEM]
      Serves grpc.testing.TestService as doc/interop-test-descriptions.md describes it, on
      127.0.0.1 (port 0: an ephemeral one) or a Unix socket, over TLS with a certificate;
      prints "listening PORT" (or "listening unix:PATH") and runs until it is killed or the
      process that started it ends.
  client --protos DIR (--port N | --unix_socket PATH) [--ca_file PEM [--server_host_override NAME]]
         [--test_cases a,b,...]
      Runs the named interop cases (default: all of them) against a TestService, over TLS
      trusting the CA in --ca_file; prints one line per case ("ok NAME" or "FAIL NAME: why")
      and a closing "cases: N ok, M failed"; exits non-zero on any failure.

The stubs are generated at run time with grpc_tools from the .proto files under DIR
(grpc/testing/*.proto) into a temporary directory.

What grpcio cannot see or do, and how this peer copes:
  * It cannot read a message's compressed flag. The client checks response sizes only in the
    server_compressed_* cases. The server turns C-core's per-message decompression off and
    decompresses gzip requests itself, so it knows which arrived compressed (expect_compressed);
    it reads gzip requests only (the interop cases compress with gzip).
  * It cannot leave one message of a compressed call uncompressed. gRPC C-core sends a message
    uncompressed when compressing would make it larger, so client_compressed_streaming's
    second message (expect_compressed false) carries 45904 random bytes instead of zeros.
"""
import argparse
import glob
import gzip
import importlib
import os
import sys
import threading
import time
from concurrent import futures

import grpc

from peer_checks import exit_now, generate_stubs

PYTHON = sys.executable
ALL_CASES = [
    "empty_unary", "large_unary", "client_compressed_unary", "server_compressed_unary",
    "client_streaming", "client_compressed_streaming", "server_streaming", "server_compressed_streaming",
    "ping_pong", "empty_stream", "custom_metadata", "status_code_and_message", "special_status_message",
    "unimplemented_method", "unimplemented_service", "cancel_after_begin", "cancel_after_first_response",
    "timeout_on_sleeping_server",
]
INITIAL_KEY = "x-grpc-test-echo-initial"
TRAILING_KEY = "x-grpc-test-echo-trailing-bin"


class Stubs:
    """The generated modules for grpc/testing/{empty,messages,test}.proto."""

    def __init__(self, proto_dir):
        protos = sorted(os.path.relpath(p, proto_dir) for p in glob.glob(os.path.join(proto_dir, "grpc/testing/*.proto")))
        out = generate_stubs(proto_dir, *protos)
        # The generated modules live in the package grpc.testing (from the files' paths); grpcio
        # owns the package grpc, so its search path gains the generated folder.
        grpc.__path__.append(os.path.join(out, "grpc"))
        self.empty = importlib.import_module("grpc.testing.empty_pb2")
        self.messages = importlib.import_module("grpc.testing.messages_pb2")
        self.test = importlib.import_module("grpc.testing.test_pb2_grpc")


def status_code(number):
    return next(code for code in grpc.StatusCode if code.value[0] == number)


# MARK: Server

def run_server(args):
    stubs = Stubs(args.protos)
    messages = stubs.messages

    def echo_metadata(context):
        received = context.invocation_metadata()
        initial = [(k, v) for k, v in received if k == INITIAL_KEY]
        trailing = [(k, v) for k, v in received if k == TRAILING_KEY]
        if initial:
            context.send_initial_metadata(initial)
        context.set_trailing_metadata(trailing)

    def check_compression(received, context):
        """CompressedRequest; False when the RPC was failed."""
        request, compressed = received
        if request.HasField("expect_compressed") and request.expect_compressed.value != compressed:
            context.set_code(grpc.StatusCode.INVALID_ARGUMENT)
            context.set_details(f"expect_compressed {request.expect_compressed.value}, but the request was "
                                f"{'compressed' if compressed else 'uncompressed'}")
            return False
        return True

    def echo_status(request, context):
        """Echo Status; True when the RPC was ended with the requested status."""
        if request.HasField("response_status") and request.response_status.code != 0:
            context.set_code(status_code(request.response_status.code))
            context.set_details(request.response_status.message)
            return True
        return False

    def payload(size):
        return messages.Payload(body=bytes(size))

    def responses(request, context):
        for parameters in request.response_parameters:
            if parameters.interval_us:
                time.sleep(parameters.interval_us / 1e6)
            if parameters.HasField("compressed") and not parameters.compressed.value:
                context.disable_next_message_compression()
            yield messages.StreamingOutputCallResponse(payload=payload(parameters.size))

    def compress_if_asked(request, context):
        if any(p.HasField("compressed") and p.compressed.value for p in request.response_parameters):
            context.set_compression(grpc.Compression.Gzip)

    def empty_call(received, context):
        echo_metadata(context)
        return stubs.empty.Empty()

    def unary_call(received, context):
        echo_metadata(context)
        request, _ = received
        if not check_compression(received, context) or echo_status(request, context):
            return messages.SimpleResponse()
        compressed = request.HasField("response_compressed") and request.response_compressed.value
        context.set_compression(grpc.Compression.Gzip if compressed else grpc.Compression.NoCompression)
        return messages.SimpleResponse(payload=payload(request.response_size))

    def streaming_output_call(received, context):
        echo_metadata(context)
        request, _ = received
        if echo_status(request, context):
            return
        compress_if_asked(request, context)
        yield from responses(request, context)

    def streaming_input_call(received_iterator, context):
        echo_metadata(context)
        total = 0
        for received in received_iterator:
            if not check_compression(received, context):
                return messages.StreamingInputCallResponse()
            total += len(received[0].payload.body)
        return messages.StreamingInputCallResponse(aggregated_payload_size=total)

    def full_duplex_call(received_iterator, context):
        echo_metadata(context)
        for request, _ in received_iterator:
            if echo_status(request, context):
                return
            compress_if_asked(request, context)
            yield from responses(request, context)

    def half_duplex_call(received_iterator, context):
        echo_metadata(context)
        for request, _ in list(received_iterator):
            if echo_status(request, context):
                return
            yield from responses(request, context)

    def decoder(message_class):
        """Parses a request the server left compressed; returns it and whether it was (gzip)."""
        def decode(data):
            compressed = data[:2] == b"\x1f\x8b"  # no protobuf message starts so: wire type 7
            return message_class.FromString(gzip.decompress(data) if compressed else data), compressed
        return decode

    def method(kind, behaviour, request_class):
        return kind(behaviour, request_deserializer=decoder(request_class),
                    response_serializer=lambda message: message.SerializeToString())

    handlers = {
        "EmptyCall": method(grpc.unary_unary_rpc_method_handler, empty_call, stubs.empty.Empty),
        "UnaryCall": method(grpc.unary_unary_rpc_method_handler, unary_call, messages.SimpleRequest),
        "CacheableUnaryCall": method(grpc.unary_unary_rpc_method_handler, unary_call, messages.SimpleRequest),
        "StreamingOutputCall": method(grpc.unary_stream_rpc_method_handler, streaming_output_call,
                                      messages.StreamingOutputCallRequest),
        "StreamingInputCall": method(grpc.stream_unary_rpc_method_handler, streaming_input_call,
                                     messages.StreamingInputCallRequest),
        "FullDuplexCall": method(grpc.stream_stream_rpc_method_handler, full_duplex_call,
                                 messages.StreamingOutputCallRequest),
        "HalfDuplexCall": method(grpc.stream_stream_rpc_method_handler, half_duplex_call,
                                 messages.StreamingOutputCallRequest),
    }
    # grpcio shows no message's compressed flag; with per-message decompression off, C-core
    # hands over compressed requests as they came, and the decoder above tells them apart.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=[("grpc.per_message_decompression", 0)])
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("grpc.testing.TestService", handlers)])
    address = f"unix:{args.unix_socket}" if args.unix_socket else f"127.0.0.1:{args.port}"
    if args.tls_cert_file:
        credentials = grpc.ssl_server_credentials([(read_file(args.tls_key_file), read_file(args.tls_cert_file))])
        port = server.add_secure_port(address, credentials)
    else:
        port = server.add_insecure_port(address)
    server.start()
    print(f"listening {address if args.unix_socket else port}", flush=True)
    threading.Thread(target=exit_with_parent, daemon=True).start()
    server.wait_for_termination()


def exit_with_parent():
    """Ends this process once the one that started it is gone, so no server outlives a test."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)


def read_file(path):
    with open(path, "rb") as file:
        return file.read()


# MARK: Client

class CaseFailure(Exception):
    pass


def expect(condition, why):
    if not condition:
        raise CaseFailure(why)


def expect_code(call_or_error, code, what):
    actual = call_or_error.code()
    expect(actual == code, f"{what}: {actual}, not {code}")


def open_channel(target, ca_file=None, server_host_override=None):
    """A grpcio channel to `target`: TLS trusting `ca_file` when given, else plaintext."""
    if not ca_file:
        return grpc.insecure_channel(target)
    credentials = grpc.ssl_channel_credentials(root_certificates=read_file(ca_file))
    options = [("grpc.ssl_target_name_override", server_host_override)] if server_host_override else []
    return grpc.secure_channel(target, credentials, options=options)


def run_client(args):
    stubs = Stubs(args.protos)
    messages = stubs.messages
    target = f"unix:{args.unix_socket}" if args.unix_socket else f"127.0.0.1:{args.port}"
    channel = open_channel(target, args.ca_file, args.server_host_override)
    stub = stubs.test.TestServiceStub(channel)
    timeout = 30

    def zeros(size):
        return messages.Payload(body=bytes(size))

    def large_request(**fields):
        return messages.SimpleRequest(response_size=314159, payload=zeros(271828), **fields)

    def expect_payload(payload, size):
        expect(len(payload.body) == size, f"payload of {len(payload.body)} bytes, not {size}")
        expect(payload.body == bytes(size), "payload bytes are not all zero")

    def expect_failure(code, what, function):
        try:
            function()
        except grpc.RpcError as error:
            expect_code(error, code, what)
            return error
        raise CaseFailure(f"{what}: succeeded, but should have failed with {code}")

    class Blocker:
        """A request iterator's way to hold the stream open until the case is done."""
        def __init__(self):
            self.released = threading.Event()

        def hold(self):
            self.released.wait()

    def empty_unary():
        response = stub.EmptyCall(stubs.empty.Empty(), timeout=timeout)
        expect(response.ByteSize() == 0, "the response is not empty")

    def large_unary():
        expect_payload(stub.UnaryCall(large_request(), timeout=timeout).payload, 314159)

    def client_compressed_unary():
        expect_failure(grpc.StatusCode.INVALID_ARGUMENT, "the uncompressed probe with expect_compressed",
                       lambda: stub.UnaryCall(large_request(expect_compressed=messages.BoolValue(value=True)), timeout=timeout))
        compressed = stub.UnaryCall(large_request(expect_compressed=messages.BoolValue(value=True)), timeout=timeout,
                                    compression=grpc.Compression.Gzip)
        expect_payload(compressed.payload, 314159)
        uncompressed = stub.UnaryCall(large_request(expect_compressed=messages.BoolValue(value=False)), timeout=timeout)
        expect_payload(uncompressed.payload, 314159)

    def server_compressed_unary():
        # grpcio cannot see the compressed flag: the sizes are what it checks.
        for compressed in (True, False):
            response = stub.UnaryCall(large_request(response_compressed=messages.BoolValue(value=compressed)), timeout=timeout)
            expect_payload(response.payload, 314159)

    def client_streaming():
        requests = [messages.StreamingInputCallRequest(payload=zeros(size)) for size in (27182, 8, 1828, 45904)]
        response = stub.StreamingInputCall(iter(requests), timeout=timeout)
        expect(response.aggregated_payload_size == 74922, f"aggregated_payload_size {response.aggregated_payload_size}")

    def client_compressed_streaming():
        probe = messages.StreamingInputCallRequest(expect_compressed=messages.BoolValue(value=True), payload=zeros(27182))
        expect_failure(grpc.StatusCode.INVALID_ARGUMENT, "the uncompressed probe with expect_compressed",
                       lambda: stub.StreamingInputCall(iter([probe]), timeout=timeout))
        # C-core leaves a message uncompressed when gzip would grow it: random bytes do that.
        requests = [
            messages.StreamingInputCallRequest(expect_compressed=messages.BoolValue(value=True), payload=zeros(27182)),
            messages.StreamingInputCallRequest(expect_compressed=messages.BoolValue(value=False),
                                               payload=messages.Payload(body=os.urandom(45904))),
        ]
        response = stub.StreamingInputCall(iter(requests), timeout=timeout, compression=grpc.Compression.Gzip)
        expect(response.aggregated_payload_size == 73086, f"aggregated_payload_size {response.aggregated_payload_size}")

    def streaming_output(sizes, compressed=None):
        parameters = [messages.ResponseParameters(size=size) for size in sizes]
        if compressed is not None:
            for parameter, flag in zip(parameters, compressed):
                parameter.compressed.value = flag
        responses = list(stub.StreamingOutputCall(
            messages.StreamingOutputCallRequest(response_parameters=parameters), timeout=timeout))
        expect([len(r.payload.body) for r in responses] == sizes, f"payload sizes {[len(r.payload.body) for r in responses]}")
        for response in responses:
            expect_payload(response.payload, len(response.payload.body))

    def server_streaming():
        streaming_output([31415, 9, 2653, 58979])

    def server_compressed_streaming():
        streaming_output([31415, 92653], compressed=[True, False])

    def ping_pong():
        request_sizes = [27182, 8, 1828, 45904]
        response_sizes = [31415, 9, 2653, 58979]
        replies = []
        condition = threading.Condition()

        def requests():
            for index, (request_size, response_size) in enumerate(zip(request_sizes, response_sizes)):
                yield messages.StreamingOutputCallRequest(
                    response_parameters=[messages.ResponseParameters(size=response_size)], payload=zeros(request_size))
                with condition:
                    condition.wait_for(lambda: len(replies) > index)

        for response in stub.FullDuplexCall(requests(), timeout=timeout):
            with condition:
                replies.append(len(response.payload.body))
                condition.notify_all()
        expect(replies == response_sizes, f"payload sizes {replies}")

    def empty_stream():
        responses = list(stub.FullDuplexCall(iter([]), timeout=timeout))
        expect(responses == [], f"{len(responses)} responses to an empty stream")

    def custom_metadata():
        metadata = [(INITIAL_KEY, "test_initial_metadata_value"), (TRAILING_KEY, b"\xab\xab\xab")]

        def check(initial, trailing, method):
            initial = [(k, v) for k, v in initial if k == INITIAL_KEY]
            trailing = [(k, v) for k, v in trailing if k == TRAILING_KEY]
            expect(initial == [metadata[0]], f"{method}: initial metadata echoed {initial}")
            expect(trailing == [metadata[1]], f"{method}: trailing metadata echoed {trailing}")

        response, call = stub.UnaryCall.with_call(large_request(), metadata=metadata, timeout=timeout)
        expect_payload(response.payload, 314159)
        check(call.initial_metadata(), call.trailing_metadata(), "UnaryCall")

        request = messages.StreamingOutputCallRequest(
            response_parameters=[messages.ResponseParameters(size=314159)], payload=zeros(271828))
        call = stub.FullDuplexCall(iter([request]), metadata=metadata, timeout=timeout)
        responses = list(call)
        expect(len(responses) == 1, f"{len(responses)} responses")
        expect_payload(responses[0].payload, 314159)
        check(call.initial_metadata(), call.trailing_metadata(), "FullDuplexCall")

    def echo_status(message):
        status = messages.EchoStatus(code=2, message=message)
        unary = expect_failure(grpc.StatusCode.UNKNOWN, "UnaryCall",
                               lambda: stub.UnaryCall(messages.SimpleRequest(response_status=status), timeout=timeout))
        duplex = expect_failure(grpc.StatusCode.UNKNOWN, "FullDuplexCall", lambda: list(stub.FullDuplexCall(
            iter([messages.StreamingOutputCallRequest(response_status=status)]), timeout=timeout)))
        for method, error in (("UnaryCall", unary), ("FullDuplexCall", duplex)):
            expect(error.details() == message, f"{method}: message {error.details()!r}, not {message!r}")

    def status_code_and_message():
        echo_status("test status message")

    def special_status_message():
        echo_status("\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \U0001f608\t\n")

    def unimplemented_method():
        expect_failure(grpc.StatusCode.UNIMPLEMENTED, "TestService/UnimplementedCall",
                       lambda: stub.UnimplementedCall(stubs.empty.Empty(), timeout=timeout))

    def unimplemented_service():
        other = stubs.test.UnimplementedServiceStub(channel)
        expect_failure(grpc.StatusCode.UNIMPLEMENTED, "UnimplementedService/UnimplementedCall",
                       lambda: other.UnimplementedCall(stubs.empty.Empty(), timeout=timeout))

    def cancel_after_begin():
        blocker = Blocker()

        def requests():
            blocker.hold()
            yield from ()

        call = stub.StreamingInputCall.future(requests(), timeout=timeout)
        call.cancel()
        blocker.released.set()
        expect_code(call, grpc.StatusCode.CANCELLED, "StreamingInputCall cancelled after it began")

    def cancel_after_first_response():
        blocker = Blocker()

        def requests():
            yield messages.StreamingOutputCallRequest(
                response_parameters=[messages.ResponseParameters(size=31415)], payload=zeros(27182))
            blocker.hold()

        call = stub.FullDuplexCall(requests(), timeout=timeout)
        expect_payload(next(call).payload, 31415)
        call.cancel()
        blocker.released.set()
        expect_code(call, grpc.StatusCode.CANCELLED, "FullDuplexCall cancelled after its first response")

    def timeout_on_sleeping_server():
        blocker = Blocker()

        def requests():
            yield messages.StreamingOutputCallRequest(payload=zeros(27182))
            blocker.hold()

        try:
            expect_failure(grpc.StatusCode.DEADLINE_EXCEEDED, "FullDuplexCall with a 1 ms timeout",
                           lambda: list(stub.FullDuplexCall(requests(), timeout=0.001)))
        finally:
            blocker.released.set()

    defined = locals()
    cases = {name: defined[name] for name in ALL_CASES}
    names = args.test_cases.split(",") if args.test_cases else ALL_CASES
    failed = 0
    for name in names:
        try:
            cases[name]()
            print(f"ok {name}", flush=True)
        except Exception as error:  # a case failing is a result, not a crash
            failed += 1
            print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)
    print(f"cases: {len(names) - failed} ok, {failed} failed", flush=True)
    # Not sys.exit: see exit_now. The streaming cases leave grpcio threads behind (the last
    # case's request iterator is released just before this line).
    exit_now(1 if failed else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("server", "client"):
        command = commands.add_parser(name)
        command.add_argument("--protos", required=True, help="the folder holding grpc/testing/*.proto")
        command.add_argument("--port", type=int, default=0)
        command.add_argument("--unix_socket")
        if name == "client":
            command.add_argument("--test_cases", help="comma-separated case names; default: every case")
            command.add_argument("--ca_file", help="use TLS, trusting the CA certificates in this PEM file")
            command.add_argument("--server_host_override", help="the name the server's certificate carries")
        else:
            command.add_argument("--tls_cert_file", help="use TLS with this certificate chain (PEM)")
            command.add_argument("--tls_key_file", help="the certificate's private key (PEM)")
    args = parser.parse_args()
    run_server(args) if args.command == "server" else run_client(args)


if __name__ == "__main__":
    main()
