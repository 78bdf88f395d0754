"""kazoo's own recipes, unchanged, against a real giraffe server."""

import threading
import time

import pytest
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from conftest import WEAK

# Several cases read, with one session, what another just wrote, which a
# weak namespace shows only once applied (a sync first guarantees it).
pytestmark = pytest.mark.skipif(WEAK, reason="reads other sessions' writes without a sync, "
                                "which a weak namespace does not guarantee")


def wait_for(pred, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_lock_mutual_exclusion(zk_factory):
    clients = [zk_factory() for _ in range(5)]
    inside = []
    overlaps = []
    order = []

    def worker(i, c):
        lock = c.Lock("/r/lock", f"worker-{i}")
        for _ in range(5):
            with lock:
                inside.append(i)
                if len(inside) > 1:
                    overlaps.append(list(inside))
                order.append(i)
                time.sleep(0.005)
                inside.remove(i)

    threads = [threading.Thread(target=worker, args=(i, c)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not overlaps
    assert len(order) == 25


def test_lock_contenders_and_timeout(zk_factory):
    a, b = zk_factory(), zk_factory()
    la = a.Lock("/r/lock2", "a")
    lb = b.Lock("/r/lock2", "b")
    assert la.acquire()
    assert not lb.acquire(blocking=False)
    assert la.contenders() == ["a"]
    la.release()
    assert lb.acquire(timeout=5)
    lb.release()


def test_lock_released_when_session_ends(zk_factory):
    a, b = zk_factory(), zk_factory()
    assert a.Lock("/r/lock3", "a").acquire()
    lb = b.Lock("/r/lock3", "b")
    got = []
    t = threading.Thread(target=lambda: got.append(lb.acquire(timeout=10)))
    t.start()
    time.sleep(0.2)
    a.stop()
    t.join(15)
    assert got == [True]


def test_read_write_lock(zk_factory):
    r1, r2, w = zk_factory(), zk_factory(), zk_factory()
    rl1 = r1.ReadLock("/r/rw", "r1")
    rl2 = r2.ReadLock("/r/rw", "r2")
    wl = w.WriteLock("/r/rw", "w")
    assert rl1.acquire(timeout=5)
    assert rl2.acquire(timeout=5)  # readers share
    assert not wl.acquire(blocking=False)
    rl1.release()
    rl2.release()
    assert wl.acquire(timeout=5)
    assert not r1.ReadLock("/r/rw", "r1b").acquire(blocking=False)
    wl.release()


def test_semaphore(zk_factory):
    clients = [zk_factory() for _ in range(3)]
    sems = [c.Semaphore("/r/sem", f"s{i}", max_leases=2) for i, c in enumerate(clients)]
    assert sems[0].acquire(timeout=5)
    assert sems[1].acquire(timeout=5)
    assert not sems[2].acquire(blocking=False)
    sems[0].release()
    assert sems[2].acquire(timeout=5)
    sems[1].release()
    sems[2].release()


def test_election(zk_factory):
    clients = [zk_factory() for _ in range(3)]
    leaders = []
    stop = threading.Event()

    def run(i, c):
        e = c.Election("/r/election", f"c{i}")

        def lead():
            leaders.append(i)
            while not stop.is_set() and len(leaders) < 3:
                time.sleep(0.05)

        e.run(lead)

    threads = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    assert wait_for(lambda: len(leaders) >= 1)
    first = leaders[0]
    clients[first].stop()  # the leader's session ends; another takes over
    assert wait_for(lambda: len(leaders) >= 2)
    assert leaders[1] != first
    stop.set()


def test_barrier(zk_factory):
    a, b = zk_factory(), zk_factory()
    barrier = a.Barrier("/r/barrier")
    barrier.create()
    passed = []
    t = threading.Thread(target=lambda: passed.append(b.Barrier("/r/barrier").wait(10)))
    t.start()
    time.sleep(0.2)
    assert passed == []
    barrier.remove()
    t.join(10)
    assert passed == [True]


def test_double_barrier(zk_factory):
    clients = [zk_factory() for _ in range(3)]
    entered, left = [], []

    def run(i, c):
        db = c.DoubleBarrier("/r/dbarrier", 3, identifier=f"p{i}")
        db.enter()
        entered.append(i)
        db.leave()
        left.append(i)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert sorted(entered) == [0, 1, 2] and sorted(left) == [0, 1, 2]


def test_queue(zk_factory):
    p, c = zk_factory(), zk_factory()
    q = p.Queue("/r/queue")
    for item in [b"one", b"two", b"three"]:
        q.put(item)
    q.put(b"urgent", priority=1)
    cq = c.Queue("/r/queue")
    assert len(cq) == 4
    assert [cq.get() for _ in range(4)] == [b"urgent", b"one", b"two", b"three"]
    assert cq.get() is None


def test_locking_queue(zk_factory):
    p, c1, c2 = zk_factory(), zk_factory(), zk_factory()
    q = p.LockingQueue("/r/lqueue")
    q.put(b"job1")
    q.put(b"job2")
    q1 = c1.LockingQueue("/r/lqueue")
    q2 = c2.LockingQueue("/r/lqueue")
    assert q1.get(timeout=5) == b"job1"
    assert q2.get(timeout=5) == b"job2"  # job1 is held by c1
    assert q1.consume()
    assert q2.consume()
    p.sync("/r/lqueue")  # in an ensemble, p may be on a server that lags
    assert len(q) == 0


def test_counter(zk_factory):
    clients = [zk_factory() for _ in range(4)]

    def bump(c):
        counter = c.Counter("/r/counter")
        for _ in range(25):
            counter += 1

    threads = [threading.Thread(target=bump, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert clients[0].Counter("/r/counter").value == 100


def test_party(zk_factory):
    a, b = zk_factory(), zk_factory()
    pa = a.Party("/r/party", "alice")
    pb = b.Party("/r/party", "bob")
    pa.join()
    pb.join()
    assert sorted(pa) == ["alice", "bob"]
    assert len(pa) == 2
    pb.leave()
    assert list(pa) == ["alice"]
    sp = a.ShallowParty("/r/sparty", "x")
    sp.join()
    assert list(sp) == ["x"]


def test_set_partitioner(zk_factory):
    a, b = zk_factory(), zk_factory()
    items = [f"item{i}" for i in range(10)]
    pa = a.SetPartitioner("/r/partition", set=items, time_boundary=0.2, identifier="a")
    pb = b.SetPartitioner("/r/partition", set=items, time_boundary=0.2, identifier="b")
    deadline = time.time() + 20
    while time.time() < deadline and not (pa.acquired and pb.acquired):
        for p in (pa, pb):
            if p.release:
                p.release_set()
            elif p.allocating:
                p.wait_for_acquire(0.5)
        time.sleep(0.05)
    assert pa.acquired and pb.acquired
    got_a, got_b = set(pa), set(pb)
    assert got_a | got_b == set(items) and not (got_a & got_b)
    pa.finish()
    pb.finish()


def test_data_watch(zk_factory):
    a, b = zk_factory(), zk_factory()
    a.ensure_path("/r/dw")
    seen = []
    DataWatch(a, "/r/dw", func=lambda data, stat: seen.append(data))
    for v in [b"1", b"2", b"3"]:
        b.set("/r/dw", v)
        assert wait_for(lambda: seen and seen[-1] == v)


def test_children_watch(zk_factory):
    a, b = zk_factory(), zk_factory()
    a.ensure_path("/r/cw")
    seen = []
    ChildrenWatch(a, "/r/cw", func=lambda children: seen.append(sorted(children)))
    b.create("/r/cw/x", b"")
    assert wait_for(lambda: seen and seen[-1] == ["x"])
    b.create("/r/cw/y", b"")
    assert wait_for(lambda: seen and seen[-1] == ["x", "y"])
    b.delete("/r/cw/x")
    assert wait_for(lambda: seen and seen[-1] == ["y"])


def test_tree_cache(zk_factory):
    from kazoo.recipe.cache import TreeCache, TreeEvent

    a, b = zk_factory(), zk_factory()
    a.ensure_path("/r/tc")
    b.create("/r/tc/a", b"1")
    cache = TreeCache(a, "/r/tc")
    events = []
    cache.listen(lambda ev: events.append(ev))
    cache.start()
    assert wait_for(lambda: any(e.event_type == TreeEvent.INITIALIZED for e in events))
    b.create("/r/tc/a/b", b"2")
    b.set("/r/tc/a", b"3")
    assert wait_for(lambda: cache.get_data("/r/tc/a/b") is not None and cache.get_data("/r/tc/a").data == b"3")
    assert cache.get_children("/r/tc") == frozenset(["a"])
    cache.close()
