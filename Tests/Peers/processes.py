"""Child processes for the fault and soak harnesses: each one registered, its output read by
threads (so no read ever blocks the harness), and every one stopped when the harness ends,
however it ends (normal exit, an exception, SIGINT, SIGTERM, SIGHUP)."""
import queue
import atexit
import os
import re
import signal
import subprocess
import sys
import threading
import time

_children = []
_cleanups = []  # more to undo at the end (a network namespace, ...), after the children stop
_lock = threading.Lock()


class Child:
    """A running process whose standard output and error are collected line by line."""

    def __init__(self, args, name=None, env=None, stdin=subprocess.DEVNULL, cwd=None):
        self.name = name or os.path.basename(args[0])
        self.args = [str(arg) for arg in args]
        self.process = subprocess.Popen(
            self.args, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
            env=None if env is None else {**os.environ, **env}, start_new_session=True)
        self.pid = self.process.pid
        self.stdout, self.stderr = [], []
        self._changed = threading.Condition()
        self._open_pipes = 2  # standard output and error, until their ends are read
        for pipe, lines in ((self.process.stdout, self.stdout), (self.process.stderr, self.stderr)):
            threading.Thread(target=self._pump, args=(pipe, lines), daemon=True).start()
        with _lock:
            _children.append(self)

    def _pump(self, pipe, lines):
        for raw in pipe:
            with self._changed:
                lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._open_pipes -= 1
            self._changed.notify_all()

    def wait_for(self, predicate, timeout, stream="stdout"):
        """The first line of `stream` (from the start) satisfying `predicate`, waiting up to
        `timeout` seconds; None if there is none by then or the process ended without one."""
        lines = self.stdout if stream == "stdout" else self.stderr
        end = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in lines:
                    if predicate(line):
                        return line
                left = end - time.monotonic()
                if left <= 0 or self._open_pipes == 0:
                    return None
                self._changed.wait(min(left, 0.2))

    def count(self, predicate, stream="stdout"):
        with self._changed:
            return sum(1 for line in (self.stdout if stream == "stdout" else self.stderr) if predicate(line))

    def wait_for_count(self, predicate, n, timeout, stream="stdout"):
        """Waits until `n` lines satisfy `predicate`; returns how many do by then."""
        end = time.monotonic() + timeout
        while (seen := self.count(predicate, stream)) < n and time.monotonic() < end and self.alive():
            time.sleep(0.1)
        return self.count(predicate, stream)

    def alive(self):
        return self.process.poll() is None

    def wait(self, timeout):
        """The exit status, or None if it is still running after `timeout` seconds. Once it
        has exited, what it printed is read to the end (up to 2 s more) before this returns:
        the pipes' readers may lag the exit, and callers look at the last lines."""
        try:
            status = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        end = time.monotonic() + 2
        with self._changed:
            while self._open_pipes > 0 and (left := end - time.monotonic()) > 0:
                self._changed.wait(left)
        return status

    def send_signal(self, signum):
        if self.alive():
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def stop(self, signum=signal.SIGTERM, grace=5.0):
        """Sends `signum`, then SIGKILL after `grace` seconds; returns the exit status."""
        self.send_signal(signum)
        status = self.wait(grace)
        if status is None:
            self.send_signal(signal.SIGKILL)
            status = self.wait(5)
        return status

    def tail(self, n=5):
        """The last lines of both streams, for failure messages."""
        with self._changed:
            return " | ".join((self.stdout[-n:] + self.stderr[-n:]))


def start_server(args, name=None, timeout=30, env=None):
    """Starts a server that prints "listening PORT" or "listening on ...:PORT" first; returns
    (child, port). Raises RuntimeError if it does not within `timeout` seconds."""
    child = Child(args, name=name, env=env)
    line = child.wait_for(lambda text: text.startswith("listening"), timeout)
    if line is None:
        child.stop(signal.SIGKILL)
        raise RuntimeError(f"{child.name} did not start: {child.tail()}")
    match = re.search(r"(\d+)\s*$", line)
    return child, int(match.group(1)) if match else 0


def mark():
    """How many children have been started; `stop_since(mark)` stops those started after."""
    with _lock:
        return len(_children)


def stop_since(index, signum=signal.SIGTERM, grace=3.0):
    with _lock:
        children = _children[index:]
    for child in reversed(children):
        child.stop(signum, grace)


def on_cleanup(function):
    """Runs `function` at the end, however the harness ends, after every child has stopped."""
    _cleanups.append(function)


def stop_all():
    """Stops every child, then runs the cleanups (each once)."""
    stop_since(0, grace=2.0)
    while _cleanups:
        try:
            _cleanups.pop()()
        except Exception as error:  # the others still run
            print(f"cleanup failed: {error}", file=sys.stderr, flush=True)


def install_cleanup():
    """Stops every child at exit and on SIGINT, SIGTERM and SIGHUP (which then exit 130/143)."""
    atexit.register(stop_all)

    def on_signal(signum, _frame):
        print(f"{os.path.basename(sys.argv[0])}: signal {signum}, stopping everything", file=sys.stderr, flush=True)
        stop_all()
        os._exit(128 + signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)


def proc_stats(pid):
    """A process's resident memory (KiB), open descriptors and threads; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        return {"rss_kib": int(fields["VmRSS"].split()[0]), "fds": len(os.listdir(f"/proc/{pid}/fd")),
                "threads": int(fields["Threads"])}
    except (FileNotFoundError, ProcessLookupError, KeyError):
        return None


def cpu_seconds(pid):
    """User plus system CPU time the process has used, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Requests:
    """A grpcio request stream fed from another thread, starting with `first`; `close()`
    half-closes it."""

    def __init__(self, *first):
        self.queue = queue.Queue()
        for message in first:
            self.queue.put(message)

    def put(self, message):
        self.queue.put(message)

    def close(self):
        self.queue.put(None)

    def __iter__(self):
        while (message := self.queue.get()) is not None:
            yield message


def run_in_thread(function, limit):
    """Runs `function` in a daemon thread for at most `limit` seconds. Returns (finished,
    failure, seconds): whether it ended in time, the first line of the exception it raised (or
    None), and how long it ran. A function still running is left behind: the caller decides
    what to stop."""
    failure = []

    def body():
        try:
            function()
        except Exception as error:  # a failure is a result
            text = str(error).strip()
            failure.append(f"{type(error).__name__}: {text.splitlines()[0] if text else ''}")

    thread = threading.Thread(target=body, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(limit)
    return not thread.is_alive(), (failure[0] if failure else None), time.monotonic() - started


def start_time_limit(seconds):
    """Bounds the whole run: after `seconds` it prints a failure, stops every process this peer
    started and exits 1, whatever is still waiting."""
    from peer_checks import exit_now  # peer_checks does not import this module back

    def expire():
        time.sleep(seconds)
        print(f"FAIL global time limit ({seconds} s)", flush=True)
        stop_all()
        exit_now(1)

    threading.Thread(target=expire, daemon=True).start()

