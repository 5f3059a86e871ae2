package dev.throttle.spring.redis;

import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import dev.throttle.testing.ThrottleStoreContract;
import dev.throttle.testing.redis.SharedRedis;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The whole store contract, unchanged, with the near cache answering every refusal of 1 ms or more:
 * every trace gets the same decisions as from the memory store, so a remembered refusal says what
 * Redis would say at that moment (the time left counted on the suite's manual clock, which the
 * scripts are handed too, clock steps back included), and resets and refunds forget it.
 */
class RedisNearCacheContractTests extends ThrottleStoreContract {

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
        RedisThrottleStore store = new RedisThrottleStore(
                connectionFactory,
                "throttle",
                Duration.ofSeconds(5),
                clock,
                NearCacheSettings.of(10_000, Duration.ofMillis(1)));
        store.eventsSubscribed().orTimeout(10, TimeUnit.SECONDS).join();
        return store;
    }
}
