#!/usr/bin/env python3
"""Three orders-server replicas on one PostgreSQL database, behind nginx, judged by grpcio with
real processes: a throwaway PostgreSQL (scripts/postgres --fast, Tests/Peers/postgres.py),
DIR/orders-server x 3 (`--port 0 --database postgresql:///pitlane?host=...`), and nginx in
front (deploy/nginx.conf.template rendered by scripts/nginx-conf: gRPC over h2c, round robin,
passive failure detection); for check e, DIR/swiftkart-server x 3 on the same database.

  cluster_peer.py --bin DIR [--nginx PATH] [--only a,b,c,d,e] [--watchers 100] [--updates 200]
                  [--time-limit 300] [--keep]

Checks:
  a. orders through nginx: a few orders, WATCHERS WatchOrder streams spread over the replicas
     by nginx (the replica each got is read from the x-pitlane-upstream response header that
     the nginx configuration adds), 4 publishers sending UPDATES updates in all; once a third of
     them are acknowledged one replica is killed with SIGKILL (it is started again on its port
     only after the check, for the checks after it). Watchers that lose their stream resume
     through nginx from the last update_id they got; a publisher publishes again only what was
     not acknowledged, each attempt a distinct update (its tag is the EtaChanged text), so
     an unacknowledged attempt may appear once (it may have committed), never twice. Then every
     watcher of an order must hold the same sequence: every acknowledged update exactly once
     (with the update_id of its acknowledgement), each publisher's acknowledged updates in
     the order it published them, nothing unknown, no update_id twice, ending at GetOrder's
     latest_update_id.
  b. chat across replicas: two participants joined directly to each replica, in one new room;
     once all have joined, one sender per replica sends at the same time; every participant
     gets the same sequence of (id, nickname, text), ids consecutive, each sender's in its
     order.
  c. the database goes down (scripts/postgres kill: a crash) with watchers live on every
     replica (direct connections): a publish to each replica, under a 5 s deadline, fails
     (UNAVAILABLE; DEADLINE_EXCEEDED is accepted and reported); grpc.health.v1 Check ("")
     turns NOT_SERVING on every replica within 10 s; the database is started again; within
     30 s every replica is SERVING, publishes succeed, and every watcher ends with every
     acknowledged update exactly once, in order.
  d. a resume token minted by replica A works on replica B: WatchOrder on B from the first of
     three updates published through A sends exactly the two later ones, then a fourth
     published through A live; on C from the order's start, all four.
  e. races: three swiftkart-server replicas (same --speed and --seed) on the same database
     run one simulation per race. FollowRace (standings and locations) on the shortest race
     on A first, so A leads it; once A's follower has two standings, on B and C too. While A
     lives, B's and C's standings are each a contiguous run of A's (entries: kart, position,
     lap, gap). A is killed (SIGKILL) mid-race, the leader past lap 1: B and C get standings
     again within 2 s plus one standings interval (A's, measured: ~1 s, ticks being 100 ms of
     wall time at any speed), no lap goes back (the race goes on, not again), and both streams
     end OK with the same final standings, every kart on the last lap; after both joined, B
     and C got the same standings but for at most one after the kill (the new leader's, on
     the tick it took over at). About 25 s at --speed 14.
Prints "ok NAME" or "FAIL NAME: why" per check (observations indented below it) and a closing
"checks: N ok, M failed"; exits 1 on any failure. Every wait is bounded, and so is the whole
run (--time-limit). Needs nginx with the HTTP/2 and gRPC modules (Debian: nginx-light) and
PostgreSQL's programs (postgresql-15); run as root, PostgreSQL runs as the `postgres` user.
"""
import argparse
import collections
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # the checks report what grpcio saw themselves
import grpc  # noqa: E402 (after its environment)

import processes  # noqa: E402
from peer_checks import Report, exit_now, expect, load  # noqa: E402
from postgres import Postgres  # noqa: E402

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STAFF = [("authorization", "Bearer staff-token")]
UPSTREAM_HEADER = "x-pitlane-upstream"  # added by deploy/nginx.conf.template
# Errors after which a watcher does not resume: its request, not the path to the server, is wrong.
FATAL = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.NOT_FOUND,
         grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.UNIMPLEMENTED}


def fresh(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(predicate, timeout, interval=0.05):
    """Whether `predicate()` came true within `timeout` seconds."""
    end = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(interval)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def new_channel(target):
    """A channel with a connection of its own (grpcio shares subchannels between channels to the
    same target otherwise) and no retries of its own: the checks decide what to call again."""
    return grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1), ("grpc.enable_retries", 0)])


def counted(items):
    return ", ".join(f"{key} {count}" for key, count in sorted(collections.Counter(items).items(), key=str)) or "none"


# ---------------------------------------------------------------------------------------------
# The world: PostgreSQL, the replicas, nginx


