/* tests/test_hash.c - kcache_hash (XXH3-128) against the reference tool xxh128sum, on every
 * implementation path this CPU runs (scalar, SSE2, AVX2 on x86-64; scalar, NEON on AArch64),
 * one-shot and streaming.
 *
 * Build: cc -std=c99 -O2 -I. tests/test_hash.c -o build/test_hash   (needs xxh128sum at run time:
 * Debian package "xxhash"; without it the test FAILS, it does not skip, except under `make check`
 * (KT_SKIP_MISSING=1), where a few digests xxh128sum printed once (test_known_digests) stand in). */
#define _POSIX_C_SOURCE 200809L
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#define MAX_SMALL 1024 /* every length 0..MAX_SMALL */
#define N_BIG 4
#define N_INPUTS (MAX_SMALL + 1 + N_BIG)
#define BIG_MAX ((size_t)10 * 1024 * 1024 + 3)
#define DATA_SIZE (BIG_MAX + 256)

static const size_t big_lens[N_BIG] = { 4096, 64 * 1024, 1024 * 1024, BIG_MAX };
static const char *const path_names[KCACHE__HASH_PATHS] = { "scalar", "sse2", "avx2", "neon", "avx512" };

static unsigned char *data;          /* DATA_SIZE deterministic pseudo-random bytes */
static size_t in_len[N_INPUTS];      /* input i: in_len[i] bytes at data + in_off[i] */
static size_t in_off[N_INPUTS];
static char expect[N_INPUTS][33];    /* what xxh128sum printed for input i ("" if nothing) */
static int have_expect;

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rng(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void make_inputs(void)
{
    size_t i;
    data = (unsigned char *)malloc(DATA_SIZE);
    if (!data) { printf("out of memory\n"); exit(2); }
    for (i = 0; i < DATA_SIZE; i += 8) {
        uint64_t r = rng();
        size_t j;
        for (j = 0; j < 8 && i + j < DATA_SIZE; j++) data[i + j] = (unsigned char)(r >> (8 * j));
    }
    for (i = 0; i < N_INPUTS; i++) {
        in_len[i] = i <= MAX_SMALL ? i : big_lens[i - MAX_SMALL - 1];
        in_off[i] = (i * 37) % 251; /* varied content and alignment */
    }
}

/* Quotes s for a POSIX shell (single quotes; ' becomes '\''). */
static void shell_quote(char *out, size_t cap, const char *s)
{
    size_t o = 0;
    if (cap < 3) { if (cap) out[0] = '\0'; return; }
    out[o++] = '\'';
    for (; *s && o + 6 < cap; s++) {
        if (*s == '\'') { memcpy(out + o, "'\\''", 4); o += 4; }
        else out[o++] = *s;
    }
    out[o++] = '\'';
    out[o] = '\0';
}

/* Writes every input as a file into one temporary directory, runs xxh128sum once over all of
 * them, records its answers in expect[], and removes the directory. */
static void run_xxh128sum(void)
{
    const char *tmp = getenv("TMPDIR");
    char dir[512], qdir[1600], cmd[2048], line[1024], path[600];
    size_t i, parsed = 0;
    FILE *f;
    int rc;

    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(dir, sizeof dir, "%s/kcache_test_hash_XXXXXX", tmp);
    if (!mkdtemp(dir)) { KT_FAILF("mkdtemp(%s) failed", dir); return; }
    for (i = 0; i < N_INPUTS; i++) {
        snprintf(path, sizeof path, "%s/in%04u", dir, (unsigned)i);
        f = fopen(path, "wb");
        if (!f || (in_len[i] && fwrite(data + in_off[i], 1, in_len[i], f) != in_len[i])) {
            KT_FAILF("cannot write %s", path);
            if (f) fclose(f);
            goto cleanup;
        }
        if (fclose(f) != 0) { KT_FAILF("cannot write %s", path); goto cleanup; }
    }
    shell_quote(qdir, sizeof qdir, dir);
    /* stderr dropped: xxh128sum draws progress lines there for big files */
    snprintf(cmd, sizeof cmd, "cd %s && xxh128sum -- in* 2>/dev/null", qdir);
    f = popen(cmd, "r");
    if (!f) { KT_FAILF("cannot run xxh128sum (popen failed)"); goto cleanup; }
    while (fgets(line, sizeof line, f)) {
        unsigned idx;
        char name[64];
        size_t k;
        /* "<32 hex>  in0123" */
        for (k = 0; k < 32 && strchr("0123456789abcdef", line[k]) && line[k]; k++) {}
        if (k != 32 || line[32] != ' ' || line[33] != ' ' || sscanf(line + 34, "in%4u%63s", &idx, name) != 1 ||
            idx >= N_INPUTS) {
            line[strcspn(line, "\n")] = '\0';
            printf("# xxh128sum said: %s\n", line);
            continue;
        }
        memcpy(expect[idx], line, 32);
        expect[idx][32] = '\0';
        parsed++;
    }
    rc = pclose(f);
    if (rc != 0)
        KT_FAILF("xxh128sum failed or is missing (install the 'xxhash' package): shell status %d%s", rc,
                 WIFEXITED(rc) && WEXITSTATUS(rc) == 127 ? " (command not found)" : "");
    if (parsed != N_INPUTS) KT_FAILF("xxh128sum gave %u of %u digests", (unsigned)parsed, (unsigned)N_INPUTS);
    have_expect = rc == 0 && parsed == N_INPUTS;
cleanup:
    for (i = 0; i < N_INPUTS; i++) {
        snprintf(path, sizeof path, "%s/in%04u", dir, (unsigned)i);
        unlink(path);
    }
    if (rmdir(dir) != 0) KT_FAILF("cannot remove %s", dir);
}

static int hash_matches(kcache_hash128 h, const char *want)
{
    char hex[33];
    kcache_hash_hex(h, hex);
    return strcmp(hex, want) == 0;
}

/* xxh128sum over 0..1024 bytes and 4 KiB .. 10 MiB+3, one-shot, on every supported path */
static void test_oneshot_vs_xxh128sum(void)
{
    int path, bad;
    size_t i;
    run_xxh128sum();
    if (!have_expect) return;
    printf("# paths supported here:");
    for (path = 0; path < KCACHE__HASH_PATHS; path++)
        if (kcache__hash_path_supported(path)) printf(" %s", path_names[path]);
    printf("; auto picks %s for long inputs\n", path_names[kcache__hash_resolve(KCACHE__HASH_AUTO, BIG_MAX)]);
    for (path = 0; path < KCACHE__HASH_PATHS; path++) {
        if (!kcache__hash_path_supported(path)) continue;
        for (bad = 0, i = 0; i < N_INPUTS && bad < 5; i++) {
            kcache_hash128 h = kcache__hash_with_path(path, data + in_off[i], in_len[i]);
            if (!hash_matches(h, expect[i])) {
                char hex[33];
                kcache_hash_hex(h, hex);
                KT_FAILF("path %s, %u bytes: %s, xxh128sum %s", path_names[path], (unsigned)in_len[i], hex, expect[i]);
                bad++;
            }
        }
    }
    for (bad = 0, i = 0; i < N_INPUTS && bad < 5; i++)
        if (!hash_matches(kcache_hash(data + in_off[i], in_len[i]), expect[i])) {
            KT_FAILF("kcache_hash, %u bytes: differs from xxh128sum", (unsigned)in_len[i]);
            bad++;
        }
    KT_CHECK(hash_matches(kcache_hash(NULL, 0), expect[0])); /* NULL is fine for 0 bytes */
}

/* Streams p[0..len) in chunks (sizes from `chunks`, cycled; a 0 entry means random 0..1100)
 * on `path` and returns the final digest; checks final twice gives the same. */
static kcache_hash128 stream(int path, const unsigned char *p, size_t len, const size_t *chunks, size_t nchunks)
{
    kcache_hash_state st;
    kcache_hash128 a, b;
    size_t done = 0, c = 0;
    kcache__hash_init_path(&st, path);
    while (done < len) {
        size_t k = chunks[c++ % nchunks];
        if (k == 0) k = (size_t)(rng() % 1101);
        if (k > len - done) k = len - done;
        kcache_hash_update(&st, k ? p + done : NULL, k);
        done += k;
    }
    a = kcache_hash_final(&st);
    b = kcache_hash_final(&st);
    KT_CHECK_MSG(a.lo == b.lo && a.hi == b.hi, "final twice differs (path %s, %u bytes)", path_names[path], (unsigned)len);
    return a;
}

/* streaming in odd chunk sizes equals one-shot, for many lengths, on every path */
static void test_streaming_chunks(void)
{
    static const size_t sizes[] = { 1, 3, 7, 63, 64, 65, 239, 240, 241, 255, 256, 1023, 0 /* random */ };
    static const size_t mixed[] = { 1, 255, 3, 1023, 64, 0, 7, 241, 65, 0 };
    static const size_t long_lens[] = { 2047, 2048, 2049, 4096 + 1, 16 * 1024 - 1, 64 * 1024 + 5, 1024 * 1024 + 17 };
    int path, bad;
    size_t len, s, i;
    for (path = 0; path < KCACHE__HASH_PATHS; path++) {
        if (!kcache__hash_path_supported(path)) continue;
        bad = 0;
        for (len = 0; len <= 1100 && bad < 5; len++) {
            const unsigned char *p = data + (len % 61);
            kcache_hash128 want = kcache__hash_with_path(KCACHE__HASH_SCALAR, p, len);
            for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                kcache_hash128 got = stream(path, p, len, &sizes[s], 1);
                if (got.lo != want.lo || got.hi != want.hi) {
                    KT_FAILF("path %s, %u bytes in chunks of %u: differs from one-shot", path_names[path],
                             (unsigned)len, (unsigned)sizes[s]);
                    bad++;
                }
            }
            {
                kcache_hash128 got = stream(path, p, len, mixed, sizeof mixed / sizeof mixed[0]);
                if (got.lo != want.lo || got.hi != want.hi) {
                    KT_FAILF("path %s, %u bytes in mixed chunks: differs from one-shot", path_names[path], (unsigned)len);
                    bad++;
                }
            }
        }
        for (i = 0; i < sizeof long_lens / sizeof long_lens[0] && bad < 5; i++) {
            const unsigned char *p = data + 13;
            kcache_hash128 want = kcache__hash_with_path(KCACHE__HASH_SCALAR, p, long_lens[i]);
            for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                kcache_hash128 got = stream(path, p, long_lens[i], &sizes[s], 1);
                if (got.lo != want.lo || got.hi != want.hi) {
                    KT_FAILF("path %s, %u bytes in chunks of %u: differs from one-shot", path_names[path],
                             (unsigned)long_lens[i], (unsigned)sizes[s]);
                    bad++;
                }
            }
        }
        /* the largest input, streamed in random chunks, against xxh128sum itself */
        if (have_expect) {
            size_t big = N_INPUTS - 1;
            KT_CHECK_MSG(hash_matches(stream(path, data + in_off[big], in_len[big], mixed, sizeof mixed / sizeof mixed[0]),
                                      expect[big]),
                         "path %s: streamed 10 MiB+3 differs from xxh128sum", path_names[path]);
        }
    }
}

