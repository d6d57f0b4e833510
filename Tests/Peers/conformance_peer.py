#!/usr/bin/env python3
"""Python protobuf as the judge of pitlane-conformance-testee, over the pipe protocol of
Google's conformance runner.

  conformance_peer.py --testee PATH [--count N] [--seed S] [--skip NAME ...]

Compiles the schemas in Services/Sources/pitlane-conformance-testee with the .venv's protoc and starts
the testee. Per case it writes a 4-byte little-endian length and a ConformanceRequest to the
testee's stdin and reads a 4-byte little-endian length and a ConformanceResponse from its
stdout. Outputs are parsed back by Python protobuf (json_format, text_format) and compared with
what was sent as deterministic bytes (Any payloads repacked deterministically), so NaN and map
order do not matter. Groups, each printed as "ok NAME (n cases)" or "FAIL NAME: ..." with the
first differences:

  failure-set             the runner's opening request (conformance.FailureSet, empty
                          payload, PROTOBUF) is answered with an empty FailureSet
  aliased-enum            JSON "moo", "MOO", "bAz", "ALIAS_BAZ" for AliasedEnum all give 2
  oneof-duplicate         two members of one oneof in JSON: parse error; a member given as
                          null beside another member is accepted (as json_format does)
  timestamp-case          a lowercase "t" or "z" in a JSON Timestamp: parse error
  fieldmask-invalid       "foo,bar_bar" in JSON: parse error; paths print in lowerCamelCase;
                          paths without a JSON form (json_format's rules): serialize error
  json-extension          "[protobuf_test_messages.proto2.extension_int32]" in JSON both ways
  map-normalization       string map keys differing only in Unicode normalization stay apart
                          (binary -> binary, JSON -> binary, binary -> JSON)
  proto2-invalid-utf8     proto2 strings holding invalid UTF-8 round-trip byte for byte
  binary-corpus-proto3/2  seeded random messages: binary -> binary and binary -> JSON
  json-corpus-proto3/2    the same messages: JSON (from json_format; lowerCamelCase names, or
                          proto names for every other message) -> binary
  text-corpus-proto3/2    the same messages: binary -> text (read by text_format.Parse) and
                          text (from text_format) -> binary; notes how many texts are
                          byte-identical to text_format's (not required)
  text-features           hand-written text inputs (comments, quotes, escapes, lists, Any,
                          maps, floats, integers, bools, [names], separators) compared with
                          text_format.Parse, and inputs text_format rejects, which must be
                          parse errors
  clean-exit              the testee exits 0 once its stdin is closed

--skip NAME skips a group, and NAME-* too (--skip text-corpus skips both schemas). Exits 1 if
any group fails. A testee that dies or gives no answer within 15 s fails that case and is
started again for the next; after 5 such failures in a row (or 5 timeouts in all) every further
case fails without asking.
"""
import argparse
import difflib
import importlib
import math
import os
import random
import select
import shutil
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
from google.protobuf import descriptor_pool, json_format, message_factory, text_format  # noqa: E402
from google.protobuf import empty_pb2, wrappers_pb2  # noqa: E402,F401  (Any payloads resolve)
from google.protobuf.descriptor import FieldDescriptor as FD  # noqa: E402

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCHEMAS = os.path.join(ROOT, "Services", "Sources", "pitlane-conformance-testee")
PROTOC = os.environ.get("PROTOC_PATH", os.path.join(ROOT, ".venv", "bin", "protoc"))
P3 = "protobuf_test_messages.proto3.TestAllTypesProto3"
P2 = "protobuf_test_messages.proto2.TestAllTypesProto2"
TIMEOUT = 15.0


def compile_schemas():
    """protoc --python_out into a temporary directory; returns the three imported modules."""
    out = tempfile.mkdtemp(prefix="pitlane-conformance-")
    names = ["conformance", "test_messages_proto3", "test_messages_proto2"]
    includes = ["-I", SCHEMAS] + (["-I", os.path.join(ROOT, ".venv", "include")]
                                  if os.path.isdir(os.path.join(ROOT, ".venv", "include")) else [])
    try:
        subprocess.run([PROTOC, f"--python_out={out}", *includes, *(n + ".proto" for n in names)], check=True)
        sys.path.insert(0, out)
        return [importlib.import_module(n + "_pb2") for n in names]
    finally:
        shutil.rmtree(out, True)  # imported; the files are no longer needed


conformance, tm3, tm2 = compile_schemas()
CLASSES = {P3: tm3.TestAllTypesProto3, P2: tm2.TestAllTypesProto2}
POOL = descriptor_pool.Default()
OUTPUT_KIND = {"PROTOBUF": "protobuf_payload", "JSON": "json_payload", "TEXT_FORMAT": "text_payload"}


# ---------------------------------------------------------------------------------------------
# The testee process and the pipe protocol

