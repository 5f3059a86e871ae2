package dev.throttle.spring.redis;

import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.testing.ThrottleStoreContract;
import dev.throttle.testing.redis.SharedRedis;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The Redis store keeps the same contract as the memory store, unchanged, against a real Redis:
 * the scripts are handed the suite's manual clock as their {@code now}.
 */
class RedisThrottleStoreContractTests extends ThrottleStoreContract {

    private static LettuceConnectionFactory connectionFactory;

    @BeforeAll
    static void connect() {
        connectionFactory = SharedRedis.endpoint().newConnectionFactory();
    }

    @AfterAll
    static void disconnect() {
        connectionFactory.destroy();
    }

    @Override
    protected ThrottleStore createStore(TimeSource clock) {
        SharedRedis.flush();
        // generous timeout: the concurrency traces run 8 threads on 2 shared cores
        return new RedisThrottleStore(connectionFactory, "throttle", Duration.ofSeconds(5), clock);
    }
}
