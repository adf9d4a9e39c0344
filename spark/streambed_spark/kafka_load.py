"""A data set of the lake loaded into a Kafka topic, keyed and in event order (paper VII-VIII: the
replay's data lake lives in Kafka on clusters), in parallel.

The topic's partitions are spread over producer processes (partition p goes to producer p mod W).
Each producer reads the data set in event order and sends the records of its own partitions, so
every partition still receives its events in order, from one producer. The key is the event's
auction (bids, auctions) or person id, and its partition is Kafka's default for that key
(murmur2, as the Java client computes it): every event of an entity lands in one partition.
Records go out in large compressed batches (librdkafka through confluent-kafka, ``acks=all``,
idempotence: retries neither reorder nor duplicate). Spark's own Kafka writer would need the
spark-sql-kafka jar from Maven Central, which cannot be had on these machines.

After the flush two checks refuse a load that a campaign must not replay from: every record was
acknowledged, and the topic's end offsets grew by exactly the records sent.
"""

from __future__ import annotations

import json
import multiprocessing
import queue as queues
import re
from dataclasses import dataclass, field
from typing import Callable, Iterator

from kafka.partitioner.default import murmur2

from streambed.dataset import DataSet
from streambed.errors import UserError

KEY_FIELD = {0: ("person", "id"), 1: ("auction", "id"), 2: ("bid", "auction")}
"""event_type -> the field whose value keys the record."""

COMPRESSIONS = ("none", "gzip", "snappy", "lz4")
"""Codecs Flink's KafkaSource reads with the jars it has (lz4 and snappy are in flink-dist, gzip in
the JDK; zstd would need zstd-jni in the job)."""

REACH_SECONDS = 15.0
"""How long the loader waits for the brokers' first answer."""

# The lake's layout: event_type, then the event's struct, whose first field is its key.
_LAKE_KEY = re.compile(rb'"event_type"\s*:\s*([0-2])\s*,\s*"(person|auction|bid)"\s*:\s*\{\s*"(id|auction)"\s*:\s*'
                       rb'(-?[0-9]+)\s*[,}]')
_LAKE_FIELD = {(b"0", b"person"): b"id", (b"1", b"auction"): b"id", (b"2", b"bid"): b"auction"}


@dataclass(frozen=True)
class KafkaTarget:
    bootstrap: str
    """host:port[,host:port...] of the brokers."""
    topic: str
    partitions: int = 8
    replication: int = 1
    producers: int = 1
    """Producer processes; the topic's partitions are spread over them (each reads the whole data set:
    worth it where cores are free, docs/data.md)."""
    compression: str = "lz4"
    linger_ms: int = 5
    batch_bytes: int = 1 << 20
    settings: dict = field(default_factory=dict)
    """More librdkafka producer settings (``queue.buffering.max.kbytes``, ...)."""


