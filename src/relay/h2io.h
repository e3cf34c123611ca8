/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2io.h: what the HTTP/2 server (h2conn.c) and the HTTP/2 client
 * (outbound_h2.c) share around an nghttp2 session driven by memory I/O:
 * gathering the frames nghttp2 has to send into one buffer for a single
 * TLS write, and growing one stream's receive window as its bytes are
 * consumed (proto/h2flow.h's rule, each growth admitted under a
 * connection budget and a worker budget), and the sending order
 * (TUNNEL.md, "Flow control"): control frames first (nghttp2 does that),
 * then young streams, then bulk, round-robin in 16 KiB quanta, with
 * TCP_NODELAY and TCP_NOTSENT_LOWAT on the carrier so the order is decided
 * here and not in a deep socket buffer. It writes to no socket, owns no
 * session and knows nothing of the connections' lifetimes.
 */
#ifndef FERRY_RELAY_H2IO_H
#define FERRY_RELAY_H2IO_H

#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/h2flow.h"

/* DATA a data provider hands nghttp2 per call: the round-robin quantum
 * (nghttp2 asks for at most 16 KiB without a read_length_callback; the
 * cap keeps it so whatever the peer's SETTINGS_MAX_FRAME_SIZE). */
#define H2IO_QUANTUM (16u * 1024)

/* A stream is young (light) while it has sent less than this much DATA
 * recently: a request, a TLS handshake or a small response goes ahead of
 * the bulk streams, and so does a stream that sends little but often (a
 * ping, an interactive session, a datagram association's pings) however
 * long it lives. "Recently" is a bucket (struct h2io_light) that fills
 * with each quantum and drains by one byte for every H2IO_LIGHT_SHARE
 * bytes of DATA the other streams of its connection hand on: a stream
 * that sends more than a 64th of what the others send turns bulk, one
 * that sends less, or pauses while the others go on, is young again. The clock is the
 * connection's bytes, not time, so a carrier that stalls (a peer that does
 * not read) drains nobody. A total count (what it was) made a pinger bulk
 * for ever after its first 64 KiB. */
#define H2IO_YOUNG       (64u * 1024)
#define H2IO_LIGHT_SHARE 64u

/* What a stream sent recently (zero it when the stream starts). */
struct h2io_light {
    uint64_t level; /* bytes, drained up to the connection's DATA count at */
    uint64_t at;    /* struct h2io_sched's data at the last drain */
    bool bulk;      /* its weight is H2IO_WEIGHT_BULK (else young) */
};

/* RFC 7540 5.3's weights (nghttp2 serves the stream of least virtual
 * time, each quantum advancing it by bytes * 256 / weight): a young
 * stream's quantum costs 16 KiB of it, a bulk one's 4 MiB, so once a young
 * stream's turn comes its 64 KiB go in one piece, and young streams take
 * 256 / (256 + bulk streams) of the connection. Bulk streams share the
 * rest round-robin (equal weights). */
#define H2IO_WEIGHT_YOUNG NGHTTP2_MAX_WEIGHT /* 256 */
#define H2IO_WEIGHT_BULK  NGHTTP2_MIN_WEIGHT /* 1 */

/* TCP_NOTSENT_LOWAT of a carrier: the socket takes a write (and epoll says
 * writable) only while fewer than this many bytes are queued but unsent,
 * so a young stream's frames wait behind at most this (plus the one
 * gather of at most 64 KiB being written), not a 4 MiB send buffer. Two
 * gathers: when the socket asks for more, one full 64 KiB gather still
 * waits in the kernel, enough to cover our wake-up and one TLS write
 * (tens of microseconds) at loopback rates; and it bounds only the unsent
 * queue, not the bytes in flight, so a 50 ms path keeps its whole cwnd
 * (throughput there is tcp_wmem's and the windows', not this). Its cost
 * on loopback, measured (3 interleaved rounds, `ferry bench throughput
 * --https-proxy h2`, 1 and 8 streams, a workers = 1 server): 0.93× the
 * MiB/s of the same build without it; the price of keeping the sending
 * order ours. Not smaller on slow paths, though 128 KiB is 10.5 ms at
 * 100 Mbit/s: 2 ms at the connection's rate (cwnd per RTT, 24-42 KiB
 * there) was tried and measured (`ss -ti` on the carrier, 7 bulk streams
 * through a 100 Mbit/s, 50 ms path): the socket ran out of unsent bytes
 * between our refills often enough that 43 of 44 samples were
 * app-limited, BBR never left STARTUP, and the carrier retransmitted
 * 47,000 segments in 12 s instead of 2,900. Small requests beside the
 * bulk got a lower p50 but a p99 of 191-1,059 ms over six runs (309-324
 * without). */
