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

/**
 * The Lua scripts of the Redis store, one per algorithm, loaded once from
 * {@code META-INF/throttle/scripts/*.lua} as singleton {@link RedisScript}s (so each SHA1 is
 * computed once). Every script takes one key and {@code ARGV = op, cost, now, policy parameters...}
 * with op {@code a} (acquire), {@code r} (refund) or {@code p} (peek), and returns
 * {@code {allowed, limit, remaining, retryAfterMillis, resetAfterMillis}} (empty for a refund).
 *
 * <p>Thread-safe: immutable after class initialization.
 */
public final class RedisThrottleScripts {

	/** Where the scripts live on the classpath. */
	public static final String LOCATION = "META-INF/throttle/scripts/";

	@SuppressWarnings("rawtypes")
	private static final Map<Algorithm, RedisScript<List>> SCRIPTS = load();

	private RedisThrottleScripts() {
	}

	/**
	 * Returns the script of an algorithm.
	 * @param algorithm the algorithm
	 * @return its script; the result type is {@code List} of {@code Long}
	 */
	@SuppressWarnings("rawtypes")
	public static RedisScript<List> of(Algorithm algorithm) {
		return SCRIPTS.get(algorithm);
	}

	/**
	 * Returns the resource name of an algorithm's script.
	 * @param algorithm the algorithm
	 * @return for example {@code token_bucket.lua}
	 */
	public static String fileName(Algorithm algorithm) {
		return algorithm.id().replace('-', '_') + ".lua";
	}

	@SuppressWarnings("rawtypes")
	private static Map<Algorithm, RedisScript<List>> load() {
		Map<Algorithm, RedisScript<List>> scripts = new EnumMap<>(Algorithm.class);
		for (Algorithm algorithm : Algorithm.values()) {
			ClassPathResource resource = new ClassPathResource(LOCATION + fileName(algorithm),
					RedisThrottleScripts.class.getClassLoader());
			// read once into a static source: a resource-backed script would stat the file on every SHA1 lookup
			try (InputStream in = resource.getInputStream()) {
				String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
				scripts.put(algorithm, RedisScript.of(text, List.class));
			}
			catch (IOException ex) {
				throw new UncheckedIOException("throttle: cannot read Lua script " + resource, ex);
			}
		}
		return scripts;
	}

}
