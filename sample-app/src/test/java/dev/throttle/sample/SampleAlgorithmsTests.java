package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Every algorithm behind {@code GET /api/hello}, each configured by a file of the user's own
 * ({@code --spring.config.location}) that defines only the sample's three policies; and a policy
 * changed from the command line.
 */
class SampleAlgorithmsTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    private static ConfigurableApplicationContext start(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.add("--server.port=0");
        return new SpringApplicationBuilder(SampleApplication.class, ManualClockConfiguration.class)
                .run(all.toArray(String[]::new));
    }

    private static String hello(ConfigurableApplicationContext context) throws Exception {
        return hello(context, null);
    }

    private static String hello(ConfigurableApplicationContext context, String apiKey) throws Exception {
        int port = ((WebServerApplicationContext) context).getWebServer().getPort();
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/api/hello"));
        if (apiKey != null) {
            request.header("X-Api-Key", apiKey);
        }
        HttpResponse<String> response = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
        return response.statusCode()
                + response.headers()
                        .firstValue("Retry-After")
                        .map((s) -> "/" + s)
                        .orElse("");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
			token-bucket | 200,200,200,429/10 | 10 | 200,429/10
			gcra         | 200,200,200,429/10 | 10 | 200,429/10
			fixed-window | 200,200,200,429/10 | 10 | 200,200,200,429/10
			sliding-log  | 200,200,200,429/10 | 10 | 200,429/20
			lockout      | 200,429/10,429/10,429/10 | 10 | 200,429/20
			""")
    void helloFollowsEachAlgorithmConfiguredInTheUsersOwnFile(
            String algorithm, String first, int waitSeconds, String second) throws Exception {
        try (ConfigurableApplicationContext context =
                start("--spring.config.location=classpath:/algorithms/" + algorithm + ".yml")) {
            assertThat(calls(context, first.split(",").length)).isEqualTo(first);
            context.getBean(ManualTimeSource.class).advance(Duration.ofSeconds(waitSeconds));
            assertThat(calls(context, second.split(",").length)).isEqualTo(second);
        }
    }

    private static String calls(ConfigurableApplicationContext context, int count) throws Exception {
        List<String> outcomes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            outcomes.add(hello(context));
        }
        return String.join(",", outcomes);
    }

    @Test
    void aPlansNumbersCanBeChangedFromTheCommandLine() throws Exception {
        try (ConfigurableApplicationContext context =
                start("--throttle.policies.api.plans.free.limit=2", "--throttle.policies.api.plans.free.period=10s")) {
            List<String> outcomes = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                outcomes.add(hello(context, "free-key"));
            }
            assertThat(String.join(",", outcomes)).isEqualTo("200,200,429/5");
            assertThat(hello(context)).as("the base numbers, per address").isEqualTo("200");
        }
    }

    @Test
    void anyPolicyCanBeChangedFromTheCommandLine() throws Exception {
        try (ConfigurableApplicationContext context = start("--throttle.policies.api.limit=3")) {
            assertThat(calls(context, 4)).isEqualTo("200,200,200,429/20");
        }
    }
}
