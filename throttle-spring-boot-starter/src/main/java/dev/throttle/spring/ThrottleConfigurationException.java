package dev.throttle.spring;

/**
 * Throttling is configured in a way that cannot work: thrown at startup, never at a request.
 * The message names the property (and, for annotations, the method and the policy).
 */
public class ThrottleConfigurationException extends IllegalStateException {

	private static final long serialVersionUID = 1L;

	/**
	 * Creates an exception.
	 * @param message what is wrong and where
	 */
	public ThrottleConfigurationException(String message) {
		super(message);
	}

	/**
	 * Creates an exception with a cause.
	 * @param message what is wrong and where
	 * @param cause the underlying problem
	 */
	public ThrottleConfigurationException(String message, Throwable cause) {
		super(message, cause);
	}

}
