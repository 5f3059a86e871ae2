package dev.throttle.kotlin

import dev.throttle.ManualTimeSource
import dev.throttle.Throttler
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
import org.springframework.web.bind.annotation.RequestParam
import org.springframework.web.bind.annotation.RestController
import org.springframework.web.server.ResponseStatusException
import reactor.core.publisher.Mono
import java.net.Socket
import java.time.Duration
import java.util.concurrent.atomic.AtomicBoolean
import kotlin.coroutines.cancellation.CancellationException

/** WebFlux controllers written as `suspend fun` and returning `Flow`, through a real (Netty) port. */
@SpringBootTest(
    classes = [WebFluxCoroutineTests.App::class],
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = [
        "spring.main.web-application-type=reactive",
        "throttle.policies.login.algorithm=lockout",
        "throttle.policies.login.timeouts=5s,10s",
        "throttle.policies.login.reset-on-success=true",
        "throttle.policies.api.algorithm=token-bucket",
        "throttle.policies.api.capacity=3",
        "throttle.policies.api.refill-tokens=1",
        "throttle.policies.api.refill-period=10s",
        "throttle.policies.reports.algorithm=concurrency",
        "throttle.policies.reports.limit=1",
        "throttle.policies.reports.lease=1h",
        "throttle.policies.export.algorithm=token-bucket",
        "throttle.policies.export.capacity=100",
        "throttle.policies.export.refill-period=1h",
        "throttle.policies.guesses.algorithm=token-bucket",
        "throttle.policies.guesses.capacity=3",
        "throttle.policies.guesses.refill-period=1h",
        "throttle.policies.guesses.count=failures",
    ],
)
class WebFluxCoroutineTests {

    @LocalServerPort
    var port: Int = 0

    @Autowired
    lateinit var clock: ManualTimeSource

    @Autowired
    lateinit var store: MemoryThrottleStore

