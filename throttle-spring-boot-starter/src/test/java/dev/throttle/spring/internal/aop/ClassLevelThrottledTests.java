package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.stereotype.Controller;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.InitBinder;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.RestController;

/**
 * Which methods a class-level {@code @Throttled} covers: a controller's request-handling methods,
 * any other bean's public methods, never a binder, model-attribute or exception-handler method;
 * and what startup says about a method Spring AOP cannot intercept (including that a call from
 * inside its own class is never throttled).
 */
class ClassLevelThrottledTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.one.algorithm=fixed-window",
                    "throttle.policies.one.limit=1",
                    "throttle.policies.one.window=1m");

    @Test
    void onAControllerOnlyRequestHandlingMethodsAreCharged() {
        this.contextRunner.withBean(Pages.class).run((context) -> {
            Pages pages = context.getBean(Pages.class);
            for (int i = 0; i < 3; i++) {
                pages.initBinder();
                pages.owner();
                pages.handle(new IllegalStateException());
                pages.helper();
            }
            assertThat(context.getBean(Throttler.class).peek("one", "shared").remaining())
                    .isOne();
            pages.show();
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(pages::list);
        });
    }

    @Test
    void onAnyOtherBeanPublicMethodsAreChargedButNotBinderModelOrExceptionHandlerMethods() {
        this.contextRunner.withBean(Advice.class).run((context) -> {
            Advice advice = context.getBean(Advice.class);
            advice.initBinder();
            advice.owner();
            advice.handle(new IllegalStateException());
            advice.business();
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(advice::business);
        });
    }

    @Test
    void aPrivateAnnotatedMethodFailsStartupSayingThatSelfInvocationIsNotThrottledEither() {
        this.contextRunner
                .withBean(PrivateMethod.class)
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .satisfies((failure) -> assertThat(ThrottleKeyVariablesTests.configurationFailure(failure))
                                .hasMessage(
                                        "@Throttled on PrivateMethod.check(String) would never apply: Spring AOP cannot "
                                                + "intercept a private, static or final method; make it public (or package-private) and "
                                                + "not final. Even then, a call from inside its own class (this.method(..)) is not "
                                                + "throttled, since it does not go through the Spring proxy: call it through the bean, or "
                                                + "throttle the public method that calls it")));
    }

    @Test
    void aFinalHandlerOfAClassLevelThrottledControllerFailsStartup() {
        this.contextRunner
                .withBean(FinalHandler.class)
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .satisfies((failure) -> assertThat(ThrottleKeyVariablesTests.configurationFailure(failure))
                                .hasMessageStartingWith("The class-level @Throttled of FinalHandler covers its handler "
                                        + "FinalHandler.show(), but would never apply: Spring AOP cannot intercept")));
    }

    @RestController
    @Throttled(policy = "one", key = "'shared'")
    static class Pages {

        @InitBinder
        public void initBinder() {}

        @ModelAttribute("owner")
        public String owner() {
            return "owner";
        }

        @ExceptionHandler
        public String handle(IllegalStateException ex) {
            return "handled";
        }

        /** Public, but no handler: on a controller the class-level annotation leaves it alone. */
        public void helper() {}

        @GetMapping("/show")
        String show() {
            return "show";
        }

        @GetMapping("/list")
        public String list() {
            return "list";
        }
    }

    @ControllerAdvice
    @Throttled(policy = "one", key = "'advice'")
    static class Advice {

        @InitBinder
        public void initBinder() {}

        @ModelAttribute("owner")
        public String owner() {
            return "owner";
        }

        @ExceptionHandler
        public String handle(IllegalStateException ex) {
            return "handled";
        }

        public void business() {}
    }

    static class PrivateMethod {

        public boolean login(String user) {
            return check(user);
        }

        @Throttled(policy = "one", key = "#user")
        private boolean check(String user) {
            return true;
        }
    }

    @Controller
    @Throttled(policy = "one")
    static class FinalHandler {

        @GetMapping("/show")
        public final String show() {
            return "show";
        }
    }
}
