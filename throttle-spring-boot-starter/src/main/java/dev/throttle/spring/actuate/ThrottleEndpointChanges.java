package dev.throttle.spring.actuate;

import java.security.Principal;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.endpoint.EndpointId;
import org.springframework.boot.actuate.endpoint.OperationType;
import org.springframework.boot.actuate.endpoint.invoke.OperationInvoker;
import org.springframework.boot.actuate.endpoint.invoke.OperationInvokerAdvisor;
import org.springframework.boot.actuate.endpoint.invoke.OperationParameters;

/**
 * Hands the whole JSON object of {@code POST /actuator/throttle/{policy}} to
 * {@link ThrottleEndpoint#update(String, Map)}: an endpoint operation otherwise sees only the members
 * it names as Java parameters, and a policy's settings are YAML names ({@code refill-period}) that no
 * Java parameter can have. Applies only to the throttle endpoint's write operation, which exists only
 * where the endpoint's access allows writes.
 */
public final class ThrottleEndpointChanges implements OperationInvokerAdvisor {

    private final ObjectProvider<ThrottleEndpoint> endpoint;

    /**
     * Creates the advisor.
     * @param endpoint the endpoint
     */
    public ThrottleEndpointChanges(ObjectProvider<ThrottleEndpoint> endpoint) {
        this.endpoint = endpoint;
    }

    @Override
    public OperationInvoker apply(
            EndpointId endpointId,
            OperationType operationType,
            OperationParameters parameters,
            OperationInvoker invoker) {
        if (!"throttle".equals(endpointId.toString()) || operationType != OperationType.WRITE) {
            return invoker;
        }
        return (context) -> {
            Map<String, Object> changes = new LinkedHashMap<>(context.getArguments());
            Object policy = changes.remove("policy");
            ThrottleEndpoint endpoint = this.endpoint.getIfAvailable();
            if (endpoint == null || policy == null) {
                return invoker.invoke(context);
            }
            return endpoint.update(
                    policy.toString(),
                    changes,
                    context.canResolve(Principal.class) ? context.resolveArgument(Principal.class) : null);
        };
    }
}
