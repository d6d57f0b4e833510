#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that puts network faults between a client and a server.

  fault_proxy.py --target HOST:PORT [--port 0] [--latency MS] [--delay-chunks FRACTION MS]
                 [--seed N] [--chunk-bytes 16384] [--queue-chunks 8] [--ignore-stdin] [--verbose]

Prints "listening PORT" as its first line, then forwards every connection accepted on
127.0.0.1:PORT to HOST:PORT. Faults, set by the flags and changed at any time by lines on
standard input (each answered on standard output by one line, "ok ..." or "error ..."):

  latency MS                every chunk, in each direction, waits MS milliseconds (0: none)
  delay-chunks FRACTION MS  that fraction of chunks waits MS milliseconds more; the chunks
                            behind it wait too, since a byte stream keeps its order
  reset                     resets every open connection now, on both sides (SO_LINGER 0: RST)
  blackhole on|off          stops forwarding in both directions, without closing anything (a
                            silent partition): sockets are no longer read, so senders stall
                            once their buffers fill; new connections are accepted but not
                            connected onward until "off"; ends of streams wait too
  stats                     "ok stats open=N accepted=N up=BYTES down=BYTES"
  quit                      closes everything and exits; so does the end of standard input
                            (unless --ignore-stdin: then it runs until SIGTERM or SIGINT)

Buffers are bounded: each direction holds at most --queue-chunks chunks of --chunk-bytes
between its reader and its writer, and a writer waits for its socket to drain, so a paused or
slow direction stops reading its source instead of buffering without end.
"""
import argparse
import asyncio
import random
import signal
import socket
import struct
import sys


class Faults:
    """The faults in force, shared by every connection."""

    def __init__(self, latency_ms=0.0, delay_fraction=0.0, delay_ms=0.0, seed=None):
        self.latency = latency_ms / 1000
        self.delay_fraction = delay_fraction
        self.delay = delay_ms / 1000
        self.random = random.Random(seed)
        self.flowing = asyncio.Event()  # cleared while blackholed
        self.flowing.set()

    def hold_for(self):
        """How long the next chunk waits before it is forwarded, in seconds."""
        extra = self.delay if self.delay_fraction and self.random.random() < self.delay_fraction else 0.0
        return self.latency + extra


class Stats:
    def __init__(self):
        self.accepted = 0
        self.up = 0    # bytes client → server
        self.down = 0  # bytes server → client


def reset_socket(writer):
    """Closes the writer's socket with RST instead of FIN (SO_LINGER on, timeout 0)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass  # already closed
    writer.transport.abort()


class Direction:
    """One direction of a connection: reads chunks from `source`, holds each as the faults say,
    writes them to `sink` in order. At most `queue_chunks` chunks wait between the two."""

    def __init__(self, name, source, sink, faults, count, chunk_bytes, queue_chunks):
        self.name = name
        self.source = source
        self.sink = sink
        self.faults = faults
        self.count = count  # called with the size of each forwarded chunk
        self.chunk_bytes = chunk_bytes
        self.queue = asyncio.Queue(maxsize=queue_chunks)
        self.last_release = 0.0

    async def read_side(self):
        """Reads until end of stream (queued as None); stops reading while blackholed."""
        loop = asyncio.get_running_loop()
        while True:
            await self.faults.flowing.wait()
            chunk = await self.source.read(self.chunk_bytes)
            # A release time never earlier than the previous chunk's: the stream keeps its order.
            self.last_release = max(self.last_release, loop.time() + self.faults.hold_for())
            await self.queue.put((self.last_release, chunk or None))
            if not chunk:
                return

    async def write_side(self):
        """Forwards each chunk at its release time (not while blackholed); half-closes the sink
        at the end of the source."""
        loop = asyncio.get_running_loop()
        while True:
            release, chunk = await self.queue.get()
            # Always yields to the loop: a busy direction whose reads and writes never need to
            # wait would otherwise starve the control lines and the other connections.
            await asyncio.sleep(max(0.0, release - loop.time()))
            await self.faults.flowing.wait()
            if chunk is None:
                if self.sink.can_write_eof():
                    self.sink.write_eof()
                return
            self.sink.write(chunk)
            await self.sink.drain()  # bounded: waits while the sink's buffer is above its limit
            self.count(len(chunk))

    async def run(self):
        async with asyncio.TaskGroup() as group:
            group.create_task(self.read_side())
            group.create_task(self.write_side())


