"""Nexmark events as Spark DataFrame expressions: the data at rest a campaign replays (paper VII-VIII).

The model is the Nexmark benchmark's generator, as flink/.../NexmarkGenerator.java implements it for
the live source: event ``seq`` is a person, an auction or a bid by ``seq mod 50`` (1 / 3 / 46, i.e.
2 / 6 / 92 %); person and auction ids grow with the stream; a bid goes to a hot auction (1 of 2) and
a hot bidder (3 of 4), otherwise to one of the last 100 auctions and 1,000 people; an auction's
seller is hot 3 of 4 times. Text fields are padded so that events average about 200 / 500 / 100 bytes.

Two differences from the live generator, both so that the data is a valid stream at rest:
- every id an event refers to was emitted before it (the live generator may refer to a few ids
  ahead); a hot bidder not created yet is the last person created;
- event times come from the data set's nominal rate (``dateTime = start + seq / rate``), never from
  a clock, so they never go backwards and the same seed gives the same bytes.

Every random draw is a hash of (seed, seq, field), never Spark's ``rand()`` (which depends on the
partition): the events are the same whatever the partitioning. No Python UDF: the job runs at
Spark's speed. A replay replaces event times by processing time (flink/README.md, Replay).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

PERSON_PROPORTION, AUCTION_PROPORTION, BID_PROPORTION = 1, 3, 46
TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION
AVG_PERSON_BYTES, AVG_AUCTION_BYTES, AVG_BID_BYTES = 200, 500, 100
HOT_AUCTION_RATIO, HOT_SELLERS_RATIO, HOT_BIDDERS_RATIO = 2, 4, 4
IN_FLIGHT_AUCTIONS, ACTIVE_PEOPLE = 100, 1000
HOT_BATCH = 100
"""Hot ids are the first (auction, seller) or second (bidder) of each batch of this many ids."""
FIRST_PERSON_ID = FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID, NUM_CATEGORIES = 10, 5
NUM_CHANNELS = 10_000
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent",
          "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")

KINDS = {"person": 0, "auction": 1, "bid": 2}
"""event_type of each kind, as in the Flink job's datagen table."""


@dataclass(frozen=True)
class StreamSpec:
    """What identifies a generated stream: the same spec gives the same events."""

    events: int
    seed: int = 0
    rate: float = 10_000.0
    """Nominal events/s of the stream: event times advance by 1/rate per event, and auctions last
    about as long as 100 more auctions take to arrive at that rate (the benchmark's rule)."""
    start_ms: int = 1_767_225_600_000
    """Event time of the first event (2026-01-01T00:00:00Z)."""


# -- random draws: pure functions of (seed, seq, field) --------------------------------------------------

def _hash(seed: int, seq: Column, key: int) -> Column:
    return F.xxhash64(F.lit(seed), seq, F.lit(key))


def draw(seed: int, seq: Column, key: int, n: int | Column) -> Column:
    """A uniform integer in [0, n) for field ``key`` of event ``seq``."""
    return F.pmod(_hash(seed, seq, key), n if isinstance(n, Column) else F.lit(n))


def uniform(seed: int, seq: Column, key: int) -> Column:
    """A uniform double in [0, 1)."""
    return F.pmod(_hash(seed, seq, key), F.lit(1 << 53)).cast("double") / float(1 << 53)


def _pool(key: str, size: int, space_every: int) -> str:
    """Lower-case letters (with a space about every ``space_every``) that text fields are cut from."""
    r = random.Random(f"streambed-nexmark-{key}")
    return "".join(" " if space_every and r.randrange(space_every) == 0 else chr(97 + r.randrange(26))
                   for _ in range(size))


# Many short pools, not one long one: Spark's substring walks the UTF-8 string from its start, so a
# cut at offset 3,000 of one long literal cost 20x a cut from a 128-character pool (225 k against
# 4-6 M draws/s, measured).
WORDS = tuple(_pool(f"words-{i}", 128, 13) for i in range(64))
PADDING = tuple(_pool(f"padding-{i}", 1024 + 64, 0) for i in range(16))


def _cut(seed: int, seq: Column, key: int, pools: tuple[str, ...], spare: int, length: Column) -> Column:
    """``length`` characters of one of ``pools`` from an offset below ``spare``."""
    pool = F.element_at(F.array(*[F.lit(p) for p in pools]), (draw(seed, seq, key, len(pools)) + 1).cast("int"))
    return F.substring(pool, (draw(seed, seq, key + 1, spare) + 1).cast("int"), length.cast("int"))


def word(seed: int, seq: Column, key: int, max_length: int) -> Column:
    """Text of 3..max_length-1 characters (trimmed), as the benchmark's random strings. Uses draws
    ``key`` .. ``key + 2``."""
    length = draw(seed, seq, key, max_length - 3) + 3
    return F.trim(_cut(seed, seq, key + 1, WORDS, len(WORDS[0]) - max_length + 1, length))


