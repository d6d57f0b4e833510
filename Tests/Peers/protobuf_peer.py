#!/usr/bin/env python3
"""Python protobuf (upb) as the judge of Pitlane's wire format.

  generate --protos DIR --out CORPUS [--count N] [--seed S]
      Compiles every .proto in DIR with protoc, fills N random messages per top-level
      message type (seeded), and writes records (type, decode-as type, deterministic bytes).
      Records whose decode-as type differs ask Pitlane to decode with a schema that lacks
      fields, so the rest must survive as unknown fields.
  verify --protos DIR --corpus CORPUS --results RESULTS
      Reads Pitlane's re-encoding of each record and checks it: byte-identical to Python's
      deterministic encoding, or, for decode-as records, parsing back to the same message.

Record format: three length-prefixed fields (u32 little-endian length, then bytes).
"""
import argparse
import glob
import importlib
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

from google.protobuf.descriptor import FieldDescriptor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROTOC = os.environ.get("PROTOC_PATH", os.path.join(ROOT, ".venv", "bin", "protoc"))

# Which types get a second record decoded with a narrower schema.
NARROWER = {"pitlane.test.proto3.AllTypes": "pitlane.test.proto3.Subset"}


def compile_protos(proto_dir):
    """Generates _pb2 modules into a temporary folder and imports them all."""
    out = tempfile.mkdtemp(prefix="pitlane-pb2-")
    protos = sorted(os.path.basename(p) for p in glob.glob(os.path.join(proto_dir, "*.proto")))
    subprocess.run([PROTOC, f"--python_out={out}", "-I", proto_dir, *protos], check=True)
    sys.path.insert(0, out)
    modules = [importlib.import_module(p[:-len(".proto")] + "_pb2") for p in protos]
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

    def __init__(self, seed):
        self.rng = random.Random(seed)

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
        if extension.containing_type is message.DESCRIPTOR and filler.rng.random() < 0.5:
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate")
    gen.add_argument("--protos", required=True)
    gen.add_argument("--out", required=True)
    gen.add_argument("--count", type=int, default=1000)
    gen.add_argument("--seed", type=int, default=1)
    ver = commands.add_parser("verify")
    ver.add_argument("--protos", required=True)
    ver.add_argument("--corpus", required=True)
    ver.add_argument("--results", required=True)
    args = parser.parse_args()
    generate(args) if args.command == "generate" else verify(args)


if __name__ == "__main__":
    main()
