"""A data set of the lake loaded into a Kafka topic, keyed and in event order (paper VII-VIII: the
replay's data lake lives in Kafka on clusters).

Spark's own Kafka writer needs the spark-sql-kafka jar from Maven Central, which cannot be had on
these machines, so the load goes through kafka-python: the data set's JSON lines are read in event
order and produced one by one with ``acks=all``, idempotence and one request in flight, so that each
partition receives its events in order. The key is the event's auction (bids, auctions) or person
id: every event of an entity lands in one partition, in order. After the flush the topic's end
offsets must account for every record sent, or the load is refused: a broker that loses records must
not feed a campaign.

STAND-IN NOTE: no Kafka broker runs on these machines. The tests drive this module with a scripted
producer, admin and consumer (tests/test_kafka_load.py); on a cluster it runs against the brokers
that the kafka role deploys (docs/data.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Iterator

from streambed.dataset import DataSet
from streambed.errors import UserError

KEY_FIELD = {0: ("person", "id"), 1: ("auction", "id"), 2: ("bid", "auction")}
"""event_type -> the field whose value keys the record."""


@dataclass(frozen=True)
class KafkaTarget:
    bootstrap: str
    """host:port[,host:port...] of the brokers."""
    topic: str
    partitions: int = 8
    replication: int = 1
    linger_ms: int = 20
    batch_bytes: int = 1 << 20


def records(d: DataSet) -> Iterator[tuple[bytes, bytes]]:
    """(key, value) of each event of ``d``, in event order (files by name, lines in order)."""
    for path in sorted(d.replay_dir.glob("part-*.json")):
        with path.open("rb") as f:
            for n, line in enumerate(f, 1):
                line = line.rstrip(b"\n")
                if not line:
                    continue
                try:
                    event = json.loads(line)
                    kind, field = KEY_FIELD[event["event_type"]]
                    key = str(event[kind][field]).encode()
                except (ValueError, KeyError, TypeError) as e:
                    raise UserError(f"{path}:{n}: not an event of the data set ({type(e).__name__}: {e})") from None
                yield key, line


def _clients(target: KafkaTarget):  # pragma: no cover - needs a broker
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=target.bootstrap, acks="all", enable_idempotence=True,
                             max_in_flight_requests_per_connection=1, linger_ms=target.linger_ms,
                             batch_size=target.batch_bytes, retries=10)
    admin = KafkaAdminClient(bootstrap_servers=target.bootstrap)
    consumer = KafkaConsumer(bootstrap_servers=target.bootstrap, enable_auto_commit=False)
    return producer, admin, consumer


def load(d: DataSet, target: KafkaTarget, clients: Callable = _clients,
         progress: Callable[[int, int], None] = lambda done, total: None) -> dict:
    """Load ``d`` into ``target.topic`` (created with ``target.partitions`` if absent); the counts."""
    try:
        producer, admin, consumer = clients(target)
    except Exception as e:  # kafka-python raises NoBrokersAvailable and friends: one line, no traceback
        raise UserError(f"--bootstrap {target.bootstrap}: cannot reach Kafka ({type(e).__name__}: {e})") from None
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError
    from kafka.structs import TopicPartition

    try:
        admin.create_topics([NewTopic(target.topic, target.partitions, target.replication)])
    except TopicAlreadyExistsError:
        pass
    partitions = sorted(consumer.partitions_for_topic(target.topic) or ())
    if not partitions:
        raise UserError(f"--topic {target.topic}: Kafka reports no partitions for it")
    tps = [TopicPartition(target.topic, p) for p in partitions]
    before = sum(consumer.end_offsets(tps).values())
    sent = 0
    for key, value in records(d):
        producer.send(target.topic, key=key, value=value)
        sent += 1
        if sent % 100_000 == 0:
            progress(sent, d.events)
    producer.flush()
    progress(sent, d.events)
    after = sum(consumer.end_offsets(tps).values())
    if after - before != sent:
        raise UserError(f"--topic {target.topic}: sent {sent:,} records but the topic's end offsets grew by "
                        f"{after - before:,}; the broker lost or duplicated records, do not replay from it")
    return {"topic": target.topic, "partitions": len(partitions), "records": sent, "end_offsets": after}
