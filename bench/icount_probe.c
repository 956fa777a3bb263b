/* bench/bench_icount.sh's probe: a memory hit, a disk hit or a put, N times, on a store of its own */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    const char *mode, *dir;
    long n, i;
    static unsigned char payload[65536];
    kcache_config cfg;
    kcache *kc;
    kcache_key k;
    const void *d; size_t sz;
    if (argc != 4) { fprintf(stderr, "usage: icount_probe mem|disk|put DIR N\n"); return 2; }
    mode = argv[1]; dir = argv[2]; n = atol(argv[3]);
    kcache_config_defaults(&cfg);
    cfg.dir = dir;
    cfg.mem_entries = strcmp(mode, "disk") == 0 ? 1 : 1024;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return 1;
    kcache_key_init(&k, "u");
    kcache_key_str(&k, "source", "abc");
    memset(payload, 7, sizeof payload);
    kcache_put(kc, &k, payload, sizeof payload);
    kcache_key k2; kcache_key_init(&k2, "u"); kcache_key_str(&k2, "source", "abd");
    kcache_put(kc, &k2, payload, sizeof payload);
    for (i = 0; i < n; i++) {
        if (strcmp(mode, "put") == 0) {
            kcache_key kk; kcache_key_init(&kk, "u"); kcache_key_u64(&kk, "i", (uint64_t)i);
            kcache_put(kc, &kk, payload, sizeof payload); kcache_key_free(&kk);
        } else if (kcache_get(kc, strcmp(mode, "disk") == 0 && (i & 1) ? &k2 : &k, &d, &sz) == KCACHE_OK) kcache_release(kc, d);
    }
    kcache_key_free(&k);
    kcache_close(kc);
    return 0;
}
