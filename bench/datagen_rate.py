"""Benchmark: how fast Spark writes Nexmark data at rest on this machine, to JSON lines and to
Parquet separately (each format generates the stream anew), with the default chunking and
partitioning of ``streambed data generate``. Prints events/s per format and asserts nothing.
Run: .venv/bin/python bench/datagen_rate.py [--events 10000000] [--master local[2]] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from streambed_spark import lake, nexmark
from streambed_spark.session import SparkSettings, session


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--events", type=int, default=10_000_000)
    p.add_argument("--master", default=None)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    spark = session(SparkSettings(master=a.master) if a.master else SparkSettings())
    # JIT warm-up: the first chunk of a fresh JVM is slower than the rest
    with tempfile.TemporaryDirectory() as warm:
        lake.generate(spark, nexmark.StreamSpec(events=200_000), Path(warm), "warm", formats=("json",))
    result = {"events": a.events, "master": spark.sparkContext.master, "cores": spark.sparkContext.defaultParallelism}
    for fmt in ("json", "parquet"):
        root = Path(tempfile.mkdtemp(prefix="streambed-datagen-"))
        try:
            t0 = time.perf_counter()
            d, _ = lake.generate(spark, nexmark.StreamSpec(events=a.events), root, "bench", formats=(fmt,))
            seconds = time.perf_counter() - t0
            result[fmt] = {"seconds": round(seconds, 1), "events_per_s": round(a.events / seconds),
                           "bytes": d.formats[fmt]["bytes"]}
        finally:
            shutil.rmtree(root, ignore_errors=True)
    if a.json:
        print(json.dumps(result))
    else:
        for fmt in ("json", "parquet"):
            r = result[fmt]
            print(f"datagen {fmt:8s} {a.events:,} events in {r['seconds']:.1f} s: {r['events_per_s']:,} events/s "
                  f"({r['bytes'] / a.events:.0f} bytes/event) on {result['master']}")


if __name__ == "__main__":
    main()
