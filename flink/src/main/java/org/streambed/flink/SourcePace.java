package org.streambed.flink;

import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.groups.SourceReaderMetricGroup;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;

/**
 * The pacing of one source subtask, whatever its events come from: the total target re-read
 * through a shared {@link RatePoller} (or a constant initial rate), this subtask's share of it
 * ({@code total / parallelism}) in a {@link Pacer}, the wake-up when the schedule says wait, and
 * the counters behind the reader's gauges ({@code pendingRecords}, {@code targetRate},
 * {@code emittedRecords}) and {@link SourceStats}, readable from any thread.
 */
final class SourcePace implements PacedStats {

    /** At most this many records per pollNext call (keeps the mailbox responsive). */
    static final int MAX_BATCH = 256;
    static final long MIN_WAIT_NANOS = 1_000_000L;
    static final long MAX_WAIT_NANOS = RatePoller.POLL_MS * 1_000_000L;

    private final String rateLocation;
    private final double initialRate;
    private final Pacer pacer;
    private RatePoller poller;
    private int parallelism = 1;
    private double totalRate;
    private ScheduledFuture<?> wakeUp;

    private volatile long emittedSnapshot;
    private volatile long pendingSnapshot;
    // When pendingSnapshot was taken, and the rate the pacer accrues at until the next poll: a source
    // held by back-pressure is not polled, yet its backlog grows (see pendingRecords).
    private volatile long snapshotNanos = System.nanoTime();
    private volatile double accrualRate;
    private volatile double targetSnapshot;

    /**
     * @param rateLocation file path or http(s) URL of the total target rate; null for a constant initialRate
     * @param initialRate total rate until the first good read (NaN: 0)
     * @param catchUp 0 strict, > 0 backlog caught up at (1 + catchUp) x target, inf as fast as possible
     */
    SourcePace(String rateLocation, double initialRate, double catchUp) {
        this.rateLocation = rateLocation;
        this.initialRate = initialRate;
        this.pacer = new Pacer(catchUp);
    }

    /** The reader's gauges; {@code pendingRecords} is the standard FLIP-33 one. */
    void registerMetrics(SourceReaderMetricGroup metrics) {
        metrics.setPendingRecordsGauge(this::pendingRecords);
        metrics.gauge("targetRate", (Gauge<Double>) () -> targetSnapshot);
        metrics.gauge("emittedRecords", (Gauge<Long>) () -> emittedSnapshot);
    }

    /** Starts reading the target and the timer; the pacer itself starts with the first poll. */
    void start(int currentParallelism) {
        parallelism = Math.max(1, currentParallelism);
        if (rateLocation != null) {
            poller = RatePoller.acquire(rateLocation);
        }
        Timer.acquire();
        targetSnapshot = currentTotal() / parallelism;
    }

    int parallelism() {
        return parallelism;
    }

    /** The total target rate of the last {@link #allowed} call (the generator derives auction lengths from it). */
    double totalRate() {
        return totalRate;
    }

    private double currentTotal() {
        double total = poller != null ? poller.get() : Double.NaN;
        if (Double.isNaN(total)) {
            total = Double.isNaN(initialRate) ? 0.0 : initialRate;
        }
        return total;
    }

    /** Re-reads the target and advances the schedule: the records that may go out now (at most MAX_BATCH). */
    long allowed(long now) {
        double total = currentTotal();
        totalRate = total;
        double share = total / parallelism;
        if (share != pacer.rate()) {
            pacer.setRate(share, now);
        }
        targetSnapshot = share;
        pacer.advance(now);
        return Math.min(pacer.allowed(), MAX_BATCH);
    }

    /** {@code n} records went out in the poll that started at {@code now}. */
    void emitted(long n, long now) {
        pacer.emitted(n);
        emittedSnapshot = pacer.emittedCount();
        snapshot(now);
    }

    /** A future completed when the schedule allows the next record; the poll found none allowed. */
    CompletableFuture<Void> waitForSchedule(long now) {
        snapshot(now);
        long wait = Math.max(MIN_WAIT_NANOS, Math.min(MAX_WAIT_NANOS, pacer.nanosUntilNext()));
        CompletableFuture<Void> f = new CompletableFuture<>();
        wakeUp = Timer.schedule(() -> f.complete(null), wait);
        return f;
    }

    private void snapshot(long now) {
        pendingSnapshot = pacer.pending();
        accrualRate = pacer.rate();
        snapshotNanos = now;
    }

    void close() {
        if (wakeUp != null) {
            wakeUp.cancel(false);
        }
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

    /**
     * The backlog now, from any thread: the last snapshot plus what the pacer has accrued since, as
     * nothing is emitted between two polls. Without the accrual a source stalled by back-pressure
     * would report a frozen backlog, and the controller, which reads a window's emission from the
     * backlog's growth, would count the stall as emitted.
     */
    @Override
    public long pendingRecords() {
        long since = System.nanoTime() - snapshotNanos;
        return pendingSnapshot + (since > 0 ? (long) Math.floor(accrualRate * since / 1e9) : 0L);
    }

    @Override
    public double targetRate() {
        return targetSnapshot;
    }

    /** One daemon timer thread per JVM for the readers' wake-ups, stopped with the last reader. */
    static final class Timer {
        private static java.util.concurrent.ScheduledThreadPoolExecutor executor;
        private static int refs;

        static synchronized void acquire() {
            if (executor == null) {
                executor = new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> {
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
            return executor.schedule(r, nanos, java.util.concurrent.TimeUnit.NANOSECONDS);
        }
    }
}
