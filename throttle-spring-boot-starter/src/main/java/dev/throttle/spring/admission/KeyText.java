package dev.throttle.spring.admission;

import java.util.Arrays;
import java.util.Collection;
import java.util.Map;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The key that a value an entry point evaluated (a SpEL expression over a call or a request) names,
 * so that a key never names the object rather than the caller: a {@code Form@1b6d3586} would be
 * another key for every call, each with a bucket of its own, and the limit would hold for nobody.
 *
 * <ul>
 *   <li>a {@code String} is the key as it is; {@code null} is no key;
 *   <li>an array is named by its elements ({@code [alice, bob]}), as a {@code List} names itself;
 *   <li>an object whose class overrides neither {@code toString()} nor {@code hashCode()}, whose text is
 *       therefore its identity, names no key: {@code null}, the policy's shared bucket; so does one whose
 *       {@code toString()} shows its identity hash ({@code [Owner@5910e440 id = 1]}, as Spring's
 *       {@code ToStringCreator} writes it), or an array's identity ({@code Form[roles=[Ljava.lang.String;@4554617c]},
 *       as a record with an array component writes it), and so does a collection or map that holds such an
 *       object ({@code [Form@1b6d3586]});
 *   <li>anything else is its {@code toString()}.
 * </ul>
 *
 * An entry point that finds no key puts the call in the policy's shared bucket and says so, never lets
 * it through unthrottled.
 */
public final class KeyText {

    /** What an entry point's warning says of a value whose text names the object. */
    public static final String NAMES_THE_OBJECT = "whose text names the object, not a key (its class overrides "
            + "neither toString() nor hashCode(), or its toString() shows the identity hash of the object or of an array in it)";

    private static final ClassValue<Boolean> IDENTITY_TEXT = new ClassValue<>() {

        @Override
        protected Boolean computeValue(Class<?> type) {
            try {
                return type.getMethod("toString").getDeclaringClass() == Object.class
                        && type.getMethod("hashCode").getDeclaringClass() == Object.class;
            } catch (NoSuchMethodException ex) {
                return false;
            }
        }
    };

    /**
     * An array as Object's toString writes it ({@code [Ljava.lang.String;@1b6d3586}, {@code [B@4554617c}):
     * a record's text shows its array components so, another key for every array.
     */
    private static final Pattern ARRAY_IDENTITY = Pattern.compile("\\[+(?:[ZBCDFIJS]|L[\\w.$]+;)@\\p{XDigit}+");

    private KeyText() {}

    /**
     * The key a value names.
     * @param value what the key's expression evaluated to
     * @return the key, or null when the value is null or its text would be its identity
     */
    public static @Nullable String of(@Nullable Object value) {
        if (value == null || value instanceof String) {
            return (String) value;
        }
        if (value.getClass().isArray()) {
            // deepToString names an array of any type by its elements, nested ones included
            String wrapped = Arrays.deepToString(new Object[] {value});
            return wrapped.substring(1, wrapped.length() - 1);
        }
        if (namesTheObject(value) || holdsAnObjectWithoutText(value)) {
            return null;
        }
        String text = value.toString();
        // a text of its own that still shows the object's identity (Spring's ToStringCreator writes
        // "[Owner@5910e440 id = 1, ...]"): as much another key for every object
        return (text != null && showsIdentity(value, text)) ? null : text;
    }

    /**
     * A collection or map names its elements by their own texts ({@code [Form@1b6d3586]}): one that holds
     * an object whose text is its identity is as much another key for every call.
     */
    private static boolean holdsAnObjectWithoutText(Object value) {
        if (value instanceof Collection<?> elements) {
            for (Object element : elements) {
                // a collection that holds itself writes "(this Collection)" there, as toString does
                if (element != null && element != value && !(element instanceof String) && of(element) == null) {
                    return true;
                }
            }
        } else if (value instanceof Map<?, ?> entries) {
            for (Map.Entry<?, ?> entry : entries.entrySet()) {
                if (entry.getKey() != value
                        && entry.getValue() != value
                        && holdsAnObjectWithoutText(Arrays.asList(entry.getKey(), entry.getValue()))) {
                    return true;
                }
            }
        }
        return false;
    }

    private static boolean showsIdentity(Object value, String text) {
        int at = text.indexOf('@');
        return at >= 0
                && (text.indexOf("@" + Integer.toHexString(System.identityHashCode(value)), at) >= 0
                        || ARRAY_IDENTITY.matcher(text).find());
    }

    /**
     * Whether a value's text is its identity, so that it names no key.
     * @param value the value
     * @return whether its class overrides neither {@code toString()} nor {@code hashCode()}
     */
    public static boolean namesTheObject(@Nullable Object value) {
        return value != null && !value.getClass().isArray() && IDENTITY_TEXT.get(value.getClass());
    }
}
