# SPDX-License-Identifier: BSD-2-Clause
"""Command line and configuration: --version, help, --check, config errors,
the open-proxy guard, FERRY_LOG, log_file and access_log."""

import re
import signal

import pytest

from ferrylib import (
    REP,
    echo_roundtrip,
    expect_failure,
    greeting,
    open_client,
    read_method,
    request,
    run_ferry,
    socks_connect,
)


# ---- version and help --------------------------------------------------------


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    r = run_ferry([flag])
    assert r.rc == 0, r.text
    assert re.fullmatch(r"ferry \d+\.\d+\.\d+\n", r.out), repr(r.out)


@pytest.mark.parametrize("args", [["help"], ["--help"], ["-h"]])
def test_help_main(args):
    r = run_ferry(args)
    assert r.rc == 0, r.text
    assert "usage: ferry COMMAND" in r.out
    assert "serve" in r.out and "help" in r.out


@pytest.mark.parametrize("args", [["help", "serve"], ["serve", "--help"], ["serve", "-h"]])
def test_help_serve(args):
    r = run_ferry(args)
    assert r.rc == 0, r.text
    assert (
        "usage: ferry serve [-c FILE] [-l ADDR:PORT]... [-w WORKERS] [--pidfile FILE] [--check]"
        in r.out
    )
    for word in ("--config", "--listen", "--workers", "--pidfile", "--upgrade", "--check", "FERRY_LOG",
                 "SIGHUP", "SIGTERM", "SIGUSR1"):
        assert word in r.out, f"{word} missing from `ferry {' '.join(args)}`"


@pytest.mark.parametrize(
    "args",
    [[], ["frobnicate"], ["help", "frobnicate"], ["serve", "--frobnicate"], ["serve", "extra-arg"]],
    ids=["no-args", "unknown-command", "help-unknown", "unknown-option", "extra-arg"],
)
def test_usage_errors_exit_2(args):
    r = run_ferry(args)
    assert r.rc == 2, r.text
    assert r.err, "a usage error must say something on stderr"
    assert r.out == ""


# ---- --check -----------------------------------------------------------------

GOOD_CONFIG = """\
# every key, each with a valid value
listen = 127.0.0.1:0, [::1]:0
listen = 127.0.0.2:0
workers = 2
handshake_timeout = 500ms
connect_timeout = 1s      ; trailing comment
iotimeout = 0
shutdown_timeout = 1s
max_connections = 100
backlog = 128
buffer_size = 16k
pipe_size = 64k
splice = auto
log_level = "info"
log_file =
access_log = yes
open_proxy = no
"""


def test_check_good_config(tmp_path):
    cfg = tmp_path / "good.conf"
    cfg.write_text(GOOD_CONFIG)
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 0, r.text
    assert f"{cfg}: configuration OK" in r.out
    assert r.err == ""


def test_check_without_config_file():
    r = run_ferry(["serve", "--check"])
    assert r.rc == 0, r.text
    assert "configuration OK" in r.out


