#!/usr/bin/env python3
"""Pitlane's OpenTelemetry tracing, judged by an OTLP collector no one here wrote: grpcio serving
`opentelemetry.proto.collector.trace.v1.TraceService/Export` with the messages of PyPI's
`opentelemetry-proto`, W3C `traceparent` headers made by the OpenTelemetry API's own propagator
(`TraceContextTextMapPropagator`), and grpcio as the traced client.

  tracing_peer.py --bin DIR [--protos DIR] [--only a,b,c,d,e,f,g,h] [--wait 10] [--time-limit 300]

DIR holds the built executables. The peer starts its collector in-process (plaintext HTTP/2 on
127.0.0.1:0), then swiftkart-server (port 0, --speed 10, a temporary database) with
`--otlp-endpoint 127.0.0.1:COLLECTOR --log-format json`, and checks:
  a. the `swiftkart` CLI (`swiftkart races --otlp-endpoint ...`) calling swiftkart-server: the
     collector gets a SPAN_KIND_CLIENT span "SwiftKartService/ListRaces" from service.name
     "swiftkart" (exported before the CLI exits) and a SPAN_KIND_SERVER span of the same name
     from service.name "swiftkart-server", with one trace id, the server span's parent_span_id
     being the client span's span_id; rpc.system "grpc", rpc.service "SwiftKartService",
     rpc.method "ListRaces", rpc.grpc.status_code 0 (an int), status UNSET or OK, 16-byte trace
     ids, 8-byte span ids, start and end times (Unix epoch nanoseconds) within the call; without
     --otlp-message-events neither span has events;
  b. grpcio's ListRaces with a `traceparent` (random trace id and span id, sampled, and a
     `tracestate`): the server span continues that trace with that span as its parent, and its
     trace_state is the request's tracestate ("pitlane=peer"); tracestate values by W3C Trace
     Context's rules: a list with spaces and an empty member, 32 members and 512 characters are
     carried (the same members); 33 members, 513 characters, an uppercase key, a key twice and a
     value with "=" are dropped (trace_state empty) and the call still succeeds, in the trace;
  c. WatchRace and FollowRace for an unknown race (NOT_FOUND): the server spans have
     rpc.grpc.status_code 5 and status UNSET, as OTel's gRPC conventions count only UNKNOWN,
     DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE and DATA_LOSS as a server's errors
     (--status-rule spec: STATUS_CODE_ERROR for any non-OK code); a WatchRace of a live race cut by its 1.5 s
     deadline has a span that ends with it (code 4, or 1 when the client's RST_STREAM came first);
     an unregistered method, /SwiftKartService/NoSuchMethod (UNIMPLEMENTED): a SERVER span named
     "SwiftKartService/NoSuchMethod" in the caller's trace, its parent the caller's span,
     rpc.grpc.status_code 12 and STATUS_CODE_ERROR, and an access-log line on the server's
     standard error (JSON) with that method, status UNIMPLEMENTED and the trace id;
  d. a malformed traceparent ("00-xyz"), one with the all-zero trace id (invalid in W3C Trace
     Context) and none at all: the call succeeds and its server span starts a new trace (a valid,
     non-zero trace id of its own, no parent);
  e. the collector stopped: swiftkart-server keeps answering (ListRaces, a NOT_FOUND WatchRace,
     each within 5 s, again after a batch period), and the `swiftkart` CLI still lists races and
     exits within 20 s; the same with a hung collector (a socket that accepts and never answers);
     then a collector back on the same port: whether spans arrive again is noted (not a failure:
     the spec does not ask for it);
  f. orders-server with --otlp-endpoint: CreateOrder (OK) and GetOrder of an unknown order
     (NOT_FOUND) export "orders.v1.OrderTracking/..." server spans from service.name
     "orders-server" with the right status codes, parents and trace_state;
  g. over the whole run: every export request parsed as an ExportTraceServiceRequest, and no
     process traced its own exports (no "opentelemetry.proto.collector.trace.v1.TraceService/
     Export" span: that is a loop in which each batch makes the next one);
  h. message events (OpenTelemetry's RPC conventions: events named "message" with message.type
     SENT or RECEIVED, message.id from 1 in each direction, message.uncompressed_size): a second
     swiftkart-server with --otlp-message-events; a FollowRace of 3 requests, half-closed after
     the first response, has a server span with RECEIVED ids 1, 2, 3 and SENT ids 1..n (n the
     responses grpcio read) in order, each size the message's serialized size and each time
     within the span; `swiftkart races --otlp-message-events` has a client span with SENT 1 and
     RECEIVED 1 whose sizes are the server span's RECEIVED 1 and SENT 1; a FollowRace of 150
     requests keeps 128 events (ids still in order from 1) and counts the rest in
     dropped_events_count; the same 3-request FollowRace on the first server (no flag) has a
     span without events.
Spans come in batches, so each wait for one is up to --wait seconds. Prints "ok NAME" or
"FAIL NAME: why" per check (observations indented below it) and a closing "checks: N ok, M
failed"; exits 1 on any failure. Every wait is bounded, and so is the whole run.
Needs opentelemetry-proto and opentelemetry-api (`.venv/bin/pip install opentelemetry-proto
opentelemetry-api`).
"""
import argparse
import json
import os
import secrets
import socket
import sys
import threading
import time
import traceback
from concurrent import futures

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # the checks report what grpcio saw themselves
import grpc  # noqa: E402 (after its environment)

import processes  # noqa: E402
from peer_checks import Report, exit_now, expect, load, temporary_directory  # noqa: E402

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CALL = 10  # seconds for any one RPC while the collector is up
EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
SLACK_NS = 1_000_000_000  # span times may be read a little before or after the client's own clock reads
STATUS_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}
# OpenTelemetry's gRPC semantic conventions: the codes a SERVER span counts as errors (the others
# are the client's doing); the default, --status-rule semconv, judges by these; --status-rule spec
# counts any non-OK code as a server span's error.
SEMCONV_SERVER_ERRORS = {2, 4, 12, 13, 14, 15}  # UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS
STATUS_RULE = "semconv"


# ---------------------------------------------------------------------------------------------
# Results (as in operator_peer.py)


class Problems(list):
    """Everything wrong in one check, reported together rather than the first alone."""

    def need(self, condition, why):
        if not condition:
            self.append(why)
        return condition

    def raise_any(self):
        if self:
            raise AssertionError("; ".join(self))


# ---------------------------------------------------------------------------------------------
# The collector


