#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bench/compare.sh: ferry side by side with other proxies from Debian.
#
# Starts, on 127.0.0.1 only and as children of this script, ferry (`ferry
# serve`), Dante, microsocks, shadowsocks-libev (ss-local -> ss-server),
# HAProxy (a plain TCP relay, no SOCKS), tinyproxy and Squid (HTTP proxies),
# then drives each with `ferry bench` in interleaved rounds and writes
# build/bench/benchmarks.md (+ .svg, + .jsonl; `--out docs/benchmarks.md`
# updates the tracked report). Groups: the TCP scenarios through
# SOCKS5 (throughput, handshakes, requests, connections), UDP ASSOCIATE (udp),
# UDP through ferry's tunnel beside its direct relay and shadowsocks-libev
# (udp-tunnel),
# SOCKS5 authentication costs of a self-hosted ferry (auth) and the HTTP
# proxy path (http), the cost of a hop (hop: direct, one and two ferries
# in a row, Dante, ferry -> Dante, Dante -> Dante), the HTTPS proxy path
# (https: ferry's tls:// listener with h1 and h2, stunnel4 and nghttpx -s in
# front of a plain ferry port, Squid's https_port) and encrypted tunnels
# (tunnel: a ferry client -> server pair over HTTP/2 + TLS that `ferry
# bench --tunnel h2` starts, OpenSSH's `ssh -D` to a local sshd,
# shadowsocks-libev with aes-256-gcm; with --wan SPEC across emulated
# wide-area paths instead, bench/compare_wan.sh) and edges (edge: `ferry bench edge`
# against ferry's [edge] routing, HAProxy req.ssl_sni + Lua and nginx
# ssl_preread). Everything it starts is stopped on exit, by PID, failure
# included.
#
#   bench/compare.sh [--quick] [--rounds N] [--only GROUP[,GROUP]]
#                    [--targets T[,T]] [--out FILE] [--results FILE] [--keep]
#                    [--treemon] [--build-head] [--dry-run]
#                    [--wan SPEC]... [--wan-duration S] [--wan-warmup S]
#                    [--wan-requests N] [--wan-rate N] [--wan-bulk N] [--wan-rows LIST]
#
# Runs as root on Debian 12 (it installs the missing peers the selected
# targets need with apt-get, no others); as another user it measures what is
# installed and reports the rest as missing.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: bench/compare.sh [options]

Measure ferry side by side with Dante, microsocks, shadowsocks-libev,
HAProxy (TCP relay), tinyproxy and Squid (HTTP proxies) on loopback, and
write build/bench/benchmarks.md. As root, the Debian packages of the
selected targets that are missing are installed first (and gnuplot-nox for
the chart); no other.

Options:
  --quick            one round, 2 s windows, 0.5 s warm-up, 2000 held
                     connections, 2000 HTTP-path requests: a check that
                     everything works (about 3 min)
  --rounds N         interleaved rounds; medians over rounds (default 3)
  --duration S       measurement window per run (default 5; --quick 2)
  --only LIST        groups to run, comma separated (default all):
                       throughput, handshakes, requests, connections
                                 the TCP scenarios through SOCKS5
                       socks     all four of these
                       udp       UDP ASSOCIATE: 1 and 16 clients x 1200 and
                                 8192 bytes, and a 512-byte blast (with the
                                 echo taking coalesced runs, and without)
                       udp-tunnel
                                 UDP through ferry's tunnel (issue 18): 16
                                 clients x 1200 and x 8192 bytes (one
                                 datagram in flight each, lost after 100
                                 ms) and a 16 x 1200-byte blast, through no
                                 proxy, ferry's direct UDP relay, the ferry
                                 tunnel over h2 and wss (CONNECT-UDP; the
                                 three ferries self-hosted by `ferry bench`)
                                 and shadowsocks-libev (ss-local -u ->
                                 ss-server -u, chacha20-ietf-poly1305):
                                 echoes/s, loss, RTT p50/p95/p99, CPU of
                                 both ends per echo, and the ferries'
                                 allocations per datagram, counted in the
                                 same runs (build/micro/alloccount.so,
                                 preloaded into those ferries only; built
                                 if missing). About 7 min for 3 rounds
                       auth      ferry only, self-hosted: handshakes with no
                                 auth, plain and Argon2id users, with and
                                 without the verification cache
                       http      the HTTP proxy path (CONNECT and absolute-
                                 form requests, CONNECT handshakes): ferry
                                 beside tinyproxy and Squid
                       hop       the cost of a hop: throughput (8 streams)
                                 and handshakes through no proxy, one ferry,
                                 two ferries in a row (`ferry bench --chain`
                                 1 and 2), Dante, ferry -> Dante and
                                 Dante -> Dante
                       https     the HTTPS proxy path: throughput (1 and 8
                                 streams) and requests (CONNECT per request)
                                 through ferry's plain HTTP CONNECT, ferry's
                                 tls:// listener (h1: a TLS connection per
                                 stream; h2: streams on one connection),
                                 stunnel4 and nghttpx -s in front of a plain
                                 ferry port, and Squid's https_port; every
                                 TLS daemon gets a throwaway certificate
                                 (`ferry cert`) and is verified by its pin
                       stall     ferry's tls:// listener over h2: 7 streams on
                                 one connection, then the same 7 beside one
                                 stalled stream (`--stalled 1`: sends a burst,
                                 never reads); the ratio is the issue's
                                 ">= 90 % beside a stalled stream"
                       tunnel    through an encrypted tunnel: throughput (1
                                 and 8 streams), handshakes and requests
                                 (1,000 requests + 8 x 1 MiB) through a ferry
                                 tunnel (client -> server, HTTP/2 + TLS,
                                 `ferry bench --tunnel h2`), OpenSSH `ssh -D`
                                 to a local sshd (root, throwaway keys),
                                 shadowsocks-libev (ss-local -> ss-server,
                                 aes-256-gcm) and plain ferry SOCKS5 as the
                                 no-tunnel reference; CPU of both ends
                       edge      `ferry bench edge`: new connections/s,
                                 latency, misrouted, CPU per 1,000 through an
                                 edge routing by SNI / Minecraft host: ferry
                                 (self-hosted by the bench), HAProxy 2.6
                                 (req.ssl_sni; Lua for Minecraft) and nginx
                                 (stream + ssl_preread), 1 worker each; a
                                 517-byte ClientHello, a Minecraft handshake,
                                 a 1812-byte ClientHello in 2 segments and in
                                 2 TLS records; held connections' memory
  --wan SPEC         the tunnel group across an emulated wide-area path
                     instead of loopback (root; repeatable: one path each,
                     e.g. --wan delay=25ms,rate=1gbit,queue=50ms
                     --wan delay=25ms,loss=1% --wan delay=25ms,rate=100mbit;
                     SPEC as in `ferry bench wan --help`). Per round and
                     path `ferry bench wan --path SPEC` holds namespaces A
                     and B; the origins (`ferry bench sink`) and each
                     tunnel's server half (ferry serve, sshd, ss-server) run
                     in B, its client half (ferry client -w 1, ssh -D,
                     ss-local) and the bench in A; plain TCP (direct) across
                     the same path is the reference. Rows: 1 and 8 one-way
                     streams (--direction down), mode_perf requests, and
                     small requests at --wan-rate beside --wan-bulk one-way
                     bulk streams (p50/p99 from the scheduled time); ferry
                     with 2 tunnel connections (-w 2) in the 8-stream row;
                     the RTT under load (ping from A to B beside each run)
                     next to every figure; a table and a chart per path
  --wan-duration S   window of each --wan run (default 2); the latency row
                     sends --wan-rate x S requests
  --wan-warmup S     warm-up of each --wan throughput run, and how long the
                     bulk runs before the latency row's requests (default
                     2: slow start and window growth at 50 ms take ~1 s)
  --wan-requests N   mode_perf requests per --wan run (default 100), then
                     8 x 1 MiB downloads
  --wan-rate N       requests a second of the latency row (default 50)
  --wan-bulk N       bulk streams beside them (default 7)
  --wan-rows LIST    only these rows of each --wan path, comma separated:
                     throughput-1, throughput-8, requests, latency
                     The --wan targets: direct, ferry-tunnel,
                     ferry-tunnel-2c, ssh-d, ss-libev-aes by default;
                     ferry-tunnel-wss when --targets names it. 3 rounds of
                     3 paths take about 15 min
  --targets LIST     targets, comma separated: direct, ferry, dante,
                     microsocks, ss-libev, haproxy, tinyproxy, squid, for
                     the hop group ferry-ferry, ferry-dante, dante-dante,
                     for the https group ferry-tls-h1, ferry-tls-h2,
                     stunnel, squid-https, nghttpx, and for the tunnel
                     group ferry-tunnel, ferry-tunnel-wss, ssh-d,
                     ss-libev-aes, for the edge group ferry-edge,
                     haproxy-edge, nginx-edge (default all;
                     each group runs those that apply)
  --out FILE         the report (default build/bench/benchmarks.md; the chart
                     and the raw .jsonl go next to it); --out docs/benchmarks.md
                     replaces the tracked report
  --results FILE     keep the raw JSON lines here too (they are always
                     saved next to the report as .jsonl)
  --keep             keep the temporary directory (configs, peer logs)
  --build-head       measure a ferry built from the committed HEAD (git
                     archive, built in the temporary directory) instead of
                     ./ferry, which may hold uncommitted work
  --settle S         before each run, wait up to S seconds for other work on
                     the machine to drop below 0.3 cores (default 5;
                     --quick 0); what other work took during each run is
                     recorded either way and noted in the report
  --treemon          also watch each proxy's process tree from outside
                     (bench/treemon.py) as a cross-check of the bench's own
                     CPU and memory figures (off by default: it costs CPU)
  --edge-cpu SHARE   the edge group under an equal CPU budget: every edge
                     (ferry's, HAProxy, nginx) runs in one cgroup whose CPU
                     quota is SHARE of one core (e.g. 0.25; cgroup v1
                     cpu.cfs_quota_us over a 20 ms cpu.cfs_period_us, or
                     v2 cpu.max; root), so the edge and not the load
                     generator sets the rate: conn/s is then capacity at
                     that budget. The cgroup is removed at the end (and on
                     INT/TERM)
  --dry-run          print what would be installed, run and written, and
                     exit: nothing is installed, started or written
  -h, --help         show this help

Each run is `ferry bench ... --allow-failures`: a peer that cannot set up
all the connections asked for is reported with its failures, not dropped.
EOF
}

ORIG_PWD=$PWD
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

CMDLINE="bench/compare.sh"
for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_,./:=+@-]+$ ]]; then CMDLINE+=" $a"; else CMDLINE+=" $(printf '%q' "$a")"; fi
done

