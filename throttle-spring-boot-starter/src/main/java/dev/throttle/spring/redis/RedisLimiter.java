package dev.throttle.spring.redis;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import reactor.core.publisher.Mono;

import org.springframework.data.redis.connection.ReactiveRedisConnection;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.script.RedisScript;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;

/**
 * One policy's keys in Redis, through the policy's own script (its numbers are part of the script's
 * text, see {@link RedisThrottleScripts}): a call sends the key, the operation, the cost, now (empty
 * on Redis time) and, for a refund of one call, that call's receipt. Thread-safe.
 */
final class RedisLimiter implements Limiter {

	private static final byte[] ACQUIRE = { 'a' };

	private static final byte[] REFUND = { 'r' };

	private static final byte[] PEEK = { 'p' };

	private static final byte[][] COSTS = new byte[65][];

	static {
		for (int cost = 0; cost < COSTS.length; cost++) {
			COSTS[cost] = ascii(Integer.toString(cost));
		}
	}

	private final RedisThrottleStore store;

	private final Policy policy;

	private final String sha1;

	private final byte[] scriptBytes;

	/** {@code <prefix>:{<policy>:} as text; a key completes it with {@code <key>}}. */
	private final String keyStart;

	private final Duration timeout;

	private final long waitNanos;

	RedisLimiter(RedisThrottleStore store, Policy policy) {
		this.store = store;
		this.policy = policy;
		@SuppressWarnings("rawtypes")
		RedisScript<List> script = RedisThrottleScripts.of(policy);
		this.sha1 = script.getSha1();
		this.scriptBytes = script.getScriptAsString().getBytes(StandardCharsets.UTF_8);
		this.keyStart = store.keyPrefix() + ":{" + policy.name() + ":";
		this.timeout = store.timeout();
		this.waitNanos = this.timeout.toNanos();
	}

	private static byte[] ascii(String text) {
		return text.getBytes(StandardCharsets.US_ASCII);
	}

	@Override
	public Policy policy() {
		return this.policy;
	}

	// The synchronous methods bound the call by waiting on its future for at most the timeout, and
	// cancel it (so Lettuce drops the command) when it has not answered by then: the same bound and
	// the same failure as the asynchronous methods' Reactor timeout, without its per-call cost (a task
	// scheduled and cancelled on Reactor's timer, and a description string built per subscription),
	// which was a third of the client's CPU per decision under 64 callers (benchmarks/README.md).

	@Override
	public Decision tryAcquire(String key, int cost) {
		if (cost > this.policy.maxCost()) {
			return Decision.neverAllowed(this.policy.quota());
		}
		return await(decide(key, ACQUIRE, cost).toFuture(), "tryAcquire");
	}

	@Override
	public void refund(String key, int cost) {
		await(run(key, REFUND, Math.min(cost, this.policy.maxCost())).toFuture(), "refund");
	}

	@Override
	public void refund(String key, int cost, long receipt) {
		if (receipt == 0) {
			refund(key, cost);
			return;
		}
		await(refundTaken(key, Math.min(cost, this.policy.maxCost()), receipt).toFuture(), "refund");
	}

	/** A call of several limits gives back to each limit by its own receipt (see several.lua). */
	@Override
	public void refund(String key, int cost, Decision taken) {
		if (taken.limitCount() == 1) {
			refund(key, cost, taken.receipt());
			return;
		}
		await(eval(key, REFUND, Math.min(cost, this.policy.maxCost()), RedisThrottleScripts.receipts(taken)).then().toFuture(), "refund");
	}

	@Override
	public CompletionStage<Void> refundAsync(String key, int cost, Decision taken) {
		if (taken.limitCount() == 1) {
			return refundAsync(key, cost, taken.receipt());
		}
		return bounded(eval(key, REFUND, Math.min(cost, this.policy.maxCost()), RedisThrottleScripts.receipts(taken)).then(), "refund")
			.toFuture();
	}

	@Override
	public Decision peek(String key) {
		return await(decide(key, PEEK, 1).toFuture(), "peek");
	}