def otlp():
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2
    return trace_service_pb2, trace_pb2


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None, None
    if kind == "array_value":
        return kind, [value_of(v)[1] for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return kind, {kv.key: value_of(kv.value)[1] for kv in any_value.kvlist_value.values}
    return kind, getattr(any_value, kind)


def attributes(key_values):
    """name -> (AnyValue kind, Python value)."""
    return {kv.key: value_of(kv.value) for kv in key_values}


class Span:
    """One received span with what it came with (its resource, its scope, its export)."""

    def __init__(self, span, resource, scope, export_index, arrived):
        self.proto = span
        self.resource = resource
        self.scope = scope
        self.export_index = export_index
        self.arrived = arrived  # time.monotonic()
        self.attributes = attributes(span.attributes)

    @property
    def service(self):
        return self.resource.get("service.name", (None, None))[1]

    @property
    def trace_id(self):
        return self.proto.trace_id.hex()

    @property
    def span_id(self):
        return self.proto.span_id.hex()

    @property
    def parent(self):
        return self.proto.parent_span_id.hex()

    def describe(self):
        _, trace_pb2 = otlp()
        span = self.proto
        kind = trace_pb2.Span.SpanKind.Name(span.kind) if span.kind in trace_pb2.Span.SpanKind.values() else span.kind
        status = trace_pb2.Status.StatusCode.Name(span.status.code) \
            if span.status.code in trace_pb2.Status.StatusCode.values() else span.status.code
        attrs = ", ".join(f"{name}={value!r}({kind_[:-6] if kind_ else kind_})"
                          for name, (kind_, value) in sorted(self.attributes.items()))
        duration = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e6
        message = f" {span.status.message!r}" if span.status.message else ""
        return (f"{span.name!r} {kind} service.name={self.service!r} trace={self.trace_id or '-'} "
                f"span={self.span_id or '-'} parent={self.parent or '-'} status={status}{message} "
                f"start={span.start_time_unix_nano} ({duration:.2f} ms) [{attrs}] (export #{self.export_index})")


class Collector:
    """An OTLP/gRPC trace collector on 127.0.0.1 (plaintext HTTP/2): records every export request,
    its metadata and its spans, and answers an empty ExportTraceServiceResponse."""

    def __init__(self):
        self.lock = threading.Condition()
        self.spans = []
        self.exports = []  # (arrived, metadata, size, parse error or None, span count, services)
        self.server = None
        self.port = None

    def start(self, port=0):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        handler = grpc.unary_unary_rpc_method_handler(self._export, request_deserializer=None,
                                                      response_serializer=None)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService", {"Export": handler}),))
        bound = server.add_insecure_port(f"127.0.0.1:{port}")
        if bound == 0:
            raise RuntimeError(f"the collector could not bind 127.0.0.1:{port}")
        server.start()
        self.server, self.port = server, bound
        return bound

    def stop(self):
        if self.server is not None:
            self.server.stop(grace=0).wait(5)
            self.server = None

    def _export(self, raw, context):
        trace_service_pb2, _ = otlp()
        arrived = time.monotonic()
        metadata = {key: value for key, value in context.invocation_metadata()}
        if "x-pitlane-probe" in metadata:  # the peer's own check that the collector is listening
            return trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        try:
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(raw)
        except Exception as error:  # recorded: check g reports it
            with self.lock:
                self.exports.append((arrived, metadata, len(raw), f"{type(error).__name__}: {error}", 0, []))
                self.lock.notify_all()
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "not an ExportTraceServiceRequest")
        received, services = [], []
        with self.lock:
            index = len(self.exports)
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                services.append(resource.get("service.name", (None, None))[1])
                for scope_spans in resource_spans.scope_spans:
                    scope = scope_spans.scope.name
                    for span in scope_spans.spans:
                        received.append(Span(span, resource, scope, index, arrived))
            self.exports.append((arrived, metadata, len(raw), None, len(received), services))
            self.spans.extend(received)
            self.lock.notify_all()
        return trace_service_pb2.ExportTraceServiceResponse().SerializeToString()

    def wait_for(self, predicate, timeout, count=1):
        """The received spans satisfying `predicate` once there are `count` of them, or all there
        are after `timeout` seconds."""
        end = time.monotonic() + timeout
        with self.lock:
            while True:
                found = [span for span in self.spans if predicate(span)]
                left = end - time.monotonic()
                if len(found) >= count or left <= 0:
                    return found
                self.lock.wait(min(left, 0.2))

    def snapshot(self):
        with self.lock:
            return list(self.spans), list(self.exports)


# ---------------------------------------------------------------------------------------------
# Trace context


