package dev.throttle.resilience;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.throttle.Decision;
import dev.throttle.ManualTimeSource;
import org.junit.jupiter.api.Test;

/**
 * What a store's remembered refusals answer, on a manual clock: the time left from when the call was
 * sent, only for the limiter and cost refused, and never a refusal that a forget overtook.
 */
class RefusalMemoryTests {

    private final ManualTimeSource clock = new ManualTimeSource();

    private final RefusalMemory memory = new RefusalMemory(100, 50, this.clock);

    private final Object limiter = new Object();

    @Test
    void aRefusalIsAnsweredWithTheTimeLeftCountedFromWhenTheCallWasSent() {
        long sentAt = this.memory.now();
        this.clock.advanceMillis(40);
        this.memory.remember("k", 1, this.limiter, Decision.reject(10, 0, 1_000, 5_000), sentAt, this.memory.epoch());
        Decision answer = this.memory.answer("k", 1, this.limiter);
        assertThat(answer.allowed()).isFalse();
        assertThat(answer.limit()).isEqualTo(10);
        assertThat(answer.retryAfterMillis()).isEqualTo(960);
        assertThat(answer.resetAfterMillis()).isEqualTo(4_960);
        this.clock.advanceMillis(959);
        assertThat(this.memory.answer("k", 1, this.limiter).retryAfterMillis()).isEqualTo(1);
        this.clock.advanceMillis(1);
        assertThat(this.memory.answer("k", 1, this.limiter)).isNull();
    }

    @Test
    void onlyTheLimiterAndTheCostThatWereRefusedAreAnswered() {
        remember("k", 1, Decision.reject(10, 0, 1_000, 1_000));
        assertThat(this.memory.answer("k", 1, new Object())).isNull();
        assertThat(this.memory.answer("k", 2, this.limiter)).isNull();
        assertThat(this.memory.answer("other", 1, this.limiter)).isNull();
        assertThat(this.memory.answer("k", 1, this.limiter)).isNotNull();
    }

    @Test
    void refusalsOfALargerCostShortWaitsAndNeverAreNotRemembered() {
        remember("cost", 3, Decision.reject(10, 0, 1_000, 1_000));
        remember("short", 1, Decision.reject(10, 0, 49, 49));
        remember("never", 1, Decision.reject(10, 0, Decision.NEVER, Decision.NEVER));
        assertThat(this.memory.answer("cost", 3, this.limiter)).isNull();
        assertThat(this.memory.answer("short", 1, this.limiter)).isNull();
        assertThat(this.memory.answer("never", 1, this.limiter)).isNull();
        assertThat(this.memory.size()).isZero();
    }

    @Test
    void anAllowedCallAndAForgetDropTheKey() {
        remember("allowed", 1, Decision.reject(10, 0, 1_000, 1_000));
        remember("allowed", 1, Decision.allow(10, 9, 1_000));
        assertThat(this.memory.answer("allowed", 1, this.limiter)).isNull();
        remember("forgotten", 1, Decision.reject(10, 0, 1_000, 1_000));
        remember("all", 1, Decision.reject(10, 0, 1_000, 1_000));
        this.memory.forget("forgotten");
        assertThat(this.memory.answer("forgotten", 1, this.limiter)).isNull();
        assertThat(this.memory.answer("all", 1, this.limiter)).isNotNull();
        this.memory.forgetAll();
        assertThat(this.memory.answer("all", 1, this.limiter)).isNull();
    }

    @Test
    void aRefusalSentBeforeAForgetIsNotRememberedWhenItsAnswerComesAfter() {
        long sentAt = this.memory.now();
        long sentEpoch = this.memory.epoch();
        this.memory.forget("k");
        this.memory.remember("k", 1, this.limiter, Decision.reject(10, 0, 1_000, 1_000), sentAt, sentEpoch);
        assertThat(this.memory.answer("k", 1, this.limiter)).isNull();
    }

    @Test
    void aMemoryOfNoKeysIsRefused() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new RefusalMemory(0, 50, null))
                .withMessageContaining("maximumKeys must be at least 1");
    }

    private void remember(String key, int cost, Decision decision) {
        this.memory.remember(key, cost, this.limiter, decision, this.memory.now(), this.memory.epoch());
    }
}
