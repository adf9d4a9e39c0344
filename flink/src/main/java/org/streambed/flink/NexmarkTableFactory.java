package org.streambed.flink;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;

import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Table connector {@code 'connector' = 'streambed-nexmark'}: the rate-controlled Nexmark source
 * behind the {@code datagen} table: the generator, a data set's files ({@code replay-dir}) or a
 * Kafka topic ({@code kafka-bootstrap}, {@code kafka-topic}), paced alike. The physical schema must be exactly
 * {@link StreamBedJob#DATAGEN_PHYSICAL_COLUMNS}.
 */
public final class NexmarkTableFactory implements DynamicTableSourceFactory {

    public static final String IDENTIFIER = "streambed-nexmark";

    public static final ConfigOption<Integer> SPLITS =
            ConfigOptions.key("splits").intType().defaultValue(StreamBedJob.DEFAULT_SPLITS);
    public static final ConfigOption<String> RATE_LOCATION =
            ConfigOptions.key("rate-location").stringType().noDefaultValue();
    public static final ConfigOption<Double> INITIAL_RATE =
            ConfigOptions.key("initial-rate").doubleType().defaultValue(Double.NaN);
    public static final ConfigOption<String> CATCH_UP =
            ConfigOptions.key("catch-up").stringType().defaultValue("0");
    /** A directory of JSON lines files replayed instead of the generator (see {@link ReplayFiles}). */
    public static final ConfigOption<String> REPLAY_DIR =
            ConfigOptions.key("replay-dir").stringType().noDefaultValue();
    /** Brokers of a topic replayed instead of the generator (see {@link KafkaReplay}); with KAFKA_TOPIC. */
    public static final ConfigOption<String> KAFKA_BOOTSTRAP =
            ConfigOptions.key("kafka-bootstrap").stringType().noDefaultValue();
    public static final ConfigOption<String> KAFKA_TOPIC =
            ConfigOptions.key("kafka-topic").stringType().noDefaultValue();
    /** The consumer group id the source's Kafka clients give (nothing is committed under it). */
    public static final ConfigOption<String> KAFKA_GROUP =
            ConfigOptions.key("kafka-group").stringType().defaultValue("streambed-replay");

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return new HashSet<>();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return new HashSet<>(Arrays.asList(SPLITS, RATE_LOCATION, INITIAL_RATE, CATCH_UP, REPLAY_DIR,
                KAFKA_BOOTSTRAP, KAFKA_TOPIC, KAFKA_GROUP));
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        ReadableConfig options = helper.getOptions();
        LogicalType physical = context.getPhysicalRowDataType().getLogicalType();
        List<String> names = ((RowType) physical).getFieldNames();
        if (!names.equals(Arrays.asList("event_type", "person", "auction", "bid"))) {
            throw new IllegalArgumentException(
                    "streambed-nexmark needs the physical columns (event_type, person, auction, bid), got " + names);
        }
        double catchUp = StreamBedJob.parseCatchUp(options.get(CATCH_UP));
        String rateLocation = options.getOptional(RATE_LOCATION).orElse(null);
        if (options.getOptional(KAFKA_TOPIC).isPresent() || options.getOptional(KAFKA_BOOTSTRAP).isPresent()) {
            if (options.getOptional(REPLAY_DIR).isPresent()) {
                throw new IllegalArgumentException("streambed-nexmark: replay-dir and kafka-topic exclude each other");
            }
            String bootstrap = options.getOptional(KAFKA_BOOTSTRAP).orElseThrow(
                    () -> new IllegalArgumentException("streambed-nexmark: kafka-topic needs kafka-bootstrap"));
            String topic = options.getOptional(KAFKA_TOPIC).orElseThrow(
                    () -> new IllegalArgumentException("streambed-nexmark: kafka-bootstrap needs kafka-topic"));
            TypeInformation<RowData> type = InternalTypeInfo.of(physical);
            return new Source(new PacedSource<>(KafkaReplay.source(bootstrap, topic, options.get(KAFKA_GROUP), type),
                    type, rateLocation, options.get(INITIAL_RATE), catchUp, "the topic " + topic + " at " + bootstrap));
        }
        ReplayFiles replay = null;
        if (options.getOptional(REPLAY_DIR).isPresent()) {
            String dir = options.get(REPLAY_DIR);
            try {
                replay = ReplayFiles.list(dir); // the file list is fixed now, where the job is built
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("replay-dir " + dir + ": " + e.getMessage());
            }
        }
        return new Source(new NexmarkSource(
                options.get(SPLITS), rateLocation,
                options.get(INITIAL_RATE), catchUp, replay));
    }

    /** The scan source: insert-only, no push-down (the planner's Calc projects and filters). */
    static final class Source implements ScanTableSource {
        private final org.apache.flink.api.connector.source.Source<RowData, ?, ?> source;

        Source(org.apache.flink.api.connector.source.Source<RowData, ?, ?> source) {
            this.source = source;
        }

        @Override
        public ChangelogMode getChangelogMode() {
            return ChangelogMode.insertOnly();
        }

        @Override
        public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
            return SourceProvider.of(source);
        }

        @Override
        public DynamicTableSource copy() {
            return new Source(source);
        }

        @Override
        public String asSummaryString() {
            return "StreamBed Nexmark source";
        }
    }
}
