package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.BoundPolicy;
import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Slot;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.resilience.FailureMode;
import dev.throttle.resilience.ResilientThrottleStore;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Charge;
import dev.throttle.testing.Eventually;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.RedisMonitor;
import dev.throttle.testing.redis.RedisProcess;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Concurrency slots on a real Redis, on Redis's own clock (no test clock): two stores sharing one
 * Redis (two instances of an application) share the count, a slot frees itself when its lease runs
 * out by Redis time, and while Redis is down each failure mode decides.
 */
@WithRedis
class RedisConcurrencyTests {

    private static LettuceConnectionFactory connectionFactory;

    @BeforeAll
    static void connect() {
        connectionFactory = SharedRedis.endpoint().newConnectionFactory();
    }

    @AfterAll
    static void disconnect() {
        connectionFactory.destroy();
    }

    private static RedisThrottleStore store(LettuceConnectionFactory factory) {
        return new RedisThrottleStore(factory, "conc", Duration.ofSeconds(2));
    }

    /**
     * 64 threads on one key with a limit of 3, half through each of two stores sharing one Redis:
     * counted inside the guarded work, never more than 3 run at once.
     */
    @Test
    void twoInstancesSharingRedisNeverHaveMoreThanTheLimitInProgress() throws Exception {
        ConcurrencyPolicy three = new ConcurrencyPolicy("three", 3, Duration.ofMinutes(1));
        try (RedisThrottleStore first = store(connectionFactory);
                RedisThrottleStore second = store(connectionFactory)) {
            Throttler[] instances = {new Throttler(first, List.of(three)), new Throttler(second, List.of(three))};
            instances[0].reset("three", "hot");
            AtomicInteger inProgress = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            AtomicInteger ran = new AtomicInteger();
            int threads = 64;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                CountDownLatch start = new CountDownLatch(1);
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    Throttler throttler = instances[t % 2];
                    done.add(pool.submit(() -> {
                        start.await();
                        for (int i = 0; i < 10; i++) {
                            try (Slot slot = throttler.enter("three", "hot")) {
                                int now = inProgress.incrementAndGet();
                                most.accumulateAndGet(now, Math::max);
                                ran.incrementAndGet();
                                Thread.sleep(1);
                                inProgress.decrementAndGet();
                            } catch (ThrottledException refused) {
                                Thread.yield();
                            }
                        }
                        return null;
                    }));
                }
                start.countDown();
                for (Future<?> future : done) {
                    future.get(5, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(most.get()).isBetween(1, 3);
            assertThat(ran.get()).as("slots were taken and released").isGreaterThan(3);
            assertThat(instances[1].peek("three", "hot").remaining())
                    .as("every slot released")
                    .isEqualTo(3);
        }
    }

    @Test
    void aSlotNeverReleasedFreesItselfWhenItsLeaseRunsOutByRedisTime() {
        ConcurrencyPolicy brief = new ConcurrencyPolicy("brief", 1, Duration.ofMillis(500));
        try (RedisThrottleStore store = store(connectionFactory)) {
            Throttler throttler = new Throttler(store, List.of(brief));
            throttler.reset("brief", "k");
            Decision taken = throttler.tryAcquire("brief", "k");
            assertThat(taken.allowed()).isTrue();
            Decision refused = throttler.tryAcquire("brief", "k");
            assertThat(refused.allowed()).isFalse();
            assertThat(refused.retryAfterMillis()).isBetween(1L, 500L);
            Eventually.until(
                    "the lease ran out", () -> throttler.peek("brief", "k").allowed());
            Decision next = throttler.tryAcquire("brief", "k");
            assertThat(next.allowed()).isTrue();
            throttler.bound("brief").refund("k", 1, taken);
            assertThat(throttler.tryAcquire("brief", "k").allowed())
                    .as("the expired slot's late release freed the newer one")
                    .isFalse();
        }
    }

    /**
     * Closing a slot sends its release and does not wait for Redis's answer: with Redis paused for
     * writes, {@code close()} returns at once, and the slot is free once Redis runs the release.
     */
    @Test
    void aSlotsCloseDoesNotWaitForRedis() {
        ConcurrencyPolicy one = new ConcurrencyPolicy("one", 1, Duration.ofMinutes(1));
        // a Redis of its own: a pause would hold every other test's calls on the shared one
        RedisProcess process = RedisProcess.startStandalone();
        RedisClient client = process.endpoint().newClient();
        LettuceConnectionFactory factory = process.endpoint().newConnectionFactory();
        try (RedisThrottleStore store = new RedisThrottleStore(factory, "conc", Duration.ofSeconds(5))) {
            RedisCommands<String, String> redis = client.connect().sync();
            Throttler throttler = new Throttler(store, List.of(one));
            Slot slot = throttler.enter("one", "k");
            redis.clientPause(1_500);
            long start = System.nanoTime();
            slot.close();
            long closedMillis = Duration.ofNanos(System.nanoTime() - start).toMillis();
            assertThat(closedMillis).as("close() waited for the paused Redis").isLessThan(1_000);
            Eventually.until("the release ran", () -> throttler.peek("one", "k").allowed());
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            factory.destroy();
            process.close();
        }
    }

    /**
     * A slot's release is not waited for, yet the same instance's next call on the key, made right
     * after {@code close()}, finds the slot free: it is written behind the release on the connection,
     * so Redis decides it after the release. A slot of one, taken and closed 500 times in a row, is
     * never refused; so too with three other callers on keys of their own keeping the policy's calls
     * batched (their batches' answers, on the connection's event loop, send the next batch).
     */
    @Test
    void theNextCallAfterASlotsCloseFindsItFree() throws Exception {
        ConcurrencyPolicy one = new ConcurrencyPolicy("one", 1, Duration.ofMinutes(1));
        try (RedisThrottleStore store = store(connectionFactory)) {
            Throttler throttler = new Throttler(store, List.of(one));
            throttler.reset("one", "k");
            AtomicInteger othersRefused = new AtomicInteger();
            List<Thread> others = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                String key = "other-" + t;
                throttler.reset("one", key);
                Thread other = new Thread(() -> {
                    for (int i = 0; i < 500; i++) {
                        try (Slot slot = throttler.enter("one", key)) {
                            assertThat(slot.decision().allowed()).isTrue();
                        } catch (ThrottledException refused) {
                            othersRefused.incrementAndGet();
                        }
                    }
                });
                others.add(other);
                other.start();
            }
            int refused = 0;
            for (int i = 0; i < 500; i++) {
                try (Slot slot = throttler.enter("one", "k")) {
                    assertThat(slot.decision().remaining()).isZero();
                } catch (ThrottledException ex) {
                    refused++;
                }
            }
            for (Thread other : others) {
                other.join();
            }
            assertThat(refused).as("refusals on the key").isZero();
            assertThat(othersRefused).as("refusals on the other keys").hasValue(0);
            assertThat(throttler.peek("one", "k").allowed()).isTrue();
        }
    }

