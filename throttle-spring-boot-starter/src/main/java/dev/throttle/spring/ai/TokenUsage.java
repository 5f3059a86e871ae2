package dev.throttle.spring.ai;

import org.jspecify.annotations.Nullable;
import org.springframework.ai.chat.metadata.Usage;
import org.springframework.ai.chat.model.ChatResponse;

/**
 * How the usage a model reports is charged to a token budget: its total tokens, or its prompt and
 * completion tokens each times a weight (an output token often costs several input tokens).
 * Immutable and thread-safe.
 */
public final class TokenUsage {

    private static final TokenUsage TOTAL = new TokenUsage(false, 1, 1);

    private final boolean weighted;

    private final double promptWeight;

    private final double completionWeight;

    private TokenUsage(boolean weighted, double promptWeight, double completionWeight) {
        this.weighted = weighted;
        this.promptWeight = promptWeight;
        this.completionWeight = completionWeight;
    }

    /**
     * Charges the total tokens the model reports.
     * @return the usage
     */
    public static TokenUsage total() {
        return TOTAL;
    }

    /**
     * Charges prompt and completion tokens each times its weight, the sum rounded up.
     * @param promptWeight units per prompt (input) token, not negative
     * @param completionWeight units per completion (output) token, not negative
     * @return the usage
     * @throws IllegalArgumentException for a negative or non-finite weight, or two zero weights
     */
    public static TokenUsage weighted(double promptWeight, double completionWeight) {
        if (!(promptWeight >= 0)
                || !(completionWeight >= 0)
                || Double.isInfinite(promptWeight)
                || Double.isInfinite(completionWeight)) {
            throw new IllegalArgumentException("token weights must be finite and not negative, were prompt "
                    + promptWeight + " and completion " + completionWeight);
        }
        if (promptWeight == 0 && completionWeight == 0) {
            throw new IllegalArgumentException("token weights must not both be zero: no call would cost anything");
        }
        return new TokenUsage(true, promptWeight, completionWeight);
    }

    /**
     * The units a response's reported usage comes to.
     * @param response the model's response, or one chunk of its stream; may be null
     * @return the units, or -1 when the response reports no usage (none, or no token at all)
     */
    public long units(@Nullable ChatResponse response) {
        if (response == null || response.getMetadata() == null) {
            return -1;
        }
        Usage usage = response.getMetadata().getUsage();
        if (usage == null) {
            return -1;
        }
        long prompt = tokens(usage.getPromptTokens());
        long completion = tokens(usage.getCompletionTokens());
        long total = tokens(usage.getTotalTokens());
        if (prompt + completion == 0 && total == 0) {
            // what a model that reports nothing gives (Spring AI's EmptyUsage), and what each chunk but the
            // last of most streams carries
            return -1;
        }
        if (!this.weighted || prompt + completion == 0) {
            // a model that reports only a total is charged its total, whatever the weights
            return Math.min((total > 0) ? total : prompt + completion, Integer.MAX_VALUE);
        }
        double units = Math.ceil(prompt * this.promptWeight + completion * this.completionWeight);
        return (long) Math.min(units, Integer.MAX_VALUE);
    }

    /**
     * The units of a call counted by its tokens rather than reported: what a stream cancelled before
     * its usage came is charged at least.
     * @param prompt prompt (input) tokens
     * @param completion completion (output) tokens
     * @return the units
     */
    long units(long prompt, long completion) {
        double units = this.weighted
                ? Math.ceil(prompt * this.promptWeight + completion * this.completionWeight)
                : (double) prompt + completion;
        return (long) Math.min(units, Integer.MAX_VALUE);
    }

    private static long tokens(@Nullable Number tokens) {
        return (tokens != null) ? Math.max(0, tokens.longValue()) : 0;
    }

    @Override
    public String toString() {
        return this.weighted
                ? "weighted[prompt=" + this.promptWeight + ", completion=" + this.completionWeight + "]"
                : "total";
    }
}
