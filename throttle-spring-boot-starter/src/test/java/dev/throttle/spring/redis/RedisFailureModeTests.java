package dev.throttle.spring.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.LoggerFactory;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.TimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.RedisProcess;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each failure mode against a Redis that the test stops mid-traffic and starts again on the same
 * port: no call waits beyond the timeout (plus a margin for a busy 2-core machine), none throws,
 * the mode decides while Redis is away, one WARN per outage and one INFO when it is back, and Redis
 * decides again once it answers, without a restart.
 */
class RedisFailureModeTests {

	private static final Duration TIMEOUT = Duration.ofMillis(100);

	/** Scheduling slack on a 2-core machine shared with other builds; the bound is the timeout itself. */
	private static final long MARGIN_MILLIS = 400;

	private static final FixedWindowPolicy POLICY = new FixedWindowPolicy("login", 5, Duration.ofHours(1));

	private RedisProcess redis;

	private LettuceConnectionFactory connectionFactory;

	private ListAppender<ILoggingEvent> logs;

	private final AtomicInteger reportedFailures = new AtomicInteger();

	private final ConcurrentLinkedQueue<Throwable> reportedErrors = new ConcurrentLinkedQueue<>();

	@BeforeEach
	void startRedis() {
		this.redis = RedisProcess.startStandalone();
		this.connectionFactory = this.redis.endpoint().newConnectionFactory();
		this.logs = new ListAppender<>();
		this.logs.start();
		// every logger of the starter, not only the store's: none may name a key
		((Logger) LoggerFactory.getLogger("dev.throttle")).addAppender(this.logs);
	}

	@AfterEach
	void stopRedis() {
		((Logger) LoggerFactory.getLogger("dev.throttle")).detachAppender(this.logs);
		this.connectionFactory.destroy();
		this.redis.stop();
	}

	private ResilientThrottleStore store(FailureMode mode) throws InterruptedException {
		RedisThrottleStore redisStore = new RedisThrottleStore(this.connectionFactory, "throttle", TIMEOUT);
		ResilientThrottleStore store = new ResilientThrottleStore(redisStore, mode,
				new MemoryThrottleStore(TimeSource.system(), 10_000), (policy, operation, error) -> {
					this.reportedFailures.incrementAndGet();
					this.reportedErrors.add(error);
				});
		warmUp(store);
		return store;
	}

	/**
	 * Runs calls until 20 in a row get their answer from Redis: a cold JVM on a busy 2-core machine
	 * (class loading, JIT, the script's first EVAL) can miss a 100 ms timeout, which is not what
	 * these tests are about. Then forgets the logs and failures that warming up caused.
	 */
	private void warmUp(ResilientThrottleStore store) throws InterruptedException {
		Limiter limiter = store.limiter(POLICY);
		long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
		int answered = 0;
		while (answered < 20 && System.nanoTime() < deadline) {
			int before = this.reportedFailures.get();
			limiter.peek("warm-up");
			limiter.tryAcquireAsync("warm-up", 1).toCompletableFuture().join();
			limiter.refund("warm-up", 1);
			answered = (this.reportedFailures.get() == before && !store.isStoreDown()) ? answered + 1 : 0;
			Thread.sleep(answered == 0 ? 50 : 0);
		}
		assertThat(answered).as("Redis answers steadily before the test").isEqualTo(20);
		this.logs.list.clear();
		this.reportedFailures.set(0);
		this.reportedErrors.clear();
	}

	/**
	 * One WARN when an outage starts and one INFO when it ends, never one per request. A first call
	 * after the restart can miss the 100 ms timeout on a loaded 2-core machine, which is a second
	 * (short) outage and rightly logged as one; so the log must be WARN/INFO pairs, few of them,
	 * while many calls failed.
	 */
	private void assertOneWarnPerOutage() {
		assertWarnInfoPairs(1);
		assertThat(this.reportedFailures.get()).as("failed calls, each answered by the failure mode")
			.isGreaterThan(levels().size());
	}

	private void assertWarnInfoPairs(int outages) {
		List<Level> levels = levels();
		assertThat(levels).as("log levels").hasSizeBetween(2 * outages, 2 * outages + 4);
		for (int i = 0; i < levels.size(); i++) {
			assertThat(levels.get(i)).as("entry " + i + " of " + levels).isEqualTo((i % 2 == 0) ? Level.WARN : Level.INFO);
		}
		assertThat(levels).as("ends with Redis back").endsWith(Level.INFO);
	}

