/* test_exchange.c - a store written on one platform is read on another (byte order, word size,
 * hash implementation), and a portable key hits across CPUs.
 *
 * Modes (DIR is an absolute path; every mode prints tests/kt.h's "ok NAME" / "FAIL NAME: ..."):
 *   write DIR    creates DIR/src (the dependencies), DIR/store and DIR/small (a 64 KiB store that
 *                evicts) and DIR/manifest: a fixed set of keys in several units (strings, binary
 *                bytes, u64s with every byte distinct, file dependencies, a key of 20+ fields, the
 *                host tuple), payloads of 0..100000 bytes, misses traced with KCACHE_TRACE, a
 *                dependency edited after its put, evictions by the size limit. The manifest records
 *                every key's digest and the explanation of every miss as the writer saw them.
 *   read DIR     checks, before opening, that the files are what kcache.h's >>store documents,
 *                decoded here byte by byte as little-endian (config.file header, checksum and use
 *                table, every entry header, the eviction log); then through kcache: every key's
 *                digest equals the writer's, every stored key hits with the exact payload (16-byte
 *                aligned), each miss is explained with the writer's words (field, cold, stamp,
 *                evicted), the traced misses are in the index, kcache_verify agrees; after close,
 *                the use times this reader recorded are sane little-endian times. The host key hits
 *                when this platform's OS/arch is the writer's, else misses naming host.os_arch with
 *                both values. A read changes nothing another reader relies on.
 *   append DIR   puts one more key (unit xk.append, one per OS/arch) into DIR/store and lists it in
 *                the manifest: a second platform writing into the first one's store.
 *   host DIR     the portable-cache probe for tests/test_portable.sh: one key with the host tuple
 *                (kcache_key_host_from, checked equal to kcache_key_host); prints "tuple OS|CPU|
 *                FEATURES", "result hit|miss", and on a miss "explain TEXT", then puts it.
 *   (no mode)    write, read, append and read again in a temp directory, on this platform alone.
 *
 * The exchange modes set KCACHE_CPU_NAME=generic and KCACHE_CPU_FEATURES=+sse2 themselves, so the host
 * key differs between platforms only by host.os_arch. scripts/exchange.sh runs the matrix (native,
 * aarch64 and s390x under qemu-user).
 *
 * Build: cc -std=c99 -I. tests/test_exchange.c -lpthread (make build/test_exchange) */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define SMALL_LIMIT 65536u
#define STORE_LIMIT (64u << 20)
#define SLACK_NS ((int64_t)3 * 1000000000)

static char D[300];      /* the exchange directory */
static char STORE[340];  /* D/store */
static char SMALL[340];  /* D/small */
static char SRC[340];    /* D/src */

/* ---- little helpers ------------------------------------------------------------------------ */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Little-endian decoding done here, byte by byte, independently of kcache's helpers. */
static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    while (n-- > 0) v = (v << 8) | p[n];
    return v;
}

static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b = NULL;
    long len;
    *n = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        b = (unsigned char *)malloc((size_t)len + 1);
        if (b && fread(b, 1, (size_t)len, f) == (size_t)len) *n = (size_t)len;
        else { free(b); b = NULL; }
    }
    fclose(f);
    return b;
}

