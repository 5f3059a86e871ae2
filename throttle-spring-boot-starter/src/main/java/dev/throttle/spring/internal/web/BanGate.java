package dev.throttle.spring.internal.web;

import dev.throttle.spring.admission.ExpressionReads;
import dev.throttle.spring.admission.KeyText;
import dev.throttle.spring.bans.ActiveBan;
import dev.throttle.spring.bans.BanRule;
import dev.throttle.spring.bans.Bans;
import dev.throttle.spring.web.Refusal;
import dev.throttle.spring.web.ThrottleExceptionHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;
import org.springframework.http.HttpStatusCode;

/**
 * What the web layer does with bans, on either stack: finds the ban of a request from memory
 * (before anything else runs), counts a refusal of a request towards the bans of the refusing
 * policy, and builds the answer to a banned request. The ban key is the ban's expression over the
 * request (parsed once, at startup); {@code #ip} is read without SpEL. A safelisted address is
 * never banned: its requests are neither checked nor counted. Thread-safe.
 */
public final class BanGate {

    private static final Log logger = LogFactory.getLog(BanGate.class);

    /** The variables a ban's key may read: what every request has before anything else runs. */
    private static final Set<String> KEY_VARIABLES = Set.of("ip", "request", "headers", "params", "root", "this");

    private static final SpelExpressionParser PARSER = new SpelExpressionParser();

    private final Bans bans;

    private final Entry[] entries;

    private final ClientAccess access;

    private final int ipv6Prefix;

    /**
     * Creates the gate.
     * @param bans the bans
     * @param keys each ban's key expression, parsed, by ban name; null for {@code #ip}
     * @param access the safelist
     * @param ipv6Prefix the bits of an IPv6 address that {@code #ip} keeps
     */
    public BanGate(Bans bans, Map<String, @Nullable Expression> keys, ClientAccess access, int ipv6Prefix) {
        this.bans = bans;
        List<Entry> entries = new ArrayList<>();
        bans.rules().forEach((name, rule) -> entries.add(new Entry(rule, keys.get(name), new AtomicBoolean())));
        this.entries = entries.toArray(new Entry[0]);
        this.access = access;
        this.ipv6Prefix = ipv6Prefix;
    }

    /**
     * Parses a ban's key and checks the variables it reads, at startup: a key that names a variable
     * a request does not have ({@code #IP}, {@code #principal}, which no ban can read before
     * authentication) would give null for every request, and so ban no one.
     * @param property the property, such as {@code throttle.bans.abuse.key}
     * @param source the key, trimmed and not empty
     * @param problems collects the mistakes, each naming the property
     * @return the expression, or null for {@code #ip} (read without SpEL) or a key with mistakes
     */
    public static @Nullable Expression parseKey(String property, String source, List<String> problems) {
        if (source.equals("#ip")) {
            return null;
        }
        Expression expression;
        try {
            expression = PARSER.parseExpression(source);
        } catch (ParseException ex) {
            problems.add(property + " is not a valid SpEL expression (" + ex.getSimpleMessage() + "): " + source);
            return null;
        }
        int before = problems.size();
        for (String name : ExpressionReads.variables(expression)) {
            if (!KEY_VARIABLES.contains(name)) {
                problems.add(property + " '" + source + "' names #" + name + ", which a ban's key does not have, "
                        + "so it would ban no one: use #ip, #request, #headers['Name'] or #params['name']");
            }
        }
        String rootRead = ExpressionReads.first(expression);
        if (rootRead != null) {
            problems.add(property + " '" + source + "' reads '" + rootRead + "' from the root object, which a ban's "
                    + "key does not have, so it would ban no one: a variable is written with # (#ip, #request, "
                    + "#headers['Name'] or #params['name'])");
        }
        return (problems.size() > before) ? null : expression;
    }

    /**
     * The key under which a ban holds a key an operator typed (the actuator): for a ban keyed by
     * {@code #ip}, the key that address's requests get, whatever literal spelling was typed; for
     * any other ban, the text as it is.
     * @param ban the ban's name
     * @param typed the key as typed
     * @return the key
     */
    public String keyOf(String ban, String typed) {
        for (Entry entry : this.entries) {
            if (entry.rule().name().equals(ban) && entry.expression() == null) {
                return ClientAddresses.canonical(typed, this.ipv6Prefix);
            }
        }
        return typed;
    }

