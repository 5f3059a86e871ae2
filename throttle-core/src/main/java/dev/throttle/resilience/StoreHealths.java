package dev.throttle.resilience;

import dev.throttle.Limiter;
import dev.throttle.TimeSource;
import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * The health of each partition of one store ({@link Limiter#partition}), shared by all the limiters
 * of a {@link ResilientThrottleStore}: a store that is one thing to fail has one health, the whole
 * store's; a partitioned store (a Redis Cluster) has one per partition, each with its own outages,
 * probes and owed settlements, so that a dead master takes out its own keys only, and a timeout of
 * one partition is never reset by the answers of another.
 *
 * <p>The whole store's health also serves a partitioned store: when it is down (a warm-up that got
 * no answer), every call is answered by the failure mode until a probe gets through, as for a store
 * of one partition.
 *
 * <p>A partition stays down until a probe of its own succeeds; a probe picks a key on that
 * partition. A partition that holds no keys any more (its slots moved to a promoted replica, which is
 * a partition of its own) would never be asked again, so while any partition is down, the calls of
 * the others start its probes too, which find that it holds no keys and end its outage.
 *
 * <p>Lock-free; a decision on a store of one partition costs one volatile read more than the
 * store's own call, and on a partitioned store one map lookup.
 */
final class StoreHealths {

    private final String store;

    private final String mode;

    private final TimeSource clock;

    /** Outages in progress, over every partition and the whole store. */
    private final AtomicInteger outages = new AtomicInteger();

    private final StoreHealth whole;

    private final Map<Object, StoreHealth> partitions = new ConcurrentHashMap<>();

    /**
     * The first limiter bound whose acquires count only once the store confirms them
     * ({@link Limiter#keepsUnconfirmedAcquires()}), or null: every probe goes through it, so that an
     * outage does not end on a store that answers writes but cannot confirm them (a Redis master
     * without a replica), which every such call would start again.
     */
    private volatile @Nullable Limiter confirmingProber;

    /** Every health, the whole store's first: read where all are visited (reports, probes). */
    private final AtomicReference<StoreHealth[]> all;

    StoreHealths(String store, String mode, TimeSource clock) {
        this.store = store;
        this.mode = mode;
        this.clock = clock;
        this.whole = new StoreHealth(store, mode, null, new Settlements(store, clock), this.outages);
        this.all = new AtomicReference<>(new StoreHealth[] {this.whole});
    }

    /** The whole store's health: the only one of a store of one partition. */
    StoreHealth whole() {
        return this.whole;
    }

    /** The health of the partition that holds {@code key}, as {@code store} tells it. */
    StoreHealth of(Limiter store, String key) {
        StoreHealth whole = this.whole;
        if (whole.isDown()) {
            return whole;
        }
        Object partition = store.partition(key);
        if (partition == Limiter.ONE_PARTITION) {
            return whole;
        }
        StoreHealth health = this.partitions.get(partition);
        return (health != null) ? health : this.partitions.computeIfAbsent(partition, this::added);
    }

    private StoreHealth added(Object partition) {
        StoreHealth health = new StoreHealth(
                this.store, this.mode, partition, new Settlements(this.store, this.clock), this.outages);
        // once per partition (inside computeIfAbsent); copy-on-write, as partitions are few
        for (; ; ) {
            StoreHealth[] known = this.all.get();
            StoreHealth[] grown = Arrays.copyOf(known, known.length + 1);
            grown[known.length] = health;
            if (this.all.compareAndSet(known, grown)) {
                return health;
            }
        }
    }

    /** Probes go through {@code limiter} from now on, unless a confirming limiter was bound before. */
    void probeThrough(Limiter limiter) {
        if (this.confirmingProber == null) {
            this.confirmingProber = limiter;
        }
    }

    /** The limiter that probes for a call of {@code asking}: the confirming one when there is one. */
    Limiter prober(Limiter asking) {
        Limiter confirming = this.confirmingProber;
        return (confirming != null) ? confirming : asking;
    }

    /** Whether any partition, or the whole store, is in an outage. */
    boolean isDown() {
        return this.outages.get() != 0;
    }

    /**
     * Starts a probe of every partition in an outage other than {@code asked} (whose own calls probe
     * it), unless one runs: called by the calls that a partition up answers, while another is down.
     */
    void probeOthers(StoreHealth asked, Limiter store) {
        for (StoreHealth health : this.all.get()) {
            if (health != asked && health.isDown()) {
                health.probe(prober(store));
            }
        }
    }

    /** The outage that started first among those in progress, or null while every partition answers. */
    @Nullable
    StoreHealth firstDown() {
        StoreHealth first = null;
        Instant firstSince = null;
        for (StoreHealth health : this.all.get()) {
            Instant since = health.downSince();
            if (since != null && (firstSince == null || since.isBefore(firstSince))) {
                first = health;
                firstSince = since;
            }
        }
        return first;
    }
}
