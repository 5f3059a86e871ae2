package dev.throttle.spring.redis;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.Policy;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.resilience.RefusalMemory;
import dev.throttle.resilience.RememberedRefusals;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.core.script.RedisScript;
import reactor.core.publisher.Mono;

/**
 * One policy's keys in Redis, through the policy's own script ({@link PolicyScript}): every call
 * bounded by the store's timeout ({@link CallBounds}).
 *
 * <p>With the store's near cache, an acquire first looks for a refusal it remembers (when the policy
 * answers from it) and remembers the refusals Redis gives (always: a failure policy answers from them
 * during an outage, {@link #rememberedRefusal}); a reset or a refund forgets the key here once Redis
 * has it, then publishes it to the other instances. Thread-safe.
 */
final class RedisLimiter implements SourcedLimiter, RememberedRefusals {

    private final Policy policy;

    private final RedisCalls calls;

    private final PolicyScript script;

    /** The timeout on every call, and the failure it turns into. */
    private final CallBounds bounds;

    /** The policy's remembered refusals; null without a near cache. */
    private final @Nullable RefusalMemory nearCache;

    /** Whether calls are answered from {@link #nearCache} while Redis answers. */
    private final boolean answersLocally;

    private final DecisionSource storeSource;

    private final DecisionSource nearCacheSource;

    /** The policy's acquires, sent in batches when they wait at the same moment; null when sent one by one. */
    private final @Nullable DecisionBatches batches;

    /** Where the policy's hash tag starts: a key's slot, and so its master on a Redis Cluster. */
    private final ClusterNodes.TagStart tag;

    /**
     * The writes that wait for a replica, when the policy has {@code durability: replicated}: its
     * acquires, reservations, charges and resets (a refund lost in a failover only leaves a unit
     * taken); null otherwise.
     */
    private final @Nullable ReplicatedWrites replicated;

    /**
     * @param nearCache the policy's remembered refusals, null without a near cache
     * @param nearCacheSettings the near cache's settings, which say whether it answers this policy
     */
    RedisLimiter(
            RedisCalls calls, Policy policy, @Nullable RefusalMemory nearCache, NearCacheSettings nearCacheSettings) {
        this.policy = policy;
        this.calls = calls;
        this.script = new PolicyScript(calls, policy);
        this.bounds = new CallBounds(calls, policy.name(), calls.timeout());
        this.nearCache = nearCache;
        // a policy of several limits answers from Redis: a refusal remembered here would lose its limits' items
        this.answersLocally = nearCache != null && nearCacheSettings.answersFor(policy) && !policy.severalLimits();
        this.storeSource = DecisionSource.store(RedisCalls.KIND);
        this.nearCacheSource = DecisionSource.nearCache(RedisCalls.KIND);
        this.tag = ClusterNodes.TagStart.of(PolicyScript.keyStart(calls.keyPrefix(), policy.name()), policy.name());
        this.replicated = calls.replicatedWrites(policy.name());
        // on a Cluster, a batch could only hold keys of one slot: acquires are sent one by one there;
        // a write that waits for a replica has a connection of its own
        @SuppressWarnings("rawtypes")
        RedisScript<List> batch = (calls.batching() && calls.clusterNodes() == null && this.replicated == null)
                ? RedisThrottleScripts.batchOf(policy)
                : null;
        this.batches = (batch != null) ? new DecisionBatches(calls, batch, this.script) : null;
    }

    /**
     * The key's master on a Redis Cluster, by its slot, so that a dead master takes out its own keys
     * only; on standalone and Sentinel, the whole store.
     */
    @Override
    public Object partition(String key) {
        ClusterNodes nodes = this.calls.clusterNodes();
        return (nodes != null) ? nodes.partition(this.tag, key) : ONE_PARTITION;
    }

    @Override
    public Policy policy() {
        return this.policy;
    }

    /**
     * True unless the policy's acquires wait for a replica: a key's calls go on one connection (one per
     * node on a Cluster), which Redis reads in the order they were written, and a call is handed to the
     * connection before the method that makes it returns; a batch sent from the connection's event
     * loop while a release is on its way is queued behind what other threads handed over before
     * ({@link DecisionBatches}). A policy with {@code durability: replicated} sends its acquires on a connection of their own, which a
     * release on the store's connection could reach after the next acquire.
     */
    @Override
    public boolean decidesInOrderMade() {
        return this.replicated == null;
    }

    /** With {@code durability: replicated}: an acquire not confirmed by a replica is kept for the store. */
    @Override
    public boolean keepsUnconfirmedAcquires() {
        return this.replicated != null;
    }

