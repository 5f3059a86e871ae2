package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.Decision;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.ThrottleStore;
import dev.throttle.ThrottledException;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The one error policy of the call flow, on the blocking and the reactive path alike: giving back
 * and settling never turn a call into an error, and each failure is logged once at WARN, naming
 * the policy and never the key.
 */
@ExtendWith(OutputCaptureExtension.class)
class ThrottleFlowTests {

    private static final String KEY = "victim.4711@example.com";

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withBean(ThrottleStore.class, SettlementsFail::new)
            .withBean(Calls.class)
            .withPropertyValues(
                    "throttle.policies.login.algorithm=lockout",
                    "throttle.policies.login.timeouts=1s,2s",
                    "throttle.policies.login.reset-on-success=true",
                    "throttle.policies.failures.algorithm=fixed-window",
                    "throttle.policies.failures.limit=5",
                    "throttle.policies.failures.window=1m",
                    "throttle.policies.failures.count=failures",
                    "throttle.policies.two.algorithm=fixed-window",
                    "throttle.policies.two.limit=2",
                    "throttle.policies.two.window=1m",
                    "throttle.policies.one.algorithm=fixed-window",
                    "throttle.policies.one.limit=1",
                    "throttle.policies.one.window=1m");

    @Test
    void aSettlementThatFailsAfterASuccessfulBlockingCallIsLoggedOnceAndTheResultStands(CapturedOutput output) {
        this.contextRunner.run((context) -> {
            Calls calls = context.getBean(Calls.class);
            assertThat(calls.login(KEY)).isEqualTo(KEY.length());
            assertThat(calls.counted(KEY)).isEqualTo(KEY.length());
        });
        assertLoggedOnce(output, "Could not reset policy 'login' after a successful call; the call's result stands");
        assertLoggedOnce(
                output, "Could not refund policy 'failures' after a successful call; the call's result stands");
    }

    @Test
    void aSettlementThatFailsAfterASuccessfulReactiveCallIsLoggedOnceAndTheResultStands(CapturedOutput output) {
        this.contextRunner.run((context) -> {
            Calls calls = context.getBean(Calls.class);
            assertThat(calls.loginLater(KEY).block()).isEqualTo(KEY.length());
            assertThat(calls.countedMany(KEY).collectList().block()).containsExactly(KEY, KEY);
        });
        assertLoggedOnce(output, "Could not reset policy 'login' after a successful call; the call's result stands");
        assertLoggedOnce(
                output, "Could not refund policy 'failures' after a successful call; the call's result stands");
    }

    @Test
    void aGiveBackThatFailsAfterARefusalIsLoggedOnceAndTheRefusalStands(CapturedOutput output) {
        this.contextRunner.run((context) -> {
            Calls calls = context.getBean(Calls.class);
            calls.twoLimits("first");
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> calls.twoLimits(KEY))
                    .satisfies((ex) -> assertThat(ex.getPolicy().name()).isEqualTo("one"));
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> calls.twoLimitsLater(KEY).block())
                    .satisfies((ex) -> assertThat(ex.getPolicy().name()).isEqualTo("one"));
        });
        String message = "Could not give back what policy 'two' took for a call that a later policy refused; "
                + "the refusal stands";
        assertThat(output.getOut().split(java.util.regex.Pattern.quote(message), -1))
                .as("one WARN per refused call, blocking and reactive")
                .hasSize(3);
        assertThat(output.getAll()).doesNotContain(KEY);
    }

    @Test
    void aCallThatIsNotSettledOnSuccessNeverTouchesTheStoreAfterwards(CapturedOutput output) {
        this.contextRunner.run((context) -> {
            Calls calls = context.getBean(Calls.class);
            calls.twoLimits("a");
            assertThat(calls.plainLater("a").block()).isEqualTo("a");
        });
        assertThat(output.getAll()).doesNotContain("Could not");
    }

    private static void assertLoggedOnce(CapturedOutput output, String message) {
        List<String> lines =
                output.getAll().lines().filter((line) -> line.contains(message)).toList();
        assertThat(lines).as(message).singleElement().asString().contains("WARN");
        assertThat(output.getAll()).as("the key never reaches the log").doesNotContain(KEY);
    }

    static class Calls {

        @Throttled(policy = "login", key = "#user")
        public int login(String user) {
            return user.length();
        }

        @Throttled(policy = "failures", key = "#user")
        public int counted(String user) {
            return user.length();
        }

        @Throttled(policy = "two", key = "#user")
        @Throttled(policy = "one", key = "'everyone'")
        public void twoLimits(String user) {}

        @Throttled(policy = "login", key = "#user")
        public Mono<Integer> loginLater(String user) {
            return Mono.fromSupplier(user::length);
        }

        @Throttled(policy = "failures", key = "#user")
        public Flux<String> countedMany(String user) {
            return Flux.just(user, user);
        }

        @Throttled(policy = "two", key = "#user")
        @Throttled(policy = "one", key = "'everyone'")
        public Mono<String> twoLimitsLater(String user) {
            return Mono.just(user);
        }

        @Throttled(policy = "two", key = "#user")
        public Mono<String> plainLater(String user) {
            return Mono.just(user);
        }
    }

    /**
     * Decides in memory, but cannot give back nor reset: synchronously it throws, asynchronously
     * a reset fails its stage and a refund throws before returning one (both happen to stores).
     */
    static final class SettlementsFail implements ThrottleStore {

        private final MemoryThrottleStore memory = new MemoryThrottleStore();

        @Override
        public Limiter limiter(Policy policy) {
            Limiter decides = this.memory.limiter(policy);
            return new Limiter() {

                @Override
                public Policy policy() {
                    return policy;
                }

                @Override
                public Decision tryAcquire(String key, int cost) {
                    return decides.tryAcquire(key, cost);
                }

                @Override
                public Decision peek(String key) {
                    return decides.peek(key);
                }

                @Override
                public void refund(String key, int cost) {
                    throw new IllegalStateException("store unreachable");
                }

                @Override
                public void reset(String key) {
                    throw new IllegalStateException("store unreachable");
                }

                @Override
                public CompletionStage<Void> resetAsync(String key) {
                    return CompletableFuture.failedFuture(new IllegalStateException("store unreachable"));
                }
            };
        }

        @Override
        public String kind() {
            return "failing-settlements";
        }

        @Override
        public boolean isNonBlocking() {
            return true;
        }
    }
}
