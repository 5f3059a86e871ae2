package dev.throttle.spring.autoconfigure;

import dev.throttle.resilience.FailureMode;
import dev.throttle.spring.ThrottleConfigurationException;
import dev.throttle.spring.admission.Charge;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration of throttling, under {@code throttle}. A property that binds to nothing (a typo
 * such as {@code refil-tokens}, which would otherwise leave the default in force unseen) fails
 * startup.
 */
@ConfigurationProperties(prefix = "throttle", ignoreUnknownFields = false)
public class ThrottleProperties {

    /**
     * Whether @Throttled methods are throttled and refusals answered with 429.
     */
    private boolean enabled = true;

    private final Store store = new Store();

    private final Http http = new Http();

    private final Aop aop = new Aop();

    private final Gateway gateway = new Gateway();

    /**
     * Throttling policies by name, as @Throttled(policy) refers to them.
     */
    private Map<String, Policy> policies = new LinkedHashMap<>();

    // plans, shadow mode
    /**
     * Whether policies refuse calls (enforce) or only count the calls they would refuse (shadow),
     * for every policy that does not set its own mode.
     */
    private Mode mode = Mode.ENFORCE;

    public Mode getMode() {
        return this.mode;
    }

    public void setMode(Mode mode) {
        this.mode = mode;
    }
    // end of plans, shadow mode

