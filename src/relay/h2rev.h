/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2rev.h: reverse tunnels on the HTTP/2 proxy (chisel's R: remotes), the
 * only ferry-specific part of the tunnel: two :protocol values of an
 * extended CONNECT (RFC 8441).
 *
 *   :protocol ferry-listen, :path /ferry/listen/tcp/{addr}/{port}
 *     Bind a TCP listener at addr:port on the server (an IP literal, an
 *     IPv6 one with or without brackets; port 0: any). Allowed only by a
 *     [rules] allow rule naming cmd reverse whose to/port hold the bind
 *     address and port (403 otherwise, whatever rules_default says; the
 *     first matching rule decides). 200 carries
 *     ferry-listener: TOKEN and ferry-bound: ADDR:PORT. The stream is the
 *     listener's lifetime: END_STREAM or RST_STREAM closes it.
 *   :protocol ferry-accept, :path /ferry/accept/{TOKEN}
 *     Wait for a connection on that listener (same HTTP/2 connection
 *     only; 502 otherwise). The server answers 200 with
 *     ferry-peer: ADDR:PORT when one arrives, and the stream carries its
 *     bytes as a CONNECT stream does (END_STREAM = FIN, RST_STREAM =
 *     reset). While no accept stream waits, connections stay in the
 *     kernel's accept queue (backlog 128) rather than being reset.
 *   :protocol ferry-listen, :path /ferry/listen/udp/{addr}/{port}
 *     Bind a UDP socket at addr:port instead (the same rule check, answer
 *     and reverse_grace hold). Each new source address and port of
 *     datagrams to it takes the oldest ferry-accept stream waiting on the
 *     listener, answered 200 with ferry-peer: ADDR:PORT (the source) and
 *     capsule-protocol: ?1; from then on that stream carries the source's
 *     datagrams both ways as DATAGRAM capsules (RFC 9297 section 3.5,
 *     context id 0, as CONNECT-UDP does: one capsule per datagram, empty
 *     ones included), and what the client sends goes to the source from
 *     the listener's port. A source whose datagram finds no accept stream
 *     waiting, or comes beyond udp.associations sources, is dropped and
 *     counted; udp.idle without a datagram either way ends its stream
 *     (END_STREAM), and its next datagram takes a new one. The client
 *     ends a source with END_STREAM or RST_STREAM.
 *   :protocol ferry-listen, :path /ferry/listen/assoc/{stream id}
 *     A SOCKS5 UDP ASSOCIATE (RFC 1928 section 7) the client's SOCKS
 *     front took on the reverse TCP connection carried by that stream of
 *     the same HTTP/2 connection (a handed ferry-accept stream of the same
 *     user; 502 otherwise). No rule is asked again: the connection was let in. The
 *     server binds a UDP socket on the address the application reached
 *     (a port from udp.ports, else any) and answers 200 with
 *     ferry-bound: ADDR:PORT (udp.advertise if set; the client's
 *     BND.ADDR/BND.PORT) and capsule-protocol: ?1; 429 beyond
 *     udp.associations of the TCP listener's connections. Datagrams to it
 *     from the application's IP (its port fixed by the first one), FRAG
 *     0, with a payload within udp.max_datagram, go up whole (SOCKS UDP
 *     header included) as one DATAGRAM capsule each; each capsule the
 *     client sends (a reply with its SOCKS UDP header) goes to the
 *     application. Others are dropped and counted. The socket closes with
 *     the stream, and the stream with its TCP connection's stream.
 *
 * Only front_h2.c calls it; it touches the h2 connection only through
 * h2conn.h's stream calls.
 */
#ifndef FERRY_RELAY_H2REV_H
#define FERRY_RELAY_H2REV_H

#include <stdbool.h>

struct conn;

/* Is :protocol p one of ours? */
bool h2rev_protocol(const char *p);
/* Check the request of stream session c (its :path): 0 to go on (c->h2r
 * set), or -1 after refusing it (400). */
int h2rev_check(struct conn *c);
/* The request is authenticated: judge, bind and answer (listen), or
 * queue behind its listener (accept). May close c. */
void h2rev_go(struct conn *c);
/* Events of a listening or waiting stream (state CONN_ST_BIND). */
void h2rev_drive(struct conn *c);
/* The access log's command for c. */
const char *h2rev_log_cmd(const struct conn *c);
/* A drain or a reload (this worker's thread): close every reverse
 * listener (and the accept streams waiting on it); connections already
 * handed over finish as other streams do. */
void h2rev_close_all(void);
/* The session ends: a listener closes its socket and every accept
 * stream still waiting on it; an accept stream leaves its queue. */
void h2rev_end(struct conn *c);

#endif
