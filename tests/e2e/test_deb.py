# SPDX-License-Identifier: BSD-2-Clause
"""`make deb`: the Debian package builds from a copy of the tree (the
developer's build/ and ./ferry untouched), lintian finds no error in it, and
it holds what an operator expects: the binary (of the version in
src/version.h, linked against the libraries its Depends names), both
systemd units reading /etc/ferry/ferry.conf, that file as a conffile, the
man pages, the docs, a DEP-5 copyright and a postinst that creates the
system user `ferry` (its postinst run in a private mount namespace too).

Slow on purpose (about a minute on 2 cores: dpkg-buildpackage compiles the
release build with LTO): the package is built once for the module.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ferrylib import REPO_ROOT, ferry_env

VERSION = re.search(r'#define FERRY_VERSION "([^"]+)"', (REPO_ROOT / "src/version.h").read_text()).group(1)


def makefile_list(name: str) -> list[str]:
    """The words of a `NAME := ...` variable of the Makefile (with its
    continuation lines)."""
    text = (REPO_ROOT / "Makefile").read_text().replace("\\\n", " ")
    m = re.search(rf"^{name}\s*:?=(.*)$", text, re.M)
    assert m, name
    return m.group(1).split()


def snapshot(root: Path) -> dict[str, int]:
    """mtime (ns) of build/ and ./ferry and of build/'s first level."""
    out = {}
    for p in [root / "ferry", root / "build", *sorted((root / "build").glob("*"))]:
        if p.exists():
            out[str(p.relative_to(root))] = p.stat().st_mtime_ns
    return out


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    if not shutil.which("dpkg"):
        pytest.skip("not a Debian system (no dpkg)")
    out = tmp_path_factory.mktemp("dist")
    before = snapshot(REPO_ROOT)
    r = subprocess.run(["make", "--no-print-directory", "-C", str(REPO_ROOT), "deb", f"DEB_OUT={out}"],
                       capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    text = r.stdout + r.stderr
    if r.returncode != 0 and "make: missing Debian packages" in text:
        pytest.skip(text.strip().splitlines()[-1])
    assert r.returncode == 0, text[-6000:]
    assert snapshot(REPO_ROOT) == before, "make deb touched the developer's build/ or ./ferry"
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
    path = out / f"ferry_{VERSION}_{arch}.deb"
    assert path.is_file(), (sorted(p.name for p in out.iterdir()), text[-3000:])
    root = out / "root"
    subprocess.run(["dpkg-deb", "-x", str(path), str(root)], check=True, timeout=60)
    subprocess.run(["dpkg-deb", "-e", str(path), str(root / "DEBIAN")], check=True, timeout=60)
    return {"path": path, "root": root, "make_output": text}


def field(deb, name: str) -> str:
    r = subprocess.run(["dpkg-deb", "-f", str(deb["path"]), name], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.slow  # the package build (the `deb` fixture)
def test_lintian_reports_no_error(deb):
    # make deb runs lintian --fail-on error; its tags are in the output
    tags = [ln for ln in deb["make_output"].splitlines() if re.match(r"^[EWIXPO]: ferry", ln)]
    assert not [t for t in tags if t.startswith("E:")], tags
    assert "deb: lintian" in deb["make_output"]


@pytest.mark.slow  # the package build (the `deb` fixture)
def test_package_holds_binary_units_conffile_man_pages_docs(deb):
    root = deb["root"]
    binary = root / "usr/bin/ferry"
    assert binary.is_file() and binary.stat().st_mode & 0o111
    for unit in ["ferry.service", "ferry@.service"]:
        text = (root / "lib/systemd/system" / unit).read_text()
        assert "ExecStart=/usr/bin/ferry serve -c /etc/ferry/ferry.conf" in text, text
        assert "User=ferry" in text
    assert (root / "etc/ferry/ferry.conf").read_text() == (REPO_ROOT / "ferry.conf.example").read_text()
    assert "/etc/ferry/ferry.conf" in (root / "DEBIAN/conffiles").read_text().split()
    for page in ["man1/ferry.1.gz", "man5/ferry.conf.5.gz"]:
        assert (root / "usr/share/man" / page).is_file(), page
    doc = root / "usr/share/doc/ferry"
    for name in ["copyright", "README.md.gz", "operations.md.gz", "configuration.md.gz", "changelog.gz"]:
        assert (doc / name).is_file(), (name, sorted(p.name for p in doc.iterdir()))
    copyright = (doc / "copyright").read_text()
    assert copyright.startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
    assert "License: BSD-2-Clause" in copyright
    postinst = (root / "DEBIAN/postinst").read_text()
    assert re.search(r"adduser .*--system .*ferry", postinst), postinst
    assert field(deb, "Version") == VERSION


@pytest.mark.slow  # the package build (the `deb` fixture)
def test_depends_names_the_libraries_the_binary_links(deb):
    depends = field(deb, "Depends")
    assert "adduser" in depends
    needed = subprocess.run(["objdump", "-p", str(deb["root"] / "usr/bin/ferry")], capture_output=True,
                            text=True, timeout=30).stdout
    sonames = re.findall(r"NEEDED\s+(\S+)", needed)
    assert sonames, needed
    multiarch = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True, text=True,
                               timeout=30).stdout.strip()
    # the package of this architecture's copy (not libc6-i386's), in one dpkg -S
    r = subprocess.run(["dpkg", "-S", *(f"*/{multiarch}/{so}" for so in sonames)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, (sonames, r.stderr)
    owners = {ln.split(":")[0] for ln in r.stdout.splitlines()}
    assert len(r.stdout.splitlines()) >= len(sonames), r.stdout
    named = {d.split()[0] for d in depends.replace("|", ",").split(",")}
    assert owners <= named, (owners - named, depends)


@pytest.mark.slow  # the package build (the `deb` fixture)
def test_packaged_binary_runs_and_checks_its_config(deb):
    binary = deb["root"] / "usr/bin/ferry"
    r = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30, env=ferry_env())
    assert r.returncode == 0 and VERSION in r.stdout + r.stderr, r
    r = subprocess.run([str(binary), "serve", "--check", "-c", str(deb["root"] / "etc/ferry/ferry.conf")],
                       capture_output=True, text=True, timeout=30, env=ferry_env())
    assert r.returncode == 0, r.stdout + r.stderr


def test_build_depends_names_every_build_package():
    """Build-Depends and the Makefile's BUILD_PKGS name the same -dev
    packages (a library added to one only fails elsewhere)."""
    control = (REPO_ROOT / "debian/control").read_text()
    m = re.search(r"^Build-Depends:(.*?)^\S", control, re.M | re.S)
    assert m, control
    build_deps = {d.strip().split()[0] for d in m.group(1).split(",") if d.strip()}
    dev = {p for p in makefile_list("BUILD_PKGS") if p.endswith("-dev")}
    assert dev <= build_deps, dev - build_deps


def test_postinst_creates_the_system_user(tmp_path):
    """debian/postinst configure, run twice in a private mount namespace
    over a copy of /etc (the host's accounts are never touched): a system
    user and group `ferry` with no home and no login, made once."""
    if not shutil.which("unshare") or not shutil.which("adduser"):
        pytest.skip("unshare (util-linux) and adduser are needed")
    script = f"""set -e
cp -a /etc {tmp_path}/etc
sed -i '/^ferry:/d' {tmp_path}/etc/passwd {tmp_path}/etc/group {tmp_path}/etc/shadow {tmp_path}/etc/gshadow
mount --bind {tmp_path}/etc /etc
sh {REPO_ROOT}/debian/postinst configure
sh {REPO_ROOT}/debian/postinst configure
grep -c '^ferry:' /etc/passwd
getent passwd ferry
getent group ferry
"""
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    if r.returncode != 0 and "unshare" in r.stderr and ("Operation not permitted" in r.stderr):
        pytest.skip(f"no private mount namespace here: {r.stderr.strip()[:200]}")
    assert r.returncode == 0, r.stdout + r.stderr
    count, pw, gr = r.stdout.strip().splitlines()[-3:]
    assert count == "1", r.stdout  # the second run made no second user
    name, _, uid, gid, _, home, shell = pw.split(":")
    assert name == "ferry" and 0 < int(uid) < 1000, pw  # a system user
    assert home == "/nonexistent" and shell.endswith("/nologin"), pw
    assert gr.split(":")[0] == "ferry" and gr.split(":")[2] == gid, (pw, gr)
