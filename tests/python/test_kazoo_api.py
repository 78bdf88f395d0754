"""kazoo against a real giraffe server: every client call kazoo 2.11 has,
node kinds, error paths, watches, ACL schemes, session expiry and reconnect.
kazoo 2.11 (the newest release) has no persistent watches and no
removeWatches; those are covered by the Go tests and the zkCli script."""

import os
import threading
import time
from collections import namedtuple

import pytest
from kazoo.exceptions import (
    BadArgumentsError,
    BadVersionError,
    NoAuthError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    InvalidACLError,
    SessionExpiredError,
)
from kazoo.protocol.states import EventType, KazooState
from kazoo.security import ACL, Id, make_digest_acl, make_acl, OPEN_ACL_UNSAFE
from kazoo.client import KazooClient, _prefix_root
from kazoo.protocol.serialization import int_struct, long_struct, read_string, write_buffer, write_string

from conftest import CHROOT, settle


def wait_for(pred, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_create_get_set_delete(zk):
    zk.ensure_path("/t/basic")
    path = zk.create("/t/basic/n", b"hello")
    assert path == "/t/basic/n"
    data, stat = zk.get(path)
    assert data == b"hello"
    assert stat.version == 0 and stat.dataLength == 5 and stat.numChildren == 0
    assert stat.czxid == stat.mzxid and stat.ephemeralOwner == 0
    stat2 = zk.set(path, b"world")
    assert stat2.version == 1 and stat2.mzxid > stat.mzxid and stat2.czxid == stat.czxid
    with pytest.raises(BadVersionError):
        zk.set(path, b"x", version=0)
    with pytest.raises(BadVersionError):
        zk.delete(path, version=5)
    zk.delete(path, version=1)
    assert zk.exists(path) is None
    with pytest.raises(NoNodeError):
        zk.get(path)
    with pytest.raises(NoNodeError):
        zk.delete(path)


def test_create_errors(zk):
    zk.ensure_path("/t/errs")
    with pytest.raises(NoNodeError):
        zk.create("/t/errs/missing/child", b"")
    zk.create("/t/errs/a", b"")
    with pytest.raises(NodeExistsError):
        zk.create("/t/errs/a", b"")
    zk.create("/t/errs/a/b", b"")
    with pytest.raises(NotEmptyError):
        zk.delete("/t/errs/a")
    zk.delete("/t/errs/a", recursive=True)
    assert zk.exists("/t/errs/a") is None


def test_stat_parent_fields(zk):
    zk.ensure_path("/t/parent")
    _, before = zk.get("/t/parent")
    zk.create("/t/parent/c1", b"")
    _, after = zk.get("/t/parent")
    assert after.cversion == before.cversion + 1
    assert after.numChildren == before.numChildren + 1
    assert after.pzxid > before.pzxid
    assert after.version == before.version  # children do not bump data version
    zk.delete("/t/parent/c1")
    _, after_del = zk.get("/t/parent")
    assert after_del.cversion == after.cversion + 1
    assert after_del.numChildren == before.numChildren


def test_sequential_nodes(zk):
    zk.ensure_path("/t/seq")
    a = zk.create("/t/seq/n-", b"", sequence=True)
    b = zk.create("/t/seq/n-", b"", sequence=True)
    assert a.startswith("/t/seq/n-") and len(a) == len("/t/seq/n-") + 10
    assert int(b[-10:]) == int(a[-10:]) + 1
    zk.create("/t/seq/other", b"")
    c = zk.create("/t/seq/n-", b"", sequence=True)
    assert int(c[-10:]) == int(b[-10:]) + 2  # the suffix is the parent's cversion


def test_ephemeral_nodes(zk, zk_factory):
    other = zk_factory()
    zk.ensure_path("/t/eph")
    p = other.create("/t/eph/e", b"", ephemeral=True)
    zk.sync(p)  # in an ensemble, zk may be on another server, which may lag
    _, stat = zk.get(p)
    assert stat.ephemeralOwner == other.client_id[0]
    with pytest.raises(NoChildrenForEphemeralsError):
        other.create("/t/eph/e/child", b"")
    other.stop()
    other.close()
    assert wait_for(lambda: zk.exists(p) is None)


class _CreateKind(namedtuple("CreateKind", "path data acl flags ttl opcode")):
    """A create request kazoo 2.11 cannot send itself: createContainer (19)
    and createTTL (21), sent on kazoo's own connection."""

    def serialize(self):
        b = bytearray()
        b.extend(write_string(self.path))
        b.extend(write_buffer(self.data))
        b.extend(int_struct.pack(len(self.acl)))
        for acl in self.acl:
            b.extend(int_struct.pack(acl.perms) + write_string(acl.id.scheme) + write_string(acl.id.id))
        b.extend(int_struct.pack(self.flags))
        if self.opcode == 21:
            b.extend(long_struct.pack(self.ttl))
        return b

    @property
    def type(self):
        return self.opcode

    @classmethod
    def deserialize(cls, bytes, offset):
        path, offset = read_string(bytes, offset)
        return path


def _create_kind(zk, path, opcode, flags, ttl=0):
    """Sends the request below zk's chroot and answers the created path
    relative to it, as kazoo does for its own creates."""
    req = _CreateKind(_prefix_root(zk.chroot, path), b"", OPEN_ACL_UNSAFE, flags, ttl, opcode)
    result = zk.handler.async_result()
    zk._call(req, result)
    return zk.unchroot(result.get(timeout=5))


def test_container_is_reaped(zk):
    zk.ensure_path("/t")
    assert _create_kind(zk, "/t/cont", 19, 4) == "/t/cont"
    zk.create("/t/cont/child", b"")
    zk.delete("/t/cont/child")
    # The server checks containers every 200 ms in the test configuration.
    assert wait_for(lambda: zk.exists("/t/cont") is None, timeout=10)


def test_ttl_node_is_reaped(zk):
    zk.ensure_path("/t")
    assert _create_kind(zk, "/t/ttl", 21, 5, ttl=300) == "/t/ttl"
    assert wait_for(lambda: zk.exists("/t/ttl") is None, timeout=10)


def test_children_and_counts(zk):
    zk.ensure_path("/t/kids")
    for i in range(5):
        zk.create(f"/t/kids/k{i}", b"")
    zk.create("/t/kids/k0/g", b"")
    assert sorted(zk.get_children("/t/kids")) == [f"k{i}" for i in range(5)]
    children, stat = zk.get_children("/t/kids", include_data=True)
    assert stat.numChildren == 5
    with pytest.raises(NoNodeError):
        zk.get_children("/t/kids/none")


def test_data_watch_fires_once(zk, zk_factory):
    other = zk_factory()
    zk.ensure_path("/t/w")
    zk.create("/t/w/d", b"1")
    events = []
    zk.get("/t/w/d", watch=events.append)
    other.set("/t/w/d", b"2")
    other.set("/t/w/d", b"3")
    assert wait_for(lambda: len(events) >= 1)
    time.sleep(0.2)
    assert len(events) == 1 and events[0].type == EventType.CHANGED
    assert events[0].path == "/t/w/d"  # relative to the chroot, if any


def test_exists_watch_on_missing_node(zk, zk_factory):
    other = zk_factory()
    zk.ensure_path("/t/w")
    events = []
    assert zk.exists("/t/w/later", watch=events.append) is None
    other.create("/t/w/later", b"")
    assert wait_for(lambda: events and events[0].type == EventType.CREATED)
    assert events[0].path == "/t/w/later"


def test_child_watch(zk, zk_factory):
    other = zk_factory()
    zk.ensure_path("/t/cw")
    events = []
    zk.get_children("/t/cw", watch=events.append)
    other.create("/t/cw/x", b"")
    assert wait_for(lambda: events and events[0].type == EventType.CHILD)
    assert events[0].path == "/t/cw"


def test_delete_watch(zk, zk_factory):
    other = zk_factory()
    zk.ensure_path("/t/dw")
    zk.create("/t/dw/x", b"")
    events = []
    zk.get("/t/dw/x", watch=events.append)
    other.delete("/t/dw/x")
    assert wait_for(lambda: events and events[0].type == EventType.DELETED)
    assert events[0].path == "/t/dw/x"


def test_watch_seen_before_new_data(zk, zk_factory):
    """ZooKeeper's ordering guarantee: the event arrives before any reply
    that shows the new state."""
    other = zk_factory()
    zk.ensure_path("/t/order")
    zk.create("/t/order/x", b"0")
    for i in range(1, 20):
        seen = []
        zk.get("/t/order/x", watch=lambda ev: seen.append(ev))
        other.set("/t/order/x", str(i).encode())
        settle(zk, "/t/order/x")
        while True:
            data, _ = zk.get("/t/order/x")
            if data == str(i).encode():
                # kazoo runs watch callbacks on its own thread, so the event
                # (which the server sent first, on the same connection) may be
                # handed over a moment after get() returns; the exact wire
                # order is checked by TestWatchesFireOnceAndInOrder in Go.
                assert wait_for(lambda: seen, timeout=1), "no watch event for the change the read showed"
                break


def test_multi_transaction(zk):
    zk.ensure_path("/t/multi")
    t = zk.transaction()
    t.create("/t/multi/a", b"1")
    t.create("/t/multi/b", b"2")
    results = t.commit()
    assert results == ["/t/multi/a", "/t/multi/b"]
    t = zk.transaction()
    t.set_data("/t/multi/a", b"x")
    t.create("/t/multi/b", b"dup")  # fails: NODEEXISTS
    t.delete("/t/multi/a")
    results = t.commit()
    assert isinstance(results[1], NodeExistsError)
    assert zk.get("/t/multi/a")[0] == b"1"  # nothing applied
    t = zk.transaction()
    _, stat = zk.get("/t/multi/a")
    t.check("/t/multi/a", stat.version)
    t.set_data("/t/multi/a", b"y")
    assert t.commit()[0] is True
    assert zk.get("/t/multi/a")[0] == b"y"


def test_sync(zk):
    assert zk.sync("/") == "/"


def test_digest_acl(zk_factory):
    owner = zk_factory(auth_data=[("digest", "alice:secret")])
    owner.ensure_path("/t/acl")
    acl = make_digest_acl("alice", "secret", all=True)
    owner.create("/t/acl/private", b"s3cret", acl=[acl])
    stranger = zk_factory()
    settle(stranger, "/t/acl/private")
    with pytest.raises(NoAuthError):
        stranger.get("/t/acl/private")
    with pytest.raises(NoAuthError):
        stranger.set("/t/acl/private", b"x")
    assert owner.get("/t/acl/private")[0] == b"s3cret"
    acls, stat = owner.get_acls("/t/acl/private")
    assert acls[0].id.scheme == "digest" and stat.aversion == 0
    owner.set_acls("/t/acl/private", OPEN_ACL_UNSAFE)
    settle(stranger, "/t/acl/private")
    assert stranger.get("/t/acl/private")[0] == b"s3cret"
    assert owner.get_acls("/t/acl/private")[1].aversion == 1


def test_auth_scheme_and_invalid_acl(zk_factory):
    anon = zk_factory()
    anon.ensure_path("/t/acl2")
    with pytest.raises(InvalidACLError):
        anon.create("/t/acl2/x", b"", acl=[make_acl("auth", "", all=True)])
    alice = zk_factory(auth_data=[("digest", "bob:pw")])
    alice.create("/t/acl2/y", b"", acl=[make_acl("auth", "", all=True)])
    acls, _ = alice.get_acls("/t/acl2/y")
    assert acls[0].id.scheme == "digest" and acls[0].id.id.startswith("bob:")


def test_ip_acl(zk_factory):
    c = zk_factory()
    c.ensure_path("/t/ip")
    c.create("/t/ip/local", b"ok", acl=[make_acl("ip", "127.0.0.1", read=True)])
    assert c.get("/t/ip/local")[0] == b"ok"
    c.create("/t/ip/other", b"no", acl=[make_acl("ip", "10.1.2.0/24", read=True)])
    with pytest.raises(NoAuthError):
        c.get("/t/ip/other")


def test_super_user(zk_factory):
    alice = zk_factory(auth_data=[("digest", "carol:pw")])
    alice.ensure_path("/t/super")
    alice.create("/t/super/x", b"mine", acl=[make_digest_acl("carol", "pw", all=True)])
    root = zk_factory(auth_data=[("digest", "super:test")])
    settle(root, "/t/super/x")
    assert root.get("/t/super/x")[0] == b"mine"


def _read_frame(s):
    """One length-prefixed frame, or None when the server closed the
    connection first."""
    import struct

    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    (n,) = struct.unpack(">i", head)
    frame = b""
    while len(frame) < n:
        chunk = s.recv(n - len(frame))
        if not chunk:
            return None
        frame += chunk
    return frame


def _raw_connect(port, timeout_ms, sid=0, passwd=b"\0" * 16):
    """A connection to a new session (sid 0) or back to session sid. An
    ensemble member that cannot show quorum contact for the moment closes
    connections at once (as a ZooKeeper follower that is not serving
    does); like any client, try again."""
    import socket
    import struct

    body = struct.pack(">iqiq", 0, 0, timeout_ms, sid) + struct.pack(">i", len(passwd)) + passwd + b"\0"
    deadline = time.time() + 20
    while True:
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(struct.pack(">i", len(body)) + body)
        resp = _read_frame(s)
        if resp is not None:
            _, negotiated, sid = struct.unpack(">iiq", resp[:16])
            (pwlen,) = struct.unpack(">i", resp[16:20])
            assert negotiated > 0, "the session expired while reconnecting"
            return s, negotiated, sid, resp[20 : 20 + pwlen]
        s.close()
        assert time.time() < deadline, "the server closed every handshake for 20 s"
        time.sleep(0.05)


def _raw_session_with_ephemeral(port, path, timeout_ms):
    """Open a session by hand, create an ephemeral node, then go silent
    (no pings), so that only expiry can remove it. A connection the server
    closes meanwhile is opened again to the same session, and the create
    sent again (NODEEXISTS then means it had happened). Like kazoo's
    clients, it works under GIRAFFE_CHROOT: path is relative to it."""
    import struct

    s, negotiated, sid, passwd = _raw_connect(port, timeout_ms)
    p = (CHROOT + path).encode()
    acl = struct.pack(">i", 1) + struct.pack(">i", 31) + struct.pack(">i", 5) + b"world" + struct.pack(">i", 6) + b"anyone"
    req = struct.pack(">ii", 1, 1) + struct.pack(">i", len(p)) + p + struct.pack(">i", 0) + acl + struct.pack(">i", 1)
    retried = False
    while True:
        s.sendall(struct.pack(">i", len(req)) + req)
        reply = _read_frame(s)
        if reply is not None:
            break
        s.close()
        s, _, _, _ = _raw_connect(port, timeout_ms, sid, passwd)
        retried = True
    err = struct.unpack(">iqi", reply[:16])[2]
    assert err == 0 or (retried and err == -110), err
    return s, sid, negotiated


def test_session_expiry_removes_ephemerals(server, zk):
    zk.ensure_path("/t/exp")
    sock, sid, negotiated = _raw_session_with_ephemeral(server.port, "/t/exp/e", 400)
    assert negotiated == 400
    zk.sync("/t/exp")  # in an ensemble, zk may be on another server, which may lag
    _, stat = zk.get("/t/exp/e")
    assert stat.ephemeralOwner == sid
    events = []
    zk.exists("/t/exp/e", watch=events.append)
    start = time.time()
    assert wait_for(lambda: zk.exists("/t/exp/e") is None, timeout=10)
    assert time.time() - start >= 0.2  # not before the timeout
    assert wait_for(lambda: events and events[0].type == EventType.DELETED)
    assert events[0].path == "/t/exp/e"
    sock.close()


def test_session_timeout_negotiation(server):
    # The server bounds are [400 ms, 60 s] in the test configuration.
    sock, _, negotiated = _raw_session_with_ephemeral(server.port, "/t-neg-1", 10)
    assert negotiated == 400
    sock.close()
    sock, _, negotiated = _raw_session_with_ephemeral(server.port, "/t-neg-2", 10 ** 6)
    assert negotiated == 60000
    sock.close()


def test_session_survives_reconnect(server, zk_factory):
    c = zk_factory()
    c.ensure_path("/t/re")
    c.create("/t/re/e", b"", ephemeral=True)
    sid = c.client_id
    states = []
    c.add_listener(states.append)
    # Drop the TCP connection; kazoo reconnects with the same session.
    c._connection._socket.shutdown(2)
    assert wait_for(lambda: KazooState.SUSPENDED in states and c.state == KazooState.CONNECTED)
    assert c.client_id == sid
    assert c.exists("/t/re/e") is not None


NOT_SERVING = "This ZooKeeper instance is not currently serving requests"


def serving_word(server, word):
    """The answer to word once the server serves: an ensemble member
    without sessions stops serving whenever its own touches take more than
    a third of minSessionTimeout to commit, and says so (isro: "null"); it
    serves again at the next one."""
    out = server.four_letter(word)
    deadline = time.time() + 10
    while (out.startswith(NOT_SERVING) or out == "null") and time.time() < deadline:
        time.sleep(0.02)
        out = server.four_letter(word)
    return out


def test_four_letter_words(server):
    assert server.four_letter("ruok") == "imok"
    srvr = serving_word(server, "srvr")
    if os.environ.get("GIRAFFE_ENSEMBLE"):
        assert "Mode: leader" in srvr or "Mode: follower" in srvr
        assert "Giraffe role: " in srvr
    else:
        assert "Mode: standalone" in srvr
    assert "zk_znode_count" in serving_word(server, "mntr")
    assert serving_word(server, "isro") == "rw"
    assert "clientPort" in serving_word(server, "conf")
