package dev.throttle.spring.client;

import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Reads how long a remote asks its callers to pause from its response: {@code Retry-After} (delta
 * seconds or an HTTP date) on a 429 or 503; the IETF {@code RateLimit} field with an item whose
 * {@code r} is 0 (its {@code t}), or the earlier drafts' {@code remaining=0} with {@code reset}; the
 * common {@code X-RateLimit-Remaining: 0} with {@code X-RateLimit-Reset} (delta seconds, or epoch
 * seconds as GitHub sends). The longest of what the response says wins.
 *
 * <p>A remote is not trusted to block a client forever: a value that does not parse or is negative is
 * ignored, one above a day is capped to a day; each kind of mistake is logged once per client and
 * header, at WARN.
 */
final class RemoteLimits {

    private static final Log logger = LogFactory.getLog(RemoteLimits.class);

    /** The longest pause a remote can ask for. */
    static final long MAX_PAUSE_MILLIS = TimeUnit.DAYS.toMillis(1);

    /** A reset above this is an epoch second (2001 onwards), not a number of seconds to wait. */
    private static final long EPOCH_SECONDS_FROM = 1_000_000_000L;

    private static final Set<String> SAID = ConcurrentHashMap.newKeySet();

    private RemoteLimits() {}

    /**
     * How long the response asks to pause.
     * @param client the client's name, for the log
     * @param status the response's status
     * @param header the response's first value of a header, by name (null when absent)
     * @param nowMillis the current time, for HTTP dates and epoch resets
     * @return milliseconds, 0 when the response asks for no pause
     */
    static long pauseMillis(String client, int status, Function<String, @Nullable String> header, long nowMillis) {
        long pause = 0;
        if (status == 429 || status == 503) {
            String retryAfter = header.apply("Retry-After");
            if (retryAfter != null) {
                pause = Math.max(pause, checked(client, "Retry-After", retryAfter, retryAfter(retryAfter, nowMillis)));
            }
        }
        String rateLimit = header.apply("RateLimit");
        if (rateLimit != null) {
            pause = Math.max(pause, checked(client, "RateLimit", rateLimit, rateLimit(rateLimit)));
        }
        String draftRemaining = header.apply("RateLimit-Remaining");
        if (draftRemaining != null && isZero(draftRemaining)) {
            String reset = header.apply("RateLimit-Reset");
            pause = Math.max(pause, checked(client, "RateLimit-Reset", reset, seconds(reset)));
        }
        String remaining = header.apply("X-RateLimit-Remaining");
        if (remaining != null && isZero(remaining)) {
            String reset = header.apply("X-RateLimit-Reset");
            pause = Math.max(pause, checked(client, "X-RateLimit-Reset", reset, reset(reset, nowMillis)));
        }
        return pause;
    }

    /** Not a number: a value to ignore. */
    private static final long MALFORMED = Long.MIN_VALUE;

    private static long checked(String client, String name, @Nullable String value, long millis) {
        if (millis == MALFORMED) {
            once(client, name, "malformed", "a " + name + " that does not parse ('" + shorten(value) + "')");
            return 0;
        }
        if (millis < 0) {
            once(client, name, "negative", "a " + name + " in the past or negative ('" + shorten(value) + "')");
            return 0;
        }
        if (millis > MAX_PAUSE_MILLIS) {
            once(
                    client,
                    name,
                    "absurd",
                    "a " + name + " of more than a day ('" + shorten(value) + "'); paused for a day");
            return MAX_PAUSE_MILLIS;
        }
        return millis;
    }

    private static void once(String client, String name, String kind, String what) {
        if (SAID.add(client + '\u0000' + name + '\u0000' + kind)) {
            logger.warn("Client '" + client + "' received " + what + "; not trusted to pause the client"
                    + (kind.equals("absurd") ? " longer" : "") + " (said once per client, header and mistake)");
        }
    }

    private static String shorten(@Nullable String value) {
        if (value == null) {
            return "";
        }
        return (value.length() > 60) ? value.substring(0, 60) + "..." : value;
    }

    static long retryAfter(String value, long nowMillis) {
        String trimmed = value.trim();
        if (!trimmed.isEmpty() && (Character.isDigit(trimmed.charAt(0)) || trimmed.charAt(0) == '-')) {
            return seconds(trimmed);
        }
        try {
            ZonedDateTime date = ZonedDateTime.parse(trimmed, DateTimeFormatter.RFC_1123_DATE_TIME);
            return date.toInstant().toEpochMilli() - nowMillis;
        } catch (DateTimeParseException ex) {
            return MALFORMED;
        }
    }

    /** Delta seconds, or epoch seconds when the number is that large. */
    private static long reset(@Nullable String value, long nowMillis) {
        long millis = seconds(value);
        if (millis == MALFORMED || millis < EPOCH_SECONDS_FROM * 1000) {
            return millis;
        }
        return millis - nowMillis;
    }

    /** Whole (or decimal) seconds, as milliseconds; {@link #MALFORMED} when it is no number. */
    static long seconds(@Nullable String value) {
        if (value == null) {
            return MALFORMED;
        }
        try {
            double seconds = Double.parseDouble(value.trim());
            if (Double.isNaN(seconds) || Double.isInfinite(seconds)) {
                return MALFORMED;
            }
            // saturates: an absurd number is capped later, not wrapped around
            return (long) Math.ceil(Math.min(seconds, Long.MAX_VALUE / 1000.0) * 1000);
        } catch (NumberFormatException ex) {
            return MALFORMED;
        }
    }

    private static boolean isZero(String value) {
        return value.trim().equals("0");
    }

    /**
     * The IETF field ({@code "default";r=0;t=30}, items separated by commas): the longest {@code t}
     * of an item whose {@code r} is 0; or the earlier drafts' one item {@code limit=100, remaining=0,
     * reset=30}. 0 when nothing is exhausted.
     */
    static long rateLimit(String value) {
        long pause = 0;
        String draftRemaining = null;
        String draftReset = null;
        for (String item : value.split(",")) {
            String r = null;
            String t = null;
            for (String parameter : item.split(";")) {
                int equals = parameter.indexOf('=');
                if (equals < 0) {
                    continue;
                }
                String name = parameter.substring(0, equals).trim().toLowerCase(java.util.Locale.ROOT);
                String number = parameter.substring(equals + 1).trim();
                switch (name) {
                    case "r" -> r = number;
                    case "t" -> t = number;
                    case "remaining" -> draftRemaining = number;
                    case "reset" -> draftReset = number;
                    default -> {}
                }
            }
            if (r != null && isZero(r)) {
                long seconds = seconds(t);
                if (seconds == MALFORMED || seconds < 0) {
                    return seconds;
                }
                pause = Math.max(pause, seconds);
            }
        }
        if (draftRemaining != null && isZero(draftRemaining)) {
            long seconds = seconds(draftReset);
            if (seconds == MALFORMED || seconds < 0) {
                return seconds;
            }
            pause = Math.max(pause, seconds);
        }
        return pause;
    }
}
