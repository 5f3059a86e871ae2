package dev.throttle;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * The layering of core, stated as tests: packages depend one way, algorithms name no store, and core
 * stays plain Java (Spring, Redis and Micrometer are the starter's).
 */
class ArchitectureTests {

    private static final JavaClasses CORE = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.throttle");

    @Test
    void corePackagesAreFreeOfCycles() {
        slices().matching("dev.throttle.(**)").should().beFreeOfCycles().check(CORE);
    }

    @Test
    void coreNeverImportsSpringRedisOrMicrometer() {
        noClasses()
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage("org.springframework..", "io.lettuce..", "io.micrometer..", "reactor..")
                .check(CORE);
    }

    @Test
    void algorithmsAndTheirTransitionsNameNoStore() {
        noClasses()
                .that()
                .resideInAPackage("dev.throttle")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage("dev.throttle.memory..", "dev.throttle.resilience..")
                .check(CORE);
    }
}
