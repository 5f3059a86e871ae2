package dev.throttle;

/**
 * The concurrency transition ({@link ConcurrencyPolicy}): over {@code [last, id_1, ..., id_n]}, the
 * last slot id the key gave and the ids of the slots it holds, oldest first.
 *
 * <p>Slot ids: a slot taken at {@code now} gets {@code max(last + 1, now * 1000 + 1)}, so ids
 * ascend, tell up to 999 slots per millisecond apart, and carry the time they were taken
 * ({@code id / 1000}; later than that only when a key takes more than 999 slots in one millisecond,
 * or the clock stepped back). Every id is below 2^53 (1000 times an epoch millisecond), so the Redis
 * twin holds it exactly. The id is the allowed call's receipt: a refund by receipt frees that slot
 * and no other, and nothing once it is gone (freed already, or its lease ran out), so a late or
 * second release never frees another call's slot. After the last slot is given back the key keeps
 * {@code [last]} until the lease has passed, so that an id is never given twice: a key forgotten
 * then takes its next id from a later millisecond.
 *
 * <p>A slot counts while {@code id / 1000 + lease > now}, written without division as
 * {@code id >= (now - lease + 1) * 1000}; the ids ascend, so the slots whose lease ran out are a
 * prefix of the list, dropped by the next call that takes a slot. What a call is told of when a
 * slot frees is a hint: the time until the oldest slot's lease runs out, at most
 * {@link ConcurrencyPolicy#RETRY_HINT}.
 */
final class ConcurrencyTransition implements ArrayTransition {

    /** Ids per millisecond. */
    static final long IDS_PER_MILLI = 1000;

    private final int limit;

    private final long leaseMillis;

    private final long hintMillis;

    ConcurrencyTransition(ConcurrencyPolicy policy) {
        this.limit = policy.limit();
        this.leaseMillis = policy.lease().toMillis();
        this.hintMillis = ConcurrencyPolicy.RETRY_HINT.toMillis();
    }

    /** The index of the first slot still held at {@code now}; {@code state.length} when none is. */
    private int firstLive(long[] state, long now) {
        long lowest = (now - this.leaseMillis + 1) * IDS_PER_MILLI;
        int i = 1;
        while (i < state.length && state[i] < lowest) {
            i++;
        }
        return i;
    }

    /** Until a slot's lease runs out. */
    private long untilExpiry(long id, long now) {
        return id / IDS_PER_MILLI + this.leaseMillis - now;
    }

    /** The hint a caller gets of when a slot frees: the oldest slot's lease, or the hint when sooner. */
    private long hint(long[] state, int first, long now) {
        return Math.max(1, Math.min(this.hintMillis, untilExpiry(state[first], now)));
    }

    @Override
    public long[] acquire(long[] state, long now, int cost) {
        int first = (state.length == 0) ? 1 : firstLive(state, now);
        int live = Math.max(0, state.length - first);
        if (live + 1 > this.limit) {
            return null;
        }
        long last = (state.length == 0) ? 0 : state[0];
        long id = Math.max(last + 1, now * IDS_PER_MILLI + 1);
        long[] next = new long[live + 2];
        next[0] = id;
        if (live > 0) {
            System.arraycopy(state, first, next, 1, live);
        }
        next[live + 1] = id;
        return next;
    }

    @Override
    public Decision allowed(long[] next, long now) {
        int live = next.length - 1;
        long id = next[live];
        return Decision.allow(this.limit, Math.max(0, this.limit - live), untilExpiry(id, now), hint(next, 1, now), id);
    }

    @Override
    public Decision rejected(long[] state, long now, int cost) {
        int first = firstLive(state, now);
        int live = state.length - first;
        return Decision.reject(
                this.limit,
                Math.max(0, this.limit - live),
                hint(state, first, now),
                untilExpiry(state[state.length - 1], now));
    }

    @Override
    public Decision peek(long[] state, long now) {
        int first = (state.length == 0) ? 1 : firstLive(state, now);
        int live = Math.max(0, state.length - first);
        if (live == 0) {
            return Decision.allow(this.limit, this.limit, 0);
        }
        if (live >= this.limit) {
            return rejected(state, now, 1);
        }
        return Decision.allow(
                this.limit, this.limit - live, untilExpiry(state[state.length - 1], now), hint(state, first, now), 0);
    }

    /** Without a receipt: frees the newest slot still held. */
    @Override
    public long[] refund(long[] state, long now, int cost) {
        if (state.length <= 1 || firstLive(state, now) == state.length) {
            return state;
        }
        return without(state, state.length - 1);
    }

    @Override
    public long[] refund(long[] state, long now, int cost, long receipt) {
        for (int i = state.length - 1; i >= 1; i--) {
            if (state[i] == receipt) {
                return without(state, i);
            }
            if (state[i] < receipt) {
                break;
            }
        }
        return state;
    }

    /** The state without slot {@code i}; the last id given stays. */
    private static long[] without(long[] state, int i) {
        long[] next = new long[state.length - 1];
        System.arraycopy(state, 0, next, 0, i);
        System.arraycopy(state, i + 1, next, i, state.length - 1 - i);
        return next;
    }
}
