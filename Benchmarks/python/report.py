#!/usr/bin/env python3
"""Prints benchmark JSON lines (stdin) as a table with ratios to the C++ peer.

  report.py protobuf   lines: {"impl", "type", "bytes", "decode_per_s", "encode_per_s"}
  report.py grpc       lines: {"impl", "case", "rps", "mean_latency", "failed"}, stream lines
                       {"impl", "case", "per_s"} and rss lines
  report.py swiftkart  lines: {"followers", "p50_ms", "p99_ms", "messages_per_s", "server_rss_kib", "kib_per_follower"}
"""
import json
import sys


def protobuf(rows):
    by_key = {(row["impl"], row["type"]): row for row in rows}
    print(f"{'message':<9} {'bytes':>7} {'impl':<8} {'decode/s':>12} {'MB/s':>8} {'encode/s':>12} {'MB/s':>8} {'decode ×C++':>12} {'encode ×C++':>12}")
    for message in ("Race", "Catalog"):
        cpp = by_key.get(("cpp", message))
        for impl in ("pitlane", "cpp", "python"):
            row = by_key.get((impl, message))
            if row is None:
                continue
            size = row["bytes"]
            decode, encode = row["decode_per_s"], row["encode_per_s"]
            ratio_decode = f"{decode / cpp['decode_per_s']:.2f}" if cpp else "-"
            ratio_encode = f"{encode / cpp['encode_per_s']:.2f}" if cpp else "-"
            print(f"{message:<9} {size:>7} {impl:<8} {decode:>12,.0f} {decode * size / 1e6:>8.1f} "
                  f"{encode:>12,.0f} {encode * size / 1e6:>8.1f} {ratio_decode:>12} {ratio_encode:>12}")


def grpc(rows):
    # Published gRPC C++ 1.51 figures on this kind of machine (bench/README), for scale only:
    # they were not measured in this run.
    reference = {"unary c=1 m=1": 10255, "unary c=4 m=32": 64847}
    by_key = {(row["impl"], row["case"]): row for row in rows}
    print(f"{'case':<16} {'impl':<8} {'req/s':>10} {'mean':>9} {'failed':>7} {'×grpcio':>8} {'×C++ (ref)':>11}")
    for case in ("unary c=1 m=1", "unary c=4 m=32"):
        peer = by_key.get(("grpcio", case))
        for impl in ("pitlane", "grpcio"):
            row = by_key.get((impl, case))
            if row is None:
                continue
            versus_peer = f"{row['rps'] / peer['rps']:.2f}" if peer and peer["rps"] else "-"
            print(f"{case:<16} {impl:<8} {row['rps']:>10,.0f} {row['mean_latency']:>9} {row['failed']:>7} "
                  f"{versus_peer:>8} {row['rps'] / reference[case]:>11.2f}")
    reference_streams = {"server-stream": 152584, "ping-pong": 15090}
    for case in ("server-stream", "ping-pong"):
        peer = by_key.get(("grpcio", case))
        for impl in ("pitlane", "grpcio"):
            row = by_key.get((impl, case))
            if row is None:
                continue
            versus_peer = f"{row['per_s'] / peer['per_s']:.2f}" if peer and peer["per_s"] else "-"
            unit = "msgs/s" if case == "server-stream" else "trips/s"
            print(f"{case:<16} {impl:<8} {row['per_s']:>10,.0f} {unit:>9} {'':>7} {versus_peer:>8} "
                  f"{row['per_s'] / reference_streams[case]:>11.2f}")
    for impl in ("pitlane", "grpcio"):
        row = by_key.get((impl, "rss"))
        if row:
            print(f"server RSS {impl}: {row['idle_kib'] / 1024:.1f} MiB idle, {row['after_load_kib'] / 1024:.1f} MiB after load")
    idle = by_key.get(("pitlane", "idle streams"))
    if idle:
        per_stream = (idle["rss_after_kib"] - idle["rss_before_kib"]) / idle["streams"]
        print(f"memory per idle open stream (pitlane, {idle['streams']} streams): {per_stream:.1f} KiB "
              f"(reference: C++ 15.6, grpc-swift 18.8, grpcio 23.6 KiB)")


def swiftkart(rows):
    print(f"{'followers':>9} {'p50 ms':>7} {'p99 ms':>7} {'msgs/s':>9} {'expected':>9} {'server RSS':>11} {'KiB/follower':>13} "
          f"{'server CPU':>10} {'load CPU':>9}  verdict")
    for row in rows:
        expected = row["followers"] * 10
        ok = row["p99_ms"] < 100 and row["messages_per_s"] >= 0.95 * expected
        print(f"{row['followers']:>9,} {row['p50_ms']:>7} {row['p99_ms']:>7} {row['messages_per_s']:>9,} {expected:>9,} "
              f"{row['server_rss_kib'] / 1024:>9.1f} M {row['kib_per_follower']:>13.1f} "
              f"{row['server_cpu']:>10.2f} {row['load_cpu']:>9.2f}  {'sustained' if ok else 'NOT sustained'}")
    print("target: ≥ 10,000 followers with p99 < 100 ms at 10 Hz; ≤ 8 KiB per follower")


if __name__ == "__main__":
    rows = [json.loads(line) for line in sys.stdin if line.strip().startswith("{")]
    {"protobuf": protobuf, "grpc": grpc, "swiftkart": swiftkart}[sys.argv[1]](rows)
