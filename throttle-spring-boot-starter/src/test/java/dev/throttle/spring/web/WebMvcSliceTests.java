package dev.throttle.spring.web;

import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import dev.throttle.spring.autoconfigure.ThrottleWebMvcAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.ContextConfiguration;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A {@code @WebMvcTest} slice that tests a refusal, written as docs/concepts.md says: a slice
 * leaves the starter out (see {@link WebMvcSliceWithoutThrottlingTests}), and importing its two
 * auto-configurations brings throttling in, the annotation and the 429 alike.
 */
@WebMvcTest(
        properties = {
            "throttle.policies.slice.algorithm=token-bucket",
            "throttle.policies.slice.capacity=3",
            "throttle.policies.slice.refill-period=1h"
        })
@ContextConfiguration(classes = WebMvcSliceTests.SliceConfiguration.class)
@ImportAutoConfiguration({ThrottleAutoConfiguration.class, ThrottleWebMvcAutoConfiguration.class})
class WebMvcSliceTests {

    @Autowired
    MockMvc mvc;

    @Test
    void theFourthCallOfTheSliceIsRefusedWithTheStarterImported() throws Exception {
        for (int i = 0; i < 3; i++) {
            this.mvc.perform(get("/slice")).andExpect(status().isOk());
        }
        this.mvc
                .perform(get("/slice"))
                .andExpect(status().isTooManyRequests())
                .andExpect(header().string("Retry-After", "3600"))
                .andExpect(jsonPath("$.violated-policies[0]").value("slice"));
    }

    @Configuration(proxyBeanMethods = false)
    @Import(SliceController.class)
    static class SliceConfiguration {}

    @RestController
    static class SliceController {

        @GetMapping("/slice")
        @Throttled(policy = "slice", key = "#ip")
        String slice() {
            return "ok";
        }
    }
}