static int write_text(const char *path, const char *text, const char *mode) {
    FILE *f = fopen(path, mode);
    int ok;
    if (!f) return 0;
    ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

static int same_digest(kcache_hash128 a, kcache_hash128 b) { return a.lo == b.lo && a.hi == b.hi; }

/* Deterministic payload bytes for a key name: FNV-1a seed, xorshift64* stream. */
static unsigned char *payload_for(const char *name, size_t n) {
    uint64_t x = 1469598103934665603ull;
    unsigned char *b = (unsigned char *)malloc(n ? n : 1);
    size_t i;
    const char *c;
    for (c = name; *c; c++) x = (x ^ (unsigned char)*c) * 1099511628211ull;
    for (i = 0; b && i < n; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        b[i] = (unsigned char)((x * 0x2545F4914F6CDD1Dull) >> 56);
    }
    return b;
}

static const char *field_preview(const kcache_key *k, const char *name) {
    const kcache_key_field *f = kcache__key_fields(k);
    uint32_t i;
    for (i = 0; i < k->count; i++)
        if (strcmp(f[i].name, name) == 0) return f[i].preview;
    return "";
}

static void set_dirs(const char *dir) {
    snprintf(D, sizeof D, "%s", dir);
    snprintf(STORE, sizeof STORE, "%s/store", dir);
    snprintf(SMALL, sizeof SMALL, "%s/small", dir);
    snprintf(SRC, sizeof SRC, "%s/src", dir);
}

static kcache *open_at(const char *dir, uint64_t limit, int trace) {
    kcache_config c;
    kcache *kc = NULL;
    kcache_status s;
    kcache_config_init(&c);
    c.dir = dir;
    c.max_size = limit;
    c.enable = 1;
    c.persistent = 1;
    c.trace = trace;
    c.write_policy = KCACHE_WRITE_THROUGH;
    c.stamp = KCACHE_STAMP_HYBRID;
    s = kcache_open(&kc, &c);
    if (s != KCACHE_OK || !kc) { KT_FAILF("kcache_open(%s): %s", dir, kcache_strerror(s)); return NULL; }
    if (!kcache_dir(kc)) { KT_FAILF("kcache_open(%s) gave a memory-only cache", dir); kcache_close(kc); return NULL; }
    return kc;
}

/* ---- the fixed data set ---------------------------------------------------------------------- */

static const char BLUR_SRC[] =
    "__kernel void blur(__global const float *in, __global float *out, int w) {\n"
    "    int i = get_global_id(0);\n"
    "    out[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0f; /* a source longer than a preview */\n"
    "}\n";
static const unsigned char SPEC[13] = {0x00, 0xff, 0x01, 0xfe, 0x7f, 0x80, 0x10, 0x20, 0x30, 0x40, 0x0a, 0x0d, 0x00};

/* Payload sizes: both sides of the 16/128/240-byte hash boundaries, empty, and a long input that
   takes the stripe loop (AVX2 here, NEON on aarch64, scalar on s390x). */
static size_t payload_size(const char *name) {
    if (strcmp(name, "blur-O2") == 0) return 100000;
    if (strcmp(name, "blur-O3") == 0) return 17;
    if (strcmp(name, "blur-abi1") == 0) return 0;
    if (strcmp(name, "sum") == 0) return 4096;
    if (strcmp(name, "wide") == 0) return 241;
    if (strcmp(name, "host") == 0) return 64;
    if (strcmp(name, "stale") == 0) return 1000;
    if (strncmp(name, "ev", 2) == 0) return 20000;
    if (strncmp(name, "append:", 7) == 0) return 33333;
    if (strcmp(name, "portable") == 0) return 129;
    return 0;
}

static void src_path(const char *file, char *out, size_t cap) { snprintf(out, cap, "%s/%s", SRC, file); }

/* Builds the key of a name; 0 when the name is unknown or an add failed. */
static int build_key(const char *name, kcache_key *k) {
    char p[400], q[400];
    kcache_status s = KCACHE_OK;
    if (strncmp(name, "blur-", 5) == 0 || strcmp(name, "miss-field") == 0) {
        const char *opt = strcmp(name, "blur-O3") == 0 ? "-O3" : strcmp(name, "miss-field") == 0 ? "-Os" : "-O2";
        uint64_t abi = strcmp(name, "blur-abi1") == 0 ? 1 : 0x0123456789abcdefull;
        kcache_key_init(k, "xk.blur");
        src_path("blur.h", p, sizeof p);
        if (s == KCACHE_OK) s = kcache_key_str(k, "source", BLUR_SRC);
        if (s == KCACHE_OK) s = kcache_key_str(k, "options", opt);
        if (s == KCACHE_OK) s = kcache_key_u64(k, "abi", abi);
        if (s == KCACHE_OK) s = kcache_key_bytes(k, "spec", SPEC, sizeof SPEC);
        if (s == KCACHE_OK) s = kcache_key_file(k, "header", p);
    } else if (strcmp(name, "sum") == 0) {
        kcache_key_init(k, "xk.sum");
        src_path("sum.h", p, sizeof p);
        src_path("common.h", q, sizeof q);
        if (s == KCACHE_OK) s = kcache_key_str(k, "source", "__kernel void sum(__global int *a) { a[0] += a[1]; }");
        if (s == KCACHE_OK) s = kcache_key_file(k, "include", p);
        if (s == KCACHE_OK) s = kcache_key_file(k, "common", q);
        if (s == KCACHE_OK) s = kcache_key_u64(k, "max", UINT64_MAX);
    } else if (strcmp(name, "wide") == 0) { /* more fields than a key holds inline */
        unsigned char bin[300];
        char fname[16];
        int i;
        kcache_key_init(k, "xk.wide");
        for (i = 0; i < 300; i++) bin[i] = (unsigned char)(i * 7 + 3);
        for (i = 0; i < 20 && s == KCACHE_OK; i++) {
            snprintf(fname, sizeof fname, "p%02d", i);
            s = kcache_key_u64(k, fname, (uint64_t)i * 0x0101010101010101ull + 0x8000000000000000ull);
        }
        if (s == KCACHE_OK) s = kcache_key_bytes(k, "blob", bin, sizeof bin);
        if (s == KCACHE_OK) s = kcache_key_str(k, "empty", "");
    } else if (strcmp(name, "host") == 0 || strcmp(name, "portable") == 0) {
        kcache_key_init(k, strcmp(name, "host") == 0 ? "xk.host" : "portable.kernel");
        if (s == KCACHE_OK) s = kcache_key_str(k, "source", "__kernel void k(void) {}");
        if (s == KCACHE_OK) s = kcache_key_host(k);
    } else if (strcmp(name, "stale") == 0) {
        kcache_key_init(k, "xk.stale");
        src_path("stale.h", p, sizeof p);
        if (s == KCACHE_OK) s = kcache_key_str(k, "source", "#include \"stale.h\"");
        if (s == KCACHE_OK) s = kcache_key_file(k, "dep", p);
    } else if (strcmp(name, "miss-cold") == 0) {
        kcache_key_init(k, "xk.cold");
        if (s == KCACHE_OK) s = kcache_key_str(k, "source", "never stored");
    } else if (strncmp(name, "ev", 2) == 0) {
        kcache_key_init(k, "xk.evict");
        if (s == KCACHE_OK) s = kcache_key_str(k, "which", name);
    } else if (strncmp(name, "append:", 7) == 0) {
        kcache_key_init(k, "xk.append");
        if (s == KCACHE_OK) s = kcache_key_str(k, "by", name + 7);
        if (s == KCACHE_OK) s = kcache_key_u64(k, "n", 0xfedcba9876543210ull);
    } else {
        kcache_key_init(k, "unknown");
        return 0;
    }
    if (s != KCACHE_OK) KT_FAILF("building key %s: %s", name, kcache_strerror(s));
    return s == KCACHE_OK;
}

static const char *const STORED[] = {"blur-O2", "blur-O3", "blur-abi1", "sum", "wide", "host", "stale"};
static const char *const EVICTION[] = {"ev1", "ev2", "ev3", "ev4"};
#define NSTORED (sizeof STORED / sizeof STORED[0])
#define NEVICTION (sizeof EVICTION / sizeof EVICTION[0])

/* ---- the manifest ---------------------------------------------------------------------------- */

#define MAXITEMS 64
typedef struct manifest {
    char os_arch[64];
    unsigned long pid;
    long long t0, t1;
    int nkeys, nexpl, nev;
    char key[MAXITEMS][64];
    char digest[MAXITEMS][33];
    char expl_name[MAXITEMS][64];
    char expl[MAXITEMS][1024];
    char evicted[MAXITEMS][64];
} manifest;
static manifest M;

static int read_manifest(void) {
    char path[400], line[1200];
    FILE *f;
    memset(&M, 0, sizeof M);
    snprintf(path, sizeof path, "%s/manifest", D);
    f = fopen(path, "rb");
    if (!f) { KT_FAILF("no manifest at %s", path); return 0; }
    while (fgets(line, sizeof line, f)) {
        char *nl = strchr(line, '\n'), *sp;
        if (nl) *nl = 0;
        if (strncmp(line, "writer ", 7) == 0) {
            if (sscanf(line + 7, "%63s %lu %lld %lld", M.os_arch, &M.pid, &M.t0, &M.t1) != 4) KT_FAILF("bad manifest line: %s", line);
        } else if (strncmp(line, "key ", 4) == 0 && M.nkeys < MAXITEMS) {
            if (sscanf(line + 4, "%63s %32s", M.key[M.nkeys], M.digest[M.nkeys]) == 2) M.nkeys++;
            else KT_FAILF("bad manifest line: %s", line);
        } else if (strncmp(line, "explain ", 8) == 0 && M.nexpl < MAXITEMS && (sp = strchr(line + 8, ' ')) != NULL) {
            *sp = 0;
            snprintf(M.expl_name[M.nexpl], sizeof M.expl_name[0], "%.63s", line + 8);
            snprintf(M.expl[M.nexpl], sizeof M.expl[0], "%.1023s", sp + 1);
            M.nexpl++;
        } else if (strncmp(line, "evicted ", 8) == 0 && M.nev < MAXITEMS) {
            snprintf(M.evicted[M.nev++], sizeof M.evicted[0], "%.63s", line + 8);
        }
    }
    fclose(f);
    if (!M.os_arch[0] || M.nkeys == 0) { KT_FAILF("manifest %s has no writer or no keys", path); return 0; }
    return 1;
}
static const char *manifest_explain(const char *name) {
    int i;
    for (i = 0; i < M.nexpl; i++)
        if (strcmp(M.expl_name[i], name) == 0) return M.expl[i];
    return NULL;
}
static int manifest_evicted(const char *name) {
    int i;
    for (i = 0; i < M.nev; i++)
        if (strcmp(M.evicted[i], name) == 0) return 1;
    return 0;
}

/* ---- raw checks of the on-disk formats (kcache.h, >>store), decoded here ------------------------ */

typedef struct entry_seen { uint64_t lo, hi, size; } entry_seen;

/* Checks one entry file; returns its size, or 0 when it is bad. */
static uint64_t raw_entry(const char *path, const char *fname, int64_t lo_ns, int64_t hi_ns, entry_seen *out) {
    size_t n, H, R;
    unsigned char *b = read_file(path, &n);
    char hex[33];
    kcache_hash128 name_d, sum;
    uint64_t plen;
    int ok = 1;
    int64_t created;
    if (!b) { KT_FAILF("cannot read %s", path); return 0; }
    if (n < 96 || memcmp(b, "KCENTRY\0", 8) != 0) { KT_FAILF("%s: %zu bytes, no KCENTRY magic", path, n); free(b); return 0; }
    H = (size_t)le(b + 12, 4);
    R = (size_t)le(b + 64, 4);
    plen = le(b + 16, 8);
    KT_CHECK_MSG(le(b + 8, 2) == 1, "%s: version %llu (little-endian u16 at 8), not 1", path, (unsigned long long)le(b + 8, 2));
    if (H % 16 != 0 || H < 72 + R + 8 || H > n || (uint64_t)(n - H) != plen) {
        KT_FAILF("%s: header length %zu, record %zu, payload %llu, file %zu do not add up (read as little-endian)", path, H, R,
                 (unsigned long long)plen, n);
        free(b);
        return 0;
    }
    KT_CHECK_MSG(le(b + 68, 4) == 0, "%s: bytes 68..71 not zero", path);
    KT_CHECK_MSG(le(b + 72 + R, 8) == kcache_hash(b, 72 + R).lo, "%s: header checksum (u64 LE at 72+R) wrong", path);
    sum = kcache_hash(b + H, (size_t)plen);
    KT_CHECK_MSG(le(b + 40, 8) == sum.lo && le(b + 48, 8) == sum.hi, "%s: payload XXH3-128 at 40 is not the payload's", path);
    created = (int64_t)le(b + 56, 8);
    KT_CHECK_MSG(created >= lo_ns && created <= hi_ns, "%s: created %lld ns is outside [%lld, %lld]", path, (long long)created,
                 (long long)lo_ns, (long long)hi_ns);
    name_d.lo = le(b + 24, 8);
    name_d.hi = le(b + 32, 8);
    kcache_hash_hex(name_d, hex);
    if (strncmp(fname, hex, 32) != 0) { KT_FAILF("%s: digest in the header (LE at 24) is %s, not the file's name", path, hex); ok = 0; }
    {
        size_t ulen = (size_t)le(b + 72, 2), i;
        if (ulen == 0 || 74 + ulen > 72 + R) { KT_FAILF("%s: key record's unit length %zu", path, ulen); ok = 0; }
        else for (i = 0; i < ulen; i++)
            if (b[74 + i] < 0x20 || b[74 + i] > 0x7e) { KT_FAILF("%s: unit not printable", path); ok = 0; break; }
    }
    out->lo = name_d.lo;
    out->hi = name_d.hi;
    out->size = n;
    free(b);
    return ok ? n : 0;
}

/* config.file and every entry of a store, decoded as little-endian. Times must lie in
   [lo_ns, hi_ns]. Returns the number of entries. */
static int raw_store(const char *store, int64_t lo_ns, int64_t hi_ns, const char *when) {
    char path[600];
    size_t n;
    unsigned char *cf;
    uint64_t lg = 0, nslots = 0, total = 0, count = 0, used = 0, i;
    entry_seen *seen = NULL;
    size_t nseen = 0, capseen = 0;
    int shard;
    snprintf(path, sizeof path, "%s/config.file", store);
    cf = read_file(path, &n);
    if (!cf || n < 4096) { KT_FAILF("%s: %s missing or short (%zu bytes)", when, path, n); free(cf); return 0; }
    if (memcmp(cf, "KCACHECF", 8) != 0) KT_FAILF("%s: %s has no KCACHECF magic", when, path);
    KT_CHECK_MSG(le(cf + 8, 4) == 1 && le(cf + 12, 4) == 4096 && le(cf + 20, 4) == 4,
                 "%s: config.file version %llu, header %llu, ways %llu (LE u32 at 8, 12, 20): want 1, 4096, 4", when,
                 (unsigned long long)le(cf + 8, 4), (unsigned long long)le(cf + 12, 4), (unsigned long long)le(cf + 20, 4));
    lg = le(cf + 16, 4);
    if (lg < 4 || lg > 24) { KT_FAILF("%s: config.file log2(buckets) %llu", when, (unsigned long long)lg); free(cf); return 0; }
    nslots = (uint64_t)4 << lg;
    KT_CHECK_MSG(n == 4096 + nslots * 32, "%s: config.file is %zu bytes, its header says %llu slots", when, n, (unsigned long long)nslots);
    KT_CHECK_MSG(le(cf + 120, 8) == kcache_hash(cf, 120).lo, "%s: config.file header checksum (LE u64 at 120) wrong", when);
    KT_CHECK_MSG(le(cf + 48, 4) == 0, "%s: config.file busy flag set (%llu)", when, (unsigned long long)le(cf + 48, 4));
    KT_CHECK_MSG((int64_t)le(cf + 72, 8) >= lo_ns && (int64_t)le(cf + 72, 8) <= hi_ns, "%s: config.file created %lld ns, outside [%lld, %lld]",
                 when, (long long)le(cf + 72, 8), (long long)lo_ns, (long long)hi_ns);
    /* the entries on disk */
    for (shard = 0; shard < 256; shard++) {
        DIR *dp;
        struct dirent *de;
        char sd[620];
        snprintf(sd, sizeof sd, "%s/e/%02x", store, shard);
        if (!(dp = opendir(sd))) continue;
        while ((de = readdir(dp)) != NULL) {
            char ep[900];
            size_t len = strlen(de->d_name);
            uint64_t sz;
            if (len != 36 || strcmp(de->d_name + 32, ".kce") != 0) continue;
            snprintf(ep, sizeof ep, "%s/%s", sd, de->d_name);
            if (nseen == capseen) {
                capseen = capseen ? capseen * 2 : 16;
                seen = (entry_seen *)realloc(seen, capseen * sizeof *seen);
                if (!seen) { KT_FAILF("out of memory"); closedir(dp); free(cf); return 0; }
            }
            sz = raw_entry(ep, de->d_name, lo_ns, hi_ns, &seen[nseen]);
            if (sz) { total += sz; count++; nseen++; }
            else { struct stat st; if (stat(ep, &st) == 0) { total += (uint64_t)st.st_size; count++; } }
        }
        closedir(dp);
    }
    KT_CHECK_MSG(le(cf + 24, 8) == total && le(cf + 32, 8) == count,
                 "%s: config.file accounts %llu bytes in %llu entries (LE u64 at 24, 32); the store holds %llu in %llu", when,
                 (unsigned long long)le(cf + 24, 8), (unsigned long long)le(cf + 32, 8), (unsigned long long)total,
                 (unsigned long long)count);
    /* the use table: each entry in its bucket, with its size and a sane last use */
    for (i = 0; i < nslots; i++) {
        const unsigned char *s = cf + 4096 + i * 32;
        if (le(s, 8) || le(s + 8, 8)) used++;
    }
    KT_CHECK_MSG(used == count, "%s: the use table has %llu slots in use for %llu entries", when, (unsigned long long)used,
                 (unsigned long long)count);
    for (i = 0; i < nseen; i++) {
        uint64_t b = (seen[i].lo & ((nslots / 4) - 1)) * 4, w;
        int found = 0;
        for (w = 0; w < 4; w++) {
            const unsigned char *s = cf + 4096 + (b + w) * 32;
            if (le(s, 8) == seen[i].lo && le(s + 8, 8) == seen[i].hi) {
                int64_t use = (int64_t)le(s + 16, 8);
                found = 1;
                KT_CHECK_MSG(le(s + 24, 8) == seen[i].size, "%s: use slot of %016llx says %llu bytes, the entry has %llu", when,
                             (unsigned long long)seen[i].hi, (unsigned long long)le(s + 24, 8), (unsigned long long)seen[i].size);
                KT_CHECK_MSG(use >= lo_ns - SLACK_NS && use <= hi_ns, "%s: last use of %016llx is %lld ns, outside [%lld, %lld]", when,
                             (unsigned long long)seen[i].hi, (long long)use, (long long)(lo_ns - SLACK_NS), (long long)hi_ns);
            }
        }
        KT_CHECK_MSG(found, "%s: entry %016llx%016llx is not in its bucket of the use table (decoded as LE)", when,
                     (unsigned long long)seen[i].hi, (unsigned long long)seen[i].lo);
    }
    free(seen);
    free(cf);
    return (int)count;
}

/* The last use the store recorded for a digest (0 when absent), read from config.file. */
static int64_t raw_last_use(const char *store, kcache_hash128 d) {
    char path[600];
    size_t n;
    unsigned char *cf;
    uint64_t nslots, b, w;
    int64_t use = 0;
    snprintf(path, sizeof path, "%s/config.file", store);
    cf = read_file(path, &n);
    if (!cf || n < 4096) { free(cf); return 0; }
    nslots = (uint64_t)4 << le(cf + 16, 4);
    if (n < 4096 + nslots * 32) { free(cf); return 0; }
    b = (d.lo & ((nslots / 4) - 1)) * 4;
    for (w = 0; w < 4; w++) {
        const unsigned char *s = cf + 4096 + (b + w) * 32;
        if (le(s, 8) == d.lo && le(s + 8, 8) == d.hi) use = (int64_t)le(s + 16, 8);
    }
    free(cf);
    return use;
}

/* The eviction log of config.file (64 slots of lo, hi, when, size at 512): when d was evicted. */
static int64_t raw_evicted_when(const char *store, kcache_hash128 d, uint64_t *size) {
    char path[600];
    size_t n;
    unsigned char *cf;
    int i;
    int64_t when = 0;
    snprintf(path, sizeof path, "%s/config.file", store);
    cf = read_file(path, &n);
    if (!cf || n < 4096) { free(cf); return 0; }
    for (i = 0; i < 64; i++) {
        const unsigned char *s = cf + 512 + i * 32;
        if (le(s, 8) == d.lo && le(s + 8, 8) == d.hi) { when = (int64_t)le(s + 16, 8); *size = le(s + 24, 8); }
    }
    free(cf);
    return when;
}

/* ---- write -------------------------------------------------------------------------------------- */

static char g_os_arch[64];
static int64_t g_t0;

static void host_overrides(void) {
    setenv("KCACHE_CPU_NAME", "generic", 1);
    setenv("KCACHE_CPU_FEATURES", "+sse2", 1); /* not empty: an empty value cannot be set on Windows */
}

static void this_os_arch(void) {
    kcache_key k;
    build_key("host", &k);
    snprintf(g_os_arch, sizeof g_os_arch, "%s", field_preview(&k, "host.os_arch"));
    kcache_key_free(&k);
}

static kcache_status put_named(kcache *kc, const char *name) {
    kcache_key k;
    kcache_status s = KCACHE_EINVAL;
    size_t n = payload_size(name);
    unsigned char *p = payload_for(name, n);
    if (build_key(name, &k) && p) s = kcache_put(kc, &k, p, n);
    kcache_key_free(&k);
    free(p);
    return s;
}

static void explain_named(kcache *kc, const char *name, char *out, size_t cap) {
    kcache_key k;
    out[0] = 0;
    if (build_key(name, &k)) kcache_explain(kc, &k, out, cap);
    kcache_key_free(&k);
}

static FILE *g_man;

static void add_key_line(FILE *f, const char *name) {
    kcache_key k;
    char hex[33];
    if (!build_key(name, &k)) { kcache_key_free(&k); return; }
    kcache_hash_hex(kcache_key_digest(&k), hex);
    fprintf(f, "key %s %s\n", name, hex);
    kcache_key_free(&k);
}

static void write_sources(void) {
    char p[400];
    mkdir(D, 0700);
    mkdir(SRC, 0700);
    src_path("blur.h", p, sizeof p);
    KT_CHECK(write_text(p, "#define RADIUS 1\n", "wb"));
    src_path("sum.h", p, sizeof p);
    KT_CHECK(write_text(p, "typedef int acc_t;\n", "wb"));
    src_path("common.h", p, sizeof p);
    KT_CHECK(write_text(p, "/* common */\n#define ONE 1\n", "wb"));
    src_path("stale.h", p, sizeof p);
    KT_CHECK(write_text(p, "#define VERSION 1\n", "wb"));
}

static void write_store(void) {
    kcache *kc;
    size_t i;
    char buf[1024], p[400];
    kcache_key k;
    const void *data;
    size_t size;
    write_sources();
    kc = open_at(STORE, STORE_LIMIT, 1); /* KCACHE_TRACE: misses are written to the unit's index */
    if (!kc) return;
    for (i = 0; i < NSTORED; i++) {
        kcache_status s = put_named(kc, STORED[i]);
        KT_CHECK_MSG(s == KCACHE_OK, "put %s: %s", STORED[i], kcache_strerror(s));
    }
    /* traced misses: a field differs, a unit never stored */
    if (build_key("miss-field", &k)) KT_CHECK(kcache_get(kc, &k, &data, &size) == KCACHE_MISS);
    kcache_key_free(&k);
    if (build_key("miss-cold", &k)) KT_CHECK(kcache_get(kc, &k, &data, &size) == KCACHE_MISS);
    kcache_key_free(&k);
    /* a dependency edited after its put: content and size differ */
    src_path("stale.h", p, sizeof p);
    KT_CHECK(write_text(p, "#define VERSION 22 /* edited */\n", "wb"));
    explain_named(kc, "miss-field", buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "options: \"-O2\" (stored) vs \"-Os\" (now)") != NULL, "explain miss-field: %s", buf);
    fprintf(g_man, "explain miss-field %s\n", buf);
    explain_named(kc, "miss-cold", buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "miss: cold: unit \"xk.cold\" never stored in ") != NULL, "explain miss-cold: %s", buf);
    fprintf(g_man, "explain miss-cold %s\n", buf);
    explain_named(kc, "stale", buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "a dependency changed") && strstr(buf, "file dep (") && strstr(buf, " size") && strstr(buf, " content"),
                 "explain stale: %s", buf);
    fprintf(g_man, "explain stale %s\n", buf);
    for (i = 0; i < NSTORED; i++) {
        if (strcmp(STORED[i], "stale") == 0) continue;
        explain_named(kc, STORED[i], buf, sizeof buf);
        KT_CHECK_MSG(strncmp(buf, "hit: ", 5) == 0, "explain %s after its put: %s", STORED[i], buf);
    }
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
}

