package dev.throttle.sample;

import jakarta.validation.constraints.NotBlank;

/**
 * The body of {@code POST /api/login}.
 *
 * @param email the user's e-mail address
 * @param password the password
 */
public record LoginForm(@NotBlank String email, @NotBlank String password) {}
