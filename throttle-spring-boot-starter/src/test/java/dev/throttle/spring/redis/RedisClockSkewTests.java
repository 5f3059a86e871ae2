package dev.throttle.spring.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.LockoutPolicy;
import dev.throttle.TimeSource;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.RedisMonitor;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Clock skew between application servers changes nothing, because decisions are made on the Redis
 * server's clock.
 *
 * <p>The first test shows what skew would do if application clocks were used: two instances, one
 * 10 s ahead, sharing a 5 s window and a lockout, let through twice what the policy allows. The
 * second shows the production store never hands the application's clock to a script (every
 * {@code EVALSHA}'s {@code now} argument is empty, so the script reads {@code TIME}), stores Redis
 * times, and that two instances then decide as one.
 */
@WithRedis
class RedisClockSkewTests {

	private static final Duration SKEW = Duration.ofSeconds(10);

	private static final FixedWindowPolicy WINDOW = new FixedWindowPolicy("window", 3, Duration.ofSeconds(5));

	private static final LockoutPolicy LOCKOUT = LockoutPolicy.of("login", List.of(Duration.ofSeconds(5)));

	private static final Pattern ARGUMENT = Pattern.compile("\"((?:[^\"\\\\]|\\\\.)*)\"");

	private static LettuceConnectionFactory connectionFactory;

	@BeforeAll
	static void connect() {
		connectionFactory = SharedRedis.endpoint().newConnectionFactory();
	}

	@AfterAll
	static void disconnect() {
		connectionFactory.destroy();
	}

	@Test
	void hadApplicationClocksBeenUsedATenSecondSkewWouldLetTwiceTheQuotaThrough() {
		TimeSource accurate = System::currentTimeMillis;
		TimeSource ahead = () -> System.currentTimeMillis() + SKEW.toMillis();
		Limiter windowOnA = store(accurate).limiter(WINDOW);
		Limiter windowOnB = store(ahead).limiter(WINDOW);
		assertThat(passes(windowOnA, windowOnA)).isEqualTo(3);
		assertThat(passes(windowOnB, windowOnB)).as("B thinks A's window ended 5 s ago").isEqualTo(3);

		Limiter lockoutOnA = store(accurate).limiter(LOCKOUT);
		Limiter lockoutOnB = store(ahead).limiter(LOCKOUT);
		assertThat(lockoutOnA.tryAcquire("alice", 1).allowed()).isTrue();
		assertThat(lockoutOnB.tryAcquire("alice", 1).allowed()).as("B thinks the 5 s lockout is over").isTrue();
	}

	@Test
	void withRedisTimeAnInstanceWhoseClockIsOffDecidesExactlyLikeTheOthers(RedisEndpoint endpoint) {
		// production stores: no TimeSource at all; what an application's clock reads cannot reach a decision
		Limiter windowOnA = store(null).limiter(WINDOW);
		Limiter windowOnB = store(null).limiter(WINDOW);
		Limiter lockoutOnA = store(null).limiter(LOCKOUT);
		Limiter lockoutOnB = store(null).limiter(LOCKOUT);
		windowOnA.peek("warm-up");
		lockoutOnA.peek("warm-up");
		try (RedisMonitor monitor = new RedisMonitor(endpoint)) {
			echo(endpoint, "start");
			monitor.awaitMarker("start");
			monitor.clear();

			assertThat(passes(windowOnA, windowOnB)).as("one shared window").isEqualTo(3);
			Decision onA = windowOnA.tryAcquire("k", 1);
			Decision onB = windowOnB.tryAcquire("k", 1);
			assertThat(onA.allowed()).isFalse();
			assertThat(onB.allowed()).isFalse();
			assertThat(Math.abs(onA.retryAfterMillis() - onB.retryAfterMillis()))
				.as("both are told the same wait, from the same clock")
				.isLessThan(100);
			assertThat(lockoutOnA.tryAcquire("alice", 1).allowed()).isTrue();
			assertThat(lockoutOnB.tryAcquire("alice", 1).allowed()).isFalse();

			echo(endpoint, "end");
			monitor.awaitMarker("end");
			List<List<String>> evals = new ArrayList<>();
			for (RedisMonitor.Command command : monitor.commands()) {
				if (command.isTopLevel() && command.name().equals("EVALSHA")) {
					evals.add(arguments(command.args()));
				}
			}
			assertThat(evals).as("20 alternating calls, 2 refusals, 2 lockout calls").hasSize(24);
			// EVALSHA sha numkeys key op cost now ...: index 5 is now
			assertThat(evals).allSatisfy((args) -> assertThat(args.get(5)).as("now argument").isEmpty());
		}

		RedisClient client = endpoint.newClient();
		try (StatefulRedisConnection<String, String> connection = client.connect()) {
			RedisCommands<String, String> redis = connection.sync();
			List<String> time = redis.time();
			long redisNow = Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
			long windowStart = Long.parseLong(redis.get("throttle:{window:k}").split(":")[1]);
			assertThat(redisNow - windowStart).as("the window started at a Redis time, just now").isBetween(0L, 2_000L);
		}
		finally {
			client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
		}
	}

	/** Alternating calls on two instances until both are refused; returns the passes. */
	private static int passes(Limiter a, Limiter b) {
		int passes = 0;
		for (int i = 0; i < 10; i++) {
			passes += a.tryAcquire("k", 1).allowed() ? 1 : 0;
			passes += b.tryAcquire("k", 1).allowed() ? 1 : 0;
		}
		return passes;
	}

	private static RedisThrottleStore store(TimeSource clock) {
		return new RedisThrottleStore(connectionFactory, "throttle", Duration.ofSeconds(2), clock);
	}

	private static void echo(RedisEndpoint endpoint, String marker) {
		RedisClient client = endpoint.newClient();
		try (StatefulRedisConnection<String, String> connection = client.connect()) {
			connection.sync().echo(marker);
		}
		finally {
			client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
		}
	}

	private static List<String> arguments(String monitored) {
		List<String> arguments = new ArrayList<>();
		Matcher matcher = ARGUMENT.matcher(monitored);
		while (matcher.find()) {
			arguments.add(matcher.group(1));
		}
		return arguments;
	}

}
