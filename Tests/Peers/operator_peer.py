#!/usr/bin/env python3
"""The operator's view of every Pitlane server (swiftkart-server, orders-server,
pitlane-interop-server), judged by clients no one here wrote: gRPC server reflection through
grpcio with messages built from gRPC's published reflection protocol (v1 and v1alpha) and
through grpcio-reflection's own client (`ProtoReflectionDescriptorDatabase`), Prometheus
metrics read with `httpx` and parsed by `prometheus_client`, and the health endpoints.

  operator_peer.py --bin DIR [--protos DIR] [--only a,b,c,d,e,f,g] [--servers swiftkart,orders,interop]

DIR holds the built executables. The peer starts each server itself on port 0
(swiftkart-server with --speed 10 and orders-server on temporary databases,
pitlane-interop-server on 127.0.0.1) and checks:
  a. reflection, v1 and v1alpha, on each server: list_services names every service the server
     registers; each listed service's file (file_containing_symbol) comes with its transitive
     dependencies and, built into a DescriptorPool (dependencies first), resolves the service and
     every method's input and output types; file_by_filename and file_containing_symbol (a
     method, a message, an enum, a nested enum) answer with the defining file; unknown names
     ("no/such.proto", "no.Such") get error_response NOT_FOUND (5) and the stream goes on;
     all_extension_numbers_of_type and file_containing_extension;
  b. grpcio-reflection's client: a DescriptorPool over ProtoReflectionDescriptorDatabase, dynamic
     message classes, and a ListRaces call made with them;
  c. GET /metrics (HTTP/1.1 and HTTP/2): text format 0.0.4; after 7 ListRaces (OK) and 3
     FollowRace (NOT_FOUND) the gRPC OpenTelemetry metrics (call started, duration, sent and
     received message sizes) grew by exactly that; cumulative buckets ending at le="+Inf" equal to
     _count; unregistered methods are grpc_method="other"; pitlane_server_connections_open and
     pitlane_server_streams_open follow connections and streams; on pitlane-interop-server, the
     received-size histogram counts bytes as they crossed the wire (gRFC A66: "compressed"): an
     uncompressed 64 KiB request adds exactly its serialized size, the same request sent
     gzip-compressed only its compressed size;
  d. GET /healthz and /readyz: 200 "ok" while serving; after SIGTERM, 503 while the server drains
     (a note, not a failure, when the drain is too short to see);
  e. bad input: GET /metrics?x=1, POST /metrics (405), a reflection request with nothing set
     (INVALID_ARGUMENT);
  f. grpcio-status decodes the order tracker's OUT_OF_RANGE: google.rpc.Status with an ErrorInfo
     (UPDATES_NOT_RETAINED, the oldest retained update id, the epoch);
  g. a Pitlane client's own metrics (gRFC A66: grpc_client_attempt_started_total and the attempt
     duration, sent and received size and call duration histograms) as the `orders` and
     `swiftkart` CLIs write them with --client-metrics PATH at exit, parsed by prometheus_client:
     4 `orders get` of an order (OK) and 3 of no order (NOT_FOUND), one process and file each,
     sum to exactly 7 attempts, 4 OK and 3 NOT_FOUND in every histogram's _count (cumulative
     buckets ending at +Inf = _count; grpc_target naming the server), and orders-server's own
     grpc_server_call_started_total grew by the same 7; `swiftkart races` is 1 attempt, 1 OK call.
Prints "ok NAME" or "FAIL NAME: why" per check (observations indented below it) and a closing
"checks: N ok, M failed"; exits 1 on any failure. Every wait is bounded, and so is the whole run.
Needs grpcio-reflection, prometheus_client and httpx (`.venv/bin/pip install grpcio-reflection
prometheus_client`).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import defaultdict

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # the checks report what grpcio saw themselves
import grpc  # noqa: E402 (after its environment)
import httpx  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format  # noqa: E402

import processes  # noqa: E402
from peer_checks import Report, exit_now, expect, load, temporary_directory  # noqa: E402

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WAIT = 10  # seconds for any one expected answer
VERSIONS = ("v1", "v1alpha")
STATUS_NAMES = [code.name for code in grpc.StatusCode]  # OK, CANCELLED, ..., UNAUTHENTICATED
STATUS_BY_NUMBER = {code.value[0]: code.name for code in grpc.StatusCode}
HEALTH = "grpc.health.v1.HealthCheckResponse.ServingStatus"  # a nested enum every server has

# What each server registers, and the symbols its reflection must know.
SERVERS = {
    "swiftkart": {
        "exe": "swiftkart-server",
        "services": ["SwiftKartService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                     "grpc.reflection.v1alpha.ServerReflection"],
        "main": "SwiftKartService",
        "symbols": [("a method", "SwiftKartService.ListRaces"), ("a message", "Race"),
                    ("a nested message", "KartLocations.Kart"), ("an enum", "RaceEventType"),
                    ("a nested enum", HEALTH)],
        "message": "Race",
    },
    "orders": {
        "exe": "orders-server",
        "services": ["orders.v1.OrderTracking", "chat.v1.ChatRoom", "grpc.health.v1.Health"],
        "main": "orders.v1.OrderTracking",
        "symbols": [("a method", "orders.v1.OrderTracking.GetOrder"), ("a method", "chat.v1.ChatRoom.Chat"),
                    ("a message", "orders.v1.OrderSnapshot"), ("an enum", "orders.v1.OrderStatus"),
                    ("a nested enum", "chat.v1.Presence.Change"), ("a nested enum", HEALTH)],
        "message": "orders.v1.OrderSnapshot",
    },
    "interop": {
        "exe": "pitlane-interop-server",
        "services": ["grpc.testing.TestService", "grpc.health.v1.Health"],
        "main": "grpc.testing.TestService",
        "symbols": [("a method", "grpc.testing.TestService.UnaryCall"), ("a message", "grpc.testing.SimpleRequest"),
                    ("an enum", "grpc.testing.PayloadType"), ("a nested enum", HEALTH)],
        "message": "grpc.testing.SimpleRequest",
    },
}

# The reflection and health protocols, from the project's own .proto files (written from gRPC's
# published definitions). They are compiled into a private DescriptorPool, so they cannot clash
# with grpcio-reflection's own copy of v1alpha in the default pool; grpcio-reflection's client
# (check b) judges the wire format with gRPC's own definitions.
PROTOCOL_FILES = [(os.path.join(ROOT, "Protos"), "reflection_v1.proto"), (os.path.join(ROOT, "Protos"), "reflection_v1alpha.proto"),
                  (os.path.join(ROOT, "Sources/PitlaneHealth"), "health.proto")]


# ---------------------------------------------------------------------------------------------
# Results


def short(text, limit=300):
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


# ---------------------------------------------------------------------------------------------
# Messages of the protocols above, in a private pool


class Protocols:
    def __init__(self):
        root = temporary_directory("pitlane-operator-protos-")
        out = os.path.join(root, "protocols.pb")
        includes = sorted({folder for folder, _ in PROTOCOL_FILES})
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", *[f"-I{folder}" for folder in includes],
                        f"--descriptor_set_out={out}", "--include_imports", *[name for _, name in PROTOCOL_FILES]],
                       check=True, timeout=60)
        with open(out, "rb") as file:
            descriptors = descriptor_pb2.FileDescriptorSet.FromString(file.read())
        self.pool = descriptor_pool.DescriptorPool()
        for proto in descriptors.file:  # protoc writes dependencies first
            self.pool.Add(proto)

    def message(self, name):
        return message_factory.GetMessageClass(self.pool.FindMessageTypeByName(name))


class StreamFailed(AssertionError):
    """A reflection stream that ended with an error status."""

    def __init__(self, code, details, responses, request):
        self.code, self.details, self.responses = code, details, responses
        waiting = f"the answer to {show(request)}" if request is not None else "the end of the stream"
        super().__init__(f"the stream ended {code.name if code else code} ({details!r}) after {len(responses)} "
                         f"response(s), waiting for {waiting}")


def show(request):
    text = text_format.MessageToString(request, as_one_line=True)
    return f"{{{text}}}" if text else "an empty request {}"


def file_names(response):
    return [descriptor_pb2.FileDescriptorProto.FromString(raw).name
            for raw in response.file_descriptor_response.file_descriptor_proto]


def describe(response):
    """A reflection response in a few words, for failure messages."""
    kind = response.WhichOneof("message_response")
    if kind == "file_descriptor_response":
        return f"file_descriptor_response with files {file_names(response)}"
    if kind == "error_response":
        code = response.error_response.error_code
        return f"error_response {code} ({STATUS_BY_NUMBER.get(code, '?')}) {response.error_response.error_message!r}"
    if kind == "list_services_response":
        return f"list_services_response {[service.name for service in response.list_services_response.service]}"
    if kind == "all_extension_numbers_response":
        answer = response.all_extension_numbers_response
        return f"all_extension_numbers_response base_type_name={answer.base_type_name!r} numbers={list(answer.extension_number)}"
    return "a response with no message_response set"


class Reflection:
    """grpc.reflection.VERSION.ServerReflection/ServerReflectionInfo over `channel`."""

    def __init__(self, protocols, channel, version):
        self.version = version
        package = f"grpc.reflection.{version}"
        self.Request = protocols.message(f"{package}.ServerReflectionRequest")
        self.Response = protocols.message(f"{package}.ServerReflectionResponse")
        self.ExtensionRequest = protocols.message(f"{package}.ExtensionRequest")
        self.method = channel.stream_stream(f"/{package}.ServerReflection/ServerReflectionInfo",
                                            request_serializer=self.Request.SerializeToString,
                                            response_deserializer=self.Response.FromString)

    def exchange(self, *requests, timeout=WAIT):
        """Sends each request on one new stream and waits for its answer before sending the next
        (as an interactive client does), then half-closes; the stream must then end OK with
        nothing more. Returns the responses, one per request."""
        queue = processes.Requests()
        call = self.method(iter(queue), timeout=timeout)
        responses, pending = [], None
        try:
            for request in requests:
                pending = request
                queue.put(request)
                try:
                    responses.append(next(call))
                except StopIteration:
                    raise AssertionError(f"the stream ended OK after {len(responses)} response(s), without answering "
                                         f"{show(request)}") from None
            pending = None
            queue.close()
            extra = list(call)
            expect(not extra, f"{len(extra)} more response(s) than requests: {[describe(r) for r in extra]}")
        except grpc.RpcError as error:
            raise StreamFailed(error.code(), error.details(), responses, pending) from None
        finally:
            queue.close()
            call.cancel()
        for request, response in zip(requests, responses):
            if response.HasField("original_request") and response.original_request != request:
                raise AssertionError(f"the answer to {show(request)} names another original_request: "
                                     f"{show(response.original_request)}")
        return responses

    def ask(self, timeout=WAIT, **fields):
        """One request on a stream of its own; its response."""
        request = self.request(**fields)
        return request, self.exchange(request, timeout=timeout)[0]

    def request(self, **fields):
        if "file_containing_extension" in fields:
            containing_type, number = fields.pop("file_containing_extension")
            fields["file_containing_extension"] = self.ExtensionRequest(containing_type=containing_type, extension_number=number)
        return self.Request(**fields)


def expect_files(request, response):
    """The FileDescriptorProtos of a file_descriptor_response, by name."""
    expect(response.WhichOneof("message_response") == "file_descriptor_response",
           f"{show(request)} was answered with {describe(response)}")
    files = {}
    for raw in response.file_descriptor_response.file_descriptor_proto:
        proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
        expect(proto.name, f"{show(request)}: a FileDescriptorProto without a name")
        files[proto.name] = proto
    expect(files, f"{show(request)} was answered with no files")
    return files


def expect_not_found(request, response):
    expect(response.WhichOneof("message_response") == "error_response" and response.error_response.error_code == 5,
           f"{show(request)} was answered with {describe(response)}, not error_response 5 (NOT_FOUND)")


def build_pool(files, request):
    """A DescriptorPool of `files` (name -> FileDescriptorProto), each added after its
    dependencies; a dependency that is not among them is the answer's failure."""
    pool, added = descriptor_pool.DescriptorPool(), set()

    def add(name, importer):
        if name in added:
            return
        if name not in files:
            raise AssertionError(f"the answer to {show(request)} lacks {name}, which {importer} imports "
                                 f"(it holds {sorted(files)})")
        for dependency in files[name].dependency:
            add(dependency, name)
        try:
            pool.Add(files[name])
        except Exception as error:
            raise AssertionError(f"{name} from the answer to {show(request)} does not build: {error}") from None
        added.add(name)

    for name in files:
        add(name, None)
    return pool


