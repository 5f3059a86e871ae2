package dev.throttle.kotlin

import dev.throttle.Throttler
import dev.throttle.spring.ThrottleConfigurationException
import dev.throttle.spring.annotation.Throttled
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration
import dev.throttle.spring.autoconfigure.ThrottleWebFluxAutoConfiguration
import dev.throttle.spring.autoconfigure.ThrottleWebMvcAutoConfiguration
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.runBlocking
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test
import org.springframework.boot.autoconfigure.AutoConfigurations
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration
import org.springframework.boot.test.context.runner.ApplicationContextRunner
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner
import org.springframework.boot.test.context.runner.WebApplicationContextRunner
import org.springframework.web.bind.annotation.GetMapping
import org.springframework.web.bind.annotation.RestController

/**
 * Mistakes a Kotlin method can make that a Java one cannot, found when the application starts: a
 * positional key that would name a `suspend fun`'s hidden continuation (the same object for every
 * call), a name a `suspend fun` without parameters does not have, a `Flow` subtype that a
 * throttled call cannot be handed back as, and, in Spring MVC, a request key on a `suspend fun` that
 * handles no request (its caller's coroutine may resume on another request's thread).
 */
class KotlinStartupChecksTests {

    private val contextRunner = ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(AopAutoConfiguration::class.java, ThrottleAutoConfiguration::class.java))
        .withPropertyValues(
            "throttle.policies.api.algorithm=token-bucket",
            "throttle.policies.api.capacity=3",
            "throttle.policies.api.refill-period=1h",
        )

    @Test
    fun `a positional key past a suspend fun's own parameters fails the start`() {
        assertStartFails(PositionalKey::class.java, "names #p1, which the method does not have", "its parameter is #k")
    }

    @Test
    fun `the root object's arguments of a suspend fun leave out its continuation`() {
        assertStartFails(NoParameters::class.java, "names #header, which the method does not have", "it has no parameters")
    }

    @Test
    fun `a StateFlow a throttled call cannot be handed back as fails the start`() {
        assertStartFails(StateFlowReturned::class.java, "returns StateFlow<String>", "declare Flow")
    }

    @Test
    fun `a suspend fun keyed by its own parameters and root arguments is keyed without its continuation`() {
        contextRunner.withBean(Keyed::class.java).run { context ->
            assertThat(context).hasNotFailed()
            runBlocking { context.getBean(Keyed::class.java).hello("bob") }
            val throttler = context.getBean(Throttler::class.java)
            assertThat(throttler.peek("api", "bob:bob:1").remaining())
                .`as`("one argument in #root.args: the caller's, not the continuation")
                .isEqualTo(2)
        }
    }

    @Test
    fun `in Spring MVC a suspend fun that handles no request may not key by the request, a handler may`() {
        val mvc = WebApplicationContextRunner()
            .withConfiguration(
                AutoConfigurations.of(
                    AopAutoConfiguration::class.java,
                    ThrottleAutoConfiguration::class.java,
                    ThrottleWebMvcAutoConfiguration::class.java,
                ),
            )
            .withPropertyValues("throttle.policies.api.algorithm=gcra", "throttle.policies.api.limit=3", "throttle.policies.api.period=1h")
        mvc.withBean(ServiceKeyedByIp::class.java).run { context ->
            assertThat(context).hasFailed()
            assertThat(configurationFailure(context.startupFailure))
                .hasMessageContaining("key = \"#ip\") on ServiceKeyedByIp.hello(Continuation) uses the request")
                .hasMessageContaining("another client's key")
        }
        mvc.withBean(HandlerKeyedByIp::class.java).run { context -> assertThat(context).hasNotFailed() }
        // WebFlux carries the exchange into the coroutine: the same service is keyed right there
        ReactiveWebApplicationContextRunner()
            .withConfiguration(
                AutoConfigurations.of(
                    AopAutoConfiguration::class.java,
                    ThrottleAutoConfiguration::class.java,
                    ThrottleWebFluxAutoConfiguration::class.java,
                ),
            )
            .withPropertyValues("throttle.policies.api.algorithm=gcra", "throttle.policies.api.limit=3", "throttle.policies.api.period=1h")
            .withBean(ServiceKeyedByIp::class.java)
            .run { context -> assertThat(context).hasNotFailed() }
    }

    private fun configurationFailure(startupFailure: Throwable?): Throwable? {
        var failure: Throwable? = startupFailure
        while (failure != null && failure !is ThrottleConfigurationException) {
            failure = failure.cause
        }
        assertThat(failure).isInstanceOf(ThrottleConfigurationException::class.java)
        return failure
    }

    private fun assertStartFails(bean: Class<*>, vararg parts: String) {
        contextRunner.withBean(bean).run { context ->
            assertThat(context).hasFailed()
            val failure = configurationFailure(context.startupFailure)
            parts.forEach { assertThat(failure!!.message).contains(it) }
        }
    }

    open class PositionalKey {
        @Throttled(policy = "api", key = "#p1")
        open suspend fun hello(k: String): String {
            delay(1)
            return k
        }
    }

    open class NoParameters {
        @Throttled(policy = "api", key = "#header")
        open suspend fun hello(): String {
            delay(1)
            return "hello"
        }
    }

    open class StateFlowReturned {
        @Throttled(policy = "api", key = "#k")
        open fun state(k: String): StateFlow<String> = MutableStateFlow(k)
    }

    open class ServiceKeyedByIp {
        @Throttled(policy = "api", key = "#ip")
        open suspend fun hello(): String {
            delay(1)
            return "hello"
        }
    }

    @RestController
    open class HandlerKeyedByIp {
        @GetMapping("/hello")
        @Throttled(policy = "api", key = "#ip")
        open suspend fun hello(): String {
            delay(1)
            return "hello"
        }
    }

    open class Keyed {
        @Throttled(policy = "api", key = "#k + ':' + #p0 + ':' + #root.args.length")
        open suspend fun hello(k: String): String {
            delay(1)
            return k
        }
    }
}