class World:
    def __init__(self, args):
        self.args = args
        self.bin = os.path.abspath(args.bin)
        self.run_dir = tempfile.mkdtemp(prefix="pitlane-cluster-")
        if not args.keep:  # at the end, after nginx stopped (exit_now skips atexit)
            processes.on_cleanup(lambda: shutil.rmtree(self.run_dir, True))
        self.orders_pb, self.orders_rpc = load(args.protos, "orders.proto")
        self.chat_pb, self.chat_rpc = load(args.protos, "chat.proto")
        self.health_pb, self.health_rpc = load(os.path.join(ROOT, "Sources", "PitlaneHealth"), "health.proto")
        self.database = None
        self.replicas = []
        self.kart_replicas = []  # swiftkart-server, started by check e
        self.kart_pb = self.kart_rpc = None  # swiftkart.proto's, loaded by check e
        self.nginx = None
        self.nginx_port = None
        self.channels = []

    def channel(self, target):
        channel = new_channel(target)
        self.channels.append(channel)
        return channel

    def start(self):
        started = time.monotonic()
        self.database = Postgres(keep=self.args.keep)
        print(f"    postgres {self.database.url} ({time.monotonic() - started:.1f} s)", flush=True)
        for index in range(3):
            self.replicas.append(Replica(self, index))
        for replica in self.replicas:
            replica.start()
            print(f"    replica {replica.name}: orders-server pid {replica.child.pid} port {replica.port}", flush=True)

    def start_nginx(self):
        """nginx in front of the replicas; None, or why it could not start."""
        exe = shutil.which(self.args.nginx)
        if exe is None:
            return f"no {self.args.nginx} on PATH (apt-get install nginx-light, or --nginx PATH)"
        nginx_dir = os.path.join(self.run_dir, "nginx")
        why = None
        for _ in range(3):  # a free port may be taken before nginx binds it
            self.nginx_port, http_port = free_port(), free_port()
            conf = subprocess.run([os.path.join(ROOT, "scripts", "nginx-conf"), nginx_dir, str(self.nginx_port), str(http_port),
                                   *[str(replica.port) for replica in self.replicas]],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True).stdout.strip()
            self.nginx = processes.Child([exe, "-p", nginx_dir, "-c", conf, "-e", os.path.join(nginx_dir, "error.log")], "nginx")
            if wait_until(lambda: accepts(self.nginx_port) or not self.nginx.alive(), 10) and self.nginx.alive():
                print(f"    nginx pid {self.nginx.pid} port {self.nginx_port} (gRPC), {http_port} (HTTP/1.1), "
                      f"conf {conf}", flush=True)
                return None
            why = f"nginx did not start: {self.nginx.tail()} {self.nginx_errors()}"
            self.nginx.stop(signal.SIGKILL)
        return why

    def nginx_errors(self, lines=5):
        try:
            with open(os.path.join(self.run_dir, "nginx", "error.log"), errors="replace") as log:
                return " | ".join(line.strip() for line in log.readlines()[-lines:])
        except OSError:
            return ""

    def via_nginx(self):
        return self.channel(f"127.0.0.1:{self.nginx_port}")

    def health(self, replica, service=""):
        """A replica's grpc.health.v1 status name (SERVING, NOT_SERVING, ...), or the error's code."""
        stub = self.health_rpc.HealthStub(replica.channel)
        try:
            response = stub.Check(self.health_pb.HealthCheckRequest(service=service), timeout=2)
            return self.health_pb.HealthCheckResponse.ServingStatus.Name(response.status)
        except grpc.RpcError as error:
            return f"error {error.code().name}"

    def dead_replicas(self):
        return [f"{replica.name} exited {replica.child.process.poll()}: {replica.child.tail(8)}"
                for replica in self.replicas if not replica.killed and not replica.child.alive()]

    def close(self):
        for channel in self.channels:
            try:
                channel.close()
            except Exception:
                pass
        if self.args.keep:
            for replica in self.replicas + self.kart_replicas:
                if replica.child is not None:
                    prefix = "" if replica.program == "orders-server" else f"{replica.program}-"
                    with open(os.path.join(self.run_dir, f"{prefix}{replica.name}.log"), "w") as log:
                        log.write("\n".join(replica.earlier_output + replica.child.stdout + replica.child.stderr) + "\n")
            print(f"    kept {self.run_dir} (nginx/, replica logs) and {self.database.directory if self.database else ''}",
                  flush=True)


class Replica:
    def __init__(self, world, index, program="orders-server", extra=()):
        self.world = world
        self.index = index
        self.name = "ABC"[index]
        self.program = program
        self.extra = list(extra)
        self.child = None
        self.earlier_output = []
        self.port = 0
        self.killed = False
        self._channel = None

    def start(self, port=0):
        args = [os.path.join(self.world.bin, self.program), "--host", "127.0.0.1", "--port", str(port),
                "--database", self.world.database.url, *self.extra]
        if self.child is not None:  # the run before a restart, for --keep's log
            self.earlier_output += self.child.stdout + self.child.stderr + [f"--- started again on port {port}"]
        self.child, self.port = processes.start_server(args, f"{self.program} {self.name}", timeout=60)
        self.killed = False
        self._channel = None

    def kill(self):
        self.killed = True
        self.child.send_signal(signal.SIGKILL)
        self.child.wait(5)

    @property
    def target(self):
        return f"127.0.0.1:{self.port}"

    @property
    def channel(self):
        if self._channel is None:
            self._channel = self.world.channel(self.target)
        return self._channel

    def orders(self):
        return self.world.orders_rpc.OrderTrackingStub(self.channel)


# ---------------------------------------------------------------------------------------------
# Watchers and publishers


def tag_of(update):
    """What a publish put in the update: the EtaChanged text, unique per publish attempt."""
    kind = update.WhichOneof("event")
    return update.eta_changed.eta_display if kind == "eta_changed" else f"<{kind}>"


class Watcher:
    """WatchOrder on its own thread, resuming from the last update_id it got whenever the stream
    ends, until stopped. Every update is kept as it came, (update_id, tag), duplicates included."""

    def __init__(self, world, name, channel, order_id, since):
        self.world, self.name, self.order_id = world, name, order_id
        self.stub = world.orders_rpc.OrderTrackingStub(channel)
        self.last = since
        self.received = []
        self.streams = 0
        self.ends = []  # how each stream ended (a status code's name)
        self.upstreams = []  # per stream with an update, the replica nginx chose
        self.fatal = None
        self._stopped = threading.Event()
        self._call = None
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self):
        backoff = 0.05
        while not self._stopped.is_set():
            request = self.world.orders_pb.WatchOrderRequest(order_id=self.order_id, since_update_id=self.last)
            with self._lock:
                if self._stopped.is_set():
                    return
                call = self._call = self.stub.WatchOrder(request, metadata=STAFF)
            self.streams += 1
            first = True
            try:
                for update in call:
                    self.received.append((update.update_id, tag_of(update)))
                    self.last = update.update_id
                    backoff = 0.05
                    if first:
                        first = False
                        upstream = dict(call.initial_metadata() or ()).get(UPSTREAM_HEADER)
                        if upstream:
                            self.upstreams.append(upstream)
                self.ends.append("OK")  # the server ended the stream: resume all the same
            except grpc.RpcError as error:
                if self._stopped.is_set():
                    return
                self.ends.append(error.code().name)
                if error.code() in FATAL:
                    self.fatal = f"{error.code().name}: {error.details()}"
                    return
            if self._stopped.wait(backoff * random.uniform(0.5, 1.5)):
                return
            backoff = min(backoff * 2, 1.0)

    def stop(self):
        with self._lock:
            self._stopped.set()
            call = self._call
        if call is not None:
            call.cancel()
        self.thread.join(5)

    def tags(self):
        return [tag for _, tag in self.received]

    def has(self, tag):
        return tag in self.tags()


