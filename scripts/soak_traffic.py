#!/usr/bin/env python3
"""The Python half of scripts/soak: grpcio traffic, a stream holder to kill, and the verdict.

  soak_traffic.py traffic --bench P --interop P --orders P --swiftkart P --seconds S
      Mixed grpcio traffic, every kind bounded in rate, for S seconds against 127.0.0.1: unary
      calls (some with deadlines too short to meet), server streams (some cancelled midway),
      ping-pong streams, client streams (interop StreamingInputCall), order publishes, watches
      and follows that leave and resume, chat participants, race followers and schedules.
      Prints one line per kind with its outcomes, then "traffic: ok" or "traffic: FAIL ...";
      exits non-zero if a kind never succeeded or ended with a status it should not.
  soak_traffic.py churn --bin DIR --bench P --orders P --swiftkart P --seconds S
      Pitlane's own clients in loops for S seconds, most of them killed with SIGKILL at a
      random moment and started again: `orders watch` and `orders publish`, `chat`
      participants, `swiftkart follow` and `swiftkart races`, pitlane-bench-client holding
      idle streams (and a full-speed burst once a minute), h2load unary calls at 40/s for 10 s
      every 30 s, and the grpcio holder below. Prints outcomes per loop and "churn: ok" or
      "churn: FAIL ...".
  soak_traffic.py holder --bench P --orders P --swiftkart P
      Opens long-lived streams on every server and holds them until killed (soak kills it
      with SIGKILL and starts it again).
  soak_traffic.py verdict SAMPLES.tsv [--warm-up 60]
      Prints the sampled curve of every server (RSS, descriptors, threads) as a table and
      judges it: the median of the last third of the run against the median of the minute
      after warm-up, within tolerances (SOAK_RSS_PERCENT 10 and SOAK_RSS_KIB 4096,
      SOAK_FDS 3, SOAK_THREADS 2). Prints "verdict: ..." and exits non-zero on growth.
"""
import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "Tests", "Peers"))
from processes import Requests  # noqa: E402

STAFF = [("authorization", "Bearer staff-token")]


# ---------------------------------------------------------------------------------------------
# Stubs


class Stubs:
    """grpcio stubs generated from the project's .proto files (grpc_tools, at run time)."""

    def __init__(self):
        from peer_checks import load
        self.bench_pb, self.bench_rpc = load(os.path.join(ROOT, "Benchmarks", "GRPCBench"), "bench.proto")
        self.orders_pb, self.orders_rpc = load(os.path.join(ROOT, "Protos"), "orders.proto")
        self.chat_pb, self.chat_rpc = load(os.path.join(ROOT, "Protos"), "chat.proto")
        self.kart_pb, self.kart_rpc = load(os.path.join(ROOT, "Protos"), "swiftkart.proto")
        # The interop modules live in the package grpc.testing (from the files' paths), and
        # grpcio owns the package grpc: its search path gains the generated folder.
        import grpc
        import importlib
        from peer_checks import generate_stubs
        interop = os.path.join(ROOT, "Sources", "PitlaneInterop", "Protos")
        out = generate_stubs(interop, *(f"grpc/testing/{name}.proto" for name in ("empty", "messages", "test")))
        grpc.__path__.append(os.path.join(out, "grpc"))
        self.messages_pb = importlib.import_module("grpc.testing.messages_pb2")
        self.test_rpc = importlib.import_module("grpc.testing.test_pb2_grpc")


def channel(port):
    import grpc
    return grpc.insecure_channel(f"127.0.0.1:{port}")




# ---------------------------------------------------------------------------------------------
# Traffic


