/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * masque.h: the request side of CONNECT-UDP (RFC 9298) over HTTP/2
 * extended CONNECT (RFC 8441): the target named by the default URI template
 *   /.well-known/masque/udp/{target_host}/{target_port}/
 * (RFC 9298 section 2, expanded as RFC 6570 simple string expansion does),
 * the pseudo-header checks of RFC 9298 section 3.4, and the Capsule-Protocol
 * field of RFC 9297 section 3.4. Pure functions over bytes: no I/O, no
 * allocation, no logging, no globals.
 */
#ifndef FERRY_PROTO_MASQUE_H
#define FERRY_PROTO_MASQUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MASQUE_PATH_PREFIX "/.well-known/masque/udp/"
/* The longest target host, after percent-decoding. */
#define MASQUE_HOST_MAX    255
/* The longest path masque_format_path() writes: prefix, a host of 255
 * bytes each encoded as %XX, a port of 5 digits, 2 slashes. */
#define MASQUE_PATH_MAX    (sizeof(MASQUE_PATH_PREFIX) - 1 + 3 * MASQUE_HOST_MAX + 5 + 2)

enum masque_error {
    MASQUE_E_PREFIX = -1,    /* not under /.well-known/masque/udp/ */
    MASQUE_E_SHAPE = -2,     /* missing or extra segments, a query or fragment */
    MASQUE_E_ENCODING = -3,  /* a bad %XX escape or a byte a path cannot hold */
    MASQUE_E_HOST = -4,      /* empty, over 255 bytes, NUL/control/space/'%' */
    MASQUE_E_PORT = -5,      /* not 1..65535 in decimal digits */
    MASQUE_E_METHOD = -6,    /* :method is not CONNECT */
    MASQUE_E_PROTOCOL = -7,  /* :protocol is not connect-udp */
    MASQUE_E_SCHEME = -8,    /* :scheme is not https */
    MASQUE_E_AUTHORITY = -9, /* :authority missing or empty */
    MASQUE_E_CAPSULE = -10,  /* capsule-protocol present and not ?1 */
};

/* A UDP target as the client named it. */
struct masque_target {
    char host[MASQUE_HOST_MAX + 1]; /* decoded, NUL-terminated; an IPv6
                                     * literal without brackets */
    size_t host_len;
    uint16_t port; /* 1..65535 */
};

/* A field's value as the HTTP/2 layer handed it over: not NUL-terminated;
 * p NULL means the field was absent. */
struct masque_field {
    const char *p;
    size_t len;
};

/* The request head of an extended CONNECT, as collected by the caller. */
struct masque_request {
    struct masque_field method, protocol, scheme, authority, path;
    struct masque_field capsule_protocol; /* the capsule-protocol header */
};

/* Parse a :path of path[0..len) (not NUL-terminated) into *out. Returns 0,
 * or a MASQUE_E_* code (PREFIX, SHAPE, ENCODING, HOST, PORT). Both segments
 * are percent-decoded (any %XX, upper or lower case); the port must then be
 * decimal digits. The trailing slash of the template is required. */
int masque_parse_path(const char *path, size_t len, struct masque_target *out);

/* Write the :path for host[0..host_len) and port into out[0..cap) with a
 * NUL, encoding the host as RFC 6570 simple string expansion does (every
 * byte but ALPHA, DIGIT, "-", ".", "_" and "~" as %XX, so an IPv6 literal's
 * ':' becomes %3A). Returns the path's length without the NUL, as snprintf
 * does: when that is not below cap, out holds nothing useful. host_len
 * over MASQUE_HOST_MAX or port 0 returns 0 and writes nothing. */
size_t masque_format_path(char *out, size_t cap, const char *host, size_t host_len, uint16_t port);

/* Whether a Capsule-Protocol field value v[0..len) is the structured-field
 * boolean true (RFC 8941 section 3.3.6): "?1", parameters allowed and
 * ignored, surrounding spaces allowed. "?0", anything else, and anything
 * RFC 8941 cannot parse is false (a field that fails to parse is ignored,
 * RFC 8941 section 4.2). */
bool masque_capsule_protocol_is_true(const char *v, size_t len);

/* Check the head of an HTTP/2 extended CONNECT for connect-udp (RFC 9298
 * section 3.4, RFC 8441 section 4): :method CONNECT, :protocol connect-udp,
 * :scheme https, a non-empty :authority, and a :path that
 * masque_parse_path() accepts (its result goes to *out). A capsule-protocol
 * header, when present and parseable, must be true; one that is absent or
 * unparseable is let through, since connect-udp always uses capsules
 * (RFC 9297 section 3.4). Returns 0 or the first MASQUE_E_* code found, in
 * the order above; the caller answers 400 to any (masque_error_status). */
int masque_check_request(const struct masque_request *r, struct masque_target *out);

/* The HTTP status for a MASQUE_E_* code: 400 for every malformed request,
 * 501 for a :protocol that is not connect-udp. */
int masque_error_status(int err);

#endif
