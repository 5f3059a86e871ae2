package dev.throttle.sample;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * The sample app is what users copy: it uses the starter's public API only, never an
 * {@code internal} package, whose types may change in any release.
 */
class SampleArchitectureTests {

    @Test
    void theSampleAppUsesNoInternalPackageOfTheStarter() {
        noClasses()
                .that()
                .resideInAPackage("dev.throttle.sample..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage("dev.throttle..internal..")
                .check(new ClassFileImporter()
                        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                        .importPackages("dev.throttle.sample"));
    }
}
