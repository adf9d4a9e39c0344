package org.streambed.flink;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.Collector;

import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.io.IOException;

/**
 * A data set replayed from a Kafka topic (loaded by {@code streambed data load-kafka}: one JSON
 * line per record, keyed by entity, in event order per partition) through Flink's KafkaSource.
 * Every job reads the topic from its beginning to its end offsets as they are when it starts
 * (its end fails the job, see {@link PacedSource}) and commits nothing, so jobs never share a
 * position; rows are the replay's rows ({@link ReplayParser}), their {@code dateTime} the time the
 * record leaves the source.
 */
final class KafkaReplay {

    private KafkaReplay() {}

    static KafkaSource<RowData> source(String bootstrap, String topic, String groupId, TypeInformation<RowData> type) {
        return KafkaSource.<RowData>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(topic)
                .setGroupId(groupId)
                .setStartingOffsets(OffsetsInitializer.earliest())
                // the end offsets when the job starts: the data set as loaded, whose end fails the job
                .setBounded(OffsetsInitializer.latest())
                .setDeserializer(new Lines(type))
                .setProperty("commit.offsets.on.checkpoint", "false")
                .setProperty("enable.auto.commit", "false")
                .build();
    }

    /** A record's value is one event's JSON line. */
    static final class Lines implements KafkaRecordDeserializationSchema<RowData> {
        private static final long serialVersionUID = 1L;
        private final TypeInformation<RowData> type;
        private transient ReplayParser parser;

        Lines(TypeInformation<RowData> type) {
            this.type = type;
        }

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<RowData> out) throws IOException {
            if (parser == null) {
                parser = new ReplayParser();
            }
            byte[] value = record.value();
            String where = record.topic() + "-" + record.partition() + "@" + record.offset();
            if (value == null) {
                throw new IOException("REPLAY_ERROR: " + where + ": a record without a value");
            }
            try {
                out.collect(parser.parse(value, 0, value.length, System.currentTimeMillis()));
            } catch (ReplayParser.Malformed e) {
                throw new IOException("REPLAY_ERROR: " + where + ": " + e.getMessage());
            }
        }

        @Override
        public TypeInformation<RowData> getProducedType() {
            return type;
        }
    }
}