class Tally:
    """Outcomes of one kind of traffic: status name → count, and the ones not allowed."""

    TOLERATED = {"OK", "CANCELLED", "DEADLINE_EXCEEDED", "UNAVAILABLE"}

    def __init__(self, name, allowed=(), success="OK", tolerated=TOLERATED):
        self.name = name
        self.success = success
        self.allowed = set(tolerated) | set(allowed) | {success}
        self.counts = {}
        self.unexpected = []
        self.lock = threading.Lock()

    def record(self, code, details=""):
        with self.lock:
            self.counts[code] = self.counts.get(code, 0) + 1
            if code not in self.allowed and len(self.unexpected) < 5:
                self.unexpected.append(f"{code} {details}")

    def run(self, call):
        """Runs `call`, recording how it ended."""
        import grpc
        try:
            call()
            self.record("OK")
        except grpc.RpcError as error:
            self.record(error.code().name, error.details())
        except Exception as error:  # a crash of the traffic itself is an outcome too
            self.record(type(error).__name__, str(error))

    def problem(self):
        if not self.counts.get(self.success):
            return f"{self.name}: never {self.success} ({self.counts})"
        if self.unexpected:
            return f"{self.name}: {self.unexpected}"
        return None


class Drain:
    """Reads a response stream to its end on a thread of its own; `result()` re-raises how it
    ended, if badly."""

    def __init__(self, responses):
        self.responses = responses
        self.error = None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for _ in self.responses:
                pass
        except Exception as error:
            self.error = error

    def result(self, timeout):
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.responses.cancel()
            raise TimeoutError(f"the stream did not end within {timeout} s")
        if self.error is not None:
            raise self.error


def every(interval, end, body):
    """Calls `body()` every `interval` seconds (not overlapping) until `end`."""
    next_at = time.monotonic()
    while time.monotonic() < end:
        body()
        next_at += interval
        time.sleep(max(0.0, min(next_at, end) - time.monotonic()))


