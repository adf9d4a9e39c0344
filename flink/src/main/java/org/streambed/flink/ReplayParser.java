package org.streambed.flink;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.Arrays;

/**
 * Parses one replayed JSON line (UTF-8 bytes) into a row of the {@code datagen} layout, the shape
 * {@link NexmarkGenerator} builds: {@code (event_type, person, auction, bid)} with only the struct
 * of the event type set.
 *
 * <p>A small hand-written streaming parser rather than Jackson: it works on the reader's buffer in
 * place, creates nothing per line but the row, and copies strings as UTF-8 bytes (Flink's own
 * string format) without decoding them. Unknown fields are skipped, missing or null nested fields
 * are null. Timestamps are ISO-8601 instants ({@code 2026-11-24T17:30:00.123Z}, an offset, or none
 * for UTC) or epoch milliseconds. Event time becomes processing time: every {@code dateTime} is the
 * emission time, and {@code auction.expires} keeps its distance to the auction's {@code dateTime}.
 */
final class ReplayParser {

    /** A line that is not a valid event; the message says what is wrong (the caller adds file:line). */
    static final class Malformed extends Exception {
        private static final long serialVersionUID = 1L;

        Malformed(String message) {
            super(message, null, false, false);
        }
    }

    private static final int LONG = 0;
    private static final int STRING = 1;
    private static final int TIME = 2;

    /** The fields of one nested struct: names, types and where dateTime / expires are. */
    private static final class Shape {
        final String name;
        final byte[][] fields;
        final int[] types;
        final int dateTime;
        final int expires;

        Shape(String name, String[] fields, int[] types) {
            this.name = name;
            this.fields = new byte[fields.length][];
            for (int i = 0; i < fields.length; i++) {
                this.fields[i] = fields[i].getBytes(StandardCharsets.US_ASCII);
            }
            this.types = types;
            this.dateTime = Arrays.asList(fields).indexOf("dateTime");
            this.expires = Arrays.asList(fields).indexOf("expires");
        }

        String field(int i) {
            return name + "." + new String(fields[i], StandardCharsets.US_ASCII);
        }
    }

    // The layout of StreamBedJob.DATAGEN_PHYSICAL_COLUMNS.
    private static final Shape PERSON = new Shape("person",
            new String[] {"id", "name", "emailAddress", "creditCard", "city", "state", "dateTime", "extra"},
            new int[] {LONG, STRING, STRING, STRING, STRING, STRING, TIME, STRING});
    private static final Shape AUCTION = new Shape("auction",
            new String[] {"id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires",
                "seller", "category", "extra"},
            new int[] {LONG, STRING, STRING, LONG, LONG, TIME, TIME, LONG, LONG, STRING});
    private static final Shape BID = new Shape("bid",
            new String[] {"auction", "bidder", "price", "channel", "url", "dateTime", "extra"},
            new int[] {LONG, LONG, LONG, STRING, STRING, TIME, STRING});
    /** Top-level fields; the structs follow event_type in the order of the event types 0, 1, 2. */
    private static final byte[][] TOP = {
        "event_type".getBytes(StandardCharsets.US_ASCII), "person".getBytes(StandardCharsets.US_ASCII),
        "auction".getBytes(StandardCharsets.US_ASCII), "bid".getBytes(StandardCharsets.US_ASCII)
    };
    private static final Shape[] STRUCTS = {PERSON, AUCTION, BID};
    private static final String[] TYPE_NAMES = {"person", "auction", "bid"};

    private byte[] b;
    private int p;
    private int end;
    private int lineFrom;
    /** Unescaped bytes of a string with escapes (rare), and the timestamps of the struct being parsed. */
    private byte[] scratch = new byte[256];
    private int scratchLen;
    private final long[] times = new long[2];
    private final boolean[] hasTime = new boolean[2];
    /** The field being read, named only in error messages (building its name per value costs). */
    private Shape fieldShape;
    private int fieldIndex;

