package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.ThrottleStore;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.RedisKeys;
import dev.throttle.testing.redis.RedisMonitor;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The Redis store against a real Redis: round trips, keys, TTLs, Redis time, number formatting,
 * the non-blocking API and script reloading.
 *
 * <p>Each decision is checked for its exact numbers, and where a failure mode could answer alike
 * (a local fallback decides as the memory store does) against the key's state in Redis itself, so
 * that no assertion passes on an answer Redis did not give.
 */
@WithRedis
class RedisThrottleStoreTests {

    private static final List<Policy> POLICIES = List.of(
            TokenBucketPolicy.of("tb", 10, Duration.ofSeconds(2)),
            new GcraPolicy("gcra", 3, Duration.ofSeconds(60)),
            new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10)),
            SlidingLogPolicy.withDefaults("log"),
            LockoutPolicy.of("lock", List.of(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(4))));

    private static LettuceConnectionFactory connectionFactory;

    private RedisClient client;

    private RedisCommands<String, String> redis;

    private final List<ThrottleStore> stores = new ArrayList<>();

    @BeforeAll
    static void connect() {
        connectionFactory = SharedRedis.endpoint().newConnectionFactory();
    }

    @AfterAll
    static void disconnect() {
        connectionFactory.destroy();
    }

    @BeforeEach
    void openRawClient(RedisEndpoint endpoint) {
        this.client = endpoint.newClient();
        StatefulRedisConnection<String, String> connection = this.client.connect();
        this.redis = connection.sync();
    }

    @AfterEach
    void closeStoresAndRawClient() {
        this.stores.forEach(ThrottleStore::close);
        this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }

    @Test
    void everyDecisionRefundAndPeekIsOneEvalshaAndAResetIsOneDel(RedisEndpoint endpoint) throws Exception {
        RedisThrottleStore store = store();
        // the store's own script loads, once at startup, are not what this test counts
        store.warmUpDone().get(10, TimeUnit.SECONDS);
        for (Policy policy : POLICIES) {
            // first use per script: EVALSHA, NOSCRIPT, EVAL; not what this test counts
            store.limiter(policy).tryAcquire("warm-up", 1);
        }
        try (RedisMonitor monitor = new RedisMonitor(endpoint)) {
            this.redis.echo("start");
            monitor.awaitMarker("start");
            monitor.clear();
            int calls = 0;
            for (Policy policy : POLICIES) {
                Limiter limiter = store.limiter(policy);
                for (int i = 0; i < 4; i++) {
                    limiter.tryAcquire("user@example.com", 1);
                    limiter.peek("user@example.com");
                    limiter.refund("user@example.com", 1);
                    limiter.tryAcquireAsync("user@example.com", 1)
                            .toCompletableFuture()
                            .join();
                    calls += 4;
                }
                limiter.reset("user@example.com");
            }
            this.redis.echo("end");
            monitor.awaitMarker("end");
            List<String> topLevel = monitor.commands().stream()
                    .filter(RedisMonitor.Command::isTopLevel)
                    .map(RedisMonitor.Command::name)
                    .toList();
            assertThat(topLevel.stream().filter("EVALSHA"::equals).count()).isEqualTo(calls);
            assertThat(topLevel.stream().filter("DEL"::equals).count()).isEqualTo(POLICIES.size());
            assertThat(topLevel)
                    .as("nothing else: no retries, no extra reads")
                    .hasSize(calls + POLICIES.size() + 1)
                    .last()
                    .isEqualTo("ECHO");
            assertThat(monitor.commands().stream()
                            .filter((c) -> !c.isTopLevel())
                            .map(RedisMonitor.Command::name))
                    .as("the scripts' own commands run inside Redis")
                    .contains("TIME", "GET", "SET");
        }
    }

    @Test
    void keysAreThePrefixThenPolicyAndKeyInOneHashTag() {
        RedisThrottleStore store =
                closedAfterTest(new RedisThrottleStore(connectionFactory, "myapp", Duration.ofSeconds(1)));
        store.limiter(POLICIES.get(2)).tryAcquire("alice@example.com", 1);
        assertThat(RedisKeys.matching(this.redis, "*")).containsExactly("myapp:{fw:alice@example.com}");
        assertThat(store.redisKey("fw", "alice@example.com")).isEqualTo("myapp:{fw:alice@example.com}");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new RedisThrottleStore(connectionFactory, "a{b", Duration.ofSeconds(1)));
    }

    @Test
    void keysThatUtf8WouldMergeKeepBucketsOfTheirOwn() {
        // a lone surrogate has no UTF-8 form: Lettuce writes it as '?', so these were one Redis key
        Throttler throttler = new Throttler(store(), List.of(TokenBucketPolicy.of("login", 1, Duration.ofHours(1))));
        String[] keys = {"sur\ud800@x.com", "sur\udbff@x.com", "sur?@x.com"};
        for (String key : keys) {
            assertThat(throttler.tryAcquire("login", key, 1).allowed()).as(key).isTrue();
        }
        for (String key : keys) {
            assertThat(throttler.tryAcquire("login", key, 1).allowed()).as(key).isFalse();
        }
    }

    @Test
    void everyWriteExpiresExactlyWhenTheStateIsNeutralAgain() {
        ManualTimeSource clock = new ManualTimeSource();
        RedisThrottleStore store = store(clock);
        Limiter bucket = store.limiter(POLICIES.get(0));
        assertThat(bucket.tryAcquire("k", 3).resetAfterMillis()).isEqualTo(6_000);
        assertPttl("throttle:{tb:k}", 6_000);
        bucket.tryAcquire("k", 7);
        bucket.refund("k", 4);
        assertPttl("throttle:{tb:k}", 12_000);
        bucket.refund("k", 6);
        assertThat(this.redis.exists("throttle:{tb:k}"))
                .as("a full bucket is neutral: deleted")
                .isZero();

        Limiter gcra = store.limiter(POLICIES.get(1));
        gcra.tryAcquire("k", 1);
        gcra.tryAcquire("k", 1);
        assertPttl("throttle:{gcra:k}", 40_000);
        gcra.refund("k", 1);
        assertPttl("throttle:{gcra:k}", 20_000);

        Limiter window = store.limiter(POLICIES.get(2));
        window.tryAcquire("k", 1);
        clock.advanceMillis(4_000);
        window.tryAcquire("k", 1);
        assertPttl("throttle:{fw:k}", 6_000);
        window.tryAcquire("k", 1);
        assertThat(window.tryAcquire("k", 1).allowed()).isFalse();
        assertPttl("throttle:{fw:k}", 6_000);

        Limiter log = store.limiter(POLICIES.get(3));
        log.tryAcquire("k", 1);
        clock.advanceMillis(1_000);
        log.tryAcquire("k", 1);
        assertPttl("throttle:{log:k}", 3_600_000);
        log.refund("k", 1);
        assertPttl("throttle:{log:k}", 3_599_000);

        Limiter lockout = store.limiter(POLICIES.get(4));
        lockout.tryAcquire("k", 1);
        clock.advanceMillis(1_000);
        lockout.tryAcquire("k", 1);
        assertPttl("throttle:{lock:k}", 3_600_000);
        lockout.refund("k", 1);
        assertPttl("throttle:{lock:k}", 3_599_000);
    }

    @Test
    void withRedisTimeTheExpiryMatchesTheDecisionsResetAfter() {
        RedisThrottleStore store = store();
        try (MemoryThrottleStore memory = new MemoryThrottleStore()) {
            for (Policy policy : POLICIES) {
                // a key's first call is told the same whatever the time: the memory twin's answer, exactly
                Decision expected = memory.limiter(policy).tryAcquire("k", 1);
                long sent = System.nanoTime();
                Decision decision = store.limiter(policy).tryAcquire("k", 1);
                long pttl = this.redis.pttl(store.redisKey(policy.name(), "k"));
                // Redis time runs on between the script and PTTL: by as much as this thread waited
                long waited = (System.nanoTime() - sent) / 1_000_000;
                assertThat(pttl)
                        .as("PTTL of " + policy.name())
                        .isBetween(decision.resetAfterMillis() - 100 - waited, decision.resetAfterMillis());
                assertThat(decision).as(policy.name()).isEqualTo(expected);
            }
        }
    }

    @Test
    void microsecondScoresAreStoredAsPlainIntegersNeverInExponentNotation() {
        RedisThrottleStore store = store();
        store.limiter(new GcraPolicy("g", 3, Duration.ofDays(3650))).tryAcquire("k", 1);
        String state = this.redis.get("throttle:{g:k}");
        assertThat(state).as("the score, and the interval it was written under").matches("\\d{16,}:\\d+");
        String score = state.substring(0, state.indexOf(':'));
        List<String> time = this.redis.time();
        long nowMicros = Long.parseLong(time.get(0)) * 1_000_000 + Long.parseLong(time.get(1));
        long intervalMicros = Duration.ofDays(3650).toMillis() * 1000 / 3;
        assertThat(Long.parseLong(score) - nowMicros).isBetween(intervalMicros - 1_000_000, intervalMicros);
        store.limiter(POLICIES.get(3)).tryAcquire("k", 1);
        assertThat(this.redis.get("throttle:{log:k}"))
                .as("one attempt, 15 digits after the log's mark")
                .matches("L\\d{15}");
    }

    @Test
    void numbersNearTwoToTheFiftyThirdStayExact() {
        // 2250-01-01 in microseconds is 8.8e15, just below 2^53 = 9.007e15: Lua's doubles are still exact there
        ManualTimeSource clock = new ManualTimeSource(java.time.Instant.parse("2250-01-01T00:00:00Z"));
        RedisThrottleStore store = store(clock);
        GcraPolicy third = new GcraPolicy("third", 3, Duration.ofSeconds(1));
        Limiter limiter = store.limiter(third);
        limiter.tryAcquire("k", 1);
        clock.advanceMillis(1);
        limiter.tryAcquire("k", 1);
        long intervalMicros = third.algorithm().numbersOf(third)[1]; // P = {limit, interval, tolerance}
        long expected = clock.currentTimeMillis() * 1000 - 1000 + 2 * intervalMicros;
        assertThat(expected).isLessThan(1L << 53);
        assertThat(this.redis.get("throttle:{third:k}")).isEqualTo(expected + ":" + intervalMicros);
        long period = Duration.ofDays(1825).toMillis();
        Limiter bucket = store.limiter(TokenBucketPolicy.of("tb-far", 2, Duration.ofMillis(period)));
        bucket.tryAcquire("k", 2);
        assertThat(this.redis.get("throttle:{tb-far:k}"))
                .as("2 tokens used")
                .isEqualTo("2:" + clock.currentTimeMillis());
        assertThat(bucket.tryAcquire("k", 1)).isEqualTo(Decision.reject(2, 0, period, 2 * period));
    }

    @Test
    void decisionsReadTheRedisClock() {
        RedisThrottleStore store = store();
        Limiter window = store.limiter(new FixedWindowPolicy("fw1", 2, Duration.ofMillis(1_500)));
        window.peek("warm-up");
        assertThat(window.tryAcquire("k", 1))
                .as("the first call opens a window")
                .isEqualTo(Decision.allow(2, 1, 1_500));
        long firstStart = windowStart("throttle:{fw1:k}");
        assertThat(redisNowMillis() - firstStart)
                .as("the window opened at a Redis time, just now")
                .isBetween(0L, 2_000L);
        Decision second = window.tryAcquire("k", 1);
        assertThat(second.allowed()).isTrue();
        assertThat(second.remaining()).isZero();
        Decision refused = window.tryAcquire("k", 1);
        assertThat(refused.allowed()).isFalse();
        assertThat(refused.remaining()).isZero();
        assertThat(refused.retryAfterMillis()).isBetween(1L, 1_500L).isEqualTo(refused.resetAfterMillis());
        // the script reads TIME floored to whole milliseconds, Redis's expiry clock is not floored: the
        // key's remaining life may read one millisecond longer than the wait the script computed
        assertThat(this.redis.pttl("throttle:{fw1:k}"))
                .as("the wait is the key's life on the Redis clock")
                .isBetween(refused.retryAfterMillis() - 100, refused.retryAfterMillis() + 1);
        assertThat(this.redis.get("throttle:{fw1:k}"))
                .as("a refusal writes nothing")
                .isEqualTo("2:" + firstStart);
        sleep(refused.retryAfterMillis() + 5);
        assertThat(window.tryAcquire("k", 1))
                .as("the window ended on the Redis clock: a new one opens")
                .isEqualTo(Decision.allow(2, 1, 1_500));
        assertThat(windowStart("throttle:{fw1:k}")).isGreaterThanOrEqualTo(firstStart + 1_500);
    }

    @Test
    void theNonBlockingApiMakesTheSameDecisions() throws Exception {
        RedisThrottleStore store = store();
        Limiter window = store.limiter(POLICIES.get(2));
        assertThat(await(window.tryAcquireAsync("k", 2))).isEqualTo(Decision.allow(3, 1, 10_000));
        assertThat(windowCount("throttle:{fw:k}")).isEqualTo(2);
        Decision refused = await(window.tryAcquireAsync("k", 2));
        assertThat(refused.allowed()).isFalse();
        assertThat(refused.remaining()).as("1 left, fewer than the call needs").isEqualTo(1);
        assertThat(refused.retryAfterMillis())
                .as("until the window ends")
                .isBetween(5_000L, 10_000L)
                .isEqualTo(refused.resetAfterMillis());
        assertThat(windowCount("throttle:{fw:k}"))
                .as("a refusal writes nothing")
                .isEqualTo(2);
        await(window.refundAsync("k", 2));
        assertThat(window.peek("k")).isEqualTo(Decision.allow(3, 3, 0));
        assertThat(window.tryAcquire("k", 3).remaining()).isZero();
        assertThat(windowCount("throttle:{fw:k}")).isEqualTo(3);
        await(window.resetAsync("k"));
        assertThat(this.redis.exists("throttle:{fw:k}")).isZero();
        assertThat(await(window.tryAcquireAsync("k", 4))).isEqualTo(Decision.neverAllowed(3));
        assertThat(this.redis.exists("throttle:{fw:k}"))
                .as("a call that can never pass touches nothing")
                .isZero();
    }

    @Test
    void aFlushedScriptCacheIsReloadedWithEval() throws Exception {
        RedisThrottleStore store = store();
        store.warmUpDone().get(10, TimeUnit.SECONDS);
        Limiter window = store.limiter(POLICIES.get(2));
        String sha = RedisThrottleScripts.of(POLICIES.get(2)).getSha1();
        // a round trip on the store's one connection: the script load that binding sent is done by now,
        // and cannot load the script again after the flush
        assertThat(window.tryAcquire("k", 1)).isEqualTo(Decision.allow(3, 2, 10_000));
        this.redis.scriptFlush();
        assertThat(this.redis.scriptExists(sha)).containsExactly(false);
        Decision afterFlush = window.tryAcquire("k", 1);
        assertThat(this.redis.scriptExists(sha))
                .as("EVAL cached the script again")
                .containsExactly(true);
        assertThat(afterFlush.allowed()).isTrue();
        assertThat(afterFlush.remaining()).isEqualTo(1);
        assertThat(window.tryAcquire("k", 1).remaining()).isZero();
        assertThat(windowCount("throttle:{fw:k}"))
                .as("every call counted in Redis, none lost")
                .isEqualTo(3);
    }

    @Test
    void aConnectionThatTheFactoryReplacedIsObtainedAgain(RedisEndpoint endpoint) {
        LettuceConnectionFactory own = endpoint.newConnectionFactory();
        // failure mode closed refuses every call it answers, so an allowed call is one Redis decided
        try (ResilientThrottleStore store = new ResilientThrottleStore(
                new RedisThrottleStore(own, "throttle", Duration.ofSeconds(2)), FailureMode.CLOSED, null)) {
            Limiter window = store.limiter(POLICIES.get(2));
            assertThat(window.tryAcquire("k", 1)).isEqualTo(Decision.allow(3, 2, 10_000));
            own.resetConnection();
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            Decision decision = window.tryAcquire("k", 1);
            while (!decision.allowed() && System.nanoTime() < deadline) {
                sleep(20);
                decision = window.tryAcquire("k", 1);
            }
            assertThat(decision.allowed())
                    .as("Redis decides again, over the factory's new connection: " + decision)
                    .isTrue();
            assertThat(decision.remaining()).isEqualTo(1);
            assertThat(decision.resetAfterMillis()).isBetween(1L, 10_000L);
            assertThat(windowCount("throttle:{fw:k}"))
                    .as("both passes counted in Redis")
                    .isEqualTo(2);
            assertThat(store.isStoreDown()).isFalse();
        } finally {
            own.destroy();
        }
    }

    @Test
    void anEqualPolicyGetsTheSameLimiterAndOtherSettingsANewOneOverTheSameKeys() {
        RedisThrottleStore store = store();
        Limiter first = store.limiter(POLICIES.get(2));
        assertThat(first).isSameAs(store.limiter(new FixedWindowPolicy("fw", 3, Duration.ofSeconds(10))));
        for (int i = 0; i < 3; i++) {
            assertThat(first.tryAcquire("alice", 1).allowed()).isTrue();
        }
        // a change at run time binds the policy again: the same keys, the new numbers
        Limiter changed = store.limiter(new FixedWindowPolicy("fw", 4, Duration.ofSeconds(10)));
        assertThat(changed).isNotSameAs(first);
        assertThat(changed.tryAcquire("alice", 1).allowed()).isTrue();
        assertThat(changed.tryAcquire("alice", 1).allowed()).isFalse();
        assertThat(store.kind()).isEqualTo("redis");
    }

    @Test
    void stateWrittenUnderOtherSettingsOfAPolicyIsReadAsNeutralOrClampedNeverAnError() {
        ManualTimeSource clock = new ManualTimeSource();
        // what a rolling deploy meets: instances with the old settings wrote these keys
        RedisThrottleStore before = store(clock);
        Limiter longLadder = before.limiter(LockoutPolicy.of(
                "login",
                List.of(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(4), Duration.ofSeconds(8))));
        for (int i = 0; i < 4; i++) {
            clock.advance(Duration.ofSeconds(8));
            assertThat(longLadder.tryAcquire("alice", 1).allowed()).isTrue();
        }
        Limiter wideWindow = before.limiter(new FixedWindowPolicy("api", 10, Duration.ofMinutes(1)));
        assertThat(wideWindow.tryAcquire("bob", 8)).isEqualTo(Decision.allow(10, 2, 60_000));
        before.limiter(SlidingLogPolicy.withDefaults("search")).tryAcquire("carol", 1);
        before.limiter(new GcraPolicy("upload", 3, Duration.ofSeconds(60))).tryAcquire("dave", 1);

        RedisThrottleStore after = store(clock);
        Limiter shortLadder =
                after.limiter(LockoutPolicy.of("login", List.of(Duration.ofSeconds(1), Duration.ofSeconds(2))));
        Decision locked = shortLadder.tryAcquire("alice", 1);
        assertThat(locked.allowed())
                .as("the old rung 3 is clamped to the new top rung, 2 s")
                .isFalse();
        assertThat(locked.retryAfterMillis()).isEqualTo(2_000);
        clock.advance(Duration.ofSeconds(2));
        assertThat(shortLadder.tryAcquire("alice", 1).allowed()).isTrue();

        Limiter narrowWindow = after.limiter(new FixedWindowPolicy("api", 5, Duration.ofMinutes(1)));
        Decision overLimit = narrowWindow.tryAcquire("bob", 1);
        assertThat(overLimit.allowed()).isFalse();
        assertThat(overLimit.remaining())
                .as("8 taken of a limit now 5: nothing left, not -3")
                .isZero();
        assertThat(narrowWindow.peek("bob").remaining()).isZero();

        // another algorithm under the same policy name: a log where a pair of numbers is expected, and back
        Decision fromList = after.limiter(TokenBucketPolicy.of("search", 2, Duration.ofSeconds(1)))
                .tryAcquire("carol", 1);
        assertThat(fromList.allowed()).isTrue();
        assertThat(fromList.remaining()).isEqualTo(1);
        Limiter logFromString = after.limiter(SlidingLogPolicy.withDefaults("upload"));
        assertThat(logFromString.tryAcquire("dave", 1).allowed()).isTrue();
        assertThat(this.redis.get("throttle:{upload:dave}")).startsWith("L");
        logFromString.refund("dave", 1);
        assertThat(this.redis.exists("throttle:{upload:dave}")).isZero();

        // and a log read by a numeric script: neutral, never a score in the far future
        assertThat(logFromString.tryAcquire("dave", 1).allowed()).isTrue();
        RedisThrottleStore later = store(clock);
        Decision scoreFromLog = later.limiter(new GcraPolicy("upload", 3, Duration.ofSeconds(60)))
                .tryAcquire("dave", 1);
        assertThat(scoreFromLog.allowed()).isTrue();
        assertThat(scoreFromLog.remaining()).isEqualTo(2);
    }

    @Test
    void aSlidingLogWithAnEntryThatIsNotATimeCountsAsEmptyAndIsReplaced() {
        ManualTimeSource clock = new ManualTimeSource();
        RedisThrottleStore store = store(clock);
        Limiter log =
                store.limiter(new SlidingLogPolicy("garbled", 2, Duration.ofMinutes(1), Duration.ofSeconds(10), 1));
        long now = clock.currentTimeMillis();
        String expired = String.format("%015d", now - 120_000);
        String recent = String.format("%015d", now - 1_000);
        // three entries: the oldest past the ttl, so the search looks at the middle one, 15 characters
        // that are not a time
        this.redis.set("throttle:{garbled:k}", "L" + expired + "not-a-time-here" + recent);
        assertThat(log.tryAcquire("k", 1))
                .as("as if the log were empty, not two live attempts and a wait")
                .isEqualTo(Decision.allow(2, 1, 60_000));
        assertThat(this.redis.get("throttle:{garbled:k}")).isEqualTo("L" + String.format("%015d", now));
        // the oldest entry, which is looked at first, not a time
        this.redis.set("throttle:{garbled:k2}", "L" + "not-a-time-here" + recent);
        assertThat(log.tryAcquire("k2", 1)).isEqualTo(Decision.allow(2, 1, 60_000));
    }

    @Test
    void aPolicyBoundAfterTheStoreConnectedHasItsScriptLoadedBeforeItsFirstCall() {
        RedisThrottleStore store = store();
        // numbers no other test uses, so that no other test has loaded these scripts
        GcraPolicy early = new GcraPolicy("preload-early", 7, Duration.ofMillis(7_001));
        GcraPolicy late = new GcraPolicy("preload-late", 11, Duration.ofMillis(11_003));
        String lateSha = RedisThrottleScripts.of(late).getSha1();
        store.limiter(early);
        awaitScript(RedisThrottleScripts.of(early).getSha1());
        assertThat(this.redis.scriptExists(lateSha)).containsExactly(false);
        store.limiter(late);
        awaitScript(lateSha);
    }

    private void awaitScript(String sha) {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!this.redis.scriptExists(sha).get(0) && System.nanoTime() < deadline) {
            sleep(20);
        }
        assertThat(this.redis.scriptExists(sha))
                .as("script " + sha + " loaded without a call")
                .containsExactly(true);
    }

    /** Redis time, a timeout that a busy 2-core test machine never hits: these tests are not about timeouts. */
    private RedisThrottleStore store() {
        String prefix = RedisThrottleStore.DEFAULT_KEY_PREFIX;
        return closedAfterTest(new RedisThrottleStore(connectionFactory, prefix, Duration.ofSeconds(2)));
    }

    /** Decisions on {@code clock} instead of Redis time. */
    private RedisThrottleStore store(TimeSource clock) {
        return closedAfterTest(new RedisThrottleStore(connectionFactory, "throttle", Duration.ofSeconds(2), clock));
    }

    private <S extends ThrottleStore> S closedAfterTest(S store) {
        this.stores.add(store);
        return store;
    }

    private static <T> T await(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    /** The count of a fixed window's state, {@code <count>:<windowStart>}, as Redis holds it. */
    private long windowCount(String key) {
        return Long.parseLong(this.redis.get(key).split(":")[0]);
    }

    /** The start of a fixed window's state, in epoch milliseconds. */
    private long windowStart(String key) {
        return Long.parseLong(this.redis.get(key).split(":")[1]);
    }

    private long redisNowMillis() {
        List<String> time = this.redis.time();
        return Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
    }

    private void assertPttl(String key, long expected) {
        assertThat(this.redis.pttl(key)).as("PTTL of " + key).isBetween(expected - 100, expected);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
