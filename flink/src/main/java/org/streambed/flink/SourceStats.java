package org.streambed.flink;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The source readers living in this JVM, for the {@code --local-seconds} mode, which prints the
 * sources' own counters ({@code STATS emitted=.. pending=.. target=..}) once per second.
 */
public final class SourceStats {

    private static final Set<PacedStats> READERS = ConcurrentHashMap.newKeySet();
    /** Emitted records of readers that have been closed (so totals survive a reader restart). */
    private static volatile long closedEmitted;

    private SourceStats() {}

    static void register(PacedStats r) {
        READERS.add(r);
    }

    static synchronized void unregister(PacedStats r) {
        if (READERS.remove(r)) {
            closedEmitted += r.emittedRecords();
        }
    }

    public static synchronized long emitted() {
        long n = closedEmitted;
        for (PacedStats r : READERS) {
            n += r.emittedRecords();
        }
        return n;
    }

    public static long pending() {
        long n = 0;
        for (PacedStats r : READERS) {
            n += r.pendingRecords();
        }
        return n;
    }

    public static double target() {
        double t = 0;
        for (PacedStats r : READERS) {
            t += r.targetRate();
        }
        return t;
    }
}
