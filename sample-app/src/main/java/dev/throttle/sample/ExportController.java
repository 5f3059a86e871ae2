package dev.throttle.sample;

import dev.throttle.spring.annotation.Throttled;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * An export whose cost is known only once it ran: {@code GET /api/export?rows=N} (0 to 10,000)
 * answers {@code {"rows": [...]}} with N rows. Throttled by the {@code export} token bucket per
 * client address: one row is charged before the call, and the rows returned settle the rest
 * ({@code actualCost}).
 */
@RestController
class ExportController {

    @GetMapping("/api/export")
    @Throttled(policy = "export", key = "#ip", actualCost = "#result.get('rows').size()")
    public Map<String, List<Integer>> export(@RequestParam @Min(0) @Max(10_000) int rows) {
        return Map.of("rows", IntStream.range(0, rows).boxed().toList());
    }
}
