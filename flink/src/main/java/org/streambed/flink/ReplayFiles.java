package org.streambed.flink;

import org.apache.flink.table.data.RowData;

import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * A data set at rest replayed instead of the generator ({@code --replay-dir DIR}): the JSON lines
 * files of DIR, read as one stream of events in file-name order (Spark's part-00000, part-00001,
 * ...). The list is fixed when the job is built and travels with the source, so every subtask,
 * restarted or not, sees the same files in the same order.
 *
 * <p>Events are the stream's non-blank lines, numbered from 0 across the files; blank lines are
 * skipped and not numbered. Split {@code i} of {@code N} replays the events {@code i, i + N, i + 2N,
 * ...}: N readers advancing at the same pace replay the data set in its order, as the generator's
 * interleaved splits do. A split's position is the number of its events already emitted.
 */
public final class ReplayFiles implements Serializable {

    private static final long serialVersionUID = 1L;

    final String dir;
    final String[] files;

    private ReplayFiles(String dir, String[] files) {
        this.dir = dir;
        this.files = files;
    }

    /**
     * The data files of {@code dir}: regular files directly in it whose name ends in {@code .json}
     * and does not start with {@code _} or {@code .} (Spark's {@code _SUCCESS}, {@code .crc} files),
     * in name order.
     *
     * @throws IllegalArgumentException (one line) if the directory is missing or has no such file
     */
    public static ReplayFiles list(String dir) {
        Path d = Paths.get(dir).toAbsolutePath().normalize();
        if (!Files.exists(d)) {
            throw new IllegalArgumentException("no such directory");
        }
        if (!Files.isDirectory(d)) {
            throw new IllegalArgumentException("not a directory");
        }
        List<String> names = new ArrayList<>();
        try (Stream<Path> entries = Files.list(d)) {
            entries.forEach(p -> {
                String name = p.getFileName().toString();
                if (name.endsWith(".json") && !name.startsWith("_") && !name.startsWith(".")
                        && Files.isRegularFile(p)) {
                    names.add(name);
                }
            });
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException("cannot list the directory: " + e);
        }
        if (names.isEmpty()) {
            throw new IllegalArgumentException(
                    "no data file (*.json directly in the directory, not starting with _ or .)");
        }
        Collections.sort(names);
        String[] files = new String[names.size()];
        for (int i = 0; i < files.length; i++) {
            files[i] = d.resolve(names.get(i)).toString();
        }
        return new ReplayFiles(d.toString(), files);
    }

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long NEWLINES = 0x0A0A0A0A0A0A0A0AL;
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGHS = 0x8080808080808080L;

    /**
     * The first '\n' in {@code b[from, to)}, or {@code to}: eight bytes at a time (a reader scans
     * every line of the data set, most of them other splits', so this loop bounds a replay with
     * many source tasks; about 3x faster than byte by byte).
     */
    static int indexOfNewline(byte[] b, int from, int to) {
        int i = from;
        for (; i + 8 <= to; i += 8) {
            long w = (long) LONGS.get(b, i) ^ NEWLINES; // a zero byte where b holds '\n'
            long zero = (w - ONES) & ~w & HIGHS; // exact for the lowest zero byte, the first in memory
            if (zero != 0) {
                return i + (Long.numberOfTrailingZeros(zero) >>> 3);
            }
        }
        while (i < to && b[i] != '\n') {
            i++;
        }
        return i;
    }

    /** The events of split {@code split.index} of {@code numSplits}, from its position on. */
    Cursor open(NexmarkSplit split, int numSplits) {
        return new Cursor(split, numSplits);
    }

    /**
     * Reads the files as one stream of lines and hands out the split's lines. Lines of other splits
     * are only scanned for their end, never parsed; a restored split scans from the beginning to its
     * position (a one-off cost of reading the bytes before it).
     */
    final class Cursor implements SplitEvents {
        private static final int INITIAL_BUFFER = 1 << 20;

