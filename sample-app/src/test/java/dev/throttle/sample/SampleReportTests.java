package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;

/**
 * {@code GET /api/report} through a real port: two reports of one client run at once, a third is
 * refused while they run and passes once one ended; a number of seconds out of range is a 400.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT)
@Import(ManualClockConfiguration.class)
class SampleReportTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    Throttler throttler;

    @Autowired
    MeterRegistry registry;

    @BeforeEach
    void startClean() {
        this.store.clear();
    }

    private HttpRequest report(String seconds) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + "/api/report?seconds=" + seconds))
                .build();
    }

    private HttpResponse<String> get(String seconds) throws Exception {
        return client.send(report(seconds), HttpResponse.BodyHandlers.ofString());
    }

    private int inUse() {
        return 2 - this.throttler.peek("reports", "127.0.0.1").remaining();
    }

    private double gaugeInUse() {
        return this.registry
                .get("throttle.concurrency.in-use")
                .tag("policy", "reports")
                .gauge()
                .value();
    }

    @Test
    void aReportAnswersItsSeconds() throws Exception {
        HttpResponse<String> report = get("0");
        assertThat(report.statusCode()).isEqualTo(200);
        assertThat(report.body()).isEqualTo("{\"seconds\":0}");
        assertThat(report.headers().firstValue("RateLimit-Policy")).hasValue("\"reports\";q=2");
    }

    @Test
    void twoReportsRunAtOnceAndAThirdIsRefusedUntilOneEnds() throws Exception {
        List<CompletableFuture<HttpResponse<String>>> running = List.of(
                client.sendAsync(report("2"), HttpResponse.BodyHandlers.ofString()),
                client.sendAsync(report("2"), HttpResponse.BodyHandlers.ofString()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        // the store holds a slot a moment before the gauge counts it: wait for both
        while ((inUse() < 2 || gaugeInUse() < 2.0) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertThat(inUse()).as("both reports in progress").isEqualTo(2);
        assertThat(gaugeInUse()).as("the gauge of slots in use").isEqualTo(2.0);
        HttpResponse<String> refused = get("0");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"reports\";r=0;t=1");
        assertThat(refused.body()).contains("\"violated-policies\":[\"reports\"]");
        for (CompletableFuture<HttpResponse<String>> report : running) {
            assertThat(report.get(20, TimeUnit.SECONDS).body()).isEqualTo("{\"seconds\":2}");
        }
        assertThat(get("0").statusCode()).as("both slots released").isEqualTo(200);
        assertThat(gaugeInUse()).isZero();
    }

    @Test
    void secondsOutOfRangeAreABadRequestAndTakeNoSlot() throws Exception {
        for (String seconds : List.of("11", "-1", "many")) {
            assertThat(get(seconds).statusCode()).as(seconds).isEqualTo(400);
        }
        assertThat(inUse()).isZero();
    }
}
