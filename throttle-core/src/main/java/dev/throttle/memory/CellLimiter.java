package dev.throttle.memory;

import com.github.benmanes.caffeine.cache.Cache;
import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.TimeSource;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * What the memory store's two limiters share: one cell per key in the policy's cache, a new key
 * taken in only while the policy has room, the overflow cell that decides the keys that came while
 * it was full (see {@link Room}), and the calls that find a key's cell without deciding for it.
 * Refunds, peeks and resets find only a key the cache holds: they never take a key in. What a cell
 * holds, and how a decision or a refund changes it, is the subclass's, over its own state:
 * {@link PackedLimiter} one {@code long}, {@link ArrayLimiter} an immutable {@code long[]}.
 *
 * @param <C> the type of a key's cell
 */
abstract class CellLimiter<C> implements Limiter {

    private final Policy policy;

    final Cache<Object, C> cells;

    /** Whether a new key may be taken in. */
    final Room room;

    final TimeSource clock;

    /** Decides the keys that came while the policy was full (see {@link Room}). */
    final C overflow;

    CellLimiter(Policy policy, Cache<Object, C> cells, Room room, TimeSource clock, C overflow) {
        this.policy = policy;
        this.cells = cells;
        this.room = room;
        this.clock = clock;
        this.overflow = overflow;
    }

    /**
     * Gives back what a call took without a receipt, until the cell's compare-and-set wins.
     * @param cell the key's cell
     * @param now the store's clock
     * @param cost units to give back
     */
    abstract void giveBack(C cell, long now, int cost);

    /**
     * Gives back what the call stamped {@code receipt} took, until the cell's compare-and-set wins;
     * a refund that gives nothing back writes nothing.
     * @param cell the key's cell
     * @param now the store's clock
     * @param cost units to give back
     * @param receipt the call's receipt, not 0
     */
    abstract void giveBack(C cell, long now, int cost, long receipt);

    /**
     * Takes {@code units} more into debt (see {@link Limiter#charge}), until the cell's
     * compare-and-set wins; returns the units owed after.
     * @param key the key, as the cache holds it
     * @param cell the key's cell
     * @param now the store's clock
     * @param units units to take
     * @param maxDebt the most units owed after
     * @return the units owed after the charge
     */
    abstract int charge(Object key, C cell, long now, int units, int maxDebt);

    /**
     * Returns what the next call of a key would be told, without changing its state.
     * @param cell the key's cell; null for a key never used
     * @return the decision
     */
    abstract Decision peek(@Nullable C cell);

    /** Sets a cell to the state of a key never used. */
    abstract void clear(C cell);

    /** The cell of a key the cache holds, or null: for the calls that never take a key in. */
    final @Nullable C held(String key) {
        return this.cells.getIfPresent(MemoryKeys.of(key));
    }

    @Override
    public final Policy policy() {
        return this.policy;
    }

    @Override
    public final void refund(String key, int cost) {
        C cell = held(key);
        if (cell != null) {
            giveBack(cell, this.clock.currentTimeMillis(), cost);
        }
    }

    @Override
    public final void refund(String key, int cost, long receipt) {
        if (receipt == 0) {
            // a decision no store stamped: give back as a receipt-less refund does
            refund(key, cost);
            return;
        }
        C cell = held(key);
        if (cell != null) {
            giveBack(cell, this.clock.currentTimeMillis(), cost, receipt);
        }
    }

    @Override
    public final CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
        // never blocks: the receipt must not be lost to the default, which refunds without it
        refund(key, cost, receipt);
        return CompletableFuture.completedFuture(null);
    }

    /**
     * Takes a key in as a decision does (a key not held, while the policy is full, charges the
     * overflow cell): a charge must land wherever the key's next call is decided.
     */
    @Override
    public final int charge(String given, int units, int maxDebt) {
        if (!policy().algorithm().takesActualCost()) {
            throw new UnsupportedOperationException(
                    "Policy '" + policy().name() + "' cannot take a cost after the call: "
                            + policy().algorithm().whyNoActualCost());
        }
        Object key = MemoryKeys.of(given);
        C cell = this.cells.getIfPresent(key);
        if (cell == null) {
            cell = this.room.hasRoom() ? this.cells.get(key, this::newCell) : this.overflow;
        }
        return charge(key, cell, this.clock.currentTimeMillis(), units, maxDebt);
    }

    /** A new key's cell. */
    abstract C newCell(Object key);

    /** The longest the cache was made to keep idle entries ({@link #keepIdle}); 0 before. */
    private volatile long keptIdleMillis;

    /**
     * Makes the cache keep idle entries at least {@code millis} (and its margin); never shorter than
     * it did: a state that stays not neutral for longer than the policy's idle expiry (a reservation
     * ahead, a debt) must not be dropped, which would hand the key a fresh quota.
     */
    final void keepIdle(long millis) {
        if (millis <= this.keptIdleMillis) {
            // kept that long already: no cache policy lookup, no allocation on every reservation ahead
            return;
        }
        Duration wanted = Duration.ofMillis(millis).plus(MemoryCells.EXPIRY_MARGIN);
        this.cells.policy().expireAfterAccess().ifPresent((access) -> {
            if (access.getExpiresAfter().compareTo(wanted) < 0) {
                access.setExpiresAfter(wanted);
            }
        });
        // after the cache keeps them: a call that skips the above relies on it being done
        this.keptIdleMillis = Math.max(this.keptIdleMillis, millis);
    }

    /** A key the cache does not hold is told what its next call would be: the overflow's, while full. */
    @Override
    public final Decision peek(String key) {
        C cell = held(key);
        return peek((cell != null) ? cell : this.room.hasRoom() ? null : this.overflow);
    }

    @Override
    public final void reset(String key) {
        C cell = held(key);
        if (cell != null) {
            clear(cell);
        }
    }

    /** Forgets what the keys that came while the policy was full took: for the store's clear. */
    final void clearOverflow() {
        clear(this.overflow);
    }
}
