"""Loading a data set into Kafka (spark/streambed_spark/kafka_load.py): its pure parts (keys,
partitions, shares), the load around a scripted client (acknowledgements and end offsets a test
can choose), and a parallel load into the Tansu stand-in broker (tests/test_kafka_broker.py),
read back with a plain consumer."""

import json
import time

import pytest

from streambed import dataset as ds
from streambed.errors import UserError

pytest.importorskip("kafka")

from streambed_spark.kafka_load import (  # noqa: E402
    Delivery, KafkaTarget, event_key, load, partition_of, records, shares,
)


class Scripted:
    """A client as the loader uses it, over partitions kept as lists. ``lose``: every n-th record is
    acknowledged but never appended (a broker whose log loses it); ``fail``: every n-th record's
    delivery fails. Class-level logs: the loader opens one client for the topic and one per producer."""
    logs: dict = {}
    lose = fail = 0

    def __init__(self, target):
        self.target = target
        self.delivery = Delivery()
        self.n = 0

    def topic_partitions(self):
        return len(self.logs.setdefault(self.target.topic, [[] for _ in range(self.target.partitions)]))

    def end_offsets(self, partitions):
        return {p: len(self.logs[self.target.topic][p]) for p in range(partitions)}

    def send(self, partition, key, value):
        self.n += 1
        if self.fail and self.n % self.fail == 0:
            self.delivery.errors += 1
            self.delivery.first_error = self.delivery.first_error or "KafkaError{code=MSG_TIMED_OUT}"
            return
        self.delivery.acked += 1
        if not (self.lose and self.n % self.lose == 0):
            self.logs[self.target.topic][partition].append((key, value))

    def flush(self):
        pass


@pytest.fixture
def scripted():
    Scripted.logs, Scripted.lose, Scripted.fail = {}, 0, 0
    return Scripted


