package dev.throttle.spring.aot;

import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;

/**
 * Runtime hints for an application that uses the starter, registered through
 * {@code META-INF/spring/aot.factories}: what a native image must keep that the starter reaches
 * only by name.
 *
 * <p>The Redis store reads its Lua scripts from the classpath, by a name built from the algorithm,
 * when it binds a policy: every {@code .lua} file under {@value #SCRIPTS_PATTERN} is kept, so that
 * an algorithm added later needs no hint of its own.
 *
 * <p>{@code @Throttled} key expressions are SpEL, which finds the methods an expression calls by
 * reflection. The starter evaluates them without a root object, over the method's parameters and
 * two variables of its own, {@code #ip} and {@code #principal}, both strings; so the public methods
 * of {@link String} are kept ({@code #principal.toLowerCase()}, {@code #ip.substring(0, 7)}). The
 * application's own types that an expression reaches through a parameter ({@code #form.email}) are
 * the application's to register, for example with {@code @RegisterReflectionForBinding}.
 */
final class ThrottleRuntimeHints implements RuntimeHintsRegistrar {

    /** Where the Redis store's scripts live, whatever they are named. */
    static final String SCRIPTS_PATTERN = "META-INF/throttle/scripts/*.lua";

    @Override
    public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
        hints.resources().registerPattern(SCRIPTS_PATTERN);
        hints.reflection().registerType(String.class, MemberCategory.INVOKE_PUBLIC_METHODS);
    }
}