def symbols_of(proto):
    """Every fully-qualified name a FileDescriptorProto declares (types, nested types, enums,
    enum values, fields, services and their methods, extensions)."""
    prefix = f"{proto.package}." if proto.package else ""
    names = set()

    def enum(e, scope):
        names.add(scope + e.name)
        names.update(scope + value.name for value in e.value)  # enum values live beside their enum

    def message(m, scope):
        full = scope + m.name
        names.add(full)
        names.update(f"{full}.{field.name}" for field in m.field)
        names.update(f"{full}.{field.name}" for field in m.extension)
        names.update(f"{full}.{oneof.name}" for oneof in m.oneof_decl)
        for nested in m.nested_type:
            message(nested, full + ".")
        for nested in m.enum_type:
            enum(nested, full + ".")

    for m in proto.message_type:
        message(m, prefix)
    for e in proto.enum_type:
        enum(e, prefix)
    for service in proto.service:
        names.add(prefix + service.name)
        names.update(f"{prefix}{service.name}.{method.name}" for method in service.method)
    names.update(prefix + extension.name for extension in proto.extension)
    return names


def defining_file(files, symbol):
    return next((name for name, proto in files.items() if symbol in symbols_of(proto)), None)


# ---------------------------------------------------------------------------------------------
# The servers


class Server:
    def __init__(self, key, exe_dir, tmp):
        self.key = key
        self.spec = SERVERS[key]
        self.name = self.spec["exe"]
        exe = os.path.join(exe_dir, self.name)
        if key == "swiftkart":
            args = [exe, "--port", "0", "--speed", "10", "--database", os.path.join(tmp, "swiftkart.sqlite")]
        elif key == "orders":
            args = [exe, "--port", "0", "--database", os.path.join(tmp, "orders.sqlite")]
        else:
            args = [exe, "--port=0", "--host=127.0.0.1"]
        if not os.access(exe, os.X_OK):
            raise RuntimeError(f"{exe} is not an executable")
        self.child, self.port = processes.start_server(args, self.name)
        self.address = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.address}"
        self.channel = grpc.insecure_channel(self.address)
        grpc.channel_ready_future(self.channel).result(timeout=WAIT)

    def close(self):
        self.channel.close()


def http1():
    return httpx.Client(timeout=WAIT)


def http2():
    return httpx.Client(timeout=WAIT, http1=False, http2=True)  # plaintext with prior knowledge


# ---------------------------------------------------------------------------------------------
# a. Reflection, over grpcio with the published protocol's messages


