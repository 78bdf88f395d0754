"""Fixtures for the kazoo tests: a real `giraffe server` process per module."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
from kazoo.client import KazooClient

# The namespaces of *Performance and Reliability Isolation in ZooKeeper*:
# declared on the servers when GIRAFFE_CHROOT is set.
NAMESPACES = {"1": "strong", "2": "weak"}

# GIRAFFE_CHROOT=/1 (or /2) runs the clients of the `hosts` fixture inside
# that namespace: the servers declare NAMESPACES and every connect string
# ends in the chroot, so each client sees a whole ZooKeeper under it.
CHROOT = os.environ.get("GIRAFFE_CHROOT", "").rstrip("/")
if CHROOT and (not CHROOT.startswith("/") or CHROOT.count("/") != 1 or CHROOT[1:] not in NAMESPACES):
    raise RuntimeError(f"GIRAFFE_CHROOT={CHROOT!r}: expected one of " + ", ".join("/" + n for n in NAMESPACES))

# Under a weak namespace a write is answered once ordered, before it is
# applied: the writing session reads it at once, another session only
# once the server applied it, which a sync guarantees (docs/namespaces.md,
# "Weak writes").
WEAK = bool(CHROOT) and NAMESPACES[CHROOT[1:]] == "weak"

NAMESPACE_LINES = [f"giraffe.namespace.{n}={level}" for n, level in NAMESPACES.items()]


def settle(client, path):
    """Makes a write another session made to path visible to client before
    it reads: a sync under a weak namespace, where that is the guarantee,
    and nothing elsewhere, where writes are applied before they are
    answered."""
    if WEAK:
        client.sync(path)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _four_letter(port, word):
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(word.encode())
        out = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return out.decode()
            out += chunk


class GiraffeServer:
    """A giraffe server process on 127.0.0.1 with its own data directory."""

    def __init__(self, extra_args=(), cfg_lines=()):
        self.bin = os.environ.get("GIRAFFE_BIN", os.path.join(os.path.dirname(__file__), "../../bin/giraffe"))
        self.dir = tempfile.mkdtemp(prefix="giraffe-py-")
        self.port = _free_port()
        self.extra = list(extra_args)
        self.cfg_lines = list(cfg_lines)  # extra zoo.cfg lines, key=value
        self.proc = None

    @property
    def hosts(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write("tickTime=200\nminSessionTimeout=400\nmaxSessionTimeout=60000\n")
            f.write("4lw.commands.whitelist=*\nzookeeper.extendedTypesEnabled=true\n")
            f.write("znode.container.checkIntervalMs=200\n")
            f.write("superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=\n")  # super:test
            for line in self.cfg_lines:
                f.write(line + "\n")
        self.log = open(os.path.join(self.dir, "server.log"), "ab")
        self.proc = subprocess.Popen(
            [self.bin, "server", "--config", cfg, "--data-dir", os.path.join(self.dir, "data"),
             "--client-addr", "127.0.0.1", "--client-port", str(self.port)] + self.extra,
            stdout=self.log, stderr=self.log)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if _four_letter(self.port, "ruok") == "imok":
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("giraffe exited during start-up; see " + self.log.name)
            time.sleep(0.02)
        raise RuntimeError("giraffe did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.log.close()

    def kill(self):
        self.proc.kill()
        self.proc.wait(10)
        self.log.close()

    def four_letter(self, word):
        return _four_letter(self.port, word)


class GiraffeEnsemble:
    """A local ensemble of giraffe server processes, started with
    `giraffe cluster start`; clients get every server in their host list,
    so kazoo spreads them over the ensemble."""

    SHAPES = {
        "classic-3": ["--nodes", "3", "--classic"],
        "forest-9-3-3": ["--nodes", "9", "--trees", "3", "--children", "3"],
    }

    def __init__(self, shape, sets=(), tls=False):
        self.bin = os.environ.get("GIRAFFE_BIN", os.path.join(os.path.dirname(__file__), "../../bin/giraffe"))
        self.dir = tempfile.mkdtemp(prefix="giraffe-py-ens-")
        self.shape = shape
        self.sets = list(sets)  # extra zoo.cfg lines, key=value
        self.tls = tls  # `cluster start --tls`: secure client ports, TLS between peers
        self.nodes = int(self.SHAPES[shape][1])
        # Client, peer, metrics and admin ports, and secure client ports with TLS.
        self.base = _free_base((5 if tls else 4) * self.nodes)

    @property
    def hosts(self):
        return ",".join(f"127.0.0.1:{self.base + i}" for i in range(self.nodes))

    @property
    def secure_hosts(self):
        """The secure client ports (an ensemble started with tls=True)."""
        return ",".join(f"127.0.0.1:{self.base + 4 * self.nodes + i}" for i in range(self.nodes))

    @property
    def tls_files(self):
        """The authority's certificate (trust store) and the client key
        store (key and certificate) `cluster start --tls` wrote."""
        return os.path.join(self.dir, "tls", "ca.pem"), os.path.join(self.dir, "tls", "client.pem")

    @property
    def port(self):
        """The client port of the last server (raw-protocol tests use one)."""
        return self.base + self.nodes - 1

    def next_hosts(self):
        """One server's address, a different one for each test in turn.
        The clients of one test share a server, so that one client reads
        what another wrote (plain reads in an ensemble are sequentially
        consistent, as in ZooKeeper); over the suite, tests use every
        server."""
        self._turn = getattr(self, "_turn", -1) + 1
        return f"127.0.0.1:{self.base + self._turn % self.nodes}"

    def start(self):
        sets = ["tickTime=200", "minSessionTimeout=400", "maxSessionTimeout=60000",
                "zookeeper.extendedTypesEnabled=true", "znode.container.checkIntervalMs=200",
                "superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU="] + self.sets
        # Tests isolate servers through the admin port's /faults, which a
        # cluster serves only when started for tests.
        args = [self.bin, "cluster", "start", "--dir", self.dir, "--base-port", str(self.base), "--tick-ms", "20",
                "--fault-injection"]
        args += self.SHAPES[self.shape]
        if self.tls:
            args.append("--tls")
        for kv in sets:
            args += ["--set", kv]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, timeout=60)

    def stop(self):
        subprocess.run([self.bin, "cluster", "stop", "--dir", self.dir], check=False, timeout=60)

    def four_letter(self, word):
        return _four_letter(self.base, word)

    def client_addr(self, sid):
        """Server sid's client address (ids count from 1)."""
        return f"127.0.0.1:{self.base + sid - 1}"

    def status(self):
        """`giraffe cluster status --json`: one dict per server (id, role,
        alive, serving, ...)."""
        out = subprocess.run([self.bin, "cluster", "status", "--json", "--dir", self.dir],
                             check=True, capture_output=True, text=True, timeout=30).stdout
        return json.loads(out)

    def fault(self, sid, spec):
        """Injects network faults into server sid's peer transport
        (`giraffe cluster fault`: "isolate", "heal", ...)."""
        subprocess.run([self.bin, "cluster", "fault", "--dir", self.dir, str(sid), spec],
                       check=True, stdout=subprocess.DEVNULL, timeout=30)

    def wait_serving(self, timeout=30):
        """Waits until every server serves and one of them leads."""
        deadline = time.time() + timeout
        while True:
            rows = self.status()
            if all(r["alive"] and r["serving"] for r in rows) and any(r["role"] == "leader" for r in rows):
                return rows
            if time.time() > deadline:
                raise RuntimeError(f"ensemble not serving within {timeout}s: {rows}")
            time.sleep(0.05)


