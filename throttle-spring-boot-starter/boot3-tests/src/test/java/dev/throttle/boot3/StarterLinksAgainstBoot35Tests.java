package dev.throttle.boot3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.asm.AnnotationVisitor;
import org.springframework.asm.ClassReader;
import org.springframework.asm.ClassVisitor;
import org.springframework.asm.FieldVisitor;
import org.springframework.asm.Handle;
import org.springframework.asm.MethodVisitor;
import org.springframework.asm.SpringAsmInfo;
import org.springframework.asm.Type;
import org.springframework.util.ClassUtils;

/**
 * The starter jar is compiled against Spring Boot 4 and Spring Framework 7; these tests read its
 * bytecode and check that every class, method, field and annotation it refers to outside the JDK
 * and throttle itself exists on this Boot 3.5 classpath, whichever code path refers to it. A
 * Boot-4-only reference would be a NoSuchMethodError or NoClassDefFoundError on Boot 3.5, or an
 * annotation silently ignored. Only names given as strings (afterName, ConditionalOnClass(name))
 * may name Boot-4-only classes, and each such list must also name its Boot 3.5 counterpart.
 * Tagged {@code full-classpath}: it needs every optional dependency of the starter (Spring
 * Security's web module among them) on the class path.
 */
@Tag("full-classpath")
class StarterLinksAgainstBoot35Tests {

    /**
     * Starter classes that Boot 3.5 never loads, so that what they use need not exist here: each is
     * reached only behind a condition on a class that this classpath does not have. The health
     * indicator uses Boot 4's health API ({@code org.springframework.boot.health.contributor}, which
     * Boot 3.5 has under another package: no {@code throttle} indicator on Boot 3.5); the gateway's
     * RateLimiter uses Spring Cloud Gateway, an optional dependency that its own module
     * ({@code gateway-tests}) puts on a classpath; the token budget advisor uses Spring AI 2, which
     * needs Boot 4 (its auto-configuration asks for a class Spring AI 1.x, Boot 3.5's line, lacks); the
     * throttled clients' RestClient and RestTemplate customizers are Boot 4's (module
     * {@code spring-boot-restclient}; on Boot 3.5 a bean post-processor adds the interceptor to
     * {@code RestClient.Builder} beans instead), and so is their WebClient customizer (module
     * {@code spring-boot-webclient}; on Boot 3.5 the bean post-processor on {@code WebClient.Builder}
     * beans alone adds the filter).
     */
    private static final List<String> NOT_LOADED_ON_BOOT_35 = List.of(
            "dev/throttle/spring/autoconfigure/ThrottleHealthAutoConfiguration",
            "dev/throttle/spring/actuate/ThrottleStoreHealthIndicator",
            "dev/throttle/spring/autoconfigure/ThrottleGatewayAutoConfiguration",
            "dev/throttle/spring/gateway/",
            "dev/throttle/spring/autoconfigure/ThrottleAiAutoConfiguration",
            "dev/throttle/spring/ai/",
            "dev/throttle/spring/autoconfigure/ThrottleClientsAutoConfiguration$Boot4Customizers",
            "dev/throttle/spring/autoconfigure/ThrottleClientsAutoConfiguration$WebClientBuilders$Boot4Customizer");

    private final ClassLoader classLoader = getClass().getClassLoader();

    private static boolean notLoaded(String user) {
        return NOT_LOADED_ON_BOOT_35.stream().anyMatch(user::startsWith);
    }

    @Test
    void everyClassMethodFieldAndAnnotationTheStarterUsesExistsOnBoot35() {
        References references = readStarter();
        assertThat(references.classes).as("classes read from the starter jar").hasSizeGreaterThan(20);
        Set<String> missing = new TreeSet<>();
        references.types.forEach((type, user) -> {
            if (load(type) == null && !notLoaded(user)) {
                missing.add("class " + type + " (used by " + user + ")");
            }
        });
        references.members.forEach((member, user) -> {
            String problem = (load(member.owner()) != null && !notLoaded(user)) ? check(member) : null;
            if (problem != null) {
                missing.add(problem + " (used by " + user + ")");
            }
        });
        assertThat(missing).isEmpty();
    }

    @Test
    void everyClassNameGivenAsAStringIncludesOneThatExistsOnBoot35() {
        References references = readStarter();
        assertThat(references.nameLists).as("afterName lists").isNotEmpty();
        references.nameLists.entrySet().stream()
                .filter((list) -> !notLoaded(list.getKey()))
                .forEach((list) -> assertThat(list.getValue())
                        .as(list.getKey())
                        .anySatisfy((name) -> assertThat(ClassUtils.isPresent(name, this.classLoader))
                                .isTrue()));
    }

    private String check(Member member) {
        Class<?> owner = load(member.owner());
        if (member.isField()) {
            return (findField(owner, member.name(), member.descriptor()))
                    ? null
                    : "field " + member.owner() + "." + member.name() + " " + member.descriptor();
        }
        return (findMethod(owner, member.name(), member.descriptor()))
                ? null
                : "method " + member.owner() + "." + member.name()
                        + ((member.descriptor() != null) ? member.descriptor() : "()");
    }