class Traffic:
    def __init__(self, stubs, ports, seconds):
        self.s = stubs
        self.ports = ports
        self.end = time.monotonic() + seconds
        self.random = random.Random(1)
        self.tallies = []

    def tally(self, name, allowed=(), **options):
        tally = Tally(name, allowed, **options)
        self.tallies.append(tally)
        return tally

    # Bench: unary, server streams, ping-pong.
    def bench_unary(self):
        s, tally = self.s, self.tally("bench unary 20/s")
        bench = s.bench_rpc.BenchStub(channel(self.ports["bench"]))
        payload = s.bench_pb.Payload(body=b"u" * 256)
        every(0.05, self.end, lambda: tally.run(lambda: bench.Unary(payload, timeout=2)))

    def bench_late(self):
        """Calls whose 1 ms deadline mostly passes: DEADLINE_EXCEEDED on either side."""
        s, tally = self.s, self.tally("bench unary, 1 ms deadline, 2/s", tolerated={"OK", "DEADLINE_EXCEEDED"})
        bench = s.bench_rpc.BenchStub(channel(self.ports["bench"]))
        payload = s.bench_pb.Payload(body=b"l" * 64)
        every(0.5, self.end, lambda: tally.run(lambda: bench.Unary(payload, timeout=0.001)))

    def bench_streams(self):
        s = self.s
        whole, cut = self.tally("bench server stream (200 messages) 1/s"), self.tally("bench server stream cancelled midway", ["CANCELLED"])
        bench = s.bench_rpc.BenchStub(channel(self.ports["bench"]))

        def full():
            count = sum(1 for _ in bench.ServerStream(s.bench_pb.Payload(body=b"s" * 512, seq=200), timeout=5))
            if count != 200:
                raise RuntimeError(f"{count} messages")

        def cancelled():
            stream = bench.ServerStream(s.bench_pb.Payload(body=b"c" * 512, seq=10**9), timeout=5)
            for index, _ in enumerate(stream):
                if index == 300:
                    break
            stream.cancel()

        def round():
            whole.run(full)
            if self.random.random() < 0.3:
                cut.run(cancelled)

        every(1.0, self.end, round)

    def bench_ping_pong(self):
        s = self.s
        tally = self.tally("bench ping-pong (20 round trips) 1/s; 1 in 4 abandoned midway", ["CANCELLED"])
        bench = s.bench_rpc.BenchStub(channel(self.ports["bench"]))

        def exchange():
            requests = Requests()
            calls = bench.PingPong(iter(requests), timeout=5)
            abandon = self.random.random() < 0.25
            try:
                for index in range(20):
                    requests.put(s.bench_pb.Payload(body=b"p", seq=index))
                    next(calls)
                    if abandon and index == 10:
                        calls.cancel()
                        return
                requests.close()
                for _ in calls:
                    pass
            finally:
                requests.close()

        every(1.0, self.end, lambda: tally.run(exchange))

    # Interop: client streaming, which the bench service lacks.
    def client_streaming(self):
        s, tally = self.s, self.tally("interop client stream (10 messages) 2/s")
        test = s.test_rpc.TestServiceStub(channel(self.ports["interop"]))
        payload = s.messages_pb.Payload(body=b"i" * 1000)

        def call():
            response = test.StreamingInputCall(iter([s.messages_pb.StreamingInputCallRequest(payload=payload)] * 10), timeout=5)
            if response.aggregated_payload_size != 10_000:
                raise RuntimeError(f"aggregated {response.aggregated_payload_size}")

        every(0.5, self.end, lambda: tally.run(call))

    # Orders: publishes, watchers that leave and resume, a follower changing its include set.
    def orders(self):
        s = self.s
        pb = s.orders_pb
        orders = s.orders_rpc.OrderTrackingStub(channel(self.ports["orders"]))
        ids = [f"soak-{uuid.uuid4().hex[:6]}-{n}" for n in range(3)]
        for order_id in ids:
            orders.CreateOrder(pb.CreateOrderRequest(order_id=order_id, customer_id="alice"), metadata=STAFF, timeout=10)
        self.order_ids = ids
        tally, count = self.tally("orders publish 5/s"), [0]

        def publish():
            count[0] += 1
            order_id = ids[count[0] % len(ids)]
            tally.run(lambda: orders.PublishUpdate(pb.PublishUpdateRequest(
                order_id=order_id, courier_moved=pb.CourierMoved(latitude=52.5 + count[0] * 1e-6, longitude=13.4)),
                metadata=STAFF, timeout=5))

        every(0.2, self.end, publish)

    def order_watchers(self):
        s = self.s
        pb = s.orders_pb
        while not getattr(self, "order_ids", None) and time.monotonic() < self.end:
            time.sleep(0.1)
        orders = s.orders_rpc.OrderTrackingStub(channel(self.ports["orders"]))
        tally = self.tally("orders watch, left after 2-6 s and resumed", ["CANCELLED"])
        since = {}

        def watch():
            order_id = self.random.choice(self.order_ids)
            stream = orders.WatchOrder(pb.WatchOrderRequest(order_id=order_id, since_update_id=since.get(order_id, "")),
                                       metadata=STAFF, timeout=30)
            leave = time.monotonic() + self.random.uniform(2, 6)
            timer = threading.Timer(leave - time.monotonic(), stream.cancel)
            timer.start()
            try:
                for update in stream:
                    since[order_id] = update.update_id
            except Exception as error:
                if time.monotonic() < leave - 0.1:
                    raise
                del error  # cancelled by the timer: the watcher left
            finally:
                timer.cancel()

        every(0.5, self.end, lambda: tally.run(watch))

    # Chat: participants who join, talk once a second, and leave.
    def chat(self, nickname):
        s = self.s
        pb = s.chat_pb
        chat = s.chat_rpc.ChatRoomStub(channel(self.ports["orders"]))
        tally = self.tally(f"chat participant {nickname}: join, 5-10 messages, leave")

        def session():
            requests = Requests(pb.ChatRequest(join=pb.Join(room="soak", nickname=f"{nickname}-{uuid.uuid4().hex[:4]}")))
            events = chat.Chat(iter(requests), timeout=30)
            reader = Drain(events)
            try:
                for index in range(self.random.randint(5, 10)):
                    requests.put(pb.ChatRequest(send=pb.Send(text=f"{nickname} says {index}")))
                    time.sleep(1)
            finally:
                requests.close()  # leaves the room: the server ends the call
            reader.result(10)

        every(0.5, self.end, lambda: tally.run(session))

    # SwiftKart: followers who leave, the schedule, an unknown race.
    def race_follower(self, number):
        s = self.s
        pb = s.kart_pb
        kart = s.kart_rpc.SwiftKartServiceStub(channel(self.ports["swiftkart"]))
        races = [race.name for race in kart.ListRaces(pb.ListRacesRequest(), timeout=10).races]
        tally = self.tally(f"swiftkart follower {number}: standings, left (half-close) after 3-10 s")

        def follow():
            requests = Requests(pb.FollowRaceRequest(race_name=self.random.choice(races[:6]),
                                                     event_types=[pb.RACE_EVENT_TYPE_STANDINGS]))
            responses = kart.FollowRace(iter(requests), timeout=30)
            leave = time.monotonic() + self.random.uniform(3, 10)
            timer = threading.Timer(leave - time.monotonic(), requests.close)  # half-close: the server ends it
            timer.start()
            try:
                for _ in responses:
                    pass
            finally:
                timer.cancel()
                requests.close()

        every(1.0, self.end, lambda: tally.run(follow))

    def schedule(self):
        s = self.s
        pb = s.kart_pb
        kart = s.kart_rpc.SwiftKartServiceStub(channel(self.ports["swiftkart"]))
        listed, unknown = self.tally("swiftkart list races 2/s"), self.tally("swiftkart follow an unknown race", success="NOT_FOUND")

        def round():
            listed.run(lambda: kart.ListRaces(pb.ListRacesRequest(limit=5), timeout=5))
            if self.random.random() < 0.1:
                unknown.run(lambda: [None for _ in kart.FollowRace(iter([pb.FollowRaceRequest(race_name="Atlantis")]), timeout=5)])

        every(0.5, self.end, round)

    def run(self):
        roles = [self.bench_unary, self.bench_late, self.bench_streams, self.bench_ping_pong, self.client_streaming,
                 self.orders, self.order_watchers, lambda: self.chat("ada"), lambda: self.chat("bo"),
                 lambda: self.race_follower(1), lambda: self.race_follower(2), self.schedule]
        return run_roles(roles, self.tallies, self.end, "traffic")


