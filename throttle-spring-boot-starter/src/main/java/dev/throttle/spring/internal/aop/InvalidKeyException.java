package dev.throttle.spring.internal.aop;

import org.jspecify.annotations.Nullable;

/**
 * A {@code @Throttled} expression (key, plan or cost) that does not parse or names a variable that
 * does not exist, with the index of its throttle, so that the startup failure names the annotation.
 */
final class InvalidKeyException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int index;

    /**
     * Creates an exception.
     * @param index the throttle's index
     * @param problem what is wrong, to follow the annotation's description
     * @param cause what the parser threw, or null
     */
    InvalidKeyException(int index, String problem, @Nullable Throwable cause) {
        super(problem, cause);
        this.index = index;
    }

    int index() {
        return this.index;
    }
}
