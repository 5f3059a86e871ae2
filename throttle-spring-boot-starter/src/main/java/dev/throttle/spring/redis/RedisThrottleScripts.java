package dev.throttle.spring.redis;

import dev.throttle.Algorithm;
import dev.throttle.ConcurrencyPolicy;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Policy;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * The Lua scripts of the Redis store. A policy's script is built once per store and policy from
 * three parts, so that each call sends only what changes per call: one key and
 * {@code ARGV = op, cost, now}, with op {@code a} (acquire), {@code r} (refund, with the refunded
 * call's receipt as a fourth argument when it has one) or {@code p} (peek):
 * <ol>
 * <li>{@code local P = {...}}: the policy's numbers ({@link Algorithm#numbersOf(Policy)});</li>
 * <li>{@code prelude.lua}: what every script does first (reading {@code now} and the key's state,
 * number formatting);</li>
 * <li>the algorithm's body, the Lua twin of its Java transition, read once from
 * {@code META-INF/throttle/scripts/} under the algorithm's name ({@link #fileName}).</li>
 * </ol>
 * The algorithms know nothing of this: the store maps an algorithm to its script by its name, and
 * the store contract suite, run against this store and the memory store, keeps each script and
 * its Java twin deciding alike.
 * A script returns {@code {allowed, limit, remaining, wait, resetAfterMillis, receipt}}, where
 * {@code wait} is a refusal's retry-after and an allowed call's time until its next unit, and
 * {@code receipt} what an allowed acquire took (empty for a refund); {@code prelude.lua} says more.
 *
 * <p>Why the numbers are in the script rather than in ARGV: Redis hands every argument of every
 * call to the script as a string that it must turn back into a number (a lockout ladder's worth on
 * each call); in the script's text they are parsed once, when Redis compiles it. Why the prelude
 * is joined here rather than loaded apart: a script cannot call another, and one text per policy
 * keeps each decision to one {@code EVALSHA}.
 *
 * <p>Thread-safe.
 */
final class RedisThrottleScripts {

    /** Where the scripts live on the classpath. */
    static final String LOCATION = "META-INF/throttle/scripts/";

    /** The file every policy's script has between its numbers and its algorithm's body. */
    static final String PRELUDE = "prelude.lua";

    /** What follows the algorithm's script (as a function) in the script of a policy with several limits. */
    static final String SEVERAL = "several.lua";

    /** The script of a fixed window of the calendar: fixed_window.lua's twin, reading boundaries from ARGV[5]. */
    static final String CALENDAR = "fixed_window_calendar.lua";

    /**
     * What a concurrency policy's script runs ahead of the prelude: a slot's release by its receipt,
     * without reading the time (the file says why).
     */
    static final String SLOT_RELEASE = "concurrency_release.lua";

    /**
     * What a concurrency policy's script runs ahead of the prelude too: a slot taken (or refused) with
     * no helper functions made, deciding as {@code concurrency.lua} does (the file says why).
     */
    static final String SLOT_TAKE = "concurrency_take.lua";

    /** What follows the algorithm's script (as a function) in the script of a batch of acquires. */
    static final String BATCH = "batch.lua";

    /** Script texts by file name, each read once. */
    private static final Map<String, String> TEXTS = new ConcurrentHashMap<>();

    private RedisThrottleScripts() {}

    /**
     * Returns the script of a policy: its numbers, the prelude and its algorithm's body.
     * @param policy the policy
     * @return its script; the result type is {@code List} of {@code Long}
     */
    @SuppressWarnings("rawtypes")
    static RedisScript<List> of(Policy policy) {
        if (policy.severalLimits()) {
            return RedisScript.of(severalLimits(policy), List.class);
        }
        String body = fileName(policy);
        return RedisScript.of(parameterLine(policy) + ahead(policy) + text(PRELUDE) + text(body), List.class);
    }

    /**
     * Returns the resource name of a policy's script: its algorithm's ({@link #fileName(Algorithm)}),
     * but {@value #CALENDAR} for a fixed window of the calendar, whose script is given the calendar's
     * boundaries with each call ({@link PolicyScript}).
     * @param policy a policy of one limit
     * @return for example {@code fixed_window.lua}
     */
    static String fileName(Policy policy) {
        return (policy instanceof FixedWindowPolicy window && window.calendar() != null)
                ? CALENDAR
                : fileName(policy.algorithm());
    }

    /**
     * The script of a policy with several limits ({@link dev.throttle.MultiLimitPolicy}): the
     * algorithm's script as a function run once per limit by {@code several.lua}, which says more.
     */
    private static String severalLimits(Policy policy) {
        StringJoiner limits = new StringJoiner(", ", "local P = {}\nlocal LIMITS = {", "}\n");
        for (Policy limit : policy.limits()) {
            limits.add(parameterLine(limit).substring("local P = ".length()).strip());
        }
        return limits + text(PRELUDE) + "local function decideLimit(redis)\n" + text(fileName(policy.algorithm()))
                + "\nend\n" + text(SEVERAL);
    }

    /**
     * What runs ahead of the prelude: a concurrency slot's take ({@value #SLOT_TAKE}) and its release by
     * its receipt ({@value #SLOT_RELEASE}), the two calls of every call with a slot.
     */
    private static String ahead(Policy policy) {
        return (policy.algorithm() == ConcurrencyPolicy.ALGORITHM) ? text(SLOT_TAKE) + text(SLOT_RELEASE) : "";
    }

    /**
     * Returns the script that decides several acquires and refunds of one policy in one call, each by
     * the policy's own script run as a function ({@code batch.lua} says more); null for a policy whose
     * calls are always sent one by one: several limits (their script is a driver of its own) and fixed windows
     * of the calendar (their boundaries are an argument of each call).
     * @param policy the policy
     * @return its batch script, whose result type is {@code List} of {@code Long}, or null
     */
    @SuppressWarnings("rawtypes")
    static @Nullable RedisScript<List> batchOf(Policy policy) {
        if (policy.severalLimits() || CALENDAR.equals(fileName(policy))) {
            return null;
        }
        return RedisScript.of(
                parameterLine(policy) + "local BATCH_KEYS, BATCH_ARGV = KEYS, ARGV\n"
                        + "local function decideOne(KEYS, ARGV)\n" + ahead(policy) + text(PRELUDE)
                        + text(fileName(policy)) + "\nend\n" + text(BATCH),
                List.class);
    }

    /**
     * Returns the fourth argument of a refund of a call of several limits: each limit's receipt.
     * @param taken the call's decision
     * @return the receipts joined by {@code ,}, as ASCII
     */
    static byte[] receipts(Decision taken) {
        StringJoiner receipts = new StringJoiner(",");
        for (int i = 0; i < taken.limitCount(); i++) {
            receipts.add(Long.toString(taken.limit(i).receipt()));
        }
        return receipts.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * Returns the resource name of an algorithm's script: its name with underscores.
     * @param algorithm the algorithm
     * @return for example {@code token_bucket.lua}
     */
    static String fileName(Algorithm<?> algorithm) {
        return algorithm.id().replace('-', '_') + ".lua";
    }

    /**
     * The line before a script's body: {@code local P = {...}} with the numbers each script's
     * header documents, as Lua integer literals (all below 2^53, so exact in Lua's doubles).
     */
    static String parameterLine(Policy policy) {
        StringJoiner numbers = new StringJoiner(", ", "local P = {", "}\n");
        for (long number : policy.algorithm().numbersOf(policy)) {
            numbers.add(Long.toString(number));
        }
        return numbers.toString();
    }

    /** The text of a script file, read once per file. */
    static String text(String fileName) {
        String text = TEXTS.get(fileName);
        if (text == null) {
            // read outside the map's lock; two first readers read the same text
            text = read(fileName);
            TEXTS.putIfAbsent(fileName, text);
        }
        return text;
    }

    private static String read(String fileName) {
        ClassPathResource resource =
                new ClassPathResource(LOCATION + fileName, RedisThrottleScripts.class.getClassLoader());
        // read once into a static source: a resource-backed script would stat the file on every SHA1 lookup
        try (InputStream in = resource.getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException ex) {
            throw new UncheckedIOException("throttle: cannot read Lua script " + resource, ex);
        }
    }
}