def reflection_checks(report, server, protocols):
    spec = server.spec
    for version in VERSIONS:
        reflection = Reflection(protocols, server.channel, version)
        prefix = f"a. {server.name} reflection {version}"

        def list_services(notes, reflection=reflection):
            request, response = reflection.ask(list_services="")
            expect(response.WhichOneof("message_response") == "list_services_response",
                   f"{show(request)} was answered with {describe(response)}")
            names = [service.name for service in response.list_services_response.service]
            missing = [name for name in spec["services"] if name not in names]
            expect(not missing, f"list_services lacks {missing}; it names {names}")
            expect(len(set(names)) == len(names), f"list_services names a service twice: {names}")
            notes.append(f"services: {names}")
            for own in (f"grpc.reflection.{v}.ServerReflection" for v in VERSIONS):
                if own not in names:
                    notes.append(f"note: {own} is not listed")

        report.check(f"{prefix}: list_services names {', '.join(spec['services'])}", list_services)

        def services_resolve(notes, reflection=reflection):
            request, response = reflection.ask(list_services="")
            expect(response.WhichOneof("message_response") == "list_services_response",
                   f"{show(request)} was answered with {describe(response)}")
            problems = []
            for service in (s.name for s in response.list_services_response.service):
                try:
                    # A new stream each: its first answer must carry every dependency.
                    request, answer = reflection.ask(file_containing_symbol=service)
                    files = expect_files(request, answer)
                    pool = build_pool(files, request)
                    descriptor = pool.FindServiceByName(service)
                    expect(descriptor.methods, f"{service} has no methods")
                    for method in descriptor.methods:
                        for kind, message in (("input", method.input_type), ("output", method.output_type)):
                            try:
                                pool.FindMessageTypeByName(message.full_name)
                            except KeyError:
                                raise AssertionError(f"{service}.{method.name}'s {kind} type {message.full_name} "
                                                     f"does not resolve") from None
                    notes.append(f"{service}: {len(descriptor.methods)} method(s) resolve from {sorted(files)}")
                except Exception as error:
                    problems.append(f"{service}: {error}")
            expect(not problems, "; ".join(problems))

        report.check(f"{prefix}: every listed service's file comes with its dependencies and resolves its "
                     "methods' input and output types", services_resolve)

        def by_filename(notes, reflection=reflection):
            request, response = reflection.ask(file_containing_symbol=spec["main"])
            files = expect_files(request, response)
            main_file = defining_file(files, spec["main"])
            expect(main_file, f"no file in the answer to {show(request)} declares {spec['main']}")
            # The file, and one it imports (google/protobuf/duration.proto, grpc/testing/empty.proto, ...).
            for name in (main_file, *files[main_file].dependency[:1]):
                request, response = reflection.ask(file_by_filename=name)
                files = expect_files(request, response)
                expect(name in files, f"the answer to {show(request)} holds {sorted(files)}, not {name}")
                build_pool(files, request)
                notes.append(f"{name}: {sorted(files)}")
            # An unknown file: NOT_FOUND, and the stream goes on.
            missing = reflection.request(file_by_filename="no/such.proto")
            known = reflection.request(file_by_filename=main_file)
            answers = reflection.exchange(missing, known)
            expect_not_found(missing, answers[0])
            expect(main_file in expect_files(known, answers[1]),
                   f"after NOT_FOUND, {show(known)} was answered with {describe(answers[1])}")

        report.check(f"{prefix}: file_by_filename answers with the file and its dependencies; "
                     "\"no/such.proto\" is NOT_FOUND", by_filename)

        def by_symbol(notes, reflection=reflection):
            problems = []
            for what, symbol in spec["symbols"]:
                try:
                    request, response = reflection.ask(file_containing_symbol=symbol)
                    files = expect_files(request, response)
                    name = defining_file(files, symbol)
                    expect(name, f"no file in the answer to {show(request)} declares {symbol} (files {sorted(files)})")
                    build_pool(files, request)
                    notes.append(f"{what} {symbol}: {name}")
                except Exception as error:
                    problems.append(f"{what} {symbol}: {error}")
            try:
                unknown = reflection.request(file_containing_symbol="no.Such")
                known = reflection.request(file_containing_symbol=spec["main"])
                answers = reflection.exchange(unknown, known)
                expect_not_found(unknown, answers[0])
                expect(defining_file(expect_files(known, answers[1]), spec["main"]),
                       f"after NOT_FOUND, {show(known)} was answered with {describe(answers[1])}")
            except Exception as error:
                problems.append(str(error))
            expect(not problems, "; ".join(problems))

        symbols = ", ".join(symbol for _, symbol in spec["symbols"])
        report.check(f"{prefix}: file_containing_symbol finds {symbols}; \"no.Such\" is NOT_FOUND", by_symbol)

        def extensions(notes, reflection=reflection):
            message = spec["message"]
            numbers = reflection.request(all_extension_numbers_of_type=message)
            unknown_type = reflection.request(all_extension_numbers_of_type="no.Such")
            no_extension = reflection.request(file_containing_extension=(message, 536870911))
            answers = reflection.exchange(numbers, unknown_type, no_extension)
            expect(answers[0].WhichOneof("message_response") == "all_extension_numbers_response",
                   f"{show(numbers)} was answered with {describe(answers[0])}")
            found = answers[0].all_extension_numbers_response
            expect(found.base_type_name == message and not found.extension_number,
                   f"{show(numbers)} was answered with {describe(answers[0])} ({message} has no extensions)")
            expect_not_found(unknown_type, answers[1])
            expect_not_found(no_extension, answers[2])

        report.check(f"{prefix}: all_extension_numbers_of_type {spec['message']} (none), \"no.Such\" "
                     "and file_containing_extension for an extension that does not exist (NOT_FOUND)", extensions)


# ---------------------------------------------------------------------------------------------
# b. grpcio-reflection's own client


def grpcio_reflection_checks(report, servers):
    def swiftkart(notes):
        from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
        channel = servers["swiftkart"].channel
        database = ProtoReflectionDescriptorDatabase(channel)
        services = database.get_services()
        expect("SwiftKartService" in services, f"get_services() gave {services}")
        pool = descriptor_pool.DescriptorPool(database)
        service = pool.FindServiceByName("SwiftKartService")
        method = service.methods_by_name["ListRaces"]
        request_class = message_factory.GetMessageClass(pool.FindMessageTypeByName(method.input_type.full_name))
        response_class = message_factory.GetMessageClass(pool.FindMessageTypeByName(method.output_type.full_name))
        list_races = channel.unary_unary("/SwiftKartService/ListRaces", request_serializer=request_class.SerializeToString,
                                         response_deserializer=response_class.FromString)
        races = list_races(request_class(limit=3), timeout=WAIT).races
        expect(len(races) == 3, f"ListRaces(limit: 3) returned {len(races)} races")
        expect(all(race.name and race.start_time.seconds > 0 for race in races),
               f"races without names or start times: {[text_format.MessageToString(race, as_one_line=True) for race in races]}")
        notes.append(f"races: {[race.name for race in races]}; methods {[m.name for m in service.methods]}")
        # A nested type and a well-known dependency through the same pool.
        pool.FindMessageTypeByName("KartLocations.Kart")
        pool.FindMessageTypeByName("google.protobuf.Duration")

    def interop(notes):
        from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
        channel = servers["interop"].channel
        pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
        method = pool.FindServiceByName("grpc.testing.TestService").methods_by_name["UnaryCall"]
        request_class = message_factory.GetMessageClass(method.input_type)
        response_class = message_factory.GetMessageClass(method.output_type)
        call = channel.unary_unary("/grpc.testing.TestService/UnaryCall", request_serializer=request_class.SerializeToString,
                                   response_deserializer=response_class.FromString)
        response = call(request_class(response_size=314), timeout=WAIT)
        expect(len(response.payload.body) == 314, f"UnaryCall(response_size: 314) returned {len(response.payload.body)} bytes")

    if "swiftkart" in servers:
        report.check("b. grpcio-reflection's ProtoReflectionDescriptorDatabase: SwiftKartService resolves and ListRaces "
                     "with dynamic messages returns races", swiftkart)
    if "interop" in servers:
        report.check("b. grpcio-reflection's ProtoReflectionDescriptorDatabase: grpc.testing.TestService/UnaryCall "
                     "with dynamic messages", interop)