        private final NexmarkSplit split;
        private final int numSplits;
        private final ReplayParser parser = new ReplayParser();
        private byte[] buf = new byte[INITIAL_BUFFER];
        private int pos; // start of the next unread line in buf
        private int lim; // end of the valid bytes in buf
        private int fileIndex = -1;
        private InputStream in;
        private boolean fileDone = true; // no open file yet
        private long fileLine; // 1-based physical line number of the last line returned, in its file
        private long passed; // events (non-blank lines) of the stream passed so far
        private int lineStart;
        private int lineEnd;

        Cursor(NexmarkSplit split, int numSplits) {
            this.split = split;
            this.numSplits = numSplits;
        }

        @Override
        public NexmarkSplit split() {
            return split;
        }

        @Override
        public RowData next(long nowMillis, double totalRate) throws IOException {
            long target = split.next * numSplits + split.index;
            while (true) {
                if (!nextEvent()) {
                    throw new IOException(String.format(Locale.ROOT,
                            "REPLAY_EXHAUSTED: the data set %s ran out after %,d events (split %d of %d;"
                                    + " %,d events in the data set); generate more events or shorten the run",
                            dir, split.next, split.index, numSplits, passed));
                }
                if (passed++ == target) {
                    break;
                }
            }
            RowData row;
            try {
                row = parser.parse(buf, lineStart, lineEnd, nowMillis);
            } catch (ReplayParser.Malformed e) {
                throw new IOException("REPLAY_ERROR: " + files[fileIndex] + ":" + fileLine + ": " + e.getMessage());
            }
            split.next++;
            return row;
        }

        /** Moves to the next non-blank line of the stream (lineStart/lineEnd); false at the end. */
        private boolean nextEvent() throws IOException {
            while (true) {
                if (fileDone) {
                    if (!openNextFile()) {
                        return false;
                    }
                }
                byte[] b = buf;
                int end = lim;
                int i = indexOfNewline(b, pos, end);
                if (i == end) {
                    // no line end in the buffer: read more, or the file's last line lacks its '\n'
                    if (fill()) {
                        continue;
                    }
                    if (pos == lim) {
                        fileDone = true;
                        continue;
                    }
                    i = lim;
                }
                lineStart = pos;
                lineEnd = i;
                pos = i < lim ? i + 1 : i;
                fileLine++;
                if (!blank(b, lineStart, lineEnd)) {
                    return true;
                }
            }
        }

        private boolean blank(byte[] b, int from, int to) {
            if (from < to && b[from] == '{') {
                return false; // the usual line, decided at its first byte
            }
            for (int i = from; i < to; i++) {
                byte c = b[i];
                if (c != ' ' && c != '\t' && c != '\r') {
                    return false;
                }
            }
            return true;
        }

        /** Keeps the unread bytes and reads more; false at the end of the file. */
        private boolean fill() throws IOException {
            if (pos > 0) {
                System.arraycopy(buf, pos, buf, 0, lim - pos);
                lim -= pos;
                pos = 0;
            }
            if (lim == buf.length) { // a line longer than the buffer
                byte[] bigger = new byte[buf.length * 2];
                System.arraycopy(buf, 0, bigger, 0, lim);
                buf = bigger;
            }
            int n;
            try {
                n = in.read(buf, lim, buf.length - lim);
            } catch (IOException e) {
                throw new IOException("REPLAY_ERROR: " + files[fileIndex] + ": cannot read: " + e, e);
            }
            if (n <= 0) {
                return false;
            }
            lim += n;
            return true;
        }

        private boolean openNextFile() throws IOException {
            closeFile();
            if (fileIndex + 1 >= files.length) {
                return false;
            }
            fileIndex++;
            try {
                in = Files.newInputStream(Paths.get(files[fileIndex]));
            } catch (IOException e) {
                throw new IOException("REPLAY_ERROR: " + files[fileIndex] + ": cannot open: " + e, e);
            }
            pos = 0;
            lim = 0;
            fileLine = 0;
            fileDone = false;
            return true;
        }

        private void closeFile() {
            if (in != null) {
                try {
                    in.close();
                } catch (IOException e) {
                    // read-only file: nothing to lose
                }
                in = null;
            }
        }

        @Override
        public void close() {
            closeFile();
            fileDone = true;
            fileIndex = files.length;
        }
    }
}
