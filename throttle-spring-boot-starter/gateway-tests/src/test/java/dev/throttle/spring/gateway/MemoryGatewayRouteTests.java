package dev.throttle.spring.gateway;

/** Gateway routes throttled on the memory store. */
class MemoryGatewayRouteTests extends GatewayRouteTests {

    @Override
    String client(String name) {
        return name;
    }
}