	@Override
	public void reset(String key) {
		await(delete(key).toFuture(), "reset");
	}

	@Override
	public CompletionStage<Decision> tryAcquireAsync(String key, int cost) {
		if (cost > this.policy.maxCost()) {
			return CompletableFuture.completedFuture(Decision.neverAllowed(this.policy.quota()));
		}
		return bounded(decide(key, ACQUIRE, cost), "tryAcquire").toFuture();
	}

	@Override
	public CompletionStage<Void> refundAsync(String key, int cost) {
		return bounded(run(key, REFUND, Math.min(cost, this.policy.maxCost())), "refund").toFuture();
	}

	@Override
	public CompletionStage<Void> refundAsync(String key, int cost, long receipt) {
		if (receipt == 0) {
			return refundAsync(key, cost);
		}
		return bounded(refundTaken(key, Math.min(cost, this.policy.maxCost()), receipt), "refund").toFuture();
	}

	@Override
	public CompletionStage<Void> resetAsync(String key) {
		return bounded(delete(key), "reset").toFuture();
	}

	@Override
	public CompletionStage<Decision> peekAsync(String key) {
		return bounded(decide(key, PEEK, 1), "peek").toFuture();
	}

	/** The call's decision, unbounded: callers bound it with {@link #await} or {@link #bounded}. */
	private Mono<Decision> decide(String key, byte[] operation, int cost) {
		return eval(key, operation, cost, null).map(RedisLimiter::decision);
	}

	private Mono<Void> run(String key, byte[] operation, int cost) {
		return eval(key, operation, cost, null).then();
	}

	/** A refund of exactly what the call with {@code receipt} took: the receipt is the fourth argument. */
	private Mono<Void> refundTaken(String key, int cost, long receipt) {
		return eval(key, REFUND, cost, ascii(Long.toString(receipt))).then();
	}

	private Mono<Void> delete(String key) {
		ByteBuffer redisKey = keyBuffer(key);
		return this.store.connection().flatMap((connection) -> connection.keyCommands().del(redisKey)).then();
	}

	/** One EVALSHA (EVAL when Redis lost the script) of the policy's script; {@code receipt} may be null. */
	private Mono<List<Object>> eval(String key, byte[] operation, int cost, byte[] receipt) {
		byte[] keyBytes = (this.keyStart + key + "}").getBytes(StandardCharsets.UTF_8);
		ByteBuffer now = this.store.nowArgument();
		return this.store.connection()
			.flatMap((connection) -> evalSha(connection, keyBytes, operation, cost, now, receipt)
				.onErrorResume(RedisLimiter::isNoScript,
						(ex) -> connection.scriptingCommands()
							.<Object>eval(ByteBuffer.wrap(this.scriptBytes), ReturnType.MULTI, 1,
									keysAndArgs(keyBytes, operation, cost, now, receipt))
							.collectList()));
	}

	private Mono<List<Object>> evalSha(ReactiveRedisConnection connection, byte[] keyBytes, byte[] operation, int cost,
			ByteBuffer now, byte[] receipt) {
		return connection.scriptingCommands()
			.<Object>evalSha(this.sha1, ReturnType.MULTI, 1, keysAndArgs(keyBytes, operation, cost, now, receipt))
			.collectList();
	}

	private static ByteBuffer[] keysAndArgs(byte[] key, byte[] operation, int cost, ByteBuffer now, byte[] receipt) {
		ByteBuffer costArgument = ByteBuffer.wrap((cost < COSTS.length) ? COSTS[cost] : ascii(Integer.toString(cost)));
		if (receipt == null) {
			return new ByteBuffer[] { ByteBuffer.wrap(key), ByteBuffer.wrap(operation), costArgument, now.duplicate() };
		}
		return new ByteBuffer[] { ByteBuffer.wrap(key), ByteBuffer.wrap(operation), costArgument, now.duplicate(),
				ByteBuffer.wrap(receipt) };
	}

	/**
	 * The policy's script, for loading it ahead of the first call.
	 * @return the script's text as UTF-8
	 */
	byte[] scriptBytes() {
		return this.scriptBytes;
	}

