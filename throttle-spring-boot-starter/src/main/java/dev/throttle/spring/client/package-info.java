/**
 * Throttling of the calls the application makes to other services: a {@code RestClient},
 * {@code RestTemplate} or {@code WebClient} call waits for its turn under a client's policy, then is
 * sent, or fails without being sent ({@link dev.throttle.spring.client.OutgoingCallThrottledException});
 * a remote's own limit headers pause the key for every instance sharing the store
 * ({@link dev.throttle.spring.client.RemotePauses}).
 */
@NullMarked
package dev.throttle.spring.client;

import org.jspecify.annotations.NullMarked;