/* final in the middle of a stream is the digest of the prefix, and the state goes on; a copy of
 * the state forks the digest; the public init/update/final (auto path) agree too */
static void test_streaming_final_midway(void)
{
    const size_t total = 6000;
    const unsigned char *p = data + 5;
    int path;
    for (path = KCACHE__HASH_AUTO; path < KCACHE__HASH_PATHS; path++) {
        kcache_hash_state st, fork;
        size_t done = 0, forked_at = 0;
        int bad = 0;
        if (path != KCACHE__HASH_AUTO && !kcache__hash_path_supported(path)) continue;
        if (path == KCACHE__HASH_AUTO) kcache_hash_init(&st);
        else kcache__hash_init_path(&st, path);
        memset(&fork, 0, sizeof fork);
        while (done < total && bad < 5) {
            size_t k = (size_t)(rng() % 300);
            kcache_hash128 got, want;
            if (k > total - done) k = total - done;
            kcache_hash_update(&st, p + done, k);
            done += k;
            got = kcache_hash_final(&st);
            want = kcache_hash(p, done);
            if (got.lo != want.lo || got.hi != want.hi) {
                KT_FAILF("path %s: final after %u bytes differs from one-shot",
                         path < 0 ? "auto" : path_names[path], (unsigned)done);
                bad++;
            }
            if (!forked_at && done > 1500) { fork = st; forked_at = done; }
        }
        /* the fork continues with different data */
        kcache_hash_update(&fork, data + 9000, 777);
        {
            unsigned char *cat = (unsigned char *)malloc(forked_at + 777);
            kcache_hash128 got = kcache_hash_final(&fork), want;
            if (!cat) { KT_FAILF("out of memory"); return; }
            memcpy(cat, p, forked_at);
            memcpy(cat + forked_at, data + 9000, 777);
            want = kcache_hash(cat, forked_at + 777);
            KT_CHECK_MSG(got.lo == want.lo && got.hi == want.hi, "path %s: copied state gives a wrong digest",
                         path < 0 ? "auto" : path_names[path]);
            free(cat);
        }
    }
}

