package dev.throttle.spring.jdbc;

import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.DecisionSource;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Policy;
import dev.throttle.SourcedDecision;
import dev.throttle.SourcedLimiter;
import dev.throttle.resilience.RefusalMemory;
import dev.throttle.resilience.RememberedRefusals;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.StringJoiner;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * One policy's keys in the database: every decision, refund and peek is one call of
 * {@code <prefix>decide(...)} (one round trip, shared with the calls that wait beside it:
 * {@link JdbcCalls#decide}), a reset one {@code DELETE}. The policy's numbers
 * are written once, here, as the array literal every call sends.
 *
 * <p>The refusals the database gives are remembered on this instance until their Retry-After
 * ({@link RefusalMemory}). With the store's near cache ({@link JdbcNearCacheSettings}) they answer
 * the key's next calls here while this instance hears the store's events ({@link JdbcEvents}): a refund
 * forgets the key here once the database has it (or the call failed), then is published to every
 * instance; so is a reset, in the {@code DELETE}'s own statement. A store without it publishes nothing: a
 * {@code NOTIFY} takes PostgreSQL's notification lock at commit, so concurrent resets that publish
 * commit one after the other.
 * Without it they answer only in an outage: a failure policy asks for them first
 * ({@link RememberedRefusals}), so a key the database locked out stays locked out on every instance
 * that saw it refused, whatever the failure mode; a refund or a reset made on another instance then
 * does not reach this one, whose refusal holds until its Retry-After, in an outage only. Thread-safe.
 */
final class JdbcLimiter implements SourcedLimiter, RememberedRefusals {

    private static final DecisionSource STORE = DecisionSource.store(JdbcCalls.KIND);

    private static final DecisionSource NEAR_CACHE = DecisionSource.nearCache(JdbcCalls.KIND);

    private final Policy policy;

    private final JdbcCalls calls;

    private final String algorithm;

    /** Each limit's numbers after their count, as a PostgreSQL array literal. */
    private final String limits;

    /** A fixed window of the calendar's numbers with the boundaries around the application's time; else null. */
    private final @Nullable CalendarLimits calendar;

    /** The reset, with its event where the policy publishes: a data-modifying WITH runs whether or not it is read. */
    private final String resetSql;

    /** The refusals the database gave under the policy's name, shared by its limiters (plans, changes). */
    private final RefusalMemory remembered;

    /** The store's events, null without a near cache. */
    private final @Nullable JdbcEvents events;

    /** Whether calls are answered from {@link #remembered} while the database answers and events are heard. */
    private final boolean answersLocally;

    /** Whether refunds and resets are published: the policy's name answers from the near cache (under some numbers). */
    private final boolean publishesGiveBacks;

    JdbcLimiter(
            JdbcCalls calls,
            Policy policy,
            RefusalMemory remembered,
            @Nullable JdbcEvents events,
            JdbcNearCacheSettings nearCache) {
        this.policy = policy;
        this.calls = calls;
        this.remembered = remembered;
        this.events = events;
        this.answersLocally = events != null && nearCache.answersFor(policy);
        this.publishesGiveBacks = events != null && nearCache.publishesGiveBacksFor(policy);
        this.algorithm = policy.algorithm().id();
        this.limits = limitsOf(policy);
        this.calendar = (policy instanceof FixedWindowPolicy window && window.calendar() != null)
                ? new CalendarLimits(window)
                : null;
        String delete = "DELETE FROM " + calls.tablePrefix() + "state WHERE policy_name = ? AND limit_key = ?";
        this.resetSql = this.publishesGiveBacks ? "WITH deleted AS (" + delete + ") SELECT pg_notify(?, ?)" : delete;
    }

    /** {@code {len1, numbers1..., len2, numbers2...}}: one limit, or each of several. */
    static String limitsOf(Policy policy) {
        StringJoiner all = new StringJoiner(",", "{", "}");
        for (Policy limit : policy.severalLimits() ? policy.limits() : java.util.List.of(policy)) {
            long[] numbers = policy.algorithm().numbersOf(limit);
            all.add(Integer.toString(numbers.length));
            for (long number : numbers) {
                all.add(Long.toString(number));
            }
        }
        return all.toString();
    }

    @Override
    public Policy policy() {
        return this.policy;
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
            return new SourcedDecision(Decision.neverAllowed(this.policy.quota()), STORE);
        }
        Decision local = answerLocally(key, cost);
        return (local != null)
                ? new SourcedDecision(local, NEAR_CACHE)
                : new SourcedDecision(acquireNow(key, cost), STORE);
    }

    @Override
    public CompletionStage<SourcedDecision> tryAcquireSourcedAsync(String key, int cost) {
        if (cost > this.policy.maxCost()) {
            return CompletableFuture.completedFuture(
                    new SourcedDecision(Decision.neverAllowed(this.policy.quota()), STORE));
        }
        Decision local = answerLocally(key, cost);
        if (local != null) {
            return CompletableFuture.completedFuture(new SourcedDecision(local, NEAR_CACHE));
        }
        return acquire(key, cost).thenApply((decision) -> new SourcedDecision(decision, STORE));
    }

    /** A refusal remembered for the call, when the policy answers from the near cache and events are heard; else null. */
    private @Nullable Decision answerLocally(String key, int cost) {
        JdbcEvents heard = this.events;
        return (this.answersLocally && heard != null && heard.hears()) ? this.remembered.answer(key, cost, this) : null;
    }

    private Decision acquireNow(String key, int cost) {
        long sentAt = this.remembered.now();
        long sentEpoch = this.remembered.epoch();
        Decision decision = this.calls.decideNow(call(key, "a", cost, null), JdbcLimiter::decision, "tryAcquire");
        this.remembered.remember(key, cost, this, decision, sentAt, sentEpoch);
        return decision;
    }

    @Override
    public CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
        if (cost > this.policy.maxCost()) {
            return CompletableFuture.completedFuture(Decision.neverAllowed(this.policy.quota()));
        }
        Decision local = answerLocally(key, cost);
        return (local != null) ? CompletableFuture.completedFuture(local) : acquire(key, cost);
    }

    private CompletableFuture<Decision> acquire(String key, int cost) {
        long sentAt = this.remembered.now();
        long sentEpoch = this.remembered.epoch();
        return this.calls
                .decide(call(key, "a", cost, null), JdbcLimiter::decision, "tryAcquire")
                .thenApply((decision) -> {
                    this.remembered.remember(key, cost, this, decision, sentAt, sentEpoch);
                    return decision;
                });
    }

    @Override
    public @Nullable Decision rememberedRefusal(String key, int cost) {
        return this.remembered.answer(key, cost, this);
    }

    @Override
    public void forgetRemembered(String key) {
        this.remembered.forget(key);
    }

    /**
     * One call of the function's reservation; an algorithm that takes no wait, or several limits,
     * decides as an acquire.
     */
    @Override
    public Decision reserve(String key, int cost, long maxWaitMillis) {
        if (maxWaitMillis == 0 || !this.policy.algorithm().takesWait() || this.policy.severalLimits()) {
            return tryAcquire(key, cost);
        }
        if (cost > this.policy.maxCost()) {
            return Decision.neverAllowed(this.policy.quota());
        }
        Decision decision =
                this.calls.decideNow(call(key, "w", cost, "{" + maxWaitMillis + "}"), JdbcLimiter::decision, "reserve");
        return reserved(key, decision);
    }

    @Override
    public CompletionStage<Decision> reserveAsync(String key, int cost, long maxWaitMillis) {
        if (maxWaitMillis == 0 || !this.policy.algorithm().takesWait() || this.policy.severalLimits()) {
            return tryAcquireAsync(key, cost);
        }
        if (cost > this.policy.maxCost()) {
            return CompletableFuture.completedFuture(Decision.neverAllowed(this.policy.quota()));
        }
        return this.calls
                .decide(call(key, "w", cost, "{" + maxWaitMillis + "}"), JdbcLimiter::decision, "reserve")
                .thenApply((decision) -> reserved(key, decision));
    }

    /**
     * A reservation that took a turn makes a refusal remembered here too early (the turn comes before
     * any call that does not wait): the key is forgotten.
     */
    private Decision reserved(String key, Decision decision) {
        if (decision.allowed()) {
            this.remembered.forget(key);
        }
        return decision;
    }

    /** One call of the function's charge, on every limit. */
    @Override
    public int charge(String key, int units, int maxDebt) {
        checkCharges();
        return this.calls.decideNow(call(key, "c", units, "{" + maxDebt + "}"), JdbcLimiter::debt, "charge");
    }

    @Override
    public CompletionStage<Integer> chargeAsync(String key, int units, int maxDebt) {
        try {
            checkCharges();
        } catch (UnsupportedOperationException ex) {
            return CompletableFuture.failedFuture(ex);
        }
        return this.calls.decide(call(key, "c", units, "{" + maxDebt + "}"), JdbcLimiter::debt, "charge");
    }

    private void checkCharges() {
        if (!this.policy.algorithm().takesActualCost()) {
            throw new UnsupportedOperationException(
                    "Policy '" + this.policy.name() + "' cannot take a cost after the call: "
                            + this.policy.algorithm().whyNoActualCost());
        }
    }

    private static Integer debt(Object[] reply) throws SQLException {
        if (reply.length != 1) {
            throw new SQLException("unexpected reply of " + reply.length + " numbers to a charge");
        }
        return (int) Math.max(0, Math.min(number(reply[0]), Integer.MAX_VALUE));
    }

    @Override
    public Decision peek(String key) {
        return this.calls.decideNow(call(key, "p", 1, null), JdbcLimiter::decision, "peek");
    }

    @Override
    public CompletionStage<Decision> peekAsync(String key) {
        return this.calls.decide(call(key, "p", 1, null), JdbcLimiter::decision, "peek");
    }

    @Override
    public void refund(String key, int cost) {
        refundWith(key, cost, null);
    }

    @Override
    public void refund(String key, int cost, long receipt) {
        refundWith(key, cost, (receipt == 0) ? null : "{" + receipt + "}");
    }

    @Override
    public void refund(String key, int cost, Decision taken) {
        refundWith(key, cost, receipts(taken));
    }

    @Override
    public CompletionStage<Void> refundAsync(String key, int cost) {
        return refundLater(key, cost, null);
    }

    @Override
    public CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
        return refundLater(key, cost, (receipt == 0) ? null : "{" + receipt + "}");
    }

    @Override
    public CompletionStage<Void> refundAsync(String key, int cost, Decision taken) {
        return refundLater(key, cost, receipts(taken));
    }

    /**
     * A refund; once its statement has ended, whatever its outcome and however long after its caller
     * stopped waiting, the key is forgotten here and published (forgetting is always safe: the next
     * call asks the database), so that a refund the database applied late leaves no refusal standing
     * here or elsewhere.
     */
    private void refundWith(String key, int cost, @Nullable String receipts) {
        int given = Math.min(cost, this.policy.maxCost());
        try {
            this.calls.decideNow(call(key, "r", given, receipts), JdbcLimiter::nothing, "refund", () -> givenBack(key));
        } finally {
            // before the caller goes on: its next call is not answered from a refusal from before
            this.remembered.forget(key);
        }
    }

    /** After a refund's statement: the key forgotten here, then published. */
    private void givenBack(String key) {
        this.remembered.forget(key);
        publishGivenBack(key);
    }

    /**
     * Tells every instance that the key was given back, when the policy's name answers from the near
     * cache on any instance (where it does not, a refusal remembered elsewhere answers only in an
     * outage). Not waited for: an event lost leaves a refusal elsewhere that ends at its Retry-After.
     */
    private void publishGivenBack(String key) {
        JdbcEvents events = this.events;
        if (this.publishesGiveBacks && events != null) {
            events.publishKey(this.policy.name(), key);
        }
    }

    private CompletionStage<Void> refundLater(String key, int cost, @Nullable String receipts) {
        int given = Math.min(cost, this.policy.maxCost());
        if (this.policy.algorithm() == ConcurrencyPolicy.ALGORITHM) {
            // a slot's release is not waited for: a refusal remembered while the slot was held must not
            // answer the caller's next call in an outage that starts before the database has the release
            this.remembered.forget(key);
        }
        // forgotten before the caller goes on, and again (and published) once the statement has ended
        return this.calls
                .decide(call(key, "r", given, receipts), JdbcLimiter::nothing, "refund", () -> givenBack(key))
                .whenComplete((nothing, ex) -> this.remembered.forget(key));
    }

    /**
     * A refund's receipts: the decision's own for one limit ({@code null} when it has none), each
     * limit's for several (0 for a limit without one).
     */
    private static @Nullable String receipts(Decision taken) {
        if (taken.limitCount() == 1) {
            return (taken.receipt() == 0) ? null : "{" + taken.receipt() + "}";
        }
        StringJoiner receipts = new StringJoiner(",", "{", "}");
        for (int i = 0; i < taken.limitCount(); i++) {
            receipts.add(Long.toString(taken.limit(i).receipt()));
        }
        return receipts.toString();
    }

    @Override
    public void reset(String key) {
        try {
            this.calls.await((c) -> delete(c, key), "reset", this.policy.name());
        } finally {
            this.remembered.forget(key);
        }
    }

    @Override
    public CompletionStage<Void> resetAsync(String key) {
        // the caller learns of the reset once the key is forgotten here too
        return this.calls
                .bounded((c) -> delete(c, key), "reset", this.policy.name())
                .whenComplete((nothing, ex) -> this.remembered.forget(key));
    }

    /**
     * The {@code DELETE}, and where the policy publishes, its event in the same statement (one round
     * trip; PostgreSQL sends the event only once the delete is committed).
     */
    private @Nullable Void delete(Connection connection, String key) throws SQLException {
        JdbcEvents events = this.events;
        try (PreparedStatement statement = connection.prepareStatement(this.resetSql)) {
            statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
            statement.setString(1, this.policy.name());
            statement.setString(2, storedKey(key));
            if (this.publishesGiveBacks && events != null) {
                statement.setString(3, JdbcEventPayloads.channelOf(this.calls.tablePrefix()));
                statement.setString(4, JdbcEventPayloads.keyChanged(events.sender(), this.policy.name(), key));
            }
            statement.execute();
        }
        return null;
    }

    /**
     * The key as stored: PostgreSQL's text holds no NUL character, which a key may have (the failure
     * policy's probes use one, to stay clear of every application key). A NUL is written {@code \0}
     * and a backslash {@code \\}, so two keys never share a row; a key with neither, any key an
     * application usually has, is stored as it is.
     */
    static String storedKey(String key) {
        if (key.indexOf('\0') < 0 && key.indexOf('\\') < 0) {
            return key;
        }
        return key.replace("\\", "\\\\").replace("\0", "\\0");
    }

    /** One call of the decide function on a key, as the store sends it. */
    private JdbcCalls.Decide call(String key, String operation, int cost, @Nullable String receipts) {
        CalendarLimits calendar = this.calendar;
        return new JdbcCalls.Decide(
                this.policy.name(),
                storedKey(key),
                this.algorithm,
                (calendar != null) ? calendar.at(this.calls.applicationTime()) : this.limits,
                operation,
                cost,
                this.calls.now(),
                receipts);
    }

    /** A refund's reply: nothing. */
    private static @Nullable Void nothing(Object[] numbers) {
        return null;
    }

    /**
     * The function's {@code {allowed, limit, remaining, wait, resetAfter, receipt}} per limit, as a
     * decision: {@code wait} is a refusal's retry-after and an allowed call's time until its next unit.
     */
    static Decision decision(Object[] numbers) {
        if (numbers.length == 7) {
            // a reservation: a seventh number, the time until the call's turn
            Decision decision = decision(numbers, 0);
            long turn = Math.max(0, number(numbers[6]));
            return (decision.allowed() && turn > 0)
                    ? Decision.reserved(
                            decision.limit(),
                            decision.remaining(),
                            decision.resetAfterMillis(),
                            decision.nextUnitAfterMillis(),
                            decision.receipt(),
                            turn)
                    : decision;
        }
        if (numbers.length == 0 || numbers.length % 6 != 0) {
            throw new IllegalStateException("unexpected reply of " + numbers.length + " numbers");
        }
        if (numbers.length == 6) {
            return decision(numbers, 0);
        }
        Decision[] parts = new Decision[numbers.length / 6];
        for (int i = 0; i < parts.length; i++) {
            parts[i] = decision(numbers, 6 * i);
        }
        return Decision.ofLimits(parts);
    }

    private static Decision decision(Object[] numbers, int at) {
        boolean allowed = number(numbers[at]) == 1;
        int limit = (int) number(numbers[at + 1]);
        // never negative, whatever a function computed from state that other settings wrote
        int remaining = (int) Math.max(0, number(numbers[at + 2]));
        long wait = Math.max(0, number(numbers[at + 3]));
        long resetAfter = Math.max(0, number(numbers[at + 4]));
        long receipt = Math.max(0, number(numbers[at + 5]));
        return allowed
                ? Decision.allow(limit, remaining, resetAfter, wait, receipt)
                : Decision.reject(limit, remaining, wait, resetAfter);
    }

    private static long number(Object value) {
        return ((Number) value).longValue();
    }

    /**
     * The numbers of a fixed window of the calendar, {@code {8, limit, 0, b1..b6}}: the boundaries
     * around the application's time ({@link FixedWindowPolicy#boundaries}), from which the database
     * picks the window holding its own now (the schema's {@code fixed_window_calendar} says why).
     * Computed again only when the application's time leaves the window they were computed in, so a
     * call makes no dates; the table kept is immutable, and two threads that find it stale compute the
     * same one.
     */
    static final class CalendarLimits {

        private final FixedWindowPolicy policy;

        private volatile Table table = new Table(0, 0, "");

        CalendarLimits(FixedWindowPolicy policy) {
            this.policy = policy;
        }

        /** The numbers with the boundaries around {@code now}, as a PostgreSQL array literal. */
        String at(long now) {
            Table table = this.table;
            if (now < table.from || now >= table.to) {
                long[] boundaries = this.policy.boundaries(now);
                StringJoiner numbers = new StringJoiner(",", "{", "}");
                numbers.add("8").add(Integer.toString(this.policy.limit())).add("0");
                for (long boundary : boundaries) {
                    numbers.add(Long.toString(boundary));
                }
                table = new Table(boundaries[2], boundaries[3], numbers.toString());
                this.table = table;
            }
            return table.limits;
        }

        /** The numbers computed for the window from {@code from} to {@code to}. */
        private record Table(long from, long to, String limits) {}
    }
}