class Testee:
    GIVE_UP_AFTER = 5  # consecutive failures (or timeouts in all): then every call fails at once

    def __init__(self, path):
        self.path, self.process = path, None
        self.stderr = tempfile.TemporaryFile()
        self.failures_in_a_row = self.timeouts = 0

    def start(self):
        self.process = subprocess.Popen([self.path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)

    def stderr_tail(self):
        self.stderr.seek(0)
        return self.stderr.read()[-400:].decode("utf-8", "replace").strip()

    def _read(self, count):
        data = b""
        while len(data) < count:
            if not select.select([self.process.stdout], [], [], TIMEOUT)[0]:
                raise TimeoutError(f"no answer within {TIMEOUT:.0f} s")
            chunk = os.read(self.process.stdout.fileno(), count - len(data))
            if not chunk:
                try:
                    status = f"exited ({self.process.wait(5)})"
                except subprocess.TimeoutExpired:
                    status = "closed its stdout"
                raise RuntimeError(f"testee {status}; stderr: {self.stderr_tail()!r}")
            data += chunk
        return data

    def call(self, request):
        """One request, one response. A dead or stalled testee is stopped (it is started again
        for the next call) and RuntimeError raised."""
        if max(self.failures_in_a_row, self.timeouts) >= self.GIVE_UP_AFTER:
            raise RuntimeError("testee given up on: too many failures")
        if self.process is None:
            self.start()
        try:
            payload = request.SerializeToString()
            self.process.stdin.write(struct.pack("<I", len(payload)) + payload)
            self.process.stdin.flush()
            response = conformance.ConformanceResponse.FromString(self._read(struct.unpack("<I", self._read(4))[0]))
            self.failures_in_a_row = 0
            return response
        except (TimeoutError, RuntimeError, OSError) as error:
            self.stop()
            self.failures_in_a_row += 1
            self.timeouts += isinstance(error, TimeoutError)
            raise RuntimeError(f"testee failed: {error}") from None

    def stop(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def close(self):
        """Closes stdin; returns the exit status, or None if the testee had to be killed."""
        if self.process is None:
            self.start()
        self.process.stdin.close()
        try:
            status = self.process.wait(10)
            self.process = None
            return status
        except subprocess.TimeoutExpired:
            self.stop()
            return None


def ask(testee, type_name, input_kind, payload, output):
    """Sends one case; returns the response's (result kind, value), ("runtime_error", why) when
    the testee itself failed. input_kind: protobuf_payload, json_payload or text_payload;
    output: PROTOBUF, JSON or TEXT_FORMAT. The category follows the formats involved."""
    request = conformance.ConformanceRequest(message_type=type_name, requested_output_format=getattr(conformance, output))
    setattr(request, input_kind, payload)
    if input_kind == "json_payload" or output == "JSON":
        request.test_category = conformance.JSON_TEST
    elif input_kind == "text_payload" or output == "TEXT_FORMAT":
        request.test_category = conformance.TEXT_FORMAT_TEST
    else:
        request.test_category = conformance.BINARY_TEST
    try:
        response = testee.call(request)
    except RuntimeError as error:
        return "runtime_error", str(error)
    kind = response.WhichOneof("result")
    return kind, getattr(response, kind) if kind else None


# ---------------------------------------------------------------------------------------------
# Comparison

def canonical(message):
    """Deterministic bytes, with every resolvable Any repacked deterministically first."""
    copy = type(message)()
    copy.CopyFrom(message)
    _repack_anys(copy)
    return copy.SerializeToString(deterministic=True)


def _repack_anys(message):
    if message.DESCRIPTOR.full_name == "google.protobuf.Any":
        try:
            inner = message_factory.GetMessageClass(POOL.FindMessageTypeByName(message.TypeName())).FromString(message.value)
        except KeyError:
            return
        _repack_anys(inner)
        message.value = inner.SerializeToString(deterministic=True)
        return
    for field, value in message.ListFields():
        if field.type not in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
            continue
        if field.message_type.GetOptions().map_entry:
            children = list(value.values()) if field.message_type.fields_by_number[2].message_type else []
        else:
            children = list(value) if field.is_repeated else [value]
        for child in children:
            _repack_anys(child)


def parse_output(cls, kind, value):
    """An output (or input) as a Python message; raises on what Python cannot parse."""
    message = cls()
    if kind == "protobuf_payload":
        message.ParseFromString(value)
    elif kind == "json_payload":
        json_format.Parse(value, message)
    elif kind == "text_payload":
        text_format.Parse(value, message, descriptor_pool=POOL)
    else:
        raise ValueError(f"unexpected {kind}: {str(value)[:200]!r}")
    return message


def difference(expected, got, limit=14):
    """A short unified diff of two messages' texts."""
    texts = [text_format.MessageToString(m, as_utf8=True).splitlines() for m in (expected, got)]
    lines = list(difflib.unified_diff(*texts, "expected", "testee", lineterm="", n=1))
    return "\n".join(lines[:limit]) + ("\n..." if len(lines) > limit else "")


class Group:
    def __init__(self, name, testee):
        self.name, self.testee, self.cases, self.failures, self.notes = name, testee, 0, [], []

    def fail(self, label, why):
        self.failures.append(f"{label}: {why}")


def expect_same(group, label, expected, kind, value, output, exact=None):
    """The testee answered with `output` holding the same message as `expected` (and, given
    `exact`, exactly those bytes). Returns the parsed output, or None after a failure."""
    group.cases += 1
    if kind != OUTPUT_KIND[output]:
        return group.fail(label, f"expected {OUTPUT_KIND[output]}, got {kind}: {str(value)[:300]!r}")
    if exact is not None and value != exact:
        return group.fail(label, f"expected bytes {exact.hex()}, got {value.hex()}")
    try:
        got = parse_output(type(expected), kind, value)
    except Exception as error:
        return group.fail(label, f"Python cannot parse the output ({str(error)[:200]}): {str(value)[:300]!r}")
    if canonical(got) != canonical(expected):
        return group.fail(label, f"output differs:\n{difference(expected, got)}")
    return got


def expect_kind(group, label, kind, value, wanted):
    group.cases += 1
    if kind != wanted:
        group.fail(label, f"expected {wanted}, got {kind}: {str(value)[:200]!r}")


# ---------------------------------------------------------------------------------------------
# Random messages, deterministic from the seed

NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0]  # the NaN text and JSON give back
DOUBLE_EDGES = [0.0, -0.0, 1.0, -1.5, math.inf, -math.inf, NAN, 1e308, 1.7976931348623157e308, 5e-324,
                2.2250738585072014e-308, 1e-300, 0.1, 123456789.125, -9007199254740992.0]
FLOAT_EDGES = [0.0, -0.0, 1.0, -1.5, math.inf, -math.inf, NAN, 3.4028234663852886e38, 1.401298464324817e-45,
               1.1754943508222875e-38, 0.1, 16777216.0, -3.4e-10]
STRING_ALPHABET = ("abcxyzABC019 _-.,:;{}[]<>#/" "\"'\\\n\r\t\x00\x01\x07\x1f\x7f" "\u00e9\u00df\u00c5\u0301\u2028\uffff"
                   "\u4e2d\u6587\U0001F600\U0001F3CE\U0010FFFF")
INT_RANGES = {}
for _kinds, _range in [((FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32), (-2**31, 2**31 - 1)),
                       ((FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64), (-2**63, 2**63 - 1)),
                       ((FD.TYPE_UINT32, FD.TYPE_FIXED32), (0, 2**32 - 1)), ((FD.TYPE_UINT64, FD.TYPE_FIXED64), (0, 2**64 - 1))]:
    INT_RANGES.update(dict.fromkeys(_kinds, _range))
FIELD_MASK_PATHS = ["foo", "bar_baz", "a", "x1", "optional_int32", "nested.field_name", "deep.er.path"]
ANY_TYPES = [P3, "google.protobuf.Duration", "google.protobuf.Timestamp", "google.protobuf.Empty",
             "google.protobuf.FieldMask", "google.protobuf.Struct", "google.protobuf.Int64Value"]
MAX_DEPTH = 3


class Generator:
    """Fills messages by walking their descriptors: edge values, all field kinds, nesting to
    MAX_DEPTH, and well-known types kept to values that have a JSON form."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def integer(self, kind):
        low, high = INT_RANGES[kind]
        pick = self.rng.random()
        if pick < 0.3:
            return self.rng.choice([low, high, 0, 1, max(low, -1), low + 1, high - 1])
        return max(low, min(high, self.rng.randint(-300, 300))) if pick < 0.6 else self.rng.randint(low, high)

    def double(self, single):
        pick = self.rng.random()
        if pick < 0.35:
            return self.rng.choice(FLOAT_EDGES if single else DOUBLE_EDGES)
        if pick < 0.7:
            value = self.rng.uniform(-1e6, 1e6) * 10 ** self.rng.randint(-8, 8)
        else:  # any bit pattern: huge, tiny, subnormal
            value = struct.unpack("<d", struct.pack("<Q", self.rng.getrandbits(64)))[0]
        if single:
            value = struct.unpack("<f", struct.pack("<f", value if abs(value) < 3.4e38 else 0.5))[0]
        return NAN if math.isnan(value) else value

    def text(self):
        return "".join(self.rng.choice(STRING_ALPHABET) for _ in range(self.rng.randint(0, 12)))

    def scalar(self, field):
        kind = field.type
        if kind in INT_RANGES:
            return self.integer(kind)
        if kind in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
            return self.double(kind == FD.TYPE_FLOAT)
        if kind == FD.TYPE_BOOL:
            return self.rng.random() < 0.5
        if kind == FD.TYPE_STRING:
            return self.text()
        if kind == FD.TYPE_BYTES:
            return bytes(range(256)) if self.rng.random() < 0.05 else self.rng.randbytes(self.rng.randint(0, 12))
        enum = field.enum_type
        if enum.full_name == "google.protobuf.NullValue":
            return 0
        if not enum.is_closed and self.rng.random() < 0.1:
            return self.rng.choice([7, 99, -5, 2**31 - 1, -2**31])  # open enums keep unknown numbers
        return self.rng.choice(enum.values).number

    def fill(self, message, depth=0):
        name = message.DESCRIPTOR.full_name
        if name in WELL_KNOWN:
            return WELL_KNOWN[name](self, message, depth)
        fields = list(message.DESCRIPTOR.fields)
        if len(fields) > 8:  # the big test messages: a few fields, now and then many
            pick = self.rng.random()
            count = self.rng.randint(0, 6) if pick < 0.6 else self.rng.randint(6, 20) if pick < 0.9 else self.rng.randint(20, 60)
            fields = sorted(self.rng.sample(fields, min(count, len(fields))), key=lambda f: f.number)
        else:
            fields = [f for f in fields if self.rng.random() < 0.6]
        for field in fields:
            self.fill_field(message, field, depth)
        if name == P2 and self.rng.random() < 0.2:
            message.Extensions[tm2.extension_int32] = self.integer(FD.TYPE_INT32)

    def fill_field(self, message, field, depth):
        is_message = field.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP)
        if is_message and depth >= MAX_DEPTH:
            return
        if not field.is_repeated:
            if is_message:
                getattr(message, field.name).SetInParent()
                self.fill(getattr(message, field.name), depth + 1)
            else:
                setattr(message, field.name, self.scalar(field))
            return
        container = getattr(message, field.name)
        if is_message and field.message_type.GetOptions().map_entry:
            key_field, value_field = field.message_type.fields_by_number[1], field.message_type.fields_by_number[2]
            for _ in range(self.rng.randint(0, 3)):
                key = self.scalar(key_field)
                if value_field.type == FD.TYPE_MESSAGE:
                    self.fill(container[key], depth + 1)
                else:
                    container[key] = self.scalar(value_field)
            return
        for _ in range(self.rng.randint(0, 4)):
            if is_message:
                self.fill(container.add(), depth + 1)
            else:
                container.append(self.scalar(field))

    # Well-known types ---------------------------------------------------------------------
    def timestamp(self, message, depth):
        message.seconds = self.rng.choice([-62135596800, 253402300799, 0, -1, self.rng.randint(-62135596800, 253402300799)])
        message.nanos = self.rng.choice([0, 0, 1000, 5000000, 999999999, self.rng.randrange(10**9)])

    def duration(self, message, depth):
        sign = self.rng.choice([1, -1])
        message.seconds = sign * self.rng.choice([0, 1, 315576000000, self.rng.randint(0, 315576000000)])
        message.nanos = sign * self.rng.choice([0, 1000, 500000000, 999999999, self.rng.randrange(10**9)])

    def field_mask(self, message, depth):
        message.paths.extend(self.rng.choice(FIELD_MASK_PATHS) for _ in range(self.rng.randint(0, 3)))

    def value(self, message, depth):
        choice = self.rng.randrange(6 if depth < MAX_DEPTH + 2 else 4)
        if choice == 0:
            message.null_value = 0
        elif choice == 1:
            number = self.double(False)
            message.number_value = number if math.isfinite(number) else 2.5  # JSON has no such number
        elif choice == 2:
            message.string_value = self.text()
        elif choice == 3:
            message.bool_value = self.rng.random() < 0.5
        elif choice == 4:
            self.struct(message.struct_value, depth + 1)
        else:
            self.list_value(message.list_value, depth + 1)

    def struct(self, message, depth):
        message.SetInParent()
        for _ in range(self.rng.randint(0, 3)):
            self.value(message.fields[self.text()], depth + 1)

    def list_value(self, message, depth):
        message.SetInParent()
        for _ in range(self.rng.randint(0, 3)):
            self.value(message.values.add(), depth + 1)

    def any(self, message, depth):
        name = self.rng.choice(ANY_TYPES)
        if name == P3 and depth >= MAX_DEPTH:
            name = "google.protobuf.Empty"
        inner = message_factory.GetMessageClass(POOL.FindMessageTypeByName(name))()
        self.fill(inner, depth + 1)
        message.Pack(inner, deterministic=True)


WELL_KNOWN = {"google.protobuf.Timestamp": Generator.timestamp, "google.protobuf.Duration": Generator.duration,
              "google.protobuf.FieldMask": Generator.field_mask, "google.protobuf.Value": Generator.value,
              "google.protobuf.Struct": Generator.struct, "google.protobuf.ListValue": Generator.list_value,
              "google.protobuf.Any": Generator.any}


def to_json(message, proto_names=False):
    """json_format's JSON, keys sorted: its map order is upb's hash order, not reproducible."""
    return json_format.MessageToJson(message, preserving_proto_field_name=proto_names, sort_keys=True)


def to_text(message):
    return text_format.MessageToString(message)


class Corpus:
    """COUNT random messages of one schema, with Python's own JSON and text of each (None where
    Python does not get the message back through that format: those cases are skipped). Every
    other JSON text keeps the proto field names, every other text is on one line."""

    def __init__(self, type_name, count, seed):
        generator = Generator(f"{seed}/{type_name}")
        self.messages = []
        for _ in range(count):
            self.messages.append(CLASSES[type_name]())
            generator.fill(self.messages[-1])
        self.json = [self.round_trip(m, to_json(m, proto_names=i % 2 == 1), "json_payload")
                     for i, m in enumerate(self.messages)]
        self.text = [self.round_trip(m, text_format.MessageToString(m, as_one_line=i % 2 == 1), "text_payload")
                     for i, m in enumerate(self.messages)]

    @staticmethod
    def round_trip(message, text, kind):
        try:
            return text if canonical(parse_output(type(message), kind, text)) == canonical(message) else None
        except Exception:
            return None


# ---------------------------------------------------------------------------------------------
# Groups: hand-made cases

def python_parse(type_name, kind, text):
    """Python's reading of an input, or None where Python rejects it."""
    try:
        return parse_output(CLASSES[type_name], kind, text)
    except Exception:
        return None


