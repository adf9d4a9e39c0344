package org.streambed.flink;

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.table.data.RowData;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Any FLIP-27 source of rows (here Flink's KafkaSource over a replayed topic) paced like the
 * Nexmark source, by a {@link SourcePace}: the same total target re-read through a {@link RatePoller}
 * and split over the source subtasks, the same metrics ({@code pendingRecords}, {@code targetRate},
 * {@code emittedRecords}). Splits, enumerator and checkpoints stay the wrapped source's own.
 */
public final class PacedSource<S extends SourceSplit, E>
        implements Source<RowData, S, E>, ResultTypeQueryable<RowData> {

    private static final long serialVersionUID = 1L;

    private final Source<RowData, S, E> inner;
    private final TypeInformation<RowData> type;
    /** File path or http(s) URL of the total target rate; null for a constant initialRate. */
    final String rateLocation;
    /** Total rate until the first good read (NaN: 0). */
    final double initialRate;
    /** 0 strict, > 0 backlog caught up at (1 + catchUp) x target, inf as fast as possible. */
    final double catchUp;
    /** What the inner source replays, for the message when it runs out ("the topic T at B"). */
    final String what;

    public PacedSource(Source<RowData, S, E> inner, TypeInformation<RowData> type, String rateLocation,
            double initialRate, double catchUp, String what) {
        this.inner = inner;
        this.what = what;
        this.type = type;
        this.rateLocation = rateLocation;
        this.initialRate = initialRate;
        this.catchUp = catchUp;
    }

    /**
     * Unbounded, as the generator, so that the planner builds the same streaming job: an inner
     * source that ends fails the task with {@code REPLAY_EXHAUSTED} instead (see Reader#pollNext).
     */
    @Override
    public Boundedness getBoundedness() {
        return Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public TypeInformation<RowData> getProducedType() {
        return type;
    }

    @Override
    public SourceReader<RowData, S> createReader(SourceReaderContext context) throws Exception {
        Reader<S> reader = new Reader<>(context, this); // registers its gauges before the inner reader's
        reader.inner = inner.createReader(context);
        return reader;
    }

    @Override
    public SplitEnumerator<S, E> createEnumerator(SplitEnumeratorContext<S> context) throws Exception {
        return inner.createEnumerator(context);
    }

    @Override
    public SplitEnumerator<S, E> restoreEnumerator(SplitEnumeratorContext<S> context, E checkpoint) throws Exception {
        return inner.restoreEnumerator(context, checkpoint);
    }

    @Override
    public SimpleVersionedSerializer<S> getSplitSerializer() {
        return inner.getSplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<E> getEnumeratorCheckpointSerializer() {
        return inner.getEnumeratorCheckpointSerializer();
    }

    /**
     * A source subtask: lets the inner reader emit at most what the pacer allows, so the inner
     * reader (Kafka's fetcher) is simply not polled while the schedule says wait; what it has
     * fetched stays in its queue and Kafka's own flow control holds the rest.
     */
    static final class Reader<S extends SourceSplit> implements SourceReader<RowData, S>, PacedStats {
        private final SourceReaderContext context;
        private final PacedSource<S, ?> config;
        private final SourcePace pace;
        private final CountingOutput counting = new CountingOutput();
        SourceReader<RowData, S> inner;
        private CompletableFuture<Void> available = CompletableFuture.completedFuture(null);

        Reader(SourceReaderContext context, PacedSource<S, ?> config) {
            this.context = context;
            this.config = config;
            this.pace = new SourcePace(config.rateLocation, config.initialRate, config.catchUp);
            pace.registerMetrics(context.metricGroup());
        }

        @Override
        public void start() {
            pace.start(context.currentParallelism());
            SourceStats.register(this);
            inner.start();
        }

        @Override
        public InputStatus pollNext(ReaderOutput<RowData> output) throws Exception {
            long now = System.nanoTime();
            long n = pace.allowed(now);
            if (n > 0) {
                counting.start(output);
                InputStatus status = InputStatus.MORE_AVAILABLE;
                try {
                    // the inner reader emits at most one record per call, sometimes none (a split switch)
                    for (long calls = 0; counting.count < n && calls < 2 * n + 8; calls++) {
                        status = inner.pollNext(counting);
                        if (status != InputStatus.MORE_AVAILABLE) {
                            break;
                        }
                    }
                } finally {
                    pace.emitted(counting.count, now);
                }
                if (status == InputStatus.NOTHING_AVAILABLE) {
                    available = inner.isAvailable();
                } else if (status == InputStatus.END_OF_INPUT) {
                    // a campaign must not read a stalled source as back-pressure: fail, as a file replay does
                    throw new java.io.IOException("REPLAY_EXHAUSTED: " + config.what + " ran out after "
                            + pace.emittedRecords() + " events (source subtask " + context.getIndexOfSubtask()
                            + " of " + pace.parallelism() + "); load more events or shorten the run");
                }
                return status;
            }
            available = pace.waitForSchedule(now);
            return InputStatus.NOTHING_AVAILABLE;
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return available;
        }

        @Override
        public List<S> snapshotState(long checkpointId) {
            return inner.snapshotState(checkpointId);
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) throws Exception {
            inner.notifyCheckpointComplete(checkpointId);
        }

        @Override
        public void notifyCheckpointAborted(long checkpointId) throws Exception {
            inner.notifyCheckpointAborted(checkpointId);
        }

        @Override
        public void addSplits(List<S> splits) {
            inner.addSplits(splits);
        }

        @Override
        public void notifyNoMoreSplits() {
            inner.notifyNoMoreSplits();
        }

        @Override
        public void handleSourceEvents(SourceEvent event) {
            inner.handleSourceEvents(event);
        }

        @Override
        public void pauseOrResumeSplits(Collection<String> toPause, Collection<String> toResume) {
            inner.pauseOrResumeSplits(toPause, toResume);
        }

        @Override
        public void close() throws Exception {
            available.complete(null);
            SourceStats.unregister(this);
            pace.close();
            if (inner != null) {
                inner.close();
            }
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

    /** Counts the records the inner reader emits, through its main output and its per-split outputs. */
    static final class CountingOutput implements ReaderOutput<RowData> {
        private ReaderOutput<RowData> out;
        long count;

        void start(ReaderOutput<RowData> out) {
            this.out = out;
            this.count = 0;
        }

        @Override
        public void collect(RowData record) {
            count++;
            out.collect(record);
        }

        @Override
        public void collect(RowData record, long timestamp) {
            count++;
            out.collect(record, timestamp);
        }

        @Override
        public void emitWatermark(Watermark watermark) {
            out.emitWatermark(watermark);
        }

        @Override
        public void markIdle() {
            out.markIdle();
        }

        @Override
        public void markActive() {
            out.markActive();
        }

        @Override
        public SourceOutput<RowData> createOutputForSplit(String splitId) {
            SourceOutput<RowData> split = out.createOutputForSplit(splitId);
            return new SourceOutput<RowData>() {
                @Override
                public void collect(RowData record) {
                    count++;
                    split.collect(record);
                }

                @Override
                public void collect(RowData record, long timestamp) {
                    count++;
                    split.collect(record, timestamp);
                }

                @Override
                public void emitWatermark(Watermark watermark) {
                    split.emitWatermark(watermark);
                }

                @Override
                public void markIdle() {
                    split.markIdle();
                }

                @Override
                public void markActive() {
                    split.markActive();
                }
            };
        }

        @Override
        public void releaseOutputForSplit(String splitId) {
            out.releaseOutputForSplit(splitId);
        }
    }
}
