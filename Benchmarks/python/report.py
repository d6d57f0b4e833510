#!/usr/bin/env python3
"""Prints benchmark JSON lines (stdin) as a table with ratios to the C++ peer.

  report.py protobuf   lines: {"impl", "type", "bytes", "decode_per_s", "encode_per_s"}, and from
                       scripts/bench-protobuf-instructions {"impl", "type", "operation", "instructions"}
  report.py grpc       lines from scripts/bench-grpc: h2load's {"impl", "case", "rps", "p50_us",
                       "p99_us", "mean_latency", "failed"}; the stream clients' {"impl",
                       "client", "case", "bytes", "per_s", "p50_us", "p99_us"}; {"case": "rss"},
                       {"case": "idle streams"}, {"case": "idle connections"} and {"case": "load"}; the runs of a case are
                       reduced to their median; impl "pitlane-metrics" and "pitlane-tracing" are Pitlane's
                       server with metrics on and with tracing on, compared with "pitlane" (both off)
  report.py instructions  lines from scripts/bench-instructions: {"impl", "case", "instructions", "allocations"}
  report.py swiftkart  lines: {"followers", "p50_ms", "p99_ms", "messages_per_s", "server_rss_kib", "kib_per_follower",
                               "server_cpu", "load_cpu"}, and "driver": "cpp" from gRPC C++'s driver,
                               "nghttp2" from the one on nghttp2's client session alone
"""
import json
import statistics
import sys


def protobuf(rows):
    counted = [row for row in rows if "operation" in row]
    by_key = {(row["impl"], row["type"]): row for row in rows if "operation" not in row}
    print(f"{'message':<9} {'bytes':>7} {'impl':<8} {'decode/s':>12} {'MB/s':>8} {'encode/s':>12} {'MB/s':>8} {'decode ×C++':>12} {'encode ×C++':>12}")
    for message in ("Race", "Catalog"):
        cpp = by_key.get(("cpp", message))
        for impl in ("pitlane", "cpp", "python"):
            row = by_key.get((impl, message))
            if row is None:
                continue
            size = row["bytes"]
            decode, encode = row["decode_per_s"], row["encode_per_s"]
            ratio_decode = f"{decode / cpp['decode_per_s']:.2f}" if cpp else "-"
            ratio_encode = f"{encode / cpp['encode_per_s']:.2f}" if cpp else "-"
            print(f"{message:<9} {size:>7} {impl:<8} {decode:>12,.0f} {decode * size / 1e6:>8.1f} "
                  f"{encode:>12,.0f} {encode * size / 1e6:>8.1f} {ratio_decode:>12} {ratio_encode:>12}")
    for message in ("Race", "Catalog"):
        ours, cpp = by_key.get(("pitlane", message)), by_key.get(("cpp", message))
        if ours and cpp:
            for operation in ("encode", "decode"):
                ratio = ours[f"{operation}_per_s"] / cpp[f"{operation}_per_s"]
                print(f"{operation} {message}: {ratio:.2f}x C++'s rate {'met' if ratio >= 1.0 else 'SHORT'} (target ≥ 1.0)")
    if counted:
        # Instructions repeat from run to run where rates on a shared machine do not.
        instructions = {(row["impl"], row["type"], row["operation"]): row["instructions"] for row in counted}
        print(f"{'instructions per operation (callgrind)':<40} {'pitlane':>12} {'cpp':>12} {'C++/pitlane':>12}")
        for message in ("Race", "Catalog"):
            for operation in ("encode", "decode"):
                ours, cpp = instructions.get(("pitlane", message, operation)), instructions.get(("cpp", message, operation))
                if ours is None or cpp is None:
                    continue
                ratio = cpp / ours
                print(f"{operation + ' ' + message:<40} {ours:>12,} {cpp:>12,} {ratio:>12.2f} "
                      f"{'met' if ratio >= 1.0 else 'SHORT'} (target ≥ 1.0: no more instructions than C++)")


