#!/usr/bin/env python3
"""The seed's WebSocket chat on orders-server, beside its gRPC chat (scripts/bench-websocket).

  websocket_bench.py --port P --server-pid PID [--connections 10000] [--receivers 1000]
                     [--messages 50] [--rate 20] [--channels 10] [--batch 200]

  1 memory     --connections idle WebSocket chat connections (the `websockets` library),
               each in a room of its own, opened --batch at a time: the server's VmRSS before and after, KiB
               per connection (or how many opened, and why no more)
  2 WebSocket  --receivers WebSocket clients in one room; one more client sends --messages
               messages at --rate per second, each carrying its send time; p50/p99/max of
               arrival − send over every arrival at every receiver, and the arrivals counted
  3 gRPC       the same with --receivers grpcio (asyncio) chat.v1.ChatRoom/Chat streams over
               --channels channels (separate connections), the sender a stream of its own
               channel

Everything runs against 127.0.0.1 in one asyncio loop (the driver is one process on one core):
the 1,000 copies of a message are read one after another, so the later ones wait for the
earlier ones; "first copy" is each message's earliest arrival, the figure one receiver would
see. Below each broadcast: the CPU the server and the driver used meanwhile, and what
everything else used of their cores (/proc/stat), which shows other load on the machine.
Every wait is bounded, and so is the whole run (--limit). Exits 1 if a figure is
incomplete (fewer connections or arrivals than asked for).
"""
import argparse
import asyncio
import importlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # what went wrong is reported here
import grpc  # noqa: E402 (after its environment)
import websockets  # noqa: E402
from websockets.asyncio.client import connect as ws_connect  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPEN_LIMIT = 50  # seconds to open the idle connections
WAIT = 30  # seconds for any one phase: the receivers' connections, the warm-up, the arrivals


