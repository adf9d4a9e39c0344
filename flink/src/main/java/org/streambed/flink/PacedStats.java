package org.streambed.flink;

/** What a paced source reader reports to {@link SourceStats}: its own counters, readable from any thread. */
interface PacedStats {

    long emittedRecords();

    long pendingRecords();

    double targetRate();
}
