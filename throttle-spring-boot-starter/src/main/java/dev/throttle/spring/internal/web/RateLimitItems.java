package dev.throttle.spring.internal.web;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Keeps one item per policy in the rate-limit fields of one response. A request can make several
 * throttled calls (a handler and a service it calls); each adds its decisions, and a policy that
 * appears again replaces its earlier item in place, so that the response has one line per field
 * and describes each policy once, by its latest decision. Names no servlet or reactive type.
 */
final class RateLimitItems {

    /** Between two items of a list: each item starts with its policy's quoted name. */
    private static final Pattern ITEM_SEPARATOR = Pattern.compile(", (?=\")");

    private RateLimitItems() {}

    /**
     * Merges two lists of items ({@code "api";r=2;t=20, "burst";r=9;t=1}).
     * @param earlier the items already in the response, or null
     * @param later the items to add
     * @return the merged list
     */
    static String merged(String earlier, String later) {
        if (earlier == null) {
            return later;
        }
        Map<String, String> items = new LinkedHashMap<>();
        putItems(items, earlier);
        putItems(items, later);
        return String.join(", ", items.values());
    }

    private static void putItems(Map<String, String> items, String value) {
        for (String item : ITEM_SEPARATOR.split(value)) {
            int name = item.indexOf('"', 1);
            items.put((item.startsWith("\"") && name > 0) ? item.substring(0, name + 1) : item, item);
        }
    }
}