# ---------------------------------------------------------------------------------------------
# Churn: Pitlane's own clients, killed (SIGKILL) and started again


class Churn:
    """Loops of Pitlane's command-line clients and the load tools, each bounded in rate, most
    ended with SIGKILL at a random moment and started again."""

    def __init__(self, bin_dir, ports, seconds, python):
        self.bin = bin_dir
        self.ports = ports
        self.end = time.monotonic() + seconds
        self.python = python
        self.random = random.Random(2)
        self.tallies = []

    def exe(self, name):
        return os.path.join(self.bin, name)

    def tally(self, name, **options):
        tally = Tally(name, **options)
        self.tallies.append(tally)
        return tally

    def pause(self, seconds):
        time.sleep(max(0.0, min(seconds, self.end - time.monotonic())))

    def killed_after(self, tally, args, ready, seconds, env=None, stdin=None, feed=None):
        """Starts a client, waits for its `ready(child)` line, lets it run `seconds`, kills it
        with SIGKILL; records OK if it was ready, else what it said."""
        from processes import Child
        child = Child(args, env=env, stdin=stdin if stdin is not None else subprocess.DEVNULL)
        try:
            if not ready(child):
                tally.record("NOT_READY", child.tail(2))
                return
            stop = time.monotonic() + min(seconds, max(0.5, self.end - time.monotonic()))
            while time.monotonic() < stop and child.alive():
                if feed:
                    feed(child)
                time.sleep(min(1.0, max(0.0, stop - time.monotonic())))
            # Still running when killed, or ended well by itself (a race that is over).
            tally.record("OK" if child.alive() or child.process.poll() == 0 else f"EXITED_{child.process.poll()}",
                         child.tail(2))
        finally:
            child.stop(signal.SIGKILL)

    def completed(self, tally, args, timeout, env=None, check=None):
        """Runs a client to its end; OK if it exits 0 (and `check(child)` holds)."""
        from processes import Child
        child = Child(args, env=env)
        status = child.wait(timeout)
        if status == 0 and (check is None or check(child)):
            tally.record("OK")
        else:
            tally.record("TIMEOUT" if status is None else f"EXIT_{status}", child.tail(2))
        child.stop(signal.SIGKILL)

    def order_watchers(self, order_id, number):
        tally = self.tally(f"orders watch (CLI) {number}, SIGKILL after 3-12 s")
        env = {"ORDERS_TOKEN": "staff-token"}
        while time.monotonic() < self.end:
            self.killed_after(tally, [self.exe("orders"), "watch", order_id, "--port", self.ports["orders"]],
                              lambda child: child.wait_for(lambda line: line.endswith("live"), 15, "stderr"),
                              self.random.uniform(3, 12), env=env)
            self.pause(0.5)

    def order_publisher(self, order_id):
        tally = self.tally("orders publish (CLI, a process each) every 1.5 s")
        while time.monotonic() < self.end:
            self.completed(tally, [self.exe("orders"), "publish", order_id, "eta", f"{self.random.randint(1, 60)} min",
                                   "--port", self.ports["orders"]], 15, env={"ORDERS_TOKEN": "staff-token"})
            self.pause(1.5)

    def chatter(self, nickname):
        tally = self.tally(f"chat (CLI) {nickname}: a line a second, SIGKILL after 5-15 s")

        def say(child):
            try:
                child.process.stdin.write(f"{nickname} at {time.time():.0f}\n".encode())
                child.process.stdin.flush()
            except OSError:
                pass

        while time.monotonic() < self.end:
            self.killed_after(tally, [self.exe("chat"), "soak", "--nick", f"{nickname}{self.random.randint(0, 999)}",
                                      "--port", self.ports["orders"]],
                              lambda child: child.wait_for(lambda line: line.startswith("-- you joined"), 15),
                              self.random.uniform(5, 15), stdin=subprocess.PIPE, feed=say)
            self.pause(0.5)

    def race_follower(self, number):
        killed = self.tally(f"swiftkart follow --plain (CLI) {number}, SIGKILL after 3-10 s")
        finished = self.tally(f"swiftkart follow --plain --seconds 3 (CLI) {number}, to its end")
        rounds = 0
        while time.monotonic() < self.end:
            race = self.random.choice(["Duck Pond Dash", "Sonoma Sprint", "Lake Garda Trophy"])
            args = [self.exe("swiftkart"), "follow", race, "--plain", "--port", self.ports["swiftkart"]]
            rounds += 1
            if rounds % 3:  # two of three killed, the third to its end
                self.killed_after(killed, args, lambda child: child.wait_for(lambda line: "lap" in line, 15),
                                  self.random.uniform(3, 10))
            else:
                self.completed(finished, args + ["--seconds", "3"], 30)
            self.pause(0.5)

    def schedule(self):
        tally = self.tally("swiftkart races (CLI) every 5 s")
        while time.monotonic() < self.end:
            self.completed(tally, [self.exe("swiftkart"), "races", "--limit", "5", "--port", self.ports["swiftkart"]], 20,
                           check=lambda child: child.wait_for(lambda line: line == "5 races", 1) is not None)
            self.pause(5)

    def idle_streams(self):
        tally = self.tally("pitlane-bench-client --idle-streams 20, SIGKILL after 1-8 s")
        while time.monotonic() < self.end:
            self.killed_after(tally, [self.exe("pitlane-bench-client"), "--port", self.ports["bench"], "--idle-streams", "20",
                                      "--seconds", "60"],
                              lambda child: child.wait_for(lambda line: "streams open" in line, 15),
                              self.random.uniform(1, 8))
            self.pause(1)

    def bursts(self):
        """A full-speed pitlane-bench-client run (about 3 s) once a minute, and h2load unary
        calls twice a minute: gRPC at 40/s, Connect over HTTP/1.1 and gRPC-Web at 20/s, for
        10 s each."""
        burst = self.tally("pitlane-bench-client streams burst (1 s each) once a minute")
        h2load = self.tally("h2load unary, 2 connections, 40 calls/s for 10 s, every 30 s")
        web = self.tally("h2load Connect over HTTP/1.1 and gRPC-Web, 20 calls/s each for 10 s, every 30 s")
        directory = tempfile.mkdtemp(prefix="soak-h2load-")
        body, bare = os.path.join(directory, "payload"), os.path.join(directory, "bare")
        with open(body, "wb") as file:  # one length-prefixed bench.v1.Payload: field 1, 16 bytes
            file.write(b"\x00\x00\x00\x00\x12\x0a\x10" + b"PitlaneSoakBody!")
        with open(bare, "wb") as file:  # the same message, bare, as Connect's unary body
            file.write(b"\x0a\x10" + b"PitlaneSoakBody!")
        round = 0
        while time.monotonic() < self.end:
            if round % 2 == 0:
                self.completed(burst, [self.exe("pitlane-bench-client"), "--port", self.ports["bench"], "--seconds", "1"], 30)
            if shutil.which("h2load"):
                self.completed(h2load, ["h2load", "-D", "10", "-c", "2", "-m", "2", "--rps", "20",
                                        "-H", "content-type: application/grpc", "-H", "te: trailers", "-d", body,
                                        f"http://127.0.0.1:{self.ports['bench']}/bench.v1.Bench/Unary"], 30,
                               check=lambda child: child.wait_for(lambda line: " 0 failed, 0 errored" in line, 1) is not None)
                for content_type, payload, flags in (("application/proto", bare, ["--h1", "-m", "1"]),
                                                     ("application/grpc-web+proto", body, ["-m", "2"])):
                    self.completed(web, ["h2load", "-D", "10", "-c", "1", "--rps", "20", *flags, "-H", f"content-type: {content_type}",
                                         "-d", payload, f"http://127.0.0.1:{self.ports['bench']}/bench.v1.Bench/Unary"], 30,
                                   check=lambda child: child.wait_for(lambda line: " 0 failed, 0 errored" in line, 1) is not None)
            round += 1
            # The three h2load runs take 30 s: the next round starts at once.

    def holders(self):
        tally = self.tally("grpcio holder (streams on every server), SIGKILL after 10-25 s")
        args = [self.python, os.path.abspath(__file__), "holder", "--bench", self.ports["bench"], "--orders",
                self.ports["orders"], "--swiftkart", self.ports["swiftkart"]]
        while time.monotonic() < self.end:
            self.killed_after(tally, args, lambda child: child.wait_for(lambda line: line == "holding", 30),
                              self.random.uniform(10, 25))
            self.pause(1)

    def run(self, order_id):
        roles = [lambda: self.order_watchers(order_id, 1), lambda: self.order_watchers(order_id, 2),
                 lambda: self.order_publisher(order_id), lambda: self.chatter("cy"), lambda: self.chatter("di"),
                 lambda: self.race_follower(1), lambda: self.race_follower(2), self.schedule, self.idle_streams,
                 self.bursts, self.holders]
        return run_roles(roles, self.tallies, self.end, "churn")


