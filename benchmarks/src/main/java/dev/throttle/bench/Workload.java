package dev.throttle.bench;

import dev.throttle.FixedWindowPolicy;
import dev.throttle.GcraPolicy;
import dev.throttle.LockoutPolicy;
import dev.throttle.Policy;
import dev.throttle.SlidingLogPolicy;
import dev.throttle.TokenBucketPolicy;
import io.github.bucket4j.BucketConfiguration;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;

/**
 * What every benchmark shares: the key sequences and "the same limit" for each implementation.
 *
 * <p>The limit is an API-style one, 100 calls per second per key with a burst of 100, written in
 * each algorithm's own terms; Bucket4j gets the token bucket's exact parameters (capacity 100, one
 * token per 10 ms, refilled intervally). On one hot key almost every call is therefore refused (the
 * abuser case); on 100,000 Zipf keys the head keys are refused and the long tail is allowed. Each
 * result reports the allowed share, so both paths are visible.
 */
public final class Workload {

    /** Distinct keys of the Zipf workload. */
    public static final int ZIPF_KEYS = 100_000;

    /** Zipf exponent: YCSB's default constant, as Caffeine's own benchmarks use. */
    public static final double ZIPF_EXPONENT = 0.99;

    /** Length of every precomputed key sequence (a power of two, so a cursor wraps with a mask). */
    public static final int SEQUENCE_LENGTH = 1 << 20;

    /**
     * The limit regimes. {@code api}: 100 calls per second per key, burst 100 (an API-style limit: a
     * hot key is refused almost always). {@code high}: 1,000,000 per second, burst 1,000,000 (every
     * Redis decision and every Zipf decision in memory is allowed and writes; a hot key in memory
     * still outruns it). Lockout and sliding log have no {@code high} form: their rungs and delays are
     * whole milliseconds.
     */
    public static final List<String> REGIMES = List.of("api", "high");

    /** How long a key takes to get back to neutral in either regime: the idle expiry of every cache. */
    public static final Duration IDLE = Duration.ofSeconds(1);

    /**
     * Calls per second (and burst) in a regime.
     * @param regime api or high
     * @return the limit
     */
    public static int limit(String regime) {
        return switch (regime) {
            // the abuser's regime: 10 calls a minute, so a key over it is refused for up to 6 s at a time
            case "abuse" -> 10;
            case "api" -> 100;
            case "high" -> 1_000_000;
            default -> throw new IllegalArgumentException("unknown regime " + regime);
        };
    }

    /**
     * Token-bucket refill in a regime: tokens added per {@link #refillPeriod(String)}, so that the
     * bucket refills {@link #limit(String)} tokens per second.
     * @param regime api or high
     * @return tokens per refill
     */
    public static int refillTokens(String regime) {
        return regime.equals("api") ? 1 : 1_000;
    }

    /**
     * Token-bucket refill period in a regime.
     * @param regime api or high
     * @return 10 ms (api) or 1 ms (high)
     */
    public static Duration refillPeriod(String regime) {
        return regime.equals("api") ? Duration.ofMillis(10) : Duration.ofMillis(1);
    }

    /** The policy name used everywhere. */
    public static final String POLICY = "bench";

    private Workload() {}

    /** Algorithms of this project, by their configuration names. */
    public static final List<String> ALGORITHMS =
            List.of("token-bucket", "gcra", "fixed-window", "lockout", "sliding-log");