def grpc(rows):
    # Median over the runs of each numeric figure of each (server, client, case, body size).
    runs = {}
    for row in rows:
        key = (row["impl"], row.get("client", "pitlane"), row["case"], row.get("bytes", 16))
        runs.setdefault(key, []).append(row)

    def median_of(group):
        fields = {field for row in group for field, value in row.items() if isinstance(value, (int, float))}
        return {field: statistics.median(row[field] for row in group if isinstance(row.get(field), (int, float)))
                for field in fields}
    median = {key: median_of(group) for key, group in runs.items() if key[2] != "load"}

    def figure(impl, case, field, client="pitlane", size=16):
        row = median.get((impl, client, case, size))
        return row.get(field) if row else None

    def rss(impl, field):
        kib = figure(impl, "rss", field)
        return kib / 1024 if kib is not None else None

    def per_stream(impl):
        # The second thousand streams' RSS: the first thousand also pay one-time costs.
        row = median.get((impl, "pitlane", "idle streams", 16), {})
        if "rss_after_kib" not in row or "rss_before_kib" not in row:
            return None
        return (row["rss_after_kib"] - row["rss_before_kib"]) / row["streams"]

    def per_connection(impl):
        row = median.get((impl, "pitlane", "idle connections", 16), {})
        if "rss_after_kib" not in row or "rss_before_kib" not in row:
            return None
        return (row["rss_after_kib"] - row["rss_before_kib"]) / row["connections"]

    # (label, unit, figure per server, target): a ratio target is Pitlane ÷ C++ (≥ for rates,
    # ≤ for latencies); a number is an absolute ceiling for Pitlane.
    lines = [
        ("unary c=1 m=1 (h2load)", "req/s", lambda i: figure(i, "unary c=1 m=1", "rps"), "≥ 0.9"),
        ("  p50 latency", "µs", lambda i: figure(i, "unary c=1 m=1", "p50_us"), None),
        ("  p99 latency", "µs", lambda i: figure(i, "unary c=1 m=1", "p99_us"), "≤ 1.0"),
        ("unary c=4 m=32 (h2load)", "req/s", lambda i: figure(i, "unary c=4 m=32", "rps"), "≥ 0.6"),
        ("  p50 latency", "µs", lambda i: figure(i, "unary c=4 m=32", "p50_us"), None),
        ("  p99 latency", "µs", lambda i: figure(i, "unary c=4 m=32", "p99_us"), None),
        ("unary c=1 m=1 (C++ client)", "calls/s", lambda i: figure(i, "unary c=1 m=1", "per_s", "cpp"), "≥ 0.9"),
        ("  p50 latency", "µs", lambda i: figure(i, "unary c=1 m=1", "p50_us", "cpp"), None),
        ("  p99 latency", "µs", lambda i: figure(i, "unary c=1 m=1", "p99_us", "cpp"), "≤ 1.0"),
        ("unary c=4 m=32 (C++ client)", "calls/s", lambda i: figure(i, "unary c=4 m=32", "per_s", "cpp"), "≥ 0.6"),
        ("  p99 latency", "µs", lambda i: figure(i, "unary c=4 m=32", "p99_us", "cpp"), None),
        ("unary, 1 in flight (client)", "calls/s", lambda i: figure(i, "unary sequential", "per_s"), None),
        ("  p50 latency", "µs", lambda i: figure(i, "unary sequential", "p50_us"), None),
        ("  p99 latency", "µs", lambda i: figure(i, "unary sequential", "p99_us"), None),
        ("server-stream, 1 stream", "msgs/s", lambda i: figure(i, "server-stream", "per_s"), "≥ 1.0"),
        ("server-stream, C++ client", "msgs/s", lambda i: figure(i, "server-stream", "per_s", "cpp"), "≥ 2.0"),
        ("ping-pong, 1 stream", "trips/s", lambda i: figure(i, "ping-pong", "per_s"), "≥ 1.0"),
        ("  p50 round trip", "µs", lambda i: figure(i, "ping-pong", "p50_us"), None),
        ("  p99 round trip", "µs", lambda i: figure(i, "ping-pong", "p99_us"), "≤ 1.0"),
        ("ping-pong, C++ client", "trips/s", lambda i: figure(i, "ping-pong", "per_s", "cpp"), "≥ 1.0"),
        ("  p50 round trip", "µs", lambda i: figure(i, "ping-pong", "p50_us", "cpp"), None),
        ("  p99 round trip", "µs", lambda i: figure(i, "ping-pong", "p99_us", "cpp"), "≤ 1.0"),
        ("unary c=4 m=32, 1 KiB (h2load)", "req/s", lambda i: figure(i, "unary c=4 m=32", "rps", size=1024), "≥ 1.0"),
        ("server-stream, 1 KiB", "msgs/s", lambda i: figure(i, "server-stream", "per_s", size=1024), "≥ 1.0"),
        ("ping-pong, 1 KiB", "trips/s", lambda i: figure(i, "ping-pong", "per_s", size=1024), "≥ 1.0"),
        ("  p99 round trip", "µs", lambda i: figure(i, "ping-pong", "p99_us", size=1024), "≤ 1.0"),
        ("server RSS idle", "MiB", lambda i: rss(i, "idle_kib"), None),
        ("server RSS peak under load", "MiB", lambda i: rss(i, "peak_kib"), None),
        ("memory per idle open stream", "KiB", per_stream, 6.0),
        ("memory per idle connection", "KiB", per_connection, None),
    ]
    count = max((len(group) for key, group in runs.items() if key[2] != "load"), default=0)
    print(f"median of {count} run(s); 16 B bodies unless a row says 1 KiB; every server under the same load: "
          f"unary by h2load, '(client)' and stream rows by pitlane-bench-client unless they say C++ client "
          f"(gRPC C++'s callback API, a deadline on every unary call)")
    print(f"{'case':<30} {'unit':<8} {'pitlane':>10} {'C++':>10} {'grpcio':>10} {'pitlane÷C++':>12} {'target':>8}  verdict")
    for label, unit, get, target in lines:
        pitlane, cpp, grpcio = get("pitlane"), get("cpp"), get("grpcio")
        ratio = pitlane / cpp if pitlane is not None and cpp else None
        verdict, goal = "", ""
        if isinstance(target, str) and ratio is not None:
            goal = target
            bound = float(target.split()[1])
            verdict = "met" if (ratio >= bound if target.startswith("≥") else ratio <= bound) else "SHORT"
        elif isinstance(target, float) and pitlane is not None:
            goal = f"≤ {target:g} {unit}"
            verdict = "met" if pitlane <= target else "SHORT"

        def cell(value):
            if value is None:
                return "-"
            return f"{value:,.1f}" if unit in ("MiB", "KiB") or value < 100 else f"{value:,.0f}"
        print(f"{label:<30} {unit:<8} {cell(pitlane):>10} {cell(cpp):>10} {cell(grpcio):>10} "
              f"{f'{ratio:.2f}' if ratio is not None else '-':>12} {goal:>8}  {verdict}")

    failed = {key: row["failed"] for key, row in median.items() if row.get("failed")}
    for (impl, _, case, size), number in failed.items():
        print(f"warning: h2load saw {number:.0f} failed requests against {impl} ({case}, {size} B)")
    # The issue's reading: each stack's own client against its own server.
    for case, unit in (("server-stream", "msgs/s"), ("ping-pong", "trips/s")):
        own = {impl: figure(impl, case, "per_s", client=impl) for impl in ("pitlane", "cpp", "grpcio")}
        ratio = own["pitlane"] / own["cpp"] if own["pitlane"] and own["cpp"] else None
        print(f"own client against own server, {case}: " +
              ", ".join(f"{impl} {value:,.0f}" for impl, value in own.items() if value is not None) +
              f" {unit}" + (f" (pitlane÷C++ {ratio:.2f})" if ratio else ""))
    # One port, every protocol: Pitlane's unary rate over gRPC-Web and Connect against its
    # gRPC rate in the same runs (h2load; HTTP/1.1 rows with one request in flight per connection).
    grpc_rate = figure("pitlane", "unary c=4 m=32", "rps")
    print(f"{'protocol (pitlane, unary)':<30} {'unit':<8} {'rate':>10} {'÷ gRPC c=4 m=32':>16}")
    for label, case in (("gRPC-Web, HTTP/2 c=4 m=32", "grpc-web c=4 m=32"), ("Connect proto, HTTP/2 c=4 m=32", "connect proto c=4 m=32"),
                        ("Connect JSON, HTTP/2 c=4 m=32", "connect json c=4 m=32"), ("Connect proto, HTTP/1.1 c=4", "connect proto HTTP/1.1 c=4"),
                        ("Connect JSON, HTTP/1.1 c=4", "connect json HTTP/1.1 c=4")):
        rate = figure("pitlane", case, "rps")
        ratio = f"{rate / grpc_rate:.2f}" if rate and grpc_rate else "-"
        print(f"{label:<30} {'req/s':<8} {f'{rate:,.0f}' if rate else '-':>10} {ratio:>16}")
    observability(figure, runs)
    # A/B against an earlier build (PITLANE_BASE_SERVER): gRPC's unary rate may not fall by more than 3 %.
    for case in ("unary c=1 m=1", "unary c=4 m=32"):
        now, before = figure("pitlane", case, "rps"), figure("pitlane-base", case, "rps")
        if now and before:
            change = now / before - 1
            print(f"A/B {case}: this build {now:,.0f} req/s, base {before:,.0f} ({change:+.1%}) "
                  f"{'met' if change >= -0.03 else 'SHORT'} (no more than 3 % lower)")
    # Other work on the machine moves every figure; the table says how busy it was.
    for row in rows:
        if row["case"] == "load":
            print(f"load average at the {row['when']}: {row['loadavg']}")


