#!/usr/bin/env python3
"""Python protobuf (upb) as the judge of Pitlane's wire format.

  generate --protos DIR --out CORPUS [--count N] [--seed S]
      Compiles every .proto in DIR with protoc, fills N random messages per top-level
      message type (seeded), and writes records (type, decode-as type, deterministic bytes).
      Records whose decode-as type differs ask Pitlane to decode with a schema that lacks
      fields, so the rest must survive as unknown fields.
  generate-json --protos DIR --out CORPUS [--count N] [--seed S]
      Records (type, JSON text from json_format, deterministic binary) of random messages
      that have a JSON form (no extensions, Any holding known types, finite Values).
  verify-json --protos DIR --corpus CORPUS --results RESULTS
      Pitlane returns (type, its JSON of the message it parsed, its binary of that message);
      both must parse in Python to the original message.
  verify --protos DIR --corpus CORPUS --results RESULTS
      Reads Pitlane's re-encoding of each record and checks it: byte-identical to Python's
      deterministic encoding, or, for decode-as records, parsing back to the same message.
  generate-delimited --protos DIR --type NAME --out STREAM --records RECORDS [--count N] [--seed S]
      Writes an empty message, N random messages of type NAME and one over 16 KiB as one
      length-delimited stream (_VarintBytes(len(b)) + b each, as Python users write them),
      and each message's bytes as a record.
  verify-delimited --protos DIR --records RECORDS --stream STREAM
      Splits Pitlane's delimited stream with protobuf's own varint decoder; each message must
      re-encode to its record's bytes, and nothing may follow the last.

Record format: three length-prefixed fields (u32 little-endian length, then bytes).
"""
import argparse
import atexit
import glob
import importlib
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROTOC = os.environ.get("PROTOC_PATH", os.path.join(ROOT, ".venv", "bin", "protoc"))

# Which types get a second record decoded with a narrower schema.
NARROWER = {"pitlane.test.proto3.AllTypes": "pitlane.test.proto3.Subset"}


def compile_protos(proto_dir):
    """Generates _pb2 modules into a temporary folder and imports them all."""
    out = tempfile.mkdtemp(prefix="pitlane-pb2-")
    atexit.register(shutil.rmtree, out, True)
    protos = sorted(os.path.basename(p) for p in glob.glob(os.path.join(proto_dir, "*.proto")))
    subprocess.run([PROTOC, f"--python_out={out}", "-I", proto_dir, *protos], check=True)
    sys.path.insert(0, out)
    modules = [importlib.import_module(p[:-len(".proto")].replace("-", "_") + "_pb2") for p in protos]
    classes = {}
    for module in modules:
        for name in module.DESCRIPTOR.message_types_by_name:
            cls = getattr(module, name)
            classes[cls.DESCRIPTOR.full_name] = cls
    extensions = [ext for m in modules for ext in m.DESCRIPTOR.extensions_by_name.values()]
    return classes, extensions


