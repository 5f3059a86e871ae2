package dev.throttle.testing.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import org.springframework.data.redis.connection.RedisPassword;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Where a standalone Redis answers, with helpers to reach it: a raw Lettuce client for test
 * plumbing, and a Spring {@link LettuceConnectionFactory} like the one Spring Boot builds.
 *
 * @param host the host
 * @param port the port
 * @param username the ACL user, or null
 * @param password the password, or null
 * @param database the database index
 */
public record RedisEndpoint(String host, int port, String username, String password, int database) {

    /**
     * An endpoint without a password, database 0.
     * @param host the host
     * @param port the port
     * @return the endpoint
     */
    public static RedisEndpoint of(String host, int port) {
        return new RedisEndpoint(host, port, null, null, 0);
    }

    /**
     * Parses a {@code redis://[[user]:password@]host[:port][/database]} URL, as in {@code REDIS_URL}.
     * @param url the URL
     * @return the endpoint
     */
    public static RedisEndpoint parse(String url) {
        java.net.URI uri = java.net.URI.create(url);
        String username = null;
        String password = null;
        if (uri.getUserInfo() != null) {
            String info = uri.getUserInfo();
            int colon = info.indexOf(':');
            username = (colon > 0) ? info.substring(0, colon) : null;
            password = (colon >= 0) ? info.substring(colon + 1) : info;
        }
        String path = (uri.getPath() != null) ? uri.getPath().replace("/", "") : "";
        return new RedisEndpoint(
                uri.getHost(),
                (uri.getPort() > 0) ? uri.getPort() : 6379,
                username,
                password,
                path.isEmpty() ? 0 : Integer.parseInt(path));
    }

    /**
     * Returns the Lettuce URI.
     * @return the URI
     */
    public RedisURI uri() {
        RedisURI.Builder builder =
                RedisURI.builder().withHost(this.host).withPort(this.port).withDatabase(this.database);
        if (this.password != null) {
            if (this.username != null) {
                builder.withAuthentication(this.username, this.password);
            } else {
                builder.withPassword(this.password.toCharArray());
            }
        }
        return builder.build();
    }

    /**
     * Returns the URL, for {@code spring.data.redis.url}.
     * @return for example {@code redis://127.0.0.1:6379}
     */
    public String url() {
        String auth = (this.password == null)
                ? ""
                : ((this.username != null) ? this.username : "") + ":" + this.password + "@";
        return "redis://" + auth + this.host + ":" + this.port + "/" + this.database;
    }

    /**
     * Opens a raw Lettuce connection; the caller closes it, and then {@code client} too.
     * @return a new client (shut it down when done)
     */
    public RedisClient newClient() {
        RedisClient client = RedisClient.create(uri());
        client.setOptions(ClientOptions.builder().autoReconnect(false).build());
        return client;
    }

    /**
     * Runs {@code FLUSHALL} on this endpoint.
     */
    public void flushAll() {
        RedisClient client = newClient();
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            connection.sync().flushall();
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
        }
    }

    /**
     * Builds and starts a Spring connection factory for this endpoint, as Spring Boot would from
     * {@code spring.data.redis.*}, but reconnecting quickly (at most 200 ms between attempts) so
     * failure-mode tests see Redis come back promptly. Destroy it when done.
     * @return a started factory (both imperative and reactive)
     */
    public LettuceConnectionFactory newConnectionFactory() {
        RedisStandaloneConfiguration standalone = new RedisStandaloneConfiguration(host(), port());
        standalone.setDatabase(this.database);
        if (this.password != null) {
            standalone.setPassword(RedisPassword.of(this.password));
        }
        if (this.username != null) {
            standalone.setUsername(this.username);
        }
        LettuceClientConfiguration clientConfiguration = LettuceClientConfiguration.builder()
                .clientResources(Resources.SHARED)
                .commandTimeout(Duration.ofSeconds(5))
                .build();
        LettuceConnectionFactory factory = new LettuceConnectionFactory(standalone, clientConfiguration);
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }

    /** One set of Lettuce resources (event loops) for every test factory in this JVM. */
    static final class Resources {

        static final ClientResources SHARED = ClientResources.builder()
                .reconnectDelay(Delay.exponential(
                        Duration.ofMillis(10), Duration.ofMillis(200), 2, java.util.concurrent.TimeUnit.MILLISECONDS))
                .build();

        private Resources() {}
    }
}