static void write_small(void) {
    kcache *kc = open_at(SMALL, SMALL_LIMIT, 0);
    size_t i;
    int evicted = 0;
    char buf[1024];
    if (!kc) return;
    for (i = 0; i < NEVICTION; i++) {
        kcache_status s = put_named(kc, EVICTION[i]);
        KT_CHECK_MSG(s == KCACHE_OK, "put %s: %s", EVICTION[i], kcache_strerror(s));
    }
    kcache_close(kc); /* a new kcache: nothing from memory, only what the store says */
    if (!(kc = open_at(SMALL, SMALL_LIMIT, 0))) return;
    for (i = 0; i < NEVICTION; i++) {
        explain_named(kc, EVICTION[i], buf, sizeof buf);
        if (strncmp(buf, "miss: evicted", 13) == 0) {
            evicted++;
            fprintf(g_man, "evicted %s\nexplain %s %s\n", EVICTION[i], EVICTION[i], buf);
            KT_CHECK_MSG(strstr(buf, "(store limit 65536 bytes)") != NULL, "explain %s: %s", EVICTION[i], buf);
        } else {
            KT_CHECK_MSG(strncmp(buf, "hit: disk", 9) == 0, "explain %s: %s", EVICTION[i], buf);
        }
    }
    KT_CHECK_MSG(evicted >= 1 && evicted < (int)NEVICTION, "%d of %d entries evicted by a 64 KiB limit", evicted, (int)NEVICTION);
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
}

