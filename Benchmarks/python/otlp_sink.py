#!/usr/bin/env python3
"""An OTLP/gRPC trace collector that keeps nothing, for measuring what tracing costs a server:
serves opentelemetry.proto.collector.trace.v1.TraceService/Export on 127.0.0.1 and answers
every export with an empty ExportTraceServiceResponse.

  otlp_sink.py [--port N]    prints "listening PORT", serves until SIGTERM or SIGINT, then
                             prints "otlp_sink: N export requests, S spans, B bytes" to stderr

Spans are counted with opentelemetry-proto's messages when it is installed (scripts/bootstrap
installs it), else only requests and bytes.
"""
import argparse
import signal
import sys
import threading
from concurrent import futures

import grpc

try:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
except ImportError:
    trace_service_pb2 = None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    counts = {"requests": 0, "spans": 0, "bytes": 0}
    lock = threading.Lock()

    def export(raw, context):
        spans = 0
        if trace_service_pb2 is not None:
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(raw)
            spans = sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
        with lock:
            counts["requests"] += 1
            counts["spans"] += spans
            counts["bytes"] += len(raw)
        return b""  # an empty ExportTraceServiceResponse

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.unary_unary_rpc_method_handler(export, request_deserializer=None, response_serializer=None)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.trace.v1.TraceService", {"Export": handler}),))
    port = server.add_insecure_port(f"127.0.0.1:{args.port}")
    server.start()
    print(f"listening {port}", flush=True)
    done = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: done.set())
    done.wait()
    server.stop(grace=0)
    with lock:
        spans = f"{counts['spans']} spans" if trace_service_pb2 is not None else "spans not counted"
        print(f"otlp_sink: {counts['requests']} export requests, {spans}, {counts['bytes']} bytes", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
