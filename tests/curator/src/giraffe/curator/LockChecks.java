package giraffe.curator;

import static giraffe.curator.Env.check;
import static giraffe.curator.Env.eventually;
import static giraffe.curator.Env.holds;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.zookeeper.KeeperException;

/** Curator's locks and semaphore, each client a session of its own. */
final class LockChecks {
    private LockChecks() {}

    static List<Check> all() {
        return List.of(
                new Check("mutex-exclusion", LockChecks::mutexExclusion),
                new Check("mutex-reentrancy", LockChecks::mutexReentrancy),
                new Check("mutex-release-on-session-close", LockChecks::mutexSessionClose),
                new Check("rwlock", LockChecks::readWriteLock),
                new Check("rwlock-contention", LockChecks::readWriteContention),
                new Check("semaphore-v2", LockChecks::semaphore));
    }

    /** Four clients take one InterProcessMutex five times each: never two holders. */
    static void mutexExclusion(Env env, String root) throws Exception {
        int clients = 4, rounds = 5;
        AtomicInteger holders = new AtomicInteger(), taken = new AtomicInteger();
        List<CuratorFramework> cs = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            cs.add(env.client());
        }
        Check.parallel(clients, 60_000, i -> {
            InterProcessMutex m = new InterProcessMutex(cs.get(i), root + "/lock");
            for (int r = 0; r < rounds; r++) {
                check(m.acquire(20, TimeUnit.SECONDS), "client %d did not get the lock", i);
                try {
                    int h = holders.incrementAndGet();
                    check(h == 1, "%d holders at once", h);
                    Thread.sleep(5);
                    taken.incrementAndGet();
                } finally {
                    holders.decrementAndGet();
                    m.release();
                }
            }
        });
        check(taken.get() == clients * rounds, "%d acquisitions, want %d", taken.get(), clients * rounds);
        CuratorFramework c = cs.get(0);
        eventually(5000, () -> children(c, root + "/lock").isEmpty(),
                "lock nodes left after every release: %s", children(c, root + "/lock"));
    }

    /** A holder takes its mutex again; others wait until it has released it as often. */
    static void mutexReentrancy(Env env, String root) throws Exception {
        InterProcessMutex a = new InterProcessMutex(env.client(), root + "/lock");
        InterProcessMutex b = new InterProcessMutex(env.client(), root + "/lock");
        check(a.acquire(10, TimeUnit.SECONDS), "first acquire failed");
        check(a.acquire(1, TimeUnit.SECONDS), "reentrant acquire failed");
        check(a.isOwnedByCurrentThread(), "holder does not own its lock");
        Future<Boolean> other = Check.spawn(() -> {
            boolean got = b.acquire(20, TimeUnit.SECONDS);
            if (got) {
                b.release();
            }
            return got;
        });
        a.release();
        check(a.isOwnedByCurrentThread(), "released once of twice, the holder no longer owns the lock");
        holds(400, () -> !other.isDone(), "another client got the lock held once more");
        a.release();
        check(!a.isAcquiredInThisProcess(), "released twice of twice, the lock is still held");
        check(other.get(10, TimeUnit.SECONDS), "the waiter did not get the released lock");
    }

    /** A holder's session closes without releasing: the waiter gets the lock. */
    static void mutexSessionClose(Env env, String root) throws Exception {
        CuratorFramework holder = env.client();
        InterProcessMutex a = new InterProcessMutex(holder, root + "/lock");
        InterProcessMutex b = new InterProcessMutex(env.client(), root + "/lock");
        check(a.acquire(10, TimeUnit.SECONDS), "holder did not get the lock");
        Future<Boolean> waiter = Check.spawn(() -> {
            boolean got = b.acquire(20, TimeUnit.SECONDS);
            if (got) {
                b.release();
            }
            return got;
        });
        holds(400, () -> !waiter.isDone(), "waiter got a held lock");
        holder.close();
        check(waiter.get(10, TimeUnit.SECONDS), "waiter did not get the lock after the holder's session closed");
    }

    /**
     * Readers share InterProcessReadWriteLock, a writer excludes them, and a
     * writer that takes the read lock before releasing the write lock keeps
     * the writers out while readers come back (downgrade).
     */
    static void readWriteLock(Env env, String root) throws Exception {
        int readers = 3;
        List<InterProcessReadWriteLock> rs = new ArrayList<>();
        for (int i = 0; i < readers; i++) {
            rs.add(new InterProcessReadWriteLock(env.client(), root + "/rw"));
        }
        InterProcessReadWriteLock w = new InterProcessReadWriteLock(env.client(), root + "/rw");
        CountDownLatch allIn = new CountDownLatch(readers), out = new CountDownLatch(1);
        Future<?> readersDone = Check.spawn(() -> {
            Check.parallel(readers, 30_000, i -> {
                check(rs.get(i).readLock().acquire(10, TimeUnit.SECONDS), "reader %d did not get the read lock", i);
                allIn.countDown();
                check(allIn.await(10, TimeUnit.SECONDS), "readers did not hold the read lock together");
                out.await();
                rs.get(i).readLock().release();
            });
            return null;
        });
        check(allIn.await(15, TimeUnit.SECONDS), "the readers did not all hold the read lock at once");
        check(!w.writeLock().acquire(300, TimeUnit.MILLISECONDS), "writer got the lock while readers held it");

        // Curator's locks belong to the thread that acquired them, so one
        // thread takes the write lock, downgrades and releases.
        CountDownLatch writing = new CountDownLatch(1), downgrade = new CountDownLatch(1),
                downgraded = new CountDownLatch(1), done = new CountDownLatch(1);
        Future<?> writer = Check.spawn(() -> {
            check(w.writeLock().acquire(20, TimeUnit.SECONDS), "writer did not get the lock once the readers left");
            writing.countDown();
            downgrade.await();
            check(w.readLock().acquire(5, TimeUnit.SECONDS), "the writer could not take the read lock (downgrade)");
            w.writeLock().release();
            downgraded.countDown();
            done.await();
            w.readLock().release();
            return null;
        });
        holds(300, () -> writing.getCount() == 1, "writer got the lock while readers held it");
        out.countDown();
        readersDone.get(15, TimeUnit.SECONDS);
        check(writing.await(10, TimeUnit.SECONDS), "writer did not get the lock once the readers left");
        check(!rs.get(0).readLock().acquire(300, TimeUnit.MILLISECONDS), "reader got the lock while the writer held it");
        downgrade.countDown();
        check(downgraded.await(10, TimeUnit.SECONDS), "the writer did not downgrade");
        check(rs.get(1).readLock().acquire(10, TimeUnit.SECONDS), "reader could not share with the downgraded writer");
        InterProcessReadWriteLock w2 = new InterProcessReadWriteLock(env.client(), root + "/rw");
        check(!w2.writeLock().acquire(300, TimeUnit.MILLISECONDS), "a second writer got the lock beside readers");
        rs.get(1).readLock().release();
        done.countDown();
        writer.get(10, TimeUnit.SECONDS);
        check(w2.writeLock().acquire(10, TimeUnit.SECONDS), "the second writer did not get the lock once all left");
        w2.writeLock().release();
    }

    /** Four clients take read or write locks at random: a writer is always alone. */
    static void readWriteContention(Env env, String root) throws Exception {
        int clients = 4, rounds = 6;
        AtomicInteger readers = new AtomicInteger(), writers = new AtomicInteger(), maxReaders = new AtomicInteger();
        List<CuratorFramework> cs = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            cs.add(env.client());
        }
        Check.parallel(clients, 60_000, i -> {
            InterProcessReadWriteLock l = new InterProcessReadWriteLock(cs.get(i), root + "/rw");
            for (int r = 0; r < rounds; r++) {
                boolean write = (r + i) % 3 == 0;
                InterProcessMutex m = write ? l.writeLock() : l.readLock();
                check(m.acquire(20, TimeUnit.SECONDS), "client %d did not get the %s lock", i, write ? "write" : "read");
                try {
                    if (write) {
                        check(writers.incrementAndGet() == 1 && readers.get() == 0,
                                "writer beside %d writers and %d readers", writers.get() - 1, readers.get());
                    } else {
                        int n = readers.incrementAndGet();
                        maxReaders.accumulateAndGet(n, Math::max);
                        check(writers.get() == 0, "reader beside a writer");
                    }
                    Thread.sleep(ThreadLocalRandom.current().nextInt(2, 10));
                } finally {
                    (write ? writers : readers).decrementAndGet();
                    m.release();
                }
            }
        });
    }

    /** InterProcessSemaphoreV2 with two leases: never more than two holders, and a third waits. */
    static void semaphore(Env env, String root) throws Exception {
        int clients = 5, rounds = 4;
        AtomicInteger inUse = new AtomicInteger();
        List<CuratorFramework> cs = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            cs.add(env.client());
        }
        Check.parallel(clients, 60_000, i -> {
            InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(cs.get(i), root + "/sem", 2);
            for (int r = 0; r < rounds; r++) {
                Lease l = s.acquire(20, TimeUnit.SECONDS);
                check(l != null, "client %d got no lease", i);
                try {
                    int n = inUse.incrementAndGet();
                    check(n <= 2, "%d leases out of 2", n);
                    Thread.sleep(10);
                } finally {
                    inUse.decrementAndGet();
                    s.returnLease(l);
                }
            }
        });
        InterProcessSemaphoreV2 a = new InterProcessSemaphoreV2(cs.get(0), root + "/sem2", 2);
        InterProcessSemaphoreV2 b = new InterProcessSemaphoreV2(cs.get(1), root + "/sem2", 2);
        InterProcessSemaphoreV2 c = new InterProcessSemaphoreV2(cs.get(2), root + "/sem2", 2);
        Lease la = a.acquire(10, TimeUnit.SECONDS), lb = b.acquire(10, TimeUnit.SECONDS);
        check(la != null && lb != null, "two leases of two not granted");
        check(c.acquire(300, TimeUnit.MILLISECONDS) == null, "a third lease of two was granted");
        Future<Lease> waiter = Check.spawn(() -> c.acquire(20, TimeUnit.SECONDS));
        holds(300, () -> !waiter.isDone(), "a third lease of two was granted");
        a.returnLease(la);
        Lease lc = waiter.get(10, TimeUnit.SECONDS);
        check(lc != null, "the waiter got no lease once one was returned");
        eventually(10_000, () -> participantNodes(a).size() == 2, "participant nodes for two leases: %s",
                participantNodes(a));
        b.returnLease(lb);
        c.returnLease(lc);
    }

    private static Collection<String> participantNodes(InterProcessSemaphoreV2 s) {
        try {
            return s.getParticipantNodes();
        } catch (Exception e) {
            throw new AssertionError("getParticipantNodes: " + e);
        }
    }

    /** The children of path; none when it is gone (Curator makes a lock's parent a container). */
    static List<String> children(CuratorFramework c, String path) {
        try {
            return c.getChildren().forPath(path);
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        } catch (Exception e) {
            throw new AssertionError("getChildren " + path + ": " + e);
        }
    }
}
