#!/usr/bin/env python3
"""Network faults against the real Pitlane servers and clients, through fault_proxy.py.

  fault_checks.py --bin DIR [--only a,b,...] [--netns auto|on|off]

DIR holds the built executables (pitlane-bench-server, orders-server, orders, swiftkart-server,
swiftkart, pitlane-bench-client), e.g. .build/release, or a copy of them. Starts the three
servers on 127.0.0.1, generates grpcio stubs from the project's .proto files, and runs:

  a  unary calls with deadlines through 200 ms latency + 5 % of chunks delayed 1 s
  b  a connection reset mid-stream: UNAVAILABLE promptly, the next call succeeds
  c  a silent partition longer than the client's keepalive timeout (and the server's ping policy)
  d  `orders watch` across partitions and resets: every update once, in order
  e  `swiftkart follow` (and a grpcio follower) across a partition, then following again
  f  afterwards every server is back to its descriptors, idle and answering
  g  (root, iproute2) a real kernel partition: servers in a network namespace behind a veth
     pair on 169.254.77.0/30, the link set down and up again

Prints "ok NAME" or "FAIL NAME: why" per check, indented observations, and a closing
"checks: N ok, M failed"; exits non-zero on any failure. Every scenario has a wall-clock
limit, and every process the script starts is stopped when it ends.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # the checks report what grpcio saw themselves
import grpc  # noqa: E402 (after its environment)

import processes
from peer_checks import describe_delivery, exit_now, load
from processes import Child, Requests, start_server

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON = sys.executable
STAFF = [("authorization", "Bearer staff-token")]

# A grpcio client that pings every second and gives up on a ping unanswered for a second,
# with or without calls, without limit on pings between data; and reconnects quickly.
KEEPALIVE = [("grpc.keepalive_time_ms", 1000), ("grpc.keepalive_timeout_ms", 1000),
             ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0),
             # grpcio 1.85 waits for a keepalive ACK for the general ping timeout (1 min by
             # default), not keepalive_timeout_ms: without this a partition is noticed after 1 min.
             ("grpc.http2.ping_timeout_ms", 1000)]
QUICK_RECONNECT = [("grpc.initial_reconnect_backoff_ms", 200), ("grpc.min_reconnect_backoff_ms", 200),
                   ("grpc.max_reconnect_backoff_ms", 1000)]


# ---------------------------------------------------------------------------------------------
# Results


class Report:
    """Named results and the observations printed under them."""

    def __init__(self):
        self.results = []
        self.lock = threading.Lock()

    def ok(self, name, *observations):
        self._add(name, None, observations)

    def fail(self, name, why, *observations):
        self._add(name, why, observations)

    def _add(self, name, why, observations):
        with self.lock:
            self.results.append((name, why))
            print(f"ok {name}" if why is None else f"FAIL {name}: {why}", flush=True)
            for line in observations:
                print(f"    {line}", flush=True)

    def check(self, name, condition, why, *observations):
        (self.ok(name, *observations) if condition else self.fail(name, why, *observations))

    def finish(self):
        failed = sum(why is not None for _, why in self.results)
        print(f"checks: {len(self.results) - failed} ok, {failed} failed", flush=True)
        return 1 if failed else 0


def note(text):
    print(f"    {text}", flush=True)


# ---------------------------------------------------------------------------------------------
# The world: servers, stubs, proxies


class Proxy:
    """A fault_proxy.py in front of 127.0.0.1:PORT, driven through its standard input."""

    def __init__(self, target_port, *flags):
        self.child = Child([PYTHON, os.path.join(HERE, "fault_proxy.py"), "--target", f"127.0.0.1:{target_port}", *flags],
                           name="fault_proxy", stdin=subprocess.PIPE)
        line = self.child.wait_for(lambda text: text.startswith("listening"), 15)
        if line is None:
            raise RuntimeError(f"fault_proxy did not start: {self.child.tail()}")
        self.port = int(line.split()[1])
        self.answers = 1  # stdout lines read so far

    def send(self, command, timeout=5):
        """Sends one control line; returns its answer ("ok ..."), raising on "error" or silence."""
        self.child.process.stdin.write((command + "\n").encode())
        self.child.process.stdin.flush()
        index = self.answers
        self.answers += 1
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if len(self.child.stdout) > index:
                answer = self.child.stdout[index]
                if not answer.startswith("ok"):
                    raise RuntimeError(f"fault_proxy: {command!r}: {answer}")
                return answer
            time.sleep(0.02)
        raise RuntimeError(f"fault_proxy did not answer {command!r} in {timeout} s (exit {self.child.process.poll()}): "
                           + " | ".join(self.child.stderr[-20:]))

    @property
    def target(self):
        return f"127.0.0.1:{self.port}"

    def close(self):
        if self.child.alive():
            try:
                self.send("quit", timeout=2)
            except (RuntimeError, OSError):
                pass
        self.child.stop(grace=3)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


class World:
    """The servers under test, their baselines, the stubs, and the client executables."""

    def __init__(self, bin_dir):
        self.bin = bin_dir
        self.tmp = tempfile.mkdtemp(prefix="pitlane-faults-")
        self.servers = {}    # name -> (child, port)
        self.baseline = {}   # name -> proc_stats after warm-up
        proto_dir = os.path.join(ROOT, "Protos")
        self.bench_pb, self.bench_rpc = load(os.path.join(ROOT, "Services/Benchmarks/GRPCBench"), "bench.proto")
        self.orders_pb, self.orders_rpc = load(proto_dir, "orders.proto")
        self.kart_pb, self.kart_rpc = load(proto_dir, "swiftkart.proto")
        self.health_pb, self.health_rpc = load(os.path.join(ROOT, "Sources/PitlaneHealth"), "health.proto")

    def exe(self, name):
        return os.path.join(self.bin, name)

    def start(self):
        self.servers["bench"] = start_server([self.exe("pitlane-bench-server"), "--port", "0"], "pitlane-bench-server")
        self.servers["orders"] = start_server([self.exe("orders-server"), "--port", "0",
                                               "--database", os.path.join(self.tmp, "orders.sqlite")], "orders-server")
        # Twice real speed: a long race lasts minutes, standings still come every second.
        self.servers["swiftkart"] = start_server([self.exe("swiftkart-server"), "--port", "0", "--speed", "2",
                                                  "--database", os.path.join(self.tmp, "swiftkart.sqlite")],
                                                 "swiftkart-server")
        self.warm_up()
        for name in self.servers:
            self.baseline[name] = stable_stats(self.pid(name))

    def port(self, name):
        return self.servers[name][1]

    def pid(self, name):
        return self.servers[name][0].pid

    def direct(self, name, options=()):
        return grpc.insecure_channel(f"127.0.0.1:{self.port(name)}", options=list(options))

    def warm_up(self):
        """One call of each kind the checks make, so lazily opened files (SQLite's WAL, ...)
        count in the baseline."""
        with self.direct("bench") as channel:
            bench = self.bench_rpc.BenchStub(channel)
            bench.Unary(self.bench_pb.Payload(body=b"warm"), timeout=10)
            list(bench.ServerStream(self.bench_pb.Payload(body=b"warm", seq=3), timeout=10))
        with self.direct("orders") as channel:
            orders = self.orders_rpc.OrderTrackingStub(channel)
            self.order_id = f"faults-{uuid.uuid4().hex[:8]}"
            orders.CreateOrder(self.orders_pb.CreateOrderRequest(order_id=self.order_id, customer_id="alice"),
                               metadata=STAFF, timeout=10)
            publish(self, orders, self.order_id, "warm")
        with self.direct("swiftkart") as channel:
            races = self.kart_rpc.SwiftKartServiceStub(channel).ListRaces(self.kart_pb.ListRacesRequest(), timeout=10).races
            # The race with the most laps: at speed 2 it outlasts the checks.
            self.race = max(races, key=lambda race: race.laps).name

    def stop(self):
        for child, _ in self.servers.values():
            child.stop(grace=10)
        shutil.rmtree(self.tmp, ignore_errors=True)


def stable_stats(pid, hold=1.0, timeout=10):
    """A process's stats once its descriptor count has held still for `hold` seconds."""
    end = time.monotonic() + timeout
    last, since = processes.proc_stats(pid), time.monotonic()
    while last is not None and time.monotonic() < end and time.monotonic() - since < hold:
        time.sleep(0.2)
        stats = processes.proc_stats(pid)
        if stats is None or stats["fds"] != last["fds"]:
            since = time.monotonic()
        last = stats
    return last


def wait_stats(pid, good, timeout):
    """A process's stats as soon as `good(stats)`, or the last sample after `timeout` seconds."""
    end = time.monotonic() + timeout
    stats = processes.proc_stats(pid)
    while stats is not None and not good(stats) and time.monotonic() < end:
        time.sleep(0.25)
        stats = processes.proc_stats(pid)
    return stats


def publish(world, orders, order_id, text):
    """Publishes an ETA update directly to orders-server; returns its update id."""
    update = orders.PublishUpdate(world.orders_pb.PublishUpdateRequest(
        order_id=order_id, eta_changed=world.orders_pb.EtaChanged(eta_display=text)), metadata=STAFF, timeout=10)
    return update.update_id




def rpc_code(call):
    """Runs `call`; returns (status code, details, seconds it took)."""
    start = time.monotonic()
    try:
        call()
        return grpc.StatusCode.OK, "", time.monotonic() - start
    except grpc.RpcError as error:
        return error.code(), error.details(), time.monotonic() - start


def stream_error(iterator):
    """Reads `iterator` to its end; returns (status code, details, seconds) when it ends."""
    def drain():
        for _ in iterator:
            pass
    return rpc_code(drain)


# ---------------------------------------------------------------------------------------------
# a. latency and delayed chunks


def scenario_a(world, report):
    pb, rpc = world.bench_pb, world.bench_rpc
    deadline, margin, calls = 1.5, 0.5, 80
    allowed = {grpc.StatusCode.OK, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE}
    with Proxy(world.port("bench"), "--latency", "200", "--delay-chunks", "0.05", "1000", "--seed", "7") as proxy:
        with grpc.insecure_channel(proxy.target) as channel:
            bench = rpc.BenchStub(channel)
            body = b"x" * 64

            def call(index):
                return rpc_code(lambda: bench.Unary(pb.Payload(body=body, seq=index), timeout=deadline))

            with ThreadPoolExecutor(8) as pool:
                results = list(pool.map(call, range(calls)))
        codes = {}
        for code, _, _ in results:
            codes[code.name] = codes.get(code.name, 0) + 1
        slowest = max(seconds for _, _, seconds in results)
        odd = [f"{code.name} {details!r}" for code, details, _ in results if code not in allowed]
        late = [seconds for _, _, seconds in results if seconds > deadline + margin]
        observed = f"{calls} calls, deadline {deadline} s: {codes}; slowest {slowest:.2f} s"
        report.check("a. unary through 200 ms latency + 5 % chunks delayed 1 s: OK/DEADLINE_EXCEEDED/UNAVAILABLE, none late",
                     not odd and not late and codes.get("OK", 0) > 0,
                     f"unexpected {odd[:3]}; {len(late)} past deadline + {margin} s; {codes}", observed)

        # Pitlane's own client through the same faults: sequential unary calls for 3 s.
        client = Child([world.exe("pitlane-bench-client"), "--port", proxy.port, "--unary-latency", "--seconds", "3"])
        status = client.wait(25)
        line = client.wait_for(lambda text: text.startswith("{"), 0.5) or ""
        report.check("a. pitlane-bench-client (Pitlane's client) through the same faults finishes",
                     status == 0 and '"per_s"' in line,
                     f"status {status}: {client.tail()}", line)
        client.stop(signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# b. connection reset mid-stream


def scenario_b(world, report):
    pb, rpc = world.bench_pb, world.bench_rpc
    prompt = 2.0
    with Proxy(world.port("bench")) as proxy, grpc.insecure_channel(proxy.target, options=QUICK_RECONNECT) as channel:
        bench = rpc.BenchStub(channel)

        # Server streaming: endless messages, reset after the first hundred.
        stream = bench.ServerStream(pb.Payload(body=b"y" * 100, seq=10**12), timeout=30)
        for index, _ in enumerate(stream):
            if index == 100:
                break
        proxy.send("reset")
        code, details, seconds = stream_error(stream)
        report.check("b. server stream reset mid-stream: UNAVAILABLE promptly",
                     code == grpc.StatusCode.UNAVAILABLE and seconds < prompt,
                     f"{code.name} {details!r} after {seconds:.2f} s", f"{code.name} after {seconds:.2f} s: {details}")

        # Bidirectional: a few round trips, then a reset with the stream idle.
        requests = Requests()
        calls = bench.PingPong(iter(requests), timeout=30)
        for index in range(5):
            requests.put(pb.Payload(body=b"ping", seq=index))
            next(calls)
        proxy.send("reset")
        code, details, seconds = stream_error(calls)
        requests.close()
        report.check("b. ping-pong stream reset while idle: UNAVAILABLE promptly",
                     code == grpc.StatusCode.UNAVAILABLE and seconds < prompt,
                     f"{code.name} {details!r} after {seconds:.2f} s", f"{code.name} after {seconds:.2f} s: {details}")

        code, details, seconds = rpc_code(lambda: bench.Unary(pb.Payload(body=b"after"), timeout=5, wait_for_ready=True))
        report.check("b. a new call after the resets succeeds", code == grpc.StatusCode.OK,
                     f"{code.name} {details!r}", f"in {seconds:.2f} s")

        # Pitlane's client: a server stream, reset 1.5 s in; it must end promptly, not hang.
        client = Child([world.exe("pitlane-bench-client"), "--port", proxy.port, "--seconds", "20"])
        time.sleep(1.5)
        proxy.send("reset")
        reset_at = time.monotonic()
        status = client.wait(10)
        seconds = time.monotonic() - reset_at
        said = client.wait_for(lambda line: "rror" in line, 1, stream="stderr") or client.tail(2)
        report.check("b. pitlane-bench-client's stream reset mid-stream: the client ends promptly with an error",
                     status not in (None, 0) and seconds < prompt + 1,
                     f"status {status} after {seconds:.2f} s: {said}", f"exit {status} after {seconds:.2f} s: {said}")
        client.stop(signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# c. silent partition and keepalive


def scenario_c(world, report):
    pb, rpc = world.bench_pb, world.bench_rpc

    # c0: the server's ping policy (minimumPingInterval 5 min, 2 strikes): a client pinging every
    # second on a stream the server sends nothing on is told too_many_pings.
    with world.direct("bench", KEEPALIVE) as channel:
        requests = Requests()
        calls = rpc.BenchStub(channel).PingPong(iter(requests), timeout=15)
        requests.put(pb.Payload(body=b"once"))
        next(calls)
        code, details, seconds = stream_error(calls)
        requests.close()
    report.check("c. server ping policy: 1 s keepalive on an idle stream is ended (too_many_pings)",
                 code == grpc.StatusCode.UNAVAILABLE and seconds < 12,
                 f"{code.name} {details!r} after {seconds:.2f} s",
                 f"{code.name} after {seconds:.2f} s: {details!r} (no flag on the servers relaxes this)")

    # c1: keepalive through a blackhole. The stream carries data every 0.3 s first, which
    # forgives the ping strikes, so only the partition can end it.
    limit = 1.0 + 1.0 + 3.0  # keepalive time + timeout + margin
    with Proxy(world.port("bench")) as proxy, grpc.insecure_channel(proxy.target, options=KEEPALIVE + QUICK_RECONNECT) as channel:
        bench = rpc.BenchStub(channel)
        requests = Requests()
        calls = bench.PingPong(iter(requests), timeout=30)
        for index in range(7):
            requests.put(pb.Payload(body=b"ping", seq=index))
            next(calls)
            time.sleep(0.3)
        proxy.send("blackhole on")
        code, details, seconds = stream_error(calls)
        requests.close()
        report.check(f"c. blackhole: the keepalive client's stream fails UNAVAILABLE within {limit:.0f} s",
                     code == grpc.StatusCode.UNAVAILABLE and seconds < limit,
                     f"{code.name} {details!r} after {seconds:.2f} s", f"{code.name} after {seconds:.2f} s: {details!r}")
        time.sleep(1)
        proxy.send("blackhole off")
        code, details, seconds = rpc_code(lambda: bench.Unary(pb.Payload(body=b"healed"), timeout=10, wait_for_ready=True))
        report.check("c. after healing, a new call works", code == grpc.StatusCode.OK, f"{code.name} {details!r}",
                     f"in {seconds:.2f} s")

    # c2: Pitlane's CLIs (no keepalive flag) through a blackhole: their 10 s deadlines must end
    # the calls; the two run side by side.
    with Proxy(world.port("orders")) as orders_proxy, Proxy(world.port("swiftkart")) as kart_proxy:
        orders_proxy.send("blackhole on")
        kart_proxy.send("blackhole on")
        started = time.monotonic()
        get = Child([world.exe("orders"), "get", world.order_id, "--port", orders_proxy.port],
                    env={"ORDERS_TOKEN": "staff-token"})
        races = Child([world.exe("swiftkart"), "races", "--port", kart_proxy.port])
        for name, child in (("orders get", get), ("swiftkart races", races)):
            status = child.wait(max(0.1, started + 16 - time.monotonic()))
            seconds = time.monotonic() - started
            said = child.tail(1)
            report.check(f"c. `{name}` through a blackhole ends by its 10 s deadline (DEADLINE_EXCEEDED)",
                         status not in (None, 0) and seconds < 13 and "deadline" in said.lower(),
                         f"status {status} after {seconds:.1f} s: {said}", f"exit {status} after {seconds:.1f} s: {said}")
            child.stop(signal.SIGKILL)


# ---------------------------------------------------------------------------------------------
# d. orders watch across partitions and resets


def scenario_d(world, report):
    pb, rpc = world.orders_pb, world.orders_rpc
    with world.direct("orders") as channel:
        orders = rpc.OrderTrackingStub(channel)
        order_id = f"watch-{uuid.uuid4().hex[:8]}"
        orders.CreateOrder(pb.CreateOrderRequest(order_id=order_id, customer_id="alice"), metadata=STAFF, timeout=10)
        with Proxy(world.port("orders")) as proxy:
            watcher = Child([world.exe("orders"), "watch", order_id, "--port", proxy.port], env={"ORDERS_TOKEN": "staff-token"})
            if watcher.wait_for(lambda line: line.endswith("live"), 15, stream="stderr") is None:
                report.fail("d. orders watch goes live through the proxy", watcher.tail())
                return
            published, stop = [], threading.Event()

            def publisher():
                while not stop.is_set():
                    published.append(publish(world, orders, order_id, f"{len(published)} min"))
                    stop.wait(0.2)

            thread = threading.Thread(target=publisher, daemon=True)
            thread.start()
            steps = [(2, None), (6, "blackhole on"), (2, "blackhole off"), (3, "reset"),
                     (0, "blackhole on"), (4, "reset"), (3, "blackhole off")]
            for seconds, command in steps:
                if command:
                    proxy.send(command)
                time.sleep(seconds)
            stop.set()
            thread.join(15)
            last = published[-1]
            watcher.wait_for(lambda line: line.startswith(last), 20)
            printed = [line.split()[0] for line in watcher.stdout if re.match(r"^u\S+  ", line)]
            states = [line.removeprefix("orders: ") for line in watcher.stderr]
            watcher.stop()
        report.check("d. orders watch across blackholes and resets: every update once, in order",
                     printed == published, describe_delivery(published, printed, "printed"),
                     f"{len(published)} updates published, {len(printed)} printed; connection states: {' → '.join(states)}")


# ---------------------------------------------------------------------------------------------
# e. following a race across a partition


def is_leader_line(line):
    return re.match(r"^\s*1\. #", line) is not None


def scenario_e(world, report):
    pb, rpc = world.kart_pb, world.kart_rpc
    race = world.race
    with Proxy(world.port("swiftkart")) as proxy:
        follower = Child([world.exe("swiftkart"), "follow", race, "--plain", "--port", proxy.port])
        before = follower.wait_for_count(is_leader_line, 2, 15)
        proxy.send("blackhole on")
        time.sleep(6)
        during = follower.count(is_leader_line)
        proxy.send("blackhole off")
        after = follower.wait_for_count(is_leader_line, during + 2, 10)
        follower.stop()
        report.check("e. swiftkart follow --plain across a 6 s blackhole: standings stop, then resume on the same stream",
                     before >= 2 and after >= during + 2,
                     f"standings before {before}, at the end of the blackhole {during}, after healing {after}: {follower.tail(2)}",
                     f"{race}: standings {before} before, {during} by the end of the blackhole, {after} after healing")

        again = Child([world.exe("swiftkart"), "follow", race, "--plain", "--seconds", "4", "--port", proxy.port])
        status = again.wait(20)
        count = again.count(is_leader_line)
        report.check("e. swiftkart follow again after the partition gets standings", status == 0 and count >= 2,
                     f"status {status}, {count} standings: {again.tail(2)}", f"{count} standings in 4 s")
        again.stop(signal.SIGKILL)

        # A grpcio follower with keepalive notices the partition itself, then follows again.
        with grpc.insecure_channel(proxy.target, options=KEEPALIVE + QUICK_RECONNECT) as channel:
            kart = rpc.SwiftKartServiceStub(channel)

            def follow():
                requests = Requests()
                requests.put(pb.FollowRaceRequest(race_name=race, event_types=[pb.RACE_EVENT_TYPE_STANDINGS]))
                return requests, kart.FollowRace(iter(requests), timeout=60, wait_for_ready=True)

            requests, responses = follow()
            next(responses)
            proxy.send("blackhole on")
            code, details, seconds = stream_error(responses)
            requests.close()
            report.check("e. grpcio follower with keepalive: the partition ends the follow with UNAVAILABLE within 5 s",
                         code == grpc.StatusCode.UNAVAILABLE and seconds < 5,
                         f"{code.name} {details!r} after {seconds:.2f} s", f"{code.name} after {seconds:.2f} s")
            proxy.send("blackhole off")
            # The channel's dying connection may still take the first new call (grpcio ends it
            # with "ping timeout" when its last keepalive ACK never came): a follower that
            # gets UNAVAILABLE follows again, as any client would, up to three times.
            for attempt in range(3):
                requests, responses = follow()
                code, details, seconds = rpc_code(lambda: next(responses))
                requests.close()
                responses.cancel()
                if code != grpc.StatusCode.UNAVAILABLE:
                    break
            report.check("e. grpcio follower follows again after healing", code == grpc.StatusCode.OK,
                         f"{code.name} {details!r} on attempt {attempt + 1}",
                         f"first standings in {seconds:.2f} s, attempt {attempt + 1}")


# ---------------------------------------------------------------------------------------------
# f. nothing leaked


def scenario_f(world, report):
    for name, (child, port) in world.servers.items():
        base = world.baseline[name]
        stats = wait_stats(child.pid, lambda stats: stats["fds"] <= base["fds"], 10)
        if stats is None:
            report.fail(f"f. {name}: back to its baseline", "the server has exited", child.tail())
            continue
        cpu_before = processes.cpu_seconds(child.pid)
        time.sleep(2)
        cpu = (processes.cpu_seconds(child.pid) - cpu_before) / 2
        answered = rpc_code(lambda: health_check(world, name))[0]
        observed = (f"fds {base['fds']} → {stats['fds']}, threads {base['threads']} → {stats['threads']}, "
                    f"RSS {base['rss_kib']} → {stats['rss_kib']} KiB, CPU {cpu * 100:.1f} % idle, call {answered.name}")
        report.check(f"f. {name}: descriptors back to baseline, idle, answering",
                     stats["fds"] <= base["fds"] and cpu < 0.05 and answered == grpc.StatusCode.OK,
                     observed, observed)


def health_check(world, name):
    """A call that any of the servers answers: Health/Check, or the bench's Unary."""
    with world.direct(name) as channel:
        if name == "bench":
            world.bench_rpc.BenchStub(channel).Unary(world.bench_pb.Payload(body=b"f"), timeout=5)
        else:
            world.health_rpc.HealthStub(channel).Check(world.health_pb.HealthCheckRequest(), timeout=5)


# ---------------------------------------------------------------------------------------------
# g. a real kernel partition in a network namespace


class Namespace:
    """A network namespace joined to this one by a veth pair: 169.254.77.1 here, .2 there."""

    HOST, INSIDE = "169.254.77.1", "169.254.77.2"

    def __init__(self):
        tag = os.getpid() % 10**7
        self.name, self.outer, self.inner = f"pitlane-faults-{tag}", f"pfo{tag}", f"pfi{tag}"

    @staticmethod
    def available():
        return os.geteuid() == 0 and shutil.which("ip") is not None

    def run(self, *args):
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)

    def inside(self, *args):
        return ["ip", "netns", "exec", self.name, *args]

    def create(self):
        self.run("netns", "add", self.name)
        self.run("link", "add", self.outer, "type", "veth", "peer", "name", self.inner)
        self.run("link", "set", self.inner, "netns", self.name)
        self.run("addr", "add", f"{self.HOST}/30", "dev", self.outer)
        self.run("link", "set", self.outer, "up")
        self.run("netns", "exec", self.name, "ip", "addr", "add", f"{self.INSIDE}/30", "dev", self.inner)
        self.run("netns", "exec", self.name, "ip", "link", "set", self.inner, "up")
        self.run("netns", "exec", self.name, "ip", "link", "set", "lo", "up")
        # Inside only: unacknowledged data is given up on after ~6 s instead of ~15 min.
        subprocess.run(self.inside("sysctl", "-qw", "net.ipv4.tcp_retries2=4"), check=True, timeout=10)

    def partition(self, on):
        """Sets the namespace's end of the link down (or up): packets are dropped silently."""
        self.run("netns", "exec", self.name, "ip", "link", "set", self.inner, "down" if on else "up")

    def delete(self):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=10)
        subprocess.run(["ip", "link", "del", self.outer], capture_output=True, timeout=10)


def established(port, namespace=None):
    """How many established TCP connections have `port` at either end (inside `namespace`)."""
    args = ["ss", "-tnH", "state", "established", f"( sport = :{port} or dport = :{port} )"]
    result = subprocess.run(namespace.inside(*args) if namespace else args, capture_output=True, text=True, timeout=10)
    return len(result.stdout.splitlines())


def scenario_g(world, report, namespace):
    pb, rpc = world.orders_pb, world.orders_rpc
    try:
        namespace.create()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        report.fail("g. network namespace with a veth pair", f"{error}: {getattr(error, 'stderr', b'')!r}")
        return
    server, port = start_server(namespace.inside(world.exe("orders-server"), "--host", "0.0.0.0", "--port", "0",
                                                 "--database", os.path.join(world.tmp, "orders-netns.sqlite")),
                                "orders-server (netns)")
    target = f"{namespace.HOST.rsplit('.', 1)[0]}.2:{port}"
    inside_publish = namespace.inside(world.exe("orders"), "publish", "ORDER", "eta", "TEXT", "--host", "127.0.0.1",
                                      "--port", str(port), "--token", "staff-token")
    order_id = f"netns-{uuid.uuid4().hex[:8]}"
    with grpc.insecure_channel(target, options=KEEPALIVE + QUICK_RECONNECT) as channel:
        orders = rpc.OrderTrackingStub(channel)
        orders.CreateOrder(pb.CreateOrderRequest(order_id=order_id, customer_id="alice"), metadata=STAFF, timeout=10)

        # g1: grpcio with keepalive: an idle watch notices the partition; after healing, calls work.
        watch = orders.WatchOrder(pb.WatchOrderRequest(order_id=order_id), metadata=STAFF, timeout=60)
        publish(world, orders, order_id, "g1")
        next(watch)
        namespace.partition(True)
        code, details, seconds = stream_error(watch)
        report.check("g. kernel partition: grpcio keepalive ends an idle watch with UNAVAILABLE within 5 s",
                     code == grpc.StatusCode.UNAVAILABLE and seconds < 5, f"{code.name} {details!r} after {seconds:.2f} s",
                     f"{code.name} after {seconds:.2f} s: {details!r}")
        namespace.partition(False)
        code, details, seconds = rpc_code(lambda: orders.GetOrder(pb.GetOrderRequest(order_id=order_id), metadata=STAFF,
                                                                  timeout=10, wait_for_ready=True))
        report.check("g. kernel partition healed: a new call works", code == grpc.StatusCode.OK, f"{code.name} {details!r}",
                     f"in {seconds:.2f} s")

    # g2: `orders watch` (its 10 s keepalive) across a partition the server gives up on: updates are
    # published inside the namespace (over its loopback) before and after.
    watcher = Child([world.exe("orders"), "watch", order_id, "--host", namespace.INSIDE, "--port", port],
                    env={"ORDERS_TOKEN": "staff-token"})
    published = []

    def publish_inside(text):
        args = [text if arg == "TEXT" else order_id if arg == "ORDER" else arg for arg in inside_publish]
        result = subprocess.run(args, capture_output=True, text=True, timeout=15)
        published.append(result.stdout.split()[0] if result.returncode == 0 else f"(failed: {result.stderr.strip()})")

    live = watcher.wait_for(lambda line: line.endswith("live"), 15, stream="stderr")
    publish_inside("before")
    watcher.wait_for(lambda line: line.startswith(published[0]), 5)
    namespace.partition(True)
    for index in range(3):
        publish_inside(f"during {index}")
    time.sleep(12)  # past the namespace's tcp_retries2: the server drops the connection
    namespace.partition(False)
    for index in range(3):
        publish_inside(f"after {index}")
    watcher.wait_for(lambda line: line.startswith(published[-1]), 20)
    printed = [line.split()[0] for line in watcher.stdout if re.match(r"^u\S+  ", line)]
    states = [line.removeprefix("orders: ") for line in watcher.stderr]
    sockets = (f"TCP connections to the server: {established(port)} established on the watcher's side, "
               f"{established(port, namespace)} on the server's")
    watcher.stop()
    report.check("g. kernel partition the server gives up on: `orders watch` still gets every update once, in order",
                 live is not None and printed == published,
                 f"{len(published)} published, {len(printed)} printed; the watcher never noticed the dead connection "
                 f"(states: {' → '.join(states)}); {sockets}",
                 f"{len(published)} published, {len(printed)} printed; states: {' → '.join(states)}")
    server.stop(grace=10)


# ---------------------------------------------------------------------------------------------
# Running it all, within bounds


SCENARIOS = [("a", scenario_a, 60), ("b", scenario_b, 45), ("c", scenario_c, 60), ("d", scenario_d, 75),
             ("e", scenario_e, 75)]


def run_bounded(name, function, limit, report):
    """Runs one scenario for at most `limit` seconds; a scenario still running then is a
    failure, and every process it started is stopped."""
    mark = processes.mark()
    finished, failure, seconds = processes.run_in_thread(function, limit)
    if not finished:
        report.fail(f"{name}. scenario finishes within {limit} s", "still running (a hang): its processes are killed")
    elif failure:
        report.fail(f"{name}. scenario ran to its end", failure)
    processes.stop_since(mark, grace=2)
    note(f"({name} took {seconds:.1f} s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="directory of the built executables")
    parser.add_argument("--only", help="comma-separated scenario letters (f always runs last)")
    parser.add_argument("--netns", choices=("auto", "on", "off"), default="auto",
                        help="the kernel partition (g): auto runs it when root with iproute2")
    args = parser.parse_args()
    processes.install_cleanup()
    # The whole run is bounded too: whatever happens, it ends.
    signal.signal(signal.SIGALRM, lambda *_: (print("FAIL global time limit", flush=True), processes.stop_all(), os._exit(1)))
    signal.alarm(600)

    world = World(os.path.abspath(args.bin))
    report = Report()
    world.start()
    note("servers: " + ", ".join(f"{name} port {port} pid {child.pid} fds {world.baseline[name]['fds']}"
                                 for name, (child, port) in world.servers.items()))
    chosen = set(args.only.split(",")) if args.only else None
    for letter, function, limit in SCENARIOS:
        if chosen is None or letter in chosen:
            run_bounded(letter, lambda function=function: function(world, report), limit, report)

    namespace = None
    if args.netns == "on" or (args.netns == "auto" and Namespace.available() and (chosen is None or "g" in chosen)):
        namespace = Namespace()
        processes.on_cleanup(namespace.delete)
        run_bounded("g", lambda: scenario_g(world, report, namespace), 120, report)
        namespace.delete()
    else:
        note("g skipped (needs root and iproute2, or --netns on)")
    run_bounded("f", lambda: scenario_f(world, report), 60, report)

    world.stop()
    exit_now(report.finish())  # no interpreter shutdown, which can hang a grpcio client


if __name__ == "__main__":
    main()