def test_check_empty_config(tmp_path):
    cfg = tmp_path / "empty.conf"
    cfg.write_text("# nothing but a comment\n\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 0, r.text


BAD_CONFIG = [
    # (line text, key, words in the message)
    ("workers = 0", "workers", "out of range"),
    ("handshake_timeout = soon", "handshake_timeout", "not a duration"),
    ("connect_timeout = 1s", None, None),
    ("connect_timeout = 2s", "connect_timeout", "set twice (first on line 3)"),
    ("splice = sometimes", "splice", "'sometimes'"),
    ("buffer_size = 10", "buffer_size", "out of range"),
    ("access_log = perhaps", "access_log", "not a boolean"),
    ("listen = nonsense", "listen", "not a numeric address"),
    ("iotimeout = 8d", "iotimeout", "'8d'"),
    ("max_connections = -1", "max_connections", "'-1'"),
    ("log_level = loud", "log_level", "not a log level"),
    ("backlog = 70000", "backlog", "out of range"),
]


def test_check_bad_config_reports_every_error(tmp_path):
    cfg = tmp_path / "bad.conf"
    cfg.write_text("".join(line + "\n" for line, _, _ in BAD_CONFIG))
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 1, r.text
    assert "configuration OK" not in r.text
    for n, (_, key, words) in enumerate(BAD_CONFIG, start=1):
        if key is None:
            continue
        prefix = f"{cfg}:{n}: {key}: "
        lines = [l for l in r.text.splitlines() if l.startswith(prefix)]
        assert lines, f"no error line starting with {prefix!r} in:\n{r.text}"
        assert words in lines[0], f"{words!r} not in {lines[0]!r}"
    # exactly one error per bad line, nothing for the good line 3
    assert not any(l.startswith(f"{cfg}:3:") for l in r.text.splitlines()), r.text
    assert len([l for l in r.text.splitlines() if l.startswith(f"{cfg}:")]) == len(BAD_CONFIG) - 1, r.text


def test_bad_config_refuses_to_serve(tmp_path):
    cfg = tmp_path / "bad.conf"
    cfg.write_text("listen = 127.0.0.1:0\nworkers = many\n")
    r = run_ferry(["serve", "-c", str(cfg)], timeout=10)
    assert r.rc == 1, r.text
    assert f"{cfg}:2: workers: " in r.err
    assert "listening on" not in r.text


def test_check_udp_limit_warnings(tmp_path):
    # ferry.conf(5): a bad [udp] limit is a warning at its line (default or
    # clamp), --check prints it, exits 0 and its verdict counts the warnings
    cfg = tmp_path / "udp.conf"
    cfg.write_text("workers = 1\n[udp]\nassociations = 0\nqueue = 5000\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 0, r.text
    assert (f"warning: {cfg}:3: udp.associations: '0' is not valid (expected 1..100000); "
            "using the default 100") in r.err, r.err
    assert f"warning: {cfg}:4: udp.queue: '5000' is above the maximum; using 4096" in r.err, r.err
    assert r.out == f"{cfg}: configuration OK with 2 warnings\n", r.out


@pytest.mark.parametrize(
    "line,message",
    [
        ("handshake_timout = 1s", "unknown key (did you mean 'handshake_timeout'?)"),
        ("frobnicate = 1", "unknown key"),
        ("per_ip = 3", "unknown key (did you mean [limits] per_ip?)"),
    ],
)
def test_check_unknown_key(tmp_path, line, message):
    cfg = tmp_path / "unknown.conf"
    cfg.write_text(f"workers = 1\n{line}\n")
    key = line.split("=")[0].strip()
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 1, r.text
    assert f"{cfg}:2: {key}: {message}" in r.err, r.err


def test_check_section_is_an_error(tmp_path):
    cfg = tmp_path / "section.conf"
    cfg.write_text("workers = 1\n[server]\nbacklog = 10\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 1, r.text
    assert re.search(rf"^{re.escape(str(cfg))}:[23]: .*section \[server\]", r.err, re.M), r.err


def test_check_section_without_keys_is_an_error(tmp_path):
    # "[sections] are errors": a header is an error even when no key follows it
    cfg = tmp_path / "section.conf"
    cfg.write_text("workers = 1\n[server]\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 1, f"a [section] header was accepted:\n{r.text}"
    assert re.search(rf"^{re.escape(str(cfg))}:2: .*section \[server\]", r.err, re.M), r.err


def test_check_syntax_error(tmp_path):
    cfg = tmp_path / "syntax.conf"
    cfg.write_text("workers = 1\nthis line has no equals sign\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 1, r.text
    assert f"{cfg}:2: " in r.err, r.err


def test_check_missing_file(tmp_path):
    cfg = tmp_path / "does-not-exist.conf"
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 1, r.text
    assert str(cfg) in r.err


@pytest.mark.parametrize(
    "args,words",
    [
        (["-l", "nonsense"], "not a numeric address"),
        (["-l", "127.0.0.1"], "not a numeric address"),
        (["-w", "0"], "command line (-w)"),
        (["-w", "lots"], "command line (-w)"),
    ],
)
def test_check_bad_command_line(args, words):
    r = run_ferry(["serve", "--check", *args])
    assert r.rc == 1, r.text
    assert words in r.err, r.err


# ---- open proxy guard --------------------------------------------------------


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0"])
def test_open_proxy_refused_from_command_line(tmp_path, listen):
    r = run_ferry(["serve", "-l", listen], timeout=10)
    assert r.rc == 1, r.text
    assert "open_proxy" in r.err, r.err
    assert "listening on" not in r.text


def test_open_proxy_refused_from_config(tmp_path):
    cfg = tmp_path / "open.conf"
    cfg.write_text("workers = 1\nlisten = 0.0.0.0:0\n")
    r = run_ferry(["serve", "-c", str(cfg)], timeout=10)
    assert r.rc == 1, r.text
    assert f"{cfg}:2: listen: " in r.err and "open_proxy" in r.err, r.err


def test_open_proxy_accepted_when_configured(ferry, echo_server):
    f = ferry(config={"open_proxy": "yes"}, listens=["0.0.0.0:0"])
    # 0.0.0.0 includes loopback: prove it serves, then stop at once. A
    # public listener protects this host's own ranges: loopback is refused.
    s = open_client(("127.0.0.1", f.port))
    with s:
        s.sendall(greeting())
        assert read_method(s) == 0
        s.sendall(request(*echo_server.addr))
        expect_failure(s, REP["not-allowed"])
    assert f.stop() == 0


@pytest.mark.parametrize("rules", ["", "# nothing yet\n\n", "deny to 10.0.0.1\n",
                                   "allow from 0.0.0.0/0 port 443\n"],
                         ids=["empty", "comments", "one-deny", "allow-from-anywhere"])
def test_open_proxy_rules_that_open_everything_refused(tmp_path, rules):
    """Rule lines that exist but leave the proxy open do not satisfy the
    guard: at start and in --check."""
    (tmp_path / "r.rules").write_text(rules)
    cfg = tmp_path / "open.conf"
    cfg.write_text("workers = 1\nlisten = 0.0.0.0:0\nrules_file = r.rules\n")
    for args in (["serve", "--check", "-c", str(cfg)], ["serve", "-c", str(cfg)]):
        r = run_ferry(args, timeout=10)
        assert r.rc == 1, r.text
        assert f"{cfg}:2: listen: 0.0.0.0:0 is not a loopback address" in r.err, r.err
        assert "open_proxy" in r.err and "listening on" not in r.text, r.err
    # Closed rules pass: a client range under rules_default = deny.
    (tmp_path / "r.rules").write_text("allow from 192.0.2.0/24\n")
    cfg.write_text("workers = 1\nlisten = 0.0.0.0:0\nrules_file = r.rules\nrules_default = deny\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)], timeout=10)
    assert r.rc == 0, r.text


def test_open_proxy_reload_refused(ferry, echo_server):
    """A reload whose rules would open the proxy is refused; the previous
    configuration keeps serving."""
    closed = "rules_default = deny\n[rules]\nallow from 127.0.0.0/8 to 127.0.0.0/8\n"
    f = ferry(listens=["0.0.0.0:0"], extra=closed)
    proxy = ("127.0.0.1", f.port)
    s, _ = socks_connect(proxy, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"before")
    # Applied, this would deny the echo server by rule (and let everyone
    # else through under rules_default = allow).
    text = f.config_path.read_text().replace(closed, "[rules]\ndeny to 127.0.0.0/8\n")
    assert text != f.config_path.read_text()
    f.config_path.write_text(text)
    start = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: .*listen: 0\.0\.0\.0:0 is not a loopback address .*rules_default = "
               r"allow lets through whatever no rule denies", start=start)
    f.wait_log(r"reload: the new configuration has 1 error; still running the previous one",
               start=start)
    s, _ = socks_connect(proxy, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"after")
    assert f.stop() == 0


def test_public_listener_reaches_loopback_only_by_an_explicit_rule(ferry, echo_server):
    f = ferry(config={"open_proxy": "yes"}, listens=["0.0.0.0:0"],
              extra="[rules]\nallow to 127.0.0.0/8\n")
    s, _ = socks_connect(("127.0.0.1", f.port), *echo_server.addr)
    with s:
        echo_roundtrip(s, b"open")
    assert f.stop() == 0


# ---- logging knobs -----------------------------------------------------------


def test_ferry_log_overrides_log_level(ferry, echo_server):
    # log_level = error would hide the info 'ready:' line; FERRY_LOG=info wins
    f = ferry(config={"log_level": "error"}, env={"FERRY_LOG": "info"})
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        client = s.getsockname()
        echo_roundtrip(s, b"x")
    assert f.access_for(client)["reply"] == "succeeded"


def test_ferry_log_debug(ferry, echo_server):
    f = ferry(env={"FERRY_LOG": "debug"})
    s, _ = socks_connect(f.addr, *echo_server.addr)
    s.close()
    f.wait_log(r"\bdebug\b")


def test_ferry_log_invalid_is_an_error():
    r = run_ferry(["serve", "-l", "127.0.0.1:0"], env={"FERRY_LOG": "chatty"}, timeout=10)
    assert r.rc == 1, r.text
    assert "FERRY_LOG" in r.err


def test_log_file(ferry, tmp_path, echo_server):
    log = tmp_path / "ferry-file.log"
    f = ferry(config={"log_file": str(log)})  # the factory follows log_file
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        client = s.getsockname()
        echo_roundtrip(s, b"to the file")
    entry = f.access_for(client)
    assert entry["up"] == "11" and entry["down"] == "11"
    assert "listening on" not in f.stderr_text()
    assert "access " not in f.stderr_text()


@pytest.mark.parametrize("args", [["--check"], ["-l", "127.0.0.1:0"]], ids=["check", "serve"])
def test_log_file_in_missing_directory(tmp_path, args):
    # --check and a start judge log_file the same way, at its line
    cfg = tmp_path / "ferry.conf"
    missing = tmp_path / "no-such-dir" / "ferry.log"
    cfg.write_text(f"workers = 1\nlog_file = {missing}\n")
    r = run_ferry(["serve", "-c", str(cfg), *args], timeout=10)
    assert r.rc == 1, r.text
    assert f"{cfg}:2: log_file: {missing}: the directory {missing.parent}: " in r.err, r.err
    assert "configuration OK" not in r.text and "listening on" not in r.text
    assert not missing.parent.exists()


def test_log_file_check_creates_nothing(tmp_path):
    cfg = tmp_path / "ferry.conf"
    log = tmp_path / "ferry.log"
    cfg.write_text(f"log_file = {log}\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 0, r.text
    assert not log.exists()


def test_access_log_off(ferry, echo_server):
    f = ferry(config={"access_log": "no"})
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"quiet")
        s.shutdown(2)
    assert f.stop() == 0
    assert "access " not in f.log_text()
    assert "stopped:" in f.log_text()


def test_several_listeners(ferry, echo_server):
    f = ferry(listens=["127.0.0.1:0", "127.0.0.1:0"])
    assert len(f.listeners) == 2
    assert f.listeners[0].port != f.listeners[1].port
    for addr in f.addrs:
        s, _ = socks_connect(addr, *echo_server.addr)
        with s:
            echo_roundtrip(s, f"via {addr}".encode())


def test_command_line_overrides_config(ferry, echo_server):
    # -l replaces the file's listen addresses, -w its workers
    f = ferry(config={"listen": "127.0.0.1:1", "workers": "2"}, listens=["127.0.0.1:0"], args=["-w", "1"])
    assert len(f.listeners) == 1 and f.port != 1
    assert re.search(r"ready: 1 workers", f.log_text()), f.log_text()
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"overridden")
