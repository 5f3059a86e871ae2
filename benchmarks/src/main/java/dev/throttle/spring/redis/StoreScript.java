package dev.throttle.spring.redis;

import dev.throttle.bench.Workload;

/**
 * Prints the Lua script the Redis store sends for one of the benchmarks' policies, built by the
 * store's own code ({@link RedisThrottleScripts}, package-private, hence this package): the
 * policy's numbers, {@code prelude.lua} (which defines {@code now}, the key's state and the
 * helpers) and the algorithm's body. {@code benchmarks/run.sh} loads it with {@code SCRIPT LOAD}
 * for {@code redis-benchmark}, so that the server's ceiling is measured on the very text the store
 * runs; an algorithm's body alone does not run (it reads the prelude's locals).
 *
 * <p>Usage: {@code java -cp benchmarks.jar dev.throttle.spring.redis.StoreScript gcra api}
 */
public final class StoreScript {

    private StoreScript() {}

    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: StoreScript <algorithm> <regime>   e.g. StoreScript gcra api");
            System.exit(2);
        }
        System.out.print(
                RedisThrottleScripts.of(Workload.policy(args[0], args[1])).getScriptAsString());
    }
}
