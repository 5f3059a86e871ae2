package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.MultiLimitPolicy;
import dev.throttle.Policy;
import dev.throttle.TokenBucketPolicy;
import dev.throttle.testing.RepositoryFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.core.env.PropertySource;
import org.springframework.core.io.ByteArrayResource;

/**
 * {@code throttle.policies.<name>.limits}: several limits of the policy's algorithm, read as at
 * startup; every mistake names its property; the YAML of docs/plans-and-limits.md works as pasted.
 */
class SeveralLimitsConfigurationTests {

    private static PolicyFactory.Policies read(String... properties) {
        Map<String, String> values = new java.util.LinkedHashMap<>();
        for (String property : properties) {
            int eq = property.indexOf('=');
            values.put(property.substring(0, eq), property.substring(eq + 1));
        }
        ThrottleProperties bound = new Binder(new MapConfigurationPropertySource(values))
                .bindOrCreate("throttle", ThrottleProperties.class);
        return PolicyFactory.read(bound.getPolicies());
    }

    @Test
    void limitsBuildOnePolicyWithEachLimitsNumbers() {
        PolicyFactory.Policies policies = read(
                "throttle.policies.search.algorithm=token-bucket",
                "throttle.policies.search.limits[0].capacity=10",
                "throttle.policies.search.limits[0].refill-period=1s",
                "throttle.policies.search.limits[1].capacity=1000",
                "throttle.policies.search.limits[1].refill-period=1h");
        assertThat(policies.problems()).isEmpty();
        assertThat(policies.valid())
                .containsExactly(MultiLimitPolicy.of(
                        TokenBucketPolicy.of("search", 10, Duration.ofSeconds(1)),
                        TokenBucketPolicy.of("search", 1000, Duration.ofHours(1))));
    }

    @Test
    void limitsTogetherWithThePolicysOwnNumbersIsAMistakeNamingTheProperties() {
        assertThat(read(
                                "throttle.policies.search.algorithm=token-bucket",
                                "throttle.policies.search.capacity=5",
                                "throttle.policies.search.limits[0].capacity=10",
                                "throttle.policies.search.limits[0].refill-period=1s")
                        .problems())
                .containsExactly("throttle.policies.search.limits cannot be used with "
                        + "throttle.policies.search.capacity: each limit has its own numbers");
    }

    @Test
    void limitsOfAnAlgorithmThatTakesNoneIsAMistake() {
        for (String algorithm : List.of("sliding-log", "lockout")) {
            assertThat(read(
                                    "throttle.policies.login.algorithm=" + algorithm,
                                    "throttle.policies.login.limits[0].threshold=3")
                            .problems())
                    .as(algorithm)
                    .containsExactly("throttle.policies.login.limits cannot be used with the " + algorithm
                            + " algorithm: only token-bucket, gcra and fixed-window take several limits");
        }
    }

    @Test
    void eachBadEntryNamesItself() {
        assertThat(read(
                                "throttle.policies.api.algorithm=gcra",
                                "throttle.policies.api.limits[0].limit=10",
                                "throttle.policies.api.limits[0].period=1s",
                                "throttle.policies.api.limits[1].limit=0",
                                "throttle.policies.api.limits[1].period=1h",
                                "throttle.policies.api.limits[2].capacity=3")
                        .problems())
                .containsExactly(
                        "throttle.policies.api.limits[1].limit must be between 1 and 8388607, was 0",
                        "throttle.policies.api.limits[2].capacity means nothing to the gcra algorithm, which takes limit, period");
    }

    @Test
    void aPlanOverridesTheLimitsAsAWholeAndNothingElse() {
        String[] base = {
            "throttle.policies.api.algorithm=fixed-window",
            "throttle.policies.api.limits[0].limit=2",
            "throttle.policies.api.limits[0].window=1s",
            "throttle.policies.api.limits[1].limit=10",
            "throttle.policies.api.limits[1].window=1h"
        };
        PolicyFactory.Policies planned = read(concat(
                base,
                "throttle.policies.api.plans.pro.limits[0].limit=20",
                "throttle.policies.api.plans.pro.limits[0].window=1s"));
        assertThat(planned.problems()).isEmpty();
        Policy pro = planned.plans().get("api").get("pro");
        assertThat(pro.severalLimits()).isTrue();
        assertThat(pro.limits()).hasSize(1).first().extracting(Policy::quota).isEqualTo(20);
        assertThat(read(concat(base, "throttle.policies.api.plans.pro.limit=20"))
                        .problems())
                .singleElement()
                .asString()
                .startsWith("throttle.policies.api.plans.pro.limit: policy 'api' has several limits");
        assertThat(read(
                                "throttle.policies.one.algorithm=gcra",
                                "throttle.policies.one.limit=1",
                                "throttle.policies.one.period=1s",
                                "throttle.policies.one.plans.pro.limits[0].limit=2",
                                "throttle.policies.one.plans.pro.limits[0].period=1s")
                        .problems())
                .singleElement()
                .asString()
                .startsWith("throttle.policies.one.plans.pro.limits needs throttle.policies.one.limits");
    }

    @Test
    void thePlansAndLimitsPagesYamlWorksAsPasted() throws IOException {
        String readme = Files.readString(RepositoryFiles.path("docs/plans-and-limits.md"));
        String section = readme.substring(readme.indexOf("# Several limits in one policy"));
        String yaml = section.substring(
                section.indexOf("```yaml") + 7, section.indexOf("```", section.indexOf("```yaml") + 7));
        List<PropertySource<?>> sources =
                new YamlPropertySourceLoader().load("readme", new ByteArrayResource(yaml.getBytes()));
        ThrottleProperties bound = new Binder(
                        org.springframework.boot.context.properties.source.ConfigurationPropertySources.from(
                                sources.get(0)))
                .bindOrCreate("throttle", ThrottleProperties.class);
        PolicyFactory.Policies policies = PolicyFactory.read(bound.getPolicies());
        assertThat(policies.problems()).isEmpty();
        Policy search = policies.valid().get(0);
        assertThat(search.limits()).extracting(Policy::quota).containsExactly(10, 1000);
        assertThat(search.limits())
                .extracting(Policy::window)
                .containsExactly(Duration.ofSeconds(1), Duration.ofHours(1));
        assertThat(policies.plans().get("search").get("pro").limits())
                .extracting(Policy::quota)
                .containsExactly(100, 50000);
    }

    private static String[] concat(String[] base, String... more) {
        String[] all = java.util.Arrays.copyOf(base, base.length + more.length);
        System.arraycopy(more, 0, all, base.length, more.length);
        return all;
    }
}
