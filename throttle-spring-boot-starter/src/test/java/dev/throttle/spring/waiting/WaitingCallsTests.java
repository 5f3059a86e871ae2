package dev.throttle.spring.waiting;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.testing.Eventually;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.ResponseStatus;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * {@code @Throttled} with a wait, on any bean: a call over the limit waits for its turn (sleeping on
 * the calling thread for a plain value; on a timer, holding no thread, for a {@code Mono} or a
 * {@code CompletableFuture}), and a waiter that gives up (interrupted, cancelled, disposed) gives its
 * turn back, so that the next caller gets it. Real time: {@code quick} allows one call per 200 ms,
 * {@code slow} one per 10 s (a turn no test waits for).
 */
class WaitingCallsTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withUserConfiguration(Application.class)
            .withPropertyValues(
                    "throttle.policies.quick.algorithm=gcra",
                    "throttle.policies.quick.limit=1",
                    "throttle.policies.quick.period=500ms",
                    "throttle.policies.quick.wait=2s",
                    "throttle.policies.slow.algorithm=gcra",
                    "throttle.policies.slow.limit=1",
                    "throttle.policies.slow.period=10s",
                    "throttle.policies.slow.wait=30s",
                    "throttle.policies.failing.algorithm=gcra",
                    "throttle.policies.failing.limit=1",
                    "throttle.policies.failing.period=1s",
                    "throttle.policies.failing.wait=3s",
                    "throttle.policies.failing.count=failures");

    /** Whether the slow key's next turn is taken: a turn given back leaves the next one 10 s away or less. */
    private static boolean turnTaken(Throttler throttler) {
        return throttler.peek("slow", "k").retryAfterMillis() > 10_000;
    }

    @Test
    void aPlainMethodOverItsLimitSleepsOnTheCallingThreadUntilItsTurn() {
        this.contextRunner.run((context) -> {
            Calls calls = context.getBean(Calls.class);
            long start = System.nanoTime();
            for (int i = 0; i < 3; i++) {
                assertThat(calls.quick()).isEqualTo("quick");
            }
            assertThat(System.nanoTime() - start)
                    .as("three calls, each let in 500 ms after the one before")
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(999));
        });
    }

    @Test
    void anInterruptedCallerGivesItsTurnBackAndIsRefused() {
        this.contextRunner.run((context) -> {
            Calls calls = context.getBean(Calls.class);
            Throttler throttler = context.getBean(Throttler.class);
            calls.slow();
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread waiter = new Thread(() -> {
                try {
                    calls.slow();
                } catch (RuntimeException ex) {
                    thrown.set(ex);
                }
            });
            waiter.start();
            Eventually.until("the waiter reserved its turn", () -> turnTaken(throttler));
            waiter.interrupt();
            waiter.join(5_000);
            assertThat(thrown.get()).isInstanceOf(ThrottledException.class);
            assertThat(turnTaken(throttler)).as("the turn is back").isFalse();
            assertThat(calls.slowRuns()).as("the interrupted call never ran").isEqualTo(1);
        });
    }

    @Test
    void aMonoWaitsOnATimerWithoutBlockingTheSubscriberAndADisposedOneGivesItsTurnBack() {
        this.contextRunner.run((context) -> {
            Calls calls = context.getBean(Calls.class);
            Throttler throttler = context.getBean(Throttler.class);
            assertThat(calls.reactive().block()).isEqualTo("reactive");
            long start = System.nanoTime();
            Disposable waiting = calls.reactive().subscribe();
            assertThat(System.nanoTime() - start)
                    .as("subscribing does not wait for the turn")
                    .isLessThan(TimeUnit.SECONDS.toNanos(5));
            Eventually.until("the subscriber reserved its turn", () -> turnTaken(throttler));
            waiting.dispose();
            Eventually.until("the turn is back", () -> !turnTaken(throttler));
            assertThat(calls.reactiveRuns()).as("the disposed call never ran").isEqualTo(1);
        });
    }

    @Test
    void aCompletableFutureWaitsOnATimerAndACancelledOneGivesItsTurnBack() {
        this.contextRunner.run((context) -> {
            Calls calls = context.getBean(Calls.class);
            Throttler throttler = context.getBean(Throttler.class);
            assertThat(calls.later().get(5, TimeUnit.SECONDS)).isEqualTo("later");
            long start = System.nanoTime();
            CompletableFuture<String> waiting = calls.later();
            assertThat(System.nanoTime() - start)
                    .as("the caller gets its future before the turn")
                    .isLessThan(TimeUnit.SECONDS.toNanos(5));
            assertThat(waiting).isNotDone();
            assertThat(turnTaken(throttler)).isTrue();
            waiting.cancel(true);
            Eventually.until("the turn is back", () -> !turnTaken(throttler));
            assertThat(calls.laterRuns()).as("the cancelled call never ran").isEqualTo(1);
        });
    }

    @Test
    void aQuickCompletableFutureCompletesWhenItsTurnComes() {
        this.contextRunner.run((context) -> {
            Calls calls = context.getBean(Calls.class);
            long start = System.nanoTime();
            calls.quickLater().get(5, TimeUnit.SECONDS);
            assertThat(calls.quickLater().get(5, TimeUnit.SECONDS)).isEqualTo("quick");
            assertThat(System.nanoTime() - start)
                    .as("let in 500 ms after the first")
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(499));
        });
    }

    @Test
    void aCompletableFutureThatWaitedAndDeclaresAnErrorStatusKeepsWhatItTook() {
        this.contextRunner.run((context) -> {
            Calls calls = context.getBean(Calls.class);
            Throttler throttler = context.getBean(Throttler.class);
            calls.declaredFailure().get(5, TimeUnit.SECONDS);
            // over the limit: waits about a second for its turn, then answers with its declared 401
            calls.declaredFailure().get(5, TimeUnit.SECONDS);
            assertThat(throttler.peek("failing", "k").allowed())
                    .as("the failure that waited kept its turn: the next one is about a second away")
                    .isFalse();
        });
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class Application {

        @Bean
        Calls calls() {
            return new Calls();
        }
    }

    static class Calls {

        private final java.util.concurrent.atomic.AtomicInteger slowRuns =
                new java.util.concurrent.atomic.AtomicInteger();

        private final java.util.concurrent.atomic.AtomicInteger reactiveRuns =
                new java.util.concurrent.atomic.AtomicInteger();

        private final java.util.concurrent.atomic.AtomicInteger laterRuns =
                new java.util.concurrent.atomic.AtomicInteger();

        @Throttled(policy = "quick", key = "'k'")
        public String quick() {
            return "quick";
        }

        @Throttled(policy = "quick", key = "'later'")
        public CompletableFuture<String> quickLater() {
            return CompletableFuture.completedFuture("quick");
        }

        @Throttled(policy = "slow", key = "'k'")
        public String slow() {
            this.slowRuns.incrementAndGet();
            return "slow";
        }

        @Throttled(policy = "slow", key = "'k'")
        public Mono<String> reactive() {
            return Mono.fromSupplier(() -> {
                this.reactiveRuns.incrementAndGet();
                return "reactive";
            });
        }

        @Throttled(policy = "failing", key = "'k'")
        @ResponseStatus(HttpStatus.UNAUTHORIZED)
        public CompletableFuture<String> declaredFailure() {
            return CompletableFuture.completedFuture("wrong password");
        }

        @Throttled(policy = "slow", key = "'k'")
        public CompletableFuture<String> later() {
            this.laterRuns.incrementAndGet();
            return CompletableFuture.completedFuture("later");
        }

        int slowRuns() {
            return this.slowRuns.get();
        }

        int reactiveRuns() {
            return this.reactiveRuns.get();
        }

        int laterRuns() {
            return this.laterRuns.get();
        }
    }
}