static void test_hex(void)
{
    kcache_hash128 h;
    char hex[34];
    memset(hex, 'x', sizeof hex);
    h.lo = 0x0123456789abcdefULL;
    h.hi = 0xfedcba9876543210ULL;
    kcache_hash_hex(h, hex);
    KT_CHECK_STR(hex, "fedcba98765432100123456789abcdef");
    KT_CHECK(hex[33] == 'x'); /* writes exactly 33 chars */
    h.lo = 0;
    h.hi = 0xf;
    kcache_hash_hex(h, hex);
    KT_CHECK_STR(hex, "000000000000000f0000000000000000");
    if (have_expect) { /* the digest of the empty input, as the tool prints it */
        kcache_hash_hex(kcache_hash("", 0), hex);
        KT_CHECK_STR(hex, expect[0]);
    }
}

/* a path this machine lacks is never run: the request falls back to scalar (same digest) */
static void test_unsupported_path(void)
{
    int path;
    kcache_hash128 want = kcache__hash_with_path(KCACHE__HASH_SCALAR, data, 5000);
    for (path = -3; path < KCACHE__HASH_PATHS + 2; path++) {
        kcache_hash128 got;
        kcache_hash_state st;
        if (path >= 0 && path < KCACHE__HASH_PATHS && kcache__hash_path_supported(path)) continue;
        if (path == KCACHE__HASH_AUTO) continue;
        got = kcache__hash_with_path(path, data, 5000);
        KT_CHECK_MSG(got.lo == want.lo && got.hi == want.hi, "path %d: wrong digest", path);
        kcache__hash_init_path(&st, path);
        kcache_hash_update(&st, data, 5000);
        got = kcache_hash_final(&st);
        KT_CHECK_MSG(got.lo == want.lo && got.hi == want.hi, "path %d, streaming: wrong digest", path);
    }
    KT_CHECK(kcache__hash_path_supported(KCACHE__HASH_SCALAR));
    KT_CHECK(!kcache__hash_path_supported(KCACHE__HASH_PATHS));
}

