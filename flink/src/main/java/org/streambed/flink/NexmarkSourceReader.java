package org.streambed.flink;

import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.table.data.RowData;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

/**
 * A source subtask: emits the events of its splits round-robin, paced by a {@link SourcePace} at
 * {@code total target / source parallelism}. A split's events come from the generator or, with
 * {@code replay-dir}, from a data set at rest ({@link SplitEvents}); the pacing is the same.
 *
 * <p>Metrics on the reader's group: {@code pendingRecords} (standard FLIP-33 gauge: records the
 * source should have emitted by now minus those it emitted), {@code targetRate} (this subtask's
 * share, events/s) and {@code emittedRecords}.
 */
final class NexmarkSourceReader implements SourceReader<RowData, NexmarkSplit>, PacedStats {

    private final SourceReaderContext context;
    private final NexmarkSource config;
    private final List<SplitEvents> splits = new ArrayList<>();
    private final SplittableRandom random = new SplittableRandom();
    private final SourcePace pace;
    private int cursor;
    private CompletableFuture<Void> available = new CompletableFuture<>();

    NexmarkSourceReader(SourceReaderContext context, NexmarkSource config) {
        this.context = context;
        this.config = config;
        this.pace = new SourcePace(config.rateLocation, config.initialRate, config.catchUp);
    }

    @Override
    public void start() {
        pace.start(context.currentParallelism());
        pace.registerMetrics(context.metricGroup());
        SourceStats.register(this);
    }

    @Override
    public InputStatus pollNext(ReaderOutput<RowData> output) throws IOException {
        if (splits.isEmpty()) {
            if (available.isDone()) {
                available = new CompletableFuture<>();
            }
            return InputStatus.NOTHING_AVAILABLE;
        }
        long now = System.nanoTime();
        long n = pace.allowed(now);
        if (n > 0) {
            long millis = System.currentTimeMillis();
            double totalRate = pace.totalRate();
            int size = splits.size();
            long j = 0;
            try {
                for (; j < n; j++) {
                    SplitEvents s = splits.get(cursor);
                    if (++cursor >= size) {
                        cursor = 0;
                    }
                    output.collect(s.next(millis, totalRate));
                }
            } finally {
                // a replay that runs out or hits a bad line fails the task: count what went out first
                pace.emitted(j, now);
            }
            return InputStatus.MORE_AVAILABLE;
        }
        available = pace.waitForSchedule(now);
        return InputStatus.NOTHING_AVAILABLE;
    }

    @Override
    public CompletableFuture<Void> isAvailable() {
        return available;
    }

    @Override
    public List<NexmarkSplit> snapshotState(long checkpointId) {
        List<NexmarkSplit> copy = new ArrayList<>(splits.size());
        for (SplitEvents s : splits) {
            copy.add(s.split().copy());
        }
        return copy;
    }

    @Override
    public void addSplits(List<NexmarkSplit> newSplits) {
        for (NexmarkSplit s : newSplits) {
            splits.add(config.replay != null
                    ? config.replay.open(s, config.numSplits)
                    : new SplitEvents.Generated(s, config.numSplits, random));
        }
        available.complete(null);
    }

    @Override
    public void notifyNoMoreSplits() {}

    @Override
    public void close() {
        available.complete(null);
        for (SplitEvents s : splits) {
            s.close();
        }
        SourceStats.unregister(this);
        pace.close();
    }

    @Override
    public long emittedRecords() {
        return pace.emittedRecords();
    }

    @Override
    public long pendingRecords() {
        return pace.pendingRecords();
    }

    @Override
    public double targetRate() {
        return pace.targetRate();
    }
}
