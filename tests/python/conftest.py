"""Fixtures for the kazoo tests: a real `giraffe server` process per module."""

import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
from kazoo.client import KazooClient


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

    def __init__(self, extra_args=()):
        self.bin = os.environ.get("GIRAFFE_BIN", os.path.join(os.path.dirname(__file__), "../../bin/giraffe"))
        self.dir = tempfile.mkdtemp(prefix="giraffe-py-")
        self.port = _free_port()
        self.extra = list(extra_args)
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


@pytest.fixture(scope="module")
def server():
    s = GiraffeServer()
    s.start()
    yield s
    s.stop()
    shutil.rmtree(s.dir, ignore_errors=True)


@pytest.fixture
def zk(server):
    c = KazooClient(hosts=server.hosts, timeout=10)
    c.start()
    yield c
    c.stop()
    c.close()


@pytest.fixture
def zk_factory(server):
    clients = []

    def make(**kw):
        c = KazooClient(hosts=server.hosts, timeout=10, **kw)
        c.start()
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.stop()
        c.close()
