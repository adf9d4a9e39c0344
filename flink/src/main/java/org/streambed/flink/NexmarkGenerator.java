package org.streambed.flink;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;

import java.util.Random;
import java.util.SplittableRandom;

/**
 * Nexmark events (person / auction / bid) following the Nexmark benchmark's generator model.
 *
 * <p>All readers together form ONE global event timeline: an event is identified by its global
 * sequence number {@code eventId}; its kind and the ids it creates or refers to are functions of
 * that number, as in the benchmark (proportions 1/3/46 of 50, i.e. 2/6/92 %). Person and auction
 * ids grow with the timeline; bids point at "hot" auctions / bidders most of the time, and otherwise
 * at an auction among the last {@link #IN_FLIGHT_AUCTIONS} ones or a person among the last
 * {@link #ACTIVE_PEOPLE} ones. Free-text fields are padded with an {@code extra} string so that the
 * average event sizes are about 200 / 500 / 100 bytes.
 *
 * <p>Rows have the physical layout of the {@code datagen} table: {@code (event_type INT,
 * person ROW<8>, auction ROW<10>, bid ROW<7>)}; exactly one of the three rows is set.
 */
public final class NexmarkGenerator {

    // Benchmark defaults.
    public static final int PERSON_PROPORTION = 1;
    public static final int AUCTION_PROPORTION = 3;
    public static final int BID_PROPORTION = 46;
    public static final int TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;
    public static final int AVG_PERSON_BYTES = 200;
    public static final int AVG_AUCTION_BYTES = 500;
    public static final int AVG_BID_BYTES = 100;
    public static final int HOT_AUCTION_RATIO = 2;
    public static final int HOT_SELLERS_RATIO = 4;
    public static final int HOT_BIDDERS_RATIO = 4;
    public static final int IN_FLIGHT_AUCTIONS = 100;
    public static final int ACTIVE_PEOPLE = 1000;
    public static final long FIRST_PERSON_ID = 1000L;
    public static final long FIRST_AUCTION_ID = 1000L;
    public static final long FIRST_CATEGORY_ID = 10L;
    static final int NUM_CATEGORIES = 5;
    /** Hot ids are the first (auction, seller) or second (bidder) of each batch of this many ids. */
    static final int HOT_BATCH = 100;
    /** Ids slightly ahead of the last created one may be referenced (events "swapped" in time). */
    static final int ID_LEAD = 10;

    static final String[] STATES = {"AZ", "CA", "ID", "OR", "WA", "WY"};
    static final String[] CITIES = {
        "Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle",
        "Kent", "Cheyenne"
    };
    static final String[] FIRST_NAMES = {
        "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"
    };
    static final String[] LAST_NAMES = {
        "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"
    };

