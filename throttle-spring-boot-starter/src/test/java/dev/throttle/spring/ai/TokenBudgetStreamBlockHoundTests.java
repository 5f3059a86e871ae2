package dev.throttle.spring.ai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.autoconfigure.ThrottleAiAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.testing.BlockingCalls;
import dev.throttle.testing.redis.SharedRedis;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A ChatClient stream with the token budget advisor, subscribed on a non-blocking thread, never
 * blocks it: the reservation, the refusal and the settlement go through the store's non-blocking
 * calls, on the memory store and on a real Redis. BlockHound, installed in this JVM, turns any
 * blocking call on a non-blocking thread into an error, which fails the stream.
 */
class TokenBudgetStreamBlockHoundTests {

    private static final List<String> blockingCalls = BlockingCalls.recorded();

    @BeforeAll
    static void installBlockHound() {
        SharedRedis.endpoint();
        BlockingCalls.install();
    }

    @BeforeEach
    void forgetBlockingCalls() {
        blockingCalls.clear();
    }

    @Test
    void blockHoundIsActiveSoTheOtherTestsCanFail() {
        assertThatExceptionOfType(RuntimeException.class)
                .isThrownBy(() -> Mono.fromCallable(() -> {
                            Thread.sleep(1);
                            return 1;
                        })
                        .subscribeOn(Schedulers.parallel())
                        .block())
                .satisfies((ex) -> assertThat(ex).hasCauseInstanceOf(BlockingOperationError.class));
    }

    @ParameterizedTest(name = "{0} store")
    @ValueSource(strings = {"memory", "redis"})
    void aStreamIsDecidedAndSettledWithoutBlockingItsThread(String store) {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        DataRedisAutoConfiguration.class,
                        DataRedisReactiveAutoConfiguration.class,
                        ThrottleAutoConfiguration.class,
                        ThrottleAiAutoConfiguration.class))
                .withUserConfiguration(RedisTokenBudgetTests.Client.class)
                .withPropertyValues(
                        "spring.data.redis.url=" + SharedRedis.endpoint().url(),
                        "throttle.store.type=" + store,
                        "throttle.store.redis.timeout=2s",
                        "throttle.policies.tokens.algorithm=fixed-window",
                        "throttle.policies.tokens.limit=1000",
                        "throttle.policies.tokens.window=1h",
                        "throttle.ai.policy=tokens",
                        "throttle.ai.estimate=200")
                .run((context) -> {
                    String user = "ann-" + UUID.randomUUID();
                    context.getBean(TestChatModel.class).reporting(600, 500);
                    // a first decision warms the store's connection up, off the non-blocking thread
                    context.getBean(Throttler.class).peek("tokens", "warm-up");
                    List<String> chunks = stream(context.getBean(ChatClient.class), user)
                            .collectList()
                            .block(Duration.ofSeconds(30));
                    assertThat(chunks).hasSize(3);
                    assertThat(context.getBean(Throttler.class)
                                    .peek("tokens", user)
                                    .remaining())
                            .isZero();
                    assertThatExceptionOfType(ThrottledException.class)
                            .isThrownBy(() -> stream(context.getBean(ChatClient.class), user)
                                    .blockLast(Duration.ofSeconds(30)));
                    assertThat(blockingCalls)
                            .as("blocking calls on non-blocking threads")
                            .isEmpty();
                });
    }

    private static Flux<String> stream(ChatClient chat, String user) {
        return chat.prompt().user("a question").advisors((advisor) -> advisor.param("user", user)).stream()
                .content()
                .subscribeOn(Schedulers.parallel());
    }
}
