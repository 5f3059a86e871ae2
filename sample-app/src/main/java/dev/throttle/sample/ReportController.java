package dev.throttle.sample;

import dev.throttle.spring.annotation.Throttled;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A slow, expensive call: {@code GET /api/report?seconds=N} works N seconds (0 to 10), then answers
 * {@code {"seconds": N}}. Throttled by the {@code reports} concurrency policy: at most two reports
 * in progress per client address, each slot released when its report ends (or, should the instance
 * die mid-report, when its lease runs out). An N out of range is a 400 before any slot is taken.
 */
@RestController
class ReportController {

    @GetMapping("/api/report")
    @Throttled(policy = "reports", key = "#ip")
    public Map<String, Integer> report(@RequestParam @Min(0) @Max(10) int seconds) throws InterruptedException {
        Thread.sleep(seconds * 1000L);
        return Map.of("seconds", seconds);
    }
}
