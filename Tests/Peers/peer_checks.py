"""What the Python peers share: stubs generated at run time from the project's own .proto
files, named checks that record a failure instead of stopping, and the closing report
("ok NAME" / "FAIL NAME: why" lines, then "checks: N ok, M failed"), and a way out that
cannot hang."""
import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback


def generate_stubs(proto_dir, *protos):
    """Runs grpc_tools' protoc on `protos` (paths below `proto_dir`) into a new directory on
    the import path; returns that directory."""
    # Imported modules stay loaded; the files are not needed once the peer exits.
    out = temporary_directory("pitlane-stubs-")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"--python_out={out}", f"--grpc_python_out={out}",
                    "-I", proto_dir, *protos], check=True)
    sys.path.insert(0, out)
    return out


def load(proto_dir, name):
    """The messages and service modules generated from one .proto file."""
    generate_stubs(proto_dir, name)
    module = name.rsplit("/", 1)[-1].removesuffix(".proto")
    return importlib.import_module(f"{module}_pb2"), importlib.import_module(f"{module}_pb2_grpc")


class Checks:
    def __init__(self):
        self.results = []

    def check(self, name, function):
        """Runs one check; an exception is its failure, not the peer's crash."""
        try:
            function()
            self.results.append((name, None))
        except Exception as error:  # a failed check is a result
            self.results.append((name, f"{type(error).__name__}: {error}"))

    def report_and_exit(self):
        failed = 0
        for name, why in self.results:
            print(f"ok {name}" if why is None else f"FAIL {name}: {why}")
            failed += why is not None
        print(f"checks: {len(self.results) - failed} ok, {failed} failed")
        exit_now(1 if failed else 0)


_temporary_directories = []


def temporary_directory(prefix):
    """A new directory under the system's temporary one, removed when the peer exits: at the
    interpreter's exit, and by `exit_now`, which skips the interpreter's exit handlers."""
    path = tempfile.mkdtemp(prefix=prefix)
    _temporary_directories.append(path)
    atexit.register(shutil.rmtree, path, True)
    return path


def exit_now(status):
    """Ends the process with `status` once what it printed is flushed, without the
    interpreter's shutdown, which can hang a grpcio client for good.

    sys.exit finalizes: daemon threads die as soon as they next take the GIL, and then the
    garbage collector runs the __del__ of the calls left over, which takes each call's lock
    (grpc/_channel.py, `with self._state.condition`). A grpcio thread of a streaming call (its
    request-iterator thread, or the channel's event thread) that was waiting for that lock
    when the main thread let go of it gets the lock and dies holding it, and __del__ waits for
    it forever: the process idles with its connection open, after its report."""
    sys.stdout.flush()
    sys.stderr.flush()
    for path in _temporary_directories:
        shutil.rmtree(path, True)
    os._exit(status)


def expect(condition, why):
    if not condition:
        raise AssertionError(why)


class Report:
    """Named results, each printed as it comes with its observations indented below it."""

    def __init__(self, only):
        self.results = []
        self.only = only

    def add(self, name, why, observations=()):
        self.results.append((name, why))
        print(f"ok {name}" if why is None else f"FAIL {name}: {why}", flush=True)
        for line in observations:
            print(f"    {line}", flush=True)

    def wanted(self, letter):
        return self.only is None or letter in self.only

    def check(self, name, function, limit=90):
        """Runs `function(notes)` in a thread for at most `limit` seconds; an exception is its
        failure, as is running out of time (the thread is left behind: the peer exits without
        waiting for it)."""
        notes, outcome = [], {}

        def run():
            try:
                function(notes)
            except AssertionError as error:  # a failed check is a result
                outcome["why"] = str(error) or "AssertionError"
            except Exception as error:  # so is anything else, with where it happened
                where = traceback.extract_tb(error.__traceback__)[-1]
                outcome["why"] = f"{type(error).__name__}: {error} (at {os.path.basename(where.filename)}:{where.lineno})"

        started = time.monotonic()
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(limit)
        why = f"no result within {limit} s" if worker.is_alive() else outcome.get("why")
        if time.monotonic() - started > 2:
            notes.append(f"({time.monotonic() - started:.1f} s)")
        self.add(name, why, notes)

    def finish(self):
        failed = sum(why is not None for _, why in self.results)
        print(f"checks: {len(self.results) - failed} ok, {failed} failed", flush=True)
        return 1 if failed else 0


def describe_delivery(published, received, verb="received"):
    """What went wrong between the updates published and those a client `verb` (applied,
    printed): duplicates, missing ones, ones never published, and whether the rest kept order."""
    duplicates = len(received) - len(set(received))
    missing = [update for update in published if update not in received]
    foreign = [update for update in received if update not in published]
    shown = [update for update in received if update in published]
    in_order = shown == sorted(set(shown), key=published.index)
    return (f"{len(published)} published, {len(received)} {verb}: {duplicates} duplicates, {len(missing)} missing "
            f"(first: {missing[:1]}), {len(foreign)} never published, {'in' if in_order else 'out of'} order")

