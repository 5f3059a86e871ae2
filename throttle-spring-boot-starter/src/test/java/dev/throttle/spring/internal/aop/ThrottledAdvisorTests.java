package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import dev.throttle.ManualTimeSource;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;

class ThrottledAdvisorTests {

    private final ManualTimeSource clock = new ManualTimeSource();

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withBean(TimeSource.class, () -> this.clock)
            .withBean(Accounts.class)
            .withBean(WholeClass.class)
            .withPropertyValues(
                    "throttle.policies.two.algorithm=fixed-window",
                    "throttle.policies.two.limit=2",
                    "throttle.policies.two.window=1m",
                    "throttle.policies.one.algorithm=fixed-window",
                    "throttle.policies.one.limit=1",
                    "throttle.policies.one.window=1m",
                    "throttle.policies.login.algorithm=lockout",
                    "throttle.policies.login.timeouts=1s,2s,4s",
                    "throttle.policies.login.reset-on-success=true",
                    "throttle.policies.failures.algorithm=fixed-window",
                    "throttle.policies.failures.limit=2",
                    "throttle.policies.failures.window=1m",
                    "throttle.policies.failures.count=failures");

    @Test
    void theKeyIsEvaluatedOverTheParametersByName() {
        this.contextRunner.run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            accounts.byEmail("a@example.com");
            accounts.byEmail("a@example.com");
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.byEmail("a@example.com"));
            accounts.byEmail("b@example.com");
        });
    }

    @Test
    void theKeyCanNavigateIntoAnArgumentAndCallMethods() {
        this.contextRunner.run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            accounts.byForm(new Form(" Alice@Example.com "));
            accounts.byForm(new Form("alice@example.com"));
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> accounts.byForm(new Form("ALICE@example.com  ")));
            assertThat(context.getBean(Throttler.class)
                            .peek("two", "alice@example.com")
                            .remaining())
                    .isZero();
        });
    }

    @Test
    void theKeyCanNameParametersByPosition() {
        this.contextRunner.run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            accounts.byPosition("x", "k");
            accounts.byPosition("y", "k");
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.byPosition("z", "k"));
        });
    }

    @Test
    void aNullKeyAndAKeyThatCannotBeEvaluatedShareThePolicysBucketInsteadOfBypassingIt() {
        this.contextRunner.run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            accounts.byEmail(null);
            accounts.byForm(new Form(null));
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.byEmail("  "));
        });
    }

    @Test
    void severalAnnotationsAreCheckedInOrderAndARefusalGivesBackWhatEarlierOnesTook() {
        this.contextRunner.run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            Throttler throttler = context.getBean(Throttler.class);
            accounts.twoLimits("u");
            assertThat(throttler.peek("two", "u").remaining()).isEqualTo(1);
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> accounts.twoLimits("u"))
                    .satisfies((ex) -> assertThat(ex.getPolicy().name()).isEqualTo("one"));
            assertThat(throttler.peek("two", "u").remaining())
                    .as("the refused call was charged nothing")
                    .isEqualTo(1);
        });
    }

    @Test
    void resetOnSuccessClearsTheKeyWhenTheCallReturnsNormally() {
        this.contextRunner.run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            assertThatIllegalStateException().isThrownBy(() -> accounts.login("alice", false));
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> accounts.login("alice", true))
                    .satisfies((ex) ->
                            assertThat(ex.getDecision().retryAfterMillis()).isEqualTo(1_000));
            this.clock.advance(Duration.ofSeconds(1));
            assertThat(accounts.login("alice", true)).isEqualTo("alice");
            assertThat(accounts.login("alice", true))
                    .as("the ladder was cleared by the success")
                    .isEqualTo("alice");
        });
    }

    @Test
    void countFailuresGivesBackWhatASuccessfulCallTook() {
        this.contextRunner.run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            for (int i = 0; i < 10; i++) {
                assertThat(accounts.countFailures("k", true)).isEqualTo("ok");
            }
            assertThatIllegalStateException().isThrownBy(() -> accounts.countFailures("k", false));
            assertThatIllegalStateException().isThrownBy(() -> accounts.countFailures("k", false));
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.countFailures("k", true));
        });
    }

    @Test
    void aResponseEntityWithAnErrorStatusCountsAsAFailure() {
        this.contextRunner.run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            assertThat(accounts.entity("k", HttpStatus.OK).getStatusCode()).isEqualTo(HttpStatus.OK);
            assertThat(accounts.entity("k", HttpStatus.CREATED).getStatusCode()).isEqualTo(HttpStatus.CREATED);
            accounts.entity("k", HttpStatus.UNAUTHORIZED);
            accounts.entity("k", HttpStatus.INTERNAL_SERVER_ERROR);
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.entity("k", HttpStatus.OK));
        });
    }

    @Test
    void aClassLevelAnnotationThrottlesEveryPublicMethodAndAMethodAnnotationReplacesIt() {
        this.contextRunner.run((context) -> {
            WholeClass whole = context.getBean(WholeClass.class);
            whole.first();
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(whole::second);
            whole.own();
            whole.own();
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(whole::own);
        });
    }

    @Test
    void waitingOnTheInjectedClockLetsCallsThroughAgain() {
        this.contextRunner.run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            accounts.byEmail("a");
            accounts.byEmail("a");
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> accounts.byEmail("a"))
                    .satisfies((ex) -> assertThat(ex.getDecision().retryAfter()).isEqualTo(Duration.ofMinutes(1)));
            this.clock.advance(Duration.ofMinutes(1));
            accounts.byEmail("a");
        });
    }

    @Test
    void aParameterNamedIpCannotStandInForTheRequestsAddress() {
        ThrottleRequestContext request = new ThrottleRequestContext() {

            @Override
            public String clientAddress() {
                return "192.0.2.10";
            }
        };
        this.contextRunner.withBean(ThrottleRequestContext.class, () -> request).run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            // the first key binds the parameters; a client-chosen "ip" must not become #ip then
            accounts.byNoteAndIp("a", "203.0.113.1");
            accounts.byNoteAndIp("b", "203.0.113.2");
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> accounts.byNoteAndIp("c", "203.0.113.3"))
                    .satisfies((ex) -> assertThat(ex.getPolicy().name()).isEqualTo("two"));
            assertThat(context.getBean(Throttler.class)
                            .peek("two", "192.0.2.10")
                            .remaining())
                    .isZero();
        });
    }

    @Test
    void aCompletionStageIsSettledWhenItCompletesNotWhenTheMethodReturns() {
        this.contextRunner.run((context) -> {
            Accounts accounts = context.getBean(Accounts.class);
            CompletableFuture<String> pending = new CompletableFuture<>();
            CompletableFuture<String> first = accounts.loginLater("alice", pending);
            assertThatExceptionOfType(ThrottledException.class)
                    .as("still locked: the first attempt's outcome is not known yet")
                    .isThrownBy(() -> accounts.loginLater("alice", new CompletableFuture<>()));
            pending.complete("alice");
            assertThat(first).isCompletedWithValue("alice");
            assertThat(accounts.loginLater("alice", CompletableFuture.completedFuture("alice")))
                    .as("the success reset the ladder")
                    .isCompletedWithValue("alice");
            CompletableFuture<String> failing = new CompletableFuture<>();
            this.clock.advance(Duration.ofSeconds(1));
            accounts.loginLater("bob", failing);
            failing.completeExceptionally(new IllegalStateException("wrong password"));
            assertThatExceptionOfType(ThrottledException.class)
                    .as("a failed outcome resets nothing")
                    .isThrownBy(() -> accounts.loginLater("bob", CompletableFuture.completedFuture("bob")));
        });
    }

    @Test
    void aReturnTypeWhoseOutcomeIsHiddenFailsStartupWhenThePolicyActsOnTheOutcome() {
        this.contextRunner
                .withBean(CallableLogin.class)
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .hasStackTraceContaining("CallableLogin.login(String) returns Callable")
                        .hasStackTraceContaining("throttle.policies.login.reset-on-success"));
        this.contextRunner
                .withBean(CallableCount.class)
                .run((context) -> assertThat(context)
                        .hasNotFailed()
                        .getBean(CallableCount.class)
                        .satisfies((bean) -> assertThat(bean.count("k").call()).isEqualTo("counted")));
    }

    @Test
    void anInterfaceMethodOfAJdkProxiedBeanIsThrottledAndChecked() {
        this.contextRunner.withBean(Greeter.class, SimpleGreeter::new).run((context) -> {
            assertThat(context).hasNotFailed();
            Greeter greeter = context.getBean(Greeter.class);
            assertThat(AopUtils.isJdkDynamicProxy(greeter)).isTrue();
            greeter.greet("ann");
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> greeter.greet("ann"));
        });
        this.contextRunner
                .withBean(Greeter.class, MisconfiguredGreeter::new)
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .hasStackTraceContaining("MisconfiguredGreeter.greet(String) names policy 'nope'"));
    }

    interface Greeter {

        @Throttled(policy = "one", key = "#name")
        String greet(String name);
    }

    static class SimpleGreeter implements Greeter {

        @Override
        public String greet(String name) {
            return "hello " + name;
        }
    }

    interface Farewells {

        String greet(String name);
    }

    static class MisconfiguredGreeter implements Greeter, Farewells {

        @Override
        @Throttled(policy = "nope", key = "#name")
        public String greet(String name) {
            return "hello " + name;
        }
    }

    static class CallableLogin {

        @Throttled(policy = "login", key = "#user")
        public Callable<String> login(String user) {
            return () -> user;
        }
    }

    static class CallableCount {

        @Throttled(policy = "two", key = "#key")
        public Callable<String> count(String key) {
            return () -> "counted";
        }
    }

    record Form(String email) {}

    static class Accounts {

        @Throttled(policy = "two", key = "#email")
        public void byEmail(String email) {}

        @Throttled(policy = "two", key = "#form.email.trim().toLowerCase()")
        public void byForm(Form form) {}

        @Throttled(policy = "two", key = "#p1")
        public void byPosition(String ignored, String key) {}

        @Throttled(policy = "two", key = "#user")
        @Throttled(policy = "one", key = "'everyone'")
        public void twoLimits(String user) {}

        @Throttled(policy = "one", key = "#note")
        @Throttled(policy = "two", key = "#ip")
        public void byNoteAndIp(String note, String ip) {}

        @Throttled(policy = "login", key = "#user")
        public CompletableFuture<String> loginLater(String user, CompletableFuture<String> outcome) {
            return outcome;
        }

        @Throttled(policy = "login", key = "#user")
        public String login(String user, boolean passwordMatches) {
            if (!passwordMatches) {
                throw new IllegalStateException("wrong password");
            }
            return user;
        }

        @Throttled(policy = "failures", key = "#key")
        public String countFailures(String key, boolean succeed) {
            if (!succeed) {
                throw new IllegalStateException("failed");
            }
            return "ok";
        }

        @Throttled(policy = "failures", key = "#key")
        public ResponseEntity<String> entity(String key, HttpStatus status) {
            return ResponseEntity.status(status).body("body");
        }
    }

    @Throttled(policy = "one")
    static class WholeClass {

        public void first() {}

        public void second() {}

        @Throttled(policy = "two")
        public void own() {}
    }
}
