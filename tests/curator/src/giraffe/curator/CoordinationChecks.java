package giraffe.curator;

import static giraffe.curator.Env.check;
import static giraffe.curator.Env.eventually;
import static giraffe.curator.Env.holds;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

/** Curator's barriers, queues and counters. */
final class CoordinationChecks {
    private CoordinationChecks() {}

    static List<Check> all() {
        return List.of(
                new Check("barrier", CoordinationChecks::barrier),
                new Check("double-barrier", CoordinationChecks::doubleBarrier),
                new Check("queue-in-order", CoordinationChecks::queueInOrder),
                new Check("queue-exactly-once", CoordinationChecks::queueExactlyOnce),
                new Check("shared-count", CoordinationChecks::sharedCount),
                new Check("atomic-long", CoordinationChecks::atomicLong));
    }

    /** Three clients wait on a DistributedBarrier until a fourth removes it. */
    static void barrier(Env env, String root) throws Exception {
        String path = root + "/barrier";
        DistributedBarrier owner = new DistributedBarrier(env.client(), path);
        owner.setBarrier();
        AtomicInteger passed = new AtomicInteger();
        List<CuratorFramework> cs = List.of(env.client(), env.client(), env.client());
        Future<?> waiters = Check.spawn(() -> {
            Check.parallel(3, 30_000, i -> {
                check(new DistributedBarrier(cs.get(i), path).waitOnBarrier(20, TimeUnit.SECONDS),
                        "waiter %d timed out", i);
                passed.incrementAndGet();
            });
            return null;
        });
        holds(500, () -> passed.get() == 0, "a waiter passed a set barrier");
        owner.removeBarrier();
        waiters.get(10, TimeUnit.SECONDS);
        check(passed.get() == 3, "%d of 3 waiters passed the removed barrier", passed.get());
    }

    /** A DistributedDoubleBarrier of three: nobody enters before all three, nobody leaves before all. */
    static void doubleBarrier(Env env, String root) throws Exception {
        String path = root + "/double";
        List<CuratorFramework> cs = List.of(env.client(), env.client(), env.client());
        AtomicInteger entered = new AtomicInteger(), left = new AtomicInteger();
        List<DistributedDoubleBarrier> bs = new ArrayList<>();
        for (CuratorFramework c : cs) {
            bs.add(new DistributedDoubleBarrier(c, path, 3));
        }
        Future<?> early = Check.spawn(() -> {
            Check.parallel(2, 30_000, i -> {
                check(bs.get(i).enter(20, TimeUnit.SECONDS), "member %d did not enter", i);
                entered.incrementAndGet();
                check(bs.get(i).leave(20, TimeUnit.SECONDS), "member %d did not leave", i);
                left.incrementAndGet();
            });
            return null;
        });
        // The third comes once the first two wait in enter. (A member that
        // finds all three there returns from enter at once, and the
        // notification of the "ready" node it asked for then wakes its
        // leave, which Curator 5.9 takes for the barrier's end when one
        // other member is left: the first two must not be such members.)
        CuratorFramework observer = cs.get(2);
        eventually(10_000, () -> LockChecks.children(observer, path).size() == 2, "the first two members' nodes: %s",
                LockChecks.children(observer, path));
        holds(500, () -> entered.get() == 0, "a member entered with two of three there");
        check(bs.get(2).enter(10, TimeUnit.SECONDS), "the third member did not enter");
        eventually(10_000, () -> entered.get() == 2, "%d of 2 early members entered after the third came", entered.get());
        holds(500, () -> left.get() == 0, "a member left while the third was still in");
        check(bs.get(2).leave(10, TimeUnit.SECONDS), "the third member did not leave");
        early.get(10, TimeUnit.SECONDS);
        check(left.get() == 2, "%d of 2 early members left", left.get());
    }

    /** A DistributedQueue with one producer and one consumer: every item once, in order. */
    static void queueInOrder(Env env, String root) throws Exception {
        String path = root + "/queue";
        int items = 30;
        DistributedQueue<String> producer = queue(env.client(), path, null);
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        DistributedQueue<String> consumer = queue(env.client(), path, got::add);
        List<String> want = new ArrayList<>();
        for (int i = 0; i < items; i++) {
            want.add("item-" + i);
            producer.put("item-" + i);
        }
        eventually(20_000, () -> got.size() >= items, "%d of %d items consumed", got.size(), items);
        Thread.sleep(200);
        check(got.equals(want), "consumed %s, want %s", got, want);
        producer.close();
        consumer.close();
    }