def observability(figure, runs):
    """Pitlane's unary rate with metrics on and with tracing on, beside both off, in the same
    runs. The issue's target: metrics on (tracing off) within 5 % of both off; tracing's cost
    (every call sampled, spans exported) is reported, as time per call: 1/rate on minus 1/rate
    off (at c=1 m=1 that is latency added to each call; at c=4 m=32, server time per call).
    A gap smaller than the spread of the off server's own runs is called unresolved, not short:
    bench-instructions' "metrics on" line is the repeatable judge."""
    print(f"{'metrics and tracing (pitlane)':<30} {'unit':<8} {'off':>10} {'metrics':>10} {'÷ off':>7} "
          f"{'tracing':>10} {'÷ off':>7} {'tracing µs/call':>16}")
    verdicts = []
    for case in ("unary c=1 m=1", "unary c=4 m=32"):
        off, metrics, tracing = (figure(impl, case, "rps") for impl in ("pitlane", "pitlane-metrics", "pitlane-tracing"))
        metrics_ratio = metrics / off if metrics and off else None
        tracing_ratio = tracing / off if tracing and off else None
        cost = (1 / tracing - 1 / off) * 1e6 if tracing and off else None
        if metrics_ratio is not None:
            rates = [row["rps"] for row in runs.get(("pitlane", "pitlane", case, 16), []) if row.get("rps")]
            spread = (max(rates) - min(rates)) / off if len(rates) >= 3 else 0.0
            verdicts.append((case, metrics_ratio, spread))

        def rate(value):
            return f"{value:,.0f}" if value else "-"

        def ratio(value):
            return f"{value:.3f}" if value is not None else "-"
        print(f"{case + ' (h2load)':<30} {'req/s':<8} {rate(off):>10} {rate(metrics):>10} {ratio(metrics_ratio):>7} "
              f"{rate(tracing):>10} {ratio(tracing_ratio):>7} {f'{cost:+.2f}' if cost is not None else '-':>16}")
    if verdicts:
        worst_case, worst, spread = min(verdicts, key=lambda item: item[1])
        if worst >= 0.95:
            verdict = "met"
        elif 1 - worst < spread:
            verdict = f"unresolved: off's own runs span {spread:.1%} (judge by instructions)"
        else:
            verdict = "SHORT"
        print(f"metrics on, tracing off: {worst - 1:+.1%} req/s at worst ({worst_case}) "
              f"{verdict} (target: within 5 % of both off)")
    else:
        print("metrics on, tracing off: not measured")


