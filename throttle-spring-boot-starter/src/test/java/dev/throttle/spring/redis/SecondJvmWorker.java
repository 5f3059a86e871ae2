package dev.throttle.spring.redis;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.testing.redis.RedisEndpoint;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The second application instance of {@link RedisTwoJvmTests}: a separate JVM with its own
 * connection factory and store, on the same Redis keys. It reports through Redis keys (which the
 * test also uses to start each round together) and its exit code: 0 when every round ran, 1 with
 * the stack trace in its output otherwise. It writes nothing of its own to standard output.
 *
 * <p>{@link Mode#RACE}: for each round it announces {@code ready:<round>}, waits for
 * {@code go:<round>}, runs its threads on the key {@value #HOT} and reports its tally in
 * {@code tally:<round>}. {@link Mode#FIRST}: for each round it takes {@link #firstShare} of the
 * quota on the key {@value #SPLIT}, one call after another, reports its tally in
 * {@code first:<round>}, and exits.
 */
public final class SecondJvmWorker {

    /** The key both JVMs race on. */
    static final String HOT = "hot";

    /** The key this JVM takes from first, and the test's JVM after it. */
    static final String SPLIT = "split";

    private SecondJvmWorker() {}

    /** What the worker does in each round. */
    enum Mode {

        /** Race the test's JVM on one key. */
        RACE,

        /** Take part of the quota before the test's JVM asks. */
        FIRST
    }

    /**
     * Runs the rounds.
     * @param args host, port, mode
     * @throws Exception on failure (the parent sees the exit code and the output)
     */
    public static void main(String[] args) throws Exception {
        RedisEndpoint endpoint = RedisEndpoint.of(args[0], Integer.parseInt(args[1]));
        Mode mode = Mode.valueOf(args[2]);
        LettuceConnectionFactory factory = endpoint.newConnectionFactory();
        RedisClient client = endpoint.newClient();
        try (StatefulRedisConnection<String, String> connection = client.connect();
                RedisThrottleStore store = new RedisThrottleStore(factory, "throttle", Duration.ofSeconds(10))) {
            RedisCommands<String, String> redis = connection.sync();
            List<Policy> policies = RedisTwoJvmTests.POLICIES;
            for (int round = 0; round < policies.size(); round++) {
                Limiter limiter = store.limiter(policies.get(round));
                if (mode == Mode.FIRST) {
                    redis.set(
                            "first:" + round,
                            take(limiter, SPLIT, firstShare(limiter.policy())).toString());
                    continue;
                }
                limiter.peek("warm-up");
                redis.set("ready:" + round, "1");
                long deadline = System.currentTimeMillis() + 60_000;
                while (redis.exists("go:" + round) == 0) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("no go for round " + round);
                    }
                    Thread.sleep(1);
                }
                redis.set("tally:" + round, hammer(limiter, HOT).toString());
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            factory.destroy();
        }
        // Lettuce's and Reactor's threads would keep the JVM alive for a while
        System.exit(0);
    }

    /**
     * What the first JVM takes of a policy's quota: half, rounded up (a lockout's one pass).
     * @param policy the policy
     * @return the calls it makes, each of which passes
     */
    static int firstShare(Policy policy) {
        return (policy.quota() + 1) / 2;
    }

    /** Makes {@code calls} calls on {@code key}, one after another. */
    static Tally take(Limiter limiter, String key, int calls) {
        long passes = 0;
        for (int i = 0; i < calls; i++) {
            passes += limiter.tryAcquire(key, 1).allowed() ? 1 : 0;
        }
        return new Tally(passes, calls - passes);
    }

    /**
     * Runs the threads of one instance on {@code key}, each making
     * {@link RedisTwoJvmTests#CALLS_PER_THREAD} calls. A call that fails fails the whole run: it
     * is never counted as a refusal.
     */
    static Tally hammer(Limiter limiter, String key) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(RedisTwoJvmTests.THREADS);
        try {
            List<Future<Tally>> results = new ArrayList<>();
            for (int t = 0; t < RedisTwoJvmTests.THREADS; t++) {
                Callable<Tally> task = () -> take(limiter, key, RedisTwoJvmTests.CALLS_PER_THREAD);
                results.add(pool.submit(task));
            }
            Tally total = new Tally(0, 0);
            for (Future<Tally> result : results) {
                total = total.plus(result.get());
            }
            return total;
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Calls that passed and calls that were refused, as {@code <passes>/<refusals>} in Redis.
     *
     * @param passes calls whose {@link Decision#allowed()} was true
     * @param refusals calls refused
     */
    record Tally(long passes, long refusals) {

        static Tally parse(String text) {
            String[] parts = text.split("/");
            return new Tally(Long.parseLong(parts[0]), Long.parseLong(parts[1]));
        }

        long calls() {
            return this.passes + this.refusals;
        }

        Tally plus(Tally other) {
            return new Tally(this.passes + other.passes, this.refusals + other.refusals);
        }

        @Override
        public String toString() {
            return this.passes + "/" + this.refusals;
        }
    }
}
