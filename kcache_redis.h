/* kcache_redis.h - the Redis backend of kcache's remote tier: hiredis, TLS (rediss://), Redis
   Cluster with a breaker per node, Redis's build claims and notifications.  (MIT license at the end)

   A companion of kcache.h (the core). The core's remote tier (shards, a breaker per shard, signed
   and compressed values, the claim protocol) serves any kcache_remote_ops backend; this file is
   the built-in one, for KCACHE_REMOTE=redis://HOST[:PORT][/DB], rediss://..., unix:///PATH.sock
   (space-separated: shards). README.md ("Sharing across machines") is the manual.

   BUILD (POSIX; Windows: a backend of your own through kcache_config.remote_ops)
       Put this file beside kcache.h. In the ONE file that compiles kcache's implementation,
       include it instead of kcache.h (it includes kcache.h itself, after the switch below):
           #define KCACHE_IMPLEMENTATION
           #include "kcache_redis.h"
       or keep the 0.4 way, which builds the same: define KCACHE_REDIS there before including
       "kcache.h"; kcache.h then includes this file from its own directory at its end (and stops
       with an #error naming kcache_redis.h when it is not there). Elsewhere include kcache.h,
       this file, or both, in any order. Link -lhiredis (Debian: libhiredis-dev, hiredis 0.14 or
       later) besides what kcache.h needs; with KCACHE_TLS_OPENSSL (rediss://) -lssl -lcrypto.
       KCACHE_ZSTD and KCACHE_HMAC_OPENSSL are the core's (compressed, signed values).

   HOW THE CORE REACHES IT (one file, no global state)
       kcache.h parses every KCACHE_REMOTE* variable into kcache_config, whatever is compiled in.
       This file is a backend on the core's backend kit (kcache.h's kcache_remote_backend): a
       kcache_remote_ops table, an opener per URL (one shard each, with its own breaker), the
       server's identity and a value's MAC computed while it arrives; kcache_redis_backend()
       gives it. When KCACHE_REDIS is defined where the core's implementation is compiled, the
       core uses that backend for a configuration with URLs and no backend of its own:
       KCACHE_REMOTE alone turns Redis on. This file defines KCACHE_REDIS before it includes
       kcache.h, so including it first is enough; included after the core's implementation was
       compiled without the switch, it is too late to be reached that way, and an #error says
       what to do. With KCACHE_NO_REMOTE it compiles nothing but kcache_redis_backend (NULL).

   WHAT IT USES OF THE CORE
       Public names alone: kcache_remote_ops and kcache_remote_backend, the backend kit
       (kcache_remote_get_params: timeouts, claims' life, the entry bound, the TLS files, the
       prefix; kcache_remote_claim_honoured: whether another client's claim is signed with the
       secret; kcache_remote_mac_begin/_add/_end: a signed value's MAC as it arrives), and
       kcache_escape, kcache_monotonic_ns, kcache_hash, kcache_hash_hex. Its private names start
       with kcache_redis__ / KCACHE_REDIS__; the rest is POSIX (threads, clocks, sockets).

   OPTIONS (define where the implementation is compiled)
       KCACHE_TLS_OPENSSL  rediss:// (TLS to Redis)                                -lssl -lcrypto
*/
#ifndef KCACHE_REDIS_H
#define KCACHE_REDIS_H
/* the core's implementation, compiled in this file without the switch, cannot reach this backend */
#if defined(KCACHE_IMPLEMENTATION) && defined(KCACHE_IMPLEMENTED) && !defined(KCACHE_REDIS) && !defined(KCACHE_NO_REMOTE) && \
    !defined(_WIN32)
#error "kcache_redis.h came after kcache.h's implementation, which was compiled without KCACHE_REDIS and cannot reach it: in the file that defines KCACHE_IMPLEMENTATION, include kcache_redis.h instead of kcache.h (or before it), or define KCACHE_REDIS before including kcache.h"
#define KCACHE_REDIS__TOO_LATE /* (nothing more is compiled: one message) */
#endif
#ifndef KCACHE_REDIS
#define KCACHE_REDIS /* the core's implementation, when it comes next, reaches this backend */
#endif
#include "kcache.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The Redis backend, for kcache_config.remote_backend. Configured through kcache_config's remote
   fields (KCACHE_REMOTE*) and counted in kcache_stats and kcache_get_remote_shards. kcache_open
   uses it by itself for a configuration with URLs and no backend of its own (no remote_ops, no
   remote_backend) when this file is compiled with the core; setting it is needed only beside a
   core compiled without KCACHE_REDIS. NULL with KCACHE_NO_REMOTE. */
KCACHE_API const kcache_remote_backend *kcache_redis_backend(void);
#ifdef __cplusplus
}
#endif
#define KCACHE_REDIS__DECLARED /* (kcache.h's own include of this file, inside the one above, compiles nothing) */
#endif /* KCACHE_REDIS_H */

/* ============================================================================================== */
/*                                        IMPLEMENTATION                                          */
/* ============================================================================================== */
/* After the core's implementation (same file: KCACHE_IMPLEMENTED, left undefined where the core
   could not be compiled, its one #error saying why); without a remote tier (KCACHE_NO_REMOTE),
   kcache_redis_backend alone, which has no backend to give. */
#if defined(KCACHE_IMPLEMENTATION) && defined(_WIN32) && !defined(KCACHE_REDIS__IMPLEMENTED)
#define KCACHE_REDIS__IMPLEMENTED
#error "kcache: the Redis remote tier (kcache_redis.h, KCACHE_REDIS) is POSIX only for now; a backend of your own (remote_ops) works everywhere"
#elif defined(KCACHE_IMPLEMENTATION) && defined(KCACHE_REDIS__DECLARED) && defined(KCACHE_IMPLEMENTED) && \
    defined(KCACHE_NO_REMOTE) && !defined(KCACHE_REDIS__IMPLEMENTED)
#define KCACHE_REDIS__IMPLEMENTED
KCACHE_API const kcache_remote_backend *kcache_redis_backend(void) { return NULL; }
#elif defined(KCACHE_IMPLEMENTATION) && defined(KCACHE_REDIS__DECLARED) && defined(KCACHE_IMPLEMENTED) && \
    !defined(KCACHE_REDIS__TOO_LATE) && !defined(KCACHE_REDIS__IMPLEMENTED)
#define KCACHE_REDIS__IMPLEMENTED

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netdb.h>
#ifdef KCACHE_TLS_OPENSSL
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

#include <pthread.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers of this file's own (POSIX: the backend is POSIX only) ---- */
static int64_t kcache_redis__now_ns(void) { /* the wall clock, for condition variables' deadlines */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
/* Waits until signalled or the wall-clock deadline (ns since 1970); 0 when the deadline passed. */
static int kcache_redis__cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, int64_t deadline_ns) {
    struct timespec ts;
    ts.tv_sec = (time_t)(deadline_ns / 1000000000);
    ts.tv_nsec = (long)(deadline_ns % 1000000000);
    return pthread_cond_timedwait(c, m, &ts) != ETIMEDOUT;
}
/* A "why" text: formatted, then escaped whole (a URL, a host or a file name came from outside). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static void kcache_redis__say(char *out, size_t cap, const char *fmt, ...) {
    char raw[1024];
    va_list ap;
    int n;
    if (!out || !cap) return;
    va_start(ap, fmt);
    n = vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    kcache_escape(out, cap, raw, n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1);
}
static char *kcache_redis__strndup(const char *s, size_t n) {
    char *p = (char *)KCACHE_MALLOC(n + 1);
    if (p) { memcpy(p, s, n); p[n] = 0; }
    return p;
}

#define KCACHE_REDIS__KEY_MAX 200    /* a key kcache names on the server: prefix, kcache:1:, name, suffix */

/* Names on the server: kcache:1:<name> holds a value, kcache:1:<name>:claim a build claim (SET NX
   PX in a script that first looks for the value; the value is the holder's token, re-issued at each
   renewal), and a build's start and end are published on kcache:1:<name>:done ("t": its claim
   was taken, "1": the value was stored, "0": abandoned; on a cluster also on the sharded channel
   {kcache:1:<name>}:done, in the claim's slot). Every call runs on a non-blocking socket under
   poll() with a deadline, so that a hung server costs one timeout, not the kernel's. Connections
   are pooled per shard and never used by two threads at once; a forked child opens its own. */
#define KCACHE_REDIS__IDLE 4
#define KCACHE_REDIS__DEFER_MAX ((size_t)1 << 20) /* a put_release's value up to this is sent without waiting (kcache_redis__debt) */
#define KCACHE_REDIS__PREFIX "kcache:1:"
#define KCACHE_REDIS__MAX_ELEMENTS 65536 /* in one reply (kcache's own have a few): more is garbage */
#define KCACHE_REDIS__MIN_RATE 1048576   /* bytes/s a transfer past its timeout keeps up, or it ends */
#define KCACHE_REDIS__READ_MAX ((size_t)256 << 10) /* the largest read of a value (kcache_redis__io_max) */
#define KCACHE_REDIS__RESOLVE_KEEP_NS ((int64_t)60 * 1000000000) /* a resolved address is used this long */

/* A host name being resolved. getaddrinfo cannot be given a deadline, so it runs on a detached
   thread of its own while connects wait for it no longer than their connect timeout; the thread
   and everyone waiting share this (refs), and the last one out frees it. A name whose server never
   answers then costs each connect its timeout, and at most one thread per shard at a time. */
typedef struct kcache_redis__resolution {
    pthread_mutex_t m;
    pthread_cond_t c;
    unsigned refs;
    int done, ok;
    int64_t done_at;        /* monotonic ns */
    char host[256];
    char addr[64];          /* numeric, when ok */
} kcache_redis__resolution;

static void kcache_redis__resolution_unref(kcache_redis__resolution *q) {
    int last;
    pthread_mutex_lock(&q->m);
    last = --q->refs == 0;
    pthread_mutex_unlock(&q->m);
    if (!last) return;
    pthread_cond_destroy(&q->c);
    pthread_mutex_destroy(&q->m);
    KCACHE_FREE(q);
}

static void *kcache_redis__resolver(void *arg) {
    kcache_redis__resolution *q = (kcache_redis__resolution *)arg;
    struct addrinfo hints, *ai = NULL;
    char addr[64];
    int ok;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addr[0] = 0;
    ok = getaddrinfo(q->host, NULL, &hints, &ai) == 0 && ai &&
         getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, sizeof addr, NULL, 0, NI_NUMERICHOST) == 0;
    if (ai) freeaddrinfo(ai);
    pthread_mutex_lock(&q->m);
    q->ok = ok;
    memcpy(q->addr, addr, sizeof addr);
    q->done_at = kcache_monotonic_ns();
    q->done = 1;
    pthread_cond_broadcast(&q->c);
    pthread_mutex_unlock(&q->m);
    kcache_redis__resolution_unref(q);
    return NULL;
}

/* A key whose claim and build the process's subscriber listens for (kcache_redis__watch). */
#define KCACHE_REDIS__WATCH 256
enum { KCACHE_REDIS__W_FREE, KCACHE_REDIS__W_WAIT, KCACHE_REDIS__W_HELD, KCACHE_REDIS__W_STORED, KCACHE_REDIS__W_ABANDONED, KCACHE_REDIS__W_GONE };
typedef struct kcache_redis__watched {
    char name[33];                  /* the key's name (kcache_redis__key's %.32s) */
    unsigned char state;            /* KCACHE_REDIS__W_*; GONE: let go, still subscribed (watched again
                                       without a command; unsubscribed when its entry is needed) */
    unsigned char confirmed;        /* the server confirmed its subscription */
    int64_t heard_at;               /* HELD: when its claim's taking was heard (monotonic ns) */
} kcache_redis__watched;

typedef struct kcache_redis__server {
    char *host, *path, *user, *pass; /* host and port, or a unix socket's path */
    int port;
    long db;
    uint32_t connect_ms, op_ms;
    size_t max_reply;               /* a reply larger than this is garbage, not a value */
    const kcache_remote *remote;    /* its remote tier: the claims it would wait for, a value's MAC */
    uint32_t claim_ms;              /* the tier's claims' life: a longer one is not waited for */
    int is_signed;                  /* the tier has a secret: values are signed, claims checked */
    struct kcache_redis__resolution *resolving; /* the host's latest name resolution (rb->mutex; see kcache_redis__resolve) */
    uint32_t resolving_pid;            /* the process it belongs to (a forked child leaves its parent's alone) */
    redisReplyObjectFunctions *base;   /* hiredis's own reply functions; NULL until the first connect */
    redisReplyObjectFunctions fns;     /* the same, counting what a reply costs (kcache_redis__budget) */
    pthread_mutex_t mutex;            /* guards the pool */
    redisContext *idle[KCACHE_REDIS__IDLE];
    unsigned nidle;
    uint32_t pid;                   /* the process the pooled connections belong to */
    int tls;                        /* rediss:// */
    uint32_t ttl_s;                 /* SET ... EX ttl_s; 0: entries do not expire */
    const char *prefix;             /* before every key (the remote's copy); NULL: none */
    /* a cluster (see kcache_redis__run): which node serves each slot (index + 1; 0: not known, the
       seed is asked), the nodes met so far, and whether the map is to be read again (guarded by mutex) */
    uint8_t *slot;
    struct kcache_redis__server **node;
    unsigned nnodes;
    int refresh;
    /* the server's clock (kcache_redis__server_time; guarded by mutex): its time minus this
       host's monotonic clock, in ns, learned at clock_at (monotonic ns; 0: never); clock_tried:
       the last attempt, so that a server that does not answer is not asked at every claim */
    int64_t clock_offset, clock_at, clock_tried;
    int64_t reload_at;              /* when the map was last read (monotonic ns; kcache_redis__cluster_reload) */
    int reloading;                  /* a thread reads it now */
    unsigned reload_next;           /* where the next reload starts in the list of nodes (round robin) */
    /* a node of a cluster (the seed too): its own breaker (guarded by mutex), so that one dead,
       hung or unverifiable node turns off its own slots only (kcache_redis__node_allow) */
    int64_t node_open_until;        /* monotonic ns; 0: closed */
    uint32_t node_backoff_ms;
    int node_probing;               /* the one call let through after the back-off is under way */
    /* the process's subscriber on this server (kcache_redis__watch; guarded by mutex): one
       connection per process, subscribed to the channels of keys a batch found missing, whose
       messages say which claims were taken and which builds ended; used by one thread at a time
       (sub_busy), by turns */
    redisContext *sub;
    uint32_t sub_pid;               /* the process it belongs to (a forked child drops its parent's) */
    int sub_busy;                   /* a thread reads or writes it now */
    pthread_cond_t sub_cond;        /* signalled when a turn ends (the waiters' next one may read) */
    int no_watch;                   /* none: mode ro (no claims asked) */
    int64_t sub_retry_at;           /* after a failure, not connected again before then (monotonic ns) */
    int sub_sharded;                /* its subscriptions are a cluster node's (SSUBSCRIBE) */
    unsigned sub_refused;           /* subscriptions it redirected (a cluster's slot moved) */
    struct kcache_redis__server *cluster_of; /* a cluster's node: the listed one (its slot map); NULL: itself */
    struct kcache_redis__watched *watch; /* KCACHE_REDIS__WATCH entries (NULL until the first) */
    unsigned watch_next;            /* the entry the next new one replaces when all are in use (round robin) */
    char *tls_name;                 /* TLS: the name the server's certificate must hold; NULL: host */
    char *shown;                    /* a seed's URL as shown (its nodes' rows in the stats file) */
#ifdef KCACHE_TLS_OPENSSL
    SSL_CTX *tls_ctx;               /* its CAs, client certificate, verification */
#endif
} kcache_redis__server;

/* What one reply has cost so far, while kcache_redis__io reads it, so that the object functions
   (rb->fns) can refuse a reply past KCACHE_REDIS__MAX_ELEMENTS (an array announced that large, or
   elements without end: hiredis would keep each one). */
typedef struct kcache_redis__budget {
    const kcache_redis__server *rb;
    size_t elements;
} kcache_redis__budget;

/* What kcache keeps with each connection, in its reader's user field (privdata, "user-settable":
   hiredis's own reply functions do not use it; the reader's tasks carry it to the object
   functions): the budget of the reply being read (NULL between reads: a reply then is refused)
   and, over TLS, the SSL object. Made by kcache_redis__counting, freed by kcache_redis__drop. */
typedef struct kcache_redis__link {
    kcache_redis__budget *budget;
    struct kcache_redis__value *value; /* a GET's value to read straight into memory (NULL: none) */
    struct kcache_redis__debt *debt;   /* put_releases sent on it whose answers are not read yet (oldest first) */
    int unread;                        /* their answers (two each) come before the next reply; 0 once
                                          read, or once reading them failed (debt is then sent again) */
#ifdef KCACHE_TLS_OPENSSL
    SSL *ssl;
#endif
} kcache_redis__link;
static kcache_redis__link *kcache_redis__link_of(const redisContext *c) {
    return c->reader ? (kcache_redis__link *)c->reader->privdata : NULL;
}

/* A claim holder's put and release sent without waiting for the answers (kcache_redis__put_release:
   the builder's next claim goes out at once, in the same round trip as the answers; issue 35). It
   stays with the connection that carries them until the replies are read, before the next reply
   that connection's next user waits for (kcache_redis__settle), and is sent again, from the copy of
   the value kept here, when they never come (kcache_redis__discard). One allocation. */
typedef struct kcache_redis__debt {
    struct kcache_redis__debt *next;
    uint32_t pid;                   /* the process that sent it (a forked child's copy is not its own) */
    uint32_t ms;                    /* the claim's life, as the release was asked with */
    char name[33];
    char *token;                    /* in the same allocation, after the value */
    size_t size;
    unsigned char *data;
} kcache_redis__debt;
/* A debt for name's put (data, size) and its claim's release under token (ms), or NULL. */
static kcache_redis__debt *kcache_redis__debt_new(const char *name, const void *data, size_t size, const char *token, uint32_t ms) {
    size_t nlen = strlen(name), tlen = strlen(token);
    kcache_redis__debt *d;
    if (nlen >= sizeof d->name || !(d = (kcache_redis__debt *)KCACHE_MALLOC(sizeof *d + size + tlen + 1))) return NULL;
    memset(d, 0, sizeof *d);
    d->pid = (uint32_t)getpid(), d->ms = ms, d->size = size;
    memcpy(d->name, name, nlen + 1);
    d->data = (unsigned char *)(d + 1);
    if (size) memcpy(d->data, data, size);
    d->token = (char *)d->data + size;
    memcpy(d->token, token, tlen + 1);
    return d;
}
static void kcache_redis__debts_free(kcache_redis__debt *d) {
    while (d) {
        kcache_redis__debt *next = d->next;
        KCACHE_FREE(d);
        d = next;
    }
}

/* ---- TLS (rediss://): OpenSSL on the connection's own non-blocking socket, hiredis for the protocol.
   hiredis 0.14 (Debian 12's) has no TLS. A TLS connection stays a redisContext: hiredis formats
   commands and parses replies with its reader, while the bytes go through an SSL object on the
   context's socket, kept in the connection's kcache_redis__link. ---- */
#ifdef KCACHE_TLS_OPENSSL
static SSL *kcache_redis__tls_of(const redisContext *c) {
    const kcache_redis__link *k = kcache_redis__link_of(c);
    return k ? k->ssl : NULL;
}
#endif

/* Closes a connection (its TLS state too). Sends nothing: a forked child closes its parent's this way. */
static void kcache_redis__drop(redisContext *c) {
    kcache_redis__link *k = kcache_redis__link_of(c);
#ifdef KCACHE_TLS_OPENSSL
    if (k && k->ssl) SSL_free(k->ssl);
#endif
    if (k) {
        c->reader->privdata = NULL;
        kcache_redis__debts_free(k->debt);
    }
    KCACHE_FREE(k);
    redisFree(c);
}

static void kcache_redis__discard(kcache_redis__server *rb, redisContext *c);
static void kcache_redis__free(void *user) {
    kcache_redis__server *rb = (kcache_redis__server *)user;
    unsigned i;
    if (!rb) return;
    /* (a connection owing answers reads them, or has its put_releases sent again: on new
       connections, pooled and closed in turn) */
    while (rb->nidle) {
        redisContext *c = rb->idle[--rb->nidle];
        if (rb->pid == (uint32_t)getpid()) kcache_redis__discard(rb, c);
        else kcache_redis__drop(c);
    }
    if (rb->sub) kcache_redis__drop(rb->sub); /* (sends nothing: a forked child's closes only its descriptor) */
    KCACHE_FREE(rb->watch);
    if (rb->resolving && rb->resolving_pid == (uint32_t)getpid()) kcache_redis__resolution_unref(rb->resolving);
    for (i = 0; i < rb->nnodes; i++) kcache_redis__free(rb->node[i]);
    KCACHE_FREE(rb->node);
    KCACHE_FREE(rb->slot);
#ifdef KCACHE_TLS_OPENSSL
    if (rb->tls_ctx) SSL_CTX_free(rb->tls_ctx);
#endif
    pthread_cond_destroy(&rb->sub_cond);
    pthread_mutex_destroy(&rb->mutex);
    KCACHE_FREE(rb->host);
    KCACHE_FREE(rb->tls_name);
    KCACHE_FREE(rb->shown);
    KCACHE_FREE(rb->path);
    KCACHE_FREE(rb->user);
    KCACHE_FREE(rb->pass);
    KCACHE_FREE(rb);
}