    /** Two producers and three consumers on one DistributedQueue: every item consumed exactly once. */
    static void queueExactlyOnce(Env env, String root) throws Exception {
        String path = root + "/queue";
        int perProducer = 20;
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        List<DistributedQueue<String>> consumers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            consumers.add(queue(env.client(), path, got::add));
        }
        List<CuratorFramework> ps = List.of(env.client(), env.client());
        Check.parallel(2, 30_000, p -> {
            DistributedQueue<String> q = queue(ps.get(p), path, null);
            for (int i = 0; i < perProducer; i++) {
                q.put("p" + p + "-" + i);
            }
            q.close();
        });
        int total = 2 * perProducer;
        eventually(20_000, () -> got.size() >= total, "%d of %d items consumed", got.size(), total);
        Thread.sleep(300);
        Set<String> distinct = new HashSet<>(got);
        check(got.size() == total && distinct.size() == total, "consumed %d items, %d distinct, want %d: %s",
                got.size(), distinct.size(), total, got);
        for (DistributedQueue<String> q : consumers) {
            q.close();
        }
    }

    /** A started queue that hands items to sink (a producer only when sink is null). */
    private static DistributedQueue<String> queue(CuratorFramework c, String path, Consumer<String> sink)
            throws Exception {
        QueueConsumer<String> consumer = sink == null ? null : new QueueConsumer<>() {
            @Override
            public void consumeMessage(String message) {
                sink.accept(message);
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState newState) {}
        };
        QueueSerializer<String> ser = new QueueSerializer<>() {
            @Override
            public byte[] serialize(String item) {
                return item.getBytes(StandardCharsets.UTF_8);
            }

            @Override
            public String deserialize(byte[] bytes) {
                return new String(bytes, StandardCharsets.UTF_8);
            }
        };
        DistributedQueue<String> q = QueueBuilder.builder(c, consumer, ser, path).putInBackground(false).buildQueue();
        q.start();
        return q;
    }

    /** Four clients increment a SharedCount by compare-and-set, 25 times each: no increment is lost. */
    static void sharedCount(Env env, String root) throws Exception {
        String path = root + "/count";
        int clients = 4, each = 25;
        List<SharedCount> counts = new ArrayList<>();
        AtomicInteger seen = new AtomicInteger();
        for (int i = 0; i < clients; i++) {
            SharedCount sc = new SharedCount(env.client(), path, 0);
            sc.start();
            counts.add(sc);
        }
        counts.get(0).addListener(new SharedCountListener() {
            @Override
            public void countHasChanged(SharedCountReader r, int n) {
                seen.accumulateAndGet(n, Math::max);
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState s) {}
        });
        AtomicInteger failed = new AtomicInteger();
        Check.parallel(clients, 60_000, i -> {
            SharedCount sc = counts.get(i);
            for (int k = 0; k < each; k++) {
                while (true) {
                    VersionedValue<Integer> v = sc.getVersionedValue();
                    if (sc.trySetCount(v, v.getValue() + 1)) {
                        break;
                    }
                    failed.incrementAndGet();
                }
            }
        });
        int want = clients * each;
        // A failed compare-and-set applied only if its connection was lost
        // under it (Curator retried it and saw BADVERSION).
        int most = env.connectionLost() ? want + failed.get() : want;
        SharedCount first = counts.get(0);
        eventually(10_000, () -> first.getCount() >= want && first.getCount() <= most
                        && counts.stream().allMatch(sc -> sc.getCount() == first.getCount()),
                "clients see %s, want %d (at most %d)", counts.stream().map(SharedCount::getCount).toList(), want, most);
        eventually(10_000, () -> seen.get() == first.getCount(), "the listener saw %d of %d", seen.get(), first.getCount());
        for (SharedCount sc : counts) {
            sc.close();
        }
    }

    /**
     * Four clients add to one DistributedAtomicLong, two optimistically and
     * two promoted to a lock when optimism fails: no increment is lost.
     */
    static void atomicLong(Env env, String root) throws Exception {
        String path = root + "/long";
        int clients = 4, each = 25;
        AtomicInteger failed = new AtomicInteger();
        List<CuratorFramework> cs = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            cs.add(env.client());
        }
        Check.parallel(clients, 60_000, i -> {
            DistributedAtomicLong n = i < 2
                    ? new DistributedAtomicLong(cs.get(i), path, new RetryNTimes(3, 5))
                    : new DistributedAtomicLong(cs.get(i), path, new RetryNTimes(3, 5),
                            PromotedToLock.builder().lockPath(root + "/lock").timeout(20, TimeUnit.SECONDS)
                                    .retryPolicy(new RetryNTimes(3, 5)).build());
            for (int k = 0; k < each; k++) {
                AtomicValue<Long> v;
                while (!(v = n.increment()).succeeded()) {
                    failed.incrementAndGet();
                }
                check(v.postValue() == v.preValue() + 1, "increment from %d gave %d", v.preValue(), v.postValue());
            }
        });
        long want = clients * each;
        // A failed increment applied only if its connection was lost under
        // it (Curator retried its setData and saw BADVERSION).
        long most = env.connectionLost() ? want + failed.get() : want;
        DistributedAtomicLong n = new DistributedAtomicLong(cs.get(0), path, new RetryNTimes(3, 5));
        eventually(10_000, () -> value(n) >= want && value(n) <= most, "counter is %d, want %d (at most %d)",
                value(n), want, most);
    }

    private static long value(DistributedAtomicLong n) {
        try {
            AtomicValue<Long> v = n.get();
            check(v.succeeded(), "reading the counter failed");
            return v.postValue();
        } catch (Exception e) {
            throw new AssertionError("get: " + e);
        }
    }
}
