package dev.throttle.sample;

import javax.sql.DataSource;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.jdbc.DataSourceBuilder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * The database of {@code --throttle.store.type=jdbc}: a pool on {@code spring.datasource.url} (and
 * {@code spring.datasource.username} and {@code password}) when one is given, and no DataSource
 * otherwise, so that the sample starts on the memory store with no database at all.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty("spring.datasource.url")
class SampleDatabaseConfiguration {

    @Bean
    DataSource dataSource(Environment environment) {
        return DataSourceBuilder.create()
                .url(environment.getRequiredProperty("spring.datasource.url"))
                .username(environment.getProperty("spring.datasource.username"))
                .password(environment.getProperty("spring.datasource.password"))
                .build();
    }
}