/* The last '@' of a URL's first len bytes (the user-info ends there: a host, port or database has
   none), or NULL. */
static const char *kcache_redis__url_at(const char *url, size_t len) {
    const char *at = NULL, *p;
    for (p = url; p < url + len; p++)
        if (*p == '@') at = p;
    return at;
}

/* url as a message may show it: escaped, and with its password (user-info after the first ':')
   replaced by "***", so that no log line, debug line or kcache_explain carries it. */
static char *kcache_redis__url_safe(char *out, size_t cap, const char *url, size_t len) {
    const char *at = kcache_redis__url_at(url, len), *scheme = NULL, *colon;
    size_t i, o;
    for (i = 0; i + 2 < len && url + i < (at ? at : url + len); i++)
        if (url[i] == ':' && url[i + 1] == '/' && url[i + 2] == '/') { scheme = url + i + 3; break; }
    if (!at || !scheme || scheme > at || !cap) return kcache_escape(out, cap, url, len);
    colon = (const char *)memchr(scheme, ':', (size_t)(at - scheme));
    kcache_escape(out, cap, url, (size_t)((colon ? colon : at) - url));
    o = strlen(out);
    if (colon && o + 4 < cap) { memcpy(out + o, ":***", 5); o += 4; }
    kcache_escape(out + o, cap - o, at, (size_t)(url + len - at));
    return out;
}

static int kcache_redis__url_hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes RFC 3986 percent-escapes of a URL's user-info (%40 is '@', %3A ':', %25 '%') into a new
   string. NULL with *bad set for a malformed escape or a NUL byte (a password is a C string). */
static char *kcache_redis__url_decode(const char *s, size_t n, int *bad) {
    char *out = (char *)KCACHE_MALLOC(n + 1), *o = out;
    size_t i;
    *bad = 0;
    if (!out) return NULL;
    for (i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] != '%') { *o++ = s[i]; continue; }
        hi = i + 2 < n ? kcache_redis__url_hex(s[i + 1]) : -1;
        lo = i + 2 < n ? kcache_redis__url_hex(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) { *bad = 1; KCACHE_FREE(out); return NULL; }
        *o++ = (char)(hi * 16 + lo);
        i += 2;
    }
    *o = 0;
    return out;
}

/* Parses redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or unix:///PATH into a new backend (NULL and
   *why when it is not one). USER and PASSWORD may hold percent-escapes (RFC 3986: %40 for '@').
   shown gets the canonical form without credentials; why never holds the password. */
static kcache_redis__server *kcache_redis__parse(const char *url, size_t len, char *shown, size_t shown_cap, char *why, size_t cap) {
    kcache_redis__server *rb = (kcache_redis__server *)KCACHE_MALLOC(sizeof *rb);
    char safe[300]; /* url as messages show it */
    const char *p = url, *end = url + len, *at, *h, *he;
    char num[16];
    int bad = 0;
    kcache_redis__url_safe(safe, sizeof safe, url, len);
    if (!rb) { kcache_redis__say(why, cap, "out of memory"); return NULL; }
    memset(rb, 0, sizeof *rb);
    pthread_mutex_init(&rb->mutex, NULL);
    pthread_cond_init(&rb->sub_cond, NULL);
    rb->port = 6379;
    if (len > 8 && memcmp(p, "unix:///", 8) == 0) {
        if (len - 7 >= 108 || memchr(p + 7, '?', len - 7)) { kcache_redis__say(why, cap, "%s: the socket path is too long or has a query", safe); goto bad; }
        rb->path = kcache_redis__strndup(p + 7, len - 7);
        snprintf(shown, shown_cap, "unix://%s", rb->path ? rb->path : "");
        if (!rb->path) goto oom;
        return rb;
    }
    if (len > 9 && memcmp(p, "rediss://", 9) == 0) { /* TLS */
#ifndef KCACHE_TLS_OPENSSL
        kcache_redis__say(why, cap, "%s: rediss:// (TLS) needs kcache built with KCACHE_TLS_OPENSSL (-lssl -lcrypto)", safe);
        goto bad;
#endif
        rb->tls = 1;
        p++;
    } else if (len <= 8 || memcmp(p, "redis://", 8) != 0) {
        kcache_redis__say(why, cap, "%s is not redis[s]://HOST[:PORT][/DB] or unix:///PATH.sock", safe);
        goto bad;
    }
    p += 8;
    at = kcache_redis__url_at(p, (size_t)(end - p));
    if (at) { /* [USER]:PASSWORD@, percent-encoded */
        const char *colon = (const char *)memchr(p, ':', (size_t)(at - p));
        if (!colon) { kcache_redis__say(why, cap, "redis URL: credentials must be [USER]:PASSWORD@"); goto bad; }
        if (colon > p && !(rb->user = kcache_redis__url_decode(p, (size_t)(colon - p), &bad)) && !bad) goto oom;
        if (!bad && !(rb->pass = kcache_redis__url_decode(colon + 1, (size_t)(at - colon - 1), &bad)) && !bad) goto oom;
        if (bad) { kcache_redis__say(why, cap, "redis URL %s: a '%%' in the user or password starts no %%HH escape (a '%%' itself is %%25; %%00 is not allowed)", safe); goto bad; }
        p = at + 1;
    }
    if (p < end && *p == '[') { /* [IPv6] */
        h = p + 1;
        he = (const char *)memchr(h, ']', (size_t)(end - h));
        if (!he) { kcache_redis__say(why, cap, "redis URL: no ] after an IPv6 address"); goto bad; }
        p = he + 1;
    } else {
        h = p;
        while (p < end && *p != ':' && *p != '/') p++;
        he = p;
    }
    if (he == h || he - h > 255) { kcache_redis__say(why, cap, "redis URL %s: no host", safe); goto bad; }
    for (at = h; at < he; at++)
        if (!((*at >= 'a' && *at <= 'z') || (*at >= 'A' && *at <= 'Z') || (*at >= '0' && *at <= '9') || *at == '.' || *at == '-' ||
              *at == '_' || *at == ':')) {
            kcache_redis__say(why, cap, "redis URL %s: a host has letters, digits, '.', '-' and ':' only", safe);
            goto bad;
        }
    if (!(rb->host = kcache_redis__strndup(h, (size_t)(he - h)))) goto oom;
    if (p < end && *p == ':') {
        const char *q = ++p;
        long v = 0;
        while (p < end && *p >= '0' && *p <= '9' && v <= 65535) v = v * 10 + (*p++ - '0');
        if (p == q || v < 1 || v > 65535 || (p < end && *p != '/')) { kcache_redis__say(why, cap, "redis URL %s: the port is 1 to 65535", safe); goto bad; }
        rb->port = (int)v;
    }
    if (p < end && *p == '/') {
        p++;
        while (p < end && *p >= '0' && *p <= '9' && rb->db < 1000000) rb->db = rb->db * 10 + (*p++ - '0');
        if (p != end || rb->db >= 1000000) { kcache_redis__say(why, cap, "redis URL %s: the database is a number", safe); goto bad; }
    }
    if (p != end) { kcache_redis__say(why, cap, "redis URL %s: unexpected text after the host", safe); goto bad; }
    snprintf(num, sizeof num, "%d", rb->port);
    snprintf(shown, shown_cap, "redis%s://%s%s%s:%s/%ld", rb->tls ? "s" : "", strchr(rb->host, ':') ? "[" : "", rb->host, strchr(rb->host, ':') ? "]" : "", num, rb->db);
    return rb;
oom:
    kcache_redis__say(why, cap, "out of memory");
bad:
    kcache_redis__free(rb);
    return NULL;
}

/* Waits until fd is ready for ev, or the deadline (monotonic ns). Past the deadline it still
   looks once: a caller that was not scheduled until then (a loaded machine) finds what arrived. */
static kcache_status kcache_redis__wait(int fd, short ev, int64_t deadline) {
    for (;;) {
        struct pollfd p;
        int64_t left = deadline - kcache_monotonic_ns();
        int r;
        p.fd = fd;
        p.events = ev;
        p.revents = 0;
        r = poll(&p, 1, left > 0 ? (int)((left + 999999) / 1000000) : 0);
        if (r > 0) return KCACHE_OK; /* ready, or an error or hang-up the next read or write reports */
        if (r == 0 && left <= 0) return KCACHE_ETIMEOUT;
        if (r < 0 && errno != EINTR) return KCACHE_EIO;
    }
}

/* redisBufferWrite without SIGPIPE: a server that went away must not end the caller's process.
   The signal is blocked in this thread for the write, and one it raised is taken before unblocking
   (a SIGPIPE that was already pending stays for the program). */
static int kcache_redis__write(redisContext *c, int *done) {
    sigset_t pipe_set, old, pend;
    int rc, had;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    had = sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE);
    rc = redisBufferWrite(c, done);
    if (!had && sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE)) {
        int sig; /* pending, so sigwait takes it at once (and it is POSIX everywhere, unlike sigtimedwait) */
        sigwait(&pipe_set, &sig);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static const redisReplyObjectFunctions *kcache_redis__count(const redisReadTask *t, size_t n) {
    const kcache_redis__link *k = (const kcache_redis__link *)t->privdata;
    kcache_redis__budget *b = k ? k->budget : NULL;
    if (!b || b->elements > KCACHE_REDIS__MAX_ELEMENTS || n > KCACHE_REDIS__MAX_ELEMENTS - b->elements) return NULL;
    b->elements += n;
    return b->rb->base;
}
static void *kcache_redis__new_string(const redisReadTask *t, char *str, size_t len) {
    const redisReplyObjectFunctions *f = kcache_redis__count(t, 1);
    return f ? f->createString(t, str, len) : NULL; /* NULL: the reader fails the reply */
}
static void *kcache_redis__new_array(const redisReadTask *t, int n) {
    const redisReplyObjectFunctions *f = n >= 0 ? kcache_redis__count(t, 1 + (size_t)n) : NULL;
    return f ? f->createArray(t, n) : NULL;
}
static void *kcache_redis__new_int(const redisReadTask *t, long long v) {
    const redisReplyObjectFunctions *f = kcache_redis__count(t, 1);
    return f ? f->createInteger(t, v) : NULL;
}
static void *kcache_redis__new_nil(const redisReadTask *t) {
    const redisReplyObjectFunctions *f = kcache_redis__count(t, 1);
    return f ? f->createNil(t) : NULL;
}

/* Gives a new connection its kcache_redis__link and its reader the counting object functions
   (made from hiredis's own at the first connect). */
static kcache_status kcache_redis__counting(kcache_redis__server *rb, redisContext *c) {
    kcache_redis__link *k;
    if (!c->reader) return KCACHE_EIO;
    if (!(k = (kcache_redis__link *)KCACHE_MALLOC(sizeof *k))) return KCACHE_ENOMEM;
    memset(k, 0, sizeof *k);
    c->reader->privdata = k; /* (hiredis 0.14's redisReaderSetPrivdata casts the pointer to int) */
    pthread_mutex_lock(&rb->mutex);
    if (!rb->base) {
        rb->base = c->reader->fn;
        rb->fns = *rb->base;
        rb->fns.createString = kcache_redis__new_string;
        rb->fns.createArray = kcache_redis__new_array;
        rb->fns.createInteger = kcache_redis__new_int;
        rb->fns.createNil = kcache_redis__new_nil;
    }
    pthread_mutex_unlock(&rb->mutex);
    if (c->reader->fn == rb->base) c->reader->fn = &rb->fns;
    return KCACHE_OK;
}

#if defined(HIREDIS_MAJOR) && HIREDIS_MAJOR >= 1
#define KCACHE_REDIS__UNSENT(c) ((c)->obuf ? hisdslen((c)->obuf) : 0)
#else
#define KCACHE_REDIS__UNSENT(c) ((c)->obuf ? sdslen((c)->obuf) : 0)
#endif

/* The length the bulk string being read announced (hiredis leaves its reader at the digits until
   the whole string is in), or 0: a value announced longer than any this client reads is garbage
   before its bytes arrive, however fast they come. */
static uint64_t kcache_redis__announced(const redisReader *r) {
#if defined(HIREDIS_MAJOR) && HIREDIS_MAJOR >= 1
    const redisReadTask *t = r->ridx >= 0 && r->task ? r->task[r->ridx] : NULL;
#else
    const redisReadTask *t = r->ridx >= 0 && r->ridx < 9 ? &r->rstack[r->ridx] : NULL;
#endif
    uint64_t v = 0;
    size_t i;
    if (!t || t->type != REDIS_REPLY_STRING || !r->buf) return 0;
    for (i = r->pos; i < r->len && i < r->pos + 19 && r->buf[i] >= '0' && r->buf[i] <= '9'; i++) v = v * 10 + (uint64_t)(r->buf[i] - '0');
    return v;
}
/* A GET's value, read straight from the socket into memory of kcache's (kcache_redis__read_value). */
typedef struct kcache_redis__value {
    char *buf;                       /* the value (KCACHE_MALLOC), NULL until it is read */
    size_t len;
    struct kcache_redis__sink *sink; /* a signed value's MAC, computed as it arrives (NULL: none) */
} kcache_redis__value;
static kcache_status kcache_redis__read_value(redisContext *c, kcache_redis__value *v, size_t at, int64_t start, int64_t deadline,
                                              int64_t *last, uint64_t *moved);
static void *kcache_redis__stand_in(const kcache_redis__server *rb);

/* Where the bytes of the reply's bulk string (a reply of one string, as GET's) begin in the
   reader's buffer once its length line is whole; 0 before, or for any other reply. */
static size_t kcache_redis__body(const redisReader *r) {
    size_t i;
    if (r->ridx != 0 || !kcache_redis__announced(r)) return 0;
    for (i = r->pos; i < r->len && r->buf[i] >= '0' && r->buf[i] <= '9'; i++) {
    }
    return i + 1 < r->len && r->buf[i] == '\r' && r->buf[i + 1] == '\n' ? i + 2 : 0;
}

#ifdef KCACHE_HMAC_OPENSSL
/* A signed GET computes a GMAC value's MAC while the value arrives, in the time the transfer
   leaves free, instead of after it: kcache_redis__get_mac asks for the value's last 28 bytes (its
   nonce and tag) in the same write as the GET, and the GET's bytes then go through GMAC under
   that nonce as the reads bring them. The nonce is only a hint: kcache (kcache_remote_backend.premac) uses the
   result only when the value's own nonce is the same (it is, unless a writer replaced the value
   between the two commands), and otherwise computes the MAC itself. */
typedef struct kcache_redis__sink {
    const kcache_remote *remote;            /* whose secret signs */
    unsigned char nonce[KCACHE_REMOTE_MAC_NONCE];
    kcache_remote_mac *mac;                 /* NULL until the value's envelope said version 2 */
    uint64_t done;                          /* the value's bytes gone through it */
    int state;                              /* 0: no envelope yet; 1: computing; -1: not used (no
                                               nonce, not a GMAC value, a failure) */
} kcache_redis__sink;

/* Takes the first `have` of the value's len bytes (as many as have arrived). */
static void kcache_redis__sink_add(kcache_redis__sink *k, const unsigned char *v, uint64_t have, uint64_t len) {
    uint64_t upto;
    if (k->state == 0) {
        if (have < KCACHE_REMOTE_VALUE_HEAD) return;
        if (!(k->mac = kcache_remote_mac_begin(k->remote, v, len, k->nonce))) { /* (not a GMAC value of len bytes) */
            k->state = -1;
            return;
        }
        k->state = 1;
    }
    if (k->state != 1) return;
    upto = len - KCACHE_REMOTE_MAC_NONCE - KCACHE_REMOTE_MAC_TAG; /* the MAC covers all but the nonce and tag */
    if (have < upto) upto = have;
    if (upto > k->done) {
        if (!kcache_remote_mac_add(k->mac, v + k->done, (size_t)(upto - k->done))) k->state = -1;
        k->done = upto;
    }
}
/* Ends k (frees what it holds). With v, the GET's whole value (n bytes): 1 with the nonce and the
   MAC of v into out when it was computed; 0 otherwise. */
static int kcache_redis__sink_end(kcache_redis__sink *k, const char *v, size_t n, unsigned char out[KCACHE_REMOTE_MAC_NONCE + KCACHE_REMOTE_MAC_TAG]) {
    unsigned char tag[KCACHE_REMOTE_MAC_TAG];
    int ok;
    if (v && k->state >= 0) kcache_redis__sink_add(k, (const unsigned char *)v, n, n);
    if (!k->mac) return 0;
    ok = kcache_remote_mac_end(k->mac, tag) && k->state == 1 && v && out && k->done + KCACHE_REMOTE_MAC_NONCE + KCACHE_REMOTE_MAC_TAG == n;
    k->mac = NULL;
    k->state = -1;
    if (ok) memcpy(out, k->nonce, KCACHE_REMOTE_MAC_NONCE), memcpy(out + KCACHE_REMOTE_MAC_NONCE, tag, KCACHE_REMOTE_MAC_TAG);
    return ok;
}
#endif

/* Until when a transfer that began at start may wait for its next bytes, having moved `moved`
   bytes, the last at `last`: its deadline while nothing moved; past it, while bytes keep moving,
   no wait longer than the timeout (deadline - start) itself and no slower than
   KCACHE_REDIS__MIN_RATE on average: each byte moved buys 1/rate s, so a one-byte drip is a dead
   server while a hot value on a busy link arrives. */
static int64_t kcache_redis__limit(int64_t start, int64_t deadline, int64_t last, uint64_t moved) {
    int64_t idle = deadline - start, paid;
    if (idle <= 0 || !moved) return deadline;
    if (moved > ((uint64_t)1 << 40)) moved = (uint64_t)1 << 40;
    paid = deadline + (int64_t)(moved * 1000000000u / KCACHE_REDIS__MIN_RATE);
    return last + idle < paid ? last + idle : paid;
}

#ifdef KCACHE_TLS_OPENSSL
/* rediss://'s context: the CAs of ca (a PEM file; NULL: the system's store), the client certificate
   and key when given, the server verified. NULL with *why. */
static SSL_CTX *kcache_redis__tls_ctx(const char *ca, const char *cert, const char *key, char *why, size_t cap) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    char err[200], name[300];
    const char *what = NULL, *file = NULL;
    if (!ctx) { kcache_redis__say(why, cap, "rediss://: no TLS context (out of memory)"); return NULL; }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 : SSL_CTX_set_default_verify_paths(ctx) != 1)
        what = "cannot load the CA file (KCACHE_REMOTE_CA)", file = ca ? ca : "(the system's)";
    else if (!cert != !key)
        what = "a client certificate needs both KCACHE_REMOTE_CERT and KCACHE_REMOTE_KEY", file = cert ? cert : key;
    else if (cert && SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        what = "cannot load the client certificate (KCACHE_REMOTE_CERT)", file = cert;
    else if (key && (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1))
        what = "cannot load the client key, or it is not the certificate's (KCACHE_REMOTE_KEY)", file = key;
    if (!what) return ctx;
    err[0] = 0;
    if (ERR_peek_error()) ERR_error_string_n(ERR_get_error(), err, sizeof err);
    ERR_clear_error();
    kcache_redis__say(why, cap, "rediss://: %s %s%s%s", what, kcache_escape(name, sizeof name, file, file ? strlen(file) : 0), err[0] ? ": " : "", err);
    SSL_CTX_free(ctx);
    return NULL;
}

/* Waits for what an SSL call that returned rc needs (reading or writing the socket), by the
   deadline; KCACHE_EIO when it failed for good. */
static kcache_status kcache_redis__tls_wait(SSL *s, int fd, int rc, int64_t deadline) {
    int e = SSL_get_error(s, rc);
    if (e == SSL_ERROR_WANT_READ) return kcache_redis__wait(fd, POLLIN, deadline);
    if (e == SSL_ERROR_WANT_WRITE) return kcache_redis__wait(fd, POLLOUT, deadline);
    ERR_clear_error(); /* the thread's OpenSSL error queue is left empty for the program */
    return KCACHE_EIO;
}

/* Blocks SIGPIPE in this thread around TLS's socket writes, as kcache_redis__write does. */
typedef struct kcache_redis__nopipe { sigset_t set, old; int had; } kcache_redis__nopipe;
static void kcache_redis__nopipe_begin(kcache_redis__nopipe *np) {
    sigset_t pend;
    sigemptyset(&np->set);
    sigaddset(&np->set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &np->set, &np->old);
    np->had = sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE);
}
static void kcache_redis__nopipe_end(kcache_redis__nopipe *np) {
    sigset_t pend;
    if (!np->had && sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE)) {
        int sig;
        sigwait(&np->set, &sig);
    }
    pthread_sigmask(SIG_SETMASK, &np->old, NULL);
}

/* The TLS handshake on c's connected socket: the server's certificate must chain to the CAs and
   name rb->tls_name when it has one (KCACHE_REMOTE_TLS_NAME, or a cluster's listed host name for a
   node announced by its address; see kcache_redis__cluster_node), else the host (DNS name, sent as
   SNI too) or address it was reached by. */
