package dev.throttle.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.spring.internal.web.ClientAccess;
import dev.throttle.spring.internal.web.HttpRules;
import dev.throttle.testing.RepositoryFiles;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.core.env.PropertySource;
import org.springframework.core.io.ByteArrayResource;

/**
 * The YAML of the URL rules page ({@code docs/url-rules.md}) starts an application as pasted.
 */
class UrlRulesReadmeTests {

    @Test
    void theUrlRulesPagesYamlWorksAsPasted() throws Exception {
        String readme = Files.readString(RepositoryFiles.path("docs/url-rules.md"));
        int section = readme.indexOf("Throttle them by URL, in YAML");
        assertThat(section).isPositive();
        int start = readme.indexOf("```yaml\n", section) + "```yaml\n".length();
        String yaml = readme.substring(start, readme.indexOf("```", start));
        List<PropertySource<?>> sources =
                new YamlPropertySourceLoader().load("README", new ByteArrayResource(yaml.getBytes()));
        new WebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class))
                .withInitializer(
                        (context) -> sources.forEach(context.getEnvironment().getPropertySources()::addFirst))
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    HttpRules rules = context.getBean(HttpRules.class);
                    assertThat(rules.isEmpty()).isFalse();
                    ClientAccess access = context.getBean(ClientAccess.class);
                    assertThat(access.isBlocked("203.0.113.9")).isTrue();
                    assertThat(access.isBlocked("2001:db8:bad::1")).isTrue();
                    assertThat(access.isSafelisted("::1")).isTrue();
                    assertThat(access.isSafelisted("10.9.9.9")).isTrue();
                    assertThat(access.isSafelisted("192.0.2.1")).isFalse();
                    ThrottleProperties properties = context.getBean(ThrottleProperties.class);
                    assertThat(properties.getHttp().getRules()).hasSize(2);
                    assertThat(properties.getHttp().getRules().get(0).getPaths())
                            .containsExactly("/api/hello", "/api/reports/**");
                    assertThat(properties.getHttp().getRules().get(1).getCost()).isEqualTo("2");
                });
    }

    @Test
    void theUrlRulesPagesPlanAndCostYamlWorksAsPasted() throws Exception {
        String readme = Files.readString(RepositoryFiles.path("docs/url-rules.md"));
        int section = readme.indexOf("**Plans and cost per request.**");
        assertThat(section).isPositive();
        int start = readme.indexOf("  ```yaml\n", section) + "  ```yaml\n".length();
        String yaml = readme.substring(start, readme.indexOf("  ```", start)).replaceAll("(?m)^  ", "");
        List<PropertySource<?>> sources =
                new YamlPropertySourceLoader().load("README", new ByteArrayResource(yaml.getBytes()));
        new WebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class))
                .withInitializer(
                        (context) -> sources.forEach(context.getEnvironment().getPropertySources()::addFirst))
                .run((context) -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(HttpRules.class).isEmpty()).isFalse();
                    List<ThrottleProperties.Http.Rule> rules =
                            context.getBean(ThrottleProperties.class).getHttp().getRules();
                    assertThat(rules).hasSize(2);
                    assertThat(rules.get(0).getPlan()).isEqualTo("#headers['X-Plan']");
                    assertThat(rules.get(1).getCost()).isEqualTo("#params['rows']");
                    assertThat(context.getBean(dev.throttle.Throttler.class).plans("api"))
                            .containsKeys("free", "pro");
                });
    }
}