# ---------------------------------------------------------------------------------------------
# c. Metrics


class Scrape:
    """One read of /metrics (or of a file of the same format): every sample, and the type of the
    family each sample name is in."""

    def __init__(self, response=None, text=None):
        if response is not None:
            expect(response.status_code == 200, f"GET {response.url} answered {response.status_code}: {short(response.text)}")
            content_type = response.headers.get("content-type", "")
            expect(re.match(r"text/plain\s*;", content_type) and re.search(r"version\s*=\s*0\.0\.4", content_type),
                   f"content-type {content_type!r}, not text/plain; version=0.0.4")
            text = response.text
        from prometheus_client.parser import text_string_to_metric_families
        self.text = text
        self.samples, self.types = [], {}
        for family in text_string_to_metric_families(self.text):
            for sample in family.samples:
                self.samples.append((sample.name, sample.labels, sample.value))
                self.types.setdefault(sample.name, family.type)

    def total(self, name, **labels):
        """The sum of the samples named `name` whose labels include `labels`."""
        return sum(value for sample, tags, value in self.samples
                   if sample == name and all(tags.get(key) == want for key, want in labels.items()))

    def values(self, name):
        return [(tags, value) for sample, tags, value in self.samples if sample == name]


def labelled(labels):
    return "{" + ", ".join(f'{key}="{value}"' for key, value in labels.items()) + "}"


def fetch_metrics(client, url, query=""):
    return Scrape(client.get(f"{url}/metrics{query}"))


STARTED = "grpc_server_call_started_total"
DURATION = "grpc_server_call_duration_seconds"
SENT = "grpc_server_call_sent_total_compressed_message_size_bytes"
RECEIVED = "grpc_server_call_rcvd_total_compressed_message_size_bytes"
HISTOGRAMS = (DURATION, SENT, RECEIVED)


def histogram_problems(scrape, base):
    """What is wrong with histogram `base`'s series: buckets not in increasing le order, not
    cumulative, not ending with le="+Inf" equal to _count, or without _count and _sum."""
    series = defaultdict(lambda: {"buckets": [], "count": None, "sum": None})
    for name, labels, value in scrape.samples:
        key = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        if name == f"{base}_bucket":
            series[key]["buckets"].append((labels.get("le"), value))
        elif name == f"{base}_count":
            series[key]["count"] = value
        elif name == f"{base}_sum":
            series[key]["sum"] = value
    problems = []
    for key, one in series.items():
        where = "{" + ", ".join(f'{k}="{v}"' for k, v in key) + "}"
        buckets = one["buckets"]
        if not buckets:
            problems.append(f"{base}{where} has no buckets")
            continue
        try:
            bounds = [float(le) for le, _ in buckets]
        except (TypeError, ValueError):
            problems.append(f"{base}_bucket{where} has an le that is not a number: {[le for le, _ in buckets]}")
            continue
        if bounds != sorted(bounds) or len(set(bounds)) != len(bounds):
            problems.append(f"{base}_bucket{where}: le not strictly increasing: {[le for le, _ in buckets]}")
        counts = [value for _, value in buckets]
        if any(later < earlier for earlier, later in zip(counts, counts[1:])):
            problems.append(f"{base}_bucket{where} is not cumulative: {buckets}")
        if buckets[-1][0] != "+Inf":
            problems.append(f"{base}_bucket{where} ends with le=\"{buckets[-1][0]}\", not \"+Inf\"")
        if one["count"] is None or one["sum"] is None:
            problems.append(f"{base}{where} lacks _count or _sum")
        elif buckets[-1][1] != one["count"]:
            problems.append(f"{base}{where}: le=\"+Inf\" is {buckets[-1][1]}, _count {one['count']}")
        status = dict(key).get("grpc_status")
        if status is not None and status not in STATUS_NAMES:
            problems.append(f"{base}{where}: grpc_status {status!r} is not a status name")
        if "grpc_method" not in dict(key) or "grpc_status" not in dict(key):
            problems.append(f"{base}{where} lacks the grpc_method or grpc_status label")
    return problems, len(series)