#define H2IO_NOTSENT_LOWAT (128u * 1024)

/* Deeper on a long fast path: at 1 Gbit/s and 100 ms, BBR's start-up
 * sends at 2.89 times the rate it measured, so 128 KiB lasts 0.36 ms and
 * any later wake-up leaves the socket with nothing unsent; BBR then counts
 * the round as app-limited, never sees its bandwidth stop growing and
 * stays in start-up, overfilling the path's queue. So once the smoothed
 * RTT is at least H2IO_DEEP_RTT_US, TCP_NOTSENT_LOWAT is what the
 * connection sends (its congestion window per smoothed RTT, TCP_INFO, read
 * at most every H2IO_DEPTH_MS) in H2IO_DEPTH_US or a tenth of the RTT,
 * whichever is less, within [H2IO_NOTSENT_LOWAT, H2IO_DEPTH_MAX]: never
 * below the floor above, and a young frame waits behind at most that much
 * more than on a short path. Loopback and LAN carriers keep
 * H2IO_NOTSENT_LOWAT. Measured (a fresh tunnel, 7 bulk streams through
 * 1 Gbit/s, 50 ms, 50 ms queue; `ss -ti` every 0.2 s for 12 s; 3
 * alternating runs each): 128 KiB: in start-up for 42-44 of 47 samples,
 * 212,000-244,000 segments retransmitted; 2 ms: 7-29 samples,
 * 40,000-105,000; 4 ms: 4-7 samples (BBR's own start-up, about a second),
 * 32,000-44,000; 108-117 MiB/s in all. */
#define H2IO_DEPTH_US    4000
#define H2IO_DEEP_RTT_US 1000
#define H2IO_DEPTH_MAX   (2048u * 1024)
#define H2IO_DEPTH_MS    100

/* A carrier that carries datagrams (CONNECT-UDP capsules) keeps a
 * shallower queue, measured (docs/configuration.md, "UDP through a
 * tunnel"): under a flood, a ping's capsule found up to 250 KiB ahead of
 * it in the socket (128 KiB unsent plus what the peer had not read yet),
 * 20 ms at the tunnel's rate; the unsent part is ours to bound. While a
 * datagram was written within H2IO_UDP_HOLD_MS, TCP_NOTSENT_LOWAT is
 * H2IO_UDP_LOWAT and one gather takes at most H2IO_UDP_GATHER: TCP
 * streams on that connection pay for it in throughput (they share the
 * carrier with UDP, which prefers loss to delay), others do not. */
#define H2IO_UDP_LOWAT   (16u * 1024)
#define H2IO_UDP_GATHER  (16u * 1024)
#define H2IO_UDP_HOLD_MS 1000

/* A CONNECT-UDP stream's receive window, at both ends: fixed (never
 * tuned) and small, so that a stream flooding datagrams keeps at most this
 * much ahead of another stream's datagram in the carrier (the peer's
 * socket and buffers): the receiver credits a capsule only once its
 * datagram was sent on or dropped and counted, so the sender queues the
 * rest on its own side, where the association's bounded queue drops it.
 * h2io_udp_window() gives H2IO_UDP_WINDOW, or two of the largest capsules
 * when udp.max_datagram is raised past it (credit comes back per whole
 * capsule: a capsule split across windows must always fit). */
