package dev.throttle.spring.bans;

import dev.throttle.Decision;
import dev.throttle.FixedWindowPolicy;
import dev.throttle.Limiter;
import dev.throttle.ThrottleStore;
import dev.throttle.TimeSource;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The bans of this application: counts refusals per ban key in the store, and holds the active bans
 * in memory, so that checking a ban costs no store round trip.
 *
 * <p>Refusals are counted by a fixed window of {@code within} per ban and key, kept by the store as
 * any policy's state (so the count is shared by a fleet on Redis, and needs no script of its own):
 * the {@code after}-th refusal of a window is the one call that window allows last, and starts the
 * ban, once. Active bans live in a map of this instance, dropped when they end (by the injected
 * {@link TimeSource}); with {@link SharedBans} each start and lift is stored and heard by every
 * instance, and an instance reads the stored bans when it starts and when it was deaf for a while.
 * Thread-safe.
 */
public final class Bans implements SharedBans.Listener {

    private static final Log logger = LogFactory.getLog(Bans.class);

    /** The longest a reconnection waits for the store to take one ban started while it was down. */
    private static final Duration SAVE_BOUND = Duration.ofSeconds(5);

    /** What the counter policy of a ban is named: never one a user's policy can take by mistake. */
    static final String COUNTER_PREFIX = "ban.";

    private final Map<String, BanRule> rules;

    private final Map<String, Limiter> counters;

    private final TimeSource time;

    private final @Nullable SharedBans shared;

    private final List<BanListener> listeners;

    /** Active bans by ban name and key ({@link #id}). */
    private final Map<String, ActiveBan> active = new ConcurrentHashMap<>();

    /**
     * The bans started here that the store could not take (it was down): stored again when it is
     * back, and held here until then, rather than dropped as bans the store does not hold.
     */
    private final Set<String> unsaved = ConcurrentHashMap.newKeySet();

    /**
     * Creates the bans.
     * @param rules the configured bans
     * @param store where refusals are counted
     * @param time the clock that starts and ends bans
     * @param shared where a fleet shares its bans, or null for this instance alone (the memory store)
     * @param listeners what hears bans start and refuse
     */
    public Bans(
            List<BanRule> rules,
            ThrottleStore store,
            TimeSource time,
            @Nullable SharedBans shared,
            List<BanListener> listeners) {
        Map<String, BanRule> byName = new LinkedHashMap<>();
        Map<String, Limiter> counters = new HashMap<>();
        for (BanRule rule : rules) {
            byName.put(rule.name(), rule);
            counters.put(
                    rule.name(),
                    store.limiter(new FixedWindowPolicy(COUNTER_PREFIX + rule.name(), rule.after(), rule.within())));
        }
        this.rules = Map.copyOf(byName);
        this.counters = Map.copyOf(counters);
        this.time = time;
        this.shared = rules.isEmpty() ? null : shared;
        this.listeners = List.copyOf(listeners);
    }

    /**
     * Reads the stored bans, then listens to the fleet's: done once, before the application serves.
     * A store that does not answer is logged, not a failure: the bans are read again as soon as the
     * channel is up.
     */
    public void listen() {
        if (this.shared == null) {
            return;
        }
        try {
            reconnected();
        } catch (RuntimeException ex) {
            logger.warn("Could not read the stored bans at startup (" + ex.getMessage()
                    + "); they are read when the store answers");
        }
        this.shared.listen(this);
    }

    /**
     * Returns the configured bans.
     * @return the bans by name
     */
    public Map<String, BanRule> rules() {
        return this.rules;
    }

    /**
     * Whether no ban is configured.
     * @return true without {@code throttle.bans}
     */
    public boolean isEmpty() {
        return this.rules.isEmpty();
    }

    /**
     * Whether any key may be banned now: false costs a request nothing more.
     * @return whether this instance holds an active ban
     */
    public boolean anyActive() {
        return !this.active.isEmpty();
    }

    /**
     * The ban of a key, from memory.
     * @param ban the ban's name
     * @param key the key
     * @return the ban, or null when the key is not banned (or its ban has ended)
     */
    public @Nullable ActiveBan find(String ban, String key) {
        String id = id(ban, key);
        ActiveBan found = this.active.get(id);
        if (found == null) {
            return null;
        }
        if (found.remainingMillis(this.time.currentTimeMillis()) == 0) {
            this.active.remove(id, found);
            return null;
        }
        return found;
    }

