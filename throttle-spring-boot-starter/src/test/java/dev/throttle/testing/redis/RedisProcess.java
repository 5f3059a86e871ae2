package dev.throttle.testing.redis;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import redis.embedded.RedisExecProvider;

/**
 * One {@code redis-server} process on a loopback port, from the static Redis 7.0.15 binary that
 * {@code org.signal:embedded-redis} ships. Unlike embedded-redis's own lifecycle it can be stopped
 * and started again on the same port (for failure-mode tests), and it is ready when it answers
 * {@code PING}, not when a log line appears.
 *
 * <p>No persistence: {@code save ""}, {@code appendonly no}; its working directory is a fresh temp
 * directory (where a cluster node keeps its {@code cluster-config-file}). Thread-safe.
 */
public final class RedisProcess implements AutoCloseable {

    private static final Duration START_TIMEOUT = Duration.ofSeconds(20);

    private static volatile File executable;

    private final int port;

    private final List<String> extraArgs;

    private final Path dir;

    private final String configFile;

    private Process process;

    private Thread drainer;

    /**
     * Creates (without starting) a server on {@code port}.
     * @param port the port, for example from {@link #freePort(boolean)}
     * @param extraArgs further {@code redis-server} arguments, as {@code "--name", "value"} pairs
     */
    public RedisProcess(int port, List<String> extraArgs) {
        this(port, extraArgs, null);
    }

