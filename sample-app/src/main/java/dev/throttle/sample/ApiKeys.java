package dev.throttle.sample;

import org.springframework.stereotype.Component;

/**
 * The demo's API keys and their plans: in a real application, an account lookup. {@code free-key} is
 * on the {@code free} plan and {@code pro-key} on {@code pro}; any other key is not a key of the
 * application, so calls with it are throttled by their client address under the {@code api} policy's
 * base numbers, like calls without a key.
 */
@Component("apiKeys")
public class ApiKeys {

    /**
     * Returns the plan of an API key.
     * @param apiKey the key, or null
     * @return {@code free}, {@code pro}, or null for no key or one the application does not know
     */
    public String planOf(String apiKey) {
        if (apiKey == null) {
            return null;
        }
        return switch (apiKey) {
            case "free-key" -> "free";
            case "pro-key" -> "pro";
            default -> null;
        };
    }
}