def pick(seed: int, seq: Column, key: int, values: tuple[str, ...]) -> Column:
    return F.element_at(F.array(*[F.lit(v) for v in values]), (draw(seed, seq, key, len(values)) + 1).cast("int"))


def extra(seed: int, seq: Column, key: int, current: Column, average: int) -> Column:
    """Padding that brings an event of size ``current`` to ``average`` bytes on average (+-20 %).
    Uses draws ``key`` .. ``key + 2``."""
    rest = F.lit(average) - current
    delta = F.round(rest * 0.2).cast("long")
    size = F.when(delta > 0, rest - delta + draw(seed, seq, key, F.greatest(2 * delta, F.lit(1)))).otherwise(rest)
    size = F.least(F.greatest(size, F.lit(0)), F.lit(1024))
    return F.when(rest > 0, _cut(seed, seq, key + 1, PADDING, 64, size)).otherwise(F.lit(""))


def price(seed: int, seq: Column, key: int) -> Column:
    """A price (cents) spread log-uniformly over 100..10^8, as the benchmark's."""
    return F.round(F.pow(F.lit(10.0), uniform(seed, seq, key) * 6.0) * 100.0).cast("long")


# -- id arithmetic (base 0), as the benchmark's -------------------------------------------------------------

def kind_of(seq: Column) -> Column:
    r = F.pmod(seq, F.lit(TOTAL_PROPORTION))
    return (F.when(r < PERSON_PROPORTION, F.lit(0))
            .when(r < PERSON_PROPORTION + AUCTION_PROPORTION, F.lit(1)).otherwise(F.lit(2)))


def last_person(seq: Column) -> Column:
    """Id (base 0) of the last person emitted at or before ``seq``."""
    epoch = F.floor(seq / TOTAL_PROPORTION).cast("long")
    return epoch * PERSON_PROPORTION + F.least(F.pmod(seq, F.lit(TOTAL_PROPORTION)), F.lit(PERSON_PROPORTION - 1))


def last_auction(seq: Column) -> Column:
    """Id (base 0) of the last auction emitted at or before ``seq`` (-1 before the first)."""
    epoch = F.floor(seq / TOTAL_PROPORTION).cast("long")
    offset = F.pmod(seq, F.lit(TOTAL_PROPORTION))
    return (F.when(offset < PERSON_PROPORTION, (epoch - 1) * AUCTION_PROPORTION + AUCTION_PROPORTION - 1)
            .when(offset >= PERSON_PROPORTION + AUCTION_PROPORTION, epoch * AUCTION_PROPORTION + AUCTION_PROPORTION - 1)
            .otherwise(epoch * AUCTION_PROPORTION + offset - PERSON_PROPORTION))


def active_person(seed: int, seq: Column, key: int) -> Column:
    """One of the last ACTIVE_PEOPLE people emitted."""
    people = last_person(seq) + 1
    active = F.least(people, F.lit(ACTIVE_PEOPLE))
    return people - active + draw(seed, seq, key, active)


def active_auction(seed: int, seq: Column, key: int) -> Column:
    """One of the last IN_FLIGHT_AUCTIONS auctions emitted."""
    last = F.greatest(last_auction(seq), F.lit(0))
    first = F.greatest(last - IN_FLIGHT_AUCTIONS, F.lit(0))
    return first + draw(seed, seq, key, last - first + 1)


# -- events ------------------------------------------------------------------------------------------------------