    /** The row of the line {@code buf[from, to)}; {@code now} is the emission time (epoch ms). */
    RowData parse(byte[] buf, int from, int to, long now) throws Malformed {
        b = buf;
        p = from;
        end = to;
        lineFrom = from;
        skipWs();
        expect('{', "a JSON object");
        int eventType = -1;
        GenericRowData[] structs = new GenericRowData[3];
        skipWs();
        if (peek() == '}') {
            p++;
        } else {
            while (true) {
                skipWs();
                int key = key(TOP, 0);
                skipWs();
                expect(':', "':'");
                skipWs();
                if (key == 0) {
                    if (peek() == 'n') {
                        throw new Malformed("event_type is null");
                    }
                    fieldShape = null;
                    long v = integer();
                    if (v < 0 || v > 2) {
                        throw new Malformed("unknown event_type " + v + " (0 person, 1 auction, 2 bid)");
                    }
                    eventType = (int) v;
                } else if (key > 0) {
                    structs[key - 1] = struct(STRUCTS[key - 1], now);
                } else {
                    skipValue();
                }
                skipWs();
                if (peek() == ',') {
                    p++;
                    continue;
                }
                expect('}', "',' or '}'");
                break;
            }
        }
        skipWs();
        if (p < end) {
            throw new Malformed("unexpected characters after the JSON object");
        }
        if (eventType < 0) {
            throw new Malformed("no event_type");
        }
        GenericRowData row = structs[eventType];
        if (row == null) {
            throw new Malformed("event_type " + eventType + " without its " + TYPE_NAMES[eventType] + " struct");
        }
        // Only the event type's struct, as the generator builds rows (others, if any, are dropped).
        switch (eventType) {
            case 0:
                return GenericRowData.of(0, row, null, null);
            case 1:
                return GenericRowData.of(1, null, row, null);
            default:
                return GenericRowData.of(2, null, null, row);
        }
    }

    /** A nested struct (an object, or null: returns null). */
    private GenericRowData struct(Shape shape, long now) throws Malformed {
        if (literal("null")) {
            return null;
        }
        expect('{', "an object for " + shape.name);
        GenericRowData row = new GenericRowData(shape.fields.length);
        hasTime[0] = false;
        hasTime[1] = false;
        int f = -1;
        skipWs();
        if (peek() == '}') {
            p++;
        } else {
            while (true) {
                skipWs();
                f = key(shape.fields, f + 1);
                skipWs();
                expect(':', "':'");
                skipWs();
                if (f < 0) {
                    skipValue();
                } else if (literal("null")) {
                    row.setField(f, null);
                    if (shape.types[f] == TIME) {
                        hasTime[f == shape.dateTime ? 0 : 1] = false;
                    }
                } else {
                    fieldShape = shape;
                    fieldIndex = f;
                    switch (shape.types[f]) {
                        case LONG:
                            row.setField(f, integer());
                            break;
                        case STRING:
                            row.setField(f, string());
                            break;
                        default:
                            int slot = f == shape.dateTime ? 0 : 1;
                            times[slot] = timestamp();
                            hasTime[slot] = true;
                    }
                }
                skipWs();
                if (peek() == ',') {
                    p++;
                    continue;
                }
                expect('}', "',' or '}' in " + shape.name);
                break;
            }
        }
        // Processing time replaces event time; an auction keeps its length (expires - dateTime).
        row.setField(shape.dateTime, TimestampData.fromEpochMillis(now));
        if (shape.expires >= 0) {
            row.setField(shape.expires, hasTime[0] && hasTime[1]
                    ? TimestampData.fromEpochMillis(now + (times[1] - times[0])) : null);
        }
        return row;
    }

    // ------------------------------------------------------------------ tokens

    private int peek() throws Malformed {
        if (p >= end) {
            throw new Malformed("line ends inside the JSON object");
        }
        return b[p];
    }

