package dev.throttle.spring.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.Throttler;
import dev.throttle.memory.MemoryThrottleStore;
import dev.throttle.spring.annotation.Throttled;
import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.validation.BindingResult;
import org.springframework.web.bind.WebDataBinder;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.InitBinder;
import org.springframework.web.bind.annotation.ModelAttribute;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.ResponseBody;

/**
 * A class-level {@code @Throttled} on an ordinary MVC controller, shaped like Spring PetClinic's
 * {@code OwnerController} (an {@code @InitBinder}, a {@code @ModelAttribute} method, handler
 * methods, and an {@code @ExceptionHandler}), through a real port: the annotation applies to the
 * request-handling methods only, so a page view costs one unit and sends one line per policy.
 */
@SpringBootTest(
        classes = ClassLevelControllerTests.PetClinic.class,
        webEnvironment = WebEnvironment.RANDOM_PORT,
        properties = {
            "throttle.policies.pages.algorithm=token-bucket",
            "throttle.policies.pages.capacity=10",
            "throttle.policies.pages.refill-period=1m",
            "throttle.policies.pages-burst.algorithm=token-bucket",
            "throttle.policies.pages-burst.capacity=100",
            "throttle.policies.pages-burst.refill-period=1s"
        })
class ClassLevelControllerTests {

    @LocalServerPort
    int port;

    @Autowired
    MemoryThrottleStore store;

    @Autowired
    Throttler throttler;

    @BeforeEach
    void clearState() {
        this.store.clear();
    }

    @Test
    void onePageViewCostsOneUnitAndSendsOneLinePerPolicy() throws Exception {
        HttpResponse<String> search = ThrottleHttpTests.send(this.port, "/owners?lastName=Franklin");
        assertThat(search.statusCode()).isEqualTo(200);
        assertThat(search.body()).isEqualTo("found Franklin on page 1");
        assertThat(search.headers().allValues("RateLimit-Policy")).containsExactly("\"pages\";q=10;w=600");
        assertThat(search.headers().allValues("RateLimit"))
                .hasSize(1)
                .first()
                .asString()
                .startsWith("\"pages\";r=9;");
        assertThat(this.throttler.peek("pages", "127.0.0.1").remaining()).isEqualTo(9);
        HttpResponse<String> owner = ThrottleHttpTests.send(this.port, "/owners/1");
        assertThat(owner.body()).isEqualTo("owner 1: Franklin");
        assertThat(owner.headers().allValues("RateLimit"))
                .hasSize(1)
                .first()
                .asString()
                .startsWith("\"pages\";r=8;");
        assertThat(ThrottleHttpTests.send(this.port, "/owners/find").headers().allValues("RateLimit"))
                .hasSize(1)
                .first()
                .asString()
                .startsWith("\"pages\";r=7;");
    }

    @Test
    void theFirstTenPageViewsPassAndTheEleventhIsRefused() throws Exception {
        for (int i = 0; i < 10; i++) {
            assertThat(ThrottleHttpTests.send(this.port, "/owners/1").statusCode())
                    .as("view " + (i + 1))
                    .isEqualTo(200);
        }
        assertThat(ThrottleHttpTests.send(this.port, "/owners/1").statusCode()).isEqualTo(429);
    }

    @Test
    void anExceptionHandlerIsNotCharged() throws Exception {
        // the handler is charged and throws; the exception handler that answers is not charged again
        HttpResponse<String> missing = ThrottleHttpTests.send(this.port, "/owners/99");
        assertThat(missing.statusCode()).isEqualTo(404);
        assertThat(missing.body()).isEqualTo("no owner 99");
        assertThat(this.throttler.peek("pages", "127.0.0.1").remaining()).isEqualTo(9);
    }

    @Test
    void aControllerWithTwoClassLevelAnnotationsSendsEachPolicyOnce() throws Exception {
        HttpResponse<String> visit = ThrottleHttpTests.send(this.port, "/visits/new?description=checkup");
        assertThat(visit.statusCode()).isEqualTo(200);
        assertThat(visit.headers().allValues("RateLimit-Policy"))
                .containsExactly("\"pages\";q=10;w=600, \"pages-burst\";q=100;w=100");
        assertThat(visit.headers().allValues("RateLimit"))
                .hasSize(1)
                .first()
                .asString()
                .matches("\"pages\";r=9;t=\\d+, \"pages-burst\";r=99;t=\\d+");
    }