#define H2IO_UDP_WINDOW (32u * 1024)

/* The window of a CONNECT-UDP stream whose datagrams are at most
 * max_datagram bytes. */
uint32_t h2io_udp_window(uint32_t max_datagram);

/* A carrier's socket queue: when a datagram last went out on it, when
 * its TCP_INFO was last read and the depth that gave, and the
 * TCP_NOTSENT_LOWAT it has now (0: h2io_carrier()'s). Zero it with the
 * carrier. */
struct h2io_udp {
    uint64_t last_ms;  /* loop time of the last datagram written (0: none) */
    uint64_t probe_ms; /* loop time TCP_INFO was last read (0: never) */
    uint32_t depth;    /* h2io_depth_of() at that read (0: none yet) */
    uint32_t lowat;    /* as set on the socket (0: H2IO_NOTSENT_LOWAT) */
};

/* A datagram goes out on the carrier at loop time now_ms. */
void h2io_udp_note(struct h2io_udp *u, uint64_t now_ms);

/* The unsent queue of a carrier whose congestion window is cwnd_bytes and
 * smoothed RTT rtt_us: H2IO_NOTSENT_LOWAT below H2IO_DEEP_RTT_US (or with
 * no sample), else the lesser of H2IO_DEPTH_US and rtt_us / 10 at cwnd
 * per RTT, within [H2IO_NOTSENT_LOWAT, H2IO_DEPTH_MAX]. Pure. */
uint32_t h2io_depth_of(uint64_t cwnd_bytes, uint64_t rtt_us);

/* Before gathering for carrier fd at loop time now_ms: the socket's
 * TCP_NOTSENT_LOWAT follows u (H2IO_UDP_LOWAT while datagrams went within
 * H2IO_UDP_HOLD_MS, else h2io_depth_of() its TCP_INFO, read at most every
 * H2IO_DEPTH_MS; set only on a change), and the return value is how many
 * bytes to gather: deep, or at most H2IO_UDP_GATHER while shallow. */
uint32_t h2io_udp_upto(struct h2io_udp *u, int fd, uint64_t now_ms, uint32_t deep);

/* RTT probes (PINGs at a window epoch's end) go at most this often, on
 * both sides: a peer's PING budget ([http2] pings_per_second, 100 by
 * default) counts them, and an epoch on loopback lasts well under 10 ms. */
#define H2IO_PROBE_MS 2000

/* The streams whose weight changes once nghttp2 has let go of the frame
 * that decided it (applied between nghttp2_session_mem_send() calls, never
 * from inside a callback). One frame per mem_send call and at most one
 * change per frame: the room never fills while h2io_gather drains it. */
#define H2IO_DUE_MAX 4
struct h2io_sched {
    uint64_t data; /* DATA bytes handed to nghttp2 on the connection */
    struct {
        int32_t id;
        int32_t weight;
    } due[H2IO_DUE_MAX];
    uint32_t n;
};

/* A TLS record's most plaintext (RFC 8446 5.1). */
#define H2IO_RECORD (16u * 1024)

/* How many of the len gathered bytes to write now: with more frames to
 * come (more), whole TLS records only, the tail waiting at the front of
 * the buffer for the next gather; else all. OpenSSL cuts a write into
 * 16 KiB records and writes each on its own (a write(2), a segment), and
 * whole 16 KiB + 9 DATA frames left a record of 18 or 36 bytes after every
 * gather of two or four. */
uint32_t h2io_whole_records(uint32_t len, bool more);

/* After a write of whole records (h2io_whole_records) took them all:
 * the tail of buf (from *off to *len) moves to its front, to be written
 * with the next frames. */
void h2io_keep_tail(uint8_t *buf, uint32_t *off, uint32_t *len);

/* TCP_NODELAY (small frames go out at once) and TCP_NOTSENT_LOWAT
 * (H2IO_NOTSENT_LOWAT) on a carrier's socket fd; failures are ignored
 * (the order is then only less strict). */
void h2io_carrier(int fd);