    private void skipWs() {
        while (p < end) {
            byte c = b[p];
            if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
                return;
            }
            p++;
        }
    }

    private void expect(char c, String what) throws Malformed {
        if (p >= end || b[p] != c) {
            throw new Malformed("expected " + what + " at column " + column() + ", got " + found());
        }
        p++;
    }

    private int column() {
        return p - lineFrom + 1; // in bytes
    }

    private String found() {
        if (p >= end) {
            return "the end of the line";
        }
        int to = Math.min(end, p + 20);
        return "'" + new String(b, p, to - p, StandardCharsets.UTF_8) + (to < end ? "...'" : "'");
    }

    private boolean literal(String word) {
        int n = word.length();
        if (p + n > end) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            if (b[p + i] != word.charAt(i)) {
                return false;
            }
        }
        p += n;
        return true;
    }

    /**
     * A field name: its index in {@code names}, or -1 for an unknown field. {@code hint} is tried
     * first: Spark writes the fields in the schema's order, so it is usually the one.
     */
    private int key(byte[][] names, int hint) throws Malformed {
        expect('"', "a field name");
        int start = p;
        while (p < end && b[p] != '"' && b[p] != '\\') {
            p++;
        }
        byte[] src = b;
        int from = start;
        int len;
        if (p < end && b[p] == '"') {
            len = p - start;
            p++;
        } else {
            p = start;
            unescape();
            src = scratch;
            from = 0;
            len = scratchLen;
        }
        int count = names.length;
        for (int k = 0; k < count; k++) {
            int i = hint + k;
            if (i >= count) {
                i -= count;
            }
            byte[] n = names[i];
            if (n.length == len && Arrays.equals(n, 0, len, src, from, from + len)) {
                return i;
            }
        }
        return -1;
    }

    /** A JSON string as UTF-8 bytes (copied as they are when it has no escape). */
    private StringData string() throws Malformed {
        if (p >= end || b[p] != '"') {
            throw new Malformed(field() + ": expected a string, got " + found());
        }
        p++;
        int start = p;
        while (p < end && b[p] != '"' && b[p] != '\\') {
            p++;
        }
        if (p < end && b[p] == '"') {
            p++;
            return StringData.fromBytes(Arrays.copyOfRange(b, start, p - 1));
        }
        p = start;
        unescape();
        return StringData.fromBytes(Arrays.copyOf(scratch, scratchLen));
    }

    /** Decodes the string starting at p (after its opening quote) into scratch; p after the closing quote. */
    private void unescape() throws Malformed {
        scratchLen = 0;
        while (true) {
            if (p >= end) {
                throw new Malformed("unterminated string");
            }
            byte c = b[p++];
            if (c == '"') {
                return;
            }
            if (c != '\\') {
                put(c);
                continue;
            }
            if (p >= end) {
                throw new Malformed("unterminated string");
            }
            byte e = b[p++];
            switch (e) {
                case '"': case '\\': case '/': put(e); break;
                case 'b': put((byte) '\b'); break;
                case 'f': put((byte) '\f'); break;
                case 'n': put((byte) '\n'); break;
                case 'r': put((byte) '\r'); break;
                case 't': put((byte) '\t'); break;
                case 'u':
                    int cp = hex4();
                    if (Character.isHighSurrogate((char) cp) && p + 6 <= end && b[p] == '\\' && b[p + 1] == 'u') {
                        int save = p;
                        p += 2;
                        int low = hex4();
                        if (Character.isLowSurrogate((char) low)) {
                            cp = Character.toCodePoint((char) cp, (char) low);
                        } else {
                            p = save;
                        }
                    }
                    if (Character.isSurrogate((char) cp) && cp <= 0xFFFF) {
                        cp = 0xFFFD; // a lone surrogate has no UTF-8 form
                    }
                    putCodePoint(cp);
                    break;
                default:
                    throw new Malformed("bad escape '\\" + (char) e + "' in a string");
            }
        }
    }

    private int hex4() throws Malformed {
        if (p + 4 > end) {
            throw new Malformed("bad \\u escape");
        }
        int v = 0;
        for (int i = 0; i < 4; i++) {
            int d = Character.digit(b[p++], 16);
            if (d < 0) {
                throw new Malformed("bad \\u escape");
            }
            v = v * 16 + d;
        }
        return v;
    }

    private void putCodePoint(int cp) {
        if (cp < 0x80) {
            put((byte) cp);
        } else if (cp < 0x800) {
            put((byte) (0xC0 | (cp >> 6)));
            put((byte) (0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            put((byte) (0xE0 | (cp >> 12)));
            put((byte) (0x80 | ((cp >> 6) & 0x3F)));
            put((byte) (0x80 | (cp & 0x3F)));
        } else {
            put((byte) (0xF0 | (cp >> 18)));
            put((byte) (0x80 | ((cp >> 12) & 0x3F)));
            put((byte) (0x80 | ((cp >> 6) & 0x3F)));
            put((byte) (0x80 | (cp & 0x3F)));
        }
    }

    private void put(byte c) {
        if (scratchLen == scratch.length) {
            scratch = Arrays.copyOf(scratch, scratch.length * 2);
        }
        scratch[scratchLen++] = c;
    }

    /** A JSON integer (a fraction, an exponent or more than 64 bits is an error). */
    private long integer() throws Malformed {
        int start = p;
        boolean negative = p < end && b[p] == '-';
        if (negative) {
            p++;
        }
        long v = 0;
        int digits = 0;
        while (p < end) {
            int d = b[p] - '0';
            if (d < 0 || d > 9) {
                break;
            }
            if (v > (Long.MAX_VALUE - d) / 10) {
                throw badNumber(start);
            }
            v = v * 10 + d;
            digits++;
            p++;
        }
        if (digits == 0 || (p < end && (b[p] == '.' || b[p] == 'e' || b[p] == 'E'))) {
            throw badNumber(start);
        }
        return negative ? -v : v;
    }

    private String field() {
        return fieldShape == null ? "event_type" : fieldShape.field(fieldIndex);
    }

    private Malformed badNumber(int start) {
        p = start;
        int q = start;
        while (q < end && b[q] != ',' && b[q] != '}' && b[q] != ']' && b[q] != ' ') {
            q++;
        }
        String text = new String(b, start, Math.min(q - start, 40), StandardCharsets.UTF_8);
        return new Malformed(field() + ": bad number '" + text + "' (expected an integer)");
    }

    /** An ISO-8601 instant string or epoch milliseconds. */
    private long timestamp() throws Malformed {
        if (p >= end || b[p] != '"') {
            return integer();
        }
        int start = p + 1;
        int q = start;
        while (q < end && b[q] != '"') {
            q++;
        }
        if (q >= end) {
            throw new Malformed(field() + ": unterminated string");
        }
        p = q + 1;
        long fast = isoUtc(start, q);
        if (fast != Long.MIN_VALUE) {
            return fast;
        }
        String text = new String(b, start, q - start, StandardCharsets.UTF_8);
        try {
            return Instant.parse(text).toEpochMilli(); // offsets such as +01:00
        } catch (DateTimeParseException e) {
            try {
                return LocalDateTime.parse(text).toInstant(ZoneOffset.UTC).toEpochMilli(); // no zone: UTC
            } catch (DateTimeParseException e2) {
                throw new Malformed(field() + ": bad timestamp '" + text
                        + "' (expected an ISO-8601 instant such as 2026-11-24T17:30:00.123Z, or epoch ms)");
            }
        }
    }

    private static final int[] DAYS_BEFORE_MONTH = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};

    /**
     * The common form {@code yyyy-MM-ddTHH:mm:ss[.fraction]Z}, without java.time's general parser
     * (several times slower); Long.MIN_VALUE for anything else, which the caller parses with it.
     */
    private long isoUtc(int s, int e) {
        if (e - s < 20 || b[e - 1] != 'Z' || b[s + 4] != '-' || b[s + 7] != '-' || b[s + 10] != 'T'
                || b[s + 13] != ':' || b[s + 16] != ':') {
            return Long.MIN_VALUE;
        }
        int year = digits(s, 4);
        int month = digits(s + 5, 2);
        int day = digits(s + 8, 2);
        int hour = digits(s + 11, 2);
        int minute = digits(s + 14, 2);
        int second = digits(s + 17, 2);
        if (year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0
                || minute > 59 || second < 0 || second > 59) {
            return Long.MIN_VALUE;
        }
        boolean leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        int monthDays = month == 2 ? (leap ? 29 : 28) : (month == 4 || month == 6 || month == 9 || month == 11) ? 30 : 31;
        if (day > monthDays) {
            return Long.MIN_VALUE;
        }
        int millis = 0;
        int i = s + 19;
        if (i < e - 1) {
            if (b[i] != '.' || e - 1 - (i + 1) < 1 || e - 1 - (i + 1) > 9) {
                return Long.MIN_VALUE;
            }
            int scale = 100;
            for (int k = i + 1; k < e - 1; k++) {
                int d = b[k] - '0';
                if (d < 0 || d > 9) {
                    return Long.MIN_VALUE;
                }
                millis += d * scale;
                scale /= 10;
            }
        }
        long y = year;
        long days = 365L * (y - 1970) + floorDiv(y - 1969, 4) - floorDiv(y - 1901, 100) + floorDiv(y - 1601, 400)
                + DAYS_BEFORE_MONTH[month - 1] + (leap && month > 2 ? 1 : 0) + day - 1;
        return ((days * 24 + hour) * 60 + minute) * 60_000L + second * 1000L + millis;
    }

    private static long floorDiv(long a, long n) {
        return Math.floorDiv(a, n);
    }

    private int digits(int at, int n) {
        int v = 0;
        for (int i = at; i < at + n; i++) {
            int d = b[i] - '0';
            if (d < 0 || d > 9) {
                return -1;
            }
            v = v * 10 + d;
        }
        return v;
    }

    /** Skips any JSON value (an unknown field's). */
    private void skipValue() throws Malformed {
        int c = peek();
        if (c == '"') {
            p++;
            while (true) {
                if (p >= end) {
                    throw new Malformed("unterminated string");
                }
                byte x = b[p++];
                if (x == '\\') {
                    p++;
                } else if (x == '"') {
                    return;
                }
            }
        }
        if (c == '{' || c == '[') {
            int depth = 0;
            while (p < end) {
                byte x = b[p];
                if (x == '"') {
                    skipValue();
                    continue;
                }
                p++;
                if (x == '{' || x == '[') {
                    depth++;
                } else if (x == '}' || x == ']') {
                    if (--depth == 0) {
                        return;
                    }
                }
            }
            throw new Malformed("line ends inside the JSON object");
        }
        int start = p;
        while (p < end) {
            byte x = b[p];
            if (x == ',' || x == '}' || x == ']' || x == ' ' || x == '\t' || x == '\r') {
                break;
            }
            p++;
        }
        if (p == start) {
            throw new Malformed("expected a value at column " + column() + ", got " + found());
        }
    }
}