def input_case(group, type_name, kind, text, reject, exact=False):
    """An input that Python rejects (reject=True: the testee must answer parse_error) or
    accepts (the testee must give the same message in binary, byte for byte if exact)."""
    label = repr(text) if len(text) < 90 else repr(text[:90]) + "..."
    expected = python_parse(type_name, kind, text)
    if (expected is None) != reject:
        group.cases += 1
        return group.fail(label, f"judge: Python {'accepts' if expected is not None else 'rejects'} this input")
    response = ask(group.testee, type_name, kind, text, "PROTOBUF")
    if reject:
        return expect_kind(group, label, *response, "parse_error")
    expect_same(group, label, expected, *response, "PROTOBUF", exact=expected.SerializeToString() if exact else None)


def check_failure_set(group):
    request = conformance.ConformanceRequest(message_type="conformance.FailureSet", protobuf_payload=b"",
                                             requested_output_format=conformance.PROTOBUF)
    group.cases += 1
    try:
        response = group.testee.call(request)
    except RuntimeError as error:
        return group.fail("FailureSet", str(error))
    if response.WhichOneof("result") != "protobuf_payload":
        return group.fail("FailureSet", f"answered {response.WhichOneof('result')}: {response}")
    failures = conformance.FailureSet.FromString(response.protobuf_payload)
    if failures.failure:
        group.fail("FailureSet", f"not empty: {list(failures.failure)[:5]}")