/* digests xxh128sum printed for byte i = ((i * 31 + 7) >> 3 ^ i) & 0xff, i < len: short, mid-size
   and long inputs on each side of XXH3's length boundaries, one-shot and streamed in 1000-byte
   pieces on whatever path kcache picks here (what `make check` has when xxh128sum is missing) */
static void test_known_digests(void)
{
    static const struct { size_t len; const char *hex; } known[] = {
        { 0, "99aa06d3014798d86001c324468d497f" },      { 1, "a6cd5e9392000f6ac44bdff4074eecdb" },
        { 3, "c66e469253c3351f7c00a3d0705b0f43" },      { 16, "4fb937f483bb532102f4551d4bf0c18c" },
        { 17, "4186ef9c8fb81a58a9122dbf0eb2bc8b" },     { 128, "dcd763e97bb0b06442204d4ce93d2250" },
        { 129, "69fcbe2a486e4efc0783f82f2433af3c" },    { 240, "d8b6a4b4c466fa318ff16bb8a3505030" },
        { 241, "9fa1c9775030008a53521dc20a8b86dc" },    { 1024, "e64a08c59a1b288580da91959895df68" },
        { 100000, "1adb65d7a5bebb7b1f1756524e523d19" }, { 1048576, "b6f42c43b2118a198be88b45011e424b" },
    };
    size_t i, k, n = known[sizeof known / sizeof known[0] - 1].len, at;
    unsigned char *p = (unsigned char *)malloc(n);
    if (!p) { KT_FAILF("malloc"); return; }
    for (k = 0; k < n; k++) p[k] = (unsigned char)(((k * 31 + 7) >> 3 ^ k) & 0xff);
    for (i = 0; i < sizeof known / sizeof known[0]; i++) {
        kcache_hash_state st;
        char hex[33];
        kcache_hash_hex(kcache_hash(p, known[i].len), hex);
        KT_CHECK_MSG(strcmp(hex, known[i].hex) == 0, "%u bytes: %s, xxh128sum %s", (unsigned)known[i].len, hex, known[i].hex);
        kcache_hash_init(&st);
        for (at = 0; at < known[i].len; at += 1000)
            kcache_hash_update(&st, p + at, known[i].len - at < 1000 ? known[i].len - at : 1000);
        kcache_hash_hex(kcache_hash_final(&st), hex);
        KT_CHECK_MSG(strcmp(hex, known[i].hex) == 0, "%u bytes streamed: %s, xxh128sum %s", (unsigned)known[i].len, hex, known[i].hex);
    }
    free(p);
}

/* Whether xxh128sum can be run (`make check` may lack it). */
static int have_xxh128sum(void)
{
    return system("command -v xxh128sum >/dev/null 2>&1") == 0;
}

int main(void)
{
    const char *skip_missing = getenv("KT_SKIP_MISSING");
    make_inputs();
    if (skip_missing && strcmp(skip_missing, "1") == 0 && !have_xxh128sum())
        KT_SKIP(test_oneshot_vs_xxh128sum, "no xxh128sum on PATH (Debian package xxhash)");
    else
        KT_RUN(test_oneshot_vs_xxh128sum);
    KT_RUN(test_known_digests);
    KT_RUN(test_streaming_chunks);
    KT_RUN(test_streaming_final_midway);
    KT_RUN(test_hex);
    KT_RUN(test_unsupported_path);
    free(data);
    KT_EXIT();
}