    /**
     * With the near cache, a refusal remembered while a slot was held (the key's second call, refused
     * and remembered for its {@code Retry-After}) does not answer the call made right after the slot's
     * close: the release is not waited for, and the key is forgotten as it is sent.
     */
    @Test
    void aRefusalRememberedWhileTheSlotWasHeldDoesNotAnswerTheCallAfterItsClose() {
        ConcurrencyPolicy one = new ConcurrencyPolicy("one", 1, Duration.ofMinutes(1));
        try (RedisThrottleStore store = new RedisThrottleStore(
                connectionFactory,
                "conc",
                Duration.ofSeconds(2),
                null,
                NearCacheSettings.of(1000, Duration.ofMillis(50)))) {
            Throttler throttler = new Throttler(store, List.of(one));
            throttler.reset("one", "k");
            for (int i = 0; i < 200; i++) {
                Slot held = throttler.enter("one", "k");
                assertThat(throttler.tryAcquire("one", "k").allowed())
                        .as("a second call while the slot is held")
                        .isFalse();
                held.close();
                try (Slot next = throttler.enter("one", "k")) {
                    assertThat(next.decision().allowed()).isTrue();
                }
            }
        }
    }

    /**
     * A release by its receipt, the end of almost every call with a slot, runs ahead of the script's
     * prelude: a GET and a SET that keeps the key's expiry, no TIME, so that it costs Redis less than
     * taking the slot did.
     */
    @Test
    void aReleaseByReceiptReadsNoTimeAndKeepsTheKeysExpiry() throws Exception {
        ConcurrencyPolicy two = new ConcurrencyPolicy("two", 2, Duration.ofSeconds(30));
        RedisEndpoint endpoint = SharedRedis.endpoint();
        RedisClient client = endpoint.newClient();
        try (RedisThrottleStore store = store(connectionFactory);
                RedisMonitor monitor = new RedisMonitor(endpoint)) {
            RedisCommands<String, String> redis = client.connect().sync();
            BoundPolicy slots = new Throttler(store, List.of(two)).bound("two");
            slots.reset("k");
            Decision first = slots.tryAcquire("k", 1);
            Decision second = slots.tryAcquire("k", 1);
            assertThat(second.remaining()).isZero();
            long before = redis.pttl("conc:{two:k}");
            redis.echo("start");
            monitor.awaitMarker("start");
            monitor.clear();
            slots.refund("k", 1, first);
            redis.echo("end");
            monitor.awaitMarker("end");
            assertThat(monitor.commands().stream()
                            .filter((command) -> !command.isTopLevel())
                            .map(RedisMonitor.Command::name))
                    .containsExactly("GET", "SET");
            assertThat(monitor.commands().stream()
                            .filter((command) -> command.name().equals("SET"))
                            .map(RedisMonitor.Command::args))
                    .singleElement(InstanceOfAssertFactories.STRING)
                    .endsWith("\"KEEPTTL\"");
            assertThat(redis.pttl("conc:{two:k}")).isBetween(1L, before);
            assertThat(slots.peek("k").remaining()).as("the first slot freed").isEqualTo(1);
            slots.refund("k", 1, first);
            assertThat(slots.peek("k").remaining())
                    .as("a second release of the same slot frees no other")
                    .isEqualTo(1);
            slots.refund("k", 1, second);
            assertThat(slots.peek("k").remaining()).isEqualTo(2);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    /**
     * A release by receipt on state another writer left (a slot id after the last id given) frees
     * nothing and writes nothing, as a decision on that state reads it as no slots: the release's
     * short path hands such state to the full script.
     */
    @Test
    void aReleaseOnStateThatIsNotAListOfSlotsWritesNothing() {
        ConcurrencyPolicy two = new ConcurrencyPolicy("two", 2, Duration.ofSeconds(30));
        RedisEndpoint endpoint = SharedRedis.endpoint();
        RedisClient client = endpoint.newClient();
        try (RedisThrottleStore store = store(connectionFactory)) {
            RedisCommands<String, String> redis = client.connect().sync();
            Limiter slots = store.limiter(two);
            long last = System.currentTimeMillis() * 1000 + 1;
            String state = "C" + String.format("%016d", last) + String.format("%016d", last + 5);
            redis.psetex("conc:{two:k}", 30_000, state);
            slots.refund("k", 1, last + 5);
            assertThat(redis.get("conc:{two:k}")).isEqualTo(state);
            assertThat(slots.peek("k").remaining()).as("read as no slots").isEqualTo(2);
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    @ParameterizedTest
    @EnumSource(FailureMode.class)
    void whileRedisIsDownTheFailureModeDecidesAndReleasesNeverThrow(FailureMode mode) {
        ConcurrencyPolicy one = new ConcurrencyPolicy("one", 1, Duration.ofSeconds(30));
        RedisProcess redis = RedisProcess.startStandalone();
        LettuceConnectionFactory factory = redis.endpoint().newConnectionFactory();
        try (ResilientThrottleStore store = new ResilientThrottleStore(
                new RedisThrottleStore(factory, "conc", Duration.ofMillis(200)),
                mode,
                new MemoryThrottleStore(TimeSource.system(), 1000))) {
            Throttler throttler = new Throttler(store, List.of(one));
            BoundPolicy slots = throttler.bound("one");
            Eventually.until("Redis answers", () -> {
                Decision probe = slots.tryAcquire("probe", 1);
                slots.refund("probe", 1, probe);
                return probe.allowed() && !store.isStoreDown();
            });
            Decision held = slots.tryAcquire("k", 1);
            assertThat(held.allowed()).isTrue();
            redis.stop();
            Eventually.until("the outage is seen", () -> {
                slots.peek("k");
                return store.isStoreDown();
            });
            Decision during = slots.tryAcquire("k", 1);
            switch (mode) {
                case OPEN -> assertThat(during.allowed()).isTrue();
                case CLOSED -> assertThat(during.allowed()).isFalse();
                case LOCAL -> {
                    assertThat(during.allowed()).as("this instance's own slots").isTrue();
                    assertThat(slots.tryAcquire("k", 1).allowed())
                            .as("the local limit holds")
                            .isFalse();
                }
            }
            slots.refund("k", 1, during);
            slots.refund("k", 1, held);
            if (mode == FailureMode.LOCAL) {
                assertThat(slots.tryAcquire("k", 1).allowed())
                        .as("the local slot was released")
                        .isTrue();
            }
        } finally {
            factory.destroy();
            redis.stop();
        }
    }

    @Test
    void aSlotEndedOnAnInterruptedThreadIsReleasedAllTheSame() throws Exception {
        ConcurrencyPolicy one = new ConcurrencyPolicy("interrupted-slots", 1, Duration.ofSeconds(30));
        try (RedisThrottleStore store = store(connectionFactory)) {
            Throttler throttler = new Throttler(store, List.of(one));
            Charge slot = Charge.of(throttler.bound("interrupted-slots"), Charge.OnSuccess.COUNT);
            for (Consumer<Admission> ending : List.<Consumer<Admission>>of(
                    Admission::succeeded, Admission::failed, Admission::refund, Admission::close)) {
                Admission admission = Admission.decide(slot, "k");
                assertThat(throttler.peek("interrupted-slots", "k").allowed()).isFalse();
                // what Future.cancel(true), shutdownNow() or a time limiter does to the calling thread
                Thread.currentThread().interrupt();
                try {
                    ending.accept(admission);
                } finally {
                    Thread.interrupted();
                }
                Eventually.until(
                        "the slot is released though the thread was interrupted",
                        () -> throttler.peek("interrupted-slots", "k").allowed());
            }
        }
    }
}
