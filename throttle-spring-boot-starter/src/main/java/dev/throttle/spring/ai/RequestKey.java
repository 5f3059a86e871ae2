package dev.throttle.spring.ai;

import dev.throttle.spring.admission.KeyText;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.expression.BeanResolver;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;

/**
 * The key of a token budget: a SpEL expression, parsed once, read per request with {@code #context}
 * (the ChatClient advisor context: what a caller sets with {@code advisors(a -> a.param("user", name))}),
 * {@code #prompt}, {@code #request} (also the root object) and {@code @name} beans. Thread-safe.
 */
public final class RequestKey {

    private static final Log logger = LogFactory.getLog(RequestKey.class);

    private static final SpelExpressionParser parser = new SpelExpressionParser();

    private final String source;

    private final Expression expression;

    private final @Nullable BeanResolver beans;

    private final AtomicBoolean warned = new AtomicBoolean();

    private RequestKey(String source, Expression expression, @Nullable BeanResolver beans) {
        this.source = source;
        this.expression = expression;
        this.beans = beans;
    }

    /**
     * Parses a key expression.
     * @param source the expression, such as {@code #context['user']}
     * @param beans resolves {@code @name}, or null
     * @return the key
     * @throws IllegalArgumentException when the expression is blank or does not parse, saying why
     */
    public static RequestKey parse(String source, @Nullable BeanResolver beans) {
        if (source == null || source.isBlank()) {
            throw new IllegalArgumentException("the key expression is empty: name what tells budgets apart, such as"
                    + " #context['user'], or \"'all'\" for one budget shared by every call");
        }
        try {
            return new RequestKey(source, parser.parseExpression(source), beans);
        } catch (ParseException ex) {
            throw new IllegalArgumentException(
                    "the key expression '" + source + "' does not parse: " + ex.getMessage(), ex);
        }
    }

    /**
     * Returns the key of one request. A key that is null, blank or cannot be evaluated (a param the
     * caller did not set, along {@code #context['user'].name}) is null: the call shares the policy's
     * one bucket rather than escaping it or failing, said once at WARN (naming the expression, never a
     * value), as an annotated method's key does.
     * @param request the request
     * @return the key; null for the policy's shared bucket
     */
    public @Nullable String of(ChatClientRequest request) {
        StandardEvaluationContext context = new StandardEvaluationContext(request);
        Map<String, Object> advised = request.context();
        context.setVariable("context", advised);
        context.setVariable("prompt", request.prompt());
        context.setVariable("request", request);
        if (this.beans != null) {
            context.setBeanResolver(this.beans);
        }
        Object key;
        try {
            key = this.expression.getValue(context);
        } catch (EvaluationException ex) {
            shared("failed: " + ex.getMessage());
            return null;
        }
        String text = KeyText.of(key);
        if (text == null || text.isBlank()) {
            shared(
                    (key == null)
                            ? "was null"
                            : (text == null)
                                    ? "was a " + key.getClass().getSimpleName() + ", " + KeyText.NAMES_THE_OBJECT
                                    : "was blank");
            return null;
        }
        return text;
    }

    private void shared(String what) {
        if (this.warned.compareAndSet(false, true)) {
            logger.warn("The token budget's key expression '" + this.source + "' " + what
                    + ", so such calls share the policy's one budget (said once)");
        }
    }

    @Override
    public String toString() {
        return this.source;
    }
}