class Filler:
    """Random but valid field values, reproducible from the seed."""

    INT_RANGES = {
        FieldDescriptor.TYPE_INT32: (-2**31, 2**31 - 1),
        FieldDescriptor.TYPE_SINT32: (-2**31, 2**31 - 1),
        FieldDescriptor.TYPE_SFIXED32: (-2**31, 2**31 - 1),
        FieldDescriptor.TYPE_INT64: (-2**63, 2**63 - 1),
        FieldDescriptor.TYPE_SINT64: (-2**63, 2**63 - 1),
        FieldDescriptor.TYPE_SFIXED64: (-2**63, 2**63 - 1),
        FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
        FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
        FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
        FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
    }
    SPECIAL_FLOATS = [0.0, -0.0, 1.5, -2.25, math.inf, -math.inf, math.nan, 1e-300, 3.4e38]

    def __init__(self, seed, json_safe=False):
        self.rng = random.Random(seed)
        # JSON cannot carry everything binary can: keep well-known types within their forms.
        self.json_safe = json_safe

    def integer(self, field_type):
        low, high = self.INT_RANGES[field_type]
        pick = self.rng.random()
        if pick < 0.4:
            return max(low, min(high, self.rng.randint(-3, 300)))
        if pick < 0.5:
            return self.rng.choice([low, high, 0])
        return self.rng.randint(low, high)

    def text(self):
        alphabet = "abcXYZ 019_-\u00e9\u00df\u4e2d\u6587\U0001F3CE\u0000\n\""
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randint(0, 12)))

    def scalar(self, field):
        kind = field.type
        if kind in self.INT_RANGES:
            return self.integer(kind)
        if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            if self.rng.random() < 0.3:
                return self.rng.choice(self.SPECIAL_FLOATS)
            value = self.rng.uniform(-1e6, 1e6)
            return struct.unpack("<f", struct.pack("<f", value))[0] if kind == FieldDescriptor.TYPE_FLOAT else value
        if kind == FieldDescriptor.TYPE_BOOL:
            return self.rng.random() < 0.5
        if kind == FieldDescriptor.TYPE_STRING:
            return self.text()
        if kind == FieldDescriptor.TYPE_BYTES:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randint(0, 12)))
        if kind == FieldDescriptor.TYPE_ENUM:
            numbers = [v.number for v in field.enum_type.values]
            if not field.enum_type.is_closed and self.rng.random() < 0.1:
                return self.rng.choice([7, 99, -5, 2**31 - 1])  # open enums keep unknown numbers
            return self.rng.choice(numbers)
        raise ValueError(f"no scalar for {field.full_name}")

    def fill(self, message, depth=0):
        descriptor = message.DESCRIPTOR
        if self.json_safe and descriptor.full_name in WELL_KNOWN_FILLERS:
            WELL_KNOWN_FILLERS[descriptor.full_name](self, message, depth)
            return
        chosen_oneofs = {}
        for oneof in descriptor.oneofs:
            if oneof.fields and self.rng.random() < 0.7:
                chosen_oneofs[oneof.name] = self.rng.choice(oneof.fields).name
        for field in descriptor.fields:
            oneof = field.containing_oneof
            if oneof is not None and oneof.fields and not _is_synthetic(oneof):
                if chosen_oneofs.get(oneof.name) != field.name:
                    continue
            elif field.is_required:
                pass
            elif self.rng.random() < 0.4:
                continue
            self.fill_field(message, field, depth)

    def fill_field(self, message, field, depth):
        is_message = field.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP)
        if field.is_repeated:
            container = getattr(message, field.name)
            if is_message and field.message_type.GetOptions().map_entry:
                key_field, value_field = field.message_type.fields_by_number[1], field.message_type.fields_by_number[2]
                for _ in range(self.rng.randint(0, 3)):
                    key = self.scalar(key_field)
                    if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                        if depth < 3:
                            self.fill(container[key], depth + 1)
                    else:
                        container[key] = self.scalar(value_field)
                return
            for _ in range(self.rng.randint(0, 4)):
                if is_message:
                    if depth < 3:
                        self.fill(container.add(), depth + 1)
                else:
                    container.append(self.scalar(field))
            return
        if is_message:
            if depth < 3 or _must_fill(field.message_type):
                child = getattr(message, field.name)
                child.SetInParent()
                self.fill(child, depth + 1)
            return
        setattr(message, field.name, self.scalar(field))


def fill_timestamp(filler, message, depth):
    message.seconds = filler.rng.randint(-62135596800, 253402300799)
    message.nanos = filler.rng.choice([0, 0, 5000000, 123456000, 999999999, filler.rng.randrange(10**9)])


def fill_duration(filler, message, depth):
    sign = filler.rng.choice([1, -1])
    message.seconds = sign * filler.rng.randint(0, 315576000000)
    message.nanos = sign * filler.rng.choice([0, 500000000, filler.rng.randrange(10**9)])


def fill_field_mask(filler, message, depth):
    words = ["race", "start_time", "laps", "kart_number", "a", "gap_to_leader"]
    for _ in range(filler.rng.randint(0, 3)):
        message.paths.append(".".join(filler.rng.choice(words) for _ in range(filler.rng.randint(1, 2))))


