"""What the Python peers share: named checks that record a failure instead of stopping, and
the closing report ("ok NAME" / "FAIL NAME: why" lines, then "checks: N ok, M failed")."""
import sys


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
        sys.exit(1 if failed else 0)


def expect(condition, why):
    if not condition:
        raise AssertionError(why)
