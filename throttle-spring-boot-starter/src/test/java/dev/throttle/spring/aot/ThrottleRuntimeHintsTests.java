package dev.throttle.spring.aot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.core.io.support.SpringFactoriesLoader;

/**
 * The starter's runtime hints: found through {@code aot.factories}, and covering every Lua script
 * on the classpath and what key expressions call on the starter's variables.
 */
class ThrottleRuntimeHintsTests {

    private final RuntimeHints hints = registered();

    @Test
    void theRegistrarIsFoundThroughAotFactories() {
        List<RuntimeHintsRegistrar> registrars = SpringFactoriesLoader.forResourceLocation(
                        "META-INF/spring/aot.factories")
                .load(RuntimeHintsRegistrar.class);
        assertThat(registrars).hasAtLeastOneElementOfType(ThrottleRuntimeHints.class);
    }

    @Test
    void everyLuaScriptThatTheStarterShipsIsKept() throws IOException {
        // every .lua file under META-INF/throttle, however deep: a script the pattern misses fails here
        Resource[] scripts =
                new PathMatchingResourcePatternResolver().getResources("classpath*:META-INF/throttle/**/*.lua");
        assertThat(scripts).as("the Redis store's scripts").hasSizeGreaterThanOrEqualTo(5);
        List<String> paths = Arrays.stream(scripts)
                .map(ThrottleRuntimeHintsTests::classpathLocation)
                .toList();
        assertThat(paths)
                .allSatisfy(
                        (path) -> assertThat(RuntimeHintsPredicates.resource().forResource(path))
                                .as(path)
                                .accepts(this.hints));
    }

    @Test
    void aScriptAddedLaterNeedsNoHintOfItsOwnButOtherFilesAreNotKept() {
        assertThat(RuntimeHintsPredicates.resource().forResource("META-INF/throttle/scripts/several_limits.lua"))
                .accepts(this.hints);
        assertThat(RuntimeHintsPredicates.resource().forResource("META-INF/throttle/scripts/README.md"))
                .rejects(this.hints);
        assertThat(RuntimeHintsPredicates.resource().forResource("META-INF/other/script.lua"))
                .rejects(this.hints);
    }

    @Test
    void keyExpressionsMayCallStringMethodsOnIpAndPrincipal() throws NoSuchMethodException {
        assertThat(RuntimeHintsPredicates.reflection()
                        .onType(String.class)
                        .withMemberCategory(MemberCategory.INVOKE_PUBLIC_METHODS))
                .accepts(this.hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(String.class.getMethod("toLowerCase")))
                .accepts(this.hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(String.class, "trim"))
                .accepts(this.hints);
    }

    private static RuntimeHints registered() {
        RuntimeHints hints = new RuntimeHints();
        new ThrottleRuntimeHints().registerHints(hints, ThrottleRuntimeHintsTests.class.getClassLoader());
        return hints;
    }

    /** {@code META-INF/throttle/scripts/gcra.lua} for a script in a directory or in a jar. */
    private static String classpathLocation(Resource resource) {
        try {
            String url = resource.getURL().toString();
            return url.substring(url.lastIndexOf("META-INF/throttle/"));
        } catch (IOException ex) {
            throw new IllegalStateException(ex);
        }
    }
}
