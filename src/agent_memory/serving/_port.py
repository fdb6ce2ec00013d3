"""Whether a server can listen on an address: a port in use is one line that names it and the way out.

uvicorn reports a busy port as its raw ``[Errno 98] error while attempting to bind on address ...``
log line and exits; :func:`check_port` asks the system first, the way uvicorn binds (``SO_REUSEADDR``),
so a port left in TIME_WAIT by a stopped server is no error.
"""

from __future__ import annotations

import errno
import socket

from data_layer import InvalidInputError


def check_port(host: str, port: int, *, flag: str = "--port") -> None:
    """Raise ``InvalidInputError`` when ``host``:``port`` cannot be bound (in use, or no such address
    here); ``flag`` is the option that chooses another port."""
    name = host.strip().strip("[]")
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((name, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise InvalidInputError(
                    f"port {port} on {host} is in use (another server is listening there): choose another with "
                    f"{flag} N, or stop that server"
                ) from None
            if exc.errno == errno.EACCES:
                raise InvalidInputError(
                    f"port {port} needs administrator rights on this machine: choose one above 1023 with {flag} N"
                ) from None
            if exc.errno == errno.EADDRNOTAVAIL or isinstance(exc, socket.gaierror):
                raise InvalidInputError(
                    f"cannot listen on {host}: it is no address of this machine; use 127.0.0.1 or one of its addresses"
                ) from None
            raise
