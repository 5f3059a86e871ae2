package dev.throttle.spring.security;

import org.springframework.util.ClassUtils;

/**
 * The security tests run in a Surefire execution of their own, whose class path has Spring
 * Security's web and config modules and Boot's security auto-configuration; every other test runs
 * without them (Boot would otherwise secure every endpoint of every test application). Named on
 * the command line ({@code -Dtest=...}), they run in both executions and are skipped in the other.
 */
final class SecurityTests {

	private SecurityTests() {
	}

	static boolean onClassPath() {
		return ClassUtils.isPresent("org.springframework.security.web.SecurityFilterChain",
				SecurityTests.class.getClassLoader());
	}

}
