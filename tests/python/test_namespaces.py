"""Namespaces through a real client: kazoo with a chroot on a namespace of
a classic-3 ensemble started with `giraffe cluster start --set
giraffe.namespace.1=strong --set giraffe.namespace.2=weak`."""

import json
import os
import shutil

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadArgumentsError

from conftest import CHROOT, GiraffeEnsemble

# The module starts its own ensemble, so it runs once, in the pass
# without GIRAFFE_ENSEMBLE or GIRAFFE_CHROOT.
pytestmark = pytest.mark.skipif(bool(os.environ.get("GIRAFFE_ENSEMBLE") or CHROOT),
                                reason="starts its own ensemble with namespaces declared")


@pytest.fixture(scope="module")
def ensemble():
    e = GiraffeEnsemble("classic-3", sets=["giraffe.namespace.1=strong", "giraffe.namespace.2=weak"])
    e.start()
    e.wait_serving()
    yield e
    e.stop()
    shutil.rmtree(e.dir, ignore_errors=True)


@pytest.fixture
def client_factory():
    clients = []

    def make(hosts):
        c = KazooClient(hosts=hosts, timeout=10)
        c.start()
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.stop()
        c.close()


def test_roots_on_every_server(ensemble, client_factory):
    stats = []
    for sid in range(1, ensemble.nodes + 1):
        c = client_factory(ensemble.client_addr(sid))
        stats.append((c.exists("/1"), c.exists("/2")))
        assert sorted(c.get_children("/zookeeper")) == ["config", "namespaces", "quota"]
    assert all(s == stats[0] for s in stats), stats
    root1, root2 = stats[0]
    assert root1 is not None and root2 is not None
    assert root2.ephemeralOwner == 0


def test_chroot_on_a_namespace(ensemble, client_factory):
    inside = client_factory(ensemble.hosts + "/2")
    plain = client_factory(ensemble.hosts)

    # The chrooted client sees a whole ZooKeeper under /2.
    inside.create("/app/cfg", b"v1", makepath=True)
    assert inside.get("/app/cfg")[0] == b"v1"
    assert "app" in inside.get_children("/")
    inside.set("/app/cfg", b"v2")
    lock = inside.Lock("/locks/l", "me")
    with lock:
        plain.sync("/2/locks/l")
        assert len(plain.get_children("/2/locks/l")) == 1

    # The same nodes under /2 for a client without the chroot.
    plain.sync("/2/app/cfg")
    data, stat = plain.get("/2/app/cfg")
    assert data == b"v2" and stat.version == 1

    inside.delete("/app", recursive=True)
    plain.sync("/2")
    assert plain.exists("/2/app") is None

    # The root of a namespace cannot be deleted, from inside or outside.
    with pytest.raises(BadArgumentsError):
        plain.delete("/2")
    with pytest.raises(BadArgumentsError):
        inside.delete("/")
    assert plain.exists("/2") is not None

    # The table is published, read-only.
    table, _ = plain.get("/zookeeper/namespaces")
    assert json.loads(table) == {"1": "strong", "2": "weak"}
    assert table == b'{"1":"strong","2":"weak"}'


def test_strong_and_weak_side_by_side(ensemble, client_factory):
    strong = client_factory(ensemble.hosts + "/1")
    weak = client_factory(ensemble.hosts + "/2")
    plain = client_factory(ensemble.hosts)
    strong.create("/x", b"s")
    weak.create("/x", b"w")
    for path, want in (("/1/x", b"s"), ("/2/x", b"w")):
        plain.sync(path)
        assert plain.get(path)[0] == want
    strong.delete("/x")
    weak.delete("/x")
