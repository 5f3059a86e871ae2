package dev.throttle.spring.security;

import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Admissions;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.autoconfigure.ThrottleProperties;
import dev.throttle.spring.internal.request.PolicyModes;
import dev.throttle.spring.internal.request.ThrottleRequestContext;
import dev.throttle.spring.internal.web.ClientAccess;
import dev.throttle.spring.internal.web.ServletThrottleRequestContext;
import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.core.Authentication;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * Throttles Spring Security logins: charges each attempt to check a username and password
 * (a {@link UsernamePasswordAuthenticationToken}: form login, HTTP Basic, a custom filter that
 * authenticates through an {@code AuthenticationManager}) before the password is checked, by
 * {@code throttle.security.authentication.username-policy} (keyed by the username as submitted,
 * normalised as {@link #username(Authentication)} says) and {@code ip-policy} (keyed by
 * {@code #ip}, counting failures only unless its policy sets {@code count}); a refused attempt is a
 * {@link ThrottledException} and never reaches the password encoder. An unknown username is
 * charged exactly like a known one: nothing here looks a user up. A successful attempt settles each
 * policy by its own {@code reset-on-success} and {@code count}, but for a name sent in another spelling
 * than its normal form ({@code "Alice"}, {@code "alicé"}, which a store may keep as accounts of their
 * own beside {@code "alice"}): its success gives back its own attempt and resets nothing, so that one
 * account's success never clears the lockout another account's guesses earned. A failed attempt keeps
 * the charge.
 * Clients on {@code throttle.http.safelist} are not throttled.
 *
 * <p>Auto-configured when Spring Security is present and either property is set; declare a bean of
 * this type (a subclass that reads the username differently, say) to replace it. Thread-safe.
 */
public class AuthenticationThrottle {

    private static final String PREFIX = "throttle.security.authentication.";

    /** Username policy, then address policy, as configured (null when neither is). */
    private final @Nullable List<Charge> both;

    /** The username policy alone, for an attempt outside an HTTP request (null when not configured). */
    private final @Nullable List<Charge> usernameOnly;

    /** As {@link #both}, for a name sent in another spelling than its normal form: its success resets nothing. */
    private final @Nullable List<Charge> bothOtherSpelling;

    /** As {@link #usernameOnly}, for a name sent in another spelling than its normal form. */
    private final @Nullable List<Charge> usernameOnlyOtherSpelling;

    private final boolean byUsername;

    private final boolean byAddress;

    private final ThrottleRequestContext requestContext;

    private final ClientAccess clientAccess;

    /**
     * Creates the throttle that {@code throttle.security.authentication} describes, with {@code #ip}
     * and the safelist as {@code throttle.http} configures them.
     * @param throttler the throttler whose policies it names
     * @param properties the configuration
     */
    public AuthenticationThrottle(Throttler throttler, ThrottleProperties properties) {
        this(
                throttler,
                properties,
                new ServletThrottleRequestContext(
                        properties.getHttp().getHeaders() == ThrottleProperties.Headers.IETF,
                        properties.getHttp().getIpv6Prefix()),
                new ClientAccess(
                        properties.getHttp().getSafelist(), properties.getHttp().getBlocklist()));
    }

    /**
     * Creates the throttle that {@code throttle.security.authentication} describes.
     * @param throttler the throttler whose policies it names
     * @param properties the configuration
     * @param requestContext the request an attempt runs in: its {@code #ip}, and the RateLimit headers
     * of an allowed attempt
     * @param clientAccess the safelist
     * @throws ThrottleConfigurationException when a property names a policy that is not configured
     */
    public AuthenticationThrottle(
            Throttler throttler,
            ThrottleProperties properties,
            ThrottleRequestContext requestContext,
            ClientAccess clientAccess) {
        this(throttler, properties, requestContext, clientAccess, null);
    }

    /**
     * Creates the throttle that {@code throttle.security.authentication} describes, its policies each
     * in its mode (one in shadow mode counts what it would refuse and refuses nothing).
     * @param throttler the throttler whose policies it names
     * @param properties the configuration
     * @param requestContext the request an attempt runs in: its {@code #ip}, and the RateLimit headers
     * of an allowed attempt
     * @param clientAccess the safelist
     * @param modes which policies are in shadow mode (null: none)
     * @throws ThrottleConfigurationException when a property names a policy that is not configured
     */
    public AuthenticationThrottle(
            Throttler throttler,
            ThrottleProperties properties,
            ThrottleRequestContext requestContext,
            ClientAccess clientAccess,
            @Nullable PolicyModes modes) {
        ThrottleProperties.Authentication settings = properties.getSecurity().getAuthentication();
        Map<String, ThrottleProperties.Policy> configured = properties.getPolicies();
        String username = policy(throttler, configured, "username-policy", settings.getUsernamePolicy());
        String address = policy(throttler, configured, "ip-policy", settings.getIpPolicy());
        List<String> names = new ArrayList<>(2);
        if (username != null) {
            names.add(username);
        }
        if (address != null) {
            names.add(address);
        }
        this.byUsername = username != null;
        this.byAddress = address != null;
        Admissions admissions = new Admissions(
                throttler,
                (name) -> onSuccess(configured.get(name), name.equals(address)),
                (name) -> (modes != null) ? modes.of(name) : () -> false);
        this.both =
                names.isEmpty() ? null : names.stream().map(admissions::charge).toList();
        this.usernameOnly =
                (username == null) ? null : (address == null) ? this.both : List.of(admissions.charge(username));
        // a name sent in another spelling than its key may be another account of a store that keeps
        // spellings apart ("alicé" beside "alice"): its success gives back its own attempt, and never
        // resets the lockout that the key's own account earned
        Admissions otherSpelling = new Admissions(
                throttler,
                (name) -> {
                    Charge.OnSuccess settled = onSuccess(configured.get(name), name.equals(address));
                    return (name.equals(username) && settled == Charge.OnSuccess.RESET)
                            ? Charge.OnSuccess.REFUND
                            : settled;
                },
                (name) -> (modes != null) ? modes.of(name) : () -> false);
        this.bothOtherSpelling = names.isEmpty()
                ? null
                : names.stream().map(otherSpelling::charge).toList();
        this.usernameOnlyOtherSpelling = (username == null)
                ? null
                : (address == null) ? this.bothOtherSpelling : List.of(otherSpelling.charge(username));
        this.requestContext = requestContext;
        this.clientAccess = clientAccess;
    }

    /**
     * Charges a login attempt before its password is checked.
     * @param attempt what an {@code AuthenticationManager} was asked to authenticate
     * @return the charged attempt, whose success the caller reports; null when the attempt is not
     * throttled (not a username and password, a safelisted client, nothing configured)
     * @throws ThrottledException when a policy refuses the attempt (what an earlier policy took is
     * given back)
     */
    public @Nullable Attempt charge(Authentication attempt) {
        if (this.both == null || !isLogin(attempt)) {
            return null;
        }
        HttpServletRequest request = currentRequest();
        if (request != null && this.clientAccess.isSafelisted(request.getRemoteAddr())) {
            return null;
        }
        String address = (request != null) ? this.requestContext.clientAddress() : null;
        String username = this.byUsername ? username(attempt) : null;
        boolean ownSpelling = !this.byUsername || isOwnSpelling(attempt.getName());
        List<Charge> usernameOnly = ownSpelling ? this.usernameOnly : this.usernameOnlyOtherSpelling;
        if (this.byAddress && address == null) {
            // no client, so no address to key by: outside an HTTP request only the username policy applies
            return (usernameOnly != null) ? charged(usernameOnly, new String[] {username}) : null;
        }
        String[] keys;
        if (this.byUsername && this.byAddress) {
            keys = new String[] {username, address};
        } else {
            keys = new String[] {this.byUsername ? username : address};
        }
        return charged(ownSpelling ? this.both : this.bothOtherSpelling, keys);
    }

    /**
     * Whether a name was sent as its normal form spells it (trimmed): only then is its account surely the
     * one all its spellings share a key with.
     */
    private static boolean isOwnSpelling(@Nullable String sent) {
        String normal = LoginNames.key(sent);
        return normal == null || (sent != null && sent.trim().equals(normal));
    }

    private Attempt charged(List<Charge> charges, String[] keys) {
        Admission admission = this.requestContext.admit(charges, keys);
        return () -> this.requestContext.succeeded(admission);
    }

    /**
     * Whether an authentication request is a login attempt that this throttle charges: by default
     * an unauthenticated {@link UsernamePasswordAuthenticationToken} (not a bearer token or a
     * remember-me cookie, which are no guesses at a password).
     * @param attempt the authentication request
     * @return whether to charge it
     */
    protected boolean isLogin(Authentication attempt) {
        return attempt instanceof UsernamePasswordAuthenticationToken && !attempt.isAuthenticated();
    }

    /**
     * The username-policy key of an attempt: the username as submitted, Unicode-normalised (NFKC),
     * case-folded with {@link Locale#ROOT} (the same in every server locale), without accents or
     * invisible characters, and trimmed, so that {@code " Alice "}, {@code "ALICE"}, a fullwidth
     * {@code "ａｌｉｃｅ"} and {@code "alicé"} share one key whether or not such a user exists: a user
     * store that compares names case- and accent-insensitively finds one account for them all.
     * @param attempt the authentication request
     * @return the key; null or blank falls into the policy's one shared bucket
     */
    protected @Nullable String username(Authentication attempt) {
        return LoginNames.key(attempt.getName());
    }

    private static @Nullable HttpServletRequest currentRequest() {
        RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
        return (attributes instanceof ServletRequestAttributes servlet) ? servlet.getRequest() : null;
    }

    private static @Nullable String policy(
            Throttler throttler,
            Map<String, ThrottleProperties.Policy> configured,
            String property,
            @Nullable String name) {
        if (name == null || name.isBlank()) {
            return null;
        }
        if (!configured.containsKey(name)) {
            throw new ThrottleConfigurationException(PREFIX + property + " names policy '" + name
                    + "', which is not configured: add throttle.policies." + name + ".algorithm (configured: "
                    + String.join(", ", configured.keySet()) + ")");
        }
        // a policy whose numbers are invalid is left out here: the startup check reports it with every other mistake
        return throttler.policies().containsKey(name) ? name : null;
    }

    /**
     * How a success settles a policy. The ip-policy counts failures only unless its {@code count} is
     * set: every client behind one address (an office, a mobile carrier's NAT) shares its key, and
     * with HTTP Basic every request of a signed-in client is a successful login, so counting
     * successes would turn a guard against password guessing into a request limit that a busy,
     * honest client exhausts for everyone behind its address.
     */
    private static Charge.@Nullable OnSuccess onSuccess(ThrottleProperties.@Nullable Policy policy, boolean ipPolicy) {
        if (policy == null) {
            return null;
        }
        if (ipPolicy && !policy.hasCount() && !policy.isResetOnSuccess()) {
            return Charge.OnSuccess.REFUND;
        }
        return policy.onSuccess();
    }

    /**
     * A charged login attempt.
     */
    @FunctionalInterface
    public interface Attempt {

        /**
         * Settles an attempt that succeeded: resets the keys of reset-on-success policies and gives
         * back what count-failures policies took. Never throws. A failed attempt is simply not
         * reported: it keeps its charge.
         */
        void succeeded();
    }
}
