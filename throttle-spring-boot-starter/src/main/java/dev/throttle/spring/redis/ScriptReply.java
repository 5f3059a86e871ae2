package dev.throttle.spring.redis;

import dev.throttle.Decision;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** A script's reply to an acquire or a peek, read into a {@link Decision}. */
final class ScriptReply {

    private ScriptReply() {}

    /**
     * Turns a script's {@code {allowed, limit, remaining, wait, resetAfter, receipt}} into a decision:
     * {@code wait} is a refusal's retry-after and an allowed call's time until its next unit. A
     * reservation's reply has a seventh number, the time until the call's turn.
     */
    /**
     * The debt a charge answered ({@code {debt}}).
     * @param reply the script's reply
     * @return the units the key owes, not negative
     */
    static int debt(List<Object> reply) {
        List<?> values = reply;
        if (values.size() == 1 && values.get(0) instanceof List<?> nested) {
            values = nested;
        }
        return (int) Math.max(0, Math.min(number(values.get(0)), Integer.MAX_VALUE));
    }

    static Decision decision(List<Object> reply) {
        List<?> values = reply;
        if (values.size() == 1 && values.get(0) instanceof List<?> nested) {
            values = nested;
        }
        if (values.size() > 6 && values.size() % 6 == 0) {
            // several limits (several.lua): six numbers per limit
            Decision[] parts = new Decision[values.size() / 6];
            for (int i = 0; i < parts.length; i++) {
                parts[i] = decision(values, 6 * i);
            }
            return Decision.ofLimits(parts);
        }
        if (values.size() == 7) {
            // a reservation: a seventh number, the time until the call's turn
            Decision decision = decision(values, 0);
            long turn = Math.max(0, number(values.get(6)));
            return (decision.allowed() && turn > 0)
                    ? Decision.reserved(
                            decision.limit(),
                            decision.remaining(),
                            decision.resetAfterMillis(),
                            decision.nextUnitAfterMillis(),
                            decision.receipt(),
                            turn)
                    : decision;
        }
        if (values.size() != 6) {
            throw new IllegalStateException("unexpected script reply " + reply);
        }
        return decision(values, 0);
    }

    private static Decision decision(List<?> values, int at) {
        boolean allowed = number(values.get(at)) == 1;
        int limit = (int) number(values.get(at + 1));
        // never negative, whatever a script computed from state that other settings wrote
        int remaining = (int) Math.max(0, number(values.get(at + 2)));
        long wait = Math.max(0, number(values.get(at + 3)));
        long resetAfter = Math.max(0, number(values.get(at + 4)));
        long receipt = Math.max(0, number(values.get(at + 5)));
        return allowed
                ? Decision.allow(limit, remaining, resetAfter, wait, receipt)
                : Decision.reject(limit, remaining, wait, resetAfter);
    }

    private static long number(Object value) {
        if (value instanceof Number number) {
            return number.longValue();
        }
        if (value instanceof ByteBuffer buffer) {
            return Long.parseLong(
                    StandardCharsets.US_ASCII.decode(buffer.duplicate()).toString());
        }
        if (value instanceof byte[] bytes) {
            return Long.parseLong(new String(bytes, StandardCharsets.US_ASCII));
        }
        return Long.parseLong(String.valueOf(value));
    }
}
