package dev.throttle.spring.bans;

import java.time.Instant;

/**
 * A key banned until a moment.
 *
 * @param ban the ban's name
 * @param key the banned key (a client address by default): mind where it is written
 * @param until when the ban ends
 */
public record ActiveBan(String ban, String key, Instant until) {

    /**
     * Milliseconds left at a moment.
     * @param nowMillis the moment, in epoch milliseconds
     * @return what is left, 0 once the ban has ended
     */
    public long remainingMillis(long nowMillis) {
        return Math.max(0, this.until.toEpochMilli() - nowMillis);
    }
}
