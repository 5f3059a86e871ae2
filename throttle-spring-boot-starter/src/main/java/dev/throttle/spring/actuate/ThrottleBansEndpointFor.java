package dev.throttle.spring.actuate;

import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.endpoint.EndpointId;
import org.springframework.boot.actuate.endpoint.OperationType;
import org.springframework.boot.actuate.endpoint.invoke.OperationInvoker;
import org.springframework.boot.actuate.endpoint.invoke.OperationInvokerAdvisor;
import org.springframework.boot.actuate.endpoint.invoke.OperationParameters;

/**
 * Lets {@code POST /actuator/throttlebans/{ban}/{key}} say the ban's length as configuration does,
 * {@code {"for": "10m"}}, beside {@code {"duration": "10m"}}: {@code for} is a Java keyword, so no
 * parameter of {@link ThrottleBansEndpoint#start} can carry it. Applies only to that endpoint's write
 * operation, which exists only where the endpoint's access allows writes.
 */
public final class ThrottleBansEndpointFor implements OperationInvokerAdvisor {

    private final ObjectProvider<ThrottleBansEndpoint> endpoint;

    /**
     * Creates the advisor.
     * @param endpoint the endpoint
     */
    public ThrottleBansEndpointFor(ObjectProvider<ThrottleBansEndpoint> endpoint) {
        this.endpoint = endpoint;
    }

    @Override
    public OperationInvoker apply(
            EndpointId endpointId,
            OperationType operationType,
            OperationParameters parameters,
            OperationInvoker invoker) {
        if (!"throttlebans".equals(endpointId.toString()) || operationType != OperationType.WRITE) {
            return invoker;
        }
        return (context) -> {
            Map<String, Object> arguments = context.getArguments();
            Object length = arguments.get("for");
            ThrottleBansEndpoint endpoint = this.endpoint.getIfAvailable();
            if (length == null || arguments.get("duration") != null || endpoint == null) {
                return invoker.invoke(context);
            }
            return endpoint.start(
                    String.valueOf(arguments.get("ban")), String.valueOf(arguments.get("key")), length.toString());
        };
    }
}
