package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.BoundPolicy;
import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.Throttler;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.RedisMonitor;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A concurrency slot's take runs ahead of the script's prelude ({@code concurrency_take.lua}): it
 * must decide exactly as {@code concurrency.lua} does. Here both run on a real Redis, on two keys,
 * through the same long sequence of takes, releases, peeks, lease expiries and state other writers
 * leave, with {@code now} passed as the store passes its client clock: the replies, the states and
 * every write's expiry (as the scripts wrote it, seen with {@code MONITOR}) agree, step by step.
 */
@WithRedis
class RedisSlotTakeTests {

    private static final String FAST = "take:{fast}";

    private static final String FULL = "take:{full}";

    /** An epoch millisecond of 2026, where the ids carry the time they were taken. */
    private static final long START = 1_790_000_000_000L;

    private static LettuceConnectionFactory connectionFactory;

    private static RedisClient client;

    private static RedisCommands<String, String> redis;

    @BeforeAll
    static void connect() {
        connectionFactory = SharedRedis.endpoint().newConnectionFactory();
        client = SharedRedis.endpoint().newClient();
        redis = client.connect().sync();
    }

    @AfterAll
    static void disconnect() {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        connectionFactory.destroy();
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3})
    void aTakeAheadOfThePreludeDecidesAndWritesAsTheFullScript(int limit) {
        ConcurrencyPolicy policy = new ConcurrencyPolicy("take", limit, Duration.ofSeconds(10));
        // the store's script, with the take and release ahead of the prelude, beside the same without the
        // take's (the release's keeps the key's expiry where concurrency.lua sets it from now, which
        // differs once a test clock runs ahead of Redis's)
        String fast = RedisThrottleScripts.of(policy).getScriptAsString();
        String full = RedisThrottleScripts.parameterLine(policy)
                + RedisThrottleScripts.text(RedisThrottleScripts.SLOT_RELEASE)
                + RedisThrottleScripts.text(RedisThrottleScripts.PRELUDE)
                + RedisThrottleScripts.text(RedisThrottleScripts.fileName(policy));
        assertThat(fast).contains("if ARGV[1] == 'a' then");
        redis.del(FAST, FULL);
        Random random = new Random(limit * 7919L);
        long now = START;
        List<String> receipts = new ArrayList<>();
        int takes = 0;
        int refusals = 0;
        try (RedisMonitor monitor = new RedisMonitor(SharedRedis.endpoint())) {
            for (int step = 0; step < 1500; step++) {
                now += advance(random);
                double what = random.nextDouble();
                String[] args;
                if (what < 0.6) {
                    args = new String[] {"a", "1", Long.toString(now), ""};
                } else if (what < 0.85) {
                    String receipt = (receipts.isEmpty() || random.nextInt(10) == 0)
                            ? Long.toString(now * 1000 + random.nextInt(5000))
                            : receipts.get(random.nextInt(receipts.size()));
                    args = new String[] {"r", "1", Long.toString(now), receipt};
                } else if (what < 0.88) {
                    args = new String[] {"r", "1", Long.toString(now), ""};
                } else if (what < 0.91) {
                    args = new String[] {"p", "1", Long.toString(now), ""};
                } else if (what < 0.97) {
                    leave(foreignState(random, now));
                    continue;
                } else {
                    redis.del(FAST, FULL);
                    continue;
                }
                List<Object> expected = redis.eval(full, ScriptOutputType.MULTI, new String[] {FULL}, args);
                List<Object> reply = redis.eval(fast, ScriptOutputType.MULTI, new String[] {FAST}, args);
                String at = "step " + step + " " + String.join(" ", args);
                assertThat(reply).as(at).isEqualTo(expected);
                assertThat(redis.type(FAST)).as(at).isEqualTo(redis.type(FULL));
                if (redis.type(FULL).equals("string")) {
                    assertThat(redis.get(FAST)).as(at).isEqualTo(redis.get(FULL));
                }
                assertThat(redis.pttl(FAST)).as(at).isCloseTo(redis.pttl(FULL), Offset.offset(50L));
                // the test clock runs far ahead of Redis's: a key forgotten is a step of its own (DEL
                // below), never one that expires between the two scripts' calls
                redis.persist(FAST);
                redis.persist(FULL);
                if (args[0].equals("a")) {
                    if ((Long) reply.get(0) == 1) {
                        takes++;
                        receipts.add(Long.toString((Long) reply.get(5)));
                    } else {
                        refusals++;
                    }
                }
            }
            redis.echo("end");
            monitor.awaitMarker("end");
            // every write the scripts made, with its expiry as written: the same on both keys
            assertThat(writes(monitor, FAST)).isEqualTo(writes(monitor, FULL)).hasSizeGreaterThan(250);
        }
        assertThat(takes).as("slots taken").isGreaterThan(200);
        assertThat(refusals).as("takes refused").isGreaterThan(20);
    }

    /**
     * Whether a monitored command is the call's own: not a marker, nor a script the store loads in the
     * background after it connects ({@code SCRIPT LOAD}, which may land between the markers).
     */
    private static boolean isTheCalls(RedisMonitor.Command command) {
        return !command.name().equals("ECHO") && !command.name().equals("SCRIPT");
    }

    /**
     * A take on Redis's own clock reads the key first and the time after (the full script reads the
     * time first): the order shows it ran ahead of the prelude, in one round trip, with the commands
     * it needs and no more. On state that is not a list of slots it hands over to the full script,
     * which reads the time once.
     */
    @Test
    void aTakeOnRedisTimeRunsAheadOfThePreludeInOneRoundTrip() {
        ConcurrencyPolicy two = new ConcurrencyPolicy("two", 2, Duration.ofSeconds(30));
        RedisEndpoint endpoint = SharedRedis.endpoint();
        try (RedisThrottleStore store = new RedisThrottleStore(connectionFactory, "conc", Duration.ofSeconds(2));
                RedisMonitor monitor = new RedisMonitor(endpoint)) {
            BoundPolicy slots = new Throttler(store, List.of(two)).bound("two");
            slots.reset("k");
            slots.tryAcquire("k", 1);
            redis.echo("start");
            monitor.awaitMarker("start");
            monitor.clear();
            Decision taken = slots.tryAcquire("k", 1);
            redis.echo("taken");
            monitor.awaitMarker("taken");
            assertThat(taken.allowed()).isTrue();
            assertThat(taken.remaining()).isZero();
            assertThat(monitor.commands().stream()
                            .filter(RedisSlotTakeTests::isTheCalls)
                            .map(RedisMonitor.Command::name))
                    .containsExactly("EVALSHA", "GET", "TIME", "SET");
            assertThat(redis.pttl("conc:{two:k}")).isBetween(29_000L, 30_000L);

            redis.set("conc:{two:k}", "3:1790000000000");
            redis.echo("left");
            monitor.awaitMarker("left");
            monitor.clear();
            Decision afterOther = slots.tryAcquire("k", 1);
            redis.echo("other");
            monitor.awaitMarker("other");
            assertThat(afterOther.allowed())
                    .as("another algorithm's state reads as no slots")
                    .isTrue();
            assertThat(afterOther.remaining()).isEqualTo(1);
            assertThat(monitor.commands().stream()
                            .filter(RedisSlotTakeTests::isTheCalls)
                            .map(RedisMonitor.Command::name))
                    .containsExactly("EVALSHA", "GET", "TIME", "GET", "SET");
        }
    }

    /** How far the clock moves before a step: mostly not at all or within a lease, at times past it. */
    private static long advance(Random random) {
        double how = random.nextDouble();
        if (how < 0.45) {
            return 0;
        }
        if (how < 0.8) {
            return 1 + random.nextInt(2000);
        }
        if (how < 0.95) {
            return 2000 + random.nextInt(7000);
        }
        return 9000 + random.nextInt(16_000);
    }

    /** State another writer may leave; null for a key of another Redis type. */
    private static String foreignState(Random random, long now) {
        long last = now * 1000 - random.nextInt(5_000_000);
        return switch (random.nextInt(9)) {
            case 0 -> "3:" + now;
            case 1 -> "C";
            case 2 -> "C" + id(last) + id(last + 5);
            case 3 -> "C" + "x".repeat(16) + id(last);
            case 4 -> "C" + id(last) + "y".repeat(16);
            case 5 -> "C" + id((now + (1L << 40)) * 1000) + id(last);
            case 6 -> "C" + id(last) + id(last - 9_000_000) + id(last - 2_000_000) + id(last);
            case 7 -> "C" + id(last) + id(last - 1) + id(last - 2) + id(last - 3) + id(last);
            default -> null;
        };
    }

    private static String id(long id) {
        return String.format("%016d", id);
    }

    /** The same state, with the same expiry, on both keys. */
    private static void leave(String state) {
        redis.del(FAST, FULL);
        for (String key : List.of(FAST, FULL)) {
            if (state == null) {
                redis.hset(key, "f", "v");
                redis.pexpire(key, 60_000);
            } else {
                redis.psetex(key, 60_000, state);
            }
        }
    }

    /** The writes scripts made on one key (a SET with its expiry, a DEL), with the key left out. */
    private static List<String> writes(RedisMonitor monitor, String key) {
        String quoted = "\"" + key + "\"";
        return monitor.commands().stream()
                .filter((command) -> !command.isTopLevel())
                .filter((command) ->
                        command.name().equals("SET") || command.name().equals("DEL"))
                .filter((command) -> command.args().contains(quoted))
                .map((command) -> command.name() + command.args().replace(quoted, "KEY"))
                .toList();
    }
}
