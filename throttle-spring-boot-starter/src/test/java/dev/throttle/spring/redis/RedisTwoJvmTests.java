package dev.throttle.spring.redis;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Exactness across processes: this JVM and a second one ({@link SecondJvmWorker}, spawned with the
 * test classpath), each with its own connection and many threads, on one key of one Redis, never
 * get one pass more than the policy allows, for every algorithm. Decisions use Redis time.
 */
@WithRedis
class RedisTwoJvmTests {

	static final int THREADS = 4;

	static final int CALLS_PER_THREAD = 300;

	/** No refill within a round: an hour-long period, so the quota is exactly what may pass. */
	static final List<Policy> POLICIES = List.of(TokenBucketPolicy.of("tb", 500, Duration.ofHours(1)),
			new GcraPolicy("gcra", 500, Duration.ofHours(1)), new FixedWindowPolicy("fw", 500, Duration.ofHours(1)),
			new SlidingLogPolicy("log", 10, Duration.ofHours(1), Duration.ofHours(1), 1.5),
			LockoutPolicy.of("lock", List.of(Duration.ofHours(1))));

	@Test
	void twoJvmsAndManyThreadsOnOneKeyNeverGetMoreThanTheQuota(RedisEndpoint endpoint) throws Exception {
		Path output = Files.createTempFile("second-jvm", ".log");
		String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
		Process second = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
				SecondJvmWorker.class.getName(), endpoint.host(), Integer.toString(endpoint.port()))
			.redirectErrorStream(true)
			.redirectOutput(output.toFile())
			.start();
		LettuceConnectionFactory factory = endpoint.newConnectionFactory();
		RedisClient client = endpoint.newClient();
		try (StatefulRedisConnection<String, String> connection = client.connect()) {
			RedisCommands<String, String> redis = connection.sync();
			RedisThrottleStore store = new RedisThrottleStore(factory, "throttle", Duration.ofSeconds(10));
			long passedInOtherJvm = 0;
			for (int round = 0; round < POLICIES.size(); round++) {
				Policy policy = POLICIES.get(round);
				Limiter limiter = store.limiter(policy);
				limiter.peek("warm-up");
				await(redis, "ready:" + round, second, output.toFile());
				redis.set("go:" + round, "1");
				long passedHere = SecondJvmWorker.hammer(limiter);
				String passedThere = await(redis, "passed:" + round, second, output.toFile());
				long total = passedHere + Long.parseLong(passedThere);
				assertThat(total).as(policy.name() + ": " + passedHere + " here + " + passedThere + " in the other JVM")
					.isEqualTo(policy.quota());
				passedInOtherJvm += Long.parseLong(passedThere);
				System.out.println(policy.name() + ": " + passedHere + " passes here, " + passedThere + " in the other JVM");
			}
			assertThat(passedInOtherJvm).as("the other JVM won some of the races").isPositive();
			assertThat(second.waitFor(60, TimeUnit.SECONDS)).isTrue();
			assertThat(second.exitValue()).as(Files.readString(output)).isZero();
		}
		finally {
			second.destroyForcibly();
			client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
			factory.destroy();
		}
	}

	private static String await(RedisCommands<String, String> redis, String key, Process second, File output)
			throws Exception {
		long deadline = System.currentTimeMillis() + 120_000;
		String value;
		while ((value = redis.get(key)) == null) {
			if (!second.isAlive() || System.currentTimeMillis() > deadline) {
				throw new AssertionError("second JVM gave no " + key + ": " + Files.readString(output.toPath()));
			}
			Thread.sleep(2);
		}
		return value;
	}

}