def load_chat():
    """chat_pb2 and chat_pb2_grpc, generated from Protos/chat.proto with grpc_tools (as
    Tests/Peers/peer_checks.generate_stubs does) and imported; the generated files are removed."""
    out = tempfile.mkdtemp(prefix="pitlane-bench-chat-")
    try:
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"--python_out={out}", f"--grpc_python_out={out}",
                        "-I", os.path.join(ROOT, "Protos"), "chat.proto"], check=True)
        sys.path.insert(0, out)
        modules = importlib.import_module("chat_pb2"), importlib.import_module("chat_pb2_grpc")
        sys.path.remove(out)
        return modules
    finally:
        shutil.rmtree(out, ignore_errors=True)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_seconds(pid):
    """User + system CPU time of a process so far (/proc/PID/stat, fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def core_busy_seconds():
    """Busy time of every CPU so far, by number (/proc/stat: all but idle and iowait)."""
    busy = {}
    with open("/proc/stat") as stat:
        for line in stat:
            name, *ticks = line.split()
            if name.startswith("cpu") and name != "cpu":
                user, nice, system, _idle, _iowait, irq, softirq, steal = (int(t) for t in ticks[:8])
                busy[int(name[3:])] = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    return busy


def pinned_core(pid):
    """The one CPU a process may run on, or None."""
    cores = os.sched_getaffinity(pid)
    return next(iter(cores)) if len(cores) == 1 else None


def descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def percentile(sorted_values, p):
    """Nearest rank: the smallest value that at least p of them do not exceed."""
    if not sorted_values:
        return float("nan")
    rank = int(p * len(sorted_values))
    if rank < p * len(sorted_values):
        rank += 1
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


def ms(ns):
    return f"{ns / 1e6:.1f}"


def why(error):
    if isinstance(error, grpc.RpcError) and hasattr(error, "code"):
        return f"{error.code().name}: {error.details()}"
    text = str(error) or repr(error)
    return f"{type(error).__name__}: {text}"


def limit_nofile():
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def server_nofile(pid):
    try:
        with open(f"/proc/{pid}/limits") as limits:
            for line in limits:
                if line.startswith("Max open files"):
                    return int(line.split()[3])
    except (OSError, ValueError):
        pass
    return "?"


async def open_ws(port, room):
    return await ws_connect(f"ws://127.0.0.1:{port}/rooms/{room}", compression=None, proxy=None,
                            ping_interval=None, open_timeout=10, close_timeout=2)


async def close_ws(sockets, batch=500):
    """Closes with the close handshake, a batch at a time; a socket that does not finish it
    within 5 s is aborted."""
    for start in range(0, len(sockets), batch):
        chunk = sockets[start:start + batch]
        done = await asyncio.gather(*(asyncio.wait_for(ws.close(), 5) for ws in chunk), return_exceptions=True)
        for ws, result in zip(chunk, done):
            if isinstance(result, BaseException):
                ws.transport.abort()


# ---------------------------------------------------------------------------------------------
# 1 Idle connections


async def idle_connections(args):
    room = f"idle-{uuid.uuid4().hex[:8]}"
    loop = asyncio.get_running_loop()
    # One connection first, opened and closed, so that what the server sets up once is not
    # counted per connection.
    await close_ws([await asyncio.wait_for(open_ws(args.port, f"{room}-warm-up"), WAIT)])
    await asyncio.sleep(0.5)
    before = rss_kib(args.server_pid)
    fds_before = descriptors(args.server_pid)
    sockets, error = [], None
    started = loop.time()
    while len(sockets) < args.connections and error is None:
        if loop.time() - started > OPEN_LIMIT:
            error = f"not within {OPEN_LIMIT} s"
            break
        count = min(args.batch, args.connections - len(sockets))
        # Each in a room of its own: in one room the seed's presence notices (every connect told
        # to everyone in the room) would keep every connection busy, n² notices in all.
        first = len(sockets)
        results = await asyncio.gather(*(open_ws(args.port, f"{room}-{first + index}") for index in range(count)),
                                       return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                error = error or why(result)
            else:
                sockets.append(result)
    took = loop.time() - started
    await asyncio.sleep(1)  # the last connections' handshakes and joins settle on the server
    after = rss_kib(args.server_pid)
    fds = descriptors(args.server_pid) - fds_before
    opened = len(sockets)
    if error is None:
        print(f"idle WebSocket connections: {opened:,} open, each in a room of its own, in {took:.1f} s "
              f"({args.batch} at a time; server +{fds:,} descriptors)")
    else:
        print(f"idle WebSocket connections: only {opened:,} of {args.connections:,} opened in {took:.1f} s: {error} "
              f"(descriptors: the driver's limit {limit_nofile()}; the server holds {descriptors(args.server_pid):,} "
              f"of its {server_nofile(args.server_pid)})")
    per = (after - before) / opened if opened else float("nan")
    print(f"  server RSS {before:,} KiB before (after one warm-up connection), {after:,} KiB after: "
          f"{per:.1f} KiB per connection")
    await close_ws(sockets)
    return error is None


# ---------------------------------------------------------------------------------------------
# 2 and 3 Broadcast


class Tally:
    """The arrivals of the measured messages at every receiver: text "MARKER SEQ SENT_NS";
    SEQ -1 is the warm-up message, which every receiver must have seen before the measurement."""

    def __init__(self, receivers, messages, server_pid):
        self.server_pid, self.cpu, self.window, self.busy = server_pid, None, None, {}
        self.marker = f"bench-{uuid.uuid4().hex[:8]}"
        self.receivers, self.expected = receivers, receivers * messages
        self.latencies, self.first = [], {}
        self.warmed = 0
        self.all_warm, self.done = asyncio.Event(), asyncio.Event()
        self.ended = {}  # how receivers' connections ended early: why -> count

    def text(self, seq):
        return f"{self.marker} {seq} {time.monotonic_ns()}"

    def arrive(self, now, text):
        if not text.startswith(self.marker):
            return
        _, seq, sent = text.split(" ")
        seq = int(seq)
        if seq < 0:
            self.warmed += 1
            if self.warmed == self.receivers:
                self.all_warm.set()
            return
        latency = now - int(sent)
        self.latencies.append(latency)
        if latency < self.first.get(seq, latency + 1):
            self.first[seq] = latency
        if len(self.latencies) == self.expected:
            self.done.set()

    def end(self, reason):
        self.ended[reason] = self.ended.get(reason, 0) + 1

    async def run(self, send, messages, rate):
        """Warms up, then sends the measured messages paced at `rate`; waits for the arrivals.
        Returns None, or why the measurement is incomplete."""
        await send(self.text(-1))
        try:
            await asyncio.wait_for(self.all_warm.wait(), WAIT)
        except asyncio.TimeoutError:
            return f"only {self.warmed} of {self.receivers} receivers got the warm-up message within {WAIT} s"
        loop = asyncio.get_running_loop()
        start = loop.time()
        pids = self.server_pid, os.getpid()
        used, busy = [cpu_seconds(pid) for pid in pids], core_busy_seconds()
        for seq in range(messages):
            await asyncio.sleep(max(0.0, start + seq / rate - loop.time()))
            await send(self.text(seq))
        try:
            await asyncio.wait_for(self.done.wait(), WAIT)
        except asyncio.TimeoutError:
            missing = self.expected - len(self.latencies)
            return f"arrivals stopped coming: {missing:,} missing {WAIT} s after the last send"
        finally:
            self.window = loop.time() - start
            try:
                self.cpu = [(pinned_core(pid), cpu_seconds(pid) - before) for pid, before in zip(pids, used)]
                self.busy = {core: seconds - busy.get(core, 0) for core, seconds in core_busy_seconds().items()}
            except OSError:  # the server has exited; the arrivals say what came of it
                self.cpu = None
        return None

    def report(self, title, problem):
        values = sorted(self.latencies)
        firsts = sorted(self.first.values())
        ended = "; ".join(f"{count} receivers' connections ended: {reason}" for reason, count in self.ended.items())
        print(title)
        print(f"  {len(values):,} of {self.expected:,} arrivals: send→arrival p50 {ms(percentile(values, 0.5))} ms, "
              f"p99 {ms(percentile(values, 0.99))} ms, max {ms(percentile(values, 1))} ms; "
              f"first copy p50 {ms(percentile(firsts, 0.5))} ms")
        if self.cpu:
            shares = ", ".join(f"{name} {used / self.window:.0%} of core {core}" for name, (core, used)
                               in zip(("server", "driver"), self.cpu))
            others = ", ".join(f"{max(0.0, self.busy[core] - used) / self.window:.0%} of core {core}"
                               for core, used in self.cpu if core in self.busy)
            print(f"  first send to last arrival, {self.window:.1f} s: {shares}"
                  + (f"; everything else {others}" if others else ""))
        for note in filter(None, (problem, ended)):
            print(f"  incomplete: {note}")
        return problem is None and not self.ended and len(values) == self.expected


async def websocket_broadcast(args):
    tally = Tally(args.receivers, args.messages, args.server_pid)
    room = f"ws-{tally.marker}"

    async def receive(ws):
        try:
            async for data in ws:
                now = time.monotonic_ns()
                if isinstance(data, str) and tally.marker in data:
                    tally.arrive(now, json.loads(data)["text"])
            tally.end(f"closed {ws.close_code}")  # a normal close (1000, 1001) ends the loop quietly
        except websockets.ConnectionClosed as closed:
            tally.end(f"closed {closed.rcvd.code if closed.rcvd else 'without a close frame'}")
        except asyncio.CancelledError:
            pass

    async def drain(ws):
        try:
            async for _ in ws:
                pass
        except (websockets.ConnectionClosed, asyncio.CancelledError):
            pass

    sockets, tasks = [], []
    try:
        for start in range(0, args.receivers, args.batch):
            count = min(args.batch, args.receivers - start)
            opened = await asyncio.wait_for(asyncio.gather(*(open_ws(args.port, room) for _ in range(count))), WAIT)
            sockets += opened
            tasks += [asyncio.create_task(receive(ws)) for ws in opened]
        sender = await open_ws(args.port, room)
        sockets.append(sender)
        tasks.append(asyncio.create_task(drain(sender)))
        sender_id = f"{tally.marker}-sender"

        async def send(text):
            await sender.send(json.dumps({"id": sender_id, "nickname": "bench-sender", "text": text}))

        problem = await tally.run(send, args.messages, args.rate)
    except (OSError, asyncio.TimeoutError, websockets.WebSocketException) as error:
        problem = f"{len(sockets)} connections open: {why(error)}"
    ok = tally.report(f"broadcast over WebSocket: {args.receivers:,} receivers in one room, {args.messages} messages "
                      f"at {args.rate:g}/s from one more client", problem)
    for task in tasks:
        task.cancel()
    await close_ws(sockets)
    return ok


async def grpc_broadcast(args, pb, rpc):
    tally = Tally(args.receivers, args.messages, args.server_pid)
    room = f"grpc-{tally.marker}"
    target = f"127.0.0.1:{args.port}"
    # A local subchannel pool each: grpcio would otherwise share one connection between
    # channels with the same target and arguments.
    options = [("grpc.use_local_subchannel_pool", 1)]
    channels = [grpc.aio.insecure_channel(target, options=options) for _ in range(args.channels + 1)]
    stubs = [rpc.ChatRoomStub(channel) for channel in channels]

    async def join(stub, nickname):
        call = stub.Chat(timeout=600)
        await call.write(pb.ChatRequest(join=pb.Join(room=room, nickname=nickname)))
        first = await call.read()
        if first is grpc.aio.EOF or first.WhichOneof("event") != "joined":
            raise RuntimeError(f"{nickname}: the first event is {first}, not joined")
        return call

    async def receive(call):
        try:
            while (event := await call.read()) is not grpc.aio.EOF:
                now = time.monotonic_ns()
                if event.WhichOneof("event") == "message":
                    tally.arrive(now, event.message.text)
            tally.end("the server ended the call with OK")
        except grpc.RpcError as error:
            tally.end(f"{error.code().name}: {error.details()}")
        except asyncio.CancelledError:
            pass

    async def drain(call):
        try:
            while await call.read() is not grpc.aio.EOF:
                pass
        except (grpc.RpcError, asyncio.CancelledError):
            pass

    calls, tasks = [], []
    per_channel = -(-args.receivers // args.channels)
    try:
        for start in range(0, args.receivers, args.batch):
            count = min(args.batch, args.receivers - start)
            joined = await asyncio.wait_for(asyncio.gather(*(
                join(stubs[(start + i) // per_channel], f"r{start + i}") for i in range(count))), WAIT)
            calls += joined
            # Reading at once: every later join is a presence event for everyone before it.
            tasks += [asyncio.create_task(receive(call)) for call in joined]
        sender = await asyncio.wait_for(join(stubs[-1], "bench-sender"), WAIT)
        calls.append(sender)
        tasks.append(asyncio.create_task(drain(sender)))

        async def send(text):
            await sender.write(pb.ChatRequest(send=pb.Send(text=text)))

        problem = await tally.run(send, args.messages, args.rate)
    except (grpc.RpcError, RuntimeError, asyncio.TimeoutError) as error:
        problem = f"{len(calls)} streams open: {why(error)}"
    channels_are = f"{args.channels} channel{'s' * (args.channels > 1)} of {per_channel}"
    ok = tally.report(f"broadcast over gRPC (grpcio Chat streams, {channels_are}): {args.receivers:,} receivers "
                      f"in one room, {args.messages} messages at {args.rate:g}/s from one more stream on its own "
                      f"channel", problem)
    for call in calls:
        call.cancel()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for channel in channels:
        await channel.close()
    return ok


async def main(args):
    pb, rpc = load_chat()
    ok = await idle_connections(args)
    ok = await websocket_broadcast(args) and ok
    ok = await grpc_broadcast(args, pb, rpc) and ok
    return ok


def exit_now(status):
    """Ends without the interpreter's shutdown, which can hang a grpcio client (see
    Tests/Peers/peer_checks.exit_now)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--connections", type=int, default=10_000)
    parser.add_argument("--receivers", type=int, default=1_000)
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--rate", type=float, default=20)
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--batch", type=int, default=200, help="connections or joins opened at once")
    parser.add_argument("--limit", type=float, default=300, help="seconds for the whole run")
    arguments = parser.parse_args()
    if min(arguments.connections, arguments.receivers, arguments.messages, arguments.channels, arguments.batch) < 1:
        parser.error("counts must be at least 1")

    def overrun():
        print(f"websocket_bench: not done within {arguments.limit:g} s; stopped", file=sys.stderr)
        exit_now(2)

    watchdog = threading.Timer(arguments.limit, overrun)
    watchdog.daemon = True
    watchdog.start()
    exit_now(0 if asyncio.run(main(arguments)) else 1)
