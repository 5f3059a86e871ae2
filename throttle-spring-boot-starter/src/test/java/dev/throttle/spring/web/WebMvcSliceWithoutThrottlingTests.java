package dev.throttle.spring.web;

import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.test.context.ContextConfiguration;
import org.springframework.test.web.servlet.MockMvc;

/**
 * A {@code @WebMvcTest} slice without the starter's auto-configurations imported: an application's
 * existing controller tests keep passing when it adds the starter, however often they call a
 * throttled handler.
 */
@WebMvcTest(
        properties = {
            "throttle.policies.slice.algorithm=token-bucket",
            "throttle.policies.slice.capacity=3",
            "throttle.policies.slice.refill-period=1h"
        })
@ContextConfiguration(classes = WebMvcSliceTests.SliceConfiguration.class)
class WebMvcSliceWithoutThrottlingTests {

    @Autowired
    MockMvc mvc;

    @Test
    void aSliceWithoutTheStarterImportedIsNotThrottled() throws Exception {
        for (int i = 0; i < 10; i++) {
            this.mvc.perform(get("/slice")).andExpect(status().isOk());
        }
    }
}