	@ParameterizedTest
	@EnumSource(FailureMode.class)
	void redisStoppedMidTrafficAndStartedAgain(FailureMode mode) throws Exception {
		ResilientThrottleStore store = store(mode);
		Limiter limiter = store.limiter(POLICY);
		for (int i = 0; i < 5; i++) {
			assertThat(limiter.tryAcquire("alice", 1).allowed()).isTrue();
		}
		assertThat(limiter.tryAcquire("alice", 1).allowed()).as("Redis holds alice's state").isFalse();

		try (Traffic traffic = new Traffic(limiter, 4)) {
			Thread.sleep(300);
			this.redis.stop();
			Thread.sleep(500);

			// while Redis is away: the mode decides, promptly, without throwing
			switch (mode) {
				case OPEN -> {
					assertThat(timed(() -> limiter.tryAcquire("alice", 1))).isEqualTo(Decision.allow(5, 5, 0));
					assertThat(timed(() -> limiter.peek("alice")).allowed()).isTrue();
				}
				case CLOSED -> {
					Decision refused = timed(() -> limiter.tryAcquire("bob", 1));
					assertThat(refused.allowed()).isFalse();
					assertThat(refused.retryAfterSeconds()).isEqualTo(1);
					assertThat(timed(() -> limiter.peek("bob")).allowed()).isFalse();
				}
				case LOCAL -> {
					for (int i = 0; i < 5; i++) {
						assertThat(timed(() -> limiter.tryAcquire("alice", 1)).allowed()).as("local pass " + i).isTrue();
					}
					assertThat(timed(() -> limiter.tryAcquire("alice", 1)).allowed())
						.as("this instance still enforces the limit on its own")
						.isFalse();
				}
			}
			timed(() -> {
				limiter.refund("alice", 1);
				limiter.reset("carol");
				return null;
			});
			assertThat(store.isStoreDown()).isTrue();
			Thread.sleep(700);

			this.redis.start();
			awaitRedisDecides(store, limiter);
			Thread.sleep(200);
			traffic.stop();

			assertThat(traffic.errors).as("no call threw").isEmpty();
			assertThat(traffic.calls.get()).isGreaterThan(20);
			assertThat(traffic.maxMillis.get()).as("slowest call, ms").isLessThanOrEqualTo(TIMEOUT.toMillis() + MARGIN_MILLIS);
		}

		// Redis came back empty (no persistence): it decides again, and nothing timed out was replayed into it
		for (int i = 0; i < 5; i++) {
			assertThat(limiter.tryAcquire("dave", 1).allowed()).isTrue();
		}
		assertThat(limiter.tryAcquire("dave", 1).allowed()).isFalse();
		assertThat(rawGet("throttle:{login:dave}")).startsWith("5:");
		assertThat(rawGet("throttle:{login:alice}")).as("no call made during the outage reached Redis later").isNull();

		assertOneWarnPerOutage();
		assertThat(this.logs.list).as("log lines at INFO and above").allSatisfy((event) -> assertThat(
				event.getFormattedMessage()
				+ ((event.getThrowableProxy() != null) ? ThrowableProxyUtil.asString(event.getThrowableProxy()) : ""))
			.doesNotContain("alice", "bob", "carol", "dave", "traffic-"));
		assertThat(this.reportedFailures.get()).isPositive();
		assertThat(this.reportedErrors).allSatisfy((error) -> assertThat(error)
			.isInstanceOfAny(RedisStoreException.class, StoreUnavailableException.class));
	}

	@Test
	void twoOutagesLogTwice() throws Exception {
		ResilientThrottleStore store = store(FailureMode.OPEN);
		Limiter limiter = store.limiter(POLICY);
		for (int outage = 0; outage < 2; outage++) {
			limiter.tryAcquire("k", 1);
			this.redis.stop();
			for (int i = 0; i < 20; i++) {
				timed(() -> limiter.tryAcquire("k", 1));
			}
			this.redis.start();
			awaitRedisDecides(store, limiter);
		}
		assertWarnInfoPairs(2);
	}

	@Test
	void redisDownAtStartupIsNotAFailureAndIsUsedOnceItIsUp() throws Exception {
		int port = RedisProcess.freePort(false);
		LettuceConnectionFactory absent = RedisEndpoint.of("127.0.0.1", port).newConnectionFactory();
		try (RedisProcess late = new RedisProcess(port, List.of())) {
			ResilientThrottleStore store = new ResilientThrottleStore(
					new RedisThrottleStore(absent, "throttle", TIMEOUT), FailureMode.LOCAL,
					new MemoryThrottleStore(TimeSource.system(), 100), null);
			store(FailureMode.OPEN); // warms this JVM up against the running Redis
			Limiter limiter = store.limiter(POLICY);
			for (int i = 0; i < 5; i++) {
				assertThat(timed(() -> limiter.tryAcquire("k", 1)).allowed()).isTrue();
			}
			assertThat(timed(() -> limiter.tryAcquire("k", 1)).allowed()).isFalse();
			assertThat(store.isStoreDown()).isTrue();
			late.start();
			awaitRedisDecides(store, limiter);
			assertThat(limiter.tryAcquire("k", 1).remaining()).as("Redis's fresh window, not the local one").isEqualTo(4);
		}
		finally {
			absent.destroy();
		}
	}

