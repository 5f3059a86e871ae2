package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.tracing.MicrometerTracing;
import io.lettuce.core.tracing.TraceContext;
import io.lettuce.core.tracing.TraceContextProvider;
import io.lettuce.core.tracing.Tracing;
import io.micrometer.observation.Observation;
import io.micrometer.observation.tck.TestObservationRegistry;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import reactor.core.publisher.Mono;

/**
 * What a call to Redis carries of its caller's trace: nothing, and the call untouched (no allocation),
 * while Lettuce does not trace or nothing is observed; the current observation, for Lettuce to find
 * on whichever thread it sends the command, while something is.
 */
class CallerTraceTests {

    @Test
    void withoutLettucesTracingACallGoesAsItIs() {
        Mono<String> call = Mono.just("OK");
        assertThat(CallerTrace.of(new LettuceConnectionFactory()).around(call)).isSameAs(call);
    }

    @Test
    void whileNothingIsObservedACallGoesAsItIs() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        ClientResources resources = ClientResources.builder()
                .tracing(new MicrometerTracing(registry, "redis"))
                .build();
        try {
            Mono<String> call = Mono.just("OK");
            assertThat(CallerTrace.of(factory(resources)).around(call)).isSameAs(call);
        } finally {
            resources.shutdown();
        }
    }

    @Test
    void lettuceFindsTheObservationThatWasCurrentWhenTheCallWasMadeAfterItsScopeClosed() {
        TestObservationRegistry registry = TestObservationRegistry.create();
        ClientResources resources = ClientResources.builder()
                .tracing(new MicrometerTracing(registry, "redis"))
                .build();
        try {
            CallerTrace trace = CallerTrace.of(factory(resources));
            Mono<TraceContext> foundByLettuce =
                    Tracing.getContext().flatMap(TraceContextProvider::getTraceContextLater);
            AtomicReference<Mono<TraceContext>> call = new AtomicReference<>();
            Observation.createNotStarted("checkout", registry).observe(() -> call.set(trace.around(foundByLettuce)));
            assertThat(registry.getCurrentObservation()).isNull();
            TraceContext found = call.get().block();
            assertThat(found).isNotNull().isNotSameAs(TraceContext.EMPTY);
            assertThat(foundByLettuce.blockOptional())
                    .as("nothing without the caller's trace")
                    .isEmpty();
        } finally {
            resources.shutdown();
        }
    }

    private static LettuceConnectionFactory factory(ClientResources resources) {
        return new LettuceConnectionFactory(
                new RedisStandaloneConfiguration(),
                LettuceClientConfiguration.builder().clientResources(resources).build());
    }
}
