"""Who may reach a server of the library: the one rule shared by the web chat and the MCP server.

A server binds loopback (127.0.0.1, ::1, localhost) unless the operator sets a token: on any other
address a request must present ``Authorization: Bearer TOKEN``. The check compares in constant time.

>>> check_bind("127.0.0.1", token="")
>>> check_bind("0.0.0.0", token="")
Traceback (most recent call last):
...
data_layer._errors.InvalidInputError: binding 0.0.0.0 needs a token: set MEMORY_SERVER_TOKEN (or bind 127.0.0.1)
>>> token_matches("Bearer s3cret", "s3cret"), token_matches("Bearer nope", "s3cret")
(True, False)
"""

from __future__ import annotations

import hmac
import ipaddress

from data_layer import InvalidInputError

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


def is_loopback(host: str) -> bool:
    """True for a loopback address or name (127.0.0.0/8, ::1, localhost)."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_is_loopback(host_header: str | None) -> bool:
    """Whether a request's ``Host`` header names a loopback host (port ignored).

    A server on loopback without a token checks it: a web page whose name an attacker re-points at
    127.0.0.1 (DNS rebinding) sends its own name as the host, so its requests are refused.

    >>> host_is_loopback("127.0.0.1:8765"), host_is_loopback("[::1]:80"), host_is_loopback("evil.example")
    (True, True, False)
    """
    value = (host_header or "").strip()
    if value.startswith("["):
        name = value[1 : value.find("]")] if "]" in value else ""
    elif value.count(":") == 1:
        name = value.rsplit(":", 1)[0]
    else:
        name = value
    return bool(name) and is_loopback(name)


def check_bind(host: str, *, token: str) -> None:
    """Refuse to bind a non-loopback ``host`` without a token (raises ``InvalidInputError``)."""
    if not is_loopback(host) and not token.strip():
        raise InvalidInputError(f"binding {host} needs a token: set MEMORY_SERVER_TOKEN (or bind 127.0.0.1)")


def token_matches(authorization: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header value (``Bearer TOKEN``, or the bare token) carries ``token``.

    An empty ``token`` never matches: a server without a token accepts loopback peers only. Text
    that is not valid Unicode (a lone surrogate from a JSON ``"\\ud800"``) is compared as it is, so it
    is simply a wrong token.
    """
    if not token or not authorization:
        return False
    presented = authorization.strip()
    if presented.lower().startswith("bearer "):
        presented = presented[7:].strip()
    return hmac.compare_digest(presented.encode("utf-8", "surrogatepass"), token.encode("utf-8", "surrogatepass"))
