#!/usr/bin/env python3
"""grpcio's streaming benchmark client: grpc_bench_client.py --port N --seconds S.
Prints JSON lines: server-streaming messages/s on one stream, ping-pong round trips/s. The
bench drives every server with pitlane-bench-client and gRPC C++'s client; this one shows
grpcio end to end. Like them, it leaves the first half second out as warm-up."""
import argparse
import json
import queue
import time

import grpc

import bench_service

WARM_UP = 0.5


def rate(messages, seconds, on_message=lambda: None):
    """Messages per second from `messages`, counted from the end of the warm-up for `seconds`
    (the clock read once per 100 messages); calls `on_message` after each one."""
    start = time.monotonic()
    measuring, count = None, 0
    for _ in messages:
        count += 1
        if count % 100 == 0:
            now = time.monotonic()
            if measuring is None and now - start >= WARM_UP:
                measuring, count = now, 0
            elif measuring is not None and now - measuring >= seconds:
                return count / (now - measuring)
        on_message()
    return 0.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    pb, rpc = bench_service.load()
    stub = rpc.BenchStub(grpc.insecure_channel(f"127.0.0.1:{args.port}"))
    body = b"\x42" * 16

    call = stub.ServerStream(pb.Payload(body=body, seq=2**62))
    per_s = rate(call, args.seconds)
    call.cancel()
    print(json.dumps({"impl": "grpcio", "client": "grpcio", "case": "server-stream", "per_s": round(per_s)}))

    # Ping-pong: the next request is queued only once the previous echo has arrived.
    pings = queue.Queue()
    def requests():
        while pings.get():
            yield pb.Payload(body=body)
    pings.put(True)
    call = stub.PingPong(requests())
    per_s = rate(call, args.seconds, on_message=lambda: pings.put(True))
    pings.put(False)
    call.cancel()
    print(json.dumps({"impl": "grpcio", "client": "grpcio", "case": "ping-pong", "per_s": round(per_s)}))


if __name__ == "__main__":
    main()
