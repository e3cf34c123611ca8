# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# bench/compare_wan.sh: the tunnel group across emulated wide-area paths
# (compare.sh --wan SPEC, repeatable). Sourced by compare.sh, which owns
# the process bookkeeping (start_bg, stop_pid, LIVE), the raw results
# ($RAW) and the options; this file only places the tunnels on the path
# and runs them.
#
# Per round and per path: `ferry bench wan --path SPEC` holds two network
# namespaces with the emulated path between them (A: 10.77.0.1, B:
# 10.77.0.2); in B run `ferry bench sink` (the origins: source, sink,
# HTTP) and each tunnel's server half (ferry serve with a tls:// listener,
# sshd, ss-server), in A each tunnel's client half (ferry client, ssh -D,
# ss-local) and `ferry bench --proxy 127.0.0.1:PORT --target
# 10.77.0.2:9000`. Plain TCP (`--direct --target`) across the same path is
# the reference. Each namespace pair is fresh, so the ports are fixed.
# While each run goes, `ping` from A to B measures the RTT under load;
# bench/report.py wanrtt adds it (and the bulk's figures of the latency
# run) to the run's JSON line. Everything is stopped, and the namespaces
# removed, before the next path.

WAN_SINK=9000
# The targets placed on the path: the client half's SOCKS5 port in A.
declare -A WAN_PORT=([ferry-tunnel]=1080 [ferry-tunnel-2c]=1083 [ferry-tunnel-wss]=1084 [ssh-d]=1081
    [ss-libev-aes]=1082 [ferry-tunnel-fo]=1085)
# shellcheck disable=SC2034 # compare.sh chooses from it
WAN_ALL_TARGETS=(direct ferry-tunnel ferry-tunnel-fo ferry-tunnel-2c ferry-tunnel-wss ssh-d ss-libev-aes)

