package dev.throttle.spring.internal.aop;

import dev.throttle.ThrottledException;
import dev.throttle.spring.internal.request.ReactiveThrottleRequestContext;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.core.Ordered;
import org.springframework.util.function.SingletonSupplier;
import org.springframework.web.filter.reactive.ServerWebExchangeContextFilter;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.method.annotation.ExceptionHandlerMethodResolver;
import org.springframework.web.reactive.DispatchExceptionHandler;
import org.springframework.web.reactive.HandlerAdapter;
import org.springframework.web.reactive.HandlerResult;
import org.springframework.web.reactive.result.method.annotation.RequestMappingHandlerAdapter;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * The WebFlux counterpart of {@link EarlyThrottlingInterceptor}, which WebFlux has no place for:
 * ordered before Spring's {@link RequestMappingHandlerAdapter}, it takes the annotated handlers
 * whose keys read only the request ({@link EarlyDecisions}), decides them, and hands each allowed
 * call to Spring's adapter. So a refused request runs no {@code @ModelAttribute} method, reads no
 * body and validates nothing, and a request that fails binding is still counted.
 *
 * <p>A refusal fails the dispatch as an error of the handler's own would, and is answered by the
 * application's {@code @ControllerAdvice} or else by the throttle's exception handler. Spring's
 * adapter consults a controller's own {@code @ExceptionHandler} methods only for errors of its
 * call, so a controller that handles {@link ThrottledException} itself is left to its advice and
 * decided when its publisher is subscribed, as before.
 */
public final class EarlyThrottlingHandlerAdapter implements HandlerAdapter, DispatchExceptionHandler, Ordered {

    private final ReactiveThrottleRequestContext requests;

    // both looked up on first dispatch: the DispatcherHandler collects the adapters early in the
    // context's refresh, before the throttled methods and Spring's adapter need to exist
    private final SingletonSupplier<EarlyDecisions> decisions;

    private final SingletonSupplier<RequestMappingHandlerAdapter> delegate;

    /** Per controller class: whether one of its own methods handles a ThrottledException. */
    private final Map<Class<?>, Boolean> handlesRefusals = new ConcurrentHashMap<>();

    /**
     * Creates the adapter.
     * @param methods the annotated methods
     * @param requests the exchange's request context ({@code #ip}, {@code #principal}, headers)
     * @param delegate Spring's adapter, which every call is handed to
     */
    public EarlyThrottlingHandlerAdapter(
            ObjectProvider<ThrottledMethods> methods,
            ReactiveThrottleRequestContext requests,
            ObjectProvider<RequestMappingHandlerAdapter> delegate) {
        this.requests = requests;
        this.decisions = SingletonSupplier.of(() -> new EarlyDecisions(methods.getObject()));
        this.delegate = SingletonSupplier.of(delegate::getIfUnique);
    }

    @Override
    public boolean supports(Object handler) {
        RequestMappingHandlerAdapter adapter = this.delegate.get();
        return adapter != null
                && handler instanceof HandlerMethod method
                && adapter.supports(handler)
                && this.decisions.obtain().decidesReactiveEarly(method.getMethod(), method.getBeanType())
                && !this.handlesRefusals.computeIfAbsent(
                        method.getBeanType(), EarlyThrottlingHandlerAdapter::handlesRefusals);
    }

    @Override
    public Mono<HandlerResult> handle(ServerWebExchange exchange, Object handler) {
        HandlerMethod method = (HandlerMethod) handler;
        Context context = Context.of(ServerWebExchangeContextFilter.EXCHANGE_CONTEXT_ATTRIBUTE, exchange);
        return this.requests
                .current(context)
                .flatMap((request) -> Mono.fromCompletionStage(
                        () -> this.decisions.obtain().decideAsync(method.getMethod(), method.getBeanType(), request)))
                .doOnNext((decided) -> exchange.getAttributes().put(EarlyDecisions.ATTRIBUTE, decided))
                .then(Mono.defer(() -> this.delegate.obtain().handle(exchange, handler)));
    }

    @Override
    public Mono<HandlerResult> handleError(ServerWebExchange exchange, Throwable ex) {
        return this.delegate.obtain().handleError(exchange, ex);
    }

    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE;
    }

    private static boolean handlesRefusals(Class<?> beanType) {
        return new ExceptionHandlerMethodResolver(beanType).resolveMethodByExceptionType(ThrottledException.class)
                != null;
    }
}
