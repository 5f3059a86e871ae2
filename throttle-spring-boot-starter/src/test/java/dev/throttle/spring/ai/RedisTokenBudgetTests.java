package dev.throttle.spring.ai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.autoconfigure.ThrottleAiAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisReactiveAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The token budget advisor on the Redis store, whose decisions and settlements go over the network:
 * a call and a stream are each settled to the reported usage before the caller sees them end (the
 * stream's settlement is non-blocking and completes before the stream does), and a user over budget
 * is refused before the model is called.
 */
@WithRedis
class RedisTokenBudgetTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    DataRedisAutoConfiguration.class,
                    DataRedisReactiveAutoConfiguration.class,
                    ThrottleAutoConfiguration.class,
                    ThrottleAiAutoConfiguration.class))
            .withUserConfiguration(Client.class)
            .withPropertyValues(
                    "spring.data.redis.url=" + SharedRedis.endpoint().url(),
                    "throttle.store.type=redis",
                    "throttle.store.redis.timeout=2s",
                    // a window far longer than a test: nothing is given back by time while it runs
                    "throttle.policies.tokens.algorithm=fixed-window",
                    "throttle.policies.tokens.limit=1000",
                    "throttle.policies.tokens.window=1h",
                    "throttle.ai.policy=tokens",
                    "throttle.ai.estimate=200");

    /** A user of this run alone: the shared Redis keeps what other runs charged. */
    private final String user = "ann-" + UUID.randomUUID();

    private static int remaining(AssertableApplicationContext context, String user) {
        return context.getBean(Throttler.class).peek("tokens", user).remaining();
    }

    private ChatClient.ChatClientRequestSpec prompt(AssertableApplicationContext context) {
        return context.getBean(ChatClient.class)
                .prompt()
                .user("a question")
                .advisors((advisor) -> advisor.param("user", this.user));
    }

    @Test
    void callsAndStreamsAreChargedTheReportedUsageAndAUserOverBudgetIsRefused() {
        this.contextRunner.run((context) -> {
            TestChatModel model = context.getBean(TestChatModel.class).reporting(30, 70);
            prompt(context).call().content();
            assertThat(remaining(context, this.user)).isEqualTo(900);
            List<String> chunks =
                    prompt(context).stream().content().collectList().block();
            assertThat(chunks).hasSize(3);
            assertThat(remaining(context, this.user))
                    .as("settled before the stream completed")
                    .isEqualTo(800);
            model.reporting(500, 400);
            prompt(context).call().content();
            assertThat(remaining(context, this.user)).as("1,000 used").isZero();
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> prompt(context).call().content());
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> prompt(context).stream().content().blockLast());
            assertThat(model.calls())
                    .as("the refused calls never reached the model")
                    .isEqualTo(3);
        });
    }

    @Configuration(proxyBeanMethods = false)
    public static class Client {

        @Bean
        TestChatModel chatModel() {
            return new TestChatModel();
        }

        @Bean
        ChatClient chatClient(TestChatModel chatModel, TokenBudgetAdvisor throttleTokenBudgetAdvisor) {
            return ChatClient.builder(chatModel)
                    .defaultAdvisors(throttleTokenBudgetAdvisor)
                    .build();
        }
    }
}
