package dev.throttle.spring.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * A username's throttling key is never finer than a case- and accent-insensitive user store's
 * comparison: every spelling of one account shares one key, in every server locale.
 */
class LoginNamesTests {

    @Test
    void caseSpacesFullwidthFormsAccentsAndInvisibleCharactersAllFoldToOneKey() {
        List<String> spellings = List.of(
                "alice",
                " Alice ",
                "ALICE",
                "\uff41\uff4c\uff49\uff43\uff45",
                "\uff21\uff2c\uff29\uff23\uff25",
                "alic\u0065\u0301",
                "alic\u00e9",
                "a\u0301lice",
                "al\u00adice",
                "ali\u200bce",
                "\u3000alice\u00a0",
                "alice\t");
        assertThat(spellings).extracting(LoginNames::key).containsOnly("alice");
    }

    @Test
    void controlCharactersAnywhereInTheNameAreDropped() {
        // a store that looks names up after String.trim() drops every one of these at either end
        List<String> spellings = new java.util.ArrayList<>();
        for (char control = 0; control < 0x20; control++) {
            spellings.add("alice" + control);
            spellings.add(control + "alice" + control + control);
            spellings.add("al" + control + "ice");
        }
        spellings.add("alice\u007f");
        spellings.add("\u0085alice\u009f");
        assertThat(spellings).extracting(LoginNames::key).containsOnly("alice");
    }

    @Test
    void foldsWhatLowerCasingAloneDoesNot() {
        assertThat(LoginNames.key("STRASSE"))
                .isEqualTo(LoginNames.key("stra\u00dfe"))
                .isEqualTo("strasse");
        assertThat(LoginNames.key("\u039f\u0394\u039f\u03a3")).isEqualTo(LoginNames.key("\u03bf\u03b4\u03bf\u03c3"));
        assertThat(LoginNames.key("\u212a")).as("the Kelvin sign").isEqualTo("k");
        assertThat(LoginNames.key("\ufb01le")).as("a ligature").isEqualTo("file");
    }

    @Test
    void theKeyIsTheSameInEveryServerLocale() {
        Locale before = Locale.getDefault();
        try {
            Locale.setDefault(Locale.forLanguageTag("tr-TR"));
            assertThat(LoginNames.key("ALICE")).isEqualTo("alice");
            assertThat(LoginNames.key("\u0130stanbul")).as("a dotted capital I").isEqualTo("istanbul");
            assertThat(LoginNames.key("\u0131stanbul")).as("a dotless small i").isEqualTo("istanbul");
        } finally {
            Locale.setDefault(before);
        }
    }

    @Test
    void theKeyOfAKeyIsItself() {
        for (String name : List.of(
                "alice",
                "\uff21lice",
                "stra\u00dfe",
                "\u0130",
                "\u01f0",
                "\u0149",
                "\ud55c\uae00",
                "\u0915\u093f\u0924\u093e\u092c",
                "\u1fed",
                "jos\u00e9",
                "\u00bd")) {
            String key = LoginNames.key(name);
            assertThat(LoginNames.key(key)).as(name).isEqualTo(key);
        }
    }

    @Test
    void namesOutsideLatinKeepTheirLettersAndBlankOrNullStayBlankOrNull() {
        assertThat(LoginNames.key("\ud55c\uae00"))
                .as("Hangul, decomposed and composed again")
                .isEqualTo("\ud55c\uae00");
        assertThat(LoginNames.key("\u0410\u043b\u0438\u0441\u0430")).isEqualTo("\u0430\u043b\u0438\u0441\u0430");
        assertThat(LoginNames.key(" \u200b ")).isEmpty();
        assertThat(LoginNames.key(null)).isNull();
    }
}
