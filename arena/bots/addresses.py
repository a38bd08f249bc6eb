"""Bot names and bot addresses: what the arena accepts before it dials anything.

The arena connects to every registered address from inside its own network, so an address
is a request to make the arena's workers talk to a host. Registering ``127.0.0.1:6379`` or
``169.254.169.254:80`` would point them at the arena's own Redis or the cloud's metadata
service, so only public addresses are accepted: loopback, private, link-local, unspecified,
multicast, reserved and other non-global addresses are refused, as are hostnames that
resolve to any of them (or to nothing). The operator lifts this for chosen hosts with
``Settings.allowed_bot_hosts`` (``TONK_ALLOWED_BOT_HOSTS``): exact host names, IP addresses,
or networks such as ``10.0.0.0/8``.

The check runs twice: when a bot is registered (:func:`pin_address`, whose checks then dial
the IP address it checked), and in the worker right before every match
(:func:`resolve_for_dial`), which also dials the IP address it checked, so a name that
resolves somewhere else later cannot lead the arena inside.

Addresses are ``HOST:PORT``: ``bots.example.org:50051``, ``203.0.113.7:50051``,
``[2001:db8::7]:50051`` (IPv6 in brackets, as in URLs).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from arena.errors import ArenaError, UnprocessableError
from sdk.bot import BOT_NAME_RE

_LABEL_RE = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
# IPv6 forms that carry an IPv4 address in their last 32 bits: IPv4-compatible (deprecated),
# IPv4-mapped, IPv4-translated (SIIT) and the well-known NAT64 prefix. Connecting to one of
# them can reach that IPv4 host, so it is judged as that host.
_LOW32_EMBEDDING = tuple(
    ipaddress.ip_network(net) for net in ("::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96")
)
# Never public (RFC 8215): the local-use NAT64 prefix embeds IPv4 at positions that depend on
# the operator's prefix length, so all of it is refused.
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: Resolves a host name to the IP addresses it stands for ([] if it does not resolve).
Resolver = Callable[[str], list[str]]


class InvalidBotNameError(ArenaError):
    status = 400
    code = "invalid_bot_name"


class InvalidAddressError(ArenaError):
    status = 400
    code = "invalid_address"


class AddressNotAllowedError(UnprocessableError):
    code = "address_not_allowed"


def validate_bot_name(name: str) -> str:
    """``name`` if it is a valid bot name (2-32 of a-z, 0-9, '_', '-'), else InvalidBotNameError."""
    if not isinstance(name, str) or not BOT_NAME_RE.fullmatch(name):
        raise InvalidBotNameError(
            f"bot name {name!r:.80} is not valid: use 2 to 32 lowercase letters, digits, '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def parse_address(address: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` into a host (IPv6 without brackets) and a port, checking both's
    syntax. Raises :class:`InvalidAddressError` quoting the input."""
    if not isinstance(address, str) or not address.strip():
        raise InvalidAddressError("missing bot address: expected HOST:PORT")
    text = address.strip()
    if len(text) > 255:
        raise InvalidAddressError(f"bot address {text[:40]!r}... is too long")
    if "://" in text or "/" in text:
        raise InvalidAddressError(
            f"bot address {text!r} must be HOST:PORT, without a scheme or path (e.g. bots.example.org:50051)"
        )
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise InvalidAddressError(f"bot address {text!r} is not [IPV6]:PORT")
        port_text = rest[1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise InvalidAddressError(f"{host!r} in bot address {text!r} is not an IPv6 address") from None
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or not host:
            raise InvalidAddressError(f"bot address {text!r} is not HOST:PORT (e.g. bots.example.org:50051)")
        if ":" in host:
            raise InvalidAddressError(
                f"bot address {text!r}: write IPv6 addresses in brackets, as [{host}]:PORT"
            )
        if not _is_ipv4(host):
            _check_hostname(host, text)
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise InvalidAddressError(
            f"port {port_text!r} in bot address {text!r} is not a number from 1 to 65535"
        )
    return host.lower(), int(port_text)


_IP_IN_TEXT = re.compile(r"\[[0-9A-Fa-f:.%]+\](?::\d+)?|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
HIDDEN = "<address>"


def redact_addresses(text: str, addresses: Iterable[str | None]) -> str:
    """``text`` (a fault reason, say) without where bots listen: each of ``addresses`` and
    any IP address in it become ``<address>``, since only a bot's owner may see its address."""
    for address in addresses:
        if address:
            text = text.replace(address, HIDDEN)
    return _IP_IN_TEXT.sub(HIDDEN, text)


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_address(
    address: str,
    allowed_hosts: Iterable[str] = (),
    *,
    resolver: Resolver | None = None,
) -> str:
    """The normalised ``address`` if the arena may connect to it, else InvalidAddressError
    (bad syntax, or a host that does not resolve) or AddressNotAllowedError (internal).

    Hosts in ``allowed_hosts`` (names, IPs or networks) are accepted whatever they are.
    Names are resolved with ``resolver`` (default: the system's resolver); every address
    they resolve to must be public or allowed, since the connection may use any of them.
    """
    return _checked(address, allowed_hosts, resolver)[0]


@dataclass(frozen=True, slots=True)
class DialTarget:
    """Where the arena connects for a registered address: ``target`` is ``HOST:PORT`` to
    dial and ``authority`` the ``HOST:PORT`` the bot is known by (None: the target itself)."""

    target: str
    authority: str | None = None
    #: Reached only because the operator's allow-list lets the arena in (its own network),
    #: not a public address (arena/bots/claims.py asks public ones for a claim).
    allow_listed: bool = False
    #: The IP addresses the check resolved the name to (empty for an IP or an allowed name):
    #: whatever else needs them uses these rather than asking DNS again.
    resolved: tuple[str, ...] = ()


def resolve_for_dial(
    address: str,
    allowed_hosts: Iterable[str] = (),
    *,
    resolver: Resolver | None = None,
) -> DialTarget:
    """Check ``address`` again right before connecting and pin the resolution that passed.

    A name checked at registration may resolve elsewhere later (DNS rebinding: public when
    registered, ``127.0.0.1`` when a worker dials it), so workers check every time and dial
    the IP address they checked, not the name, which gRPC would resolve again. Raises as
    :func:`check_address` does. An IP address was checked when it was registered and cannot
    point anywhere else since, and hosts the operator allows by name are trusted to the
    network they name: both are dialled as they are.
    """
    host, port = parse_address(address)
    if _ip(host) is not None:
        return DialTarget(format_address(host, port))
    normalised, resolved = _checked(address, allowed_hosts, resolver)
    if not resolved:
        return DialTarget(normalised)
    return DialTarget(format_address(resolved[0], port), normalised)


def pin_address(
    address: str,
    allowed_hosts: Iterable[str] = (),
    *,
    resolver: Resolver | None = None,
) -> tuple[str, DialTarget]:
    """Check ``address`` as :func:`check_address` does and return it normalised, with where to
    dial it: the IP address that passed the check, for a name. Registration checks dial only
    this, as workers do at match time, so a name that answers a public address to the check
    and loopback to the next lookup cannot make the arena call inside (DNS rebinding)."""
    normalised, resolved = _checked(address, allowed_hosts, resolver)
    host, port = parse_address(normalised)
    literal = _ip(host)
    if not resolved:
        # An allowed name, or an IP literal (that passed: public, or internal and allowed).
        return normalised, DialTarget(normalised, allow_listed=literal is None or is_internal(literal))
    inside = all(is_internal(ipaddress.ip_address(ip)) for ip in resolved)
    return normalised, DialTarget(
        format_address(resolved[0], port), normalised, allow_listed=inside, resolved=tuple(resolved)
    )


def _checked(address: str, allowed_hosts: Iterable[str], resolver: Resolver | None) -> tuple[str, list[str]]:
    """(normalised address, the IPs its host name resolved to: [] for an IP literal or an
    allowed host), or the error :func:`check_address` documents."""
    host, port = parse_address(address)
    normalised = format_address(host, port)
    allowed = _Allowed(allowed_hosts)
    if allowed.host(host):
        return normalised, []
    ip = _ip(host)
    if ip is not None:
        if is_internal(ip) and not allowed.ip(ip):
            raise AddressNotAllowedError(
                f"bot address {address.strip()!r} is an internal address ({_kind(ip)}); the arena only "
                "connects to public addresses unless its operator allows the host (TONK_ALLOWED_BOT_HOSTS)"
            )
        return normalised, []
    resolved = (resolver or system_resolver)(host)
    if not resolved:
        raise InvalidAddressError(f"host {host!r} in bot address {address.strip()!r} does not resolve")
    ips: list[str] = []
    for text in resolved:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
        if is_internal(ip) and not allowed.ip(ip):
            raise AddressNotAllowedError(
                f"bot address {address.strip()!r}: {host!r} resolves to the internal address {ip} "
                f"({_kind(ip)}); the arena only connects to public addresses unless its operator "
                "allows the host (TONK_ALLOWED_BOT_HOSTS)"
            )
        ips.append(str(ip))
    return normalised, ips


def is_internal(ip: IPAddress) -> bool:
    """Whether ``ip`` is anything but a public unicast address, including IPv6 addresses that
    embed an IPv4 address that is not public (IPv4-compatible, mapped, SIIT, NAT64, 6to4,
    Teredo, ISATAP): they would reach an internal IPv4 host."""
    if ip.is_multicast or not ip.is_global:
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _LOCAL_NAT64:
            return True
        return any(is_internal(v4) for v4 in embedded_ipv4(ip))
    return False


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (none for a plain IPv6 address)."""
    out: list[ipaddress.IPv4Address] = []
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if any(ip in net for net in _LOW32_EMBEDDING):
        out.append(low32)
    if ip.sixtofour is not None:
        out.append(ip.sixtofour)
    if ip.teredo is not None:
        out.extend(ip.teredo)
    if (int(ip) >> 32) & 0xFDFFFFFF == 0x00005EFE:  # ISATAP interface id ::0:5efe:V4 / ::200:5efe:V4
        out.append(low32)
    return out


def system_resolver(host: str) -> list[str]:
    """Every address ``host`` resolves to, via the system's resolver ([] if none)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return []
    return sorted({str(info[4][0]) for info in infos})


def same_server_keys(
    address: str, resolver: Resolver | None = None, resolved: Iterable[str] = ()
) -> tuple[frozenset[str], int]:
    """What ``address`` (normalised) reaches, for telling whether two spellings name one
    server: the keys of the hosts it resolves to (and its own name), and its port. Every
    loopback or unspecified address is one key (a bot bound to all interfaces answers on any
    of them), and an IPv6 address carrying an IPv4 one is that IPv4 address, so
    ``localhost:P``, ``127.0.0.1:P``, ``[::ffff:127.0.0.1]:P`` and ``[::1]:P`` compare equal.
    ``resolved``: the name's addresses as already resolved (then the resolver is not asked)."""
    host, port = parse_address(address)
    ip = _ip(host)
    if ip is not None:
        return frozenset({_host_key(ip)}), port
    keys = {host}
    for text in list(resolved) or (resolver or system_resolver)(host):
        found = _ip(text.split("%", 1)[0])
        if found is not None:
            keys.add(_host_key(found))
    return frozenset(keys), port


def _host_key(ip: IPAddress) -> str:
    if ip.is_loopback or ip.is_unspecified:
        return "loopback"
    if isinstance(ip, ipaddress.IPv6Address) and any(ip in net for net in _LOW32_EMBEDDING):
        return _host_key(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return str(ip)


class _Allowed:
    """The operator's allow-list: host names (case-insensitive), IPs and networks."""

    def __init__(self, entries: Iterable[str]):
        self.names: set[str] = set()
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for raw in entries:
            entry = raw.strip().lower().strip("[]")
            if not entry:
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.names.add(entry)

    def host(self, host: str) -> bool:
        if host in self.names:
            return True
        ip = _ip(host)
        return ip is not None and self.ip(ip)

    def ip(self, ip: IPAddress) -> bool:
        return any(ip.version == net.version and ip in net for net in self.networks)


def _ip(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def _check_hostname(host: str, text: str) -> None:
    name = host[:-1] if host.endswith(".") else host
    labels = name.split(".")
    if len(name) > 253 or not all(_LABEL_RE.fullmatch(label) for label in labels):
        raise InvalidAddressError(f"{host!r} in bot address {text!r} is not a valid host name or IP address")
    # A numeric last label is no host name: it is a partial or odd IPv4 form (127.1,
    # 2130706433) that resolvers would quietly turn into an address.
    if labels[-1].isdigit():
        raise InvalidAddressError(f"{host!r} in bot address {text!r} is not a valid host name or IP address")


def _kind(ip: IPAddress) -> str:
    for attribute, label in (
        ("is_loopback", "loopback"),
        ("is_unspecified", "unspecified"),
        ("is_link_local", "link-local"),
        ("is_multicast", "multicast"),
        ("is_private", "private"),
        ("is_reserved", "reserved"),
    ):
        if getattr(ip, attribute):
            return label
    return "not globally routable"


__all__ = [
    "AddressNotAllowedError",
    "DialTarget",
    "InvalidAddressError",
    "InvalidBotNameError",
    "check_address",
    "embedded_ipv4",
    "format_address",
    "is_internal",
    "parse_address",
    "pin_address",
    "redact_addresses",
    "system_resolver",
    "validate_bot_name",
]
