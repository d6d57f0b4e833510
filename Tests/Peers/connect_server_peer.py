"""pitlane.test.echo.Echo served by the official Connect runtime for Python (connectrpc's
ASGI application, under hypercorn: HTTP/2 with prior knowledge and HTTP/1.1), speaking
Connect, gRPC-Web and gRPC: a server no one here wrote, for Pitlane's clients to call.

  connect_server_peer.py --protos DIR
Prints "listening PORT" once it accepts connections; serves until killed.
"""
import argparse
import asyncio
import os
import signal
import socket
import sys

from hypercorn.asyncio import serve
from hypercorn.config import Config
from connectrpc.code import Code
from connectrpc.errors import ConnectError

from web_peer import generate_connect_stubs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--protos", required=True)
    args = parser.parse_args()
    pb, connect = generate_connect_stubs(args.protos, "echo.proto")

    # gRPC's numbers, in order, by Connect's names for them.
    names = ["canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists",
             "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
             "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated"]

    def obey(request, ctx):
        if request.fail_with_code:
            raise ConnectError(Code[names[request.fail_with_code - 1].upper()], request.fail_with_message)

    def echo_metadata(ctx):
        for name, value in ctx.request_headers.items():
            if name.startswith("x-"):
                ctx.response_headers[name] = value
                ctx.response_trailers[name] = value

    class Echo:
        async def get(self, request, ctx):
            obey(request, ctx)
            echo_metadata(ctx)
            return pb.EchoResponse(text=request.text)

        async def collect(self, requests, ctx):
            texts = []
            async for request in requests:
                obey(request, ctx)
                texts.append(request.text)
            return pb.EchoResponse(text=" ".join(texts))

        async def expand(self, request, ctx):
            obey(request, ctx)
            for index in range(request.repeat):
                yield pb.EchoResponse(text=request.text, index=index, payload=b"\xa5" * request.payload_bytes)

        async def update(self, requests, ctx):
            index = 0
            async for request in requests:
                obey(request, ctx)
                yield pb.EchoResponse(text=request.text, index=index)
                index += 1

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.loglevel = "WARNING"
    app = connect.EchoASGIApplication(Echo())

    async def run():
        # A shutdown trigger of our own keeps hypercorn from installing signal handlers that
        # wait for a graceful close: SIGTERM (the test's stop) ends the process at once.
        never = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, os._exit, 0)
        task = asyncio.ensure_future(serve(app, config, shutdown_trigger=never.wait))
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        print(f"listening {port}", flush=True)
        await task

    # The test's process may start this one with SIGTERM blocked (a spawning thread's mask
    # is inherited): unblocked, the test's stop ends it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
    asyncio.run(run())


if __name__ == "__main__":
    main()