def fill_value(filler, message, depth):
    choice = filler.rng.randrange(6 if depth < 3 else 4)
    if choice == 0:
        message.null_value = 0
    elif choice == 1:
        message.number_value = filler.rng.choice([0.0, 1.5, -3.0, 1e10, filler.rng.uniform(-1e6, 1e6)])
    elif choice == 2:
        message.string_value = filler.text()
    elif choice == 3:
        message.bool_value = filler.rng.random() < 0.5
    elif choice == 4:
        message.struct_value.SetInParent()  # an empty Struct is still a value
        fill_struct(filler, message.struct_value, depth + 1)
    else:
        message.list_value.SetInParent()
        for _ in range(filler.rng.randint(0, 3)):
            fill_value(filler, message.list_value.values.add(), depth + 1)


def fill_struct(filler, message, depth):
    for _ in range(filler.rng.randint(0, 3)):
        fill_value(filler, message.fields[filler.text()], depth + 1)


def fill_any(filler, message, depth):
    from google.protobuf import duration_pb2, timestamp_pb2, struct_pb2
    inner = filler.rng.choice([duration_pb2.Duration, timestamp_pb2.Timestamp, struct_pb2.Value])()
    filler.fill(inner, depth + 1)
    message.Pack(inner)


WELL_KNOWN_FILLERS = {
    "google.protobuf.Timestamp": fill_timestamp,
    "google.protobuf.Duration": fill_duration,
    "google.protobuf.FieldMask": fill_field_mask,
    "google.protobuf.Value": fill_value,
    "google.protobuf.Struct": fill_struct,
    "google.protobuf.Any": fill_any,
}


def has_multi_entry_map(message):
    """Whether any map in the message tree holds more than one entry."""
    for field, value in message.ListFields():
        if field.type not in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
            continue
        if field.message_type.GetOptions().map_entry:
            if len(value) > 1:
                return True
            values = value.values() if field.message_type.fields_by_number[2].message_type else []
        else:
            values = value if field.is_repeated else [value]
        if any(has_multi_entry_map(child) for child in values):
            return True
    return False


def _is_synthetic(oneof):
    return getattr(oneof, "is_synthetic", False) or (
        len(oneof.fields) == 1 and oneof.name == "_" + oneof.fields[0].name)


def _must_fill(descriptor):
    return any(f.is_required for f in descriptor.fields)


def fill_extensions(filler, message, extensions):
    for extension in extensions:
        if extension.containing_type is not message.DESCRIPTOR or filler.rng.random() >= 0.5:
            continue
        if extension.message_type is not None:
            filler.fill(message.Extensions[extension], depth=2)
        elif extension.is_repeated:
            message.Extensions[extension].extend(filler.scalar(extension) for _ in range(filler.rng.randint(0, 3)))
        else:
            message.Extensions[extension] = filler.scalar(extension)


def read_records(path):
    with open(path, "rb") as handle:
        data = handle.read()
    offset, records = 0, []
    while offset < len(data):
        fields = []
        for _ in range(3):
            (length,) = struct.unpack_from("<I", data, offset)
            fields.append(data[offset + 4:offset + 4 + length])
            offset += 4 + length
        records.append((fields[0].decode(), fields[1].decode(), fields[2]))
    return records


def write_records(path, records):
    with open(path, "wb") as handle:
        for record in records:
            for field in record:
                raw = field.encode() if isinstance(field, str) else field
                handle.write(struct.pack("<I", len(raw)) + raw)


def generate(args):
    classes, extensions = compile_protos(args.protos)
    filler = Filler(args.seed)
    records = []
    for name in sorted(classes):
        cls = classes[name]
        for _ in range(args.count):
            message = cls()
            filler.fill(message)
            fill_extensions(filler, message, extensions)
            payload = message.SerializeToString(deterministic=True)
            records.append((name, name, payload))
            if name in NARROWER:
                records.append((name, NARROWER[name], payload))
    write_records(args.out, records)
    print(f"generated {len(records)} records for {len(classes)} message types")


def generate_json(args):
    classes, _ = compile_protos(args.protos)
    filler = Filler(args.seed, json_safe=True)
    records = []
    for name in sorted(classes):
        for _ in range(args.count):
            message = classes[name]()
            filler.fill(message)
            text = json_format.MessageToJson(
                message, preserving_proto_field_name=filler.rng.random() < 0.3,
                indent=filler.rng.choice([None, 2]), ensure_ascii=filler.rng.random() < 0.5)
            records.append((name, text, message.SerializeToString(deterministic=True)))
    write_records(args.out, records)
    print(f"generated {len(records)} JSON records for {len(classes)} message types")


