package dev.throttle.testing;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A server that takes connections, reads what it is sent and never answers: a database or a Redis
 * that froze, or one behind a proxy whose far side is gone. Closing it closes every connection.
 */
public final class SilentServer implements AutoCloseable {

    private final ServerSocket socket;

    private final List<Socket> accepted = new CopyOnWriteArrayList<>();

    private SilentServer(ServerSocket socket) {
        this.socket = socket;
    }

    /**
     * Starts a silent server on a free port of the loopback address.
     * @return the server
     * @throws IOException when no port could be bound
     */
    public static SilentServer start() throws IOException {
        SilentServer server = new SilentServer(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
        Thread acceptor = new Thread(server::accept, "silent-server");
        acceptor.setDaemon(true);
        acceptor.start();
        return server;
    }

    /** The port it listens on. */
    public int port() {
        return this.socket.getLocalPort();
    }

    /** How many connections it has taken so far. */
    public int connections() {
        return this.accepted.size();
    }

    private void accept() {
        while (!this.socket.isClosed()) {
            try {
                Socket connection = this.socket.accept();
                this.accepted.add(connection);
                Thread reader = new Thread(() -> drain(connection), "silent-server-read");
                reader.setDaemon(true);
                reader.start();
            } catch (IOException ex) {
                return;
            }
        }
    }

    private static void drain(Socket connection) {
        try (InputStream in = connection.getInputStream()) {
            byte[] buffer = new byte[1024];
            while (in.read(buffer) >= 0) {
                // read, and never answer
            }
        } catch (IOException ex) {
            // closed
        }
    }

    @Override
    public void close() throws IOException {
        this.socket.close();
        for (Socket connection : this.accepted) {
            connection.close();
        }
    }
}