    /** Channels: half of the bids come through one of a few well-known channels. */
    static final String[] HOT_CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};
    static final int NUM_CHANNELS = 10_000;
    static final String[] HOT_CHANNEL_URLS;
    static final String[] CHANNEL_NAMES = new String[NUM_CHANNELS];
    static final String[] CHANNEL_URLS = new String[NUM_CHANNELS];

    /** Random lower-case letters that padding strings are cut from (fast, and random enough). */
    private static final int POOL_SIZE = 1 << 16;
    private static final String POOL;

    static {
        Random r = new Random(42);
        StringBuilder sb = new StringBuilder(POOL_SIZE + 1024);
        for (int i = 0; i < POOL_SIZE + 1024; i++) {
            sb.append((char) ('a' + r.nextInt(26)));
        }
        POOL = sb.toString();
        SplittableRandom sr = new SplittableRandom(7);
        HOT_CHANNEL_URLS = new String[HOT_CHANNELS.length];
        for (int i = 0; i < HOT_CHANNELS.length; i++) {
            HOT_CHANNEL_URLS[i] = baseUrl(sr);
        }
        for (int c = 0; c < NUM_CHANNELS; c++) {
            CHANNEL_NAMES[c] = "channel-" + c;
            String url = baseUrl(sr);
            if (sr.nextInt(10) == 0) {
                url = url + "&channel_id=" + Math.abs(Integer.reverse(c));
            }
            CHANNEL_URLS[c] = url;
        }
    }

    private NexmarkGenerator() {}

    private static String baseUrl(SplittableRandom r) {
        return "https://www.nexmark.com/" + word(r, 5) + "/" + word(r, 5) + "/" + word(r, 5)
                + "/item.htm?query=1";
    }

    // ------------------------------------------------------------------ id arithmetic (base 0)

    /** Event kind of a global event number: 0 person, 1 auction, 2 bid. */
    public static int kindOf(long eventId) {
        long r = eventId % TOTAL_PROPORTION;
        if (r < PERSON_PROPORTION) {
            return 0;
        }
        return r < PERSON_PROPORTION + AUCTION_PROPORTION ? 1 : 2;
    }

    /** Id (base 0) of the last person created at or before this event. */
    static long lastPersonId(long eventId) {
        long epoch = eventId / TOTAL_PROPORTION;
        long offset = Math.min(eventId % TOTAL_PROPORTION, PERSON_PROPORTION - 1);
        return epoch * PERSON_PROPORTION + offset;
    }

    /** Id (base 0) of the last auction created at or before this event (-1 if none yet). */
    static long lastAuctionId(long eventId) {
        long epoch = eventId / TOTAL_PROPORTION;
        long offset = eventId % TOTAL_PROPORTION;
        if (offset < PERSON_PROPORTION) {
            epoch--;
            offset = AUCTION_PROPORTION - 1;
        } else if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) {
            offset = AUCTION_PROPORTION - 1;
        } else {
            offset -= PERSON_PROPORTION;
        }
        return epoch * AUCTION_PROPORTION + offset;
    }

    /** A person among the currently active ones (plus a small lead of not-yet-created ids). */
    static long randomPersonId(long eventId, SplittableRandom r) {
        long people = lastPersonId(eventId) + 1;
        long active = Math.min(people, ACTIVE_PEOPLE);
        return people - active + r.nextLong(active + ID_LEAD);
    }

    /** An auction among those likely still in flight (plus a small lead). */
    static long randomAuctionId(long eventId, SplittableRandom r) {
        long last = Math.max(lastAuctionId(eventId), 0);
        long first = Math.max(last - IN_FLIGHT_AUCTIONS, 0);
        return first + r.nextLong(last - first + 1 + ID_LEAD);
    }

    // ------------------------------------------------------------------ values

    static long price(SplittableRandom r) {
        return Math.round(Math.pow(10.0, r.nextDouble() * 6.0) * 100.0);
    }

    /** Random text of 3..maxLength-1 characters, letters with occasional spaces, trimmed. */
    static String word(SplittableRandom r, int maxLength) {
        int len = 3 + r.nextInt(maxLength - 3);
        char[] c = new char[len];
        for (int i = 0; i < len; i++) {
            c[i] = r.nextInt(13) == 0 ? ' ' : (char) ('a' + r.nextInt(26));
        }
        return new String(c).trim();
    }

    /** Padding such that currentSize + padding is on average desiredAverage (+-20 %). */
    static String extra(SplittableRandom r, int currentSize, int desiredAverage) {
        if (currentSize > desiredAverage) {
            return "";
        }
        int rest = desiredAverage - currentSize;
        int delta = (int) Math.round(rest * 0.2);
        int size = rest - delta + (delta == 0 ? 0 : r.nextInt(2 * delta));
        int off = r.nextInt(POOL_SIZE);
        return POOL.substring(off, off + Math.min(size, 1024));
    }

    private static String creditCard(SplittableRandom r) {
        StringBuilder sb = new StringBuilder(19);
        for (int i = 0; i < 4; i++) {
            if (i > 0) {
                sb.append(' ');
            }
            int v = r.nextInt(10000);
            if (v < 1000) sb.append('0');
            if (v < 100) sb.append('0');
            if (v < 10) sb.append('0');
            sb.append(v);
        }
        return sb.toString();
    }

    // ------------------------------------------------------------------ events

    /**
     * The event with this global number.
     *
     * @param nowMillis wall-clock time written into the event's own dateTime field
     * @param totalRate current total event rate (events/s), used for auction lengths as the
     *     benchmark does (an auction lasts on average as long as it takes to create
     *     {@link #IN_FLIGHT_AUCTIONS} more auctions)
     */
    public static RowData event(long eventId, SplittableRandom r, long nowMillis, double totalRate) {
        switch (kindOf(eventId)) {
            case 0:
                return GenericRowData.of(0, person(eventId, r, nowMillis), null, null);
            case 1:
                return GenericRowData.of(1, null, auction(eventId, r, nowMillis, totalRate), null);
            default:
                return GenericRowData.of(2, null, null, bid(eventId, r, nowMillis));
        }
    }

    static GenericRowData person(long eventId, SplittableRandom r, long now) {
        long id = lastPersonId(eventId) + FIRST_PERSON_ID;
        String name = FIRST_NAMES[r.nextInt(FIRST_NAMES.length)] + " "
                + LAST_NAMES[r.nextInt(LAST_NAMES.length)];
        String email = word(r, 7) + "@" + word(r, 5) + ".com";
        String card = creditCard(r);
        String city = CITIES[r.nextInt(CITIES.length)];
        String state = STATES[r.nextInt(STATES.length)];
        int size = 8 + name.length() + email.length() + card.length() + city.length() + state.length();
        String pad = extra(r, size, AVG_PERSON_BYTES);
        return GenericRowData.of(
                id,
                StringData.fromString(name),
                StringData.fromString(email),
                StringData.fromString(card),
                StringData.fromString(city),
                StringData.fromString(state),
                TimestampData.fromEpochMillis(now),
                StringData.fromString(pad));
    }

    static GenericRowData auction(long eventId, SplittableRandom r, long now, double totalRate) {
        long id = lastAuctionId(eventId) + FIRST_AUCTION_ID;
        long seller;
        if (r.nextInt(HOT_SELLERS_RATIO) > 0) {
            seller = (lastPersonId(eventId) / HOT_BATCH) * HOT_BATCH;
        } else {
            seller = randomPersonId(eventId, r);
        }
        seller += FIRST_PERSON_ID;
        long category = FIRST_CATEGORY_ID + r.nextInt(NUM_CATEGORIES);
        long initialBid = price(r);
        long reserve = initialBid + price(r);
        String item = word(r, 20);
        String desc = word(r, 100);
        // Time until IN_FLIGHT_AUCTIONS more auctions exist at the current rate; lengths average it.
        double eventsAhead = (double) IN_FLIGHT_AUCTIONS * TOTAL_PROPORTION / AUCTION_PROPORTION;
        long horizonMs = totalRate > 0 ? (long) (eventsAhead * 1000.0 / totalRate) : 10_000L;
        long length = 1L + r.nextLong(Math.max(2 * horizonMs, 1L));
        int size = 8 + item.length() + desc.length() + 8 + 8 + 8 + 8 + 8;
        String pad = extra(r, size, AVG_AUCTION_BYTES);
        return GenericRowData.of(
                id,
                StringData.fromString(item),
                StringData.fromString(desc),
                initialBid,
                reserve,
                TimestampData.fromEpochMillis(now),
                TimestampData.fromEpochMillis(now + length),
                seller,
                category,
                StringData.fromString(pad));
    }

    static GenericRowData bid(long eventId, SplittableRandom r, long now) {
        long auction;
        if (r.nextInt(HOT_AUCTION_RATIO) > 0) {
            auction = (Math.max(lastAuctionId(eventId), 0) / HOT_BATCH) * HOT_BATCH;
        } else {
            auction = randomAuctionId(eventId, r);
        }
        auction += FIRST_AUCTION_ID;
        long bidder;
        if (r.nextInt(HOT_BIDDERS_RATIO) > 0) {
            bidder = (lastPersonId(eventId) / HOT_BATCH) * HOT_BATCH + 1;
        } else {
            bidder = randomPersonId(eventId, r);
        }
        bidder += FIRST_PERSON_ID;
        long price = price(r);
        String channel;
        String url;
        if (r.nextInt(2) == 0) {
            int i = r.nextInt(HOT_CHANNELS.length);
            channel = HOT_CHANNELS[i];
            url = HOT_CHANNEL_URLS[i];
        } else {
            int c = r.nextInt(NUM_CHANNELS);
            channel = CHANNEL_NAMES[c];
            url = CHANNEL_URLS[c];
        }
        String pad = extra(r, 8 + 8 + 8 + 8, AVG_BID_BYTES);
        return GenericRowData.of(
                auction,
                bidder,
                price,
                StringData.fromString(channel),
                StringData.fromString(url),
                TimestampData.fromEpochMillis(now),
                StringData.fromString(pad));
    }
}