def metrics_checks(report, server, pb, rpc, protocols):
    url = server.url
    kart = rpc.SwiftKartServiceStub(server.channel)
    client = http1()
    listed, failing, method_list, method_fail = 7, 3, "SwiftKartService/ListRaces", "SwiftKartService/FollowRace"

    def exposition(notes):
        scrape = fetch_metrics(client, url)
        notes.append(f"{len(scrape.samples)} samples in {len(scrape.text)} bytes")

    report.check("c. GET /metrics over HTTP/1.1: 200, text/plain; version=0.0.4, parsed by prometheus_client", exposition)

    def exposition_h2(notes):
        with http2() as h2:
            response = h2.get(f"{url}/metrics")
            expect(response.http_version == "HTTP/2", f"answered over {response.http_version}")
            notes.append(f"{len(Scrape(response).samples)} samples")

    report.check("c. GET /metrics over HTTP/2 (prior knowledge)", exposition_h2)

    def counts(notes):
        before = fetch_metrics(client, url)
        for _ in range(listed):
            races = kart.ListRaces(pb.ListRacesRequest(limit=5), timeout=WAIT).races
            expect(len(races) == 5, f"ListRaces(limit: 5) returned {len(races)} races")
        for _ in range(failing):
            try:
                for response in kart.FollowRace(iter([pb.FollowRaceRequest(race_name="no such race")]), timeout=WAIT):
                    raise AssertionError(f"FollowRace {{race_name: \"no such race\"}} answered {response}")
                raise AssertionError("FollowRace {race_name: \"no such race\"} ended OK")
            except grpc.RpcError as error:
                expect(error.code() == grpc.StatusCode.NOT_FOUND,
                       f"FollowRace {{race_name: \"no such race\"}} ended {error.code()} {error.details()!r}, not NOT_FOUND")
        wanted = [
            (STARTED, {"grpc_method": method_list}, listed),
            (STARTED, {"grpc_method": method_fail}, failing),
        ]
        for histogram in HISTOGRAMS:
            wanted.append((f"{histogram}_count", {"grpc_method": method_list, "grpc_status": "OK"}, listed))
            wanted.append((f"{histogram}_count", {"grpc_method": method_fail, "grpc_status": "NOT_FOUND"}, failing))

        def deltas(after):
            return [(name, labels, want, after.total(name, **labels) - before.total(name, **labels))
                    for name, labels, want in wanted]

        # A call's metrics may be recorded just after its client has its status.
        end = time.monotonic() + 5
        while True:
            after = fetch_metrics(client, url)
            found = deltas(after)
            if all(got >= want for _, _, want, got in found) or time.monotonic() > end:
                break
            time.sleep(0.2)
        wrong = [f"{name}{labelled(labels)} grew by {got:g}, not {want}" for name, labels, want, got in found if got != want]
        expect(not wrong, "; ".join(wrong) + f" (after {listed} ListRaces OK and {failing} FollowRace NOT_FOUND)")
        for histogram in HISTOGRAMS:
            grown = after.total(f"{histogram}_sum", grpc_method=method_list, grpc_status="OK") - \
                before.total(f"{histogram}_sum", grpc_method=method_list, grpc_status="OK")
            expect(grown > 0, f"{histogram}_sum{{grpc_method=\"{method_list}\", grpc_status=\"OK\"}} grew by {grown:g}")
            notes.append(f"{histogram}_sum for {listed} ListRaces grew by {grown:g}")
        types = {STARTED: "counter", **{f"{h}_bucket": "histogram" for h in HISTOGRAMS}}
        wrong = [f"{name} is in a family of type {after.types.get(name)}, not {kind}"
                 for name, kind in types.items() if after.types.get(name) != kind]
        expect(not wrong, "; ".join(wrong))

    report.check(f"c. metrics: {listed} ListRaces (OK) and {failing} FollowRace (NOT_FOUND) add exactly that to "
                 f"{STARTED} and to the _count of {', '.join(HISTOGRAMS)}", counts)

    def buckets(notes):
        scrape = fetch_metrics(client, url)
        problems = []
        for histogram in HISTOGRAMS:
            found, series = histogram_problems(scrape, histogram)
            if series == 0:
                problems.append(f"no {histogram} series")
            problems += found
            notes.append(f"{histogram}: {series} series")
        started = scrape.values(STARTED)
        problems += [f"{STARTED}{labels} lacks grpc_method" for labels, _ in started if "grpc_method" not in labels]
        expect(not problems, "; ".join(problems[:8]) + (f" (and {len(problems) - 8} more)" if len(problems) > 8 else ""))

    report.check("c. metrics: every histogram series has cumulative buckets in le order ending with le=\"+Inf\" "
                 "equal to _count, and grpc_method and grpc_status (a status name) labels", buckets)

    def other(notes):
        before = fetch_metrics(client, url)
        for path in ("/SwiftKartService/NoSuchMethod", "/no.such.Service/Method"):
            try:
                server.channel.unary_unary(path)(b"", timeout=WAIT)
                raise AssertionError(f"{path} succeeded")
            except grpc.RpcError as error:
                expect(error.code() == grpc.StatusCode.UNIMPLEMENTED, f"{path} ended {error.code()}, not UNIMPLEMENTED")
        end = time.monotonic() + 5
        while True:
            after = fetch_metrics(client, url)
            started = after.total(STARTED, grpc_method="other") - before.total(STARTED, grpc_method="other")
            ended = after.total(f"{DURATION}_count", grpc_method="other", grpc_status="UNIMPLEMENTED") - \
                before.total(f"{DURATION}_count", grpc_method="other", grpc_status="UNIMPLEMENTED")
            if (started >= 2 and ended >= 2) or time.monotonic() > end:
                break
            time.sleep(0.2)
        expect(started == 2, f"{STARTED}{{grpc_method=\"other\"}} grew by {started:g}, not 2")
        expect(ended == 2, f"{DURATION}_count{{grpc_method=\"other\", grpc_status=\"UNIMPLEMENTED\"}} grew by {ended:g}, not 2")
        named = sorted({labels.get("grpc_method") for _, labels, _ in after.samples
                        if "NoSuch" in str(labels.get("grpc_method")) or "no.such" in str(labels.get("grpc_method"))})
        expect(not named, f"unregistered methods have labels of their own: {named}")

    report.check("c. metrics: calls to unregistered methods are counted as grpc_method=\"other\" (UNIMPLEMENTED)", other)

    def connections(notes):
        kart.ListRaces(pb.ListRacesRequest(limit=1), timeout=WAIT)  # the channel is connected
        base = fetch_metrics(client, url)
        expect("pitlane_server_connections_open" in base.types, "no pitlane_server_connections_open sample (the pitlane_ "
                                                                 f"samples: {sorted(n for n in base.types if n.startswith('pitlane_'))})")
        expect(base.types["pitlane_server_connections_open"] == "gauge",
               f"pitlane_server_connections_open is a {base.types['pitlane_server_connections_open']}, not a gauge")
        open_now = base.total("pitlane_server_connections_open")
        expect(open_now >= 1, f"pitlane_server_connections_open is {open_now:g} with a grpcio channel connected")
        # Three more connections (channels that do not share grpcio's subchannels).
        extra = [grpc.insecure_channel(server.address, options=[("grpc.use_local_subchannel_pool", 1)]) for _ in range(3)]
        try:
            for channel in extra:
                rpc.SwiftKartServiceStub(channel).ListRaces(pb.ListRacesRequest(limit=1), timeout=WAIT)
            during = fetch_metrics(client, url).total("pitlane_server_connections_open")
            expect(during >= open_now + 3, f"pitlane_server_connections_open: {open_now:g}, then {during:g} with 3 more "
                                           "grpcio connections")
        finally:
            for channel in extra:
                channel.close()
        end = time.monotonic() + 5
        while (after := fetch_metrics(client, url).total("pitlane_server_connections_open")) > open_now and time.monotonic() < end:
            time.sleep(0.2)
        expect(after <= open_now, f"pitlane_server_connections_open: {open_now:g}, {during:g} with 3 more connections, "
                                  f"still {after:g} 5 s after they closed")
        notes.append(f"pitlane_server_connections_open: {open_now:g}, {during:g} with 3 more connections, {after:g} after")

    report.check("c. metrics: pitlane_server_connections_open (a gauge) is at least 1 with a channel open, counts 3 "
                 "more connections and drops back when they close", connections)

    def streams(notes):
        base = fetch_metrics(client, url)
        expect("pitlane_server_streams_open" in base.types, "no pitlane_server_streams_open sample (the pitlane_ samples: "
                                                             f"{sorted(n for n in base.types if n.startswith('pitlane_'))})")
        expect(base.types["pitlane_server_streams_open"] == "gauge",
               f"pitlane_server_streams_open is a {base.types['pitlane_server_streams_open']}, not a gauge")
        before = base.total("pitlane_server_streams_open")
        request_class = protocols.message("grpc.health.v1.HealthCheckRequest")
        response_class = protocols.message("grpc.health.v1.HealthCheckResponse")
        watch = server.channel.unary_stream("/grpc.health.v1.Health/Watch", request_serializer=request_class.SerializeToString,
                                            response_deserializer=response_class.FromString)
        calls = [watch(request_class(service=""), timeout=30) for _ in range(2)]
        try:
            for call in calls:
                next(call)  # SERVING: the stream is open
            during = fetch_metrics(client, url).total("pitlane_server_streams_open")
            expect(during >= before + 2, f"pitlane_server_streams_open: {before:g}, then {during:g} with 2 Health.Watch "
                                         "streams open")
        finally:
            for call in calls:
                call.cancel()
        end = time.monotonic() + 5
        while (after := fetch_metrics(client, url).total("pitlane_server_streams_open")) > before and time.monotonic() < end:
            time.sleep(0.2)
        expect(after <= before, f"pitlane_server_streams_open: {before:g}, {during:g} with 2 Health.Watch streams, "
                                f"still {after:g} 5 s after they were cancelled")
        notes.append(f"pitlane_server_streams_open: {before:g}, {during:g} with 2 streams, {after:g} after")

    report.check("c. metrics: pitlane_server_streams_open (a gauge) counts 2 open Health.Watch streams and drops back "
                 "after they are cancelled", streams)


