"""Private servers of the fault suite (docs/faults.md), for the faults that crash a server.

The shared test servers run without persistence (Redis) or in memory (dynalite) and belong to
everyone; a crash-restart fault needs a server of its own whose data outlives the crash:

  OwnRedis("rdb")   redis-server with RDB snapshots only (`SAVE` before each crash, no AOF): a
                    kill -9 loses every write since the snapshot, as a crash does with RDB, the
                    default persistence
  OwnRedis("aof")   redis-server with `appendonly yes`, `appendfsync everysec`: the crash is a
                    kill -9 followed by cutting the AOF back to its size of at least 1 s earlier,
                    the writes everysec can lose when the machine (not only the process) dies
  OwnDynalite()     dynalite with `--path` (LevelDB on disk): a kill -9 loses nothing

Each listens on 127.0.0.1 at a port chosen by the kernel (or LEADER_FAULTS_PORT), keeps its data
under DIR, and is stopped by PID (stop(), also from run.sh's exit path).
"""

import glob
import os
import signal
import socket
import subprocess
import time


def free_port():
    env = os.environ.get("LEADER_FAULTS_PORT")
    if env:
        return int(env)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class OwnServer:
    name = "server"

    def __init__(self, out):
        self.dir = os.path.join(out, "own-" + self.name)
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.proc = None
        self.log = open(os.path.join(self.dir, "log"), "ab")
        self.crashes = 0

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def command(self):
        raise NotImplementedError

    def ready(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            return True
        except OSError:
            return False

    def start(self):
        self.proc = subprocess.Popen(self.command(), stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL, cwd=self.dir)
        with open(os.path.join(self.dir, "pid"), "w") as f:
            f.write("%d\n" % self.proc.pid)
        give_up = time.monotonic() + 30
        while not self.ready():
            if self.proc.poll() is not None or time.monotonic() > give_up:
                raise RuntimeError("%s did not start (see %s/log)" % (self.name, self.dir))
            time.sleep(0.05)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def before_crash(self, rng, sleep):
        """What happens between the last durable point and the crash (writes go on)."""
        sleep(rng.uniform(1.0, 2.5))

    def lose(self):
        """Applies the data loss of the crash to the files (nothing by default)."""

    def crash_restart(self, rng, sleep):
        self.before_crash(rng, sleep)
        self.kill()
        self.crashes += 1
        self.lose()
        sleep(rng.uniform(0.2, 1.0))
        self.start()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


class OwnRedis(OwnServer):
    name = "redis"

    def __init__(self, out, persist):
        self.persist = persist
        super().__init__(out)
        self.aof_mark = None

    def command(self):
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
               "--daemonize", "no", "--save", "", "--dbfilename", "dump.rdb"]
        if self.persist == "aof":
            cmd += ["--appendonly", "yes", "--appendfsync", "everysec",
                    "--aof-load-truncated", "yes"]
        else:
            cmd += ["--appendonly", "no"]
        return cmd

    def call(self, *args):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        try:
            s.sendall(("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a)
                                                        for a in args)).encode())
            return s.recv(4096).decode(errors="replace")
        finally:
            s.close()

    def ready(self):
        try:
            return self.call("PING").startswith("+PONG")
        except OSError:
            return False

    def incr_file(self):
        files = sorted(glob.glob(os.path.join(self.dir, "appendonlydir", "*.incr.aof")))
        return files[-1] if files else None

    def before_crash(self, rng, sleep):
        if self.persist == "rdb":
            reply = self.call("SAVE")  # the snapshot the restart will restore
            if not reply.startswith("+OK"):
                raise RuntimeError("SAVE failed: %r" % reply)
            sleep(rng.uniform(1.0, 2.5))
            return
        f = self.incr_file()
        self.aof_mark = (f, os.path.getsize(f)) if f else None
        sleep(rng.uniform(1.0, 2.5))  # >= 1 s: what an everysec fsync can still lose

    def lose(self):
        if self.persist == "aof" and self.aof_mark:
            f, size = self.aof_mark
            if os.path.exists(f) and os.path.getsize(f) > size:
                os.truncate(f, size)


class OwnDynalite(OwnServer):
    name = "dynalite"

    def command(self):
        dirs = [os.environ.get("LE_NPM_DIR"),
                os.path.join(os.environ.get("LE_TEST_ROOT", "/tmp/le-test"), "npm"),
                "/tmp/le-test/npm"]
        exes = [os.path.join(d, "node_modules", ".bin", "dynalite") for d in dirs if d]
        exe = next((e for e in exes if os.access(e, os.X_OK)), exes[0])
        if not os.access(exe, os.X_OK):
            raise RuntimeError("dynalite not found at %s (scripts/test-servers.sh start "
                               "dynalite installs it)" % exe)
        return [exe, "--host", "127.0.0.1", "--port", str(self.port), "--path",
                os.path.join(self.dir, "data"), "--createTableMs", "0", "--deleteTableMs", "0",
                "--updateTableMs", "0"]