static void exchange_write(void) {
    char path[400], tmp[420];
    size_t i;
    snprintf(path, sizeof path, "%s/manifest", D);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    mkdir(D, 0700);
    g_man = fopen(tmp, "wb"); /* binary: the manifest is the same bytes wherever it was written */
    if (!g_man) { KT_FAILF("cannot write %s", tmp); return; }
    g_t0 = now_ns();
    write_store();
    write_small();
    for (i = 0; i < NSTORED; i++) add_key_line(g_man, STORED[i]);
    add_key_line(g_man, "miss-field");
    add_key_line(g_man, "miss-cold");
    for (i = 0; i < NEVICTION; i++) add_key_line(g_man, EVICTION[i]);
    fprintf(g_man, "writer %s %lu %lld %lld\n", g_os_arch, (unsigned long)getpid(), (long long)g_t0, (long long)now_ns());
    KT_CHECK(fclose(g_man) == 0);
    g_man = NULL;
    KT_CHECK(rename(tmp, path) == 0);
}

/* What this platform wrote is what >>store documents (little-endian, checksums). */
static void exchange_write_raw(void) {
    int64_t hi = now_ns() + SLACK_NS;
    KT_CHECK_MSG(raw_store(STORE, g_t0 - SLACK_NS, hi, "store after write") == (int)NSTORED, "the store should hold %d entries",
                 (int)NSTORED);
    raw_store(SMALL, g_t0 - SLACK_NS, hi, "small store after write");
}

