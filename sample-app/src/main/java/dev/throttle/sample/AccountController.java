package dev.throttle.sample;

import java.util.Map;
import org.springframework.http.MediaType;
import org.springframework.security.core.Authentication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.util.HtmlUtils;

/**
 * What a signed-in user sees: {@code GET /account} (a page, after form login) and
 * {@code GET /api/me} (JSON, with HTTP Basic).
 */
@RestController
class AccountController {

    @GetMapping(path = "/account", produces = MediaType.TEXT_HTML_VALUE)
    String account(Authentication user) {
        return """
				<!DOCTYPE html>
				<html lang="en">
				<head><meta charset="utf-8"><title>Your account</title></head>
				<body>
				<h1>Your account</h1>
				<p>Signed in as <strong id="email">%s</strong>.</p>
				<p><a href="/logout">Sign out</a></p>
				</body>
				</html>
				""".formatted(HtmlUtils.htmlEscape(user.getName()));
    }

    @GetMapping("/api/me")
    Map<String, String> me(Authentication user) {
        return Map.of("email", user.getName());
    }
}
