package giraffe.curator;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * What a check runs against: the servers, a factory of Curator clients
 * (each one a session of its own) that closes them when the check ends,
 * and the assertions the checks make.
 */
final class Env {
    /**
     * Session timeout of the clients, in ms, unless a check asks for
     * another: long enough that a busy machine does not end sessions the
     * checks did not mean to end.
     */
    static final int SESSION_MS = 10_000;

    /** The servers' client addresses, host:port. */
    final List<String> servers;
    /** Whether the servers form an ensemble (else one standalone server). */
    final boolean ensemble;
    /** The ensemble's `giraffe cluster` directory and binary (ensemble only). */
    final String clusterDir, giraffeBin;

    private final List<CuratorFramework> open = new ArrayList<>();
    private final AtomicBoolean suspended = new AtomicBoolean();
    private int next;

    Env(List<String> servers, boolean ensemble, String clusterDir, String giraffeBin) {
        this.servers = servers;
        this.ensemble = ensemble;
        this.clusterDir = clusterDir;
        this.giraffeBin = giraffeBin;
    }

    /** Every server, as a connect string. */
    String all() {
        return String.join(",", servers);
    }

    /**
     * A started client on the next server in turn, so that the clients of
     * one check sit on different servers of an ensemble and a recipe's
     * cooperation crosses servers.
     */
    CuratorFramework client() throws InterruptedException {
        return client(servers.get(next++ % servers.size()), SESSION_MS, true);
    }

    /**
     * A started client of connectString. Without ensembleTracker the client
     * keeps to the servers it was given (Curator otherwise learns the others
     * from /zookeeper/config).
     */
    synchronized CuratorFramework client(String connectString, int sessionMs, boolean ensembleTracker)
            throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(50, 10, 1000))
                .ensembleTracker(ensembleTracker)
                .build();
        open.add(c);
        c.getConnectionStateListenable().addListener((client, state) -> {
            if (!state.isConnected()) {
                suspended.set(true);
            }
        });
        c.start();
        check(c.blockUntilConnected(15, TimeUnit.SECONDS), "client of %s did not connect", connectString);
        return c;
    }

    /**
     * Whether a client of this check has lost its connection (SUSPENDED or
     * LOST): a write in flight then has an unknown outcome, and a recipe
     * that retries it may apply it twice (as against ZooKeeper).
     */
    boolean connectionLost() {
        return suspended.get();
    }

    /** Closes every client the check opened. */
    synchronized void closeAll() {
        for (CuratorFramework c : open) {
            c.close();
        }
        open.clear();
        suspended.set(false);
    }

    /** Runs `giraffe cluster ARGS...` on the ensemble and returns its output. */
    String cluster(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(giraffeBin, "cluster"));
        cmd.addAll(List.of(args));
        cmd.addAll(List.of("--dir", clusterDir));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        check(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, "%s failed: %s", cmd, out);
        return out;
    }

    /** Fails the check with the message unless ok. */
    static void check(boolean ok, String format, Object... args) {
        if (!ok) {
            throw new AssertionError(String.format(format, args));
        }
    }

    /** Waits up to timeoutMs for cond, failing the check with the message if it never holds. */
    static void eventually(long timeoutMs, BooleanSupplier cond, String format, Object... args)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!cond.getAsBoolean()) {
            check(System.nanoTime() < deadline, format, args);
            Thread.sleep(20);
        }
    }

    /** Checks that cond holds throughout the next forMs. */
    static void holds(long forMs, BooleanSupplier cond, String format, Object... args)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(forMs);
        do {
            check(cond.getAsBoolean(), format, args);
            Thread.sleep(20);
        } while (System.nanoTime() < deadline);
    }
}