def new_context():
    """A random (trace id, span id), as hex, and the headers the OpenTelemetry API's W3C
    propagator makes for them (sampled, with a tracestate)."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    trace_id, span_id = secrets.randbits(128) | 1, secrets.randbits(64) | 1
    context = trace.set_span_in_context(trace.NonRecordingSpan(trace.SpanContext(
        trace_id=trace_id, span_id=span_id, is_remote=True, trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
        trace_state=trace.TraceState([("pitlane", "peer")]))))
    carrier = {}
    TraceContextTextMapPropagator().inject(carrier, context=context)
    return f"{trace_id:032x}", f"{span_id:016x}", sorted(carrier.items())


def now_ns():
    return time.time_ns()


def short(text, limit=160):
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


# ---------------------------------------------------------------------------------------------
# What a span must be


def judge_span(problems, span, *, who, name, kind, service, rpc_service, method, status_code, window,
               trace_id=None, parent=None, root=False, require_status_code=True):
    """Adds to `problems` everything about `span` that is not as the spec says."""
    _, trace_pb2 = otlp()
    proto = span.proto
    problems.need(proto.name == name, f"{who}: name {proto.name!r}, not {name!r}")
    problems.need(proto.kind == kind, f"{who}: kind {trace_pb2.Span.SpanKind.Name(proto.kind) if proto.kind in trace_pb2.Span.SpanKind.values() else proto.kind}, "
                  f"not {trace_pb2.Span.SpanKind.Name(kind)}")
    problems.need(span.service == service, f"{who}: resource service.name {span.service!r}, not {service!r}")
    if problems.need(len(proto.trace_id) == 16, f"{who}: trace_id is {len(proto.trace_id)} bytes, not 16"):
        problems.need(proto.trace_id != bytes(16), f"{who}: trace_id is all zeros (invalid)")
    if problems.need(len(proto.span_id) == 8, f"{who}: span_id is {len(proto.span_id)} bytes, not 8"):
        problems.need(proto.span_id != bytes(8), f"{who}: span_id is all zeros (invalid)")
    if trace_id is not None:
        problems.need(span.trace_id == trace_id, f"{who}: trace id {span.trace_id}, not the caller's {trace_id}")
    if parent is not None:
        problems.need(span.parent == parent, f"{who}: parent_span_id {span.parent or '(none)'}, not the caller's span {parent}")
        problems.need(span.span_id != parent, f"{who}: span_id {span.span_id} is the caller's own span id (no span of its own)")
    if root:
        problems.need(not proto.parent_span_id, f"{who}: parent_span_id {span.parent}, but it should start a new trace (no parent)")
    for attribute, want in (("rpc.system", "grpc"), ("rpc.service", rpc_service), ("rpc.method", method)):
        got_kind, got = span.attributes.get(attribute, (None, None))
        if got_kind is None:
            problems.append(f"{who}: no attribute {attribute} (want {want!r})")
        else:
            problems.need(got_kind == "string_value" and got == want,
                          f"{who}: {attribute}={got!r} ({got_kind}), not the string {want!r}")
    codes = (status_code,) if isinstance(status_code, int) else tuple(status_code)
    wanted = " or ".join(str(code) for code in codes)
    got_kind, got = span.attributes.get("rpc.grpc.status_code", (None, None))
    if got_kind is None:
        if require_status_code:
            problems.append(f"{who}: no attribute rpc.grpc.status_code (want the int {wanted})")
    else:
        problems.need(got_kind == "int_value" and got in codes,
                      f"{who}: rpc.grpc.status_code={got!r} ({got_kind}), not the int {wanted}")
    code = got if got_kind == "int_value" and got in codes else codes[0]
    status = status_name(proto.status.code)
    if code == 0:
        problems.need(proto.status.code in (trace_pb2.Status.STATUS_CODE_UNSET, trace_pb2.Status.STATUS_CODE_OK),
                      f"{who}: status {status} for an OK call (want UNSET or OK)")
    elif STATUS_RULE == "spec" or kind != trace_pb2.Span.SPAN_KIND_SERVER or code in SEMCONV_SERVER_ERRORS:
        rule = "the spec: ERROR for any non-OK status" if STATUS_RULE == "spec" else "OTel's gRPC conventions"
        problems.need(proto.status.code == trace_pb2.Status.STATUS_CODE_ERROR,
                      f"{who}: status {status} for a call that ended with gRPC status {code} {STATUS_NAMES.get(code, '')} "
                      f"(want STATUS_CODE_ERROR, by {rule})")
    else:  # --status-rule semconv: a server span's status is left UNSET for the client's mistakes
        problems.need(proto.status.code == trace_pb2.Status.STATUS_CODE_UNSET,
                      f"{who}: status {status} for a server span ending {code} {STATUS_NAMES.get(code, '')} (OTel's "
                      f"gRPC conventions: UNSET unless one of {sorted(SEMCONV_SERVER_ERRORS)})")
    start, end = proto.start_time_unix_nano, proto.end_time_unix_nano
    if problems.need(start > 0 and end > 0, f"{who}: start_time_unix_nano {start}, end_time_unix_nano {end} (unset)"):
        problems.need(end >= start, f"{who}: ends ({end}) before it starts ({start})")
        low, high = window
        problems.need(low - SLACK_NS <= start <= high + SLACK_NS and low - SLACK_NS <= end <= high + SLACK_NS,
                      f"{who}: times {start}..{end} ns are not within the call's {low}..{high} ns (Unix epoch; "
                      f"off by {(start - low) / 1e9:+.3f} s)")


def status_name(code):
    _, trace_pb2 = otlp()
    return trace_pb2.Status.StatusCode.Name(code) if code in trace_pb2.Status.StatusCode.values() else str(code)


def in_window(span, window):
    low, high = window
    return low - SLACK_NS <= span.proto.start_time_unix_nano <= high + SLACK_NS


# ---------------------------------------------------------------------------------------------
# The checks


class Run:
    def __init__(self, args, report, collector, pb, rpc, tmp):
        self.args, self.report, self.collector, self.pb, self.rpc, self.tmp = args, report, collector, pb, rpc, tmp
        self.exe_dir = os.path.abspath(args.bin)
        self.wait = args.wait
        self.known_traces = set()  # every trace id a check has made or seen
        self.server = None
        self.port = None
        self.channel = None

    def exe(self, name):
        path = os.path.join(self.exe_dir, name)
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"{path} is not an executable")
        return path

    def start_server(self):
        args = [self.exe("swiftkart-server"), "--port", "0", "--speed", "10",
                "--database", os.path.join(self.tmp, "swiftkart.sqlite"),
                "--otlp-endpoint", f"127.0.0.1:{self.collector.port}", "--log-format", "json"]
        self.server, self.port = processes.start_server(args, "swiftkart-server")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        grpc.channel_ready_future(self.channel).result(timeout=CALL)
        self.kart = self.rpc.SwiftKartServiceStub(self.channel)
        print(f"    swiftkart-server pid {self.server.pid} port {self.port}, collector 127.0.0.1:{self.collector.port}",
              flush=True)

    def server_span(self, trace_id, name=None, service="swiftkart-server"):
        """The first server-side span of `trace_id` (from `service`), waiting up to --wait s; None if none came."""
        found = self.collector.wait_for(
            lambda span: span.trace_id == trace_id and span.service == service and (name is None or span.proto.name == name),
            self.wait)
        return found[0] if found else None

    def missing(self, what, trace_id=None):
        spans, exports = self.collector.snapshot()
        seen = [span.describe() for span in spans if trace_id is None or span.trace_id == trace_id]
        of_trace = "" if trace_id is None else f"; of trace {trace_id}: {seen or 'none'}"
        return (f"no {what} reached the collector within {self.wait} s ({len(exports)} export request(s), "
                f"{len(spans)} span(s) in all{of_trace}; "
                f"server stderr: {self.server.tail(3) if self.server else '-'})")

    # a. the CLI and the server
    def cli_to_server(self):
        def run(notes):
            _, trace_pb2 = otlp()
            args = [self.exe("swiftkart"), "races", "--host", "127.0.0.1", "--port", str(self.port), "--limit", "3",
                    "--otlp-endpoint", f"127.0.0.1:{self.collector.port}"]
            window_start = now_ns()
            cli = processes.Child(args, "swiftkart")
            status = cli.wait(30)
            window = (window_start, now_ns())
            exited = time.monotonic()
            if status is None:
                cli.stop()
                raise AssertionError(f"`swiftkart races --otlp-endpoint ...` still running after 30 s: {cli.tail()}")
            expect(status == 0, f"`swiftkart races --otlp-endpoint ...` exited {status}: {cli.tail()}")
            expect(any(line.strip() == "3 races" for line in cli.stdout), f"the CLI did not list 3 races: {cli.tail()}")
            clients = self.collector.wait_for(lambda span: (span.service == "swiftkart" or
                                                            span.proto.kind == trace_pb2.Span.SPAN_KIND_CLIENT)
                                              and "TraceService/Export" not in span.proto.name, self.wait)
            expect(clients, self.missing("span from the CLI (service.name \"swiftkart\" or SPAN_KIND_CLIENT)"))
            client = clients[0]
            notes.append(f"client: {client.describe()}")
            late = client.arrived - exited
            notes.append(f"the client span arrived {'%.2f s after' % late if late > 0 else '%.2f s before' % -late} the CLI exited")
            problems = Problems()
            problems.need(len(clients) == 1, f"{len(clients)} client spans for one CLI call: "
                          + " | ".join(span.describe() for span in clients[1:]))
            problems.need(late <= 0.5, f"the client span reached the collector {late:.2f} s after the CLI exited "
                          "(it should export before exiting)")
            judge_span(problems, client, who="client span", name="SwiftKartService/ListRaces",
                       kind=trace_pb2.Span.SPAN_KIND_CLIENT, service="swiftkart", rpc_service="SwiftKartService",
                       method="ListRaces", status_code=0, window=window, root=True, require_status_code=False)
            if "rpc.grpc.status_code" not in client.attributes:
                notes.append("(the client span has no rpc.grpc.status_code: OTel's RPC conventions have it on both sides)")
            problems.need(not client.proto.events and not client.proto.dropped_events_count,
                          f"client span: {len(client.proto.events)} events without --otlp-message-events")
            self.known_traces.add(client.trace_id)
            server = self.server_span(client.trace_id) if len(client.proto.trace_id) == 16 else None
            if server is None:
                others = self.collector.wait_for(lambda span: span.service == "swiftkart-server" and in_window(span, window), 0)
                problems.append(self.missing(f"server span with the client's trace id {client.trace_id}", client.trace_id)
                                + (f"; server spans in the call's time: {[span.describe() for span in others]}" if others else ""))
            else:
                notes.append(f"server: {server.describe()}")
                judge_span(problems, server, who="server span", name="SwiftKartService/ListRaces",
                           kind=trace_pb2.Span.SPAN_KIND_SERVER, service="swiftkart-server", rpc_service="SwiftKartService",
                           method="ListRaces", status_code=0, window=window, trace_id=client.trace_id, parent=client.span_id)
                problems.need(not server.proto.events and not server.proto.dropped_events_count,
                              f"server span: {len(server.proto.events)} events without --otlp-message-events")
                c, s = client.proto, server.proto
                if not (c.start_time_unix_nano <= s.start_time_unix_nano and s.end_time_unix_nano <= c.end_time_unix_nano):
                    notes.append(f"(the server span {s.start_time_unix_nano}..{s.end_time_unix_nano} is not inside the client "
                                 f"span {c.start_time_unix_nano}..{c.end_time_unix_nano})")
            problems.raise_any()

        self.report.check("a. `swiftkart races --otlp-endpoint` → swiftkart-server: a CLIENT span from \"swiftkart\" and "
                          "a SERVER span from \"swiftkart-server\", one trace, the server's parent = the client's span", run)

    # b. a grpcio client's traceparent
    def grpcio_traceparent(self):
        def run(notes):
            _, trace_pb2 = otlp()
            trace_id, span_id, headers = new_context()
            self.known_traces.add(trace_id)
            notes.append(f"sent {headers}")
            window_start = now_ns()
            races = self.kart.ListRaces(self.pb.ListRacesRequest(limit=2), metadata=headers, timeout=CALL).races
            window = (window_start, now_ns())
            expect(len(races) == 2, f"ListRaces(limit: 2) returned {len(races)} races")
            span = self.server_span(trace_id)
            if span is None:
                others = self.collector.wait_for(lambda s: s.service == "swiftkart-server" and in_window(s, window), 0)
                raise AssertionError(self.missing(f"server span of trace {trace_id}", trace_id)
                                     + (f"; server spans in the call's time: {[s.describe() for s in others]}" if others else ""))
            notes.append(f"server: {span.describe()}")
            notes.append(f"trace_state {span.proto.trace_state!r}")
            problems = Problems()
            judge_span(problems, span, who="server span", name="SwiftKartService/ListRaces",
                       kind=trace_pb2.Span.SPAN_KIND_SERVER, service="swiftkart-server", rpc_service="SwiftKartService",
                       method="ListRaces", status_code=0, window=window, trace_id=trace_id, parent=span_id)
            sent = dict(headers).get("tracestate")
            problems.need(span.proto.trace_state == sent, f"server span: trace_state {span.proto.trace_state!r}, not the "
                                                          f"request's tracestate {sent!r}")
            problems.raise_any()

        self.report.check("b. grpcio ListRaces with a traceparent and tracestate from the OpenTelemetry propagator: the "
                          "server span continues that trace, its parent the caller's span, its trace_state the tracestate", run)

    # b. tracestate by W3C Trace Context's rules: carried when well-formed, dropped whole when not
    def tracestate_rules(self):
        longest = "a=" + "x" * 254 + ",b=" + "y" * 253  # 512 characters
        variants = [
            ("spaces and an empty member", "a=1 , ,b@c=2,congo=t61rcWkgMzE", ["a=1", "b@c=2", "congo=t61rcWkgMzE"]),
            ("32 list members (W3C's most)", ",".join(f"k{i}=v" for i in range(32)), [f"k{i}=v" for i in range(32)]),
            ("512 characters", longest, longest.split(",")),
            ("33 list members", ",".join(f"k{i}=v" for i in range(33)), None),
            ("513 characters", "a=" + "x" * 254 + ",b=" + "y" * 254, None),
            ("an uppercase key", "Pitlane=peer", None),
            ("a key twice", "rojo=1,congo=2,rojo=3", None),
            ("a value with \"=\"", "a=b=c", None),
        ]
        for label, tracestate, members in variants:
            def run(notes, tracestate=tracestate, members=members):
                _, trace_pb2 = otlp()
                trace_id, span_id = f"{secrets.randbits(128) | 1:032x}", f"{secrets.randbits(64) | 1:016x}"
                self.known_traces.add(trace_id)
                headers = [("traceparent", f"00-{trace_id}-{span_id}-01"), ("tracestate", tracestate)]
                window_start = now_ns()
                try:
                    races = self.kart.ListRaces(self.pb.ListRacesRequest(limit=2), metadata=headers, timeout=CALL).races
                except grpc.RpcError as error:
                    raise AssertionError(f"ListRaces with tracestate {short(tracestate)!r} failed: {error.code()} "
                                         f"{error.details()!r} (a tracestate must never fail a call)")
                window = (window_start, now_ns())
                expect(len(races) == 2, f"ListRaces(limit: 2) returned {len(races)} races")
                span = self.server_span(trace_id)
                expect(span is not None, self.missing(f"server span of trace {trace_id}", trace_id))
                got = span.proto.trace_state
                notes.append(f"trace_state {short(got, 100)!r}")
                problems = Problems()
                judge_span(problems, span, who="server span", name="SwiftKartService/ListRaces",
                           kind=trace_pb2.Span.SPAN_KIND_SERVER, service="swiftkart-server", rpc_service="SwiftKartService",
                           method="ListRaces", status_code=0, window=window, trace_id=trace_id, parent=span_id)
                if members is None:
                    problems.need(got == "", f"server span: trace_state {short(got)!r} for a malformed tracestate (W3C Trace "
                                             "Context: a receiver that cannot parse it drops it)")
                else:
                    found = [member.strip(" \t") for member in got.split(",") if member.strip(" \t")]
                    problems.need(found == members, f"server span: trace_state {short(got)!r}, not the members of the "
                                                    f"request's {short(tracestate)!r}")
                problems.raise_any()

            outcome = "its members in the server span's trace_state" if members is not None else \
                "dropped (empty trace_state), the call OK and in the caller's trace"
            self.report.check(f"b. tracestate with {label}: {outcome}", run)

    # c. NOT_FOUND
    def not_found(self):
        def call(method):
            request = self.pb.FollowRaceRequest(race_name="No Such Race")
            trace_id, span_id, headers = new_context()
            self.known_traces.add(trace_id)
            window_start = now_ns()
            try:
                if method == "WatchRace":
                    responses = self.kart.WatchRace(request, metadata=headers, timeout=CALL)
                else:
                    responses = self.kart.FollowRace(iter([request]), metadata=headers, timeout=CALL)
                for response in responses:
                    raise AssertionError(f"{method} {{race_name: \"No Such Race\"}} answered {response}")
                raise AssertionError(f"{method} {{race_name: \"No Such Race\"}} ended OK")
            except grpc.RpcError as error:
                expect(error.code() == grpc.StatusCode.NOT_FOUND,
                       f"{method} {{race_name: \"No Such Race\"}} ended {error.code()} {error.details()!r}, not NOT_FOUND")
            return trace_id, span_id, (window_start, now_ns())

        for method in ("WatchRace", "FollowRace"):
            def run(notes, method=method):
                _, trace_pb2 = otlp()
                trace_id, span_id, window = call(method)
                span = self.server_span(trace_id)
                expect(span is not None, self.missing(f"server span of the NOT_FOUND {method} (trace {trace_id})", trace_id))
                notes.append(f"server: {span.describe()}")
                problems = Problems()
                judge_span(problems, span, who="server span", name=f"SwiftKartService/{method}",
                           kind=trace_pb2.Span.SPAN_KIND_SERVER, service="swiftkart-server", rpc_service="SwiftKartService",
                           method=method, status_code=5, window=window, trace_id=trace_id, parent=span_id)
                problems.raise_any()

            kind = "server streaming" if method == "WatchRace" else "bidirectional"
            status = "STATUS_CODE_ERROR" if STATUS_RULE == "spec" else "status UNSET (OTel's gRPC conventions)"
            self.report.check(f"c. {method} ({kind}) of an unknown race, NOT_FOUND: rpc.grpc.status_code 5 and "
                              f"{status} on the server span", run)

        def deadline(notes):
            _, trace_pb2 = otlp()
            trace_id, span_id, headers = new_context()
            self.known_traces.add(trace_id)
            request = self.pb.FollowRaceRequest(race_name="Duck Pond Dash", event_types=[self.pb.RACE_EVENT_TYPE_KART_LOCATIONS])
            window_start, received = now_ns(), 0
            try:
                for _ in self.kart.WatchRace(request, metadata=headers, timeout=1.5):
                    received += 1
                raise AssertionError(f"WatchRace of the Duck Pond Dash ended OK within 1.5 s ({received} messages): "
                                     "no stream to cut at its deadline")
            except grpc.RpcError as error:
                expect(error.code() == grpc.StatusCode.DEADLINE_EXCEEDED,
                       f"WatchRace with a 1.5 s deadline ended {error.code()} {error.details()!r} after {received} messages")
            window = (window_start, now_ns())
            notes.append(f"the client: DEADLINE_EXCEEDED after {received} messages")
            span = self.server_span(trace_id)
            expect(span is not None, self.missing(f"server span of the WatchRace cut at its deadline (trace {trace_id})", trace_id))
            notes.append(f"server: {span.describe()}")
            problems = Problems()
            judge_span(problems, span, who="server span", name="SwiftKartService/WatchRace",
                       kind=trace_pb2.Span.SPAN_KIND_SERVER, service="swiftkart-server", rpc_service="SwiftKartService",
                       method="WatchRace", status_code=(4, 1), window=window, trace_id=trace_id, parent=span_id)
            took = (span.proto.end_time_unix_nano - span.proto.start_time_unix_nano) / 1e9
            problems.need(1.0 <= took <= 3.0, f"server span: lasted {took:.3f} s for a stream cut at its 1.5 s deadline")
            problems.raise_any()

        self.report.check("c. WatchRace of the live Duck Pond Dash with a 1.5 s deadline: a server span that ends with "
                          "the stream, rpc.grpc.status_code 4 (DEADLINE_EXCEEDED) or 1 (CANCELLED: the client's "
                          "RST_STREAM came first), and the failure status for it", deadline)

        def unimplemented(notes):
            _, trace_pb2 = otlp()
            trace_id, span_id, headers = new_context()
            self.known_traces.add(trace_id)
            window_start = now_ns()
            try:
                self.channel.unary_unary("/SwiftKartService/NoSuchMethod")(b"", metadata=headers, timeout=CALL)
                raise AssertionError("/SwiftKartService/NoSuchMethod answered OK")
            except grpc.RpcError as error:
                expect(error.code() == grpc.StatusCode.UNIMPLEMENTED,
                       f"/SwiftKartService/NoSuchMethod ended {error.code()} {error.details()!r}")
            window = (window_start, now_ns())
            problems = Problems()
            span = self.server_span(trace_id)
            if span is None:
                problems.append(self.missing(f"server span of the UNIMPLEMENTED call (trace {trace_id})", trace_id))
            else:
                notes.append(f"server: {span.describe()}")
                judge_span(problems, span, who="server span", name="SwiftKartService/NoSuchMethod",
                           kind=trace_pb2.Span.SPAN_KIND_SERVER, service="swiftkart-server", rpc_service="SwiftKartService",
                           method="NoSuchMethod", status_code=12, window=window, trace_id=trace_id, parent=span_id)
            # The access log (--log-format json): one line for the call, with its trace id.
            line = self.server.wait_for(lambda text: trace_id in text, self.wait, stream="stderr")
            if line is None:
                problems.append(f"no access-log line with trace_id {trace_id} on swiftkart-server's standard error within "
                                f"{self.wait} s (its last lines: {self.server.tail(3)})")
            else:
                notes.append(f"access log: {short(line, 240)}")
                try:
                    entry = json.loads(line)
                except ValueError as error:
                    entry = {}
                    problems.append(f"the access-log line is not JSON ({error}): {short(line)}")
                problems.need(entry.get("method") == "SwiftKartService/NoSuchMethod",
                              f"access log: method {entry.get('method')!r}, not 'SwiftKartService/NoSuchMethod'")
                problems.need(entry.get("status") == "UNIMPLEMENTED", f"access log: status {entry.get('status')!r}, not 'UNIMPLEMENTED'")
                problems.need(entry.get("trace_id") == trace_id, f"access log: trace_id {entry.get('trace_id')!r}, not {trace_id}")
            problems.raise_any()

        self.report.check("c. an unregistered method (UNIMPLEMENTED): a server span named \"SwiftKartService/NoSuchMethod\" in "
                          "the caller's trace with rpc.grpc.status_code 12 and STATUS_CODE_ERROR, and an access-log line "
                          "with the method, UNIMPLEMENTED and the trace id", unimplemented)

    # d. malformed or missing traceparent
    def new_traces(self):
        bad_span = secrets.token_hex(8)
        variants = [
            ("\"00-xyz\"", [("traceparent", "00-xyz")], None),
            ("the all-zero trace id", [("traceparent", f"00-{'0' * 32}-{bad_span}-01")], "0" * 32),
            ("no traceparent", [], None),
        ]
        for label, headers, _ in variants:
            def run(notes, headers=headers):
                _, trace_pb2 = otlp()
                time.sleep(0.3)  # apart from any other call, so the call's time window finds its span
                window_start, called = now_ns(), time.monotonic()
                try:
                    races = self.kart.ListRaces(self.pb.ListRacesRequest(limit=2), metadata=headers, timeout=CALL).races
                except grpc.RpcError as error:
                    raise AssertionError(f"ListRaces with {headers or 'no metadata'} failed: {error.code()} {error.details()!r}")
                window = (window_start, now_ns())
                expect(len(races) == 2, f"ListRaces(limit: 2) returned {len(races)} races")

                def candidate(span):
                    return (span.service == "swiftkart-server" and span.proto.name.endswith("ListRaces")
                            and span.trace_id not in self.known_traces and in_window(span, window))

                found = self.collector.wait_for(candidate, self.wait)
                if not found:  # its times may be wrong: a new ListRaces span that arrived after the call
                    found = self.collector.wait_for(
                        lambda span: span.service == "swiftkart-server" and span.proto.name.endswith("ListRaces")
                        and span.trace_id not in self.known_traces and span.arrived >= called, 0)
                    if found:
                        notes.append("(found by arrival after the call, not by its start time)")
                if not found:
                    anything = self.collector.wait_for(lambda span: span.service == "swiftkart-server" and in_window(span, window), 0)
                    raise AssertionError(self.missing("server span for this call (a ListRaces server span of a trace no "
                                                      "check made, started within the call)")
                                         + (f"; server spans in the call's time: {[s.describe() for s in anything]}" if anything else ""))
                span = found[0]
                self.known_traces.add(span.trace_id)
                notes.append(f"server: {span.describe()}")
                problems = Problems()
                problems.need(len(found) == 1, f"{len(found)} new-trace ListRaces spans in the call's time: "
                              + " | ".join(s.describe() for s in found))
                judge_span(problems, span, who="server span", name="SwiftKartService/ListRaces",
                           kind=trace_pb2.Span.SPAN_KIND_SERVER, service="swiftkart-server", rpc_service="SwiftKartService",
                           method="ListRaces", status_code=0, window=window, root=True)
                problems.raise_any()

            sent = f"traceparent {headers[0][1]!r}" if headers else "no traceparent"
            self.report.check(f"d. ListRaces with {label} ({sent}): OK, and the server span starts a new trace "
                              "(a valid trace id of its own, no parent)", run)

    # e. the collector down
    def collector_down(self):
        state = {}

        def server_side(notes):
            port = self.collector.port
            self.collector.stop()
            notes.append(f"collector on 127.0.0.1:{port} stopped")
            problems = Problems()
            latencies = []

            def calls(round_):
                for index in range(10):
                    _, _, headers = new_context()
                    started = time.monotonic()
                    try:
                        races = self.kart.ListRaces(self.pb.ListRacesRequest(limit=2), metadata=headers, timeout=5).races
                        problems.need(len(races) == 2, f"{round_}: ListRaces #{index + 1} returned {len(races)} races")
                    except grpc.RpcError as error:
                        problems.append(f"{round_}: ListRaces #{index + 1} failed: {error.code()} {error.details()!r} "
                                        f"after {time.monotonic() - started:.2f} s")
                    latencies.append(time.monotonic() - started)
                started = time.monotonic()
                try:
                    for _ in self.kart.WatchRace(self.pb.FollowRaceRequest(race_name="No Such Race"), timeout=5):
                        break
                    problems.append(f"{round_}: WatchRace of an unknown race did not end NOT_FOUND")
                except grpc.RpcError as error:
                    problems.need(error.code() == grpc.StatusCode.NOT_FOUND,
                                  f"{round_}: WatchRace of an unknown race ended {error.code()} {error.details()!r} "
                                  f"after {time.monotonic() - started:.2f} s")
                latencies.append(time.monotonic() - started)

            calls("at once")
            time.sleep(7)  # past a batch period: the exporter has tried (and failed) to export
            problems.need(self.server.alive(), f"swiftkart-server exited: {self.server.tail()}")
            calls("7 s later")
            problems.need(self.server.alive(), f"swiftkart-server exited: {self.server.tail()}")
            notes.append(f"{len(latencies)} calls with the collector down, slowest {max(latencies) * 1000:.1f} ms")
            complaints = [line for line in self.server.stderr if not line.startswith("swiftkart-server: listening")
                          and any(word in line.lower() for word in ("otlp", "export", "collector", "span"))]
            if complaints:
                notes.append(f"server stderr: {len(complaints)} line(s) about exporting, e.g. {complaints[-1][:200]!r}")
            problems.raise_any()

        self.report.check("e. with the collector stopped, swiftkart-server answers 10 ListRaces and a NOT_FOUND "
                          "WatchRace within 5 s each, and again after 7 s", server_side)

        def cli_side(notes):
            dead = self.collector.port  # nothing listens there now
            args = [self.exe("swiftkart"), "races", "--host", "127.0.0.1", "--port", str(self.port), "--limit", "3",
                    "--otlp-endpoint", f"127.0.0.1:{dead}"]
            started = time.monotonic()
            cli = processes.Child(args, "swiftkart")
            status = cli.wait(20)
            took = time.monotonic() - started
            if status is None:
                cli.stop()
                raise AssertionError(f"`swiftkart races --otlp-endpoint 127.0.0.1:{dead}` (nothing listening) still "
                                     f"running after 20 s: {cli.tail()}")
            notes.append(f"exited {status} after {took:.2f} s")
            expect(status == 0, f"`swiftkart races --otlp-endpoint 127.0.0.1:{dead}` exited {status}: {cli.tail()}")
            expect(any(line.strip() == "3 races" for line in cli.stdout), f"the CLI did not list 3 races: {cli.tail()}")

        self.report.check("e. with no collector, `swiftkart races --otlp-endpoint` still lists the races and exits 0 "
                          "within 20 s", cli_side)

        def hung(notes):
            port = self.collector.port
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                listener.bind(("127.0.0.1", port))
            except OSError as error:
                notes.append(f"(could not listen on 127.0.0.1:{port}: {error}; nothing to see)")
                listener.close()
                return
            listener.listen(64)
            held, stop = [], threading.Event()

            def accept():  # accepts and reads, never answers: not even the HTTP/2 SETTINGS
                listener.settimeout(0.2)
                while not stop.is_set():
                    try:
                        connection, _ = listener.accept()
                        connection.setblocking(False)
                        held.append(connection)
                    except OSError:
                        pass
                    for connection in held:
                        try:
                            connection.recv(65536)
                        except OSError:
                            pass

            threading.Thread(target=accept, daemon=True).start()
            problems = Problems()
            latencies = []
            try:
                deadline = time.monotonic() + 9  # past a batch period, with exports stuck
                while time.monotonic() < deadline:
                    _, _, headers = new_context()
                    started = time.monotonic()
                    try:
                        self.kart.ListRaces(self.pb.ListRacesRequest(limit=2), metadata=headers, timeout=5)
                    except grpc.RpcError as error:
                        problems.append(f"ListRaces failed with a hung collector: {error.code()} {error.details()!r} "
                                        f"after {time.monotonic() - started:.2f} s")
                        break
                    latencies.append(time.monotonic() - started)
                    time.sleep(0.1)
                problems.need(self.server.alive(), f"swiftkart-server exited: {self.server.tail()}")
                args = [self.exe("swiftkart"), "races", "--host", "127.0.0.1", "--port", str(self.port), "--limit", "3",
                        "--otlp-endpoint", f"127.0.0.1:{port}"]
                started = time.monotonic()
                cli = processes.Child(args, "swiftkart")
                status = cli.wait(20)
                took = time.monotonic() - started
                if status is None:
                    cli.stop()
                    problems.append(f"`swiftkart races --otlp-endpoint` to a hung collector still running after 20 s: {cli.tail()}")
                else:
                    notes.append(f"the CLI exited {status} after {took:.2f} s")
                    problems.need(status == 0 and any(line.strip() == "3 races" for line in cli.stdout),
                                  f"`swiftkart races --otlp-endpoint` to a hung collector exited {status}: {cli.tail()}")
            finally:
                stop.set()
                time.sleep(0.3)
                for connection in held:
                    connection.close()
                listener.close()
            notes.append(f"{len(latencies)} ListRaces in 9 s with the collector hung ({len(held)} connection(s) to it held), "
                         f"slowest {max(latencies, default=0) * 1000:.1f} ms")
            problems.raise_any()

        self.report.check("e. with a hung collector (accepts connections, never answers), swiftkart-server answers "
                          "ListRaces within 5 s each for 9 s, and the CLI lists the races and exits 0 within 20 s", hung)

        def back(notes):
            port = self.collector.port
            try:
                self.collector.start(port)
            except Exception as error:
                notes.append(f"(could not listen on 127.0.0.1:{port} again: {error}; nothing to see)")
                return
            trace_service_pb2, _ = otlp()
            with grpc.insecure_channel(f"127.0.0.1:{port}") as probe:  # the collector itself is back
                probe.unary_unary(EXPORT_METHOD, request_serializer=lambda m: m.SerializeToString())(
                    trace_service_pb2.ExportTraceServiceRequest(), metadata=[("x-pitlane-probe", "1")], timeout=CALL)
            trace_id, _, headers = new_context()
            called = time.monotonic()
            self.kart.ListRaces(self.pb.ListRacesRequest(limit=1), metadata=headers, timeout=CALL)
            found = self.collector.wait_for(lambda span: span.trace_id == trace_id, max(self.wait, 25))
            if found:
                notes.append(f"the collector back on 127.0.0.1:{port}: a new call's span arrived "
                             f"{found[0].arrived - called:.1f} s after the call")
            else:
                notes.append(f"NOTE: the collector back on 127.0.0.1:{port}, a new call's span (trace {trace_id}) did not "
                             f"arrive within {max(self.wait, 25)} s: the exporter does not recover (not in the spec)")
            state["back"] = bool(found)

        self.report.check("e. the collector back on the same port (whether exporting resumes is a note, not a failure)",
                          back)

    # f. orders-server
    def orders(self):
        def run(notes):
            _, trace_pb2 = otlp()
            orders_pb, orders_rpc = load(os.path.join(ROOT, "Services", "Sources", "Orders"), "orders.proto")
            child, port = processes.start_server(
                [self.exe("orders-server"), "--port", "0", "--database", os.path.join(self.tmp, "orders.sqlite"),
                 "--otlp-endpoint", f"127.0.0.1:{self.collector.port}"], "orders-server")
            problems = Problems()
            try:
                with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                    stub = orders_rpc.OrderTrackingStub(channel)
                    create_trace, create_parent, headers = new_context()
                    low = now_ns()
                    stub.CreateOrder(orders_pb.CreateOrderRequest(order_id="traced", eta_display="soon"),
                                     metadata=[("authorization", "Bearer staff-token"), *headers], timeout=CALL)
                    create_window = (low, now_ns())
                    get_trace, get_parent, headers = new_context()
                    low = now_ns()
                    try:
                        stub.GetOrder(orders_pb.GetOrderRequest(order_id="no-such-order"),
                                      metadata=[("authorization", "Bearer alice-token"), *headers], timeout=CALL)
                        problems.append("GetOrder of an unknown order answered OK")
                    except grpc.RpcError as error:
                        problems.need(error.code() == grpc.StatusCode.NOT_FOUND,
                                      f"GetOrder of an unknown order ended {error.code()} {error.details()!r}")
                    get_window = (low, now_ns())
                    for method, trace_id, parent, window, code in (("CreateOrder", create_trace, create_parent, create_window, 0),
                                                                   ("GetOrder", get_trace, get_parent, get_window, 5)):
                        self.known_traces.add(trace_id)
                        span = self.server_span(trace_id, service="orders-server")
                        if span is None:
                            elsewhere = self.collector.wait_for(lambda s: s.trace_id == trace_id, 0)
                            problems.append(f"{method}: " + self.missing(f"orders-server span of trace {trace_id}", trace_id)
                                            + (f" (spans of it: {[s.describe() for s in elsewhere]})" if elsewhere else ""))
                            continue
                        notes.append(f"{method}: {span.describe()}")
                        judge_span(problems, span, who=f"{method} server span", name=f"orders.v1.OrderTracking/{method}",
                                   kind=trace_pb2.Span.SPAN_KIND_SERVER, service="orders-server",
                                   rpc_service="orders.v1.OrderTracking", method=method, status_code=code, window=window,
                                   trace_id=trace_id, parent=parent)
                        problems.need(span.proto.trace_state == "pitlane=peer",
                                      f"{method} server span: trace_state {span.proto.trace_state!r}, not the request's "
                                      "tracestate 'pitlane=peer'")
            finally:
                child.stop()
            problems.raise_any()

        self.report.check("f. orders-server --otlp-endpoint: CreateOrder (OK) and GetOrder of an unknown order "
                          "(NOT_FOUND) export \"orders.v1.OrderTracking/...\" server spans from \"orders-server\"", run)

    # h. message events
    def follow(self, stub, count, headers):
        """A FollowRace of the Duck Pond Dash with `count` requests: the first names the race,
        the others change the event types; after the first response the rest are sent and the
        stream half-closed, then read to its end. Returns (requests, responses)."""
        pb = self.pb
        kinds = ([pb.RACE_EVENT_TYPE_KART_LOCATIONS], [pb.RACE_EVENT_TYPE_KART_LOCATIONS, pb.RACE_EVENT_TYPE_STANDINGS])
        requests = [pb.FollowRaceRequest(race_name="Duck Pond Dash", event_types=kinds[0])]
        requests += [pb.FollowRaceRequest(event_types=kinds[index % 2]) for index in range(1, count)]
        queue = processes.Requests(requests[0])
        call = stub.FollowRace(iter(queue), metadata=headers, timeout=CALL)
        responses = []
        try:
            responses.append(next(call))
            for request in requests[1:]:
                queue.put(request)
            queue.close()
            responses.extend(call)
        except StopIteration:
            raise AssertionError("FollowRace of the Duck Pond Dash ended OK before its first response") from None
        except grpc.RpcError as error:
            raise AssertionError(f"FollowRace of the Duck Pond Dash with {count} requests ended {error.code()} "
                                 f"{error.details()!r} after {len(responses)} responses") from None
        finally:
            queue.close()
        return requests, responses

    @staticmethod
    def message_events(span):
        """The span's events as (name, message.type, message.id, message.uncompressed_size, time)."""
        found = []
        for event in span.proto.events:
            values = attributes(event.attributes)
            found.append((event.name, values.get("message.type", (None, None))[1], values.get("message.id", (None, None))[1],
                          values.get("message.uncompressed_size", (None, None))[1], event.time_unix_nano))
        return found

    @staticmethod
    def judge_events(problems, span, who, received=None, sent=None, total=None):
        """Adds what is wrong with `span`'s message events: each named "message", SENT or
        RECEIVED with int attributes, in time order within the span, ids from 1 in order in each
        direction; with `received` and `sent` (the messages in order) exactly those, their sizes
        the messages' serialized sizes; with `total` (every message either way), the first 128
        of them kept and the rest counted in dropped_events_count."""
        events = Run.message_events(span)
        proto = span.proto
        for event in span.proto.events:
            values = attributes(event.attributes)
            for key in ("message.id", "message.uncompressed_size"):
                kind, _ = values.get(key, (None, None))
                problems.need(kind == "int_value", f"{who}: an event's {key} is a {kind}, not an int")
            problems.need(values.get("message.type", (None, None))[0] == "string_value",
                          f"{who}: an event's message.type is not a string")
        problems.need(all(name == "message" for name, *_ in events),
                      f"{who}: events named {sorted({name for name, *_ in events})}, not \"message\"")
        problems.need(all(kind in ("SENT", "RECEIVED") for _, kind, *_ in events),
                      f"{who}: message.type values {sorted({str(kind) for _, kind, *_ in events})}")
        times = [time_ns for *_, time_ns in events]
        problems.need(times == sorted(times), f"{who}: events not in time order")
        problems.need(all(proto.start_time_unix_nano <= t <= proto.end_time_unix_nano for t in times),
                      f"{who}: events outside the span's {proto.start_time_unix_nano}..{proto.end_time_unix_nano}")
        for kind, messages in (("RECEIVED", received), ("SENT", sent)):
            ids = [message_id for _, type_, message_id, _, _ in events if type_ == kind]
            problems.need(ids == list(range(1, len(ids) + 1)), f"{who}: {kind} ids {short(ids)}, not 1, 2, 3... in order")
            if messages is not None:
                sizes = [size for _, type_, _, size, _ in events if type_ == kind]
                wanted = [len(message.SerializeToString()) for message in messages]
                problems.need(len(ids) == len(messages), f"{who}: {len(ids)} {kind} events for {len(messages)} messages")
                problems.need(sizes == wanted, f"{who}: {kind} message.uncompressed_size {short(sizes)}, not the messages' "
                                               f"serialized sizes {short(wanted)}")
        if total is not None:
            kept = min(total, 128)
            problems.need(len(events) == kept, f"{who}: {len(events)} events for {total} messages, not {kept} (the bound)")
            problems.need(proto.dropped_events_count == total - kept,
                          f"{who}: dropped_events_count {proto.dropped_events_count}, not {total - kept} ({total} messages, "
                          f"{kept} kept)")
        else:
            problems.need(proto.dropped_events_count == 0, f"{who}: dropped_events_count {proto.dropped_events_count}")

    def message_events_checks(self):
        state = {"server": None, "kart": None, "port": None}

        def start(notes):
            child, port = processes.start_server(
                [self.exe("swiftkart-server"), "--port", "0", "--speed", "10",
                 "--database", os.path.join(self.tmp, "swiftkart-events.sqlite"),
                 "--otlp-endpoint", f"127.0.0.1:{self.collector.port}", "--otlp-message-events"], "swiftkart-server (events)")
            channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            grpc.channel_ready_future(channel).result(timeout=CALL)
            state.update(server=child, kart=self.rpc.SwiftKartServiceStub(channel), port=port, channel=channel)
            notes.append(f"pid {child.pid} port {port}")

        self.report.check("h. swiftkart-server --otlp-endpoint ... --otlp-message-events starts", start)

        def streaming(notes):
            expect(state["kart"] is not None, "no server with --otlp-message-events")
            trace_id, span_id, headers = new_context()
            self.known_traces.add(trace_id)
            requests, responses = self.follow(state["kart"], 3, headers)
            span = self.server_span(trace_id)
            expect(span is not None, self.missing(f"server span of the FollowRace (trace {trace_id})", trace_id))
            events = self.message_events(span)
            notes.append(f"{len(requests)} requests, {len(responses)} responses; events "
                         + short(", ".join(f"{kind} {message_id} ({size} B)" for _, kind, message_id, size, _ in events), 300))
            problems = Problems()
            self.judge_events(problems, span, "server span", received=requests, sent=responses)
            problems.raise_any()

        self.report.check("h. --otlp-message-events: FollowRace (3 requests, then its responses) has a server span with "
                          "RECEIVED 1, 2, 3 and SENT 1..n in order, sizes the messages' serialized sizes", streaming)

        def cli(notes):
            expect(state["port"] is not None, "no server with --otlp-message-events")
            _, trace_pb2 = otlp()
            args = [self.exe("swiftkart"), "races", "--host", "127.0.0.1", "--port", str(state["port"]), "--limit", "3",
                    "--otlp-endpoint", f"127.0.0.1:{self.collector.port}", "--otlp-message-events"]
            window_start = now_ns()
            child = processes.Child(args, "swiftkart")
            status = child.wait(30)
            if status is None:
                child.stop()
                raise AssertionError(f"`swiftkart races --otlp-message-events` still running after 30 s: {child.tail()}")
            expect(status == 0, f"`swiftkart races --otlp-message-events` exited {status}: {child.tail()}")
            clients = self.collector.wait_for(
                lambda span: span.service == "swiftkart" and span.proto.kind == trace_pb2.Span.SPAN_KIND_CLIENT
                and span.proto.start_time_unix_nano >= window_start - SLACK_NS and span.proto.events, self.wait)
            expect(clients, self.missing("client span with events from `swiftkart races --otlp-message-events`"))
            client = clients[0]
            self.known_traces.add(client.trace_id)
            server = self.server_span(client.trace_id)
            expect(server is not None, self.missing(f"server span of trace {client.trace_id}", client.trace_id))
            request = self.pb.ListRacesRequest(limit=3)
            problems = Problems()
            self.judge_events(problems, client, "client span", sent=[request])
            self.judge_events(problems, server, "server span", received=[request])
            by_kind = {}
            for span, who in ((client, "client"), (server, "server")):
                for _, kind, message_id, size, _ in self.message_events(span):
                    by_kind[(who, kind, message_id)] = size
            notes.append(f"events: {by_kind}")
            problems.need(by_kind.get(("client", "RECEIVED", 1)) is not None
                          and by_kind.get(("client", "RECEIVED", 1)) == by_kind.get(("server", "SENT", 1)),
                          f"the client's RECEIVED 1 ({by_kind.get(('client', 'RECEIVED', 1))} B) is not the server's SENT 1 "
                          f"({by_kind.get(('server', 'SENT', 1))} B)")
            problems.raise_any()

        self.report.check("h. `swiftkart races --otlp-message-events`: the client span has SENT 1 and RECEIVED 1, the "
                          "server span RECEIVED 1 and SENT 1, the same sizes each way", cli)

        def bounded(notes):
            expect(state["kart"] is not None, "no server with --otlp-message-events")
            trace_id, _, headers = new_context()
            self.known_traces.add(trace_id)
            requests, responses = self.follow(state["kart"], 150, headers)
            span = self.server_span(trace_id)
            expect(span is not None, self.missing(f"server span of the FollowRace (trace {trace_id})", trace_id))
            total = len(requests) + len(responses)
            notes.append(f"{len(requests)} requests and {len(responses)} responses: {len(span.proto.events)} events, "
                         f"dropped_events_count {span.proto.dropped_events_count}")
            problems = Problems()
            self.judge_events(problems, span, "server span", total=total)
            problems.raise_any()

        self.report.check("h. --otlp-message-events: FollowRace with 150 requests keeps 128 events, ids in order from 1, "
                          "and counts the rest in dropped_events_count", bounded)

        def absent(notes):
            trace_id, _, headers = new_context()
            self.known_traces.add(trace_id)
            requests, responses = self.follow(self.kart, 3, headers)
            span = self.server_span(trace_id)
            expect(span is not None, self.missing(f"server span of the FollowRace (trace {trace_id})", trace_id))
            notes.append(f"{len(requests)} requests, {len(responses)} responses, {len(span.proto.events)} events")
            expect(not span.proto.events and not span.proto.dropped_events_count,
                   f"server span: {len(span.proto.events)} events (dropped {span.proto.dropped_events_count}) without "
                   "--otlp-message-events")

        self.report.check("h. without --otlp-message-events (the default): the same FollowRace's server span has no "
                          "events", absent)
        if state["server"] is not None:
            state["channel"].close()
            state["server"].stop()

    # g. the run as a whole
    def whole_run(self):
        def run(notes):
            spans, exports = self.collector.snapshot()
            problems = Problems()
            for arrived, metadata, size, error, count, services in exports:
                problems.need(error is None, f"an export request of {size} bytes is not an ExportTraceServiceRequest: {error}")
            by_service = {}
            for _, metadata, _, _, count, services in exports:
                for service in set(services) or {None}:
                    by_service.setdefault(service, []).append(count)
            for service, counts in sorted(by_service.items(), key=str):
                notes.append(f"{service!r}: {len(counts)} export request(s), spans per request {counts}")
            agents = sorted({metadata.get("user-agent", "-") for _, metadata, _, _, _, _ in exports})
            encodings = sorted({metadata.get("grpc-encoding", "identity") for _, metadata, _, _, _, _ in exports})
            notes.append(f"{len(spans)} spans in {len(exports)} export requests; user-agent {agents}; grpc-encoding {encodings}")
            loops = [span for span in spans if "TraceService/Export" in span.proto.name
                     or span.attributes.get("rpc.service", (None, None))[1] == "opentelemetry.proto.collector.trace.v1.TraceService"]
            problems.need(not loops, f"{len(loops)} span(s) of the exporter's own Export calls, e.g. {loops[0].describe() if loops else ''}")
            duplicates = {}
            for span in spans:
                duplicates.setdefault((span.trace_id, span.span_id), []).append(span)
            repeated = [group for group in duplicates.values() if len(group) > 1]
            problems.need(not repeated, f"{len(repeated)} span(s) exported more than once, e.g. {repeated[0][0].describe() if repeated else ''}")
            expect(exports, "no export request at all")
            problems.raise_any()

        self.report.check("g. the whole run: every export request is an ExportTraceServiceRequest, no span exported twice, "
                          "no span of the exporters' own Export calls", run)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the directory of the built executables (e.g. .build/debug)")
    parser.add_argument("--protos", default=os.path.join(ROOT, "Protos"))
    parser.add_argument("--only", help="comma-separated check letters (a,b,c,d,e,f,g,h)")
    parser.add_argument("--wait", type=float, default=10, help="seconds to wait for a span (they come in batches)")
    parser.add_argument("--time-limit", type=int, default=300, help="seconds for the whole run")
    parser.add_argument("--status-rule", choices=("spec", "semconv"), default="semconv",
                        help="a failed call's SERVER span status: spec (default): ERROR for any non-OK status; semconv: "
                             "OTel's gRPC conventions, ERROR only for UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, "
                             "UNAVAILABLE and DATA_LOSS, UNSET for the rest")
    args = parser.parse_args()
    global STATUS_RULE
    STATUS_RULE = args.status_rule
    only = None if args.only is None else set(args.only.replace(" ", "").split(","))

    processes.install_cleanup()

    processes.start_time_limit(args.time_limit)
    report = Report(only)
    missing = []
    for module, package in (("opentelemetry.proto.collector.trace.v1.trace_service_pb2", "opentelemetry-proto"),
                            ("opentelemetry.trace.propagation.tracecontext", "opentelemetry-api")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        report.add("Python packages", f"missing {missing}: .venv/bin/pip install {' '.join(missing)}")
        exit_now(report.finish())

    pb, rpc = load(args.protos, "swiftkart.proto")
    tmp = temporary_directory("pitlane-tracing-")
    collector = Collector()
    collector.start()
    run = Run(args, report, collector, pb, rpc, tmp)
    try:
        run.start_server()
    except Exception as error:
        report.add("start swiftkart-server --otlp-endpoint", f"{type(error).__name__}: {error}")
        collector.stop()
        exit_now(report.finish())

    for letter, step in (("a", run.cli_to_server), ("b", run.grpcio_traceparent), ("b", run.tracestate_rules),
                         ("c", run.not_found), ("d", run.new_traces), ("f", run.orders), ("h", run.message_events_checks),
                         ("e", run.collector_down), ("g", run.whole_run)):
        if report.wanted(letter):
            step()
    status = report.finish()
    if run.channel is not None:
        run.channel.close()
    processes.stop_all()
    collector.stop()
    exit_now(status)  # no interpreter shutdown, which can hang a grpcio client


if __name__ == "__main__":
    main()
