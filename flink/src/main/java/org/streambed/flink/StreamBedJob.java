package org.streambed.flink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.LocalStreamEnvironment;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamEdge;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.runtime.partitioner.ForwardPartitioner;
import org.apache.flink.streaming.runtime.partitioner.KeyGroupStreamPartitioner;
import org.apache.flink.streaming.runtime.partitioner.RebalancePartitioner;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.bridge.java.StreamStatementSet;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

/**
 * StreamBed's Flink job: runs a Nexmark SQL script over the rate-controlled {@code datagen} table,
 * with one task per operator and per-operator parallelism. See flink/README.md for the arguments.
 */
public final class StreamBedJob {

    public static final int DEFAULT_SPLITS = 1021; // prime: every split cycles through all event kinds
    static final String SOURCE_GROUP = "streambed-sources";

    /** Physical columns of datagen, in the layout of nexmark-flink's DDL (plus bid.channel/url). */
    public static final String DATAGEN_PHYSICAL_COLUMNS =
            "  event_type INT,\n"
            + "  person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR,"
            + " city VARCHAR, state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,\n"
            + "  auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT,"
            + " reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT,"
            + " category BIGINT, extra VARCHAR>,\n"
            + "  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,"
            + " `dateTime` TIMESTAMP(3), extra VARCHAR>,\n";

    static final String VIEWS =
            "CREATE VIEW person AS SELECT person.id, person.name, person.emailAddress,"
            + " person.creditCard, person.city, person.state, `dateTime`, person.extra"
            + " FROM datagen WHERE event_type = 0;\n"
            + "CREATE VIEW auction AS SELECT auction.id, auction.itemName, auction.description,"
            + " auction.initialBid, auction.reserve, `dateTime`, auction.expires, auction.seller,"
            + " auction.category, auction.extra FROM datagen WHERE event_type = 1;\n"
            + "CREATE VIEW bid AS SELECT bid.auction, bid.bidder, bid.price, bid.channel, bid.url,"
            + " `dateTime`, bid.extra FROM datagen WHERE event_type = 2;\n";

    /** A failure with the process exit code it maps to (2 arguments, 3 SQL, 1 other). */
    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;
        final int code;

