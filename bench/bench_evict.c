/* bench_evict - what the store's eviction keeps: its hit ratio on a trace against a plain exact LRU
 * of the same byte size, simulated in the same run on the same trace.
 *
 *   Zipf 0.8, 1.0, 1.2 over 3,000 keys                           goal >= 0.98x the LRU's hit ratio
 *   one-time keys mixed with a hot set (a parameter sweep that
 *     compiles many kernels once each while 400 keys keep being used)        goal >= 1.0x
 *   a loop over 1.1x as many keys as the store holds (LRU's worst case: it hits nothing, so the
 *     figure is the two hit ratios)
 *
 * Each trace: 30,000 gets of 16 KiB entries, a put after each miss, an 8 MiB limit, on a fresh
 * store in $TMPDIR (default /tmp) through kcache_get / kcache_put, the memory LRU off (one entry of
 * one byte: every get but a repeat of the last key reads the store). The LRU holds as many of the
 * same entries (payload and header) as fit in 8 MiB. Also printed: how full the store is after the
 * trace (evicting in small steps keeps it just under its limit) and the puts' evictions. */
#define _POSIX_C_SOURCE 200809L
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYS 3000
#define GETS 30000
#define PAYLOAD (16u << 10)
#define LIMIT (8u << 20)
#define HOT 400        /* the scan-mixed trace's hot set */
#define SCAN_EVERY 3   /* ... and every third get a key never asked for before */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double unit_rand(uint64_t *s) { return (double)(splitmix(s) >> 11) * (1.0 / 9007199254740992.0); }

/* n draws from a Zipf(s) popularity over keys 0 .. nkeys-1 (key 0 the most popular). */
static void zipf_draws(uint32_t *out, int n, int nkeys, double s, uint64_t seed) {
    double *cdf = (double *)malloc(sizeof(double) * (size_t)nkeys), total = 0;
    int i;
    for (i = 0; i < nkeys; i++) cdf[i] = total += 1.0 / pow(i + 1, s);
    for (i = 0; i < n; i++) {
        double u = unit_rand(&seed) * total;
        int lo = 0, hi = nkeys - 1;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (cdf[mid] < u) lo = mid + 1; else hi = mid;
        }
        out[i] = (uint32_t)lo;
    }
    free(cdf);
}

/* A plain exact LRU of entries of one size, in at most limit bytes: its hit ratio on the trace. */
static double lru_hit_ratio(const uint32_t *trace, int n, uint32_t nkeys, uint64_t entry, uint64_t limit) {
    uint32_t *prev = (uint32_t *)malloc(sizeof(uint32_t) * nkeys), *next = (uint32_t *)malloc(sizeof(uint32_t) * nkeys);
    unsigned char *in = (unsigned char *)calloc(nkeys, 1);
    const uint32_t none = 0xffffffffu;
    uint32_t head = none, tail = none;
    uint64_t bytes = 0;
    int i, hits = 0;
    for (i = 0; i < n; i++) {
        uint32_t k = trace[i];
        if (in[k]) {
            hits++;
            if (head == k) continue;
            next[prev[k]] = next[k]; /* unlink (k is not the head, so it has a prev) */
            if (next[k] != none) prev[next[k]] = prev[k]; else tail = prev[k];
        } else {
            while (bytes + entry > limit && tail != none) {
                uint32_t v = tail;
                tail = prev[v];
                if (tail != none) next[tail] = none; else head = none;
                in[v] = 0;
                bytes -= entry;
            }
            in[k] = 1;
            bytes += entry;
        }
        prev[k] = none;
        next[k] = head;
        if (head != none) prev[head] = k;
        head = k;
        if (tail == none) tail = k;
    }
    free(prev);
    free(next);
    free(in);
    return (double)hits / n;
}

static void make_key(kcache_key *k, uint32_t id) {
    kcache_key_init(k, "evict");
    kcache_key_u64(k, "id", id);
}

typedef struct run_result { double hit_ratio, fill; uint64_t puts, evictions; } run_result;

