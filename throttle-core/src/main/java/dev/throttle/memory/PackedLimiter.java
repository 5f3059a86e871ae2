package dev.throttle.memory;

import static dev.throttle.PackedTransition.EMPTY;
import static dev.throttle.PackedTransition.REJECTED;

import com.github.benmanes.caffeine.cache.Cache;
import dev.throttle.Decision;
import dev.throttle.PackedTransition;
import dev.throttle.Policy;
import dev.throttle.TimeSource;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A limiter whose per-key state fits in one {@code long}, held in an {@link AtomicLong} per key;
 * what the state means is the algorithm's {@link PackedTransition}.
 *
 * <p>Concurrency: a decision reads the key's cell from the cache (no lock on a hit; see
 * {@link #cell}), computes the next state as a pure function of (state, now, cost) and commits it
 * with compare-and-set, retrying on contention. A refusal writes nothing. So a decision allocates
 * nothing but its {@link Decision}, and no thread ever waits for another.
 */
final class PackedLimiter extends CellLimiter<PackedLimiter.Cell> {

    private static final Function<Object, Cell> NEW_CELL = (key) -> new Cell();

    private final com.github.benmanes.caffeine.cache.Policy<Object, Cell> quiet;

    private final PackedTransition transition;

    /** The cache's expire-after-access: the policy's idle expiry. */
    private final long idleMillis;

    /** How long reads of a key's cell may go unrecorded in the cache (see {@link #cell}). */
    private final long touchMillis;

    PackedLimiter(Policy policy, Cache<Object, Cell> cells, Room room, TimeSource clock, PackedTransition transition) {
        super(policy, cells, room, clock, new Cell());
        this.quiet = cells.policy();
        this.transition = transition;
        this.idleMillis = policy.idleExpiry().toMillis();
        this.touchMillis = this.idleMillis / 4;
    }

    /**
     * The key's cell, created when absent.
     *
     * <p>{@link Cache#get} records every access: a read-buffer write and an access-time write on the
     * entry, shared by every thread deciding for that key, which on a hot key costs more than the
     * decision itself. So the cell is looked up quietly ({@code getIfPresentQuietly}: the map lookup
     * and the expiry check only) and accesses are recorded only when they matter:
     * <ul>
     * <li>a read is recorded when the cache last heard of the key a quarter of the idle expiry ago or
     * more, so a key in use is never near its expiry;</li>
     * <li>a write (an allowed call) is recorded when the entry's recorded access would otherwise
     * expire before the new state is neutral again ({@link #allowedAndRecorded}), so no state is ever
     * dropped before it is neutral, exactly as when every access was recorded.</li>
     * </ul>
     * A key the cache does not hold while the policy is full gets the overflow cell (see {@link Room}).
     */
    private Cell cell(Object key, long now) {
        Cell cell = this.quiet.getIfPresentQuietly(key);
        if (cell != null && now - cell.touched < this.touchMillis && now >= cell.touched) {
            return cell;
        }
        if (cell == null && !this.room.hasRoom()) {
            return this.overflow;
        }
        cell = this.cells.get(key, NEW_CELL);
        cell.touched = now;
        return cell;
    }

    /**
     * The decision for an allowed call, after recording the access in the cache when the entry would
     * otherwise expire ({@code touched + idle}) before the new state is neutral
     * ({@code now + resetAfter}).
     */
    private Decision allowedAndRecorded(Object key, Cell cell, long next, long now) {
        Decision decision = this.transition.allowed(next, now);
        if (cell.touched + this.idleMillis < now + decision.resetAfterMillis()) {
            Cell current = this.cells.getIfPresent(key);
            if (current != null) {
                current.touched = now;
            }
        }
        return decision;
    }

    @Override
    public Decision tryAcquire(String given, int cost) {
        Object key = MemoryKeys.of(given);
        long now = this.clock.currentTimeMillis();
        Cell cell = cell(key, now);
        for (; ; ) {
            long state = cell.get();
            long next = this.transition.acquire(state, now, cost);
            if (next == REJECTED) {
                return this.transition.rejected(state, now, cost);
            }
            if (cell.compareAndSet(state, next)) {
                return allowedAndRecorded(key, cell, next, now);
            }
        }
    }

    /**
     * As {@link #tryAcquire}, through the transition's reservation. A reservation may keep the key's
     * state from being neutral for longer than the policy's idle expiry (a turn reserved ahead), so
     * the cache is told to keep idle entries that long: a state dropped while its reservations wait
     * would hand the key a fresh quota on top of them.
     */
    @Override
    public Decision reserve(String given, int cost, long maxWaitMillis) {
        if (maxWaitMillis == 0) {
            return tryAcquire(given, cost);
        }
        Object key = MemoryKeys.of(given);
        long now = this.clock.currentTimeMillis();
        Cell cell = cell(key, now);
        for (; ; ) {
            long state = cell.get();
            long next = this.transition.reserve(state, now, cost, maxWaitMillis);
            if (next == REJECTED) {
                return this.transition.rejected(state, now, cost);
            }
            if (cell.compareAndSet(state, next)) {
                Decision decision = this.transition.reserved(next, now);
                if (decision.resetAfterMillis() > this.idleMillis) {
                    keepIdle(decision.resetAfterMillis());
                }
                // as an allowed call: the access is recorded only when the entry could expire first
                if (cell.touched + this.idleMillis < now + decision.resetAfterMillis()) {
                    Cell current = this.cells.getIfPresent(key);
                    if (current != null) {
                        current.touched = now;
                    }
                }
                return decision;
            }
        }
    }

    @Override
    Cell newCell(Object key) {
        return new Cell();
    }

    @Override
    int charge(Object key, Cell cell, long now, int units, int maxDebt) {
        for (; ; ) {
            long state = cell.get();
            long next = this.transition.charge(state, now, units, maxDebt);
            if (next == state || cell.compareAndSet(state, next)) {
                Decision after = this.transition.peek(next, now);
                if (after.resetAfterMillis() > this.idleMillis) {
                    keepIdle(after.resetAfterMillis());
                }
                Cell current = this.cells.getIfPresent(key);
                if (current != null) {
                    current.touched = now;
                }
                return this.transition.debt(next, now);
            }
        }
    }

    @Override
    void giveBack(Cell cell, long now, int cost) {
        for (; ; ) {
            long state = cell.get();
            if (state == EMPTY || cell.compareAndSet(state, this.transition.refund(state, now, cost))) {
                return;
            }
        }
    }

    @Override
    void giveBack(Cell cell, long now, int cost, long receipt) {
        for (; ; ) {
            long state = cell.get();
            if (state == EMPTY) {
                return;
            }
            long next = this.transition.refund(state, now, cost, receipt);
            if (next == state || cell.compareAndSet(state, next)) {
                return;
            }
        }
    }

    @Override
    Decision peek(@Nullable Cell cell) {
        return this.transition.peek((cell != null) ? cell.get() : EMPTY, this.clock.currentTimeMillis());
    }

    @Override
    void clear(Cell cell) {
        cell.set(EMPTY);
    }

    /**
     * A key's packed state, and when the cache last recorded an access to it.
     */
    static final class Cell extends AtomicLong {

        private static final long serialVersionUID = 1L;

        /**
         * The clock (milliseconds) when an access was last recorded in the cache. A plain field: a
         * stale read only records one access more.
         */
        transient long touched;

        Cell() {
            super(EMPTY);
        }
    }
}