class Connection:
    """A client connection and its connection to the target, forwarded both ways."""

    def __init__(self, proxy, client_reader, client_writer):
        self.proxy = proxy
        self.client = (client_reader, client_writer)
        self.upstream = None
        self.task = None

    async def run(self):
        proxy = self.proxy
        try:
            await proxy.faults.flowing.wait()  # a partitioned client's SYN gets no further
            try:
                self.upstream = await asyncio.open_connection(proxy.host, proxy.port)
            except OSError as error:
                proxy.log(f"connect to {proxy.host}:{proxy.port} failed: {error}")
                reset_socket(self.client[1])
                return
            up = Direction("up", self.client[0], self.upstream[1], proxy.faults, proxy.count_up,
                           proxy.chunk_bytes, proxy.queue_chunks)
            down = Direction("down", self.upstream[0], self.client[1], proxy.faults, proxy.count_down,
                             proxy.chunk_bytes, proxy.queue_chunks)
            failed = False
            try:
                async with asyncio.TaskGroup() as group:  # one direction failing ends the other
                    group.create_task(up.run())
                    group.create_task(down.run())
            except* (ConnectionError, OSError) as errors:
                proxy.log(f"connection failed: {errors.exceptions[0]!r}")
                failed = True
            if failed:
                self.reset()  # one side reset (or failed): the other side learns it the same way
            else:
                self.close()  # both sides ended their streams
        except asyncio.CancelledError:
            self.reset()
            raise
        finally:
            proxy.connections.discard(self)

    def close(self):
        for _, writer in filter(None, (self.client, self.upstream)):
            writer.close()

    def reset(self):
        for _, writer in filter(None, (self.client, self.upstream)):
            reset_socket(writer)


class Proxy:
    def __init__(self, target, faults, chunk_bytes, queue_chunks, verbose):
        host, _, port = target.rpartition(":")
        self.host, self.port = host or "127.0.0.1", int(port)
        self.faults = faults
        self.chunk_bytes = chunk_bytes
        self.queue_chunks = queue_chunks
        self.verbose = verbose
        self.connections = set()
        self.stats = Stats()
        self.server = None

    def log(self, message):
        if self.verbose:
            print(f"fault_proxy: {message}", file=sys.stderr, flush=True)

    def count_up(self, size):
        self.stats.up += size

    def count_down(self, size):
        self.stats.down += size

    async def start(self, port):
        self.server = await asyncio.start_server(self.accept, "127.0.0.1", port)
        return self.server.sockets[0].getsockname()[1]

    async def accept(self, reader, writer):
        self.stats.accepted += 1
        connection = Connection(self, reader, writer)
        self.connections.add(connection)
        # A task of its own, which "reset" cancels (and this one does not report).
        connection.task = asyncio.create_task(connection.run())
        try:
            await connection.task
        except asyncio.CancelledError:
            if not connection.task.cancelled():
                raise  # this task itself is being cancelled: the proxy is stopping

    def reset_all(self):
        """Resets every open connection; returns how many there were."""
        connections = list(self.connections)
        for connection in connections:
            connection.reset()
            if connection.task is not None:
                connection.task.cancel()
        return len(connections)

    async def stop(self):
        self.server.close()
        self.reset_all()
        await asyncio.sleep(0)


def command(proxy, line):
    """Applies one control line; returns the answer line and whether to quit."""
    words = line.split()
    if not words:
        return None, False
    name, args = words[0], words[1:]
    faults = proxy.faults
    try:
        if name == "latency" and len(args) == 1:
            faults.latency = float(args[0]) / 1000
        elif name == "delay-chunks" and len(args) == 2:
            faults.delay_fraction, faults.delay = float(args[0]), float(args[1]) / 1000
        elif name == "reset" and not args:
            return f"ok reset {proxy.reset_all()}", False
        elif name == "blackhole" and args in (["on"], ["off"]):
            (faults.flowing.clear if args[0] == "on" else faults.flowing.set)()
        elif name == "stats" and not args:
            stats = proxy.stats
            return (f"ok stats open={len(proxy.connections)} accepted={stats.accepted} "
                    f"up={stats.up} down={stats.down}"), False
        elif name == "quit" and not args:
            return "ok quit", True
        else:
            return f"error unknown command: {line.strip()}", False
    except ValueError as error:
        return f"error {error}", False
    return f"ok {line.strip()}", False


async def control(proxy, done):
    """Reads control lines from standard input until "quit" or its end."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = await reader.readline()
        if not line:
            break
        answer, quit_now = command(proxy, line.decode(errors="replace"))
        if answer:
            print(answer, flush=True)
        if quit_now:
            break
    done.set()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free one)")
    parser.add_argument("--latency", type=float, default=0, metavar="MS")
    parser.add_argument("--delay-chunks", type=float, nargs=2, default=(0, 0), metavar=("FRACTION", "MS"))
    parser.add_argument("--seed", type=int)
    parser.add_argument("--chunk-bytes", type=int, default=16384)
    parser.add_argument("--queue-chunks", type=int, default=8)
    parser.add_argument("--ignore-stdin", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    faults = Faults(args.latency, args.delay_chunks[0], args.delay_chunks[1], args.seed)
    proxy = Proxy(args.target, faults, args.chunk_bytes, args.queue_chunks, args.verbose)
    port = await proxy.start(args.port)
    print(f"listening {port}", flush=True)

    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, done.set)
    # Held here: the loop keeps only weak references to tasks, and a collected control task
    # would leave the proxy deaf.
    control_task = None if args.ignore_stdin else asyncio.create_task(control(proxy, done))
    await done.wait()
    if control_task is not None:
        control_task.cancel()
    await proxy.stop()


if __name__ == "__main__":
    asyncio.run(main())