def verify_json(args):
    classes, _ = compile_protos(args.protos)
    corpus = read_records(args.corpus)
    results = read_records(args.results)
    if len(corpus) != len(results):
        sys.exit(f"FAIL: {len(corpus)} records sent, {len(results)} returned")
    failures = []
    for index, ((name, text, expected), (_, swift_json, swift_binary)) in enumerate(zip(corpus, results)):
        original = classes[name]()
        original.ParseFromString(expected)
        expected = canonical_bytes(original)
        from_binary = classes[name]()
        from_binary.ParseFromString(swift_binary)
        problems = []
        if canonical_bytes(from_binary) != expected:
            problems.append(f"parsing Python's JSON gave another message (fields {differing_fields(original, from_binary)})")
        try:
            from_json = json_format.Parse(swift_json, classes[name]())
            if canonical_bytes(from_json) != expected:
                problems.append("Pitlane's JSON parses to another message")
        except json_format.ParseError as error:
            problems.append(f"Pitlane's JSON does not parse: {error}")
        if problems:
            failures.append(f"record {index} ({name}): {'; '.join(problems)}\n  python  {text}\n  pitlane {swift_json}")
    for failure in failures[:5]:
        print(failure)
    print(f"records: {len(corpus) - len(failures)} matched, {len(failures)} differed")
    sys.exit(1 if failures else 0)


def canonical_bytes(message):
    """Deterministic bytes with every Any's payload re-encoded deterministically too: an Any
    holds opaque bytes, whose map order depends on who packed them."""
    from google.protobuf import any_pb2, symbol_database
    def visit(node):
        if isinstance(node, any_pb2.Any) and node.type_url:
            inner = symbol_database.Default().GetSymbol(node.TypeName())()
            node.Unpack(inner)
            visit(inner)
            node.value = inner.SerializeToString(deterministic=True)
            return
        for field, value in node.ListFields():
            if field.type not in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
                continue
            if field.message_type.GetOptions().map_entry:
                children = value.values() if field.message_type.fields_by_number[2].message_type else []
            else:
                children = value if field.is_repeated else [value]
            for child in children:
                visit(child)
    copy = type(message)()
    copy.CopyFrom(message)
    visit(copy)
    return copy.SerializeToString(deterministic=True)


def differing_fields(left, right):
    """Names of the top-level fields whose encodings differ, for failure messages."""
    names = []
    for field in left.DESCRIPTOR.fields:
        def encoded(message):
            copy = type(message)()
            if field.is_repeated:
                getattr(copy, field.name).MergeFrom(getattr(message, field.name))
            elif message.HasField(field.name) if field.has_presence else True:
                if field.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
                    getattr(copy, field.name).CopyFrom(getattr(message, field.name))
                else:
                    setattr(copy, field.name, getattr(message, field.name))
            return copy.SerializeToString(deterministic=True)
        if encoded(left) != encoded(right):
            names.append(field.name)
    return ", ".join(names)


def verify(args):
    classes, _ = compile_protos(args.protos)
    corpus = read_records(args.corpus)
    results = read_records(args.results)
    if len(corpus) != len(results):
        sys.exit(f"FAIL: {len(corpus)} records sent, {len(results)} returned")
    failures, normalized = [], 0
    for index, ((name, decode_as, expected), (_, _, actual)) in enumerate(zip(corpus, results)):
        original = classes[name]()
        original.ParseFromString(expected)
        if name == decode_as and not has_multi_entry_map(original):
            ok = actual == expected
        else:
            # Pitlane writes map entries in key order, as the C++ runtime does; upb's
            # deterministic order differs, so such records (and narrowed ones) are compared
            # after Python parses Pitlane's bytes.
            normalized += 1
            reparsed = classes[name]()
            reparsed.ParseFromString(actual)
            ok = reparsed.SerializeToString(deterministic=True) == expected
        if not ok:
            failures.append(f"record {index} ({name} as {decode_as}):\n  python  {expected.hex()}\n  pitlane {actual.hex()}")
    for failure in failures[:5]:
        print(failure)
    print(f"{len(corpus) - normalized} records compared byte for byte, {normalized} after re-parsing")
    print(f"records: {len(corpus) - len(failures)} matched, {len(failures)} differed")
    sys.exit(1 if failures else 0)


