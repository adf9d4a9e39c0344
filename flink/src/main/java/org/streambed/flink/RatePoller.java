package org.streambed.flink;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;

/**
 * Reads the TOTAL target rate (events/s, a decimal number >= 0) from a file or an HTTP endpoint
 * every {@link #POLL_MS} ms. On a read error (missing file, half-written file, HTTP failure, not a
 * number) the last good value is kept; before the first good read, {@link #get} returns NaN.
 *
 * <p>One poller per location is shared by all source readers of a JVM (a TaskManager runs one
 * thread per location rather than one per subtask); it stops when its last reader releases it.
 */
public final class RatePoller implements Runnable {

    public static final long POLL_MS = 200;

    private static final Map<String, RatePoller> SHARED = new HashMap<>();

    private final String location;
    private final boolean http;
    private volatile double value = Double.NaN;
    private volatile boolean running = true;
    private int refs;
    private Thread thread;

    private RatePoller(String location) {
        this.location = location;
        this.http = location.startsWith("http://") || location.startsWith("https://");
    }

    /** The poller for this location (a file path or an http(s) URL), started on first use. */
    public static RatePoller acquire(String location) {
        synchronized (SHARED) {
            RatePoller p = SHARED.get(location);
            if (p == null) {
                p = new RatePoller(location);
                p.readOnce(); // a first value right away when the location is readable
                p.thread = new Thread(p, "streambed-rate-poller");
                p.thread.setDaemon(true);
                p.thread.start();
                SHARED.put(location, p);
            }
            p.refs++;
            return p;
        }
    }

    public void release() {
        synchronized (SHARED) {
            if (--refs <= 0) {
                running = false;
                SHARED.remove(location);
                thread.interrupt();
            }
        }
    }

    /** The last good total rate, or NaN before the first good read. */
    public double get() {
        return value;
    }

    @Override
    public void run() {
        while (running) {
            try {
                Thread.sleep(POLL_MS);
            } catch (InterruptedException e) {
                if (!running) {
                    return;
                }
            }
            readOnce();
        }
    }

    void readOnce() {
        try {
            double v = parse(http ? fetch(location) : read(location));
            if (v >= 0 && !Double.isInfinite(v)) {
                value = v;
            }
        } catch (Exception e) {
            // keep the last good value
        }
    }

    static double parse(String text) {
        return Double.parseDouble(text.trim()); // NaN/garbage -> exception or rejected above
    }

    private static String read(String path) throws IOException {
        return new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8);
    }

    private static String fetch(String url) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
        c.setConnectTimeout(1000);
        c.setReadTimeout(1000);
        c.setUseCaches(false);
        try {
            if (c.getResponseCode() != 200) {
                throw new IOException("HTTP " + c.getResponseCode());
            }
            try (InputStream in = c.getInputStream()) {
                byte[] b = in.readNBytes(256);
                return new String(b, StandardCharsets.UTF_8);
            }
        } finally {
            c.disconnect();
        }
    }
}
