package dev.throttle.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/**
 * The log lines of {@code dev.throttle.*} during each test, for tests that count WARNs and INFOs:
 * {@code @RegisterExtension final ThrottleLogs logs = new ThrottleLogs();}. Core logs through
 * {@code System.Logger} (java.util.logging here), which is routed to Logback first.
 */
public final class ThrottleLogs implements BeforeEachCallback, AfterEachCallback {

    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    @Override
    public void beforeEach(ExtensionContext context) {
        if (!SLF4JBridgeHandler.isInstalled()) {
            SLF4JBridgeHandler.removeHandlersForRootLogger();
            SLF4JBridgeHandler.install();
        }
        clear();
        this.appender.start();
        logger().addAppender(this.appender);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        logger().detachAppender(this.appender);
        this.appender.stop();
    }

    /**
     * The messages logged at {@code level} so far, in order.
     * @param level the level
     * @return the formatted messages
     */
    public List<String> messages(Level level) {
        synchronized (this.appender.list) {
            return this.appender.list.stream()
                    .filter((event) -> event.getLevel() == level)
                    .map(ILoggingEvent::getFormattedMessage)
                    .toList();
        }
    }

    /**
     * The WARN messages so far.
     * @return the formatted messages
     */
    public List<String> warnings() {
        return messages(Level.WARN);
    }

    /** Forgets what was logged so far. */
    public void clear() {
        synchronized (this.appender.list) {
            this.appender.list.clear();
        }
    }

    private static Logger logger() {
        return (Logger) LoggerFactory.getLogger("dev.throttle");
    }
}