# The variants of path K (1-based): name|scenario|options|targets|how.
# Throughput is one way (down: a source in B sends, the client in A
# reads and checks), so nothing but TCP's own windows limits what is in
# flight. "latency": WAN_BULK one-way bulk streams run through the same
# tunnel while small requests go on a fixed timetable (--rate).
wan_variants() { # wan_variants K: the rows --wan-rows keeps
    local k=$1 line
    while IFS= read -r line; do
        local row=${line%%|*}
        row=${row#wan"$k"-}
        [ -z "$WAN_ROWS" ] || [[ ",$WAN_ROWS," == *",$row,"* ]] && echo "$line"
    done < <(wan_variants_all "$k")
}
wan_variants_all() { # wan_variants_all K
    local k=$1 T=direct,ferry-tunnel,ferry-tunnel-wss,ssh-d,ss-libev-aes lreq
    lreq=$(awk -v r="$WAN_RATE" -v d="$WAN_DURATION" 'BEGIN { n = int(r * d); print (n < 20 ? 20 : n) }')
    echo "wan$k-throughput-1|throughput|--connections 1 --direction down --payload 64k|$T|wan"
    # Two tunnel connections (ferry client -w 2) where loss makes one
    # connection's window the limit.
    local t8=$T
    [[ ",${WANS[$((k - 1))]}," =~ ,loss=0*[1-9]|,loss=0*\.[0-9]*[1-9] ]] && t8+=,ferry-tunnel-2c
    echo "wan$k-throughput-8|throughput|--connections 8 --direction down --payload 64k|$t8|wan"
    # --fast-open saves a round trip before a request's first byte: the
    # rows where that shows.
    echo "wan$k-requests|requests|--requests $WAN_REQUESTS --warm-requests 20 --downloads 8 --download-size 1m|$T,ferry-tunnel-fo|wan"
    echo "wan$k-latency|requests|--rate $WAN_RATE --requests $lreq --warm-requests 0 --downloads 1 --download-size 1k|$T,ferry-tunnel-fo|wanbulk"
}

# Things that need making once: a certificate for ferry's server half
# (pinned by the client) and SSH keys.
wan_prepare() {
    local d=$TMPD/wan
    mkdir -p "$d" && chmod 700 "$d"
    WAN_PIN=$("$FERRY" cert --out "$d/cert" --name 10.77.0.2 2>/dev/null | head -n1) || WAN_PIN=""
    ssh-keygen -q -t ed25519 -N '' -C ferry-bench-host -f "$d/host_key" </dev/null >/dev/null 2>&1 || true
    ssh-keygen -q -t ed25519 -N '' -C ferry-bench-user -f "$d/user_key" </dev/null >/dev/null 2>&1 || true
    cp "$d/user_key.pub" "$d/authorized_keys" 2>/dev/null || true
    [ -d /run/sshd ] || install -d -m 0755 /run/sshd
    printf '%s\n' "ListenAddress 10.77.0.2" "HostKey $d/host_key" \
        "AuthorizedKeysFile $d/authorized_keys" "PermitRootLogin prohibit-password" \
        "PubkeyAuthentication yes" "PasswordAuthentication no" "KbdInteractiveAuthentication no" \
        "UsePAM no" "StrictModes no" "AllowTcpForwarding yes" "PermitOpen any" \
        "X11Forwarding no" "PrintMotd no" "PidFile none" "LogLevel ERROR" >"$d/sshd_config"
    # ferry's server half: a tls:// listener (and one with a WebSocket on
    # /tunnel for wss), the sink's address allowed (private addresses are
    # refused by default); open_proxy, as in a namespace of our own
    # nobody else reaches it (what `ferry bench --wan` writes too).
    local tls="[tls]"$'\n'"cert = $d/cert/cert.pem"$'\n'"key = $d/cert/key.pem"
    local rules="[rules]"$'\n'"allow to 10.77.0.2/32"
    printf 'listen = tls://10.77.0.2:8443\nopen_proxy = yes\n%s\n%s\n' "$tls" "$rules" >"$d/serve.conf"
    printf 'listen = tls://10.77.0.2:8444 websocket=/tunnel\nopen_proxy = yes\n%s\n%s\n' "$tls" "$rules" >"$d/serve-wss.conf"
    fill bench/peers/shadowsocks.json "$d/ss.json" PORT=1082 SERVER_PORT=8388 \
        PASSWORD="$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" METHOD=aes-256-gcm
    sed -i -e '/^[[:space:]]*#/d' -e 's/"server": "127.0.0.1"/"server": "10.77.0.2"/' "$d/ss.json"
}

# in_ns NS CMD...: CMD in a namespace (ip netns exec execs it: the PID
# compare.sh tracks is CMD's own).
in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# tun_counts: "DROPPED PACKETS" of both TUN devices (the packets the kernel
# dropped because the forwarder had not read its queue, and those it queued).
tun_counts() {
    local ns dr=0 pk=0 a b
    for ns in "$WNS_A" "$WNS_B"; do
        a=$(in_ns "$ns" cat /sys/class/net/wan0/statistics/tx_dropped 2>/dev/null || echo 0)
        b=$(in_ns "$ns" cat /sys/class/net/wan0/statistics/tx_packets 2>/dev/null || echo 0)
        dr=$((dr + a)) pk=$((pk + b))
    done
    echo "$dr $pk"
}

# tcp_counts: "RETRANSMITTED SENT" TCP segments of both namespaces (from
# /proc/net/snmp, per namespace): the run's senders' retransmissions, what
# a tunnel's streams wait for behind a lost segment.
tcp_counts() {
    local ns r=0 o=0 line
    for ns in "$WNS_A" "$WNS_B"; do
        line=$(in_ns "$ns" awk '/^Tcp:/ { if (h) { print $13, $12 } else h = 1 }' /proc/net/snmp 2>/dev/null)
        [ -n "$line" ] || continue
        r=$((r + ${line% *})) o=$((o + ${line#* }))
    done
    echo "$r $o"
}

# wan_wait NS PORT PID: 0 when PORT listens in NS within 10 s, 1 otherwise.
wan_wait() {
    local i
    for ((i = 0; i < 200; i++)); do
        in_ns "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
        kill -0 "$3" 2>/dev/null && ! zombie "$3" || return 1
        sleep 0.05
    done
    return 1
}

# wan_start_half NAME NS PORT LOG CMD...: one half of a target; its PID
# appended to WPIDS[NAME]; 1 (and WSTATUS[NAME]) when it did not listen.
declare -A WPIDS WSTATUS
WAN_LIVE=()
wan_start_half() {
    local name=$1 ns=$2 port=$3 logf=$4
    shift 4
    start_bg "$logf" ip netns exec "$ns" "$@"
    WAN_LIVE+=("$LAST_PID")
    WPIDS[$name]+="${WPIDS[$name]:+,}$LAST_PID"
    if ! wan_wait "$ns" "$port" "$LAST_PID"; then
        WSTATUS[$name]="did not start over the path: $(why "$logf")"
        return 1
    fi
}

# The path K up with everything on it. Sets WAN_PID, WNS_A, WNS_B.
wan_up() { # wan_up K SPEC TARGETS...
    local k=$1 spec=$2 d=$TMPD/wan i t
    shift 2
    WPIDS=() WSTATUS=() WAN_LIVE=()
    start_bg "$d/path$k.log" "$FERRY" bench wan --path "$spec"
    WAN_PID=$LAST_PID
    for ((i = 0; i < 200; i++)); do
        grep -q 'ready:' "$d/path$k.log" 2>/dev/null && break
        kill -0 "$WAN_PID" 2>/dev/null || break
        sleep 0.05
    done
    if ! grep -q 'ready:' "$d/path$k.log" 2>/dev/null; then
        WAN_ERR="the path did not come up: $(why "$d/path$k.log")"
        return 1
    fi
    WNS_A=ferrywan-$WAN_PID-a WNS_B=ferrywan-$WAN_PID-b
    start_bg "$d/sink.log" ip netns exec "$WNS_B" "$FERRY" bench sink --listen 10.77.0.2:$WAN_SINK
    WAN_SINK_PID=$LAST_PID
    WAN_LIVE+=("$LAST_PID")
    wan_wait "$WNS_B" $WAN_SINK "$WAN_SINK_PID" || { WAN_ERR="the sink did not start: $(why "$d/sink.log")"; return 1; }
    for t in "$@"; do
        case $t in
        ferry-tunnel | ferry-tunnel-2c | ferry-tunnel-fo)
            [ -n "${WPIDS[ferry-serve]:-}${WSTATUS[ferry-serve]:-}" ] ||
                wan_start_half ferry-serve "$WNS_B" 8443 "$d/serve.log" "$FERRY" serve -c "$d/serve.conf" || true
            if [ -n "${WSTATUS[ferry-serve]:-}" ]; then WSTATUS[$t]=${WSTATUS[ferry-serve]}; continue; fi
            WPIDS[$t]=${WPIDS[ferry-serve]}
            wan_start_half "$t" "$WNS_A" "${WAN_PORT[$t]}" "$d/$t.log" "$FERRY" client \
                "https://10.77.0.2:8443" --pin "$WAN_PIN" -w "$([ "$t" = ferry-tunnel-2c ] && echo 2 || echo 1)" \
                $([ "$t" = ferry-tunnel-fo ] && echo --fast-open) \
                "127.0.0.1:${WAN_PORT[$t]}:socks" || true ;;
        ferry-tunnel-wss)
            if wan_start_half "$t" "$WNS_B" 8444 "$d/serve-wss.log" "$FERRY" serve -c "$d/serve-wss.conf"; then
                wan_start_half "$t" "$WNS_A" "${WAN_PORT[$t]}" "$d/$t.log" "$FERRY" client \
                    "wss://10.77.0.2:8444/tunnel" --pin "$WAN_PIN" -w 1 "127.0.0.1:${WAN_PORT[$t]}:socks" || true
            fi ;;
        ssh-d)
            if wan_start_half "$t" "$WNS_B" 2222 "$d/sshd.log" "$(command -v sshd)" -D -e -f "$d/sshd_config" -p 2222; then
                wan_start_half "$t" "$WNS_A" "${WAN_PORT[$t]}" "$d/ssh.log" ssh -N -D "127.0.0.1:${WAN_PORT[$t]}" \
                    -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
                    -o ExitOnForwardFailure=yes -o LogLevel=ERROR -i "$d/user_key" -p 2222 root@10.77.0.2 || true
            fi ;;
        ss-libev-aes)
            if wan_start_half "$t" "$WNS_B" 8388 "$d/ss-server.log" ss-server -u -c "$d/ss.json"; then
                wan_start_half "$t" "$WNS_A" "${WAN_PORT[$t]}" "$d/ss-local.log" ss-local -u -b 127.0.0.1 \
                    -c "$d/ss.json" || true
            fi ;;
        esac
    done
    return 0
}