def compressed_size_check(report, server):
    """gRPC's metric counts message bytes as they crossed the wire, compressed (gRFC A66:
    "compressed but not encrypted"): a 64 KiB payload of zeros sent uncompressed adds its
    serialized size exactly (the length prefix's value); sent gzip-compressed, a few hundred
    bytes, not 64 KiB."""

    def compressed(notes):
        from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
        pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(server.channel))
        method = pool.FindServiceByName("grpc.testing.TestService").methods_by_name["UnaryCall"]
        request_class = message_factory.GetMessageClass(method.input_type)
        response_class = message_factory.GetMessageClass(method.output_type)
        call = server.channel.unary_unary("/grpc.testing.TestService/UnaryCall", request_serializer=request_class.SerializeToString,
                                          response_deserializer=response_class.FromString)
        request = request_class(response_size=1)
        request.payload.body = bytes(64 * 1024)
        serialized = len(request.SerializeToString())
        name, labels = f"{RECEIVED}_sum", {"grpc_method": "grpc.testing.TestService/UnaryCall", "grpc_status": "OK"}

        def grown_by(compression):
            """(count, sum) of the received-size histogram's growth over one call."""
            with http1() as client:
                before = fetch_metrics(client, server.url)
                call(request, timeout=WAIT, compression=compression)
                end = time.monotonic() + 5
                while True:
                    after = fetch_metrics(client, server.url)
                    count = after.total(f"{RECEIVED}_count", **labels) - before.total(f"{RECEIVED}_count", **labels)
                    if count >= 1 or time.monotonic() > end:
                        break
                    time.sleep(0.2)
            return count, after.total(name, **labels) - before.total(name, **labels)

        count, plain = grown_by(grpc.Compression.NoCompression)
        expect(count == 1, f"{RECEIVED}_count{labelled(labels)} grew by {count:g} for one uncompressed call, not 1")
        expect(plain == serialized, f"{name}{labelled(labels)} grew by {plain:g} for one uncompressed request of {serialized} "
                                    "bytes: not its size on the wire")
        count, grown = grown_by(grpc.Compression.Gzip)
        expect(count == 1, f"{RECEIVED}_count{labelled(labels)} grew by {count:g} for one gzip-compressed call, not 1")
        expect(0 < grown < 8 * 1024, f"{name}{labelled(labels)} grew by {grown:g} for one gzip-compressed request of "
                                     f"{serialized} bytes serialized: not its compressed size")
        notes.append(f"a {serialized}-byte request: {name} grew by {plain:g} sent uncompressed, by {grown:g} sent "
                     "gzip-compressed")

    report.check(f"c. {server.name} metrics: {RECEIVED} counts bytes on the wire: an uncompressed request's size, a "
                 "gzip-compressed request's compressed bytes (gRFC A66)", compressed)


# ---------------------------------------------------------------------------------------------
# g. A Pitlane client's own metrics (gRFC A66's client instruments)


CLIENT_STARTED = "grpc_client_attempt_started_total"
CLIENT_HISTOGRAMS = ("grpc_client_attempt_duration_seconds", "grpc_client_attempt_sent_total_compressed_message_size_bytes",
                     "grpc_client_attempt_rcvd_total_compressed_message_size_bytes", "grpc_client_call_duration_seconds")


def run_cli(args, name, wait=30):
    """Runs a command-line client to its end; (exit status, child). A client still running
    after `wait` seconds is stopped and fails the check."""
    child = processes.Child(args, name)
    status = child.wait(wait)
    if status is None:
        child.stop()
        raise AssertionError(f"`{' '.join(os.path.basename(str(a)) for a in args[:3])} ...` still running after {wait} s: "
                             f"{child.tail()}")
    return status, child


def read_client_metrics(path, what):
    expect(os.path.exists(path), f"{what} wrote no --client-metrics file")
    with open(path, encoding="utf-8") as file:
        return Scrape(text=file.read())


def client_metric_problems(scrapes, method, ok, not_found, target):
    """What differs from `ok` OK and `not_found` NOT_FOUND calls of `method`, one attempt each,
    summed over the files' scrapes; and anything wrong with their families and series."""
    def total(name, **labels):
        return sum(scrape.total(name, **labels) for scrape in scrapes)

    wanted = [(CLIENT_STARTED, {"grpc_method": method}, ok + not_found)]
    for histogram in CLIENT_HISTOGRAMS:
        wanted.append((f"{histogram}_count", {"grpc_method": method, "grpc_status": "OK"}, ok))
        wanted.append((f"{histogram}_count", {"grpc_method": method, "grpc_status": "NOT_FOUND"}, not_found))
    problems = [f"{name}{labelled(labels)} is {got:g} in all, not {want}"
                for name, labels, want in wanted if (got := total(name, **labels)) != want]
    for scrape in scrapes:
        types = {CLIENT_STARTED: "counter", **{f"{h}_bucket": "histogram" for h in CLIENT_HISTOGRAMS}}
        problems += [f"{name} is in a family of type {scrape.types.get(name)}, not {kind}"
                     for name, kind in types.items() if scrape.types.get(name) != kind]
        for histogram in CLIENT_HISTOGRAMS:
            problems += histogram_problems(scrape, histogram)[0]
        targets = {labels.get("grpc_target") for name, labels, _ in scrape.samples if name.startswith("grpc_client_")}
        problems += [f"grpc_target {found!r} does not name the server ({target})" for found in targets
                     if found is None or target not in found]
    if ok:
        received = total(f"{CLIENT_HISTOGRAMS[2]}_sum", grpc_method=method, grpc_status="OK")
        if received <= 0:
            problems.append(f"{CLIENT_HISTOGRAMS[2]}_sum for {ok} OK calls is {received:g}: no response bytes counted")
    return sorted(set(problems), key=problems.index)


def client_metrics_checks(report, servers, exe_dir, tmp, protos):
    """g. The Pitlane command-line clients with --client-metrics write gRPC's client metrics
    (gRFC A66) at exit, parsed by prometheus_client: after N OK and M NOT_FOUND GetOrder calls
    made by `orders get`, and a ListRaces made by `swiftkart races`, the attempt counter and every
    histogram's count equal N and M exactly (and the servers' own counts agree)."""
    ok_calls, not_found_calls = 4, 3
    method = "orders.v1.OrderTracking/GetOrder"

    def orders_cli(notes):
        server = servers["orders"]
        exe = os.path.join(exe_dir, "orders")
        expect(os.access(exe, os.X_OK), f"{exe} is not an executable")
        orders_pb, orders_rpc = load(protos, "orders.proto")
        orders_rpc.OrderTrackingStub(server.channel).CreateOrder(
            orders_pb.CreateOrderRequest(order_id="metered", eta_display="soon"),
            metadata=[("authorization", "Bearer staff-token")], timeout=WAIT)
        with http1() as client:
            before = fetch_metrics(client, server.url)
            scrapes = []
            for index, (order, status_wanted) in enumerate([("metered", 0)] * ok_calls + [("no-such-order", 1)] * not_found_calls):
                path = os.path.join(tmp, f"orders-client-{index}.prom")
                args = [exe, "get", order, "--port", str(server.port), "--token", "staff-token", "--client-metrics", path]
                status, child = run_cli(args, "orders")
                expect(status == status_wanted, f"`orders get {order}` exited {status}, not {status_wanted}: {child.tail()}")
                if status_wanted:
                    expect(any("NOT_FOUND" in line for line in child.stderr), f"`orders get {order}` said {child.tail()}")
                scrapes.append(read_client_metrics(path, f"`orders get {order}`"))
            after = fetch_metrics(client, server.url)
        problems = client_metric_problems(scrapes, method, ok_calls, not_found_calls, f"127.0.0.1:{server.port}")
        served = after.total(STARTED, grpc_method=method) - before.total(STARTED, grpc_method=method)
        if served != ok_calls + not_found_calls:
            problems.append(f"orders-server's {STARTED}{{grpc_method=\"{method}\"}} grew by {served:g}, "
                            f"not {ok_calls + not_found_calls} (the clients' attempts)")
        expect(not problems, "; ".join(problems[:8]) + (f" (and {len(problems) - 8} more)" if len(problems) > 8 else ""))
        duration = sum(scrape.total("grpc_client_call_duration_seconds_sum", grpc_method=method) for scrape in scrapes)
        notes.append(f"{ok_calls + not_found_calls} `orders get` processes, one file each: {ok_calls} OK and "
                     f"{not_found_calls} NOT_FOUND calls, {duration * 1000:.1f} ms of call time in all")

    report.check(f"g. `orders get --client-metrics`: {ok_calls} OK and {not_found_calls} NOT_FOUND GetOrder calls give "
                 f"{CLIENT_STARTED} {ok_calls + not_found_calls} and exactly {ok_calls} and {not_found_calls} in the _count "
                 f"of {', '.join(CLIENT_HISTOGRAMS)}, as orders-server counted them", orders_cli)

    def swiftkart_cli(notes):
        server = servers["swiftkart"]
        exe = os.path.join(exe_dir, "swiftkart")
        expect(os.access(exe, os.X_OK), f"{exe} is not an executable")
        path = os.path.join(tmp, "swiftkart-client.prom")
        status, child = run_cli([exe, "races", "--port", str(server.port), "--limit", "2", "--client-metrics", path], "swiftkart")
        expect(status == 0, f"`swiftkart races` exited {status}: {child.tail()}")
        problems = client_metric_problems([read_client_metrics(path, "`swiftkart races`")], "SwiftKartService/ListRaces", 1, 0,
                                          f"127.0.0.1:{server.port}")
        expect(not problems, "; ".join(problems[:8]))
        notes.append("1 ListRaces: 1 attempt, 1 OK call")

    report.check("g. `swiftkart races --client-metrics`: one ListRaces is one attempt and one OK call", swiftkart_cli)


