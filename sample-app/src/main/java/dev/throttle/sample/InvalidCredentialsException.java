package dev.throttle.sample;

/**
 * Wrong e-mail or password: answered with 401.
 */
class InvalidCredentialsException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    InvalidCredentialsException() {
        super("Wrong e-mail or password", null, false, false);
    }
}
