package dev.throttle.spring.jdbc;

/**
 * The jdbc store could not answer: the database was unreachable, too slow (no answer within the
 * store's timeout, or every one of the store's connections busy), or answered with an error. Its
 * message names the operation and policy, never a key.
 */
public class JdbcStoreException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     * @param message what failed, without any key
     * @param cause the underlying failure
     */
    public JdbcStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