    /**
     * Returns the bans.
     * @return the bans
     */
    public Bans bans() {
        return this.bans;
    }

    /**
     * Whether no ban is configured: the filters then never run.
     * @return true without {@code throttle.bans}
     */
    public boolean isEmpty() {
        return this.entries.length == 0;
    }

    int ipv6Prefix() {
        return this.ipv6Prefix;
    }

    ClientAccess access() {
        return this.access;
    }

    /**
     * The ban of a request, from memory; tells the listeners when there is one.
     * @param request the request as a key reads it
     * @param safelisted whether the client address is safelisted
     * @return the ban, or null
     */
    @Nullable
    ActiveBan check(HttpRule.RuleRequest request, boolean safelisted) {
        if (!this.bans.anyActive() || safelisted) {
            return null;
        }
        for (Entry entry : this.entries) {
            String key = entry.key(request);
            if (key != null) {
                ActiveBan ban = this.bans.find(entry.rule().name(), key);
                if (ban != null) {
                    this.bans.refusedBy(ban);
                    return ban;
                }
            }
        }
        return null;
    }

    /**
     * Counts a refusal by a policy towards every ban that lists it, waiting for the store.
     * @param request the refused request
     * @param policy the refusing policy
     * @param safelisted whether the client address is safelisted
     */
    void refused(HttpRule.RuleRequest request, String policy, boolean safelisted) {
        if (safelisted) {
            return;
        }
        for (Entry entry : this.entries) {
            if (entry.rule().counts(policy)) {
                String key = entry.key(request);
                if (key != null) {
                    this.bans.countRefusal(entry.rule(), key);
                }
            }
        }
    }

    /**
     * Counts a refusal by a policy towards every ban that lists it, without waiting for the store.
     * @return completes when counted; never fails
     */
    CompletionStage<Void> refusedAsync(HttpRule.RuleRequest request, String policy, boolean safelisted) {
        CompletableFuture<Void> all = CompletableFuture.completedFuture(null);
        if (safelisted) {
            return all;
        }
        for (Entry entry : this.entries) {
            if (entry.rule().counts(policy)) {
                String key = entry.key(request);
                if (key != null) {
                    CompletionStage<Void> counted = this.bans.countRefusalAsync(entry.rule(), key);
                    all = all.thenCombine(counted, (a, b) -> null);
                }
            }
        }
        return all;
    }

    /**
     * The answer to a banned request, by the application's refusal handler.
     * @param handler the handler
     * @param ban the ban
     * @return the refusal
     */
    Refusal refusal(ThrottleExceptionHandler handler, ActiveBan ban) {
        BanRule rule = this.bans.rules().get(ban.ban());
        int status = (rule != null) ? rule.status() : 429;
        return handler.banned(ban.ban(), this.bans.remaining(ban), HttpStatusCode.valueOf(status));
    }

    /** A ban and its key's expression (null for {@code #ip}). */
    private record Entry(BanRule rule, @Nullable Expression expression, AtomicBoolean warned) {

        @Nullable
        String key(HttpRule.RuleRequest request) {
            String key;
            if (this.expression == null) {
                key = request.ip();
            } else {
                try {
                    Object value = this.expression.getValue(context(request));
                    key = KeyText.of(value);
                    if (key == null && value != null) {
                        warn("was a " + value.getClass().getSimpleName() + ", " + KeyText.NAMES_THE_OBJECT);
                        return null;
                    }
                } catch (RuntimeException ex) {
                    warn("could not be evaluated (" + ex.getClass().getSimpleName() + ")");
                    return null;
                }
            }
            return (key == null || key.isBlank()) ? null : key;
        }

        private static StandardEvaluationContext context(HttpRule.RuleRequest request) {
            StandardEvaluationContext context = new StandardEvaluationContext();
            context.setVariable("ip", request.ip());
            context.setVariable("request", request.request());
            context.setVariable("headers", new HttpRule.Lookup(request::header));
            context.setVariable("params", new HttpRule.Lookup(request::param));
            return context;
        }

        private void warn(String why) {
            if (!this.warned.get() && this.warned.compareAndSet(false, true)) {
                logger.warn("Key of throttle.bans." + this.rule.name() + " " + why
                        + ": such requests are neither banned nor counted (said once per ban)");
            }
        }
    }
}
