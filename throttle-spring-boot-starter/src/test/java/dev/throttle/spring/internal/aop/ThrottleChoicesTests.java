package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.throttle.GcraPolicy;
import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What a call chooses per call: nothing at all for a method without a plan or cost
 * expression (the hot path is as before), the plan's bound policy and the evaluated cost otherwise.
 */
class ThrottleChoicesTests {

    private final Throttler throttler = new Throttler(
            new MemoryThrottleStore(new ManualTimeSource(), 100),
            List.of(new GcraPolicy("api", 100, Duration.ofMinutes(1))),
            Map.of("api", Map.of("pro", new GcraPolicy("api", 1000, Duration.ofMinutes(1)))),
            List.of());

    private final ThrottledMethods methods = new ThrottledMethods(Admissions.of(this.throttler));

    @Test
    void aMethodWithoutPlanOrCostExpressionsUsesItsThrottlesAsTheyAreWithNothingPerCall() throws Exception {
        ThrottledMethod plain = this.methods.resolve(Calls.class.getMethod("plain", String.class), Calls.class);
        assertThat(plain.throttlesFor(new Object[] {"k"}, ThrottleRequestContext.NONE))
                .isSameAs(plain.throttles());
    }

    @Test
    void aPlanAndACostAreChosenPerCall() throws Exception {
        ThrottledMethod chosen =
                this.methods.resolve(Calls.class.getMethod("chosen", String.class, int.class), Calls.class);
        List<Charge> pro = chosen.throttlesFor(new Object[] {"pro", 7}, ThrottleRequestContext.NONE);
        assertThat(pro).singleElement().satisfies((throttle) -> {
            assertThat(throttle.policy().quota()).isEqualTo(1000);
            assertThat(throttle.cost()).isEqualTo(7);
        });
        List<Charge> base = chosen.throttlesFor(new Object[] {null, -3}, ThrottleRequestContext.NONE);
        assertThat(base).singleElement().satisfies((throttle) -> {
            assertThat(throttle.policy().quota()).isEqualTo(100);
            assertThat(throttle.cost()).as("at least 1").isEqualTo(1);
        });
    }

    @Test
    void aCallsKeysPlansAndCostsAreEvaluatedTogetherAsEachWouldBeAlone() throws Exception {
        ThrottledMethod chosen =
                this.methods.resolve(Calls.class.getMethod("chosen", String.class, int.class), Calls.class);
        ThrottledMethod.Call call = chosen.call(new Object[] {"pro", 7}, ThrottleRequestContext.NONE);
        assertThat(call.keys()).containsExactly("pro");
        assertThat(call.charges()).singleElement().satisfies((throttle) -> {
            assertThat(throttle.policy().quota()).isEqualTo(1000);
            assertThat(throttle.cost()).isEqualTo(7);
        });
        ThrottledMethod byAddress =
                this.methods.resolve(Calls.class.getMethod("planByAddress", String.class), Calls.class);
        ThrottleRequestContext request = new ThrottleRequestContext() {

            @Override
            public String clientAddress() {
                return "pro";
            }
        };
        ThrottledMethod.Call fromRequest = byAddress.call(new Object[] {"someone"}, request);
        assertThat(fromRequest.keys())
                .as("a key that reads no #ip beside a plan that does")
                .containsExactly("key:someone");
        assertThat(fromRequest.charges())
                .singleElement()
                .satisfies((throttle) -> assertThat(throttle.policy().quota()).isEqualTo(1000));
        // a plan never reads the root object a key has: one that tries fails the start, not every call
        assertThatThrownBy(() -> this.methods.resolve(Calls.class.getMethod("rooted", String.class), Calls.class))
                .hasMessageContaining("the plan expression 'args[0]' reads 'args' from the root object");
    }

    public static class Calls {

        @Throttled(policy = "api", key = "'key:' + #user", plan = "#ip")
        public void planByAddress(String user) {}

        @Throttled(policy = "api", key = "#root.args[0]", plan = "args[0]")
        public void rooted(String plan) {}

        @Throttled(policy = "api", key = "#key")
        public void plain(String key) {}

        @Throttled(policy = "api", key = "#plan", plan = "#plan", costExpression = "#units")
        public void chosen(String plan, int units) {}
    }
}