/* The callbacks a session of ours sets; NULL leaves one unset. */
struct h2io_callbacks {
    nghttp2_on_begin_frame_callback begin_frame;
    nghttp2_on_begin_headers_callback begin_headers;
    nghttp2_on_header_callback header;
    nghttp2_on_frame_recv_callback frame_recv;
    nghttp2_on_data_chunk_recv_callback data_chunk;
    nghttp2_on_stream_close_callback stream_close;
    nghttp2_on_frame_send_callback frame_send;
};

/* A server or client session with those callbacks and user data, its
 * window updates left to us (NGHTTP2_OPT_NO_AUTO_WINDOW_UPDATE: credit is
 * returned by h2io_window_consumed()), and, when deflate_max is not 0, the
 * peer's HPACK table capped at it. A server session has nghttp2's count of
 * received RST_STREAMs turned off (h2conn.c's Rapid Reset budget counts the
 * ones that matter). NULL when out of memory. */
nghttp2_session *h2io_session_new(bool server, const struct h2io_callbacks *cb, void *user,
                                  size_t deflate_max);

/* Stream id of s starts young: weight H2IO_WEIGHT_YOUNG under the root,
 * whatever dependency the peer asked for (it is a tunnel, not a page: no
 * stream waits for another). Silent (no PRIORITY frame). For a stream that
 * exists in s and has no DATA queued yet (the server, as it submits a
 * response; a tree edit, as nghttp2's own for a PRIORITY frame). */
void h2io_young(nghttp2_session *s, int32_t id);

/* The same, queued in q for h2io_gather: for a client's stream, from the
 * on_frame_send callback of its request HEADERS (nghttp2 opens it then,
 * and queues its DATA right after the callback, within the same
 * nghttp2_session_mem_send call). */
void h2io_young_later(struct h2io_sched *q, int32_t id);

/* A data provider of stream id holds have bytes and nghttp2 takes up to
 * len: how many to hand it (at most H2IO_QUANTUM), counted in q's data.
 * l counts the stream's recent DATA (H2IO_YOUNG): the bytes that fill it
 * to H2IO_YOUNG make the stream bulk (weight H2IO_WEIGHT_BULK under the
 * root), a quantum that finds it drained below makes it young again
 * (H2IO_WEIGHT_YOUNG); each change queued in q for h2io_gather. Call it
 * from the data provider only. */
size_t h2io_quantum(struct h2io_sched *q, int32_t id, struct h2io_light *l, size_t have,
                    size_t len);

/* A deferred data provider of stream id has DATA again: nghttp2 resumes
 * it, at the young weight first when l has drained below H2IO_YOUNG since
 * its last quantum (so that quantum is already scheduled as a young
 * stream's: a change decided by h2io_quantum applies only after it).
 * Never from inside an nghttp2 callback. */
void h2io_resume(nghttp2_session *s, struct h2io_sched *q, int32_t id, struct h2io_light *l);

/* Append what s has to send to *buf (*len bytes used) while fewer than
 * upto are gathered, applying q's weight changes after each frame; a
 * frame that does not fit in cap grows *buf (free() and realloc()
 * memory). 0, -EPROTO (nghttp2 failed) or -ENOMEM. */
int h2io_gather(nghttp2_session *s, struct h2io_sched *q, uint8_t **buf, uint32_t *len,
                uint32_t upto, uint32_t cap);

/* n more bytes of stream id's window win were consumed (delivered on). At
 * each half window an epoch ends: the window may double (h2flow_tune with
 * the larger of rtt's smoothed RTT and fd's TCP_INFO RTT, at most
 * window_max), admitted under conn and worker and charged to both, and
 * nghttp2 is told the new size. Returns whether an epoch ended (*now_us:
 * when), so the caller may probe the RTT. */
bool h2io_window_consumed(nghttp2_session *s, int32_t id, struct h2flow_win *win, size_t n,
                          struct h2flow_budget *conn, struct h2flow_budget *worker,
                          const struct h2flow_rtt *rtt, int fd, uint32_t window_max,
                          uint64_t *now_us);

#endif
