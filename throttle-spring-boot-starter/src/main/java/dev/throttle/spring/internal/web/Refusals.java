package dev.throttle.spring.internal.web;

import java.util.List;

import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;

import dev.throttle.Decision;
import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.PolicyDecision;

/**
 * What every entry point answers a refusal with, whatever writes it (the MVC and WebFlux advice,
 * the URL-rule filters, the Spring Security hook): the wording, the header values, the problem
 * body, and whether the client is a browser that should see an error page instead of JSON.
 * Names no servlet or reactive type.
 */
public final class Refusals {

	/** The problem type of a refusal (RFC 9457 registry). */
	public static final String QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded";

	/** The detail of a 403 for a blocked client address. */
	public static final String FORBIDDEN_DETAIL = "Requests from this client address are not accepted.";

	private static final String FORBIDDEN_JSON = "{\"type\":\"about:blank\",\"title\":\"Forbidden\",\"status\":403,"
			+ "\"detail\":\"" + FORBIDDEN_DETAIL + "\"}";

	private Refusals() {
	}

	/**
	 * The {@code Retry-After} value in whole seconds rounded up (at least 1).
	 * @param refusal the refusal
	 * @return the value, or null for a call that can never pass (a cost above capacity)
	 */
	public static String retryAfter(ThrottledException refusal) {
		Decision decision = refusal.getDecision();
		return decision.canSucceedLater() ? Long.toString(Math.max(1, decision.retryAfterSeconds())) : null;
	}

	/**
	 * The {@code RateLimit-Policy} value of a refusal.
	 * @param refusal the refusal
	 * @return the value
	 */
	public static String rateLimitPolicy(ThrottledException refusal) {
		return RateLimitHeaders.policy(decisions(refusal));
	}

	/**
	 * The {@code RateLimit} value of a refusal.
	 * @param refusal the refusal
	 * @return the value
	 */
	public static String rateLimit(ThrottledException refusal) {
		return RateLimitHeaders.limit(decisions(refusal));
	}

	private static List<PolicyDecision> decisions(ThrottledException refusal) {
		return List.of(new PolicyDecision(refusal.getPolicy(), refusal.getDecision()));
	}

	/**
	 * The problem's {@code detail}: which policy refused and for how long, never the key.
	 * @param refusal the refusal
	 * @return the detail
	 */
	public static String detail(ThrottledException refusal) {
		Decision decision = refusal.getDecision();
		String policy = refusal.getPolicy().name();
		if (!decision.canSucceedLater()) {
			return "This request costs more than policy '" + policy + "' can ever grant.";
		}
		long seconds = Math.max(1, decision.retryAfterSeconds());
		return "Too many requests under policy '" + policy + "'; retry after " + seconds
				+ ((seconds == 1) ? " second." : " seconds.");
	}

	/**
	 * The {@code application/problem+json} body of a 429, written without a JSON library (the
	 * starter runs with Jackson 2 or 3, or neither).
	 * @param refusal the refusal
	 * @return the body
	 */
	public static String problemJson(ThrottledException refusal) {
		StringBuilder json = new StringBuilder(256);
		json.append("{\"type\":\"").append(QUOTA_EXCEEDED).append("\",\"title\":\"Too Many Requests\",\"status\":429,");
		json.append("\"detail\":");
		quote(json, detail(refusal));
		json.append(",\"violated-policies\":[");
		quote(json, refusal.getPolicy().name());
		return json.append("]}").toString();
	}

	/**
	 * The {@code application/problem+json} body of a 403 for a blocked client address.
	 * @return the body
	 */
	public static String forbiddenJson() {
		return FORBIDDEN_JSON;
	}

	/**
	 * Whether a client asked for HTML and not JSON (a browser loading a page), so that it gets the
	 * application's error page rather than problem+json. Wildcards count for neither: a browser
	 * sends {@code text/html,...,*}{@code /*;q=0.8}, and {@code curl} sends only {@code *}{@code /*}.
	 * @param accept the {@code Accept} header values, or null
	 * @return whether {@code text/html} is accepted explicitly and no JSON type is
	 */
	public static boolean prefersHtml(List<String> accept) {
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
		}
		catch (InvalidMediaTypeException ex) {
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
					}
					else {
						json.append(c);
					}
				}
			}
		}
		json.append('"');
	}

}
