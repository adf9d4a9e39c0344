package org.streambed.flink;

/**
 * The rate limiter of one source subtask (not thread-safe; used by the reader's task thread).
 *
 * <p>Two accounts, both fed with the subtask's target rate {@code r} (the total target divided by
 * the source parallelism):
 *
 * <ul>
 *   <li><b>offered</b>: what the source should have emitted by now, integrated at {@code r} since
 *       the reader started; {@code pending = offered - emitted} is the backlog that builds up while
 *       back-pressure holds the source (reported as {@code pendingRecords}).
 *   <li><b>tokens</b>: a token bucket filled at {@code r * (1 + catchUp)} and capped at
 *       {@link #BURST_SECONDS} worth of tokens; it paces the emission.
 * </ul>
 *
 * <p>A record may be emitted when both accounts hold at least one record. With {@code catchUp = 0}
 * (strict) the bucket is never fuller than the backlog, so the emission never exceeds the target
 * (beyond a {@link #BURST_SECONDS} burst) and a backlog is never caught up: it stays visible in
 * {@code pendingRecords}. With {@code catchUp = F > 0} the backlog is caught up at up to
 * {@code (1 + F) r}; with {@code catchUp = inf} as fast as the job accepts.
 */
public final class Pacer {

    /**
     * Bucket size in seconds of emission: absorbs late wake-ups (timer jitter, garbage collection,
     * a busy CPU), bounds bursts. Emission never runs ahead of the schedule (the backlog bounds it),
     * so the bucket only decides how much lost time the source may recover: a wake-up later than
     * this is lost for good and shows as pending records. One second, as Guava's RateLimiter banks;
     * 50 ms lost about 2 % of the target on a loaded 2-core machine, a false "not sustained".
     */
    public static final double BURST_SECONDS = 1.0;

    private final double catchUp;
    private double rate;
    private double offered;
    private double tokens;
    private long emitted;
    private long lastNanos = -1;

    public Pacer(double catchUp) {
        if (!(catchUp >= 0)) {
            throw new IllegalArgumentException("catch-up must be >= 0 or inf");
        }
        this.catchUp = catchUp;
    }

    /** Sets the subtask's target rate (events/s) from now on. */
    public void setRate(double rate, long nowNanos) {
        advance(nowNanos);
        this.rate = Math.max(0.0, rate);
        tokens = Math.min(tokens, cap());
    }

    public double rate() {
        return rate;
    }

    private double fillRate() {
        return Double.isInfinite(catchUp) ? Double.POSITIVE_INFINITY : rate * (1.0 + catchUp);
    }

    private double cap() {
        return Double.isInfinite(catchUp)
                ? Double.POSITIVE_INFINITY
                : Math.max(1.0, fillRate() * BURST_SECONDS);
    }

    /** Accrues both accounts up to now. */
    public void advance(long nowNanos) {
        if (lastNanos < 0) {
            lastNanos = nowNanos;
            return;
        }
        double dt = (nowNanos - lastNanos) / 1e9;
        if (dt <= 0) {
            return;
        }
        lastNanos = nowNanos;
        offered += rate * dt;
        if (!Double.isInfinite(catchUp)) {
            tokens = Math.min(cap(), tokens + fillRate() * dt);
        }
    }

    /** How many records may be emitted now (after {@link #advance}). */
    public long allowed() {
        double backlog = offered - emitted;
        double n = Double.isInfinite(catchUp) ? backlog : Math.min(tokens, backlog);
        return n >= 1.0 ? (long) n : 0L;
    }

    /** Records that n records were emitted. */
    public void emitted(long n) {
        emitted += n;
        if (!Double.isInfinite(catchUp)) {
            tokens -= n;
        }
    }

    /** Nanoseconds until the next record is allowed (Long.MAX_VALUE at rate 0). */
    public long nanosUntilNext() {
        if (rate <= 0) {
            return Long.MAX_VALUE;
        }
        double backlog = offered - emitted;
        double need = 1.0 - (Double.isInfinite(catchUp) ? backlog : Math.min(tokens, backlog));
        if (need <= 0) {
            return 0L;
        }
        return (long) Math.ceil(need / rate * 1e9);
    }

    public long emittedCount() {
        return emitted;
    }

    /** Records that should have been emitted by now but were not (>= 0). */
    public long pending() {
        return Math.max(0L, (long) Math.floor(offered - emitted));
    }
}