# Everything of the path down, the path last (it removes the namespaces).
wan_down() {
    local pid
    for pid in "${WAN_LIVE[@]}"; do stop_pid "$pid"; done
    WAN_LIVE=()
    [ -n "${WAN_PID:-}" ] && stop_pid "$WAN_PID"
    WAN_PID=""
}

wan_alive() { # every process of target T on the path still running?
    local p
    for p in ${WPIDS[$1]//,/ }; do
        kill -0 "$p" 2>/dev/null && ! zombie "$p" || return 1
    done
}

# One run of variant V on target T of path K: the bench in A, ping beside
# it, the RTT (and the bulk) added to its JSON line, the line to $RAW.
wan_run() { # wan_run ROUND K SPEC VNAME SCEN VOPTS HOW T
    local round=$1 k=$2 spec=$3 vname=$4 scen=$5 vopts=$6 how=$7 t=$8 d=$TMPD/wan err="" rc=0
    local args=(--runs 1 --json --allow-failures --duration "$WAN_DURATION" --warmup "$WAN_WARMUP"
        --target "10.77.0.2:$WAN_SINK" --no-spread) via=(--direct)
    [ "$t" = direct ] || via=(--proxy "127.0.0.1:${WAN_PORT[$t]}")
    args+=("${via[@]}")
    [ -z "${WPIDS[$t]:-}" ] || args+=(--proxy-pid "${WPIDS[$t]}")
    # shellcheck disable=SC2206
    args+=($vopts)
    : >"$TMPD/run.out"
    : >"$TMPD/run.err"
    : >"$d/bulk.out"
    if [ -n "${WSTATUS[$t]:-}" ]; then
        err=${WSTATUS[$t]}
    elif [ "$t" != direct ] && ! wan_alive "$t"; then
        err="the tunnel is no longer running over this path"
    fi
    if [ -z "$err" ]; then
        log "round $round/$ROUNDS  $vname  $t  ($spec)"
        start_bg "$d/ping.out" ip netns exec "$WNS_A" ping -D -n -i 0.1 10.77.0.2
        local ping=$LAST_PID bulk=""
        if [ "$how" = wanbulk ]; then
            # The bulk: one-way streams through the same port, running
            # from WAN_WARMUP before the requests until after them.
            start_bg "$d/bulk.out" ip netns exec "$WNS_A" timeout -k 5 300 "$FERRY" bench throughput --runs 1 --json \
                --allow-failures --warmup 0 --duration "$(awk -v d="$WAN_DURATION" -v w="$WAN_WARMUP" 'BEGIN { print d + w + 1 }')" \
                --target "10.77.0.2:$WAN_SINK" --no-spread --connections "$WAN_BULK" --direction down --payload 64k \
                "${via[@]}"
            bulk=$LAST_PID
            sleep "$WAN_WARMUP"
        fi
        local tun0 tun1 tcp0 tcp1
        tun0=$(tun_counts) tcp0=$(tcp_counts)
        "$PY" bench/treemon.py run --exclude-tree "$MAINPID" --settle "$SETTLE" --out "$TMPD/other.json" -- \
            timeout -k 5 300 ip netns exec "$WNS_A" "$FERRY" bench "$scen" "${args[@]}" \
            >"$TMPD/run.out" 2>"$TMPD/run.err" || rc=$?
        tun1=$(tun_counts) tcp1=$(tcp_counts)
        if [ -n "$bulk" ]; then # it ends by itself after the requests; its figures go with them
            wait "$bulk" 2>/dev/null || true
            unset "LIVE[$bulk]"
        fi
        stop_pid "$ping"
        if [ $rc = 124 ] || [ $rc = 137 ]; then
            err="the bench did not finish within 300 s"
        elif [ $rc != 0 ]; then
            err="the bench exited with status $rc"
        fi
        "$PY" bench/report.py wanrtt --line "$TMPD/run.out" --ping "$d/ping.out" --bulk "$d/bulk.out" \
            --spec "$spec" --path "$k" --tun "$((${tun1% *} - ${tun0% *})) $((${tun1#* } - ${tun0#* }))" \
            --tcp "$((${tcp1% *} - ${tcp0% *})) $((${tcp1#* } - ${tcp0#* }))" --skip "$([ "$scen" = throughput ] || [ "$how" = wanbulk ] && echo "$WAN_WARMUP" || echo 0)" || true
        NRUNS=$((NRUNS + 1))
    fi
    local died=""
    [ -z "$err" ] && [ "$t" != direct ] && ! wan_alive "$t" && died="the tunnel died during this run"
    local oth=()
    [ -z "$err" ] && [ -s "$TMPD/other.json" ] && oth=(--other "$TMPD/other.json")
    "$PY" bench/treemon.py annotate --line "$TMPD/run.out" --stderr "$TMPD/run.err" --round "$round" \
        --variant "$vname" --scenario "$scen" --target "$t" --cpu-source "$([ "$t" = direct ] && echo none || echo bench)" \
        --error "$err" --note "$died" "${oth[@]}" >>"$RAW"
    if [ -n "$err" ]; then log "  $t: $err"; fi
}

# The WAN part of the tunnel group: every round, every path, every
# variant, every target (rotated per round).
wan_group() {
    local round k spec v vname scen vopts vtargets vhow t i n order
    wan_prepare
    for ((round = 1; round <= ROUNDS; round++)); do
        for ((k = 1; k <= ${#WANS[@]}; k++)); do
            spec=${WANS[$((k - 1))]}
            WAN_ERR=""
            if ! wan_up "$k" "$spec" "${WAN_TARGETS[@]}"; then
                log "path $k ($spec): $WAN_ERR"
                for t in "${WAN_TARGETS[@]}"; do WSTATUS[$t]=$WAN_ERR; done
            fi
            for t in "${!WSTATUS[@]}"; do
                [ "$t" = ferry-serve ] || log "  $t: ${WSTATUS[$t]}"
            done
            order=()
            n=${#WAN_TARGETS[@]}
            for ((i = 0; i < n; i++)); do order+=("${WAN_TARGETS[$(((i + round - 1) % n))]}"); done
            while IFS= read -r v; do
                IFS='|' read -r vname scen vopts vtargets vhow <<<"$v"
                for t in "${order[@]}"; do
                    [[ ",$vtargets," == *",$t,"* ]] || continue
                    wan_run "$round" "$k" "$spec" "$vname" "$scen" "$vopts" "$vhow" "$t"
                done
            done < <(wan_variants "$k")
            wan_down
        done
    done
}

# The peer lines of the report's target table, once.
wan_peers() {
    local t how
    for t in "${WAN_TARGETS[@]}"; do
        # direct's line is the loopback groups' when they run too
        [ "$t" = direct ] && [[ " ${USED_TARGETS[*]} " == *" direct "* ]] && continue
        case $t in
        direct) how="no proxy: the bench in A connects across the path to \`ferry bench sink\` in B (plain TCP: the reference)" ;;
        ferry-tunnel) how="\`ferry client https://10.77.0.2:8443 --pin PIN -w 1 127.0.0.1:1080:socks\` in A (one worker: one tunnel connection, HTTP/2 + TLS 1.3) -> \`ferry serve\` with \`listen = tls://10.77.0.2:8443\` in B (a throwaway certificate, \`allow to 10.77.0.2/32\`, defaults otherwise); CPU of both" ;;
        ferry-tunnel-2c) how="the same with \`-w 2\`: two client workers, each with its own tunnel connection (ferry has no \`tunnel.connections\` setting: one connection per client worker); CPU of both" ;;
        ferry-tunnel-fo) how="the same with \`--fast-open\`: a session is answered as soon as its CONNECT stream is sent, its first bytes following at once (one round trip less); CPU of both" ;;
        ferry-tunnel-wss) how="\`ferry client wss://10.77.0.2:8444/tunnel -w 1\` in A -> \`ferry serve\` with \`listen = tls://10.77.0.2:8444 websocket=/tunnel\` in B; CPU of both" ;;
        ssh-d) how="\`ssh -N -D 127.0.0.1:1081 root@10.77.0.2\` in A -> \`sshd -D\` on 10.77.0.2:2222 in B (throwaway ed25519 keys, OpenSSH's default ciphers); CPU of ssh and of sshd's tree" ;;
        ss-libev-aes) how="\`ss-local -u -b 127.0.0.1\` in A -> \`ss-server -u\` on 10.77.0.2:8388 in B, aes-256-gcm; CPU of both" ;;
        esac
        "$PY" -c 'import json,sys; print(json.dumps({"peer":{"target":sys.argv[1],"status":"ok","mode":"wan","addr":"","pids":"","cpu_source":"bench","how":sys.argv[2]}}))' \
            "$t" "$how"
    done
    for ((k = 1; k <= ${#WANS[@]}; k++)); do
        "$PY" -c 'import json,sys; print(json.dumps({"wan_path":{"index":int(sys.argv[1]),"spec":sys.argv[2]}}))' \
            "$k" "${WANS[$((k - 1))]}"
    done
}
