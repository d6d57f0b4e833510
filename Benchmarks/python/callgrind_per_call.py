#!/usr/bin/env python3
"""Instructions per call by function: the difference of two callgrind profiles of one server
(FEW and MANY calls) divided by the number of extra calls, so start-up and shutdown cancel out.

  callgrind_per_call.py FEW.callgrind MANY.callgrind CALLS [TOP, default 40]
"""
import re
import subprocess
import sys


def self_costs(path):
    """Self instructions by function, from callgrind_annotate."""
    output = subprocess.run(["callgrind_annotate", "--inclusive=no", "--tree=none", "--auto=no", "--threshold=100", path],
                            capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in output.splitlines():
        # "11,240,187 ( 3.45%)  file:function [object]"
        match = re.match(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$", line)
        if not match or "PROGRAM TOTALS" in line or "=>" in line:
            continue
        name = match.group(2).split(" [")[0]
        costs[name] = costs.get(name, 0) + int(match.group(1).replace(",", ""))
    return costs


def main():
    few, many, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 40
    low, high = self_costs(few), self_costs(many)
    per_call = {name: (high.get(name, 0) - low.get(name, 0)) / calls for name in high}
    total = sum(per_call.values())
    print(f"{total:10.0f}  instructions per call in all")
    for name, cost in sorted(per_call.items(), key=lambda item: -item[1])[:top]:
        print(f"{cost:10.0f}  {100 * cost / max(total, 1):5.1f}%  {name[:150]}")


if __name__ == "__main__":
    main()