def event_key(line: bytes) -> bytes:
    """The key of one event's JSON line: its person's or auction's id, or its bid's auction.

    A regular expression finds it in the lake's layout (event_type, then the event's struct starting
    with its key field); anything else goes through the JSON parser. A JSON string cannot hold an unescaped
    quote, so the expression never matches inside a value."""
    m = _LAKE_KEY.search(line)
    if m and _LAKE_FIELD.get((m[1], m[2])) == m[3]:
        return m[4]
    event = json.loads(line)
    kind, name = KEY_FIELD[event["event_type"]]
    value = event[kind][name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{kind}.{name} is {value!r}, not an integer id")
    return str(value).encode()


def partition_of(key: bytes, partitions: int) -> int:
    """Kafka's default partition of a key (the Java client's murmur2, positive, modulo partitions)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def shares(partitions: int, producers: int) -> list[tuple[int, ...]]:
    """The partitions each producer sends to: p goes to producer p mod W (no producer without one)."""
    w = max(1, min(producers, partitions))
    return [tuple(range(i, partitions, w)) for i in range(w)]


def records(d: DataSet) -> Iterator[tuple[bytes, bytes]]:
    """(key, value) of each event of ``d``, in event order (files by name, lines in order)."""
    for path in sorted(d.replay_dir.glob("part-*.json")):
        with path.open("rb") as f:
            for n, line in enumerate(f, 1):
                line = line.rstrip(b"\r\n")
                if not line.strip():
                    continue
                try:
                    key = event_key(line)
                except (ValueError, KeyError, TypeError) as e:
                    raise UserError(f"{path}:{n}: not an event of the data set ({type(e).__name__}: {e})") from None
                yield key, line


@dataclass
class Delivery:
    """What one producer sent and what the brokers acknowledged."""
    sent: dict = field(default_factory=dict)
    """partition -> records sent."""
    acked: int = 0
    errors: int = 0
    first_error: str = ""


class Confluent:  # pragma: no cover - exercised against a broker (tests/test_kafka_broker.py)
    """The loader's Kafka client: librdkafka through confluent-kafka."""

    def __init__(self, target: KafkaTarget):
        from confluent_kafka.admin import AdminClient
        self.target = target
        # librdkafka logs each failed connection on stderr; the loader reports failures itself
        self.quiet = {"log_level": 2}
        self.admin = AdminClient({"bootstrap.servers": target.bootstrap, **self.quiet})
        self.producer = None
        self.queued = 0
        self.delivery = Delivery()

    def topic_partitions(self) -> int:
        """Creates the topic if absent; its number of partitions."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic
        t = self.target
        try:
            self.admin.list_topics(timeout=REACH_SECONDS)
        except KafkaException as e:
            raise UserError(f"--bootstrap {t.bootstrap}: cannot reach Kafka within {REACH_SECONDS:g} s "
                            f"({e.args[0].str() if e.args else e})") from None
        future = self.admin.create_topics([NewTopic(t.topic, t.partitions, t.replication)])[t.topic]
        try:
            future.result(timeout=30)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        topic = self.admin.list_topics(t.topic, timeout=30).topics.get(t.topic)
        return len(topic.partitions) if topic is not None and topic.error is None else 0

    def end_offsets(self, partitions: int) -> dict[int, int]:
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": self.target.bootstrap, "group.id": "streambed-load",
                      "enable.auto.commit": False, **self.quiet})
        try:
            return {p: c.get_watermark_offsets(TopicPartition(self.target.topic, p), timeout=30, cached=False)[1]
                    for p in range(partitions)}
        finally:
            c.close()

    def send(self, partition: int, key: bytes, value: bytes) -> None:
        if self.producer is None:
            from confluent_kafka import Producer
            t = self.target
            self.producer = Producer({
                "bootstrap.servers": t.bootstrap, "acks": "all", "enable.idempotence": True,
                "compression.type": t.compression, "linger.ms": t.linger_ms, "batch.size": t.batch_bytes,
                "queue.buffering.max.messages": 1_000_000,
                "delivery.report.only.error": True,  # a report per record costs more than sending it
                **self.quiet, **t.settings})
        self.queued += 1
        if self.queued % 10_000 == 0:
            self.producer.poll(0)  # serve delivery reports as they come
        while True:
            try:
                self.producer.produce(self.target.topic, value=value, key=key, partition=partition,
                                      on_delivery=self._delivered)
                return
            except BufferError:  # the local queue is full: serve delivery reports, then retry
                self.producer.poll(0.05)

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.delivery.errors += 1
            self.delivery.first_error = self.delivery.first_error or str(err)

    def flush(self) -> None:
        if self.producer is not None:
            while self.producer.flush(30) > 0:
                pass
        # reports come for failures only: what is neither queued nor failed was acknowledged
        self.delivery.acked = self.queued - self.delivery.errors


def produce_share(d: DataSet, target: KafkaTarget, share: tuple[int, ...], partitions: int,
                  connect: Callable = Confluent, report: Callable[[int], None] = lambda sent: None) -> Delivery:
    """Sends the events of ``d`` whose partition is in ``share``, in event order; what was acknowledged."""
    client = connect(target)
    mine = frozenset(share)
    where: dict[bytes, int] = {}  # key -> partition: keys repeat (hot auctions), murmur2 is slow in Python
    sent = {p: 0 for p in share}
    n = 0
    for key, value in records(d):
        p = where.get(key)
        if p is None:
            p = where[key] = partition_of(key, partitions)
            if len(where) > 1_000_000:
                where.clear()
        if p in mine:
            client.send(p, key, value)
            sent[p] += 1
            n += 1
            if n % 50_000 == 0:
                report(n)
    client.flush()
    report(n)
    client.delivery.sent = sent
    return client.delivery


def _worker(d, target, share, partitions, connect, progress: multiprocessing.Queue, index: int) -> None:
    try:
        delivery = produce_share(d, target, share, partitions, connect, lambda n: progress.put((index, n)))
        progress.put((index, delivery))
    except BaseException as e:  # the parent reports it in one line
        progress.put((index, f"{type(e).__name__}: {e}"))


def _in_processes(d: DataSet, target: KafkaTarget, parts: list[tuple[int, ...]], partitions: int,
                  connect: Callable, progress: Callable[[int, int], None]) -> list[Delivery]:
    ctx = multiprocessing.get_context("spawn")  # librdkafka's threads do not survive a fork
    q = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(d, target, s, partitions, connect, q, i), daemon=True)
             for i, s in enumerate(parts)]
    for p in procs:
        p.start()
    counts, done = [0] * len(parts), {}
    try:
        while len(done) < len(parts):
            try:
                i, item = q.get(timeout=1.0)
            except queues.Empty:
                dead = [i for i, p in enumerate(procs) if not p.is_alive() and i not in done]
                if dead and q.empty():
                    raise UserError(f"--topic {target.topic}: producer {dead[0]} ended without a report "
                                    f"(exit status {procs[dead[0]].exitcode})")
                continue
            if isinstance(item, int):
                counts[i] = item
                progress(sum(counts), d.events)
            elif isinstance(item, str):
                raise UserError(f"--topic {target.topic}: producer {i} failed ({item})")
            else:
                done[i] = item
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join()
    return [done[i] for i in range(len(parts))]


def load(d: DataSet, target: KafkaTarget, connect: Callable = Confluent,
         progress: Callable[[int, int], None] = lambda done, total: None) -> dict:
    """Load ``d`` into ``target.topic`` (created with ``target.partitions`` if absent) with
    ``target.producers`` processes (one: in this process); the counts. Refused (UserError) when a
    record was not acknowledged or the end offsets did not grow by exactly the records sent."""
    if target.compression not in COMPRESSIONS:
        raise UserError(f"--compression: expected one of {', '.join(COMPRESSIONS)}, got {target.compression!r}")
    try:
        admin = connect(target)
        partitions = admin.topic_partitions()
    except UserError:
        raise
    except Exception as e:  # the client's own errors (unreachable, refused): one line, no traceback
        raise UserError(f"--bootstrap {target.bootstrap}: cannot reach Kafka ({type(e).__name__}: {e})") from None
    if not partitions:
        raise UserError(f"--topic {target.topic}: Kafka reports no partitions for it")
    before = admin.end_offsets(partitions)
    parts = shares(partitions, target.producers)
    if len(parts) == 1:
        deliveries = [produce_share(d, target, parts[0], partitions, connect, lambda n: progress(n, d.events))]
    else:
        deliveries = _in_processes(d, target, parts, partitions, connect, progress)
    sent = sum(sum(x.sent.values()) for x in deliveries)
    errors = [x for x in deliveries if x.errors]
    if errors or sum(x.acked for x in deliveries) != sent:
        raise UserError(f"--topic {target.topic}: sent {sent:,} records, {sum(x.acked for x in deliveries):,} "
                        f"acknowledged ({sum(x.errors for x in deliveries):,} failed"
                        f"{': ' + errors[0].first_error if errors else ''}); do not replay from it")
    after = admin.end_offsets(partitions)
    grown = sum(after.values()) - sum(before.values())
    if grown != sent:
        raise UserError(f"--topic {target.topic}: sent {sent:,} records but the topic's end offsets grew by "
                        f"{grown:,}; the broker lost or duplicated records, do not replay from it")
    return {"topic": target.topic, "partitions": partitions, "producers": len(parts), "records": sent,
            "end_offsets": sum(after.values())}