	private ByteBuffer keyBuffer(String key) {
		return ByteBuffer.wrap((this.keyStart + key + "}").getBytes(StandardCharsets.UTF_8));
	}

	private <T> Mono<T> bounded(Mono<T> call, String operation) {
		return call.timeout(this.timeout)
			.onErrorMap((ex) -> !(ex instanceof RedisStoreException), (ex) -> failure(operation, ex));
	}

	private RedisStoreException failure(String operation, Throwable ex) {
		if (!(ex instanceof TimeoutException) && !(ex instanceof InterruptedException) && !isErrorReply(ex)) {
			this.store.connectionFailed();
		}
		String reason = (ex instanceof TimeoutException) ? "no answer within " + this.timeout.toMillis() + "ms"
				: String.valueOf(ex.getMessage());
		return new RedisStoreException(
				"Redis " + operation + " for throttle policy '" + this.policy.name() + "' failed: " + reason, ex);
	}

	private <T> T await(CompletableFuture<T> future, String operation) {
		try {
			return future.get(this.waitNanos, TimeUnit.NANOSECONDS);
		}
		catch (ExecutionException ex) {
			Throwable cause = ex.getCause();
			throw (cause instanceof RedisStoreException failure) ? failure : failure(operation, cause);
		}
		catch (TimeoutException ex) {
			future.cancel(true);
			throw failure(operation, ex);
		}
		catch (InterruptedException ex) {
			future.cancel(true);
			Thread.currentThread().interrupt();
			throw failure(operation, ex);
		}
	}

	/** Whether Redis answered with an error (the connection works; obtaining it again cannot help). */
	private static boolean isErrorReply(Throwable ex) {
		for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
			if (cause instanceof io.lettuce.core.RedisCommandExecutionException) {
				return true;
			}
		}
		return false;
	}

	private static boolean isNoScript(Throwable ex) {
		for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
			String message = cause.getMessage();
			if (message != null && message.contains("NOSCRIPT")) {
				return true;
			}
		}
		return false;
	}

	/**
	 * Turns a script's {@code {allowed, limit, remaining, wait, resetAfter, receipt}} into a decision:
	 * {@code wait} is a refusal's retry-after and an allowed call's time until its next unit.
	 */
	static Decision decision(List<Object> reply) {
		List<?> values = reply;
		if (values.size() == 1 && values.get(0) instanceof List<?> nested) {
			values = nested;
		}
		if (values.size() > 6 && values.size() % 6 == 0) {
			// several limits: six numbers per limit
			Decision[] parts = new Decision[values.size() / 6];
			for (int i = 0; i < parts.length; i++) {
				parts[i] = decision(values, 6 * i);
			}
			return Decision.ofLimits(parts);
		}
		if (values.size() != 6) {
			throw new IllegalStateException("unexpected script reply " + reply);
		}
		return decision(values, 0);
	}

	private static Decision decision(List<?> values, int at) {
		boolean allowed = number(values.get(at)) == 1;
		int limit = (int) number(values.get(at + 1));
		// never negative, whatever a script computed from state that other settings wrote
		int remaining = (int) Math.max(0, number(values.get(at + 2)));
		long wait = Math.max(0, number(values.get(at + 3)));
		long resetAfter = Math.max(0, number(values.get(at + 4)));
		long receipt = Math.max(0, number(values.get(at + 5)));
		return allowed ? Decision.allow(limit, remaining, resetAfter, wait, receipt)
				: Decision.reject(limit, remaining, wait, resetAfter);
	}

	private static long number(Object value) {
		if (value instanceof Number number) {
			return number.longValue();
		}
		if (value instanceof ByteBuffer buffer) {
			return Long.parseLong(StandardCharsets.US_ASCII.decode(buffer.duplicate()).toString());
		}
		if (value instanceof byte[] bytes) {
			return Long.parseLong(new String(bytes, StandardCharsets.US_ASCII));
		}
		return Long.parseLong(String.valueOf(value));
	}

}
