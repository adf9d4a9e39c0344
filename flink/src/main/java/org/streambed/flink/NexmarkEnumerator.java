package org.streambed.flink;

import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.TreeMap;

/**
 * Hands split {@code i} to reader {@code i mod parallelism} when that reader registers, so that
 * every reader gets numSplits / parallelism splits (splits returned after a failure go back to the
 * reader that re-registers for them).
 */
final class NexmarkEnumerator implements SplitEnumerator<NexmarkSplit, Collection<NexmarkSplit>> {

    private final SplitEnumeratorContext<NexmarkSplit> context;
    private final TreeMap<Integer, NexmarkSplit> unassigned = new TreeMap<>();

    NexmarkEnumerator(SplitEnumeratorContext<NexmarkSplit> context, Collection<NexmarkSplit> splits) {
        this.context = context;
        for (NexmarkSplit s : splits) {
            unassigned.put(s.index, s);
        }
    }

    @Override
    public void start() {}

    @Override
    public void handleSplitRequest(int subtaskId, String requesterHostname) {}

    @Override
    public void addSplitsBack(List<NexmarkSplit> splits, int subtaskId) {
        for (NexmarkSplit s : splits) {
            unassigned.put(s.index, s);
        }
        if (context.registeredReaders().containsKey(subtaskId)) {
            addReader(subtaskId);
        }
    }

    @Override
    public void addReader(int subtaskId) {
        int parallelism = context.currentParallelism();
        List<NexmarkSplit> mine = new ArrayList<>();
        Iterator<NexmarkSplit> it = unassigned.values().iterator();
        while (it.hasNext()) {
            NexmarkSplit s = it.next();
            if (s.index % parallelism == subtaskId) {
                mine.add(s);
                it.remove();
            }
        }
        for (NexmarkSplit s : mine) {
            context.assignSplit(s, subtaskId);
        }
    }

    @Override
    public Collection<NexmarkSplit> snapshotState(long checkpointId) {
        List<NexmarkSplit> copy = new ArrayList<>(unassigned.size());
        for (NexmarkSplit s : unassigned.values()) {
            copy.add(s.copy());
        }
        return copy;
    }

    @Override
    public void close() {}
}
