package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/configuration.md} is checked against what the starter really reads: every property of
 * its configuration metadata (generated from {@link ThrottleProperties} and the endpoint, merged with
 * {@code additional-spring-configuration-metadata.json}) and every parameter a policy takes (the
 * fields of {@link ThrottleProperties.Policy}, which the metadata describes only as a map's values)
 * must be documented there, and every property the page documents must exist.
 */
class ConfigurationReferenceTests {

    private static final Pattern METADATA_NAME = Pattern.compile("\"name\"\\s*:\\s*\"([^\"]+)\"");

    /** A property in the first column of a reference table: {@code | `throttle.store.type` |}. */
    private static final Pattern DOCUMENTED = Pattern.compile(
            "^\\| `((?:throttle|management\\.endpoint\\.throttle(?:bans)?)\\.[^`]+)` \\|", Pattern.MULTILINE);

    @Test
    void everyPropertyOfTheMetadataIsDocumented() throws IOException {
        Set<String> documented = documented();
        assertThat(metadataProperties())
                .isNotEmpty()
                .allSatisfy((property) -> assertThat(isDocumented(documented, property))
                        .as("docs/configuration.md documents %s", property)
                        .isTrue());
    }

    @Test
    void everyParameterOfAPolicyIsDocumented() throws IOException {
        Set<String> documented = documented();
        assertThat(policyProperties())
                .hasSizeGreaterThan(10)
                .allSatisfy((property) -> assertThat(isDocumented(documented, property))
                        .as("docs/configuration.md documents %s", property)
                        .isTrue());
    }

    @Test
    void everyDocumentedPropertyExists() throws IOException {
        Set<String> known = new LinkedHashSet<>(metadataProperties());
        known.addAll(policyProperties());
        assertThat(documented())
                .isNotEmpty()
                .allSatisfy((property) -> assertThat(
                                known.contains(property) || known.stream().anyMatch((k) -> nestedIn(property, k)))
                        .as("%s, documented in docs/configuration.md, is a property of the starter", property)
                        .isTrue());
    }

    /** A property is documented by its own row, or by rows of its members (a map's or a list's). */
    private static boolean isDocumented(Set<String> documented, String property) {
        return documented.stream().anyMatch((d) -> d.equals(property) || nestedIn(d, property));
    }

    /** {@code throttle.http.rules[].paths} is documented under the list {@code throttle.http.rules}. */
    private static boolean nestedIn(String property, String known) {
        return property.startsWith(known + "[")
                || property.startsWith(known + ".<")
                || (known.startsWith("throttle.policies.<name>.") && property.startsWith(known + "."));
    }

    static Set<String> metadataProperties() throws IOException {
        String json;
        try (InputStream in = ConfigurationReferenceTests.class
                .getClassLoader()
                .getResourceAsStream("META-INF/spring-configuration-metadata.json")) {
            assertThat(in).as("the starter's generated configuration metadata").isNotNull();
            json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        int from = json.indexOf("\"properties\"");
        int to = json.indexOf("\"hints\"", from);
        String properties = json.substring(from, (to > 0) ? to : json.length());
        Set<String> names = new LinkedHashSet<>();
        Matcher m = METADATA_NAME.matcher(properties);
        while (m.find()) {
            // a map or list of objects is documented through its members, one row each
            if (!m.group(1).equals("throttle.policies")) {
                names.add(m.group(1));
            }
        }
        return names;
    }

    static Set<String> policyProperties() {
        Set<String> names = new LinkedHashSet<>();
        for (Field field : ThrottleProperties.Policy.class.getDeclaredFields()) {
            if (!Modifier.isStatic(field.getModifiers())) {
                names.add("throttle.policies.<name>." + kebab(field.getName()));
            }
        }
        return names;
    }

    private static String kebab(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase();
    }

    static Set<String> documented() throws IOException {
        String page = Files.readString(docs().resolve("configuration.md"));
        Set<String> names = new LinkedHashSet<>();
        Matcher m = DOCUMENTED.matcher(page);
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    /** The repository's {@code docs}, found from wherever the tests run (this module or a rerun of its test-jar). */
    private static Path docs() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("docs/configuration.md"))) {
            dir = dir.getParent();
        }
        assertThat(dir)
                .as("docs/configuration.md above " + Path.of("").toAbsolutePath())
                .isNotNull();
        return dir.resolve("docs");
    }
}
