package dev.throttle.spring.internal.aop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import dev.throttle.ThrottledException;
import dev.throttle.spring.annotation.Throttled;
import dev.throttle.spring.autoconfigure.ThrottleAutoConfiguration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.cache.CacheManager;
import org.springframework.cache.annotation.Cacheable;
import org.springframework.cache.annotation.EnableCaching;
import org.springframework.cache.concurrent.ConcurrentMapCacheManager;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.SimpleTransactionStatus;

/**
 * {@code throttle.aop.order} places throttling outside or inside {@code @Transactional} and
 * {@code @Cacheable} on the same method, in a real Spring context with real transaction and cache
 * advice.
 */
class ThrottleAdvisorOrderTests {

    /**
     * The order of the transaction and cache advice: throttling is ordered one below it (outside)
     * or one above it (inside), so that only the property tells the two cases apart.
     */
    private static final int ADVICE_ORDER = 100;

    private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(ThrottleAutoConfiguration.class))
            .withPropertyValues(
                    "throttle.policies.one.algorithm=fixed-window",
                    "throttle.policies.one.limit=1",
                    "throttle.policies.one.window=1m");

    @Test
    void theDefaultOrderIsTheLowestPrecedenceAsBeforeThePropertyExisted() {
        this.contextRunner.run((context) ->
                assertThat(context.getBean(ThrottledAdvisor.class).getOrder()).isEqualTo(Ordered.LOWEST_PRECEDENCE));
        this.contextRunner
                .withPropertyValues("throttle.aop.order=42")
                .run((context) -> assertThat(
                                context.getBean(ThrottledAdvisor.class).getOrder())
                        .isEqualTo(42));
    }

    @Test
    void orderedOutsideATransactionARefusedCallStartsNoTransaction() {
        this.contextRunner
                .withUserConfiguration(Transactions.class)
                .withBean(Transfers.class)
                .withPropertyValues("throttle.aop.order=" + (ADVICE_ORDER - 1))
                .run((context) -> {
                    Transfers transfers = context.getBean(Transfers.class);
                    CountingTransactionManager transactions = context.getBean(CountingTransactionManager.class);
                    assertThat(transfers.transfer("a")).isEqualTo("a");
                    assertThat(transactions.begun)
                            .as("the allowed call ran in a transaction")
                            .hasValue(1);
                    assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> transfers.transfer("a"));
                    assertThat(transactions.begun)
                            .as("the refused call started none")
                            .hasValue(1);
                });
    }

    @Test
    void orderedInsideATransactionARefusedCallStartsOneAndRollsItBack() {
        this.contextRunner
                .withUserConfiguration(Transactions.class)
                .withBean(Transfers.class)
                .withPropertyValues("throttle.aop.order=" + (ADVICE_ORDER + 1))
                .run((context) -> {
                    Transfers transfers = context.getBean(Transfers.class);
                    CountingTransactionManager transactions = context.getBean(CountingTransactionManager.class);
                    assertThat(transfers.transfer("a")).isEqualTo("a");
                    assertThat(transactions.begun).hasValue(1);
                    assertThatExceptionOfType(ThrottledException.class).isThrownBy(() -> transfers.transfer("a"));
                    assertThat(transactions.begun)
                            .as("the refusal came from inside a transaction")
                            .hasValue(2);
                    assertThat(transactions.rolledBack)
                            .as("which the refusal rolled back")
                            .hasValue(1);
                });
    }

    @Test
    void orderedOutsideTheCacheACachedAnswerIsStillCharged() {
        this.contextRunner
                .withUserConfiguration(Caching.class)
                .withBean(Answers.class)
                .withPropertyValues("throttle.aop.order=" + (ADVICE_ORDER - 1))
                .run((context) -> {
                    Answers answers = context.getBean(Answers.class);
                    assertThat(answers.answer("q")).isEqualTo("answer to q");
                    assertThatExceptionOfType(ThrottledException.class)
                            .as("the answer is cached, the call still charged")
                            .isThrownBy(() -> answers.answer("q"));
                    assertThat(answers.computed()).isEqualTo(1);
                });
    }

    @Test
    void orderedInsideTheCacheACacheHitIsNotThrottled() {
        this.contextRunner
                .withUserConfiguration(Caching.class)
                .withBean(Answers.class)
                .withPropertyValues("throttle.aop.order=" + (ADVICE_ORDER + 1))
                .run((context) -> {
                    Answers answers = context.getBean(Answers.class);
                    for (int i = 0; i < 3; i++) {
                        assertThat(answers.answer("q")).isEqualTo("answer to q");
                    }
                    assertThat(answers.computed()).isEqualTo(1);
                    assertThatExceptionOfType(ThrottledException.class)
                            .as("a cache miss is throttled")
                            .isThrownBy(() -> answers.answer("other"));
                });
    }

    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement(order = ADVICE_ORDER)
    static class Transactions {

        @Bean
        CountingTransactionManager transactionManager() {
            return new CountingTransactionManager();
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableCaching(order = ADVICE_ORDER)
    static class Caching {

        @Bean
        CacheManager cacheManager() {
            return new ConcurrentMapCacheManager("answers");
        }
    }

    /** Counts the transactions that calls start, and those rolled back. */
    static class CountingTransactionManager implements PlatformTransactionManager {

        final AtomicInteger begun = new AtomicInteger();

        final AtomicInteger rolledBack = new AtomicInteger();

        @Override
        public TransactionStatus getTransaction(TransactionDefinition definition) {
            this.begun.incrementAndGet();
            return new SimpleTransactionStatus();
        }

        @Override
        public void commit(TransactionStatus status) {}

        @Override
        public void rollback(TransactionStatus status) {
            this.rolledBack.incrementAndGet();
        }
    }

    static class Transfers {

        @Transactional
        @Throttled(policy = "one", key = "#account")
        public String transfer(String account) {
            return account;
        }
    }

    static class Answers {

        private final AtomicInteger computed = new AtomicInteger();

        /** How many answers were computed rather than served from the cache. */
        public int computed() {
            return this.computed.get();
        }

        @Cacheable("answers")
        @Throttled(policy = "one", key = "'everyone'")
        public String answer(String question) {
            this.computed.incrementAndGet();
            return "answer to " + question;
        }
    }
}