def run_roles(roles, tallies, end, what):
    """Runs each role on a thread until `end` (plus time to finish); prints every tally and
    "WHAT: ok" or "WHAT: FAIL ..."; returns 0 or 1."""
    crashed = []

    def guarded(role):
        try:
            role()
        except Exception as error:
            crashed.append(f"{type(error).__name__}: {error}")

    threads = [threading.Thread(target=guarded, args=(role,), daemon=True) for role in roles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, end - time.monotonic()) + 40)
    problems = [problem for tally in tallies if (problem := tally.problem())] + crashed
    for tally in tallies:
        print(f"  {tally.name}: " + ", ".join(f"{code} {count}" for code, count in sorted(tally.counts.items())))
    print(f"{what}: ok" if not problems else f"{what}: FAIL " + "; ".join(problems), flush=True)
    return 1 if problems else 0


# ---------------------------------------------------------------------------------------------
# Holder: streams to be killed with


def hold(stubs, ports):
    """Opens streams on every server, answered once each, and holds them until killed."""
    s = stubs
    bench = s.bench_rpc.BenchStub(channel(ports["bench"]))
    orders = s.orders_rpc.OrderTrackingStub(channel(ports["orders"]))
    kart = s.kart_rpc.SwiftKartServiceStub(channel(ports["swiftkart"]))
    chat = s.chat_rpc.ChatRoomStub(channel(ports["orders"]))
    held = []
    for index in range(10):
        requests = Requests(s.bench_pb.Payload(body=b"h", seq=index))
        calls = bench.PingPong(iter(requests), timeout=600)
        next(calls)
        held.append((requests, calls))
    order_id = f"held-{uuid.uuid4().hex[:6]}"
    orders.CreateOrder(s.orders_pb.CreateOrderRequest(order_id=order_id, customer_id="bob"), metadata=STAFF, timeout=10)
    for _ in range(5):
        held.append(orders.WatchOrder(s.orders_pb.WatchOrderRequest(order_id=order_id), metadata=STAFF, timeout=600))
    for _ in range(2):
        requests = Requests(s.chat_pb.ChatRequest(join=s.chat_pb.Join(room="soak", nickname=f"held-{uuid.uuid4().hex[:4]}")))
        events = chat.Chat(iter(requests), timeout=600)
        next(events)
        held.append((requests, events))
        requests = Requests(s.kart_pb.FollowRaceRequest(race_name="Duck Pond Dash",
                                                        event_types=[s.kart_pb.RACE_EVENT_TYPE_KART_LOCATIONS]))
        follow = kart.FollowRace(iter(requests), timeout=600)
        next(follow)
        held.append((requests, follow))
        threading.Thread(target=lambda follow=follow: [None for _ in follow], daemon=True).start()
    print("holding", flush=True)
    time.sleep(600)


