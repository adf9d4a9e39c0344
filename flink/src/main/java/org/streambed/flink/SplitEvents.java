package org.streambed.flink;

import org.apache.flink.table.data.RowData;

import java.io.IOException;
import java.util.SplittableRandom;

/**
 * Where the events of one split come from: the Nexmark generator ({@link Generated}) or a data set
 * at rest ({@link ReplayFiles.Cursor}). The reader's pacing loop asks it for the split's next event
 * and knows nothing else about it, so both modes share the same pacing, metrics and checkpoints.
 */
interface SplitEvents {

    /** The split; {@code split().next} counts the events already produced (its checkpointed position). */
    NexmarkSplit split();

    /**
     * The split's next event, advancing its position.
     *
     * @param nowMillis wall-clock time that becomes the event's own {@code dateTime}
     * @param totalRate current total target rate (the generator derives auction lengths from it)
     */
    RowData next(long nowMillis, double totalRate) throws IOException;

    /** Releases what the split holds (open files); the split's position stays valid. */
    void close();

    /** Split {@code i} of {@code N} generates the global events {@code i, i + N, i + 2N, ...}. */
    final class Generated implements SplitEvents {
        private final NexmarkSplit split;
        private final long numSplits;
        private final SplittableRandom random;

        Generated(NexmarkSplit split, int numSplits, SplittableRandom random) {
            this.split = split;
            this.numSplits = numSplits;
            this.random = random;
        }

        @Override
        public NexmarkSplit split() {
            return split;
        }

        @Override
        public RowData next(long nowMillis, double totalRate) {
            long eventId = split.next * numSplits + split.index;
            split.next++;
            return NexmarkGenerator.event(eventId, random, nowMillis, totalRate);
        }

        @Override
        public void close() {}
    }
}
