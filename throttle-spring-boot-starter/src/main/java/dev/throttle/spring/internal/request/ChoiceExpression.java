package dev.throttle.spring.internal.request;

import java.time.temporal.ChronoField;
import java.time.temporal.TemporalAccessor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.commons.logging.Log;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;

/**
 * An expression that chooses a plan or a cost per call, the same for {@code @Throttled(plan,
 * costExpression)} and a URL rule's {@code plan} and {@code cost}: evaluated so that it never
 * fails the call (a failure gives nothing), and a value it cannot use is said once, at WARN, naming
 * the expression and never a value. A cost is a number, rounded down and at least 1 (at most
 * {@link Integer#MAX_VALUE}); null, NaN or another type is no cost. Thread-safe.
 */
public final class ChoiceExpression {

    private final Expression expression;

    private final Log logger;

    private final String subject;

    private final String fallback;

    private final AtomicBoolean warned = new AtomicBoolean();

    /**
     * Creates a choice.
     * @param expression the parsed expression
     * @param logger where to say what went wrong
     * @param subject names the expression, to start the message: {@code The cost expression of ...}
     * @param fallback what the call gets instead, to end the message: {@code : such calls get ...}
     */
    public ChoiceExpression(Expression expression, Log logger, String subject, String fallback) {
        this.expression = expression;
        this.logger = logger;
        this.subject = subject;
        this.fallback = fallback;
    }

    /**
     * Evaluates the expression.
     * @param context the call's variables
     * @return its value, or null when it failed (said once)
     */
    public @Nullable Object value(EvaluationContext context) {
        try {
            return this.expression.getValue(context);
        } catch (RuntimeException ex) {
            // only the exception's type: its message may quote a value
            warn("could not be evaluated (" + ex.getClass().getSimpleName() + ")");
            return null;
        }
    }

    /**
     * The units a cost is worth.
     * @param value what the expression gave
     * @param fallback the cost when the value is no number (and why is said once)
     * @return at least 1, or {@code fallback}
     */
    public int units(@Nullable Object value, int fallback) {
        if (value instanceof Number number) {
            double units = number.doubleValue();
            if (!Double.isNaN(units)) {
                return (int) Math.max(1, Math.min(units, Integer.MAX_VALUE));
            }
            warn("was not a number");
        } else {
            warn((value != null) ? "was a " + value.getClass().getSimpleName() + ", not a number" : "was null");
        }
        return fallback;
    }

    /**
     * The day of the month an anchor names: a whole number from 1 to 31, or a date (its day of the
     * month: a {@code LocalDate}, a {@code ZonedDateTime}, a {@code MonthDay}, ...). Null means none,
     * silently: a customer without a billing day.
     * @param value what the expression gave
     * @return the day, or 0 for none (and why is said once when the value was not null)
     */
    public int dayOfMonth(@Nullable Object value) {
        if (value == null) {
            return 0;
        }
        long day;
        if (value instanceof Number number
                && (number instanceof Integer
                        || number instanceof Long
                        || number instanceof Short
                        || number instanceof Byte)) {
            day = number.longValue();
        } else if (value instanceof TemporalAccessor date && date.isSupported(ChronoField.DAY_OF_MONTH)) {
            day = date.getLong(ChronoField.DAY_OF_MONTH);
        } else {
            warn("was a " + value.getClass().getSimpleName() + ", not a day of the month (1 to 31) or a date");
            return 0;
        }
        if (day < 1 || day > 31) {
            warn("was outside 1 to 31");
            return 0;
        }
        return (int) day;
    }

    /**
     * Says once why the expression gave nothing usable.
     * @param why such as {@code was null}
     */
    public void warn(String why) {
        if (!this.warned.get() && this.warned.compareAndSet(false, true)) {
            this.logger.warn(this.subject + " " + why + this.fallback);
        }
    }

    /**
     * Returns the expression as written.
     * @return its source
     */
    public String source() {
        return this.expression.getExpressionString();
    }
}
