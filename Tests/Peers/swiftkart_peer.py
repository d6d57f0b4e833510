#!/usr/bin/env python3
"""Python grpcio as a SwiftKart client no one here wrote.

  swiftkart_peer.py --port N --protos DIR --health-proto DIR
      Generates its own stubs from swiftkart.proto and health.proto with grpc_tools, then
      lists races, checks health and follows the Duck Pond Dash to the finish against
      swiftkart-server on 127.0.0.1:N. Prints "ok NAME" or "FAIL NAME: why" per check and a
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
    checks.check("follow the Duck Pond Dash to the finish", follow_to_finish)
    checks.check("follow an unknown race: NOT_FOUND", follow_unknown)
    checks.report_and_exit()


if __name__ == "__main__":
    main()