ROUNDS=""
DURATION=""
WARMUP=1
CONNS=10000
EDGE_HOLD=""
QUICK=0
ONLY=""
TARGETS_ARG=""
OUT=""
RESULTS=""
KEEP=0
WANS=()
WAN_DURATION="" WAN_WARMUP="" WAN_REQUESTS="" WAN_RATE=50 WAN_BULK=7 WAN_ROWS=""
TREEMON=0
BUILD_HEAD=0
DRY_RUN=0
SETTLE=""
EDGE_CPU=""
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) QUICK=1 ;;
    --rounds) ROUNDS=${2:?--rounds needs a number}; shift ;;
    --rounds=*) ROUNDS=${1#*=} ;;
    --duration) DURATION=${2:?--duration needs seconds}; shift ;;
    --duration=*) DURATION=${1#*=} ;;
    --only) ONLY=${2:?--only needs a scenario}; shift ;;
    --only=*) ONLY=${1#*=} ;;
    --targets) TARGETS_ARG=${2:?--targets needs a list}; shift ;;
    --targets=*) TARGETS_ARG=${1#*=} ;;
    --out) OUT=${2:?--out needs a file}; shift ;;
    --out=*) OUT=${1#*=} ;;
    --results) RESULTS=${2:?--results needs a file}; shift ;;
    --results=*) RESULTS=${1#*=} ;;
    --wan) WANS+=("${2:?--wan needs a path, e.g. delay=25ms,rate=1gbit}"); shift ;;
    --wan=*) WANS+=("${1#*=}") ;;
    --wan-duration) WAN_DURATION=${2:?--wan-duration needs seconds}; shift ;;
    --wan-warmup) WAN_WARMUP=${2:?--wan-warmup needs seconds}; shift ;;
    --wan-requests) WAN_REQUESTS=${2:?--wan-requests needs a number}; shift ;;
    --wan-rate) WAN_RATE=${2:?--wan-rate needs requests per second}; shift ;;
    --wan-bulk) WAN_BULK=${2:?--wan-bulk needs a number of streams}; shift ;;
    --wan-rows) WAN_ROWS=${2:?--wan-rows needs a list of rows}; shift ;;
    --keep) KEEP=1 ;;
    --treemon) TREEMON=1 ;;
    --build-head) BUILD_HEAD=1 ;;
    --dry-run) DRY_RUN=1 ;;
    --settle) SETTLE=${2:?--settle needs seconds}; shift ;;
    --edge-cpu) EDGE_CPU=${2:?--edge-cpu needs a share of one core, e.g. 0.25}; shift ;;
    --edge-cpu=*) EDGE_CPU=${1#*=} ;;
    --settle=*) SETTLE=${1#*=} ;;
    -h | --help) usage; exit 0 ;;
    *) echo "compare.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
HTTP_REQS=5000
if [ "$QUICK" = 1 ]; then # short defaults; an explicit --rounds/--duration still wins
    ROUNDS=${ROUNDS:-1} DURATION=${DURATION:-2} WARMUP=0.5 CONNS=2000 HTTP_REQS=2000 SETTLE=${SETTLE:-0} EDGE_HOLD=2000
