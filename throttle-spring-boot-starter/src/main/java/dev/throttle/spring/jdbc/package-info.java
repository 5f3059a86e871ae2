/**
 * The jdbc store: throttling state in the application's own PostgreSQL database, decided by one
 * PL/pgSQL function call per operation on Spring Boot's {@code DataSource}.
 */
@NullMarked
package dev.throttle.spring.jdbc;

import org.jspecify.annotations.NullMarked;
