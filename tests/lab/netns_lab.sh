#!/usr/bin/env bash
# A small routed lab of network namespaces for capturing real trace tool outputs.
#
#            9000         9000        1500
#   h1 ---------- r1 ---------- r2a ---------- r3 ---------- h2
#                   \   9000     |  (7)       /     9000
#                    `--------- r2b ---------'
#                                      1500
#
#   link  subnet          IPv6          MTU
#   L1    10.77.1.0/24    fd77:1::/64   9000   h1 .2  - r1 .1
#   L2    10.77.2.0/24    fd77:2::/64   9000   r1 .1  - r2a .2
#   L3    10.77.3.0/24    fd77:3::/64   9000   r1 .1  - r2b .2
#   L4    10.77.4.0/24    fd77:4::/64   1500   r2a .1 - r3 .2
#   L5    10.77.5.0/24    fd77:5::/64   1500   r2b .1 - r3 .2
#   L6    10.77.6.0/24    fd77:6::/64   9000   r3 .1  - h2 .2
#   L7    10.77.7.0/24    fd77:7::/64   9000   r2a .1 - r2b .2 (only used by "asymm")
#
# r3 answers 10.77.66.0/24 (fd77:66::/64) with host unreachable (!H), 10.77.67.0/24 with
# admin prohibited (!X) and silently drops 10.77.99.0/24 (fd77:99::/64).
# Hosts see names from /etc/netns/pw-h1/hosts (r1.lab, ...); their resolver is 127.0.0.1
# (nothing listens), so no lookup ever leaves the lab.
#
# Usage (root):
#   netns_lab.sh up                 build the lab (tears down any previous one first)
#   netns_lab.sh down               remove everything the lab created
#   netns_lab.sh ecmp on|off        r1 balances over r2a and r2b per flow (L4 hash)
#   netns_lab.sh silent on|off      r2a forwards but sends no ICMP at all (no time-exceeded,
#                                   no frag-needed: a PMTUD black hole towards the 1500 link)
#   netns_lab.sh asymm on|off       replies from r3 and h2 return via r2b and r2a (longer path back)
#   netns_lab.sh capture DIR        up, run every trace tool from h1 (and from "void", a namespace
#                                   with only loopback), write fixtures under DIR, down
#
# Traffic stays between these namespaces: nothing is routed anywhere else.
set -euo pipefail

P=pw-
NODES=(h1 r1 r2a r2b r3 h2 void)  # void: only loopback, no route anywhere
ROUTERS=(r1 r2a r2b r3)

ns() { local n=$1; shift; ip netns exec "$P$n" "$@"; }

down() {
    for n in "${NODES[@]}"; do
        ip netns pids "$P$n" 2>/dev/null | xargs -r kill 2>/dev/null || true
        ip netns del "$P$n" 2>/dev/null || true
    done
    for n in "${NODES[@]}"; do rm -rf "/etc/netns/$P$n"; done
}

# link A B SUBNET_INDEX A_HOST B_HOST MTU
link() {
    local a=$1 b=$2 i=$3 ha=$4 hb=$5 mtu=$6
    ip link add "$a-$b" netns "$P$a" mtu "$mtu" type veth peer name "$b-$a" netns "$P$b" mtu "$mtu"
    ns "$a" ip addr add "10.77.$i.$ha/24" dev "$a-$b"
    ns "$b" ip addr add "10.77.$i.$hb/24" dev "$b-$a"
    ns "$a" ip -6 addr add "fd77:$i::$ha/64" dev "$a-$b" nodad
    ns "$b" ip -6 addr add "fd77:$i::$hb/64" dev "$b-$a" nodad
    ns "$a" ip link set "$a-$b" up
    ns "$b" ip link set "$b-$a" up
}

# route NODE DEST VIA (both families; DEST is the subnet index or "default")
route() {
    local n=$1 dest=$2 via=$3 v4 v6
    if [ "$dest" = default ]; then v4=default; v6=default; else v4="10.77.$dest.0/24"; v6="fd77:$dest::/64"; fi
    ns "$n" ip route replace "$v4" via "10.77.$via"
    ns "$n" ip -6 route replace "$v6" via "fd77:${via%.*}::${via#*.}"
}