    @Test
    void aThrottledServiceCalledByAThrottledHandlerLeavesOneItemPerPolicyInOneLine() throws Exception {
        HttpResponse<String> pets = ThrottleHttpTests.send(this.port, "/visits/pets");
        assertThat(pets.body()).isEqualTo("pets: Leo");
        assertThat(pets.headers().allValues("RateLimit-Policy"))
                .containsExactly("\"pages\";q=10;w=600, \"pages-burst\";q=100;w=100");
        assertThat(pets.headers().allValues("RateLimit"))
                .hasSize(1)
                .first()
                .asString()
                .as("the service's later decision for pages-burst replaces the handler's")
                .matches("\"pages\";r=9;t=\\d+, \"pages-burst\";r=98;t=\\d+");
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({OwnerController.class, VisitController.class, PetService.class})
    static class PetClinic {

        @Bean
        ManualTimeSource manualTimeSource() {
            return new ManualTimeSource();
        }
    }

    /** A form-backing bean, as PetClinic's {@code Owner}. */
    public static class Owner {

        private Integer id;

        private String lastName;

        public Integer getId() {
            return this.id;
        }

        public void setId(Integer id) {
            this.id = id;
        }

        public String getLastName() {
            return this.lastName;
        }

        public void setLastName(String lastName) {
            this.lastName = lastName;
        }
    }

    static class OwnerNotFound extends RuntimeException {

        private static final long serialVersionUID = 1L;

        OwnerNotFound(int id) {
            super("no owner " + id);
        }
    }

    @Controller
    @Throttled(policy = "pages", key = "#ip")
    static class OwnerController {

        private final Map<Integer, String> owners = Map.of(1, "Franklin");

        @InitBinder
        public void setAllowedFields(WebDataBinder dataBinder) {
            dataBinder.setDisallowedFields("id");
        }

        @ModelAttribute("owner")
        public Owner findOwner(@PathVariable(name = "ownerId", required = false) Integer ownerId) {
            Owner owner = new Owner();
            if (ownerId != null) {
                owner.setId(ownerId);
                owner.setLastName(this.owners.get(ownerId));
            }
            return owner;
        }

        @GetMapping("/owners/find")
        @ResponseBody
        public String initFindForm() {
            return "find owners";
        }

        @GetMapping("/owners")
        @ResponseBody
        public String processFindForm(
                @RequestParam(defaultValue = "1") int page, Owner owner, BindingResult result, Model model) {
            return "found " + owner.getLastName() + " on page " + page;
        }

        @GetMapping("/owners/{ownerId}")
        @ResponseBody
        public String showOwner(@PathVariable("ownerId") int ownerId, @ModelAttribute("owner") Owner owner) {
            if (owner.getLastName() == null) {
                throw new OwnerNotFound(ownerId);
            }
            return "owner " + ownerId + ": " + owner.getLastName();
        }

        @ExceptionHandler(OwnerNotFound.class)
        public ResponseEntity<String> notFound(OwnerNotFound ex) {
            return ResponseEntity.status(HttpStatus.NOT_FOUND).body(ex.getMessage());
        }
    }

    static class PetService {

        @Throttled(policy = "pages-burst", key = "#ip")
        public String pets() {
            return "Leo";
        }
    }

    @Controller
    @Throttled(policy = "pages", key = "#ip")
    @Throttled(policy = "pages-burst", key = "#ip")
    static class VisitController {

        private final PetService pets;

        VisitController(PetService pets) {
            this.pets = pets;
        }

        @GetMapping("/visits/pets")
        @ResponseBody
        public String pets() {
            return "pets: " + this.pets.pets();
        }

        @InitBinder
        public void setAllowedFields(WebDataBinder dataBinder) {
            dataBinder.setDisallowedFields("id");
        }

        @ModelAttribute("visit")
        public Map<String, String> visit() {
            return Map.of();
        }

        @GetMapping("/visits/new")
        @ResponseBody
        public String initNewVisitForm(@RequestParam String description) {
            return "visit: " + description;
        }
    }
}
