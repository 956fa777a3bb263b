/* kcache_numba's C part: kcache.h compiled once, with a few flat functions that ctypes can call
   without mirroring kcache_key's layout in Python. A request owns its key from the lookup to the
   put or drop (kcache_get_or_claim needs the key unchanged until the ticket ends). */
#define KCACHE_IMPLEMENTATION
#ifdef KCACHE_NUMBA_REDIS
#include "kcache_redis.h"
#else
#include "kcache.h"
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KCACHE_NUMBA_REDIS
#define KN_REDIS 1
#else
#define KN_REDIS 0
#endif

typedef struct kn_req {
    kcache_key key;
    kcache_ticket *ticket;
    int claimed; /* 1 between a KCACHE_CLAIMED lookup and the put or drop */
} kn_req;

int kn_has_redis(void) { return KN_REDIS; }
int kn_claimed_status(void) { return (int)KCACHE_CLAIMED; }

/* Opens with kcache's defaults and environment. Returns NULL when kcache keeps nothing anywhere
   (caching off, no usable store and no remote): numba's own cache is then the better one; why
   says the reason. */
kcache *kn_open(char *why, size_t cap)
{
    kcache *kc = NULL;
    if (kcache_open(&kc, NULL) != KCACHE_OK) {
        if (cap) snprintf(why, cap, "kcache_open failed");
        return NULL;
    }
    if (!kcache_store_in_use(kc, why, cap) && !kcache_remote_in_use(kc, NULL, 0)) {
        kcache_close(kc);
        return NULL;
    }
    return kc;
}

void kn_close(kcache *kc) { kcache_close(kc); }

kn_req *kn_req_new(const char *unit)
{
    kn_req *r = (kn_req *)calloc(1, sizeof *r);
    if (!r) return NULL;
    kcache_key_init(&r->key, unit); /* an error stays in the key: it never matches */
    return r;
}

int kn_req_str(kn_req *r, const char *name, const char *value, size_t len)
{
    return (int)kcache_key_bytes(&r->key, name, value, len);
}

int kn_req_file(kn_req *r, const char *name, const char *path)
{
    return (int)kcache_key_file(&r->key, name, path);
}

/* KCACHE_OK: *data and *size hold the payload (kn_release it), *origin says from where;
   KCACHE_CLAIMED: build, then kn_put or kn_drop. */
int kn_get_or_claim(kcache *kc, kn_req *r, const void **data, size_t *size, int *origin)
{
    kcache_origin o = KCACHE_FROM_MEMORY;
    kcache_status s = kcache_get_or_claim(kc, &r->key, data, size, &o, &r->ticket);
    *origin = (int)o;
    r->claimed = s == KCACHE_CLAIMED;
    return (int)s;
}

void kn_release(kcache *kc, const void *data) { kcache_release(kc, data); }

/* Stores through the claim when this request holds one, else as kcache_put (an entry that could
   not be rebuilt is replaced by the new compile). */
int kn_put(kcache *kc, kn_req *r, const void *data, size_t size)
{
    kcache_status s;
    if (r->claimed) s = kcache_put_claimed(kc, r->ticket, data, size);
    else s = kcache_put(kc, &r->key, data, size);
    r->claimed = 0;
    return (int)s;
}

void kn_drop(kcache *kc, kn_req *r)
{
    if (r->claimed) kcache_drop_claim(kc, r->ticket);
    r->claimed = 0;
}

/* Frees the request; a claim still held is dropped first, so no path leaves one behind. */
void kn_req_free(kcache *kc, kn_req *r)
{
    if (!r) return;
    kn_drop(kc, r);
    kcache_key_free(&r->key);
    free(r);
}

const char *kn_strerror(int s) { return kcache_strerror((kcache_status)s); }
