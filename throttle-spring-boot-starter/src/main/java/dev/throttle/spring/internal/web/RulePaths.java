package dev.throttle.spring.internal.web;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.http.server.PathContainer;
import org.springframework.web.util.UriUtils;

/**
 * The spellings of one request path that a URL rule must not let escape it. A rule matches the
 * path as Spring MVC and WebFlux parse it (after the context path, each segment decoded, path
 * parameters such as {@code ;jsessionid=..} dropped) and also its normalized form: empty segments
 * ({@code //}, a trailing {@code /}) and {@code .} dropped, {@code ..} applied, and an encoded
 * {@code /} ({@code %2F}) split, so that {@code /api//hello/}, {@code /api/./x/../hello} and
 * {@code /api%2Fhello} are charged like {@code /api/hello} even where a container or a lenient
 * mapping would route them there. Case is the rule patterns' business (they ignore it).
 * Matching more spellings than a handler accepts costs a 404 a unit; matching fewer would let a
 * client escape the limit.
 */
final class RulePaths {

    private RulePaths() {}

    /**
     * Returns the normalized form of a path, or null when it is the path itself.
     * @param path the path within the application, as parsed from the raw request URI
     * @return the normalized path, or null
     */
    static @Nullable PathContainer normalized(PathContainer path) {
        if (!unusual(path.value())) {
            return null;
        }
        List<String> segments = new ArrayList<>();
        for (PathContainer.Element element : path.elements()) {
            if (!(element instanceof PathContainer.PathSegment segment)) {
                continue;
            }
            for (String part : segment.valueToMatch().split("/", -1)) {
                if (part.isEmpty() || part.equals(".")) {
                    continue;
                }
                if (part.equals("..")) {
                    if (!segments.isEmpty()) {
                        segments.remove(segments.size() - 1);
                    }
                    continue;
                }
                segments.add(part);
            }
        }
        StringBuilder normalized = new StringBuilder(path.value().length());
        for (String segment : segments) {
            normalized.append('/').append(UriUtils.encodePathSegment(segment, StandardCharsets.UTF_8));
        }
        return PathContainer.parsePath((normalized.length() > 0) ? normalized.toString() : "/");
    }

    /** Whether a raw path has anything normalizing would change: the common path allocates nothing. */
    private static boolean unusual(String path) {
        int length = path.length();
        if (length > 1 && path.charAt(length - 1) == '/') {
            return true;
        }
        for (int i = 0; i < length; i++) {
            char c = path.charAt(i);
            if (c == '%' || c == ';') {
                return true;
            }
            if (c == '/' && i + 1 < length) {
                char next = path.charAt(i + 1);
                if (next == '/' || next == '.') {
                    return true;
                }
            }
        }
        return false;
    }
}
