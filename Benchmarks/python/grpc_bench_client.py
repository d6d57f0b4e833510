#!/usr/bin/env python3
"""grpcio's streaming benchmark client: grpc_bench_client.py --port N --seconds S.
Prints JSON lines: server-streaming messages/s on one stream, ping-pong round trips/s. The
bench drives every server with pitlane-bench-client; this client shows grpcio end to end."""
import argparse
import json
import queue
import time

import grpc

import bench_service


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    pb, rpc = bench_service.load()
    stub = rpc.BenchStub(grpc.insecure_channel(f"127.0.0.1:{args.port}"))
    body = b"\x42" * 16

    call = stub.ServerStream(pb.Payload(body=body, seq=2**62))
    count, end = 0, time.monotonic() + args.seconds
    for _ in call:
        count += 1
        if count % 1000 == 0 and time.monotonic() >= end:
            break
    call.cancel()
    print(json.dumps({"impl": "grpcio", "client": "grpcio", "case": "server-stream", "per_s": count / args.seconds}))

    pings = queue.Queue()
    def requests():
        while True:
            item = pings.get()
            if item is None:
                return
            yield pb.Payload(body=body)
    pings.put(True)
    count, end = 0, time.monotonic() + args.seconds
    for _ in stub.PingPong(requests()):
        count += 1
        if time.monotonic() >= end:
            pings.put(None)
            break
        pings.put(True)
    print(json.dumps({"impl": "grpcio", "client": "grpcio", "case": "ping-pong", "per_s": count / args.seconds}))


if __name__ == "__main__":
    main()