def generate_delimited(args):
    from google.protobuf.internal.encoder import _VarintBytes
    classes, _ = compile_protos(args.protos)
    filler = Filler(args.seed)
    payloads = [b""]  # an empty message: a size of zero and no body
    for _ in range(args.count):
        message = classes[args.type]()
        filler.fill(message)
        payloads.append(message.SerializeToString(deterministic=True))
    big = classes[args.type]()  # over 16 KiB, for a three-byte size
    while big.ByteSize() < 20000:
        part = classes[args.type]()
        filler.fill(part)
        big.MergeFrom(part)
    payloads.append(big.SerializeToString(deterministic=True))
    with open(args.out, "wb") as handle:
        for payload in payloads:
            handle.write(_VarintBytes(len(payload)) + payload)
    write_records(args.records, [(args.type, args.type, payload) for payload in payloads])
    print(f"wrote {len(payloads)} delimited messages, the largest {max(map(len, payloads))} bytes")


def verify_delimited(args):
    from google.protobuf.internal.decoder import _DecodeVarint
    classes, _ = compile_protos(args.protos)
    records = read_records(args.records)
    with open(args.stream, "rb") as handle:
        data = handle.read()
    offset, failures = 0, []
    for index, (name, _, expected) in enumerate(records):
        if offset >= len(data):
            failures.append(f"message {index}: the stream ends before it")
            continue
        length, offset = _DecodeVarint(data, offset)
        body = data[offset:offset + length]
        offset += length
        if len(body) != length:
            failures.append(f"message {index}: size {length}, but only {len(body)} bytes follow")
            continue
        # Pitlane's map order differs from upb's deterministic one: compare after parsing.
        message = classes[name]()
        message.ParseFromString(body)
        if message.SerializeToString(deterministic=True) != expected:
            failures.append(f"message {index}:\n  python  {expected.hex()}\n  pitlane {body.hex()}")
    for failure in failures[:5]:
        print(failure)
    print(f"messages: {len(records) - len(failures)} matched, {len(failures)} differed")
    if offset < len(data):
        print(f"FAIL: {len(data) - offset} bytes follow the last message")
    sys.exit(1 if failures or offset < len(data) else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate")
    gen.add_argument("--protos", required=True)
    gen.add_argument("--out", required=True)
    gen.add_argument("--count", type=int, default=1000)
    gen.add_argument("--seed", type=int, default=1)
    gen_json = commands.add_parser("generate-json")
    gen_json.add_argument("--protos", required=True)
    gen_json.add_argument("--out", required=True)
    gen_json.add_argument("--count", type=int, default=300)
    gen_json.add_argument("--seed", type=int, default=1)
    gen_delimited = commands.add_parser("generate-delimited")
    gen_delimited.add_argument("--protos", required=True)
    gen_delimited.add_argument("--type", required=True)
    gen_delimited.add_argument("--out", required=True)
    gen_delimited.add_argument("--records", required=True)
    gen_delimited.add_argument("--count", type=int, default=200)
    gen_delimited.add_argument("--seed", type=int, default=1)
    ver_delimited = commands.add_parser("verify-delimited")
    ver_delimited.add_argument("--protos", required=True)
    ver_delimited.add_argument("--records", required=True)
    ver_delimited.add_argument("--stream", required=True)
    for command in ("verify", "verify-json"):
        ver = commands.add_parser(command)
        ver.add_argument("--protos", required=True)
        ver.add_argument("--corpus", required=True)
        ver.add_argument("--results", required=True)
    args = parser.parse_args()
    handlers = {"generate": generate, "generate-json": generate_json, "verify": verify, "verify-json": verify_json,
                "generate-delimited": generate_delimited, "verify-delimited": verify_delimited}
    handlers[args.command](args)


if __name__ == "__main__":
    main()