# ---------------------------------------------------------------------------------------------
# Verdict


def read_samples(path):
    """{server: [(seconds, {"rss_kib", "fds", "threads"})]} from soak's samples file
    (lines: SECONDS SERVER RSS_KIB FDS THREADS, or SECONDS SERVER gone)."""
    curves = {}
    with open(path) as samples:
        for line in samples:
            fields = line.split()
            if len(fields) == 5:
                seconds, server, rss, fds, threads = fields
                curves.setdefault(server, []).append((float(seconds), {"rss_kib": int(rss), "fds": int(fds),
                                                                      "threads": int(threads)}))
            elif len(fields) == 3 and fields[2] == "gone":
                curves.setdefault(fields[1], []).append((float(fields[0]), None))
    return curves


def print_table(curves):
    servers = sorted(curves)
    print("  t(s) " + "".join(f"| {server:^26} " for server in servers))
    print("       " + "".join(f"| {'RSS MiB':>8} {'fds':>5} {'thr':>4}      " for _ in servers))
    times = sorted({seconds for curve in curves.values() for seconds, _ in curve})
    for seconds in times:
        row = f"{seconds:6.0f} "
        for server in servers:
            sample = next((stats for at, stats in curves[server] if at == seconds), "missing")
            if sample is None:
                row += f"| {'gone':^26} "
            elif sample == "missing":
                row += f"| {'':26} "
            else:
                row += f"| {sample['rss_kib'] / 1024:8.1f} {sample['fds']:5d} {sample['threads']:4d}      "
        print(row)


