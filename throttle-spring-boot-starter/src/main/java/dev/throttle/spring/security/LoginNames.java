package dev.throttle.spring.security;

import java.text.Normalizer;
import java.util.Locale;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The key a login attempt is throttled by, from the username as submitted: never finer than the
 * way a user store may compare names, so that no spelling of one account gets a lockout of its own.
 *
 * <p>A user store often folds names: a case- and accent-insensitive database collation (MySQL's
 * default {@code utf8mb4_0900_ai_ci}, SQL Server's {@code _CI_AI}) finds one account for
 * {@code alice}, {@code ALICE}, a fullwidth {@code ａｌｉｃｅ} and {@code alicé}, and ignores
 * invisible characters such as a soft hyphen or a zero-width space. A key that told them apart would
 * give an attacker a fresh lockout per spelling. So the key is, in order:
 * <ol>
 * <li>NFKC: compatibility forms become their plain letters (fullwidth and ligature forms, the
 * Kelvin sign, a no-break or ideographic space);</li>
 * <li>case folding: upper-cased, then lower-cased, with {@link Locale#ROOT}, which folds what
 * lower-casing alone does not ({@code ß} and {@code SS}, the final sigma) and is the same in every
 * server locale (a Turkish server does not fold {@code I} to a dotless {@code ı});</li>
 * <li>marks, format and control characters dropped (after a canonical decomposition): accents,
 * invisible characters such as a zero-width space, a soft hyphen or a variation selector, and
 * control characters anywhere in the name (a store that looks names up after {@link String#trim()}
 * drops {@code U+0001} at either end, which {@link String#strip()} keeps);</li>
 * <li>composed again (NFC) and trimmed.</li>
 * </ol>
 * Dropping marks is the one step that merges names a store may keep apart ({@code jose} and
 * {@code josé}, or names in scripts whose vowels are written as marks): such names share a lockout,
 * which only makes the throttle stricter. The other way round, a key finer than the store's
 * comparison, would be a way around the lockout. Coarser is the safe side.
 */
final class LoginNames {

    /**
     * Marks (accents, combining and enclosing), format characters (zero-width, soft hyphen, bidi) and
     * control characters (U+0000 to U+001F, U+007F to U+009F).
     */
    private static final Pattern IGNORED = Pattern.compile("[\\p{M}\\p{Cf}\\p{Cc}]+");

    private LoginNames() {}

    /**
     * The throttling key of a username.
     * @param name the username as submitted
     * @return its key; null when the name is null (blank and null fall into the policy's one shared
     * bucket)
     */
    static @Nullable String key(@Nullable String name) {
        if (name == null) {
            return null;
        }
        String folded = Normalizer.normalize(name, Normalizer.Form.NFKC)
                .toUpperCase(Locale.ROOT)
                .toLowerCase(Locale.ROOT);
        String bare = IGNORED.matcher(Normalizer.normalize(folded, Normalizer.Form.NFD))
                .replaceAll("");
        return Normalizer.normalize(bare, Normalizer.Form.NFC).strip();
    }
}