def swiftkart(rows):
    """Followers of one race: delays, rates, memory, and each side's CPU. Server µs per
    delivered message (its CPU over the messages delivered) judges a fan-out change whether
    or not the step is sustained; a load driver near its whole core is itself the limit."""
    print(f"{'driver':<8} {'followers':>9} {'p50 ms':>7} {'p99 ms':>7} {'msgs/s':>9} {'expected':>9} {'server RSS':>11} "
          f"{'KiB/follower':>13} {'server CPU':>10} {'µs/msg':>7} {'load CPU':>9} {'load µs/msg':>11}  verdict")
    for row in rows:
        driver = {"cpp": "grpc-c++", "nghttp2": "nghttp2"}.get(row.get("driver"), "pitlane")
        expected = row["followers"] * 10
        ok = row["p99_ms"] < 100 and row["messages_per_s"] >= 0.95 * expected
        per_message = row["server_cpu"] * 1e6 / max(row["messages_per_s"], 1)
        limit = " (load driver at its core)" if not ok and row["load_cpu"] >= 0.95 else ""
        load_per_message = row["load_cpu"] * 1e6 / max(row["messages_per_s"], 1)
        print(f"{driver:<8} {row['followers']:>9,} {row['p50_ms']:>7} {row['p99_ms']:>7} {row['messages_per_s']:>9,} {expected:>9,} "
              f"{row['server_rss_kib'] / 1024:>9.1f} M {row['kib_per_follower']:>13.1f} "
              f"{row['server_cpu']:>10.2f} {per_message:>7.1f} {row['load_cpu']:>9.2f} {load_per_message:>11.1f}  "
              f"{'sustained' if ok else 'NOT sustained'}{limit}")
    print("target: ≥ 10,000 followers with p99 < 100 ms at 10 Hz; ≤ 8 KiB per follower "
          "(load µs/msg: each driver's client CPU per message received)")
    for driver in ("pitlane", "cpp", "nghttp2"):
        steps = [row for row in rows if (row.get("driver") or "pitlane") == driver]
        if not steps:
            continue
        sustained = [row["followers"] for row in steps
                     if row["p99_ms"] < 100 and row["messages_per_s"] >= 0.95 * row["followers"] * 10]
        at_10k = [row for row in steps if row["followers"] == 10_000]
        memory = f"; {at_10k[0]['kib_per_follower']:.1f} KiB per follower at 10,000" if at_10k else ""
        largest = f"{max(sustained):,}" if sustained else "none"
        print(f"{driver}: largest step sustained {largest}{memory}")


