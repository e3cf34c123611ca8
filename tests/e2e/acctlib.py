# SPDX-License-Identifier: BSD-2-Clause
"""What test_quota.py and test_accounting.py share: a ferry with a userlist,
a [metrics] listener and a [quota] section, the per-user figures of its
/metrics, and a SOCKS5 session that moves a given number of bytes."""

from __future__ import annotations

from pathlib import Path

from ferrylib import echo_roundtrip, socks_connect_auth
from opslib import metrics_addr, scrape, wait_until

USERS = {"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}


def write_users(directory: Path, names=None) -> Path:
    path = Path(directory) / "users.txt"
    path.write_text("".join(f"{n}:plain:{USERS[n]}\n" for n in (names or USERS)))
    return path


def quota_extra(quota: str) -> str:
    """[metrics] on a free loopback port, then [quota] with the lines given."""
    return "[metrics]\nlisten = 127.0.0.1:0\n\n[quota]\n" + quota.strip() + "\n"


def start(factory, workdir: Path, quota: str, auth: dict | None = None, **kw):
    """A ferry with the users of USERS and quota as its [quota] section;
    returns (ferry, metrics address)."""
    write_users(workdir)
    f = factory(auth={"userlist": "users.txt", "max_failures": "0", **(auth or {})},
                extra=quota_extra(quota), **kw)
    return f, metrics_addr(f)


def user_value(maddr, name: str, user: str, **labels) -> float:
    """The sample of name for user (0 when absent)."""
    hits = scrape(maddr).find(name, user=user, **labels)
    return hits[0].value if hits else 0.0


def wait_user_value(maddr, name: str, user: str, pred, what: str, timeout: float = 10.0, **labels):
    """Poll /metrics until pred(value) holds; returns the value."""
    box = {}

    def ok():
        box["v"] = user_value(maddr, name, user, **labels)
        return pred(box["v"])

    wait_until(ok, timeout, what)
    return box["v"]


def move_bytes(proxy, echo, user: str, n: int, chunk: int = 16384):
    """One authenticated SOCKS5 CONNECT to an echo server moving n bytes
    each way, then closed."""
    s, _ = socks_connect_auth(proxy, user, USERS[user], *echo)
    with s:
        left = n
        while left:
            k = min(chunk, left)
            echo_roundtrip(s, b"q" * k)
            left -= k
