package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.support.GenericApplicationContext;

/** The connects to Redis are stopped when the application closes, and only then. */
class RedisConnectsStopTests {

    private final AtomicInteger stopped = new AtomicInteger();

    @Test
    void aContextThatClosesStopsTheConnectsAfterTheWebServerAndBeforeTheConnectionFactory() {
        List<String> stops = new CopyOnWriteArrayList<>();
        GenericApplicationContext context = new GenericApplicationContext();
        context.registerBean(RedisConnectsStop.class, RedisConnectsStop::new);
        // the phases of Spring Data Redis's LettuceConnectionFactory and of Boot's graceful shutdown
        context.registerBean("connectionFactory", Recorded.class, () -> new Recorded("connection factory", 0, stops));
        context.registerBean(
                "webServer",
                Recorded.class,
                () -> new Recorded("web server", SmartLifecycle.DEFAULT_PHASE - 1024, stops));
        context.refresh();
        context.getBean(RedisConnectsStop.class).add(() -> stops.add("connects"));
        context.close();
        assertThat(stops).containsExactly("web server", "connects", "connection factory");
    }

    @Test
    void aContextOnlyStoppedToBeStartedAgainKeepsItsConnects() {
        GenericApplicationContext context = refreshedWithCountedStop();
        context.stop();
        context.start();
        assertThat(this.stopped).hasValue(0);
        context.close();
        assertThat(this.stopped).hasValue(1);
    }

    @Test
    void aChildContextThatClosesLeavesTheParentsConnects() {
        GenericApplicationContext parent = refreshedWithCountedStop();
        GenericApplicationContext child = new GenericApplicationContext();
        child.setParent(parent);
        child.refresh();
        child.close();
        parent.publishEvent(new ContextClosedEvent(child));
        parent.stop();
        assertThat(this.stopped).hasValue(0);
        parent.start();
        parent.close();
        assertThat(this.stopped).hasValue(1);
    }

    /** A context whose connects stop counts each time it runs. */
    private GenericApplicationContext refreshedWithCountedStop() {
        GenericApplicationContext context = new GenericApplicationContext();
        context.registerBean(RedisConnectsStop.class, RedisConnectsStop::new);
        context.refresh();
        context.getBean(RedisConnectsStop.class).add(this.stopped::incrementAndGet);
        return context;
    }

    /** A lifecycle bean in a given phase that writes down when it is stopped. */
    static final class Recorded implements SmartLifecycle {

        private final String name;

        private final int phase;

        private final List<String> stops;

        private volatile boolean running;

        Recorded(String name, int phase, List<String> stops) {
            this.name = name;
            this.phase = phase;
            this.stops = stops;
        }

        @Override
        public void start() {
            this.running = true;
        }

        @Override
        public void stop() {
            this.running = false;
            this.stops.add(this.name);
        }

        @Override
        public boolean isRunning() {
            return this.running;
        }

        @Override
        public int getPhase() {
            return this.phase;
        }
    }
}