	@Test
	void theNonBlockingApiFallsBackToo() throws Exception {
		ResilientThrottleStore store = store(FailureMode.CLOSED);
		Limiter limiter = store.limiter(POLICY);
		assertThat(limiter.tryAcquireAsync("k", 1).toCompletableFuture().get().allowed()).isTrue();
		this.redis.stop();
		long start = System.nanoTime();
		Decision decision = limiter.tryAcquireAsync("k", 1).toCompletableFuture().get();
		assertThat(Duration.ofNanos(System.nanoTime() - start).toMillis()).isLessThanOrEqualTo(TIMEOUT.toMillis() + MARGIN_MILLIS);
		assertThat(decision.allowed()).isFalse();
		assertThat(limiter.refundAsync("k", 1).toCompletableFuture().get()).isNull();
		assertThat(limiter.resetAsync("k").toCompletableFuture().get()).isNull();
		this.redis.start();
		long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
		while (store.isStoreDown() && System.nanoTime() < deadline) {
			limiter.tryAcquireAsync("k", 1).toCompletableFuture().get();
			Thread.sleep(20);
		}
		assertThat(store.isStoreDown()).isFalse();
		assertWarnInfoPairs(1);
	}

	/** Calls until a probe finds Redis answering again (Lettuce reconnects within 200 ms here). */
	private static void awaitRedisDecides(ResilientThrottleStore store, Limiter limiter) throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
		while (store.isStoreDown() && System.nanoTime() < deadline) {
			timed(() -> limiter.peek("probe"));
			Thread.sleep(20);
		}
		assertThat(store.isStoreDown()).as("Redis is used again within 15 s of answering").isFalse();
	}

	private List<Level> levels() {
		List<Level> levels = new ArrayList<>();
		for (ILoggingEvent event : this.logs.list) {
			if (event.getLevel().isGreaterOrEqual(Level.INFO)) {
				levels.add(event.getLevel());
			}
		}
		return levels;
	}

	private String rawGet(String key) {
		RedisClient client = this.redis.endpoint().newClient();
		try (StatefulRedisConnection<String, String> connection = client.connect()) {
			return connection.sync().get(key);
		}
		finally {
			client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
		}
	}

	private static <T> T timed(java.util.function.Supplier<T> call) {
		long start = System.nanoTime();
		T result = call.get();
		long millis = Duration.ofNanos(System.nanoTime() - start).toMillis();
		assertThat(millis).as("call duration, ms").isLessThanOrEqualTo(TIMEOUT.toMillis() + MARGIN_MILLIS);
		return result;
	}

	/** Threads calling the limiter in a loop on their own keys, timing every call. */
	private static final class Traffic implements AutoCloseable {

		final AtomicBoolean running = new AtomicBoolean(true);

		final AtomicLong maxMillis = new AtomicLong();

		final AtomicLong calls = new AtomicLong();

		final ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();

		private final List<Thread> threads = new ArrayList<>();

		Traffic(Limiter limiter, int threadCount) {
			for (int t = 0; t < threadCount; t++) {
				int thread = t;
				Thread worker = new Thread(() -> {
					int i = 0;
					while (this.running.get()) {
						long start = System.nanoTime();
						try {
							limiter.tryAcquire("traffic-" + thread + "-" + (i++ % 50), 1);
						}
						catch (Throwable ex) {
							this.errors.add(ex);
						}
						long millis = Duration.ofNanos(System.nanoTime() - start).toMillis();
						this.maxMillis.accumulateAndGet(millis, Math::max);
						this.calls.incrementAndGet();
						try {
							Thread.sleep(2);
						}
						catch (InterruptedException ex) {
							return;
						}
					}
				}, "traffic-" + t);
				worker.start();
				this.threads.add(worker);
			}
		}

		void stop() throws InterruptedException {
			this.running.set(false);
			for (Thread thread : this.threads) {
				thread.join(5_000);
			}
		}

		@Override
		public void close() throws InterruptedException {
			stop();
		}

	}

}
