package com.example.adapter;

import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.admission.Charge;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * An entry point of an application's own, as a message listener or a job runner would write it:
 * it throttles plain calls by some configured policies, all keyed by one key, using only the
 * starter's public types. Bind once, decide per call, settle by the call's outcome.
 */
final class ThrottledCalls {

    private final List<Charge> charges;

    ThrottledCalls(Admissions admissions, String... policies) {
        this.charges = Arrays.stream(policies).map(admissions::charge).toList();
    }

    /**
     * Runs a call if every policy allows it: a return is a success, an exception a failure.
     * @throws ThrottledException when a policy refuses (the call does not run)
     */
    <T> T call(String key, Callable<T> work) throws Exception {
        Admission admission = Admission.decide(this.charges, keys(key));
        T result;
        try {
            result = work.call();
        } catch (Exception | Error ex) {
            admission.failed();
            throw ex;
        }
        admission.succeeded();
        return result;
    }

    /** The same without blocking: the call's stage is its outcome. */
    <T> CompletionStage<T> callAsync(String key, Supplier<CompletionStage<T>> work) {
        return Admission.decideAsync(this.charges, keys(key))
                .thenCompose((admission) -> work.get()
                        .whenComplete((value, error) -> {
                            if (error != null) {
                                admission.failed();
                            }
                        })
                        .thenCompose((value) -> admission.succeededAsync().thenApply((settled) -> value)));
    }

    private String[] keys(String key) {
        String[] keys = new String[this.charges.size()];
        Arrays.fill(keys, key);
        return keys;
    }
}
