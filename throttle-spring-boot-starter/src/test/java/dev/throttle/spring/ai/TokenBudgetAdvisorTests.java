package dev.throttle.spring.ai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.ManualTimeSource;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.spring.ThrottleConfigurationException;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.client.ChatClientBuilderCustomizer;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The token budget advisor on a real ChatClient over a chat model that reports known usage, with the
 * memory store and a manual clock (no refill while a test runs): each call reserves its estimate
 * under the user's key before the model is called, and is settled to the tokens the model reported,
 * for a call and for a stream; a user over budget is refused before the model is called; a model
 * that reports nothing leaves the estimate standing, counted. Wrong configuration fails the start.
 */
class TokenBudgetAdvisorTests {

    private static final String[] BUDGET = {
        "throttle.policies.tokens.algorithm=token-bucket",
        "throttle.policies.tokens.capacity=1000",
        "throttle.policies.tokens.refill-period=1h",
        "throttle.ai.policy=tokens",
        "throttle.ai.estimate=200"
    };

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withUserConfiguration(Application.class)
            .withPropertyValues(BUDGET);

    private static int remaining(AssertableApplicationContext context, String user) {
        return context.getBean(Throttler.class).peek("tokens", user).remaining();
    }

    private static String ask(AssertableApplicationContext context, String user) {
        return context.getBean(ChatClient.class)
                .prompt()
                .user("a question")
                .advisors((advisor) -> advisor.param("user", user))
                .call()
                .content();
    }

    private static List<String> stream(AssertableApplicationContext context, String user) {
        return context
                .getBean(ChatClient.class)
                .prompt()
                .user("a question")
                .advisors((advisor) -> advisor.param("user", user))
                .stream()
                .content()
                .collectList()
                .block();
    }

    private static TestChatModel model(AssertableApplicationContext context) {
        return context.getBean(TestChatModel.class);
    }

    private static double unreported(AssertableApplicationContext context) {
        return context.getBean(MeterRegistry.class)
                .get("throttle.ai.usage.unreported")
                .tag("policy", "tokens")
                .counter()
                .count();
    }

    @Test
    void aCallIsChargedTheTotalTokensTheModelReported() {
        this.contextRunner.run((context) -> {
            model(context).reporting(30, 70);
            assertThat(ask(context, "ann")).isEqualTo("an answer");
            assertThat(remaining(context, "ann"))
                    .as("200 reserved, settled to 30 + 70")
                    .isEqualTo(900);
            ask(context, "ann");
            assertThat(remaining(context, "ann")).isEqualTo(800);
            assertThat(remaining(context, "bob"))
                    .as("each user has a budget of their own")
                    .isEqualTo(1000);
        });
    }

