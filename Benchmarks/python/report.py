#!/usr/bin/env python3
"""Prints benchmark JSON lines (stdin) as a table with ratios to the C++ peer.

  report.py protobuf   lines: {"impl", "type", "bytes", "decode_per_s", "encode_per_s"}
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


if __name__ == "__main__":
    rows = [json.loads(line) for line in sys.stdin if line.strip().startswith("{")]
    {"protobuf": protobuf}[sys.argv[1]](rows)
