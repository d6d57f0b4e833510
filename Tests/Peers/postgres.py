"""A throwaway PostgreSQL for the peers: scripts/postgres with --fast in a short temporary
directory (/tmp/pg-XXXXXX: its Unix socket path must stay under 107 bytes), stopped and removed
when the peer ends, however it ends (processes.on_cleanup).

    with Postgres() as database:          # or database = Postgres(); ...; database.close()
        url = database.url                # postgresql:///pitlane?host=/tmp/pg-...&port=5432&user=pitlane
        database.kill()                   # a crash: the postmaster and every backend, SIGKILL
        database.start()                  # again, same data, same url
        database.stop()                   # fast shutdown: clients disconnected
"""
import os
import shutil
import subprocess
import tempfile

import processes

HERE = os.path.dirname(os.path.realpath(__file__))
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "postgres")


class Postgres:
    def __init__(self, directory=None, port=None, fast=True, start=True, keep=False):
        """`keep`: leave the directory (data, postgres.log) behind at the end."""
        self.directory = directory or tempfile.mkdtemp(prefix="pg-", dir="/tmp")
        self._made_directory = directory is None and not keep
        self.port = port
        self.fast = fast
        self.url = None
        self._closed = False
        processes.on_cleanup(self.close)
        if start:
            self.start()

    def _run(self, *args, timeout=90):
        result = subprocess.run([SCRIPT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"scripts/postgres {' '.join(args)}: exit {result.returncode}: "
                               f"{result.stderr.strip() or result.stdout.strip()}")
        return result.stdout.strip()

    def start(self):
        """Starts the cluster (creating it the first time); returns its URL."""
        args = ["start", self.directory]
        if self.port is not None:
            args.append(str(self.port))
        if self.fast:
            args.append("--fast")
        self.url = self._run(*args).splitlines()[-1]
        return self.url

    def stop(self):
        self._run("stop", self.directory)

    def kill(self):
        self._run("kill", self.directory)

    def running(self):
        return subprocess.run([SCRIPT, "status", self.directory], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0

    def log_tail(self, lines=10):
        try:
            with open(os.path.join(self.directory, "postgres.log"), errors="replace") as log:
                return log.readlines()[-lines:]
        except OSError:
            return []

    def close(self):
        """Stops the cluster (killing it if it will not stop) and removes its directory."""
        if self._closed:
            return
        self._closed = True
        try:
            self._run("stop", self.directory, timeout=30)
        except Exception:
            try:
                self._run("kill", self.directory, timeout=30)
            except Exception:
                pass
        if self._made_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()