static kcache_status kcache_redis__tls_start(kcache_redis__server *rb, redisContext *c, int64_t deadline) {
    kcache_redis__link *k = kcache_redis__link_of(c);
    SSL *s;
    unsigned char addr[16];
    kcache_redis__nopipe np;
    kcache_status st = KCACHE_OK;
    char *name = rb->tls_name ? rb->tls_name : rb->host; /* (not const: SSL_set_tlsext_host_name casts it to void *) */
    if (!k) return KCACHE_EIO;
    if (!(s = SSL_new(rb->tls_ctx))) return KCACHE_ENOMEM;
    k->ssl = s; /* freed with the connection (kcache_redis__drop) */
    if (inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1) {
        if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), name) != 1) st = KCACHE_EIO;
    } else if (SSL_set_tlsext_host_name(s, name) != 1 || SSL_set1_host(s, name) != 1) {
        st = KCACHE_EIO;
    }
    if (st == KCACHE_OK && SSL_set_fd(s, c->fd) != 1) st = KCACHE_EIO;
    kcache_redis__nopipe_begin(&np);
    while (st == KCACHE_OK) {
        int rc = SSL_connect(s);
        if (rc == 1) break;
        st = kcache_redis__tls_wait(s, c->fd, rc, deadline);
        if (st == KCACHE_EIO && SSL_get_verify_result(s) != X509_V_OK) st = KCACHE_EUNSAFE; /* said as such by the core */
    }
    kcache_redis__nopipe_end(&np);
    ERR_clear_error();
    return st;
}

/* kcache_redis__io_max over TLS: n bytes of a formatted command (none: only a reply is awaited) go
   out through c's SSL, what comes in is fed to c's reader (SSL_read first: a record may already sit
   decrypted in the SSL); the same bounds (max_reply bytes, KCACHE_REDIS__MAX_ELEMENTS elements) and
   the same idle-time deadline (kcache_redis__limit). c's own output buffer is not used (sds.h has no
   C++ linkage to trim it). */
static kcache_status kcache_redis__tls_io(kcache_redis__server *rb, redisContext *c, const char *cmd, size_t n_cmd, int64_t deadline, size_t max_reply,
                                    redisReply **out) {
    kcache_redis__link *k = kcache_redis__link_of(c);
    SSL *s = k->ssl;
    kcache_redis__budget budget;
    char buf[16384];
    void *reply = NULL;
    kcache_redis__nopipe np;
    kcache_status st = KCACHE_OK;
    int64_t start = kcache_monotonic_ns(), last = start;
    uint64_t moved = 0, got = 0;
    size_t sent = 0;
    kcache_redis__nopipe_begin(&np);
    while (st == KCACHE_OK && sent < n_cmd) {
        size_t left = n_cmd - sent;
        int n = SSL_write(s, cmd + sent, left > (1u << 30) ? 1 << 30 : (int)left);
        if (n > 0) {
            sent += (size_t)n;
            moved += (uint64_t)n;
            last = kcache_monotonic_ns();
        } else {
            st = kcache_redis__tls_wait(s, c->fd, n, kcache_redis__limit(start, deadline, last, moved));
        }
    }
    budget.rb = rb;
    budget.elements = 0;
    k->budget = &budget;
    while (st == KCACHE_OK) {
        int n;
        size_t at;
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) { st = KCACHE_EIO; break; } /* garbage, or past the bounds */
        if (reply) break;
        if (kcache_redis__announced(c->reader) > max_reply) { st = KCACHE_EIO; break; }
        if (k->value && (at = kcache_redis__body(c->reader)) != 0) { /* a GET's value: read it here */
            if ((st = kcache_redis__read_value(c, k->value, at, start, deadline, &last, &moved)) == KCACHE_OK && !(reply = kcache_redis__stand_in(rb)))
                st = KCACHE_ENOMEM;
            break;
        }
        n = SSL_read(s, buf, (int)sizeof buf);
        if (n <= 0) {
            st = kcache_redis__tls_wait(s, c->fd, n, kcache_redis__limit(start, deadline, last, moved)); /* closed, or an error: EIO */
            continue;
        }
        moved += (uint64_t)n;
        got += (uint64_t)n;
        last = kcache_monotonic_ns();
        if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK || got > max_reply) st = KCACHE_EIO; /* bigger than any value */
    }
    k->budget = NULL;
    kcache_redis__nopipe_end(&np);
    *out = (redisReply *)reply;
    if (st != KCACHE_OK && reply) { freeReplyObject(reply); *out = NULL; }
    return st;
}
#endif

/* The reply a value read by kcache_redis__read_value stands for, for the code that looks at replies:
   a nil (neither an error nor a redirection; kcache_redis__get takes the value). */
static void *kcache_redis__stand_in(const kcache_redis__server *rb) {
    redisReadTask t;
    memset(&t, 0, sizeof t);
    return rb->base->createNil(&t);
}

/* Reads the rest of the bulk string whose length line c's reader has parsed (its bytes begin at
   `at` in the reader's buffer) straight into v->buf, with the same deadline as every read
   (kcache_redis__limit), checks the \r\n after it, and gives c a fresh reader (the old one stopped
   inside this reply). The value is copied once on its way (the kernel's copy), not three times
   (into hiredis's buffer, its reply, then kcache's blob), and the signed value's MAC (v->sink)
   goes along as the bytes arrive. */
static kcache_status kcache_redis__read_value(redisContext *c, kcache_redis__value *v, size_t at, int64_t start, int64_t deadline,
                                              int64_t *last, uint64_t *moved) {
    redisReader *r = c->reader, *fresh;
    uint64_t len = kcache_redis__announced(r);
    size_t have = r->len - at, total, n;
    char crlf[2] = {0, 0};
    kcache_status st = KCACHE_OK;
#ifdef KCACHE_TLS_OPENSSL
    SSL *s = kcache_redis__tls_of(c);
#endif
    if (!len || len > (uint64_t)((size_t)-1 / 2)) return KCACHE_EIO;
    total = (size_t)len + 2;
    if (have > total) return KCACHE_EIO; /* bytes past the reply: kcache sends one command at a time */
    if (!(v->buf = (char *)KCACHE_MALLOC((size_t)len))) return KCACHE_ENOMEM;
    n = have < (size_t)len ? have : (size_t)len;
    memcpy(v->buf, r->buf + at, n);
    if (have > n) memcpy(crlf, r->buf + at + n, have - n);
    for (;;) {
        char *into = have < (size_t)len ? v->buf + have : crlf + (have - (size_t)len);
        size_t want = have < (size_t)len ? (size_t)len - have : total - have;
        ptrdiff_t got;
#ifdef KCACHE_HMAC_OPENSSL
        if (v->sink) kcache_redis__sink_add(v->sink, (const unsigned char *)v->buf, have < (size_t)len ? have : (size_t)len, len);
#endif
        if (have == total) break;
#ifdef KCACHE_TLS_OPENSSL
        if (s) {
            int k = SSL_read(s, into, want > ((size_t)1 << 30) ? 1 << 30 : (int)want);
            if (k <= 0) {
                if ((st = kcache_redis__tls_wait(s, c->fd, k, kcache_redis__limit(start, deadline, *last, *moved))) != KCACHE_OK) break;
                continue;
            }
            got = k;
        } else
#endif
        {
            got = read(c->fd, into, want);
            if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                if ((st = kcache_redis__wait(c->fd, POLLIN, kcache_redis__limit(start, deadline, *last, *moved))) != KCACHE_OK) break;
                continue;
            }
            if (got <= 0) { st = KCACHE_EIO; break; } /* closed, or an error */
        }
        have += (size_t)got;
        *moved += (uint64_t)got;
        *last = kcache_monotonic_ns();
    }
    if (st == KCACHE_OK && memcmp(crlf, "\r\n", 2) != 0) st = KCACHE_EIO; /* not the protocol */
    if (st == KCACHE_OK && !(fresh = redisReaderCreateWithFunctions(r->fn))) st = KCACHE_ENOMEM;
    if (st != KCACHE_OK) {
        KCACHE_FREE(v->buf);
        v->buf = NULL;
        return st;
    }
    fresh->privdata = r->privdata;
    fresh->maxbuf = r->maxbuf;
    redisReaderFree(r);
    c->reader = fresh;
    v->len = (size_t)len;
    return KCACHE_OK;
}

/* Whether a pooled connection is still good: nothing to read on it (a server that closed it, or
   sent what no command asked for, is not). Over TLS, records that carry no data (session tickets
   sent after the handshake) are taken and the connection kept. */
static int kcache_redis__idle_ok(redisContext *c) {
    const kcache_redis__link *link = kcache_redis__link_of(c);
    struct pollfd p;
    if (link && link->unread) return 1; /* (its answers may be there: its next use reads them, or fails and sends them again) */
    p.fd = c->fd;
    p.events = POLLIN;
    p.revents = 0;
    if (poll(&p, 1, 0) == 0) return 1;
#ifdef KCACHE_TLS_OPENSSL
    if (kcache_redis__tls_of(c) && !(p.revents & (POLLERR | POLLHUP))) {
        char b;
        int n = SSL_read(kcache_redis__tls_of(c), &b, 1), ok = n <= 0 && SSL_get_error(kcache_redis__tls_of(c), n) == SSL_ERROR_WANT_READ;
        ERR_clear_error();
        return ok;
    }
#endif
    return 0;
}

/* Sends what is queued on c (a plain connection), by the deadline of an exchange (as below). */
static kcache_status kcache_redis__flush(redisContext *c, int64_t start, int64_t deadline, int64_t *last, uint64_t *moved) {
    int done = 0;
    kcache_status st;
    while (!done) {
        size_t unsent = KCACHE_REDIS__UNSENT(c), left;
        if (kcache_redis__write(c, &done) != REDIS_OK) return KCACHE_EIO;
        if ((left = KCACHE_REDIS__UNSENT(c)) < unsent) { *moved += unsent - left; *last = kcache_monotonic_ns(); }
        if (!done && (st = kcache_redis__wait(c->fd, POLLOUT, kcache_redis__limit(start, deadline, *last, *moved))) != KCACHE_OK) return st;
    }
    return KCACHE_OK;
}
static kcache_status kcache_redis__settle(kcache_redis__server *rb, redisContext *c, kcache_redis__link *link);

/* Sends what is queued on c and reads one reply of at most max_reply bytes and
   KCACHE_REDIS__MAX_ELEMENTS elements, by the deadline (stretched for a transfer that is making
   progress: kcache_redis__limit) of an exchange that began at start and has moved *moved bytes,
   the last at *last (both updated): a pipeline's replies share one deadline (get_many), instead of
   each reply getting a timeout of its own. */
static kcache_status kcache_redis__io_span(kcache_redis__server *rb, redisContext *c, int64_t start, int64_t deadline, int64_t *last_io,
                                           uint64_t *moved_io, size_t max_reply, redisReply **out) {
    kcache_redis__budget budget;
    kcache_redis__link *link;
    void *reply = NULL;
    char small[16384], *big = NULL;
    size_t big_cap = 0;
    int64_t last = *last_io;
    uint64_t moved = *moved_io, got = 0;
    kcache_status st = KCACHE_OK;
    *out = NULL;
#ifdef KCACHE_TLS_OPENSSL
    if (kcache_redis__tls_of(c)) return kcache_redis__tls_io(rb, c, NULL, 0, deadline, max_reply, out);
#endif
    st = kcache_redis__flush(c, start, deadline, &last, &moved);
    link = kcache_redis__link_of(c);
    /* the answers to put_releases sent earlier on c come first (the command just sent went out
       with them in flight: one round trip for both); this reply's time counts from there, as the
       server answers it after them */
    if (st == KCACHE_OK && link && link->unread) {
        int64_t t0 = kcache_monotonic_ns(), spent;
        st = kcache_redis__settle(rb, c, link);
        spent = kcache_monotonic_ns() - t0;
        start += spent, deadline += spent, last += spent;
    }
    if (st != KCACHE_OK) {
        *last_io = last, *moved_io = moved;
        return st;
    }
    budget.rb = rb;
    budget.elements = 0;
    if (link) link->budget = &budget;
    /* The socket is read before poll() is asked (a reply is usually there already), a large reply
       in reads of up to KCACHE_REDIS__READ_MAX (hiredis's own reads are 16 KiB): a 1 MiB value
       costs about 10 system calls, not 130. hiredis parses every reply; the bytes of a GET's value
       (link->value), once it has parsed their length, go straight into kcache's memory. */
    for (;;) {
        uint64_t want;
        char *into = small;
        size_t cap = sizeof small, at;
        ptrdiff_t n;
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) { st = KCACHE_EIO; break; } /* garbage, or past the bounds */
        if (reply) break;
        if ((want = kcache_redis__announced(c->reader)) > max_reply) { st = KCACHE_EIO; break; }
        if (link && link->value && (at = kcache_redis__body(c->reader)) != 0) { /* a GET's value: read it here */
            if ((st = kcache_redis__read_value(c, link->value, at, start, deadline, &last, &moved)) == KCACHE_OK &&
                !(reply = kcache_redis__stand_in(rb)))
                st = KCACHE_ENOMEM;
            break;
        }
        if (want > sizeof small) { /* (allocated once per reply, as large as the value or the cap) */
            if (!big) big = (char *)KCACHE_MALLOC(big_cap = want + 2 < KCACHE_REDIS__READ_MAX ? (size_t)want + 2 : KCACHE_REDIS__READ_MAX);
            if (big) into = big, cap = big_cap;
        }
        n = read(c->fd, into, cap);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if ((st = kcache_redis__wait(c->fd, POLLIN, kcache_redis__limit(start, deadline, last, moved))) != KCACHE_OK) break;
            continue;
        }
        if (n <= 0) { st = KCACHE_EIO; break; } /* closed, or an error */
        moved += (uint64_t)n;
        got += (uint64_t)n;
        last = kcache_monotonic_ns();
        if (got > max_reply) { st = KCACHE_EIO; break; } /* bigger than any value: not a server of ours */
        if (redisReaderFeed(c->reader, into, (size_t)n) != REDIS_OK) { st = KCACHE_EIO; break; }
    }
    if (big) KCACHE_FREE(big);
    if (link) link->budget = NULL;
    *last_io = last, *moved_io = moved;
    if (st != KCACHE_OK) {
        if (reply) freeReplyObject(reply);
        return st;
    }
    *out = (redisReply *)reply;
    return KCACHE_OK;
}
/* The same for one command's reply: its own exchange, from now. */
static kcache_status kcache_redis__io_max(kcache_redis__server *rb, redisContext *c, int64_t deadline, size_t max_reply, redisReply **out) {
    int64_t start = kcache_monotonic_ns(), last = start;
    uint64_t moved = 0;
    return kcache_redis__io_span(rb, c, start, deadline, &last, &moved, max_reply, out);
}
static kcache_status kcache_redis__io(kcache_redis__server *rb, redisContext *c, int64_t deadline, redisReply **out) {
    return kcache_redis__io_max(rb, c, deadline, rb->max_reply, out);
}

static kcache_status kcache_redis__put(void *user, const char *name, const void *data, size_t size);
static kcache_status kcache_redis__claim(void *user, const char *name, int op, const char *token, uint32_t ms);
static int kcache_redis__cluster_redirect(const redisReply *r, int *ask, unsigned *slot, const char **host, size_t *hlen, int *port);

/* A put_release whose answers never came, sent again (put, then release: the ordinary commands,
   routed as any; a release that finds the claim gone does nothing). By the process that sent it only. */
static void kcache_redis__debt_resend(kcache_redis__server *rb, const kcache_redis__debt *d) {
    if (d->pid != (uint32_t)getpid()) return;
    (void)kcache_redis__put(rb, d->name, d->data, d->size);
    (void)kcache_redis__claim(rb, d->name, KCACHE_CLAIM_RELEASE, d->token, d->ms);
}

/* Reads the answers c owes for put_releases sent earlier (link->debt), each within a timeout of
   the one before (as put_release read them when it waited): each pair read lets its copy go; a
   put that a plain server turned out to redirect (a node of a cluster) is sent again, routed. A
   failure leaves the rest in link->debt, unread no more (the caller drops c:
   kcache_redis__discard sends them again). */
static kcache_status kcache_redis__settle(kcache_redis__server *rb, redisContext *c, kcache_redis__link *link) {
    struct kcache_redis__value *value = link->value;
    kcache_status st = KCACHE_OK;
    link->unread = 0;
    link->value = NULL; /* (not a GET's) */
    while (link->debt && st == KCACHE_OK) {
        kcache_redis__debt *d = link->debt;
        redisReply *r[2] = {NULL, NULL};
        int i, ask, port;
        unsigned slot;
        const char *host;
        size_t hlen;
        for (i = 0; i < 2 && st == KCACHE_OK; i++) st = kcache_redis__io_max(rb, c, kcache_monotonic_ns() + (int64_t)rb->op_ms * 1000000, 65536, &r[i]);
        if (st == KCACHE_OK) {
            link->debt = d->next;
            if (kcache_redis__cluster_redirect(r[0], &ask, &slot, &host, &hlen, &port)) kcache_redis__debt_resend(rb, d);
            KCACHE_FREE(d);
        }
        for (i = 0; i < 2; i++)
            if (r[i]) freeReplyObject(r[i]);
    }
    link->value = value;
    return st;
}

/* Closes c, a connection of rb's that may owe answers: read first (the connection is still good:
   given back to a full pool, or closed at the end), else the put_releases it carried are sent again. */
static void kcache_redis__discard(kcache_redis__server *rb, redisContext *c) {
    kcache_redis__link *link = kcache_redis__link_of(c);
    kcache_redis__debt *d = NULL;
    if (link && link->debt && link->debt->pid == (uint32_t)getpid()) {
        if (link->unread) (void)kcache_redis__settle(rb, c, link);
        d = link->debt, link->debt = NULL;
    }
    kcache_redis__drop(c);
    while (d) {
        kcache_redis__debt *next = d->next;
        kcache_redis__debt_resend(rb, d);
        KCACHE_FREE(d);
        d = next;
    }
}

static kcache_status kcache_redis__cmd(kcache_redis__server *rb, redisContext *c, int argc, const char **argv, const size_t *lens,
                                       int64_t deadline, redisReply **out) {
    *out = NULL;
#ifdef KCACHE_TLS_OPENSSL
    if (kcache_redis__tls_of(c)) {
        char *cmd = NULL;
        int n = redisFormatCommandArgv(&cmd, argc, argv, lens);
        kcache_status st = n < 0 ? KCACHE_ENOMEM : kcache_redis__tls_io(rb, c, cmd, (size_t)n, deadline, rb->max_reply, out);
        if (cmd) redisFreeCommand(cmd);
        return st;
    }
#endif
    if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK) return KCACHE_ENOMEM;
    return kcache_redis__io(rb, c, deadline, out);
}

/* An error reply: a full server (maxmemory with noeviction) and a read-only replica refuse writes;
   anything else (NOAUTH, LOADING, a disabled command...) is a failure. */
static kcache_status kcache_redis__error(const redisReply *r) {
    if (r->type != REDIS_REPLY_ERROR || !r->str) return KCACHE_EIO;
    if (strncmp(r->str, "OOM", 3) == 0) return KCACHE_ENOSPC;
    if (strncmp(r->str, "READONLY", 8) == 0) return KCACHE_EROFS;
    return KCACHE_EIO;
}

/* An error reply to a write (a value, a delete, a claim). A user the server's ACL lets read but
   not write (NOPERM), a replica (READONLY), a server that cannot save (MISCONF) or a full one (OOM)
   refuses writes, not reads: kcache skips writes for a while and reads go on. */
static kcache_status kcache_redis__write_error(const redisReply *r) {
    if (r->type == REDIS_REPLY_ERROR && r->str && (strncmp(r->str, "NOPERM", 6) == 0 || strncmp(r->str, "MISCONF", 7) == 0))
        return KCACHE_EROFS;
    return kcache_redis__error(r);
}

/* A command that readies a new connection (AUTH [user] password, SELECT db): it must say OK. */
static kcache_status kcache_redis__setup(kcache_redis__server *rb, redisContext *c, const char *verb, const char *a, const char *b, int64_t deadline) {
    const char *argv[3];
    size_t lens[3];
    redisReply *r;
    kcache_status st;
    int n = 0;
    argv[n] = verb, lens[n++] = strlen(verb);
    if (a) argv[n] = a, lens[n++] = strlen(a);
    argv[n] = b, lens[n++] = strlen(b);
    st = kcache_redis__cmd(rb, c, n, argv, lens, deadline, &r);
    if (st == KCACHE_OK && r->type != REDIS_REPLY_STATUS) st = KCACHE_EIO;
    if (r) freeReplyObject(r);
    return st;
}

/* rb's host as a numeric address to connect to, by `by` (monotonic ns): an address at once; a
   name through the latest resolution when it ended less than a minute ago, else the one under way
   or a new one (kcache_redis__resolution). The name itself stays rb->host. */
