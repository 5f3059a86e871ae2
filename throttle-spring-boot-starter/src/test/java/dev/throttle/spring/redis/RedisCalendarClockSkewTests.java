package dev.throttle.spring.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.throttle.CalendarWindow;
import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.ManualTimeSource;
import dev.throttle.TimeSource;
import dev.throttle.testing.redis.RedisEndpoint;
import dev.throttle.testing.redis.SharedRedis;
import dev.throttle.testing.redis.SharedRedis.WithRedis;
import io.lettuce.core.RedisClient;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * A fixed window of the calendar on Redis is decided by the server's clock even near a boundary,
 * however far (up to a window) the application's clock is off: the application sends the
 * boundaries around its own time and the script picks the window holding the server's
 * (fixed_window_calendar.lua). A clock off by more than a window is an error, never a guess.
 */
@WithRedis
class RedisCalendarClockSkewTests {

    private static final long DAY = Duration.ofDays(1).toMillis();

    private static LettuceConnectionFactory connectionFactory;

    private final List<RedisThrottleStore> stores = new ArrayList<>();

    private RedisClient client;

    private RedisCommands<String, String> redis;

    @BeforeAll
    static void connect() {
        connectionFactory = SharedRedis.endpoint().newConnectionFactory();
    }

    @AfterAll
    static void disconnect() {
        connectionFactory.destroy();
    }

    @BeforeEach
    void openRawClient(RedisEndpoint endpoint) {
        this.client = endpoint.newClient();
        this.redis = this.client.connect().sync();
    }

    @AfterEach
    void closeStoresAndRawClient() {
        this.stores.forEach(RedisThrottleStore::close);
        this.client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }

    /**
     * On the server's own clock: a zone whose midnight is a few seconds ahead of Redis time, and an
     * application 10 s ahead that thinks the new day has begun; the calls are still January's, so to
     * speak, and told to wait for the server's midnight.
     */
    @Test
    void anApplicationAheadOfRedisStillCountsItsLastCallsInTheDayRedisIsIn() {
        long boundary = (redisNowMillis() / 1000 + 5) * 1000;
        FixedWindowPolicy day = dayEndingAt("ahead", boundary);
        Limiter limiter = store(null, () -> System.currentTimeMillis() + 10_000).limiter(day);
        limiter.peek("warm-up");
        assertThat(limiter.tryAcquire("k", 2).allowed()).isTrue();
        Decision refused = limiter.tryAcquire("k", 1);
        long until = boundary - redisNowMillis();
        assertThat(refused.allowed())
                .as("the application's clock says a new day; Redis's says the same one")
                .isFalse();
        assertThat(refused.retryAfterMillis())
                .as("a wait to the server's midnight, a few seconds away")
                .isBetween(1L, 5_000L)
                .isCloseTo(until, within(1_000L));
    }

    /**
     * The other way round: the server's midnight passed 2 s ago, the application 10 s behind still
     * thinks it is yesterday, whose window is full; the call opens today's window, by Redis's clock.
     */
    @Test
    void anApplicationBehindRedisOpensTheDayRedisIsIn() {
        long boundary = (redisNowMillis() / 1000 - 2) * 1000;
        FixedWindowPolicy day = dayEndingAt("behind", boundary);
        Limiter limiter = store(null, () -> System.currentTimeMillis() - 10_000).limiter(day);
        // yesterday's window, full
        this.redis.set("calskew:{behind:k}", "2:" + (boundary - DAY), SetArgs.Builder.px(DAY));
        Decision today = limiter.tryAcquire("k", 1);
        assertThat(today.allowed()).as("today's window, by Redis's clock").isTrue();
        assertThat(today.remaining()).isEqualTo(1);
        assertThat(today.resetAfterMillis())
                .as("until the next midnight of the zone, a day after the last")
                .isBetween(DAY - 5_000, DAY - 2_000);
        assertThat(this.redis.get("calskew:{behind:k}")).isEqualTo("1:" + boundary);
    }

    /** With both clocks driven: a month boundary, the application 30 s off either way. */
    @Test
    void atAMonthsEndTheServersTimeDecidesWhicheverWayTheApplicationIsOff() {
        FixedWindowPolicy month =
                FixedWindowPolicy.calendar("month", 1, CalendarWindow.of(CalendarWindow.Unit.MONTH, ZoneId.of("UTC")));
        ManualTimeSource server = new ManualTimeSource(Instant.parse("2026-01-31T23:59:50Z"));
        Limiter ahead = store(server, () -> server.currentTimeMillis() + 30_000).limiter(month);
        Limiter behind =
                store(server, () -> server.currentTimeMillis() - 30_000).limiter(month);
        assertThat(ahead.tryAcquire("k", 1))
                .as("January, 10 s before its end by the server's clock")
                .isEqualTo(Decision.allow(1, 0, 10_000));
        assertThat(behind.tryAcquire("k", 1)).isEqualTo(Decision.reject(1, 0, 10_000, 10_000));
        server.advanceMillis(10_000);
        assertThat(behind.tryAcquire("k", 1))
                .as("February by the server's clock, though this application thinks it is January")
                .isEqualTo(Decision.allow(1, 0, 28 * DAY));
        assertThat(ahead.tryAcquire("k", 1)).isEqualTo(Decision.reject(1, 0, 28 * DAY, 28 * DAY));
    }

    @Test
    void aClockOffByMoreThanAWindowIsAnErrorNotAGuess() {
        FixedWindowPolicy day =
                FixedWindowPolicy.calendar("day", 1, CalendarWindow.of(CalendarWindow.Unit.DAY, ZoneId.of("UTC")));
        ManualTimeSource server = new ManualTimeSource(Instant.parse("2026-03-10T12:00:00Z"));
        Limiter limiter =
                store(server, () -> server.currentTimeMillis() + 3 * DAY).limiter(day);
        assertThatThrownBy(() -> limiter.tryAcquire("k", 1))
                .isInstanceOf(RedisStoreException.class)
                .hasStackTraceContaining("differ by more than a window");
        assertThat(this.redis.exists("calskew:{day:k}")).isZero();
    }

    /** A day in a zone whose midnight falls at {@code boundary}, a whole second. */
    private static FixedWindowPolicy dayEndingAt(String name, long boundary) {
        long seconds = Math.floorMod(-(boundary / 1000), 86_400L);
        int offset = (int) ((seconds > 43_200) ? seconds - 86_400 : seconds);
        ZoneOffset zone = ZoneOffset.ofTotalSeconds(offset);
        FixedWindowPolicy day = FixedWindowPolicy.calendar(name, 2, CalendarWindow.of(CalendarWindow.Unit.DAY, zone));
        assertThat(day.calendar().startOf(boundary)).as("midnight in the zone").isEqualTo(boundary);
        return day;
    }

    /** A store whose scripts read {@code server} (Redis TIME when null) and whose application reads {@code application}. */
    private RedisThrottleStore store(TimeSource server, TimeSource application) {
        RedisThrottleStore store = new RedisThrottleStore(
                connectionFactory,
                "calskew",
                Duration.ofSeconds(2),
                server,
                NearCacheSettings.disabled(),
                application,
                true,
                java.util.Set.of());
        this.stores.add(store);
        return store;
    }

    private long redisNowMillis() {
        List<String> time = this.redis.time();
        return Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
    }
}