/* ---- read ---------------------------------------------------------------------------------------- */

static int64_t g_read_start;

static void exchange_raw_before(void) {
    int64_t lo = (int64_t)M.t0 - SLACK_NS, hi = now_ns() + SLACK_NS;
    raw_store(STORE, lo, hi, "store before open");
    raw_store(SMALL, lo, hi, "small store before open");
}

/* Every key's digest is the one the writer computed (the host key's only on the same OS/arch). */
static void exchange_digests(void) {
    int i;
    for (i = 0; i < M.nkeys; i++) {
        kcache_key k;
        char hex[33];
        if (!build_key(M.key[i], &k)) { kcache_key_free(&k); continue; }
        kcache_hash_hex(kcache_key_digest(&k), hex);
        if (strcmp(M.key[i], "host") != 0 || strcmp(g_os_arch, M.os_arch) == 0)
            KT_CHECK_MSG(strcmp(hex, M.digest[i]) == 0, "key %s: digest %s here, %s on the writer (%s)", M.key[i], hex, M.digest[i],
                         M.os_arch);
        else
            KT_CHECK_MSG(strcmp(hex, M.digest[i]) != 0, "key host: same digest on %s and %s", g_os_arch, M.os_arch);
        kcache_key_free(&k);
    }
}

static int is_stored_name(const char *name) {
    size_t i;
    if (strncmp(name, "append:", 7) == 0) return 1;
    for (i = 0; i < NSTORED; i++)
        if (strcmp(name, STORED[i]) == 0) return strcmp(name, "stale") != 0;
    return 0;
}

