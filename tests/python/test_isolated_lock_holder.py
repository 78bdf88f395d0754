"""A kazoo Lock holder whose server is cut off from the ensemble.

ZooKeeper's contract, which lock recipes rely on: a client that may have
lost its session sees its connection leave CONNECTED (kazoo: SUSPENDED,
then LOST) before anyone else can take its ephemeral lock node. Here the
holder A is connected only to server X; X is isolated from every other
server (the transport's fault injection); B, connected to the other
servers, waits for the lock. X must stop serving, and so disconnect A,
before the ensemble expires A's session and B acquires. After the heal,
A learns that its session is gone and no acknowledged write is lost.

Runs with ensembles of the shape GIRAFFE_ENSEMBLE names (make test-python
runs classic-3 and forest-9-3-3), one per case, with X a follower, the
leader and, in the forest, a group coordinator.
"""

import os
import shutil
import threading
import time
import uuid

import pytest
from conftest import CHROOT, GiraffeEnsemble
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError

SHAPE = os.environ.get("GIRAFFE_ENSEMBLE")
pytestmark = [pytest.mark.skipif(not SHAPE, reason="needs an ensemble (GIRAFFE_ENSEMBLE)"),
              pytest.mark.skipif(bool(CHROOT), reason="starts its own ensembles, without namespaces")]

# Short sessions keep the test to seconds: A's server must stop serving
# within a third of A's timeout, and B acquires only once the ensemble has
# expired A's session.
HOLDER_TIMEOUT = 2.0
RETRY = dict(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5)

ROLES = {
    "classic-3": ["acceptor", "leader"],
    "forest-9-3-3": ["acceptor", "coordinator", "leader"],
}


@pytest.fixture
def ensemble():
    """A fresh ensemble for each case: a server that was cut off disturbs
    the others for a while after the heal (it campaigned meanwhile)."""
    e = GiraffeEnsemble(SHAPE)
    e.start()
    yield e
    e.stop()
    shutil.rmtree(e.dir, ignore_errors=True)


def acknowledged_create(client, path, data):
    """Creates path, retrying across lost connections (as ZooKeeper clients
    must: the outcome of a request in flight is unknown), and returns path
    if a create was acknowledged, None if a lost attempt turned out to have
    been applied."""
    try:
        return client.retry(client.create, path, data, makepath=True)
    except NodeExistsError:
        return None


def wait_connected(client, timeout=10):
    deadline = time.monotonic() + timeout
    while client.state != KazooState.CONNECTED:
        assert time.monotonic() < deadline, f"client not CONNECTED within {timeout}s"
        time.sleep(0.02)


@pytest.mark.parametrize("role", ROLES.get(SHAPE, []))
def test_isolated_lock_holder_is_disconnected_before_another_acquires(ensemble, role):
    server = ensemble
    rows = server.wait_serving()
    x = next(r["id"] for r in rows if r["role"] == role)
    others = ",".join(server.client_addr(r["id"]) for r in rows if r["id"] != x)
    name = f"/isolated-{role}-{uuid.uuid4().hex[:8]}"

    events = []  # (monotonic time, state) of A's connection, in order
    events_mu = threading.Lock()

    def record(state):
        with events_mu:
            events.append((time.monotonic(), state))

    a = KazooClient(hosts=server.client_addr(x), timeout=HOLDER_TIMEOUT, connection_retry=RETRY)
    a.add_listener(record)
    a.start(10)
    b = KazooClient(hosts=others, timeout=10, connection_retry=RETRY)
    b.start(10)
    try:
        acked = []
        for i in range(5):
            acked.append(acknowledged_create(a, f"{name}/data/a{i}", b"a"))
            acked.append(acknowledged_create(b, f"{name}/data/b{i}", b"b"))
        lock_a = a.Lock(f"{name}/lock", "A")
        assert lock_a.acquire(timeout=10)
        lock_b = b.Lock(f"{name}/lock", "B")
        wait_connected(a)

        server.fault(x, "isolate")
        cut = time.monotonic()
        try:
            assert lock_b.acquire(timeout=30), "B never acquired the lock"
            acquired = time.monotonic()
            # The ensemble takes writes while X is cut off.
            for i in range(5):
                acked.append(acknowledged_create(b, f"{name}/data/c{i}", b"c"))
        finally:
            server.fault(x, "heal")

        with events_mu:
            left = [(t, st) for t, st in events if t > cut and st != KazooState.CONNECTED]
        assert left, f"A stayed CONNECTED while B took the lock ({acquired - cut:.2f}s after the cut)"
        t_left, state = left[0]
        print(f"{SHAPE} {role} {x}: A {state} {t_left - cut:.3f}s after the cut, B acquired {acquired - cut:.3f}s")
        assert t_left < acquired, (
            f"A left CONNECTED ({state}) {t_left - cut:.2f}s after the cut, "
            f"B acquired {acquired - cut:.2f}s after it")

        # Healed, X tells A that its session expired (kazoo then starts a
        # new one, so the state itself may already be CONNECTED again).
        deadline = time.monotonic() + 20
        while True:
            with events_mu:
                if any(st == KazooState.LOST for t, st in events if t > cut):
                    break
            assert time.monotonic() < deadline, f"A never learned that its session expired: {events}"
            time.sleep(0.05)

        # No acknowledged write is lost, read through X and through the rest.
        for hosts in (server.client_addr(x), others):
            c = KazooClient(hosts=hosts, timeout=10, connection_retry=RETRY)
            c.start(10)
            try:
                c.retry(c.sync, f"{name}/data")
                have = set(c.retry(c.get_children, f"{name}/data"))
            finally:
                c.stop()
                c.close()
            missing = [p for p in acked if p and p.rsplit("/", 1)[1] not in have]
            assert not missing, f"acknowledged writes missing through {hosts}: {missing}"
        lock_b.release()
    finally:
        for c in (a, b):
            c.stop()
            c.close()