    private boolean findMethod(Class<?> owner, String name, String descriptor) {
        for (Class<?> type : hierarchy(owner)) {
            List<Executable> candidates = new ArrayList<>(List.of(type.getDeclaredMethods()));
            candidates.addAll(List.of(type.getDeclaredConstructors()));
            for (Executable candidate : candidates) {
                String candidateName = (candidate instanceof Constructor) ? "<init>" : candidate.getName();
                String candidateDescriptor = (candidate instanceof Method method)
                        ? Type.getMethodDescriptor(method)
                        : Type.getConstructorDescriptor((Constructor<?>) candidate);
                if (candidateName.equals(name) && (descriptor == null || candidateDescriptor.equals(descriptor))) {
                    return true;
                }
            }
        }
        return false;
    }

    private boolean findField(Class<?> owner, String name, String descriptor) {
        for (Class<?> type : hierarchy(owner)) {
            for (Field field : type.getDeclaredFields()) {
                if (field.getName().equals(name)
                        && Type.getDescriptor(field.getType()).equals(descriptor)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static List<Class<?>> hierarchy(Class<?> type) {
        List<Class<?>> all = new ArrayList<>();
        Deque<Class<?>> pending = new ArrayDeque<>(List.of(type));
        while (!pending.isEmpty()) {
            Class<?> current = pending.pop();
            if (!all.contains(current)) {
                all.add(current);
                if (current.getSuperclass() != null) {
                    pending.add(current.getSuperclass());
                }
                pending.addAll(List.of(current.getInterfaces()));
            }
        }
        if (type.isInterface()) {
            all.add(Object.class);
        }
        return all;
    }

    private Class<?> load(String internalName) {
        try {
            return Class.forName(internalName.replace('/', '.'), false, this.classLoader);
        } catch (ClassNotFoundException | LinkageError ex) {
            return null;
        }
    }

    private static References readStarter() {
        References references = new References();
        Path location = starterLocation();
        try {
            if (Files.isDirectory(location)) {
                try (Stream<Path> files = Files.walk(location)) {
                    for (Path file :
                            (Iterable<Path>) files.filter((f) -> f.toString().endsWith(".class"))::iterator) {
                        try (InputStream in = Files.newInputStream(file)) {
                            references.read(in);
                        }
                    }
                }
            } else {
                try (JarFile jar = new JarFile(location.toFile())) {
                    for (JarEntry entry : (Iterable<JarEntry>) jar.stream()::iterator) {
                        if (entry.getName().endsWith(".class")) {
                            try (InputStream in = jar.getInputStream(entry)) {
                                references.read(in);
                            }
                        }
                    }
                }
            }
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        return references;
    }

    private static Path starterLocation() {
        try {
            return Path.of(ThrottleAutoConfiguration.class
                    .getProtectionDomain()
                    .getCodeSource()
                    .getLocation()
                    .toURI());
        } catch (URISyntaxException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /** A method (descriptor null: an annotation attribute, any return type) or a field of a class. */
    private record Member(String owner, String name, String descriptor, boolean isField) {}

    /** What the starter's classes refer to outside the JDK and throttle itself. */
    private static final class References {

        private static final int API = SpringAsmInfo.ASM_VERSION;

        final Set<String> classes = new HashSet<>();

        final Map<String, String> types = new TreeMap<>();

        final Map<Member, String> members = new LinkedHashMap<>();

        final Map<String, List<String>> nameLists = new LinkedHashMap<>();

        private String current;

        void read(InputStream in) throws IOException {
            new ClassReader(in).accept(new Reader(), ClassReader.SKIP_FRAMES);
        }

        private static boolean external(String internalName) {
            return !internalName.startsWith("java/")
                    && !internalName.startsWith("javax/")
                    && !internalName.startsWith("jdk/")
                    && !internalName.startsWith("sun/")
                    && !internalName.startsWith("dev/throttle/");
        }

        void type(Type type) {
            switch (type.getSort()) {
                case Type.ARRAY -> type(type.getElementType());
                case Type.OBJECT -> {
                    if (external(type.getInternalName())) {
                        this.types.putIfAbsent(type.getInternalName(), this.current);
                    }
                }
                case Type.METHOD -> {
                    type(type.getReturnType());
                    for (Type argument : type.getArgumentTypes()) {
                        type(argument);
                    }
                }
                default -> {}
            }
        }

        void descriptor(String descriptor) {
            if (descriptor != null) {
                type(descriptor.startsWith("(") ? Type.getMethodType(descriptor) : Type.getType(descriptor));
            }
        }

        void owner(String internalName) {
            type(internalName.startsWith("[") ? Type.getType(internalName) : Type.getObjectType(internalName));
        }

        void member(String owner, String name, String descriptor, boolean field) {
            owner(owner);
            descriptor(descriptor);
            if (external(owner) && !owner.startsWith("[")) {
                this.members.putIfAbsent(new Member(owner, name, descriptor, field), this.current);
            }
        }

        void constant(Object value) {
            if (value instanceof Type type) {
                type(type);
            } else if (value instanceof Handle handle) {
                member(handle.getOwner(), handle.getName(), handle.getDesc(), handle.getTag() <= 4);
            }
        }

        AnnotationVisitor annotation(String descriptor) {
            descriptor(descriptor);
            String annotationType = Type.getType(descriptor).getInternalName();
            return new Annotation(annotationType, this.current + " @" + annotationType);
        }

        private final class Reader extends ClassVisitor {

            Reader() {
                super(API);
            }

            @Override
            public void visit(
                    int version, int access, String name, String signature, String superName, String[] interfaces) {
                References.this.current = name;
                References.this.classes.add(name);
                if (superName != null) {
                    owner(superName);
                }
                for (String implemented : interfaces) {
                    owner(implemented);
                }
            }

            @Override
            public AnnotationVisitor visitAnnotation(String descriptor, boolean visible) {
                return annotation(descriptor);
            }

            @Override
            public FieldVisitor visitField(int access, String name, String descriptor, String signature, Object value) {
                descriptor(descriptor);
                return new FieldVisitor(API) {

                    @Override
                    public AnnotationVisitor visitAnnotation(String annotation, boolean visible) {
                        return annotation(annotation);
                    }
                };
            }

            @Override
            public MethodVisitor visitMethod(
                    int access, String name, String descriptor, String signature, String[] exceptions) {
                descriptor(descriptor);
                if (exceptions != null) {
                    for (String exception : exceptions) {
                        owner(exception);
                    }
                }
                return new MethodVisitor(API) {

                    @Override
                    public AnnotationVisitor visitAnnotation(String annotation, boolean visible) {
                        return annotation(annotation);
                    }

                    @Override
                    public AnnotationVisitor visitParameterAnnotation(
                            int parameter, String annotation, boolean visible) {
                        return annotation(annotation);
                    }

                    @Override
                    public void visitTypeInsn(int opcode, String type) {
                        owner(type);
                    }

                    @Override
                    public void visitFieldInsn(int opcode, String owner, String field, String fieldDescriptor) {
                        member(owner, field, fieldDescriptor, true);
                    }

                    @Override
                    public void visitMethodInsn(
                            int opcode, String owner, String method, String methodDescriptor, boolean isInterface) {
                        member(owner, method, methodDescriptor, false);
                    }

                    @Override
                    public void visitInvokeDynamicInsn(
                            String method, String methodDescriptor, Handle bootstrap, Object... arguments) {
                        descriptor(methodDescriptor);
                        constant(bootstrap);
                        for (Object argument : arguments) {
                            constant(argument);
                        }
                    }

                    @Override
                    public void visitLdcInsn(Object value) {
                        constant(value);
                    }

                    @Override
                    public void visitTryCatchBlock(
                            org.springframework.asm.Label start,
                            org.springframework.asm.Label end,
                            org.springframework.asm.Label handler,
                            String type) {
                        if (type != null) {
                            owner(type);
                        }
                    }
                };
            }
        }

        /** Records an annotation's type, its attributes (which must exist) and its class and enum values. */
        private final class Annotation extends AnnotationVisitor {

            private final String annotationType;

            private final String where;

            Annotation(String annotationType, String where) {
                super(API);
                this.annotationType = annotationType;
                this.where = where;
            }

            private void attribute(String name) {
                if (name != null && external(this.annotationType)) {
                    // an annotation attribute: a method of that name, whatever its return type
                    References.this.members.putIfAbsent(new Member(this.annotationType, name, null, false), this.where);
                }
            }

            @Override
            public void visit(String name, Object value) {
                attribute(name);
                constant(value);
            }

            @Override
            public void visitEnum(String name, String descriptor, String value) {
                attribute(name);
                descriptor(descriptor);
            }

            @Override
            public AnnotationVisitor visitAnnotation(String name, String descriptor) {
                attribute(name);
                return annotation(descriptor);
            }

            @Override
            public AnnotationVisitor visitArray(String name) {
                attribute(name);
                List<String> strings = new ArrayList<>();
                boolean classNames = "afterName".equals(name)
                        || "beforeName".equals(name)
                        || ("name".equals(name) && this.annotationType.endsWith("/ConditionalOnClass"));
                if (classNames) {
                    References.this.nameLists.put(this.where + "(" + name + ")", strings);
                }
                return new AnnotationVisitor(API) {

                    @Override
                    public void visit(String ignored, Object value) {
                        if (value instanceof String string) {
                            strings.add(string);
                        }
                        constant(value);
                    }

                    @Override
                    public void visitEnum(String ignored, String descriptor, String value) {
                        descriptor(descriptor);
                    }

                    @Override
                    public AnnotationVisitor visitAnnotation(String ignored, String descriptor) {
                        return annotation(descriptor);
                    }
                };
            }
        }
    }
}