static kcache_status kcache_redis__resolve(kcache_redis__server *rb, int64_t by, char addr[64]) {
    unsigned char bin[16];
    kcache_redis__resolution *q, *old = NULL;
    pthread_t th;
    pthread_attr_t attr;
    uint32_t pid = (uint32_t)getpid();
    kcache_status st;
    if (inet_pton(AF_INET, rb->host, bin) == 1 || inet_pton(AF_INET6, rb->host, bin) == 1) {
        snprintf(addr, 64, "%s", rb->host);
        return KCACHE_OK;
    }
    pthread_mutex_lock(&rb->mutex);
    if (rb->resolving_pid != pid) rb->resolving = NULL; /* a forked child: its parent's, with its parent's thread */
    rb->resolving_pid = pid;
    if ((q = rb->resolving) != NULL) {
        int stale;
        pthread_mutex_lock(&q->m);
        stale = q->done && (!q->ok || kcache_monotonic_ns() - q->done_at > KCACHE_REDIS__RESOLVE_KEEP_NS);
        pthread_mutex_unlock(&q->m);
        if (stale) { old = q; q = rb->resolving = NULL; }
    }
    if (!q) {
        int started = 0;
        if ((q = (kcache_redis__resolution *)KCACHE_MALLOC(sizeof *q)) != NULL) {
            memset(q, 0, sizeof *q);
            pthread_mutex_init(&q->m, NULL);
            pthread_cond_init(&q->c, NULL);
            q->refs = 2; /* rb's and the thread's */
            snprintf(q->host, sizeof q->host, "%s", rb->host);
            if (pthread_attr_init(&attr) == 0) {
                started = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 && pthread_create(&th, &attr, kcache_redis__resolver, q) == 0;
                pthread_attr_destroy(&attr);
            }
            if (!started) {
                pthread_cond_destroy(&q->c);
                pthread_mutex_destroy(&q->m);
                KCACHE_FREE(q);
                q = NULL;
            }
        }
        if (!q) {
            pthread_mutex_unlock(&rb->mutex);
            if (old) kcache_redis__resolution_unref(old);
            return KCACHE_ENOMEM;
        }
        rb->resolving = q;
    }
    pthread_mutex_lock(&q->m);
    q->refs++; /* this caller's */
    pthread_mutex_unlock(&q->m);
    pthread_mutex_unlock(&rb->mutex);
    if (old) kcache_redis__resolution_unref(old);
    pthread_mutex_lock(&q->m);
    while (!q->done && kcache_monotonic_ns() < by)
        kcache_redis__cond_wait_until(&q->c, &q->m, kcache_redis__now_ns() + (by - kcache_monotonic_ns()));
    st = !q->done ? KCACHE_ETIMEOUT : q->ok ? KCACHE_OK : KCACHE_EIO;
    if (st == KCACHE_OK) memcpy(addr, q->addr, 64);
    pthread_mutex_unlock(&q->m);
    kcache_redis__resolution_unref(q);
    return st;
}

/* A new connection, ready for commands (connected, authenticated, database selected). The name
   resolution and the connect share the connect timeout. */
static kcache_status kcache_redis__connect(kcache_redis__server *rb, int64_t deadline, redisContext **out) {
    int64_t by = kcache_monotonic_ns() + (int64_t)rb->connect_ms * 1000000;
    char addr[64];
    redisContext *c;
    kcache_status st;
    int err = 0;
    socklen_t elen = sizeof err;
    *out = NULL;
    if (by > deadline) by = deadline;
    if (!rb->path && (st = kcache_redis__resolve(rb, by, addr)) != KCACHE_OK) return st;
    c = rb->path ? redisConnectUnixNonBlock(rb->path) : redisConnectNonBlock(addr, rb->port);
    if (!c) return KCACHE_ENOMEM;
    if (c->err) { redisFree(c); return KCACHE_EIO; } /* refused, no such socket, no route... */
    if ((st = kcache_redis__counting(rb, c)) != KCACHE_OK) { redisFree(c); return st; }
    st = kcache_redis__wait(c->fd, POLLOUT, by);
    if (st == KCACHE_OK && (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0)) st = KCACHE_EIO;
#ifdef KCACHE_TLS_OPENSSL
    if (st == KCACHE_OK && rb->tls) st = kcache_redis__tls_start(rb, c, deadline);
#endif
    if (st == KCACHE_OK && rb->pass) st = kcache_redis__setup(rb, c, "AUTH", rb->user, rb->pass, deadline);
    if (st == KCACHE_OK && rb->db) {
        char db[24];
        snprintf(db, sizeof db, "%ld", rb->db);
        st = kcache_redis__setup(rb, c, "SELECT", NULL, db, deadline);
    }
    if (st != KCACHE_OK) { kcache_redis__drop(c); return st; }
    *out = c;
    return KCACHE_OK;
}

/* A pooled connection of this process that the server has not closed, or a new one. */
static kcache_status kcache_redis__take(kcache_redis__server *rb, int64_t deadline, redisContext **out) {
    redisContext *c = NULL, *stale[KCACHE_REDIS__IDLE];
    unsigned nstale = 0, i;
    uint32_t pid = (uint32_t)getpid();
    pthread_mutex_lock(&rb->mutex);
    if (rb->pid != pid) { /* forked: the parent's sockets are the parent's */
        while (rb->nidle) stale[nstale++] = rb->idle[--rb->nidle];
        rb->pid = pid;
    }
    while (!c && rb->nidle) {
        c = rb->idle[--rb->nidle];
        if (!kcache_redis__idle_ok(c)) { stale[nstale++] = c; c = NULL; } /* closed by the server (or garbage): not reused */
    }
    pthread_mutex_unlock(&rb->mutex);
    for (i = 0; i < nstale; i++) kcache_redis__drop(stale[i]); /* sends nothing: only closes this process's descriptor */
    if (c) { *out = c; return KCACHE_OK; }
    return kcache_redis__connect(rb, deadline, out);
}
static void kcache_redis__give(kcache_redis__server *rb, redisContext *c) {
    pthread_mutex_lock(&rb->mutex);
    if (rb->pid == (uint32_t)getpid() && rb->nidle < KCACHE_REDIS__IDLE) { rb->idle[rb->nidle++] = c; c = NULL; }
    pthread_mutex_unlock(&rb->mutex);
    if (c) kcache_redis__discard(rb, c);
}

/* One command on a pooled connection of rb's server by the deadline (asking: after ASKING, on the
   same connection); a connection that failed is dropped (its protocol state is unknown). */
#ifdef KCACHE_HMAC_OPENSSL
/* GET key on c for a signed value: GETRANGE key -28 -1 (the nonce and tag of a GMAC value) goes in
   the same write, so that the GET's bytes go through the sink's GMAC while they arrive
   (kcache_redis__read_value). */
static kcache_status kcache_redis__get_mac(kcache_redis__server *rb, redisContext *c, const char *key, size_t klen, int64_t deadline,
                                           kcache_redis__value *value, redisReply **out) {
    kcache_redis__sink *sink = value->sink;
    const char *argv[4];
    size_t lens[4];
    redisReply *tail = NULL;
    kcache_redis__link *link = kcache_redis__link_of(c);
    kcache_status st;
    *out = NULL;
    kcache_redis__sink_end(sink, NULL, 0, NULL); /* (what a redirected try began) */
    sink->done = 0;
    argv[0] = "GETRANGE", lens[0] = 8;
    argv[1] = key, lens[1] = klen;
    argv[2] = "-28", lens[2] = 3; /* KCACHE_REMOTE_MAC_NONCE + KCACHE_REMOTE_MAC_TAG from the end */
    argv[3] = "-1", lens[3] = 2;
#ifdef KCACHE_TLS_OPENSSL
    if (kcache_redis__tls_of(c)) {
        char *a = NULL, *b = NULL, *both = NULL;
        int na = redisFormatCommandArgv(&a, 4, argv, lens), nb;
        argv[0] = "GET", lens[0] = 3;
        nb = redisFormatCommandArgv(&b, 2, argv, lens);
        if (na >= 0 && nb >= 0 && (both = (char *)KCACHE_MALLOC((size_t)na + (size_t)nb)) != NULL) {
            memcpy(both, a, (size_t)na);
            memcpy(both + na, b, (size_t)nb);
        }
        st = both ? kcache_redis__tls_io(rb, c, both, (size_t)na + (size_t)nb, deadline, rb->max_reply, &tail) : KCACHE_ENOMEM;
        if (a) redisFreeCommand(a);
        if (b) redisFreeCommand(b);
        KCACHE_FREE(both);
    } else
#endif
    {
        if (redisAppendCommandArgv(c, 4, argv, lens) != REDIS_OK) return KCACHE_ENOMEM;
        argv[0] = "GET", lens[0] = 3;
        if (redisAppendCommandArgv(c, 2, argv, lens) != REDIS_OK) return KCACHE_ENOMEM; /* (the caller drops c) */
        st = kcache_redis__io(rb, c, deadline, &tail);
    }
    if (st != KCACHE_OK) return st;
    if (tail->type == REDIS_REPLY_STRING && tail->len == KCACHE_REMOTE_MAC_NONCE + KCACHE_REMOTE_MAC_TAG) {
        memcpy(sink->nonce, tail->str, KCACHE_REMOTE_MAC_NONCE);
        sink->state = 0;
    }
    freeReplyObject(tail);
    if (link) link->value = value;
    st = kcache_redis__io(rb, c, deadline, out);
    if (link) link->value = NULL;
    return st;
}
#endif

static kcache_status kcache_redis__run1(kcache_redis__server *rb, int64_t deadline, int asking, int argc, const char **argv, const size_t *lens,
                                        kcache_redis__value *value, redisReply **out) {
    redisContext *c;
    kcache_status st = kcache_redis__take(rb, deadline, &c);
    *out = NULL;
    if (st != KCACHE_OK) return st;
    if (asking) {
        const char *ask[1];
        size_t ask_len[1];
        redisReply *a;
        ask[0] = "ASKING", ask_len[0] = 6;
        st = kcache_redis__cmd(rb, c, 1, ask, ask_len, deadline, &a);
        if (st == KCACHE_OK && a->type != REDIS_REPLY_STATUS) st = KCACHE_EIO;
        if (a) freeReplyObject(a);
    }
#ifdef KCACHE_HMAC_OPENSSL
    if (st == KCACHE_OK && value && value->sink && !asking) /* (ASKING covers one command) */
        st = kcache_redis__get_mac(rb, c, argv[1], lens[1], deadline, value, out);
    else
#endif
        if (st == KCACHE_OK) {
        kcache_redis__link *link = value ? kcache_redis__link_of(c) : NULL;
        if (link) link->value = value;
        st = kcache_redis__cmd(rb, c, argc, argv, lens, deadline, out);
        if (link) link->value = NULL;
    }
    if (st == KCACHE_OK) kcache_redis__give(rb, c);
    else kcache_redis__discard(rb, c);
    return st;
}

/* ---- Redis Cluster: one listed node of a cluster serves every key ----
   A server that answers MOVED is a node of a cluster: the backend then asks it for the slot map
   (CLUSTER SLOTS), keeps a pool per node, and sends each command to the node serving its key's
   slot (CRC16 of the key, or of its {hash tag}, modulo 16384). MOVED updates the map (and has it
   read again), ASK sends the one command to the node named, after ASKING. Claims are named
   {kcache:1:<name>}:claim, so that a claim and its value are in one slot, on one node. */
#define KCACHE_REDIS__CLUSTER_SLOTS 16384
#define KCACHE_REDIS__CLUSTER_NODES 250
#define KCACHE_REDIS__CLUSTER_HOPS 5

/* The slot of a key (Redis Cluster's: CRC16/XMODEM of the key or of its first non-empty {tag}). */
static unsigned kcache_redis__cluster_slot(const char *key, size_t n) {
    size_t i, open = n, close = n;
    uint16_t crc = 0;
    for (i = 0; i < n && open == n; i++)
        if (key[i] == '{') open = i;
    for (i = open + 1; i < n && close == n; i++)
        if (key[i] == '}') close = i;
    if (open < n && close < n && close > open + 1) { key += open + 1; n = close - open - 1; }
    for (i = 0; i < n; i++) {
        int b;
        crc = (uint16_t)(crc ^ ((unsigned)(unsigned char)key[i] << 8));
        for (b = 0; b < 8; b++) crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc & (KCACHE_REDIS__CLUSTER_SLOTS - 1);
}

/* Whether host (a C string) is an IPv4 or IPv6 address rather than a name. */
static int kcache_redis__is_address(const char *host) {
    unsigned char bin[16];
    return inet_pton(AF_INET, host, bin) == 1 || inet_pton(AF_INET6, host, bin) == 1;
}

/* The node at host:port of rb's cluster (added with rb's credentials, timeouts and TLS when it is
   new): its index + 1, or 0 (out of memory, too many nodes, or no host: see below). Over TLS it is
   verified against KCACHE_REMOTE_TLS_NAME when set, else, when it is announced by its address and
   the seed was listed by a DNS name, against that name (the certificates of a cluster deployed
   behind a name seldom hold the nodes' addresses; go-redis and Lettuce check the same), else
   against its own host. An empty host
   (or NULL: a NULL endpoint) means, as Redis means it, the host of the node that answered, which
   a unix-socket node has not: that node is then unusable (the command a miss), never guessed. */
static unsigned kcache_redis__cluster_node(kcache_redis__server *rb, const kcache_redis__server *answered, const char *host, size_t hlen, int port) {
    kcache_redis__server *nd;
    unsigned i, at = 0;
    if (!host || !hlen) {
        if (!answered->host) return 0;
        host = answered->host, hlen = strlen(answered->host);
    }
    if (memchr(host, 0, hlen)) return 0; /* not a host name (and it would end at the NUL) */
    pthread_mutex_lock(&rb->mutex);
    for (i = 0; i < rb->nnodes && !at; i++)
        if (rb->node[i]->port == port && strlen(rb->node[i]->host) == hlen && memcmp(rb->node[i]->host, host, hlen) == 0) at = i + 1;
    pthread_mutex_unlock(&rb->mutex);
    if (at || hlen > 255) return at;
    if (!(nd = (kcache_redis__server *)KCACHE_MALLOC(sizeof *nd))) return 0;
    memset(nd, 0, sizeof *nd);
    pthread_mutex_init(&nd->mutex, NULL);
    pthread_cond_init(&nd->sub_cond, NULL);
    nd->port = port;
    nd->connect_ms = rb->connect_ms, nd->op_ms = rb->op_ms, nd->max_reply = rb->max_reply, nd->pid = (uint32_t)getpid(), nd->tls = rb->tls;
    nd->remote = rb->remote, nd->claim_ms = rb->claim_ms, nd->is_signed = rb->is_signed;
    nd->no_watch = rb->no_watch, nd->prefix = rb->prefix, nd->cluster_of = rb; /* (its subscriber names channels as rb does) */
#ifdef KCACHE_TLS_OPENSSL
    if (rb->tls_ctx && SSL_CTX_up_ref(rb->tls_ctx) == 1) nd->tls_ctx = rb->tls_ctx;
#endif
    if (!(nd->host = kcache_redis__strndup(host, hlen)) || (rb->user && !(nd->user = kcache_redis__strndup(rb->user, strlen(rb->user)))) ||
        (rb->pass && !(nd->pass = kcache_redis__strndup(rb->pass, strlen(rb->pass))))) {
        kcache_redis__free(nd);
        return 0;
    }
    if (rb->tls) {
        const char *name = rb->tls_name ? rb->tls_name
                           : rb->host && !kcache_redis__is_address(rb->host) && kcache_redis__is_address(nd->host) ? rb->host
                                                                                                                 : NULL;
        if (name && !(nd->tls_name = kcache_redis__strndup(name, strlen(name)))) {
            kcache_redis__free(nd);
            return 0;
        }
    }
    pthread_mutex_lock(&rb->mutex);
    for (i = 0; i < rb->nnodes && !at; i++) /* another thread may have added it meanwhile */
        if (rb->node[i]->port == port && strcmp(rb->node[i]->host, nd->host) == 0) at = i + 1;
    if (!at && rb->nnodes < KCACHE_REDIS__CLUSTER_NODES) { rb->node[rb->nnodes++] = nd; at = rb->nnodes; nd = NULL; }
    pthread_mutex_unlock(&rb->mutex);
    if (nd) kcache_redis__free(nd);
    return at;
}

/* Applies a CLUSTER SLOTS reply r ([start, end, [host, port, ...], replicas...]) that `answered`
   gave to rb's slot map (rb->slot made). Entries that are not of that shape are left out. */
static void kcache_redis__cluster_map(kcache_redis__server *rb, const kcache_redis__server *answered, const redisReply *r) {
    size_t i;
    if (r->type != REDIS_REPLY_ARRAY) return;
    for (i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *m, *h;
        unsigned at;
        long long a, b;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER || (m = e->element[2])->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            ((h = m->element[0])->type != REDIS_REPLY_STRING && h->type != REDIS_REPLY_NIL) || m->element[1]->type != REDIS_REPLY_INTEGER)
            continue;
        a = e->element[0]->integer, b = e->element[1]->integer;
        if (a < 0 || b >= KCACHE_REDIS__CLUSTER_SLOTS || a > b || m->element[1]->integer < 1 || m->element[1]->integer > 65535) continue;
        if (h->type == REDIS_REPLY_STRING && h->len == 1 && h->str[0] == '?') continue; /* unknown endpoint */
        at = kcache_redis__cluster_node(rb, answered, h->type == REDIS_REPLY_STRING ? h->str : NULL, h->type == REDIS_REPLY_STRING ? h->len : 0,
                                        (int)m->element[1]->integer);
        if (!at) continue;
        pthread_mutex_lock(&rb->mutex);
        for (; a <= b; a++) rb->slot[a] = (uint8_t)at;
        pthread_mutex_unlock(&rb->mutex);
    }
}

/* A node's breaker (the core keeps one per shard, the whole cluster): a call to a node that failed
   (refused, reset, timed out, a TLS handshake that did not verify) turns off that node's slots for
   a back-off, doubling while the one call let through after it keeps failing; the other nodes'
   keys keep being served. Whether a call may go to node nd now: */
#define KCACHE_REDIS__NODE_BACKOFF_MS 200
#define KCACHE_REDIS__NODE_BACKOFF_MAX_MS 6400
static int kcache_redis__node_allow(kcache_redis__server *nd) {
    int64_t now = kcache_monotonic_ns();
    int ok = 1;
    pthread_mutex_lock(&nd->mutex);
    if (nd->node_open_until) {
        if (now < nd->node_open_until || nd->node_probing) ok = 0;
        else nd->node_probing = 1; /* this call finds out whether it is back */
    }
    pthread_mutex_unlock(&nd->mutex);
    return ok;
}
/* One call to node nd of rb's cluster (KCACHE_EDISABLED: not made, its breaker open), published in
   the stats file's node table for kcache-top (kcache_remote_node_call). */
static void kcache_redis__node_note(const kcache_redis__server *rb, const kcache_redis__server *nd, kcache_status st, int open) {
    char name[300];
    if (!rb->remote || !rb->shown || !nd->host) return;
    snprintf(name, sizeof name, "%s%s%s:%d", strchr(nd->host, ':') ? "[" : "", nd->host, strchr(nd->host, ':') ? "]" : "", nd->port);
    kcache_remote_node_call(rb->remote, rb->shown, name, st, open);
}
/* After a call to nd: its breaker opened (failed) or closed. */
static void kcache_redis__node_done(kcache_redis__server *nd, int failed) {
    pthread_mutex_lock(&nd->mutex);
    nd->node_probing = 0;
    if (!nd->node_backoff_ms) nd->node_backoff_ms = KCACHE_REDIS__NODE_BACKOFF_MS;
    if (failed) {
        nd->node_open_until = kcache_monotonic_ns() + (int64_t)nd->node_backoff_ms * 1000000;
        if (nd->node_backoff_ms < KCACHE_REDIS__NODE_BACKOFF_MAX_MS) nd->node_backoff_ms *= 2;
    } else {
        nd->node_open_until = 0;
        nd->node_backoff_ms = KCACHE_REDIS__NODE_BACKOFF_MS;
    }
    pthread_mutex_unlock(&nd->mutex);
}

/* Reads the slot map (CLUSTER SLOTS) again from a node that answers: the seed or any node met so
   far (the seed may be the node that died), each reload starting at the next one, those whose
   breaker is open left out. A failover, a reshard or a dead node is noticed this way: the map is
   read after a MOVED, and after a refused or broken connection, a timeout, CLUSTERDOWN or TRYAGAIN.
   At most one reload per KCACHE_REDIS__RELOAD_NS per cluster, by one thread at a time (the others go
   on with the map as it is). 1: a node answered; 0: none did (the whole cluster is out of reach);
   -1: not this caller's turn, or no time left to ask (a call that timed out: the next one asks). */
#define KCACHE_REDIS__RELOAD_NS ((int64_t)150 * 1000000)
static int kcache_redis__cluster_reload(kcache_redis__server *rb, int64_t deadline) {
    kcache_redis__server *cand[KCACHE_REDIS__CLUSTER_NODES + 1];
    const char *argv[2];
    size_t lens[2];
    unsigned n = 0, i, first;
    int64_t now = kcache_monotonic_ns();
    int done = 0;
    argv[0] = "CLUSTER", lens[0] = 7;
    argv[1] = "SLOTS", lens[1] = 5;
    if (now >= deadline) return -1;
    pthread_mutex_lock(&rb->mutex);
    if (rb->reloading || (rb->reload_at && now - rb->reload_at < KCACHE_REDIS__RELOAD_NS)) {
        pthread_mutex_unlock(&rb->mutex);
        return -1;
    }
    rb->reloading = 1;
    rb->reload_at = now;
    cand[n++] = rb;
    for (i = 0; i < rb->nnodes; i++) cand[n++] = rb->node[i]; /* (nodes live as long as rb) */
    first = rb->reload_next++ % n;
    pthread_mutex_unlock(&rb->mutex);
    for (i = 0; i < n && !done; i++) {
        kcache_redis__server *nd = cand[(first + i) % n];
        redisReply *r = NULL;
        kcache_status st;
        if (kcache_monotonic_ns() >= deadline) { done = -1; break; } /* (out of time, not out of nodes) */
        if (!kcache_redis__node_allow(nd)) continue;
        st = kcache_redis__run1(nd, deadline, 0, 2, argv, lens, NULL, &r);
        if (st == KCACHE_OK && r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
            kcache_redis__cluster_map(rb, nd, r);
            done = 1;
        }
        kcache_redis__node_done(nd, st != KCACHE_OK);
        kcache_redis__node_note(rb, nd, st, st != KCACHE_OK);
        if (r) freeReplyObject(r);
    }
    pthread_mutex_lock(&rb->mutex);
    rb->reloading = 0;
    pthread_mutex_unlock(&rb->mutex);
    return done;
}

