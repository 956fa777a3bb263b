/* bench_index - what the per-unit index files cost, as ratios measured in the same run.
 *
 *   (a) disk hit, 64 KiB, the unit's index present  vs  the same with no index files at all
 *       (the i/ directory moved away between rounds, then removed): the index's share of a disk
 *       hit                                                                       goal <= 10 %
 *       and, for scale, a miss that reads that index (about what a hit would pay if it read it)
 *   (b) a miss's classification: kcache_get of an absent key whose unit has N = 1, 100, 1000
 *       overloads (the index read, checked and searched)  vs  a disk hit and a cold miss
 *   (c) kcache_explain on a unit with 1,000 overloads (unit + 6 fields of ~200 bytes each; the key
 *       differs from the closest overload in one field), best of several      goal <= 10 ms
 *   (d) a put (replacing one overload) into a unit that has 1,000 overloads vs into a unit with one
 *       (the index is read and rewritten whole under the store lock on every put)
 *
 * Everything runs in a temp directory on the filesystem of $TMPDIR (default /tmp). Timings are the
 * best of several rounds; the machine is noisy: read the ratios, not the absolute numbers.
 *
 * Build: make build/bench_index */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char root[4096];

static kcache *open_store(const char *name, uint32_t mem_entries) {
    kcache_config cfg;
    kcache *kc;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    kcache_config_init(&cfg);
    cfg.dir = dir;
    cfg.max_size = (uint64_t)1 << 30;
    cfg.mem_entries = mem_entries;
    cfg.mem_size = 0;
    cfg.debug = 0;
    cfg.trace = 0;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kcache_dir(kc)) { fprintf(stderr, "bench: no store\n"); exit(1); }
    return kc;
}

/* ~200 printable bytes from a seed text. */
static void text200(char *out, const char *seed, unsigned v) {
    size_t n;
    snprintf(out, 201, "%s %u ", seed, v);
    n = strlen(out);
    while (n < 200) { out[n] = (char)('a' + (n * 7 + v) % 26); n++; }
    out[200] = 0;
}

/* A realistic overload key: unit + 6 fields of ~200 bytes; overloads differ in options (i % 10)
   and defines (i / 10). */
static void key6(kcache_key *k, const char *unit, unsigned i) {
    char v[201];
    kcache_key_init(k, unit);
    text200(v, "kernel void k(global float *x) { x[get_global_id(0)] *= 2.0f; }", 0);
    kcache_key_str(k, "source", v);
    text200(v, "-cl-fast-relaxed-math -cl-mad-enable -DVARIANT=", i % 10);
    kcache_key_str(k, "options", v);
    text200(v, "-DN=", i / 10);
    kcache_key_str(k, "defines", v);
    text200(v, "pthread-Intel(R) Xeon(R) CPU", 0);
    kcache_key_str(k, "device", v);
    text200(v, "PoCL 3.1 LLVM 15", 0);
    kcache_key_str(k, "driver", v);
    text200(v, "+sse2,+sse4.1,+sse4.2,+avx,+avx2,+fma,+bmi2", 0);
    kcache_key_str(k, "host.cpu_features", v);
}

/* Best per-call time of `iters` disk-hit gets over the keys (a 1-entry LRU: every get reads). */
static double disk_hits(kcache *kc, kcache_key *keys, int nkeys, int iters) {
    const void *d;
    size_t n;
    double t0 = now_s();
    int i;
    for (i = 0; i < iters; i++) {
        if (kcache_get(kc, &keys[(i * 7) % nkeys], &d, &n) != KCACHE_OK) { fprintf(stderr, "bench: a hit missed\n"); exit(1); }
        kcache_release(kc, d);
    }
    return (now_s() - t0) / iters;
}

static double misses(kcache *kc, const kcache_key *k, int iters) {
    const void *d;
    size_t n;
    double t0 = now_s();
    int i;
    for (i = 0; i < iters; i++)
        if (kcache_get(kc, k, &d, &n) != KCACHE_MISS) { fprintf(stderr, "bench: an absent key hit\n"); exit(1); }
    return (now_s() - t0) / iters;
}