def check_aliased_enum(group):
    for name in ["moo", "MOO", "bAz", "ALIAS_BAZ"]:
        text = '{"optionalAliasedEnum": "%s"}' % name
        if python_parse(P3, "json_payload", text).optional_aliased_enum != 2:
            group.fail(name, "judge: Python does not read 2")
        input_case(group, P3, "json_payload", text, reject=False, exact=True)


def check_oneof_duplicate(group):
    for text in ['{"oneofUint32": 1, "oneofString": "test"}', '{"oneofString": "test", "oneofBool": true}',
                 '{"oneofNestedMessage": {"a": 1}, "oneofUint32": 0}']:
        input_case(group, P3, "json_payload", text, reject=True)
    # A member given as null is absent (json_format's reading), so another member may be set.
    for text in ['{"oneofUint32": null, "oneofString": "test"}', '{"oneofString": "test", "oneofUint32": null}']:
        input_case(group, P3, "json_payload", text, reject=False, exact=True)


def check_timestamp_case(group):
    for stamp, reject in [("0001-01-01t00:00:00Z", True), ("0001-01-01T00:00:00z", True),
                          ("1970-01-01t00:00:00.5z", True), ("0001-01-01T00:00:00Z", False),
                          ("2024-02-29T23:59:59.123456789Z", False)]:
        input_case(group, P3, "json_payload", '{"optionalTimestamp": "%s"}' % stamp, reject, exact=True)