# ---------------------------------------------------------------------------------------------
# d. Health endpoints


def health_check_rpc(protocols, channel):
    request_class = protocols.message("grpc.health.v1.HealthCheckRequest")
    response_class = protocols.message("grpc.health.v1.HealthCheckResponse")
    check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=request_class.SerializeToString,
                                response_deserializer=response_class.FromString)
    return check(request_class(service=""), timeout=WAIT).status


def health_checks(report, server, protocols):
    def serving(notes):
        problems = []
        try:
            status = health_check_rpc(protocols, server.channel)
            if status != 1:
                problems.append(f"grpc.health.v1.Health/Check {{service: \"\"}} says {status}, not SERVING (1)")
        except grpc.RpcError as error:
            problems.append(f"grpc.health.v1.Health/Check {{service: \"\"}} ended {error.code().name} {error.details()!r}")
        for label, make in (("HTTP/1.1", http1), ("HTTP/2", http2)):
            with make() as client:
                for path in ("/healthz", "/readyz"):
                    try:
                        response = client.get(f"{server.url}{path}")
                        if response.status_code != 200 or response.text.strip() != "ok":
                            problems.append(f"GET {path} over {label} answered {response.status_code} {short(response.text, 80)!r}")
                    except httpx.HTTPError as error:
                        problems.append(f"GET {path} over {label}: {type(error).__name__} {error}")
        expect(not problems, "; ".join(problems))

    report.check(f"d. {server.name}: GET /healthz and /readyz answer 200 \"ok\" over HTTP/1.1 and HTTP/2 while "
                 "Health says SERVING", serving)


def drain_check(report, server, protocols):
    """SIGTERM: while the server drains (kept open by a Health.Watch stream), /healthz and
    /readyz must say 503; a 200 to a request sent after Health.Watch said NOT_SERVING is a
    failure; a drain too short to catch is a note."""

    def drain(notes):
        request_class = protocols.message("grpc.health.v1.HealthCheckRequest")
        response_class = protocols.message("grpc.health.v1.HealthCheckResponse")
        watch = server.channel.unary_stream("/grpc.health.v1.Health/Watch", request_serializer=request_class.SerializeToString,
                                            response_deserializer=response_class.FromString)(request_class(service=""), timeout=60)
        try:
            first = next(watch)
        except grpc.RpcError as error:
            raise AssertionError(f"grpc.health.v1.Health/Watch {{service: \"\"}} ended {error.code().name} "
                                 f"{error.details()!r}") from None
        expect(first.status == 1, f"grpc.health.v1.Health/Watch {{service: \"\"}} started with {first.status}, not "
                                  "SERVING (1)")
        seen = {"not_serving": None, "ended": None}

        def follow():
            try:
                for update in watch:
                    if update.status != 1 and seen["not_serving"] is None:
                        seen["not_serving"] = time.monotonic()
                seen["ended"] = "OK"
            except grpc.RpcError as error:
                seen["ended"] = error.code().name

        threading.Thread(target=follow, daemon=True).start()
        # Three keep-alive connections ask /healthz and /readyz in turn, without pause, from
        # before the signal until the server is gone: the server closes its listener and its
        # idle HTTP/1.1 connections as it drains, so a 503 is seen by a request that races it.
        records, stop, guard = [], threading.Event(), threading.Lock()

        def ask(turn):
            client, paths = http1(), ("/healthz", "/readyz")
            while not stop.is_set():
                path, turn = paths[turn % 2], turn + 1
                sent = time.monotonic()
                try:
                    outcome = str(client.get(f"{server.url}{path}", timeout=2).status_code)
                except httpx.HTTPError as error:
                    outcome = type(error).__name__
                    client.close()
                    client = http1()  # a new connection next time
                with guard:
                    records.append((sent, time.monotonic(), path, outcome))
                time.sleep(0.005)
            client.close()

        askers = [threading.Thread(target=ask, args=(turn,), daemon=True) for turn in range(3)]
        for asker in askers:
            asker.start()
        time.sleep(0.3)
        signalled = time.monotonic()
        server.child.send_signal(signal.SIGTERM)

        def outcomes(path):
            with guard:
                return [outcome for sent, _, where, outcome in records if where == path and sent >= signalled]

        while time.monotonic() - signalled < 10 and server.child.alive() and \
                not all("503" in outcomes(path) for path in ("/healthz", "/readyz")):
            time.sleep(0.02)
        stop.set()
        for asker in askers:
            asker.join(3)
        watch.cancel()
        status = server.child.wait(15)
        with guard:
            # Answered before the signal: all 200. (One in flight at the signal may see anything.)
            before = [f"{path} {outcome}" for _, done, path, outcome in records if done < signalled and outcome != "200"]
            late_ok = [f"{path} at +{sent - signalled:.3f} s" for sent, _, path, outcome in records
                       if outcome == "200" and seen["not_serving"] is not None and sent > seen["not_serving"]]
        for path in ("/healthz", "/readyz"):
            counted = defaultdict(int)
            for outcome in outcomes(path):
                counted[outcome] += 1
            notes.append(f"after SIGTERM, GET {path}: " + (", ".join(f"{o} ×{n}" for o, n in counted.items()) or "nothing"))
        notes.append(f"Health.Watch: NOT_SERVING {'at +%.3f s' % (seen['not_serving'] - signalled) if seen['not_serving'] else 'not seen'}"
                     f", stream ended {seen['ended']}; the server exited with {status}")
        expect(not before, f"before SIGTERM: {before[:4]}")
        if late_ok:
            raise AssertionError(f"{len(late_ok)} GET(s) sent after Health.Watch said NOT_SERVING answered 200 (the first "
                                 f"{late_ok[0]}, the last {late_ok[-1]})")
        caught = [path for path in ("/healthz", "/readyz") if "503" in outcomes(path)]
        if not caught:
            notes.append("note: no 503 observed: the drain window was too short to catch (not a failure)")
        elif len(caught) < 2:
            notes.append(f"note: only {caught} was caught answering 503")

    report.check(f"d. {server.name}: after SIGTERM, /healthz and /readyz answer 503 while the server drains", drain, limit=45)


