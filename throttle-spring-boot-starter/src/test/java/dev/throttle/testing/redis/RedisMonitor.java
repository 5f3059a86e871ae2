package dev.throttle.testing.redis;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Records what clients send to a Redis, with {@code MONITOR} over a plain socket (Lettuce has no
 * {@code MONITOR}). Each line names its origin: {@code [0 127.0.0.1:50123]} for a client's own
 * (top-level) command, {@code [0 lua]} for a command a script runs inside Redis. Counting the
 * top-level commands counts round trips.
 *
 * <p>{@code MONITOR} output is asynchronous: after the commands of interest, send a marker with
 * {@link #awaitMarker(String)} so every earlier line is known to have arrived.
 */
public final class RedisMonitor implements AutoCloseable {

    private static final Pattern LINE = Pattern.compile("^\\+\\d+\\.\\d+ \\[(\\d+) ([^\\]]+)\\] \"([^\"]*)\"(.*)$");

    private final Socket socket;

    private final List<Command> commands = new ArrayList<>();

    private final Thread reader;

    /**
     * Starts monitoring.
     * @param endpoint the Redis to watch
     */
    public RedisMonitor(RedisEndpoint endpoint) {
        try {
            this.socket = new Socket();
            this.socket.connect(new InetSocketAddress(endpoint.host(), endpoint.port()), 2000);
            OutputStream out = this.socket.getOutputStream();
            if (endpoint.password() != null) {
                String auth = (endpoint.username() != null)
                        ? endpoint.username() + " " + endpoint.password()
                        : endpoint.password();
                out.write(("AUTH " + auth + "\r\n").getBytes(StandardCharsets.UTF_8));
            }
            out.write("MONITOR\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(this.socket.getInputStream(), StandardCharsets.UTF_8));
            String line;
            do {
                line = in.readLine();
                if (line == null) {
                    throw new IOException("MONITOR was refused");
                }
            } while (!line.equals("+OK"));
            this.reader = new Thread(() -> read(in), "redis-monitor");
            this.reader.setDaemon(true);
            this.reader.start();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private void read(BufferedReader in) {
        try {
            String line;
            while ((line = in.readLine()) != null) {
                Matcher matcher = LINE.matcher(line);
                if (matcher.matches()) {
                    Command command =
                            new Command(matcher.group(2), matcher.group(3).toUpperCase(), matcher.group(4));
                    synchronized (this.commands) {
                        this.commands.add(command);
                        this.commands.notifyAll();
                    }
                }
            }
        } catch (IOException ex) {
            // closed
        }
    }

    /**
     * Waits until a top-level {@code ECHO marker}, sent by the caller after the commands of
     * interest, has been seen.
     * @param marker the text the caller echoed
     * @throws IllegalStateException when it does not show up within 10 s
     */
    public void awaitMarker(String marker) {
        long deadline = System.currentTimeMillis() + 10_000;
        synchronized (this.commands) {
            while (this.commands.stream()
                    .noneMatch((c) -> c.name().equals("ECHO") && c.args().contains(marker))) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    throw new IllegalStateException("marker " + marker + " not seen");
                }
                try {
                    this.commands.wait(left);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(ex);
                }
            }
        }
    }

    /**
     * Returns everything seen so far.
     * @return a copy
     */
    public List<Command> commands() {
        synchronized (this.commands) {
            return new ArrayList<>(this.commands);
        }
    }

    /**
     * Forgets everything seen so far.
     */
    public void clear() {
        synchronized (this.commands) {
            this.commands.clear();
        }
    }

    @Override
    public void close() {
        try {
            this.socket.close();
        } catch (IOException ex) {
            // ignore
        }
    }

    /**
     * One monitored command.
     * @param origin {@code lua} for a script's own command, otherwise the client's address
     * @param name the command's name, upper case
     * @param args the rest of the line, as Redis printed it
     */
    public record Command(String origin, String name, String args) {

        /**
         * Returns whether a client sent it (a round trip), as opposed to a script running it.
         * @return whether it is top-level
         */
        public boolean isTopLevel() {
            return !this.origin.equals("lua");
        }
    }
}
