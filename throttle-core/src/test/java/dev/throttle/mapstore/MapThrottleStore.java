package dev.throttle.mapstore;

import dev.throttle.ArrayTransition;
import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.PackedTransition;
import dev.throttle.Policy;
import dev.throttle.Rates;
import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.Transition;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A third store, written only here and from public types alone: each policy name's states in a
 * {@link ConcurrentHashMap}, each key's state committed by compare-and-set over the algorithm's Java
 * {@link Transition}. It knows no algorithm: it runs a transition by the shape of its state, one
 * {@code long} (kept boxed) or an immutable {@code long[]}. A state last written longer ago than
 * the longest idle expiry its policy name was bound with counts as none (it is neutral by then, and
 * a packed time read decades later could wrap); a state that a refund or a reset makes neutral is
 * removed. No bound on keys, which the memory store adds on top.
 */
final class MapThrottleStore implements ThrottleStore {

    private final TimeSource clock;

    /** Each policy name's states and rates, shared by every binding of the name. */
    private final Map<String, Name> names = new ConcurrentHashMap<>();

    MapThrottleStore(TimeSource clock) {
        this.clock = clock;
    }

    @Override
    public Limiter limiter(Policy policy) {
        Name name = this.names.computeIfAbsent(
                policy.name(), (key) -> new Name(new Rates(key), new ConcurrentHashMap<>(), new AtomicLong()));
        name.idleMillis().accumulateAndGet(policy.idleExpiry().toMillis(), Math::max);
        Transition transition = policy.algorithm().transitionOf(policy, name.rates());
        if (transition instanceof PackedTransition packed) {
            return new MapLimiter<Long>(policy, name, this.clock) {

                @Override
                Long empty() {
                    return PackedTransition.EMPTY;
                }

                @Override
                Long acquire(Long state, long now, int cost) {
                    long next = packed.acquire(state, now, cost);
                    return (next == PackedTransition.REJECTED) ? null : next;
                }

                @Override
                Decision allowed(Long next, long now) {
                    return packed.allowed(next, now);
                }

                @Override
                Long reserve(Long state, long now, int cost, long maxWaitMillis) {
                    long next = packed.reserve(state, now, cost, maxWaitMillis);
                    return (next == PackedTransition.REJECTED) ? null : next;
                }

                @Override
                Decision reserved(Long next, long now) {
                    return packed.reserved(next, now);
                }

                @Override
                Decision rejected(Long state, long now, int cost) {
                    return packed.rejected(state, now, cost);
                }

                @Override
                Decision peek(Long state, long now) {
                    return packed.peek(state, now);
                }

                @Override
                Long charge(Long state, long now, int units, int maxDebt) {
                    return packed.charge(state, now, units, maxDebt);
                }

                @Override
                int debt(Long state, long now) {
                    return packed.debt(state, now);
                }

                @Override
                Long refund(Long state, long now, int cost, Decision taken) {
                    long receipt = (taken != null) ? taken.receipt() : 0;
                    return (receipt == 0) ? packed.refund(state, now, cost) : packed.refund(state, now, cost, receipt);
                }
            };
        }
        ArrayTransition array = (ArrayTransition) transition;
        return new MapLimiter<long[]>(policy, name, this.clock) {

            @Override
            long[] empty() {
                return ArrayTransition.EMPTY;
            }

            @Override
            long[] acquire(long[] state, long now, int cost) {
                return array.acquire(state, now, cost);
            }

            @Override
            Decision allowed(long[] next, long now) {
                return array.allowed(next, now);
            }

            @Override
            Decision rejected(long[] state, long now, int cost) {
                return array.rejected(state, now, cost);
            }

            @Override
            Decision peek(long[] state, long now) {
                return array.peek(state, now);
            }

            @Override
            long[] charge(long[] state, long now, int units, int maxDebt) {
                return array.charge(state, now, units, maxDebt);
            }

            @Override
            int debt(long[] state, long now) {
                return array.debt(state, now);
            }

            @Override
            long[] refund(long[] state, long now, int cost, Decision taken) {
                return (taken != null) ? array.refund(state, now, cost, taken) : array.refund(state, now, cost);
            }
        };
    }

    @Override
    public String kind() {
        return "map";
    }

    @Override
    public boolean isNonBlocking() {
        return true;
    }

    /** A policy name's rates, its states, and the longest idle expiry it was bound with. */
    private record Name(Rates rates, Map<String, Held> states, AtomicLong idleMillis) {}

    /** A key's state and when it was written. */
    private record Held(Object state, long writtenAt) {}

    /**
     * One policy's keys over one shape of state {@code S}: the compare-and-set loops, the same for
     * every algorithm. An absent key has the empty state; a neutral state is removed.
     */
    private abstract static class MapLimiter<S> implements Limiter {

        private final Policy policy;

        private final Map<String, Held> states;

