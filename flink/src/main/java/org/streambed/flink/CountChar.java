package org.streambed.flink;

import org.apache.flink.table.functions.ScalarFunction;

/** {@code count_char(s, c)}: occurrences of character c in s (Nexmark q14's UDF). */
public final class CountChar extends ScalarFunction {
    private static final long serialVersionUID = 1L;

    public long eval(String s, String c) {
        if (s == null || c == null || c.isEmpty()) {
            return 0L;
        }
        char ch = c.charAt(0);
        long n = 0;
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) == ch) {
                n++;
            }
        }
        return n;
    }
}
