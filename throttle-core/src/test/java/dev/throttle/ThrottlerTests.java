package dev.throttle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.throttle.CalendarWindow.Unit;
import dev.throttle.memory.MemoryThrottleStore;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ThrottlerTests {

    /** How long the slow store's limiter takes per decision: far above any timer's resolution. */
    private static final Duration STORE_DELAY = Duration.ofMillis(30);

    private static final GcraPolicy API = new GcraPolicy("api", 1, Duration.ofSeconds(10));

    private final ManualTimeSource clock = new ManualTimeSource();

    private final MemoryThrottleStore store = new MemoryThrottleStore(this.clock, 100);

    private final Throttler throttler = new Throttler(this.store, List.of(API));

    @AfterEach
    void closeStore() {
        this.store.close();
    }

    @Test
    void aKeyReachingItsDebtBoundIsSaidOncePerPolicyAndListenersHearEverySettlement() {
        List<String> warnings = new ArrayList<>();
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(BoundPolicy.class.getName());
        java.util.logging.Handler capture = new java.util.logging.Handler() {

            @Override
            public void publish(java.util.logging.LogRecord record) {
                warnings.add(record.getMessage());
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        List<String> heard = new ArrayList<>();
        ThrottleListener listener = new ThrottleListener() {

            @Override
            public void onSettled(Policy policy, int estimate, long actualCost, int debt) {
                heard.add(policy.name() + " " + estimate + " " + actualCost + " " + debt);
            }
        };
        log.addHandler(capture);
        try (MemoryThrottleStore store = new MemoryThrottleStore(new ManualTimeSource(), 1_000)) {
            Throttler throttler = new Throttler(
                    store, List.of(TokenBucketPolicy.of("tokens", 10, Duration.ofSeconds(1))), List.of(listener));
            throttler.estimate("tokens", "alice", 1, 5).settle(4);
            throttler.estimate("tokens", "bob", 1, 5).settle(100);
            throttler.estimate("tokens", "carol", 1, 5).settle(100);
            assertThat(heard).containsExactly("tokens 1 4 0", "tokens 1 100 5", "tokens 1 100 5");
            assertThat(warnings)
                    .singleElement()
                    .asString()
                    .contains("policy 'tokens' reached its debt bound (max-debt 5)")
                    .contains("said once per policy");
        } finally {
            log.removeHandler(capture);
        }
    }

    @Test
    void anAnchorDayAppliesToTheMonthOfThePolicyAndOfItsPlansAndFollowsAChangeOfTheNumbers() {
        ZoneId utc = ZoneId.of("UTC");
        FixedWindowPolicy monthly = FixedWindowPolicy.calendar("tokens", 2, CalendarWindow.of(Unit.MONTH, utc));
        FixedWindowPolicy pro = FixedWindowPolicy.calendar("tokens", 5, CalendarWindow.of(Unit.MONTH, utc));
        this.clock.set(Instant.parse("2026-03-20T00:00:00Z"));
        Throttler throttler =
                new Throttler(this.store, List.of(monthly, API), Map.of("tokens", Map.of("pro", pro)), List.of(), null);
        BoundPolicy proOnThe10th = throttler.bound("tokens").plan("pro").anchorDay(10);
        assertThat(proOnThe10th.plan()).isEqualTo("pro");
        assertThat(proOnThe10th.anchorDay()).isEqualTo(10);
        assertThat(proOnThe10th.policy())
                .isEqualTo(FixedWindowPolicy.calendar("tokens", 5, new CalendarWindow(Unit.MONTH, utc, 10)));
        assertThat(proOnThe10th.tryAcquire("k", 1).resetAfter())
                .as("March 10th to April 10th")
                .isEqualTo(Duration.ofDays(21));
        assertThat(proOnThe10th.anchorDay(0)).isSameAs(throttler.bound("tokens").plan("pro"));
        assertThat(proOnThe10th.anchorDay(20))
                .isSameAs(throttler.bound("tokens").plan("pro").anchorDay(20));

        throttler.update(
                FixedWindowPolicy.calendar("tokens", 3, CalendarWindow.of(Unit.MONTH, utc)), Map.of("pro", pro));
        assertThat(throttler.bound("tokens").anchorDay(10).policy())
                .as("the day's numbers are bound again from the changed policy")
                .isEqualTo(FixedWindowPolicy.calendar("tokens", 3, new CalendarWindow(Unit.MONTH, utc, 10)));

        assertThat(throttler.bound("api").anchorDay(10).policy())
                .as("a window that is not a calendar month has no anchor day")
                .isEqualTo(API);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> throttler.bound("tokens").anchorDay(32))
                .withMessageContaining("1 to 31");
    }

    @Test
    void anUnknownPolicyIsAnErrorThatListsTheKnownOnes() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> this.throttler.tryAcquire("nope", "k"))
                .withMessage("no policy named 'nope'; known: [api]");
    }

    @Test
    void aPlanMustHaveItsPolicysNameAndAlgorithmAndAPolicyToBelongTo() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Throttler(
                        this.store,
                        List.of(API),
                        java.util.Map.of(
                                "api", java.util.Map.of("free", new GcraPolicy("other", 1, Duration.ofSeconds(1)))),
                        List.of()))
                .withMessageContaining("must have the policy's name");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Throttler(
                        this.store,
                        List.of(API),
                        java.util.Map.of(
                                "api",
                                java.util.Map.of("free", new FixedWindowPolicy("api", 1, Duration.ofSeconds(1)))),
                        List.of()))
                .withMessageContaining("must use the policy's algorithm");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new Throttler(
                        this.store, List.of(API), java.util.Map.of("nope", java.util.Map.of("free", API)), List.of()))
                .withMessageContaining("which is no policy");
    }

    @Test
    void aPolicysAlgorithmCannotChangeAtRunTimeAndAChangeKeepsItsPlansOnlyIfGiven() {
        Throttler throttler = new Throttler(
                this.store,
                List.of(API),
                java.util.Map.of("api", java.util.Map.of("pro", new GcraPolicy("api", 5, Duration.ofSeconds(10)))),
                List.of());
        BoundPolicy pro = throttler.bound("api").plan("pro");
        assertThat(pro.policy().quota()).isEqualTo(5);
        assertThatIllegalArgumentException()
                .isThrownBy(() ->
                        throttler.update(new FixedWindowPolicy("api", 2, Duration.ofSeconds(1)), java.util.Map.of()))
                .withMessageContaining("cannot change its algorithm");
        throttler.update(new GcraPolicy("api", 2, Duration.ofSeconds(10)), java.util.Map.of());
        assertThat(throttler.plans("api")).isEmpty();
        assertThat(pro.policy().quota())
                .as("a plan that is gone: the base numbers")
                .isEqualTo(2);
        assertThat(throttler.bound("api").plan("gone").policy().quota()).isEqualTo(2);
    }

    @Test
    void aCostBelowOneIsAnError() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> this.throttler.tryAcquire("api", "k", 0))
                .withMessage("cost must be at least 1, was 0");
    }

    @Test
    void checkThrowsCarryingThePolicyAndTheDecision() {
        this.throttler.check("api", "k", 1);
        assertThatExceptionOfType(ThrottledException.class)
                .isThrownBy(() -> this.throttler.check("api", "k", 1))
                .satisfies((ex) -> {
                    assertThat(ex.getPolicy().name()).isEqualTo("api");
                    assertThat(ex.getDecision().retryAfterMillis()).isEqualTo(10_000);
                    assertThat(ex).hasMessage("Policy 'api' refused the call; retry after 10s");
                });
    }

    @Test
    void twoPoliciesWithOneNameAreRefused() {
        try (MemoryThrottleStore store = new MemoryThrottleStore()) {
            List<Policy> twins = List.of(
                    new GcraPolicy("api", 1, Duration.ofSeconds(1)), new GcraPolicy("api", 2, Duration.ofSeconds(1)));
            assertThatIllegalArgumentException()
                    .isThrownBy(() -> new Throttler(store, twins))
                    .withMessage("two policies are named 'api'");
        }
    }

    @Test
    void listenersHearEveryDecisionWithHowLongTheStoreTookToMakeIt() {
        Heard heard = new Heard();
        try (SlowStore slow = new SlowStore(new MemoryThrottleStore(this.clock, 100))) {
            Throttler throttler = new Throttler(slow, List.of(API), List.of(heard));
            long start = System.nanoTime();
            Decision allowed = throttler.tryAcquire("api", "alice@example.com");
            Decision refused = throttler.tryAcquire("api", "alice@example.com");
            long bothCalls = System.nanoTime() - start;
            assertThat(allowed.allowed()).isTrue();
            assertThat(refused.allowed()).isFalse();
            assertThat(heard.decisions).extracting(HeardDecision::decision).containsExactly(allowed, refused);
            assertThat(heard.decisions).extracting(HeardDecision::policy).containsOnly(API);
            long bothStoreNanos = heard.decisions.stream()
                    .mapToLong(HeardDecision::storeNanos)
                    .sum();
            assertThat(heard.decisions)
                    .allSatisfy((decision) -> assertThat(decision.storeNanos())
                            .as("at least the time the store's limiter took")
                            .isGreaterThanOrEqualTo(STORE_DELAY.toNanos()));
            assertThat(bothStoreNanos)
                    .as("the store's own time, within the calls' time")
                    .isLessThanOrEqualTo(bothCalls);
        }
    }

    @Test
    void aNonBlockingCallIsTimedUntilTheStoreAnswersNotUntilTheCallReturns() throws Exception {
        Heard heard = new Heard();
        try (SlowStore slow = new SlowStore(new MemoryThrottleStore(this.clock, 100))) {
            Throttler throttler = new Throttler(slow, List.of(API), List.of(heard));
            long start = System.nanoTime();
            CompletableFuture<Decision> pending =
                    throttler.tryAcquireAsync("api", "alice@example.com", 1).toCompletableFuture();
            assertThat(heard.decisions)
                    .as("nothing heard before the store has answered")
                    .isEmpty();
            slow.answerAsyncCalls();
            Decision decision = pending.get(5, TimeUnit.SECONDS);
            long call = System.nanoTime() - start;
            assertThat(heard.decisions).singleElement().satisfies((heardDecision) -> {
                assertThat(heardDecision.decision()).isSameAs(decision);
                assertThat(heardDecision.storeNanos()).isBetween(STORE_DELAY.toNanos(), call);
            });
        }
    }

    @Test
    void listenersHearEveryDecisionAndEveryRefusalWithTheCallersKey() {
        Heard heard = new Heard();
        try (SlowStore slow = new SlowStore(new MemoryThrottleStore(this.clock, 100))) {
            Throttler throttler = new Throttler(slow, List.of(API), List.of(heard));
            throttler.tryAcquire("api", "alice@example.com");
            throttler.tryAcquire("api", "alice@example.com");
            throttler.tryAcquire("api", "alice@example.com", 2);
            assertThat(heard.events)
                    .containsExactly(
                            "api:true",
                            "api:false",
                            "rejected alice@example.com retry 10000",
                            "api:false",
                            "rejected alice@example.com retry " + Decision.NEVER);
            assertThat(heard.decisions.get(2).storeNanos())
                    .as("a cost above the policy's capacity never asks the store")
                    .isZero();
            assertThat(slow.keysAsked).containsExactly("alice@example.com", "alice@example.com");
        }
    }

    @Test
    void aRefusalIsHeardWithTheKeyAsTheCallerGaveItWhileTheStoreSeesTheNormalizedKey() {
        Heard heard = new Heard();
        String longKey = "x".repeat(Throttler.MAX_KEY_LENGTH + 1);
        try (SlowStore slow = new SlowStore(new MemoryThrottleStore(this.clock, 100))) {
            Throttler throttler = new Throttler(slow, List.of(API), List.of(heard));
            throttler.tryAcquire("api", longKey);
            throttler.tryAcquire("api", longKey);
            throttler.tryAcquire("api", "  ");
            throttler.tryAcquire("api", null);
            assertThat(heard.events)
                    .containsExactly(
                            "api:true",
                            "api:false",
                            "rejected " + longKey + " retry 10000",
                            "api:true",
                            "api:false",
                            "rejected null retry 10000");
            assertThat(slow.keysAsked).hasSize(4);
            String stored = slow.keysAsked.get(0);
            assertThat(stored)
                    .as("the long key as stored: its digest")
                    .isNotEqualTo(longKey)
                    .hasSizeLessThanOrEqualTo(Throttler.MAX_KEY_LENGTH);
            assertThat(slow.keysAsked.subList(1, 4))
                    .containsExactly(stored, Throttler.SHARED_KEY, Throttler.SHARED_KEY);
        }
    }

    /** A decision as a listener heard it. */
    private record HeardDecision(Policy policy, Decision decision, long storeNanos) {}

    /** Records what it hears, in order. */
    private static final class Heard implements ThrottleListener {

        private final List<HeardDecision> decisions = Collections.synchronizedList(new ArrayList<>());

        private final List<String> events = Collections.synchronizedList(new ArrayList<>());

        @Override
        public void onDecision(Policy policy, Decision decision, long storeNanos) {
            this.decisions.add(new HeardDecision(policy, decision, storeNanos));
            this.events.add(policy.name() + ":" + decision.allowed());
        }

        @Override
        public void onRejected(Policy policy, String key, Decision decision) {
            this.events.add("rejected " + key + " retry " + decision.retryAfterMillis());
        }
    }

    /**
     * A store whose limiters take {@link #STORE_DELAY} per decision, as a networked store takes a
     * round trip, and remember the keys they were asked about; the memory store decides.
     */
    private static final class SlowStore implements ThrottleStore {

        private final ThrottleStore delegate;

        private final List<String> keysAsked = Collections.synchronizedList(new ArrayList<>());

        private final CompletableFuture<Void> asyncAnswers = new CompletableFuture<>();

        SlowStore(ThrottleStore delegate) {
            this.delegate = delegate;
        }

        /** Lets the non-blocking calls made so far, and every later one, be answered. */
        void answerAsyncCalls() {
            this.asyncAnswers.complete(null);
        }

        @Override
        public Limiter limiter(Policy policy) {
            return new SlowLimiter(this.delegate.limiter(policy), this.keysAsked, this.asyncAnswers);
        }

        @Override
        public String kind() {
            return "slow";
        }

        @Override
        public void close() {
            this.delegate.close();
        }
    }

    private record SlowLimiter(Limiter delegate, List<String> keysAsked, CompletableFuture<Void> asyncAnswers)
            implements Limiter {

        @Override
        public Policy policy() {
            return this.delegate.policy();
        }

        @Override
        public Decision tryAcquire(String key, int cost) {
            this.keysAsked.add(key);
            sleep(STORE_DELAY);
            return this.delegate.tryAcquire(key, cost);
        }

        @Override
        public CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
            // answers later, on another thread, as a networked store's client does; held until the test lets it
            return this.asyncAnswers.thenApplyAsync((answer) -> tryAcquire(key, cost));
        }

        @Override
        public void refund(String key, int cost) {
            this.delegate.refund(key, cost);
        }

        @Override
        public Decision peek(String key) {
            return this.delegate.peek(key);
        }

        @Override
        public void reset(String key) {
            this.delegate.reset(key);
        }

        private static void sleep(Duration duration) {
            try {
                Thread.sleep(duration.toMillis());
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(ex);
            }
        }
    }

    @Test
    void aPolicyChangedAtRunTimeIsHeardByTheListenersWithItsNumbersBeforeAndAfter() {
        List<String> heard = new ArrayList<>();
        ThrottleListener listener = new ThrottleListener() {
            @Override
            public void onPolicyChanged(Policy before, Policy after) {
                heard.add(before.name() + ": " + before + " -> " + after);
            }
        };
        Throttler throttler = new Throttler(this.store, List.of(API), List.of(listener));
        Policy changed = new GcraPolicy(API.name(), 7, Duration.ofSeconds(10));
        throttler.update(changed, Map.of());
        assertThat(heard).containsExactly(API.name() + ": " + API + " -> " + changed);
    }
}