    private RedisProcess(int port, List<String> extraArgs, String config) {
        this.port = port;
        this.extraArgs = List.copyOf(extraArgs);
        try {
            this.dir = Files.createTempDirectory("throttle-redis-" + port + "-");
            if (config != null) {
                Path file = this.dir.resolve("redis.conf");
                Files.writeString(file, config);
                this.configFile = file.toString();
            } else {
                this.configFile = null;
            }
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Creates and starts a Sentinel on a free port that monitors {@code master} (quorum 1). Sentinel
     * rewrites its configuration file, so it gets one of its own in the process's directory.
     * @param masterName the name clients ask for, as in {@code spring.data.redis.sentinel.master}
     * @param master the master to monitor
     * @return the running Sentinel
     */
    public static RedisProcess startSentinel(String masterName, RedisProcess master) {
        return startSentinel(masterName, master, 1);
    }

    /**
     * Creates and starts a Sentinel on a free port that monitors {@code master} with {@code quorum}.
     * @param masterName the name clients ask for, as in {@code spring.data.redis.sentinel.master}
     * @param master the master to monitor
     * @param quorum how many Sentinels must agree that the master is down
     * @return the running Sentinel
     */
    public static RedisProcess startSentinel(String masterName, RedisProcess master, int quorum) {
        int port = freePort(false);
        String config = "port " + port + "\nbind 127.0.0.1\nsentinel monitor " + masterName + " 127.0.0.1 "
                + master.port() + " " + quorum + "\nsentinel down-after-milliseconds " + masterName + " 5000\n";
        RedisProcess sentinel = new RedisProcess(port, List.of("--sentinel"), config);
        sentinel.start();
        return sentinel;
    }

    /**
     * Creates and starts a plain standalone server on a free port.
     * @return the running server
     */
    public static RedisProcess startStandalone() {
        RedisProcess redis = new RedisProcess(freePort(false), List.of());
        redis.start();
        return redis;
    }

    /**
     * Returns the port.
     * @return the port
     */
    public int port() {
        return this.port;
    }

    /**
     * Returns the server's working directory.
     * @return the directory
     */
    public Path dir() {
        return this.dir;
    }

    /**
     * {@code INFO <section>} of this server over a plain socket, bounded by a second to connect and two
     * to answer: for tests that poll a server while it is failed over, whose clients a Sentinel closes
     * (a Lettuce client made and shut down per poll can hang in its shutdown then).
     * @param section the INFO section, for example {@code replication}
     * @return the answer, or an empty string when the server did not give one
     */
    public String info(String section) {
        try (java.net.Socket socket = new java.net.Socket()) {
            socket.connect(new java.net.InetSocketAddress("127.0.0.1", this.port), 1_000);
            socket.setSoTimeout(2_000);
            String command = "*2\r\n$4\r\nINFO\r\n$" + section.length() + "\r\n" + section + "\r\n";
            socket.getOutputStream().write(command.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
            StringBuilder header = new StringBuilder();
            for (int b = in.read(); b != '\n'; b = in.read()) {
                if (b < 0) {
                    return "";
                }
                header.append((char) b);
            }
            if (header.charAt(0) != '$') {
                return "";
            }
            byte[] body = new byte[Integer.parseInt(header.substring(1).trim())];
            in.readFully(body);
            return new String(body, java.nio.charset.StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException ex) {
            return "";
        }
    }

    /**
     * Returns this server as an endpoint.
     * @return {@code redis://127.0.0.1:<port>}
     */
    public RedisEndpoint endpoint() {
        return RedisEndpoint.of("127.0.0.1", this.port);
    }

    /**
     * Starts the server (again) and waits until it answers {@code PING}.
     * @throws IllegalStateException when it does not come up in time
     */
    public synchronized void start() {
        if (isRunning()) {
            return;
        }
        List<String> command = new ArrayList<>();
        command.add(executable().getAbsolutePath());
        if (this.configFile != null) {
            command.add(this.configFile);
            command.addAll(List.of("--port", Integer.toString(this.port), "--dir", this.dir.toString()));
        } else {
            command.addAll(List.of(
                    "--port",
                    Integer.toString(this.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    this.dir.toString(),
                    "--loglevel",
                    "warning"));
        }
        command.addAll(this.extraArgs);
        Process started;
        try {
            started = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException ex) {
            throw new UncheckedIOException("could not start " + command, ex);
        }
        List<String> output = new ArrayList<>();
        Thread drain = new Thread(() -> drain(started.getInputStream(), output), "redis-" + this.port + "-output");
        drain.setDaemon(true);
        drain.start();
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (!ping(this.port)) {
            if (!started.isAlive() || System.nanoTime() > deadline) {
                started.destroyForcibly();
                synchronized (output) {
                    throw new IllegalStateException("redis-server on port " + this.port + " did not start: " + output);
                }
            }
            sleep(10);
        }
        this.process = started;
        this.drainer = drain;
    }

    /**
     * Stops the server (SIGTERM, then SIGKILL after 5 s) and waits until the port is closed.
     */
    public synchronized void stop() {
        Process running = this.process;
        if (running == null) {
            return;
        }
        this.process = null;
        running.destroy();
        try {
            if (!running.waitFor(5, TimeUnit.SECONDS)) {
                running.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        this.drainer = null;
    }

    /**
     * Stops then starts the server on the same port.
     */
    public void restart() {
        stop();
        start();
    }

    /**
     * Returns whether the process is alive.
     * @return whether it runs
     */
    public synchronized boolean isRunning() {
        return this.process != null && this.process.isAlive();
    }

    @Override
    public void close() {
        stop();
    }

    /**
     * Returns a port that is free now on loopback.
     * @param withClusterBus also require {@code port + 10000} (a cluster node's bus port) to be free
     * @return the port
     */
    public static int freePort(boolean withClusterBus) {
        for (int attempt = 0; attempt < 100; attempt++) {
            int port;
            try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                port = socket.getLocalPort();
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
            if (!withClusterBus) {
                return port;
            }
            if (port + 10000 <= 65535 && isFree(port + 10000)) {
                return port;
            }
        }
        throw new IllegalStateException("no free port found");
    }

    private static boolean isFree(int port) {
        try (ServerSocket socket = new ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
            return true;
        } catch (IOException ex) {
            return false;
        }
    }

    /**
     * Sends {@code PING} over a plain socket.
     * @param port the port on loopback
     * @return whether {@code +PONG} came back
     */
    static boolean ping(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
            socket.setSoTimeout(1000);
            OutputStream out = socket.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            byte[] buffer = new byte[7];
            int read = socket.getInputStream().readNBytes(buffer, 0, 7);
            return read == 7 && new String(buffer, StandardCharsets.US_ASCII).startsWith("+PONG");
        } catch (IOException ex) {
            return false;
        }
    }

    private static File executable() {
        File file = executable;
        if (file == null) {
            synchronized (RedisProcess.class) {
                file = executable;
                if (file == null) {
                    try {
                        file = RedisExecProvider.defaultProvider().get();
                    } catch (IOException ex) {
                        throw new UncheckedIOException("could not extract redis-server from embedded-redis", ex);
                    }
                    file.setExecutable(true);
                    executable = file;
                }
            }
        }
        return file;
    }

    private static void drain(InputStream in, List<String> output) {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                synchronized (output) {
                    if (output.size() < 200) {
                        output.add(line);
                    }
                }
            }
        } catch (IOException ex) {
            // the process ended
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", ex);
        }
    }
}