def _free_base(n):
    import random
    for _ in range(50):
        base = random.randint(10000, 32000)  # below the ephemeral port range
        try:
            socks = []
            for p in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range")


@pytest.fixture(scope="module")
def server():
    shape = os.environ.get("GIRAFFE_ENSEMBLE")
    lines = NAMESPACE_LINES if CHROOT else []
    if shape:
        s = GiraffeEnsemble(shape, sets=lines)
        s.start()
        yield s
        s.stop()
        shutil.rmtree(s.dir, ignore_errors=True)
        return
    s = GiraffeServer(cfg_lines=lines)
    s.start()
    yield s
    s.stop()
    shutil.rmtree(s.dir, ignore_errors=True)


@pytest.fixture
def hosts(server):
    """The connect string for this test's clients, ending in the chroot
    GIRAFFE_CHROOT names."""
    return (server.next_hosts() if hasattr(server, "next_hosts") else server.hosts) + CHROOT


@pytest.fixture
def zk(hosts):
    c = KazooClient(hosts=hosts, timeout=10)
    c.start()
    yield c
    c.stop()
    c.close()


@pytest.fixture
def zk_factory(hosts):
    clients = []

    def make(**kw):
        c = KazooClient(hosts=hosts, timeout=10, **kw)
        c.start()
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.stop()
        c.close()
