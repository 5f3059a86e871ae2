package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatNoException;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * The variables a key names are checked at startup against the method's parameters, so that a
 * typo cannot put every caller in one shared bucket; at run time a key that is null or cannot be
 * evaluated (whatever it throws) shares the policy's bucket and says so once, at WARN, without the
 * key.
 */
@ExtendWith(OutputCaptureExtension.class)
class ThrottleKeyVariablesTests {

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.two.algorithm=fixed-window",
                    "throttle.policies.two.limit=2",
                    "throttle.policies.two.window=1m");

    @Test
    void aKeyNamingAVariableThatIsNoParameterFailsStartupNamingTheMethodTheVariableAndTheParameters() {
        this.contextRunner
                .withBean(OwnerController.class)
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .satisfies((failure) -> assertThat(configurationFailure(failure))
                                .hasMessage(
                                        "@Throttled(policy = \"two\", key = \"#lastName\") on OwnerController.find(Owner, int) "
                                                + "names #lastName, which the method does not have, so every call would share one bucket: "
                                                + "its parameters are #owner and #page (or #p0, #a0 and so on); #ip and #principal come "
                                                + "from the request")));
    }

    @Test
    void aKeyWrittenWithoutItsHashFailsStartupRatherThanSharingOneBucket() {
        this.contextRunner
                .withBean(HashForgotten.class)
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .satisfies((failure) -> assertThat(configurationFailure(failure))
                                .hasMessage("@Throttled(policy = \"two\", key = \"ip\") on HashForgotten.call(String) "
                                        + "reads 'ip' from the root object, which has nothing by that name, so every "
                                        + "call would share one bucket: a variable is written with # (its parameter is "
                                        + "#email (or #p0, #a0); #ip and #principal come from the request)")));
    }

    @Test
    void aKeyOnAMethodWithoutParametersSaysSo() {
        this.contextRunner
                .withBean(NoParameters.class)
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .satisfies((failure) -> assertThat(configurationFailure(failure))
                                .hasMessageContaining("names #email, which the method does not have")
                                .hasMessageContaining("it has no parameters")));
    }

    @Test
    void principalWithoutSpringSecurityFailsStartupNamingTheParameters() {
        this.contextRunner
                .withClassLoader(new FilteredClassLoader("org.springframework.security"))
                .withBean(ByPrincipal.class)
                .run(
                        (context) -> assertThat(context)
                                .hasFailed()
                                .getFailure()
                                .satisfies(
                                        (failure) -> assertThat(configurationFailure(failure))
                                                .hasMessage(
                                                        "@Throttled(policy = \"two\", key = \"#principal\") on ByPrincipal.call(String) uses "
                                                                + "#principal, but Spring Security is not on the classpath to supply one, so every call "
                                                                + "would share one bucket: add Spring Security, or key by a parameter (#user)")));
        this.contextRunner
                .withBean(ByPrincipal.class)
                .run((context) -> assertThat(context).hasNotFailed());
    }

    @Test
    void parametersByNameAndPositionAndTheVariablesOfTheStarterAndOfSpelAreAccepted() {
        this.contextRunner.withBean(EveryForm.class).run((context) -> {
            assertThat(context).hasNotFailed();
            EveryForm forms = context.getBean(EveryForm.class);
            forms.rootArgs("r");
            forms.rootArgs("r");
            assertThatExceptionOfType(ThrottledException.class)
                    .as("#root.args[0] is the first argument")
                    .isThrownBy(() -> forms.rootArgs("r"));
            assertThat(context.getBean(Throttler.class).peek("two", "r").remaining())
                    .isZero();
            forms.rootArgs("s");
        });
    }

    @Test
    void withoutParameterNamesTheMessageSaysSoAndPositionsStillWork(@TempDir Path classes) throws Exception {
        ClassLoader compiled = compileWithoutParameterNames(classes, "ByName", "#email", "ByPosition", "#p0");
        Class<?> byName = compiled.loadClass("dev.throttle.generated.ByName");
        Class<?> byPosition = compiled.loadClass("dev.throttle.generated.ByPosition");
        assertThat(byName.getMethod("call", String.class).getParameters()[0].isNamePresent())
                .isFalse();
        this.contextRunner
                .withClassLoader(compiled)
                .withBean(byName.getName(), Object.class, () -> newInstance(byName))
                .run((context) -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .satisfies((failure) -> assertThat(configurationFailure(failure))
                                .hasMessage(
                                        "@Throttled(policy = \"two\", key = \"#email\") on ByName.call(String) names #email, "
                                                + "which the method does not have, so every call would share one bucket: its parameter "
                                                + "names are not available, since ByName was compiled without -parameters: compile with "
                                                + "-parameters, or name them #p0, #a0 or #root.args[0] and so on; #ip and #principal come "
                                                + "from the request")));
        this.contextRunner
                .withClassLoader(compiled)
                .withBean(byPosition.getName(), Object.class, () -> newInstance(byPosition))
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    Object bean = context.getBean(byPosition.getName());
                    var call = bean.getClass().getMethod("call", String.class);
                    call.invoke(bean, "k");
                    call.invoke(bean, "k");
                    assertThat(context.getBean(Throttler.class).peek("two", "k").remaining())
                            .isZero();
                });
    }

    @Test
    void aNullKeySharesTheBucketAndWarnsOncePerThrottleWithoutTheKey(CapturedOutput output) {
        this.contextRunner.withBean(Keyed.class).run((context) -> {
            Keyed runtime = context.getBean(Keyed.class);
            runtime.byEmail(null);
            runtime.byEmail(null);
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> runtime.byEmail(null));
        });
        assertThat(count(
                        output,
                        "Key '#email' of @Throttled(policy = \"two\") on Keyed.byEmail(String) was null: "
                                + "such calls share the policy's one bucket (said once per throttle)"))
                .isOne();
    }

    @Test
    void aBlankKeySharesTheBucketAndWarnsOnceToo(CapturedOutput output) {
        this.contextRunner.withBean(Keyed.class).run((context) -> {
            Keyed runtime = context.getBean(Keyed.class);
            runtime.byEmail(" ");
            runtime.byEmail("");
            assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> runtime.byEmail("\t"));
        });
        assertThat(count(output, "on Keyed.byEmail(String) was blank: such calls share the policy's one bucket"))
                .isOne();
    }

    @Test
    void aKeyThatThrowsAnyRuntimeExceptionSharesTheBucketInsteadOfFailingTheCall(CapturedOutput output) {
        this.contextRunner.withBean(Keyed.class).run((context) -> {
            Keyed runtime = context.getBean(Keyed.class);
            assertThatNoException().isThrownBy(() -> runtime.byPrefix("a@b"));
            assertThatNoException().isThrownBy(() -> runtime.byPrefix("c@d"));
            assertThatExceptionOfType(ThrottledException.class)
                    .as("one shared bucket, never a bypass")
                    .isThrownBy(() -> runtime.byPrefix("e@f"));
        });
        assertThat(count(
                        output,
                        "Key '#email.substring(0, 5)' of @Throttled(policy = \"two\") on "
                                + "Keyed.byPrefix(String) could not be evaluated (StringIndexOutOfBoundsException): such calls "
                                + "share the policy's one bucket (said once per throttle)"))
                .isOne();
        assertThat(output.toString())
                .doesNotContain("a@b")
                .doesNotContain("c@d")
                .doesNotContain("e@f");
    }

    @Test
    void anObjectWhoseTextIsItsIdentitySharesTheBucketInsteadOfGivingEveryCallItsOwn(CapturedOutput output) {
        this.contextRunner.withBean(Keyed.class).run((context) -> {
            Keyed runtime = context.getBean(Keyed.class);
            runtime.byForm(new Form("alice@example.com"));
            runtime.byForm(new Form("alice@example.com"));
            assertThatExceptionOfType(ThrottledException.class)
                    .as("a new Form is no new key")
                    .isThrownBy(() -> runtime.byForm(new Form("mallory@example.com")));
        });
        assertThat(count(
                        output,
                        "Key '#form' of @Throttled(policy = \"two\") on Keyed.byForm(Form) was a Form, whose text names "
                                + "the object, not a key (its class overrides neither toString() nor hashCode(), or its "
                                + "toString() shows the identity hash of the object or of an array in it): such calls share the policy's one bucket "
                                + "(said once per throttle)"))
                .isOne();
        assertThat(output.toString()).doesNotContain("alice@example.com").doesNotContain("mallory@example.com");
    }

    @Test
    void anArrayKeyIsNamedByItsElements() {
        this.contextRunner.withBean(Keyed.class).run((context) -> {
            Keyed runtime = context.getBean(Keyed.class);
            runtime.byNames(new String[] {"alice", "bob"});
            runtime.byNames(new String[] {"alice", "bob"});
            assertThatExceptionOfType(ThrottledException.class)
                    .isThrownBy(() -> runtime.byNames(new String[] {"alice", "bob"}));
            runtime.byNames(new String[] {"carol"});
            assertThat(context.getBean(Throttler.class)
                            .peek("two", "[alice, bob]")
                            .remaining())
                    .isZero();
        });
    }

    /** What the starter threw, however Spring wrapped it. */
    static Throwable configurationFailure(Throwable failure) {
        Throwable current = failure;
        while (!(current instanceof ThrottleConfigurationException) && current.getCause() != null) {
            current = current.getCause();
        }
        return current;
    }

    private static int count(CapturedOutput output, String text) {
        Matcher matcher = Pattern.compile(Pattern.quote(text)).matcher(output.toString());
        int count = 0;
        while (matcher.find()) {
            count++;
        }
        return count;
    }

    private static Object newInstance(Class<?> type) {
        try {
            return type.getConstructor().newInstance();
        } catch (ReflectiveOperationException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /** Compiles one class per name and key, each with a throttled {@code call(String email)}, without -parameters. */
    private static ClassLoader compileWithoutParameterNames(Path dir, String... namesAndKeys) throws IOException {
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        List<String> arguments = new java.util.ArrayList<>(List.of(
                "-proc:none",
                "-d",
                dir.toString(),
                "-classpath",
                Path.of(location(Throttled.class)).toString()));
        for (int i = 0; i < namesAndKeys.length; i += 2) {
            Path source = dir.resolve(namesAndKeys[i] + ".java");
            Files.writeString(
                    source,
                    "package dev.throttle.generated;\n"
                            + "public class " + namesAndKeys[i] + " {\n"
                            + "	@dev.throttle.spring.annotation.Throttled(policy = \"two\", key = \""
                            + namesAndKeys[i + 1] + "\")\n"
                            + "	public String call(String email) { return email; }\n"
                            + "}\n");
            arguments.add(source.toString());
        }
        assertThat(compiler.run(null, null, null, arguments.toArray(String[]::new)))
                .isZero();
        return new URLClassLoader(new URL[] {dir.toUri().toURL()}, ThrottleKeyVariablesTests.class.getClassLoader());
    }

    private static java.net.URI location(Class<?> type) {
        try {
            return type.getProtectionDomain().getCodeSource().getLocation().toURI();
        } catch (java.net.URISyntaxException ex) {
            throw new IllegalStateException(ex);
        }
    }

    record Owner(String lastName) {}

    static class OwnerController {

        @Throttled(policy = "two", key = "#lastName")
        public String find(Owner owner, int page) {
            return owner.lastName();
        }
    }

    static class HashForgotten {

        @Throttled(policy = "two", key = "ip")
        public void call(String email) {}
    }

    static class NoParameters {

        @Throttled(policy = "two", key = "#email")
        public void call() {}
    }

    // public: the filtered class loader defines the proxy, which must see its superclass
    public static class ByPrincipal {

        @Throttled(policy = "two", key = "#principal")
        public void call(String user) {}
    }

    static class EveryForm {

        @Throttled(policy = "two", key = "#root.args[0]")
        public void rootArgs(String key) {}

        @Throttled(policy = "two", key = "#a0 + #p1 + #key + #ip + #principal + #root.args.length")
        public void everyVariable(String key, String other) {}

        @Throttled(policy = "two", key = "#keys.?[#this.length() > 1].size()")
        public void selection(List<String> keys) {}
    }

    static class Keyed {

        @Throttled(policy = "two", key = "#email")
        public void byEmail(String email) {}

        @Throttled(policy = "two", key = "#email.substring(0, 5)")
        public void byPrefix(String email) {}

        @Throttled(policy = "two", key = "#form")
        public void byForm(Form form) {}

        @Throttled(policy = "two", key = "#names")
        public void byNames(String[] names) {}
    }

    /** A form as applications write them: fields and getters, no text of its own. */
    static class Form {

        private final String email;

        Form(String email) {
            this.email = email;
        }

        public String getEmail() {
            return this.email;
        }
    }
}