class Ledger:
    """What publishers know: per order, the attempts acknowledged (tag, update_id, publisher,
    sequence) and those not (tag, how they failed)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = collections.defaultdict(list)
        self.unacked = collections.defaultdict(list)
        self.failure_details = {}

    def publish(self, world, stub, order_id, tag, publisher="main", limit=30.0, deadline=5.0, notes=None):
        """Publishes an EtaChanged whose text is `tag` (then `tag`.2, `tag`.3 ... for attempts
        after a failure, each a distinct update) until one is acknowledged or `limit` seconds
        pass; returns the acknowledged update, or None."""
        end = time.monotonic() + limit
        backoff = 0.05
        for attempt in range(1, 1000):
            text = tag if attempt == 1 else f"{tag}.{attempt}"
            request = world.orders_pb.PublishUpdateRequest(order_id=order_id,
                                                           eta_changed=world.orders_pb.EtaChanged(eta_display=text))
            try:
                update = stub.PublishUpdate(request, metadata=STAFF, timeout=deadline)
            except grpc.RpcError as error:
                with self.lock:
                    self.unacked[order_id].append((text, error.code().name))
                    self.failure_details[text] = error.details()
                if error.code() in FATAL or time.monotonic() + backoff > end:
                    if notes is not None:
                        notes.append(f"publish {text} to {order_id}: gave up after {error.code().name} {error.details()}")
                    return None
                time.sleep(backoff * random.uniform(0.5, 1.5))
                backoff = min(backoff * 2, 0.5)
                continue
            with self.lock:
                self.acked[order_id].append((text, update.update_id, publisher))
            return update
        return None

    def unacked_count(self):
        with self.lock:
            return sum(len(attempts) for attempts in self.unacked.values())

    def acked_count(self):
        with self.lock:
            return sum(len(attempts) for attempts in self.acked.values())


def judge_order(order_id, watchers, ledger, latest_id, strict_order=False):
    """What is wrong with what `watchers` (all from the order's start) received of `order_id`,
    given the ledger and GetOrder's latest_update_id: {kind of problem: [(watcher, detail)]}.
    `strict_order`: one publisher, one publish at a time, so the acknowledged updates' order is
    the log's."""
    problems = collections.defaultdict(list)
    acked = ledger.acked[order_id]
    acked_ids = {tag: update_id for tag, update_id, _ in acked}
    unacked = {tag for tag, _ in ledger.unacked[order_id]}
    by_publisher = collections.defaultdict(list)
    for tag, _, publisher in acked:
        by_publisher[publisher].append(tag)
    reference = None
    for watcher in watchers:
        ids, tags = [update_id for update_id, _ in watcher.received], watcher.tags()

        def problem(kind, detail=""):
            problems[kind].append((f"{watcher.name} ({order_id})", detail))

        if watcher.fatal:
            problem("watcher stopped", watcher.fatal)
        twice = [tag for tag, count in collections.Counter(tags).items() if count > 1]
        if twice:
            problem("updates received more than once", f"{len(twice)}: {twice[:3]}")
        if len(set(ids)) != len(ids):
            problem("an update_id received more than once")
        unknown = [tag for tag in tags if tag not in acked_ids and tag not in unacked]
        if unknown:
            problem("updates never published", f"{len(unknown)}: {unknown[:3]}")
        missing = [tag for tag in acked_ids if tag not in tags]
        if missing:
            problem("acknowledged updates missing", f"{len(missing)} of {len(acked_ids)}: {missing[:3]}")
        wrong_id = [tag for update_id, tag in watcher.received if tag in acked_ids and acked_ids[tag] != update_id]
        if wrong_id:
            problem("updates with another update_id than their acknowledgement's", f"{len(wrong_id)}: {wrong_id[:3]}")
        for publisher, sent in by_publisher.items():
            seen = [tag for tag in tags if tag in set(sent)]
            if seen != [tag for tag in sent if tag in seen]:
                problem("a publisher's acknowledged updates out of the order it published them", publisher)
        if strict_order:
            seen = [tag for tag in tags if tag in acked_ids]
            if seen != [tag for tag in acked_ids if tag in seen]:
                problem("acknowledged updates out of the order they were acknowledged in")
        if (ids[-1] if ids else None) != latest_id:
            problem("last update is not GetOrder's latest_update_id", f"{ids[-1] if ids else None!r}, latest {latest_id!r}")
        if reference is None:
            reference = (watcher.name, watcher.received)
        elif watcher.received != reference[1]:
            problem("watchers of one order got different sequences",
                    f"{len(watcher.received)} updates vs {len(reference[1])} of {reference[0]}")
    return problems


def describe_problems(problems):
    """One line for `judge_order`'s problems (of several orders, merged)."""
    merged = collections.defaultdict(list)
    for found in problems:
        for kind, where in found.items():
            merged[kind].extend(where)
    return "; ".join(f"{kind}: {len(where)} watchers, e.g. {where[0][0]}{': ' + where[0][1] if where[0][1] else ''}"
                     for kind, where in merged.items())


def latest(world, stubs, order_id, limit=15):
    """GetOrder's snapshot (retrying through the given stubs in turn for up to `limit` s)."""
    end = time.monotonic() + limit
    failures = []
    while True:
        for stub in stubs:
            try:
                return stub.GetOrder(world.orders_pb.GetOrderRequest(order_id=order_id), metadata=STAFF, timeout=5)
            except grpc.RpcError as error:
                failures.append(error.code().name)
                if error.code() in FATAL:
                    raise AssertionError(f"GetOrder {order_id}: {error.code().name} {error.details()}")
        if time.monotonic() > end:
            raise AssertionError(f"GetOrder {order_id} failed for {limit} s: {counted(failures)}")
        time.sleep(0.2)


def create_order(world, stub, order_id, limit=15):
    """CreateOrder (for alice, by staff), retried on transport errors; the snapshot."""
    end = time.monotonic() + limit
    while True:
        try:
            return stub.CreateOrder(world.orders_pb.CreateOrderRequest(order_id=order_id, customer_id="alice",
                                                                       eta_display="start"), metadata=STAFF, timeout=5)
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.ALREADY_EXISTS:  # an earlier attempt did create it
                return latest(world, [stub], order_id)
            if error.code() in FATAL or time.monotonic() > end:
                raise AssertionError(f"CreateOrder {order_id}: {error.code().name} {error.details()}")
            time.sleep(0.2)


def wait_caught_up(world, watchers_by_order, stubs, limit):
    """Waits until every watcher's last update is its order's latest; returns {order: latest id}."""
    latest_ids = {order_id: latest(world, stubs, order_id).latest_update_id for order_id in watchers_by_order}
    wait_until(lambda: all(watcher.last == latest_ids[order_id] or watcher.fatal
                           for order_id, watchers in watchers_by_order.items() for watcher in watchers), limit)
    return latest_ids


# ---------------------------------------------------------------------------------------------
# a. orders through nginx, a replica killed


def check_orders(world, notes):
    args = world.args
    expect(world.nginx is not None and world.nginx.alive(), "nginx is not running")
    ledger = Ledger()
    stub = world.orders_rpc.OrderTrackingStub(world.via_nginx())
    order_count = 5
    orders = [fresh("cluster") for _ in range(order_count)]
    starts = {order_id: create_order(world, stub, order_id).latest_update_id for order_id in orders}

    channels = [world.via_nginx() for _ in range(max(1, args.watchers // 10))]
    watchers = collections.defaultdict(list)
    for index in range(args.watchers):
        order_id = orders[index % order_count]
        watchers[order_id].append(Watcher(world, f"watcher {index}", channels[index % len(channels)], order_id,
                                          starts[order_id]))
    everyone = [watcher for group in watchers.values() for watcher in group]
    try:
        # One update per order, to know every stream is live (and through which replica).
        for order_id in orders:
            expect(ledger.publish(world, stub, order_id, fresh("warm-up"), "warm-up", notes=notes), "warm-up publish failed")
        warm = {order_id: ledger.acked[order_id][0][0] for order_id in orders}
        live = wait_until(lambda: all(watcher.has(warm[watcher.order_id]) or watcher.fatal for watcher in everyone), 30)
        expect(live, f"{sum(not watcher.has(warm[watcher.order_id]) for watcher in everyone)} of {len(everyone)} "
                     f"watchers did not get the first update within 30 s (ends: {counted(e for w in everyone for e in w.ends)})")
        first_upstream = [watcher.upstreams[0] for watcher in everyone if watcher.upstreams]
        by_port = {str(replica.port): replica for replica in world.replicas}
        names = [by_port.get(upstream.rsplit(":", 1)[-1].split(",")[0].strip()) for upstream in first_upstream]
        if first_upstream:
            spread = collections.Counter(replica.name if replica else "?" for replica in names)
            notes.append(f"watchers per replica (x-pitlane-upstream): {dict(sorted(spread.items()))}")
            expect(len(spread) >= 2, f"nginx sent every watcher to one replica: {dict(spread)}")
            victim = max(world.replicas, key=lambda replica: spread.get(replica.name, 0))
        else:
            notes.append("nginx did not say which replica served each watcher (no x-pitlane-upstream)")
            victim = world.replicas[1]

        # 4 publishers, round robin over the orders; a replica dies once a third are acknowledged.
        publishers = 4
        per_publisher = max(1, args.updates // publishers)
        publisher_stubs = [world.orders_rpc.OrderTrackingStub(world.via_nginx()) for _ in range(publishers)]
        given_up = []

        def publisher(number):
            for sequence in range(per_publisher):
                order_id = orders[(number + sequence) % order_count]
                if ledger.publish(world, publisher_stubs[number], order_id, f"p{number}-{sequence}", f"p{number}",
                                  notes=notes) is None:
                    given_up.append(f"p{number}-{sequence}")
                time.sleep(random.uniform(0.005, 0.02))

        threads = [threading.Thread(target=publisher, args=(number,), daemon=True) for number in range(publishers)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        wait_until(lambda: ledger.acked_count() >= order_count + per_publisher * publishers // 3, 30)
        acked_before = ledger.acked_count() - order_count
        victim.kill()
        notes.append(f"killed replica {victim.name} (SIGKILL) after {acked_before} acknowledged publishes; "
                     f"it is started again after this check")
        for thread in threads:
            thread.join(max(1, 60 - (time.monotonic() - started)))
        expect(not any(thread.is_alive() for thread in threads), "publishers still publishing after 60 s")
        notes.append(f"{ledger.acked_count() - order_count} publishes acknowledged in {time.monotonic() - started:.1f} s; "
                     f"{ledger.unacked_count()} attempts not ({counted(code for attempts in ledger.unacked.values() for _, code in attempts)})")
        expect(not given_up, f"{len(given_up)} publishes never acknowledged within 30 s each: {given_up[:3]}")

        latest_ids = wait_caught_up(world, watchers, [stub], 30)
        resumed = [watcher for watcher in everyone if watcher.streams > 1]
        notes.append(f"{len(resumed)} watchers resumed (streams ended: {counted(e for w in everyone for e in w.ends)})")
    finally:
        for watcher in everyone:
            watcher.stop()
    problems = [judge_order(order_id, watchers[order_id], ledger, latest_ids[order_id]) for order_id in orders]
    unacked_seen = sum(1 for order_id in orders for tag, _ in ledger.unacked[order_id]
                       if watchers[order_id] and watchers[order_id][0].has(tag))
    notes.append(f"unacknowledged attempts that committed all the same: {unacked_seen}")
    expect(not any(problems), describe_problems(problems))
    expect(resumed, "no watcher lost its stream when the replica died: the kill proved nothing")
    expect(not world.dead_replicas(), f"a replica died: {world.dead_replicas()}")


def restart_victims(world):
    for replica in world.replicas:
        if replica.killed:
            old = replica.port
            try:
                replica.start(old)
            except RuntimeError:
                replica.start(0)
            print(f"    replica {replica.name} started again: pid {replica.child.pid} port {replica.port}"
                  + ("" if replica.port == old else f" (not {old}: nginx does not know it)"), flush=True)


# ---------------------------------------------------------------------------------------------
# b. chat across replicas


class Participant:
    def __init__(self, world, replica, room, nickname):
        self.world, self.nickname, self.replica = world, nickname, replica
        self.requests = processes.Requests(world.chat_pb.ChatRequest(join=world.chat_pb.Join(room=room, nickname=nickname)))
        self.events = []
        self.error = None
        self.call = world.chat_rpc.ChatRoomStub(replica.channel).Chat(iter(self.requests), timeout=60)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for event in self.call:
                self.events.append(event)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                self.error = f"{error.code().name}: {error.details()}"

    def joined(self):
        return any(event.WhichOneof("event") == "joined" for event in self.events)

    def messages(self, prefix):
        return [(event.message.id, event.message.nickname, event.message.text) for event in self.events
                if event.WhichOneof("event") == "message" and event.message.text.startswith(prefix)]

    def send(self, text):
        self.requests.put(self.world.chat_pb.ChatRequest(send=self.world.chat_pb.Send(text=text)))

    def close(self):
        self.requests.close()
        self.call.cancel()


def check_chat(world, notes):
    room = fresh("cluster-room")
    prefix = fresh("m")
    per_sender = 25
    participants = []
    try:
        for replica in world.replicas:
            for seat in range(2):
                participants.append(Participant(world, replica, room, f"{replica.name.lower()}{seat}-{uuid.uuid4().hex[:4]}"))
                expect(wait_until(lambda: participants[-1].joined() or participants[-1].error, 10) and participants[-1].joined(),
                       f"{participants[-1].nickname} on {replica.name} not joined within 10 s: {participants[-1].error}")
        senders = participants[::2]  # one per replica

        def send_all(sender):
            for number in range(per_sender):
                sender.send(f"{prefix} {sender.nickname} {number}")
                time.sleep(random.uniform(0, 0.01))

        threads = [threading.Thread(target=send_all, args=(sender,), daemon=True) for sender in senders]
        for thread in threads:
            thread.start()
        total = per_sender * len(senders)
        arrived = wait_until(lambda: all(len(p.messages(prefix)) >= total or p.error for p in participants), 30)
        counts = {p.nickname: len(p.messages(prefix)) for p in participants}
        errors = {p.nickname: p.error for p in participants if p.error}
        expect(arrived and not errors, f"not every participant got {total} messages within 30 s: {counts}, errors {errors}")
        presence = {f"{p.nickname.split('-')[0]}": sum(e.WhichOneof("event") == "presence" for e in p.events)
                    for p in participants}
        notes.append(f"{len(participants)} participants on {len(world.replicas)} replicas (joined in turn), {total} messages "
                     f"from {len(senders)} senders; presence events each saw (not judged): {presence}")
        reference = participants[0].messages(prefix)
        for participant in participants:
            got = participant.messages(prefix)
            expect(len(got) == total, f"{participant.nickname} on {participant.replica.name}: {len(got)} messages, not {total}")
            expect(got == reference, f"{participant.nickname} on {participant.replica.name} saw another order than "
                                     f"{participants[0].nickname} on {participants[0].replica.name}: first difference at "
                                     f"{next((i for i, (x, y) in enumerate(zip(got, reference)) if x != y), None)}")
        ids = [message_id for message_id, _, _ in reference]
        expect(all(b == a + 1 for a, b in zip(ids, ids[1:])), f"message ids not consecutive: {ids[:10]}...")
        for sender in senders:
            mine = [text for _, nickname, text in reference if nickname == sender.nickname]
            expect(mine == [f"{prefix} {sender.nickname} {number}" for number in range(per_sender)],
                   f"{sender.nickname}'s messages out of order or missing")
    finally:
        for participant in participants:
            participant.close()


# ---------------------------------------------------------------------------------------------
# c. the database goes down and comes back


def check_database_down(world, notes):
    ledger = Ledger()
    stubs = [replica.orders() for replica in world.replicas]
    order_id = fresh("cluster-db")
    start = create_order(world, stubs[0], order_id).latest_update_id
    watchers = [Watcher(world, f"watcher {replica.name}{seat}", world.channel(replica.target), order_id, start)
                for replica in world.replicas for seat in range(2)]
    try:
        for number in range(3):
            expect(ledger.publish(world, stubs[number % 3], order_id, f"before-{number}", notes=notes),
                   "a publish before the outage failed")
        first = ledger.acked[order_id][-1][0]
        expect(wait_until(lambda: all(watcher.has(first) for watcher in watchers), 15),
               f"watchers not live before the outage: {[len(watcher.received) for watcher in watchers]}")
        statuses = {replica.name: world.health(replica) for replica in world.replicas}
        expect(all(status == "SERVING" for status in statuses.values()), f"health before the outage: {statuses}")

        down_at = time.monotonic()
        world.database.kill()
        notes.append("database killed (SIGKILL: the postmaster and every backend)")
        outcomes = {}

        def failing_publish(replica, stub):
            request = world.orders_pb.PublishUpdateRequest(
                order_id=order_id, eta_changed=world.orders_pb.EtaChanged(eta_display=f"during-{replica.name}"))
            began = time.monotonic()
            try:
                update = stub.PublishUpdate(request, metadata=STAFF, timeout=5)
                ledger.acked[order_id].append((f"during-{replica.name}", update.update_id, "main"))
                outcomes[replica.name] = ("OK", time.monotonic() - began)
            except grpc.RpcError as error:
                ledger.unacked[order_id].append((f"during-{replica.name}", error.code().name))
                outcomes[replica.name] = (error.code().name, time.monotonic() - began)

        threads = [threading.Thread(target=failing_publish, args=(replica, stub), daemon=True)
                   for replica, stub in zip(world.replicas, stubs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(15)
        notes.append("publishes while down: " + ", ".join(f"{name} {code} in {seconds:.2f} s"
                                                          for name, (code, seconds) in sorted(outcomes.items())))
        expect(len(outcomes) == len(world.replicas), "a publish did not return within 15 s (its deadline was 5 s)")
        wrong = {name: code for name, (code, _) in outcomes.items() if code not in ("UNAVAILABLE", "DEADLINE_EXCEEDED")}
        expect(not wrong, f"publishes while the database was down ended {wrong}, not UNAVAILABLE")

        def all_not_serving():
            return all(world.health(replica) == "NOT_SERVING" for replica in world.replicas)

        not_serving = wait_until(all_not_serving, max(0.1, 10 - (time.monotonic() - down_at)), 0.2)
        statuses = {replica.name: world.health(replica) for replica in world.replicas}
        service_statuses = {replica.name: world.health(replica, "orders.v1.OrderTracking") for replica in world.replicas}
        notes.append(f"health {time.monotonic() - down_at:.1f} s after the kill: {statuses}; "
                     f"orders.v1.OrderTracking: {service_statuses}")
        expect(not_serving, f"grpc.health.v1 Check not NOT_SERVING on every replica within 10 s: {statuses}")

        up_at = time.monotonic()
        world.database.start()
        notes.append(f"database started again in {time.monotonic() - up_at:.1f} s")
        serving = wait_until(lambda: all(world.health(replica) == "SERVING" for replica in world.replicas), 30, 0.2)
        statuses = {replica.name: world.health(replica) for replica in world.replicas}
        expect(serving, f"not SERVING again within 30 s of the database's start: {statuses}")
        notes.append(f"every replica SERVING {time.monotonic() - up_at:.1f} s after the database's start")
        unacked_before = ledger.unacked_count()
        for number in range(6):
            expect(ledger.publish(world, stubs[number % 3], order_id, f"after-{number}", limit=10, notes=notes),
                   f"a publish through {world.replicas[number % 3].name} failed for 10 s after every replica said SERVING")
        # SERVING means ready: pooled connections the crash left behind are not lent again.
        expect(ledger.unacked_count() == unacked_before,
               f"{ledger.unacked_count() - unacked_before} publishes failed after every replica said SERVING: "
               + ", ".join(f"{tag} {code} ({ledger.failure_details.get(tag, '')})"
                           for tag, code in ledger.unacked[order_id][unacked_before - ledger.unacked_count():]))
        latest_ids = wait_caught_up(world, {order_id: watchers}, stubs, 30)
        notes.append(f"watcher streams ended: {counted(e for w in watchers for e in w.ends)}")
    finally:
        for watcher in watchers:
            watcher.stop()
        if not world.database.running():
            world.database.start()  # for the checks after this one
    problems = judge_order(order_id, watchers, ledger, latest_ids[order_id], strict_order=True)
    expect(not problems, describe_problems([problems]))
    expect(not world.dead_replicas(), f"a replica died: {world.dead_replicas()}")


# ---------------------------------------------------------------------------------------------
# d. a resume token from replica A on replica B


def collect(world, replica, order_id, since, count, timeout, after_start=None):
    """The first `count` updates WatchOrder on `replica` sends from `since` (fewer if the stream
    ends or `timeout` passes). `after_start` runs once the stream is open (first update in)."""
    stub = replica.orders()
    call = stub.WatchOrder(world.orders_pb.WatchOrderRequest(order_id=order_id, since_update_id=since),
                           metadata=STAFF, timeout=timeout)
    got = []
    try:
        for update in call:
            got.append((update.update_id, tag_of(update)))
            if len(got) == 1 and after_start is not None:
                after_start()
            if len(got) >= count:
                break
    except grpc.RpcError as error:
        if error.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
            raise AssertionError(f"WatchOrder on {replica.name}: {error.code().name} {error.details()}")
    finally:
        call.cancel()
    return got


def check_resume_token(world, notes):
    a, b, c = world.replicas
    order_id = fresh("cluster-token")
    start = create_order(world, a.orders(), order_id).latest_update_id
    published = []

    def publish(text):
        update = a.orders().PublishUpdate(world.orders_pb.PublishUpdateRequest(
            order_id=order_id, eta_changed=world.orders_pb.EtaChanged(eta_display=text)), metadata=STAFF, timeout=5)
        published.append((update.update_id, text))

    for text in ("u1", "u2", "u3"):
        publish(text)
    # On B from A's first update: the two later ones from the log, then a fourth, published
    # through A once B's stream has sent its first update, live.
    on_b = collect(world, b, order_id, published[0][0], 3, 15, after_start=lambda: publish("u4"))
    expect(len(published) == 4, f"B's stream sent nothing from A's first update: {on_b}")
    notes.append(f"on {b.name} from {a.name}'s token for u1: {[tag for _, tag in on_b]}")
    expect(on_b == published[1:], f"on {b.name} from {a.name}'s first update: {on_b}, expected {published[1:]}")
    on_c = collect(world, c, order_id, start, 4, 15)
    expect(on_c == published, f"on {c.name} from the order's start: {on_c}, expected {published}")
    snapshot = latest(world, [b.orders()], order_id)
    expect(snapshot.latest_update_id == published[-1][0], f"GetOrder on {b.name}: latest {snapshot.latest_update_id!r}, "
                                                          f"expected {published[-1][0]!r}")


# ---------------------------------------------------------------------------------------------
# e. races: one simulation across three replicas

# Ticks are 100 ms of wall time whatever the speed (--speed stretches the race time a tick
# covers), standings every 10 ticks: about one a second. At ×14 with seed 7 the shortest race
# (the Duck Pond Dash, 6 laps, about 290 s of race time) lasts about 21 s.
RACE_SPEED = 14
RACE_SEED = 7


def standings_entries(standings):
    """A Standings message as comparable content: (kart, position, lap, gap s, gap ns) per entry."""
    return tuple((entry.kart_number, entry.position, entry.lap, entry.gap_to_leader.seconds, entry.gap_to_leader.nanos)
                 for entry in standings.entries)


def describe_standings(entries, karts=3):
    shown = " ".join(f"P{position} #{kart} lap {lap} +{seconds + nanos / 1e9:.3f}"
                     for kart, position, lap, seconds, nanos in entries[:karts])
    return shown + (" ..." if len(entries) > karts else "")


def leader_lap(entries):
    return next((lap for _, position, lap, _, _ in entries if position == 1), 0)


def laps_backwards(sequence):
    """The first place where the leader's lap or any kart's lap goes down in `sequence` (a list
    of standings entries), or None."""
    last_leader, last_lap = 0, {}
    for index, entries in enumerate(sequence):
        if leader_lap(entries) < last_leader:
            return f"#{index}: leader lap {leader_lap(entries)} after {last_leader}"
        last_leader = leader_lap(entries)
        for kart, _, lap, _, _ in entries:
            if lap < last_lap.get(kart, 0):
                return f"#{index}: kart {kart} lap {lap} after {last_lap[kart]}"
            last_lap[kart] = lap
    return None


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else None


class RaceWatcher:
    """FollowRace on one replica, read on its own thread: every standings message with the time
    it came (time.monotonic), the times locations came, and how the stream ended. The request
    stream stays open (a half-close would end the RPC) until `close()`."""

    def __init__(self, world, replica, race, event_types, limit):
        self.replica = replica
        self.requests = processes.Requests(world.kart_pb.FollowRaceRequest(race_name=race, event_types=event_types))
        self.standings = []  # (time, entries)
        self.locations = []  # times
        self.end = None  # "OK" or the status code's name, once the stream ended
        self.details = ""
        self.ended_at = None
        self.call = world.kart_rpc.SwiftKartServiceStub(replica.channel).FollowRace(iter(self.requests), timeout=limit)
        self.thread = threading.Thread(target=self._read, name=f"race watcher {replica.name}", daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for response in self.call:
                if response.WhichOneof("event") == "standings":
                    self.standings.append((time.monotonic(), standings_entries(response.standings)))
                else:
                    self.locations.append(time.monotonic())
            self.end = "OK"
        except grpc.RpcError as error:
            self.details = error.details() or ""
            self.end = error.code().name
        self.ended_at = time.monotonic()

    def sequence(self):
        return [entries for _, entries in list(self.standings)]

    def describe_end(self):
        return "still open" if self.end is None else self.end + (f" ({self.details})" if self.details else "")

    def close(self):
        self.requests.close()
        self.call.cancel()


def start_kart_replicas(world):
    if world.kart_pb is None:
        world.kart_pb, world.kart_rpc = load(os.path.join(ROOT, "Services", "Sources", "SwiftKart"), "swiftkart.proto")
    for index in range(3):  # one after the other: the first creates the tables
        replica = Replica(world, index, "swiftkart-server", ["--speed", str(RACE_SPEED), "--seed", str(RACE_SEED)])
        world.kart_replicas.append(replica)
        replica.start()
    return world.kart_replicas


def check_races(world, notes):
    watchers = []
    try:
        began = time.monotonic()
        a, b, c = start_kart_replicas(world)
        notes.append(f"swiftkart-server A, B, C (--speed {RACE_SPEED} --seed {RACE_SEED}, the orders replicas' "
                     f"database): pids {a.child.pid}, {b.child.pid}, {c.child.pid}, started in "
                     f"{time.monotonic() - began:.1f} s")
        pb = world.kart_pb
        races = world.kart_rpc.SwiftKartServiceStub(a.channel).ListRaces(pb.ListRacesRequest(), timeout=10).races
        expect(races, "ListRaces on A: no races")
        race = min(races, key=lambda race: (race.laps, len(race.drivers), race.name))
        event_types = [pb.RACE_EVENT_TYPE_STANDINGS, pb.RACE_EVENT_TYPE_KART_LOCATIONS]
        # A's follower first: A takes the race's lock and leads it.
        on_a = RaceWatcher(world, a, race.name, event_types, 60)
        watchers.append(on_a)
        expect(wait_until(lambda: len(on_a.standings) >= 2 or on_a.end, 10) and len(on_a.standings) >= 2,
               f"A's follower of {race.name}: {len(on_a.standings)} standings within 10 s, stream {on_a.describe_end()}")
        race_start = on_a.standings[0][0]
        on_b = RaceWatcher(world, b, race.name, event_types, 60)
        on_c = RaceWatcher(world, c, race.name, event_types, 60)
        watchers += [on_b, on_c]

        # Before the kill: a few standings on B and C (to line them up with A's and time the
        # interval), and the leader past lap 1 (so a restart would show in the laps).
        def ready():
            return all(len(w.standings) >= 4 for w in (on_b, on_c)) and leader_lap(on_a.standings[-1][1]) >= 2

        expect(wait_until(lambda: ready() or any(w.end for w in watchers), 20) and ready(),
               f"before the kill: standings A {len(on_a.standings)}, B {len(on_b.standings)}, C {len(on_c.standings)} "
               f"(4 wanted on B and C), A's leader on lap {leader_lap(on_a.standings[-1][1])} (2 wanted); streams "
               f"A {on_a.describe_end()}, B {on_b.describe_end()}, C {on_c.describe_end()}")
        time.sleep(random.uniform(0, 1))  # anywhere within a standings interval
        expect(on_a.end is None, f"A's stream ended before the kill: {on_a.describe_end()}")
        killed_at = time.monotonic()
        a.kill()
        wait_until(lambda: on_a.end, 5)  # what A's follower still had on its way
        a_sequence = on_a.sequence()
        notes.append(f"{race.name} ({race.laps} laps, {len(race.drivers)} karts): A's follower got {len(a_sequence)} "
                     f"standings; A killed (SIGKILL) {killed_at - race_start:.1f} s into the race, its leader on lap "
                     f"{leader_lap(a_sequence[-1])}")

        # B's and C's followers go on to the finish; A's stream is gone with A.
        finished = wait_until(lambda: on_b.end and on_c.end, 40)
        notes.append(f"streams ended: A {on_a.describe_end()}, B {on_b.describe_end()}, C {on_c.describe_end()}")
        dead = [f"{replica.name} exited {replica.child.process.poll()}: {replica.child.tail(8)}"
                for replica in (b, c) if not replica.child.alive()]
    finally:
        for watcher in watchers:
            watcher.close()
        for replica in world.kart_replicas:
            if replica.child is not None and replica.child.alive():
                replica.child.stop(signal.SIGTERM, 3)
    expect(finished, f"B's and C's streams not over 40 s after the kill: B {on_b.describe_end()} with "
                     f"{len(on_b.standings)} standings, C {on_c.describe_end()} with {len(on_c.standings)}")
    expect(not dead, f"a swiftkart-server replica died: {dead}")

    problems = []
    a_times = [moment for moment, _ in on_a.standings]
    interval = median([later - earlier for earlier, later in zip(a_times, a_times[1:])]) or 1.0
    limit = 2 + interval
    split = {}
    for watcher in (on_b, on_c):
        name, got = watcher.replica.name, list(watcher.standings)
        # (1) While A leads, what B and C get is a contiguous run of what A's follower got.
        start = next((index for index, entries in enumerate(a_sequence) if entries == got[0][1]), None)
        if start is None:
            problems.append(f"{name}'s first standings is none that A sent: {describe_standings(got[0][1])}")
            continue
        matched = 0
        while matched < len(got) and start + matched < len(a_sequence) and got[matched][1] == a_sequence[start + matched]:
            matched += 1
        if matched < len(got) and start + matched < len(a_sequence):
            problems.append(f"{name}'s standings #{matched} differs from A's #{start + matched}: "
                            f"{describe_standings(got[matched][1])} vs {describe_standings(a_sequence[start + matched])}")
            continue
        # A's follower may have missed the last tick A announced before it died (announce, then publish).
        unseen = 0
        while matched + unseen < len(got) and got[matched + unseen][0] < killed_at:
            unseen += 1
        if unseen > 1:
            problems.append(f"{name} got {unseen} standings before the kill that A's follower did not")
        before, after = got[:matched + unseen], got[matched + unseen:]
        split[name] = (before, after)
        intervals = [later - earlier for (earlier, _), (later, _) in zip(before[1:], before[2:])]
        # (2) The race goes on elsewhere: standings again within 2 s plus an interval.
        if len(after) < 2:
            problems.append(f"{name} got {len(after)} standings after the kill")
            continue
        gap = after[0][0] - before[-1][0]
        locations_gap = max((later - earlier for earlier, later in zip(watcher.locations, watcher.locations[1:])
                             if earlier < killed_at + 2 and later > killed_at - 0.5), default=None)
        notes.append(f"{name}: joined at A's standings #{start}; {len(before)} standings before the kill (same as A's"
                     + (f", the last {unseen} after A's follower's last" if unseen else "")
                     + f"; interval median {median(intervals) or 0:.2f} s), {len(after)} after; takeover gap "
                     f"{gap:.2f} s between the last standings before the kill and the first after (first "
                     f"{after[0][0] - killed_at:.2f} s after the kill); longest locations gap around the kill "
                     + (f"{locations_gap:.2f} s" if locations_gap is not None else "none"))
        if gap > limit:
            problems.append(f"{name}: {gap:.2f} s without standings across the kill (limit 2 s + interval "
                            f"{interval:.2f} s = {limit:.2f} s)")
        # A mirror takes over after 250 ms without a tick: a pause in the locations (10 a second)
        # shows the kill stopped the leader; without one, A did not lead and the kill proved nothing.
        if locations_gap is None or locations_gap < 0.2:
            problems.append(f"{name}: no pause in the locations around the kill (longest gap "
                            f"{locations_gap or 0:.2f} s): A was not leading the race?")
        # (3) The race continues: no lap goes back, across the kill or anywhere.
        backwards = laps_backwards([entries for _, entries in got])
        if backwards:
            problems.append(f"{name}: laps went back ({backwards}; the leader was on lap {leader_lap(before[-1][1])} "
                            f"at the kill, {leader_lap(after[0][1])} on the first standings after)")
        repeated = len(got) - len({entries for _, entries in got})
        if repeated:
            problems.append(f"{name} got {repeated} standings twice")
    notes.append(f"A's standings interval: median {interval:.2f} s, "
                 f"max {max((l - e for e, l in zip(a_times, a_times[1:])), default=0):.2f} s")

    # (4) B and C end together: the same standings after the kill and the same final standings.
    b_sequence, c_sequence = on_b.sequence(), on_c.sequence()
    in_b, in_c = set(b_sequence), set(c_sequence)
    common = in_b & in_c
    b_from = next((index for index, entries in enumerate(b_sequence) if entries in common), len(b_sequence))
    c_from = next((index for index, entries in enumerate(c_sequence) if entries in common), len(c_sequence))
    only_b = [entries for entries in b_sequence[b_from:] if entries not in in_c]
    only_c = [entries for entries in c_sequence[c_from:] if entries not in in_b]
    if [e for e in b_sequence[b_from:] if e in in_c] != [e for e in c_sequence[c_from:] if e in in_b]:
        problems.append("B and C got their common standings in different orders")
    if only_b or only_c:
        # The new leader publishes standings on the tick it takes over at, a tick the other misses
        # unless it is a standings tick: one such message is explained, more are not.
        where = {name: [index for index, entries in enumerate(sequence) if entries in only]
                 for name, sequence, only in (("B", b_sequence, only_b), ("C", c_sequence, only_c))}
        before_kill = [f"{name} #{index}" for name, indexes in where.items() for index in indexes
                       if index < len(split.get(name, ((), ()))[0])]
        notes.append(f"standings only one of B and C got (once both had joined): B {len(only_b)} (#{where['B']}), "
                     f"C {len(only_c)} (#{where['C']})" + ("" if before_kill else " — after the kill: the new leader's "
                                                           "standings for the tick it took over at"))
        if len(only_b) + len(only_c) > 1 or before_kill:
            problems.append(f"B and C got different standings once both had joined: {len(only_b)} only on B, "
                            f"{len(only_c)} only on C" + (f" (before the kill: {before_kill})" if before_kill else ""))
    for watcher in (on_b, on_c):
        if watcher.end != "OK":
            problems.append(f"{watcher.replica.name}'s stream ended {watcher.describe_end()}, not OK")
    if b_sequence and c_sequence:
        final = b_sequence[-1]
        if c_sequence[-1] != final:
            problems.append(f"final standings differ: B {describe_standings(final, 8)}; C {describe_standings(c_sequence[-1], 8)}")
        if sorted(lap for _, _, lap, _, _ in final) != [race.laps] * len(race.drivers):
            problems.append(f"final standings not every kart on lap {race.laps}: {describe_standings(final, 8)}")
        notes.append(f"race over {on_b.standings[-1][0] - race_start:.1f} s after A's first standings; final standings "
                     f"(B = C): {describe_standings(final, 3)}")
    expect(not problems, "; ".join(problems))


# ---------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True,
                        help="the directory of the built orders-server and swiftkart-server (e.g. .build/debug)")
    parser.add_argument("--protos", default=os.path.join(ROOT, "Protos"))
    parser.add_argument("--nginx", default="nginx", help="the nginx executable")
    parser.add_argument("--only", help="comma-separated check letters (a,b,c,d,e)")
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--time-limit", type=int, default=300, help="seconds for the whole run")
    parser.add_argument("--keep", action="store_true", help="keep the run directory (nginx conf and logs, replica logs)")
    args = parser.parse_args()
    only = None if args.only is None else set(args.only.replace(" ", "").split(","))
    processes.install_cleanup()
    processes.start_time_limit(args.time_limit)
    report = Report(only)
    world = World(args)
    try:
        world.start()
    except Exception as error:
        report.add("start PostgreSQL and three orders-server replicas", f"{type(error).__name__}: {error}")
        world.close()
        status = report.finish()
        processes.stop_all()
        exit_now(status)
    if report.wanted("a"):
        why = world.start_nginx()
        if why is not None:
            report.add("start nginx in front of the replicas", why)
        else:
            report.check("a. orders through nginx: watchers resume across a replica's SIGKILL, every acknowledged update "
                         "exactly once in order", lambda notes: check_orders(world, notes), limit=120)
            try:
                restart_victims(world)
            except Exception as error:
                report.add("start the killed replica again", f"{type(error).__name__}: {error}")
    if report.wanted("b"):
        report.check("b. chat: participants on three replicas see one order", lambda notes: check_chat(world, notes), limit=60)
    if report.wanted("c"):
        report.check("c. database down: UNAVAILABLE publishes, NOT_SERVING, then SERVING and every acknowledged update "
                     "exactly once", lambda notes: check_database_down(world, notes), limit=120)
    if report.wanted("d"):
        report.check("d. a resume token from replica A works on replica B", lambda notes: check_resume_token(world, notes),
                     limit=60)
    if report.wanted("e"):
        report.check("e. races: one simulation across three replicas", lambda notes: check_races(world, notes), limit=90)
    for line in world.dead_replicas():
        print(f"    {line}", flush=True)
    world.close()
    status = report.finish()
    processes.stop_all()
    exit_now(status)  # no interpreter shutdown, which can hang a grpcio client


if __name__ == "__main__":
    main()
