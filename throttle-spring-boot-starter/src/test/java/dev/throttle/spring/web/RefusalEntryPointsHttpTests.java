package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import com.jayway.jsonpath.JsonPath;
import dev.throttle.ManualTimeSource;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletResponse;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.servlet.DelegatingFilterProxyRegistrationBean;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.core.Ordered;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configuration.EnableWebSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.cors.CorsConfiguration;
import org.springframework.web.cors.reactive.UrlBasedCorsConfigurationSource;
import org.springframework.web.reactive.config.WebFluxConfigurer;
import org.springframework.web.server.WebFilter;
import org.springframework.web.servlet.config.annotation.CorsRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;
import reactor.core.publisher.Mono;

/**
 * A refused call answers the same wherever it was refused: an annotated handler, a URL rule, a
 * Spring Security login (servlet applications only), a {@code Throttler.check} in a controller, on
 * Spring MVC and on WebFlux, through a real port. The application's {@link ThrottleExceptionHandler}
 * decides that answer for every one of them; and a refusal decided before any handler mapping is
 * readable cross-origin without losing what the response already varied on.
 */
class RefusalEntryPointsHttpTests {

    static final String ORIGIN = "https://app.example";

    static final String[] PROPERTIES = {
        "server.port=0",
        "spring.main.banner-mode=off",
        "throttle.http.rules[0].paths=/ruled",
        "throttle.http.rules[0].policy=ruled",
        "throttle.http.rules[0].key=#ip",
        "throttle.security.authentication.username-policy=login",
        policy("annotated"),
        limit("annotated"),
        period("annotated"),
        policy("ruled"),
        limit("ruled"),
        period("ruled"),
        policy("login"),
        limit("login"),
        period("login"),
        policy("programmatic"),
        limit("programmatic"),
        period("programmatic")
    };

    static final HttpClient client = HttpClient.newHttpClient();

    private static final Map<String, ConfigurableApplicationContext> applications = new LinkedHashMap<>();

    enum Stack {
        MVC(MvcApp.class, WebApplicationType.SERVLET),
        WEBFLUX(WebFluxApp.class, WebApplicationType.REACTIVE);

        final Class<?> application;

        final WebApplicationType type;

        Stack(Class<?> application, WebApplicationType type) {
            this.application = application;
            this.type = type;
        }
    }

    enum EntryPoint {
        ANNOTATION("/annotated", "annotated"),
        URL_RULE("/ruled", "ruled"),
        SECURITY_LOGIN("/secured", "login"),
        PROGRAMMATIC("/programmatic", "programmatic");

        final String path;

        final String policy;

        EntryPoint(String path, String policy) {
            this.path = path;
            this.policy = policy;
        }

        /** The first call passes (a login with a wrong password: 401); the second is refused. */
        HttpResponse<String> refused(int port, String... headers) throws Exception {
            List<String> all = new ArrayList<>(List.of(headers));
            if (this == SECURITY_LOGIN) {
                all.addAll(List.of(
                        "Authorization",
                        "Basic "
                                + Base64.getEncoder()
                                        .encodeToString("alice@example.com:guess".getBytes(StandardCharsets.UTF_8))));
            }
            String[] sent = all.toArray(String[]::new);
            assertThat(get(port, this.path, sent).statusCode()).as("first call").isIn(200, 401);
            return get(port, this.path, sent);
        }
    }