up() {
    down
    for n in "${NODES[@]}"; do
        ip netns add "$P$n"
        ns "$n" ip link set lo up
        ns "$n" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0 \
            net.ipv4.icmp_msgs_per_sec=100000 net.ipv4.icmp_msgs_burst=100000 \
            net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0
        mkdir -p "/etc/netns/$P$n"
        echo "nameserver 127.0.0.1" >"/etc/netns/$P$n/resolv.conf"
        cat >"/etc/netns/$P$n/hosts" <<HOSTS
127.0.0.1 localhost
::1 localhost
10.77.1.2 h1.lab
10.77.1.1 r1.lab
10.77.2.2 r2a.lab
10.77.3.2 r2b.lab
10.77.4.2 r3.lab
10.77.5.2 r3-b.lab
10.77.6.2 h2.lab
fd77:1::1 r1.lab
fd77:2::2 r2a.lab
fd77:4::2 r3.lab
fd77:6::2 h2.lab
HOSTS
    done
    for n in "${ROUTERS[@]}"; do
        ns "$n" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
            net.ipv4.fib_multipath_hash_policy=1 net.ipv6.fib_multipath_hash_policy=1
    done
    link h1 r1 1 2 1 9000
    link r1 r2a 2 1 2 9000
    link r1 r2b 3 1 2 9000
    link r2a r3 4 1 2 1500
    link r2b r3 5 1 2 1500
    link r3 h2 6 1 2 9000
    link r2a r2b 7 1 2 9000
    route h1 default 1.1
    route h2 default 6.1
    route r1 default 2.2
    route r2a 1 2.1
    route r2b 1 3.1
    route r2a default 4.2
    route r2b default 5.2
    route r3 1 4.1
    route r3 2 4.1
    route r3 3 5.1
    ns r3 ip route add unreachable 10.77.66.0/24
    ns r3 ip route add prohibit 10.77.67.0/24
    ns r3 ip route add blackhole 10.77.99.0/24
    ns r3 ip -6 route add unreachable fd77:66::/64
    ns r3 ip -6 route add blackhole fd77:99::/64
    # Resolve every neighbour once so that no capture shows neighbour-discovery delays; the
    # last ping must succeed, or the lab is broken.
    ns h1 ping -c 2 -i 0.2 -W 1 10.77.6.2 >/dev/null || true
    ns h1 ping -6 -c 2 -i 0.2 -W 1 fd77:6::2 >/dev/null || true
    ns h1 ping -6 -c 2 -i 0.2 -W 1 fd77:6::2 >/dev/null
}

# r3 sends IPv4 unreachables from a per-source token bucket (one a second, a burst of five;
# net.ipv4.route.error_cost is not per namespace): let it fill before each capture that needs them.
rested() { sleep 5; }

# Forget path MTUs h1 learnt, so each capture discovers them afresh.
flush() { ns h1 ip route flush cache; ns h1 ip -6 route flush cache; }

ecmp() {
    if [ "$1" = on ]; then
        ns r1 ip route replace default nexthop via 10.77.2.2 nexthop via 10.77.3.2
        ns r1 ip -6 route replace default nexthop via fd77:2::2 nexthop via fd77:3::2
    else
        route r1 default 2.2
    fi
}

silent() {
    # Locally generated ICMP on r2a matches "iif lo" and is blackholed; forwarded traffic is not.
    ns r2a ip rule del pref 100 2>/dev/null || true
    ns r2a ip -6 rule del pref 100 2>/dev/null || true
    if [ "$1" = on ]; then
        ns r2a ip rule add pref 100 iif lo ipproto icmp blackhole
        ns r2a ip -6 rule add pref 100 iif lo ipproto ipv6-icmp blackhole
    fi
}

asymm() {
    if [ "$1" = on ]; then
        route r3 1 5.1
        route r2b 1 7.1
    else
        route r3 1 4.1
        route r2b 1 3.1
    fi
}

# A whois responder on h1's loopback so that traceroute -A (RA_SERVER) gets real answers:
# each lab router gets a private AS number, anything else none.
whois_start() {
    ip netns exec "${P}h1" python3 -c '
import socketserver
AS = {"10.77.1.1": "AS64501", "10.77.2.2": "AS64502", "10.77.3.2": "AS64502",
      "10.77.4.2": "AS64503", "10.77.5.2": "AS64503", "10.77.6.2": "AS64503"}
class H(socketserver.StreamRequestHandler):
    def handle(self):
        query = self.rfile.readline().decode().split()
        ip = query[-1].split("/")[0] if query else ""
        if ip in AS:
            self.wfile.write(f"route: {ip}/32\norigin: {AS[ip]}\n\n".encode())
socketserver.TCPServer.allow_reuse_address = True
socketserver.TCPServer(("127.0.0.1", 4343), H).serve_forever()
' &
    WHOIS_PID=$!
    sleep 0.5
}