        Failure(int code, String message) {
            super(message);
            this.code = code;
        }
    }

    static Failure argError(String msg) {
        return new Failure(2, "ARG_ERROR: " + oneLine(msg));
    }

    static Failure sqlError(Throwable t) {
        return new Failure(3, "SQL_ERROR: " + oneLine(describe(t)));
    }

    // ------------------------------------------------------------------ arguments

    static final Set<String> VALUE_KEYS = new HashSet<>(List.of(
            "sql-file", "sql-b64", "rate-file", "rate-url", "initial-rate", "source-parallelism",
            "parallelism", "job-name", "catch-up", "max-parallelism", "local-seconds", "splits",
            "replay-dir", "source", "bootstrap", "topic"));
    static final Set<String> FLAG_KEYS = new HashSet<>(List.of("explain"));

    static final class Args {
        String sql;
        boolean explain;
        String rateLocation;
        double initialRate = Double.NaN;
        int sourceParallelism = 1;
        Map<String, Integer> parallelism = new LinkedHashMap<>();
        String jobName = "streambed";
        double catchUp = 0.0;
        int maxParallelism = -1;
        double localSeconds = -1;
        int splits = DEFAULT_SPLITS;
        /** Absolute directory of the data set replayed instead of the generator; null: generate. */
        String replayDir;
        /** host:port[,host:port...] and topic of the data set replayed from Kafka; null: not Kafka. */
        String kafkaBootstrap;
        String kafkaTopic;
    }

    static Args parseArgs(String[] argv) throws Failure {
        Map<String, String> kv = new LinkedHashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--") || a.length() == 2) {
                throw argError("unexpected argument '" + a + "' (arguments are --key value)");
            }
            String key = a.substring(2);
            if (FLAG_KEYS.contains(key)) {
                kv.put(key, "true");
            } else if (VALUE_KEYS.contains(key)) {
                if (i + 1 >= argv.length) {
                    throw argError("--" + key + " needs a value");
                }
                if (kv.containsKey(key)) {
                    throw argError("--" + key + " given twice");
                }
                kv.put(key, argv[++i]);
            } else {
                throw argError("unknown argument --" + key);
            }
        }
        Args a = new Args();
        a.explain = kv.containsKey("explain");
        if (kv.containsKey("sql-file") == kv.containsKey("sql-b64")) {
            throw argError("exactly one of --sql-file PATH or --sql-b64 BASE64 is required");
        }
        if (kv.containsKey("sql-file")) {
            try {
                a.sql = new String(Files.readAllBytes(Paths.get(kv.get("sql-file"))), StandardCharsets.UTF_8);
            } catch (Exception e) {
                throw argError("cannot read --sql-file " + kv.get("sql-file") + ": " + e);
            }
        } else {
            try {
                a.sql = new String(Base64.getDecoder().decode(kv.get("sql-b64").trim()), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw argError("--sql-b64 is not valid base64: " + e.getMessage());
            }
        }
        if (kv.containsKey("rate-file") && kv.containsKey("rate-url")) {
            throw argError("give --rate-file or --rate-url, not both");
        }
        if (kv.containsKey("rate-file")) {
            a.rateLocation = Paths.get(kv.get("rate-file")).toAbsolutePath().toString();
        }
        if (kv.containsKey("rate-url")) {
            String u = kv.get("rate-url");
            if (!u.startsWith("http://") && !u.startsWith("https://")) {
                throw argError("--rate-url must be an http(s) URL: " + u);
            }
            a.rateLocation = u;
        }
        if (kv.containsKey("initial-rate")) {
            a.initialRate = parseDouble("initial-rate", kv.get("initial-rate"));
            if (a.initialRate < 0 || Double.isInfinite(a.initialRate)) {
                throw argError("--initial-rate must be a finite number >= 0");
            }
        }
        if (!a.explain && a.rateLocation == null && Double.isNaN(a.initialRate)) {
            throw argError("a rate is required: --rate-file PATH, --rate-url URL or --initial-rate R");
        }
        a.sourceParallelism = parseInt("source-parallelism", kv.getOrDefault("source-parallelism", "1"), 1);
        if (kv.containsKey("parallelism")) {
            for (String item : kv.get("parallelism").split(",")) {
                if (item.trim().isEmpty()) {
                    continue;
                }
                int eq = item.lastIndexOf('=');
                if (eq <= 0) {
                    throw argError("--parallelism items are NAME=N (e.g. Calc#1=2), got '" + item + "'");
                }
                String name = item.substring(0, eq).trim();
                if (a.parallelism.containsKey(name)) {
                    throw argError("--parallelism names " + name + " twice");
                }
                a.parallelism.put(name, parseInt("parallelism of " + name, item.substring(eq + 1).trim(), 1));
            }
        }
        a.jobName = kv.getOrDefault("job-name", a.jobName);
        if (kv.containsKey("catch-up")) {
            try {
                a.catchUp = parseCatchUp(kv.get("catch-up"));
            } catch (IllegalArgumentException e) {
                throw argError(e.getMessage());
            }
        }
        if (kv.containsKey("max-parallelism")) {
            a.maxParallelism = parseInt("max-parallelism", kv.get("max-parallelism"), 1);
            if (a.maxParallelism > 32768) {
                throw argError("--max-parallelism must be <= 32768");
            }
        }
        if (kv.containsKey("local-seconds")) {
            a.localSeconds = parseDouble("local-seconds", kv.get("local-seconds"));
            if (!(a.localSeconds > 0) || Double.isInfinite(a.localSeconds)) {
                throw argError("--local-seconds must be a number > 0");
            }
        }
        a.splits = parseInt("splits", kv.getOrDefault("splits", Integer.toString(DEFAULT_SPLITS)), 1);
        String source = kv.getOrDefault("source", kv.containsKey("replay-dir") ? "files" : "generator");
        if (!List.of("generator", "files", "kafka").contains(source)) {
            throw argError("--source must be generator, files or kafka, got '" + source + "'");
        }
        if (source.equals("files") != kv.containsKey("replay-dir")) {
            throw argError(source.equals("files") ? "--source files needs --replay-dir DIR"
                    : "--replay-dir applies to --source files only");
        }
        if (source.equals("kafka") != (kv.containsKey("bootstrap") || kv.containsKey("topic"))
                || source.equals("kafka") && !(kv.containsKey("bootstrap") && kv.containsKey("topic"))) {
            throw argError(source.equals("kafka") ? "--source kafka needs --bootstrap HOST:PORT[,...] and --topic NAME"
                    : "--bootstrap and --topic apply to --source kafka only");
        }
        if (source.equals("kafka")) {
            a.kafkaBootstrap = kv.get("bootstrap").trim();
            a.kafkaTopic = kv.get("topic").trim();
            if (!a.kafkaBootstrap.matches("[A-Za-z0-9._\\[\\]:-]+:[0-9]{1,5}(,[A-Za-z0-9._\\[\\]:-]+:[0-9]{1,5})*")) {
                throw argError("--bootstrap must be host:port[,host:port...], got '" + a.kafkaBootstrap + "'");
            }
            if (!a.kafkaTopic.matches("[A-Za-z0-9._-]{1,249}")) {
                throw argError("--topic must be a Kafka topic name (letters, digits, '.', '_', '-'), got '"
                        + a.kafkaTopic + "'");
            }
            if (kv.containsKey("splits")) {
                throw argError("--splits does not apply to --source kafka (its splits are the topic's partitions)");
            }
            // the topic's partitions are the splits, spread by the KafkaSource over the subtasks
            a.splits = a.sourceParallelism;
        }
        if (kv.containsKey("replay-dir")) {
            String dir = kv.get("replay-dir");
            try {
                a.replayDir = ReplayFiles.list(dir).dir;
            } catch (IllegalArgumentException e) {
                throw argError("--replay-dir " + dir + ": " + e.getMessage());
            }
            if (kv.containsKey("splits")) {
                throw argError("--splits does not apply to --replay-dir (it has one split per source subtask)");
            }
            // One split per subtask: split i of N replays the lines i, i + N, ..., so N readers
            // together replay the data set in its order.
            a.splits = a.sourceParallelism;
        }
        if (a.sourceParallelism > a.splits) {
            throw argError("--source-parallelism " + a.sourceParallelism + " exceeds the number of splits " + a.splits);
        }
        if (a.maxParallelism > 0 && a.sourceParallelism > a.maxParallelism) {
            throw argError("--source-parallelism exceeds --max-parallelism");
        }
        return a;
    }

    /** "0" (strict), a number >= 0, or "inf". */
    public static double parseCatchUp(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        if (t.equals("inf") || t.equals("infinity") || t.equals("+inf")) {
            return Double.POSITIVE_INFINITY;
        }
        double v;
        try {
            v = Double.parseDouble(t);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--catch-up must be a number >= 0 or inf, got '" + s + "'");
        }
        if (!(v >= 0)) {
            throw new IllegalArgumentException("--catch-up must be a number >= 0 or inf, got '" + s + "'");
        }
        return v;
    }

    private static double parseDouble(String key, String v) throws Failure {
        try {
            double d = Double.parseDouble(v.trim());
            if (Double.isNaN(d)) {
                throw new NumberFormatException();
            }
            return d;
        } catch (NumberFormatException e) {
            throw argError("--" + key + " must be a number, got '" + v + "'");
        }
    }

    private static int parseInt(String key, String v, int min) throws Failure {
        int n;
        try {
            n = Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw argError("--" + key + " must be an integer, got '" + v + "'");
        }
        if (n < min) {
            throw argError("--" + key + " must be >= " + min + ", got " + n);
        }
        return n;
    }

    // ------------------------------------------------------------------ SQL

    /** Splits a script into statements at ';' outside quotes and comments; comments are dropped. */
    static List<String> splitStatements(String script) {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        int n = script.length();
        for (int i = 0; i < n; i++) {
            char c = script.charAt(i);
            if (c == '-' && i + 1 < n && script.charAt(i + 1) == '-') {
                while (i < n && script.charAt(i) != '\n') {
                    i++;
                }
                cur.append('\n');
            } else if (c == '/' && i + 1 < n && script.charAt(i + 1) == '*') {
                int end = script.indexOf("*/", i + 2);
                i = end < 0 ? n : end + 1;
                cur.append(' ');
            } else if (c == '\'' || c == '"' || c == '`') {
                int j = i + 1;
                while (j < n) {
                    if (script.charAt(j) == c) {
                        if (j + 1 < n && script.charAt(j + 1) == c) {
                            j += 2; // doubled quote
                            continue;
                        }
                        break;
                    }
                    j++;
                }
                cur.append(script, i, Math.min(j + 1, n));
                i = j;
            } else if (c == ';') {
                addStatement(out, cur);
            } else {
                cur.append(c);
            }
        }
        addStatement(out, cur);
        return out;
    }

    private static void addStatement(List<String> out, StringBuilder cur) {
        String s = cur.toString().trim();
        if (!s.isEmpty()) {
            out.add(s);
        }
        cur.setLength(0);
    }

    static final java.util.regex.Pattern SET_PATTERN = java.util.regex.Pattern.compile(
            "(?is)SET\\s+'((?:[^']|'')*)'\\s*=\\s*'((?:[^']|'')*)'\\s*");

    static String firstWord(String stmt) {
        String t = stmt.trim();
        int i = 0;
        while (i < t.length() && Character.isLetter(t.charAt(i))) {
            i++;
        }
        return t.substring(0, i).toUpperCase(Locale.ROOT);
    }

    static String datagenDdl(Args a) {
        StringBuilder ddl = new StringBuilder("CREATE TABLE datagen (\n")
                .append(DATAGEN_PHYSICAL_COLUMNS)
                .append("  `dateTime` AS PROCTIME()\n) WITH (\n  'connector' = '")
                .append(NexmarkTableFactory.IDENTIFIER).append("',\n  'splits' = '").append(a.splits)
                .append("',\n  'catch-up' = '").append(Double.isInfinite(a.catchUp) ? "inf" : Double.toString(a.catchUp))
                .append("'");
        if (a.rateLocation != null) {
            ddl.append(",\n  'rate-location' = '").append(a.rateLocation.replace("'", "''")).append("'");
        }
        if (a.kafkaTopic != null) {
            ddl.append(",\n  'kafka-bootstrap' = '").append(a.kafkaBootstrap.replace("'", "''"))
                    .append("',\n  'kafka-topic' = '").append(a.kafkaTopic).append("'");
        }
        if (a.replayDir != null) {
            ddl.append(",\n  'replay-dir' = '").append(a.replayDir.replace("'", "''")).append("'");
        }
        if (!Double.isNaN(a.initialRate)) {
            ddl.append(",\n  'initial-rate' = '").append(a.initialRate).append("'");
        }
        return ddl.append("\n)").toString();
    }

    /** Plans the script; afterwards the environment holds the job's transformations. */
    static void planSql(StreamTableEnvironment tEnv, Args a) throws Failure {
        tEnv.getConfig().set("table.local-time-zone", "UTC");
        tEnv.getConfig().set("table.exec.simplify-operator-name-enabled", "false");
        tEnv.executeSql(datagenDdl(a));
        for (String v : splitStatements(VIEWS)) {
            tEnv.executeSql(v);
        }
        tEnv.createTemporarySystemFunction("count_char", CountChar.class);
        tEnv.createTemporarySystemFunction("streambed_cap", RateCap.class);
        StreamStatementSet set = tEnv.createStatementSet();
        int inserts = 0;
        try {
            for (String stmt : splitStatements(a.sql)) {
                String w = firstWord(stmt);
                if (w.equals("SET")) {
                    java.util.regex.Matcher m = SET_PATTERN.matcher(stmt);
                    if (!m.matches()) {
                        throw new IllegalArgumentException("malformed SET statement (use SET 'key' = 'value'): " + stmt);
                    }
                    tEnv.getConfig().set(m.group(1).replace("''", "'"), m.group(2).replace("''", "'"));
                } else if (w.equals("INSERT")) {
                    set.addInsertSql(stmt);
                    inserts++;
                } else if (w.equals("CREATE") || w.equals("DROP") || w.equals("ALTER") || w.equals("USE")) {
                    tEnv.executeSql(stmt);
                } else {
                    throw new IllegalArgumentException("unsupported statement (only SET, CREATE, DROP, ALTER,"
                            + " USE and INSERT INTO): " + stmt);
                }
            }
            if (inserts == 0) {
                throw new IllegalArgumentException("the script has no INSERT INTO statement");
            }
            set.attachAsDataStream();
        } catch (Exception e) {
            throw sqlError(e);
        }
    }

    // ------------------------------------------------------------------ graph

    /** A non-source operator of the stream graph, named as --explain prints it. */
    static final class Op {
        final StreamNode node;
        final String name;
        final List<String> inputs = new ArrayList<>();
        /** The planner fixed this operator's (max) parallelism to 1 (e.g. a non-keyed aggregate). */
        final boolean global;

        Op(StreamNode node, String name) {
            this.node = node;
            this.name = name;
            this.global = node.getMaxParallelism() == 1;
        }

        /** Its input is hash-partitioned by key (a keyBy): its tasks follow Flink's key-group rule. */
        boolean keyed() {
            for (StreamEdge e : node.getInEdges()) {
                if (e.getPartitioner() instanceof KeyGroupStreamPartitioner) {
                    return true;
                }
            }
            return false;
        }
    }

    /** Short name of an operator: its kind ("Calc", "GroupWindowAggregate", "Sink", ...). */
    static String shortName(String operatorName) {
        String s = operatorName.trim();
        if (s.startsWith("Sink: ")) {
            return "Sink";
        }
        s = s.replaceFirst("^\\[\\d+\\]:", ""); // "[3]:Calc(...)" (descriptions)
        int p = s.indexOf('(');
        if (p >= 0) {
            s = s.substring(0, p);
        }
        s = s.replaceFirst("\\[\\d+\\]$", ""); // "Calc[3]" (simplified names)
        s = s.trim();
        return s.isEmpty() ? "Operator" : s;
    }

    static List<Op> operators(StreamGraph g, Map<Integer, String> names) {
        Collection<Integer> sources = g.getSourceIDs();
        List<Op> ops = new ArrayList<>();
        int k = 0;
        for (StreamNode n : g.getStreamNodesSortedTopologicallyFromSources()) {
            if (sources.contains(n.getId())) {
                names.put(n.getId(), "source");
                continue;
            }
            Op op = new Op(n, shortName(n.getOperatorName()) + "#" + (++k));
            names.put(n.getId(), op.name);
            ops.add(op);
        }
        for (Op op : ops) {
            for (StreamEdge e : op.node.getInEdges()) {
                String in = names.get(e.getSourceId());
                if (!op.inputs.contains(in)) {
                    op.inputs.add(in);
                }
            }
        }
        return ops;
    }

    static String explainJson(StreamGraph g, List<Op> ops) {
        StringBuilder sb = new StringBuilder("{\"operators\": [");
        for (int i = 0; i < ops.size(); i++) {
            Op op = ops.get(i);
            if (i > 0) {
                sb.append(", ");
            }
            sb.append("{\"name\": ").append(json(op.name))
                    .append(", \"description\": ").append(json(op.node.getOperatorName()))
                    .append(", \"inputs\": [");
            for (int j = 0; j < op.inputs.size(); j++) {
                sb.append(j > 0 ? ", " : "").append(json(op.inputs.get(j)));
            }
            sb.append("], \"parallelism\": ").append(op.node.getParallelism());
            if (op.global) {
                sb.append(", \"max_parallelism\": 1");
            }
            if (op.keyed()) {
                sb.append(", \"keyed\": true");
            }
            sb.append("}");
        }
        sb.append("], \"sources\": [");
        int i = 0;
        for (Integer id : g.getSourceIDs()) {
            sb.append(i++ > 0 ? ", " : "").append(json(g.getStreamNode(id).getOperatorName()));
        }
        return sb.append("]}").toString();
    }

    /** Per-operator parallelism, slot-sharing groups and partitioners; returns the slots needed. */
    static int configureGraph(StreamGraph g, List<Op> ops, Args a) throws Failure {
        Map<String, Op> byName = new LinkedHashMap<>();
        for (Op op : ops) {
            byName.put(op.name, op);
        }
        for (String name : a.parallelism.keySet()) {
            if (!byName.containsKey(name)) {
                throw argError("--parallelism names unknown operator '" + name + "' (operators: "
                        + String.join(", ", byName.keySet()) + ")");
            }
        }
        int slots = 0;
        for (Integer id : g.getSourceIDs()) {
            StreamNode n = g.getStreamNode(id);
            n.setParallelism(a.sourceParallelism);
            if (a.maxParallelism > 0) {
                n.setMaxParallelism(a.maxParallelism);
            }
            n.setSlotSharingGroup(SOURCE_GROUP);
            slots = Math.max(slots, a.sourceParallelism);
        }
        for (Op op : ops) {
            int p = a.parallelism.getOrDefault(op.name, 1);
            boolean global = op.global;
            if (global && p > 1) {
                throw argError(op.name + " is a global operator (Flink fixes its parallelism to 1)");
            }
            if (a.maxParallelism > 0 && p > a.maxParallelism) {
                throw argError("parallelism " + p + " of " + op.name + " exceeds --max-parallelism " + a.maxParallelism);
            }
            op.node.setParallelism(p);
            if (a.maxParallelism > 0 && !global) {
                op.node.setMaxParallelism(a.maxParallelism);
            }
            op.node.setSlotSharingGroup("streambed-" + op.name);
            slots += p;
        }
        for (StreamNode n : g.getStreamNodes()) {
            for (StreamEdge e : n.getOutEdges()) {
                StreamNode target = g.getStreamNode(e.getTargetId());
                if (e.getPartitioner() instanceof ForwardPartitioner
                        && n.getParallelism() != target.getParallelism()) {
                    e.setPartitioner(new RebalancePartitioner<>());
                }
            }
        }
        return slots;
    }

    // ------------------------------------------------------------------ main

    public static void main(String[] argv) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        boolean local = env instanceof LocalStreamEnvironment;
        int code;
        try {
            code = run(env, argv);
        } catch (Failure f) {
            System.err.println(f.getMessage());
            System.err.flush();
            if (!local) {
                throw new RuntimeException(f.getMessage()); // never System.exit inside a JobManager
            }
            code = f.code;
        }
        if (local) {
            System.out.flush();
            System.exit(code);
        }
    }

    static int run(StreamExecutionEnvironment env, String[] argv) throws Exception {
        Args a = parseArgs(argv);
        env.disableOperatorChaining();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        planSql(tEnv, a);
        StreamGraph g = env.getStreamGraph();
        g.setJobName(a.jobName);
        Map<Integer, String> names = new LinkedHashMap<>();
        List<Op> ops = operators(g, names);
        int slots = configureGraph(g, ops, a); // validates --parallelism in --explain too
        if (a.explain) {
            System.out.println(explainJson(g, ops));
            return 0;
        }
        if (a.localSeconds > 0) {
            return runLocal(g, slots, a.localSeconds);
        }
        env.execute(g);
        return 0;
    }

    /** Runs the job on a MiniCluster in this JVM for a while, printing the sources' counters. */
    static int runLocal(StreamGraph g, int slots, double seconds) throws Exception {
        Configuration conf = new Configuration();
        conf.set(RestOptions.BIND_PORT, "0");
        MiniClusterConfiguration mc = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(Math.max(1, slots))
                .withRandomPorts()
                .build();
        try (MiniCluster cluster = new MiniCluster(mc)) {
            cluster.start();
            JobGraph jobGraph = g.getJobGraph(StreamBedJob.class.getClassLoader(), null);
            JobID id = cluster.submitJob(jobGraph).get().getJobID();
            long start = System.nanoTime();
            long end = start + (long) (seconds * 1e9);
            long tick = start;
            while (true) {
                tick += 1_000_000_000L;
                long now = System.nanoTime();
                long sleep = Math.min(tick, end) - now;
                if (sleep > 0) {
                    Thread.sleep(sleep / 1_000_000L, (int) (sleep % 1_000_000L));
                }
                JobStatus st = cluster.getJobStatus(id).get();
                if (st.isGloballyTerminalState()) {
                    reportEarlyEnd(st.toString(), cluster.requestJobResult(id).get());
                    return 1;
                }
                System.out.printf(Locale.ROOT, "STATS emitted=%d pending=%d target=%.1f elapsed=%.3f status=%s%n",
                        SourceStats.emitted(), SourceStats.pending(), SourceStats.target(),
                        (System.nanoTime() - start) / 1e9, st);
                System.out.flush();
                if (System.nanoTime() >= end) {
                    break;
                }
            }
            try {
                cluster.cancelJob(id).get();
            } catch (ExecutionException e) {
                // it ended by itself in the meantime: its result says how
            }
            JobResult result = cluster.requestJobResult(id).get(); // let the cancellation settle
            if (result.getJobStatus().orElse(null) == JobStatus.FAILED) { // e.g. a replay ran out at the end
                reportEarlyEnd("FAILED", result);
                return 1;
            }
        }
        return 0;
    }

    private static void reportEarlyEnd(String status, JobResult result) {
        Throwable cause = result.getSerializedThrowable().map(t -> (Throwable) t).orElse(null);
        String replay = replayMessage(cause);
        if (replay != null) { // the data set's own error first, on a line of its own
            System.err.println(replay);
        }
        System.err.println("job ended early: " + status + (cause == null ? "" : ": " + oneLine(describe(cause))));
    }

    // ------------------------------------------------------------------ helpers

    /** Flink's message of an exception and of its causes, without repetition. */
    static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        Set<Throwable> seen = new HashSet<>();
        for (Throwable c = t; c != null && seen.add(c); c = c.getCause()) {
            String m = c.getMessage();
            if (m == null || m.isBlank()) {
                if (sb.length() == 0) {
                    sb.append(c.getClass().getName());
                }
                continue;
            }
            m = m.trim();
            if (sb.indexOf(m) >= 0) {
                continue;
            }
            if (sb.length() > 0) {
                sb.append(" | caused by: ");
            }
            sb.append(m);
        }
        return sb.toString();
    }

    /** The message of a replay's failure (REPLAY_EXHAUSTED / REPLAY_ERROR) among the causes, or null. */
    static String replayMessage(Throwable t) {
        Set<Throwable> seen = new HashSet<>();
        for (Throwable c = t; c != null && seen.add(c); c = c.getCause()) {
            String m = c.getMessage();
            int i = m == null ? -1 : m.indexOf("REPLAY_");
            if (i >= 0 && (m.startsWith("REPLAY_EXHAUSTED: ", i) || m.startsWith("REPLAY_ERROR: ", i))) {
                return oneLine(m.substring(i));
            }
        }
        return null;
    }

    static String oneLine(String s) {
        return s.replaceAll("\\s+", " ").trim();
    }

    static String json(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        return sb.append('"').toString();
    }
}