    static Stream<Arguments> everyEntryPoint() {
        return Stream.of(Stack.values())
                .flatMap((stack) -> EnumSet.allOf(EntryPoint.class).stream()
                        // Spring Security logins are throttled in servlet applications only
                        .filter((entryPoint) -> stack == Stack.MVC || entryPoint != EntryPoint.SECURITY_LOGIN)
                        .map((entryPoint) -> Arguments.of(stack, entryPoint)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("everyEntryPoint")
    void everyEntryPointAnswersARefusalWithTheSameStatusHeadersAndBody(Stack stack, EntryPoint entryPoint)
            throws Exception {
        HttpResponse<String> refused = entryPoint.refused(port(stack, false), "Accept", "application/json");
        String policy = entryPoint.policy;
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(refused.headers().allValues("Retry-After")).containsExactly("60");
        assertThat(refused.headers().allValues("RateLimit-Policy")).containsExactly("\"" + policy + "\";q=1;w=60");
        assertThat(refused.headers().allValues("RateLimit")).containsExactly("\"" + policy + "\";r=0;t=60");
        assertThat(json(refused))
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "type",
                        "https://iana.org/assignments/http-problem-types#quota-exceeded",
                        "title",
                        "Too Many Requests",
                        "status",
                        429,
                        "detail",
                        "Too many requests under policy '" + policy + "'; retry after 60 seconds.",
                        "instance",
                        entryPoint.path,
                        "violated-policies",
                        List.of(policy)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("everyEntryPoint")
    void theApplicationsHandlerDecidesTheStatusAndBodyAtEveryEntryPoint(Stack stack, EntryPoint entryPoint)
            throws Exception {
        HttpResponse<String> refused = entryPoint.refused(port(stack, true), "Accept", "application/json");
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.headers().allValues("Retry-After")).containsExactly("60");
        assertThat(json(refused))
                .containsEntry("status", 503)
                .containsEntry("title", "Service Unavailable")
                .containsEntry("detail", "Busy: " + entryPoint.policy)
                .containsEntry("violated-policies", List.of(entryPoint.policy))
                .containsEntry("support", List.of("help@app.example", 24));
    }

    @Test
    void aBrowserRefusedByAnyEntryPointGetsTheErrorPageWithTheApplicationsStatus() throws Exception {
        for (Stack stack : Stack.values()) {
            HttpResponse<String> page = EntryPoint.URL_RULE.refused(port(stack, true), "Accept", "text/html");
            assertThat(page.statusCode()).as(stack.name()).isEqualTo(503);
            assertThat(page.headers().firstValue("Content-Type"))
                    .as(stack.name())
                    .hasValueSatisfying((type) -> assertThat(type).startsWith("text/html"));
            assertThat(page.headers().allValues("Retry-After")).as(stack.name()).containsExactly("60");
        }
    }

    @Test
    void aRuleRefusalReadableCrossOriginKeepsWhatTheResponseAlreadyVariedOn() throws Exception {
        for (Stack stack : Stack.values()) {
            int port = port(stack, false);
            HttpResponse<String> refused = EntryPoint.URL_RULE.refused(port, "Origin", ORIGIN);
            assertThat(refused.statusCode()).as(stack.name()).isEqualTo(429);
            assertThat(refused.headers().firstValue("Access-Control-Allow-Origin"))
                    .as(stack.name())
                    .hasValue(ORIGIN);
            assertThat(String.join(",", refused.headers().allValues("Access-Control-Expose-Headers"))
                            .toLowerCase())
                    .as(stack.name())
                    .contains("retry-after", "ratelimit", "ratelimit-policy");
            assertThat(String.join(",", refused.headers().allValues("Vary")))
                    .as(stack.name())
                    .contains("Accept-Encoding", "Origin");
            HttpResponse<String> stranger = get(port, EntryPoint.URL_RULE.path, "Origin", "https://evil.example");
            assertThat(stranger.statusCode())
                    .as(stack.name() + ": an origin not allowed")
                    .isEqualTo(429);
            assertThat(stranger.headers().firstValue("Access-Control-Allow-Origin"))
                    .as(stack.name())
                    .isEmpty();
        }
    }

    @AfterAll
    static void stopApplications() {
        applications.values().forEach(ConfigurableApplicationContext::close);
        applications.clear();
    }

    /** The application of a stack, started once, its throttling state cleared for each call. */
    private static int port(Stack stack, boolean customAnswer) {
        ConfigurableApplicationContext context = applications.computeIfAbsent(
                stack + "/" + customAnswer,
                (name) -> new SpringApplicationBuilder(
                                customAnswer
                                        ? new Class<?>[] {stack.application, CustomAnswer.class}
                                        : new Class<?>[] {stack.application})
                        .web(stack.type)
                        .properties(properties(stack))
                        .run());
        context.getBean(MemoryThrottleStore.class).clear();
        return Integer.parseInt(context.getEnvironment().getProperty("local.server.port"));
    }

    /** The servlet-only login throttling stops the start of a WebFlux application. */
    private static String[] properties(Stack stack) {
        return (stack == Stack.MVC)
                ? PROPERTIES
                : Stream.of(PROPERTIES)
                        .filter((property) -> !property.startsWith("throttle.security."))
                        .toArray(String[]::new);
    }

    private static HttpResponse<String> get(int port, String path, String... headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(30));
        if (headers.length > 0) {
            request.headers(headers);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static Map<String, Object> json(HttpResponse<String> response) {
        return JsonPath.parse(response.body()).read("$");
    }

    private static String policy(String name) {
        return "throttle.policies." + name + ".algorithm=gcra";
    }

    private static String limit(String name) {
        return "throttle.policies." + name + ".limit=1";
    }

    private static String period(String name) {
        return "throttle.policies." + name + ".period=60s";
    }

    /** An application's own answer: 503, a detail in its own words, and a member of its own. */
    static class CustomAnswer {

        @Bean
        ThrottleExceptionHandler busy() {
            return new ThrottleExceptionHandler(true) {

                @Override
                protected HttpStatusCode status(ThrottledException ex) {
                    return HttpStatus.SERVICE_UNAVAILABLE;
                }

                @Override
                protected String detail(ThrottledException ex) {
                    return "Busy: " + ex.getPolicy().name();
                }

                @Override
                public Refusal refusal(ThrottledException ex) {
                    return super.refusal(ex).withProperty("support", List.of("help@app.example", 24));
                }
            };
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @EnableWebSecurity
    @Import(MvcApp.Endpoints.class)
    static class MvcApp {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        /** What a compression filter ahead of everything would do. */
        @Bean
        FilterRegistrationBean<Filter> variesOnEncoding() {
            FilterRegistrationBean<Filter> registration = new FilterRegistrationBean<>((request, response, chain) -> {
                ((HttpServletResponse) response).addHeader("Vary", "Accept-Encoding");
                chain.doFilter(request, response);
            });
            registration.setOrder(Ordered.HIGHEST_PRECEDENCE);
            return registration;
        }

        @Bean
        WebMvcConfigurer cors() {
            return new WebMvcConfigurer() {

                @Override
                public void addCorsMappings(CorsRegistry registry) {
                    registry.addMapping("/**").allowedOrigins(ORIGIN);
                }
            };
        }

        /** Spring Security's filter chain as Boot registers it (this module's tests go without Boot's security). */
        @Bean
        DelegatingFilterProxyRegistrationBean securityFilterChainRegistration() {
            DelegatingFilterProxyRegistrationBean registration =
                    new DelegatingFilterProxyRegistrationBean("springSecurityFilterChain");
            registration.setOrder(-100);
            registration.setDispatcherTypes(EnumSet.allOf(DispatcherType.class));
            return registration;
        }

        @Bean
        InMemoryUserDetailsManager users() {
            return new InMemoryUserDetailsManager(User.withUsername("alice@example.com")
                    .password("{noop}wonderland")
                    .roles("USER")
                    .build());
        }

        @Bean
        SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests(
                            (requests) -> requests.anyRequest().permitAll())
                    .httpBasic((basic) -> basic.realmName("test"))
                    .csrf((csrf) -> csrf.disable())
                    .build();
        }

        @RestController
        static class Endpoints {

            private final Throttler throttler;

            Endpoints(Throttler throttler) {
                this.throttler = throttler;
            }

            @GetMapping("/annotated")
            @Throttled(policy = "annotated", key = "#ip")
            String annotated() {
                return "ok";
            }

            @GetMapping({"/ruled", "/secured"})
            String open() {
                return "ok";
            }

            @GetMapping("/programmatic")
            String programmatic() {
                this.throttler.check("programmatic", "everyone", 1);
                return "ok";
            }
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(WebFluxApp.Endpoints.class)
    static class WebFluxApp {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }

        /** What a compression filter ahead of everything would do. */
        @Bean
        WebFilter variesOnEncoding() {
            class VariesOnEncoding implements WebFilter, Ordered {

                @Override
                public Mono<Void> filter(
                        org.springframework.web.server.ServerWebExchange exchange,
                        org.springframework.web.server.WebFilterChain chain) {
                    exchange.getResponse().getHeaders().add("Vary", "Accept-Encoding");
                    return chain.filter(exchange);
                }

                @Override
                public int getOrder() {
                    return Ordered.HIGHEST_PRECEDENCE;
                }
            }
            return new VariesOnEncoding();
        }

        @Bean
        WebFluxConfigurer cors() {
            return new WebFluxConfigurer() {

                @Override
                public void addCorsMappings(org.springframework.web.reactive.config.CorsRegistry registry) {
                    registry.addMapping("/**").allowedOrigins(ORIGIN);
                }
            };
        }

        /** The CORS configuration a refusal decided before any handler mapping finds. */
        @Bean
        UrlBasedCorsConfigurationSource corsConfigurationSource() {
            CorsConfiguration config = new CorsConfiguration();
            config.setAllowedOrigins(List.of(ORIGIN));
            UrlBasedCorsConfigurationSource source = new UrlBasedCorsConfigurationSource();
            source.registerCorsConfiguration("/**", config);
            return source;
        }

        @RestController
        static class Endpoints {

            private final Throttler throttler;

            Endpoints(Throttler throttler) {
                this.throttler = throttler;
            }

            @GetMapping("/annotated")
            @Throttled(policy = "annotated", key = "#ip")
            Mono<String> annotated() {
                return Mono.just("ok");
            }

            @GetMapping("/ruled")
            Mono<String> ruled() {
                return Mono.just("ok");
            }

            @GetMapping("/programmatic")
            Mono<String> programmatic() {
                return Mono.fromCallable(() -> {
                    this.throttler.check("programmatic", "everyone", 1);
                    return "ok";
                });
            }
        }
    }
}