/* Makes rb a cluster's seed (its slot map, empty) when it is not one yet: 1 when it is one. */
static int kcache_redis__cluster_init(kcache_redis__server *rb) {
    uint8_t *map = NULL;
    kcache_redis__server **nodes = NULL;
    int cluster;
    pthread_mutex_lock(&rb->mutex);
    cluster = rb->slot != NULL;
    pthread_mutex_unlock(&rb->mutex);
    if (cluster) return 1;
    if ((map = (uint8_t *)KCACHE_MALLOC(KCACHE_REDIS__CLUSTER_SLOTS)) != NULL &&
        (nodes = (kcache_redis__server **)KCACHE_MALLOC(sizeof *nodes * KCACHE_REDIS__CLUSTER_NODES)) != NULL)
        memset(map, 0, KCACHE_REDIS__CLUSTER_SLOTS);
    pthread_mutex_lock(&rb->mutex);
    if (map && nodes && !rb->slot) { rb->slot = map, rb->node = nodes, map = NULL, nodes = NULL; }
    cluster = rb->slot != NULL;
    pthread_mutex_unlock(&rb->mutex);
    KCACHE_FREE(map);
    KCACHE_FREE(nodes);
    return cluster;
}
static int kcache_redis__is_cluster(kcache_redis__server *rb) {
    int cluster;
    pthread_mutex_lock(&rb->mutex);
    cluster = rb->slot != NULL;
    pthread_mutex_unlock(&rb->mutex);
    return cluster;
}

/* The listed node itself when n is its entry in the slot map: its own pool, not a second connection
   per process (issue 35.12). */
static kcache_redis__server *kcache_redis__as_listed(kcache_redis__server *rb, kcache_redis__server *n) {
    return n && n != rb && rb->host && n->host && n->port == rb->port && strcmp(n->host, rb->host) == 0 ? rb : n;
}

/* The node serving slot now, by rb's map (NULL: not known: the seed is asked), and its index + 1 in *at. */
static kcache_redis__server *kcache_redis__cluster_owner(kcache_redis__server *rb, unsigned slot, unsigned *at) {
    kcache_redis__server *to = rb;
    pthread_mutex_lock(&rb->mutex);
    *at = rb->slot && slot < KCACHE_REDIS__CLUSTER_SLOTS ? rb->slot[slot] : 0;
    if (*at) to = rb->node[*at - 1];
    pthread_mutex_unlock(&rb->mutex);
    return to;
}

/* A reply that says the cluster cannot serve the key now (CLUSTERDOWN: slots without a node, as
   while a dead master's replica is not promoted yet; TRYAGAIN: keys of one command split by a
   reshard): the map is read again, and the call is a node's failure, not the cluster's. */
static int kcache_redis__cluster_busy(const redisReply *r) {
    return r->type == REDIS_REPLY_ERROR && r->str && (strncmp(r->str, "CLUSTERDOWN", 11) == 0 || strncmp(r->str, "TRYAGAIN", 8) == 0);
}

/* A MOVED or ASK error reply: 1 (ask: which), its slot, and the node's host and port; else 0. */
static int kcache_redis__cluster_redirect(const redisReply *r, int *ask, unsigned *slot, const char **host, size_t *hlen, int *port) {
    const char *p, *colon = NULL, *end;
    long v = 0;
    if (r->type != REDIS_REPLY_ERROR || !r->str) return 0;
    if (strncmp(r->str, "MOVED ", 6) == 0) *ask = 0, p = r->str + 6;
    else if (strncmp(r->str, "ASK ", 4) == 0) *ask = 1, p = r->str + 4;
    else return 0;
    while (*p >= '0' && *p <= '9' && v < KCACHE_REDIS__CLUSTER_SLOTS) v = v * 10 + (*p++ - '0');
    if (*p++ != ' ' || v >= KCACHE_REDIS__CLUSTER_SLOTS) return 0;
    *slot = (unsigned)v;
    for (end = p; *end && *end != ' '; end++)
        if (*end == ':') colon = end;
    if (!colon) return 0;
    *host = p, *hlen = (size_t)(colon - p);
    for (v = 0, p = colon + 1; p < end && *p >= '0' && *p <= '9' && v <= 65535; p++) v = v * 10 + (*p - '0');
    if (p != end || v < 1 || v > 65535) return 0;
    *port = (int)v;
    return 1;
}

/* One command, by the operation timeout: on the one server, or (a cluster) on the node serving the
   key argv[key] names, following MOVED and ASK. On a cluster, a node that failed (its breaker open,
   the slot map read again from another node: a replica promoted in its place is found) makes the
   call KCACHE_ENODE, which leaves the shard's breaker, the other nodes' keys, alone; when no node of
   the cluster answers at all, the failure is the shard's. */
/* kcache_redis__run for a GET (argv GET key) whose value is read into value (a nil reply stands for
   it; kcache_redis__read_value), signed or not (value->sink; kcache_redis__get_mac). */
static kcache_status kcache_redis__run_value(kcache_redis__server *rb, int argc, const char **argv, const size_t *lens, kcache_redis__value *value,
                                             redisReply **out) {
    int64_t deadline = kcache_monotonic_ns() + (int64_t)rb->op_ms * 1000000;
    int key = argc > 3 && lens[0] == 4 && memcmp(argv[0], "EVAL", 4) == 0 ? 3 : 1, hops, ask = 0, port = 0, refresh, asking = 0;
    unsigned slot = KCACHE_REDIS__CLUSTER_SLOTS, moved = 0, at = 0; /* the key's slot: found when rb is a cluster */
    kcache_status st;
    const char *host = NULL;
    size_t hlen = 0;
    *out = NULL;
    for (hops = 0; hops <= KCACHE_REDIS__CLUSTER_HOPS; hops++) {
        kcache_redis__server *to = rb, *now;
        int cluster, reload;
        unsigned owner;
        pthread_mutex_lock(&rb->mutex); /* (the map's storage never moves once made) */
        refresh = rb->refresh, rb->refresh = 0;
        cluster = rb->slot != NULL;
        if (rb->slot && slot == KCACHE_REDIS__CLUSTER_SLOTS) slot = kcache_redis__cluster_slot(argv[key], lens[key]);
        if (!at && rb->slot) at = rb->slot[slot];
        if (at) to = rb->node[at - 1];
        pthread_mutex_unlock(&rb->mutex);
        to = kcache_redis__as_listed(rb, to);
        if (refresh) kcache_redis__cluster_reload(rb, deadline);
        if (cluster && !kcache_redis__node_allow(to)) { /* its breaker is open: has its slot moved meanwhile? */
            kcache_redis__node_note(rb, to, KCACHE_EDISABLED, 1);
            reload = kcache_redis__cluster_reload(rb, deadline);
            if (!asking && reload == 1 && (now = kcache_redis__as_listed(rb, kcache_redis__cluster_owner(rb, slot, &owner))) != to && now != rb) { at = owner; continue; }
            return reload == 0 ? KCACHE_EIO : KCACHE_ENODE;
        }
        st = kcache_redis__run1(to, deadline, asking, argc, argv, lens, value, out);
        if (cluster) {
            kcache_redis__node_done(to, st != KCACHE_OK);
            kcache_redis__node_note(rb, to, st, st != KCACHE_OK);
        }
        if (st != KCACHE_OK) {
            if (!cluster) return st;
            reload = kcache_redis__cluster_reload(rb, deadline); /* a failover? the map from a node alive */
            if (reload == 0) return st;                           /* no node answers: the cluster is down */
            if (reload == 1 && kcache_monotonic_ns() < deadline && (now = kcache_redis__as_listed(rb, kcache_redis__cluster_owner(rb, slot, &owner))) != to && now != rb) {
                at = owner; /* its slot has another node now: asked there */
                asking = 0;
                continue;
            }
            return KCACHE_ENODE;
        }
        if (kcache_redis__cluster_busy(*out) && kcache_redis__cluster_init(rb)) {
            freeReplyObject(*out);
            *out = NULL;
            kcache_redis__cluster_reload(rb, deadline);
            return KCACHE_ENODE;
        }
        if (!kcache_redis__cluster_redirect(*out, &ask, &moved, &host, &hlen, &port)) return KCACHE_OK;
        if (!kcache_redis__cluster_init(rb)) break; /* the first MOVED: rb is a node of a cluster */
        at = kcache_redis__cluster_node(rb, to, host, hlen, port);
        freeReplyObject(*out);
        *out = NULL;
        if (!at) return hlen || to->host ? KCACHE_ENOMEM : KCACHE_EIO; /* (EIO: a node with no host to reach) */
        asking = ask;
        if (!ask) {
            pthread_mutex_lock(&rb->mutex);
            rb->slot[moved] = (uint8_t)at;
            rb->refresh = 1; /* the map changed: read it whole before the next command */
            pthread_mutex_unlock(&rb->mutex);
        }
    }
    if (*out) { freeReplyObject(*out); *out = NULL; }
    return KCACHE_EIO; /* redirected in circles */
}
static kcache_status kcache_redis__run(kcache_redis__server *rb, int argc, const char **argv, const size_t *lens, redisReply **out) {
    return kcache_redis__run_value(rb, argc, argv, lens, NULL, out);
}

/* [prefix]kcache:1:<name><suffix>; a claim is {[prefix]kcache:1:<name>}:claim (its value's slot in
   a cluster). out holds KCACHE_REDIS__KEY_MAX bytes. */
static size_t kcache_redis__key(const kcache_redis__server *rb, char *out, const char *name, const char *suffix) {
    const char *p = rb->prefix ? rb->prefix : "";
    if (strcmp(suffix, ":claim") == 0) return (size_t)snprintf(out, KCACHE_REDIS__KEY_MAX, "{%s%s%.32s}%s", p, KCACHE_REDIS__PREFIX, name, suffix);
    return (size_t)snprintf(out, KCACHE_REDIS__KEY_MAX, "%s%s%.32s%s", p, KCACHE_REDIS__PREFIX, name, suffix);
}
/* VERB kcache:1:<name><suffix> [value] on a pooled connection. */
static kcache_status kcache_redis__on_key(kcache_redis__server *rb, const char *verb, const char *name, const char *suffix, const void *value,
                                          size_t value_len, redisReply **out) {
    char key[KCACHE_REDIS__KEY_MAX];
    const char *argv[3];
    size_t lens[3];
    argv[0] = verb, lens[0] = strlen(verb);
    argv[1] = key, lens[1] = kcache_redis__key(rb, key, name, suffix);
    argv[2] = (const char *)value, lens[2] = value_len;
    return kcache_redis__run(rb, value ? 3 : 2, argv, lens, out);
}

/* What the built-in get hands out as its hold: the value (read straight into memory of kcache's,
   or in a reply), and a signed value's MAC computed while it arrived (kcache_redis__premac). */
typedef struct kcache_redis__held {
    redisReply *reply;
    char *value; /* NULL: the value is reply's string */
    int premac;  /* mac holds a nonce and the MAC of the value's bytes under it */
    unsigned char mac[KCACHE_REMOTE_MAC_NONCE + KCACHE_REMOTE_MAC_TAG];
} kcache_redis__held;

static kcache_status kcache_redis__get(void *user, const char *name, const void **data, size_t *size, void **hold) {
    kcache_redis__server *rb = (kcache_redis__server *)user;
    kcache_redis__value value;
    kcache_redis__held *h = NULL;
    char key[KCACHE_REDIS__KEY_MAX];
    const char *argv[2];
    size_t lens[2];
    redisReply *r = NULL;
    kcache_status st;
#ifdef KCACHE_HMAC_OPENSSL
    kcache_redis__sink sink;
    memset(&sink, 0, sizeof sink);
    sink.state = -1;
#endif
    memset(&value, 0, sizeof value);
#ifdef KCACHE_HMAC_OPENSSL
    if (rb->is_signed) sink.remote = rb->remote, value.sink = &sink;
#endif
    argv[0] = "GET", lens[0] = 3;
    argv[1] = key, lens[1] = kcache_redis__key(rb, key, name, "");
    st = kcache_redis__run_value(rb, 2, argv, lens, &value, &r);
    if (st == KCACHE_OK && (value.buf || r->type == REDIS_REPLY_STRING)) {
        if ((h = (kcache_redis__held *)KCACHE_MALLOC(sizeof *h)) != NULL) {
            h->reply = r;
            h->value = value.buf;
            h->premac = 0;
            *data = value.buf ? value.buf : r->str;
            *size = value.buf ? value.len : r->len;
            *hold = h;
        }
    }
#ifdef KCACHE_HMAC_OPENSSL
    if (kcache_redis__sink_end(&sink, h ? (const char *)*data : NULL, h ? *size : 0, h ? h->mac : NULL)) h->premac = 1; /* (frees what it holds) */
#endif
    if (h) return KCACHE_OK;
    if (st != KCACHE_OK) return st;
    st = value.buf || r->type == REDIS_REPLY_STRING ? KCACHE_ENOMEM : r->type == REDIS_REPLY_NIL ? KCACHE_MISS : kcache_redis__error(r);
    KCACHE_FREE(value.buf);
    freeReplyObject(r);
    return st;
}
static void kcache_redis__release(void *user, void *hold) {
    kcache_redis__held *h = (kcache_redis__held *)hold;
    (void)user;
    if (h) {
        if (h->reply) freeReplyObject(h->reply);
        KCACHE_FREE(h->value);
        KCACHE_FREE(h);
    }
}
/* ---- Waiters told (issue 35.6): a batch's process learns which claims were taken and which
   builds ended from Redis pub/sub instead of asking each key's claim. The keys a batch's look
   found missing are watched: their channels (published by the take and release scripts) are
   subscribed on the process's subscriber connection, and whatever it has received is read
   (without waiting) before each claim is asked: a key whose build was stored is answered as held
   without a command (the caller looks again and hits, as when the take script finds the value),
   and so is one whose claim another took less than a third of a claim's life ago (the batch asks
   it again after that anyway). A WAIT listens there too. Only a hint: a message missed (sent
   before the subscription was in place, a broken connection, a slot that moved) costs the
   command it would have saved, never a wrong answer. No thread of its own: the threads that ask
   claims read it by turns. TLS or not.
   A plain server: one subscriber per process, SUBSCRIBE to [prefix]kcache:1:<name>:done (one
   command for a batch's names). A cluster: sharded pub/sub (Redis 7), one subscriber per process
   and node, SSUBSCRIBE to {[prefix]kcache:1:<name>}:done, in the claim's slot, on the node the
   slot map says serves it (one command per name: a command's channels share one slot); the
   scripts SPUBLISH it there, and PUBLISH the plain channel too, which a cluster sends to every
   node, for the waiters of 0.6.0 and before (they SUBSCRIBE on the listed node). A slot that
   moves: the node says sunsubscribe (or MOVED to a SSUBSCRIBE), the map is read again, and the
   name is let go (asked as without a subscriber, subscribed on its new node when watched again). ---- */

/* name's channel on a cluster (sharded: in the claim's slot) or a plain server. out holds
   KCACHE_REDIS__KEY_MAX bytes. */
static size_t kcache_redis__chan(const kcache_redis__server *rb, char *out, const char *name, int sharded) {
    size_t n;
    if (!sharded) return kcache_redis__key(rb, out, name, ":done");
    n = (size_t)snprintf(out, KCACHE_REDIS__KEY_MAX, "{%s%s%.32s}:done", rb->prefix ? rb->prefix : "", KCACHE_REDIS__PREFIX, name);
    return n < KCACHE_REDIS__KEY_MAX ? n : KCACHE_REDIS__KEY_MAX - 1;
}
/* The entry name in a channel's name (either form) of n bytes: its start and *len, or NULL. */
static const char *kcache_redis__chan_name(const kcache_redis__server *sv, const char *chan, size_t n, size_t *len) {
    size_t pre = strlen(sv->prefix ? sv->prefix : "") + strlen(KCACHE_REDIS__PREFIX);
    if (n > pre + 7 && chan[0] == '{' && memcmp(chan + n - 6, "}:done", 6) == 0) { *len = n - pre - 7; return chan + 1 + pre; }
    if (n > pre + 5 && memcmp(chan + n - 5, ":done", 5) == 0) { *len = n - pre - 5; return chan + pre; }
    return NULL;
}

/* The entry of name in sv's watch list (sv->mutex held), or NULL; gone: one let go too. */
static kcache_redis__watched *kcache_redis__watch_in(kcache_redis__server *sv, const char *name, size_t len, int gone) {
    unsigned i;
    if (!sv->watch || len > 32) return NULL;
    for (i = 0; i < KCACHE_REDIS__WATCH; i++)
        if (sv->watch[i].state != KCACHE_REDIS__W_FREE && (gone || sv->watch[i].state != KCACHE_REDIS__W_GONE) &&
            strncmp(sv->watch[i].name, name, len) == 0 && sv->watch[i].name[len] == 0)
            return &sv->watch[i];
    return NULL;
}
static kcache_redis__watched *kcache_redis__watch_find(kcache_redis__server *sv, const char *name, size_t len) {
    return kcache_redis__watch_in(sv, name, len, 0);
}

/* The server whose subscriber hears name's builds: rb itself (a plain server), or on a cluster
   (*sharded 1) the node serving the name's claim by the slot map, NULL while that is not known.
   NULL too when rb hears nothing (mode ro: it takes no claims). */
static kcache_redis__server *kcache_redis__sub_server(kcache_redis__server *rb, const char *name, int *sharded) {
    kcache_redis__server *sv = rb;
    char claim[KCACHE_REDIS__KEY_MAX];
    size_t n;
    *sharded = 0;
    if (!rb->remote || rb->no_watch) return NULL;
    n = kcache_redis__key(rb, claim, name, ":claim");
    if (n >= KCACHE_REDIS__KEY_MAX) n = KCACHE_REDIS__KEY_MAX - 1;
    pthread_mutex_lock(&rb->mutex);
    if (rb->slot) {
        unsigned at = rb->slot[kcache_redis__cluster_slot(claim, n)];
        *sharded = 1;
        sv = at ? rb->node[at - 1] : NULL;
    }
    pthread_mutex_unlock(&rb->mutex);
    return sv ? kcache_redis__as_listed(rb, sv) : NULL;
}

/* Forgets every watched name of sv (sv->mutex held): its subscriber is new, gone, or a parent's. */
static void kcache_redis__watch_clear(kcache_redis__server *sv) {
    if (sv->watch) memset(sv->watch, 0, KCACHE_REDIS__WATCH * sizeof *sv->watch);
}

/* Whether sv may have a subscriber, and takes it for this thread (sv->sub_busy), dropping a forked
   parent's (sv->mutex held; *old: a connection to close, outside the lock). */
static int kcache_redis__sub_begin(kcache_redis__server *sv, redisContext **old) {
    *old = NULL;
    if (!sv->remote || sv->no_watch) return 0;
    if (sv->sub_pid != (uint32_t)getpid()) { /* forked: the parent's connection and list are the parent's */
        *old = sv->sub, sv->sub = NULL, sv->sub_busy = 0;
        kcache_redis__watch_clear(sv);
        sv->sub_pid = (uint32_t)getpid();
    }
    if (sv->sub_busy) return 0;
    sv->sub_busy = 1;
    return 1;
}

/* Has the slot map of sv's cluster read again before its next command (a slot moved). */
static void kcache_redis__sub_moved(kcache_redis__server *sv) {
    kcache_redis__server *cl = sv->cluster_of ? sv->cluster_of : sv;
    pthread_mutex_lock(&cl->mutex);
    cl->refresh = 1;
    pthread_mutex_unlock(&cl->mutex);
}

/* Reads what the subscriber has received, without waiting (sv->sub_busy is this thread's): each
   message marks its key's entry held ("t"), stored ("1") or abandoned ("0"). Over TLS through the
   connection's SSL, until it has nothing more (decrypted bytes it holds are read too, so that a
   poll() on the socket afterwards means what it says). 0 when the connection failed, -1 when the
   server refused a subscription. On a cluster a redirection (MOVED, ASK, CLUSTERDOWN, TRYAGAIN: the
   channel's slot is not the node's now) counts in sv->sub_refused and has the map read again, and
   a sunsubscribe the node sent of itself (its slot moved) lets its name go. */