    /**
     * How long a ban has left now.
     * @param ban the ban
     * @return the time left, zero once it has ended
     */
    public Duration remaining(ActiveBan ban) {
        return Duration.ofMillis(ban.remainingMillis(this.time.currentTimeMillis()));
    }

    /**
     * Tells the listeners that a ban refused a request.
     * @param ban the ban
     */
    public void refusedBy(ActiveBan ban) {
        for (BanListener listener : this.listeners) {
            listener.onBanRefused(ban.ban());
        }
    }

    /**
     * Counts a refusal of a key towards a ban, waiting for the store; the {@code after}-th within
     * the window starts the ban. A store that fails counts nothing.
     * @param rule the ban
     * @param key the ban's key of the refused request
     */
    public void countRefusal(BanRule rule, String key) {
        Decision decision;
        try {
            decision = this.counters.get(rule.name()).tryAcquire(key, 1);
        } catch (RuntimeException ex) {
            logger.debug("Counting a refusal towards ban '" + rule.name() + "' failed", ex);
            return;
        }
        if (reached(decision)) {
            start(rule.name(), key, rule.length());
        }
    }

    /**
     * Counts a refusal of a key towards a ban without waiting for the store.
     * @param rule the ban
     * @param key the ban's key of the refused request
     * @return completes when the refusal is counted (and a ban it started is active here); never fails
     */
    public CompletionStage<Void> countRefusalAsync(BanRule rule, String key) {
        CompletionStage<Decision> decision;
        try {
            decision = this.counters.get(rule.name()).tryAcquireAsync(key, 1);
        } catch (RuntimeException ex) {
            logger.debug("Counting a refusal towards ban '" + rule.name() + "' failed", ex);
            return CompletableFuture.completedFuture(null);
        }
        return decision.handle((counted, ex) -> {
            if (ex != null) {
                logger.debug("Counting a refusal towards ban '" + rule.name() + "' failed", ex);
            } else if (reached(counted)) {
                start(rule.name(), key, rule.length());
            }
            return null;
        });
    }

    /** The last refusal a window counts: after it, the window refuses until it ends, so a ban starts once. */
    private static boolean reached(Decision counted) {
        return counted.allowed() && counted.remaining() == 0;
    }

    /**
     * Bans a key (or extends its ban) from now on: active here at once, stored and told to every
     * instance without waiting.
     * @param ban the ban's name, one of {@link #rules()}
     * @param key the key
     * @param length how long
     * @return the key's ban now in force: the one started, or a longer one the key already had
     * @throws IllegalArgumentException for a ban that is not configured, a length that is not
     * positive or one too long to end
     */
    public ActiveBan start(String ban, String key, Duration length) {
        if (!this.rules.containsKey(ban)) {
            throw new IllegalArgumentException(
                    "No ban '" + ban + "' (configured: " + String.join(", ", this.rules.keySet()) + ")");
        }
        if (length.isNegative() || length.isZero()) {
            throw new IllegalArgumentException("A ban's length must be positive, was " + length);
        }
        long now = this.time.currentTimeMillis();
        long end;
        try {
            end = Math.addExact(now, length.toMillis());
        } catch (ArithmeticException ex) {
            throw new IllegalArgumentException("A ban's length must end before the year 292278994, was " + length);
        }
        ActiveBan started = new ActiveBan(ban, key, Instant.ofEpochMilli(end));
        hold(started);
        this.active.values().removeIf((each) -> each.remainingMillis(now) == 0);
        logger.info("Ban '" + ban + "' started for key " + hashOf(key) + " for " + length);
        for (BanListener listener : this.listeners) {
            listener.onBanStarted(ban, length);
        }
        if (this.shared != null) {
            String id = id(ban, key);
            this.unsaved.add(id);
            this.shared.save(started, now).whenComplete((saved, ex) -> {
                if (ex == null) {
                    this.unsaved.remove(id);
                } else {
                    logger.warn("Could not store ban '" + ban + "' of key " + hashOf(key)
                            + "; it applies on this instance only until the store is back (" + ex.getMessage()
                            + ")");
                }
            });
        }
        return this.active.getOrDefault(id(ban, key), started);
    }

