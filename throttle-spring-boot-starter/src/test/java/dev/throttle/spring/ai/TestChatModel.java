package dev.throttle.spring.ai;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.metadata.ChatResponseMetadata;
import org.springframework.ai.chat.metadata.DefaultUsage;
import org.springframework.ai.chat.metadata.EmptyUsage;
import org.springframework.ai.chat.metadata.Usage;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.prompt.Prompt;
import reactor.core.publisher.Flux;

/**
 * A chat model that answers at once and reports the usage a test gives it: on its answer, or on the
 * last chunk of its stream (the chunks before carry Spring AI's empty usage, as most models' do).
 * Counts the calls that reach it, so that a test can tell a refused call never did.
 */
final class TestChatModel implements ChatModel {

    private final AtomicInteger calls = new AtomicInteger();

    private volatile @Nullable Usage usage;

    private volatile int chunks = 3;

    private volatile @Nullable RuntimeException failure;

    /** Reports this usage from now on; null for none at all. */
    TestChatModel reporting(@Nullable Usage usage) {
        this.usage = usage;
        return this;
    }

    TestChatModel reporting(int prompt, int completion) {
        return reporting(new DefaultUsage(prompt, completion));
    }

    /** Streams this many chunks, the last carrying the usage. */
    TestChatModel streaming(int chunks) {
        this.chunks = chunks;
        return this;
    }

    private volatile @Nullable String chunkText;

    /** Streams this text in every chunk (instead of "chunk n"). */
    TestChatModel chunkText(String text) {
        this.chunkText = text;
        return this;
    }

    /** Fails each stream after its first chunk. */
    TestChatModel failingStreams(RuntimeException failure) {
        this.failure = failure;
        return this;
    }

    int calls() {
        return this.calls.get();
    }

    @Override
    public ChatResponse call(Prompt prompt) {
        this.calls.incrementAndGet();
        return response("an answer", this.usage);
    }

    @Override
    public Flux<ChatResponse> stream(Prompt prompt) {
        this.calls.incrementAndGet();
        List<ChatResponse> chunks = new ArrayList<>();
        for (int i = 1; i <= this.chunks; i++) {
            String text = (this.chunkText != null) ? this.chunkText : "chunk " + i;
            chunks.add(response(text, (i == this.chunks) ? this.usage : new EmptyUsage()));
        }
        RuntimeException failure = this.failure;
        if (failure != null) {
            return Flux.fromIterable(chunks.subList(0, 1)).concatWith(Flux.error(failure));
        }
        return Flux.fromIterable(chunks);
    }

    private static ChatResponse response(String text, @Nullable Usage usage) {
        ChatResponseMetadata.Builder metadata = ChatResponseMetadata.builder();
        if (usage != null) {
            metadata.usage(usage);
        }
        return ChatResponse.builder()
                .generations(List.of(new Generation(new AssistantMessage(text))))
                .metadata(metadata.build())
                .build();
    }
}