static int kcache_redis__sub_read(kcache_redis__server *sv, redisContext *c) {
    kcache_redis__link *link = kcache_redis__link_of(c);
    kcache_redis__budget budget;
    char buf[16384];
    int ok = 1;
#ifdef KCACHE_TLS_OPENSSL
    SSL *s = kcache_redis__tls_of(c);
    kcache_redis__nopipe np; /* (SSL_read may write: a key update's answer) */
    if (s) kcache_redis__nopipe_begin(&np);
#endif
    budget.rb = sv;
    for (;;) {
        void *reply = NULL;
        redisReply *r;
        const char *type, *name;
        size_t len;
        budget.elements = 0;
        if (link) link->budget = &budget;
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) { ok = 0; break; }
        if (link) link->budget = NULL;
        if (!reply) {
            ptrdiff_t n;
#ifdef KCACHE_TLS_OPENSSL
            if (s) {
                int k = SSL_read(s, buf, (int)sizeof buf), e = k > 0 ? SSL_ERROR_NONE : SSL_get_error(s, k);
                if (k <= 0) ERR_clear_error();
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break; /* nothing more now */
                n = k > 0 ? k : -1;
            } else
#endif
            {
                n = read(c->fd, buf, sizeof buf);
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
            }
            if (n <= 0 || redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK) { ok = 0; break; }
            /* kcache's messages are small: a server streaming a large one is not heard, and not kept */
            if (kcache_redis__announced(c->reader) > 65536 || c->reader->len > ((size_t)1 << 20)) { ok = 0; break; }
            continue;
        }
        r = (redisReply *)reply;
        type = r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[0]->type == REDIS_REPLY_STRING &&
                       r->element[1]->type == REDIS_REPLY_STRING
                   ? r->element[0]->str
                   : NULL;
        name = type ? kcache_redis__chan_name(sv, r->element[1]->str, r->element[1]->len, &len) : NULL;
        if (name && r->element[2]->type == REDIS_REPLY_STRING && (strcmp(type, "message") == 0 || strcmp(type, "smessage") == 0)) {
            kcache_redis__watched *w;
            pthread_mutex_lock(&sv->mutex);
            if ((w = kcache_redis__watch_find(sv, name, len)) != NULL) {
                char m = r->element[2]->len == 1 ? r->element[2]->str[0] : 0;
                w->state = m == 't' ? KCACHE_REDIS__W_HELD : m == '1' ? KCACHE_REDIS__W_STORED : KCACHE_REDIS__W_ABANDONED;
                w->heard_at = kcache_monotonic_ns();
            }
            pthread_mutex_unlock(&sv->mutex);
        } else if (name && (strcmp(type, "subscribe") == 0 || strcmp(type, "ssubscribe") == 0)) {
            kcache_redis__watched *w;
            pthread_mutex_lock(&sv->mutex);
            if ((w = kcache_redis__watch_find(sv, name, len)) != NULL) w->confirmed = 1;
            pthread_mutex_unlock(&sv->mutex);
        } else if (name && strcmp(type, "sunsubscribe") == 0) {
            /* a subscription confirmed, now ended: the node's doing (its slot moved; the ones this
               process ends are freed first, and a name watched again is not confirmed yet) */
            kcache_redis__watched *w;
            int moved = 0;
            pthread_mutex_lock(&sv->mutex);
            if ((w = kcache_redis__watch_in(sv, name, len, 1)) != NULL && w->confirmed) w->state = KCACHE_REDIS__W_FREE, moved = 1;
            pthread_mutex_unlock(&sv->mutex);
            if (moved) kcache_redis__sub_moved(sv);
        } else if (r->type == REDIS_REPLY_ERROR && sv->sub_sharded && r->str &&
                   (strncmp(r->str, "MOVED ", 6) == 0 || strncmp(r->str, "ASK ", 4) == 0 || kcache_redis__cluster_busy(r))) {
            pthread_mutex_lock(&sv->mutex);
            sv->sub_refused++;
            pthread_mutex_unlock(&sv->mutex);
            kcache_redis__sub_moved(sv);
        } else if (r->type == REDIS_REPLY_ERROR) {
            ok = -1; /* (a server that refuses SUBSCRIBE: an ACL without pub/sub, the channel, a Redis without SSUBSCRIBE) */
        }
        freeReplyObject(r);
        if (ok != 1) break;
    }
    if (link) link->budget = NULL;
#ifdef KCACHE_TLS_OPENSSL
    if (s) kcache_redis__nopipe_end(&np);
#endif
    return ok;
}

/* Waits up to ms for something to read on the subscriber c: 1 when there may be (over TLS, bytes
   its SSL holds already count), 0 when not, -1 on a failure. */
static int kcache_redis__sub_poll(redisContext *c, int ms) {
    struct pollfd p;
    int r;
#ifdef KCACHE_TLS_OPENSSL
    if (kcache_redis__tls_of(c) && SSL_pending(kcache_redis__tls_of(c)) > 0) return 1;
#endif
    p.fd = c->fd, p.events = POLLIN, p.revents = 0;
    r = poll(&p, 1, ms);
    return r < 0 ? (errno == EINTR ? 0 : -1) : r > 0;
}

/* Sends the n bytes of commands in cmd on the subscriber c (TLS or not) by the deadline: 1 when sent. */
static int kcache_redis__sub_send(redisContext *c, const char *cmd, size_t n, int64_t deadline) {
    int ok = 1;
#ifdef KCACHE_TLS_OPENSSL
    SSL *s = kcache_redis__tls_of(c);
    if (s) {
        kcache_redis__nopipe np;
        size_t sent = 0;
        kcache_redis__nopipe_begin(&np);
        while (ok && sent < n) {
            int k = SSL_write(s, cmd + sent, n - sent > (1u << 30) ? 1 << 30 : (int)(n - sent));
            if (k > 0) sent += (size_t)k;
            else ok = kcache_redis__tls_wait(s, c->fd, k, deadline) == KCACHE_OK;
        }
        kcache_redis__nopipe_end(&np);
        return ok;
    }
#endif
    if (redisAppendFormattedCommand(c, cmd, n) != REDIS_OK) return 0;
    while (ok && KCACHE_REDIS__UNSENT(c)) { /* (a few hundred bytes: sent at once, or the link is in trouble) */
        int done = 0;
        if (kcache_redis__write(c, &done) != REDIS_OK) ok = 0;
        else if (!done && kcache_redis__wait(c->fd, POLLOUT, deadline) != KCACHE_OK) ok = 0;
        if (done) break;
    }
    return ok;
}

/* Commands formatted one after another into one buffer (kcache_redis__sub_send sends them). */
typedef struct kcache_redis__cmds {
    char *buf;
    size_t len, cap;
    int failed;
} kcache_redis__cmds;
static void kcache_redis__cmds_add(kcache_redis__cmds *b, int argc, const char **argv, const size_t *lens) {
    char *cmd = NULL;
    int n;
    if (b->failed || argc < 2) return;
    if ((n = redisFormatCommandArgv(&cmd, argc, argv, lens)) < 0) { b->failed = 1; return; }
    if (b->len + (size_t)n > b->cap) {
        size_t cap = (b->len + (size_t)n) * 2;
        char *p = (char *)KCACHE_REALLOC(b->buf, cap);
        if (!p) b->failed = 1;
        else b->buf = p, b->cap = cap;
    }
    if (!b->failed) memcpy(b->buf + b->len, cmd, (size_t)n), b->len += (size_t)n;
    redisFreeCommand(cmd);
}

/* Ends this thread's turn with the subscriber: a failed one is dropped and not tried again for a
   third of a claim's life, one the server refused (ok -1) for a minute (the claims are asked
   meanwhile, as without it). */
static void kcache_redis__sub_end(kcache_redis__server *sv, int ok) {
    redisContext *c = NULL;
    pthread_mutex_lock(&sv->mutex);
    if (ok != 1) {
        c = sv->sub, sv->sub = NULL;
        sv->sub_retry_at = kcache_monotonic_ns() + (ok < 0 ? (int64_t)60000 : (int64_t)(sv->claim_ms / 3 + 1)) * 1000000;
        kcache_redis__watch_clear(sv);
    }
    sv->sub_busy = 0;
    pthread_cond_broadcast(&sv->sub_cond); /* (what was read may end another thread's wait) */
    pthread_mutex_unlock(&sv->mutex);
    if (c) kcache_redis__drop(c);
}

/* Watches n names on sv's subscriber (those not watched yet; sharded: a cluster node's): their
   channels subscribed (and the entries let go since unsubscribed), connected first when there is
   none. Sent without waiting for the answers (the claims are asked meanwhile: a build that ends
   before the subscription holds is found by its claim, as without one), except for a WAIT's
   (turn_by, one name): until the server confirms it or refuses it. Returns 1 when that name is
   watched, -1 when the node refused it (a redirection: its slot has another node), 0 otherwise. */
static int kcache_redis__watch_on(kcache_redis__server *sv, const char *const *names, size_t n, int64_t turn_by, int sharded) {
    char (*chan)[KCACHE_REDIS__KEY_MAX] = NULL;
    const char **argv = NULL;
    size_t *lens = NULL, i, sub = 0, unsub = 0;
    kcache_redis__cmds out;
    redisContext *old, *c, *other = NULL;
    int ok = 1, ret = 0;
    unsigned refused = 0;
    int64_t now = kcache_monotonic_ns();
    memset(&out, 0, sizeof out);
    pthread_mutex_lock(&sv->mutex);
    while (!kcache_redis__sub_begin(sv, &old)) { /* another thread's turn: waited for until turn_by (a WAIT's), else skipped */
        struct timespec ts;
        int64_t wall;
        if (old) { pthread_mutex_unlock(&sv->mutex); kcache_redis__drop(old); old = NULL; pthread_mutex_lock(&sv->mutex); continue; }
        if (!sv->sub_busy || kcache_monotonic_ns() >= turn_by) { pthread_mutex_unlock(&sv->mutex); return 0; }
        clock_gettime(CLOCK_REALTIME, &ts);
        wall = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + 10000000;
        ts.tv_sec = (time_t)(wall / 1000000000), ts.tv_nsec = (long)(wall % 1000000000);
        pthread_cond_timedwait(&sv->sub_cond, &sv->mutex, &ts);
    }
    if (sv->sub && sv->sub_sharded != sharded) other = sv->sub, sv->sub = NULL; /* (the listed server turned out to be a cluster's node) */
    c = sv->sub;
    if ((!c && now < sv->sub_retry_at) ||
        (!sv->watch && !(sv->watch = (kcache_redis__watched *)KCACHE_MALLOC(KCACHE_REDIS__WATCH * sizeof *sv->watch)))) {
        sv->sub_busy = 0;
        pthread_cond_broadcast(&sv->sub_cond);
        pthread_mutex_unlock(&sv->mutex);
        if (old) kcache_redis__drop(old);
        if (other) kcache_redis__drop(other);
        return 0;
    }
    if (!c) kcache_redis__watch_clear(sv);
    pthread_mutex_unlock(&sv->mutex);
    if (old) kcache_redis__drop(old);
    if (other) kcache_redis__drop(other);
    if (!c) {
        if (kcache_redis__connect(sv, now + (int64_t)sv->op_ms * 1000000, &c) != KCACHE_OK) { kcache_redis__sub_end(sv, 0); return 0; }
        pthread_mutex_lock(&sv->mutex);
        sv->sub = c;
        sv->sub_sharded = sharded;
        pthread_mutex_unlock(&sv->mutex);
    }
    if ((ok = kcache_redis__sub_read(sv, c)) != 1) { kcache_redis__sub_end(sv, ok); return 0; }
    /* (room for every entry let go and every name, twice over) */
    chan = (char (*)[KCACHE_REDIS__KEY_MAX])KCACHE_MALLOC((2 * n + KCACHE_REDIS__WATCH) * sizeof *chan);
    argv = (const char **)KCACHE_MALLOC((2 * n + KCACHE_REDIS__WATCH + 1) * sizeof *argv);
    lens = (size_t *)KCACHE_MALLOC((2 * n + KCACHE_REDIS__WATCH + 1) * sizeof *lens);
    if (!chan || !argv || !lens) goto done;
    /* a name let go and still subscribed is watched again as it is; a new one takes a free entry,
       else one let go, else (all in use) one in turn, unsubscribing it first. A plain server: one
       command each for those unsubscribed and those subscribed (a name in both ends subscribed);
       a cluster: a command per channel (the channels of one command must share a slot). Let go
       entries stay subscribed until needed, so that a cold start's keys cost one subscription each
       (on a cluster a command each) and no unsubscription. */
    pthread_mutex_lock(&sv->mutex);
    refused = sv->sub_refused;
    for (i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        unsigned k, at = KCACHE_REDIS__WATCH;
        kcache_redis__watched *w;
        if (len > 32 || kcache_redis__watch_find(sv, names[i], len)) continue;
        if ((w = kcache_redis__watch_in(sv, names[i], len, 1)) != NULL) { /* (let go, still subscribed) */
            w->state = KCACHE_REDIS__W_WAIT;
            continue;
        }
        for (k = 0; k < KCACHE_REDIS__WATCH && at == KCACHE_REDIS__WATCH; k++)
            if (sv->watch[k].state == KCACHE_REDIS__W_FREE) at = k;
        for (k = 0; k < KCACHE_REDIS__WATCH && at == KCACHE_REDIS__WATCH; k++)
            if (sv->watch[k].state == KCACHE_REDIS__W_GONE) {
                at = k;
                argv[1 + unsub] = chan[unsub], lens[1 + unsub] = kcache_redis__chan(sv, chan[unsub], sv->watch[at].name, sharded);
                unsub++;
            }
        if (at == KCACHE_REDIS__WATCH) { /* all in use: one is let go (round robin) */
            at = sv->watch_next;
            sv->watch_next = (sv->watch_next + 1) % KCACHE_REDIS__WATCH;
            argv[1 + unsub] = chan[unsub], lens[1 + unsub] = kcache_redis__chan(sv, chan[unsub], sv->watch[at].name, sharded);
            unsub++;
        }
        memcpy(sv->watch[at].name, names[i], len + 1);
        sv->watch[at].state = KCACHE_REDIS__W_WAIT;
        sv->watch[at].confirmed = 0;
        sv->watch[at].heard_at = 0;
    }
    /* the new ones: those just made (WAIT, named in this call; a name named twice once) */
    for (i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        kcache_redis__watched *w = len <= 32 ? kcache_redis__watch_find(sv, names[i], len) : NULL;
        size_t k;
        int twice = 0;
        if (!w || w->state != KCACHE_REDIS__W_WAIT || w->confirmed) continue;
        for (k = 0; k < i && !twice; k++) twice = strcmp(names[k], names[i]) == 0;
        if (twice) continue;
        argv[1 + unsub + sub] = chan[unsub + sub], lens[1 + unsub + sub] = kcache_redis__chan(sv, chan[unsub + sub], names[i], sharded);
        sub++;
    }
    pthread_mutex_unlock(&sv->mutex);
    for (i = 0; i < 2; i++) { /* unsubscribed, then subscribed */
        const char *verb = i ? (sharded ? "SSUBSCRIBE" : "SUBSCRIBE") : (sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE");
        const char **first = argv + 1 + (i ? unsub : 0);
        size_t *first_len = lens + 1 + (i ? unsub : 0), count = i ? sub : unsub, k;
        const char *two[2];
        size_t two_len[2];
        if (!count) continue;
        two[0] = verb, two_len[0] = strlen(verb);
        if (!sharded) { /* one command: the verb before the channels */
            first[-1] = verb, first_len[-1] = two_len[0];
            kcache_redis__cmds_add(&out, (int)(1 + count), first - 1, first_len - 1);
            continue;
        }
        for (k = 0; k < count; k++) {
            two[1] = first[k], two_len[1] = first_len[k];
            kcache_redis__cmds_add(&out, 2, two, two_len);
        }
    }
    if (out.failed || (out.len && !kcache_redis__sub_send(c, out.buf, out.len, now + (int64_t)sv->op_ms * 1000000))) ok = 0;
    /* a WAIT's: until the server confirms the subscription, so that the claim looked at next cannot
       end unheard between the two (or refuses it: the slot is another node's) */
    while (ok == 1 && turn_by && n == 1) {
        kcache_redis__watched *w;
        int64_t left;
        int confirmed, polled;
        pthread_mutex_lock(&sv->mutex);
        w = kcache_redis__watch_find(sv, names[0], strlen(names[0]));
        confirmed = !w || w->confirmed;
        if (!confirmed && sv->sub_refused != refused) { /* (redirected: not watched here) */
            w->state = KCACHE_REDIS__W_FREE;
            ret = -1;
        }
        pthread_mutex_unlock(&sv->mutex);
        if (confirmed || ret < 0 || (left = turn_by - kcache_monotonic_ns()) <= 0) break;
        if ((polled = kcache_redis__sub_poll(c, (int)((left + 999999) / 1000000))) < 0) ok = 0;
        else if (polled) ok = kcache_redis__sub_read(sv, c);
    }
    if (ok == 1 && turn_by && n == 1 && ret == 0) {
        pthread_mutex_lock(&sv->mutex);
        ret = kcache_redis__watch_find(sv, names[0], strlen(names[0])) != NULL;
        pthread_mutex_unlock(&sv->mutex);
    }
done:
    KCACHE_FREE(chan);
    KCACHE_FREE(argv);
    KCACHE_FREE(lens);
    KCACHE_FREE(out.buf);
    kcache_redis__sub_end(sv, ok);
    return ret;
}

/* Watches the n names a batch's look found missing (kcache_redis__watch_on): on a plain server
   its subscriber, on a cluster each name on its node's. */
static void kcache_redis__watch(kcache_redis__server *rb, const char *const *names, size_t n, int64_t turn_by) {
    kcache_redis__server **sv = (kcache_redis__server **)KCACHE_MALLOC(n * sizeof *sv);
    const char **some = (const char **)KCACHE_MALLOC(n * sizeof *some);
    int *sharded = (int *)KCACHE_MALLOC(n * sizeof *sharded);
    size_t i, j, m;
    for (i = 0; sv && some && sharded && i < n; i++) sv[i] = kcache_redis__sub_server(rb, names[i], &sharded[i]);
    for (i = 0; sv && some && sharded && i < n; i++) { /* (the names of one server together) */
        if (!sv[i]) continue;
        for (m = 0, j = i; j < n; j++)
            if (sv[j] == sv[i] && sharded[j] == sharded[i]) some[m++] = names[j], sv[j] = j > i ? NULL : sv[j];
        (void)kcache_redis__watch_on(sv[i], some, m, turn_by, sharded[i]);
    }
    KCACHE_FREE(sv);
    KCACHE_FREE(some);
    KCACHE_FREE(sharded);
}

/* Reads what sv's subscriber has received (without waiting), when this process has one. */
static void kcache_redis__drain_one(kcache_redis__server *sv) {
    redisContext *old = NULL, *c = NULL;
    int mine;
    pthread_mutex_lock(&sv->mutex);
    if (!sv->watch || !sv->sub || sv->sub_pid != (uint32_t)getpid()) { pthread_mutex_unlock(&sv->mutex); return; }
    if ((mine = kcache_redis__sub_begin(sv, &old)) != 0) c = sv->sub;
    pthread_mutex_unlock(&sv->mutex);
    if (mine) kcache_redis__sub_end(sv, kcache_redis__sub_read(sv, c));
}
/* The same for every subscriber of this process on rb (a cluster's: one per node). */
static void kcache_redis__watch_drain(kcache_redis__server *rb) {
    kcache_redis__server *sv[KCACHE_REDIS__CLUSTER_NODES + 1];
    unsigned n = 0, i;
    sv[n++] = rb;
    pthread_mutex_lock(&rb->mutex);
    for (i = 0; i < rb->nnodes; i++) sv[n++] = rb->node[i]; /* (nodes live as long as rb) */
    pthread_mutex_unlock(&rb->mutex);
    for (i = 0; i < n; i++) kcache_redis__drain_one(sv[i]);
}

/* What the subscriber says of name's build, from what was read already: STORED (the value is
   there: the entry is let go, so that the hint serves once), HELD (another took its claim less
   than a third of a claim's life ago: a holder that died unheard is found by the claim after
   that), ABANDONED, or WAIT (nothing heard, or not watched). done: the caller is to build it (or
   found it): let go. */
static int kcache_redis__watch_state(kcache_redis__server *rb, const char *name, int done) {
    kcache_redis__watched *w;
    kcache_redis__server *sv;
    int state = KCACHE_REDIS__W_WAIT, sharded;
    if (!(sv = kcache_redis__sub_server(rb, name, &sharded))) return state;
    pthread_mutex_lock(&sv->mutex);
    if (sv->watch && sv->sub && sv->sub_pid == (uint32_t)getpid() && (w = kcache_redis__watch_find(sv, name, strlen(name))) != NULL) {
        if (!done) state = w->state;
        if (state == KCACHE_REDIS__W_HELD && kcache_monotonic_ns() - w->heard_at > (int64_t)(sv->claim_ms / 3) * 1000000)
            state = w->state = KCACHE_REDIS__W_WAIT; /* (heard too long ago: the claim is asked) */
        if (done || (state != KCACHE_REDIS__W_WAIT && state != KCACHE_REDIS__W_HELD)) w->state = KCACHE_REDIS__W_GONE;
    }
    pthread_mutex_unlock(&sv->mutex);
    return state;
}
/* The same, name's subscriber read first (without waiting). */
static int kcache_redis__watch_heard(kcache_redis__server *rb, const char *name, int done) {
    int sharded;
    kcache_redis__server *sv = kcache_redis__sub_server(rb, name, &sharded);
    if (sv) kcache_redis__drain_one(sv);
    return kcache_redis__watch_state(rb, name, done);
}

/* A batch's look: its misses are watched (their builds' ends heard), its hits let go. */
static void kcache_redis__watch_misses(kcache_redis__server *rb, const char *const *names, size_t n, const kcache_status *st) {
    const char **miss = (const char **)KCACHE_MALLOC(n * sizeof *miss);
    size_t i, m = 0;
    for (i = 0; miss && i < n; i++)
        if (st[i] == KCACHE_MISS) miss[m++] = names[i];
        else if (st[i] == KCACHE_OK) (void)kcache_redis__watch_heard(rb, names[i], 1);
    if (m) kcache_redis__watch(rb, miss, m, 0);
    KCACHE_FREE(miss);
}

/* get_many: the GETs sent together on one pooled connection and their replies read in turn (a
   pipeline: one round trip for them all, however many), the whole exchange bounded as one GET is
   (one deadline, stretched only while bytes keep arriving: kcache_redis__limit), so that a server
   slow to answer each GET times the exchange out once and opens the breaker, instead of costing a
   timeout per reply. On a TLS link, or a cluster (its keys on several nodes), one GET after
   another, none begun past that deadline; a key the server redirects (it turned out to be a node
   of a cluster) is asked again as a GET is. */
static int kcache_redis__clock_due(kcache_redis__server *rb, int64_t now);
static void kcache_redis__clock_learn(kcache_redis__server *rb, const redisReply *r, int64_t t0, int64_t t1);

static kcache_status kcache_redis__get_many(void *user, const char *const *names, size_t n, const void **data, size_t *size, void **hold,
                                            kcache_status *st) {
    kcache_redis__server *rb = (kcache_redis__server *)user;
    redisContext *c = NULL;
    kcache_status s = KCACHE_OK;
    size_t i;
    int pipelined, clock;
    int64_t start = kcache_monotonic_ns(), deadline = start + (int64_t)rb->op_ms * 1000000, last = start;
    uint64_t moved = 0;
    pthread_mutex_lock(&rb->mutex);
    pipelined = !rb->tls && !rb->slot;
    pthread_mutex_unlock(&rb->mutex);
    for (i = 0; i < n; i++) {
        hold[i] = NULL;
        st[i] = KCACHE_STATUS_COUNT; /* not answered yet */
    }
    /* a batch's look on a server it may claim on: the server's clock (kcache_redis__server_time)
       asked in the same exchange, before the GETs (its reply is not held up behind their values),
       so that the batch's first claim costs no round trip of its own for it */
    clock = pipelined && n > 1 && rb->remote && !rb->no_watch && kcache_redis__clock_due(rb, start);
    if (pipelined && (s = kcache_redis__take(rb, deadline, &c)) == KCACHE_OK) {
        if (clock) {
            const char *argv[1];
            size_t lens[1];
            argv[0] = "TIME", lens[0] = 4;
            if (redisAppendCommandArgv(c, 1, argv, lens) != REDIS_OK) s = KCACHE_ENOMEM;
        }
        for (i = 0; i < n && s == KCACHE_OK; i++) {
            char key[KCACHE_REDIS__KEY_MAX];
            const char *argv[2];
            size_t lens[2];
            argv[0] = "GET", lens[0] = 3;
            argv[1] = key, lens[1] = kcache_redis__key(rb, key, names[i], "");
            if (redisAppendCommandArgv(c, 2, argv, lens) != REDIS_OK) s = KCACHE_ENOMEM;
        }
        if (clock && s == KCACHE_OK) {
            redisReply *r;
            if ((s = kcache_redis__io_span(rb, c, start, deadline, &last, &moved, rb->max_reply, &r)) == KCACHE_OK) {
                kcache_redis__clock_learn(rb, r, start, kcache_monotonic_ns());
                freeReplyObject(r);
            }
        }
        for (i = 0; i < n && s == KCACHE_OK; i++) {
            redisReply *r;
            int ask, port;
            unsigned slot;
            const char *host;
            size_t hlen;
            if ((s = kcache_redis__io_span(rb, c, start, deadline, &last, &moved, rb->max_reply, &r)) != KCACHE_OK) break;
            if (r->type == REDIS_REPLY_STRING) { /* held as a GET's are (kcache_redis__release frees both) */
                kcache_redis__held *h = (kcache_redis__held *)KCACHE_MALLOC(sizeof *h);
                if (!h) {
                    freeReplyObject(r);
                    s = KCACHE_ENOMEM;
                    break;
                }
                memset(h, 0, sizeof *h);
                h->reply = r;
                data[i] = r->str, size[i] = r->len, hold[i] = h, st[i] = KCACHE_OK;
                continue;
            }
            if (r->type == REDIS_REPLY_NIL) st[i] = KCACHE_MISS;
            else if (!kcache_redis__cluster_redirect(r, &ask, &slot, &host, &hlen, &port)) s = kcache_redis__error(r);
            freeReplyObject(r);
        }
        if (s == KCACHE_OK) kcache_redis__give(rb, c);
        else kcache_redis__discard(rb, c); /* replies may be left unread on it */
    }
    for (i = 0; i < n && s == KCACHE_OK; i++) /* one by one: what the pipeline did not answer */
        if (st[i] == KCACHE_STATUS_COUNT && kcache_monotonic_ns() > kcache_redis__limit(start, deadline, last, moved))
            s = KCACHE_ETIMEOUT; /* (the exchange's time is spent) */
        else if (st[i] == KCACHE_STATUS_COUNT && (st[i] = kcache_redis__get(user, names[i], &data[i], &size[i], &hold[i])) != KCACHE_OK &&
                 st[i] != KCACHE_MISS && st[i] != KCACHE_ENODE) /* (ENODE: that key's node is down, the others' keys are read) */
            s = st[i];
    /* a batch's look: its misses are watched (their builds' ends heard), once every key is answered
       (a listed node that redirected some turned out to be a cluster's: each is watched on its node) */
    if (s == KCACHE_OK && n > 1) kcache_redis__watch_misses(rb, names, n, st);
    if (s != KCACHE_OK)
        for (i = 0; i < n; i++) {
            kcache_redis__release(user, hold[i]);
            hold[i] = NULL;
        }
    return s;
}
/* SET name's value (EX the TTL when there is one) as an argument list: its argc (3 or 5); key and
   ttl are the caller's buffers the arguments point into. */
static int kcache_redis__set_argv(const kcache_redis__server *rb, const char *name, const void *data, size_t size, char *key, char ttl[16],
                                  const char **argv, size_t *lens) {
    argv[0] = "SET", lens[0] = 3;
    argv[1] = key, lens[1] = kcache_redis__key(rb, key, name, "");
    argv[2] = data ? (const char *)data : "", lens[2] = size;
    if (!rb->ttl_s) return 3;
    argv[3] = "EX", lens[3] = 2;
    argv[4] = ttl, lens[4] = (size_t)snprintf(ttl, 16, "%u", (unsigned)rb->ttl_s);
    return 5;
}

static kcache_status kcache_redis__put(void *user, const char *name, const void *data, size_t size) {
    kcache_redis__server *rb = (kcache_redis__server *)user;
    char key[KCACHE_REDIS__KEY_MAX], ttl[16];
    const char *argv[5];
    size_t lens[5];
    redisReply *r;
    kcache_status st = kcache_redis__run(rb, kcache_redis__set_argv(rb, name, data, size, key, ttl, argv, lens), argv, lens, &r);
    if (st != KCACHE_OK) return st;
    st = r->type == REDIS_REPLY_STATUS ? KCACHE_OK : kcache_redis__write_error(r);
    freeReplyObject(r);
    return st;
}
static kcache_status kcache_redis__remove(void *user, const char *name) {
    redisReply *r;
    kcache_status st = kcache_redis__on_key((kcache_redis__server *)user, "DEL", name, "", NULL, 0, &r);
    if (st != KCACHE_OK) return st;
    st = r->type == REDIS_REPLY_INTEGER ? (r->integer > 0 ? KCACHE_OK : KCACHE_MISS) : kcache_redis__write_error(r);
    freeReplyObject(r);
    return st;
}

/* Takes a claim (SET NX PX) unless the value is there already: a client whose lookup missed just
   before another's build landed and released its claim would otherwise take the claim and build
   the key again; a claim taken is published ("t"), so that the batches watching the key ask no
   more for it (kcache_redis__watch). Answered as held: the caller waits, finds no claim, looks again and hits. The
   claim and its value are in one slot ({kcache:1:<name>}:claim), so a cluster runs it on one node;
   there ARGV[4], the sharded channel of that slot, is SPUBLISHed too (redis.pcall: a Redis without
   SPUBLISH still takes the claim), the plain one staying for the waiters of 0.6.0 and before. */
static const char kcache_redis__take_lua[] =
    "if redis.call('exists', KEYS[2]) == 1 then return 0 end "
    "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then redis.call('publish', ARGV[3], 't') "
    "if ARGV[4] then redis.pcall('spublish', ARGV[4], 't') end return 1 end return 0";
/* Renews a claim only while it is still the caller's; releases it the same way, then publishes. */
static const char kcache_redis__renew_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0";
static const char kcache_redis__release_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) end "
    "redis.call('publish', ARGV[2], ARGV[3]) if ARGV[4] then redis.pcall('spublish', ARGV[4], ARGV[3]) end return 1";
