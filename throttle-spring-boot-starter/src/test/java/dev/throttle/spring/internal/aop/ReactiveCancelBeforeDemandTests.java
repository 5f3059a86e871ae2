package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.testing.Eventually;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.reactivestreams.Subscription;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Mono;

/**
 * A subscriber that cancels after the store decided but before it asked for anything (what a web
 * server does for a client gone before its response was written) had the admission dropped with
 * nobody to end it: a concurrency slot stayed taken until its lease, a call that never ran kept
 * what it took. It is given back.
 */
@ExtendWith(OutputCaptureExtension.class)
class ReactiveCancelBeforeDemandTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withBean(Work.class)
            .withPropertyValues(
                    "throttle.policies.slots.algorithm=concurrency",
                    "throttle.policies.slots.limit=2",
                    "throttle.policies.slots.lease=10m",
                    "throttle.policies.calls.algorithm=fixed-window",
                    "throttle.policies.calls.limit=3",
                    "throttle.policies.calls.window=1h",
                    "throttle.policies.queue.algorithm=concurrency",
                    "throttle.policies.queue.limit=1",
                    "throttle.policies.queue.lease=10m",
                    "throttle.policies.queue.wait=30s");

    @Test
    void aSubscriberThatCancelsBeforeItsDemandHoldsNoSlotAndTheCallNeverRan() {
        this.contextRunner.run((context) -> {
            Work work = context.getBean(Work.class);
            Throttler throttler = context.getBean(Throttler.class);
            for (int i = 0; i < 10; i++) {
                cancelBeforeDemand(work.slow("tenant"));
            }
            assertThat(work.runs()).as("no call ran").isZero();
            assertThat(throttler.peek("slots", "tenant").remaining())
                    .as("both slots free, not held by calls whose clients left")
                    .isEqualTo(2);
            assertThat(work.slow("tenant").block()).isEqualTo("done");
        });
    }

    @Test
    void aCallWhoseSubscriberCancelsBeforeItsDemandUsesUpNothing() {
        this.contextRunner.run((context) -> {
            Work work = context.getBean(Work.class);
            Throttler throttler = context.getBean(Throttler.class);
            for (int i = 0; i < 5; i++) {
                cancelBeforeDemand(work.counted("ann"));
            }
            assertThat(throttler.peek("calls", "ann").remaining()).isEqualTo(3);
        });
    }

    @Test
    void aWaiterForASlotCancelledWhileItWaitsLeavesQuietlyAndTakesNoSlot(CapturedOutput output) {
        this.contextRunner.run((context) -> {
            Work work = context.getBean(Work.class);
            Throttler throttler = context.getBean(Throttler.class);
            Disposable holder = work.held("k").subscribe();
            assertThat(throttler.peek("queue", "k").remaining()).isZero();
            for (int i = 0; i < 5; i++) {
                Disposable waiter = work.held("k").subscribe();
                waiter.dispose();
            }
            holder.dispose();
            Eventually.until(
                    "the holder's slot released",
                    () -> throttler.peek("queue", "k").remaining() == 1);
            assertThat(output).doesNotContain("onErrorDropped").doesNotContain("CancellationException");
        });
    }

    private static void cancelBeforeDemand(Mono<String> call) {
        BaseSubscriber<String> gone = new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(Subscription subscription) {
                // asks for nothing yet
            }
        };
        call.subscribe(gone);
        gone.cancel();
    }

    static class Work {

        private final AtomicInteger runs = new AtomicInteger();

        /** Read through the proxy: its own fields are not the bean's. */
        public int runs() {
            return this.runs.get();
        }

        @Throttled(policy = "slots", key = "#tenant")
        public Mono<String> slow(String tenant) {
            this.runs.incrementAndGet();
            return Mono.just("done");
        }

        @Throttled(policy = "queue", key = "#key")
        public Mono<String> held(String key) {
            return Mono.never();
        }

        @Throttled(policy = "calls", key = "#user")
        public Mono<String> counted(String user) {
            this.runs.incrementAndGet();
            return Mono.just("done");
        }
    }
}
