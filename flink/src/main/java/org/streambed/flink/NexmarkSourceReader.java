package org.streambed.flink;

import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.groups.SourceReaderMetricGroup;
import org.apache.flink.table.data.RowData;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A source subtask: emits the events of its splits round-robin, paced by a {@link Pacer} at
 * {@code total target / source parallelism}, the total being re-read through a shared
 * {@link RatePoller}. A split's events come from the generator or, with {@code replay-dir}, from
 * a data set at rest ({@link SplitEvents}); the pacing is the same.
 *
 * <p>Metrics on the reader's group: {@code pendingRecords} (standard FLIP-33 gauge: records the
 * source should have emitted by now minus those it emitted), {@code targetRate} (this subtask's
 * share, events/s) and {@code emittedRecords}.
 */
final class NexmarkSourceReader implements SourceReader<RowData, NexmarkSplit>, PacedStats {

    /** At most this many records per pollNext call (keeps the mailbox responsive). */
    static final int MAX_BATCH = 256;
    static final long MIN_WAIT_NANOS = 1_000_000L;
    static final long MAX_WAIT_NANOS = RatePoller.POLL_MS * 1_000_000L;

    private final SourceReaderContext context;
    private final NexmarkSource config;
    private final List<SplitEvents> splits = new ArrayList<>();
    private final SplittableRandom random = new SplittableRandom();
    private final Pacer pacer;
    private RatePoller poller;
    private int cursor;
    private int parallelism = 1;
    private double totalRate;
    private CompletableFuture<Void> available = new CompletableFuture<>();
    private ScheduledFuture<?> wakeUp;

    // Snapshots for gauges / local stats (read by other threads).
    private volatile long emittedSnapshot;
    private volatile long pendingSnapshot;
    // When pendingSnapshot was taken, and the rate the pacer accrues at until the next poll: a source
    // held by back-pressure is not polled, yet its backlog grows (see pendingNow).
    private volatile long snapshotNanos;
    private volatile double accrualRate;
    private volatile double targetSnapshot;

    NexmarkSourceReader(SourceReaderContext context, NexmarkSource config) {
        this.context = context;
        this.config = config;
        this.pacer = new Pacer(config.catchUp);
    }

    @Override
    public void start() {
        parallelism = Math.max(1, context.currentParallelism());
        if (config.rateLocation != null) {
            poller = RatePoller.acquire(config.rateLocation);
        }
        Timer.acquire();
        SourceReaderMetricGroup metrics = context.metricGroup();
        metrics.setPendingRecordsGauge(this::pendingNow);
        metrics.gauge("targetRate", (Gauge<Double>) () -> targetSnapshot);
        metrics.gauge("emittedRecords", (Gauge<Long>) () -> emittedSnapshot);
        SourceStats.register(this);
        targetSnapshot = currentTotal() / parallelism; // the pacer starts with the first split
    }

    private double currentTotal() {
        double total = poller != null ? poller.get() : Double.NaN;
        if (Double.isNaN(total)) {
            total = Double.isNaN(config.initialRate) ? 0.0 : config.initialRate;
        }
        return total;
    }

    private void refreshRate(long now) {
        double total = currentTotal();
        totalRate = total;
        double share = total / parallelism;
        if (share != pacer.rate()) {
            pacer.setRate(share, now);
        }
        targetSnapshot = share;
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
        refreshRate(now);
        pacer.advance(now);
        long n = Math.min(pacer.allowed(), MAX_BATCH);
        if (n > 0) {
            long millis = System.currentTimeMillis();
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
                pacer.emitted(j);
                emittedSnapshot = pacer.emittedCount();
                snapshotPending(now);
            }
            return InputStatus.MORE_AVAILABLE;
        }
        snapshotPending(now);
        long wait = Math.max(MIN_WAIT_NANOS, Math.min(MAX_WAIT_NANOS, pacer.nanosUntilNext()));
        CompletableFuture<Void> f = new CompletableFuture<>();
        available = f;
        wakeUp = Timer.schedule(() -> f.complete(null), wait);
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
        if (wakeUp != null) {
            wakeUp.cancel(false);
        }
        available.complete(null);
        for (SplitEvents s : splits) {
            s.close();
        }
        SourceStats.unregister(this);
        if (poller != null) {
            poller.release();
            poller = null;
        }
        Timer.release();
    }

    @Override
    public long emittedRecords() {
        return emittedSnapshot;
    }

    @Override
    public long pendingRecords() {
        return pendingNow();
    }

    private void snapshotPending(long now) {
        pendingSnapshot = pacer.pending();
        accrualRate = pacer.rate();
        snapshotNanos = now;
    }

    /**
     * The backlog now, from any thread: the last snapshot plus what the pacer has accrued since, as
     * nothing is emitted between two polls. Without the accrual a source stalled by back-pressure
     * would report a frozen backlog, and the controller, which reads a window's emission from the
     * backlog's growth, would count the stall as emitted.
     */
    long pendingNow() {
        long since = System.nanoTime() - snapshotNanos;
        return pendingSnapshot + (since > 0 ? (long) Math.floor(accrualRate * since / 1e9) : 0L);
    }

    @Override
    public double targetRate() {
        return targetSnapshot;
    }

    /** One daemon timer thread per JVM for the readers' wake-ups, stopped with the last reader. */
    static final class Timer {
        private static ScheduledThreadPoolExecutor executor;
        private static int refs;

        static synchronized void acquire() {
            if (executor == null) {
                executor = new ScheduledThreadPoolExecutor(1, r -> {
                    Thread t = new Thread(r, "streambed-source-timer");
                    t.setDaemon(true);
                    return t;
                });
                executor.setRemoveOnCancelPolicy(true);
            }
            refs++;
        }

        static synchronized void release() {
            if (--refs <= 0 && executor != null) {
                executor.shutdownNow();
                executor = null;
                refs = 0;
            }
        }

        static synchronized ScheduledFuture<?> schedule(Runnable r, long nanos) {
            if (executor == null) {
                r.run();
                return null;
            }
            return executor.schedule(r, nanos, TimeUnit.NANOSECONDS);
        }
    }
}