def check_fieldmask(group):
    input_case(group, P3, "json_payload", '{"optionalFieldMask": "foo,bar_bar"}', reject=True)
    input_case(group, P3, "json_payload", '{"optionalFieldMask": "foo,barBar.bazQux"}', reject=False, exact=True)
    for path, printed in [("foo_bar", "fooBar"), ("foo__bar", None), ("fooBar", None), ("foo_3bar", None), ("foo_", None)]:
        message = tm3.TestAllTypesProto3()
        message.optional_field_mask.paths.append(path)
        try:
            python_json = json_format.MessageToJson(message, indent=None)
        except json_format.SerializeToJsonError:
            python_json = None
        if (python_json is None) != (printed is None) or (printed and f'"{printed}"' not in python_json):
            group.fail(path, f"judge: Python prints {python_json}")
        kind, value = ask(group.testee, P3, "protobuf_payload", message.SerializeToString(), "JSON")
        if printed is None:
            expect_kind(group, path, kind, value, "serialize_error")
        elif expect_same(group, path, message, kind, value, "JSON") is not None and f'"{printed}"' not in value:
            group.fail(path, f'expected "{printed}" in {value!r}')


def check_json_extension(group):
    name = "[protobuf_test_messages.proto2.extension_int32]"
    for text in ['{"%s": 1}' % name, '{"recursiveMessage": {"%s": -2}, "optionalInt32": 3}' % name]:
        input_case(group, P2, "json_payload", text, reject=False, exact=True)
        expected = python_parse(P2, "json_payload", text)
        for kind, payload in [("json_payload", text), ("protobuf_payload", expected.SerializeToString())]:
            response = ask(group.testee, P2, kind, payload, "JSON")
            if expect_same(group, f"{kind} {text}", expected, *response, "JSON") is not None and name not in response[1]:
                group.fail(text, f"no {name} in {response[1]!r}")


NORMALIZATION_KEYS = ["\u00e9", "e\u0301", "\u00c5", "\u212b", "A\u030a"]  # two and three spellings


