package dev.throttle.resilience;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.Ticker;
import dev.throttle.Decision;
import dev.throttle.TimeSource;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Refusals a networked store gave to this instance for one policy, remembered until their
 * Retry-After in a bounded Caffeine cache: what a store's limiter keeps to implement
 * {@link RememberedRefusals} (the Redis store's near cache, the jdbc store's memory for an outage).
 *
 * <p>A lookup answers only the limiter that was refused, for the same cost, and only while the time
 * left is positive, counted on this instance's clock from when the call was <em>sent</em> (the store
 * decided after that, so the remembered refusal ends no later than the real one; on a store's clock
 * floored to whole milliseconds, one millisecond earlier still). So an answer from here is a refusal
 * the store would give too: it can refuse a call the store would now let through only when the key
 * was reset, given back or re-configured since, and those drop the entry ({@link #forget}).
 *
 * <p>Only refusals of cost 1 are remembered: for them the wait is the time until the key's next unit,
 * so until then the refusal's remaining (0) and its times stay what the store would say. A refusal
 * of a larger cost stays a refusal, but units may come back before its wait is over (a token
 * bucket's refill, a GCRA interval), which changes RateLimit's {@code r}.
 *
 * <p>A call that was in flight while its key was forgotten must not put back a refusal from before:
 * the memory counts the times it was forgotten ({@link #epoch()}), and a refusal is remembered only
 * when the count did not change between the call's sending and its answer. Thread-safe; lock-free
 * apart from Caffeine's own.
 */
public final class RefusalMemory {

    /** The most refused keys a store remembers per policy unless configured otherwise. */
    public static final long DEFAULT_MAXIMUM_KEYS = 100_000;

    /**
     * The shortest Retry-After worth remembering unless configured otherwise, in milliseconds: below
     * it an entry saves a store only a handful of calls.
     */
    public static final long DEFAULT_MINIMUM_RETRY_MILLIS = 50;

    /** The longest wait remembered as it is: about 30 years (a longer one is remembered as this). */
    private static final long MAX_MILLIS = TimeUnit.DAYS.toMillis(365L * 30);

    private final long minimumRetryMillis;

    /** Nanoseconds on this instance's clock: the store's clock when it has one, else System.nanoTime. */
    private final Ticker ticker;

    /** How much earlier than the store a remembered refusal ends, in nanoseconds. */
    private final long slackNanos;

    private final AtomicLong epoch = new AtomicLong();

    private final Cache<String, Refusal> cache;

    /**
     * Creates an empty memory.
     * @param maximumKeys the most refused keys remembered, at least 1
     * @param minimumRetryMillis the shortest Retry-After worth remembering, in milliseconds
     * @param clock the clock the store's calls are decided on when it is this instance's (tests that
     * drive a {@link dev.throttle.ManualTimeSource}), or null for the store's own clock, floored to
     * whole milliseconds
     * @throws IllegalArgumentException when {@code maximumKeys} is below 1
     */
    public RefusalMemory(long maximumKeys, long minimumRetryMillis, @Nullable TimeSource clock) {
        if (maximumKeys < 1) {
            throw new IllegalArgumentException("maximumKeys must be at least 1, was " + maximumKeys);
        }
        this.minimumRetryMillis = minimumRetryMillis;
        this.ticker = (clock != null) ? () -> clock.currentTimeMillis() * 1_000_000L : Ticker.systemTicker();
        // a clock passed to the store is the store's now, to the millisecond; a store's own is floored
        this.slackNanos = (clock != null) ? 0 : TimeUnit.MILLISECONDS.toNanos(1);
        this.cache = Caffeine.newBuilder()
                .maximumSize(maximumKeys)
                .ticker(this.ticker)
                .expireAfter(new Expiry<String, Refusal>() {

                    @Override
                    public long expireAfterCreate(String key, Refusal refusal, long now) {
                        return Math.max(0, refusal.until - now);
                    }

                    @Override
                    public long expireAfterUpdate(String key, Refusal refusal, long now, long duration) {
                        return Math.max(0, refusal.until - now);
                    }

                    @Override
                    public long expireAfterRead(String key, Refusal refusal, long now, long duration) {
                        return duration;
                    }
                })
                .build();
    }

    /** One remembered refusal: whose, for which cost, and until when (nanoseconds on the ticker). */
    private record Refusal(Object owner, int cost, int limit, int remaining, long until, long resetUntil) {}

    /**
     * Returns the time a call is sent at, to pass to {@link #remember}.
     * @return nanoseconds on this memory's clock
     */
    public long now() {
        return this.ticker.read();
    }

    /**
     * Returns the forget count a call is sent under, to pass to {@link #remember}.
     * @return the count
     */
    public long epoch() {
        return this.epoch.get();
    }

    /**
     * Returns the refusal of {@code owner} for {@code key} and {@code cost} with the time left, or null
     * when none is remembered or its time has passed.
     * @param key the key
     * @param cost units the call asks for
     * @param owner the limiter asking, as it remembered
     * @return the refusal, or null
     */
    public @Nullable Decision answer(String key, int cost, Object owner) {
        Refusal refusal = this.cache.getIfPresent(key);
        if (refusal == null || refusal.owner != owner || refusal.cost != cost) {
            return null;
        }
        long now = now();
        long left = refusal.until - now;
        if (left <= 0) {
            return null;
        }
        long retryMillis = ceilMillis(left);
        long resetMillis = Math.max(retryMillis, ceilMillis(refusal.resetUntil - now));
        return Decision.reject(refusal.limit, refusal.remaining, retryMillis, resetMillis);
    }

    /**
     * Remembers the store's refusal of a call sent at {@code sentAt} under {@code sentEpoch}, when it
     * is of cost 1, its wait is long enough to be worth it and the key was not forgotten meanwhile; an
     * allowed call drops what was remembered of the key.
     * @param key the key
     * @param cost units the call asked for
     * @param owner the limiter that made the call
     * @param decision the store's decision
     * @param sentAt {@link #now()} when the call was sent
     * @param sentEpoch {@link #epoch()} when the call was sent
     */
    public void remember(String key, int cost, Object owner, Decision decision, long sentAt, long sentEpoch) {
        if (decision.allowed()) {
            if (this.cache.estimatedSize() > 0) {
                this.cache.invalidate(key);
            }
            return;
        }
        long retry = decision.retryAfterMillis();
        if (cost != 1 || retry < this.minimumRetryMillis || retry == Decision.NEVER || this.epoch.get() != sentEpoch) {
            return;
        }
        long until = sentAt + nanos(retry) - this.slackNanos;
        long resetUntil = sentAt + nanos(decision.resetAfterMillis());
        this.cache.put(key, new Refusal(owner, cost, decision.limit(), decision.remaining(), until, resetUntil));
        if (this.epoch.get() != sentEpoch) {
            // forgotten while being put: the forget may have run before the put
            this.cache.invalidate(key);
        }
    }

    /**
     * Forgets a key: it was reset or given back.
     * @param key the key
     */
    public void forget(String key) {
        this.epoch.incrementAndGet();
        this.cache.invalidate(key);
    }

    /** Forgets every key: the policy changed, or forgets may have been missed. */
    public void forgetAll() {
        this.epoch.incrementAndGet();
        this.cache.invalidateAll();
    }

    /**
     * Returns how many refusals are remembered.
     * @return an estimate, as Caffeine's
     */
    public long size() {
        return this.cache.estimatedSize();
    }

    /** Milliseconds as nanoseconds, at most about 30 years, so that no sum overflows. */
    private static long nanos(long millis) {
        return TimeUnit.MILLISECONDS.toNanos(Math.min(millis, MAX_MILLIS));
    }

    private static long ceilMillis(long nanos) {
        return (nanos <= 0) ? 0 : (nanos + 999_999) / 1_000_000;
    }
}
