package dev.throttle.spring.client;

import dev.throttle.Decision;
import dev.throttle.ThrottledException;
import dev.throttle.TimeSource;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Charge;
import dev.throttle.spring.admission.KeyText;
import java.net.URI;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.support.SimpleEvaluationContext;

/**
 * One throttled client, as configured: which requests it throttles, its charge (the policy with the
 * client's wait), its key, and what it does with a remote's limits. What the interceptor and the
 * filter share; immutable and thread-safe.
 */
final class OutgoingClient {

    private static final Log logger = LogFactory.getLog(OutgoingClient.class);

    /** The clients whose pauses could not be read or written, each said once. */
    private static final Set<String> STORE_FAILED = ConcurrentHashMap.newKeySet();

    private static final CompletionStage<Void> STORED = CompletableFuture.completedFuture(null);

    private final String name;

    private final @Nullable URI baseUrl;

    private final Set<String> hosts;

    private final Charge charge;

    private final long waitMillis;

    private final @Nullable Expression key;

    private final boolean honorRemoteLimits;

    private final RemotePauses pauses;

    private final OutgoingCallListener listener;

    private final TimeSource clock;

    OutgoingClient(
            String name,
            @Nullable URI baseUrl,
            Set<String> hosts,
            Charge charge,
            @Nullable Expression key,
            boolean honorRemoteLimits,
            RemotePauses pauses,
            OutgoingCallListener listener,
            TimeSource clock) {
        this.name = name;
        this.baseUrl = baseUrl;
        this.hosts = hosts;
        this.charge = charge;
        this.waitMillis = charge.waitLimit().toMillis();
        this.key = key;
        this.honorRemoteLimits = honorRemoteLimits;
        this.pauses = pauses;
        this.listener = listener;
        this.clock = clock;
    }

    /**
     * Whether a request to this URL is this client's: under its base URL, or to one of its hosts.
     * The host is compared as DNS resolves it (any case, with or without the root's trailing dot) and
     * the port as the connection uses it (the scheme's own port written or not), so that no spelling
     * of one remote escapes its client.
     */
    boolean matches(URI url) {
        String host = host(url);
        if (host == null) {
            return false;
        }
        if (!this.hosts.isEmpty()) {
            if (this.hosts.contains(host) || this.hosts.contains(host + ":" + port(url))) {
                return true;
            }
        }
        URI base = this.baseUrl;
        if (base == null) {
            return false;
        }
        // the path as a server resolves it (dot segments applied, escapes decoded): /./api and /%61pi
        // are /api there
        String path = path(url);
        String basePath = path(base);
        return base.getScheme().equalsIgnoreCase(url.getScheme())
                && host.equals(host(base))
                && port(base) == port(url)
                && (basePath.isEmpty()
                        || path.equals(basePath)
                        || path.startsWith(basePath.endsWith("/") ? basePath : basePath + "/"));
    }

    private static String path(URI url) {
        String path = url.normalize().getPath();
        return (path != null) ? path : "";
    }

    private static int port(URI url) {
        if (url.getPort() >= 0) {
            return url.getPort();
        }
        return "https".equalsIgnoreCase(url.getScheme()) ? 443 : 80;
    }

    /** A URL's host in lower case without the DNS root's trailing dot, or null when it has none. */
    static @Nullable String host(URI url) {
        String host = url.getHost();
        if (host == null) {
            return null;
        }
        int end = host.length();
        while (end > 1 && host.charAt(end - 1) == '.') {
            end--;
        }
        return host.substring(0, end).toLowerCase(Locale.ROOT);
    }

    /**
     * The key of one call: the expression's value, or the request's host (and its port, unless it is
     * the scheme's own): one remote, one key, however its URL is spelled.
     */
    String keyOf(URI url, String method, Object headers) {
        Expression expression = this.key;
        if (expression == null) {
            String host = host(url);
            if (host == null) {
                return "";
            }
            int port = port(url);
            return (port == ("https".equalsIgnoreCase(url.getScheme()) ? 443 : 80)) ? host : host + ":" + port;
        }
        // read-only: properties and public methods of the request's parts, nothing else of the application
        SimpleEvaluationContext context = SimpleEvaluationContext.forReadOnlyDataBinding()
                .withInstanceMethods()
                .build();
        context.setVariable("uri", url);
        context.setVariable("method", method);
        context.setVariable("headers", headers);
        // a value whose text would be its identity names no key: the client's one shared key
        String key = KeyText.of(expression.getValue(context));
        return (key != null) ? key : "";
    }

