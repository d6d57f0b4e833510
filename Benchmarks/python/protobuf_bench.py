"""Protobuf codec benchmark, Python peer: the `protobuf` package on its upb backend.

Usage: protobuf_bench.py --payload FILE --type Race|Catalog --seconds S
Prints one JSON line: impl, backend, type, bytes, decode_per_s, encode_per_s.
"""
import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from google.protobuf.internal import api_implementation

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "Services/Benchmarks/ProtobufBench/bench_messages.proto"
# The venv's protoc, because the runtime checks that the gencode's version matches its own.
PROTOC = ROOT / ".venv/bin/protoc"
# Operations between clock reads: about a millisecond of work either way.
BATCH = {"Race": 1000, "Catalog": 10}
WARMUP_SECONDS = 0.2


def load_messages():
    """Generates bench_messages_pb2 into a temporary directory and imports it."""
    with tempfile.TemporaryDirectory(prefix="pitlane-bench-") as out:
        subprocess.run(
            [PROTOC, f"-I{PROTO.parent}", f"--python_out={out}", PROTO.name], check=True
        )
        sys.path.insert(0, out)
        try:
            return importlib.import_module("bench_messages_pb2")
        finally:
            sys.path.remove(out)


def rate(fn, arg, batch, seconds):
    """Calls fn(arg) in batches until `seconds` have passed; returns calls per second."""
    count = 0
    start = time.perf_counter()
    while True:
        for _ in range(batch):
            fn(arg)
        count += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return count / elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payload", type=Path, required=True)
    parser.add_argument("--type", choices=sorted(BATCH), required=True)
    parser.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args()

    backend = api_implementation.Type()
    if backend != "upb":
        sys.exit(f"protobuf_bench.py: expected the upb backend, found {backend!r}")

    cls = getattr(load_messages(), args.type)
    payload = args.payload.read_bytes()
    message = cls.FromString(payload)
    batch = BATCH[args.type]

    # Both loops make one call per operation: FromString builds a fresh message each time, and
    # the unbound SerializeToString returns fresh bytes each time.
    rate(cls.FromString, payload, batch, WARMUP_SECONDS)
    decode = rate(cls.FromString, payload, batch, args.seconds)
    rate(cls.SerializeToString, message, batch, WARMUP_SECONDS)
    encode = rate(cls.SerializeToString, message, batch, args.seconds)

    print(json.dumps({
        "impl": "python", "backend": backend, "type": args.type, "bytes": len(payload),
        "decode_per_s": round(decode, 1), "encode_per_s": round(encode, 1),
    }))


if __name__ == "__main__":
    main()
