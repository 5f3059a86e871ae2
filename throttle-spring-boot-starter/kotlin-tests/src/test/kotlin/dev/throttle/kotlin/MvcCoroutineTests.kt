package dev.throttle.kotlin

import dev.throttle.ManualTimeSource
import dev.throttle.memory.MemoryThrottleStore
import dev.throttle.spring.annotation.Throttled
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.springframework.beans.factory.annotation.Autowired
import org.springframework.boot.SpringBootConfiguration
import org.springframework.boot.autoconfigure.EnableAutoConfiguration
import org.springframework.boot.test.context.SpringBootTest
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment
import org.springframework.boot.test.web.server.LocalServerPort
import org.springframework.context.annotation.Bean
import org.springframework.http.HttpStatus
import org.springframework.http.ResponseEntity
import org.springframework.stereotype.Service
import org.springframework.web.bind.annotation.GetMapping
import org.springframework.web.bind.annotation.PostMapping
import org.springframework.web.bind.annotation.RequestBody
import org.springframework.web.bind.annotation.RestController
import org.springframework.web.server.ResponseStatusException
import reactor.core.publisher.Mono
import java.time.Duration

/** Spring MVC controllers written as `suspend fun` and returning `Flow`, through a real port. */
@SpringBootTest(
    classes = [MvcCoroutineTests.App::class],
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = [
        "spring.main.web-application-type=servlet",
        "throttle.policies.login.algorithm=lockout",
        "throttle.policies.login.timeouts=5s,10s",
        "throttle.policies.login.reset-on-success=true",
        "throttle.policies.api.algorithm=token-bucket",
        "throttle.policies.api.capacity=3",
        "throttle.policies.api.refill-tokens=1",
        "throttle.policies.api.refill-period=10s",
    ],
)
class MvcCoroutineTests {

    @LocalServerPort
    var port: Int = 0

    @Autowired
    lateinit var clock: ManualTimeSource

    @Autowired
    lateinit var store: MemoryThrottleStore

    private val http by lazy { KotlinHttp(port) }

    @BeforeEach
    fun clearState() {
        store.clear()
    }

    @Test
    fun `a lockout on a suspend fun login locks out after a wrong password and resets on success`() {
        assertThat(http.login("alice", "wrong").statusCode()).isEqualTo(401)
        val locked = http.login("alice", "secret")
        assertThat(locked.statusCode()).isEqualTo(429)
        assertThat(locked.headers().firstValue("Retry-After")).hasValue("5")
        clock.advance(Duration.ofSeconds(5))
        val allowed = http.login("alice", "secret")
        assertThat(allowed.statusCode()).isEqualTo(200)
        assertThat(allowed.headers().firstValue("RateLimit"))
            .`as`("the state after the reset")
            .hasValue("\"login\";r=1;t=0")
        assertThat(http.login("alice", "wrong").statusCode())
            .`as`("the success reset the lockout: the first timeout again, not the second")
            .isEqualTo(401)
        val again = http.login("alice", "secret")
        assertThat(again.headers().firstValue("Retry-After")).hasValue("5")
    }

    @Test
    fun `a Flow handler keyed by ip is throttled per call`() {
        repeat(3) {
            val response = http.get("/flow")
            assertThat(response.statusCode()).isEqualTo(200)
            assertThat(response.body()).contains("a").contains("c")
        }
        val refused = http.get("/flow")
        assertThat(refused.statusCode()).isEqualTo(429)
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("10")
    }

    @Test
    fun `a suspend fun on a plain service is throttled`() {
        repeat(3) { assertThat(http.get("/service").statusCode()).isEqualTo(200) }
        assertThat(http.get("/service").statusCode()).isEqualTo(429)
    }

    @Test
    fun `a suspend fun returning an entity whose body is a Mono is settled by the body, not the entity's status`() {
        val wrong = """{"user":"erin","password":"wrong"}"""
        assertThat(http.postJson("/login-later", wrong).statusCode()).isEqualTo(401)
        assertThat(http.postJson("/login-later", wrong).statusCode())
            .`as`("the body's failure was no success: the lockout holds")
            .isEqualTo(429)
        clock.advance(Duration.ofSeconds(5))
        assertThat(http.postJson("/login-later", """{"user":"erin","password":"secret"}""").statusCode())
            .isEqualTo(200)
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    class App {

        @Bean
        fun manualTimeSource() = ManualTimeSource()

        @Bean
        fun greetings() = Greetings()

        @Bean
        fun endpoints(greetings: Greetings) = Endpoints(greetings)
    }

    @Service
    class Greetings {

        @Throttled(policy = "api", key = "#name")
        suspend fun greet(name: String): String {
            delay(1)
            return "hello $name"
        }
    }

    @RestController
    class Endpoints(private val greetings: Greetings) {

        @PostMapping("/login-later")
        @Throttled(policy = "login", key = "#credentials.user")
        suspend fun loginLater(@RequestBody credentials: Credentials): ResponseEntity<Mono<String>> {
            delay(1)
            // the status is 200 before the body runs: the body says whether the password was right
            return ResponseEntity.ok(
                Mono.fromCallable {
                    if (credentials.password != "secret") {
                        throw ResponseStatusException(HttpStatus.UNAUTHORIZED, "wrong password")
                    }
                    "welcome ${credentials.user}"
                },
            )
        }

        @PostMapping("/login")
        @Throttled(policy = "login", key = "#credentials.user")
        suspend fun login(@RequestBody credentials: Credentials): ResponseEntity<Map<String, String>> {
            delay(1)
            if (credentials.password != "secret") {
                return ResponseEntity.status(HttpStatus.UNAUTHORIZED).body(mapOf("error" to "wrong password"))
            }
            return ResponseEntity.ok(mapOf("user" to credentials.user))
        }

        @GetMapping("/flow")
        @Throttled(policy = "api", key = "#ip")
        fun flow(): Flow<String> = flow {
            emit("a")
            delay(1)
            emit("b")
            emit("c")
        }

        @GetMapping("/service")
        suspend fun service(): String = greetings.greet("bob")
    }
}
