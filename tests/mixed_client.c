/* tests/mixed_client.c - one client of tests/test_mixed_04.sh, built against 0.4's kcache.h and
 * against this one: `mixed_client build MS|wait URL ID` gets key ID with kcache_get_or_build (a
 * build of MS milliseconds; signed claims, memory only) and prints one line: the version, its role,
 * the status, builds run here, build waits, and whether the payload is right. */
#define KCACHE_IMPLEMENTATION
#define KCACHE_REDIS
#define KCACHE_HMAC_OPENSSL
#include "kcache.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_ms, g_builds;
static int mixed_build(void *user, void **out, size_t *out_size) {
    struct timespec ts;
    (void)user;
    g_builds++;
    ts.tv_sec = g_ms / 1000;
    ts.tv_nsec = (long)(g_ms % 1000) * 1000000;
    nanosleep(&ts, NULL);
    if ((*out = KCACHE_MALLOC(100)) == NULL) return 1;
    memset(*out, 7, 100);
    *out_size = 100;
    return 0;
}
int main(int argc, char **argv) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_key k;
    kcache_stats st;
    kcache_status s;
    const void *d = NULL;
    size_t n = 0;
    if (argc != 5) { fprintf(stderr, "usage: mixed_client build|wait MS URL ID\n"); return 2; }
    g_ms = atoi(argv[2]);
    kcache_config_init(&cfg);
    cfg.no_env = 1;
    cfg.persistent = 0;
    cfg.remote = argv[3];
    cfg.remote_secret = "mixed-versions-secret";
    cfg.build_wait_ms = 60000;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) return 1;
    kcache_key_init(&k, "mixed");
    kcache_key_str(&k, "id", argv[4]);
    s = kcache_get_or_build(kc, &k, mixed_build, NULL, &d, &n);
    kcache_get_stats(kc, &st);
    printf("%s %s: %s, builds %d, waits %llu, payload %s\n", KCACHE_VERSION, argv[1], kcache_strerror(s), g_builds,
           (unsigned long long)st.build_waits, s == KCACHE_OK && n == 100 && ((const unsigned char *)d)[0] == 7 ? "right" : "wrong");
    if (d) kcache_release(kc, d);
    kcache_key_free(&k);
    kcache_close(kc);
    return 0;
}
