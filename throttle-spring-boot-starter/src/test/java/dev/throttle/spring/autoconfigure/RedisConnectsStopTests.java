package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.support.GenericApplicationContext;

/** The connects to Redis are stopped when the application closes, and only then. */
class RedisConnectsStopTests {

    private final AtomicInteger stopped = new AtomicInteger();

    @Test
    void aContextThatClosesStopsTheConnectsAfterTheWebServerAndBeforeTheConnectionFactory() {
        GenericApplicationContext context = new GenericApplicationContext();
        context.registerBean(RedisConnectsStop.class, RedisConnectsStop::new);
        context.refresh();
        context.getBean(RedisConnectsStop.class).add(this.stopped::incrementAndGet);
        context.close();
        assertThat(this.stopped).hasValue(1);
        // Spring Data Redis's LettuceConnectionFactory is in phase 0; the web server's shutdown far above
        assertThat(RedisConnectsStop.PHASE).isPositive();
    }

    @Test
    void aContextOnlyStoppedToBeStartedAgainKeepsItsConnects() {
        GenericApplicationContext context = new GenericApplicationContext();
        context.registerBean(RedisConnectsStop.class, RedisConnectsStop::new);
        context.refresh();
        context.getBean(RedisConnectsStop.class).add(this.stopped::incrementAndGet);
        context.stop();
        context.start();
        assertThat(this.stopped).hasValue(0);
        context.close();
        assertThat(this.stopped).hasValue(1);
    }

    @Test
    void aChildContextThatClosesLeavesTheParentsConnects() {
        GenericApplicationContext parent = new GenericApplicationContext();
        parent.registerBean(RedisConnectsStop.class, RedisConnectsStop::new);
        parent.refresh();
        parent.getBean(RedisConnectsStop.class).add(this.stopped::incrementAndGet);
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
}
