#!/usr/bin/env python3
"""Python grpcio as a SwiftKart client no one here wrote.

  swiftkart_peer.py --port N --protos DIR --health-proto DIR
      Generates its own stubs from swiftkart.proto and health.proto with grpc_tools, then
      lists races, checks health, changes a follower's event types mid-stream, sends a
      malformed second request, half-closes before naming a race, and follows the Duck Pond
      Dash to the finish against swiftkart-server on 127.0.0.1:N. Prints "ok NAME" or "FAIL NAME: why" per check and a
      closing "checks: N ok, M failed"; exits non-zero on any failure.
"""
import argparse
import queue

import grpc

from peer_checks import Checks, expect, load


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--protos", required=True)
    parser.add_argument("--health-proto", required=True)
    args = parser.parse_args()
    pb, rpc = load(args.protos, "swiftkart.proto")
    health_pb, health_rpc = load(args.health_proto, "health.proto")
    channel = grpc.insecure_channel(f"127.0.0.1:{args.port}")
    kart = rpc.SwiftKartServiceStub(channel)
    health = health_rpc.HealthStub(channel)
    checks = Checks()

    def list_default():
        races = kart.ListRaces(pb.ListRacesRequest(), timeout=10).races
        expect(len(races) >= 20, f"{len(races)} races")
        starts = [race.start_time.ToSeconds() for race in races]
        expect(starts == sorted(starts), "not in start-time order")
        dash = [race for race in races if race.name == "Duck Pond Dash"]
        expect(len(dash) == 1 and len(dash[0].drivers) == 8 and dash[0].laps == 6, f"{dash}")

    def list_limited():
        expect(len(kart.ListRaces(pb.ListRacesRequest(limit=3), timeout=10).races) == 3, "limit 3")

    def health_serving():
        serving = health_pb.HealthCheckResponse.SERVING
        expect(health.Check(health_pb.HealthCheckRequest(service=""), timeout=10).status == serving, "overall")
        expect(health.Check(health_pb.HealthCheckRequest(service="SwiftKartService"), timeout=10).status == serving,
               "SwiftKartService")

    def follow_to_finish():
        requests = queue.Queue()
        requests.put(pb.FollowRaceRequest(race_name="Duck Pond Dash", event_types=[
            pb.RACE_EVENT_TYPE_KART_LOCATIONS, pb.RACE_EVENT_TYPE_STANDINGS]))

        def request_stream():
            while (request := requests.get()) is not None:
                yield request

        standings, locations, last_lap = 0, 0, {}
        try:
            for response in kart.FollowRace(request_stream(), timeout=120):
                if response.WhichOneof("event") == "locations":
                    locations += 1
                    expect(sorted(k.number for k in response.locations.karts) == list(range(1, 9)), "karts")
                    continue
                standings += 1
                entries = response.standings.entries
                expect([e.position for e in entries] == list(range(1, 9)), "positions")
                expect(entries[0].gap_to_leader.ToNanoseconds() == 0, "leader gap")
                gaps = [e.gap_to_leader.ToNanoseconds() for e in entries]
                expect(gaps == sorted(gaps), f"gaps {gaps}")
                for entry in entries:
                    expect(entry.lap >= last_lap.get(entry.kart_number, 1), "lap went backwards")
                    last_lap[entry.kart_number] = entry.lap
        finally:
            requests.put(None)
        expect(standings >= 3 and locations > 10, f"{standings} standings, {locations} locations")
        expect(sorted(last_lap.values()) == [6] * 8, f"final laps {last_lap}")

    def change_event_types_then_half_close():
        # Locations first; once one arrives, standings only. The first standings event was
        # offered after the change (none was wanted before), so all that follow it are
        # standings too. Then the half-close ends the RPC with OK.
        requests = queue.Queue()
        requests.put(pb.FollowRaceRequest(race_name="Duck Pond Dash", event_types=[pb.RACE_EVENT_TYPE_KART_LOCATIONS]))

        def request_stream():
            while (request := requests.get()) is not None:
                yield request

        kinds = []
        try:
            for response in kart.FollowRace(request_stream(), timeout=30):
                kinds.append(response.WhichOneof("event"))
                if kinds == ["locations"]:
                    requests.put(pb.FollowRaceRequest(event_types=[pb.RACE_EVENT_TYPE_STANDINGS]))
                after = kinds[kinds.index("standings"):] if "standings" in kinds else []
                if len(after) == 3:
                    requests.put(None)  # half-close: the server ends the RPC
        finally:
            requests.put(None)
        expect(kinds[0] == "locations", f"{kinds[:5]}")
        after = kinds[kinds.index("standings"):] if "standings" in kinds else []
        expect(len(after) >= 3 and set(after) == {"standings"}, f"after the change: {after[:10]}")

    def malformed_second_request():
        # A valid request, then bytes that are no FollowRaceRequest (a field's length runs past
        # the message): the RPC ends with INTERNAL, which names the problem.
        raw = channel.stream_stream("/SwiftKartService/FollowRace", request_serializer=lambda b: b,
                                    response_deserializer=lambda b: b)
        first = pb.FollowRaceRequest(race_name="Duck Pond Dash",
                                     event_types=[pb.RACE_EVENT_TYPE_KART_LOCATIONS]).SerializeToString()
        try:
            for _ in raw(iter([first, b"\x0a\x7f\x01"]), timeout=10):
                pass
        except grpc.RpcError as error:
            expect(error.code() == grpc.StatusCode.INTERNAL, f"{error.code()}: {error.details()}")
            expect("deserialize" in (error.details() or ""), f"{error.details()}")
            return
        raise AssertionError("no error")

    def half_close_before_naming_a_race():
        expect(list(kart.FollowRace(iter([]), timeout=10)) == [], "messages without a request")

    def follow_unknown():
        try:
            for _ in kart.FollowRace(iter([pb.FollowRaceRequest(race_name="Atlantis")]), timeout=10):
                pass
        except grpc.RpcError as error:
            expect(error.code() == grpc.StatusCode.NOT_FOUND, f"{error.code()}")
            return
        raise AssertionError("no error")

    checks.check("list races (default limit)", list_default)
    checks.check("list races (limit 3)", list_limited)
    checks.check("health: SERVING", health_serving)
    checks.check("change event types mid-stream, then half-close: OK", change_event_types_then_half_close)
    checks.check("a malformed second request: INTERNAL", malformed_second_request)
    checks.check("half-close before naming a race: OK, no messages", half_close_before_naming_a_race)
    checks.check("follow the Duck Pond Dash to the finish", follow_to_finish)
    checks.check("follow an unknown race: NOT_FOUND", follow_unknown)
    checks.report_and_exit()


if __name__ == "__main__":
    main()