def check_map_normalization(group):
    for type_name in (P3, P2):
        message = CLASSES[type_name]()
        for i, key in enumerate(NORMALIZATION_KEYS):
            message.map_string_string[key] = f"value {i}"
            message.map_string_bytes[key] = bytes([i])
            message.map_string_nested_message[key].a = i
            message.map_string_foreign_message[key].c = i
            message.map_string_nested_enum[key] = i % 3
            message.map_string_foreign_enum[key] = i % 3
        binary = message.SerializeToString(deterministic=True)
        for kind, payload, output in [("protobuf_payload", binary, "PROTOBUF"), ("json_payload", to_json(message), "PROTOBUF"),
                                      ("protobuf_payload", binary, "JSON")]:
            label = f"{type_name.split('.')[1]} {kind} -> {output}"
            got = expect_same(group, label, message, *ask(group.testee, type_name, kind, payload, output), output)
            if got is not None and len(got.map_string_string) != len(NORMALIZATION_KEYS):
                group.fail(label, f"{len(got.map_string_string)} entries, not {len(NORMALIZATION_KEYS)}")


def check_proto2_invalid_utf8(group):
    def field(tag, data):  # tag bytes, then length-delimited data
        return tag + bytes([len(data)]) + data
    # Canonical inputs (fields in number order), so the output must be the very same bytes:
    # optional_string (14), repeated_string (44), recursive_message (27), oneof_string (113),
    # map_string_string keys and values (69; deterministic output sorts keys by their bytes).
    cases = [field(b"\x72", b"\xff\xfeabc"),
             field(b"\xe2\x02", b"\xc3\x28") + field(b"\xe2\x02", b"ok\x80") + field(b"\xe2\x02", b""),
             field(b"\x72", b"\xed\xa0\x80") + field(b"\xda\x01", field(b"\x72", b"\xc0\xafnested"))
             + field(b"\x8a\x07", b"\xf8\x88\x80\x80\x80"),
             # map_string_string (69): two keys that differ only in their invalid bytes.
             field(b"\xaa\x04", field(b"\x0a", b"\xfea") + field(b"\x12", b"x"))
             + field(b"\xaa\x04", field(b"\x0a", b"\xffa") + field(b"\x12", b"y")),
             # ... and values: one invalid, one valid, one invalid.
             field(b"\xaa\x04", field(b"\x0a", b"a") + field(b"\x12", b"\xe0\x80"))
             + field(b"\xaa\x04", field(b"\x0a", b"b") + field(b"\x12", b"fine"))
             + field(b"\xaa\x04", field(b"\x0a", b"c") + field(b"\x12", b"x\xf5\x80\x80\x80"))]
    for payload in cases:
        if tm2.TestAllTypesProto2.FromString(payload).SerializeToString(deterministic=True) != payload:
            group.fail(payload.hex(), "judge: Python does not keep these bytes")
        kind, value = ask(group.testee, P2, "protobuf_payload", payload, "PROTOBUF")
        group.cases += 1
        if kind != "protobuf_payload" or value != payload:
            group.fail(payload.hex(), f"got {kind}: {value.hex() if isinstance(value, bytes) else value!r}")


