"""Benchmark: how many events/s one source task of the Flink job replays from a data set at rest
(--replay-dir), next to the generator at the same settings. Writes (in Python, no Spark) a data set
of Nexmark-like JSON lines (2/6/92 % person/auction/bid, ~200/500/100-byte records as Nexmark pads
them) into a temporary directory, then runs q0 locally (--local-seconds) with 1 source task as fast
as the job accepts (--catch-up inf) and reads the rate off the STATS lines. Asserts nothing.

The replay needs seconds of JIT warm-up, and one task replays more than 2 M events in them: the data
set's files are replayed --repeat times in a row (hard links: the same bytes, ids repeat, which q0
does not mind) so that the run does not run out. They are in the page cache after being written:
this measures parsing and the job, not the disk. A replay that still runs out (REPLAY_EXHAUSTED) is
measured over the samples before that, and the output says so. The first WARM_UP_S seconds after
the first event are left out of both measurements.
Run: .venv/bin/python bench/replay_rate.py [--events 2000000] [--repeat 8] [--seconds 20] [--query q0] [--json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JAR = REPO / "flink" / "build" / "streambed-job.jar"
STATS = re.compile(r"^STATS emitted=(\d+) pending=(\d+) target=([\d.]+) elapsed=([\d.]+)")
FILE_EVENTS = 250_000  # events per part file (Spark writes a data set as many part files)
WARM_UP_S = 5.0  # samples before this (after the first emission) are left out: JIT, task start-up

FIRST_NAMES = ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"]
LAST_NAMES = ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"]
CITIES = ["Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent"]
STATES = ["AZ", "CA", "ID", "OR", "WA", "WY"]
CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]


def write_data_set(d: Path, events: int, repeat: int = 1, seed: int = 1) -> int:
    """Part files of Nexmark-like events in event order, then ``repeat - 1`` more rounds of the same
    files as hard links named after them; returns the bytes written (one round)."""
    r = random.Random(seed)
    pool = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(1 << 16))

    def word(n: int) -> str:
        k = r.randrange(3, n)
        off = r.randrange(len(pool) - k)
        return pool[off:off + k]

    def extra(size: int, average: int) -> str:  # padding to an average size +-20 %, as Nexmark does
        rest = average - size
        delta = round(rest * 0.2)
        n = rest - delta + r.randrange(2 * delta) if delta else rest
        off = r.randrange(len(pool) - n)
        return pool[off:off + n]

    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    start_ms = int(start.timestamp() * 1000)
    seconds_cache: dict[int, str] = {}

    def iso(ms: int) -> str:  # as Spark writes a UTC timestamp
        s, m = divmod(ms, 1000)
        if s not in seconds_cache:
            seconds_cache[s] = dt.datetime.fromtimestamp(s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{seconds_cache[s]}.{m:03d}Z"

    total = 0
    person = auction = 0
    for k in range(0, events, FILE_EVENTS):
        lines = []
        for g in range(k, min(events, k + FILE_EVENTS)):
            now = iso(start_ms + g // 10)  # a nominal 10,000 events/s
            kind = g % 50
            if kind == 0:
                name = f"{r.choice(FIRST_NAMES)} {r.choice(LAST_NAMES)}"
                email = f"{word(7)}@{word(5)}.com"
                card = " ".join(f"{r.randrange(10000):04d}" for _ in range(4))
                city, state = r.choice(CITIES), r.choice(STATES)
                pad = extra(8 + len(name) + len(email) + len(card) + len(city) + len(state), 200)
                lines.append(f'{{"event_type":0,"person":{{"id":{1000 + person},"name":"{name}",'
                             f'"emailAddress":"{email}","creditCard":"{card}","city":"{city}","state":"{state}",'
                             f'"dateTime":"{now}","extra":"{pad}"}}}}')
                person += 1
            elif kind <= 3:
                item, desc = word(20), word(100)
                initial = r.randrange(100, 100_000_000)
                length_ms = r.randrange(1, 20_000)
                pad = extra(8 + len(item) + len(desc) + 40, 500)
                lines.append(f'{{"event_type":1,"auction":{{"id":{1000 + auction},"itemName":"{item}",'
                             f'"description":"{desc}","initialBid":{initial},"reserve":{initial + r.randrange(10**6)},'
                             f'"dateTime":"{now}","expires":"{iso(start_ms + g // 10 + length_ms)}",'
                             f'"seller":{1000 + max(0, person - r.randrange(1000))},"category":{10 + r.randrange(5)},'
                             f'"extra":"{pad}"}}}}')
                auction += 1
            else:
                if r.randrange(2):
                    channel = r.choice(CHANNELS)
                else:
                    channel = f"channel-{r.randrange(10_000)}"
                url = f"https://www.nexmark.com/{word(5)}/{word(5)}/{word(5)}/item.htm?query=1"
                lines.append(f'{{"event_type":2,"bid":{{"auction":{1000 + max(0, auction - r.randrange(100))},'
                             f'"bidder":{1000 + max(0, person - r.randrange(1000))},"price":{r.randrange(100, 10**8)},'
                             f'"channel":"{channel}","url":"{url}","dateTime":"{now}","extra":"{extra(32, 100)}"}}}}')
        data = ("\n".join(lines) + "\n").encode()
        (d / f"part-{k // FILE_EVENTS:05d}.json").write_bytes(data)
        total += len(data)
    files = sorted(d.glob("part-*.json"))
    for round_ in range(1, repeat):
        for i, f in enumerate(files):
            os.link(f, d / f"part-{round_ * len(files) + i:05d}.json")
    return total


def flink_home() -> Path:
    out = subprocess.run([sys.executable, "-c", "import os, pyflink; print(os.path.dirname(pyflink.__file__))"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def run(query: str, seconds: float, replay_dir: Path | None) -> dict:
    """One local run as fast as the job accepts; the events/s of its source task after the warm-up."""
    args = ["java", "-cp", f"{flink_home()}/lib/*:{JAR}", "org.streambed.flink.StreamBedJob",
            "--sql-file", str(REPO / "flink" / "queries" / f"{query}.sql"), "--initial-rate", "1e9",
            "--catch-up", "inf", "--source-parallelism", "1", "--local-seconds", str(seconds)]
    if replay_dir is not None:
        args += ["--replay-dir", str(replay_dir)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 300)
    samples = [(int(m[1]), float(m[4])) for m in map(STATS.match, p.stdout.splitlines()) if m]
    exhausted = "REPLAY_EXHAUSTED" in p.stderr
    if p.returncode != 0 and not exhausted:
        raise SystemExit(f"the job failed ({p.returncode}): {p.stderr[-2000:]}")
    running = [s for s in samples if s[0] > 0]
    if not running:
        raise SystemExit(f"no event emitted: {p.stdout[-2000:]} {p.stderr[-2000:]}")
    steady = [s for s in running if s[1] >= running[0][1] + WARM_UP_S] or running
    first, last = (steady[0], steady[-1]) if len(steady) >= 2 else (running[0], running[-1])
    rate = (last[0] - first[0]) / (last[1] - first[1]) if last[1] > first[1] else float("nan")
    return {"events_per_s": round(rate), "emitted": samples[-1][0], "window_s": round(last[1] - first[1], 1),
            "exhausted": exhausted}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=8, help="rounds of the data set's files in the replay")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--query", default="q0")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    subprocess.run(["make", "-C", str(REPO), "--no-print-directory", "flink-job"], check=True, capture_output=True)
    work = Path(tempfile.mkdtemp(prefix="streambed-replay-"))
    try:
        size = write_data_set(work, args.events, args.repeat)
        replay = run(args.query, args.seconds, work)
        generator = run(args.query, args.seconds, None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {"benchmark": "replay_rate", "query": args.query, "events": args.events, "repeat": args.repeat,
              "bytes_per_event": round(size / args.events, 1), "seconds": args.seconds, "source_tasks": 1,
              "cores": os.cpu_count(), "replay": replay, "generator": generator}
    if args.json:
        print(json.dumps(result))
    else:
        note = " (ran out: rate before that)" if replay["exhausted"] else ""
        print(f"{args.query}, 1 source task, {args.events:,} events of {size / args.events:.0f} bytes"
              f" (x{args.repeat} in the replay):")
        print(f"  replay    {replay['events_per_s']:>10,} events/s over {replay['window_s']} s{note}")
        print(f"  generator {generator['events_per_s']:>10,} events/s over {generator['window_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