/* The release (or abandon) script's argument list for name's claim held by token: its argc (7, or
   8 with schan: a cluster's sharded channel, published too); claim, chan and schan are the
   caller's buffers the arguments point into. */
static int kcache_redis__release_argv(const kcache_redis__server *rb, const char *name, const char *token, int op, char *claim, char *chan,
                                      char *schan, const char **argv, size_t *lens) {
    argv[0] = "EVAL", lens[0] = 4;
    argv[1] = kcache_redis__release_lua, lens[1] = sizeof kcache_redis__release_lua - 1;
    argv[2] = "1", lens[2] = 1;
    argv[3] = claim, lens[3] = kcache_redis__key(rb, claim, name, ":claim");
    argv[4] = token, lens[4] = strlen(token);
    argv[5] = chan, lens[5] = kcache_redis__key(rb, chan, name, ":done");
    argv[6] = op == KCACHE_CLAIM_RELEASE ? "1" : "0", lens[6] = 1;
    if (!schan) return 7;
    argv[7] = schan, lens[7] = kcache_redis__chan(rb, schan, name, 1);
    return 8;
}

/* Renews a claim under a new token (kcache_remote_ops.claim_reissue), only while the old one holds it. */
static const char kcache_redis__reissue_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0";

static kcache_status kcache_redis__claim_reissue(void *user, const char *name, const char *token, const char *new_token, uint32_t ms) {
    kcache_redis__server *rb = (kcache_redis__server *)user;
    char key[KCACHE_REDIS__KEY_MAX], msbuf[16];
    const char *argv[7];
    size_t lens[7];
    redisReply *r;
    kcache_status st;
    snprintf(msbuf, sizeof msbuf, "%u", (unsigned)(ms ? ms : 1));
    argv[0] = "EVAL", lens[0] = 4;
    argv[1] = kcache_redis__reissue_lua, lens[1] = sizeof kcache_redis__reissue_lua - 1;
    argv[2] = "1", lens[2] = 1;
    argv[3] = key, lens[3] = kcache_redis__key(rb, key, name, ":claim");
    argv[4] = token, lens[4] = strlen(token);
    argv[5] = new_token, lens[5] = strlen(new_token);
    argv[6] = msbuf, lens[6] = strlen(msbuf);
    if ((st = kcache_redis__run(rb, 7, argv, lens, &r)) != KCACHE_OK) return st;
    if (r->type == REDIS_REPLY_ERROR) st = kcache_redis__write_error(r);
    else st = r->type != REDIS_REPLY_INTEGER ? KCACHE_EIO : r->integer == 1 ? KCACHE_OK : KCACHE_MISS;
    freeReplyObject(r);
    return st;
}

/* The server's clock (kcache_remote_ops.server_time_ns): this host's monotonic clock plus an offset
   learned from the server's TIME, learned again after KCACHE_REDIS__CLOCK_KEEP_NS; the midpoint of
   the exchange stands for the moment the server read its clock. One TIME per process and shard a
   minute at most: a short-lived client that claims pays one round trip, one that only reads none,
   and a batch none of its own (its first look asks TIME in the same exchange: kcache_redis__get_many).
   0 when it was never learned (kcache then uses the client's clock). On a cluster the listed
   node's clock serves every key: nodes keep one time (NTP), and a claim's age is judged within
   seconds. */
#define KCACHE_REDIS__CLOCK_KEEP_NS ((int64_t)60 * 1000000000)
#define KCACHE_REDIS__CLOCK_RETRY_NS ((int64_t)5 * 1000000000)
/* Whether the server's clock is to be asked now (not known, or known too long ago, and not asked a
   moment ago); if so, the attempt is noted. */
static int kcache_redis__clock_due(kcache_redis__server *rb, int64_t now) {
    int due;
    pthread_mutex_lock(&rb->mutex);
    due = (!rb->clock_at || now - rb->clock_at > KCACHE_REDIS__CLOCK_KEEP_NS) && (!rb->clock_tried || now - rb->clock_tried > KCACHE_REDIS__CLOCK_RETRY_NS);
    if (due) rb->clock_tried = now;
    pthread_mutex_unlock(&rb->mutex);
    return due;
}
/* Learns the clock from TIME's reply r, sent at t0 and read at t1. */
static void kcache_redis__clock_learn(kcache_redis__server *rb, const redisReply *r, int64_t t0, int64_t t1) {
    int64_t sec, usec;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        return;
    sec = strtoll(r->element[0]->str, NULL, 10), usec = strtoll(r->element[1]->str, NULL, 10);
    if (sec <= 0 || usec < 0 || usec >= 1000000) return;
    pthread_mutex_lock(&rb->mutex);
    rb->clock_offset = sec * 1000000000 + usec * 1000 - (t0 + (t1 - t0) / 2);
    rb->clock_at = t1;
    pthread_mutex_unlock(&rb->mutex);
}
static int64_t kcache_redis__server_time(void *user, const char *name) {
    kcache_redis__server *rb = (kcache_redis__server *)user;
    int64_t offset, at, t0;
    const char *argv[1];
    size_t lens[1];
    redisReply *r = NULL;
    (void)name;
    if (kcache_redis__clock_due(rb, kcache_monotonic_ns())) {
        argv[0] = "TIME", lens[0] = 4;
        t0 = kcache_monotonic_ns();
        if (kcache_redis__run1(rb, t0 + (int64_t)rb->op_ms * 1000000, 0, 1, argv, lens, NULL, &r) == KCACHE_OK)
            kcache_redis__clock_learn(rb, r, t0, kcache_monotonic_ns());
        if (r) freeReplyObject(r);
    }
    pthread_mutex_lock(&rb->mutex);
    offset = rb->clock_offset, at = rb->clock_at;
    pthread_mutex_unlock(&rb->mutex);
    return at ? kcache_monotonic_ns() + offset : 0;
}

/* WAIT on the process's subscriber sv (its server's, or on a cluster the claim's node's): name
   watched (subscribed on it, in this thread's turn), then, after the caller looked at the claim,
   this: until the key's end is heard (KCACHE_OK: stored, KCACHE_MISS: abandoned) or until
   (KCACHE_ETIMEOUT), the waiting threads taking turns to read the subscriber (poll() on it for 50
   ms at most, so that a turn passes on), the others sleeping until a turn ends. KCACHE_EDISABLED:
   the subscriber failed meanwhile (the caller looks again); KCACHE_OK too when the name was let
   go meanwhile (its slot moved: the caller looks again). */
#define KCACHE_REDIS__TURN_NS ((int64_t)50 * 1000000)
static kcache_status kcache_redis__wait_shared(kcache_redis__server *sv, const char *name, int64_t until) {
    kcache_redis__watched *w;
    kcache_status st = KCACHE_ETIMEOUT;
    pthread_mutex_lock(&sv->mutex);
    for (;;) {
        int64_t now = kcache_monotonic_ns(), next = now + KCACHE_REDIS__TURN_NS < until ? now + KCACHE_REDIS__TURN_NS : until;
        redisContext *c, *old = NULL;
        if (!sv->sub || sv->sub_pid != (uint32_t)getpid()) { st = KCACHE_EDISABLED; break; } /* (dropped after a failure) */
        if (!(w = kcache_redis__watch_find(sv, name, strlen(name)))) { st = KCACHE_OK; break; } /* let go by another: look again */
        if (w->state == KCACHE_REDIS__W_STORED || w->state == KCACHE_REDIS__W_ABANDONED) {
            st = w->state == KCACHE_REDIS__W_STORED ? KCACHE_OK : KCACHE_MISS;
            w->state = KCACHE_REDIS__W_GONE;
            break;
        }
        if (now >= until) break;
        if (kcache_redis__sub_begin(sv, &old)) { /* this thread's turn: read for a while */
            int ok, polled;
            c = sv->sub;
            pthread_mutex_unlock(&sv->mutex);
            polled = kcache_redis__sub_poll(c, (int)((next - now + 999999) / 1000000));
            ok = polled < 0 ? 0 : polled ? kcache_redis__sub_read(sv, c) : 1;
            kcache_redis__sub_end(sv, ok);
            pthread_mutex_lock(&sv->mutex);
        } else { /* another thread's turn: until it ends (it broadcasts), or a while */
            struct timespec ts;
            int64_t wall;
            clock_gettime(CLOCK_REALTIME, &ts);
            wall = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + (next - now);
            ts.tv_sec = (time_t)(wall / 1000000000), ts.tv_nsec = (long)(wall % 1000000000);
            pthread_cond_timedwait(&sv->sub_cond, &sv->mutex, &ts);
        }
        if (old) { pthread_mutex_unlock(&sv->mutex); kcache_redis__drop(old); pthread_mutex_lock(&sv->mutex); }
    }
    pthread_mutex_unlock(&sv->mutex);
    return st;
}

/* Watches name for a WAIT (kcache_redis__wait_shared): the subscriber's server when it is (its
   SUBSCRIBE sent in this thread's turn, waited for until by), NULL when the process has no
   subscriber for it. On a cluster, a node that redirects the SSUBSCRIBE (the name's slot moved)
   has the map read and the name's new node tried once; a slot whose node the map does not know
   yet (the first MOVED seen a moment ago) has it read, or waits a little for the thread reading
   it, so that the waiter does not fall back to a connection of its own. */
#define KCACHE_REDIS__MAP_WAIT_NS ((int64_t)200 * 1000000) /* (longer than a reload's rate limit) */
static kcache_redis__server *kcache_redis__watch_one(kcache_redis__server *rb, const char *name, int64_t by) {
    int tries;
    for (tries = 0; tries < 2; tries++) {
        int sharded, r;
        kcache_redis__server *sv = kcache_redis__sub_server(rb, name, &sharded);
        int64_t until = kcache_monotonic_ns() + KCACHE_REDIS__MAP_WAIT_NS;
        if (until > by) until = by;
        while (!sv && sharded && kcache_monotonic_ns() < until) {
            if (kcache_redis__cluster_reload(rb, until) != 1) {
                struct timespec ts;
                ts.tv_sec = 0, ts.tv_nsec = 10000000;
                nanosleep(&ts, NULL);
            }
            sv = kcache_redis__sub_server(rb, name, &sharded);
        }
        if (!sv) return NULL;
        if ((r = kcache_redis__watch_on(sv, &name, 1, by, sharded)) > 0) return sv;
        if (r == 0 || kcache_redis__cluster_reload(rb, by) != 1) return NULL;
    }
    return NULL;
}
/* WAIT: subscribe to the claim's channel (on the process's subscriber, else on a connection of its
   own), then look at the claim (a release between the two is not missed); the claim's remaining
   lifetime bounds the wait, so a dead builder's claim is noticed when it runs out. */
static kcache_status kcache_redis__wait_claim(kcache_redis__server *rb, const char *name, uint32_t ms) {
    int64_t start = kcache_monotonic_ns(), until = start + (int64_t)ms * 1000000, by = start + (int64_t)rb->op_ms * 1000000;
    char chan[KCACHE_REDIS__KEY_MAX];
    const char *argv[2];
    size_t lens[2];
    redisContext *sub = NULL;
    redisReply *r = NULL;
    kcache_redis__server *sv = kcache_redis__watch_one(rb, name, by); /* (else, on a cluster, the plain channel on the listed node) */
    int gone = 0, shared = sv != NULL;
    kcache_status st = shared ? KCACHE_OK : kcache_redis__connect(rb, by, &sub);
    if (st != KCACHE_OK) return kcache_redis__is_cluster(rb) ? KCACHE_ENODE : st; /* (a cluster's seed down: the other nodes serve) */
    argv[0] = "SUBSCRIBE", lens[0] = 9;
    argv[1] = chan, lens[1] = kcache_redis__key(rb, chan, name, ":done");
    if (!shared) st = kcache_redis__cmd(rb, sub, 2, argv, lens, by, &r);
    if (st == KCACHE_OK && !shared && r->type != REDIS_REPLY_ARRAY) st = kcache_redis__error(r);
    if (r) freeReplyObject(r);
    if (st == KCACHE_OK) { /* its life, then its holder's token: one kcache would wait for? */
        long long left = -3;
        st = kcache_redis__on_key(rb, "PTTL", name, ":claim", NULL, 0, &r);
        if (st == KCACHE_OK) {
            left = r->type == REDIS_REPLY_INTEGER ? r->integer : -3;
            if (r->type != REDIS_REPLY_INTEGER) st = kcache_redis__error(r);
            else if (left == -2) gone = 1; /* no claim: look again */
            else if (!rb->remote || left < 0 || left > (long long)rb->claim_ms) st = KCACHE_ECORRUPT;
            else if (start + (left + 50) * 1000000 < until) until = start + (left + 50) * 1000000;
            freeReplyObject(r);
        }
        if (st == KCACHE_OK && !gone && rb->is_signed && (st = kcache_redis__on_key(rb, "GET", name, ":claim", NULL, 0, &r)) == KCACHE_OK) {
            if (r->type == REDIS_REPLY_NIL) gone = 1;
            else if (r->type != REDIS_REPLY_STRING) st = kcache_redis__error(r);
            else if (!kcache_remote_claim_honoured(rb->remote, name, r->str, r->len, left)) st = KCACHE_ECORRUPT;
            freeReplyObject(r);
        }
    }
    if (shared && st == KCACHE_OK && !gone) {
        st = kcache_redis__wait_shared(sv, name, until);
        if (st == KCACHE_ETIMEOUT) st = until < start + (int64_t)ms * 1000000 ? KCACHE_OK : KCACHE_EEXIST;
        else if (st == KCACHE_EDISABLED) st = KCACHE_OK; /* (the subscriber failed meanwhile: look again) */
    } else if (shared) {
        (void)kcache_redis__watch_heard(rb, name, 1); /* (gone, or the look failed: let go) */
    }
    while (!shared && st == KCACHE_OK && !gone) {
        st = kcache_redis__io_max(rb, sub, until, 65536, &r); /* small messages: a server streaming bytes cannot stretch the wait */
        if (st == KCACHE_ETIMEOUT) { st = until < start + (int64_t)ms * 1000000 ? KCACHE_OK : KCACHE_EEXIST; break; }
        if (st != KCACHE_OK) break;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[0]->str, "message") == 0 && r->element[2]->type == REDIS_REPLY_STRING &&
            !(r->element[2]->len == 1 && r->element[2]->str[0] == 't')) { /* ("t": a claim taken, not an end) */
            st = r->element[2]->len == 1 && r->element[2]->str[0] == '0' ? KCACHE_MISS : KCACHE_OK;
            freeReplyObject(r);
            break;
        }
        freeReplyObject(r);
    }
    if (sub) kcache_redis__drop(sub);
    return st == KCACHE_OK && gone ? KCACHE_ENOENT : st; /* gone when looked at: look again (kcache_remote_ops.claim) */
}