    @Test
    void aUserOverBudgetIsRefusedBeforeTheModelIsCalled() {
        this.contextRunner.run((context) -> {
            model(context).reporting(600, 500);
            ask(context, "ann");
            assertThat(remaining(context, "ann"))
                    .as("1,100 tokens used of 1,000: in debt")
                    .isEqualTo(0);
            assertThat(model(context).calls()).isEqualTo(1);
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> ask(context, "ann"))
                    .satisfies((refused) -> assertThat(refused.getDecision().retryAfterMillis())
                            .as("the debt of 100 and the 200 reserved, refilled at a token an hour")
                            .isEqualTo(300 * 3_600_000L));
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> stream(context, "ann"));
            assertThat(model(context).calls())
                    .as("neither refused call reached the model")
                    .isEqualTo(1);
            ask(context, "bob");
            assertThat(model(context).calls()).isEqualTo(2);
        });
    }

    @Test
    void aRequestsMaxTokensAreItsEstimate() {
        this.contextRunner.run((context) -> {
            model(context).reporting(null);
            context.getBean(ChatClient.class)
                    .prompt()
                    .user("a question")
                    .options(ChatOptions.builder().maxTokens(50))
                    .advisors((advisor) -> advisor.param("user", "ann"))
                    .call()
                    .content();
            assertThat(remaining(context, "ann"))
                    .as("no usage reported: the 50 max tokens reserved stand")
                    .isEqualTo(950);
            ask(context, "ann");
            assertThat(remaining(context, "ann"))
                    .as("no max tokens: the configured estimate of 200")
                    .isEqualTo(750);
        });
    }

    @Test
    void aModelThatReportsNoUsageLeavesTheEstimateStandingAndIsCounted() {
        this.contextRunner.run((context) -> {
            model(context).reporting(null);
            ask(context, "ann");
            assertThat(remaining(context, "ann")).isEqualTo(800);
            assertThat(unreported(context)).isEqualTo(1);
            stream(context, "ann");
            assertThat(remaining(context, "ann")).isEqualTo(600);
            assertThat(unreported(context)).isEqualTo(2);
        });
    }

    @Test
    void weightedUsageChargesPromptAndCompletionTokensEachByItsWeight() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.ai.usage=weighted",
                        "throttle.ai.prompt-weight=0.5",
                        "throttle.ai.completion-weight=4")
                .run((context) -> {
                    model(context).reporting(31, 70);
                    ask(context, "ann");
                    assertThat(remaining(context, "ann"))
                            .as("31 x 0.5 + 70 x 4 = 295.5, rounded up")
                            .isEqualTo(1000 - 296);
                    stream(context, "bob");
                    assertThat(remaining(context, "bob")).isEqualTo(1000 - 296);
                });
    }

    @Test
    void aStreamIsChargedTheUsageOfItsLastChunkWhenItEnds() {
        this.contextRunner.run((context) -> {
            model(context).reporting(40, 60).streaming(4);
            assertThat(stream(context, "ann")).containsExactly("chunk 1", "chunk 2", "chunk 3", "chunk 4");
            assertThat(remaining(context, "ann"))
                    .as("the chunks before the last carry no usage; the last's 100 settles the 200 reserved")
                    .isEqualTo(900);
            assertThat(unreported(context)).isZero();
        });
    }

    @Test
    void aStreamCancelledOrFailedBeforeItsUsageKeepsTheEstimate() {
        this.contextRunner.run((context) -> {
            model(context).reporting(40, 60).streaming(4);
            List<String> first = context
                    .getBean(ChatClient.class)
                    .prompt()
                    .user("a question")
                    .advisors((advisor) -> advisor.param("user", "ann"))
                    .stream()
                    .content()
                    .take(1)
                    .collectList()
                    .block();
            assertThat(first).containsExactly("chunk 1");
            assertThat(remaining(context, "ann"))
                    .as("cancelled before the usage came: the estimate stands")
                    .isEqualTo(800);
            model(context).failingStreams(new IllegalStateException("the model went away"));
            assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> stream(context, "ann"));
            assertThat(remaining(context, "ann")).isEqualTo(600);
            assertThat(unreported(context))
                    .as("a stream that did not end has nothing to report")
                    .isZero();
        });
    }

    @Test
    void aStreamCancelledJustBeforeItsUsagePaysAtLeastWhatItStreamed() {
        this.contextRunner.run((context) -> {
            model(context).reporting(500, 5000).streaming(10).chunkText("x".repeat(200));
            List<String> nine = context
                    .getBean(ChatClient.class)
                    .prompt()
                    .user("a question")
                    .advisors((advisor) -> advisor.param("user", "eve"))
                    .stream()
                    .content()
                    .take(9)
                    .collectList()
                    .block();
            assertThat(nine).hasSize(9);
            assertThat(remaining(context, "eve"))
                    .as("1,800 characters streamed and a 10-character prompt, a token per 2 characters: 905, "
                            + "not the estimate of 200")
                    .isEqualTo(1000 - 905);
        });
    }

    @Test
    void theKeyIsAnyExpressionOverTheRequest() {
        this.contextRunner.withPropertyValues("throttle.ai.key='all'").run((context) -> {
            model(context).reporting(30, 70);
            ask(context, "ann");
            ask(context, "bob");
            assertThat(remaining(context, "all")).isEqualTo(800);
        });
    }

    @Test
    void springAisChatClientBuilderGetsTheAdvisorUnlessToldNot() {
        this.contextRunner.run((context) -> assertThat(context).hasSingleBean(ChatClientBuilderCustomizer.class));
        this.contextRunner
                .withPropertyValues("throttle.ai.add-to-builder=false")
                .run((context) -> assertThat(context)
                        .hasSingleBean(TokenBudgetAdvisor.class)
                        .doesNotHaveBean(ChatClientBuilderCustomizer.class));
    }

    @Test
    void withoutAPolicyThereIsNoAdvisor() {
        new ApplicationContextRunner()
                .withUserConfiguration(Model.class)
                .run((context) -> assertThat(context)
                        .hasNotFailed()
                        .doesNotHaveBean(TokenBudgetAdvisor.class)
                        .doesNotHaveBean(ChatClientBuilderCustomizer.class));
    }

    @Test
    void aPolicyThatIsNotConfiguredFailsTheStart() {
        this.contextRunner
                .withPropertyValues("throttle.ai.policy=tokns")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.ai.policy is 'tokns', but no such policy is configured"));
    }

    @Test
    void aPolicyWithMistakesFailsTheStartWithThoseMistakes() {
        this.contextRunner
                .withPropertyValues("throttle.policies.tokens.lease=30s")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.policies.tokens.lease means nothing to the")
                        .doesNotContain("no such policy"));
    }

    @Test
    void aPolicyThatCannotCarryADebtFailsTheStart() {
        this.contextRunner
                .withPropertyValues(
                        "throttle.policies.lock.algorithm=lockout",
                        "throttle.policies.lock.timeouts=1s,1m",
                        "throttle.ai.policy=lock")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.ai.policy is 'lock', which cannot take the tokens a model reports")
                        .contains("cannot carry a debt"));
    }

    @Test
    void aPolicyThatSettlesASuccessFailsTheStart() {
        this.contextRunner
                .withPropertyValues("throttle.policies.tokens.count=failures")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.ai.policy is 'tokens', which counts failures only"));
        this.contextRunner
                .withPropertyValues("throttle.policies.tokens.reset-on-success=true")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.ai.policy is 'tokens', which resets on success"));
    }

    @Test
    void aKeyThatDoesNotParseFailsTheStart() {
        this.contextRunner
                .withPropertyValues("throttle.ai.key=#context['user'")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.ai.key: the key expression '#context['user'' does not parse"));
        this.contextRunner
                .withPropertyValues("throttle.ai.key= ")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.ai.key: the key expression is empty"));
    }

    @Test
    void anEstimateOutOfThePolicysReachFailsTheStart() {
        this.contextRunner
                .withPropertyValues("throttle.ai.estimate=1001")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.ai.estimate is 1001, but policy 'tokens' can only reserve from 1 to 1000"));
        this.contextRunner
                .withPropertyValues("throttle.ai.estimate=0")
                .run((context) -> assertThat(failure(context).getMessage()).contains("throttle.ai.estimate is 0"));
    }

    @Test
    void negativeOrZeroWeightsFailTheStart() {
        this.contextRunner
                .withPropertyValues("throttle.ai.usage=weighted", "throttle.ai.prompt-weight=-1")
                .run((context) -> assertThat(failure(context).getMessage())
                        .contains("throttle.ai.prompt-weight and throttle.ai.completion-weight: token weights must"
                                + " be finite and not negative"));
        this.contextRunner
                .withPropertyValues(
                        "throttle.ai.usage=weighted", "throttle.ai.prompt-weight=0", "throttle.ai.completion-weight=0")
                .run((context) -> assertThat(failure(context).getMessage()).contains("must not both be zero"));
    }

    private static Throwable failure(AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        Throwable failure = context.getStartupFailure();
        while (!(failure instanceof ThrottleConfigurationException) && failure.getCause() != null) {
            failure = failure.getCause();
        }
        return failure;
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Model {

        @Bean
        TestChatModel chatModel() {
            return new TestChatModel();
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {

        @Bean
        TestChatModel chatModel() {
            return new TestChatModel();
        }

        /** No refill while a test runs. */
        @Bean
        TimeSource throttleTimeSource() {
            return new ManualTimeSource();
        }

        @Bean
        SimpleMeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        /** A ChatClient built by hand, as an application without Spring AI's Boot starter does. */
        @Bean
        ChatClient chatClient(TestChatModel chatModel, TokenBudgetAdvisor throttleTokenBudgetAdvisor) {
            return ChatClient.builder(chatModel)
                    .defaultAdvisors(throttleTokenBudgetAdvisor)
                    .build();
        }
    }
}
