package dev.throttle.spring.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.testing.redis.RedisEndpoint;

/**
 * The second application instance of {@link RedisTwoJvmTests}: a separate JVM with its own
 * connection factory and store, hammering the same Redis keys. For each round it announces
 * {@code ready:<round>}, waits for {@code go:<round>}, runs its threads and reports its passes in
 * {@code passed:<round>}.
 */
public final class SecondJvmWorker {

	private SecondJvmWorker() {
	}

	/**
	 * Runs the rounds.
	 * @param args host, port
	 * @throws Exception on failure (the parent sees the exit code)
	 */
	public static void main(String[] args) throws Exception {
		RedisEndpoint endpoint = RedisEndpoint.of(args[0], Integer.parseInt(args[1]));
		LettuceConnectionFactory factory = endpoint.newConnectionFactory();
		RedisClient client = endpoint.newClient();
		try (StatefulRedisConnection<String, String> connection = client.connect()) {
			RedisCommands<String, String> redis = connection.sync();
			RedisThrottleStore store = new RedisThrottleStore(factory, "throttle", Duration.ofSeconds(10));
			List<Policy> policies = RedisTwoJvmTests.POLICIES;
			for (int round = 0; round < policies.size(); round++) {
				Limiter limiter = store.limiter(policies.get(round));
				limiter.peek("warm-up");
				redis.set("ready:" + round, "1");
				long deadline = System.currentTimeMillis() + 60_000;
				while (redis.exists("go:" + round) == 0) {
					if (System.currentTimeMillis() > deadline) {
						throw new IllegalStateException("no go for round " + round);
					}
					Thread.sleep(1);
				}
				redis.set("passed:" + round, Long.toString(hammer(limiter)));
			}
		}
		finally {
			client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
			factory.destroy();
		}
		System.exit(0);
	}

	/** Runs the threads of one instance on the hot key. */
	static long hammer(Limiter limiter) throws Exception {
		ExecutorService pool = Executors.newFixedThreadPool(RedisTwoJvmTests.THREADS);
		try {
			List<Future<Long>> results = new ArrayList<>();
			for (int t = 0; t < RedisTwoJvmTests.THREADS; t++) {
				Callable<Long> task = () -> {
					long passed = 0;
					for (int i = 0; i < RedisTwoJvmTests.CALLS_PER_THREAD; i++) {
						passed += limiter.tryAcquire("hot", 1).allowed() ? 1 : 0;
					}
					return passed;
				};
				results.add(pool.submit(task));
			}
			long total = 0;
			for (Future<Long> result : results) {
				total += result.get();
			}
			return total;
		}
		finally {
			pool.shutdownNow();
		}
	}

}
