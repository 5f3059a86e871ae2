package dev.throttle.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.context.annotation.PropertySource;

/**
 * The login demo: what a new user of throttle runs first. Boot's own DataSource is left out: with the
 * PostgreSQL driver on the classpath it would fail the start of every run not given a database;
 * {@link SampleDatabaseConfiguration} makes one when {@code spring.datasource.url} is set. Boot's Redis
 * health indicator is off ({@code health.properties}): the throttle component reports the store.
 */
@SpringBootApplication(exclude = DataSourceAutoConfiguration.class)
@PropertySource("classpath:health.properties")
public class SampleApplication {

    public static void main(String[] args) {
        SpringApplication.run(SampleApplication.class, args);
    }
}