def fanout(rows):
    """Live feeds against their targets, one verdict per target (scripts/bench-fanout)."""
    def verdict(ok):
        return "met" if ok else "MISSED"

    print(f"{'target':<58} {'measured':>24}  verdict")
    for row in rows:
        bench = row["bench"]
        if bench == "race":
            target = f"{row['followers']:,} race followers at 10 Hz: p99 delay < 100 ms"
            print(f"{target:<58} "
                  f"{str(row['p99_ms']) + ' ms':>24}  {verdict(row['p99_ms'] < 100 and row['messages_per_s'] >= 0.95 * row['followers'] * 10)}")
            print(f"{'  server memory per follower ≤ 4 KiB':<58} {format(row['kib_per_follower'], '.1f') + ' KiB':>24}  "
                  f"{verdict(row['kib_per_follower'] <= 4)}")
            print(f"{'  messages/s delivered (of ' + format(row['followers'] * 10, ',') + ')':<58} {format(row['messages_per_s'], ','):>24}")
        elif bench == "orders":
            print(f"{format(row['watchers'], ',') + ' order watchers over ' + format(row['orders'], ',') + ' orders: KiB per watcher':<58} "
                  f"{format(row['kib_per_watcher'], '.1f') + ' KiB':>24}")
            print(f"{'  an idle gRPC stream ≤ 4 KiB':<58} {format(row['kib_per_watcher'], '.1f') + ' KiB':>24}  "
                  f"{verdict(row['kib_per_watcher'] <= 4)}")
            print(f"{'  publish→deliver p50 / p99 (' + format(row['deliveries'], ',') + ' deliveries)':<58} "
                  f"{str(row['p50_ms']) + ' / ' + str(row['p99_ms']) + ' ms':>24}")
        elif bench == "websocket":
            print(f"{format(row['connections'], ',') + ' idle WebSocket chat connections: ≤ 8 KiB each':<58} "
                  f"{format(row['kib_per_connection'], '.1f') + ' KiB':>24}  {verdict(row['kib_per_connection'] <= 8)}")


