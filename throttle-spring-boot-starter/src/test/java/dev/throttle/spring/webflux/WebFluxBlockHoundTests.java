package dev.throttle.spring.webflux;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import dev.throttle.testing.redis.SharedRedis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * WebFlux decisions never block an event-loop thread, with the memory store and with the Redis
 * store (a real Redis): BlockHound, installed in this JVM, turns any blocking call on a
 * non-blocking thread into an error, which would surface as a 500.
 */
class WebFluxBlockHoundTests {

	private static final HttpClient client = HttpClient.newHttpClient();

	@BeforeAll
	static void installBlockHound() {
		SharedRedis.endpoint();
		BlockHound.install();
	}

	@Test
	void blockHoundIsActiveSoTheOtherTestsCanFail() {
		assertThatExceptionOfType(RuntimeException.class)
			.isThrownBy(() -> Mono.fromCallable(() -> {
				Thread.sleep(1);
				return 1;
			}).subscribeOn(Schedulers.parallel()).block())
			.satisfies((ex) -> assertThat(ex).hasCauseInstanceOf(BlockingOperationError.class));
	}

	@ParameterizedTest(name = "{0} store")
	@ValueSource(strings = { "memory", "redis" })
	void reactiveHandlersDecideWithoutBlockingTheEventLoop(String store) throws Exception {
		SharedRedis.flush();
		try (ConfigurableApplicationContext context = new SpringApplicationBuilder(WebFluxTestApplication.class).run(
				"--server.port=0", "--spring.main.web-application-type=reactive", "--throttle.store.type=" + store,
				"--spring.data.redis.url=" + SharedRedis.endpoint().url(), "--throttle.store.redis.timeout=2s",
				"--throttle.policies.api.algorithm=gcra", "--throttle.policies.api.limit=20",
				"--throttle.policies.api.period=1h", "--throttle.policies.login.algorithm=lockout",
				"--throttle.policies.login.timeouts=1h", "--throttle.policies.login.reset-on-success=true")) {
			int port = ((WebServerApplicationContext) context).getWebServer().getPort();
			Map<Integer, Integer> statuses = new HashMap<>();
			for (int i = 0; i < 30; i++) {
				String path = (i % 2 == 0) ? "/mono" : "/flux";
				HttpResponse<String> response = client.send(
						HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(10)).build(),
						HttpResponse.BodyHandlers.ofString());
				statuses.merge(response.statusCode(), 1, Integer::sum);
			}
			for (int i = 0; i < 3; i++) {
				HttpResponse<String> login = client.send(HttpRequest
					.newBuilder(URI.create("http://127.0.0.1:" + port + "/login"))
					.header("Content-Type", "application/json")
					.POST(HttpRequest.BodyPublishers.ofString("{\"user\":\"u\",\"password\":\"secret\"}"))
					.build(), HttpResponse.BodyHandlers.ofString());
				statuses.merge(login.statusCode(), 1, Integer::sum);
			}
			assertThat(statuses).as("20 allowed and 10 refused by the policy, 3 logins reset on success, no 500")
				.containsOnly(Map.entry(200, 23), Map.entry(429, 10));
		}
	}

}
