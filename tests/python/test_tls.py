"""kazoo over TLS: the secure client ports of an ensemble started with
`giraffe cluster start --tls`, which require a client certificate the
cluster's authority signed (ssl.clientAuth=need) and give its holder the
id x509:<subject>."""

import glob
import os
import shutil
import time

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.security import make_acl

from conftest import CHROOT, GiraffeEnsemble

# The module starts its own ensemble, so it runs once, in the pass
# without GIRAFFE_ENSEMBLE or GIRAFFE_CHROOT.
pytestmark = pytest.mark.skipif(bool(os.environ.get("GIRAFFE_ENSEMBLE") or CHROOT),
                                reason="starts its own TLS ensemble")

SUBJECT = "CN=client,O=Giraffe cluster"  # the launcher's client certificate


@pytest.fixture(scope="module")
def ensemble():
    e = GiraffeEnsemble("classic-3", tls=True)
    e.start()
    e.wait_serving()
    yield e
    e.stop()
    shutil.rmtree(e.dir, ignore_errors=True)


@pytest.fixture
def clients():
    made = []
    yield made
    for c in made:
        c.stop()
        c.close()


def tls_client(ensemble, clients, hosts=None, cert=True, timeout=10):
    ca, client_pem = ensemble.tls_files
    kw = dict(certfile=client_pem, keyfile=client_pem) if cert else {}
    c = KazooClient(hosts=hosts or ensemble.secure_hosts, use_ssl=True, ca=ca, timeout=10, **kw)
    clients.append(c)
    c.start(timeout=timeout)
    return c


def test_operations_over_tls(ensemble, clients):
    zk = tls_client(ensemble, clients)
    zk.ensure_path("/tls/app")
    zk.create("/tls/app/node", b"v1")
    assert zk.get("/tls/app/node")[0] == b"v1"
    events = []
    zk.get("/tls/app/node", watch=events.append)
    zk.set("/tls/app/node", b"v2")
    eph = zk.create("/tls/app/e-", b"", ephemeral=True, sequence=True)
    assert sorted(zk.get_children("/tls/app")) == sorted(["node", eph.rsplit("/", 1)[1]])
    tx = zk.transaction()
    tx.create("/tls/app/t1", b"")
    tx.set_data("/tls/app/node", b"v3")
    assert tx.commit() == ["/tls/app/t1", zk.exists("/tls/app/node")]
    deadline = time.time() + 10
    while not events and time.time() < deadline:
        time.sleep(0.02)
    assert [e.type for e in events] == ["CHANGED"]
    # Another server's secure port sees the same tree.
    other = tls_client(ensemble, clients, hosts=ensemble.secure_hosts.split(",")[-1])
    other.sync("/tls/app")
    assert other.get("/tls/app/node")[0] == b"v3"


def test_x509_acl(ensemble, clients):
    zk = tls_client(ensemble, clients)
    zk.create("/x509-only", b"secret", acl=[make_acl("x509", SUBJECT, all=True)])
    assert zk.get("/x509-only")[0] == b"secret"
    assert zk.get_acls("/x509-only")[0][0].id.id == SUBJECT
    plain = KazooClient(hosts=ensemble.hosts, timeout=10)
    clients.append(plain)
    plain.start()
    with pytest.raises(NoAuthError):
        plain.get("/x509-only")


def test_refused_without_certificate(ensemble, clients):
    with pytest.raises(KazooTimeoutError):
        tls_client(ensemble, clients, cert=False, timeout=3)
    logs = ""
    deadline = time.time() + 10
    while "refusing TLS client: handshake failed" not in logs and time.time() < deadline:
        logs = "".join(open(f).read() for f in glob.glob(os.path.join(ensemble.dir, "s*", "server.log")))
        time.sleep(0.05)
    assert "refusing TLS client: handshake failed" in logs
    assert "certificate" in logs.split("refusing TLS client: handshake failed", 1)[1].split("\n", 1)[0]
