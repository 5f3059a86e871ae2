package dev.throttle.spring.bans;

import java.time.Duration;

/**
 * Hears what bans do: for metrics and alerts. Never told the key. Implementations must be
 * thread-safe and fast, and should not throw: they run on the request's thread (or a store's I/O
 * thread).
 */
public interface BanListener {

    /**
     * A ban started on this instance: counted refusals reached its {@code after}, or an operator
     * added it.
     * @param ban the ban's name
     * @param length how long it lasts
     */
    default void onBanStarted(String ban, Duration length) {}

    /**
     * A request was refused by a ban on this instance.
     * @param ban the ban's name
     */
    default void onBanRefused(String ban) {}
}
