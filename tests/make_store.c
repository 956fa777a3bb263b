/* make_store.c - makes kcache stores for tests/test_inspect_store.sh with the real library.
 *
 *   make_store put    DIR UNIT SIZE FIELD...   stores SIZE payload bytes under the key
 *   make_store get    DIR UNIT FIELD...        looks the key up: prints "hit SIZE" or the miss
 *                                              explained ("miss: ..."), exit 0 either way
 *   make_store remove DIR UNIT FIELD...        removes the key
 *   make_store age    DIR UNIT SECONDS FIELD... white-box: records the key's last use SECONDS ago
 *                                              (for the store commands' --evict-older-than, --trim)
 *   make_store account DIR DELTA               white-box damage: adds DELTA (may be negative)
 *                                              to config.file's accounted bytes and reseals
 *                                              its checksum, so that only a comparison with
 *                                              the entries can tell
 *
 * FIELD is s:NAME=TEXT (a string), u:NAME=N (a u64), b:NAME=N (N binary bytes), f:NAME=PATH
 * (a dependency file) or host (the host tuple).  The configuration is kcache_config_init's
 * (so KCACHE_TRACE, KCACHE_MAX_SIZE, KCACHE_STAMP... apply) with dir = DIR.
 *
 * Build: cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -I. -o build/make_store \
 *            tests/make_store.c -lpthread
 * Exit status: 0 done, 1 the library failed, 2 usage. */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"

static int add_field(kcache_key *k, const char *spec)
{
    const char *eq = strchr(spec, '=');
    char name[KCACHE_FIELD_NAME_MAX];
    size_t nl;
    if (strcmp(spec, "host") == 0) return kcache_key_host(k) == KCACHE_OK ? 0 : -1;
    if (!eq || spec[1] != ':' || (nl = (size_t)(eq - spec - 2)) == 0 || nl >= sizeof name) return -1;
    memcpy(name, spec + 2, nl);
    name[nl] = 0;
    switch (spec[0]) {
    case 's': return kcache_key_str(k, name, eq + 1) == KCACHE_OK ? 0 : -1;
    case 'u': return kcache_key_u64(k, name, strtoull(eq + 1, NULL, 10)) == KCACHE_OK ? 0 : -1;
    case 'f': return kcache_key_file(k, name, eq + 1) == KCACHE_OK ? 0 : -1;
    case 'b': {
        size_t n = (size_t)strtoull(eq + 1, NULL, 10), i;
        unsigned char *p = (unsigned char *)malloc(n ? n : 1);
        kcache_status s;
        if (!p) return -1;
        for (i = 0; i < n; i++) p[i] = (unsigned char)(i * 7 + 1);
        s = kcache_key_bytes(k, name, p, n);
        free(p);
        return s == KCACHE_OK ? 0 : -1;
    }
    default: return -1;
    }
}

static int account(const char *dir, long long delta)
{
    char path[4096];
    unsigned char h[KCACHE__ACCT_HEADER];
    int fd;
    snprintf(path, sizeof path, "%s/config.file", dir);
    fd = open(path, O_RDWR);
    if (fd < 0 || pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) { perror(path); return 1; }
    kcache__put_u64(h + 24, kcache__get_u64(h + 24) + (uint64_t)delta);
    kcache__put_u64(h + KCACHE__ACCT_SUMMED, kcache_hash(h, KCACHE__ACCT_SUMMED).lo);
    if (pwrite(fd, h, sizeof h, 0) != (ssize_t)sizeof h) { perror(path); close(fd); return 1; }
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    kcache_config cfg;
    kcache *kc;
    kcache_key k;
    kcache_status s;
    const char *op;
    int i, first, rc = 0;
    if (argc >= 4 && strcmp(argv[1], "account") == 0) return account(argv[2], strtoll(argv[3], NULL, 10));
    if (argc < 4) { fprintf(stderr, "usage: make_store put|get|remove DIR UNIT [SIZE] FIELD...\n"); return 2; }
    op = argv[1];
    first = strcmp(op, "put") == 0 || strcmp(op, "age") == 0 ? 5 : 4;
    if (argc < first) { fprintf(stderr, "make_store: put needs a SIZE\n"); return 2; }
    kcache_config_init(&cfg);
    cfg.dir = argv[2];
    if (kcache_open(&kc, &cfg) != KCACHE_OK) { fprintf(stderr, "make_store: kcache_open failed\n"); return 1; }
    if (!kcache_dir(kc)) { fprintf(stderr, "make_store: %s is not usable as a store\n", argv[2]); kcache_close(kc); return 1; }
    kcache_key_init(&k, argv[3]);
    for (i = first; i < argc; i++)
        if (add_field(&k, argv[i]) != 0) { fprintf(stderr, "make_store: bad field '%s'\n", argv[i]); kcache_key_free(&k); kcache_close(kc); return 2; }
    if (strcmp(op, "put") == 0) {
        size_t n = (size_t)strtoull(argv[4], NULL, 10), j;
        unsigned char *p = (unsigned char *)malloc(n ? n : 1);
        if (!p) rc = 1;
        else {
            for (j = 0; j < n; j++) p[j] = (unsigned char)(j * 13 + 5);
            s = kcache_put(kc, &k, p, n);
            if (s != KCACHE_OK) { fprintf(stderr, "make_store: put: %s\n", kcache_strerror(s)); rc = 1; }
            free(p);
        }
    } else if (strcmp(op, "get") == 0) {
        const void *data;
        size_t size;
        s = kcache_get(kc, &k, &data, &size);
        if (s == KCACHE_OK) { printf("hit %zu\n", size); kcache_release(kc, data); }
        else {
            char why[1024];
            kcache_explain(kc, &k, why, sizeof why);
            printf("%s\n", why);
        }
    } else if (strcmp(op, "age") == 0) {
        kcache__store *st = kc->store;
        kcache__store_ev ev;
        uint64_t *slot;
        int64_t when = kcache__now_ns() - (int64_t)strtoll(argv[4], NULL, 10) * 1000000000;
        memset(&ev, 0, sizeof ev);
        if (k.error != KCACHE_OK || kcache__store_lock(st) != KCACHE_OK) rc = 1;
        else {
            if (kcache__store_begin(st, &ev) == KCACHE_OK) {
                if ((slot = kcache__slot_find(st, k.digest)) != NULL) kcache__sl_set(slot, KCACHE__SL_USE, (uint64_t)when & ~(uint64_t)KCACHE__USE_MARK);
                else { fprintf(stderr, "make_store: age: the key is not stored\n"); rc = 1; }
                kcache__store_end(st);
            }
            kcache__store_unlock(st);
        }
    } else if (strcmp(op, "remove") == 0) {
        s = kcache_remove(kc, &k);
        if (s != KCACHE_OK && s != KCACHE_MISS) { fprintf(stderr, "make_store: remove: %s\n", kcache_strerror(s)); rc = 1; }
    } else {
        fprintf(stderr, "make_store: unknown operation '%s'\n", op);
        rc = 2;
    }
    kcache_key_free(&k);
    kcache_close(kc);
    return rc;
}
