package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.throttle.Limiter;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.spring.bans.ActiveBan;
import dev.throttle.spring.bans.SharedBans;
import dev.throttle.spring.fleet.SharedPolicyChanges;
import dev.throttle.testing.SilentServer;
import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A Redis that takes connections and never answers (frozen, or behind a proxy whose far side is
 * gone): closing what listens on its channels (the shared bans, the fleet's policy changes) and a
 * whole application on the Redis store must not wait for the connects still being made, and callers
 * that gave up on a connect leave no error behind when it fails.
 */
class RedisSilentServerTests {

    private SilentServer silent;

    private LettuceConnectionFactory connectionFactory;

    @BeforeEach
    void startSilentServer() throws IOException {
        this.silent = SilentServer.start();
        this.connectionFactory =
                new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", this.silent.port()));
        this.connectionFactory.afterPropertiesSet();
        this.connectionFactory.start();
    }

    @AfterEach
    void stopSilentServer() throws IOException {
        this.silent.close();
        this.connectionFactory.destroy();
    }

    @Test
    void sharedBansCloseWithinSecondsWhileTheSubscriptionIsStillBeingMade() throws Exception {
        RedisSharedBans bans = new RedisSharedBans(this.connectionFactory, "throttle");
        bans.listen(new SharedBans.Listener() {
            @Override
            public void started(ActiveBan ban) {}

            @Override
            public void lifted(String ban, String key) {}

            @Override
            public void reconnected() {}
        });
        awaitConnection();
        assertThat(timeToClose(bans::close)).isLessThan(Duration.ofSeconds(8));
    }

    @Test
    void policyChangesCloseWithinSecondsWhileTheSubscriptionIsStillBeingMade() throws Exception {
        RedisSharedPolicyChanges changes = new RedisSharedPolicyChanges(this.connectionFactory, "throttle");
        changes.listen(new SharedPolicyChanges.Listener() {
            @Override
            public void changed(String policy) {}

            @Override
            public void reconnected() {}
        });
        awaitConnection();
        assertThat(timeToClose(changes::close)).isLessThan(Duration.ofSeconds(8));
    }

    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void anApplicationOnTheRedisStoreWithBansShutsDownWithinSecondsWhileRedisIsSilent() {
        long start = System.nanoTime();
        ConfigurableApplicationContext context = new SpringApplicationBuilder(Instance.class)
                .properties(
                        "server.port=0",
                        "spring.data.redis.host=127.0.0.1",
                        "spring.data.redis.port=" + this.silent.port(),
                        "throttle.store.type=redis",
                        "throttle.policies.api.algorithm=gcra",
                        "throttle.policies.api.limit=3",
                        "throttle.policies.api.period=60s",
                        "throttle.bans.abuse.after=3",
                        "throttle.bans.abuse.within=1m",
                        "throttle.bans.abuse.for=10m",
                        "spring.main.banner-mode=off")
                .run();
        Duration started = Duration.ofNanos(System.nanoTime() - start);
        Duration closed = timeToClose(context::close);
        // each read at the start is bounded (the clock check, the bans, the policy changes, the warm-up)
        assertThat(started).isLessThan(Duration.ofSeconds(45));
        // it took over four minutes: each connect to the silent server held the connection factory's
        // lock for a minute, and the factory takes that lock to stop
        assertThat(closed).isLessThan(Duration.ofSeconds(15));
    }

    @Test
    void callersThatGaveUpOnAConnectLeaveNoErrorBehindWhenItFails() throws Exception {
        ListAppender<ILoggingEvent> dropped = new ListAppender<>();
        dropped.start();
        Logger operators = (Logger) LoggerFactory.getLogger("reactor.core.publisher.Operators");
        operators.addAppender(dropped);
        try {
            RedisThrottleStore store =
                    new RedisThrottleStore(this.connectionFactory, "throttle", Duration.ofMillis(200));
            Limiter limiter = store.limiter(TokenBucketPolicy.of("api", 10, Duration.ofSeconds(1)));
            for (int i = 0; i < 5; i++) {
                assertThat(catchThrowable(() -> limiter.tryAcquire("k", 1)))
                        .as("no answer within the timeout")
                        .isNotNull();
            }
            // the connect under way is given up: it fails now, after its five callers gave up on it
            store.close();
            Thread.sleep(500);
            assertThat(dropped.list).as("errors Reactor dropped after a cancel").isEmpty();
        } finally {
            operators.detachAppender(dropped);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Instance {}

    private void awaitConnection() throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (this.silent.connections() == 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(this.silent.connections())
                .as("the subscription's connection reached the silent server")
                .isPositive();
    }

    private static Duration timeToClose(Runnable close) {
        long start = System.nanoTime();
        close.run();
        return Duration.ofNanos(System.nanoTime() - start);
    }
}
