package giraffe.curator;

import static giraffe.curator.Env.check;
import static giraffe.curator.Env.eventually;
import static giraffe.curator.Env.holds;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;

/** Checks that need an ensemble: Curator's ensemble tracking, and sessions lost with their server. */
final class EnsembleChecks {
    private EnsembleChecks() {}

    static List<Check> all() {
        return List.of(
                new Check("ensemble-tracker", EnsembleChecks::ensembleTracker),
                // Last: it kills a server.
                new Check("lock-and-leadership-after-server-kill", EnsembleChecks::serverKill));
    }

    /**
     * A client given one server learns every server from /zookeeper/config
     * (Curator's EnsembleTracker), and its config reads as ZooKeeper's.
     */
    static void ensembleTracker(Env env, String root) throws Exception {
        CuratorFramework c = env.client(env.servers.get(0), Env.SESSION_MS, true);
        Set<String> want = new TreeSet<>(env.servers);
        eventually(10_000, () -> hosts(c.getZookeeperClient().getCurrentConnectionString()).equals(want),
                "the client's servers are %s, want %s", c.getZookeeperClient().getCurrentConnectionString(), want);
        String config = new String(c.getConfig().forEnsemble());
        Matcher m = Pattern.compile("(?m)^server\\.(\\d+)=").matcher(config);
        int n = 0;
        while (m.find()) {
            n++;
        }
        check(n == env.servers.size(), "/zookeeper/config lists %d servers, want %d:\n%s", n, env.servers.size(), config);
    }

    private static Set<String> hosts(String connectString) {
        Set<String> s = new TreeSet<>();
        for (String h : connectString.split(",")) {
            s.add(h.trim().replace("localhost", "127.0.0.1"));
        }
        return s;
    }

    /**
     * A client holding an InterProcessMutex and a LeaderLatch loses its
     * server (killed) and so its session: it sees SUSPENDED, then LOST; a
     * waiter on another server gets the lock and the leadership, never
     * before the holder was SUSPENDED.
     */
    static void serverKill(Env env, String root) throws Exception {
        int victim = followerId(env);
        String victimAddr = env.servers.get(victim - 1);
        List<String> rest = new ArrayList<>(env.servers);
        rest.remove(victimAddr);
        // The holder keeps to its server, so it cannot move its session away.
        CuratorFramework holder = env.client(victimAddr, 4000, false);
        CuratorFramework waiter = env.client(String.join(",", rest), 4000, false);
        ConcurrentHashMap<ConnectionState, Long> states = new ConcurrentHashMap<>();
        holder.getConnectionStateListenable().addListener((c, s) -> states.putIfAbsent(s, System.nanoTime()));

        InterProcessMutex held = new InterProcessMutex(holder, root + "/lock");
        check(held.acquire(10, TimeUnit.SECONDS), "holder did not get the lock");
        LeaderLatch leading = new LeaderLatch(holder, root + "/latch", "holder");
        leading.start();
        check(leading.await(10, TimeUnit.SECONDS), "holder did not get leadership");
        LeaderLatch next = new LeaderLatch(waiter, root + "/latch", "waiter");
        next.start();
        InterProcessMutex wanted = new InterProcessMutex(waiter, root + "/lock");
        Future<Long> got = Check.spawn(() -> {
            if (!wanted.acquire(30, TimeUnit.SECONDS)) {
                return null;
            }
            long at = System.nanoTime();
            wanted.release();
            return at;
        });
        holds(400, () -> !got.isDone() && !next.hasLeadership(), "the waiter got a held lock or leadership");

        env.cluster("kill", String.valueOf(victim));
        Long acquired = got.get(20, TimeUnit.SECONDS);
        check(acquired != null, "the waiter did not get the lock after the holder's server was killed");
        check(next.await(10, TimeUnit.SECONDS), "the waiter did not get leadership after the holder's server was killed");
        Long suspended = states.get(ConnectionState.SUSPENDED);
        check(suspended != null && suspended < acquired, "the holder was not SUSPENDED before the waiter got the lock: %s",
                states.keySet());
        eventually(15_000, () -> states.containsKey(ConnectionState.LOST), "the holder never saw LOST: %s", states.keySet());
        check(!leading.hasLeadership(), "the holder still thinks it leads");
        next.close();
    }

    /**
     * The id of a serving server that is not the global leader, from
     * `giraffe cluster status --json` (which may show none for a moment,
     * while the servers elect a leader).
     */
    private static int followerId(Env env) throws Exception {
        String out = "";
        for (long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20); System.nanoTime() < deadline; ) {
            out = env.cluster("status", "--json").replaceAll("\\s", "");
            Matcher row = Pattern.compile("\\{[^{}]*\\}").matcher(out);
            while (row.find()) {
                String r = row.group();
                Matcher id = Pattern.compile("\"id\":(\\d+)").matcher(r);
                if (id.find() && r.contains("\"alive\":true") && r.contains("\"serving\":true")
                        && !r.contains("\"role\":\"leader\"")) {
                    return Integer.parseInt(id.group(1));
                }
            }
            Thread.sleep(100);
        }
        throw new AssertionError("no serving follower in cluster status: " + out);
    }
}
