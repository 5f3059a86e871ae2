package dev.throttle.sample;

import org.springframework.stereotype.Component;

/**
 * The demo's API keys and their plans: in a real application, an account lookup. {@code free-key} is
 * on the {@code free} plan and {@code pro-key} on {@code pro}; any other key has no plan, so calls
 * with it get the {@code api} policy's base numbers.
 */
@Component("apiKeys")
public class ApiKeys {

    /**
     * Returns the plan of an API key.
     * @param apiKey the key, or null
     * @return {@code free}, {@code pro}, or null for a key without a plan
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
