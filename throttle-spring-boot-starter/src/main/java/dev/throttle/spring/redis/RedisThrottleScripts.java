package dev.throttle.spring.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.core.script.RedisScript;

import dev.throttle.Algorithm;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TokenBucketPolicy;

/**
 * The Lua scripts of the Redis store. Each algorithm's body is read once from
 * {@code META-INF/throttle/scripts/*.lua}; a policy's script is that body behind one line that
 * holds the policy's numbers, {@code local P = {...}}, so each call sends only what changes per
 * call: one key and {@code ARGV = op, cost, now}, with op {@code a} (acquire), {@code r} (refund)
 * or {@code p} (peek). A script returns {@code {allowed, limit, remaining, retryAfterMillis,
 * resetAfterMillis}} (empty for a refund).
 *
 * <p>Why the numbers are in the script rather than in ARGV: Redis turns every argument of every
 * call into a Lua string, and the script turned it back into a number; for a token bucket that
 * was half the arguments, for a lockout ladder most of them. In the script they are parsed once,
 * when Redis compiles it. A policy's script, and so its SHA1, is built once per store and policy.
 *
 * <p>Thread-safe: immutable after class initialization.
 */
public final class RedisThrottleScripts {

	/** Where the scripts live on the classpath. */
	public static final String LOCATION = "META-INF/throttle/scripts/";

	private static final Map<Algorithm, String> BODIES = load();

	private RedisThrottleScripts() {
	}

	/**
	 * Returns the script of a policy: its algorithm's body, with the policy's numbers.
	 * @param policy the policy
	 * @return its script; the result type is {@code List} of {@code Long}
	 */
	@SuppressWarnings("rawtypes")
	public static RedisScript<List> of(Policy policy) {
		return RedisScript.of(parameterLine(policy) + BODIES.get(policy.algorithm()), List.class);
	}

	/**
	 * Returns the resource name of an algorithm's script.
	 * @param algorithm the algorithm
	 * @return for example {@code token_bucket.lua}
	 */
	public static String fileName(Algorithm algorithm) {
		return algorithm.id().replace('-', '_') + ".lua";
	}

	/**
	 * The line before a script's body: {@code local P = {...}} with the numbers each script's
	 * header documents, as Lua integer literals (all below 2^53, so exact in Lua's doubles).
	 */
	static String parameterLine(Policy policy) {
		return "local P = {" + String.join(", ", numbers(policy)) + "}\n";
	}

	private static List<String> numbers(Policy policy) {
		if (policy instanceof TokenBucketPolicy tokenBucket) {
			return decimals(tokenBucket.capacity(), tokenBucket.refillTokens(), tokenBucket.refillPeriod().toMillis());
		}
		if (policy instanceof GcraPolicy gcra) {
			return decimals(gcra.limit(), gcra.emissionIntervalMicros(), gcra.toleranceMicros());
		}
		if (policy instanceof FixedWindowPolicy fixedWindow) {
			return decimals(fixedWindow.limit(), fixedWindow.window().toMillis());
		}
		if (policy instanceof SlidingLogPolicy slidingLog) {
			long[] delays = slidingLog.delaysMillis();
			long[] values = new long[3 + delays.length];
			values[0] = slidingLog.threshold();
			values[1] = slidingLog.ttl().toMillis();
			values[2] = slidingLog.maxEntries();
			System.arraycopy(delays, 0, values, 3, delays.length);
			return decimals(values);
		}
		if (policy instanceof LockoutPolicy lockout) {
			long[] timeouts = lockout.timeoutsMillis();
			long[] values = new long[1 + timeouts.length];
			values[0] = lockout.expireAfter().toMillis();
			System.arraycopy(timeouts, 0, values, 1, timeouts.length);
			return decimals(values);
		}
		throw new IllegalArgumentException("unsupported policy " + policy);
	}

	private static List<String> decimals(long... values) {
		String[] decimals = new String[values.length];
		for (int i = 0; i < values.length; i++) {
			decimals[i] = Long.toString(values[i]);
		}
		return List.of(decimals);
	}

	private static Map<Algorithm, String> load() {
		Map<Algorithm, String> bodies = new EnumMap<>(Algorithm.class);
		for (Algorithm algorithm : Algorithm.values()) {
			ClassPathResource resource = new ClassPathResource(LOCATION + fileName(algorithm),
					RedisThrottleScripts.class.getClassLoader());
			// read once into a static source: a resource-backed script would stat the file on every SHA1 lookup
			try (InputStream in = resource.getInputStream()) {
				bodies.put(algorithm, new String(in.readAllBytes(), StandardCharsets.UTF_8));
			}
			catch (IOException ex) {
				throw new UncheckedIOException("throttle: cannot read Lua script " + resource, ex);
			}
		}
		return bodies;
	}

}