    @Override
    public Decision tryAcquire(String key, int cost) {
        if (cost > this.policy.maxCost()) {
            return Decision.neverAllowed(this.policy.quota());
        }
        Decision local = answerLocally(key, cost);
        return (local != null) ? local : acquireNow(key, cost);
    }

    @Override
    public SourcedDecision tryAcquireSourced(String key, int cost) {
        if (cost > this.policy.maxCost()) {
            return new SourcedDecision(Decision.neverAllowed(this.policy.quota()), this.storeSource);
        }
        Decision local = answerLocally(key, cost);
        return (local != null)
                ? new SourcedDecision(local, this.nearCacheSource)
                : new SourcedDecision(acquireNow(key, cost), this.storeSource);
    }

    @Override
    public CompletionStage<SourcedDecision> tryAcquireSourcedAsync(String key, int cost) {
        if (cost > this.policy.maxCost()) {
            return CompletableFuture.completedFuture(
                    new SourcedDecision(Decision.neverAllowed(this.policy.quota()), this.storeSource));
        }
        Decision local = answerLocally(key, cost);
        if (local != null) {
            return CompletableFuture.completedFuture(new SourcedDecision(local, this.nearCacheSource));
        }
        return this.bounds
                .bounded(acquire(key, cost), "tryAcquire")
                .map((decision) -> new SourcedDecision(decision, this.storeSource))
                .toFuture();
    }

    @Override
    public @Nullable Decision rememberedRefusal(String key, int cost) {
        return (this.nearCache != null) ? this.nearCache.answer(key, cost, this) : null;
    }

    @Override
    public void forgetRemembered(String key) {
        if (this.nearCache != null) {
            this.nearCache.forget(key);
        }
    }

    /** A refusal remembered for the call, when the policy answers from the near cache; else null. */
    private @Nullable Decision answerLocally(String key, int cost) {
        return (this.answersLocally && this.calls.hearsEvents()) ? this.nearCache.answer(key, cost, this) : null;
    }

    /** An acquire in Redis; with a near cache, its refusal is remembered (or its allowance forgets one). */
    private Mono<Decision> acquire(String key, int cost) {
        RefusalMemory entries = this.nearCache;
        if (entries == null) {
            return acquired(key, cost);
        }
        long sentAt = entries.now();
        long sentEpoch = entries.epoch();
        return acquired(key, cost)
                .doOnNext((decision) -> entries.remember(key, cost, this, decision, sentAt, sentEpoch));
    }

    /**
     * An acquire in Redis, waited for on the calling thread; in a batch, the batch's future is waited
     * for as it is (no operators between the answer and this thread).
     */
    private Decision acquireNow(String key, int cost) {
        DecisionBatches batches = this.batches;
        if (batches == null) {
            return this.bounds.await(acquire(key, cost).toFuture(), "tryAcquire");
        }
        RefusalMemory entries = this.nearCache;
        long sentAt = (entries != null) ? entries.now() : 0;
        long sentEpoch = (entries != null) ? entries.epoch() : 0;
        // the acquire's own future is waited for: a caller that gives up cancels it (a future derived
        // from it would not pass the cancel on), and its call with it once no other caller waits
        List<Object> reply = this.bounds.await(batches.acquire(key, cost), "tryAcquire");
        Decision decision;
        try {
            decision = ScriptReply.decision(reply);
        } catch (IllegalStateException ex) {
            throw this.bounds.failure("tryAcquire", ex);
        }
        if (entries != null) {
            entries.remember(key, cost, this, decision, sentAt, sentEpoch);
        }
        return decision;
    }

    /** The acquire's decision, in a batch when the store batches them; unbounded, as {@link #decide}. */
    private Mono<Decision> acquired(String key, int cost) {
        DecisionBatches batches = this.batches;
        if (batches != null) {
            return Mono.fromFuture(batches.acquire(key, cost)).map(ScriptReply::decision);
        }
        ReplicatedWrites writes = this.replicated;
        return (writes != null)
                ? this.script
                        .evalReplicated(writes, key, PolicyScript.ACQUIRE, cost, null)
                        .map(ScriptReply::decision)
                : decide(key, PolicyScript.ACQUIRE, cost);
    }

    /**
     * One {@code EVALSHA} of the reservation, never answered from the near cache (a call that may wait
     * can be let in where a remembered refusal refuses one that may not). An algorithm that takes no
     * wait decides as an acquire.
     */
    @Override
    public Decision reserve(String key, int cost, long maxWaitMillis) {
        if (maxWaitMillis == 0 || !this.policy.algorithm().takesWait() || this.policy.severalLimits()) {
            return tryAcquire(key, cost);
        }
        if (cost > this.policy.maxCost()) {
            return Decision.neverAllowed(this.policy.quota());
        }
        return this.bounds.await(reservation(key, cost, maxWaitMillis).toFuture(), "reserve");
    }

