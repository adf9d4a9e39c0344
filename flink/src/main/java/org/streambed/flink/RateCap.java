package org.streambed.flink;

import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.ScalarFunction;

import java.util.concurrent.locks.LockSupport;

/**
 * {@code streambed_cap(value, per_second)}: returns {@code value}, letting at most {@code per_second}
 * calls through per second in each task; a call that comes early waits (the task's thread parks)
 * until the schedule allows it.
 *
 * <p>An operator of known capacity, for checking a testbed against a truth: one task passes exactly
 * {@code per_second} calls per second once its input exceeds that, whatever else the machine is
 * doing, as long as the operator's own CPU cost per call stays well under {@code 1 / per_second}.
 * (A query's own capacity on a small shared machine moves by 10-20 % from one window to the next;
 * this one by under 1 %, measured on 2 cores.) Below the cap the task waits for input and is busy
 * only for its CPU time, like an operator paced by an outside service: its busyness does not grow
 * linearly up to the cap. Not a Nexmark function: the shipped queries never use it.
 */
public final class RateCap extends ScalarFunction {
    private static final long serialVersionUID = 1L;

    /**
     * Time lost to preemption or a GC pause is made up to this much; idle time banks no more. On a
     * loaded machine a preempted thread waits a scheduler slice or more: 100 ms covers several, and
     * the credit banked while idle is spent within the estimator's ramp, before it observes. (Raised
     * from 10 ms as a precaution; its effect alone was not measured.)
     */
    static final long MAX_CREDIT_NANOS = 100_000_000L;
    /** Park only when this far ahead of the schedule (parkNanos has a granularity of ~50-100 us). */
    static final long MIN_PARK_NANOS = 1_000_000L;

    private transient long next;

    @Override
    public void open(FunctionContext context) {
        next = System.nanoTime();
    }

    public Long eval(Long value, Double perSecond) {
        if (perSecond == null || !(perSecond > 0)) {
            return value;
        }
        long now = System.nanoTime();
        if (next < now - MAX_CREDIT_NANOS) {
            next = now - MAX_CREDIT_NANOS;
        }
        // An absolute schedule: a park that oversleeps is made up by the calls after it.
        next += (long) (1e9 / perSecond);
        long ahead = next - now;
        if (ahead > MIN_PARK_NANOS) {
            LockSupport.parkNanos(ahead);
        }
        return value;
    }

    @Override
    public boolean isDeterministic() {
        return false; // never constant-folded or reordered away by the planner
    }
}
