package dev.throttle.spring.admission;

import java.util.LinkedHashSet;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.ast.CompoundExpression;
import org.springframework.expression.spel.ast.Indexer;
import org.springframework.expression.spel.ast.InlineMap;
import org.springframework.expression.spel.ast.MethodReference;
import org.springframework.expression.spel.ast.Projection;
import org.springframework.expression.spel.ast.PropertyOrFieldReference;
import org.springframework.expression.spel.ast.Selection;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.standard.SpelExpression;

/**
 * What a parsed expression reads: the variables it names, and what it reads from its root object (a
 * name written without {@code #}, {@code ip} for {@code #ip}). The expressions of keys, plans and costs
 * read variables and have no root object (or one with only {@code args}), so a read from the root
 * fails on every call and the call falls into the shared bucket or the default: a mistake found at
 * startup, by walking the parsed tree once. Public for entry points of your own that take SpEL keys,
 * as {@link KeyText} is.
 */
public final class ExpressionReads {

    private ExpressionReads() {}

    /**
     * The variables an expression reads ({@code #ip}, {@code #root}), without their {@code #}.
     * @param expression a parsed expression
     * @return their names, in the order they are written
     */
    public static Set<String> variables(Expression expression) {
        Set<String> names = new LinkedHashSet<>();
        if (expression instanceof SpelExpression spel) {
            collect(spel.getAST(), names);
        }
        return names;
    }

    private static void collect(SpelNode node, Set<String> names) {
        if (node instanceof VariableReference) {
            // "#name": the node exposes its name only through its text
            names.add(node.toStringAST().substring(1));
        }
        for (int i = 0; i < node.getChildCount(); i++) {
            collect(node.getChild(i), names);
        }
    }

    /**
     * The first property or method an expression reads from its root object.
     * @param expression a parsed expression
     * @return its name, or null when the expression reads nothing from the root
     */
    public static @Nullable String first(Expression expression) {
        return (expression instanceof SpelExpression spel) ? first(spel.getAST(), true) : null;
    }

    /**
     * @param atRoot whether the node is evaluated against the root object (the top of the expression,
     * and a method's arguments and an index anywhere); false for a step of a chain, which reads the
     * value before it
     */
    private static @Nullable String first(SpelNode node, boolean atRoot) {
        if (atRoot && node instanceof PropertyOrFieldReference property) {
            return property.getName();
        }
        if (atRoot && node instanceof MethodReference method) {
            return method.getName() + "()";
        }
        if (node instanceof Selection || node instanceof Projection) {
            // their criteria read each element, not the root
            return null;
        }
        if (node instanceof CompoundExpression) {
            String found = first(node.getChild(0), atRoot);
            for (int i = 1; found == null && i < node.getChildCount(); i++) {
                found = first(node.getChild(i), false);
            }
            return found;
        }
        // the children of a step (a method's arguments, an index) and of anything else (operators,
        // literals of lists and maps, a function's arguments) are read from the root
        boolean childrenAtRoot = atRoot || node instanceof MethodReference || node instanceof Indexer;
        // an inline map's keys ({tier: #plan}) are names, not reads: only its values are read
        int step = (node instanceof InlineMap) ? 2 : 1;
        for (int i = step - 1; i < node.getChildCount(); i += step) {
            String found = first(node.getChild(i), childrenAtRoot);
            if (found != null) {
                return found;
            }
        }
        return null;
    }
}
