package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.RedisMonitor;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Clock skew between application servers changes nothing, because decisions are made on the Redis
 * server's clock.
 *
 * <p>The first test shows what skew would do if application clocks were used: two stores given
 * clocks 10 s apart (the constructor that takes a {@link TimeSource}), sharing a 5 s window and a
 * lockout, decide on those clocks and let through twice what the policy allows. The second puts an
 * application whose clock is 10 s ahead (its {@code TimeSource} bean, the clock the rest of the
 * starter uses) beside a store built with the production constructor: the auto-configured store
 * never hands the application's clock to a script (every {@code EVALSHA}'s {@code now} argument is
 * empty, so the script reads {@code TIME}), stores Redis times, and the two decide as one.
 */
@WithRedis
class RedisClockSkewTests {

    private static final Duration SKEW = Duration.ofSeconds(10);

    private static final FixedWindowPolicy WINDOW = new FixedWindowPolicy("window", 3, Duration.ofSeconds(5));

    private static final LockoutPolicy LOCKOUT = LockoutPolicy.of("login", List.of(Duration.ofSeconds(5)));

    private static final Pattern ARGUMENT = Pattern.compile("\"((?:[^\"\\\\]|\\\\.)*)\"");

    /** An application with the Redis store and the two policies above, as YAML would configure them. */
    private final ApplicationContextRunner application = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    DataRedisAutoConfiguration.class,
                    DataRedisReactiveAutoConfiguration.class,
                    ThrottleAutoConfiguration.class))
            // every decision counted as an EVALSHA below: no near cache answering refusals on B
            .withPropertyValues(
                    "throttle.store.type=redis",
                    "throttle.store.redis.timeout=2s",
                    "throttle.store.redis.near-cache.enabled=false",
                    "throttle.policies.window.algorithm=fixed-window",
                    "throttle.policies.window.limit=3",
                    "throttle.policies.window.window=5s",
                    "throttle.policies.login.algorithm=lockout",
                    "throttle.policies.login.timeouts=5s");

    private static LettuceConnectionFactory connectionFactory;

    private final List<RedisThrottleStore> stores = new ArrayList<>();

    private RedisClient client;

    private RedisCommands<String, String> redis;

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
        this.redis = this.client.connect().sync();
    }

    @AfterEach
    void closeStoresAndRawClient() {
        this.stores.forEach(RedisThrottleStore::close);
        this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }

    @Test
    void hadApplicationClocksBeenUsedATenSecondSkewWouldLetTwiceTheQuotaThrough() {
        TimeSource accurate = System::currentTimeMillis;
        TimeSource ahead = () -> System.currentTimeMillis() + SKEW.toMillis();
        Limiter windowOnA = store(accurate).limiter(WINDOW);
        Limiter windowOnB = store(ahead).limiter(WINDOW);
        assertThat(passes(windowOnA::tryAcquire, windowOnA::tryAcquire)).isEqualTo(3);
        long openedByA = windowStart("throttle:{window:k}");
        assertThat(openedByA - redisNowMillis())
                .as("A's window opened at A's clock, here Redis time")
                .isBetween(-2_000L, 0L);
        assertThat(passes(windowOnB::tryAcquire, windowOnB::tryAcquire))
                .as("B thinks A's window ended 5 s ago")
                .isEqualTo(3);
        long openedByB = windowStart("throttle:{window:k}");
        assertThat(openedByB - redisNowMillis())
                .as("B's window opened at B's clock, 10 s after Redis time")
                .isBetween(SKEW.toMillis() - 2_000, SKEW.toMillis());

        Limiter lockoutOnA = store(accurate).limiter(LOCKOUT);
        Limiter lockoutOnB = store(ahead).limiter(LOCKOUT);
        assertThat(lockoutOnA.tryAcquire("alice", 1)).isEqualTo(Decision.allow(1, 0, 3_600_000));
        assertThat(lockoutOnB.tryAcquire("alice", 1))
                .as("B thinks the 5 s lockout is over")
                .isEqualTo(Decision.allow(1, 0, 3_600_000));
    }

    @Test
    void withRedisTimeAnInstanceWhoseClockIsOffDecidesExactlyLikeTheOthers(RedisEndpoint endpoint) {
        TimeSource ahead = () -> System.currentTimeMillis() + SKEW.toMillis();
        // A: a store built as production builds it; B: an application whose clock is 10 s ahead
        RedisThrottleStore storeOnA = store(null);
        Limiter windowOnA = storeOnA.limiter(WINDOW);
        Limiter lockoutOnA = storeOnA.limiter(LOCKOUT);
        this.application
                .withPropertyValues("spring.data.redis.url=" + endpoint.url())
                .withBean(TimeSource.class, () -> ahead)
                .run((context) -> {
                    assertThat(context.getBean(TimeSource.class).currentTimeMillis() - System.currentTimeMillis())
                            .as("B's clock is off")
                            .isGreaterThanOrEqualTo(SKEW.toMillis() - 1_000);
                    Throttler onB = context.getBean(Throttler.class);
                    assertThat(onB.policy("window")).isEqualTo(WINDOW);
                    assertThat(onB.policy("login")).isEqualTo(LOCKOUT);
                    windowOnA.peek("warm-up");
                    lockoutOnA.peek("warm-up");
                    onB.peek("window", "warm-up");
                    onB.peek("login", "warm-up");
                    try (RedisMonitor monitor = new RedisMonitor(endpoint)) {
                        this.redis.echo("start");
                        monitor.awaitMarker("start");
                        monitor.clear();

                        assertThat(passes(windowOnA::tryAcquire, (key, cost) -> onB.tryAcquire("window", key, cost)))
                                .as("one shared window")
                                .isEqualTo(3);
                        Decision refusedOnA = windowOnA.tryAcquire("k", 1);
                        Decision refusedOnB = onB.tryAcquire("window", "k");
                        assertThat(refusedOnA.allowed()).isFalse();
                        assertThat(refusedOnB.allowed()).isFalse();
                        assertThat(refusedOnA.retryAfterMillis())
                                .as("a wait within the window on Redis's clock")
                                .isBetween(1L, 5_000L);
                        assertThat(Math.abs(refusedOnA.retryAfterMillis() - refusedOnB.retryAfterMillis()))
                                .as("both are told the same wait, from the same clock")
                                .isLessThan(100);
                        assertThat(lockoutOnA.tryAcquire("alice", 1)).isEqualTo(Decision.allow(1, 0, 3_600_000));
                        Decision lockedOnB = onB.tryAcquire("login", "alice");
                        assertThat(lockedOnB.allowed())
                                .as("B's clock says the lockout is over; Redis's says not")
                                .isFalse();
                        assertThat(lockedOnB.retryAfterMillis())
                                .as("within the 5 s lock on Redis's clock")
                                .isBetween(1L, 5_000L);

                        this.redis.echo("end");
                        monitor.awaitMarker("end");
                        List<List<String>> evals = new ArrayList<>();
                        for (RedisMonitor.Command command : monitor.commands()) {
                            if (command.isTopLevel() && command.name().equals("EVALSHA")) {
                                evals.add(arguments(command.args()));
                            }
                        }
                        assertThat(evals)
                                .as("20 alternating calls, 2 refusals, 2 lockout calls: all decided by Redis")
                                .hasSize(24);
                        // EVALSHA sha numkeys key op cost now ...: index 5 is now
                        assertThat(evals)
                                .allSatisfy((args) -> assertThat(args.get(5))
                                        .as("now argument")
                                        .isEmpty());
                    }
                });
        long windowStart = windowStart("throttle:{window:k}");
        assertThat(redisNowMillis() - windowStart)
                .as("the window started at a Redis time, just now")
                .isBetween(0L, 2_000L);
        assertThat(lockoutAttemptAt("throttle:{login:alice}"))
                .as("the lockout counts from a Redis time, just now")
                .isBetween(redisNowMillis() - 2_000L, redisNowMillis());
    }

    /** Alternating calls on two instances until both are refused; returns the passes. */
    private static int passes(Call a, Call b) {
        int passes = 0;
        for (int i = 0; i < 10; i++) {
            passes += a.decide("k", 1).allowed() ? 1 : 0;
            passes += b.decide("k", 1).allowed() ? 1 : 0;
        }
        return passes;
    }

    private RedisThrottleStore store(TimeSource clock) {
        RedisThrottleStore store = new RedisThrottleStore(connectionFactory, "throttle", Duration.ofSeconds(2), clock);
        this.stores.add(store);
        return store;
    }

    /** The start of a fixed window's state, {@code <count>:<windowStart>}, as Redis holds it. */
    private long windowStart(String key) {
        return Long.parseLong(this.redis.get(key).split(":")[1]);
    }

    /** The time of a lockout's last allowed attempt, {@code <index>:<attemptAt>}, as Redis holds it. */
    private long lockoutAttemptAt(String key) {
        return Long.parseLong(this.redis.get(key).split(":")[1]);
    }

    private long redisNowMillis() {
        List<String> time = this.redis.time();
        return Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
    }

    private static List<String> arguments(String monitored) {
        List<String> arguments = new ArrayList<>();
        Matcher matcher = ARGUMENT.matcher(monitored);
        while (matcher.find()) {
            arguments.add(matcher.group(1));
        }
        return arguments;
    }

    /** One instance's call on a key: a limiter's, or an application's throttler's. */
    @FunctionalInterface
    private interface Call {

        Decision decide(String key, int cost);
    }
}
