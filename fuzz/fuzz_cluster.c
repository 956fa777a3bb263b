/* fuzz_cluster.c - libFuzzer target for what a Redis Cluster node answers the Redis backend
 * (kcache_redis.h): MOVED and ASK error replies and CLUSTER SLOTS maps, as a hostile or broken
 * server may send them.
 *
 *   clang -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I. \
 *         -o build/fuzz_cluster fuzz/fuzz_cluster.c -lhiredis -lpthread
 *   build/fuzz_cluster -max_total_time=600 build/fuzz-work/cluster fuzz/corpus/cluster
 *
 * Input: one flag byte, then RESP2 replies (hiredis's reader parses them, as on a connection).
 * Flag 1: the node that answered is a unix socket (no host); else it is 10.0.0.1:7000. Each error
 * reply goes through the redirect parser and, when it is a MOVED/ASK, to the node table (as
 * kcache_redis__run does); each array is applied as a CLUSTER SLOTS map. Properties:
 *   - a redirect names a slot below 16384, a port in 1..65535 and a host inside the reply's text;
 *   - every node kept has a host of 1..255 bytes (an empty host became the answering node's,
 *     never NULL; with a unix-socket answerer no node came from one) and a port in 1..65535; no
 *     two nodes are the same host:port; at most KCACHE_REDIS__CLUSTER_NODES of them;
 *   - every slot names a kept node or none;
 *   - the map agrees with a decoder written here from CLUSTER SLOTS' documented shape
 *     ([start, end, [host, port, ...], ...]; "?" an unknown endpoint, "" or NULL the answerer's
 *     host; later entries win), as long as the node table never filled up. */
#define KCACHE_IMPLEMENTATION
#define KCACHE_REDIS
#include "kcache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

/* The decoder's map: each slot's node as host:port text ("" none). */
static char want[KCACHE_REDIS__CLUSTER_SLOTS][300];

static void want_map(const redisReply *r, const char *answer_host) {
    size_t i;
    for (i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *m, *h;
        char node[300];
        long long a, b, port;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3) continue;
        if (e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER) continue;
        m = e->element[2];
        if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 || m->element[1]->type != REDIS_REPLY_INTEGER) continue;
        h = m->element[0];
        a = e->element[0]->integer, b = e->element[1]->integer, port = m->element[1]->integer;
        if (a < 0 || b > 16383 || a > b || port < 1 || port > 65535) continue;
        if (h->type == REDIS_REPLY_NIL || (h->type == REDIS_REPLY_STRING && h->len == 0)) {
            if (!answer_host) continue;
            snprintf(node, sizeof node, "%s:%lld", answer_host, port);
        } else if (h->type == REDIS_REPLY_STRING) {
            if (h->len == 1 && h->str[0] == '?') continue;
            if (h->len > 255 || memchr(h->str, 0, h->len)) continue; /* (a NUL: the node's name would end there) */
            snprintf(node, sizeof node, "%.*s:%lld", (int)h->len, h->str, port);
        } else
            continue;
        for (; a <= b; a++) snprintf(want[a], sizeof want[a], "%s", node);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kcache_redis__server *rb;
    redisReader *rd;
    void *reply = NULL;
    int unix_answer, full = 0, maps = 0;
    unsigned i, j;
    if (size < 1) return 0;
    unix_answer = data[0] & 1;
    rb = (kcache_redis__server *)calloc(1, sizeof *rb);
    CHECK(rb);
    pthread_mutex_init(&rb->mutex, NULL);
    rb->port = 7000;
    if (!unix_answer) CHECK((rb->host = kcache_redis__strndup("10.0.0.1", 8)) != NULL);
    else CHECK((rb->path = kcache_redis__strndup("/run/redis.sock", 15)) != NULL);
    rb->slot = (uint8_t *)calloc(KCACHE_REDIS__CLUSTER_SLOTS, 1);
    rb->node = (kcache_redis__server **)calloc(KCACHE_REDIS__CLUSTER_NODES, sizeof *rb->node);
    CHECK(rb->slot && rb->node);
    memset(want, 0, sizeof want);
    rd = redisReaderCreate();
    CHECK(rd);
    redisReaderFeed(rd, (const char *)data + 1, size - 1);
    while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply) {
        const redisReply *r = (const redisReply *)reply;
        int ask = 0, port = 0;
        unsigned slot = 0;
        const char *host = NULL;
        size_t hlen = 0;
        if (r->type == REDIS_REPLY_ERROR && kcache_redis__cluster_redirect(r, &ask, &slot, &host, &hlen, &port)) {
            unsigned at;
            CHECK(slot < KCACHE_REDIS__CLUSTER_SLOTS && port >= 1 && port <= 65535);
            CHECK(host >= r->str && host + hlen <= r->str + r->len);
            at = kcache_redis__cluster_node(rb, rb, host, hlen, port);
            CHECK(at <= rb->nnodes);
            if (!hlen && unix_answer) CHECK(at == 0);
            if (at && !hlen) CHECK(strcmp(rb->node[at - 1]->host, "10.0.0.1") == 0 && rb->node[at - 1]->port == port);
            if (at && hlen && !memchr(host, 0, hlen)) CHECK(strlen(rb->node[at - 1]->host) == hlen && memcmp(rb->node[at - 1]->host, host, hlen) == 0);
            if (!at && rb->nnodes == KCACHE_REDIS__CLUSTER_NODES) full = 1;
        } else if (r->type == REDIS_REPLY_ARRAY) {
            if (!maps++) memset(rb->slot, 0, KCACHE_REDIS__CLUSTER_SLOTS); /* (the redirects' nodes stay; the decoder starts from an empty map) */
            kcache_redis__cluster_map(rb, rb, r);
            want_map(r, rb->host);
        }
        freeReplyObject(reply);
        reply = NULL;
    }
    redisReaderFree(rd);
    if (rb->nnodes == KCACHE_REDIS__CLUSTER_NODES) full = 1;
    CHECK(rb->nnodes <= KCACHE_REDIS__CLUSTER_NODES);
    for (i = 0; i < rb->nnodes; i++) {
        const kcache_redis__server *nd = rb->node[i];
        size_t n;
        CHECK(nd && nd->host && nd->port >= 1 && nd->port <= 65535);
        n = strlen(nd->host);
        CHECK(n >= 1 && n <= 255);
        for (j = 0; j < i; j++) CHECK(!(rb->node[j]->port == nd->port && strcmp(rb->node[j]->host, nd->host) == 0));
    }
    for (i = 0; i < KCACHE_REDIS__CLUSTER_SLOTS; i++) {
        char got[300] = "";
        CHECK(rb->slot[i] <= rb->nnodes);
        if (rb->slot[i]) snprintf(got, sizeof got, "%s:%d", rb->node[rb->slot[i] - 1]->host, rb->node[rb->slot[i] - 1]->port);
        if (maps && !full) CHECK(strcmp(got, want[i]) == 0);
    }
    kcache_redis__free(rb);
    return 0;
}
