package dev.throttle.sample;

import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;

/**
 * Spring MVC's own errors (a malformed body, a missing field) as {@code application/problem+json},
 * like the API's 401 and the starter's 429. In code rather than as
 * {@code spring.mvc.problemdetails.enabled} in {@code application.yml}: a user who starts the app
 * with a configuration file of their own ({@code --spring.config.location}) replaces that file,
 * and would silently get a different error format.
 */
@RestControllerAdvice
class ApiProblemDetails extends ResponseEntityExceptionHandler {}