capture() {
    local out=$1
    mkdir -p "$out/traceroute" "$out/tracepath" "$out/mtr" "$out/scamper"
    trap down EXIT
    up
    local tr="$out/traceroute" tp="$out/tracepath" mt="$out/mtr" sc="$out/scamper"
    local mtr="mtr --json -c 3 -i 0.2 -Z 1"
    local big; big=$(printf '00%.0s' $(seq 1600))  # a 1600-byte probe payload, too big for 1500
    # Quiet, symmetric path, single best route.
    ns h1 traceroute -n 10.77.6.2 >"$tr/traceroute_n_reached.txt"
    ns h1 traceroute h2.lab >"$tr/traceroute_names_reached.txt"
    ns h1 traceroute -n -I 10.77.6.2 >"$tr/traceroute_icmp_reached.txt"
    ns h1 traceroute -6 -n fd77:6::2 >"$tr/traceroute6_n_reached.txt"
    ns h1 traceroute6 h2.lab >"$tr/traceroute6_names_reached.txt"
    flush
    ns h1 traceroute -n --mtu 10.77.6.2 >"$tr/traceroute_mtu_F_1500.txt"
    rested; ns h1 traceroute -n -N 1 -m 6 -w 1 10.77.66.1 >"$tr/traceroute_host_unreachable_H.txt"
    rested; ns h1 traceroute -n -N 1 -m 6 -w 1 10.77.67.1 >"$tr/traceroute_prohibited_X.txt"
    ns h1 traceroute -n -m 6 -w 1 -q 2 10.77.99.1 >"$tr/traceroute_blackhole_never_reached.txt"
    ns h1 traceroute -6 -n -m 6 -w 1 fd77:66::1 >"$tr/traceroute6_no_route_N.txt"
    whois_start
    ns h1 env RA_SERVER=127.0.0.1 RA_SERVICE=4343 traceroute -n -A 10.77.6.2 >"$tr/traceroute_asn_lookups.txt"
    ns h1 env RA_SERVER=127.0.0.1 RA_SERVICE=4343 traceroute -A h2.lab >"$tr/traceroute_names_asn_lookups.txt"
    kill "$WHOIS_PID"; wait "$WHOIS_PID" 2>/dev/null || true
    ns h1 env RA_SERVER=127.0.0.1 RA_SERVICE=4343 traceroute -n -A -q 1 10.77.6.2 >"$tr/traceroute_asn_lookup_failed.txt"
    flush; ns h1 tracepath -n 10.77.6.2 >"$tp/tracepath_pmtu_drop_9000_1500.txt"
    flush; ns h1 tracepath h2.lab >"$tp/tracepath_names_pmtu_drop.txt"
    flush; ns h1 tracepath -b h2.lab >"$tp/tracepath_both_names_and_ips.txt"
    flush; ns h1 tracepath -6 -n fd77:6::2 >"$tp/tracepath6_pmtu_drop.txt"
    ns h1 tracepath -6 -n fd77:6::2 >"$tp/tracepath6_pmtu_cached_1500.txt"
    rested; flush; ns h1 tracepath -n -m 6 10.77.66.1 >"$tp/tracepath_host_unreachable.txt" || true
    flush; ns h1 tracepath -n -m 5 10.77.99.1 >"$tp/tracepath_blackhole_too_many_hops.txt" || true
    ns h1 $mtr -n 10.77.6.2 >"$mt/mtr_n_reached.json"
    ns h1 $mtr h2.lab >"$mt/mtr_names_reached.json"
    ns h1 $mtr -b h2.lab >"$mt/mtr_names_and_ips.json"
    ns h1 $mtr -n -z 10.77.6.2 >"$mt/mtr_asn_unresolved.json"
    ns h1 $mtr -6 -n fd77:6::2 >"$mt/mtr6_reached.json"
    ns h1 $mtr -n -m 6 10.77.99.1 >"$mt/mtr_unreachable.json"
    rested; ns h1 $mtr -n -m 6 10.77.66.1 >"$mt/mtr_host_unreachable.json"
    ns h1 scamper -O json -c "trace -w 1" -i 10.77.6.2 >"$sc/scamper_udp_paris_completed.jsonl"
    ns h1 scamper -O json -c "trace -P icmp-paris -q 3 -Q -w 1" -i 10.77.6.2 >"$sc/scamper_icmp_three_probes_per_hop.jsonl"
    ns h1 scamper -O json -c "trace -P tcp -d 9 -w 1" -i 10.77.6.2 >"$sc/scamper_tcp_reset_completed.jsonl"
    flush; ns h1 scamper -O json -c "trace -M -w 1" -i 10.77.6.2 >"$sc/scamper_pmtud_flag_not_in_json.jsonl"
    flush; ns h1 scamper -O json -c "trace -w 1 -p $big" -i 10.77.6.2 >"$sc/scamper_frag_needed_nhmtu_1500.jsonl"
    ns h1 scamper -O json -c "trace -P udp -w 1" -i fd77:6::2 >"$sc/scamper6_udp_completed.jsonl"
    ns h1 scamper -O json -c "trace -w 1 -g 2" -i fd77:6::2 >"$sc/scamper6_udp_paris_no_replies_no_hops_key.jsonl"
    rested; ns h1 scamper -O json -c "trace -w 1 -m 6" -i 10.77.66.1 >"$sc/scamper_host_unreachable.jsonl"
    ns h1 scamper -O json -c "trace -P udp -w 1 -m 6" -i fd77:66::1 >"$sc/scamper6_no_route_unreachable.jsonl"
    ns h1 scamper -O json -c "trace -w 1 -g 3" -i 10.77.99.1 >"$sc/scamper_blackhole_gaplimit.jsonl"
    rested; ns h1 scamper -O warts -o "$sc/.lab.warts" -c "trace -w 1" -i 10.77.6.2 10.77.66.1
    sc_warts2json "$sc/.lab.warts" >"$sc/sc_warts2json_two_traces.jsonl"
    rm -f "$sc/.lab.warts"
    # Load balancing: several responders at one TTL.
    ecmp on
    ns h1 traceroute -n -q 6 10.77.6.2 >"$tr/traceroute_ecmp_several_ips_per_hop.txt"
    ns h1 traceroute -q 6 h2.lab >"$tr/traceroute_ecmp_names_several_ips_per_hop.txt"
    ns h1 scamper -O json -c "trace -P udp -q 8 -Q -w 1" -i 10.77.6.2 >"$sc/scamper_udp_ecmp_several_ips_per_ttl.jsonl"
    ns h1 $mtr -n -u 10.77.6.2 >"$mt/mtr_udp_ecmp_one_host_per_hop.json"
    ecmp off
    # Longer way back: tracepath reports asymm, traceroute --back the hops back.
    asymm on
    flush; ns h1 tracepath -n 10.77.6.2 >"$tp/tracepath_asymm.txt"
    ns h1 traceroute -n --back 10.77.6.2 >"$tr/traceroute_back_asymm.txt"
    asymm off
    # r2a sends no ICMP: silent hop, and a PMTUD black hole for tracepath's 9000-byte probes.
    silent on
    ns h1 traceroute -n -w 1 10.77.6.2 >"$tr/traceroute_star_hops.txt"
    ns h1 traceroute -6 -n -w 1 fd77:6::2 >"$tr/traceroute6_star_hops.txt"
    flush; ns h1 tracepath -n -m 5 10.77.6.2 >"$tp/tracepath_pmtud_black_hole_never_finds_pmtu.txt" || true
    ns h1 $mtr -n 10.77.6.2 >"$mt/mtr_silent_hop.json"
    ns h1 scamper -O json -c "trace -w 1" -i 10.77.6.2 >"$sc/scamper_silent_hop.jsonl"
    silent off
    # A host with no route anywhere: runs that fail before probing (stderr kept, as collectors do).
    ns void traceroute -n 10.77.6.2 >"$tr/traceroute_network_unreachable_failed.txt" 2>&1 || true
    ns void traceroute nosuch.lab >"$tr/traceroute_unknown_host_failed.txt" 2>&1 || true
    ns void tracepath -n 10.77.6.2 >"$tp/tracepath_send_failed.txt" 2>&1 || true
    ns void tracepath nosuch.lab >"$tp/tracepath_unknown_host_failed.txt" 2>&1 || true
    ns void scamper -O json -c "trace -w 1" -i 10.77.6.2 >"$sc/scamper_no_route_cycle_records_only.jsonl" 2>/dev/null
    ls -l "$tr" "$tp" "$mt" "$sc"
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    ecmp | silent | asymm) "$1" "${2:?on or off}" ;;
    capture) capture "${2:?output directory}" ;;
    *) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
