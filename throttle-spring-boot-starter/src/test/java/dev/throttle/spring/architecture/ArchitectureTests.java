package dev.throttle.spring.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * The layering of the project, stated as tests: core knows nothing of Spring, Redis or Micrometer,
 * and no two packages depend on each other.
 */
class ArchitectureTests {

	private static final JavaClasses PRODUCTION = new ClassFileImporter()
		.withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
		.withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TEST_FIXTURES)
		.importPackages("dev.throttle");

	@Test
	void coreDependsOnNeitherSpringNorRedisNorMicrometer() {
		noClasses().that()
			.resideInAPackage("dev.throttle..")
			.and()
			.resideOutsideOfPackage("dev.throttle.spring..")
			.should()
			.dependOnClassesThat()
			.resideInAnyPackage("org.springframework..", "io.lettuce..", "io.micrometer..", "reactor..",
					"jakarta..")
			.check(PRODUCTION);
	}

	@Test
	void noPackageCycles() {
		slices().matching("dev.(**)").should().beFreeOfCycles().check(PRODUCTION);
	}

}