fi
ROUNDS=${ROUNDS:-3} DURATION=${DURATION:-5} SETTLE=${SETTLE:-5}
# --wan: windows of their own (a path's slow start and window growth take
# seconds at 50 ms), settable apart from the loopback groups'.
# The defaults keep 3 rounds of 3 paths near 15 min; --quick is the same
# with one round.
WAN_DURATION=${WAN_DURATION:-2} WAN_WARMUP=${WAN_WARMUP:-2} WAN_REQUESTS=${WAN_REQUESTS:-100}
for x in WAN_DURATION WAN_WARMUP WAN_RATE; do
    [[ "${!x}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "compare.sh: --${x,,}: not a number: ${!x}" >&2; exit 2; }
done
for x in WAN_REQUESTS WAN_BULK; do
    [[ "${!x}" =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --${x,,}: not a positive number: ${!x}" >&2; exit 2; }
done
IFS=, read -r -a _rows <<<"$WAN_ROWS"
for x in "${_rows[@]}"; do
    [[ " throughput-1 throughput-8 requests latency " == *" $x "* ]] ||
        { echo "compare.sh: --wan-rows: unknown row '$x' (throughput-1, throughput-8, requests, latency)" >&2; exit 2; }
done
# --out and --results are relative to where the script was started from.
if [ -z "$OUT" ]; then OUT=$ROOT/build/bench/benchmarks.md; elif [[ $OUT != /* ]]; then OUT=$ORIG_PWD/$OUT; fi
if [ -n "$RESULTS" ] && [[ $RESULTS != /* ]]; then RESULTS=$ORIG_PWD/$RESULTS; fi
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --rounds: not a positive number: $ROUNDS" >&2; exit 2; }
[[ "$DURATION" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "compare.sh: --duration: not a number: $DURATION" >&2; exit 2; }
[[ "$SETTLE" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "compare.sh: --settle: not a number: $SETTLE" >&2; exit 2; }
# --edge-cpu: the quota in microseconds per EDGE_CG_PERIOD (20 ms: short
# enough that a throttled edge waits at most a few ms at a time).
EDGE_CG_PERIOD=20000 EDGE_CG_QUOTA=""
if [ -n "$EDGE_CPU" ]; then
    [[ "$EDGE_CPU" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "compare.sh: --edge-cpu: not a number: $EDGE_CPU" >&2; exit 2; }
    EDGE_CG_QUOTA=$(awk -v s="$EDGE_CPU" -v p="$EDGE_CG_PERIOD" 'BEGIN { printf "%d", s * p + 0.5 }')
    if [ "$EDGE_CG_QUOTA" -lt 1000 ] || [ "$EDGE_CG_QUOTA" -gt $((64 * EDGE_CG_PERIOD)) ]; then
        echo "compare.sh: --edge-cpu: $EDGE_CPU is not between 0.05 and 64 cores" >&2
        exit 2
    fi
fi

ALL_SCENARIOS=(throughput handshakes requests connections udp udp-tunnel auth http hop https stall tunnel edge)
ALL_TARGETS=(direct ferry dante microsocks ss-libev haproxy tinyproxy squid ferry-ferry ferry-dante dante-dante
    ferry-tls-h1 ferry-tls-h2 stunnel squid-https nghttpx ferry-tunnel ferry-tunnel-wss ssh-d ss-libev-aes
    ferry-edge haproxy-edge nginx-edge)
# The edge group: the same worker count for every edge (ferry workers =
# HAProxy nbthread = nginx worker_processes), and the idle connections held.
EDGE_WORKERS=1
EDGE_HOLD=${EDGE_HOLD:-10000}
# The hop group: ferries in a row that `ferry bench --chain N` starts itself
# (the one-hop row too, so both rows are measured the same way).
declare -A CHAIN=([ferry]=1 [ferry-ferry]=2)
# The tunnel group: the pair `ferry bench --tunnel MODE` starts itself.
declare -A TUNNEL=([ferry-tunnel]=h2 [ferry-tunnel-wss]=wss)
SCENARIOS=("${ALL_SCENARIOS[@]}")
if [ -n "$ONLY" ]; then
    IFS=, read -r -a only <<<"$ONLY"
    SCENARIOS=()
    for s in "${only[@]}"; do
        [ "$s" = socks ] && s="throughput handshakes requests connections"
        for s1 in $s; do
            [[ " ${ALL_SCENARIOS[*]} " == *" $s1 "* ]] || { echo "compare.sh: --only: unknown group '$s1'" >&2; exit 2; }
            [[ " ${SCENARIOS[*]} " == *" $s1 "* ]] || SCENARIOS+=("$s1")
        done
    done
fi
# Keep the groups in their usual order whatever the order given.
sel=()
for s in "${ALL_SCENARIOS[@]}"; do [[ " ${SCENARIOS[*]} " == *" $s "* ]] && sel+=("$s"); done
SCENARIOS=("${sel[@]}")
if [ -n "$EDGE_CPU" ] && [[ " ${SCENARIOS[*]} " != *" edge "* ]]; then
    echo "compare.sh: --edge-cpu is for the edge group (--only edge)" >&2
    exit 2
fi
TARGETS=("${ALL_TARGETS[@]}")
if [ -n "$TARGETS_ARG" ]; then
    IFS=, read -r -a TARGETS <<<"$TARGETS_ARG"
    for t in "${TARGETS[@]}"; do
        [[ " ${ALL_TARGETS[*]} " == *" $t "* ]] || { echo "compare.sh: --targets: unknown target '$t'" >&2; exit 2; }
    done
fi

log() { printf '[compare %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# ---- cleanup: every process started here, by PID --------------------------
TMPD=$(mktemp -d /tmp/ferry-compare.XXXXXX)
MAINPID=$$
declare -A LIVE # PID -> name of each process this script started and has not stopped

# ours PID: a child of this shell still (so the PID was not reused)?
ours() { [ "$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ')" = "$MAINPID" ]; }
zombie() { [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ]; }

# Stop one process started here: TERM, wait up to 5 s, then KILL. A forking
# server's children are listed while it still lives (so the PIDs are
# certainly its children) and killed only if they outlive it under the same
# name.
stop_pid() {
    local pid=$1 kids k name i
    unset "LIVE[$pid]"
    ours "$pid" || return 0
    name=$(ps -o comm= -p "$pid" 2>/dev/null || true)
    kids=$(ps -o pid= --ppid "$pid" 2>/dev/null | tr -s ' \n' ' ' || true)
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        { ! kill -0 "$pid" 2>/dev/null || zombie "$pid"; } && break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null && ! zombie "$pid"; then
        log "pid $pid ($name) ignored SIGTERM: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    for k in $kids; do
        for ((i = 0; i < 20; i++)); do
            { ! kill -0 "$k" 2>/dev/null || zombie "$k"; } && break
            sleep 0.1
        done
        if kill -0 "$k" 2>/dev/null && ! zombie "$k" && [ "$(ps -o comm= -p "$k" 2>/dev/null)" = "$name" ]; then
            kill -KILL "$k" 2>/dev/null || true
        fi
    done
}

# --edge-cpu: one cgroup for the edge under test (one edge runs at a time),
# made by edge_cg_make, removed by edge_cg_remove (cleanup calls it).
EDGE_CG=""
edge_cg_make() {
    local base dir
    if [ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then base=/sys/fs/cgroup/cpu
    elif [ -e /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then base=/sys/fs/cgroup
    else echo "compare.sh: --edge-cpu: no cgroup cpu controller (/sys/fs/cgroup/cpu or cgroup v2 cpu)" >&2; return 1; fi
    dir=$base/ferry-compare-edge.$$
    mkdir "$dir" || { echo "compare.sh: --edge-cpu: cannot create $dir (root?)" >&2; return 1; }
    EDGE_CG=$dir
    if [ "$base" = /sys/fs/cgroup/cpu ]; then
        echo "$EDGE_CG_PERIOD" >"$dir/cpu.cfs_period_us" && echo "$EDGE_CG_QUOTA" >"$dir/cpu.cfs_quota_us"
    else
        echo "$EDGE_CG_QUOTA $EDGE_CG_PERIOD" >"$dir/cpu.max"
    fi || { echo "compare.sh: --edge-cpu: cannot set the quota of $dir" >&2; return 1; }
    log "edge CPU budget: cgroup $dir, $EDGE_CG_QUOTA us per $EDGE_CG_PERIOD us ($EDGE_CPU core)"
}
# edge_cg_join PID: the process, its threads and its descendants (nginx's
# worker, forked before the move) into the cgroup. Children forked later
# inherit it. 1 if a process could not be moved.
edge_cg_join() {
    local p=$1 c
    echo "$p" >"$EDGE_CG/cgroup.procs" 2>/dev/null || return 1
    # shellcheck disable=SC2013 # the files hold PIDs separated by spaces
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do edge_cg_join "$c" || return 1; done
}
edge_cg_remove() {
    [ -n "$EDGE_CG" ] && [ -d "$EDGE_CG" ] || return 0
    local p i
    for ((i = 0; i < 20; i++)); do # what is left (nothing, normally) back to the parent
        while read -r p; do
            echo "$p" >"$(dirname "$EDGE_CG")/cgroup.procs" 2>/dev/null || true
        done < <(cat "$EDGE_CG/cgroup.procs" 2>/dev/null)
        rmdir "$EDGE_CG" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "compare.sh: could not remove the cgroup $EDGE_CG" >&2
}

cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${!LIVE[@]}"; do
        stop_pid "$pid"
    done
    edge_cg_remove
    if [ "$KEEP" = 1 ]; then
        log "kept $TMPD"
    else
        rm -rf "$TMPD"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- peers: install what is missing ----------------------------------------
pkg_ok() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
# squid-openssl is Squid with TLS: it serves a target that needs squid too
# (installing squid would replace it).
pkg_have() { pkg_ok "$1" || { [ "$1" = squid ] && pkg_ok squid-openssl; }; }

# Processes of the peers' daemons that listen on TCP right now, as "pid".
peer_listeners() {
    ss -Hltnp 2>/dev/null | grep -oE '"(danted|haproxy|ss-server|ss-local|ss-manager|microsocks|tinyproxy|squid|stunnel4|nghttpx|sshd|nginx)",pid=[0-9]+' |
        sed 's/.*pid=//' | sort -u || true
}

install_peers() {
    local missing=() p before after pid unit
    for p in "${NEEDED_PKGS[@]}"; do pkg_have "$p" || missing+=("$p"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ]; then
        log "not root: cannot install ${missing[*]} (sudo apt-get install ${missing[*]}); measuring what is there"
        return 0
    fi
    log "installing ${missing[*]}"
    before=$(peer_listeners)
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >"$TMPD/apt.log" 2>&1; then
        log "apt-get install failed; apt-get update and again"
        apt-get update -q >>"$TMPD/apt.log" 2>&1 || true
        if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$TMPD/apt.log" 2>&1; then
            log "apt-get install failed again; peers that are missing will be reported as such:"
            tail -n 5 "$TMPD/apt.log" >&2
        fi
    fi
    # Package scripts may start the Debian services (Dante, HAProxy,
    # shadowsocks-libev, tinyproxy, Squid, OpenSSH). This harness never uses them: it runs its own
    # instances. A service that the install just started and that listens
    # somewhere is stopped again; anything that ran before is left alone.
    after=$(peer_listeners)
    for pid in $after; do
        grep -qx "$pid" <<<"$before" && continue
        unit=$(grep -oE '[^/]+\.service' "/proc/$pid/cgroup" 2>/dev/null | head -n1 || true)
        if [ -n "$unit" ] && [ -d /run/systemd/system ]; then
            log "stopping $unit, started by the package install (pid $pid)"
            systemctl stop "$unit" || true
        else
            log "stopping pid $pid ($(ps -o comm= -p "$pid")), started by the package install"
            kill -TERM "$pid" 2>/dev/null || true
        fi
    done
}

# ---- ports ------------------------------------------------------------------
# Free ports are picked at run time, below the ephemeral range: a port taken
# from the ephemeral range (bind to port 0) can be handed out moments later
# as the source port of some outgoing connection on this shared machine, and
# then a server that binds without SO_REUSEADDR (Dante) cannot listen on it.
PICKED=""
free_port() {
    local p
    p=$("$PY" - "$PICKED" <<'EOF'
import random, socket, sys
taken = set(int(x) for x in sys.argv[1].split() if x)
try:
    lo_eph = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except OSError:
    lo_eph = 32768
lo, hi = 20000, min(lo_eph, 32768)
if hi - lo < 500:
    lo, hi = 10000, 20000
for _ in range(500):
    port = random.randrange(lo, hi)
    if port in taken:
        continue
    s = socket.socket()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # UDP too (ss-local, UDP ASSOCIATE)
    try:
        s.bind(("127.0.0.1", port))  # no SO_REUSEADDR: fails on TIME_WAIT too
        s.listen(1)
        u.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
        u.close()
    print(port)
    break
else:
    sys.exit("no free port")
EOF
)
    PICKED+=" $p"
    echo "$p"
}

listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# wait_listen PORT PID SECONDS: 0 when PORT listens, 1 when PID died, 2 on timeout
wait_listen() {
    local port=$1 pid=$2 i n=$(($3 * 20))
    for ((i = 0; i < n; i++)); do
        listening "$port" && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = Z ] && return 1
        sleep 0.05
    done
    return 2
}

# The first line of a log that looks like an error, for the report.
why() {
    local f=$1
    [ -s "$f" ] || { echo "no output"; return; }
    { grep -iE 'error|fail|alert|cannot|denied|invalid|unable|fatal' "$f" || tail -n 1 "$f"; } |
        head -n 1 | sed -E 's/^[A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} (\([0-9.]+\) )?//' | tr -d '\r' | cut -c1-160
}

# Peer bookkeeping, by target name.
declare -A STATUS ADDR PIDS ROOTS MODE CPUSRC NOTE LOGF MCADDR

fill() { # fill TEMPLATE OUT KEY=VALUE...
    local tpl=$1 out=$2 expr=() kv
    shift 2
    for kv in "$@"; do expr+=(-e "s|@${kv%%=*}@|${kv#*=}|g"); done
    sed "${expr[@]}" "$tpl" >"$out"
}

# start_peer NAME PORT LOG CMD... : start CMD in the background, track it.
LAST_PID=""
start_bg() {
    local logf=$1
    shift
    "$@" </dev/null >"$logf" 2>&1 &
    LAST_PID=$!
    LIVE[$LAST_PID]=$1
}

check_up() { # check_up NAME PORT PID LOG
    local name=$1 port=$2 pid=$3 logf=$4 rc=0
    wait_listen "$port" "$pid" 10 || rc=$?
    case $rc in
    0) STATUS[$name]=ok; return 0 ;;
    1) STATUS[$name]="did not start: $(why "$logf")" ;;
    *) STATUS[$name]="did not start: not listening on 127.0.0.1:$port after 10 s" ;;
    esac
    log "$name ${STATUS[$name]}"
    stop_pid "$pid"
    return 1
}

start_ferry() {
    local port
    port=$(free_port)
    start_bg "$TMPD/ferry.log" "$FERRY" serve -l "127.0.0.1:$port"
    check_up ferry "$port" "$LAST_PID" "$TMPD/ferry.log" || return 0
    ADDR[ferry]=127.0.0.1:$port PIDS[ferry]=$LAST_PID ROOTS[ferry]=$LAST_PID
    MODE[ferry]=proxy CPUSRC[ferry]=bench LOGF[ferry]=$TMPD/ferry.log
    NOTE[ferry]="\`ferry serve -l 127.0.0.1:PORT\`, default configuration ($(nproc) workers, access log on: one line per session, to a file); SOCKS5, UDP ASSOCIATE and the HTTP proxy on the one port"
}

start_dante() {
    local port
    command -v danted >/dev/null || { STATUS[dante]="did not start: danted not installed (dante-server)"; return 0; }
    port=$(free_port)
    fill bench/peers/danted.conf "$TMPD/danted.conf" PORT="$port" LOGFILE="$TMPD/danted.log"
    start_bg "$TMPD/danted.out" danted -f "$TMPD/danted.conf" -p "$TMPD/danted.pid"
    check_up dante "$port" "$LAST_PID" "$TMPD/danted.log" || return 0
    ADDR[dante]=127.0.0.1:$port PIDS[dante]=$LAST_PID ROOTS[dante]=$LAST_PID
    MODE[dante]=proxy CPUSRC[dante]=bench LOGF[dante]=$TMPD/danted.log
    NOTE[dante]="\`danted -f danted.conf\` (bench/peers/danted.conf), its own process model (mother + forked negotiate/request/io children); CONNECT and UDP ASSOCIATE (\`udpassociate\` + \`udpreply\` rules); \`log: error\` (the handshakes scenario's abortive closes count as errors, so one line per session there)"
}

# A Dante on a free port; NEXT: the port of a SOCKS5 server it sends every
# CONNECT to (bench/peers/danted-route.conf), or empty. Sets DPORT, LAST_PID.
DPORT=""
start_danted() { # start_danted NAME [NEXT_PORT]
    local name=$1 next=${2:-}
    DPORT=$(free_port)
    fill bench/peers/danted.conf "$TMPD/$name.conf" PORT="$DPORT" LOGFILE="$TMPD/$name.log"
    if [ -n "$next" ]; then
        fill bench/peers/danted-route.conf "$TMPD/$name.route" NEXT_PORT="$next"
        cat "$TMPD/$name.route" >>"$TMPD/$name.conf"
    fi
    start_bg "$TMPD/$name.out" danted -f "$TMPD/$name.conf" -p "$TMPD/$name.pid"
}

# ferry -> Dante: a ferry whose every session goes on through a Dante of its
# own (the hop group); the CPU of both.
start_ferry_dante() {
    local port dpid
    command -v danted >/dev/null || { STATUS[ferry-dante]="did not start: danted not installed (dante-server)"; return 0; }
    start_danted danted-fd
    dpid=$LAST_PID
    check_up ferry-dante "$DPORT" "$dpid" "$TMPD/danted-fd.log" || return 0
    port=$(free_port)
    printf 'listen = 127.0.0.1:%s\noutbound = next\n[outbound next]\nurl = socks5://127.0.0.1:%s\n' \
        "$port" "$DPORT" >"$TMPD/ferry-dante.conf"
    start_bg "$TMPD/ferry-dante.log" "$FERRY" serve -c "$TMPD/ferry-dante.conf"
    if ! check_up ferry-dante "$port" "$LAST_PID" "$TMPD/ferry-dante.log"; then
        stop_pid "$dpid"
        return 0
    fi
    ADDR[ferry-dante]=127.0.0.1:$port PIDS[ferry-dante]=$LAST_PID,$dpid ROOTS[ferry-dante]=$LAST_PID,$dpid
    MODE[ferry-dante]=proxy CPUSRC[ferry-dante]=bench LOGF[ferry-dante]="$TMPD/ferry-dante.log $TMPD/danted-fd.log"
    NOTE[ferry-dante]="\`ferry serve\` with \`outbound = next\` and \`[outbound next] url = socks5://127.0.0.1:PORT\` -> \`danted\` (bench/peers/danted.conf); CPU of both"
}

# Dante -> Dante: the front Dante sends every CONNECT on through a second
# one (bench/peers/danted-route.conf); the CPU of both.
start_dante_dante() {
    local bpid bport
    command -v danted >/dev/null || { STATUS[dante-dante]="did not start: danted not installed (dante-server)"; return 0; }
    start_danted danted-dd2
    bpid=$LAST_PID bport=$DPORT
    check_up dante-dante "$bport" "$bpid" "$TMPD/danted-dd2.log" || return 0
    start_danted danted-dd1 "$bport"
    if ! check_up dante-dante "$DPORT" "$LAST_PID" "$TMPD/danted-dd1.log"; then
        stop_pid "$bpid"
        return 0
    fi
    ADDR[dante-dante]=127.0.0.1:$DPORT PIDS[dante-dante]=$LAST_PID,$bpid ROOTS[dante-dante]=$LAST_PID,$bpid
    MODE[dante-dante]=proxy CPUSRC[dante-dante]=bench LOGF[dante-dante]="$TMPD/danted-dd1.log $TMPD/danted-dd2.log"
    NOTE[dante-dante]="\`danted\` (bench/peers/danted.conf plus a \`route\` to the next, bench/peers/danted-route.conf) -> \`danted\` (bench/peers/danted.conf); CPU of both"
}

start_microsocks() {
    local port
    command -v microsocks >/dev/null || { STATUS[microsocks]="did not start: microsocks not installed"; return 0; }
    port=$(free_port)
    start_bg "$TMPD/microsocks.log" microsocks -i 127.0.0.1 -p "$port"
    check_up microsocks "$port" "$LAST_PID" "$TMPD/microsocks.log" || return 0
    ADDR[microsocks]=127.0.0.1:$port PIDS[microsocks]=$LAST_PID ROOTS[microsocks]=$LAST_PID
    MODE[microsocks]=proxy CPUSRC[microsocks]=bench LOGF[microsocks]=$TMPD/microsocks.log
    NOTE[microsocks]="\`microsocks -i 127.0.0.1 -p PORT\` (one thread per connection; CONNECT only, no UDP ASSOCIATE)"
}

# shadowsocks-libev: ss-local (SOCKS5) -> ss-server, both on loopback.
# NAME is the target (ss-libev: chacha20-ietf-poly1305, the SOCKS and UDP
# groups; ss-libev-aes: aes-256-gcm, the tunnel group), METHOD its cipher.
start_ss() { # start_ss NAME METHOD
    local name=$1 method=$2 lport sport pw spid
    if ! command -v ss-server >/dev/null || ! command -v ss-local >/dev/null; then
        STATUS[$name]="did not start: ss-server/ss-local not installed (shadowsocks-libev)"
        return 0
    fi
    lport=$(free_port)
    sport=$(free_port)
    pw=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
    fill bench/peers/shadowsocks.json "$TMPD/$name.json" PORT="$lport" SERVER_PORT="$sport" \
        PASSWORD="$pw" METHOD="$method"
    # JSON has no comments: the template's SPDX line goes (ss-server and
    # ss-local refuse the file with it: "Unexpected # when seeking value").
    sed -i '/^[[:space:]]*#/d' "$TMPD/$name.json"
    start_bg "$TMPD/$name-server.log" ss-server -u -c "$TMPD/$name.json"
    spid=$LAST_PID
    check_up "$name" "$sport" "$spid" "$TMPD/$name-server.log" || return 0
    # ss-local's address on its command line (-b), not as "local_address" in
    # the shared file: ss-server reads that key as the address to bind each
    # outgoing connection to, and a bind() before connect() needs a port of
    # its own per connection. With thousands of held connections (and the
    # TIME_WAIT sockets of earlier scenarios) that runs out, and ss-server
    # exits ("cannot bind socket").
    start_bg "$TMPD/$name-local.log" ss-local -u -b 127.0.0.1 -c "$TMPD/$name.json"
    if ! check_up "$name" "$lport" "$LAST_PID" "$TMPD/$name-local.log"; then
        stop_pid "$spid"
        return 0
    fi
    ADDR[$name]=127.0.0.1:$lport PIDS[$name]=$LAST_PID,$spid ROOTS[$name]=$LAST_PID,$spid
    MODE[$name]=proxy CPUSRC[$name]=bench LOGF[$name]="$TMPD/$name-server.log $TMPD/$name-local.log"
    NOTE[$name]="\`ss-local -u -b 127.0.0.1\` (SOCKS5) -> \`ss-server -u\` (127.0.0.1), $method (bench/peers/shadowsocks.json), TCP and UDP relay; CPU of both"
}

# OpenSSH's dynamic forwarding: `ssh -D` (a SOCKS5 port on the client, each
# connection a direct-tcpip channel of one SSH connection) to an sshd of our
# own on loopback, logged in to as root with a throwaway key (host key and
# user key made here, the user key authorised by a file in our directory
# only). As root only; the system's sshd and root's ~/.ssh are not touched.
start_ssh() {
    local d=$TMPD/ssh-d sport lport spid sshd
    sshd=$(command -v sshd || true)
    if [ -z "$sshd" ] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
        STATUS[ssh-d]="did not start: sshd/ssh not installed (openssh-server, openssh-client)"
        return 0
    fi
    if [ "$(id -u)" != 0 ]; then
        STATUS[ssh-d]="did not start: needs root (a local sshd that root logs in to)"
        return 0
    fi
    mkdir -p "$d"
    chmod 700 "$d"
    rm -f "$d/host_key" "$d/host_key.pub" "$d/user_key" "$d/user_key.pub"
    ssh-keygen -q -t ed25519 -N '' -C ferry-bench-host -f "$d/host_key" </dev/null >/dev/null
    ssh-keygen -q -t ed25519 -N '' -C ferry-bench-user -f "$d/user_key" </dev/null >/dev/null
    cp "$d/user_key.pub" "$d/authorized_keys"
    # sshd's privilege separation directory (Debian's unit makes it; this
    # harness does not use the unit).
    [ -d /run/sshd ] || install -d -m 0755 /run/sshd
    sport=$(free_port)
    printf '%s\n' "ListenAddress 127.0.0.1" "HostKey $d/host_key" \
        "AuthorizedKeysFile $d/authorized_keys" "PermitRootLogin prohibit-password" \
        "PubkeyAuthentication yes" "PasswordAuthentication no" "KbdInteractiveAuthentication no" \
        "UsePAM no" "StrictModes no" "AllowTcpForwarding yes" "PermitOpen any" \
        "X11Forwarding no" "PrintMotd no" "PidFile none" "LogLevel ERROR" >"$d/sshd_config"
    # -D: no daemon (it stays our child); -e: its log to stderr; an absolute
    # path, as sshd re-executes itself for each connection.
    start_bg "$d/sshd.log" "$sshd" -D -e -f "$d/sshd_config" -p "$sport"
    spid=$LAST_PID
    check_up ssh-d "$sport" "$spid" "$d/sshd.log" || return 0
    lport=$(free_port)
    start_bg "$d/ssh.log" ssh -N -D "127.0.0.1:$lport" -F /dev/null -o StrictHostKeyChecking=no \
        -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o ExitOnForwardFailure=yes \
        -o LogLevel=ERROR -i "$d/user_key" -p "$sport" root@127.0.0.1
    if ! check_up ssh-d "$lport" "$LAST_PID" "$d/ssh.log"; then
        stop_pid "$spid"
        return 0
    fi
    ADDR[ssh-d]=127.0.0.1:$lport PIDS[ssh-d]=$LAST_PID,$spid ROOTS[ssh-d]=$LAST_PID,$spid
    MODE[ssh-d]=proxy CPUSRC[ssh-d]=bench LOGF[ssh-d]="$d/sshd.log $d/ssh.log"
    NOTE[ssh-d]="\`ssh -N -D 127.0.0.1:PORT -i KEY -p PORT root@127.0.0.1\` (SOCKS5; every connection a direct-tcpip channel of one SSH connection) -> \`sshd -D -f sshd_config -p PORT\` (127.0.0.1, throwaway ed25519 host and user keys, OpenSSH's default ciphers: chacha20-poly1305@openssh.com first); CPU of ssh and of sshd's whole process tree"
}

start_haproxy() {
    local port
    command -v haproxy >/dev/null || { STATUS[haproxy]="did not start: haproxy not installed"; return 0; }
    port=$(free_port)
    fill bench/peers/haproxy.cfg "$TMPD/haproxy.cfg" PORT="$port" ECHO_PORT="$ECHO_PORT" \
        NBTHREAD="$(nproc)" MAXCONN=4096
    start_bg "$TMPD/haproxy.log" haproxy -db -f "$TMPD/haproxy.cfg"
    check_up haproxy "$port" "$LAST_PID" "$TMPD/haproxy.log" || return 0
    ADDR[haproxy]=127.0.0.1:$port PIDS[haproxy]=$LAST_PID ROOTS[haproxy]=$LAST_PID
    MODE[haproxy]=relay CPUSRC[haproxy]=bench LOGF[haproxy]=$TMPD/haproxy.log
    NOTE[haproxy]="\`haproxy -db\` (bench/peers/haproxy.cfg): TCP mode, option splice-auto, nbthread $(nproc); a plain relay to the echo port, no SOCKS"
}

# With --edge-cpu: a started edge peer into the cgroup, or not measured.
edge_cg_peer() { # edge_cg_peer TARGET PID
    [ -n "$EDGE_CG" ] || return 0
    edge_cg_join "$2" && return 0
    STATUS[$1]="not measured: could not move pid $2 into the cgroup $EDGE_CG"
    stop_pid "$2"
    return 1
}

# The edge group's peers route a.test / b.test to the bench's backends on
# EDGE_BACKEND and EDGE_BACKEND + 1 (`ferry bench edge --target-port`).
start_haproxy_edge() {
    local tport mport
    command -v haproxy >/dev/null || { STATUS[haproxy-edge]="did not start: haproxy not installed"; return 0; }
    tport=$(free_port) mport=$(free_port)
    cp bench/peers/mc-edge.lua bench/peers/mc-edge.map "$TMPD/"
    fill bench/peers/haproxy-edge.cfg "$TMPD/haproxy-edge.cfg" TLS_PORT="$tport" MC_PORT="$mport" \
        BACKEND_A="$EDGE_BACKEND" BACKEND_B="$((EDGE_BACKEND + 1))" NBTHREAD="$EDGE_WORKERS" \
        MAXCONN="$EDGE_MAXCONN" DIR="$TMPD"
    start_bg "$TMPD/haproxy-edge.log" haproxy -db -f "$TMPD/haproxy-edge.cfg"
    check_up haproxy-edge "$tport" "$LAST_PID" "$TMPD/haproxy-edge.log" || return 0
    edge_cg_peer haproxy-edge "$LAST_PID" || return 0
    ADDR[haproxy-edge]=127.0.0.1:$tport MCADDR[haproxy-edge]=127.0.0.1:$mport
    PIDS[haproxy-edge]=$LAST_PID ROOTS[haproxy-edge]=$LAST_PID
    MODE[haproxy-edge]=edge CPUSRC[haproxy-edge]=bench LOGF[haproxy-edge]=$TMPD/haproxy-edge.log
    NOTE[haproxy-edge]="\`haproxy -db\` (bench/peers/haproxy-edge.cfg, EDGE.md appendix B): req.ssl_sni after inspect-delay for TLS, the Lua action mc-edge.lua for Minecraft; nbthread $EDGE_WORKERS"
}

start_nginx_edge() {
    local tport mods=/usr/lib/nginx/modules
    command -v nginx >/dev/null || { STATUS[nginx-edge]="did not start: nginx not installed"; return 0; }
    [ -e "$mods/ngx_stream_module.so" ] || { STATUS[nginx-edge]="did not start: no stream module (libnginx-mod-stream)"; return 0; }
    tport=$(free_port)
    mkdir -p "$TMPD/nginx"
    fill bench/peers/nginx-edge.conf "$TMPD/nginx/nginx-edge.conf" TLS_PORT="$tport" \
        BACKEND_A="$EDGE_BACKEND" BACKEND_B="$((EDGE_BACKEND + 1))" WORKERS="$EDGE_WORKERS" \
        MAXCONN="$((2 * EDGE_MAXCONN))" DIR="$TMPD/nginx" MODULES="$mods"
    start_bg "$TMPD/nginx-edge.log" nginx -e "$TMPD/nginx/nginx-start.log" -p "$TMPD/nginx" \
        -c "$TMPD/nginx/nginx-edge.conf" -g 'daemon off;'
    check_up nginx-edge "$tport" "$LAST_PID" "$TMPD/nginx-edge.log" || return 0
    edge_cg_peer nginx-edge "$LAST_PID" || return 0
    ADDR[nginx-edge]=127.0.0.1:$tport PIDS[nginx-edge]=$LAST_PID ROOTS[nginx-edge]=$LAST_PID
    MODE[nginx-edge]=edge CPUSRC[nginx-edge]=bench LOGF[nginx-edge]="$TMPD/nginx-edge.log $TMPD/nginx/nginx-error.log"
    NOTE[nginx-edge]="\`nginx -g 'daemon off;'\` (bench/peers/nginx-edge.conf, EDGE.md appendix B): stream + ssl_preread, map \$ssl_preread_server_name; worker_processes $EDGE_WORKERS; no Minecraft routing"
}

start_tinyproxy() {
    local port
    command -v tinyproxy >/dev/null || { STATUS[tinyproxy]="did not start: tinyproxy not installed"; return 0; }
    port=$(free_port)
    fill bench/peers/tinyproxy.conf "$TMPD/tinyproxy.conf" PORT="$port" MAXCLIENTS=1024
    start_bg "$TMPD/tinyproxy.log" tinyproxy -d -c "$TMPD/tinyproxy.conf"
    check_up tinyproxy "$port" "$LAST_PID" "$TMPD/tinyproxy.log" || return 0
    ADDR[tinyproxy]=127.0.0.1:$port PIDS[tinyproxy]=$LAST_PID ROOTS[tinyproxy]=$LAST_PID
    MODE[tinyproxy]=http CPUSRC[tinyproxy]=bench LOGF[tinyproxy]=$TMPD/tinyproxy.log
    NOTE[tinyproxy]="\`tinyproxy -d -c tinyproxy.conf\` (bench/peers/tinyproxy.conf): HTTP proxy, one thread per client, CONNECT to any port (no \`ConnectPort\` line), \`LogLevel Error\`"
}

start_squid() {
    local port dir
    command -v squid >/dev/null || { STATUS[squid]="did not start: squid not installed"; return 0; }
    port=$(free_port)
    # Squid drops to its cache_effective_user (proxy) after start: its pid
    # file and cache.log go to a directory that user owns, inside ours.
    dir=$TMPD/squid.$port
    mkdir -p "$dir"
    chmod 711 "$TMPD"
    chown proxy: "$dir" 2>/dev/null || chmod 777 "$dir"
    fill bench/peers/squid.conf "$TMPD/squid.conf" PORT="$port" DIR="$dir"
    start_bg "$TMPD/squid.out" squid -N -f "$TMPD/squid.conf"
    check_up squid "$port" "$LAST_PID" "$dir/cache.log" || return 0
    ADDR[squid]=127.0.0.1:$port PIDS[squid]=$LAST_PID ROOTS[squid]=$LAST_PID
    MODE[squid]=http CPUSRC[squid]=bench LOGF[squid]="$dir/cache.log $TMPD/squid.out"
    NOTE[squid]="\`squid -N -f squid.conf\` (bench/peers/squid.conf): HTTP proxy, one process (-N: no SMP workers), no cache, \`http_access\` for 127.0.0.0/8 to 127.0.0.0/8 (CONNECT to any port), no access log"
}

# ---- the https group: TLS daemons with one throwaway certificate ------------
# TLSARGS: what `ferry bench` adds for a target of the https group (the
# HTTPS mode and the pin it verifies the daemon by).
declare -A TLSARGS
CERT_DIR="" CERT_PIN=""
make_cert() {
    [ -n "$CERT_PIN" ] && return 0
    CERT_DIR=$TMPD/cert
    CERT_PIN=$("$FERRY" cert --out "$CERT_DIR" --name 127.0.0.1 | head -n1) || CERT_PIN=""
    # Squid reads its key after dropping to the proxy user: a throwaway key
    # for loopback, readable.
    chmod 755 "$CERT_DIR" 2>/dev/null || true
    chmod 644 "$CERT_DIR/key.pem" 2>/dev/null || true
    [[ $CERT_PIN == sha256//* ]]
}

# A plain ferry on a free port behind a TLS front (stunnel, nghttpx). Sets
# BPORT, LAST_PID; 1 when it did not start (STATUS[NAME] says why).
BPORT=""
start_backend_ferry() { # start_backend_ferry NAME
    BPORT=$(free_port)
    start_bg "$TMPD/$1-ferry.log" "$FERRY" serve -l "127.0.0.1:$BPORT"
    check_up "$1" "$BPORT" "$LAST_PID" "$TMPD/$1-ferry.log"
}

# ferry's own tls:// listener; the bench speaks h1 or h2 to it. Until ferry
# offers h2 in ALPN the h2 row fails with "h2 not offered", never over h1.
start_ferry_tls() { # start_ferry_tls NAME h1|h2
    local name=$1 proto=$2 port
    make_cert || { STATUS[$name]="did not start: ferry cert failed"; return 0; }
    port=$(free_port)
    printf 'listen = tls://127.0.0.1:%s\n[tls]\ncert = %s/cert.pem\nkey = %s/key.pem\n' \
        "$port" "$CERT_DIR" "$CERT_DIR" >"$TMPD/$name.conf"
    start_bg "$TMPD/$name.log" "$FERRY" serve -c "$TMPD/$name.conf"
    check_up "$name" "$port" "$LAST_PID" "$TMPD/$name.log" || return 0
    ADDR[$name]=127.0.0.1:$port PIDS[$name]=$LAST_PID ROOTS[$name]=$LAST_PID
    MODE[$name]=proxy CPUSRC[$name]=bench LOGF[$name]=$TMPD/$name.log
    TLSARGS[$name]="--https-proxy $proto --proxy-pin $CERT_PIN"
    NOTE[$name]="\`ferry serve\` with \`listen = tls://127.0.0.1:PORT\` and a \`[tls]\` section (a \`ferry cert\` certificate), default configuration otherwise; \`ferry bench --https-proxy $proto\`$([ "$proto" = h2 ] && echo ': every stream on one TLS connection; fails with "h2 not offered" while ferry does not offer h2 in ALPN' || echo ': a TLS connection per stream or request')"
}

start_stunnel() {
    local port fpid
    command -v stunnel4 >/dev/null || { STATUS[stunnel]="did not start: stunnel4 not installed"; return 0; }
    make_cert || { STATUS[stunnel]="did not start: ferry cert failed"; return 0; }
    start_backend_ferry stunnel || return 0
    fpid=$LAST_PID
    port=$(free_port)
    fill bench/peers/stunnel.conf "$TMPD/stunnel.conf" PORT="$port" BACKEND="$BPORT" \
        CERT="$CERT_DIR/cert.pem" KEY="$CERT_DIR/key.pem"
    start_bg "$TMPD/stunnel.log" stunnel4 "$TMPD/stunnel.conf"
    if ! check_up stunnel "$port" "$LAST_PID" "$TMPD/stunnel.log"; then
        stop_pid "$fpid"
        return 0
    fi
    ADDR[stunnel]=127.0.0.1:$port PIDS[stunnel]=$LAST_PID,$fpid ROOTS[stunnel]=$LAST_PID,$fpid
    MODE[stunnel]=proxy CPUSRC[stunnel]=bench LOGF[stunnel]="$TMPD/stunnel.log $TMPD/stunnel-ferry.log"
    TLSARGS[stunnel]="--https-proxy h1 --proxy-pin $CERT_PIN"
    NOTE[stunnel]="\`stunnel4\` (bench/peers/stunnel.conf, TLS 1.3) in front of \`ferry serve -l 127.0.0.1:PORT\`: TLS without multiplexing, HTTP CONNECT by ferry; \`ferry bench --https-proxy h1\`; CPU of both"
}

start_squid_https() {
    local port dir
    command -v squid >/dev/null || { STATUS[squid-https]="did not start: squid not installed (squid-openssl)"; return 0; }
    squid -v 2>/dev/null | grep -q -- --with-openssl ||
        { STATUS[squid-https]="did not start: this squid has no TLS (install squid-openssl)"; return 0; }
    make_cert || { STATUS[squid-https]="did not start: ferry cert failed"; return 0; }
    port=$(free_port)
    dir=$TMPD/squid-https.$port
    mkdir -p "$dir"
    chmod 711 "$TMPD"
    chown proxy: "$dir" 2>/dev/null || chmod 777 "$dir"
    fill bench/peers/squid-https.conf "$TMPD/squid-https.conf" PORT="$port" DIR="$dir" \
        CERT="$CERT_DIR/cert.pem" KEY="$CERT_DIR/key.pem"
    start_bg "$TMPD/squid-https.out" squid -N -f "$TMPD/squid-https.conf"
    check_up squid-https "$port" "$LAST_PID" "$dir/cache.log" || return 0
    ADDR[squid-https]=127.0.0.1:$port PIDS[squid-https]=$LAST_PID ROOTS[squid-https]=$LAST_PID
    MODE[squid-https]=proxy CPUSRC[squid-https]=bench LOGF[squid-https]="$dir/cache.log $TMPD/squid-https.out"
    TLSARGS[squid-https]="--https-proxy h1 --proxy-pin $CERT_PIN"
    NOTE[squid-https]="\`squid -N -f squid-https.conf\` (bench/peers/squid-https.conf, Debian squid-openssl): \`https_port\` with the same certificate, otherwise as the Squid HTTP row; \`ferry bench --https-proxy h1\`"
}

start_nghttpx() {
    local port fpid
    command -v nghttpx >/dev/null || { STATUS[nghttpx]="did not start: nghttpx not installed (nghttp2-proxy)"; return 0; }
    make_cert || { STATUS[nghttpx]="did not start: ferry cert failed"; return 0; }
    start_backend_ferry nghttpx || return 0
    fpid=$LAST_PID
    port=$(free_port)
    # Windows as large as the bench's own (16 MiB), so neither side's flow
    # control is what is measured.
    start_bg "$TMPD/nghttpx.log" nghttpx --conf=/dev/null -s -f"127.0.0.1,$port" -b"127.0.0.1,$BPORT" \
        --workers=1 --no-ocsp --accesslog-file=/dev/null --errorlog-file=/dev/stderr \
        --frontend-http2-window-size=16M --frontend-http2-connection-window-size=1G \
        "$CERT_DIR/key.pem" "$CERT_DIR/cert.pem"
    if ! check_up nghttpx "$port" "$LAST_PID" "$TMPD/nghttpx.log"; then
        stop_pid "$fpid"
        return 0
    fi
    ADDR[nghttpx]=127.0.0.1:$port PIDS[nghttpx]=$LAST_PID,$fpid ROOTS[nghttpx]=$LAST_PID,$fpid
    MODE[nghttpx]=proxy CPUSRC[nghttpx]=bench LOGF[nghttpx]="$TMPD/nghttpx.log $TMPD/nghttpx-ferry.log"
    TLSARGS[nghttpx]="--https-proxy h2 --proxy-pin $CERT_PIN"
    NOTE[nghttpx]="\`nghttpx -s\` (HTTP/2 proxy mode, Debian nghttp2-proxy; one worker; stream window 16 MiB, connection window 1 GiB) terminating TLS and h2 and handing each CONNECT to \`ferry serve -l 127.0.0.1:PORT\` behind it; \`ferry bench --https-proxy h2\`; CPU of both"
}

# Each held connection costs two descriptors in the bench (client + echo)
# and two in the proxy; the hard limit here may be below what 10000 needs.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
CONNS_WANTED=$CONNS
if [ "$NOFILE" != unlimited ] && [ $((2 * CONNS + 1000)) -gt "$NOFILE" ]; then
    CONNS=$(((NOFILE - 1000) / 2 / 1000 * 1000))
    [ "$CONNS" -ge 1000 ] || CONNS=$(((NOFILE - 200) / 2))
    log "open-files limit $NOFILE: held connections lowered from $CONNS_WANTED to $CONNS"
fi
# The edge group: the bench holds a client and a backend descriptor per held
# connection, the edge two more; HAProxy wants 2 per maxconn at start.
EDGE_MAXCONN=65536
if [ "$NOFILE" != unlimited ]; then
    [ $((2 * EDGE_HOLD + 1000)) -le "$NOFILE" ] || EDGE_HOLD=$CONNS
    [ $((2 * EDGE_MAXCONN + 1000)) -le "$NOFILE" ] || EDGE_MAXCONN=$(((NOFILE - 1000) / 2))
fi

# Scenario variants: name|scenario|options|targets it applies to|how. "proxy":
# through each target's own instance (or --direct / --relay); "self": a ferry
# child that `ferry bench` starts itself (its own userlist and auth settings).
SOCKS_TCP=direct,ferry,dante,microsocks,ss-libev,haproxy
SOCKS_PROXIES=direct,ferry,dante,microsocks,ss-libev
UDP_TARGETS=direct,ferry,dante,ss-libev # microsocks has no UDP ASSOCIATE
# UDP through the tunnel: the ferries (ferry: the direct relay) self-hosted
# by the bench, under the allocation counter; ss-libev is its own pair.
UDP_TUNNEL_TARGETS=direct,ferry,ferry-tunnel,ferry-tunnel-wss,ss-libev
HTTP_TARGETS=ferry,tinyproxy,squid
HOP_TARGETS=direct,ferry,ferry-ferry,dante,ferry-dante,dante-dante
HTTPS_TARGETS=ferry,ferry-tls-h1,ferry-tls-h2,stunnel,squid-https,nghttpx
TUNNEL_TARGETS=ferry,ferry-tunnel,ferry-tunnel-wss,ssh-d,ss-libev-aes
EDGE_TARGETS=ferry-edge,haproxy-edge,nginx-edge
# Over --wan the tunnel group runs across the emulated paths instead
# (bench/compare_wan.sh), with plain TCP across the same path as the
# reference: its targets are placed there, not started on loopback.
# shellcheck source=bench/compare_wan.sh
. bench/compare_wan.sh
WAN_TARGETS=()
if [ ${#WANS[@]} -gt 0 ] && [[ " ${SCENARIOS[*]} " == *" tunnel "* ]]; then
    [ "$(id -u)" = 0 ] || [ "$DRY_RUN" = 1 ] || { echo "compare.sh: --wan needs root (network namespaces, TUN devices)" >&2; exit 2; }
    for t in "${WAN_ALL_TARGETS[@]}"; do # direct (the reference) always
        if [ "$t" = direct ] || { [ -n "$TARGETS_ARG" ] && [[ " ${TARGETS[*]} " == *" $t "* ]]; } ||
            { [ -z "$TARGETS_ARG" ] && [ "$t" != ferry-tunnel-wss ]; }; then WAN_TARGETS+=("$t"); fi
    done
    for spec in "${WANS[@]}"; do # a typo fails now, not after the other groups
        [ ! -x ./ferry ] || ./ferry bench wan --path "$spec" --help >/dev/null 2>&1 ||
            { echo "compare.sh: --wan: bad path '$spec' (see ferry bench wan --help)" >&2; exit 2; }
    done
fi
# What the bench speaks to each TLS target of the https group.
declare -A HTTPS_PROTO=([ferry-tls-h1]=h1 [ferry-tls-h2]=h2 [stunnel]=h1 [squid-https]=h1 [nghttpx]=h2)
VARIANTS=()
for s in "${SCENARIOS[@]}"; do
    case $s in
    throughput) VARIANTS+=("throughput-1|throughput|--connections 1 --payload 64k|$SOCKS_TCP|proxy"
        "throughput-8|throughput|--connections 8 --payload 64k|$SOCKS_TCP|proxy") ;;
    handshakes) VARIANTS+=("handshakes|handshakes|--concurrency 32|$SOCKS_TCP|proxy") ;;
    requests) VARIANTS+=("requests|requests||$SOCKS_PROXIES|proxy") ;;
    connections) VARIANTS+=("connections|connections|--connections $CONNS|$SOCKS_PROXIES|proxy") ;;
    udp) VARIANTS+=("udp-1x1200|udp|--connections 1 --payload 1200|$UDP_TARGETS|proxy"
        "udp-16x1200|udp|--connections 16 --payload 1200|$UDP_TARGETS|proxy"
        "udp-1x8192|udp|--connections 1 --payload 8192|$UDP_TARGETS|proxy"
        "udp-16x8192|udp|--connections 16 --payload 8192|$UDP_TARGETS|proxy"
        "udp-blast|udp|--blast --connections 16 --payload 512|$UDP_TARGETS|proxy"
        "udp-blast-nogro|udp|--blast --connections 16 --payload 512 --no-echo-gro|$UDP_TARGETS|proxy") ;;
    # "udptunnel": the ferries self-hosted (the tunnel pair with --tunnel
    # MODE, ferry's direct relay as a plain self-hosted ferry), each under
    # the allocation counter; ss-libev through its own instance.
    udp-tunnel) VARIANTS+=("udpt-16x1200|udp|--connections 16 --payload 1200|$UDP_TUNNEL_TARGETS|udptunnel"
        "udpt-16x8192|udp|--connections 16 --payload 8192|$UDP_TUNNEL_TARGETS|udptunnel"
        "udpt-blast|udp|--blast --connections 16 --payload 1200|$UDP_TUNNEL_TARGETS|udptunnel") ;;
    # With the cache on, the first setups all miss it at once (32 in flight,
    # and each worker has its own cache): each pays a full Argon2id
    # verification, about 1 s of both cores in all. A 3 s warm-up keeps that
    # out of the window, which is to measure the cache.
    auth) VARIANTS+=("auth-none|handshakes|--concurrency 32 --auth none|ferry|self"
        "auth-plain|handshakes|--concurrency 32 --auth plain --warmup 3|ferry|self"
        "auth-argon2|handshakes|--concurrency 32 --auth argon2 --warmup 3|ferry|self"
        "auth-argon2-nocache|handshakes|--concurrency 32 --auth argon2 --auth-cachettl 0|ferry|self"
        "auth-plain-nocache|handshakes|--concurrency 32 --auth plain --auth-cachettl 0|ferry|self") ;;
    http)
        VARIANTS+=("http-requests-socks|requests|--requests $HTTP_REQS|direct,ferry|proxy"
            "http-requests-connect|requests|--requests $HTTP_REQS --http-proxy connect|$HTTP_TARGETS|proxy"
            "http-requests-absolute|requests|--requests $HTTP_REQS --http-proxy absolute|$HTTP_TARGETS|proxy")
        # The SOCKS5 side of the CONNECT handshakes comparison is the
        # handshakes scenario itself when that runs too.
        [[ " ${SCENARIOS[*]} " == *" handshakes "* ]] ||
            VARIANTS+=("http-handshakes-socks|handshakes|--concurrency 32|direct,ferry|proxy")
        VARIANTS+=("http-handshakes-connect|handshakes|--concurrency 32 --http-proxy connect|$HTTP_TARGETS|proxy") ;;
    # "hop": the ferries of CHAIN self-hosted with --chain N, the others
    # through their own instance.
    # "https": the TLS targets add --https-proxy h1|h2 and their pin
    # (TLSARGS); ferry is the plain HTTP CONNECT baseline.
    https) VARIANTS+=("https-throughput-1|throughput|--connections 1 --payload 64k --http-proxy connect|$HTTPS_TARGETS|https"
        "https-throughput-8|throughput|--connections 8 --payload 64k --http-proxy connect|$HTTPS_TARGETS|https"
        "https-requests|requests|--http-proxy connect|$HTTPS_TARGETS|https") ;;
    # "stall": the same 7 streams alone and beside a stalled stream, on
    # ferry's tls:// listener over h2 (one connection).
    stall) VARIANTS+=("stall-7|throughput|--connections 7 --payload 64k --http-proxy connect|ferry-tls-h2|https"
        "stall-7-1|throughput|--connections 7 --stalled 1 --payload 64k --http-proxy connect|ferry-tls-h2|https") ;;
    hop) VARIANTS+=("hop-throughput-8|throughput|--connections 8 --payload 64k|$HOP_TARGETS|hop"
        "hop-handshakes|handshakes|--concurrency 32|$HOP_TARGETS|hop") ;;
    # "tunnel": the ferry pair of TUNNEL self-hosted with --tunnel MODE, the
    # others (ssh -D, ss-libev-aes, plain ferry) through their own instance.
    # requests: runnel's mode_perf, 1,000 requests then 8 x 1 MiB.
    tunnel) [ ${#WAN_TARGETS[@]} -gt 0 ] || VARIANTS+=("tunnel-throughput-1|throughput|--connections 1 --payload 64k|$TUNNEL_TARGETS|tunnel"
        "tunnel-throughput-8|throughput|--connections 8 --payload 64k|$TUNNEL_TARGETS|tunnel"
        "tunnel-handshakes|handshakes|--concurrency 32|$TUNNEL_TARGETS|tunnel"
        "tunnel-requests|requests|--requests 1000 --downloads 8 --download-size 1m|$TUNNEL_TARGETS|tunnel") ;;
    # "edge": ferry-edge self-hosted by `ferry bench edge`, the peers with
    # --edge-target; nginx has no Minecraft routing. The hold variant opens
    # EDGE_HOLD idle connections after a short window.
    edge) VARIANTS+=("edge-tls|edge|--hello tls --concurrency 32|$EDGE_TARGETS|edge"
        "edge-mc|edge|--hello mc --concurrency 32|ferry-edge,haproxy-edge|edge"
        "edge-pq-segments|edge|--hello tls-pq-segments --concurrency 32|$EDGE_TARGETS|edge"
        "edge-pq-records|edge|--hello tls-pq-records --concurrency 32|$EDGE_TARGETS|edge"
        "edge-hold|edge|--hello tls --concurrency 256 --hold $EDGE_HOLD --duration 0.5 --warmup 0|$EDGE_TARGETS|edge") ;;
    esac
done

# Which targets the selected variants use, and how.
declare -A USED_PROXY USED_SELF
for v in "${VARIANTS[@]}"; do
    IFS='|' read -r _ _ _ vt vhow <<<"$v"
    for t in ${vt//,/ }; do
        [[ " ${TARGETS[*]} " == *" $t "* ]] || continue
        if [ "$vhow" = self ] || { [ "$vhow" = hop ] && [ -n "${CHAIN[$t]:-}" ]; } ||
            { [ "$vhow" = tunnel ] && [ -n "${TUNNEL[$t]:-}" ]; } || [ "$t" = ferry-edge ] ||
            { [ "$vhow" = udptunnel ] && [[ $t == ferry* ]]; }; then
            USED_SELF[$t]=1
        else
            USED_PROXY[$t]=1
        fi
    done
done
USED_TARGETS=()
for t in "${TARGETS[@]}"; do
    [ -n "${USED_PROXY[$t]:-}${USED_SELF[$t]:-}" ] && USED_TARGETS+=("$t")
done
[ ${#USED_TARGETS[@]} -gt 0 ] || [ ${#WAN_TARGETS[@]} -gt 0 ] || { echo "compare.sh: no selected group applies to the selected targets" >&2; exit 2; }

# The Debian packages the selected targets need (and gnuplot for the chart):
# nothing else is installed.
NEEDED_PKGS=()
for t in "${USED_TARGETS[@]}"; do
    case $t in
    dante | ferry-dante | dante-dante) NEEDED_PKGS+=(dante-server) ;;
    microsocks) NEEDED_PKGS+=(microsocks) ;;
    ss-libev | ss-libev-aes) NEEDED_PKGS+=(shadowsocks-libev) ;;
    ssh-d) NEEDED_PKGS+=(openssh-server openssh-client) ;;
    haproxy) NEEDED_PKGS+=(haproxy) ;;
    tinyproxy) NEEDED_PKGS+=(tinyproxy) ;;
    # squid-openssl serves both Squid targets: never replace it with squid.
    squid) [[ " ${USED_TARGETS[*]} " == *" squid-https "* ]] || NEEDED_PKGS+=(squid) ;;
    squid-https) NEEDED_PKGS+=(squid-openssl) ;;
    stunnel) NEEDED_PKGS+=(stunnel4) ;;
    nghttpx) NEEDED_PKGS+=(nghttp2-proxy) ;;
    haproxy-edge) NEEDED_PKGS+=(haproxy) ;;
    nginx-edge) NEEDED_PKGS+=(nginx-light libnginx-mod-stream) ;;
    esac
done
for t in "${WAN_TARGETS[@]}"; do
    case $t in
    ss-libev-aes) NEEDED_PKGS+=(shadowsocks-libev) ;;
    ssh-d) NEEDED_PKGS+=(openssh-server openssh-client) ;;
    esac
done
[ ${#WAN_TARGETS[@]} -eq 0 ] || NEEDED_PKGS+=(iputils-ping)
NEEDED_PKGS+=(gnuplot-nox)
# Once each (three targets of the hop group need Dante).
mapfile -t NEEDED_PKGS < <(printf '%s\n' "${NEEDED_PKGS[@]}" | awk '!seen[$0]++')

if [ "$DRY_RUN" = 1 ]; then
    missing=()
    for p in "${NEEDED_PKGS[@]}"; do pkg_have "$p" || missing+=("$p"); done
    echo "compare.sh --dry-run: nothing is installed, started or written"
    echo "targets: ${USED_TARGETS[*]}"
    echo "groups: ${SCENARIOS[*]}"
    echo "packages needed: ${NEEDED_PKGS[*]}"
    if [ "$(id -u)" = 0 ]; then
        echo "packages it would install: ${missing[*]:-none}"
    else
        echo "packages missing (not root: it would not install them, and measure without): ${missing[*]:-none}"
    fi
    echo "rounds: $ROUNDS, window ${DURATION}s, warm-up ${WARMUP}s, held connections $CONNS"
    for v in "${VARIANTS[@]}"; do
        IFS='|' read -r vname scen vopts vtargets vhow <<<"$v"
        for t in "${USED_TARGETS[@]}"; do
            [[ ",$vtargets," == *",$t,"* ]] || continue
            chain=""
            [ "$vhow" = hop ] && [ -n "${CHAIN[$t]:-}" ] && chain=" --chain ${CHAIN[$t]}"
            [ "$vhow" = https ] && [ -n "${HTTPS_PROTO[$t]:-}" ] && chain=" --https-proxy ${HTTPS_PROTO[$t]} --proxy-pin PIN"
            [ "$vhow" = tunnel ] && [ -n "${TUNNEL[$t]:-}" ] && chain=" --tunnel ${TUNNEL[$t]}"
            if [ "$vhow" = udptunnel ] && [[ $t == ferry* ]]; then
                chain="${TUNNEL[$t]:+ --tunnel ${TUNNEL[$t]}} [ALLOC_COUNT_DIR=DIR LD_PRELOAD=alloccount.so]"
            fi
            [ "$vhow" = edge ] && chain=" --proxy-workers $EDGE_WORKERS${EDGE_CPU:+ --proxy-cgroup CGROUP}"
            [ "$vhow" = edge ] && [ "$t" != ferry-edge ] && chain=" --edge-target ADDR --target-port PORT --proxy-pid PID"
            echo "run: $vname $t: ferry bench $scen --runs 1 --json --allow-failures --duration $DURATION --warmup $WARMUP${vopts:+ $vopts}$chain ($vhow)"
        done
    done
    for ((k = 1; k <= ${#WANS[@]}; k++)); do
        [ ${#WAN_TARGETS[@]} -gt 0 ] || break
        echo "path $k: ferry bench wan --path ${WANS[$((k - 1))]} (targets: ${WAN_TARGETS[*]})"
        while IFS='|' read -r vname scen vopts vtargets vhow; do
            for t in "${WAN_TARGETS[@]}"; do
                [[ ",$vtargets," == *",$t,"* ]] || continue
                echo "run: $vname $t: in A: ferry bench $scen --runs 1 --json --allow-failures --duration $WAN_DURATION --warmup $WAN_WARMUP --target 10.77.0.2:$WAN_SINK $([ "$t" = direct ] && echo --direct || echo "--proxy 127.0.0.1:${WAN_PORT[$t]}") $vopts$([ "$vhow" = wanbulk ] && echo " (beside $WAN_BULK one-way bulk streams)")"
            done
        done < <(wan_variants "$k")
    done
    [ -n "$EDGE_CPU" ] && echo "edge CPU budget: every edge in one cgroup, $EDGE_CG_QUOTA us per $EDGE_CG_PERIOD us ($EDGE_CPU core)"
    echo "report: $OUT"
    echo "raw results: ${OUT%.md}.jsonl"
    echo "chart: ${OUT%.md}.svg"
    exit 0
fi

# ---- the run ------------------------------------------------------------------
install_peers
if [ -n "$EDGE_CPU" ]; then edge_cg_make || exit 1; fi
command -v ss >/dev/null || { echo "compare.sh: needs ss (iproute2)" >&2; exit 1; }

FERRY=$TMPD/ferry
if [ "$BUILD_HEAD" = 1 ]; then
    # The committed sources only, built apart from the work tree (which
    # others may be editing and rebuilding).
    log "building ferry from HEAD ($(git rev-parse --short HEAD)) in $TMPD/head"
    mkdir -p "$TMPD/head"
    git archive HEAD | tar -x -C "$TMPD/head"
    if ! make -C "$TMPD/head" -j"$(nproc)" ferry >"$TMPD/head-build.log" 2>&1; then
        tail -n 20 "$TMPD/head-build.log" >&2
        echo "compare.sh: --build-head: the build failed" >&2
        exit 1
    fi
    cp "$TMPD/head/ferry" "$FERRY"
    FERRY_BUILT=$(date -u -r "$FERRY" '+%Y-%m-%d %H:%M UTC')
    FERRY_COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown) (clean build of the commit, --build-head)"
else
    if [ ! -x ./ferry ]; then
        log "building ferry"
        make -j"$(nproc)" ferry >&2
    fi
    # A private copy: others may rebuild ./ferry while this runs.
    cp ./ferry "$FERRY"
    FERRY_BUILT=$(date -u -r ./ferry '+%Y-%m-%d %H:%M UTC')
    FERRY_COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown), ./ferry as found"
    if [ -n "$(git status --porcelain --untracked-files=no -- src Makefile 2>/dev/null)" ]; then
        FERRY_COMMIT+=" (the work tree has uncommitted changes in src/; --build-head measures the commit alone)"
    fi
fi
FERRY_VERSION=$("$FERRY" --version 2>/dev/null | head -n1 || echo unknown)
# The udp-tunnel group counts the self-hosted ferries' allocations with an
# LD_PRELOAD counter (bench/micro/alloccount.c): built here if missing (from
# HEAD's tree with --build-head), a private copy like the binary's.
ALLOC_SO=""
if [[ " ${SCENARIOS[*]} " == *" udp-tunnel "* ]]; then
    atree=$ROOT
    [ "$BUILD_HEAD" = 1 ] && atree=$TMPD/head
    if make -C "$atree" build/micro/alloccount.so >"$TMPD/alloccount-build.log" 2>&1; then
        cp "$atree/build/micro/alloccount.so" "$TMPD/alloccount.so"
        ALLOC_SO=$TMPD/alloccount.so
    else
        log "could not build build/micro/alloccount.so: no allocation figures ($(tail -n 1 "$TMPD/alloccount-build.log"))"
    fi
fi
FERRY_VERSION+=", binary built $FERRY_BUILT"


start_target() {
    case $1 in
    ferry) start_ferry ;;
    dante) start_dante ;;
    microsocks) start_microsocks ;;
    ss-libev) start_ss ss-libev chacha20-ietf-poly1305 ;;
    ss-libev-aes) start_ss ss-libev-aes aes-256-gcm ;;
    ssh-d) start_ssh ;;
    haproxy) start_haproxy ;;
    tinyproxy) start_tinyproxy ;;
    squid) start_squid ;;
    ferry-dante) start_ferry_dante ;;
    dante-dante) start_dante_dante ;;
    ferry-tls-h1) start_ferry_tls ferry-tls-h1 h1 ;;
    ferry-tls-h2) start_ferry_tls ferry-tls-h2 h2 ;;
    stunnel) start_stunnel ;;
    squid-https) start_squid_https ;;
    nghttpx) start_nghttpx ;;
    haproxy-edge) start_haproxy_edge ;;
    nginx-edge) start_nginx_edge ;;
    esac
}

ECHO_PORT=$(free_port)
# The edge group's backends (`ferry bench edge` opens them): two neighbouring
# free ports.
EDGE_BACKEND=""
for ((i = 0; i < 20; i++)); do
    p=$(free_port)
    if ! listening "$((p + 1))"; then EDGE_BACKEND=$p PICKED+=" $((p + 1))"; break; fi
done
[ -n "$EDGE_BACKEND" ] || { echo "compare.sh: no two free neighbouring ports for the edge backends" >&2; exit 1; }
for t in "${USED_TARGETS[@]}"; do
    if [ "$t" = direct ]; then
        STATUS[direct]=ok MODE[direct]=direct CPUSRC[direct]=none NOTE[direct]="no proxy: the bench connects to its targets"
    elif [ -n "${USED_PROXY[$t]:-}" ]; then
        start_target "$t"
    elif [ -n "${TUNNEL[$t]:-}" ]; then # the tunnel group's pair
        STATUS[$t]=ok MODE[$t]=self CPUSRC[$t]=bench
        NOTE[$t]="self-hosted by \`ferry bench --tunnel ${TUNNEL[$t]}\`: a ferry with a SOCKS5 port and one \`https://\` outbound (\`mux = h2\`, pinned; what \`ferry client https://ADDR --pin PIN socks\` runs) -> a ferry with a \`tls://\` listener and a throwaway certificate (default configuration otherwise); CPU of both"
        [ "${TUNNEL[$t]}" = wss ] && NOTE[$t]+="; wss: the HTTP/2 connection inside a WebSocket on /tunnel (\`websocket = /tunnel\` on both ends, \`ferry client wss://ADDR/tunnel\`)"
    elif [ "$t" = ferry-edge ]; then # the edge group's ferry: `ferry bench edge` starts it
        STATUS[$t]=ok MODE[$t]=self CPUSRC[$t]=bench
        NOTE[$t]="self-hosted by \`ferry bench edge --proxy-workers $EDGE_WORKERS\`: a ferry with an \`[edge bench]\` section (sniff auto, five routes, no flood limits, access_log = no), a fresh one each run"
    elif [ -n "${CHAIN[$t]:-}" ] && [ "${CHAIN[$t]}" -gt 1 ]; then # the hop group's chains
        STATUS[$t]=ok MODE[$t]=self CPUSRC[$t]=bench
        NOTE[$t]="self-hosted by \`ferry bench --chain ${CHAIN[$t]}\`: ${CHAIN[$t]} ferries in a row (default configuration, each but the last with \`outbound = next\` to the next as its SOCKS5 parent); CPU of all"
    else # ferry for the auth, hop and udp-tunnel groups only: the bench starts its own
        STATUS[$t]=ok MODE[$t]=self CPUSRC[$t]=bench
        NOTE[$t]="self-hosted by \`ferry bench\` (auth, hop and udp-tunnel groups only)"
    fi
    if [[ " ${SCENARIOS[*]} " == *" udp-tunnel "* ]] && [[ $t == ferry* ]] && [[ ",$UDP_TUNNEL_TARGETS," == *",$t,"* ]]; then
        if [ -n "$ALLOC_SO" ]; then
            NOTE[$t]+="; udp-tunnel group: \`ferry bench\` runs with \`ALLOC_COUNT_DIR=DIR LD_PRELOAD=alloccount.so\` (bench/micro/alloccount.c: one relaxed atomic add per malloc and free), which the ferries it starts inherit: their allocations in the measurement window are counted"
        else
            NOTE[$t]+="; udp-tunnel group: no allocation counter (build/micro/alloccount.so could not be built)"
        fi
    fi
    if [ -n "$EDGE_CG" ] && [[ $t == *-edge ]]; then
        how=""
        [ "$t" != ferry-edge ] || how=", joined by \`ferry bench edge --proxy-cgroup\`"
        NOTE[$t]+="; under a CPU budget of $EDGE_CPU core (a cgroup with cpu quota $EDGE_CG_QUOTA us per $EDGE_CG_PERIOD us$how)"
    fi
    if [ "${STATUS[$t]}" = ok ]; then log "$t: ${ADDR[$t]:-${MODE[$t]}} pid ${PIDS[$t]:--}"; fi
done
if [ -n "${USED_SELF[ferry]:-}" ] && [ -n "${USED_PROXY[ferry]:-}" ]; then
    NOTE[ferry]+="; the auth, hop and udp-tunnel groups run a ferry child of \`ferry bench\` instead (same binary and defaults; plus a userlist for auth, \`--chain 1\` for hop)"
fi

OUTDIR=$(dirname "$OUT")
mkdir -p "$OUTDIR"
JSONL=${OUT%.md}.jsonl
SVG=${OUT%.md}.svg
RAW=$TMPD/results.jsonl

{
    "$PY" bench/report.py meta --cmdline "$CMDLINE" --rounds "$ROUNDS" --duration "$DURATION" \
        --warmup "$WARMUP" --connections "$CONNS" --connections-wanted "$CONNS_WANTED" \
        --nofile "$NOFILE" --quick "$QUICK" --ferry-version "$FERRY_VERSION" \
        --ferry-commit "$FERRY_COMMIT" --echo-port "$ECHO_PORT" --treemon "$TREEMON" --settle "$SETTLE" \
        --edge-cpu "$EDGE_CPU" \
        --groups "${SCENARIOS[*]}" --variants "$(printf '%s\n' "${VARIANTS[@]}")"
    for t in "${USED_TARGETS[@]}"; do
        "$PY" -c 'import json,sys; print(json.dumps({"peer":{"target":sys.argv[1],"status":sys.argv[2],"mode":sys.argv[3],"addr":sys.argv[4],"pids":sys.argv[5],"cpu_source":sys.argv[6],"how":sys.argv[7]}}))' \
            "$t" "${STATUS[$t]}" "${MODE[$t]:-}" "${ADDR[$t]:-}" "${PIDS[$t]:-}" "${CPUSRC[$t]:-}" "${NOTE[$t]:-}"
    done
} >"$RAW"

# A fresh process for the connections scenario and the edge group's held
# connections: memory a proxy kept from earlier runs (allocator caches,
# HAProxy's pools) would hide what held connections cost, so each proxy is
# restarted (on a new port) first.
restart_target() {
    local t=$1 p
    for p in ${ROOTS[$t]//,/ }; do stop_pid "$p"; done
    start_target "$t"
}

# Which of a target's processes ended, how (exit status or signal), and the
# first error-looking line of its logs: for the report.
gone_info() {
    local t=$1 p st name out="" f
    for p in ${ROOTS[$t]//,/ }; do
        if kill -0 "$p" 2>/dev/null && ! zombie "$p"; then continue; fi
        name=${LIVE[$p]:-pid}
        st=0
        wait "$p" 2>/dev/null || st=$?
        unset "LIVE[$p]"
        if [ "$st" -gt 128 ] && [ "$st" -lt 160 ]; then
            out+="$name (pid $p) killed by signal $((st - 128))$(kill -l $((st - 128)) 2>/dev/null | sed 's/^/ SIG/'); "
        elif [ "$st" = 127 ]; then
            out+="$name (pid $p) ended; "
        else
            out+="$name (pid $p) exited with status $st; "
        fi
    done
    for f in ${LOGF[$t]:-}; do
        [ -s "$f" ] && out+="$(basename "$f") ends: $(tail -n 1 "$f" | tr -d '\r' | cut -c1-160); "
    done
    echo "${out%; }"
}

peer_event() { # peer_event TARGET EVENT: a line for the report's target table
    "$PY" -c 'import json,sys; print(json.dumps({"peer_update":{"target":sys.argv[1],"event":sys.argv[2],"status":sys.argv[3]}}))' \
        "$1" "$2" "${STATUS[$1]}" >>"$RAW"
}

# A target found dead: record how, and start it again (at most 3 times) so
# the scenarios after it are still measured. 0 when it runs again.
declare -A REVIVED
revive() { # revive TARGET WHEN
    local t=$1 when=$2 info
    info=$(gone_info "$t" || true)
    REVIVED[$t]=$((${REVIVED[$t]:-0} + 1))
    if [ "${REVIVED[$t]}" -gt 3 ]; then
        STATUS[$t]="died $when: $info (not restarted: it died 3 times already)"
        log "$t ${STATUS[$t]}"
        peer_event "$t" "died $when: $info; not restarted again"
        return 1
    fi
    restart_target "$t"
    if [ "${STATUS[$t]}" = ok ]; then
        log "$t died $when: $info; restarted on ${ADDR[$t]}"
        peer_event "$t" "died $when: $info; restarted"
        return 0
    fi
    log "$t died $when: $info; restart failed: ${STATUS[$t]}"
    peer_event "$t" "died $when: $info; restart failed: ${STATUS[$t]}"
    return 1
}

alive() { # every process of a target still running?
    local p
    for p in ${ROOTS[$1]//,/ }; do
        kill -0 "$p" 2>/dev/null || return 1
        [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" != Z ] || return 1
    done
}

T_START=$(date +%s)
NRUNS=0
for ((round = 1; round <= ROUNDS; round++)); do
    # Rotate the target order each round so no target always runs first.
    order=()
    n=${#USED_TARGETS[@]}
    for ((i = 0; i < n; i++)); do order+=("${USED_TARGETS[$(((i + round - 1) % n))]}"); done
    for v in "${VARIANTS[@]}"; do
        IFS='|' read -r vname scen vopts vtargets vhow <<<"$v"
        if [ "$vname" = auth-none ]; then
            # One Argon2id verification, timed on this machine (ferry passwd
            # computes the same hash a verification does), and the verifier
            # threads of a ferry with a userlist: the uncached ceiling.
            log "round $round/$ROUNDS  argon2 timing"
            "$PY" bench/argon2time.py --ferry "$FERRY" --round "$round" >>"$RAW" 2>"$TMPD/argon2.err" ||
                log "  argon2 timing failed: $(tail -n 1 "$TMPD/argon2.err")"
        fi
        for t in "${order[@]}"; do
            [[ ",$vtargets," == *",$t,"* ]] || continue
            [ "${STATUS[$t]}" = ok ] || continue
            chain="" tunnel="" udpself="" pre=()
            if [ "$vhow" = hop ] && [ -n "${CHAIN[$t]:-}" ]; then chain=${CHAIN[$t]}; fi
            if [ "$vhow" = tunnel ] && [ -n "${TUNNEL[$t]:-}" ]; then tunnel=${TUNNEL[$t]}; fi
            if [ "$vhow" = udptunnel ] && [[ $t == ferry* ]]; then
                # A fresh counter directory per run; the bench reads the
                # ferries' counters at the edges of its window.
                udpself=1 tunnel=${TUNNEL[$t]:-}
                if [ -n "$ALLOC_SO" ]; then
                    rm -rf "$TMPD/alloc" && mkdir "$TMPD/alloc"
                    pre=(env "ALLOC_COUNT_DIR=$TMPD/alloc" "LD_PRELOAD=$ALLOC_SO")
                fi
            fi
            if [ "$vhow" = self ] || [ -n "$chain$tunnel$udpself" ] || [ "$t" = ferry-edge ]; then mode=self; else mode=${MODE[$t]}; fi
            err=""
            if [ "$mode" != direct ] && [ "$mode" != self ] && ! alive "$t"; then
                revive "$t" "before round $round, $vname" || err="the proxy is no longer running: ${STATUS[$t]}"
            elif { [ "$scen" = connections ] && [ "$mode" = proxy ]; } ||
                { [ "$vname" = edge-hold ] && [ "$mode" = edge ]; }; then
                restart_target "$t"
                if [ "${STATUS[$t]}" != ok ]; then
                    err="could not restart it for the connections run: ${STATUS[$t]}"
                    peer_event "$t" "restart before round $round, $vname failed"
                fi
            fi
            args=(--runs 1 --json --allow-failures --duration "$DURATION" --warmup "$WARMUP")
            case $mode in
            direct) args+=(--direct) ;;
            self) args+=(--ferry "$FERRY" ${chain:+--chain "$chain"} ${tunnel:+--tunnel "$tunnel"})
                [ "$vhow" = edge ] && args+=(--proxy-workers "$EDGE_WORKERS" ${EDGE_CG:+--proxy-cgroup "$EDGE_CG"}) ;;
            edge) # the Minecraft variant goes to HAProxy's Lua frontend
                eaddr=${ADDR[$t]}
                [[ " $vopts " == *" --hello mc "* ]] && eaddr=${MCADDR[$t]:-${ADDR[$t]}}
                args+=(--edge-target "$eaddr" --target-port "$EDGE_BACKEND" --proxy-pid "${PIDS[$t]}") ;;
            proxy | http) args+=(--proxy "${ADDR[$t]}" --proxy-pid "${PIDS[$t]}") ;;
            relay) args+=(--relay "${ADDR[$t]}" --target-port "$ECHO_PORT" --proxy-pid "${PIDS[$t]}") ;;
            esac
            # shellcheck disable=SC2206
            if [ -n "$vopts" ]; then args+=($vopts); fi
            # shellcheck disable=SC2206
            if [ "$vhow" = https ] && [ -n "${TLSARGS[$t]:-}" ]; then args+=(${TLSARGS[$t]}); fi
            mon=""
            ran=0
            if [ -z "$err" ]; then
                ran=1
                log "round $round/$ROUNDS  $vname  $t"
                if [ "$TREEMON" = 1 ] && [ "$mode" != direct ] && [ "$mode" != self ]; then
                    memflag=""
                    [ "$scen" = connections ] && memflag=--mem
                    "$PY" bench/treemon.py watch "${ROOTS[$t]}" $memflag >"$TMPD/mon.json" &
                    MON=$!
                    LIVE[$MON]=treemon
                    mon=$TMPD/mon.json
                    sleep 0.05
                fi
                rc=0
                # treemon.py run: the bench, and what other work on this
                # shared machine took meanwhile (for the report's noise notes).
                rm -f "$TMPD/other.json"
                "$PY" bench/treemon.py run --exclude-tree "$MAINPID" --settle "$SETTLE" --out "$TMPD/other.json" -- \
                    timeout -k 5 300 "${pre[@]}" "$FERRY" bench "$scen" "${args[@]}" >"$TMPD/run.out" 2>"$TMPD/run.err" || rc=$?
                if [ -n "$mon" ]; then
                    kill -TERM "$MON" 2>/dev/null || true
                    wait "$MON" 2>/dev/null || true
                    unset "LIVE[$MON]"
                fi
                if [ $rc = 124 ] || [ $rc = 137 ]; then
                    err="the bench did not finish within 300 s"
                elif [ $rc != 0 ]; then
                    err="the bench exited with status $rc"
                fi
                NRUNS=$((NRUNS + 1))
            else
                : >"$TMPD/run.out"
                : >"$TMPD/run.err"
            fi
            died=""
            if [ "$ran" = 1 ] && [ "$mode" != direct ] && [ "$mode" != self ] && ! alive "$t"; then
                died="the proxy died during this run"
            fi
            other=""
            [ "$ran" = 1 ] && [ -s "$TMPD/other.json" ] && other=$TMPD/other.json
            "$PY" bench/treemon.py annotate --line "$TMPD/run.out" ${mon:+--mon "$mon"} ${other:+--other "$other"} \
                --stderr "$TMPD/run.err" --round "$round" --variant "$vname" --scenario "$scen" \
                --target "$t" --cpu-source "${CPUSRC[$t]}" --error "$err" --note "$died" >>"$RAW"
            if [ -n "$err" ]; then log "  $t: $err"; fi
            if [ -n "$died" ]; then revive "$t" "in round $round, $vname" || true; fi
        done
    done
done
if [ ${#WAN_TARGETS[@]} -gt 0 ]; then
    wan_peers >>"$RAW"
    wan_group
fi
T_END=$(date +%s)
"$PY" -c 'import json,sys; print(json.dumps({"done":{"runs":int(sys.argv[1]),"seconds":int(sys.argv[2]),"loadavg_end":open("/proc/loadavg").read().split()[:3]}}))' \
    "$NRUNS" "$((T_END - T_START))" >>"$RAW"

cp "$RAW" "$JSONL"
[ -n "$RESULTS" ] && cp "$RAW" "$RESULTS"
"$PY" bench/report.py render "$RAW" --out "$OUT" --svg "$SVG"
log "$NRUNS runs in $((T_END - T_START)) s; wrote $OUT, $JSONL$([ -s "$SVG" ] && echo ", $SVG")"
