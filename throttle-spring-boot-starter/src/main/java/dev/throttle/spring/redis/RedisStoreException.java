package dev.throttle.spring.redis;

/**
 * The Redis store could not answer: Redis was unreachable, too slow (no answer within the store's
 * timeout), or replied with an error. Its message names the operation and policy, never a key.
 */
public class RedisStoreException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     * @param message what failed, without any key
     * @param cause the underlying failure, may be null
     */
    public RedisStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