TEXT_ACCEPTED = [
    'optional_int32: 1  # a comment\noptional_string: "x" # another\n', "\n# only a comment\n", "",
    "optional_string: 'single \"quoted\"'", "optional_string: \"a\" 'b' \"c\"",
    r'optional_string: "\n\t\\\'\"\x41\101\a\b\f\v\r"', 'optional_string: "\u00e9\U0001F600 raw UTF-8"',
    r'optional_string: "\u00e9\U0001F600"  optional_bytes: "\xff\000\u00e9\377"',
    "optional_nested_message { a: 1 }", "optional_nested_message: { a: 1 }", "optional_nested_message < a: 1 >",
    "optional_nested_message: <a: 1>", "recursive_message { recursive_message { optional_int32: 3 } }",
    "repeated_int32: [1, 2, 3]", "repeated_int32: 1 repeated_int32: 2", "repeated_int32: []", "repeated_int32: [1, # c\n 2]",
    "repeated_int32: [1] repeated_int32: 2 repeated_int32: [3, 4]", "repeated_nested_message [{a: 1}, <a: 2>]",
    "repeated_nested_message { a: 1 } repeated_nested_message: { a: 2 }", 'repeated_string: ["a", \'b\' "c"]',
    "optional_nested_enum: BAR", "optional_nested_enum: 2", "optional_nested_enum: -1", "optional_nested_enum: 77",
    "repeated_nested_enum: [FOO, 1, BAZ, NEG]", "optional_aliased_enum: moo", "optional_aliased_enum: bAz",
    "optional_float: inf optional_double: -inf", "optional_double: nan", "optional_float: -Infinity optional_double: NaN",
    "optional_float: 1.5f", "optional_float: 2.5F", "optional_float: .5", "optional_double: 1", "optional_double: -0",
    "optional_double: 1e10 optional_float: -2.5E-3", "optional_double: 1.7976931348623157e308", "optional_double: 5e-324",
    "optional_int32: 0x1F", "optional_int32: 017", "optional_int32: -0x10", "optional_int32: -2147483648",
    "optional_uint64: 0xFFFFFFFFFFFFFFFF", "optional_int64: -9223372036854775808", "optional_uint32: 4294967295",
    "optional_sint64: -0x8000000000000000", "optional_bool: true", "optional_bool: t", "optional_bool: True",
    "optional_bool: 1", "optional_bool: false repeated_bool: [f, False, 0, true]",
    "optional_int32: 5; optional_int64: 6, optional_uint32: 7",
    "optional_any { [type.googleapis.com/protobuf_test_messages.proto3.TestAllTypesProto3] { optional_int32: 5 } }",
    "optional_any: { [type.googleapis.com/google.protobuf.Duration]: < seconds: 3 nanos: 5 > }",
    'optional_any { type_url: "type.googleapis.com/google.protobuf.Empty" value: "" }',
    "repeated_any [{[type.googleapis.com/google.protobuf.Int32Value] {value: 2}}, {}]",
    'map_string_string { key: "a" value: "b" } map_string_string { key: "c" value: "d" }',
    "map_int32_int32 [{key: 1 value: 2}, {key: 3 value: 4}]", 'map_string_nested_message { key: "k" value { a: 1 } }',
    "map_bool_bool { key: true }", "map_int32_int32 { value: 9 }",
    'optional_struct { fields { key: "x" value { list_value { values { number_value: 1 } } } } }',
    "optional_timestamp { seconds: -62135596800 } optional_duration { seconds: -1 nanos: -5 }",
    'oneof_string: "x"', "oneof_null_value: NULL_VALUE",
    # Whitespace and comments may come between the tokens of a [type URL].
    "optional_any { [ type.googleapis.com / google.protobuf.Duration ] { seconds: 1 } }",
    "optional_any { [type.googleapis.com # c\n /google.protobuf. Duration] { seconds: 1 } }",
    # An empty packed message leaves value empty, so value may still be given.
    'optional_any { [type.googleapis.com/google.protobuf.Empty] { } value: "" }',
    # A type_url left empty may come before the expansion.
    'optional_any { type_url: "" [type.googleapis.com/google.protobuf.Empty] { } }',
    "optional_double: 0f", "optional_double: 0.5e1", "optional_float: 0e5", "optional_double: -0.0",
]
TEXT_REJECTED = [
    "nosuch: 1", "optional_nested_message { a: 1", "optional_nested_message { a: 1 } }", "optional_int32: 2147483648",
    "optional_int32: -2147483649", "optional_uint32: -1", "optional_int64: 9223372036854775808", 'optional_int32: "5"',
    "optional_int32: 1.0", "optional_int32: 1 optional_int32: 2", "optional_nested_message {a: 1} optional_nested_message {a: 2}",
    'oneof_uint32: 1 oneof_string: "x"', "optional_nested_enum: BOGUS", "OptionalInt32: 1", "1: 5",
    'optional_string: "abc\n"', 'optional_string: "abc', r'optional_string: "\xff"', "optional_bool: yes",
    "optional_any { [type.googleapis.com/nope.Nope] { } }", "optional_int32 5", "repeated_int32: [1, 2",
    # Octal-looking (leading 0) and hex numbers are not floats: 010 is not 10.
    "optional_double: 010", "optional_float: 00", "optional_double: -07", "optional_double: 08",
    "optional_double: 00.5", "optional_float: 010f", "optional_double: 010e1", "optional_double: 0x10",
    # Bools take only true/True/t/1 and false/False/f/0 (the spec and C++ also take 0x1 and 01).
    "optional_bool: 0x1", "optional_bool: 01", "optional_bool: 00", "optional_bool: 2", "optional_bool: -1",
    "optional_bool: TRUE", "optional_bool: 1.0",
    # The expanded form sets type_url (and value, when the packed message has bytes).
    'optional_any { [type.googleapis.com/google.protobuf.Empty] { } type_url: "type.googleapis.com/google.protobuf.Empty" }',
    'optional_any { [type.googleapis.com/google.protobuf.Empty] { } type_url: "" }',
    r'optional_any { [type.googleapis.com/google.protobuf.Int32Value] { value: 1 } value: "\010\001" }',
    "optional_any { [type.googleapis.com/] { } }", "optional_any { [/google.protobuf.Empty] { } }",
]
TEXT_ACCEPTED_P2 = ["[protobuf_test_messages.proto2.extension_int32]: 7", "Data { group_int32: 1 group_uint32: 2 }",
                    "optional_nested_enum: BAZ", "[ protobuf_test_messages . proto2 # c\n .extension_int32 ]: 7"]
TEXT_REJECTED_P2 = ["[protobuf_test_messages.proto2.nope]: 1", "optional_nested_enum: 77",
                    "[protobuf_test_messages.proto2.extension_int32]: 1 [protobuf_test_messages.proto2.extension_int32]: 2",
                    # Two identifiers need a "." between them: not read as extension_int32.
                    "[protobuf_test_messages.proto2.extension_ int32]: 7",
                    "[protobuf_test_messages.proto2.extension_int32 x]: 7", "[protobuf_test_messages..proto2.extension_int32]: 7",
                    "[.protobuf_test_messages.proto2.extension_int32]: 7", "[]: 7"]


