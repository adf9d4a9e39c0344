"""Loading a data set into Kafka (spark/streambed_spark/kafka_load.py) around a scripted broker: no
Kafka broker can run here (docs/data.md), so the producer, admin and consumer are stand-ins that
keep what a broker would: per-partition logs, assigned by key."""

import json

import pytest

from streambed import dataset as ds
from streambed.errors import UserError

pytest.importorskip("kafka")

from streambed_spark.kafka_load import KafkaTarget, load, records  # noqa: E402


class Broker:
    """Partitions as lists; a record goes to hash(key) mod partitions, as Kafka's default partitioner
    keeps one key in one partition. ``lose``: drop every n-th record (a lossy broker)."""

    def __init__(self, partitions=3, lose=0):
        self.logs = {}
        self.partitions = partitions
        self.lose = lose
        self.sent = 0

    def clients(self, target):
        broker = self

        class Producer:
            def send(self, topic, key, value):
                broker.sent += 1
                if broker.lose and broker.sent % broker.lose == 0:
                    return
                logs = broker.logs[topic]
                logs[int.from_bytes(key, "big") % len(logs)].append((key, value))

            def flush(self):
                pass

        class Admin:
            def create_topics(self, topics):
                from kafka.errors import TopicAlreadyExistsError
                for t in topics:
                    if t.name in broker.logs:
                        raise TopicAlreadyExistsError()
                    broker.logs[t.name] = [[] for _ in range(t.num_partitions)]

        class Consumer:
            def partitions_for_topic(self, topic):
                return set(range(len(broker.logs.get(topic, []))))

            def end_offsets(self, tps):
                return {tp: len(broker.logs[tp.topic][tp.partition]) for tp in tps}

        return Producer(), Admin(), Consumer()


@pytest.fixture
def data_set(tmp_path):
    d = tmp_path / "d"
    (d / "json").mkdir(parents=True)
    events = []
    for seq in range(300):
        if seq % 50 == 0:
            events.append({"seq": seq, "event_type": 0, "person": {"id": 1000 + seq // 50}})
        elif seq % 50 < 4:
            events.append({"seq": seq, "event_type": 1, "auction": {"id": 1000 + seq, "seller": 1000}})
        else:
            events.append({"seq": seq, "event_type": 2, "bid": {"auction": 1000 + seq % 7, "bidder": 1000}})
    for i in range(3):
        (d / "json" / f"part-{i:05d}.json").write_text("".join(json.dumps(e) + "\n" for e in events[i * 100:(i + 1) * 100]))
    (d / ds.MANIFEST).write_text(json.dumps({"version": 1, "name": "d", "events": 300,
                                             "kinds": {"person": 6, "auction": 18, "bid": 276},
                                             "formats": {"json": {"files": 3, "bytes": 1}}, "origin": {}}))
    return ds.load("d", tmp_path)


def test_every_event_lands_keyed_and_each_partition_holds_its_events_in_order(data_set):
    broker = Broker()
    result = load(data_set, KafkaTarget("b:9092", "nexmark", partitions=4), broker.clients)
    assert result == {"topic": "nexmark", "partitions": 4, "records": 300, "end_offsets": 300}
    seen = []
    for log in broker.logs["nexmark"]:
        seqs = [json.loads(v)["seq"] for _, v in log]
        assert seqs == sorted(seqs)  # in event order within the partition
        seen += seqs
    assert sorted(seen) == list(range(300))
    # one key, one partition: every bid of an auction is in the partition of that auction's key
    where = {}
    for p, log in enumerate(broker.logs["nexmark"]):
        for key, _ in log:
            assert where.setdefault(key, p) == p
    keys = [k for k, _ in records(data_set)]
    assert keys[0] == b"1000" and keys[1] == b"1001" and keys[4] == str(1000 + 4 % 7).encode()


def test_a_broker_that_loses_records_is_refused(data_set):
    with pytest.raises(UserError, match=r"--topic t: sent 300 records but the topic's end offsets grew by 285; "
                                        r"the broker lost or duplicated records"):
        load(data_set, KafkaTarget("b:9092", "t"), Broker(lose=20).clients)


def test_loading_into_an_existing_topic_counts_only_the_new_records(data_set):
    broker = Broker()
    load(data_set, KafkaTarget("b:9092", "t", partitions=2), broker.clients)
    again = load(data_set, KafkaTarget("b:9092", "t", partitions=2), broker.clients)
    assert again["records"] == 300 and again["end_offsets"] == 600


def test_an_unreachable_broker_is_one_line(data_set):
    def refuse(target):
        from kafka.errors import BrokerNotAvailableError
        raise BrokerNotAvailableError()
    with pytest.raises(UserError, match=r"--bootstrap b:9092: cannot reach Kafka \(BrokerNotAvailableError"):
        load(data_set, KafkaTarget("b:9092", "t"), refuse)


def test_a_line_that_is_not_an_event_names_the_file_and_line(data_set):
    f = sorted(data_set.replay_dir.glob("part-*.json"))[1]
    f.write_text(f.read_text() + '{"event_type": 7}\n')
    with pytest.raises(UserError, match=rf"{f.name}:101: not an event of the data set \(KeyError"):
        list(records(data_set))