def judge(curves, warm_up):
    """Growth findings: [(server, metric, baseline, end, allowed)], and servers that died."""
    rss_percent = float(os.environ.get("SOAK_RSS_PERCENT", 10))
    rss_kib = float(os.environ.get("SOAK_RSS_KIB", 4096))
    allowed = {"fds": float(os.environ.get("SOAK_FDS", 3)), "threads": float(os.environ.get("SOAK_THREADS", 2))}
    findings, died, lines = [], [], []
    for server, curve in sorted(curves.items()):
        if any(stats is None for _, stats in curve):
            died.append(server)
            continue
        end_time = curve[-1][0]
        baseline = [stats for at, stats in curve if warm_up <= at < warm_up + 60] or [curve[0][1]]
        tail = [stats for at, stats in curve if at >= end_time * 2 / 3]
        for metric in ("rss_kib", "fds", "threads"):
            base = statistics.median(stats[metric] for stats in baseline)
            end = statistics.median(stats[metric] for stats in tail)
            limit = max(base * rss_percent / 100, rss_kib) if metric == "rss_kib" else allowed[metric]
            lines.append(f"  {server} {metric}: {base:g} after warm-up → {end:g} at the end (allowed +{limit:g})")
            if end - base > limit:
                findings.append(f"{server} {metric} {base:g} → {end:g} (+{end - base:g}, allowed +{limit:g})")
    return findings, died, lines


