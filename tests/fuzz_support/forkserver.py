"""Run ``streambed`` invocations in forked children of one process that imported the product once.

A fresh ``python -m streambed.cli`` spends most of a refused invocation importing numpy, scikit-learn
and matplotlib; this server imports them once and forks per invocation, so each child starts warm
and isolated (no state survives into the next case). Each child runs ``cli.main(argv)`` with its
stdout and stderr in files, in its own working directory, under RLIMIT_AS and a wall-clock timeout.

The child cannot start an engine: creating a process (subprocess, exec, fork, posix_spawn),
sending a signal, looking up a host name, opening an Internet socket or making a Kafka client ends it at
once with GUARD_EXIT and a line in its guard file, before anything is executed or connected; and the
child has a network namespace of its own (nothing but a loopback that is down), so that a C library
that connects below Python's socket module reaches nothing either. So a generated invocation that
gets past every check of an engine command (Flink, Spark, Terraform, Ansible, SSH, Kafka) is stopped
and reported, never run.

Protocol: one JSON request per line on stdin, one JSON reply per line on stdout.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import resource
import signal
import socket
import sys
import time
import traceback

GUARD_EXIT = 97
"""The child tried to create a process or open an Internet connection."""
CLONE_NEWNET = 0x40000000
CRASH_EXIT = 98
"""cli.main raised: the traceback is in the child's stderr."""


def _preimport() -> None:
    """Everything a command may import lazily, so that a child does not pay for it."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    import streambed
    for info in pkgutil.walk_packages(streambed.__path__, "streambed."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # an optional part that cannot load here fails the same way in the child
            pass
    for name in ("numpy", "sklearn.linear_model", "skopt", "pulp", "yaml", "matplotlib.pyplot", "rich.console",
                 "sqlite3", "csv", "matplotlib.font_manager", "confluent_kafka", "confluent_kafka.admin"):
        try:
            importlib.import_module(name)
        except Exception:
            pass


def _guard(guard_file: str) -> None:
    """Refuse process creation and Internet sockets in this child (see the module docstring)."""

    def stop(what: str):
        def refuse(*args, **kwargs):
            try:
                with open(guard_file, "a") as fh:
                    fh.write(f"{what}: {' '.join(map(str, args))[:300]}\n")
            finally:
                os._exit(GUARD_EXIT)
        return refuse

    import subprocess
    subprocess.Popen._execute_child = stop("subprocess")
    for name in ("execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe", "fork", "forkpty",
                 "posix_spawn", "posix_spawnp", "system", "kill", "killpg"):
        if hasattr(os, name):
            setattr(os, name, stop(f"os.{name}"))
    try:
        import pty
        pty.fork = stop("pty.fork")
    except ImportError:
        pass
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def internet(method, what):
        def connect(self, address, *a):
            if self.family in (socket.AF_INET, socket.AF_INET6):
                stop(what)(address)
            return method(self, address, *a)
        return connect

    # clients written in C (librdkafka) connect below the socket module: their Python entry points stop too
    for module, names in (("confluent_kafka", ("Producer", "Consumer")), ("confluent_kafka.admin", ("AdminClient",))):
        mod = sys.modules.get(module)
        for name in names:
            if mod is not None and hasattr(mod, name):
                setattr(mod, name, stop(f"{module}.{name}"))

    socket.socket.connect = internet(original_connect, "connect")
    socket.socket.connect_ex = internet(original_connect_ex, "connect")

    # a name looked up is a connection about to be made (a client that cannot resolve retries for minutes)
    socket.getaddrinfo = stop("getaddrinfo")
    socket.gethostbyname = stop("gethostbyname")
    socket.create_connection = stop("create_connection")


def _own_network() -> None:
    """A network namespace of the child's own (root only): only a loopback that is down, so nothing the
    child or a C library in it does can reach a service of this machine or beyond. Best effort: the
    Python-level guard below reports what tried."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWNET)
    except (OSError, AttributeError):
        pass


def _child(req: dict) -> None:
    os.setpgid(0, 0)
    _own_network()
    mem = int(req["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    cpu = int(req["timeout_s"]) * 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.chdir(req["cwd"])
    os.environ.update(req.get("env", {}))
    _guard(req["guard"])
    code = CRASH_EXIT
    try:
        from streambed import cli
        code = cli.main(req["argv"])
        if not isinstance(code, int):
            sys.stderr.write(f"fuzz: cli.main returned {code!r}\n")
            code = CRASH_EXIT
    except SystemExit as e:  # argparse's own exit: its code, as a user would see it
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = CRASH_EXIT
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _run(req: dict) -> dict:
    sys.stdout.flush()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            _child(req)
        finally:
            os._exit(CRASH_EXIT)
    deadline = started + float(req["timeout_s"])
    timed_out = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            done, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.005 if time.monotonic() - started < 1 else 0.05)
    return {
        "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "timed_out": timed_out,
        "seconds": round(time.monotonic() - started, 3),
        "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def serve() -> None:
    _preimport()
    ready = {"ready": True, "pid": os.getpid()}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = _run(json.loads(line))
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()


class ForkServer:
    """The client: starts the server (``python forkserver.py``) and runs one invocation at a time."""

    def __init__(self, env: dict[str, str], python: str = sys.executable):
        self._env = env
        self._python = python
        self._proc = None

    def _start(self) -> None:
        import subprocess
        self._proc = subprocess.Popen([self._python, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env=self._env, text=True, bufsize=1)
        first = self._proc.stdout.readline()
        if not first or not json.loads(first).get("ready"):
            raise RuntimeError(f"the fuzz fork server did not start: {first!r}")

    def run(self, argv: list[str], cwd: str, stdout: str, stderr: str, guard: str, timeout_s: float,
            memory_bytes: int) -> dict:
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        req = {"argv": argv, "cwd": cwd, "stdout": stdout, "stderr": stderr, "guard": guard,
               "timeout_s": timeout_s, "memory_bytes": memory_bytes}
        self._proc.stdin.write(json.dumps(req) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            self._proc = None
            raise RuntimeError("the fuzz fork server died")
        return json.loads(line)

    def close(self) -> None:
        if self._proc is not None:
            self._proc.stdin.close()
            self._proc.wait(timeout=30)
            self._proc = None

    def __enter__(self) -> "ForkServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
