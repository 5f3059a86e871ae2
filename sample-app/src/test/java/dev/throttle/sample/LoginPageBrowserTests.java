package dev.throttle.sample;

import static org.assertj.core.api.Assertions.assertThat;

import dev.throttle.ManualTimeSource;
import dev.throttle.memory.MemoryThrottleStore;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;

/**
 * The login page as a person uses it: headless Chromium drives {@code /} on a real port. The
 * throttle runs on the manual clock, so the lockout ends when the test advances it; the page's own
 * countdown runs on real seconds, which is why the lockout in this scenario is the shortest (1 s).
 * <p>
 * Uses the machine's Chromium and chromedriver ({@code .ci/install-browser.sh} installs Debian's
 * packages) with both paths given to Selenium, so Selenium Manager never runs and nothing is
 * downloaded. Skipped, with the reason, only on a machine that has no browser or no driver, and
 * never under {@code CI=true}, where that fails instead.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT)
@Import(ManualClockConfiguration.class)
class LoginPageBrowserTests {

    private static final List<String> BROWSER_NAMES =
            List.of("chromium", "chromium-browser", "google-chrome", "google-chrome-stable");

    private static final Duration PATIENCE = Duration.ofSeconds(10);

    /**
     * Quiets Selenium's warning that it has no DevTools (CDP) bindings for this Chromium version:
     * the test uses WebDriver only, never CDP. Held here so that the levels are not collected.
     */
    private static final List<Logger> QUIET = Stream.of(
                    "org.openqa.selenium.devtools.CdpVersionFinder", "org.openqa.selenium.chromium.ChromiumDriver")
            .map(Logger::getLogger)
            .peek((logger) -> logger.setLevel(Level.SEVERE))
            .toList();

    @LocalServerPort
    int port;

    @Autowired
    ManualTimeSource clock;

    @Autowired
    MemoryThrottleStore store;

    @TempDir
    Path profile;

    private ChromeDriver browser;

    private WebDriverWait waiting;

    @BeforeEach
    void openTheBrowser() {
        Path browserBinary = BROWSER_NAMES.stream()
                .map(LoginPageBrowserTests::onPath)
                .flatMap(Optional::stream)
                .findFirst()
                .orElse(null);
        Path driverBinary = onPath("chromedriver").orElse(null);
        if (browserBinary == null || driverBinary == null) {
            String reason = "No browser to drive: found "
                    + ((browserBinary != null) ? browserBinary : "no Chromium") + " and "
                    + ((driverBinary != null) ? driverBinary : "no chromedriver")
                    + " on the PATH. Install both (on Debian or Ubuntu: .ci/install-browser.sh,"
                    + " that is apt-get install chromium chromium-driver) to run this test.";
            // CI installs the browser first (.ci/run), so there a missing one is a failure, never a skip.
            assertThat("true".equals(System.getenv("CI")))
                    .as(reason + " CI=true: failing instead of skipping.")
                    .isFalse();
            Assumptions.abort(reason);
        }
        this.store.clear();
        ChromeOptions options = new ChromeOptions();
        options.setBinary(browserBinary.toFile());
        options.addArguments(
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--window-size=800,700",
                "--user-data-dir=" + this.profile);
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(driverBinary.toFile())
                .usingAnyFreePort()
                .build();
        this.browser = new ChromeDriver(service, options);
        this.waiting = new WebDriverWait(this.browser, PATIENCE, Duration.ofMillis(50));
    }

    @AfterEach
    void closeTheBrowser() {
        if (this.browser != null) {
            this.browser.quit();
        }
    }

    @Test
    void wrongPasswordTwiceShowsTheWaitAndTheRightPasswordAfterItSignsIn() throws IOException {
        this.browser.get("http://localhost:" + this.port + "/");
        assertThat(this.browser.getTitle()).isEqualTo("throttle demo: sign in");
        recordStatusChanges();

        signIn("alice@example.com", "nope");
        assertThat(nthStatus(1)).isEqualTo("Wrong e-mail or password (button enabled)");

        signIn("alice@example.com", "nope");
        assertThat(nthStatus(2)).isEqualTo("Too many attempts. Try again in 1 second. (button disabled)");
        screenshotIfStillShowing("login-page-429.png", "Too many attempts. Try again in 1 second.");

        this.clock.advance(Duration.ofSeconds(1));
        this.waiting.until(ExpectedConditions.elementToBeClickable(By.id("submit")));
        assertThat(status()).isEqualTo("You can try again now.");

        signIn("alice@example.com", "wonderland");
        this.waiting.until(ExpectedConditions.textToBe(By.id("status"), "Signed in as alice@example.com."));
        assertThat(statusChanges())
                .containsExactly(
                        "Wrong e-mail or password (button enabled)",
                        "Too many attempts. Try again in 1 second. (button disabled)",
                        "You can try again now. (button enabled)",
                        "Signed in as alice@example.com. (button enabled)");
    }

    @Test
    void springSecuritysLoginFormRefusedShowsThe429PageNotARedirectAndSignsInAfterTheWait() {
        String login = "http://localhost:" + this.port + "/login";
        this.browser.get(login);
        formSignIn("alice@example.com", "nope");
        this.waiting.until(ExpectedConditions.urlToBe(login + "?error"));

        formSignIn("alice@example.com", "nope");
        this.waiting.until(ExpectedConditions.titleIs("throttle demo: too many requests"));
        assertThat(this.browser.getCurrentUrl())
                .as("the refused post's own answer, not a redirect")
                .isEqualTo(login);
        assertThat(this.browser.findElement(By.tagName("h1")).getText()).isEqualTo("Too many requests");

        this.clock.advance(Duration.ofSeconds(1));
        this.browser.get(login);
        formSignIn("alice@example.com", "wonderland");
        this.waiting.until(ExpectedConditions.urlToBe("http://localhost:" + this.port + "/account"));
        assertThat(this.browser.findElement(By.id("email")).getText()).isEqualTo("alice@example.com");
    }

    /** Spring Security's generated login form (with its CSRF token). */
    private void formSignIn(String email, String password) {
        WebElement username = this.browser.findElement(By.name("username"));
        username.clear();
        username.sendKeys(email);
        WebElement passwordField = this.browser.findElement(By.name("password"));
        passwordField.clear();
        passwordField.sendKeys(password);
        this.browser.findElement(By.cssSelector("form button[type=submit]")).click();
    }

    /**
     * The wait is on screen for one real second only, so rather than race it with polls, the page
     * itself records each text its status shows, with the button's state at that moment.
     */
    private void recordStatusChanges() {
        this.browser.executeScript("""
				const status = document.getElementById('status');
				const submit = document.getElementById('submit');
				window.statusChanges = [];
				new MutationObserver(() => window.statusChanges.push(status.textContent
						+ (submit.disabled ? ' (button disabled)' : ' (button enabled)')))
					.observe(status, { childList: true, characterData: true, subtree: true });
				""");
    }

    @SuppressWarnings("unchecked")
    private List<String> statusChanges() {
        return (List<String>) this.browser.executeScript("return window.statusChanges;");
    }

    private String nthStatus(int n) {
        return this.waiting
                .withMessage(() -> "status change " + n + " after " + statusChanges())
                .until((driver) ->
                        (statusChanges().size() >= n) ? statusChanges().get(n - 1) : null);
    }

    /**
     * For a person to look at: the page in a given state, when the test caught it still showing.
     */
    private void screenshotIfStillShowing(String name, String text) throws IOException {
        Path target = Path.of("target", name);
        Files.createDirectories(target.getParent());
        byte[] png = this.browser.getScreenshotAs(OutputType.BYTES);
        if (status().equals(text)) {
            Files.write(target, png);
        } else {
            Files.deleteIfExists(target);
            System.out.println("No screenshot " + target + ": the page no longer showed \"" + text + "\"");
        }
    }

    private void signIn(String email, String password) {
        WebElement emailField = this.browser.findElement(By.id("email"));
        emailField.clear();
        emailField.sendKeys(email);
        WebElement passwordField = this.browser.findElement(By.id("password"));
        passwordField.clear();
        passwordField.sendKeys(password);
        button().click();
    }

    private WebElement button() {
        return this.browser.findElement(By.id("submit"));
    }

    private String status() {
        return this.browser.findElement(By.id("status")).getText();
    }

    private static Optional<Path> onPath(String name) {
        String path = Optional.ofNullable(System.getenv("PATH")).orElse("");
        return Stream.concat(Stream.of(path.split(File.pathSeparator)), Stream.of("/usr/bin", "/usr/local/bin"))
                .filter((dir) -> !dir.isEmpty())
                .map((dir) -> Path.of(dir, name))
                .filter(Files::isExecutable)
                .findFirst();
    }
}