def verdict(path, warm_up):
    curves = read_samples(path)
    if not curves:
        print("verdict: FAIL no samples")
        return 1
    print_table(curves)
    findings, died, lines = judge(curves, warm_up)
    print("\n".join(lines))
    if died:
        print(f"verdict: FAIL {', '.join(died)} exited during the soak")
        return 1
    if findings:
        print("verdict: GROWTH after warm-up: " + "; ".join(findings))
        return 1
    print(f"verdict: no growth after warm-up ({warm_up:g} s) across {len(curves)} servers")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("traffic", "churn", "holder"):
        command = commands.add_parser(name)
        for server in ("bench", "interop", "orders", "swiftkart"):
            command.add_argument(f"--{server}", type=int, required=server != "interop" or name == "traffic")
        command.add_argument("--seconds", type=float, default=60)
        command.add_argument("--bin", help="the Pitlane executables (churn)")
    judged = commands.add_parser("verdict")
    judged.add_argument("samples")
    judged.add_argument("--warm-up", type=float, default=60)
    args = parser.parse_args()

    if args.command == "verdict":
        sys.exit(verdict(args.samples, args.warm_up))
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    ports = {server: getattr(args, server) for server in ("bench", "interop", "orders", "swiftkart")}
    import processes
    from peer_checks import exit_now
    processes.install_cleanup()  # SIGTERM from soak stops the clients this started, too
    if args.command == "churn":
        order_id = f"churn-{uuid.uuid4().hex[:6]}"
        subprocess.run([os.path.join(args.bin, "orders"), "create", "--id", order_id, "--customer", "alice",
                        "--port", str(ports["orders"]), "--token", "staff-token"], check=True, capture_output=True, timeout=30)
        status = Churn(args.bin, ports, args.seconds, sys.executable).run(order_id)
        processes.stop_all()
        exit_now(status)
    stubs = Stubs()
    if args.command == "holder":
        hold(stubs, ports)
        exit_now(0)
    exit_now(Traffic(stubs, ports, args.seconds).run())  # no interpreter shutdown: grpcio could hang it


if __name__ == "__main__":
    main()
