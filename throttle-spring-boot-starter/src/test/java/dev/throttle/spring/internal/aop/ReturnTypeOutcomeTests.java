package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import dev.throttle.Decision;
import dev.throttle.ManualTimeSource;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import io.reactivex.rxjava3.core.Completable;
import io.reactivex.rxjava3.core.Flowable;
import io.reactivex.rxjava3.core.Maybe;
import io.reactivex.rxjava3.core.Single;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.reactivestreams.Publisher;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.context.request.async.DeferredResult;
import org.springframework.web.context.request.async.WebAsyncTask;
import org.springframework.web.servlet.ModelAndView;
import org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * With reset-on-success or count: failures, a call is settled by its real outcome, whatever it
 * returns: every type Spring's ReactiveAdapterRegistry knows (Publisher, Mono, Flux, RxJava's) is
 * throttled when subscribed and settled when its outcome is known, a ResponseEntity wrapping one by
 * its status and then by its body; a type whose outcome cannot be seen fails startup.
 */
@ExtendWith(OutputCaptureExtension.class)
class ReturnTypeOutcomeTests {

    private final ManualTimeSource clock = new ManualTimeSource();

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withBean(TimeSource.class, () -> this.clock)
            .withBean(Logins.class)
            .withPropertyValues(
                    "throttle.policies.login.algorithm=lockout",
                    "throttle.policies.login.timeouts=1s,2s,4s",
                    "throttle.policies.login.reset-on-success=true",
                    "throttle.policies.failures.algorithm=fixed-window",
                    "throttle.policies.failures.limit=2",
                    "throttle.policies.failures.window=1m",
                    "throttle.policies.failures.count=failures");

    @Test
    void fiveWrongPasswordsThroughAPublisherDoNotPassALockout() {
        this.contextRunner.run((context) -> {
            Logins logins = context.getBean(Logins.class);
            assertThatIllegalStateException()
                    .isThrownBy(
                            () -> Flux.from(logins.publisher("alice", false)).blockLast());
            for (int i = 0; i < 4; i++) {
                assertThatExceptionOfType(ThrottledException.class)
                        .isThrownBy(() ->
                                Flux.from(logins.publisher("alice", false)).blockLast());
            }
            Decision state = context.getBean(Throttler.class).peek("login", "alice");
            assertThat(state.allowed())
                    .as("locked: a failed attempt is not a success")
                    .isFalse();
            this.clock.advance(Duration.ofSeconds(1));
            assertThat(Flux.from(logins.publisher("alice", true)).blockLast()).isEqualTo("alice");
            assertThat(Flux.from(logins.publisher("alice", true)).blockLast())
                    .as("the success reset the lockout")
                    .isEqualTo("alice");
        });
    }

