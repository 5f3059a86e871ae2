package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

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
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Closing what listens on a Redis channel (the shared bans, the fleet's policy changes) while the
 * server takes connections but never answers, as a Redis behind a dead link or a full network does:
 * an application that shuts down then must not wait for the subscription that is still being made.
 */
class RedisSilentServerCloseTests {

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
