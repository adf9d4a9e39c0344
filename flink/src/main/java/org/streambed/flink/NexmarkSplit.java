package org.streambed.flink;

import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * One of the {@code numSplits} interleaved slices of the global event timeline: split {@code i}
 * produces the global events {@code i, i + N, i + 2N, ...} ({@code N = numSplits}); {@code next}
 * counts the events it already produced (its checkpointed position).
 */
public final class NexmarkSplit implements SourceSplit {

    final int index;
    long next;

    public NexmarkSplit(int index, long next) {
        this.index = index;
        this.next = next;
    }

    @Override
    public String splitId() {
        return Integer.toString(index);
    }

    NexmarkSplit copy() {
        return new NexmarkSplit(index, next);
    }

    @Override
    public String toString() {
        return "NexmarkSplit{" + index + "@" + next + "}";
    }

    /** Serializer of a split (version 1: int index, long position). */
    public static final class Serializer implements SimpleVersionedSerializer<NexmarkSplit> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(NexmarkSplit s) throws IOException {
            DataOutputSerializer out = new DataOutputSerializer(12);
            out.writeInt(s.index);
            out.writeLong(s.next);
            return out.getCopyOfBuffer();
        }

        @Override
        public NexmarkSplit deserialize(int version, byte[] bytes) throws IOException {
            DataInputDeserializer in = new DataInputDeserializer(bytes);
            return new NexmarkSplit(in.readInt(), in.readLong());
        }
    }

    /** Serializer of the enumerator's state: the splits not assigned to any reader. */
    public static final class ListSerializer implements SimpleVersionedSerializer<Collection<NexmarkSplit>> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Collection<NexmarkSplit> splits) throws IOException {
            DataOutputSerializer out = new DataOutputSerializer(4 + 12 * splits.size());
            out.writeInt(splits.size());
            for (NexmarkSplit s : splits) {
                out.writeInt(s.index);
                out.writeLong(s.next);
            }
            return out.getCopyOfBuffer();
        }

        @Override
        public Collection<NexmarkSplit> deserialize(int version, byte[] bytes) throws IOException {
            DataInputDeserializer in = new DataInputDeserializer(bytes);
            int n = in.readInt();
            List<NexmarkSplit> splits = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                splits.add(new NexmarkSplit(in.readInt(), in.readLong()));
            }
            return splits;
        }
    }
}
