package dev.throttle;

import java.util.Arrays;

/**
 * The sliding log's transition ({@link SlidingLogPolicy}): over the times of a key's recent
 * allowed attempts, oldest first.
 *
 * <p>An attempt older than {@code ttl} ({@code now - t >= ttl}) no longer counts. With {@code c}
 * live attempts, {@code over = c + 1 - threshold}; when {@code over > 0} the call must come at
 * least {@code delays[over - 1]} after the most recent attempt. A refused call is not recorded.
 * The log never holds more than {@link SlidingLogPolicy#maxEntries()} times: that many fit in one
 * ttl, so anything older could not count.
 *
 * <p>The times ascend: an attempt is recorded at {@code now}, or at the most recent time when
 * {@code now} is before it (the clock stepped back), which keeps the order and counts the attempt
 * no shorter. So the live attempts are the log's tail.
 *
 * <p>The wait (a refusal's retry-after, and the next unit once no attempt is left before delays
 * apply) is exact: the earliest time at which the delay after the newest attempt has passed
 * <em>with the attempts that still count then</em>, since an old attempt that ages out first
 * lowers {@code over}. While attempts are left before delays apply, the next one comes when the
 * oldest live attempt ages out.
 *
 * <p>Receipt: the attempt's recorded time. A refund removes an attempt with that time while it
 * still counts (attempts with one time are alike), and nothing once it has aged out.
 */
final class SlidingLogTransition implements ArrayTransition {

    private final int threshold;

    private final long ttlMillis;

    private final long[] delays;

    private final int maxEntries;

    SlidingLogTransition(SlidingLogPolicy policy) {
        this.threshold = policy.threshold();
        this.ttlMillis = policy.ttl().toMillis();
        this.delays = policy.delaysMillis();
        this.maxEntries = policy.maxEntries();
    }

    /**
     * How many of the log's times still count: its tail after the last one that is ttl old. The
     * oldest is looked at first (in a log an abuser keeps full every time counts, and one probe
     * decides), then a binary search between the oldest, which no longer counts, and the newest.
     */
    private int live(long[] log, long now) {
        int n = log.length;
        if (n == 0 || now - log[n - 1] >= this.ttlMillis) {
            return 0;
        }
        if (now - log[0] < this.ttlMillis) {
            return n;
        }
        int lo = 1;
        int hi = n - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (now - log[mid] < this.ttlMillis) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return n - lo;
    }

    /** The delay after the newest attempt with {@code over} attempts past the threshold, over > 0. */
    private long delay(int over) {
        return this.delays[Math.min(over, this.delays.length) - 1];
    }

    /**
     * How long the next attempt must still wait, 0 when it may pass now: the earliest time at which
     * the delay after the newest attempt has passed, counting only the attempts still live then.
     * The {@code k}-th oldest live attempt ages out at its time plus ttl, lowering {@code over} by
     * one; the search stops at the first such time past the best found.
     */
    private long wait(long[] log, int live, long now) {
        int over = live + 1 - this.threshold;
        if (over <= 0) {
            return 0;
        }
        long newest = log[log.length - 1];
        long best = newest + delay(over);
        int oldestLive = log.length - live;
        for (int k = 1; k <= over; k++) {
            long agedOut = log[oldestLive + k - 1] + this.ttlMillis;
            if (agedOut >= best) {
                break;
            }
            best = (over - k <= 0) ? agedOut : Math.max(agedOut, newest + delay(over - k));
        }
        return Math.max(0, best - now);
    }

    /** Until one attempt more than the live ones would leave before delays apply, or may pass. */
    private long untilNextUnit(long[] log, int live, long now) {
        if (live == 0) {
            return 0;
        }
        if (live < this.threshold) {
            return log[log.length - live] + this.ttlMillis - now;
        }
        return wait(log, live, now);
    }

    @Override
    public long[] acquire(long[] log, long now, int cost) {
        int live = live(log, now);
        if (wait(log, live, now) > 0) {
            return null;
        }
        int kept = Math.min(live, this.maxEntries - 1);
        long[] next = new long[kept + 1];
        System.arraycopy(log, log.length - kept, next, 0, kept);
        next[kept] = (log.length > 0) ? Math.max(now, log[log.length - 1]) : now;
        return next;
    }

    @Override
    public Decision allowed(long[] next, long now) {
        long at = next[next.length - 1];
        return Decision.allow(
                this.threshold,
                Math.max(0, this.threshold - next.length),
                at + this.ttlMillis - now,
                untilNextUnit(next, next.length, now),
                Math.max(1, at));
    }

    @Override
    public Decision rejected(long[] log, long now, int cost) {
        long wait = wait(log, live(log, now), now);
        return Decision.reject(this.threshold, 0, wait, log[log.length - 1] + this.ttlMillis - now);
    }

    @Override
    public Decision peek(long[] log, long now) {
        int live = live(log, now);
        if (live == 0) {
            return Decision.allow(this.threshold, this.threshold, 0);
        }
        long untilNeutral = log[log.length - 1] + this.ttlMillis - now;
        long wait = wait(log, live, now);
        if (wait > 0) {
            return Decision.reject(this.threshold, 0, wait, untilNeutral);
        }
        return Decision.allow(
                this.threshold, Math.max(0, this.threshold - live), untilNeutral, untilNextUnit(log, live, now), 0);
    }

    @Override
    public long[] refund(long[] log, long now, int cost) {
        return (log.length == 1) ? EMPTY : Arrays.copyOf(log, log.length - 1);
    }

    @Override
    public long[] refund(long[] log, long now, int cost, long receipt) {
        int live = live(log, now);
        // the newest live attempt with the receipt's time: the times ascend, so search from the end
        for (int i = log.length - 1; i >= log.length - live; i--) {
            if (Math.max(1, log[i]) == receipt) {
                if (log.length == 1) {
                    return EMPTY;
                }
                long[] next = new long[log.length - 1];
                System.arraycopy(log, 0, next, 0, i);
                System.arraycopy(log, i + 1, next, i, log.length - 1 - i);
                return next;
            }
            if (log[i] < receipt) {
                break;
            }
        }
        return log;
    }
}