/* The trace through a fresh store: a get per step, a put after each miss. */
static int store_run(const char *root, const char *name, const uint32_t *trace, int n, const unsigned char *payload, run_result *r) {
    char dir[4200];
    kcache_config cfg;
    kcache *kc;
    kcache_stats st;
    int i, hits = 0;
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    kcache_config_init(&cfg);
    cfg.dir = dir;
    cfg.max_size = LIMIT;
    cfg.mem_entries = 1; /* the memory LRU off, as far as it goes */
    cfg.mem_size = 1;
    cfg.debug = 0;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kcache_dir(kc)) { fprintf(stderr, "bench_evict: no store in %s\n", dir); return -1; }
    memset(r, 0, sizeof *r);
    for (i = 0; i < n; i++) {
        kcache_key k;
        const void *d;
        size_t sz;
        make_key(&k, trace[i]);
        if (kcache_get(kc, &k, &d, &sz) == KCACHE_OK) {
            hits++;
            kcache_release(kc, d);
        } else if (kcache_put(kc, &k, payload, PAYLOAD) == KCACHE_OK) {
            r->puts++;
        }
        kcache_key_free(&k);
    }
    kcache_get_stats(kc, &st);
    r->hit_ratio = (double)hits / n;
    r->evictions = st.evictions;
    r->fill = (double)st.disk_bytes / LIMIT;
    kcache_close(kc);
    rm_rf(dir);
    return 0;
}

int main(void) {
    static const double zipf_s[3] = {0.8, 1.0, 1.2};
    unsigned char *payload = (unsigned char *)malloc(PAYLOAD);
    uint32_t *trace = (uint32_t *)malloc(sizeof(uint32_t) * GETS);
    char root[4096];
    const char *tmpdir = getenv("TMPDIR");
    kcache_key k;
    uint64_t entry, fit;
    int t, i;
    snprintf(root, sizeof root, "%s/kcache-bench-evict-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!payload || !trace || !mkdtemp(root)) return 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 0; i < (int)PAYLOAD; i++) payload[i] = (unsigned char)(i * 131 + 7);
    make_key(&k, 0); /* every key's record has the same size */
    entry = entry_bytes(&k, PAYLOAD, root);
    kcache_key_free(&k);
    if (!entry) { fprintf(stderr, "bench_evict: cannot size an entry\n"); return 1; }
    fit = LIMIT / entry;
    printf("store of %u MiB: %llu entries of %llu bytes (16 KiB and the header); %d gets per trace, a put after each miss\n",
           LIMIT >> 20, (unsigned long long)fit, (unsigned long long)entry, GETS);
    printf("%-34s %8s %8s %9s  %s\n", "trace", "kcache", "LRU", "ratio", "(store full after / evictions per put)");
    for (t = 0; t < 5; t++) {
        char label[64];
        const char *goal;
        uint32_t nkeys;
        run_result r;
        double lru;
        if (t < 3) {
            zipf_draws(trace, GETS, KEYS, zipf_s[t], 0x21f0u + (uint64_t)t);
            snprintf(label, sizeof label, "Zipf %.1f, %d keys", zipf_s[t], KEYS);
            nkeys = KEYS;
            goal = "goal >= 0.98x";
        } else if (t == 3) {
            uint32_t fresh = HOT;
            zipf_draws(trace, GETS, HOT, 1.0, 0x5ca9u);
            for (i = SCAN_EVERY - 1; i < GETS; i += SCAN_EVERY) trace[i] = fresh++;
            snprintf(label, sizeof label, "%d hot (Zipf 1.0), 1/%d one-time", HOT, SCAN_EVERY);
            nkeys = fresh;
            goal = "goal >= 1.0x";
        } else {
            nkeys = (uint32_t)(fit + fit / 10);
            for (i = 0; i < GETS; i++) trace[i] = (uint32_t)i % nkeys;
            snprintf(label, sizeof label, "loop over %u keys (1.1x the store)", nkeys);
            goal = "";
        }
        lru = lru_hit_ratio(trace, GETS, nkeys, entry, LIMIT);
        if (store_run(root, "s", trace, GETS, payload, &r) != 0) return 1;
        if (lru > 0)
            printf("%-34s %8.3f %8.3f %8.3fx  (%.1f%% / %.2f)  %s\n", label, r.hit_ratio, lru, r.hit_ratio / lru, r.fill * 100,
                   r.puts ? (double)r.evictions / r.puts : 0.0, goal);
        else
            printf("%-34s %8.3f %8.3f %9s  (%.1f%% / %.2f)  LRU hits nothing here\n", label, r.hit_ratio, lru, "n/a", r.fill * 100,
                   r.puts ? (double)r.evictions / r.puts : 0.0);
    }
    rm_rf(root);
    free(trace);
    free(payload);
    return 0;
}
