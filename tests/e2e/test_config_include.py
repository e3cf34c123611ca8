# SPDX-License-Identifier: BSD-2-Clause
"""Config composition (issue 22): include = PATH or GLOB.

Globs are read in sorted order, relative to the including file's directory;
includes nest up to 8 files deep; a cycle is an error naming both files; an
error inside an included file names that file and line; a glob that matches
nothing is fine, a missing plain path is an error; an included file starts
outside any section and its sections end with it; --check and SIGHUP read
includes the same way."""

import re
import signal

import ferrylib
from ferrylib import run_ferry

BASE = "listen = 127.0.0.1:0\nhandshake_timeout = 3s\n"


def check(path):
    return run_ferry(["serve", "--check", "-c", str(path)])


def test_glob_sorted_relative(tmp_path, monkeypatch):
    d = tmp_path / "etc"
    (d / "conf.d").mkdir(parents=True)
    (d / "ferry.conf").write_text(BASE + "include = conf.d/*.conf\n")
    # sorted: 10- sets it, 20- sets it again: the error names both places
    (d / "conf.d" / "20-b.conf").write_text("# b\nworkers = 2\n")
    (d / "conf.d" / "10-a.conf").write_text("workers = 1\n")
    (d / "conf.d" / "ignored.txt").write_text("not a config\n")
    monkeypatch.chdir(tmp_path)  # relative to the file, not the cwd
    r = check(d / "ferry.conf")
    assert r.rc != 0
    want = f"{d}/conf.d/20-b.conf:2: workers: set twice (first at {d}/conf.d/10-a.conf:1)"
    assert want in r.err, r.text


def test_glob_matching_nothing_is_fine_plain_path_is_not(tmp_path):
    (tmp_path / "a.conf").write_text(BASE + "include = conf.d/*.conf\n")
    r = check(tmp_path / "a.conf")
    assert r.rc == 0, r.text
    (tmp_path / "b.conf").write_text(BASE + "\ninclude = missing.conf\n")
    r = check(tmp_path / "b.conf")
    assert r.rc != 0
    assert f"{tmp_path}/b.conf:4: include: cannot read {tmp_path}/missing.conf: No such file" in r.err, r.text


def test_nested_error_keeps_file_and_line(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "main.conf").write_text(BASE + "include = sub/one.conf\n")
    (tmp_path / "sub" / "one.conf").write_text("# one\ninclude = two.conf\n")
    (tmp_path / "sub" / "two.conf").write_text("\n\n[limits]\nper_ip = many\n")
    r = check(tmp_path / "main.conf")
    assert r.rc != 0
    assert re.search(rf"^{re.escape(str(tmp_path))}/sub/two\.conf:4: limits\.per_ip: 'many'", r.err, re.M), r.text


def test_cycle_names_both_files(tmp_path):
    (tmp_path / "main.conf").write_text(BASE + "include = a.conf\n")
    (tmp_path / "a.conf").write_text("include = b.conf\n")
    (tmp_path / "b.conf").write_text("\ninclude = a.conf\n")
    r = check(tmp_path / "main.conf")
    assert r.rc != 0
    assert f"{tmp_path}/b.conf:2: include: {tmp_path}/a.conf is already being read (an include cycle" in r.err, r.text


def test_depth_cap(tmp_path):
    (tmp_path / "main.conf").write_text(BASE + "include = f1.conf\n")
    for i in range(1, 12):
        (tmp_path / f"f{i}.conf").write_text(f"include = f{i + 1}.conf\n")
    (tmp_path / "f12.conf").write_text("")
    r = check(tmp_path / "main.conf")
    assert r.rc != 0
    # main + f1..f7 are 8 files: f7's include is the one refused
    assert f"{tmp_path}/f7.conf:1: include: {tmp_path}/f8.conf: includes nested more than 8 files deep" in r.err, r.text


def test_sections_do_not_leak(tmp_path):
    """An include inside [limits] does not continue [limits]; the included
    file's own [limits] ends with it, and the including file goes on in its
    section after the include line."""
    (tmp_path / "main.conf").write_text(BASE + "[limits]\ninclude = top.conf\nper_ip = 3\n")
    (tmp_path / "top.conf").write_text("workers = 1\n[limits]\nrate = 5\n")
    r = check(tmp_path / "main.conf")
    assert r.rc == 0, r.text
    (tmp_path / "top.conf").write_text("per_user = 1\n")
    r = check(tmp_path / "main.conf")
    assert r.rc != 0
    assert f"{tmp_path}/top.conf:1: per_user: unknown key (did you mean [limits] per_user?)" in r.err, r.text


def test_rules_in_included_file(tmp_path, ferry, echo_server):
    (tmp_path / "rules.d").mkdir()
    (tmp_path / "rules.d" / "10.conf").write_text("[rules]\ndeny to 192.0.2.1\n")
    f = ferry(raw_config=BASE + "workers = 1\naccess_log = yes\nrules_default = allow\ninclude = rules.d/*.conf\n",
              listens=())
    s, _ = ferrylib.socks_connect(f.addr, *echo_server.addr)
    s.close()
    # a changed included file is read again on SIGHUP
    (tmp_path / "rules.d" / "10.conf").write_text(
        f"[rules]\ndeny to 192.0.2.1\ndeny to 127.0.0.1 port {echo_server.addr[1]}\n")
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied", start=off)
    s, _ = ferrylib.socks_connect(f.addr, *echo_server.addr, expect=None)
    with s:
        client = s.getsockname()
    e = f.access_for(client)
    assert e["reply"] == "not-allowed", e
    assert e.get("rule", "").startswith("10.conf:3"), e
