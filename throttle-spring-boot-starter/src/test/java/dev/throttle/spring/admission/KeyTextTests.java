package dev.throttle.spring.admission;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.Test;

class KeyTextTests {

    record Email(String value) {}

    enum Tier {
        GOLD
    }

    /** A form without text of its own: every object reads as another key. */
    static class Form {}

    /** Equal objects, the same text, though not a readable one. */
    static class Hashed {

        private final String value;

        Hashed(String value) {
            this.value = value;
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof Hashed hashed && hashed.value.equals(this.value);
        }

        @Override
        public int hashCode() {
            return Objects.hash(this.value);
        }
    }

    @Test
    void valuesWithTextOfTheirOwnAreTheirText() {
        assertThat(KeyText.of("alice@example.com")).isEqualTo("alice@example.com");
        assertThat(KeyText.of(new Email("alice@example.com"))).isEqualTo("Email[value=alice@example.com]");
        assertThat(KeyText.of(Tier.GOLD)).isEqualTo("GOLD");
        assertThat(KeyText.of(42L)).isEqualTo("42");
        assertThat(KeyText.of(List.of("a", "b"))).isEqualTo("[a, b]");
        assertThat(KeyText.of(new Hashed("a"))).isEqualTo(KeyText.of(new Hashed("a")));
    }

    @Test
    void arraysAreNamedByTheirElements() {
        assertThat(KeyText.of(new String[] {"a", "b"})).isEqualTo("[a, b]");
        assertThat(KeyText.of(new Object[] {"a", new int[] {1, 2}})).isEqualTo("[a, [1, 2]]");
        assertThat(KeyText.of(new int[] {1, 2})).isEqualTo("[1, 2]");
        assertThat(KeyText.of(new byte[] {7})).isEqualTo("[7]");
        assertThat(KeyText.of(new char[] {'x'})).isEqualTo("[x]");
        assertThat(KeyText.of(new double[] {0.5})).isEqualTo("[0.5]");
    }

    /** As Spring's ToStringCreator writes an entity: its own text, with its identity in it. */
    static class Entity {

        @Override
        public String toString() {
            return "[" + getClass().getSimpleName() + "@" + Integer.toHexString(System.identityHashCode(this))
                    + " id = 1, lastName = 'Davis']";
        }
    }

    @Test
    void aTextThatShowsTheObjectsIdentityNamesNoKey() {
        assertThat(KeyText.of(new Entity())).isNull();
        assertThat(KeyText.of(new Email("alice@" + Integer.toHexString(System.identityHashCode(this)))))
                .as("another object's hash in the text is only text")
                .startsWith("Email[value=alice@");
    }

    record Roles(String user, String[] roles) {}

    record Upload(byte[] content) {}

    @Test
    void aRecordWhoseTextShowsAnArraysIdentityNamesNoKey() {
        assertThat(KeyText.of(new Roles("alice", new String[] {"admin"}))).isNull();
        assertThat(KeyText.of(new Upload(new byte[] {1}))).isNull();
        assertThat(KeyText.of("[B@cafe")).as("a string is the key as it is").isEqualTo("[B@cafe");
        assertThat(KeyText.of(new Email("[Bob@cafe"))).isEqualTo("Email[value=[Bob@cafe]");
        assertThat(KeyText.of(new Email("bob@cafe"))).isEqualTo("Email[value=bob@cafe]");
    }

    @Test
    void aCollectionOrMapHoldingAnObjectWithoutTextNamesNoKey() {
        assertThat(KeyText.of(List.of(new Form()))).isNull();
        assertThat(KeyText.of(java.util.Map.of("form", new Form()))).isNull();
        assertThat(KeyText.of(java.util.Map.of(new Form(), "a"))).isNull();
        assertThat(KeyText.of(List.of(List.of(new Entity())))).isNull();
        assertThat(KeyText.of(java.util.Arrays.asList("a", null, 1))).isEqualTo("[a, null, 1]");
        assertThat(KeyText.of(java.util.Map.of("tier", Tier.GOLD))).isEqualTo("{tier=GOLD}");
        List<Object> itself = new java.util.ArrayList<>(List.of("a"));
        itself.add(itself);
        assertThat(KeyText.of(itself)).as("as toString names it").isEqualTo("[a, (this Collection)]");
        java.util.Map<String, Object> map = new java.util.HashMap<>();
        map.put("self", map);
        assertThat(KeyText.of(map)).isEqualTo("{self=(this Map)}");
    }

    @Test
    void nullAndAnObjectWhoseTextIsItsIdentityNameNoKey() {
        assertThat(KeyText.of(null)).isNull();
        assertThat(KeyText.of(new Form())).isNull();
        assertThat(KeyText.of(new Object())).isNull();
        assertThat(KeyText.namesTheObject(new Form())).isTrue();
        assertThat(KeyText.namesTheObject(new Hashed("a"))).isFalse();
        assertThat(KeyText.namesTheObject(new int[0])).isFalse();
        assertThat(KeyText.namesTheObject(null)).isFalse();
    }
}