def events(spark: SparkSession, spec: StreamSpec, start: int = 0, end: int | None = None,
           partitions: int | None = None) -> DataFrame:
    """Events ``start`` .. ``end`` (exclusive) of the stream: columns seq, event_type and the person /
    auction / bid structs of the Flink job's datagen table (only the event's own struct is set)."""
    end = spec.events if end is None else end
    ids = spark.range(start, end, numPartitions=partitions or spark.sparkContext.defaultParallelism)
    seq = F.col("id")
    s = spec.seed
    now = F.timestamp_millis((F.lit(spec.start_ms) + F.floor(seq * (1000.0 / spec.rate))).cast("long"))
    kind = kind_of(seq)

    name = F.concat(pick(s, seq, 1, FIRST_NAMES), F.lit(" "), pick(s, seq, 2, LAST_NAMES))
    email = F.concat(word(s, seq, 3, 7), F.lit("@"), word(s, seq, 6, 5), F.lit(".com"))
    card = F.concat_ws(" ", *[F.lpad(draw(s, seq, 9 + i, 10_000).cast("string"), 4, "0") for i in range(4)])
    city, state = pick(s, seq, 13, CITIES), pick(s, seq, 14, STATES)
    person_size = F.length(name) + F.length(email) + F.length(card) + F.length(city) + F.length(state) + 8
    person = F.struct(
        (last_person(seq) + FIRST_PERSON_ID).alias("id"), name.alias("name"), email.alias("emailAddress"),
        card.alias("creditCard"), city.alias("city"), state.alias("state"), now.alias("dateTime"),
        extra(s, seq, 15, person_size, AVG_PERSON_BYTES).alias("extra"))

    hot_seller = F.floor(last_person(seq) / HOT_BATCH).cast("long") * HOT_BATCH
    seller = F.when(draw(s, seq, 20, HOT_SELLERS_RATIO) > 0, hot_seller).otherwise(active_person(s, seq, 21))
    initial = price(s, seq, 22)
    item, description = word(s, seq, 24, 20), word(s, seq, 27, 100)
    # Auctions last on average as long as IN_FLIGHT_AUCTIONS more auctions take to arrive.
    horizon_ms = max(int(IN_FLIGHT_AUCTIONS * TOTAL_PROPORTION / AUCTION_PROPORTION * 1000 / spec.rate), 1)
    length_ms = draw(s, seq, 30, 2 * horizon_ms) + 1
    auction_size = F.length(item) + F.length(description) + 48
    auction = F.struct(
        (last_auction(seq) + FIRST_AUCTION_ID).alias("id"), item.alias("itemName"), description.alias("description"),
        initial.alias("initialBid"), (initial + price(s, seq, 23)).alias("reserve"), now.alias("dateTime"),
        F.timestamp_millis(F.unix_millis(now) + length_ms).alias("expires"),
        (seller + FIRST_PERSON_ID).alias("seller"),
        (draw(s, seq, 31, NUM_CATEGORIES) + FIRST_CATEGORY_ID).alias("category"),
        extra(s, seq, 32, auction_size, AVG_AUCTION_BYTES).alias("extra"))

    hot_auction = F.floor(F.greatest(last_auction(seq), F.lit(0)) / HOT_BATCH).cast("long") * HOT_BATCH
    bid_auction = F.when(draw(s, seq, 40, HOT_AUCTION_RATIO) > 0, hot_auction).otherwise(active_auction(s, seq, 41))
    # The hot bidder is the second person of the current batch, or the last person until it exists.
    hot_bidder = F.least(F.floor(last_person(seq) / HOT_BATCH).cast("long") * HOT_BATCH + 1, last_person(seq))
    bidder = F.when(draw(s, seq, 42, HOT_BIDDERS_RATIO) > 0, hot_bidder).otherwise(active_person(s, seq, 43))
    channel_no = draw(s, seq, 45, NUM_CHANNELS)
    hot = draw(s, seq, 44, 2) == 0
    hot_no = draw(s, seq, 46, len(HOT_CHANNELS))
    channel = F.when(hot, F.element_at(F.array(*[F.lit(c) for c in HOT_CHANNELS]), (hot_no + 1).cast("int"))) \
        .otherwise(F.concat(F.lit("channel-"), channel_no.cast("string")))
    # A channel's URL is a function of the channel alone (every bid of a channel carries the same one).
    channel_key = F.when(hot, hot_no).otherwise(channel_no + len(HOT_CHANNELS))
    url = F.concat(F.lit("https://www.nexmark.com/"), word(0, channel_key, 50, 5), F.lit("/"),
                   word(0, channel_key, 53, 5), F.lit("/"), word(0, channel_key, 56, 5), F.lit("/item.htm?query=1"),
                   F.when(~hot & (draw(0, channel_key, 59, 10) == 0),
                          F.concat(F.lit("&channel_id="), channel_no.cast("string"))).otherwise(F.lit("")))
    bid = F.struct(
        (bid_auction + FIRST_AUCTION_ID).alias("auction"), (bidder + FIRST_PERSON_ID).alias("bidder"),
        price(s, seq, 47).alias("price"), channel.alias("channel"), url.alias("url"), now.alias("dateTime"),
        extra(s, seq, 48, F.lit(32), AVG_BID_BYTES).alias("extra"))

    null = F.lit(None)
    return ids.select(
        seq.alias("seq"), kind.alias("event_type"),
        F.when(kind == 0, person).otherwise(null.cast(struct_type("person"))).alias("person"),
        F.when(kind == 1, auction).otherwise(null.cast(struct_type("auction"))).alias("auction"),
        F.when(kind == 2, bid).otherwise(null.cast(struct_type("bid"))).alias("bid"))


PERSON_FIELDS = "id BIGINT, name STRING, emailAddress STRING, creditCard STRING, city STRING, state STRING, " \
                "dateTime TIMESTAMP, extra STRING"
AUCTION_FIELDS = "id BIGINT, itemName STRING, description STRING, initialBid BIGINT, reserve BIGINT, " \
                 "dateTime TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra STRING"
BID_FIELDS = "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, dateTime TIMESTAMP, " \
             "extra STRING"
FIELDS = {"person": PERSON_FIELDS, "auction": AUCTION_FIELDS, "bid": BID_FIELDS}
"""Each kind's fields, as the Flink job's datagen table declares them (StreamBedJob.DATAGEN_PHYSICAL_COLUMNS)."""


def struct_type(kind: str) -> str:
    """The kind's struct as a Spark SQL type, e.g. ``struct<`auction`: BIGINT, ...>``."""
    pairs = (f.strip().split(" ", 1) for f in FIELDS[kind].split(","))
    return "struct<" + ", ".join(f"`{n}`: {t}" for n, t in pairs) + ">"
