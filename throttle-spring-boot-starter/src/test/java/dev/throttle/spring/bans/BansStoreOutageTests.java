package dev.throttle.spring.bans;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * Bans of a fleet when its store is down for a while: a ban started meanwhile holds here and is
 * stored once the store is back, rather than dropped as one the store does not hold; a ban lifted
 * elsewhere while this instance was deaf is still dropped.
 */
class BansStoreOutageTests {

    private final ManualTimeSource clock = new ManualTimeSource();

    private final FlakyStore store = new FlakyStore();

    private final Bans bans = new Bans(
            List.of(new BanRule("abuse", 3, Duration.ofMinutes(1), Set.of(), Duration.ofMinutes(10), 429)),
            new MemoryThrottleStore(),
            this.clock,
            this.store,
            List.of());

    @Test
    void aBanStartedWhileTheStoreIsDownHoldsHereAndIsStoredWhenTheStoreIsBack() {
        this.store.down = true;
        this.bans.start("abuse", "203.0.113.9", Duration.ofMinutes(10));
        assertThat(this.bans.find("abuse", "203.0.113.9"))
                .as("held here while the store is down")
                .isNotNull();

        this.store.down = false;
        this.bans.reconnected();
        assertThat(this.bans.find("abuse", "203.0.113.9"))
                .as("not dropped as a ban the store did not hold")
                .isNotNull();
        assertThat(this.store.bans).containsKey("abuse\n203.0.113.9");
    }

    @Test
    void aBanLiftedElsewhereWhileThisInstanceWasDeafIsDropped() {
        this.bans.start("abuse", "203.0.113.9", Duration.ofMinutes(10));
        assertThat(this.store.bans).containsKey("abuse\n203.0.113.9");
        this.store.bans.clear();
        this.bans.reconnected();
        assertThat(this.bans.find("abuse", "203.0.113.9")).isNull();
    }

    @Test
    void aShorterBanOfABannedKeyAnswersWithTheLongerOneInForce() {
        this.bans.start("abuse", "203.0.113.9", Duration.ofMinutes(10));
        ActiveBan shorter = this.bans.start("abuse", "203.0.113.9", Duration.ofMinutes(1));
        assertThat(this.bans.remaining(shorter)).isEqualTo(Duration.ofMinutes(10));
    }

    @Test
    void aBanTooLongToEndIsRefused() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> this.bans.start("abuse", "203.0.113.9", Duration.ofHours(2562047788015215L)));
        assertThat(this.bans.active()).isEmpty();
    }

    /** A fleet's store that can be down: saves fail and reads throw. */
    static final class FlakyStore implements SharedBans {

        final Map<String, ActiveBan> bans = new ConcurrentHashMap<>();

        volatile boolean down;

        @Override
        public CompletionStage<Void> save(ActiveBan ban, long nowMillis) {
            if (this.down) {
                return CompletableFuture.failedFuture(new IllegalStateException("the store is down"));
            }
            this.bans.merge(
                    ban.ban() + "\n" + ban.key(),
                    ban,
                    (held, given) -> held.until().isAfter(given.until()) ? held : given);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<Void> lift(String ban, String key) {
            this.bans.remove(ban + "\n" + key);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public List<ActiveBan> loadAll(long nowMillis) {
            if (this.down) {
                throw new IllegalStateException("the store is down");
            }
            return new ArrayList<>(this.bans.values());
        }

        @Override
        public void listen(Listener listener) {}

        @Override
        public void close() {}
    }
}
