"""A fork server for the suite's driver scripts: JAX imported once, a fresh process per run.

Importing JAX costs a child process about 2.5 CPU seconds, more than most of the programs
the suite runs in children. Where the fresh process is not the point (a driver that applies a
fault before importing jitlens, runs trial programs under their own fresh ``jitlens.track()``,
or stands for one process of a multi-process job), the script runs in a fork of a server that
has imported JAX and nothing else (no jitlens, no flax, no JAX backend started: forking before
the backend exists is safe, and the child starts its own), with its own ``sys.argv``, working
folder, environment, standard streams, exit status and ``atexit`` hooks, as ``python SCRIPT``
would. Where the fresh interpreter *is* the point (start-up, ``jitlens run``, ``JITLENS=1``,
the interpreter's flags, an environment variable the program sets before ``import jax``),
tests keep :func:`conftest.run_python`.

``python fork_server.py MODULE...`` imports the modules, then reads one JSON request a line
on stdin (``{"id", "argv", "cwd", "env", "stdout", "stderr", "timeout"}``), forks a child per
request and answers one JSON line on stdout when the child has ended (``{"id", "returncode",
"cpu", "timed_out"}``; ``cpu``: the child's user + system seconds, its own children included).
It is single-threaded (a fork of a threaded process may inherit a held lock) and polls.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import warnings

#: Environment variables read when the interpreter or the preloaded modules start: a run whose
#: environment sets them otherwise needs a fresh interpreter (``run_python``).
STARTUP_PREFIXES = ("JAX_", "XLA_", "PYTHON", "OPENBLAS_", "OMP_", "MKL_")
#: ... and these, which jitlens' start-up hook (``jitlens_autostart.pth``) reads.
STARTUP_NAMES = ("JITLENS", "JITLENS_RUN", "JITLENS_BOOTSTRAP")
#: ...except these, which the child applies itself.
APPLIED_IN_CHILD = ("PYTHONPATH", "PYTHONUNBUFFERED")


def startup_differences(env: dict[str, str], server_env: dict[str, str]) -> list[str]:
    """The variables of ``env`` a forked child could not honour (their modules read them)."""
    keys = {k for k in (*env, *server_env) if k.startswith(STARTUP_PREFIXES) or k in STARTUP_NAMES}
    return sorted(k for k in keys - set(APPLIED_IN_CHILD) if env.get(k) != server_env.get(k))


# --------------------------------------------------------------------------- the child


def _child(request: dict, filters: list) -> None:
    """Become ``python ARGV`` in ``cwd`` with ``env``; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)  # a timeout kills the run and everything it started
        fd_in = os.open(os.devnull, os.O_RDONLY)
        fd_out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        fd_err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((fd_in, 0), (fd_out, 1), (fd_err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        env = request["env"]
        os.environ.clear()
        os.environ.update(env)
        if env.get("PYTHONUNBUFFERED"):
            sys.stdout.reconfigure(write_through=True)
            sys.stderr.reconfigure(write_through=True)
        warnings.filters[:] = filters
        argv = list(request["argv"])
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        import runpy

        if argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            sys.path[0:1] = ["", *extra]
            run = lambda: exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: E731
        elif argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0:1] = [os.getcwd(), *extra]
            run = lambda: runpy.run_module(argv[1], run_name="__main__", alter_sys=True)  # noqa: E731
        else:
            script = os.path.abspath(argv[0])
            sys.argv = argv
            sys.path[0:1] = [os.path.dirname(script), *extra]
            run = lambda: runpy.run_path(script, run_name="__main__")  # noqa: E731
        try:
            run()
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        # Python's own ending: non-daemon threads joined, then the atexit hooks, then flushed
        import atexit
        import threading

        try:
            threading._shutdown()  # type: ignore[attr-defined]
        except Exception:
            pass
        atexit._run_exitfuncs()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF)


# --------------------------------------------------------------------------- the server (a script)


def serve(modules: list[str]) -> None:
    filters = list(warnings.filters)
    # Python 3.12+ warns about a fork of a process with threads (numpy's BLAS pool): the
    # server forks before anything runs on them; the child gets the filters back as they were
    warnings.filterwarnings(
        "ignore", message=r".*fork\(\) may lead to deadlocks", category=DeprecationWarning
    )
    import importlib

    for name in modules:
        importlib.import_module(name)
    running: dict[int, tuple[dict, float]] = {}
    buffer = b""
    stdin_open = True

    def answer(message: dict) -> None:
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(1, data) :]

    while stdin_open or running:
        ready, _, _ = select.select([0] if stdin_open else [], [], [], 0.05)
        if ready:
            chunk = os.read(0, 65536)
            if not chunk:
                stdin_open = False
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    _child(request, filters)
                deadline = time.monotonic() + float(request.get("timeout") or 1e9)
                running[pid] = (request, deadline)
        while running:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                break
            request, _ = running.pop(pid)
            answer(
                {
                    "id": request["id"],
                    "returncode": os.waitstatus_to_exitcode(status),
                    "cpu": usage.ru_utime + usage.ru_stime,
                    "timed_out": request.get("killed", False),
                }
            )
        now = time.monotonic()
        for pid, (request, deadline) in running.items():
            if now > deadline and not request.get("killed"):
                request["killed"] = True
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass


# --------------------------------------------------------------------------- the client


class ForkServer:
    """One server process, started by the suite; :meth:`run` is ``run_python`` by fork."""

    def __init__(self, modules: tuple[str, ...], env: dict[str, str]) -> None:
        import subprocess
        import threading

        self.env = env
        self.proc = subprocess.Popen(
            [sys.executable, __file__, *modules],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._lock = threading.Lock()
        self._done: dict[int, dict] = {}
        self._arrived = threading.Condition(self._lock)
        self._next = 0
        self.cpu = 0.0  # the finished children's CPU seconds, all told
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            with self._arrived:
                self._done[message["id"]] = message
                self._arrived.notify_all()
        with self._arrived:
            self._done[-1] = {}
            self._arrived.notify_all()

    def submit(
        self, argv: list[str], cwd: str, env: dict[str, str], timeout: float, out: str
    ) -> dict:
        """Start ``python ARGV``; returns the handle :meth:`wait` takes."""
        bad = startup_differences(env, self.env)
        if bad:
            raise ValueError(f"a forked run cannot change {bad}: run it with run_python")
        from _cputime import note_process

        note_process(["fork:", *argv])
        with self._lock:
            self._next += 1
            job = {
                "id": self._next, "argv": argv, "cwd": cwd, "env": env, "timeout": timeout,
                "stdout": f"{out}.{self._next}.out", "stderr": f"{out}.{self._next}.err",
            }  # fmt: skip
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
        return job

    def wait(self, job: dict):
        """The run's ``CompletedProcess`` (text), as ``subprocess.run`` returns it."""
        import subprocess

        from _cputime import credit_children

        with self._arrived:
            while job["id"] not in self._done:
                if -1 in self._done:
                    raise RuntimeError("the fork server ended")
                self._arrived.wait()
            message = self._done.pop(job["id"])
        self.cpu += message["cpu"]
        credit_children(message["cpu"])  # reaped by the server: not yet this process' figure
        with open(job["stdout"], encoding="utf-8", errors="replace") as f:
            stdout = f.read()
        with open(job["stderr"], encoding="utf-8", errors="replace") as f:
            stderr = f.read()
        os.unlink(job["stdout"])
        os.unlink(job["stderr"])
        argv = [sys.executable, *job["argv"]]
        if message["timed_out"]:
            raise subprocess.TimeoutExpired(argv, job["timeout"], stdout, stderr)
        return subprocess.CompletedProcess(argv, message["returncode"], stdout, stderr)

    def close(self) -> None:
        """Let the server finish its runs and end; its CPU then counts as this process' child."""
        from _cputime import credit_children

        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()
        self._reader.join()
        credit_children(-self.cpu)  # now inside RUSAGE_CHILDREN, with the server's own


class ForkRunner:
    """``run_python`` by fork (the ``fork_python`` fixture): one server per set of preloaded
    modules, started at its first run, ended with the session."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.servers: dict[tuple[str, ...], ForkServer] = {}

    @staticmethod
    def _env(env: dict[str, str] | None, server: ForkServer | None = None) -> dict[str, str]:
        """``run_python``'s environment: this process' with ``env`` over it. A variable read at
        start-up that ``env`` does not name is the server's (what the child's JAX was imported
        with), whatever a test of this process set or a library left in ``os.environ`` since."""
        full = {**os.environ, **(env or {})}
        full.setdefault("JAX_PLATFORMS", "cpu")  # as run_python
        if server is not None:
            for key in startup_differences(full, server.env):
                if key in (env or {}):
                    continue  # the caller's own: submit refuses it
                if key in server.env:
                    full[key] = server.env[key]
                else:
                    del full[key]
        return full

    def submit(
        self,
        args: list[str],
        *,
        cwd: object = None,
        env: dict[str, str] | None = None,
        timeout: float = 240,
        preload: tuple[str, ...] = ("jax",),
    ) -> tuple[ForkServer, dict]:
        """Start ``python ARGS`` (a script, ``-m MODULE`` or ``-c CODE``); :meth:`wait` ends it."""
        server = self.servers.get(preload)
        if server is None:
            server = self.servers[preload] = ForkServer(preload, self._env(None))
        cwd = os.fspath(cwd) if cwd is not None else os.getcwd()
        job_env = self._env(env, server)
        # each server numbers its own jobs: its files' names say which server's they are
        prefix = f"{self.folder}/run-{list(self.servers).index(preload)}"
        return server, server.submit(list(args), cwd, job_env, timeout, prefix)

    @staticmethod
    def wait(handle: tuple[ForkServer, dict]):
        server, job = handle
        return server.wait(job)

    def __call__(self, args: list[str], **kwargs: object):
        """Run ``python ARGS`` in a fork; returns its ``CompletedProcess`` (text)."""
        return self.wait(self.submit(args, **kwargs))  # type: ignore[arg-type]

    def close(self) -> None:
        for server in self.servers.values():
            server.close()


if __name__ == "__main__":
    serve(sys.argv[1:])