    @Override
    public CompletionStage<Decision> reserveAsync(String key, int cost, long maxWaitMillis) {
        if (maxWaitMillis == 0 || !this.policy.algorithm().takesWait() || this.policy.severalLimits()) {
            return tryAcquireAsync(key, cost);
        }
        if (cost > this.policy.maxCost()) {
            return CompletableFuture.completedFuture(Decision.neverAllowed(this.policy.quota()));
        }
        return this.bounds
                .bounded(reservation(key, cost, maxWaitMillis), "reserve")
                .toFuture();
    }

    /**
     * A reservation in Redis; one that took a turn makes a refusal remembered here too early (the
     * turn comes before any call that does not wait), so the key is forgotten here and the next call
     * asks Redis. Elsewhere such a refusal only ends early, and the call it lets through is decided
     * by Redis.
     */
    private Mono<Decision> reservation(String key, int cost, long maxWaitMillis) {
        byte[] longest = PolicyScript.ascii(Long.toString(maxWaitMillis));
        ReplicatedWrites writes = this.replicated;
        Mono<Decision> reserved = ((writes != null)
                        ? this.script.evalReplicated(writes, key, PolicyScript.RESERVE, cost, longest)
                        : this.script.eval(key, PolicyScript.RESERVE, cost, longest))
                .map(ScriptReply::decision);
        RefusalMemory entries = this.nearCache;
        return (entries == null)
                ? reserved
                : reserved.doOnNext((decision) -> {
                    if (decision.allowed()) {
                        entries.forget(key);
                    }
                });
    }

    @Override
    public void refund(String key, int cost) {
        this.bounds.await(
                settled(key, run(key, PolicyScript.REFUND, Math.min(cost, this.policy.maxCost())), this.answersLocally)
                        .toFuture(),
                "refund");
    }

    @Override
    public void refund(String key, int cost, long receipt) {
        if (receipt == 0) {
            refund(key, cost);
            return;
        }
        this.bounds.await(
                settled(key, refundTaken(key, Math.min(cost, this.policy.maxCost()), receipt), this.answersLocally)
                        .toFuture(),
                "refund");
    }

    /** A call of several limits gives back to each limit by its own receipt (see several.lua). */
    @Override
    public void refund(String key, int cost, Decision taken) {
        if (taken.limitCount() == 1) {
            refund(key, cost, taken.receipt());
            return;
        }
        this.bounds.await(
                settled(key, refundTaken(key, Math.min(cost, this.policy.maxCost()), taken), this.answersLocally)
                        .toFuture(),
                "refund");
    }

    @Override
    public CompletionStage<Void> refundAsync(String key, int cost, Decision taken) {
        if (taken.limitCount() == 1) {
            return refundAsync(key, cost, taken.receipt());
        }
        return this.bounds
                .bounded(
                        settled(
                                key,
                                refundTaken(key, Math.min(cost, this.policy.maxCost()), taken),
                                this.answersLocally),
                        "refund")
                .toFuture();
    }

    /** One {@code EVALSHA}; a refusal remembered here stays true (a charge only makes the key owe more). */
    @Override
    public int charge(String key, int units, int maxDebt) {
        return this.bounds.await(charged(key, units, maxDebt).toFuture(), "charge");
    }

    @Override
    public CompletionStage<Integer> chargeAsync(String key, int units, int maxDebt) {
        return this.bounds.bounded(charged(key, units, maxDebt), "charge").toFuture();
    }

    private Mono<Integer> charged(String key, int units, int maxDebt) {
        if (!this.policy.algorithm().takesActualCost()) {
            return Mono.error(new UnsupportedOperationException(
                    "Policy '" + this.policy.name() + "' cannot take a cost after the call: "
                            + this.policy.algorithm().whyNoActualCost()));
        }
        byte[] bound = PolicyScript.ascii(Integer.toString(maxDebt));
        ReplicatedWrites writes = this.replicated;
        return ((writes != null)
                        ? this.script.evalReplicated(writes, key, PolicyScript.CHARGE, units, bound)
                        : this.script.eval(key, PolicyScript.CHARGE, units, bound))
                .map(ScriptReply::debt);
    }

    @Override
    public Decision peek(String key) {
        return this.bounds.await(decide(key, PolicyScript.PEEK, 1).toFuture(), "peek");
    }

    @Override
    public void reset(String key) {
        this.bounds.await(deleted(key).toFuture(), "reset");
    }