static double raw_reads(char **paths, int n, size_t size, int iters) {
    unsigned char *buf = (unsigned char *)malloc(size);
    double best = 1e9;
    int round, i;
    for (round = 0; round < 5; round++) {
        double t0 = now_s();
        for (i = 0; i < iters; i++) {
            struct stat st;
            int fd = open(paths[i % n], O_RDONLY);
            if (fd < 0 || fstat(fd, &st) != 0 || read(fd, buf, (size_t)st.st_size) != st.st_size) exit(1);
            close(fd);
        }
        if ((now_s() - t0) / iters < best) best = (now_s() - t0) / iters;
    }
    free(buf);
    return best;
}

int main(void) {
    const size_t size = 64 * 1024;
    unsigned char *payload = (unsigned char *)malloc(size);
    char *paths[100], ixdir[4200], hidden[4200];
    kcache_key keys[100], k;
    kcache *kc;
    double raw, with = 1e9, without = 1e9, ixread = 1e9, hit, t0;
    int i, round;
    const char *tmpdir = getenv("TMPDIR");
    static const unsigned ns[3] = {1, 100, 1000};
    double miss_n[3], cold = 1e9, explain_best = 1e9, build_s = 0;
    snprintf(root, sizeof root, "%s/kcache-bench-ix-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(root)) return 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 0; i < (int)size; i++) payload[i] = (unsigned char)(i * 131 + 7);

    /* ---- (a) the index's share of a disk hit ---- */
    for (i = 0; i < 100; i++) {
        char p[4200];
        FILE *f;
        snprintf(p, sizeof p, "%s/raw%03d", root, i);
        paths[i] = strdup(p);
        f = fopen(p, "wb");
        fwrite(payload, 1, size, f);
        fclose(f);
    }
    raw = raw_reads(paths, 100, size, 20000);
    kc = open_store("a", 1);
    for (i = 0; i < 100; i++) {
        key6(&keys[i], "bench.hit", (unsigned)i);
        if (kcache_put(kc, &keys[i], payload, size) != KCACHE_OK) return 1;
    }
    snprintf(ixdir, sizeof ixdir, "%s/a/i", root);
    snprintf(hidden, sizeof hidden, "%s/a/i.hidden", root);
    for (round = 0; round < 11; round++) { /* interleaved: with, without, with, ... */
        double t = disk_hits(kc, keys, 100, 10000);
        if (t < with) with = t;
        if (rename(ixdir, hidden) != 0) { perror("rename"); return 1; }
        t = disk_hits(kc, keys, 100, 10000);
        if (t < without) without = t;
        if (rename(hidden, ixdir) != 0) { perror("rename"); return 1; }
    }
    key6(&k, "bench.hit", 5); /* what reading the index costs, had a hit read it: a miss of this */
    kcache_key_str(&k, "extra", "-DABSENT"); /* unit reads it (and searches it) to say why */
    for (round = 0; round < 5; round++) {
        double t = misses(kc, &k, 2000);
        if (t < ixread) ixread = t;
    }
    kcache_key_free(&k);
    rm_rf(ixdir); /* and once more with the index files really gone */
    for (round = 0; round < 3; round++) {
        double t = disk_hits(kc, keys, 100, 10000);
        if (t < without) without = t;
    }
    hit = with;
    printf("floor: open+fstat+read+close of 64 KiB  : %8.2f us\n", raw * 1e6);
    printf("(a) disk hit 64 KiB, index present      : %8.2f us = %.3fx the floor\n", with * 1e6, with / raw);
    printf("    disk hit 64 KiB, no index files      : %8.2f us = %.3fx the floor\n", without * 1e6, without / raw);
    printf("    with / without                       : %8.3fx   index share of a disk hit: %+.1f %%   (goal <= 10 %%)\n",
           with / without, 100.0 * (with - without) / with);
    printf("    (for scale: a miss that reads that 100-overload index = %.2f us = %.0f %% of a disk hit; hits do not read it)\n",
           ixread * 1e6, 100.0 * ixread / with);
    for (i = 0; i < 100; i++) { kcache_key_free(&keys[i]); free(paths[i]); }
    kcache_close(kc);

    /* ---- (b) a miss's classification, N overloads; (c) explain on 1,000 ---- */
    kc = open_store("b", 1);
    {
        static const char small[1024] = {1};
        unsigned u;
        t0 = now_s();
        for (u = 0; u < 3; u++) {
            char unit[32];
            unsigned j;
            snprintf(unit, sizeof unit, "bench.n%u", ns[u]);
            for (j = 0; j < ns[u]; j++) {
                key6(&k, unit, j);
                if (kcache_put(kc, &k, small, sizeof small) != KCACHE_OK) return 1;
                kcache_key_free(&k);
            }
        }
        build_s = now_s() - t0;
        key6(&k, "bench.cold", 0); /* no index at all */
        for (round = 0; round < 5; round++) {
            double t = misses(kc, &k, 3000);
            if (t < cold) cold = t;
        }
        kcache_key_free(&k);
        for (u = 0; u < 3; u++) {
            char unit[32];
            int iters = ns[u] >= 1000 ? 200 : ns[u] >= 100 ? 1000 : 3000;
            snprintf(unit, sizeof unit, "bench.n%u", ns[u]);
            key6(&k, unit, 5);
            kcache_key_str(&k, "extra", "-DABSENT"); /* absent: one field more than overload 5 */
            miss_n[u] = 1e9;
            for (round = 0; round < 5; round++) {
                double t = misses(kc, &k, iters);
                if (t < miss_n[u]) miss_n[u] = t;
            }
            if (u == 2) { /* (c) */
                char buf[4096];
                size_t len = 0;
                for (round = 0; round < 20; round++) {
                    double t;
                    t0 = now_s();
                    len = kcache_explain(kc, &k, buf, sizeof buf);
                    t = now_s() - t0;
                    if (t < explain_best) explain_best = t;
                }
                if (len == 0 || strncmp(buf, "miss: a field differs: closest of 1000 stored overload(s)", 57) != 0)
                    printf("    (unexpected explanation: %s)\n", buf);
            }
            kcache_key_free(&k);
        }
    }
    {
        kcache_stats st;
        kcache_get_stats(kc, &st);
        if (st.misses_by_reason[KCACHE_REASON_FIELD] == 0) printf("    (warning: no miss was classified \"field\")\n");
    }
    printf("(b) miss, unit never stored (no index)   : %8.2f us = %.2fx a disk hit\n", cold * 1e6, cold / hit);
    {
        unsigned u;
        for (u = 0; u < 3; u++)
            printf("    miss, unit with %4u overload(s)      : %8.2f us = %.2fx a disk hit\n", ns[u], miss_n[u] * 1e6, miss_n[u] / hit);
    }
    printf("(c) kcache_explain, 1,000 overloads       : %8.3f ms = %.2fx the 10 ms goal (%.0fx a disk hit)\n", explain_best * 1e3,
           explain_best / 10e-3, explain_best / hit);

    /* ---- (d) a put into a big unit vs a small one: the same work but for the index's size (one
       overload replaced again and again, so neither index grows) ---- */
    {
        static const char small[1024] = {2};
        double big = 1e9, one = 1e9;
        kcache_key kb, k1;
        key6(&kb, "bench.n1000", 7);
        key6(&k1, "bench.n1", 0);
        for (round = 0; round < 7; round++) {
            t0 = now_s();
            for (i = 0; i < 30; i++) kcache_put(kc, &k1, small, sizeof small);
            if ((now_s() - t0) / 30 < one) one = (now_s() - t0) / 30;
            t0 = now_s();
            for (i = 0; i < 30; i++) kcache_put(kc, &kb, small, sizeof small);
            if ((now_s() - t0) / 30 < big) big = (now_s() - t0) / 30;
        }
        kcache_key_free(&kb);
        kcache_key_free(&k1);
        printf("(d) put 1 KiB, unit with 1 overload       : %8.2f us\n", one * 1e6);
        printf("    put 1 KiB, unit with 1,000 overloads  : %8.2f us = %.2fx   (building the three units: %.2f s for 1,101 puts)\n",
               big * 1e6, big / one, build_s);
    }
    kcache_close(kc);
    rm_rf(root);
    free(payload);
    return 0;
}
