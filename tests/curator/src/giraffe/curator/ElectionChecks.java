package giraffe.curator;

import static giraffe.curator.Env.check;
import static giraffe.curator.Env.eventually;
import static giraffe.curator.Env.holds;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;

/** Curator's leader election recipes: LeaderLatch and LeaderSelector. */
final class ElectionChecks {
    private ElectionChecks() {}

    static List<Check> all() {
        return List.of(
                new Check("leader-latch", ElectionChecks::leaderLatch),
                new Check("leader-selector", ElectionChecks::leaderSelector));
    }

    /**
     * Three LeaderLatch participants: exactly one leads and all name it;
     * when it closes its latch, and then when the next leader's session
     * closes, leadership moves to a live participant, never to two.
     */
    static void leaderLatch(Env env, String root) throws Exception {
        List<CuratorFramework> cs = new ArrayList<>();
        List<LeaderLatch> ls = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            cs.add(env.client());
            LeaderLatch l = new LeaderLatch(cs.get(i), root + "/latch", "p" + i);
            ls.add(l);
            l.start();
        }
        List<Integer> live = new ArrayList<>(List.of(0, 1, 2));
        int first = awaitOneLeader(ls, live);
        // Each participant reads the latch's nodes through its own server,
        // which may not yet have applied the others' creates.
        for (int i : live) {
            LeaderLatch l = ls.get(i);
            eventually(10_000, () -> leaderId(l).equals("p" + first) && participants(l) == 3,
                    "p%d names %s as leader of %d participants, not p%d of 3", i, leaderId(l), participants(l), first);
        }

        ls.get(first).close();
        live.remove(Integer.valueOf(first));
        int second = awaitOneLeader(ls, live);
        check(second != first, "leadership stayed with the closed latch");

        cs.get(second).close();
        live.remove(Integer.valueOf(second));
        int third = awaitOneLeader(ls, live);
        check(third == live.get(0), "the last participant p%d does not lead", live.get(0));
        LeaderLatch last = ls.get(third);
        eventually(10_000, () -> participants(last) == 1, "%d participants after two left", participants(last));
    }

    private static String leaderId(LeaderLatch l) {
        try {
            return l.getLeader().getId();
        } catch (Exception e) {
            throw new AssertionError("getLeader: " + e);
        }
    }

    private static int participants(LeaderLatch l) {
        try {
            return l.getParticipants().size();
        } catch (Exception e) {
            throw new AssertionError("getParticipants: " + e);
        }
    }

    /** Waits until exactly one of the live latches leads, checking that never two do; returns it. */
    private static int awaitOneLeader(List<LeaderLatch> ls, List<Integer> live) throws InterruptedException {
        AtomicInteger leader = new AtomicInteger(-1);
        eventually(15_000, () -> {
            int n = 0;
            for (int i : live) {
                if (ls.get(i).hasLeadership()) {
                    n++;
                    leader.set(i);
                }
            }
            check(n <= 1, "%d latches lead at once", n);
            return n == 1;
        }, "no leader among %s", live);
        return leader.get();
    }

    /**
     * Three LeaderSelector participants that requeue: one takes leadership
     * at a time; when the leader gives it up, and when it closes its
     * selector, another takes it.
     */
    static void leaderSelector(Env env, String root) throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicReference<String> violation = new AtomicReference<>();
        LinkedBlockingQueue<Integer> leaders = new LinkedBlockingQueue<>();
        Map<Integer, CountDownLatch> giveUp = new ConcurrentHashMap<>();
        List<LeaderSelector> ss = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int id = i;
            giveUp.put(id, new CountDownLatch(1));
            LeaderSelector s = new LeaderSelector(env.client(), root + "/sel", new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework client) throws Exception {
                    int n = inside.incrementAndGet();
                    try {
                        if (n != 1) {
                            violation.compareAndSet(null, n + " leaders at once");
                        }
                        leaders.add(id);
                        giveUp.get(id).await();
                        giveUp.put(id, new CountDownLatch(1));
                    } finally {
                        inside.decrementAndGet();
                    }
                }
            });
            s.setId("s" + i);
            s.autoRequeue();
            ss.add(s);
            s.start();
        }
        Integer first = leaders.poll(15, TimeUnit.SECONDS);
        check(first != null, "no selector took leadership");
        holds(200, () -> leaders.isEmpty(), "a second selector took leadership beside s%d", first);
        LeaderSelector s0 = ss.get(0);
        eventually(10_000, () -> selectorLeader(s0).equals("s" + first), "s0 names %s, not s%d", selectorLeader(s0), first);

        giveUp.get(first).countDown();
        Integer second = leaders.poll(15, TimeUnit.SECONDS);
        check(second != null, "nobody took leadership after s%d gave it up", first);
        check(!second.equals(first), "s%d took leadership again ahead of the queue", first);

        ss.get(second).close();
        Integer third = leaders.poll(15, TimeUnit.SECONDS);
        check(third != null, "nobody took leadership after s%d closed", second);
        check(!third.equals(second), "the closed selector s%d leads", second);
        check(violation.get() == null, "%s", violation.get());
        for (int i = 0; i < ss.size(); i++) {
            if (i != second) {
                ss.get(i).close();
            }
        }
    }

    private static String selectorLeader(LeaderSelector s) {
        try {
            return s.getLeader().getId();
        } catch (Exception e) {
            throw new AssertionError("getLeader: " + e);
        }
    }
}
