package dev.throttle.testing;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Files at the repository's root (the README, docs), found from wherever the tests run: this
 * module's directory, or a module that reruns this test-jar (boot40-tests, two levels down).
 */
public final class RepositoryFiles {

    private RepositoryFiles() {}

    /**
     * Returns the path of a file relative to the repository's root.
     * @param relative e.g. {@code README.md} or {@code docs/configuration.md}
     * @return its path
     * @throws IllegalStateException when no directory above the working directory has it
     */
    public static Path path(String relative) {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null) {
            if (Files.isRegularFile(dir.resolve(relative)) && Files.isRegularFile(dir.resolve("mvnw"))) {
                return dir.resolve(relative);
            }
            dir = dir.getParent();
        }
        throw new IllegalStateException(
                relative + " not found above " + Path.of("").toAbsolutePath());
    }
}
