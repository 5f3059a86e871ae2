package dev.throttle.spring.internal.web;

import dev.throttle.spring.web.Refusal;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;

/**
 * What the servlet and the reactive writer of a {@link Refusal} share: its problem+json body, the
 * 403 of a blocked address, and whether the client is a browser that should see an error page
 * instead of JSON. Names no servlet or reactive type.
 */
final class Refusals {

    /** The detail of a 403 for a blocked client address. */
    static final String FORBIDDEN_DETAIL = "Requests from this client address are not accepted.";

    /** The {@code application/problem+json} body of a 403 for a blocked client address. */
    static final String FORBIDDEN_JSON = "{\"type\":\"about:blank\",\"title\":\"Forbidden\",\"status\":403,"
            + "\"detail\":\"" + FORBIDDEN_DETAIL + "\"}";

    private Refusals() {}

    /**
     * The {@code application/problem+json} body of a refusal, written without a JSON library (the
     * starter runs with Jackson 2 or 3, or neither), members in the order Spring writes a
     * {@code ProblemDetail}.
     * @param refusal the refusal
     * @param instance the request's path, or null
     * @return the body
     */
    static String problemJson(Refusal refusal, @Nullable String instance) {
        StringBuilder json = new StringBuilder(256);
        json.append("{\"type\":");
        quote(json, refusal.type().toString());
        json.append(",\"title\":");
        quote(json, refusal.title());
        json.append(",\"status\":").append(refusal.status().value()).append(",\"detail\":");
        quote(json, refusal.detail());
        if (instance != null) {
            json.append(",\"instance\":");
            quote(json, instance);
        }
        refusal.properties().forEach((name, value) -> {
            json.append(',');
            quote(json, name);
            json.append(':');
            value(json, value);
        });
        return json.append('}').toString();
    }

    private static void value(StringBuilder json, @Nullable Object value) {
        if (value == null || value instanceof Number || value instanceof Boolean) {
            json.append(value);
        } else if (value instanceof Iterable<?> items) {
            json.append('[');
            String separator = "";
            for (Object item : items) {
                json.append(separator);
                value(json, item);
                separator = ",";
            }
            json.append(']');
        } else {
            quote(json, value.toString());
        }
    }

    /**
     * Whether a client asked for HTML and not JSON (a browser loading a page), so that it gets the
     * application's error page rather than problem+json. Wildcards count for neither: a browser
     * sends {@code text/html,...,*}{@code /*;q=0.8}, and {@code curl} sends only {@code *}{@code /*}.
     * @param accept the {@code Accept} header values, or null
     * @return whether {@code text/html} is accepted explicitly and no JSON type is
     */
    static boolean prefersHtml(List<String> accept) {
        if (accept == null || accept.isEmpty()) {
            return false;
        }
        boolean html = false;
        try {
            for (String value : accept) {
                for (MediaType type : MediaType.parseMediaTypes(value)) {
                    if (type.getQualityValue() <= 0) {
                        continue;
                    }
                    if (isJson(type)) {
                        return false;
                    }
                    html |= MediaType.TEXT_HTML.equalsTypeAndSubtype(type)
                            || MediaType.APPLICATION_XHTML_XML.equalsTypeAndSubtype(type);
                }
            }
        } catch (InvalidMediaTypeException ex) {
            return false;
        }
        return html;
    }

    private static boolean isJson(MediaType type) {
        if (type.isWildcardSubtype()) {
            return false;
        }
        return "json".equals(type.getSubtype()) || "json".equals(type.getSubtypeSuffix());
    }

    private static void quote(StringBuilder json, String text) {
        json.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> json.append("\\\"");
                case '\\' -> json.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        json.append(String.format("\\u%04x", (int) c));
                    } else {
                        json.append(c);
                    }
                }
            }
        }
        json.append('"');
    }
}
