package dev.throttle.spring.internal.web;

import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;

/**
 * The order of one of the starter's refusal handlers ({@code ThrottleExceptionHandler} and its
 * WebFlux companion, ordered alike): {@link AdviceOrder} asked once, on first use, when the
 * application's advice beans are all defined. Thread-safe.
 */
public final class RefusalHandlerOrder {

	private final Class<?> starterHandler;

	private @Nullable ListableBeanFactory beanFactory;

	private volatile @Nullable Integer order;

	/**
	 * Creates the order of a handler.
	 * @param starterHandler the starter's handler type (and its subclasses), not counted as the application's
	 */
	public RefusalHandlerOrder(Class<?> starterHandler) {
		this.starterHandler = starterHandler;
	}

	/**
	 * Keeps the bean factory in which to look for the application's advice.
	 * @param beanFactory the handler's bean factory
	 */
	public void setBeanFactory(BeanFactory beanFactory) {
		this.beanFactory = (beanFactory instanceof ListableBeanFactory listable) ? listable : null;
	}

	/**
	 * Returns the order, found on the first call.
	 * @return {@link AdviceOrder#AHEAD}, or behind the application's own refusal handler
	 */
	public int get() {
		Integer order = this.order;
		if (order == null) {
			order = (this.beanFactory != null) ? AdviceOrder.of(this.beanFactory, this.starterHandler)
					: AdviceOrder.AHEAD;
			this.order = order;
		}
		return order;
	}

}