def write_data_set(lake, name="d", events=300, spaced=True):
    d = lake / name
    (d / "json").mkdir(parents=True)
    rows = []
    for seq in range(events):
        if seq % 50 == 0:
            rows.append({"seq": seq, "event_type": 0, "person": {"id": 1000 + seq // 50}})
        elif seq % 50 < 4:
            rows.append({"seq": seq, "event_type": 1, "auction": {"id": 1000 + seq, "seller": 1000}})
        else:
            rows.append({"seq": seq, "event_type": 2, "bid": {"auction": 1000 + seq % 37, "bidder": 1000}})
    seps = (", ", ": ") if spaced else (",", ":")
    per = -(-events // 3)
    for i in range(3):
        (d / "json" / f"part-{i:05d}.json").write_text(
            "".join(json.dumps(e, separators=seps) + "\n" for e in rows[i * per:(i + 1) * per]))
    kinds = {k: sum(1 for e in rows if k in e) for k in ("person", "auction", "bid")}
    (d / ds.MANIFEST).write_text(json.dumps({"version": 1, "name": name, "events": events, "kinds": kinds,
                                             "formats": {"json": {"files": 3, "bytes": 1}}, "origin": {}}))
    return ds.load(name, lake)


@pytest.fixture
def data_set(tmp_path):
    return write_data_set(tmp_path)


# --- pure parts ---------------------------------------------------------------------------------

@pytest.mark.parametrize("line, key", [
    (b'{"seq":3,"event_type":2,"bid":{"auction":1007,"bidder":5}}', b"1007"),
    (b'{"event_type": 1, "auction": {"id": 42, "seller": 7}}', b"42"),
    (b'{"event_type":0,"person":{"id":9,"name":"\\"bid\\":{\\"auction\\":1"}}', b"9"),
    # not the lake's field order: the JSON parser decides
    (b'{"bid":{"bidder":5,"auction":77},"event_type":2}', b"77"),
    (b'{"event_type":2,"auction":{"id":1},"bid":{"auction":8}}', b"8"),
])
def test_an_events_key_is_its_entity(line, key):
    assert event_key(line) == key


@pytest.mark.parametrize("line, error", [
    (b'{"event_type":7}', KeyError), (b'{"event_type":2}', KeyError), (b'{"event_type":2', ValueError),
    (b'{"event_type":2,"bid":{"auction":"x"}}', TypeError), (b'{"event_type":2,"bid":{"auction":null}}', TypeError),
])
def test_a_line_without_a_key_is_an_error(line, error):
    with pytest.raises(error):
        event_key(line)


def test_partitions_are_kafkas_default_for_the_key():
    # Kafka's own murmur2 vectors (Java's Utils.murmur2; positive part modulo partitions)
    assert partition_of(b"21", 1 << 31) == -973932308 & 0x7FFFFFFF
    assert partition_of(b"foobar", 1 << 31) == -790332482 & 0x7FFFFFFF
    assert partition_of(b"abc", 7) == 479470107 % 7


@pytest.mark.parametrize("partitions, producers, expected", [
    (8, 2, [(0, 2, 4, 6), (1, 3, 5, 7)]), (3, 4, [(0,), (1,), (2,)]), (5, 1, [(0, 1, 2, 3, 4)]),
    (5, 3, [(0, 3), (1, 4), (2,)]),
])
def test_each_partition_has_exactly_one_producer(partitions, producers, expected):
    assert shares(partitions, producers) == expected


# --- around a scripted client -------------------------------------------------------------------

def test_every_event_lands_keyed_and_each_partition_holds_its_events_in_order(data_set, scripted):
    result = load(data_set, KafkaTarget("b:9092", "nexmark", partitions=4, producers=1), scripted)
    assert result == {"topic": "nexmark", "partitions": 4, "producers": 1, "records": 300, "end_offsets": 300}
    seen = []
    for p, log in enumerate(scripted.logs["nexmark"]):
        seqs = [json.loads(v)["seq"] for _, v in log]
        assert seqs == sorted(seqs)  # in event order within the partition
        assert all(partition_of(k, 4) == p for k, _ in log)
        seen += seqs
    assert sorted(seen) == list(range(300))
    keys = [k for k, _ in records(data_set)]
    assert keys[0] == b"1000" and keys[1] == b"1001" and keys[4] == str(1000 + 4 % 37).encode()


def test_a_broker_that_loses_records_is_refused(data_set, scripted):
    scripted.lose = 20
    with pytest.raises(UserError, match=r"--topic t: sent 300 records but the topic's end offsets grew by 285; "
                                        r"the broker lost or duplicated records"):
        load(data_set, KafkaTarget("b:9092", "t", producers=1), scripted)


def test_records_not_acknowledged_are_refused(data_set, scripted):
    scripted.fail = 100
    with pytest.raises(UserError, match=r"--topic t: sent 300 records, 297 acknowledged \(3 failed: "
                                        r"KafkaError\{code=MSG_TIMED_OUT\}\); do not replay from it"):
        load(data_set, KafkaTarget("b:9092", "t", producers=1), scripted)


def test_loading_into_an_existing_topic_counts_only_the_new_records(data_set, scripted):
    load(data_set, KafkaTarget("b:9092", "t", partitions=2, producers=1), scripted)
    again = load(data_set, KafkaTarget("b:9092", "t", partitions=2, producers=1), scripted)
    assert again["records"] == 300 and again["end_offsets"] == 600


def test_an_unreachable_broker_is_one_line(data_set):
    def refuse(target):
        raise ConnectionRefusedError("refused")
    with pytest.raises(UserError, match=r"--bootstrap b:9092: cannot reach Kafka \(ConnectionRefusedError: refused"):
        load(data_set, KafkaTarget("b:9092", "t"), refuse)


def test_an_unknown_compression_is_refused(data_set, scripted):
    with pytest.raises(UserError, match=r"--compression: expected one of none, gzip, snappy, lz4, got 'zstd'"):
        load(data_set, KafkaTarget("b:9092", "t", compression="zstd"), scripted)


def test_a_line_that_is_not_an_event_names_the_file_and_line(data_set):
    f = sorted(data_set.replay_dir.glob("part-*.json"))[1]
    f.write_text(f.read_text() + '{"event_type": 7}\n')
    with pytest.raises(UserError, match=rf"{f.name}:101: not an event of the data set \(KeyError"):
        list(records(data_set))


# --- into the stand-in broker, in parallel ------------------------------------------------------

from test_kafka_broker import broker  # noqa: E402,F401  (the Tansu fixture)


def test_a_parallel_load_into_the_stand_in_broker(tmp_path, broker):  # noqa: F811
    """Two producer processes, five partitions, lz4: every record in its key's partition, each
    partition in event order (read back by a plain consumer). Tansu's end offsets fall short of the
    records (tests/test_kafka_broker.py), so the loader refuses the load, as it must."""
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    d = write_data_set(tmp_path, "big", events=30_000, spaced=False)
    with pytest.raises(UserError, match=r"--topic big: sent 30,000 records but the topic's end offsets grew by "):
        load(d, KafkaTarget(broker, "big", partitions=5, producers=2))
    c = KafkaConsumer(bootstrap_servers=broker, enable_auto_commit=False)
    tps = [TopicPartition("big", p) for p in range(5)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    got = {p: [] for p in range(5)}
    deadline = time.monotonic() + 30
    while sum(map(len, got.values())) < 30_000 and time.monotonic() < deadline:
        for tp, recs in c.poll(timeout_ms=500, max_records=5000).items():
            got[tp.partition] += [(r.key, json.loads(r.value)["seq"]) for r in recs]
    c.close()
    assert sorted(s for log in got.values() for _, s in log) == list(range(30_000))
    for p, log in got.items():
        assert log and all(partition_of(k, 5) == p for k, _ in log), p
        assert [s for _, s in log] == sorted(s for _, s in log), p