    /**
     * Waits, on the calling thread, for the call's turn: first for a pause the remote asked for, then
     * for the policy's turn, both within the client's wait. Nothing is sent before this returns.
     * @param key the call's key
     * @return the admission, to end when the response (or the failure) is known
     * @throws OutgoingCallThrottledException when the call cannot be sent within the wait
     */
    Admission admit(String key) {
        long waited = 0;
        while (true) {
            long paused = this.honorRemoteLimits ? remainingPause(key) : 0;
            if (paused > 0) {
                if (waited + paused > this.waitMillis) {
                    throw paused(paused);
                }
                pauseWait(paused);
                try {
                    TimeUnit.MILLISECONDS.sleep(paused);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    throw paused(paused);
                }
                waited += paused;
            }
            Admission admission;
            long started = System.nanoTime();
            long turn;
            try {
                // a wait for a concurrency slot happens here, a wait for a rate policy's turn next
                admission = Admission.decide(chargeAfter(waited), key);
                turn = admission.waitMillis();
                admission.awaitTurn();
            } catch (OutgoingCallThrottledException ex) {
                throw ex;
            } catch (ThrottledException ex) {
                throw refused(ex);
            }
            // a pause the remote asked for while this call waited for its turn or its slot holds it
            // too: what it took goes back and it waits for the pause, within what is left of its wait
            long spent = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            if (this.honorRemoteLimits
                    && (turn > 0 || (admission.releasesAtEnd() && spent > 0))
                    && remainingPause(key) > 0) {
                admission.refund();
                waited += spent;
                continue;
            }
            sent();
            return admission;
        }
    }

    /** The charge for a call that already waited this long for a pause: what is left of the wait. */
    Charge chargeAfter(long waitedMillis) {
        if (waitedMillis <= 0) {
            return this.charge;
        }
        return this.charge.withWait(Duration.ofMillis(Math.max(0, this.waitMillis - waitedMillis)));
    }

    long waitMillis() {
        return this.waitMillis;
    }

    boolean honorsRemoteLimits() {
        return this.honorRemoteLimits;
    }

    private long remainingPause(String key) {
        try {
            Long left = this.pauses
                    .remainingMillis(this.name, key)
                    .toCompletableFuture()
                    .join();
            return (left != null) ? left : 0;
        } catch (RuntimeException ex) {
            storeFailed("read", ex);
            return 0;
        }
    }

    /** Like the blocking read, for a caller that does not block: never fails, 0 when unknown. */
    CompletionStage<Long> remainingPauseAsync(String key) {
        if (!this.honorRemoteLimits) {
            return CompletableFuture.completedFuture(0L);
        }
        try {
            return this.pauses.remainingMillis(this.name, key).handle((left, error) -> {
                if (error != null) {
                    storeFailed("read", error);
                    return 0L;
                }
                return (left != null) ? left : 0L;
            });
        } catch (RuntimeException ex) {
            storeFailed("read", ex);
            return CompletableFuture.completedFuture(0L);
        }
    }

    /**
     * Reads a response for a remote's limits and pauses the key for as long as they ask; the
     * response itself is left as it is. The caller hands the response on only once the returned
     * stage completes, so that the pause is stored before anything this caller does next (another
     * call, on this instance or any other, may follow at once). Never fails.
     * @param key the call's key
     * @param status the response's status
     * @param header the response's first value of a header, by name
     * @return completes when the pause (if any) is stored, or could not be
     */
    CompletionStage<Void> answered(String key, int status, Function<String, @Nullable String> header) {
        if (!this.honorRemoteLimits) {
            return STORED;
        }
        long pause = RemoteLimits.pauseMillis(this.name, status, header, this.clock.currentTimeMillis());
        if (pause <= 0) {
            return STORED;
        }
        this.listener.onRemotePause(this.name, pause);
        try {
            return this.pauses.pause(this.name, key, pause).handle((done, error) -> {
                if (error != null) {
                    storeFailed("write", error);
                }
                return null;
            });
        } catch (RuntimeException ex) {
            storeFailed("write", ex);
            return STORED;
        }
    }

    private void storeFailed(String what, Throwable ex) {
        if (STORE_FAILED.add(this.name + what)) {
            logger.warn(
                    "Could not " + what + " the remote's pause of client '" + this.name
                            + "'; calls go on as if the remote had not asked for one (said once per client)",
                    ex);
        }
    }

    /** The refusal of a call the remote's pause keeps from being sent in time. */
    OutgoingCallThrottledException paused(long pausedMillis) {
        this.listener.onCall(this.name, this.charge.policy().name(), OutgoingCallListener.Outcome.PAUSED);
        int limit = this.charge.neutral().limit();
        return new OutgoingCallThrottledException(
                this.name, this.charge.policy(), Decision.reject(limit, 0, pausedMillis, pausedMillis), true);
    }

    /** The refusal of a call its policy had no turn for within the wait. */
    OutgoingCallThrottledException refused(ThrottledException ex) {
        this.listener.onCall(this.name, this.charge.policy().name(), OutgoingCallListener.Outcome.REFUSED);
        return new OutgoingCallThrottledException(this.name, ex.getPolicy(), ex.getDecision(), false);
    }

    void sent() {
        this.listener.onCall(this.name, this.charge.policy().name(), OutgoingCallListener.Outcome.SENT);
    }

    void pauseWait(long millis) {
        this.listener.onPauseWait(this.name, this.charge.policy().name(), millis);
    }
}