    @Test
    void aModelAndViewOrAProblemWithAnErrorStatusIsAFailure() {
        this.contextRunner.run((context) -> {
            Logins logins = context.getBean(Logins.class);
            assertThat(logins.page("carol", false).getStatus()).isEqualTo(HttpStatus.UNAUTHORIZED);
            assertThatExceptionOfType(ThrottledException.class)
                    .as("the lockout holds: a page answered 401 is no success")
                    .isThrownBy(() -> logins.page("carol", false));
            assertThat(logins.problem("dave", false).getStatus()).isEqualTo(401);
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> logins.problem("dave", false));
            this.clock.advance(Duration.ofSeconds(1));
            logins.page("carol", true);
            assertThat(logins.page("carol", true).getStatus())
                    .as("a page answered 200 is a success, which reset the lockout")
                    .isNull();
        });
    }

    @Test
    void aPublisherIsThrottledWhenSubscribedAndNothingRunsBefore() {
        this.contextRunner.run((context) -> {
            Logins logins = context.getBean(Logins.class);
            for (int i = 0; i < 3; i++) {
                logins.publisher("bob", false);
            }
            assertThat(logins.calls())
                    .as("the method runs when its publisher is subscribed")
                    .isZero();
            assertThat(context.getBean(Throttler.class).peek("login", "bob").remaining())
                    .as("nothing taken before subscription")
                    .isEqualTo(context.getBean(Throttler.class)
                            .peek("login", "nobody")
                            .remaining());
            assertThatIllegalStateException()
                    .isThrownBy(() -> Flux.from(logins.publisher("bob", false)).blockLast());
            assertThat(logins.calls()).isOne();
        });
    }

    @Test
    void aPendingOutcomeIsNeverSettledEarly() {
        this.contextRunner.run((context) -> {
            Logins logins = context.getBean(Logins.class);
            Sinks.One<String> outcome = Sinks.one();
            Mono<String> first =
                    Mono.from(logins.pending("carol", outcome.asMono())).cache();
            first.subscribe();
            assertThatExceptionOfType(ThrottledException.class)
                    .as("the first attempt's outcome is not known yet")
                    .isThrownBy(() -> Mono.from(logins.pending("carol", Mono.just("carol")))
                            .block());
            outcome.tryEmitValue("carol");
            assertThat(first.block()).isEqualTo("carol");
            assertThat(Mono.from(logins.pending("carol", Mono.just("carol"))).block())
                    .as("settled by the outcome: reset")
                    .isEqualTo("carol");
        });
    }

    @Test
    void anRxJavaSingleIsThrottledWhenSubscribedAndSettledByItsOutcome() {
        this.contextRunner.run((context) -> {
            Logins logins = context.getBean(Logins.class);
            Single<String> notSubscribed = logins.single("dave", true);
            assertThat(logins.calls()).isZero();
            assertThatIllegalStateException()
                    .isThrownBy(() -> logins.single("dave", false).blockingGet());
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> logins.single("dave", true).blockingGet());
            this.clock.advance(Duration.ofSeconds(1));
            assertThat(notSubscribed.blockingGet()).isEqualTo("dave");
            assertThat(logins.single("dave", true).blockingGet())
                    .as("reset by the success")
                    .isEqualTo("dave");
        });
    }

    @Test
    void anRxJavaFlowableMaybeAndCompletableAreSettledByTheirOutcome() {
        this.contextRunner.run((context) -> {
            Logins logins = context.getBean(Logins.class);
            for (int i = 0; i < 5; i++) {
                assertThat(logins.flowable("k", true).toList().blockingGet()).containsExactly("a", "b");
                assertThat(logins.maybe("k", true).blockingGet()).isEqualTo("m");
                logins.completable("k", true).blockingAwait();
            }
            assertThatIllegalStateException()
                    .isThrownBy(() -> logins.flowable("k", false).toList().blockingGet());
            assertThatIllegalStateException()
                    .isThrownBy(() -> logins.completable("k", false).blockingAwait());
            assertThatExceptionOfType(ThrottledException.class)
                    .as("two failures used the limit")
                    .isThrownBy(() -> logins.maybe("k", true).blockingGet());
        });
    }

    @Test
    void aResponseEntityWrappingAMonoIsSettledByItsStatusAndThenItsBody() {
        this.contextRunner.run((context) -> {
            Logins logins = context.getBean(Logins.class);
            ResponseEntity<Mono<String>> wrong = logins.entity("erin", false, HttpStatus.OK);
            assertThat(wrong.getStatusCode()).isEqualTo(HttpStatus.OK);
            assertThatIllegalStateException().isThrownBy(() -> wrong.getBody().block());
            assertThatExceptionOfType(ThrottledException.class)
                    .as("a failed body is no success")
                    .isThrownBy(() -> logins.entity("erin", true, HttpStatus.OK));
            this.clock.advance(Duration.ofSeconds(1));
            assertThat(logins.entity("erin", true, HttpStatus.UNAUTHORIZED)
                            .getBody()
                            .block())
                    .isEqualTo("erin");
            this.clock.advance(Duration.ofSeconds(1));
            assertThatExceptionOfType(ThrottledException.class)
                    .as("an error status is no success")
                    .isThrownBy(() -> logins.entity("erin", true, HttpStatus.OK));
            this.clock.advance(Duration.ofSeconds(1));
            ResponseEntity<Mono<String>> right = logins.entity("erin", true, HttpStatus.OK);
            assertThatExceptionOfType(ThrottledException.class)
                    .as("not settled before the body completes")
                    .isThrownBy(() -> logins.entity("erin", true, HttpStatus.OK));
            assertThat(right.getBody().block()).isEqualTo("erin");
            assertThat(logins.entity("erin", true, HttpStatus.OK).getBody().block())
                    .as("reset by the body's success")
                    .isEqualTo("erin");
        });
    }

    @Test
    void aValueDeclaredAsObjectThatIsAPublisherIsFollowedToItsOutcome() {
        this.contextRunner.run((context) -> {
            Logins logins = context.getBean(Logins.class);
            assertThatIllegalStateException().isThrownBy(() -> ((Mono<?>) logins.anything("frank", false)).block());
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> logins.anything("frank", true));
        });
    }

    @Test
    void aValueDeclaredAsObjectWhoseOutcomeIsHiddenIsNeverSettledAndSaysSoOnce(CapturedOutput output) {
        this.contextRunner.run((context) -> {
            Logins logins = context.getBean(Logins.class);
            logins.callable("gina");
            this.clock.advance(Duration.ofSeconds(1));
            logins.callable("gina");
            assertThatExceptionOfType(ThrottledException.class)
                    .as("never reset: the outcome cannot be seen")
                    .isThrownBy(() -> logins.callable("gina"));
        });
        assertThat(output.toString().split("returned a FutureTask, whose outcome cannot be seen", -1))
                .hasSize(2);
        assertThat(output)
                .contains("@Throttled(policy = \"login\") on Logins.callable(String) returned a FutureTask, "
                        + "whose outcome cannot be seen: such calls are never settled as a success");
    }

    @Test
    void returnTypesWhoseOutcomeIsHiddenFailStartupNamingTheMethod() {
        for (Class<?> type : new Class<?>[] {
            FutureLogin.class,
            EmitterLogin.class,
            BodyEmitterLogin.class,
            StreamingLogin.class,
            EntityCallableLogin.class,
            DeferredLogin.class,
            AsyncTaskLogin.class,
            EntityDeferredLogin.class
        }) {
            this.contextRunner
                    .withBean(type)
                    .run((context) -> assertThat(context)
                            .hasFailed()
                            .getFailure()
                            .satisfies((failure) -> assertThat(ThrottleKeyVariablesTests.configurationFailure(failure))
                                    .hasMessageContaining(type.getSimpleName() + ".login(String) returns ")
                                    .hasMessageContaining("whose outcome the advisor cannot see")
                                    .hasMessageContaining("throttle.policies.login.reset-on-success")));
        }
    }

    static class Logins {

        private final AtomicInteger calls = new AtomicInteger();

        /** Read through the proxy: its own fields are not the bean's. */
        public int calls() {
            return this.calls.get();
        }

        private String check(String user, boolean passwordMatches) {
            if (!passwordMatches) {
                throw new IllegalStateException("wrong password");
            }
            return user;
        }

        @Throttled(policy = "login", key = "#user")
        public Publisher<String> publisher(String user, boolean passwordMatches) {
            this.calls.incrementAndGet();
            return Mono.fromCallable(() -> check(user, passwordMatches));
        }

        @Throttled(policy = "login", key = "#user")
        public ModelAndView page(String user, boolean passwordMatches) {
            ModelAndView page = new ModelAndView("login");
            if (!passwordMatches) {
                page.setStatus(HttpStatus.UNAUTHORIZED);
            }
            return page;
        }

        @Throttled(policy = "login", key = "#user")
        public ProblemDetail problem(String user, boolean passwordMatches) {
            return ProblemDetail.forStatus(passwordMatches ? HttpStatus.OK : HttpStatus.UNAUTHORIZED);
        }

        @Throttled(policy = "login", key = "#user")
        public Publisher<String> pending(String user, Publisher<String> outcome) {
            return outcome;
        }

        @Throttled(policy = "login", key = "#user")
        public Single<String> single(String user, boolean passwordMatches) {
            this.calls.incrementAndGet();
            return Single.fromCallable(() -> check(user, passwordMatches));
        }

        @Throttled(policy = "failures", key = "#key")
        public Flowable<String> flowable(String key, boolean succeed) {
            Flowable<String> values = Flowable.just("a", "b");
            return succeed ? values : values.concatWith(Flowable.error(new IllegalStateException("failed")));
        }

        @Throttled(policy = "failures", key = "#key")
        public Maybe<String> maybe(String key, boolean succeed) {
            return succeed ? Maybe.just("m") : Maybe.error(new IllegalStateException("failed"));
        }

        @Throttled(policy = "failures", key = "#key")
        public Completable completable(String key, boolean succeed) {
            return succeed ? Completable.complete() : Completable.error(new IllegalStateException("failed"));
        }

        @Throttled(policy = "login", key = "#user")
        public ResponseEntity<Mono<String>> entity(String user, boolean passwordMatches, HttpStatus status) {
            return ResponseEntity.status(status).body(Mono.fromCallable(() -> check(user, passwordMatches)));
        }

        @Throttled(policy = "login", key = "#user")
        public Object anything(String user, boolean passwordMatches) {
            return Mono.fromCallable(() -> check(user, passwordMatches));
        }

        @Throttled(policy = "login", key = "#user")
        public Object callable(String user) {
            return new FutureTask<>(() -> user);
        }
    }

    static class FutureLogin {

        @Throttled(policy = "login", key = "#user")
        public Future<String> login(String user) {
            return new FutureTask<>(() -> user);
        }
    }

    static class EmitterLogin {

        @Throttled(policy = "login", key = "#user")
        public SseEmitter login(String user) {
            return new SseEmitter();
        }
    }

    static class StreamingLogin {

        @Throttled(policy = "login", key = "#user")
        public StreamingResponseBody login(String user) {
            return (out) -> out.write(user.getBytes());
        }
    }

    static class BodyEmitterLogin {

        @Throttled(policy = "login", key = "#user")
        public ResponseBodyEmitter login(String user) {
            return new ResponseBodyEmitter();
        }
    }

    static class DeferredLogin {

        @Throttled(policy = "login", key = "#user")
        public DeferredResult<String> login(String user) {
            return new DeferredResult<>();
        }
    }

    static class AsyncTaskLogin {

        @Throttled(policy = "login", key = "#user")
        public WebAsyncTask<String> login(String user) {
            return new WebAsyncTask<>(() -> user);
        }
    }

    static class EntityDeferredLogin {

        @Throttled(policy = "login", key = "#user")
        public ResponseEntity<DeferredResult<String>> login(String user) {
            return ResponseEntity.ok(new DeferredResult<>());
        }
    }

    static class EntityCallableLogin {

        @Throttled(policy = "login", key = "#user")
        public ResponseEntity<Callable<String>> login(String user) {
            return ResponseEntity.ok(() -> user);
        }
    }
}