    @Override
    public CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
        if (cost > this.policy.maxCost()) {
            return CompletableFuture.completedFuture(Decision.neverAllowed(this.policy.quota()));
        }
        Decision local = answerLocally(key, cost);
        if (local != null) {
            return CompletableFuture.completedFuture(local);
        }
        return this.bounds.bounded(acquire(key, cost), "tryAcquire").toFuture();
    }

    @Override
    public CompletionStage<Void> refundAsync(String key, int cost) {
        return this.bounds
                .bounded(
                        settled(
                                key,
                                run(key, PolicyScript.REFUND, Math.min(cost, this.policy.maxCost())),
                                this.answersLocally),
                        "refund")
                .toFuture();
    }

    @Override
    public CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
        if (receipt == 0) {
            return refundAsync(key, cost);
        }
        RefusalMemory entries = this.nearCache;
        if (entries != null && this.policy.algorithm() == ConcurrencyPolicy.ALGORITHM) {
            // a slot's release is not waited for: a refusal remembered while the slot was held must
            // not answer the caller's next call, made before Redis answers the release (the key is
            // forgotten again once it does, with what was remembered meanwhile)
            entries.forget(key);
        }
        return this.bounds
                .bounded(
                        settled(
                                key,
                                refundTaken(key, Math.min(cost, this.policy.maxCost()), receipt),
                                this.answersLocally),
                        "refund")
                .toFuture();
    }

    @Override
    public CompletionStage<Void> resetAsync(String key) {
        return this.bounds.bounded(deleted(key), "reset").toFuture();
    }

    /**
     * A reset or refund, then (once Redis has it, so that no refusal from before can be remembered
     * again) the key forgotten here and, when {@code publish}, on every instance. Resets are always
     * published; refunds when the policy answers from the near cache (where it does not, a refusal
     * remembered elsewhere only answers during an outage).
     */
    private Mono<Void> settled(String key, Mono<Void> change, boolean publish) {
        RefusalMemory entries = this.nearCache;
        if (entries == null) {
            return change;
        }
        Mono<Void> forgotten = change.then(Mono.fromRunnable(() -> entries.forget(key)));
        return publish ? forgotten.then(this.calls.publishKey(this.policy.name(), key)) : forgotten;
    }

    @Override
    public CompletionStage<Decision> peekAsync(String key) {
        return this.bounds.bounded(decide(key, PolicyScript.PEEK, 1), "peek").toFuture();
    }

    /** The call's decision, unbounded: callers bound it with {@link CallBounds}. */
    private Mono<Decision> decide(String key, byte[] operation, int cost) {
        return this.script.eval(key, operation, cost, null).map(ScriptReply::decision);
    }

    private Mono<Void> run(String key, byte[] operation, int cost) {
        return this.script.eval(key, operation, cost, null).then();
    }

    /** A refund of exactly what a call of several limits took: each limit's receipt, joined by {@code ,}. */
    private Mono<Void> refundTaken(String key, int cost, Decision taken) {
        return this.script
                .eval(key, PolicyScript.REFUND, cost, RedisThrottleScripts.receipts(taken))
                .then();
    }

    /**
     * A refund of exactly what the call with {@code receipt} took: the receipt is the fourth argument;
     * in a batch when the store batches calls.
     */
    private Mono<Void> refundTaken(String key, int cost, long receipt) {
        DecisionBatches batches = this.batches;
        if (batches != null) {
            return Mono.fromFuture(() -> batches.refund(key, cost, receipt)).then();
        }
        return this.script
                .eval(key, PolicyScript.REFUND, cost, PolicyScript.ascii(Long.toString(receipt)))
                .then();
    }

    /**
     * A {@code DEL}; with a near cache, the {@code DEL} and its event in one script (one round trip,
     * and on a Cluster the event leaves from the key's own node once the key is gone), then the key
     * forgotten here.
     */
    private Mono<Void> deleted(String key) {
        ByteBuffer redisKey = this.script.redisKey(key);
        RefusalMemory entries = this.nearCache;
        ReplicatedWrites writes = this.replicated;
        if (writes != null) {
            // the DEL waits for a replica on its own connection; its event follows on the store's
            Mono<Void> deleted = writes.delete(PolicyScript.bytes(redisKey)).then();
            return (entries == null)
                    ? deleted
                    : deleted.then(Mono.fromRunnable(() -> entries.forget(key)))
                            .then(this.calls.publishKey(this.policy.name(), key));
        }
        if (entries == null) {
            return this.calls
                    .connection()
                    .flatMap((connection) -> connection.keyCommands().del(redisKey))
                    .then();
        }
        return this.calls
                .resetAndPublish(redisKey, this.policy.name(), key)
                .then(Mono.fromRunnable(() -> entries.forget(key)));
    }

    /**
     * The policy's script, for loading it ahead of the first call.
     * @return the script's text as UTF-8
     */
    byte[] scriptBytes() {
        return this.script.scriptBytes();
    }
}
