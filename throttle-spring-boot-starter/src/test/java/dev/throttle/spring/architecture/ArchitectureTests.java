package dev.throttle.spring.architecture;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.simpleName;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The layering of the project, stated as tests over core and the starter: core knows nothing of
 * Spring, Redis or Micrometer; the admission API depends on no entry point; entry points (the
 * annotation, URL rules, Spring Security logins, the gateway's RateLimiter, the Spring AI advisor,
 * outgoing clients) do
 * not use each other; no two packages depend on each other.
 */
class ArchitectureTests {

    private static final Pattern TEST_JAR = Pattern.compile(".*-tests\\.jar.*");

    private static final JavaClasses PRODUCTION = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            // core's contract suite reaches the starter's tests as a test-jar, which the option above
            // (a matter of class folders) does not recognise when the build resolves it from a jar
            .withImportOption((location) -> !location.matches(TEST_JAR))
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TEST_FIXTURES)
            .importPackages("dev.throttle");

    private static final String ANNOTATION_ADAPTER = "dev.throttle.spring.internal.aop..";

    private static final String GATEWAY_ADAPTER = "dev.throttle.spring.gateway..";

    private static final String AI_ADAPTER = "dev.throttle.spring.ai..";

    private static final String CLIENT_ADAPTER = "dev.throttle.spring.client..";

    private static final String[] SECURITY_ADAPTER = {
        "dev.throttle.spring.security..", "dev.throttle.spring.internal.security.."
    };

    @Test
    void coreDependsOnNeitherSpringNorRedisNorMicrometer() {
        noClasses()
                .that()
                .resideInAPackage("dev.throttle..")
                .and()
                .resideOutsideOfPackage("dev.throttle.spring..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(
                        "org.springframework..", "io.lettuce..", "io.micrometer..", "reactor..", "jakarta..")
                .check(PRODUCTION);
    }

    @Test
    void theAdmissionApiDependsOnNoEntryPointAndNoStore() {
        noClasses()
                .that()
                .resideInAPackage("dev.throttle.spring.admission..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(
                        "dev.throttle.spring.internal..",
                        "dev.throttle.spring.security..",
                        "dev.throttle.spring.autoconfigure..",
                        "dev.throttle.spring.redis..",
                        "dev.throttle.memory..")
                .check(PRODUCTION);
    }

    @Test
    void theAnnotationAdapterUsesNoOtherEntryPoint() {
        noClasses()
                .that()
                .resideInAPackage(ANNOTATION_ADAPTER)
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(
                        "dev.throttle.spring.internal.web..",
                        "dev.throttle.spring.security..",
                        "dev.throttle.spring.internal.security..")
                .check(PRODUCTION);
    }

    @Test
    void urlRulesAndSecurityLoginsDoNotUseTheAnnotationAdapter() {
        noClasses()
                .that()
                .resideInAnyPackage(
                        "dev.throttle.spring.internal.web..",
                        "dev.throttle.spring.security..",
                        "dev.throttle.spring.internal.security..")
                .and()
                .doNotHaveSimpleName("WebFluxThrottleRequestContext")
                .should()
                .dependOnClassesThat()
                .resideInAPackage(ANNOTATION_ADAPTER)
                .check(PRODUCTION);
        // the WebFlux request context still reads what the annotation adapter decided before argument
        // binding from an exchange attribute, and nothing else of it; deciding at one point removes this
        noClasses()
                .that()
                .haveSimpleName("WebFluxThrottleRequestContext")
                .should()
                .dependOnClassesThat(resideInAPackage(ANNOTATION_ADAPTER).and(not(simpleName("EarlyDecisions"))))
                .check(PRODUCTION);
    }

    @Test
    void theGatewayAdapterGoesThroughTheAdmissionApiAlone() {
        // the gateway's RateLimiter decides through Admission and answers with the public headers and
        // refusal; it uses no other entry point, no store and no configuration class
        noClasses()
                .that()
                .resideInAPackage(GATEWAY_ADAPTER)
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(
                        "dev.throttle.spring.internal..",
                        "dev.throttle.spring.security..",
                        "dev.throttle.spring.autoconfigure..",
                        "dev.throttle.spring.redis..",
                        "dev.throttle.memory..")
                .check(PRODUCTION);
        noClasses()
                .that()
                .resideInAnyPackage(
                        "dev.throttle.spring.internal..",
                        "dev.throttle.spring.security..",
                        "dev.throttle.spring.admission..",
                        "dev.throttle.spring.web..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage(GATEWAY_ADAPTER)
                .check(PRODUCTION);
    }

    @Test
    void theSpringAiAdapterGoesThroughTheAdmissionApiAlone() {
        // the token budget advisor decides and settles through Admission; it uses no other entry point, no
        // store and no configuration class (the auto-configuration hands it what it needs), and none uses it
        noClasses()
                .that()
                .resideInAPackage(AI_ADAPTER)
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(
                        "dev.throttle.spring.internal..",
                        "dev.throttle.spring.security..",
                        "dev.throttle.spring.autoconfigure..",
                        "dev.throttle.spring.gateway..",
                        "dev.throttle.spring.web..",
                        "dev.throttle.spring.redis..",
                        "dev.throttle.memory..")
                .check(PRODUCTION);
        noClasses()
                .that()
                .resideInAnyPackage(
                        "dev.throttle.spring.internal..",
                        "dev.throttle.spring.security..",
                        "dev.throttle.spring.admission..",
                        "dev.throttle.spring.gateway..",
                        "dev.throttle.spring.web..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage(AI_ADAPTER)
                .check(PRODUCTION);
    }

    @Test
    void theOutgoingClientAdapterGoesThroughTheAdmissionApiAlone() {
        // throttled outgoing calls decide and settle through Admission; a store keeps remote pauses behind
        // the client package's own small interface (RemotePauses), which the Redis store implements
        noClasses()
                .that()
                .resideInAPackage(CLIENT_ADAPTER)
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(
                        "dev.throttle.spring.internal..",
                        "dev.throttle.spring.security..",
                        "dev.throttle.spring.autoconfigure..",
                        "dev.throttle.spring.gateway..",
                        "dev.throttle.spring.ai..",
                        "dev.throttle.spring.web..",
                        "dev.throttle.spring.redis..",
                        "dev.throttle.memory..")
                .check(PRODUCTION);
        noClasses()
                .that()
                .resideInAnyPackage(
                        "dev.throttle.spring.internal..",
                        "dev.throttle.spring.security..",
                        "dev.throttle.spring.admission..",
                        "dev.throttle.spring.gateway..",
                        "dev.throttle.spring.ai..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage(CLIENT_ADAPTER)
                .check(PRODUCTION);
    }

    @Test
    void urlRulesDoNotUseSecurityLogins() {
        noClasses()
                .that()
                .resideInAPackage("dev.throttle.spring.internal.web..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(SECURITY_ADAPTER)
                .check(PRODUCTION);
    }

    @Test
    void noPackageCycles() {
        slices().matching("dev.(**)")
                .should()
                .beFreeOfCycles()
                // AuthenticationThrottle's public constructors take the starter's ThrottleProperties, which
                // the auto-configuration (which builds it) owns; a settings type of its own removes this
                .ignoreDependency(
                        resideInAPackage("dev.throttle.spring.security.."),
                        resideInAPackage("dev.throttle.spring.autoconfigure.."))
                .check(PRODUCTION);
    }
}