    /**
     * The policy for an algorithm in a regime.
     * @param algorithm a configuration name
     * @param regime api or high
     * @return the policy
     */
    public static Policy policy(String algorithm, String regime) {
        int limit = limit(regime);
        boolean api = regime.equals("api");
        return switch (algorithm) {
            case "token-bucket" -> new TokenBucketPolicy(POLICY, limit, refillTokens(regime), refillPeriod(regime));
            case "gcra" ->
                new GcraPolicy(POLICY, limit, regime.equals("abuse") ? Duration.ofMinutes(1) : Duration.ofSeconds(1));
            case "fixed-window" -> new FixedWindowPolicy(POLICY, limit, Duration.ofSeconds(1));
            // a ladder that starts at the api token period and doubles; forgotten after a second idle
            case "lockout" ->
                api
                        ? new LockoutPolicy(
                                POLICY,
                                List.of(
                                        Duration.ofMillis(10),
                                        Duration.ofMillis(20),
                                        Duration.ofMillis(40),
                                        Duration.ofMillis(80),
                                        Duration.ofMillis(160)),
                                IDLE)
                        : unsupported(algorithm, regime);
            // 100 attempts per second, then metabase's growing delay starting at the api token period
            case "sliding-log" ->
                api
                        ? new SlidingLogPolicy(POLICY, limit, IDLE, Duration.ofMillis(10), 1.5)
                        : unsupported(algorithm, regime);
            default -> throw new IllegalArgumentException("unknown algorithm " + algorithm);
        };
    }

    private static Policy unsupported(String algorithm, String regime) {
        throw new IllegalArgumentException(algorithm + " has no '" + regime + "' regime");
    }

    /**
     * Bucket4j's configuration of the token bucket's limit in a regime: the same capacity, the same
     * tokens per period, refilled intervally (whole tokens per elapsed period, as ours).
     * @param regime api or high
     * @return the configuration
     */
    public static BucketConfiguration bucket4jConfiguration(String regime) {
        return BucketConfiguration.builder()
                .addLimit((limit) ->
                        limit.capacity(limit(regime)).refillIntervally(refillTokens(regime), refillPeriod(regime)))
                .build();
    }

    /**
     * The key of rank {@code i}.
     * @param i from 0
     * @return a key like a user id
     */
    public static String key(int i) {
        return "user-" + i + "@example.com";
    }

    /**
     * A key sequence: {@code hot} (one key, repeated) or {@code zipf} ({@link #ZIPF_KEYS} keys drawn
     * with exponent {@link #ZIPF_EXPONENT}, ranks scattered over the key space).
     * @param kind hot or zipf
     * @param seed random seed (the same seed gives the same sequence)
     * @return {@link #SEQUENCE_LENGTH} keys; the strings are shared, so their hashes are cached
     */
    public static String[] sequence(String kind, long seed) {
        String[] sequence = new String[SEQUENCE_LENGTH];
        if (kind.equals("hot")) {
            String hot = key(0);
            java.util.Arrays.fill(sequence, hot);
            return sequence;
        }
        if (!kind.equals("zipf") && !kind.equals("zipf10k")) {
            throw new IllegalArgumentException("unknown key distribution " + kind);
        }
        String[] keys = distinctKeys(kind);
        int distinct = keys.length;
        SplittableRandom random = new SplittableRandom(seed);
        // rank r (0-based) gets key permutation[r], so hot keys are not neighbours in memory
        int[] permutation = new int[distinct];
        for (int i = 0; i < distinct; i++) {
            permutation[i] = i;
        }
        for (int i = distinct - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = permutation[i];
            permutation[i] = permutation[j];
            permutation[j] = t;
        }
        double[] cumulative = new double[distinct];
        double sum = 0;
        for (int r = 0; r < distinct; r++) {
            sum += 1.0 / Math.pow(r + 1, ZIPF_EXPONENT);
            cumulative[r] = sum;
        }
        for (int i = 0; i < SEQUENCE_LENGTH; i++) {
            double u = random.nextDouble() * sum;
            int rank = java.util.Arrays.binarySearch(cumulative, u);
            rank = (rank >= 0) ? rank : Math.min(-rank - 1, distinct - 1);
            sequence[i] = keys[permutation[rank]];
        }
        return sequence;
    }

    /**
     * Every distinct key of a distribution, so that a benchmark can touch each once before it measures.
     * @param kind hot or zipf
     * @return the keys
     */
    public static String[] distinctKeys(String kind) {
        int n = kind.equals("hot") ? 1 : kind.equals("zipf10k") ? 10_000 : ZIPF_KEYS;
        String[] keys = new String[n];
        for (int i = 0; i < n; i++) {
            keys[i] = key(i);
        }
        return keys;
    }
}
