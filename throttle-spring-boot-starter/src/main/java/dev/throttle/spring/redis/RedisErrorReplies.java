package dev.throttle.spring.redis;

import org.jspecify.annotations.Nullable;
import org.springframework.util.ClassUtils;

/**
 * Redis's own error reply among a failure's causes ("OOM command not allowed…", "READONLY…",
 * "TRYAGAIN…", "NOTREPLICATED…"), which the clients' wrappers hide behind messages such as Spring's
 * "Error in execution". Lettuce's error type is looked up by name, so that an application on Jedis
 * (whose shared bans and policy changes use this too) does not fail on a missing class.
 */
final class RedisErrorReplies {

    private static final @Nullable Class<?> LETTUCE_ERROR_REPLY = lettuceErrorReply();

    private RedisErrorReplies() {}

    /** Redis's error reply in {@code failure}'s causes, or null when Redis sent none (or Lettuce is absent). */
    static @Nullable String message(@Nullable Throwable failure) {
        Class<?> errorReply = LETTUCE_ERROR_REPLY;
        if (errorReply == null) {
            return null;
        }
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (errorReply.isInstance(cause) && cause.getMessage() != null) {
                return cause.getMessage();
            }
        }
        return null;
    }

    private static @Nullable Class<?> lettuceErrorReply() {
        String name = "io.lettuce.core.RedisCommandExecutionException";
        ClassLoader loader = RedisErrorReplies.class.getClassLoader();
        return ClassUtils.isPresent(name, loader) ? ClassUtils.resolveClassName(name, loader) : null;
    }
}