static kcache_status kcache_redis__claim(void *user, const char *name, int op, const char *token, uint32_t ms) {
    kcache_redis__server *rb = (kcache_redis__server *)user;
    char key[KCACHE_REDIS__KEY_MAX], chan[KCACHE_REDIS__KEY_MAX], done[KCACHE_REDIS__KEY_MAX], sharded[KCACHE_REDIS__KEY_MAX], msbuf[16];
    const char *argv[9];
    size_t lens[9];
    redisReply *r;
    kcache_status st;
    int argc, cluster;
    if (op == KCACHE_CLAIM_WAIT) return kcache_redis__wait_claim(rb, name, ms);
    cluster = kcache_redis__is_cluster(rb); /* (its waiters listen on the claim's node: SPUBLISH too) */
    snprintf(msbuf, sizeof msbuf, "%u", (unsigned)(ms ? ms : 1));
    kcache_redis__key(rb, key, name, ":claim");
    if (op == KCACHE_CLAIM_TAKE) { /* (chan: the value's key here) */
        /* its build's end heard (a batch watches its misses): answered as the take script answers
           a key whose value is there, without asking */
        int heard = kcache_redis__watch_heard(rb, name, 0);
        if (heard == KCACHE_REDIS__W_STORED || heard == KCACHE_REDIS__W_HELD) return KCACHE_EEXIST;
        argv[0] = "EVAL", lens[0] = 4;
        argv[1] = kcache_redis__take_lua, lens[1] = sizeof kcache_redis__take_lua - 1;
        argv[2] = "2", lens[2] = 1;
        argv[3] = key, lens[3] = strlen(key);
        argv[4] = chan, lens[4] = kcache_redis__key(rb, chan, name, "");
        argv[5] = token, lens[5] = strlen(token);
        argv[6] = msbuf, lens[6] = strlen(msbuf);
        argv[7] = done, lens[7] = kcache_redis__key(rb, done, name, ":done");
        argc = 8;
        if (cluster) argv[8] = sharded, lens[8] = kcache_redis__chan(rb, sharded, name, 1), argc = 9;
    } else if (op == KCACHE_CLAIM_RENEW) {
        argv[0] = "EVAL", lens[0] = 4;
        argv[1] = kcache_redis__renew_lua, lens[1] = sizeof kcache_redis__renew_lua - 1;
        argv[2] = "1", lens[2] = 1;
        argv[3] = key, lens[3] = strlen(key);
        argv[4] = token, lens[4] = strlen(token);
        argv[5] = msbuf, lens[5] = strlen(msbuf);
        argc = 6;
    } else if (op == KCACHE_CLAIM_RELEASE || op == KCACHE_CLAIM_ABANDON) {
        argc = kcache_redis__release_argv(rb, name, token, op, key, chan, cluster ? sharded : NULL, argv, lens);
    } else {
        return KCACHE_EINVAL;
    }
    if ((st = kcache_redis__run(rb, argc, argv, lens, &r)) != KCACHE_OK) return st;
    if (r->type == REDIS_REPLY_ERROR) st = kcache_redis__write_error(r);
    else if (op == KCACHE_CLAIM_TAKE) st = r->type != REDIS_REPLY_INTEGER ? KCACHE_EIO : r->integer == 1 ? KCACHE_OK : KCACHE_EEXIST;
    else if (op == KCACHE_CLAIM_RENEW) st = r->type != REDIS_REPLY_INTEGER ? KCACHE_EIO : r->integer == 1 ? KCACHE_OK : KCACHE_MISS;
    else st = r->type == REDIS_REPLY_INTEGER ? KCACHE_OK : KCACHE_EIO;
    freeReplyObject(r);
    if (op == KCACHE_CLAIM_TAKE && st == KCACHE_OK) (void)kcache_redis__watch_heard(rb, name, 1); /* built here: not watched */
    return st;
}

/* The server's identity (kcache_remote_backend.identity): the id under [prefix]kcache:id (in its database;
   on a cluster, the one key of the cluster; under the prefix, so that a user allowed only its
   namespace reaches it), set once by the first kcache that finds none (SET NX: two setting it at
   once agree on the winner's). In mode ro nothing is set: no id, no identity. */
static int kcache_redis__identity(void *user, int ro, char *out, size_t cap) {
    kcache_redis__server *rb = (kcache_redis__server *)user;
    const char *argv[4];
    size_t lens[4];
    char key[KCACHE_REDIS__KEY_MAX];
    int pass, ok = 0;
    for (pass = 0; pass < 2 && !ok; pass++) {
        redisReply *r = NULL;
        argv[0] = "GET", lens[0] = 3;
        argv[1] = key, lens[1] = (size_t)snprintf(key, sizeof key, "%skcache:id", rb->prefix ? rb->prefix : "");
        if (kcache_redis__run(rb, 2, argv, lens, &r) != KCACHE_OK) return 0;
        if (r->type == REDIS_REPLY_STRING && r->len > 0 && r->len < cap && !memchr(r->str, 0, r->len)) {
            memcpy(out, r->str, r->len);
            out[r->len] = 0;
            ok = 1;
        }
        freeReplyObject(r);
        if (!ok && pass == 0 && !ro) { /* none yet: a random one, unless another client is quicker */
            char id[33];
            uint64_t seed[4];
            seed[0] = (uint64_t)kcache_redis__now_ns(), seed[1] = (uint64_t)kcache_monotonic_ns(), seed[2] = (uint32_t)getpid();
            seed[3] = (uint64_t)(uintptr_t)&seed;
            kcache_hash_hex(kcache_hash(seed, sizeof seed), id);
            argv[2] = id, lens[2] = 32;
            argv[3] = "NX", lens[3] = 2;
            argv[0] = "SET", lens[0] = 3;
            r = NULL;
            if (kcache_redis__run(rb, 4, argv, lens, &r) != KCACHE_OK) return 0;
            freeReplyObject(r);
        }
    }
    return ok;
}

/* put_release (kcache_remote_ops): the SET and the claim's release script in one write on one
   pooled connection; a value up to KCACHE_REDIS__DEFER_MAX is answered KCACHE_OK once sent, its
   replies read by the connection's next use (kcache_redis__debt: the batch's next claim then goes
   out without waiting a round trip for them), a larger one's read now: one round trip. Over TLS,
   on a cluster (whose redirects kcache_redis__run follows), or when the server answers with a redirect (it turned out to be a node of a cluster: neither command ran),
   put and then the claim's release, one after the other. The release's arguments are those of
   kcache_redis__claim's KCACHE_CLAIM_RELEASE: keep the two alike. Returns the put's status, or a
   failure when the release did not run for sure (kcache releases again: a second does nothing). */
static kcache_status kcache_redis__put_release(void *user, const char *name, const void *data, size_t size, const char *token, uint32_t ms) {
    kcache_redis__server *rb = (kcache_redis__server *)user;
    kcache_redis__debt *d = NULL;
    redisContext *c = NULL;
    redisReply *r[2] = {NULL, NULL};
    kcache_status st = KCACHE_OK, put = KCACHE_EIO, rel = KCACHE_EIO;
    int64_t deadline = kcache_monotonic_ns() + (int64_t)rb->op_ms * 1000000;
    int pipelined, i, redirected = 0;
    pthread_mutex_lock(&rb->mutex);
    pipelined = !rb->tls && !rb->slot;
    pthread_mutex_unlock(&rb->mutex);
    if (pipelined && (st = kcache_redis__take(rb, deadline, &c)) == KCACHE_OK) {
        char key[KCACHE_REDIS__KEY_MAX], claim[KCACHE_REDIS__KEY_MAX], chan[KCACHE_REDIS__KEY_MAX], ttl[16];
        const char *argv[7];
        size_t lens[7];
        if (redisAppendCommandArgv(c, kcache_redis__set_argv(rb, name, data, size, key, ttl, argv, lens), argv, lens) != REDIS_OK)
            st = KCACHE_ENOMEM;
        kcache_redis__release_argv(rb, name, token, KCACHE_CLAIM_RELEASE, claim, chan, NULL, argv, lens); /* (not a cluster: no sharded channel) */
        if (st == KCACHE_OK && redisAppendCommandArgv(c, 7, argv, lens) != REDIS_OK) st = KCACHE_ENOMEM;
        /* sent without waiting for the answers, the value kept to send again (kcache_redis__debt),
           where it is small enough that the copy costs nothing next to the round trip saved */
        if (st == KCACHE_OK && size <= KCACHE_REDIS__DEFER_MAX && (d = kcache_redis__debt_new(name, data, size, token, ms)) != NULL) {
            kcache_redis__link *link = kcache_redis__link_of(c);
            int64_t start = kcache_monotonic_ns(), last = start;
            uint64_t moved = 0;
            if (!link || (st = kcache_redis__flush(c, start, deadline, &last, &moved)) != KCACHE_OK) {
                KCACHE_FREE(d);
                kcache_redis__discard(rb, c); /* (sent in part, or not at all: the caller puts again) */
                return link ? st : KCACHE_EIO;
            }
            {
                kcache_redis__debt **tail = &link->debt;
                while (*tail) tail = &(*tail)->next;
                *tail = d;
            }
            link->unread = 1;
            kcache_redis__give(rb, c);
            return KCACHE_OK;
        }
        /* each reply within a timeout of the one before (two replies: bounded, and a server slow to
           answer each command is no slower here than with put and release apart) */
        for (i = 0; i < 2 && st == KCACHE_OK; i++) st = kcache_redis__io(rb, c, kcache_monotonic_ns() + (int64_t)rb->op_ms * 1000000, &r[i]);
        if (st == KCACHE_OK) kcache_redis__give(rb, c);
        else kcache_redis__drop(c); /* a reply may be left unread on it */
        if (st != KCACHE_OK) {
            for (i = 0; i < 2; i++)
                if (r[i]) freeReplyObject(r[i]);
            return st;
        }
        for (i = 0; i < 2; i++) {
            int ask, port;
            unsigned slot;
            const char *host;
            size_t hlen;
            if (kcache_redis__cluster_redirect(r[i], &ask, &slot, &host, &hlen, &port)) redirected = 1;
        }
        if (!redirected) {
            put = r[0]->type == REDIS_REPLY_STATUS ? KCACHE_OK : kcache_redis__write_error(r[0]);
            rel = r[1]->type == REDIS_REPLY_INTEGER ? KCACHE_OK : KCACHE_EIO;
        }
        for (i = 0; i < 2; i++) freeReplyObject(r[i]);
        if (!redirected) return rel == KCACHE_OK ? put : KCACHE_EIO;
    } else if (pipelined) {
        return st;
    }
    put = kcache_redis__put(user, name, data, size);
    rel = kcache_redis__claim(user, name, KCACHE_CLAIM_RELEASE, token, ms);
    return rel == KCACHE_OK ? put : put == KCACHE_OK ? rel : put;
}

/* Takes claims in order until ARGV[2] are taken, each only while nobody holds it and its value is
   missing, and publishes each taken ("t", as the take script does): KEYS claim1, value1, claim2,
   value2...; ARGV ms, want, token1..tokenN, channel1..channelN; per name 1 (taken), 0 (held, or the
   value is there), -1 (not tried). */
static const char kcache_redis__take_first_lua[] =
    "local n = #KEYS / 2 local want, got, out = tonumber(ARGV[2]), 0, {} "
    "for i = 1, n do "
    "if got >= want then out[i] = -1 "
    "elseif redis.call('exists', KEYS[2 * i]) == 0 and redis.call('set', KEYS[2 * i - 1], ARGV[i + 2], 'NX', 'PX', ARGV[1]) then "
    "redis.call('publish', ARGV[n + i + 2], 't') out[i] = 1 got = got + 1 "
    "else out[i] = 0 end end return out";

/* claim_take_many (kcache_remote_ops): one script over the names (one round trip). On a cluster
   (names on several nodes), or when the server refuses the script (a node of a cluster: CROSSSLOT,
   a redirect), one take after another until want are taken. */
static kcache_status kcache_redis__claim_take_many(void *user, const char *const *names, const char *const *tokens, size_t n, size_t want,
                                                   uint32_t ms, kcache_status *st) {
    kcache_redis__server *rb = (kcache_redis__server *)user;
    kcache_status s = KCACHE_OK;
    size_t i, got = 0;
    int cluster;
    char msbuf[16], wantbuf[24];
    snprintf(msbuf, sizeof msbuf, "%u", (unsigned)(ms ? ms : 1));
    snprintf(wantbuf, sizeof wantbuf, "%u", (unsigned)want);
    pthread_mutex_lock(&rb->mutex);
    cluster = rb->slot != NULL;
    pthread_mutex_unlock(&rb->mutex);
    for (i = 0; i < n; i++) st[i] = KCACHE_STATUS_COUNT; /* not answered yet */
    if (!cluster && n <= 64) {
        enum { MAX = 64 };
        char (*keys)[KCACHE_REDIS__KEY_MAX] = (char (*)[KCACHE_REDIS__KEY_MAX])KCACHE_MALLOC(3 * MAX * KCACHE_REDIS__KEY_MAX);
        const char *argv[5 + 4 * MAX]; /* EVAL, the script, the key count, ms, want; 4 per name */
        size_t lens[5 + 4 * MAX], a = 0, sent[MAX], m = 0;
        char nbuf[16];
        redisReply *r = NULL;
        if (!keys) return KCACHE_ENOMEM;
        kcache_redis__watch_drain(rb); /* (once for the names) */
        for (i = 0; i < n; i++) { /* a build's end or a claim heard (kcache_redis__watch): held, unasked */
            int heard = kcache_redis__watch_state(rb, names[i], 0);
            if (heard == KCACHE_REDIS__W_STORED || heard == KCACHE_REDIS__W_HELD) st[i] = KCACHE_EEXIST;
            else sent[m++] = i;
        }
        if (m == 0) {
            KCACHE_FREE(keys);
            return KCACHE_OK;
        }
        argv[a] = "EVAL", lens[a++] = 4;
        argv[a] = kcache_redis__take_first_lua, lens[a++] = sizeof kcache_redis__take_first_lua - 1;
        argv[a] = nbuf, lens[a++] = (size_t)snprintf(nbuf, sizeof nbuf, "%u", (unsigned)(2 * m));
        for (i = 0; i < m; i++) {
            argv[a] = keys[3 * i], lens[a++] = kcache_redis__key(rb, keys[3 * i], names[sent[i]], ":claim");
            argv[a] = keys[3 * i + 1], lens[a++] = kcache_redis__key(rb, keys[3 * i + 1], names[sent[i]], "");
        }
        argv[a] = msbuf, lens[a++] = strlen(msbuf);
        argv[a] = wantbuf, lens[a++] = strlen(wantbuf);
        for (i = 0; i < m; i++) argv[a] = tokens[sent[i]], lens[a++] = strlen(tokens[sent[i]]);
        for (i = 0; i < m; i++) argv[a] = keys[3 * i + 2], lens[a++] = kcache_redis__key(rb, keys[3 * i + 2], names[sent[i]], ":done");
        s = kcache_redis__run(rb, (int)a, argv, lens, &r);
        KCACHE_FREE(keys);
        if (s != KCACHE_OK) return s;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == m) {
            for (i = 0; i < m; i++) {
                const redisReply *e = r->element[i];
                kcache_status *to = &st[sent[i]];
                *to = e->type != REDIS_REPLY_INTEGER ? KCACHE_EIO : e->integer == 1 ? KCACHE_OK : e->integer == 0 ? KCACHE_EEXIST : KCACHE_MISS;
                if (*to == KCACHE_OK) (void)kcache_redis__watch_state(rb, names[sent[i]], 1); /* built here: not watched */
            }
            freeReplyObject(r);
            return KCACHE_OK;
        }
        if (r->type == REDIS_REPLY_ERROR && (s = kcache_redis__write_error(r)) != KCACHE_EIO) { /* (a full or read-only server) */
            freeReplyObject(r);
            return s;
        }
        freeReplyObject(r); /* (refused: the names one by one) */
        s = KCACHE_OK;
    }
    for (i = 0; i < n && s == KCACHE_OK; i++) {
        if (st[i] == KCACHE_EEXIST) continue; /* (heard held above) */
        if (got >= want) {
            st[i] = KCACHE_MISS;
            continue;
        }
        st[i] = kcache_redis__claim(user, names[i], KCACHE_CLAIM_TAKE, tokens[i], ms);
        if (st[i] == KCACHE_OK) got++;
        else if (st[i] != KCACHE_EEXIST && st[i] != KCACHE_ENODE) s = st[i];
    }
    return s;
}

static const kcache_remote_ops kcache_redis__ops = {kcache_redis__get,    kcache_redis__release,       kcache_redis__put,
                                                    kcache_redis__remove, kcache_redis__claim,         kcache_redis__get_many,
                                                    kcache_redis__claim_reissue, kcache_redis__server_time, kcache_redis__put_release,
                                                    kcache_redis__claim_take_many};
/* The MAC the built-in get computed of a signed value while it arrived (kcache_redis__sink). */
static const unsigned char *kcache_redis__premac(void *user, const void *hold) {
    const kcache_redis__held *h = (const kcache_redis__held *)hold;
    (void)user;
    return h && h->premac ? h->mac : NULL;
}

/* One shard of a KCACHE_REMOTE list (a redis://, rediss:// or unix:// URL), on the remote tier
   (timeouts, the entry bound, the TLS files and the prefix: kcache_remote_get_params). NULL on
   failure, with *why. */
static void *kcache_redis__open_shard(void *user, const kcache_remote *remote, const char *url, char *shown, size_t shown_cap, char *why,
                                      size_t cap) {
    kcache_redis__server *rb;
    kcache_remote_params rp;
    (void)user;
    kcache_remote_get_params(remote, &rp);
    if (!(rb = kcache_redis__parse(url, strlen(url), shown, shown_cap, why, cap))) return NULL;
    if (!(rb->shown = kcache_redis__strndup(shown, strlen(shown)))) { kcache_redis__say(why, cap, "out of memory"); kcache_redis__free(rb); return NULL; }
#ifdef KCACHE_TLS_OPENSSL
    if (rb->tls && !(rb->tls_ctx = kcache_redis__tls_ctx(rp.ca, rp.cert, rp.key, why, cap))) { kcache_redis__free(rb); return NULL; }
#endif
    rb->op_ms = rp.timeout_ms;
    rb->connect_ms = rp.connect_ms;
    /* a larger value (a client with a larger KCACHE_REMOTE_MAX_ENTRY) is read, then a miss;
       a reply past this bound (a server streaming garbage) is a failure */
    rb->max_reply = (size_t)((rp.max_entry * 2 > ((uint64_t)64 << 20) ? rp.max_entry * 2 : ((uint64_t)64 << 20)) + 65536);
    rb->pid = (uint32_t)getpid();
    rb->remote = remote;
    rb->claim_ms = rp.claim_ms;
    rb->no_watch = rp.ro; /* (mode ro takes no claims: nothing to hear) */
    rb->is_signed = rp.is_signed;
    rb->ttl_s = rp.ttl_s;
    rb->prefix = rp.prefix;
    if (rb->tls && rp.tls_name && !(rb->tls_name = kcache_redis__strndup(rp.tls_name, strlen(rp.tls_name)))) {
        kcache_redis__say(why, cap, "out of memory");
        kcache_redis__free(rb);
        return NULL;
    }
    return rb;
}

static const kcache_remote_backend kcache_redis__backend = {&kcache_redis__ops, kcache_redis__open_shard, kcache_redis__free,
                                                            kcache_redis__identity, kcache_redis__premac};
KCACHE_API const kcache_remote_backend *kcache_redis_backend(void) { return &kcache_redis__backend; }

#endif /* KCACHE_REDIS__IMPLEMENTED */

/*
MIT License

Copyright (c) 2026 the kcache authors

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT
NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES
OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*/