def check_text_features(group):
    for type_name, texts, reject in [(P3, TEXT_ACCEPTED, False), (P3, TEXT_REJECTED, True),
                                     (P2, TEXT_ACCEPTED_P2, False), (P2, TEXT_REJECTED_P2, True)]:
        for text in texts:
            input_case(group, type_name, "text_payload", text, reject)


# ---------------------------------------------------------------------------------------------
# Groups: the seeded corpus

def check_binary_corpus(group, type_name, data):
    for i, message in enumerate(data.messages):
        binary = message.SerializeToString(deterministic=True)
        expect_same(group, f"#{i} binary -> binary", message, *ask(group.testee, type_name, "protobuf_payload", binary, "PROTOBUF"), "PROTOBUF")
        if data.json[i] is not None:
            expect_same(group, f"#{i} binary -> JSON", message, *ask(group.testee, type_name, "protobuf_payload", binary, "JSON"), "JSON")
    group.notes.append(f"JSON output not asked for {data.json.count(None)} messages Python cannot round-trip through JSON")


def check_json_corpus(group, type_name, data):
    for i, message in enumerate(data.messages):
        if data.json[i] is not None:
            expect_same(group, f"#{i} JSON -> binary", message, *ask(group.testee, type_name, "json_payload", data.json[i], "PROTOBUF"), "PROTOBUF")
    group.notes.append(f"{data.json.count(None)} messages skipped: Python cannot round-trip them through JSON")


def check_text_corpus(group, type_name, data):
    identical = printed = 0
    for i, message in enumerate(data.messages):
        if data.text[i] is None:
            continue
        binary = message.SerializeToString(deterministic=True)
        kind, value = ask(group.testee, type_name, "protobuf_payload", binary, "TEXT_FORMAT")
        if expect_same(group, f"#{i} binary -> text", message, kind, value, "TEXT_FORMAT") is not None:
            printed += 1
            identical += value == to_text(message)
        elif kind == "text_payload":
            group.failures[-1] += f"\ntestee's text:\n{value[:600]}\ntext_format's:\n{to_text(message)[:600]}"
        response = ask(group.testee, type_name, "text_payload", data.text[i], "PROTOBUF")
        if expect_same(group, f"#{i} text -> binary", message, *response, "PROTOBUF") is None:
            group.failures[-1] += f"\ninput:\n{data.text[i][:600]}"
    group.notes.append(f"{identical} of {printed} texts byte-identical to text_format.MessageToString's (not required)")
    group.notes.append(f"{data.text.count(None)} messages skipped: Python cannot round-trip them through text")


# ---------------------------------------------------------------------------------------------
# Running

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--testee", required=True, help="the testee executable")
    parser.add_argument("--count", type=int, default=2000, help="random messages per schema")
    parser.add_argument("--seed", default="pitlane-17")
    parser.add_argument("--skip", nargs="*", default=[], action="extend", help="groups to skip (NAME or NAME-*)")
    args = parser.parse_args()
    if not os.access(args.testee, os.X_OK):
        parser.error(f"{args.testee} is not an executable")
    testee = Testee(os.path.abspath(args.testee))
    corpora = {}

    def corpus_check(check, type_name):
        def run(group):
            if type_name not in corpora:
                corpora[type_name] = Corpus(type_name, args.count, args.seed)
            check(group, type_name, corpora[type_name])
        return run

    def clean_exit(group):
        group.cases += 1
        status = testee.close()
        if status != 0:
            group.fail("exit", f"status {status} after stdin closed; stderr: {testee.stderr_tail()!r}")

    groups = [("failure-set", check_failure_set), ("aliased-enum", check_aliased_enum),
              ("oneof-duplicate", check_oneof_duplicate), ("timestamp-case", check_timestamp_case),
              ("fieldmask-invalid", check_fieldmask), ("json-extension", check_json_extension),
              ("map-normalization", check_map_normalization), ("proto2-invalid-utf8", check_proto2_invalid_utf8)]
    groups += [(f"{kind}-corpus-{suffix}", corpus_check(check, type_name))
               for kind, check in [("binary", check_binary_corpus), ("json", check_json_corpus), ("text", check_text_corpus)]
               for suffix, type_name in [("proto3", P3), ("proto2", P2)]]
    groups += [("text-features", check_text_features), ("clean-exit", clean_exit)]

    failed = ran = 0
    for name, check in groups:
        if any(name == s or name.startswith(s + "-") for s in args.skip):
            print(f"skip {name}")
            continue
        group = Group(name, testee)
        try:
            check(group)
        except Exception as error:  # the judge's own trouble is still this group's failure
            group.fail("judge", f"{type(error).__name__}: {error}")
        ran += 1
        if group.failures:
            failed += 1
            print(f"FAIL {name}: {len(group.failures)} of {group.cases} cases differ; first:")
            for failure in group.failures[:3]:
                print("    " + failure.replace("\n", "\n    "))
        else:
            print(f"ok {name} ({group.cases} cases)")
        for note in group.notes:
            print(f"    {note}")
        sys.stdout.flush()
    testee.stop()  # still running when clean-exit was skipped
    print(f"checks: {ran - failed} ok, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