def instructions(rows):
    """Per unary call on the server, counted by valgrind: Pitlane beside gRPC C++, and Pitlane
    with metrics on and with tracing on (every call sampled, spans exported) beside both off."""
    by_impl = {row["impl"]: row for row in rows}
    print(f"{'server':<16} {'instructions':>13} {'allocations':>12}")
    for impl in ("pitlane", "pitlane-metrics", "pitlane-tracing", "cpp", "pitlane+deadline", "cpp+deadline"):
        if impl in by_impl:
            print(f"{impl:<16} {by_impl[impl]['instructions']:>13,} {by_impl[impl]['allocations']:>12,}")
    base = by_impl.get("pitlane")
    for impl, label, target in (("pitlane-metrics", "metrics on", 0.05),
                                ("pitlane-tracing", "tracing on (every call sampled, spans exported)", None)):
        row = by_impl.get(impl)
        if base is None or row is None:
            continue
        extra = row["instructions"] - base["instructions"]
        share = extra / base["instructions"]
        allocations = row["allocations"] - base["allocations"]
        verdict = f"{'met' if share <= target else 'SHORT'} (target ≤ {target:.0%})" if target is not None else "(reported)"
        print(f"{label}: {extra:+,} instructions ({share:+.1%}) and {allocations:+,} allocations per unary call {verdict}")
    # Both ways of calling: h2load's bare calls, and calls with grpc-timeout as production clients send.
    for suffix, how in (("", ""), ("+deadline", " with a deadline")):
        ours, theirs = by_impl.get("pitlane" + suffix), by_impl.get("cpp" + suffix)
        if ours is None or theirs is None:
            continue
        ratio = ours["instructions"] / theirs["instructions"]
        print(f"instructions per unary call{how}: {ratio:.2f}x C++'s {'met' if ratio <= 2 else 'SHORT'} (target ≤ 2x)")
        print(f"allocations per unary call{how}: {ours['allocations'] / max(theirs['allocations'], 1):.2f}x C++'s (reported)")


if __name__ == "__main__":
    rows = [json.loads(line) for line in sys.stdin if line.strip().startswith("{")]
    {"protobuf": protobuf, "grpc": grpc, "swiftkart": swiftkart, "instructions": instructions, "fanout": fanout}[sys.argv[1]](rows)
