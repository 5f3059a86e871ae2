package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;

/**
 * {@code GET /api/export} through a real port: one row is charged before the export and the rows it
 * returned settle the rest, so an address pays for what it took; an export larger than what was
 * left puts the address into debt, which later exports wait for. Rows out of range are a 400 that
 * keeps its estimate.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT)
@Import(ManualClockConfiguration.class)
class SampleExportTests {

    private static final HttpClient client = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    Throttler throttler;

    @Autowired
    ManualTimeSource clock;

    @BeforeEach
    void startClean() {
        this.store.clear();
    }

    private HttpResponse<String> export(String rows) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + "/api/export?rows=" + rows))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private int left() {
        return this.throttler.peek("export", "127.0.0.1").remaining();
    }

    @Test
    void anExportIsChargedTheRowsItReturned() throws Exception {
        HttpResponse<String> export = export("3");
        assertThat(export.statusCode()).isEqualTo(200);
        assertThat(export.body()).isEqualTo("{\"rows\":[0,1,2]}");
        assertThat(left()).isEqualTo(20_000 - 3);
        assertThat(export("0").statusCode()).isEqualTo(200);
        assertThat(left()).as("an empty export costs nothing").isEqualTo(20_000 - 3);
    }

    @Test
    void anExportLargerThanWhatWasLeftPutsTheAddressIntoDebt() throws Exception {
        assertThat(export("10000").statusCode()).isEqualTo(200);
        assertThat(export("9000").statusCode()).isEqualTo(200);
        assertThat(left()).isEqualTo(1_000);
        assertThat(export("10000").statusCode())
                .as("1,000 rows left: the estimate passes, the export is charged in full")
                .isEqualTo(200);
        HttpResponse<String> refused = export("1");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After"))
                .as("9,000 owed and the call's own row: ten refills of 1,000 a minute")
                .hasValue("600");
        assertThat(refused.body()).contains("\"violated-policies\":[\"export\"]");
        this.clock.advance(Duration.ofMinutes(10));
        assertThat(export("1").statusCode()).as("the debt is paid").isEqualTo(200);
    }

    @Test
    void rowsOutOfRangeAreABadRequestThatKeepsItsEstimate() throws Exception {
        for (String rows : List.of("10001", "-1", "many")) {
            assertThat(export(rows).statusCode()).as(rows).isEqualTo(400);
        }
        assertThat(left())
                .as("decided before the parameters were bound, and no rows to settle: a row each")
                .isEqualTo(20_000 - 3);
    }
}
