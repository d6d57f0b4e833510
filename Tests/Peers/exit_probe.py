#!/usr/bin/env python3
"""A grpcio client that ends the way the interop peer's client once hung for good: its cases
done, a streaming call left over, and a grpcio daemon thread holding that call's lock.

  exit_probe.py --protos DIR --port N [--ca_file PEM [--server_host_override NAME]]
                --exit (sys.exit|exit_now)
      Opens a FullDuplexCall to grpc.testing.TestService on 127.0.0.1:N (over TLS trusting
      --ca_file), exchanges one message, keeps the call open, has a daemon thread take the
      call's lock (grpc/_channel.py, `_state.condition`) and keep it, lets go of the call,
      prints "exiting" and leaves by --exit.

At interpreter shutdown a grpcio thread that was waiting for a call's lock can get it and then
die holding it (daemon threads die when they next take the GIL); the thread here stands for
it, deterministically. sys.exit then runs the call's __del__, which waits for the lock
forever: the process idles with its connection established. exit_now (peer_checks) does not
finalize, so it ends at once.
"""
import argparse
import sys
import threading


from interop_peer import Stubs, open_channel
from peer_checks import exit_now


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--protos", required=True, help="the folder holding grpc/testing/*.proto")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ca_file", help="use TLS, trusting the CA certificates in this PEM file")
    parser.add_argument("--server_host_override", help="the name the server's certificate carries")
    parser.add_argument("--exit", choices=["sys.exit", "exit_now"], required=True)
    args = parser.parse_args()

    stubs = Stubs(args.protos)
    messages = stubs.messages
    channel = open_channel(f"127.0.0.1:{args.port}", args.ca_file, args.server_host_override)
    stub = stubs.test.TestServiceStub(channel)

    # A request iterator that never ends, as a case's blocked request generator.
    never = threading.Event()

    def requests():
        yield messages.StreamingOutputCallRequest(response_parameters=[messages.ResponseParameters(size=1)])
        never.wait()

    call = stub.FullDuplexCall(requests(), timeout=60)
    next(call)

    taken = threading.Event()

    def hold_lock():
        with call._state.condition:
            taken.set()
            never.wait()

    threading.Thread(target=hold_lock, daemon=True).start()
    taken.wait()
    # Garbage in a cycle, as grpcio's calls are: the shutdown's collection runs __del__.
    call.cycle = call
    del call
    print("exiting", flush=True)
    if args.exit == "sys.exit":
        sys.exit(0)
    exit_now(0)


if __name__ == "__main__":
    main()