    public boolean isEnabled() {
        return this.enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public Store getStore() {
        return this.store;
    }

    public Http getHttp() {
        return this.http;
    }

    public Aop getAop() {
        return this.aop;
    }

    public Gateway getGateway() {
        return this.gateway;
    }

    /**
     * Spring Cloud Gateway (its WebFlux server).
     */
    public static class Gateway {

        /**
         * Whether Spring Cloud Gateway gets the throttleRateLimiter bean, the primary RateLimiter of its
         * RequestRateLimiter filter.
         */
        private boolean enabled = true;

        public boolean isEnabled() {
            return this.enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    public Map<String, Policy> getPolicies() {
        return this.policies;
    }

    public void setPolicies(Map<String, Policy> policies) {
        this.policies = policies;
    }

    /**
     * Where throttling state lives.
     */
    public static class Store {

        /**
         * Kind of store that holds throttling state.
         */
        private StoreType type = StoreType.MEMORY;

        private final Memory memory = new Memory();

        private final Redis redis = new Redis();

        private final Jdbc jdbc = new Jdbc();

        public StoreType getType() {
            return this.type;
        }

        public void setType(StoreType type) {
            this.type = type;
        }

        public Memory getMemory() {
            return this.memory;
        }

        public Redis getRedis() {
            return this.redis;
        }

        public Jdbc getJdbc() {
            return this.jdbc;
        }
    }

    /**
     * Kinds of store.
     */
    public enum StoreType {

        /** This JVM's memory, bounded; each instance throttles on its own. */
        MEMORY,

        /** Redis through Spring Data Redis; every instance shares one limit. */
        REDIS,

        /** The application's own PostgreSQL database through its DataSource; every instance shares one limit. */
        JDBC
    }

    /**
     * Settings of the jdbc store.
     */
    public static class Jdbc {

        /**
         * What the table's and the functions' names start with: lower-case letters, digits and
         * underscores.
         */
        private String tablePrefix = "throttle_";

        /**
         * When the store creates its table and functions at startup: only on an embedded database
         * (which PostgreSQL never is, so then the schema is the application's migrations' to create),
         * always (creating what is missing and replacing the functions), or never.
         */
        private InitializeSchema initializeSchema = InitializeSchema.EMBEDDED;

        /**
         * What a decision does when the database cannot be reached in time.
         */
        private FailureMode failureMode = FailureMode.LOCAL;

        /**
         * Longest wait for the database per decision before the failure mode applies.
         */
        private Duration timeout = Duration.ofSeconds(1);

        /**
         * Most connections of the application's pool that the store holds at once; its calls beyond
         * that wait their turn (within the timeout).
         */
        private int maxConnections = 4;

        /**
         * How often rows whose state has expired are deleted.
         */
        private Duration purgeInterval = Duration.ofMinutes(1);

        /**
         * Most rows one delete of expired rows removes; batches follow each other while they come back
         * full.
         */
        private int purgeBatchSize = 500;

        /**
         * Refusals answered on the instance until their Retry-After, without a call to the database.
         */
        private final JdbcNearCache nearCache = new JdbcNearCache();

        public JdbcNearCache getNearCache() {
            return this.nearCache;
        }

        public String getTablePrefix() {
            return this.tablePrefix;
        }

        public void setTablePrefix(String tablePrefix) {
            this.tablePrefix = tablePrefix;
        }

        public InitializeSchema getInitializeSchema() {
            return this.initializeSchema;
        }

        public void setInitializeSchema(InitializeSchema initializeSchema) {
            this.initializeSchema = initializeSchema;
        }

        public FailureMode getFailureMode() {
            return this.failureMode;
        }

        public void setFailureMode(FailureMode failureMode) {
            this.failureMode = failureMode;
        }

        public Duration getTimeout() {
            return this.timeout;
        }

        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }

        public int getMaxConnections() {
            return this.maxConnections;
        }

        public void setMaxConnections(int maxConnections) {
            this.maxConnections = maxConnections;
        }

        public Duration getPurgeInterval() {
            return this.purgeInterval;
        }

        public void setPurgeInterval(Duration purgeInterval) {
            this.purgeInterval = purgeInterval;
        }

        public int getPurgeBatchSize() {
            return this.purgeBatchSize;
        }

        public void setPurgeBatchSize(int purgeBatchSize) {
            this.purgeBatchSize = purgeBatchSize;
        }
    }

    /**
     * Refusals of the jdbc store remembered on each instance and answered there until their
     * Retry-After, so that calls of a refused key are refused without a call to the database; dropped
     * on every instance when a key is reset or given back, or a policy changes ({@code NOTIFY} on
     * {@code <table-prefix>events}, heard on one connection of the pool held by each instance).
     */
    public static class JdbcNearCache {

        /**
         * Whether refusals answer on the instance, and invalidation events are published and heard.
         */
        private boolean enabled = false;

        /**
         * Most refused keys remembered per policy on this instance, about 200 bytes each.
         */
        private long maximumKeys = 100000;

        /**
         * Shortest Retry-After worth remembering: a database round trip costs far more than an entry,
         * so even a refusal of a few milliseconds saves calls.
         */
        private Duration minimumRetryAfter = Duration.ofMillis(1);

        public boolean isEnabled() {
            return this.enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public long getMaximumKeys() {
            return this.maximumKeys;
        }

        public void setMaximumKeys(long maximumKeys) {
            this.maximumKeys = maximumKeys;
        }

        public Duration getMinimumRetryAfter() {
            return this.minimumRetryAfter;
        }

        public void setMinimumRetryAfter(Duration minimumRetryAfter) {
            this.minimumRetryAfter = minimumRetryAfter;
        }
    }

    /**
     * When the jdbc store creates its schema.
     */
    public enum InitializeSchema {

        /** Only on an embedded database (H2, HSQLDB, Derby): never on PostgreSQL. */
        EMBEDDED,

        /** At every start: what is missing is created, the functions replaced. */
        ALWAYS,

        /** Never: the application's migrations create it from the shipped script. */
        NEVER
    }

    /**
     * Settings of the memory store.
     */
    public static class Memory {

        /**
         * Most keys held per policy. No key is evicted to make room: while a policy holds this
         * many live keys, a key it does not hold shares the policy's one overflow bucket.
         */
        private long maximumKeys = 1_000_000;

        public long getMaximumKeys() {
            return this.maximumKeys;
        }

        public void setMaximumKeys(long maximumKeys) {
            this.maximumKeys = maximumKeys;
        }
    }

    /**
     * Settings of the Redis store.
     */
    public static class Redis {

        /**
         * Prefix of every Redis key the store writes.
         */
        private String keyPrefix = "throttle";

        /**
         * What a decision does when Redis cannot be reached in time.
         */
        private FailureMode failureMode = FailureMode.LOCAL;

        /**
         * Longest wait for Redis per decision before the failure mode applies.
         */
        private Duration timeout = Duration.ofSeconds(1);

        public String getKeyPrefix() {
            return this.keyPrefix;
        }

        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }

        public FailureMode getFailureMode() {
            return this.failureMode;
        }

        public void setFailureMode(FailureMode failureMode) {
            this.failureMode = failureMode;
        }

        public Duration getTimeout() {
            return this.timeout;
        }

        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }

        // near cache of refusals and the clock of the scripts

        private final NearCache nearCache = new NearCache();

        /**
         * Whose clock the scripts read: the Redis server's TIME, or this application's time passed
         * with each call, for a Redis that refuses TIME inside scripts (decisions then shift by the
         * skew between application servers).
         */
        private RedisClock clock = RedisClock.SERVER;

        /**
         * Whether acquires of one policy that wait at the same moment are sent to Redis together, one
         * script call per batch, each key still decided as if alone and in order. A caller alone is
         * never delayed. Off: one call per decision, for a decision's latency under light concurrency
         * (a call that arrives while another of its policy is on its way waits for that one's answer
         * before it leaves, where it would otherwise be written behind it at once), or where each
         * decision must show in Redis as a command of its own (slowlog, MONITOR, a proxy). Never on a
         * Redis Cluster (a script there may only touch one slot).
         */
        private boolean batching = true;

        public NearCache getNearCache() {
            return this.nearCache;
        }

        public boolean isBatching() {
            return this.batching;
        }

        public void setBatching(boolean batching) {
            this.batching = batching;
        }

        public RedisClock getClock() {
            return this.clock;
        }

        public void setClock(RedisClock clock) {
            this.clock = clock;
        }
    }

    /**
     * Refusals remembered on each instance until their Retry-After, so that calls of a refused key are
     * refused without a Redis call; dropped on every instance when a key is reset or given back, or a
     * policy changes (events on {@code <key-prefix>:events}).
     */
    public static class NearCache {

        /**
         * Whether refusals are remembered and invalidation events published and heard.
         */
        private boolean enabled = true;

        /**
         * Most refused keys remembered per policy on this instance, about 200 bytes each.
         */
        private long maximumKeys = 100000;

        /**
         * Shortest Retry-After worth remembering.
         */
        private Duration minimumRetryAfter = Duration.ofMillis(50);

        public boolean isEnabled() {
            return this.enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public long getMaximumKeys() {
            return this.maximumKeys;
        }

        public void setMaximumKeys(long maximumKeys) {
            this.maximumKeys = maximumKeys;
        }

        public Duration getMinimumRetryAfter() {
            return this.minimumRetryAfter;
        }

        public void setMinimumRetryAfter(Duration minimumRetryAfter) {
            this.minimumRetryAfter = minimumRetryAfter;
        }
    }

    /** Where a policy's write must be before a decision is answered. */
    public enum Durability {
        /** On the Redis master: a failover may lose what it had not yet replicated. */
        PRIMARY,
        /** On the master and at least one replica ({@code WAIT 1}). */
        REPLICATED
    }

    /**
     * Whose clock the Redis scripts read.
     */
    public enum RedisClock {

        /** The Redis server's TIME: application servers' clocks never matter. */
        SERVER,

        /** This application's time, passed with each call: for a Redis that refuses TIME in scripts. */
        CLIENT
    }

    /**
     * HTTP responses of throttled handlers.
     */
    public static class Http {

        /**
         * Which rate-limit headers throttled responses carry.
         */
        private Headers headers = Headers.IETF;

        /**
         * Leading bits of an IPv6 client address that #ip keeps, from 1 to 128: one home line or
         * cloud host gets a whole /64, so its addresses share one bucket. IPv4 clients are keyed
         * by address.
         */
        private int ipv6Prefix = 64;

        // --- URL rules, safelist and blocklist ---

        /**
         * Client address ranges (CIDRs such as 10.0.0.0/8 or 2001:db8::/32, or single addresses)
         * never throttled, by URL rules or by @Throttled.
         */
        private List<String> safelist = new ArrayList<>();

        /**
         * Client address ranges (CIDRs or single addresses) refused with 403 on every request.
         */
        private List<String> blocklist = new ArrayList<>();

        /**
         * URL rules: requests whose path and method match are charged to a policy by a filter that
         * runs before Spring Security, in order; a refusal by a later rule gives back what the
         * earlier ones took.
         */
        private List<Rule> rules = new ArrayList<>();

        /**
         * Order of the filter that applies the URL rules, the safelist and the blocklist. The default
         * runs it before Spring Security's filter chain (-100), so that a refused request costs no
         * authentication; a rule keyed by #principal needs it after Spring Security's (such as 0).
         */
        private int filterOrder = -110;

        public List<Rule> getRules() {
            return this.rules;
        }

        public void setRules(List<Rule> rules) {
            this.rules = rules;
        }

        public int getFilterOrder() {
            return this.filterOrder;
        }

        public void setFilterOrder(int filterOrder) {
            this.filterOrder = filterOrder;
        }

        public List<String> getSafelist() {
            return this.safelist;
        }

        public void setSafelist(List<String> safelist) {
            this.safelist = safelist;
        }

        public List<String> getBlocklist() {
            return this.blocklist;
        }

        public void setBlocklist(List<String> blocklist) {
            this.blocklist = blocklist;
        }

        /**
         * One URL rule.
         */
        public static class Rule {

            /**
             * Path patterns in Spring's PathPattern syntax, such as /api/hello or /api/reports/**,
             * matched after the context path and regardless of case, trailing slash or path parameters.
             */
            private List<String> paths = new ArrayList<>();

            /**
             * HTTP methods the rule applies to (GET also covers HEAD); every method when empty.
             */
            private List<String> methods = new ArrayList<>();

            /**
             * Policy that the matching requests are charged to, a name under throttle.policies.
             */
            private String policy;

            /**
             * SpEL over the request: #ip, #principal, #request, #headers['X-Api-Key'],
             * #params['name'] (query parameters), #path['variable'] (the pattern's variables). Empty
             * for one bucket shared by every matching request.
             */
            private String key = "";

            /**
             * Units one request takes: a whole number, checked at startup against the policy's
             * largest cost, or SpEL over the request variables of the key giving the units per
             * request (such as #headers['X-Cost'] or #params['rows']; at least 1, above the policy's
             * largest cost a refusal, null or not a number 1).
             */
            private String cost = "1";

            // the plan chosen per request
            /**
             * SpEL over the request variables of the key naming the plan of the policy whose numbers
             * apply, such as #headers['X-Plan']; null, blank or a plan that is not configured means the
             * policy's base numbers. Empty for the base numbers.
             */
            private String plan = "";

            /**
             * Response header in which the handler says what the request actually cost (such as
             * X-Rows); read once the response is complete, the difference to the cost charged before
             * is charged (into the policy's debt) or given back. A missing header or one that is no
             * number keeps the cost charged before. Token-bucket, gcra and fixed-window policies. Empty
             * when the cost is known before the request.
             */
            private String actualCostHeader = "";

            public String getActualCostHeader() {
                return this.actualCostHeader;
            }

            public void setActualCostHeader(String actualCostHeader) {
                this.actualCostHeader = actualCostHeader;
            }

            public List<String> getPaths() {
                return this.paths;
            }

            public void setPaths(List<String> paths) {
                this.paths = paths;
            }

            public List<String> getMethods() {
                return this.methods;
            }

            public void setMethods(List<String> methods) {
                this.methods = methods;
            }

            public String getPolicy() {
                return this.policy;
            }

            public void setPolicy(String policy) {
                this.policy = policy;
            }

            public String getKey() {
                return this.key;
            }

            public void setKey(String key) {
                this.key = key;
            }

            public String getCost() {
                return this.cost;
            }

            public void setCost(String cost) {
                this.cost = cost;
            }

            public String getPlan() {
                return this.plan;
            }

            public void setPlan(String plan) {
                this.plan = plan;
            }
        }

        // --- end of URL rules, safelist and blocklist ---

        public Headers getHeaders() {
            return this.headers;
        }

        public void setHeaders(Headers headers) {
            this.headers = headers;
        }

        public int getIpv6Prefix() {
            return this.ipv6Prefix;
        }

        public void setIpv6Prefix(int ipv6Prefix) {
            if (ipv6Prefix < 1 || ipv6Prefix > 128) {
                throw new ThrottleConfigurationException("throttle.http.ipv6-prefix must be between 1 and 128 (the "
                        + "leading bits of an IPv6 client address that #ip keeps), was " + ipv6Prefix);
            }
            this.ipv6Prefix = ipv6Prefix;
        }
    }

    /**
     * How the advisor that applies @Throttled sits among other advice on the same method.
     */
    public static class Aop {

        /**
         * Order of the advisor that applies @Throttled among other advice on the same method; lower
         * runs further outside. Below the order of @Transactional or @Cacheable advice, a refused
         * call starts no transaction and a cached answer is still charged; above it, throttling runs
         * inside the transaction and a cache hit is not throttled. Defaults to the lowest
         * precedence, as before this property existed: also their default, and Spring applies equal
         * orders in the order the advisors were registered, so give an order to be sure.
         */
        // Ordered.LOWEST_PRECEDENCE, written out: the configuration processor records only a literal as the default
        private int order = 2147483647;

        public int getOrder() {
            return this.order;
        }

        public void setOrder(int order) {
            this.order = order;
        }
    }

    // --- temporary bans across policies ---

    /**
     * Temporary bans by name: a key (the client address by default) that the listed policies refuse
     * too often is refused on every request for a while, by every instance sharing the store.
     */
    private Map<String, Ban> bans = new LinkedHashMap<>();

    public Map<String, Ban> getBans() {
        return this.bans;
    }

    public void setBans(Map<String, Ban> bans) {
        this.bans = bans;
    }

    /**
     * A temporary ban: the {@code after}-th refusal of one key by the listed policies within
     * {@code within} bans that key for {@code for}.
     */
    public static class Ban {

        /**
         * Refusals of one key, by the listed policies, that start the ban.
         */
        private Integer after;

        /**
         * Window in which the refusals are counted.
         */
        private Duration within;

        /**
         * Policies whose refusals count; empty for every policy.
         */
        private List<String> policies = new ArrayList<>();

        /**
         * SpEL expression over the request that names who is banned: #ip, #headers['X-Api-Key'],
         * #params['name'] or #request.
         */
        private String key = "#ip";

        /**
         * How long a ban lasts.
         */
        private Duration banFor;

        /**
         * Status of the answer to a banned request: 429 or 403.
         */
        private int status = 429;

        /**
         * Whether a ban stored in Redis waits for a replica (replicated: WAIT 1 after it is stored, and
         * stored again every second until a replica confirms it or it ends), so that a failover cannot
         * lose it.
         */
        private Durability durability = Durability.PRIMARY;

        public Durability getDurability() {
            return this.durability;
        }

        public void setDurability(Durability durability) {
            this.durability = durability;
        }

        public Integer getAfter() {
            return this.after;
        }

        public void setAfter(Integer after) {
            this.after = after;
        }

        public Duration getWithin() {
            return this.within;
        }

        public void setWithin(Duration within) {
            this.within = within;
        }

        public List<String> getPolicies() {
            return this.policies;
        }

        public void setPolicies(List<String> policies) {
            this.policies = policies;
        }

        public String getKey() {
            return this.key;
        }

        public void setKey(String key) {
            this.key = key;
        }

        // 'for' is a Java keyword: the field has another name, the property is still throttle.bans.<name>.for
        public Duration getFor() {
            return this.banFor;
        }

        public void setFor(Duration banFor) {
            this.banFor = banFor;
        }

        public int getStatus() {
            return this.status;
        }

        public void setStatus(int status) {
            this.status = status;
        }
    }

    // --- Spring AI token budgets ---

    private final Ai ai = new Ai();

    public Ai getAi() {
        return this.ai;
    }

    /**
     * Spring AI: an advisor on ChatClient that charges each key (a user, say) the tokens the model
     * reports having used, by a policy under throttle.policies.
     */
    public static class Ai {

        /**
         * Policy that holds the token budget (token-bucket, gcra or fixed-window); the advisor exists
         * only when this is set.
         */
        private String policy;

        /**
         * SpEL expression giving the budget's key per request: #context is the ChatClient advisor
         * context (the params a caller sets with advisors(a -> a.param("user", name))), #prompt the
         * prompt, #request the ChatClientRequest, and @name a bean. A literal such as "'all'" gives
         * every call one budget.
         */
        private String key = "#context['user']";

        /**
         * Tokens reserved before a request that sets no max tokens in its options; a request that
         * does reserves its max tokens instead. The model's reported usage settles the difference
         * after the call.
         */
        private int estimate = 1000;

        /**
         * How the reported usage is charged: the model's total tokens, or prompt and completion
         * tokens weighted by prompt-weight and completion-weight.
         */
        private Usage usage = Usage.TOTAL;

        /**
         * Units charged per prompt (input) token, with usage: weighted.
         */
        private double promptWeight = 1.0;

        /**
         * Units charged per completion (output) token, with usage: weighted.
         */
        private double completionWeight = 1.0;

        /**
         * Order of the advisor among a ChatClient's advisors; lower runs further outside. The default
         * runs it before every advisor of Spring AI's own, so that a refused call reaches no memory,
         * retrieval or tool advisor.
         */
        // Ordered.HIGHEST_PRECEDENCE + 100, written out: the configuration processor records only a literal
        private int order = -2147483548;

        /**
         * Whether the ChatClient.Builder bean of Spring AI's auto-configuration gets the advisor as a
         * default advisor. A ChatClient built by hand adds the throttleTokenBudgetAdvisor bean itself.
         */
        private boolean addToBuilder = true;

        public String getPolicy() {
            return this.policy;
        }

        public void setPolicy(String policy) {
            this.policy = policy;
        }

        public String getKey() {
            return this.key;
        }

        public void setKey(String key) {
            this.key = key;
        }

        public int getEstimate() {
            return this.estimate;
        }

        public void setEstimate(int estimate) {
            this.estimate = estimate;
        }

        public Usage getUsage() {
            return this.usage;
        }

        public void setUsage(Usage usage) {
            this.usage = usage;
        }

        public double getPromptWeight() {
            return this.promptWeight;
        }

        public void setPromptWeight(double promptWeight) {
            this.promptWeight = promptWeight;
        }

        public double getCompletionWeight() {
            return this.completionWeight;
        }

        public void setCompletionWeight(double completionWeight) {
            this.completionWeight = completionWeight;
        }

        public int getOrder() {
            return this.order;
        }

        public void setOrder(int order) {
            this.order = order;
        }

        public boolean isAddToBuilder() {
            return this.addToBuilder;
        }

        public void setAddToBuilder(boolean addToBuilder) {
            this.addToBuilder = addToBuilder;
        }

        /** How a model's reported usage is charged. */
        public enum Usage {

            /** The total tokens the model reports. */
            TOTAL,

            /** Prompt and completion tokens, each times its weight, rounded up. */
            WEIGHTED
        }
    }

    // --- end of Spring AI token budgets ---

    // --- Spring Security logins ---

    private final Security security = new Security();

    public Security getSecurity() {
        return this.security;
    }

    /**
     * Spring Security integration.
     */
    public static class Security {

        private final Authentication authentication = new Authentication();

        public Authentication getAuthentication() {
            return this.authentication;
        }
    }

    /**
     * Throttling of Spring Security logins (form login, HTTP Basic, any username and password that
     * an AuthenticationManager checks), charged before the password is checked.
     */
    public static class Authentication {

        /**
         * Policy that throttles login attempts per username: as submitted, Unicode-normalised (NFKC),
         * case-folded, without accents or invisible characters, trimmed.
         */
        private String usernamePolicy;

        /**
         * Policy that throttles login attempts per client address (#ip); it counts failures only
         * unless the policy sets count.
         */
        private String ipPolicy;

        public String getUsernamePolicy() {
            return this.usernamePolicy;
        }

        public void setUsernamePolicy(String usernamePolicy) {
            this.usernamePolicy = usernamePolicy;
        }

        public String getIpPolicy() {
            return this.ipPolicy;
        }

        public void setIpPolicy(String ipPolicy) {
            this.ipPolicy = ipPolicy;
        }
    }

    // --- end of Spring Security logins ---

    /**
     * Rate-limit header styles.
     */
    public enum Headers {

        /** RateLimit-Policy and RateLimit, as in draft-ietf-httpapi-ratelimit-headers-10. */
        IETF,

        /** No rate-limit headers (Retry-After is still sent on 429). */
        NONE
    }

    /**
     * What to count as a use of the limit.
     */
    public enum Count {

        /** Every call. */
        ALL,

        /** Only calls that fail: a call that succeeds gives back what it took. */
        FAILURES
    }

    /**
     * Whether a policy refuses calls or only counts what it would refuse.
     */
    public enum Mode {

        /**
         * Refuse calls over the limit.
         */
        ENFORCE,

        /**
         * Decide and charge as usual, count what would be refused, never refuse.
         */
        SHADOW
    }

    /**
     * One policy: an algorithm and its parameters. A parameter left unset takes its algorithm's
     * default (dev.throttle.Algorithm, and each policy record's DEFAULT_ constants); one that its
     * algorithm does not take fails startup.
     */
    public static class Policy {

        /**
         * Algorithm by its configuration name, such as token-bucket or gcra.
         */
        private String algorithm;

        /**
         * Most tokens a bucket holds (token-bucket).
         */
        private Integer capacity;

        /**
         * Tokens added per refill period (token-bucket).
         */
        private Integer refillTokens;

        /**
         * How often tokens are added (token-bucket).
         */
        private Duration refillPeriod;

        /**
         * Calls allowed per period (gcra) or per window (fixed-window), or calls in progress at once
         * per key (concurrency).
         */
        private Integer limit;

        /**
         * Period over which the limit applies (gcra).
         */
        private Duration period;

        /**
         * Length of a window (fixed-window): a duration such as 10s or 1h, from the key's first
         * call; or a window of the calendar, 1d (a day), 1w (an ISO week, from Monday) or 1M (a
         * month), from the calendar's boundaries in the zone.
         */
        private String window;

        /**
         * Time zone of a calendar window (fixed-window with window 1d, 1w or 1M), such as
         * Europe/Berlin: its midnights are the windows' boundaries. UTC by default.
         */
        private String zone;

        /**
         * Day of the month a month window (fixed-window with window 1M) starts on, 1 to 31, such
         * as a billing day; a month shorter than that day starts on its last day. 1 by default.
         */
        private Integer anchorDay;

        /**
         * Attempts within ttl before delays apply (sliding-log).
         */
        private Integer threshold;

        /**
         * How long an attempt is remembered (sliding-log).
         */
        private Duration ttl;

        /**
         * Delay once the threshold is passed (sliding-log).
         */
        private Duration initialDelay;

        /**
         * Growth of the delay per attempt over the threshold (sliding-log).
         */
        private Double delayExponent;

        /**
         * Ladder of waits between allowed attempts (lockout), for example 1s,2s,4s,8s.
         */
        private List<Duration> timeouts;

        /**
         * Idle time after which a key starts over (lockout), at least the longest timeout.
         */
        private Duration expireAfter;

        // concurrency
        /**
         * How long a slot is held at most when its call never releases it (concurrency).
         */
        private Duration lease;

        public Duration getLease() {
            return this.lease;
        }

        public void setLease(Duration lease) {
            this.lease = lease;
        }
        // end of concurrency

        /**
         * Whether a call that returns normally clears its key's state.
         */
        private boolean resetOnSuccess;

        /**
         * Most units a key may owe after a call whose actual cost (@Throttled actualCost) was more
         * than it had left; later calls are refused until refills pay it back. Unset: one full
         * quota. Token-bucket, gcra and fixed-window only.
         */
        private Integer maxDebt;

        public Integer getMaxDebt() {
            return this.maxDebt;
        }

        public void setMaxDebt(Integer maxDebt) {
            this.maxDebt = maxDebt;
        }

        /**
         * Longest a call over the limit waits for its turn before it is refused; 0 refuses at once.
         * Token-bucket, gcra and fixed-window only.
         */
        private Duration wait;

        public Duration getWait() {
            return this.wait;
        }

        public void setWait(Duration wait) {
            this.wait = wait;
        }

        /**
         * The wait that applies: unset is 0.
         * @return the longest wait for a turn
         */
        public Duration waitOrZero() {
            return (this.wait != null) ? this.wait : Duration.ZERO;
        }

        /**
         * Which calls use up the limit. Unset, a policy named by
         * throttle.security.authentication.ip-policy counts failures only.
         */
        private Count count;

        // plans, shadow mode
        /**
         * Plans by name, each overriding some numbers of the policy (limit, capacity, ...) for the
         * calls whose @Throttled(plan) names it.
         */
        private Map<String, Policy> plans = new LinkedHashMap<>();

        /**
         * Whether the policy refuses calls (enforce) or only counts the calls it would refuse
         * (shadow); unset, throttle.mode applies.
         */
        private Mode mode;

        public Map<String, Policy> getPlans() {
            return this.plans;
        }

        public void setPlans(Map<String, Policy> plans) {
            this.plans = plans;
        }

        public Mode getMode() {
            return this.mode;
        }

        public void setMode(Mode mode) {
            this.mode = mode;
        }
        // end of plans, shadow mode

        // several limits in one policy
        /**
         * Several limits that every call must pass, each with the algorithm's numbers (capacity,
         * refill-period, ...), such as 10 a second and 1,000 an hour; instead of the policy's own
         * numbers. Token-bucket, gcra and fixed-window only.
         */
        private List<Policy> limits = new ArrayList<>();

        public List<Policy> getLimits() {
            return this.limits;
        }

        public void setLimits(List<Policy> limits) {
            this.limits = limits;
        }
        // end of several limits

        // per-policy store settings

        /**
         * What this policy's decisions do while Redis (or the jdbc store's database) cannot be
         * reached, instead of throttle.store.redis.failure-mode (or throttle.store.jdbc.failure-mode).
         */
        private FailureMode failureMode;

        /**
         * Whether this policy's calls are refused from refusals remembered on the instance while Redis
         * answers (they are remembered either way, and answer during an outage). Defaults to true,
         * except for count=failures, whose successful calls give back what they took.
         */
        private Boolean nearCache;

        /**
         * Whether this policy's writes on Redis wait for a replica before they are answered
         * (replicated: WAIT 1 after each acquire, charge and reset, so that a lockout or an unlock
         * survives a failover; one that no replica confirms in time is answered by the failure mode
         * and kept for the store). On a Redis Cluster, WAIT goes to the key's master.
         */
        private Durability durability = Durability.PRIMARY;

        public Durability getDurability() {
            return this.durability;
        }

        public void setDurability(Durability durability) {
            this.durability = durability;
        }

        public FailureMode getFailureMode() {
            return this.failureMode;
        }

        public void setFailureMode(FailureMode failureMode) {
            this.failureMode = failureMode;
        }

        public Boolean getNearCache() {
            return this.nearCache;
        }

        public void setNearCache(Boolean nearCache) {
            this.nearCache = nearCache;
        }

        public String getAlgorithm() {
            return this.algorithm;
        }

        public void setAlgorithm(String algorithm) {
            this.algorithm = algorithm;
        }

        public Integer getCapacity() {
            return this.capacity;
        }

        public void setCapacity(Integer capacity) {
            this.capacity = capacity;
        }

        public Integer getRefillTokens() {
            return this.refillTokens;
        }

        public void setRefillTokens(Integer refillTokens) {
            this.refillTokens = refillTokens;
        }

        public Duration getRefillPeriod() {
            return this.refillPeriod;
        }

        public void setRefillPeriod(Duration refillPeriod) {
            this.refillPeriod = refillPeriod;
        }

        public Integer getLimit() {
            return this.limit;
        }

        public void setLimit(Integer limit) {
            this.limit = limit;
        }

        public Duration getPeriod() {
            return this.period;
        }

        public void setPeriod(Duration period) {
            this.period = period;
        }

        public String getWindow() {
            return this.window;
        }

        public void setWindow(String window) {
            this.window = window;
        }

        public String getZone() {
            return this.zone;
        }

        public void setZone(String zone) {
            this.zone = zone;
        }

        public Integer getAnchorDay() {
            return this.anchorDay;
        }

        public void setAnchorDay(Integer anchorDay) {
            this.anchorDay = anchorDay;
        }

        public Integer getThreshold() {
            return this.threshold;
        }

        public void setThreshold(Integer threshold) {
            this.threshold = threshold;
        }

        public Duration getTtl() {
            return this.ttl;
        }

        public void setTtl(Duration ttl) {
            this.ttl = ttl;
        }

        public Duration getInitialDelay() {
            return this.initialDelay;
        }

        public void setInitialDelay(Duration initialDelay) {
            this.initialDelay = initialDelay;
        }

        public Double getDelayExponent() {
            return this.delayExponent;
        }

        public void setDelayExponent(Double delayExponent) {
            this.delayExponent = delayExponent;
        }

        public List<Duration> getTimeouts() {
            return this.timeouts;
        }

        public void setTimeouts(List<Duration> timeouts) {
            this.timeouts = timeouts;
        }

        public Duration getExpireAfter() {
            return this.expireAfter;
        }

        public void setExpireAfter(Duration expireAfter) {
            this.expireAfter = expireAfter;
        }

        public boolean isResetOnSuccess() {
            return this.resetOnSuccess;
        }

        public void setResetOnSuccess(boolean resetOnSuccess) {
            this.resetOnSuccess = resetOnSuccess;
        }

        public Count getCount() {
            return (this.count != null) ? this.count : Count.ALL;
        }

        public void setCount(Count count) {
            this.count = count;
        }

        /**
         * Whether {@code count} was set rather than left at its default ({@code all}): a Spring
         * Security ip-policy whose count is not set counts failures only.
         * @return whether the count was configured
         */
        public boolean hasCount() {
            return this.count != null;
        }

        /**
         * How a call charged by this policy settles a success.
         * @return reset-on-success wins over count: failures; otherwise every call counts
         */
        public Charge.OnSuccess onSuccess() {
            return this.resetOnSuccess
                    ? Charge.OnSuccess.RESET
                    : (this.count == Count.FAILURES) ? Charge.OnSuccess.REFUND : Charge.OnSuccess.COUNT;
        }
    }

    // outgoing calls
    /**
     * Outgoing calls throttled by client name: calls of RestClient, RestTemplate and WebClient
     * built from Spring Boot's builders, matched by base-url or hosts.
     */
    private Map<String, Client> clients = new LinkedHashMap<>();

    public Map<String, Client> getClients() {
        return this.clients;
    }

    public void setClients(Map<String, Client> clients) {
        this.clients = clients;
    }

    /**
     * One throttled outgoing client.
     */
    public static class Client {

        /**
         * Requests whose URL starts with this (scheme, host, port and path prefix) are throttled.
         */
        private String baseUrl;

        /**
         * Requests to these hosts (a name, or name:port) are throttled, whatever their path.
         */
        private List<String> hosts = new ArrayList<>();

        /**
         * The policy under throttle.policies that paces the calls.
         */
        private String policy;

        /**
         * The key: empty for the request's host (and port, when it has one), or a SpEL expression
         * over #uri, #method and #headers of the outgoing request.
         */
        private String key = "";

        /**
         * The longest a call waits for its turn (or for a remote's pause to end) before it fails
         * without being sent; unset: the policy's wait.
         */
        private Duration wait;

        /**
         * Whether a remote's 429/503 Retry-After, RateLimit or X-RateLimit-Remaining: 0 pauses the
         * key for every instance sharing the store.
         */
        private boolean honorRemoteLimits;

        public String getBaseUrl() {
            return this.baseUrl;
        }

        public void setBaseUrl(String baseUrl) {
            this.baseUrl = baseUrl;
        }

        public List<String> getHosts() {
            return this.hosts;
        }

        public void setHosts(List<String> hosts) {
            this.hosts = hosts;
        }

        public String getPolicy() {
            return this.policy;
        }

        public void setPolicy(String policy) {
            this.policy = policy;
        }

        public String getKey() {
            return this.key;
        }

        public void setKey(String key) {
            this.key = key;
        }

        public Duration getWait() {
            return this.wait;
        }

        public void setWait(Duration wait) {
            this.wait = wait;
        }

        public boolean isHonorRemoteLimits() {
            return this.honorRemoteLimits;
        }

        public void setHonorRemoteLimits(boolean honorRemoteLimits) {
            this.honorRemoteLimits = honorRemoteLimits;
        }
    }
    // end of outgoing calls
}
