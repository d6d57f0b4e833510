"""Writes the protobuf benchmark's payloads, race.bin and catalog.bin, reproducibly.

Usage: make_payloads.py OUTDIR
"""
import random
import sys
from pathlib import Path

from protobuf_bench import load_messages

SEED = 20240526
CIRCUITS = [
    ("Monaco Grand Prix", "Circuit de Monaco, Monte Carlo"),
    ("British Grand Prix", "Silverstone Circuit, Northamptonshire"),
    ("Italian Grand Prix", "Autodromo Nazionale Monza, Monza"),
    ("Japanese Grand Prix", "Suzuka International Racing Course, Suzuka"),
    ("Belgian Grand Prix", "Circuit de Spa-Francorchamps, Stavelot"),
    ("Brazilian Grand Prix", "Autodromo Jose Carlos Pace, Sao Paulo"),
]
CHAMPIONSHIPS = [
    "FIA Formula 2 Championship",
    "FIA Formula 3 Championship",
    "Formula Regional European Championship",
]
FIRST = ["Lena", "Marco", "Yuki", "Oscar", "Ines", "Tomas", "Amara", "Felix", "Sofia", "Kenji"]
LAST = ["Bauer", "Rossi", "Tanaka", "Lindqvist", "Moreau", "Novak", "Okafor", "Silva", "Hart"]
WORDS = ["apex", "chicane", "hairpin", "kerb", "paddock", "pitwall", "slipstream", "grid"]
TYRES = ["soft", "medium", "hard", "intermediate", "wet"]


def make_race(pb, rng):
    name, location = rng.choice(CIRCUITS)
    race = pb.Race(
        name=name, location=location, laps=12, championship=rng.choice(CHAMPIONSHIPS),
        drivers=[f"{rng.choice(FIRST)} {rng.choice(LAST)}" for _ in range(8)],
    )
    race.start_time.seconds = rng.randrange(1_700_000_000, 1_760_000_000)  # 2023-2025
    return race


def make_entry(pb, rng):
    return pb.Entry(
        id=rng.randrange(1, 1 << 40),
        name=f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{rng.randrange(10**6):06d}"[:20],
        score=rng.uniform(0, 100),
        samples=[rng.randrange(0, 60_000) for _ in range(16)],
        attributes={
            "team": f"{rng.choice(LAST)} Racing",
            "tyre": rng.choice(TYRES),
            "engine": f"V6-{rng.randrange(1, 9)}",
            "region": rng.choice(["EU", "NA", "APAC", "LATAM"]),
        },
        race=make_race(pb, rng),
        active=rng.random() < 0.8,
    )


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip())
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    pb = load_messages()
    rng = random.Random(SEED)
    race = make_race(pb, rng)
    catalog = pb.Catalog(entries=[make_entry(pb, rng) for _ in range(1000)])
    # Deterministic serialization orders the map entries, so the bytes depend only on the seed.
    for name, message in [("race.bin", race), ("catalog.bin", catalog)]:
        data = message.SerializeToString(deterministic=True)
        (out / name).write_bytes(data)
        print(f"{out / name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
