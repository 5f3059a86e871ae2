package dev.throttle.spring.redis;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.Ticker;
import dev.throttle.Decision;
import dev.throttle.TimeSource;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Refusals that Redis gave to this instance, remembered until their Retry-After: one bounded
 * Caffeine cache per policy name. A lookup answers only the limiter that was refused, for the same
 * cost, and only while the time left is positive, counted on this instance's clock from when the
 * call was <em>sent</em> (Redis decided after that, so the remembered refusal ends no later than the
 * real one; on Redis time, one millisecond earlier still, since Redis floors its clock to whole
 * milliseconds). So an answer from here is a refusal Redis would give too: it can refuse a call Redis
 * would now let through only when the key was reset, given back or re-configured since, and those
 * drop the entry ({@link #forget}, on this instance and, by events, on every other).
 *
 * <p>A call that was in flight while its key was forgotten must not put back a refusal from before:
 * each policy counts the times it was forgotten ({@code epoch}), and a refusal is remembered only
 * when the count did not change between the call's sending and its answer. Thread-safe; lock-free
 * apart from Caffeine's own.
 */
final class NearCache {

    /** The longest wait remembered as it is: about 30 years (a longer one is remembered as this). */
    private static final long MAX_MILLIS = TimeUnit.DAYS.toMillis(365L * 30);

    private final NearCacheSettings settings;

    private final long minimumRetryMillis;

    /** Nanoseconds on this instance's clock: the store's clock when it has one, else System.nanoTime. */
    private final Ticker ticker;

    /** How much earlier than Redis a remembered refusal ends, in nanoseconds. */
    private final long slackNanos;

    private final Map<String, Entries> byPolicy = new ConcurrentHashMap<>();

    NearCache(NearCacheSettings settings, @Nullable TimeSource clock) {
        this.settings = settings;
        this.minimumRetryMillis = settings.minimumRetryAfter().toMillis();
        this.ticker = (clock != null) ? () -> clock.currentTimeMillis() * 1_000_000L : Ticker.systemTicker();
        // a clock passed to the scripts is the scripts' now, to the millisecond; Redis TIME is floored
        this.slackNanos = (clock != null) ? 0 : TimeUnit.MILLISECONDS.toNanos(1);
    }

    NearCacheSettings settings() {
        return this.settings;
    }

    /** The entries of one policy name, made at first use. */
    Entries of(String policy) {
        Entries entries = this.byPolicy.get(policy);
        return (entries != null) ? entries : this.byPolicy.computeIfAbsent(policy, (name) -> new Entries());
    }

    /** Forgets a key of a policy: it was reset or given back, here or on another instance. */
    void forget(String policy, String key) {
        Entries entries = this.byPolicy.get(policy);
        if (entries != null) {
            entries.forget(key);
        }
    }

    /** Forgets every key of a policy: it changed. */
    void forgetPolicy(String policy) {
        Entries entries = this.byPolicy.get(policy);
        if (entries != null) {
            entries.forgetAll();
        }
    }

    /** Forgets everything: events may have been missed (the subscription was lost and is back). */
    void forgetAll() {
        this.byPolicy.values().forEach(Entries::forgetAll);
    }

    /** How many refusals are remembered, all policies together (an estimate, as Caffeine's). */
    long size() {
        long size = 0;
        for (Entries entries : this.byPolicy.values()) {
            size += entries.cache.estimatedSize();
        }
        return size;
    }

    /** One remembered refusal: whose, for which cost, and until when (nanoseconds on the ticker). */
    private record Refusal(Object owner, int cost, int limit, int remaining, long until, long resetUntil) {}

    /** One policy name's refusals. */
    final class Entries {

        private final AtomicLong epoch = new AtomicLong();

        private final Cache<String, Refusal> cache = Caffeine.newBuilder()
                .maximumSize(NearCache.this.settings.maximumKeys())
                .ticker(NearCache.this.ticker)
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

        /** The time a call is sent at, to pass to {@link #remember}. */
        long now() {
            return NearCache.this.ticker.read();
        }

        /** The forget count a call is sent under, to pass to {@link #remember}. */
        long epoch() {
            return this.epoch.get();
        }

        /**
         * The refusal of {@code owner} for {@code key} and {@code cost} with the time left, or null when
         * none is remembered or its time has passed.
         */
        @Nullable
        Decision answer(String key, int cost, Object owner) {
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
         * Remembers Redis's refusal of a call sent at {@code sentAt} under {@code sentEpoch}, when its
         * wait is long enough to be worth it and the key was not forgotten meanwhile; an allowed call
         * drops what was remembered of the key. Only refusals of cost 1: for them the wait is the time
         * until the key's next unit, so until then the refusal's remaining (0) and its times stay what
         * Redis would say. A refusal of a larger cost stays a refusal, but units may come back before
         * its wait is over (a token bucket's refill, a GCRA interval), which changes RateLimit's r.
         */
        void remember(String key, int cost, Object owner, Decision decision, long sentAt, long sentEpoch) {
            if (decision.allowed()) {
                if (this.cache.estimatedSize() > 0) {
                    this.cache.invalidate(key);
                }
                return;
            }
            long retry = decision.retryAfterMillis();
            if (cost != 1
                    || retry < NearCache.this.minimumRetryMillis
                    || retry == Decision.NEVER
                    || this.epoch.get() != sentEpoch) {
                return;
            }
            long until = sentAt + nanos(retry) - NearCache.this.slackNanos;
            long resetUntil = sentAt + nanos(decision.resetAfterMillis());
            this.cache.put(key, new Refusal(owner, cost, decision.limit(), decision.remaining(), until, resetUntil));
            if (this.epoch.get() != sentEpoch) {
                // forgotten while being put: the forget may have run before the put
                this.cache.invalidate(key);
            }
        }

        void forget(String key) {
            this.epoch.incrementAndGet();
            this.cache.invalidate(key);
        }

        void forgetAll() {
            this.epoch.incrementAndGet();
            this.cache.invalidateAll();
        }

        /** Milliseconds as nanoseconds, at most about 30 years, so that no sum overflows. */
        private static long nanos(long millis) {
            return TimeUnit.MILLISECONDS.toNanos(Math.min(millis, MAX_MILLIS));
        }

        private static long ceilMillis(long nanos) {
            return (nanos <= 0) ? 0 : (nanos + 999_999) / 1_000_000;
        }
    }
}
