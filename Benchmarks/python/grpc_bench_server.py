#!/usr/bin/env python3
"""grpcio's side of the gRPC benchmark: serves bench.v1.Bench on 127.0.0.1.

  grpc_bench_server.py [--port N] [--workers N]    prints "listening PORT", serves until killed

grpcio's synchronous server runs each RPC on a worker thread for the RPC's whole life, so
holding K streams open at once takes --workers K or more.
"""
import argparse
from concurrent import futures

import grpc

import bench_service


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()
    pb, rpc = bench_service.load()

    class Bench(rpc.BenchServicer):
        def Unary(self, request, context):
            return request

        def ServerStream(self, request, context):
            for seq in range(request.seq):
                yield pb.Payload(body=request.body, seq=seq)

        def PingPong(self, requests, context):
            for request in requests:
                yield request

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=args.workers))
    rpc.add_BenchServicer_to_server(Bench(), server)
    port = server.add_insecure_port(f"127.0.0.1:{args.port}")
    server.start()
    print(f"listening {port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