static int g_hits;

static void exchange_payloads(void) {
    kcache *kc = open_at(STORE, STORE_LIMIT, 0);
    kcache_stats st;
    int i, want_hits = 0;
    char buf[1024], want[1024];
    if (!kc) return;
    for (i = 0; i < M.nkeys; i++) {
        kcache_key k;
        const void *data = NULL;
        size_t size = 0, n;
        unsigned char *p;
        kcache_status s;
        if (!is_stored_name(M.key[i])) continue;
        if (!build_key(M.key[i], &k)) { kcache_key_free(&k); continue; }
        s = kcache_get(kc, &k, &data, &size);
        if (strcmp(M.key[i], "host") == 0 && strcmp(g_os_arch, M.os_arch) != 0) {
            /* another OS/arch: a miss, and the explanation names the one field that differs */
            KT_CHECK_MSG(s == KCACHE_MISS, "host key written on %s, got here on %s: %s, not a miss", M.os_arch, g_os_arch,
                         kcache_strerror(s));
            if (s == KCACHE_OK) kcache_release(kc, data);
            kcache_explain(kc, &k, buf, sizeof buf);
            snprintf(want, sizeof want, "miss: a field differs: closest of 1 stored overload(s) of unit \"xk.host\": "
                     "host.os_arch: \"%s\" (stored) vs \"%s\" (now)", M.os_arch, g_os_arch);
            KT_CHECK_STR(buf, want);
            kcache_key_free(&k);
            continue;
        }
        want_hits++;
        n = payload_size(M.key[i]);
        p = payload_for(M.key[i], n);
        KT_CHECK_MSG(s == KCACHE_OK, "get %s (written on %s): %s", M.key[i], M.os_arch, kcache_strerror(s));
        if (s == KCACHE_OK) {
            KT_CHECK_MSG(size == n && p && (n == 0 || memcmp(data, p, n) == 0), "get %s: %zu bytes, want %zu; content %s", M.key[i], size,
                         n, size == n && p && memcmp(data, p, n) == 0 ? "same" : "differs");
            KT_CHECK_MSG(((uintptr_t)data & 15) == 0, "get %s: payload at %p is not 16-byte aligned", M.key[i], data);
            kcache_release(kc, data);
            kcache_explain(kc, &k, buf, sizeof buf);
            KT_CHECK_MSG(strncmp(buf, "hit: memory", 11) == 0, "explain %s after its get: %s", M.key[i], buf);
        }
        free(p);
        kcache_key_free(&k);
    }
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_disk, want_hits);
    KT_CHECK_EQ_U64(st.rejects, 0);
    KT_CHECK_EQ_U64(st.store_errors, 0);
    g_hits = want_hits;
    kcache_close(kc);
}