# ---------------------------------------------------------------------------------------------
# e. Bad input


def bad_input_checks(report, servers, protocols):
    if "swiftkart" in servers:
        url = servers["swiftkart"].url

        def query(notes):
            with http1() as client:
                scrape = fetch_metrics(client, url, "?x=1")
                notes.append(f"{len(scrape.samples)} samples")

        report.check("e. GET /metrics?x=1 answers the metrics", query)

        def post(notes):
            with http1() as client:
                response = client.post(f"{url}/metrics", content=b"x=1")
                expect(response.status_code == 405, f"POST /metrics answered {response.status_code} {short(response.text, 120)!r}")
                notes.append(f"allow: {response.headers.get('allow')}")

        report.check("e. POST /metrics answers 405", post)

    for server in servers.values():
        for version in VERSIONS:
            def empty(notes, server=server, version=version):
                reflection = Reflection(protocols, server.channel, version)
                request = reflection.Request()
                try:
                    response = reflection.exchange(request)[0]
                except StreamFailed as error:
                    expect(error.code == grpc.StatusCode.INVALID_ARGUMENT,
                           f"the stream ended {error.code.name if error.code else error.code} ({error.details!r}), "
                           "not INVALID_ARGUMENT")
                    notes.append(f"the stream ended INVALID_ARGUMENT ({error.details!r})")
                    return
                expect(response.WhichOneof("message_response") == "error_response" and response.error_response.error_code == 3,
                       f"an empty request was answered with {describe(response)}, not error_response 3 (INVALID_ARGUMENT)")
                notes.append(f"{describe(response)}")

            report.check(f"e. {server.name} reflection {version}: a request with no message_request set is "
                         "INVALID_ARGUMENT", empty)


# ---------------------------------------------------------------------------------------------


def rich_error_checks(report, exe_dir, tmp, protos):
    """f. grpcio-status (a decoder no one here wrote) reads the order tracker's rich OUT_OF_RANGE:
    an orders-server keeping 2 updates per order, an order with 4 updates, and a watch from the
    first: `rpc_status.from_call` gives google.rpc.Status with an ErrorInfo whose reason is
    UPDATES_NOT_RETAINED and whose metadata names the oldest update id still retained and the
    log's epoch."""
    def run(notes):
        from google.rpc import error_details_pb2
        from grpc_status import rpc_status
        orders_pb, orders_rpc = load(protos, "orders.proto")
        child, port = processes.start_server(
            [os.path.join(exe_dir, "orders-server"), "--port", "0", "--retain-updates", "2",
             "--database", os.path.join(tmp, "rich-errors.sqlite")], "orders-server (retaining 2)")
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = orders_rpc.OrderTrackingStub(channel)
                staff = [("authorization", "Bearer staff-token")]
                order = stub.CreateOrder(orders_pb.CreateOrderRequest(order_id="rich", eta_display="soon"),
                                         metadata=staff, timeout=WAIT)
                first = None
                for index in range(4):
                    update = stub.PublishUpdate(orders_pb.PublishUpdateRequest(
                        order_id="rich", eta_changed=orders_pb.EtaChanged(eta_display=f"{index} min")), metadata=staff, timeout=WAIT)
                    first = first or update.update_id
                try:
                    for _ in stub.WatchOrder(orders_pb.WatchOrderRequest(order_id="rich", since_update_id=first),
                                             metadata=staff, timeout=WAIT):
                        pass
                    raise AssertionError("the watch from a pruned update did not fail")
                except grpc.RpcError as error:
                    expect(error.code() == grpc.StatusCode.OUT_OF_RANGE, f"{error.code()}: {error.details()}")
                    status = rpc_status.from_call(error)
                    expect(status is not None, "no grpc-status-details-bin in the trailers")
                    expect(status.code == 11, f"google.rpc.Status code {status.code}")
                    info = error_details_pb2.ErrorInfo()
                    expect(len(status.details) >= 1 and status.details[0].Unpack(info), f"details: {status.details}")
                    expect(info.reason == "UPDATES_NOT_RETAINED", f"reason {info.reason!r}")
                    expect(info.metadata.get("oldest_retained_update_id", "").startswith("u1"), f"metadata {dict(info.metadata)}")
                    expect(info.metadata.get("epoch"), f"metadata {dict(info.metadata)}")
                    notes.append(f"ErrorInfo {info.reason} in {info.domain}: {dict(info.metadata)}")
                _ = order
        finally:
            child.stop()

    report.check("f. grpcio-status decodes the order tracker's OUT_OF_RANGE details (ErrorInfo: the oldest retained "
                 "update, the epoch)", run)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the directory of the built servers (e.g. .build/debug)")
    parser.add_argument("--protos", default=os.path.join(ROOT, "Protos"))
    parser.add_argument("--only", help="comma-separated check letters (a,b,c,d,e,f,g)")
    parser.add_argument("--servers", default="swiftkart,orders,interop", help="comma-separated: swiftkart,orders,interop")
    parser.add_argument("--time-limit", type=int, default=600, help="seconds for the whole run")
    args = parser.parse_args()
    only = None if args.only is None else set(args.only.replace(" ", "").split(","))
    keys = [key for key in args.servers.split(",") if key]
    unknown = [key for key in keys if key not in SERVERS]
    if unknown:
        parser.error(f"unknown servers {unknown}")

    processes.install_cleanup()

    processes.start_time_limit(args.time_limit)
    report = Report(only)
    missing = []
    for module, package in (("grpc_reflection", "grpcio-reflection"), ("prometheus_client", "prometheus_client"),
                            ("grpc_status", "grpcio-status")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        report.add("Python packages", f"missing {missing}: .venv/bin/pip install {' '.join(missing)}")

    protocols = Protocols()
    pb, rpc = load(args.protos, "swiftkart.proto")
    tmp = temporary_directory("pitlane-operator-")
    servers = {}
    for key in keys:
        try:
            servers[key] = Server(key, os.path.abspath(args.bin), tmp)
            print(f"    {servers[key].name} pid {servers[key].child.pid} port {servers[key].port}", flush=True)
        except Exception as error:
            report.add(f"start {SERVERS[key]['exe']}", f"{type(error).__name__}: {error}")

    if report.wanted("a"):
        for server in servers.values():
            reflection_checks(report, server, protocols)
    if report.wanted("b") and "grpcio-reflection" not in missing:
        grpcio_reflection_checks(report, servers)
    if report.wanted("c") and "swiftkart" in servers and "prometheus_client" not in missing:
        metrics_checks(report, servers["swiftkart"], pb, rpc, protocols)
    if report.wanted("c") and "interop" in servers and not missing:
        compressed_size_check(report, servers["interop"])
    if report.wanted("g") and "orders" in servers and "swiftkart" in servers and "prometheus_client" not in missing:
        client_metrics_checks(report, servers, os.path.abspath(args.bin), tmp, args.protos)
    if report.wanted("e"):
        bad_input_checks(report, servers, protocols)
    if report.wanted("f"):
        rich_error_checks(report, os.path.abspath(args.bin), tmp, args.protos)
    if report.wanted("d"):
        for server in servers.values():
            health_checks(report, server, protocols)
        for server in servers.values():  # last: it ends the server
            drain_check(report, server, protocols)
    for server in servers.values():
        server.close()
    status = report.finish()
    processes.stop_all()
    exit_now(status)  # no interpreter shutdown, which can hang a grpcio client


if __name__ == "__main__":
    main()
