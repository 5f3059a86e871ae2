package dev.throttle.spring.admission;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Makes the charges of the configured policies, as {@code throttle.policies} configures them: the
 * policy bound to the store, how a success settles ({@code reset-on-success}, {@code count}) and
 * its mode ({@code mode: shadow}). The bean an entry point of one's own (a message listener, a job
 * runner) starts from; the starter's own entry points use it too. Thread-safe.
 */
public final class Admissions {

    private static final BooleanSupplier ENFORCED = () -> false;

    private final Throttler throttler;

    private final Function<String, Charge.@Nullable OnSuccess> onSuccess;

    private final Function<String, BooleanSupplier> modes;

    private final Function<String, Duration> waits;

    private final Function<String, @Nullable Integer> debts;

    /**
     * Creates the charges' source.
     * @param throttler the throttler that knows the policies
     * @param onSuccess how each policy settles a success, by name (null: every call counts)
     * @param modes each policy's shadow-mode switch, by name
     */
    public Admissions(
            Throttler throttler,
            Function<String, Charge.@Nullable OnSuccess> onSuccess,
            Function<String, BooleanSupplier> modes) {
        this(throttler, onSuccess, modes, (name) -> Duration.ZERO);
    }

    /**
     * Creates the charges' source, with each policy's {@code wait}.
     * @param throttler the throttler that knows the policies
     * @param onSuccess how each policy settles a success, by name (null: every call counts)
     * @param modes each policy's shadow-mode switch, by name
     * @param waits the longest each policy's calls wait for a turn, by name (zero: refused at once)
     */
    public Admissions(
            Throttler throttler,
            Function<String, Charge.@Nullable OnSuccess> onSuccess,
            Function<String, BooleanSupplier> modes,
            Function<String, Duration> waits) {
        this(throttler, onSuccess, modes, waits, (name) -> null);
    }

    /**
     * Creates the charges' source, with each policy's {@code wait} and {@code max-debt}.
     * @param throttler the throttler that knows the policies
     * @param onSuccess how each policy settles a success, by name (null: every call counts)
     * @param modes each policy's shadow-mode switch, by name
     * @param waits the longest each policy's calls wait for a turn, by name (zero: refused at once)
     * @param debts the most units a key of each policy may owe after a call whose actual cost was more
     * than it had left, by name (null: the policy's quota)
     */
    public Admissions(
            Throttler throttler,
            Function<String, Charge.@Nullable OnSuccess> onSuccess,
            Function<String, BooleanSupplier> modes,
            Function<String, Duration> waits,
            Function<String, @Nullable Integer> debts) {
        this.throttler = throttler;
        this.onSuccess = onSuccess;
        this.modes = modes;
        this.waits = waits;
        this.debts = debts;
    }

    /**
     * A source for policies that settle nothing on success and always enforce.
     * @param throttler the throttler that knows the policies
     * @return the source
     */
    public static Admissions of(Throttler throttler) {
        return new Admissions(throttler, (name) -> Charge.OnSuccess.COUNT, (name) -> ENFORCED);
    }

    /**
     * Returns the throttler whose policies this source charges.
     * @return the throttler
     */
    public Throttler throttler() {
        return this.throttler;
    }

    /**
     * A charge of one unit by a configured policy, as configured. Made once per entry point, not
     * per call.
     * @param policy the policy's name
     * @return the charge
     * @throws IllegalArgumentException when no such policy is configured
     */
    public Charge charge(String policy) {
        return charge(policy, 1);
    }

    /**
     * A charge by a configured policy, as configured (its {@code wait} included). Made once per entry
     * point, not per call.
     * @param policy the policy's name
     * @param cost units per call, at least 1
     * @return the charge
     * @throws IllegalArgumentException when no such policy is configured
     */
    public Charge charge(String policy, int cost) {
        Charge.OnSuccess settles = this.onSuccess.apply(policy);
        Charge charge = Charge.of(
                this.throttler.bound(policy),
                cost,
                (settles != null) ? settles : Charge.OnSuccess.COUNT,
                this.modes.apply(policy));
        Integer maxDebt = this.debts.apply(policy);
        if (maxDebt != null) {
            charge = charge.withMaxDebt(maxDebt);
        }
        Duration wait = this.waits.apply(policy);
        return (wait == null || wait.isZero()) ? charge : charge.withWait(wait);
    }

    /**
     * Decides a call by one configured policy, as configured, blocking if the store does: the
     * programmatic form of an annotated call, which the caller ends by its outcome. A caller that
     * decides often binds its {@link #charge} once and uses {@link Admission#decide(Charge, String)}.
     * @param policy the policy's name
     * @param key the key (null or blank: the policy's shared bucket)
     * @return the admission, to end by the call's outcome
     * @throws ThrottledException when the policy refuses
     * @throws IllegalArgumentException when no such policy is configured
     */
    public Admission decide(String policy, @Nullable String key) {
        return Admission.decide(charge(policy), key);
    }

    /**
     * Like {@link #decide(String, String)}, without blocking.
     * @param policy the policy's name
     * @param key the key (null or blank: the policy's shared bucket)
     * @return completes with the admission; fails with a {@link ThrottledException} when the policy refuses
     * @throws IllegalArgumentException when no such policy is configured
     */
    public CompletionStage<Admission> decideAsync(String policy, @Nullable String key) {
        return Admission.decideAsync(List.of(charge(policy)), new @Nullable String[] {key});
    }
}