/* The explanations of misses are the writer's, word for word (paths, previews, times). */
static void exchange_explain(void) {
    static const char *const names[] = {"miss-field", "miss-cold", "stale"};
    kcache *kc = open_at(STORE, STORE_LIMIT, 0);
    size_t i;
    char buf[1024];
    if (!kc) return;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *want = manifest_explain(names[i]);
        explain_named(kc, names[i], buf, sizeof buf);
        KT_CHECK_MSG(want && strcmp(buf, want) == 0, "explain %s here on %s:\n    %s\n  on the writer (%s):\n    %s", names[i], g_os_arch,
                     buf, M.os_arch, want ? want : "(none in the manifest)");
    }
    explain_named(kc, "miss-field", buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "miss: a field differs: closest of 3 stored overload(s) of unit \"xk.blur\": options: \"-O2\" (stored) vs "
                             "\"-Os\" (now)") != NULL, "explain miss-field: %s", buf);
    explain_named(kc, "stale", buf, sizeof buf);
    KT_CHECK_MSG(strncmp(buf, "miss: a dependency changed: file dep (", 38) == 0 && strstr(buf, " size") && strstr(buf, " content"),
                 "explain stale: %s", buf);
    kcache_close(kc);
}

/* The writer's traced misses, from the index as kcache reads it. */
static void exchange_trace(void) {
    kcache *kc = open_at(STORE, STORE_LIMIT, 0);
    static const char *const names[] = {"miss-field", "miss-cold"};
    static const char *const units[] = {"xk.blur", "xk.cold"};
    static const uint32_t reasons[] = {KCACHE_REASON_FIELD, KCACHE_REASON_COLD};
    static const uint32_t live[] = {3, 0};
    size_t i;
    if (!kc) return;
    for (i = 0; i < 2; i++) {
        kcache__ix ix;
        kcache_key k, rec;
        int at;
        kcache_status s = kcache__ix_read(kc->store, units[i], &ix);
        KT_CHECK_MSG(s == KCACHE_OK, "index of %s: %s", units[i], kcache_strerror(s));
        if (s != KCACHE_OK) continue;
        KT_CHECK_MSG(ix.n[KCACHE__IX_LIVE] == live[i], "index of %s lists %u live overloads, want %u", units[i], ix.n[KCACHE__IX_LIVE],
                     live[i]);
        build_key(names[i], &k);
        at = kcache__ix_find(&ix, KCACHE__IX_MISSED, kcache_key_digest(&k));
        KT_CHECK_MSG(at >= 0, "the traced miss of %s is not in the index of %s", names[i], units[i]);
        if (at >= 0) {
            const kcache__ix_item *it = &ix.items[KCACHE__IX_MISSED][at];
            KT_CHECK_EQ_U64(it->reason, reasons[i]);
            KT_CHECK_EQ_U64(it->pid, M.pid);
            KT_CHECK_MSG(it->when >= M.t0 && it->when <= M.t1, "traced miss of %s at %lld ns, outside the writer's run", names[i],
                         (long long)it->when);
            if (kcache__record_parse(it->rec, it->rec_len, &rec) == KCACHE_OK) {
                const kcache_key_field *a = kcache__key_fields(&rec), *b = kcache__key_fields(&k);
                uint32_t j;
                KT_CHECK_STR(rec.unit, units[i]);
                KT_CHECK_EQ_U64(rec.count, k.count);
                for (j = 0; j < rec.count && j < k.count; j++) {
                    KT_CHECK_STR(a[j].name, b[j].name);
                    KT_CHECK_STR(a[j].preview, b[j].preview);
                    KT_CHECK(a[j].type == b[j].type && a[j].size == b[j].size && same_digest(a[j].digest, b[j].digest));
                }
                KT_CHECK(same_digest(kcache_key_digest(&rec), kcache_key_digest(&k)));
            } else {
                KT_FAILF("the traced miss of %s does not parse", names[i]);
            }
            kcache_key_free(&rec);
        }
        kcache_key_free(&k);
        kcache__ix_free(&ix);
    }
    kcache_close(kc);
}

static void exchange_evicted(void) {
    kcache *kc = open_at(SMALL, SMALL_LIMIT, 0);
    size_t i;
    char buf[1024];
    if (!kc) return;
    for (i = 0; i < NEVICTION; i++) {
        kcache_key k;
        const char *want = manifest_explain(EVICTION[i]);
        if (!build_key(EVICTION[i], &k)) { kcache_key_free(&k); continue; }
        if (manifest_evicted(EVICTION[i])) {
            uint64_t size = 0;
            int64_t when = raw_evicted_when(SMALL, kcache_key_digest(&k), &size);
            kcache_explain(kc, &k, buf, sizeof buf);
            KT_CHECK_MSG(want && strcmp(buf, want) == 0, "explain %s here on %s:\n    %s\n  on the writer (%s):\n    %s", EVICTION[i],
                         g_os_arch, buf, M.os_arch, want ? want : "(none)");
            KT_CHECK_MSG(when >= M.t0 && when <= M.t1 && size > payload_size(EVICTION[i]),
                         "eviction log (LE at 512) of %s: when %lld ns, size %llu", EVICTION[i], (long long)when, (unsigned long long)size);
        } else {
            const void *data;
            size_t size, n = payload_size(EVICTION[i]);
            unsigned char *p = payload_for(EVICTION[i], n);
            kcache_status s = kcache_get(kc, &k, &data, &size);
            KT_CHECK_MSG(s == KCACHE_OK, "get %s from the small store: %s", EVICTION[i], kcache_strerror(s));
            if (s == KCACHE_OK) {
                KT_CHECK(size == n && p && memcmp(data, p, n) == 0);
                kcache_release(kc, data);
            }
            free(p);
        }
        kcache_key_free(&k);
    }
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
}