    /**
     * Lifts a key's ban, here at once and on every instance, and forgets the refusals counted
     * towards it.
     * @param ban the ban's name
     * @param key the key
     * @return completes with whether this instance held the ban, once the store took the lift
     */
    public CompletionStage<Boolean> lift(String ban, String key) {
        boolean held = this.active.remove(id(ban, key)) != null;
        this.unsaved.remove(id(ban, key));
        Limiter counter = this.counters.get(ban);
        if (counter != null) {
            counter.resetAsync(key).exceptionally((ex) -> null);
        }
        logger.info("Ban '" + ban + "' lifted for key " + hashOf(key));
        if (this.shared == null) {
            return CompletableFuture.completedFuture(held);
        }
        return this.shared.lift(ban, key).thenApply((stored) -> held);
    }

    /**
     * Returns the active bans, soonest ending first.
     * @return the bans held by this instance that have not ended
     */
    public List<ActiveBan> active() {
        long now = this.time.currentTimeMillis();
        this.active.values().removeIf((each) -> each.remainingMillis(now) == 0);
        List<ActiveBan> bans = new ArrayList<>(this.active.values());
        bans.sort(Comparator.comparing(ActiveBan::until));
        return bans;
    }

    @Override
    public void started(ActiveBan ban) {
        if (this.rules.containsKey(ban.ban())) {
            hold(ban);
        }
        // a ban this instance does not configure (a rolling deploy) is skipped: it could not answer it
    }

    @Override
    public void lifted(String ban, String key) {
        this.active.remove(id(ban, key));
        this.unsaved.remove(id(ban, key));
    }

    @Override
    public void reconnected() {
        if (this.shared == null) {
            return;
        }
        long now = this.time.currentTimeMillis();
        saveUnsaved(this.shared, now);
        List<ActiveBan> stored = this.shared.loadAll(now);
        Map<String, ActiveBan> current = new HashMap<>();
        for (ActiveBan ban : stored) {
            if (this.rules.containsKey(ban.ban())) {
                current.put(id(ban.ban(), ban.key()), ban);
            }
        }
        // a ban lifted while this instance was deaf is gone from the store: drop it here too, but
        // not one started here that the store has not taken yet
        this.active.keySet().removeIf((id) -> !current.containsKey(id) && !this.unsaved.contains(id));
        current.values().forEach(this::hold);
    }

    /** Stores the bans started here while the store was down, each still active, waiting a bounded time. */
    private void saveUnsaved(SharedBans shared, long now) {
        for (String id : List.copyOf(this.unsaved)) {
            ActiveBan ban = this.active.get(id);
            if (ban == null || ban.remainingMillis(now) == 0) {
                this.unsaved.remove(id);
                continue;
            }
            try {
                shared.save(ban, now).toCompletableFuture().get(SAVE_BOUND.toMillis(), TimeUnit.MILLISECONDS);
                this.unsaved.remove(id);
                logger.info("Ban '" + ban.ban() + "' of key " + hashOf(ban.key())
                        + ", started while the store was down, is stored now");
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                return;
            } catch (ExecutionException | TimeoutException ex) {
                // still not stored: held here, and tried again at the next reconnection
                return;
            }
        }
    }

    /** Holds a ban, keeping the later end when the key is already banned. */
    private void hold(ActiveBan ban) {
        this.active.merge(
                id(ban.ban(), ban.key()), ban, (held, given) -> held.until().isAfter(given.until()) ? held : given);
    }

    private static String id(String ban, String key) {
        return ban + '\n' + key;
    }

    /**
     * How a key is written in logs: never as given (a client address, an e-mail address), but as the
     * start of its SHA-256, enough to tell keys apart and to find one that is known.
     * @param key the key
     * @return {@code sha256:} and 12 hexadecimal digits
     */
    public static String hashOf(String key) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return "sha256:" + HexFormat.of().formatHex(digest, 0, 6);
        } catch (NoSuchAlgorithmException ex) {
            throw new IllegalStateException(ex);
        }
    }
}
