package org.streambed.flink;

import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.table.data.RowData;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * FLIP-27 source of Nexmark events whose rate follows a target read from a file or a URL: the
 * generator's events or, with {@link #replay}, a data set's. See {@link NexmarkSourceReader} for
 * the pacing and the metrics.
 */
public final class NexmarkSource implements Source<RowData, NexmarkSplit, Collection<NexmarkSplit>> {

    private static final long serialVersionUID = 1L;

    final int numSplits;
    /** File path or http(s) URL of the total target rate; null for a constant initialRate. */
    final String rateLocation;
    /** Total rate until the first good read (NaN: 0). */
    final double initialRate;
    /** 0 strict, > 0 backlog caught up at (1 + catchUp) x target, inf as fast as possible. */
    final double catchUp;
    /** The data set replayed instead of the generator (null: generate); its file list is fixed here. */
    final ReplayFiles replay;

    public NexmarkSource(int numSplits, String rateLocation, double initialRate, double catchUp,
            ReplayFiles replay) {
        this.numSplits = numSplits;
        this.rateLocation = rateLocation;
        this.initialRate = initialRate;
        this.catchUp = catchUp;
        this.replay = replay;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SourceReader<RowData, NexmarkSplit> createReader(SourceReaderContext context) {
        return new NexmarkSourceReader(context, this);
    }

    @Override
    public SplitEnumerator<NexmarkSplit, Collection<NexmarkSplit>> createEnumerator(
            SplitEnumeratorContext<NexmarkSplit> context) {
        List<NexmarkSplit> splits = new ArrayList<>(numSplits);
        for (int i = 0; i < numSplits; i++) {
            splits.add(new NexmarkSplit(i, 0L));
        }
        return new NexmarkEnumerator(context, splits);
    }

    @Override
    public SplitEnumerator<NexmarkSplit, Collection<NexmarkSplit>> restoreEnumerator(
            SplitEnumeratorContext<NexmarkSplit> context, Collection<NexmarkSplit> checkpoint) {
        return new NexmarkEnumerator(context, checkpoint);
    }

    @Override
    public SimpleVersionedSerializer<NexmarkSplit> getSplitSerializer() {
        return new NexmarkSplit.Serializer();
    }

    @Override
    public SimpleVersionedSerializer<Collection<NexmarkSplit>> getEnumeratorCheckpointSerializer() {
        return new NexmarkSplit.ListSerializer();
    }
}
