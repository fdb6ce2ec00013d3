"""Isolation of code runs with bubblewrap (``bwrap``, Debian package ``bubblewrap``).

Limits alone (``_sandbox``) stop runaway code, not hostile code: a child of the same OS user can read
the database file through ``/proc/<ppid>/fd``, reach PostgreSQL over loopback, read the parent's
environment and memory, signal it, fork without end, and leave a ``setsid`` daemon behind. A run here
gets its own namespaces instead:

- **PID** (``--unshare-pid``, a fresh ``/proc``): the parent and every other process are invisible, and
  when the run's first process ends the kernel kills everything left in the namespace, so a ``setsid``
  child or a double-forked daemon dies with the run (``--die-with-parent`` covers a killed parent).
- **network** (``--unshare-net``): only a loopback that is down; no PostgreSQL, no internet.
- **mount**: a new root holding read-only ``/usr`` (and the ``/bin``, ``/lib`` links), a few ``/etc``
  files, the Python installation, ``/dev``, a size-capped tmpfs ``/tmp``, the run's input/output
  folder and its working folder (the only writable host folder). The database file is not there.
- **user**: the code runs as uid/gid 65534 (``nobody``) without capabilities. As root, bwrap makes the
  namespaces without a user namespace and ``setpriv`` drops to the real host uid 65534, so
  ``RLIMIT_NPROC`` (which the kernel never enforces on root, nor on root mapped into a user namespace)
  caps the number of processes. As another user, a user namespace maps that user to 65534 inside.
- **environment**: cleared (``--clearenv``); only PATH, HOME, LANG and the like are set.

:func:`detect_isolation` probes once per process whether this works here (bwrap installed, namespaces
allowed); where it does not, :class:`CommandExecutor` refuses to run code unless the operator opted in
with ``MEMORY_EXEC_ALLOW_UNISOLATED=true``.

>>> detect_isolation(bwrap="/nonexistent/bwrap").available
False
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

#: The uid and gid code runs as (``nobody`` on Debian).
SANDBOX_UID = 65534
SANDBOX_GID = 65534
#: Where the run's input (payload) and output (result) files appear inside the sandbox.
IO_DIR = "/memexec"
#: The few ``/etc`` entries a program needs (user names, the loader cache, the time zone, Debian's
#: ``alternatives`` links); everything else of ``/etc`` stays out of sight.
_ETC = (
    "passwd",
    "group",
    "nsswitch.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "alternatives",
    "mime.types",
)
_TOP_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

Mechanism = Literal["bwrap", "none"]


@dataclass(frozen=True, slots=True)
class Isolation:
    """How code runs are isolated on this machine.

    ``mechanism`` is ``"bwrap"`` when :func:`detect_isolation` saw a sandboxed probe run, else
    ``"none"`` with ``reason`` saying why. ``privileged``: bwrap runs as root, without a user
    namespace, and ``setpriv`` drops to :data:`SANDBOX_UID` inside.
    """

    mechanism: Mechanism
    reason: str
    bwrap: str | None = None
    privileged: bool = False

    @property
    def available(self) -> bool:
        """Whether code can run isolated."""
        return self.mechanism == "bwrap"

    def describe(self) -> str:
        """One line for logs and errors."""
        if not self.available:
            return f"no isolation: {self.reason}"
        how = "setpriv to uid 65534" if self.privileged else "a user namespace as uid 65534"
        return f"bubblewrap ({self.bwrap}): PID, network, mount and IPC namespaces, {how}"


def unisolated_error(isolation: Isolation) -> str:
    """The error of a run refused because the machine cannot isolate it."""
    return (
        f"code execution is refused: this machine cannot isolate code runs ({isolation.reason}). Install "
        "bubblewrap (apt-get install bubblewrap) and allow user namespaces, or set "
        "MEMORY_EXEC_ALLOW_UNISOLATED=true to run remembered code without isolation (it can then read the "
        "database, the network and every file this OS user can)"
    )


_cache: dict[tuple[str, int], Isolation] = {}
_lock = threading.Lock()


def detect_isolation(*, bwrap: str = "bwrap", refresh: bool = False) -> Isolation:
    """Whether ``bwrap`` (a name on PATH or a path) isolates runs here, probed once per process.

    The probe is a real sandboxed run of this Python (the same arguments a code run gets) that must
    report uid 65534 and an empty view of the parent: a bwrap that is installed but cannot create
    namespaces (a container that forbids them) counts as absent.
    """
    key = (bwrap, os.geteuid())
    with _lock:
        if refresh or key not in _cache:
            _cache[key] = _probe(bwrap)
        return _cache[key]


def _probe(bwrap: str) -> Isolation:
    found = shutil.which(bwrap)
    if found is None:
        return Isolation("none", f"bubblewrap not found ({bwrap!r} is not an executable on PATH)")
    privileged = os.geteuid() == 0
    if privileged and not (shutil.which("setpriv", path="/usr/bin:/bin") and Path("/usr/bin/prlimit").exists()):
        return Isolation("none", "setpriv or prlimit (util-linux) is missing")
    candidate = Isolation("bwrap", "probe", found, privileged)
    # uid 65534, and a small pid: the probe sees a PID namespace of its own, not the host's processes
    check = f"import os; assert os.getuid() == {SANDBOX_UID} and os.getpid() < 10, (os.getuid(), os.getpid())"
    with tempfile.TemporaryDirectory(prefix="memexec-probe-") as scratch:
        io_dir, work = Path(scratch, "io"), Path(scratch, "work")
        prepare_dirs(candidate, io_dir, work)
        argv = sandbox_argv(
            candidate,
            [python_binary(), "-I", "-c", check],
            workdir=work,
            io_dir=io_dir,
            env={"PATH": "/usr/bin:/bin"},
            processes=8,
            tmp_mb=1,
        )
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=15, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Isolation("none", f"the bubblewrap probe failed: {exc}")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no error output"])[-1]
        return Isolation("none", f"bubblewrap cannot create the sandbox here: {last}")
    return Isolation("bwrap", "sandboxed probe ran", found, privileged)


def python_binary() -> str:
    """The real interpreter behind ``sys.executable`` (a virtualenv's ``python`` is a symlink)."""
    return os.path.realpath(sys.executable)


def site_packages() -> str | None:
    """This environment's site-packages (bound read-only, so remembered code can import what the
    application has installed); ``None`` when it is inside the Python installation already."""
    path = sysconfig.get_paths()["purelib"]
    return path if Path(path).is_dir() else None


def prepare_dirs(isolation: Isolation, io_dir: Path, workdir: Path) -> None:
    """Create the run's input/output folder and working folder, usable by the sandbox user (as root
    they are handed to uid 65534; otherwise the user namespace maps the owner already)."""
    for folder in (io_dir, workdir):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if isolation.privileged:
            os.chown(folder, SANDBOX_UID, SANDBOX_GID)


def workdir_problem(isolation: Isolation, workdir: Path) -> str | None:
    """Why the sandbox user cannot work in ``workdir`` (``None`` when it can): as root, code runs as
    uid 65534, which needs read, write and search permission on the folder."""
    if not workdir.is_dir():
        return f"the working folder {str(workdir)!r} does not exist"
    if not isolation.privileged:
        return None
    st = workdir.stat()
    bits = 0o700 if st.st_uid == SANDBOX_UID else 0o070 if st.st_gid == SANDBOX_GID else 0o007
    if st.st_mode & bits != bits:
        return (
            f"the working folder {str(workdir)!r} is not writable by the sandbox user (uid {SANDBOX_UID}); "
            f"chown it to {SANDBOX_UID} or leave workdir unset for a fresh folder per run"
        )
    return None


def sandbox_argv(
    isolation: Isolation,
    command: Sequence[str],
    *,
    workdir: Path,
    io_dir: Path,
    env: Mapping[str, str],
    processes: int,
    tmp_mb: int,
) -> list[str]:
    """The bwrap command line that runs ``command`` isolated (see the module docs)."""
    assert isolation.bwrap is not None, "sandbox_argv needs an available isolation"
    argv = [
        isolation.bwrap,
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "memexec",
    ]
    if not isolation.privileged:
        argv += ["--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID)]
    argv += _filesystem(workdir=workdir, io_dir=io_dir, tmp_mb=tmp_mb)
    argv += ["--clearenv"]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    argv += ["--chdir", str(workdir), "--"]
    if isolation.privileged:
        argv += [
            "/usr/bin/setpriv",
            f"--reuid={SANDBOX_UID}",
            f"--regid={SANDBOX_GID}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
    # RLIMIT_NPROC set inside, after the uid change: it counts the processes of the sandbox user
    argv += ["/usr/bin/prlimit", f"--nproc={processes}:{processes}", "--", *command]
    return argv


def _filesystem(*, workdir: Path, io_dir: Path, tmp_mb: int) -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _TOP_LINKS:
        top = Path("/", name)
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    args += ["--perms", "0755", "--dir", "/etc"]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    seen: list[str] = ["/usr"]
    for tree in (sys.base_prefix, str(Path(python_binary()).parent), site_packages()):
        if tree and not any(tree == s or tree.startswith(s.rstrip("/") + "/") for s in seen):
            args += [*_parents(tree), "--ro-bind", tree, tree]
            seen.append(tree)
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    args += ["--bind", str(io_dir), IO_DIR, *_parents(str(workdir)), "--bind", str(workdir), str(workdir)]
    return args


def _parents(path: str) -> list[str]:
    """``--dir`` for each folder above ``path`` (mode 0755): bwrap would otherwise copy the host's
    mode, and a ``/root`` of mode 0700 above the Python installation would shut uid 65534 out."""
    out: list[str] = []
    for parent in reversed(Path(path).parents):
        if str(parent) not in ("/", "/tmp", "/usr"):
            out += ["--perms", "0755", "--dir", str(parent)]
    return out
