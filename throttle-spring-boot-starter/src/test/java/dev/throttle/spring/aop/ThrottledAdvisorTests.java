package dev.throttle.spring.aop;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;

import dev.throttle.ManualTimeSource;
import dev.throttle.ThrottledException;
import dev.throttle.Throttler;
import dev.throttle.TimeSource;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

class ThrottledAdvisorTests {

	private final ManualTimeSource clock = new ManualTimeSource();

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
		.withBean(TimeSource.class, () -> this.clock)
		.withBean(Accounts.class)
		.withBean(WholeClass.class)
		.withPropertyValues("throttle.policies.two.algorithm=fixed-window", "throttle.policies.two.limit=2",
				"throttle.policies.two.window=1m", "throttle.policies.one.algorithm=fixed-window",
				"throttle.policies.one.limit=1", "throttle.policies.one.window=1m",
				"throttle.policies.login.algorithm=lockout", "throttle.policies.login.timeouts=1s,2s,4s",
				"throttle.policies.login.reset-on-success=true", "throttle.policies.failures.algorithm=fixed-window",
				"throttle.policies.failures.limit=2", "throttle.policies.failures.window=1m",
				"throttle.policies.failures.count=failures");

	@Test
	void theKeyIsEvaluatedOverTheParametersByName() {
		this.contextRunner.run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			accounts.byEmail("a@example.com");
			accounts.byEmail("a@example.com");
			assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.byEmail("a@example.com"));
			accounts.byEmail("b@example.com");
		});
	}

	@Test
	void theKeyCanNavigateIntoAnArgumentAndCallMethods() {
		this.contextRunner.run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			accounts.byForm(new Form(" Alice@Example.com "));
			accounts.byForm(new Form("alice@example.com"));
			assertThatExceptionOfType(ThrottledException.class)
				.isThrownBy(() -> accounts.byForm(new Form("ALICE@example.com  ")));
			assertThat(context.getBean(Throttler.class).peek("two", "alice@example.com").remaining()).isZero();
		});
	}

	@Test
	void theKeyCanNameParametersByPosition() {
		this.contextRunner.run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			accounts.byPosition("x", "k");
			accounts.byPosition("y", "k");
			assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.byPosition("z", "k"));
		});
	}

	@Test
	void aNullKeyAndAKeyThatCannotBeEvaluatedShareThePolicysBucketInsteadOfBypassingIt() {
		this.contextRunner.run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			accounts.byEmail(null);
			accounts.byForm(new Form(null));
			assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.byEmail("  "));
		});
	}

	@Test
	void severalAnnotationsAreCheckedInOrderAndARefusalGivesBackWhatEarlierOnesTook() {
		this.contextRunner.run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			Throttler throttler = context.getBean(Throttler.class);
			accounts.twoLimits("u");
			assertThat(throttler.peek("two", "u").remaining()).isEqualTo(1);
			assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.twoLimits("u"))
				.satisfies((ex) -> assertThat(ex.getPolicy().name()).isEqualTo("one"));
			assertThat(throttler.peek("two", "u").remaining()).as("the refused call was charged nothing").isEqualTo(1);
		});
	}

	@Test
	void resetOnSuccessClearsTheKeyWhenTheCallReturnsNormally() {
		this.contextRunner.run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			assertThatIllegalStateException().isThrownBy(() -> accounts.login("alice", false));
			assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.login("alice", true))
				.satisfies((ex) -> assertThat(ex.getDecision().retryAfterMillis()).isEqualTo(1_000));
			this.clock.advance(Duration.ofSeconds(1));
			assertThat(accounts.login("alice", true)).isEqualTo("alice");
			assertThat(accounts.login("alice", true)).as("the ladder was cleared by the success").isEqualTo("alice");
		});
	}

	@Test
	void countFailuresGivesBackWhatASuccessfulCallTook() {
		this.contextRunner.run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			for (int i = 0; i < 10; i++) {
				assertThat(accounts.countFailures("k", true)).isEqualTo("ok");
			}
			assertThatIllegalStateException().isThrownBy(() -> accounts.countFailures("k", false));
			assertThatIllegalStateException().isThrownBy(() -> accounts.countFailures("k", false));
			assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.countFailures("k", true));
		});
	}

	@Test
	void aResponseEntityWithAnErrorStatusCountsAsAFailure() {
		this.contextRunner.run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			assertThat(accounts.entity("k", HttpStatus.OK).getStatusCode()).isEqualTo(HttpStatus.OK);
			assertThat(accounts.entity("k", HttpStatus.CREATED).getStatusCode()).isEqualTo(HttpStatus.CREATED);
			accounts.entity("k", HttpStatus.UNAUTHORIZED);
			accounts.entity("k", HttpStatus.INTERNAL_SERVER_ERROR);
			assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.entity("k", HttpStatus.OK));
		});
	}

	@Test
	void aClassLevelAnnotationThrottlesEveryPublicMethodAndAMethodAnnotationReplacesIt() {
		this.contextRunner.run((context) -> {
			WholeClass whole = context.getBean(WholeClass.class);
			whole.first();
			assertThatExceptionOfType(ThrottledException.class).isThrownBy(whole::second);
			whole.own();
			whole.own();
			assertThatExceptionOfType(ThrottledException.class).isThrownBy(whole::own);
		});
	}

	@Test
	void waitingOnTheInjectedClockLetsCallsThroughAgain() {
		this.contextRunner.run((context) -> {
			Accounts accounts = context.getBean(Accounts.class);
			accounts.byEmail("a");
			accounts.byEmail("a");
			assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> accounts.byEmail("a"))
				.satisfies((ex) -> assertThat(ex.getDecision().retryAfter()).isEqualTo(Duration.ofMinutes(1)));
			this.clock.advance(Duration.ofMinutes(1));
			accounts.byEmail("a");
		});
	}

	record Form(String email) {
	}

	static class Accounts {

		@Throttled(policy = "two", key = "#email")
		public void byEmail(String email) {
		}

		@Throttled(policy = "two", key = "#form.email.trim().toLowerCase()")
		public void byForm(Form form) {
		}

		@Throttled(policy = "two", key = "#p1")
		public void byPosition(String ignored, String key) {
		}

		@Throttled(policy = "two", key = "#user")
		@Throttled(policy = "one", key = "'everyone'")
		public void twoLimits(String user) {
		}

		@Throttled(policy = "login", key = "#user")
		public String login(String user, boolean passwordMatches) {
			if (!passwordMatches) {
				throw new IllegalStateException("wrong password");
			}
			return user;
		}

		@Throttled(policy = "failures", key = "#key")
		public String countFailures(String key, boolean succeed) {
			if (!succeed) {
				throw new IllegalStateException("failed");
			}
			return "ok";
		}

		@Throttled(policy = "failures", key = "#key")
		public ResponseEntity<String> entity(String key, HttpStatus status) {
			return ResponseEntity.status(status).body("body");
		}

	}

	@Throttled(policy = "one")
	static class WholeClass {

		public void first() {
		}

		public void second() {
		}

		@Throttled(policy = "two")
		public void own() {
		}

	}

}
