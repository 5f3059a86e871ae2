package dev.throttle.boot40;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootVersion;
import org.springframework.core.SpringVersion;

/**
 * This module reruns the starter's test-jar; these checks make sure it really runs on the Boot
 * line it claims, so a BOM that silently wins (throttle-parent's Boot 4.1) fails the build
 * instead of proving nothing.
 */
class OnBoot40Tests {

    @Test
    void theStartersTestsRunHereOnSpringBoot40AndSpringFramework70() {
        assertThat(SpringBootVersion.getVersion())
                .startsWith(System.getProperty("throttle.expected-boot-version", "4.0."));
        assertThat(SpringVersion.getVersion()).startsWith("7.0.");
    }

    @Test
    void theStartersTestClassesAreOnTheClasspathToBeRun() throws Exception {
        assertThat(Class.forName("dev.throttle.spring.autoconfigure.ThrottleAutoConfigurationTests"))
                .isNotNull();
    }
}