static void exchange_verify(void) {
    kcache *kc = open_at(STORE, STORE_LIMIT, 0);
    if (!kc) return;
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
}

/* After this reader: the files are still sound, and the uses it recorded are its own times. */
static void exchange_raw_after(void) {
    int64_t hi = now_ns() + SLACK_NS;
    int i;
    raw_store(STORE, (int64_t)M.t0 - SLACK_NS, hi, "store after read");
    raw_store(SMALL, (int64_t)M.t0 - SLACK_NS, hi, "small store after read");
    for (i = 0; i < M.nkeys; i++) {
        kcache_key k;
        int64_t use;
        if (!is_stored_name(M.key[i]) || (strcmp(M.key[i], "host") == 0 && strcmp(g_os_arch, M.os_arch) != 0)) continue;
        if (!build_key(M.key[i], &k)) { kcache_key_free(&k); continue; }
        use = raw_last_use(STORE, kcache_key_digest(&k));
        KT_CHECK_MSG(use >= g_read_start - (int64_t)1500000000 && use <= hi,
                     "%s: last use %lld ns after this reader's hit (started at %lld)", M.key[i], (long long)use, (long long)g_read_start);
        kcache_key_free(&k);
    }
}

/* ---- append -------------------------------------------------------------------------------------- */

static void exchange_append(void) {
    kcache *kc = open_at(STORE, STORE_LIMIT, 0);
    char name[96], path[400];
    FILE *f;
    kcache_status s;
    if (!kc) return;
    snprintf(name, sizeof name, "append:%s", g_os_arch);
    s = put_named(kc, name);
    KT_CHECK_MSG(s == KCACHE_OK, "put %s into a store written on %s: %s", name, M.os_arch, kcache_strerror(s));
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
    snprintf(path, sizeof path, "%s/manifest", D);
    f = fopen(path, "ab");
    if (!f) { KT_FAILF("cannot append to %s", path); return; }
    add_key_line(f, name);
    KT_CHECK(fclose(f) == 0);
}

/* ---- host: the portable-cache probe --------------------------------------------------------------- */

static void host_probe(void) {
    kcache *kc = open_at(D, STORE_LIMIT, 0);
    kcache_key k, k2;
    const void *data;
    size_t size, n = payload_size("portable");
    unsigned char *p = payload_for("portable", n);
    kcache_status s = KCACHE_OK;
    char buf[1024];
    if (!kc || !p) { free(p); kcache_close(kc); return; }
    kcache_key_init(&k, "portable.kernel");
    s = kcache_key_str(&k, "source", "__kernel void k(void) {}");
    if (s == KCACHE_OK) s = kcache_key_host_from(&k, kc);
    KT_CHECK(s == KCACHE_OK);
    build_key("portable", &k2); /* the same with kcache_key_host: detected again, same overrides */
    KT_CHECK_MSG(same_digest(kcache_key_digest(&k), kcache_key_digest(&k2)), "kcache_key_host_from and kcache_key_host disagree");
    printf("tuple %s|%s|%s\n", field_preview(&k, "host.os_arch"), field_preview(&k, "host.cpu_name"),
           field_preview(&k, "host.cpu_features"));
    s = kcache_get(kc, &k, &data, &size);
    if (s == KCACHE_OK) {
        printf("result hit\n");
        KT_CHECK(size == n && memcmp(data, p, n) == 0);
        kcache_release(kc, data);
    } else {
        KT_CHECK(s == KCACHE_MISS);
        printf("result miss\n");
        kcache_explain(kc, &k, buf, sizeof buf);
        printf("explain %s\n", buf);
        KT_CHECK(kcache_put(kc, &k, p, n) == KCACHE_OK);
    }
    fflush(stdout);
    kcache_key_free(&k);
    kcache_key_free(&k2);
    free(p);
    kcache_close(kc);
}

/* ---- main ------------------------------------------------------------------------------------------ */

static void run_read(void) {
    g_read_start = now_ns();
    if (!read_manifest()) return;
    KT_RUN(exchange_raw_before);
    KT_RUN(exchange_digests);
    KT_RUN(exchange_payloads);
    KT_RUN(exchange_explain);
    KT_RUN(exchange_trace);
    KT_RUN(exchange_evicted);
    KT_RUN(exchange_verify);
    KT_RUN(exchange_raw_after);
}

static int rm_tree(const char *path) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    return system(cmd);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "self";
    if (strcmp(mode, "host") == 0) {
        if (argc != 3) { fprintf(stderr, "usage: %s host DIR\n", argv[0]); return 2; }
        set_dirs(argv[2]);
        KT_RUN(host_probe);
        KT_EXIT();
    }
    host_overrides();
    this_os_arch();
    if (strcmp(mode, "self") == 0) { /* the whole exchange on this platform alone */
        char tmpl[64];
        const char *t = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/kcache-xch-XXXXXX", t && strlen(t) < 40 ? t : "/tmp");
        if (!mkdtemp(tmpl)) { perror("mkdtemp"); return 2; }
        set_dirs(tmpl);
        KT_RUN(exchange_write);
        KT_RUN(exchange_write_raw);
        run_read();
        KT_RUN(exchange_append);
        run_read();
        rm_tree(tmpl);
        KT_EXIT();
    }
    if (argc != 3 || argv[2][0] != '/') {
        fprintf(stderr, "usage: %s [write|read|append|host ABSOLUTE-DIR]\n", argv[0]);
        return 2;
    }
    set_dirs(argv[2]);
    if (strcmp(mode, "write") == 0) {
        KT_RUN(exchange_write);
        KT_RUN(exchange_write_raw);
    } else if (strcmp(mode, "read") == 0) {
        run_read();
    } else if (strcmp(mode, "append") == 0) {
        if (read_manifest()) KT_RUN(exchange_append);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    KT_EXIT();
}
