"""bench.v1 for the grpcio bench client and server: generates bench_pb2 and bench_pb2_grpc
from Services/Benchmarks/GRPCBench/bench.proto with grpc_tools and imports them."""
import importlib
import os
import subprocess
import sys
import tempfile

PROTOS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "Services", "Benchmarks", "GRPCBench")


def load():
    """Returns (bench_pb2, bench_pb2_grpc)."""
    out = tempfile.mkdtemp(prefix="pitlane-bench-")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"--python_out={out}", f"--grpc_python_out={out}",
                    "-I", PROTOS, "bench.proto"], check=True)
    sys.path.insert(0, out)
    return importlib.import_module("bench_pb2"), importlib.import_module("bench_pb2_grpc")
