package dev.throttle.spring.jdbc;

import dev.throttle.spring.client.RemotePauses;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.concurrent.CompletionStage;

/**
 * Remote pauses in the application's PostgreSQL database, on the store's own connections and
 * timeout: a row per paused client key in {@code <prefix>remote_pauses} with the pause's end on the
 * database's clock, so that the pause ends for every instance at once. A read is one extra round trip
 * per call, and only for clients that honour remote limits; a pause keeps the later of two ends, and
 * storing one drops the pauses that have ended.
 */
final class JdbcRemotePauses implements RemotePauses {

    private static final String NOW = "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

    private final JdbcCalls calls;

    private final String remainingSql;

    private final String pauseSql;

    private final String dropEndedSql;

    JdbcRemotePauses(JdbcCalls calls) {
        this.calls = calls;
        String table = calls.tablePrefix() + "remote_pauses";
        this.remainingSql = "SELECT greatest(0, paused_until - " + NOW + ") FROM " + table
                + " WHERE client_name = ? AND client_key = ?";
        this.pauseSql = "INSERT INTO " + table + " AS p (client_name, client_key, paused_until) VALUES (?, ?, " + NOW
                + " + ?) ON CONFLICT (client_name, client_key)"
                + " DO UPDATE SET paused_until = greatest(p.paused_until, EXCLUDED.paused_until)";
        this.dropEndedSql = "DELETE FROM " + table + " WHERE paused_until < " + NOW;
    }

    @Override
    public CompletionStage<Long> remainingMillis(String client, String key) {
        return this.calls.bounded(
                (connection) -> {
                    try (PreparedStatement statement = connection.prepareStatement(this.remainingSql)) {
                        statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
                        statement.setString(1, client);
                        statement.setString(2, JdbcLimiter.storedKey(key));
                        try (ResultSet result = statement.executeQuery()) {
                            return result.next() ? result.getLong(1) : 0L;
                        }
                    }
                },
                "remotePause",
                client);
    }

    @Override
    public CompletionStage<Void> pause(String client, String key, long millis) {
        return this.calls.bounded(
                (connection) -> {
                    try (PreparedStatement statement = connection.prepareStatement(this.pauseSql)) {
                        statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
                        statement.setString(1, client);
                        statement.setString(2, JdbcLimiter.storedKey(key));
                        statement.setLong(3, Math.max(1, millis));
                        statement.executeUpdate();
                    }
                    try (PreparedStatement statement = connection.prepareStatement(this.dropEndedSql)) {
                        statement.setQueryTimeout(this.calls.queryTimeoutSeconds());
                        statement.executeUpdate();
                    }
                    return null;
                },
                "pause",
                client);
    }
}
