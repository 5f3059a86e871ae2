package dev.throttle.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;

/**
 * The login demo: what a new user of throttle runs first. Boot's own DataSource is left out: with the
 * PostgreSQL driver on the classpath it would fail the start of every run not given a database;
 * {@link SampleDatabaseConfiguration} makes one when {@code spring.datasource.url} is set.
 */
@SpringBootApplication(exclude = DataSourceAutoConfiguration.class)
public class SampleApplication {

    public static void main(String[] args) {
        SpringApplication.run(SampleApplication.class, args);
    }
}
