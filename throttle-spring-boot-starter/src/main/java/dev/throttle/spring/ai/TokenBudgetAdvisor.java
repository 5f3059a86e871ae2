package dev.throttle.spring.ai;

import dev.throttle.ThrottledException;
import dev.throttle.spring.admission.Admission;
import dev.throttle.spring.admission.Charge;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.client.advisor.api.CallAdvisor;
import org.springframework.ai.chat.client.advisor.api.CallAdvisorChain;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisor;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisorChain;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Charges a key's token budget (a user's, say) for each {@code ChatClient} call, from the usage the
 * model reports. Before the model is called it reserves an estimate under the request's key (the
 * request's max tokens when its options set them, else a configured number), one store round trip;
 * when the budget has no room the call is refused with a {@link ThrottledException} and the model is
 * not called. After the call it settles the reported usage ({@link TokenUsage}) against the
 * estimate, once: the difference is charged (into debt, bounded by the policy's {@code max-debt}) or
 * given back.
 *
 * <p>A stream is settled when it ends, from the usage of its last chunk that reports one; on an
 * error or a cancel, what was reported so far is settled, else the estimate stands. A call or stream
 * whose model reports no usage keeps the estimate, and the advisor says so (a WARN once per advisor,
 * and the hook given at construction each time: a Micrometer counter where Micrometer is present).
 * The stream path never blocks: it decides and settles through the non-blocking forms of
 * {@link Admission}.
 *
 * <p>Thread-safe; one advisor serves every call of the ChatClients it is added to.
 */
public final class TokenBudgetAdvisor implements CallAdvisor, StreamAdvisor {

    private static final Log logger = LogFactory.getLog(TokenBudgetAdvisor.class);

    private static final long ESTIMATE_STANDS = -1;

    /**
     * Characters counted as one token for a stream that ended before its usage came: fewer than the
     * usual four of English text, so that text of denser scripts is not charged far below its tokens.
     */
    private static final int CHARACTERS_PER_TOKEN = 2;

    private final Charge charge;

    private final RequestKey key;

    private final int estimate;

    private final TokenUsage usage;

    private final Runnable unreported;

    private final int order;

    private final AtomicBoolean saidUnreported = new AtomicBoolean();

    /**
     * Creates the advisor.
     * @param charge the token budget's policy, as configured (its cost is replaced per call by the estimate)
     * @param key the key of each request
     * @param estimate tokens reserved before a request that sets no max tokens, at least 1
     * @param usage how the reported usage is charged
     * @param unreported run each time a model reports no usage and the estimate stands
     * @param order the advisor's order among a ChatClient's advisors; lower runs further outside
     * @throws IllegalArgumentException for an estimate below 1
     */
    public TokenBudgetAdvisor(
            Charge charge, RequestKey key, int estimate, TokenUsage usage, Runnable unreported, int order) {
        if (estimate < 1) {
            throw new IllegalArgumentException("the estimate must be at least 1 token, was " + estimate);
        }
        this.charge = charge;
        this.key = key;
        this.estimate = estimate;
        this.usage = usage;
        this.unreported = unreported;
        this.order = order;
    }

    @Override
    public String getName() {
        return "throttle token budget (" + this.charge.policy().name() + ")";
    }

    @Override
    public int getOrder() {
        return this.order;
    }

    @Override
    public ChatClientResponse adviseCall(ChatClientRequest request, CallAdvisorChain chain) {
        Charge reserved = reserve(request);
        Admission admission = Admission.decide(List.of(reserved), new @Nullable String[] {this.key.of(request)});
        ChatClientResponse response;
        try {
            response = chain.nextCall(request);
        } catch (RuntimeException | Error ex) {
            // the model may have used tokens before it failed, but reported none: the estimate stands
            admission.failed();
            throw ex;
        }
        long units = this.usage.units(response.chatResponse());
        if (units < 0) {
            unreported();
        } else {
            admission.settleCosts(new long[] {units});
        }
        admission.succeeded();
        return response;
    }

    @Override
    public Flux<ChatClientResponse> adviseStream(ChatClientRequest request, StreamAdvisorChain chain) {
        return Flux.usingWhen(
                Mono.defer(() -> {
                    Charge reserved = reserve(request);
                    @Nullable String[] keys = {this.key.of(request)};
                    return Mono.fromCompletionStage(() -> Admission.decideAsync(List.of(reserved), keys))
                            .map((admission) -> new Metered(admission, reserved.cost(), request));
                }),
                (metered) -> chain.nextStream(request).doOnNext(metered::read),
                (metered) -> metered.settle(true),
                (metered, error) -> metered.settle(false),
                (metered) -> metered.settle(false));
    }

    /** The charge of one call: the request's max tokens, else the configured estimate, within the policy's reach. */
    private Charge reserve(ChatClientRequest request) {
        int tokens = this.estimate;
        Prompt prompt = request.prompt();
        ChatOptions options = (prompt != null) ? prompt.getOptions() : null;
        Integer maxTokens = (options != null) ? options.getMaxTokens() : null;
        if (maxTokens != null && maxTokens > 0) {
            tokens = maxTokens;
        }
        // a reservation above what the policy can ever grant would refuse every call; the settlement after
        // the call charges what was really used
        return this.charge.choose(null, Math.min(tokens, this.charge.policy().maxCost()));
    }

    private void unreported() {
        this.unreported.run();
        if (this.saidUnreported.compareAndSet(false, true)) {
            logger.warn("The chat model reported no token usage on a call of token budget '"
                    + this.charge.policy().name() + "', so the call was charged its estimate; make the model"
                    + " report usage (for a stream, some models need an option such as stream-usage) or size"
                    + " throttle.ai.estimate to a typical call (said once)");
        }
    }

    private static long tokensOf(long characters) {
        return (characters + CHARACTERS_PER_TOKEN - 1) / CHARACTERS_PER_TOKEN;
    }

    private static long promptLength(ChatClientRequest request) {
        Prompt prompt = request.prompt();
        String contents = (prompt != null) ? prompt.getContents() : null;
        return (contents != null) ? contents.length() : 0;
    }

    /**
     * One stream's admission, the last usage its chunks reported and the characters they streamed;
     * chunks reach it one after another.
     */
    private final class Metered {

        private final Admission admission;

        private final long reserved;

        // measured only for a stream cancelled before its usage, the one case that needs it
        private final ChatClientRequest request;

        private volatile long units = ESTIMATE_STANDS;

        private volatile long streamedCharacters;

        Metered(Admission admission, long reserved, ChatClientRequest request) {
            this.admission = admission;
            this.reserved = reserved;
            this.request = request;
        }

        void read(ChatClientResponse chunk) {
            ChatResponse response = chunk.chatResponse();
            long reported = TokenBudgetAdvisor.this.usage.units(response);
            if (reported >= 0) {
                this.units = reported;
            }
            Generation result = (response != null) ? response.getResult() : null;
            String text = (result != null && result.getOutput() != null)
                    ? result.getOutput().getText()
                    : null;
            if (text != null) {
                this.streamedCharacters += text.length();
            }
        }

        Mono<Void> settle(boolean completed) {
            long actual = this.units;
            if (actual < 0 && completed) {
                unreported();
            }
            if (actual < 0 && !completed) {
                // cancelled or failed before its usage came: at least what was streamed, counted as
                // a token per CHARACTERS_PER_TOKEN characters, or a client that leaves before the
                // last chunk would pay the estimate for any length
                long counted = TokenBudgetAdvisor.this.usage.units(
                        tokensOf(promptLength(this.request)), tokensOf(this.streamedCharacters));
                if (counted > this.reserved) {
                    actual = counted;
                }
            }
            CompletionStage<Void> costs = (actual < 0)
                    ? CompletableFuture.completedStage(null)
                    : this.admission.settleCostsAsync(new long[] {actual});
            CompletionStage<Void> done = costs.thenCompose(
                    (ignored) -> completed ? this.admission.succeededAsync() : this.admission.failedAsync());
            return Mono.fromCompletionStage(done);
        }
    }
}
