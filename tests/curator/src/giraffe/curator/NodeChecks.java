package giraffe.curator;

import static giraffe.curator.Env.check;
import static giraffe.curator.Env.eventually;
import static giraffe.curator.Env.holds;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.api.transaction.OperationType;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.OpResult;

/** Curator on znodes: CuratorCache, TTL and container nodes, transactions. */
final class NodeChecks {
    private NodeChecks() {}

    static List<Check> all() {
        return List.of(
                new Check("curator-cache", NodeChecks::curatorCache),
                new Check("ttl-node", NodeChecks::ttlNode),
                new Check("persistent-ttl-node", NodeChecks::persistentTtlNode),
                new Check("container-node", NodeChecks::containerNode),
                new Check("transaction", NodeChecks::transaction));
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String string(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    static boolean exists(CuratorFramework c, String path) {
        try {
            return c.checkExists().forPath(path) != null;
        } catch (Exception e) {
            throw new AssertionError("exists " + path + ": " + e);
        }
    }

    /**
     * A CuratorCache (one persistent recursive watch) on a subtree sees
     * another client's creates, changes and deletes four levels down.
     */
    static void curatorCache(Env env, String root) throws Exception {
        CuratorFramework watcher = env.client(), writer = env.client();
        String top = root + "/tree", deep = top + "/a/b/c/d";
        writer.create().creatingParentsIfNeeded().forPath(top, bytes("top"));
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch initialized = new CountDownLatch(1);
        CuratorCache cache = CuratorCache.build(watcher, top);
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(n -> events.add("created " + n.getPath() + " " + string(n.getData())))
                .forChanges((o, n) -> events.add("changed " + n.getPath() + " " + string(o.getData()) + "->"
                        + string(n.getData())))
                .forDeletes(o -> events.add("deleted " + o.getPath()))
                .forInitialized(initialized::countDown)
                .build());
        cache.start();
        check(initialized.await(10, TimeUnit.SECONDS), "the cache did not initialize");
        check(cache.get(top).map(d -> string(d.getData())).orElse("").equals("top"), "cache lacks %s", top);
        events.clear();

        writer.create().creatingParentsIfNeeded().forPath(deep, bytes("1"));
        eventually(10_000, () -> events.contains("created " + deep + " 1"), "no create of %s seen: %s", deep, events);
        for (String p : List.of(top + "/a", top + "/a/b", top + "/a/b/c")) {
            check(events.contains("created " + p + " "), "no create of %s seen: %s", p, events);
        }
        writer.setData().forPath(deep, bytes("2"));
        eventually(10_000, () -> events.contains("changed " + deep + " 1->2"), "no change of %s seen: %s", deep, events);
        for (int i = 0; i < 10; i++) {
            writer.setData().forPath(deep, bytes("v" + i));
        }
        eventually(10_000, () -> cache.get(deep).map(d -> string(d.getData())).orElse("").equals("v9"),
                "the cache holds %s for %s after ten changes, want v9", cache.get(deep).map(d -> string(d.getData())), deep);
        writer.delete().forPath(deep);
        eventually(10_000, () -> events.contains("deleted " + deep), "no delete of %s seen: %s", deep, events);
        check(cache.get(deep).isEmpty() && cache.get(top + "/a/b/c").isPresent(), "cache after the delete: %s",
                cache.stream().map(d -> d.getPath()).toList());
        writer.delete().deletingChildrenIfNeeded().forPath(top + "/a");
        eventually(10_000, () -> cache.size() == 1, "cache keeps %s after the subtree went",
                cache.stream().map(d -> d.getPath()).toList());
        cache.close();
    }

    /**
     * A PERSISTENT_WITH_TTL node lasts its TTL and goes once the TTL has
     * passed without a change; one with a child (both made in one
     * transaction) stays until the child is gone.
     */
    static void ttlNode(Env env, String root) throws Exception {
        CuratorFramework c = env.client();
        c.create().creatingParentsIfNeeded().forPath(root);
        String lone = root + "/lone", parent = root + "/parent";
        long ttlMs = 1000;
        long start = System.nanoTime();
        c.create().withTtl(ttlMs).withMode(CreateMode.PERSISTENT_WITH_TTL).forPath(lone, bytes("x"));
        boolean there = exists(c, lone);
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        check(there || elapsedMs >= ttlMs, "%s went %d ms after its create, before its TTL of %d ms", lone, elapsedMs, ttlMs);
        c.transaction().forOperations(
                c.transactionOp().create().withTtl(ttlMs).withMode(CreateMode.PERSISTENT_WITH_TTL).forPath(parent),
                c.transactionOp().create().forPath(parent + "/child"));
        eventually(8000, () -> !exists(c, lone), "%s outlived its TTL", lone);
        holds(500, () -> exists(c, parent), "%s went while it had a child", parent);
        c.delete().forPath(parent + "/child");
        eventually(8000, () -> !exists(c, parent), "%s outlived its TTL once its child was gone", parent);
    }

    /**
     * PersistentTtlNode (a container with a TTL child it touches) lasts
     * while it runs, past its TTL, and goes once it is closed.
     */
    static void persistentTtlNode(Env env, String root) throws Exception {
        CuratorFramework c = env.client(), other = env.client();
        String path = root + "/node";
        // Touched every half TTL: a server that answers within half a
        // second keeps it.
        PersistentTtlNode n = new PersistentTtlNode(c, path, 1000, bytes("alive"));
        n.start();
        check(n.waitForInitialCreate(10, TimeUnit.SECONDS), "the node was not created");
        eventually(5000, () -> exists(other, path), "another client does not see %s", path);
        holds(1500, () -> exists(other, path), "%s went while its owner touched it", path);
        check(string(other.getData().forPath(path)).equals("alive"), "the node lost its data");
        check(exists(other, path + "/" + PersistentTtlNode.DEFAULT_CHILD_NODE_NAME), "no TTL child under %s", path);
        n.close();
        eventually(8000, () -> !exists(other, path), "%s outlived its closed PersistentTtlNode", path);
    }

    /**
     * A CONTAINER node stays while it has never had a child and goes once
     * its last child is gone; Curator's creatingParentContainersIfNeeded
     * parents go the same way, from the bottom up.
     */
    static void containerNode(Env env, String root) throws Exception {
        CuratorFramework c = env.client();
        c.create().creatingParentsIfNeeded().forPath(root);
        String box = root + "/box";
        c.create().withMode(CreateMode.CONTAINER).forPath(box);
        holds(600, () -> exists(c, box), "a container that never had a child went");
        c.create().forPath(box + "/a");
        c.create().forPath(box + "/b");
        c.delete().forPath(box + "/a");
        holds(600, () -> exists(c, box), "a container with a child went");
        c.delete().forPath(box + "/b");
        eventually(5000, () -> !exists(c, box), "a container outlived its last child");

        String leaf = root + "/auto/x/y";
        c.create().creatingParentContainersIfNeeded().forPath(leaf);
        c.delete().forPath(leaf);
        eventually(8000, () -> !exists(c, root + "/auto"), "parent containers outlived their last child");
    }

    /** client.transaction(): all of its operations or none. */
    static void transaction(Env env, String root) throws Exception {
        CuratorFramework c = env.client();
        c.create().creatingParentsIfNeeded().forPath(root);
        String a = root + "/a", b = root + "/b", seq = root + "/s-";
        List<CuratorOp> ops = List.of(
                c.transactionOp().create().forPath(a, bytes("1")),
                c.transactionOp().create().forPath(b),
                c.transactionOp().create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(seq),
                c.transactionOp().setData().forPath(a, bytes("2")),
                c.transactionOp().check().withVersion(1).forPath(a),
                c.transactionOp().delete().forPath(b));
        List<CuratorTransactionResult> rs = c.transaction().forOperations(ops);
        check(rs.size() == 6, "%d results for 6 operations", rs.size());
        List<OperationType> types = rs.stream().map(CuratorTransactionResult::getType).toList();
        check(types.equals(List.of(OperationType.CREATE, OperationType.CREATE, OperationType.CREATE,
                OperationType.SET_DATA, OperationType.CHECK, OperationType.DELETE)), "result types %s", types);
        check(rs.get(2).getResultPath().matches(root + "/s-\\d{10}"), "sequential create named %s",
                rs.get(2).getResultPath());
        check(rs.get(3).getResultStat() != null && rs.get(3).getResultStat().getVersion() == 1,
                "setData's stat %s", rs.get(3).getResultStat());
        check(string(c.getData().forPath(a)).equals("2") && !exists(c, b), "the transaction was not applied");

        String c1 = root + "/c";
        try {
            c.transaction().forOperations(
                    c.transactionOp().create().forPath(c1),
                    c.transactionOp().setData().withVersion(7).forPath(a, bytes("3")),
                    c.transactionOp().delete().forPath(a));
            check(false, "a transaction with a stale version succeeded");
        } catch (KeeperException e) {
            check(e.code() == KeeperException.Code.BADVERSION, "failed with %s, want BADVERSION", e.code());
            List<OpResult> results = e.getResults();
            check(results != null && results.size() == 3, "results %s", results);
            int[] errs = results.stream().mapToInt(r -> ((OpResult.ErrorResult) r).getErr()).toArray();
            check(errs[0] == 0 && errs[1] == KeeperException.Code.BADVERSION.intValue()
                    && errs[2] == KeeperException.Code.RUNTIMEINCONSISTENCY.intValue(),
                    "error results %s", Arrays.toString(errs));
        }
        check(!exists(c, c1) && string(c.getData().forPath(a)).equals("2"), "a failed transaction left changes");
    }
}