        private final AtomicLong idleMillis;

        private final TimeSource clock;

        MapLimiter(Policy policy, Name name, TimeSource clock) {
            this.policy = policy;
            this.states = name.states();
            this.idleMillis = name.idleMillis();
            this.clock = clock;
        }

        abstract S empty();

        /** The state after allowing the call, or null when it is refused. */
        abstract S acquire(S state, long now, int cost);

        abstract Decision allowed(S next, long now);

        /** The state after reserving the call's turn, or null when it is refused; the array shape cannot wait. */
        S reserve(S state, long now, int cost, long maxWaitMillis) {
            return acquire(state, now, cost);
        }

        Decision reserved(S next, long now) {
            return allowed(next, now);
        }

        abstract Decision rejected(S state, long now, int cost);

        abstract Decision peek(S state, long now);

        /** The state after a charge into debt. */
        abstract S charge(S state, long now, int units, int maxDebt);

        abstract int debt(S state, long now);

        /** The state after giving back what {@code taken} took; without a decision, as a refund without a receipt. */
        abstract S refund(S state, long now, int cost, Decision taken);

        /** The state held, or the empty state when none is held or it has been idle past the expiry. */
        @SuppressWarnings("unchecked")
        private S state(Held held, long now) {
            return (held == null || now - held.writtenAt() >= this.idleMillis.get()) ? empty() : (S) held.state();
        }

        /** Commits {@code next} over what was {@code held}; false when another call got there first. */
        private boolean commit(String key, Held held, S next, long now) {
            boolean neutral = next.equals(empty()) || (next instanceof long[] array && array.length == 0);
            if (held == null) {
                return neutral || this.states.putIfAbsent(key, new Held(next, now)) == null;
            }
            return neutral ? this.states.remove(key, held) : this.states.replace(key, held, new Held(next, now));
        }

        @Override
        public Policy policy() {
            return this.policy;
        }

        @Override
        public Decision tryAcquire(String key, int cost) {
            long now = this.clock.currentTimeMillis();
            for (; ; ) {
                Held held = this.states.get(key);
                S state = state(held, now);
                S next = acquire(state, now, cost);
                if (next == null) {
                    return rejected(state, now, cost);
                }
                if (commit(key, held, next, now)) {
                    return allowed(next, now);
                }
            }
        }

        /** A reserved turn may keep the state from neutral past the idle expiry: held that long then. */
        @Override
        public Decision reserve(String key, int cost, long maxWaitMillis) {
            long now = this.clock.currentTimeMillis();
            for (; ; ) {
                Held held = this.states.get(key);
                S state = state(held, now);
                S next = reserve(state, now, cost, maxWaitMillis);
                if (next == null) {
                    return rejected(state, now, cost);
                }
                if (commit(key, held, next, now)) {
                    Decision decision = reserved(next, now);
                    this.idleMillis.accumulateAndGet(decision.resetAfterMillis(), Math::max);
                    return decision;
                }
            }
        }

        /** A debt may keep the state from neutral past the idle expiry: held that long then. */
        @Override
        public int charge(String key, int units, int maxDebt) {
            if (!this.policy.algorithm().takesActualCost()) {
                throw new UnsupportedOperationException(this.policy.algorithm().whyNoActualCost());
            }
            long now = this.clock.currentTimeMillis();
            for (; ; ) {
                Held held = this.states.get(key);
                S state = state(held, now);
                S next = charge(state, now, units, maxDebt);
                if (next.equals(state) || commit(key, held, next, now)) {
                    this.idleMillis.accumulateAndGet(peek(next, now).resetAfterMillis(), Math::max);
                    return debt(next, now);
                }
            }
        }

        private void giveBack(String key, int cost, Decision taken) {
            long now = this.clock.currentTimeMillis();
            for (; ; ) {
                Held held = this.states.get(key);
                S state = state(held, now);
                if (state.equals(empty()) || (state instanceof long[] array && array.length == 0)) {
                    return;
                }
                S next = refund(state, now, cost, taken);
                if (next.equals(state) || commit(key, held, next, now)) {
                    return;
                }
            }
        }

        @Override
        public void refund(String key, int cost) {
            giveBack(key, cost, null);
        }

        @Override
        public void refund(String key, int cost, long receipt) {
            giveBack(key, cost, (receipt == 0) ? null : Decision.allow(0, 0, 0).withReceipt(receipt));
        }

        @Override
        public void refund(String key, int cost, Decision taken) {
            giveBack(key, cost, taken);
        }

        @Override
        public CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
            refund(key, cost, receipt);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<Void> refundAsync(String key, int cost, Decision taken) {
            refund(key, cost, taken);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public Decision peek(String key) {
            long now = this.clock.currentTimeMillis();
            return peek(state(this.states.get(key), now), now);
        }

        @Override
        public void reset(String key) {
            this.states.remove(key);
        }
    }
}
