package dev.throttle.spring.admission;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.expression.spel.standard.SpelExpressionParser;

class ExpressionReadsTests {

    private final SpelExpressionParser parser = new SpelExpressionParser();

    private String first(String expression) {
        return ExpressionReads.first(this.parser.parseExpression(expression));
    }

    @Test
    void aNameWrittenWithoutItsHashIsReadFromTheRoot() {
        assertThat(first("ip")).isEqualTo("ip");
        assertThat(first("email.trim()")).isEqualTo("email");
        assertThat(first("#ip + principal")).isEqualTo("principal");
        assertThat(first("toString()")).isEqualTo("toString()");
        assertThat(first("{ip}")).isEqualTo("ip");
        assertThat(first("#flag ? ip : #principal")).isEqualTo("ip");
    }

    @Test
    void argumentsAndIndexesAreReadFromTheRootWhereverTheyStand() {
        assertThat(first("#email.substring(0, length)")).isEqualTo("length");
        assertThat(first("#headers[name]")).isEqualTo("name");
        assertThat(first("T(java.lang.String).valueOf(id)")).isEqualTo("id");
    }

    @Test
    void variablesTheirStepsAndSelectionsReadNothingFromTheRoot() {
        assertThat(first("#ip")).isNull();
        assertThat(first("#form.email.trim().toLowerCase()")).isNull();
        assertThat(first("#root.args[0]")).isNull();
        assertThat(first("#a0 + #p1 + #root.args.length")).isNull();
        assertThat(first("#keys.?[#this.length() > 1].size()")).isNull();
        assertThat(first("#users.![name]")).isNull();
        assertThat(first("#headers['X-Plan']")).isNull();
        assertThat(first("#email.substring(0, 5)")).isNull();
        assertThat(first("T(java.lang.Math).max(#a, #b)")).isNull();
        assertThat(first("'literal'")).isNull();
        assertThat(first("#form?.email")).isNull();
        assertThat(first("{tier: #plan}")).as("an inline map's keys are names").isNull();
        assertThat(first("{tier: plan}")).isEqualTo("plan");
    }
}
