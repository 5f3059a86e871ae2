package dev.throttle.memory;

import static dev.throttle.ArrayTransition.EMPTY;

import com.github.benmanes.caffeine.cache.Cache;
import dev.throttle.ArrayTransition;
import dev.throttle.Decision;
import dev.throttle.Policy;
import dev.throttle.TimeSource;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;

/**
 * A limiter whose per-key state is an immutable {@code long[]} swapped by compare-and-set; what
 * the array means is the algorithm's {@link ArrayTransition}. A refusal writes nothing. A key that
 * comes while the policy is full is decided by the overflow cell (see {@link Room}).
 */
final class ArrayLimiter extends CellLimiter<AtomicReference<long[]>> {

    private static final Function<Object, AtomicReference<long[]>> NEW_CELL = (key) -> new AtomicReference<>(EMPTY);

    private final ArrayTransition transition;

    ArrayLimiter(
            Policy policy,
            Cache<Object, AtomicReference<long[]>> cells,
            Room room,
            TimeSource clock,
            ArrayTransition transition) {
        super(policy, cells, room, clock, new AtomicReference<>(EMPTY));
        this.transition = transition;
    }

    @Override
    public Decision tryAcquire(String given, int cost) {
        Object key = MemoryKeys.of(given);
        AtomicReference<long[]> cell = this.cells.getIfPresent(key);
        if (cell == null) {
            cell = this.room.hasRoom() ? this.cells.get(key, NEW_CELL) : this.overflow;
        }
        long now = this.clock.currentTimeMillis();
        for (; ; ) {
            long[] state = cell.get();
            long[] next = this.transition.acquire(state, now, cost);
            if (next == null) {
                return this.transition.rejected(state, now, cost);
            }
            if (cell.compareAndSet(state, next)) {
                return this.transition.allowed(next, now);
            }
        }
    }

    @Override
    AtomicReference<long[]> newCell(Object key) {
        return new AtomicReference<>(EMPTY);
    }

    @Override
    int charge(Object key, AtomicReference<long[]> cell, long now, int units, int maxDebt) {
        for (; ; ) {
            long[] state = cell.get();
            long[] next = this.transition.charge(state, now, units, maxDebt);
            if (next == state || cell.compareAndSet(state, next)) {
                long resetAfter = this.transition.peek(next, now).resetAfterMillis();
                if (resetAfter > policy().idleExpiry().toMillis()) {
                    keepIdle(resetAfter);
                }
                return this.transition.debt(next, now);
            }
        }
    }

    @Override
    void giveBack(AtomicReference<long[]> cell, long now, int cost) {
        for (; ; ) {
            long[] state = cell.get();
            if (state.length == 0 || cell.compareAndSet(state, this.transition.refund(state, now, cost))) {
                return;
            }
        }
    }

    @Override
    void giveBack(AtomicReference<long[]> cell, long now, int cost, long receipt) {
        giveBack(cell, (state) -> this.transition.refund(state, now, cost, receipt));
    }

    /** By the whole decision: a policy with several limits gives each back by its own part's receipt. */
    @Override
    public void refund(String key, int cost, Decision taken) {
        AtomicReference<long[]> cell = held(key);
        if (cell != null) {
            long now = this.clock.currentTimeMillis();
            giveBack(cell, (state) -> this.transition.refund(state, now, cost, taken));
        }
    }

    @Override
    public CompletionStage<Void> refundAsync(String key, int cost, Decision taken) {
        refund(key, cost, taken);
        return CompletableFuture.completedFuture(null);
    }

    /** Applies a refund to a key's state, until its compare-and-set wins; one that gives nothing back writes nothing. */
    private static void giveBack(AtomicReference<long[]> cell, UnaryOperator<long[]> refund) {
        for (; ; ) {
            long[] state = cell.get();
            if (state.length == 0) {
                return;
            }
            long[] next = refund.apply(state);
            if (next == state || cell.compareAndSet(state, next)) {
                return;
            }
        }
    }

    @Override
    Decision peek(@Nullable AtomicReference<long[]> cell) {
        return this.transition.peek((cell != null) ? cell.get() : EMPTY, this.clock.currentTimeMillis());
    }

    @Override
    void clear(AtomicReference<long[]> cell) {
        cell.set(EMPTY);
    }
}
