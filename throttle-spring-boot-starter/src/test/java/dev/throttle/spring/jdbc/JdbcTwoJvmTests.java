package dev.throttle.spring.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.throttle.Limiter;
import dev.throttle.Policy;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.jdbc.SharedPostgres;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Two JVMs, 32 threads each, on one key: together they never pass more than the policy holds. The
 * second JVM is {@link JdbcSecondJvm}, started on this test's classpath; both start on one go.
 */
class JdbcTwoJvmTests {

    static final Policy POLICY = TokenBucketPolicy.of("two-jvms", 500, Duration.ofDays(1));

    private static final int THREADS = 32;

    private static final int CALLS = 40;

    @Test
    void twoJvmsOfThirtyTwoThreadsOnOneKeyNeverPassMoreThanThePolicy() throws Exception {
        SharedPostgres.clear();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process second = new ProcessBuilder(
                        java,
                        "-cp",
                        System.getProperty("java.class.path"),
                        JdbcSecondJvm.class.getName(),
                        SharedPostgres.url(),
                        Integer.toString(THREADS),
                        Integer.toString(CALLS))
                .redirectErrorStream(true)
                .start();
        try (HikariDataSource pool = SharedPostgres.newDataSource(8);
                JdbcThrottleStore store =
                        new JdbcThrottleStore(pool, "throttle_", Duration.ofSeconds(30), 8, null, null, 0);
                BufferedReader out =
                        new BufferedReader(new InputStreamReader(second.getInputStream(), StandardCharsets.UTF_8))) {
            Limiter limiter = store.limiter(POLICY);
            limiter.peek("warm-up");
            StringBuilder seen = new StringBuilder();
            String line;
            while ((line = out.readLine()) != null && !line.equals("ready")) {
                seen.append(line).append('\n');
            }
            assertThat(line).as("the second JVM's output:\n" + seen).isEqualTo("ready");
            // both JVMs start two seconds after the go, on the machine's clock: time for the second to
            // see it on a busy machine
            long startAt = System.currentTimeMillis() + 2_000;
            SharedPostgres.execute(
                    "INSERT INTO throttle_state VALUES ('" + JdbcSecondJvm.GO + "', 'go', '{}', " + startAt + ")");
            long here = JdbcSecondJvm.run(limiter, THREADS, CALLS, startAt);
            long there = -1;
            while ((line = out.readLine()) != null) {
                if (line.startsWith("passed ")) {
                    there = Long.parseLong(line.substring("passed ".length()));
                } else {
                    seen.append(line).append('\n');
                }
            }
            assertThat(second.waitFor(2, TimeUnit.MINUTES)).isTrue();
            assertThat(second.exitValue())
                    .as("the second JVM's output:\n" + seen)
                    .isZero();
            assertThat(there).as("the second JVM's passes").isGreaterThan(0);
            assertThat(here).as("this JVM's passes").isGreaterThan(0);
            assertThat(here + there).isEqualTo(500);
        } finally {
            second.destroyForcibly();
        }
    }
}