    @Autowired
    lateinit var throttler: Throttler

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
        assertThat(http.login("alice", "wrong").statusCode()).isEqualTo(401)
        assertThat(http.login("alice", "secret").headers().firstValue("Retry-After"))
            .`as`("the success reset the lockout: the first timeout again")
            .hasValue("5")
    }

    @Test
    fun `a suspend fun keyed by ip is throttled and its allowed responses carry the headers`() {
        val first = http.get("/hello")
        assertThat(first.statusCode()).isEqualTo(200)
        assertThat(first.body()).isEqualTo("hello")
        assertThat(first.headers().firstValue("RateLimit")).hasValue("\"api\";r=2;t=10")
        http.get("/hello")
        http.get("/hello")
        val refused = http.get("/hello")
        assertThat(refused.statusCode()).isEqualTo(429)
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("10")
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json")
    }

    @Test
    fun `a Flow handler keyed by ip is throttled per call`() {
        repeat(3) {
            val response = http.get("/flow")
            assertThat(response.statusCode()).isEqualTo(200)
            assertThat(response.body()).contains("a").contains("c")
        }
        assertThat(http.get("/flow").statusCode()).isEqualTo(429)
        assertThat(http.get("/hello").statusCode()).`as`("the same #ip bucket").isEqualTo(429)
    }

    @Test
    fun `a Flow counting failures only has headers that tell the state its success leaves`() {
        val success = http.get("/guess-flow")
        assertThat(success.statusCode()).isEqualTo(200)
        assertThat(success.headers().firstValue("RateLimit"))
            .`as`("the unit given back when the stream ends, though the headers went with its first element")
            .hasValue("\"guesses\";r=3;t=0")
        assertThat(throttler.peek("guesses", "127.0.0.1").remaining()).isEqualTo(3)
    }

    @Test
    fun `a suspend fun counting failures only tells the counted state when it fails and the given-back state when it succeeds`() {
        val failed = http.get("/guess?right=false")
        assertThat(failed.statusCode()).isEqualTo(401)
        assertThat(failed.headers().firstValue("RateLimit"))
            .`as`("a failure counts")
            .hasValue("\"guesses\";r=2;t=3600")
        val succeeded = http.get("/guess?right=true")
        assertThat(succeeded.statusCode()).isEqualTo(200)
        assertThat(succeeded.headers().firstValue("RateLimit"))
            .`as`("a success leaves the one failure counted")
            .hasValue("\"guesses\";r=2;t=3600")
    }

    @Test
    fun `a suspend fun login cancelled by the client's disconnect is no success and resets nothing`() {
        assertThat(http.login("alice", "wrong").statusCode()).isEqualTo(401)
        clock.advance(Duration.ofSeconds(5))
        Endpoints.slowLoginCancelled.set(false)
        Socket("127.0.0.1", port).use { socket ->
            val body = """{"user":"alice","password":"secret"}"""
            socket.getOutputStream().write(
                ("POST /slow-login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                    "Content-Length: ${body.length}\r\n\r\n$body").toByteArray(),
            )
            socket.getOutputStream().flush()
            Thread.sleep(300)
        }
        val deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos()
        while (!Endpoints.slowLoginCancelled.get() && System.nanoTime() < deadline) {
            Thread.sleep(20)
        }
        assertThat(Endpoints.slowLoginCancelled.get()).`as`("the coroutine was cancelled").isTrue()
        assertThat(http.login("alice", "secret").statusCode())
            .`as`("a cancelled call is not a success: the lockout was not reset")
            .isEqualTo(429)
    }

    @Test
    fun `a concurrency slot held by a suspend fun is released when the client's disconnect cancels it`() {
        Endpoints.slowReportCancelled.set(false)
        Socket("127.0.0.1", port).use { socket ->
            socket.getOutputStream().write("GET /slow-report HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".toByteArray())
            socket.getOutputStream().flush()
            val deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos()
            while (!Endpoints.slowReportStarted.get() && System.nanoTime() < deadline) {
                Thread.sleep(10)
            }
            assertThat(http.get("/slow-report?quick=true").statusCode())
                .`as`("the one slot is held while the report runs")
                .isEqualTo(429)
        }
        val deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos()
        while (!Endpoints.slowReportCancelled.get() && System.nanoTime() < deadline) {
            Thread.sleep(20)
        }
        assertThat(Endpoints.slowReportCancelled.get()).`as`("the coroutine was cancelled").isTrue()
        var status = 0
        while (System.nanoTime() < deadline) {
            status = http.get("/slow-report?quick=true").statusCode()
            if (status == 200) break
            Thread.sleep(20)
        }
        assertThat(status).`as`("the cancelled call gave its slot back").isEqualTo(200)
    }

    @Test
    fun `a suspend fun with an actual cost is settled to what it returned`() {
        val export = http.get("/export?rows=10")
        assertThat(export.statusCode()).isEqualTo(200)
        assertThat(throttler.peek("export", "127.0.0.1").remaining())
            .`as`("estimate 1, settled to the 10 rows returned")
            .isEqualTo(90)
    }

    @Test
    fun `a Flow with an actual cost is settled to the sum over its elements when it completes`() {
        val export = http.get("/export-flow")
        assertThat(export.statusCode()).isEqualTo(200)
        assertThat(throttler.peek("export", "127.0.0.1").remaining())
            .`as`("1 + 2 + 3")
            .isEqualTo(94)
    }

    @Test
    fun `a suspend fun on a plain service keyed by an argument is throttled`() {
        repeat(3) { assertThat(http.get("/service?name=bob").body()).isEqualTo("hello bob") }
        assertThat(http.get("/service?name=bob").statusCode()).isEqualTo(429)
        assertThat(http.get("/service?name=carol").statusCode()).isEqualTo(200)
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

        companion object {
            val slowLoginCancelled = AtomicBoolean()
            val slowReportStarted = AtomicBoolean()
            val slowReportCancelled = AtomicBoolean()
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

        @GetMapping("/hello")
        @Throttled(policy = "api", key = "#ip")
        suspend fun hello(): String {
            delay(1)
            return "hello"
        }

        @GetMapping("/export")
        @Throttled(policy = "export", key = "#ip", actualCost = "#result.size()")
        suspend fun export(@RequestParam rows: Int): List<Int> {
            delay(1)
            return (0 until rows).toList()
        }

        @GetMapping("/export-flow")
        @Throttled(policy = "export", key = "#ip", actualCost = "#result")
        fun exportFlow(): Flow<Int> = flow {
            emit(1)
            delay(1)
            emit(2)
            emit(3)
        }

        @GetMapping("/guess-flow")
        @Throttled(policy = "guesses", key = "#ip")
        fun guessFlow(): Flow<String> = flow {
            emit("a")
            delay(1)
            emit("b")
        }

        @GetMapping("/guess")
        @Throttled(policy = "guesses", key = "#ip")
        suspend fun guess(@RequestParam right: Boolean): ResponseEntity<String> {
            delay(1)
            return if (right) ResponseEntity.ok("right") else ResponseEntity.status(HttpStatus.UNAUTHORIZED).body("wrong")
        }

        @GetMapping("/flow")
        @Throttled(policy = "api", key = "#ip")
        fun flow(): Flow<String> = flow {
            emit("a")
            delay(1)
            emit("b")
            emit("c")
        }

        @PostMapping("/slow-login")
        @Throttled(policy = "login", key = "#credentials.user")
        suspend fun slowLogin(@RequestBody credentials: Credentials): ResponseEntity<Map<String, String>> {
            try {
                delay(5_000)
            } catch (ex: CancellationException) {
                slowLoginCancelled.set(true)
                throw ex
            }
            return ResponseEntity.ok(mapOf("user" to credentials.user))
        }

        @GetMapping("/slow-report")
        @Throttled(policy = "reports", key = "#ip")
        suspend fun slowReport(@RequestParam(required = false) quick: Boolean?): String {
            if (quick == true) {
                return "quick"
            }
            slowReportStarted.set(true)
            try {
                delay(30_000)
            } catch (ex: CancellationException) {
                slowReportCancelled.set(true)
                throw ex
            }
            return "slow"
        }

        @GetMapping("/service")
        suspend fun service(@RequestParam name: String): String = greetings.greet(name)
    }
}
