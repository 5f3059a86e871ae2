package dev.throttle.spring;

import java.util.List;

/**
 * Throttling is configured in a way that cannot work: thrown at startup, never at a request.
 * Each problem names the property (and, for annotations, the method and the policy). A start
 * reports every problem it finds at once, so that one restart checks every fix: the message of
 * a single problem is that problem, and the message of several lists them one per line.
 */
public class ThrottleConfigurationException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    private final List<String> problems;

    /**
     * Creates an exception.
     * @param message what is wrong and where
     */
    public ThrottleConfigurationException(String message) {
        super(message);
        this.problems = List.of(message);
    }

    /**
     * Creates an exception with a cause.
     * @param message what is wrong and where
     * @param cause the underlying problem
     */
    public ThrottleConfigurationException(String message, Throwable cause) {
        super(message, cause);
        this.problems = List.of(message);
    }

    /**
     * Creates an exception that reports several problems at once.
     * @param problems what is wrong and where, one problem each; at least one
     */
    public ThrottleConfigurationException(List<String> problems) {
        super(message(problems));
        this.problems = List.copyOf(problems);
    }

    /**
     * Returns every problem found, each naming its property or method.
     * @return the problems, in the order they were found; never empty
     */
    public List<String> problems() {
        return this.problems;
    }

    private static String message(List<String> problems) {
        if (problems.isEmpty()) {
            throw new IllegalArgumentException("no problem to report");
        }
        if (problems.size() == 1) {
            return problems.get(0);
        }
        StringBuilder message =
                new StringBuilder().append(problems.size()).append(" mistakes in the throttling configuration:");
        problems.forEach((problem) -> message.append("\n - ").append(problem));
        return message.toString();
    }
}
