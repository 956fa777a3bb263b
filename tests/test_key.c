/* tests/test_key.c - canonical keys: order independence, type tags and length prefixes, unit in
 * the key, refused duplicates and sticky errors, previews, file stamps, bad input, big fields,
 * the key record (round trip and corrupt input), the host tuple, and one golden digest.
 *
 * Build: make build/test_key build/asan/test_key; also runs under valgrind (leak-check=full).
 * Uses a mkdtemp directory under $TMPDIR (or /tmp) for its files and removes it at the end. */
#define _GNU_SOURCE
#include <stdlib.h>
/* Counts the library's allocations, to check that a key of up to 16 fields allocates nothing. */
static unsigned long kt_mallocs;
#define KCACHE_MALLOC(n) (kt_mallocs++, malloc(n))
#define KCACHE_REALLOC(p, n) (kt_mallocs++, realloc(p, n))
#define KCACHE_FREE(p) free(p)
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>
#include <sys/stat.h>
#include <ftw.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t rng_state = 0x243F6A8885A308D3ULL;
static uint64_t rng(void) /* splitmix64: deterministic, so a failure reproduces */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int heq(kcache_hash128 a, kcache_hash128 b) { return a.lo == b.lo && a.hi == b.hi; }

static const kcache_key_field *field_named(const kcache_key *k, const char *name)
{
    const kcache_key_field *f = kcache__key_fields(k);
    uint32_t i;
    for (i = 0; i < k->count; i++)
        if (strcmp(f[i].name, name) == 0) return &f[i];
    return NULL;
}

static char tmpdir[512];

static void make_tmpdir(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/kcache-test-key-XXXXXX", t && t[0] == '/' ? t : "/tmp");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); exit(2); }
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}
static void rm_tmpdir(void)
{
    if (tmpdir[0] && nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    if (n && fwrite(p, 1, n, f) != n) { perror(path); exit(2); }
    fclose(f);
}

/* ---- the fields used by the permutation tests ---------------------------------------------- */

#define NF 20 /* more than KCACHE_KEY_INLINE: the key grows onto the heap */

static char pf_name[NF][16];
static unsigned char pf_val[NF][40];
static size_t pf_len[NF];

static void pf_setup(void)
{
    int i;
    size_t j;
    for (i = 0; i < NF; i++) {
        snprintf(pf_name[i], sizeof pf_name[i], "f%02d.%c", (i * 7) % NF, 'a' + i % 26);
        pf_len[i] = (size_t)(i * 3 % 37);
        for (j = 0; j < pf_len[i]; j++) pf_val[i][j] = (unsigned char)(rng() & 0xff);
    }
}

/* Adds field i with a type that depends on i (bytes, str, u64 in turn). */
static kcache_status pf_add(kcache_key *k, int i)
{
    switch (i % 3) {
    case 0: return kcache_key_bytes(k, pf_name[i], pf_val[i], pf_len[i]);
    case 1: {
        char s[64];
        size_t j;
        for (j = 0; j < pf_len[i]; j++) s[j] = (char)('a' + pf_val[i][j] % 26);
        s[j] = 0;
        return kcache_key_str(k, pf_name[i], s);
    }
    default: return kcache_key_u64(k, pf_name[i], (uint64_t)i * 0x123456789ULL);
    }
}

static void test_order_independent(void)
{
    kcache_key ref, k;
    int order[NF], i, t, ok = 1;
    pf_setup();
    KT_CHECK(kcache_key_init(&ref, "perm") == KCACHE_OK);
    for (i = 0; i < NF; i++) KT_CHECK(pf_add(&ref, i) == KCACHE_OK);
    KT_CHECK_EQ_U64(ref.count, NF);
    KT_CHECK(ref.heap != NULL); /* 20 fields: past the inline room */
    KT_CHECK(ref.cap >= NF);
    /* the fields are kept sorted by name */
    for (i = 1; i < NF; i++)
        KT_CHECK(strcmp(kcache__key_fields(&ref)[i - 1].name, kcache__key_fields(&ref)[i].name) < 0);
    KT_CHECK(heq(kcache_key_digest(&ref), ref.digest));
    KT_CHECK(heq(kcache__key_compute_digest(&ref), ref.digest));

    for (t = 0; t < 500; t++) {
        for (i = 0; i < NF; i++) order[i] = i;
        for (i = NF - 1; i > 0; i--) { /* Fisher-Yates */
            int j = (int)(rng() % (uint64_t)(i + 1)), x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
        kcache_key_init(&k, "perm");
        for (i = 0; i < NF; i++)
            if (pf_add(&k, order[i]) != KCACHE_OK) ok = 0;
        if (!heq(kcache_key_digest(&k), kcache_key_digest(&ref)) || k.error != KCACHE_OK || k.count != NF) {
            ok = 0;
            KT_FAILF("permutation %d gives another digest", t);
        }
        kcache_key_free(&k);
        if (!ok) break;
    }
    KT_CHECK(ok);

    /* a prefix of the fields (order reversed) equals the same prefix added in order; the digest
       after each add is the canonical one of the fields so far */
    kcache_key_init(&k, "perm");
    for (i = NF - 1; i >= 0; i--) {
        pf_add(&k, i);
        KT_CHECK(heq(k.digest, kcache__key_compute_digest(&k)));
    }
    KT_CHECK(heq(kcache_key_digest(&k), kcache_key_digest(&ref)));
    kcache_key_free(&k);
    kcache_key_free(&ref);
}

static void test_inline_room(void)
{
    kcache_key k;
    int i;
    char name[16];
    unsigned long before = kt_mallocs;
    KT_CHECK_EQ_U64(KCACHE_KEY_INLINE, 16);
    KT_CHECK(kcache_key_init(&k, "room") == KCACHE_OK);
    KT_CHECK(k.heap == NULL);
    for (i = 0; i < KCACHE_KEY_INLINE; i++) {
        snprintf(name, sizeof name, "n%02d", i);
        KT_CHECK(kcache_key_u64(&k, name, (uint64_t)i) == KCACHE_OK);
    }
    KT_CHECK(kcache_key_str(&k, "n00", "dup") == KCACHE_EEXIST); /* a refused add allocates nothing either */
    k.error = KCACHE_OK;
    KT_CHECK(k.heap == NULL); /* 16 fields: no allocation */
    KT_CHECK_EQ_U64(k.count, 16);
    (void)kcache_key_digest(&k);
    KT_CHECK_EQ_U64(kt_mallocs - before, 0);
    KT_CHECK(kcache_key_u64(&k, "n16", 16) == KCACHE_OK);
    KT_CHECK(k.heap != NULL);
    KT_CHECK_EQ_U64(kt_mallocs - before, 1); /* one allocation when the room runs out */
    KT_CHECK_EQ_U64(k.count, 17);
    for (i = 0; i < 17; i++) {
        snprintf(name, sizeof name, "n%02d", i);
        KT_CHECK(field_named(&k, name) != NULL);
    }
    kcache_key_free(&k);
    KT_CHECK(k.heap == NULL);
    kcache_key_free(&k); /* twice: harmless */
}

/* Digest of a key made of one unit and up to two (type, name, value) fields. */
enum { T_NONE, T_BYTES, T_STR, T_U64 };
static kcache_hash128 dig2(const char *unit, int t1, const char *n1, const char *v1, int t2, const char *n2,
                           const char *v2)
{
    kcache_key k;
    kcache_hash128 h;
    int t[2];
    const char *n[2], *v[2];
    int i;
    t[0] = t1; t[1] = t2; n[0] = n1; n[1] = n2; v[0] = v1; v[1] = v2;
    kcache_key_init(&k, unit);
    for (i = 0; i < 2; i++) {
        if (t[i] == T_BYTES) kcache_key_bytes(&k, n[i], v[i], strlen(v[i]));
        else if (t[i] == T_STR) kcache_key_str(&k, n[i], v[i]);
        else if (t[i] == T_U64) kcache_key_u64(&k, n[i], strtoull(v[i], NULL, 0));
    }
    h = kcache_key_digest(&k);
    if (k.error != KCACHE_OK) h.lo = h.hi = 0;
    kcache_key_free(&k);
    return h;
}

static void test_distinct(void)
{
    kcache_hash128 d[64];
    const char *what[64];
    int n = 0, i, j;
    unsigned char le[8];
    kcache_key k;
#define ADD(desc, expr) do { what[n] = desc; d[n++] = (expr); } while (0)
    /* two fields: ("ab","c") against ("a","bc") */
    ADD("x=ab y=c", dig2("u", T_STR, "x", "ab", T_STR, "y", "c"));
    ADD("x=a y=bc", dig2("u", T_STR, "x", "a", T_STR, "y", "bc"));
    ADD("x=abc y=", dig2("u", T_STR, "x", "abc", T_STR, "y", ""));
    ADD("x= y=abc", dig2("u", T_STR, "x", "", T_STR, "y", "abc"));
    ADD("x=c y=ab (values swapped)", dig2("u", T_STR, "x", "c", T_STR, "y", "ab"));
    ADD("names swapped: x=ab z=c", dig2("u", T_STR, "z", "c", T_STR, "x", "ab"));
    /* one field: name/value boundary */
    ADD("name ab value c", dig2("u", T_STR, "ab", "c", T_NONE, 0, 0));
    ADD("name a value bc", dig2("u", T_STR, "a", "bc", T_NONE, 0, 0));
    ADD("name abc value empty", dig2("u", T_STR, "abc", "", T_NONE, 0, 0));
    ADD("name a value b + name c empty", dig2("u", T_STR, "a", "b", T_STR, "c", ""));
    /* the same bytes as bytes, str, u64 */
    ADD("bytes ab", dig2("u", T_BYTES, "ab", "c", T_NONE, 0, 0));
    ADD("bytes a=bc", dig2("u", T_BYTES, "a", "bc", T_NONE, 0, 0));
    ADD("str x=12345678", dig2("u", T_STR, "x", "12345678", T_NONE, 0, 0));
    ADD("bytes x=12345678", dig2("u", T_BYTES, "x", "12345678", T_NONE, 0, 0));
    ADD("u64 x=12345678", dig2("u", T_U64, "x", "12345678", T_NONE, 0, 0));
    /* empty values of each type, and no field at all */
    ADD("str x empty", dig2("u", T_STR, "x", "", T_NONE, 0, 0));
    ADD("bytes x empty", dig2("u", T_BYTES, "x", "", T_NONE, 0, 0));
    ADD("u64 x=0", dig2("u", T_U64, "x", "0", T_NONE, 0, 0));
    ADD("no field", dig2("u", T_NONE, 0, 0, T_NONE, 0, 0));
    /* the unit is part of the key */
    ADD("unit v, str x=ab y=c", dig2("v", T_STR, "x", "ab", T_STR, "y", "c"));
    ADD("unit uu, no field", dig2("uu", T_NONE, 0, 0, T_NONE, 0, 0));
    ADD("unit ux, no field", dig2("ux", T_NONE, 0, 0, T_NONE, 0, 0));
    ADD("unit u, str x=ab y=c but unit 'ux'", dig2("ux", T_STR, "x", "ab", T_STR, "y", "c"));
    /* unit/field boundary: unit "ua" + field "b" against unit "u" + field "ab" */
    ADD("unit ua field b=1", dig2("ua", T_STR, "b", "1", T_NONE, 0, 0));
    ADD("unit u field ab=1", dig2("u", T_STR, "ab", "1", T_NONE, 0, 0));
    ADD("u64 x=1", dig2("u", T_U64, "x", "1", T_NONE, 0, 0));
    ADD("u64 x=256", dig2("u", T_U64, "x", "256", T_NONE, 0, 0));
    /* u64 against the 8 little-endian bytes of the same number */
    kcache__put_u64(le, 1);
    kcache_key_init(&k, "u");
    kcache_key_bytes(&k, "x", le, 8);
    ADD("bytes x = le64(1)", kcache_key_digest(&k));
    kcache_key_free(&k);
    kcache_key_init(&k, "u");
    kcache_key_file(&k, "x", "/nonexistent/ab");
    ADD("file x (digest even when missing)", k.digest);
    kcache_key_free(&k);
    kcache_key_init(&k, "u");
    kcache_key_str(&k, "x", "/nonexistent/ab");
    ADD("str x = same path", kcache_key_digest(&k));
    kcache_key_free(&k);
#undef ADD
    for (i = 0; i < n; i++) {
        KT_CHECK_MSG(d[i].lo || d[i].hi, "%s: zero digest (the key failed)", what[i]);
        for (j = i + 1; j < n; j++)
            KT_CHECK_MSG(!heq(d[i], d[j]), "same digest for \"%s\" and \"%s\"", what[i], what[j]);
    }
    /* and equal keys are equal */
    KT_CHECK(heq(dig2("u", T_STR, "x", "ab", T_STR, "y", "c"), dig2("u", T_STR, "y", "c", T_STR, "x", "ab")));
    KT_CHECK(heq(dig2("u", T_U64, "x", "0x10", T_NONE, 0, 0), dig2("u", T_U64, "x", "16", T_NONE, 0, 0)));
}

static void test_duplicates_sticky(void)
{
    kcache_key k;
    kcache *kc;
    kcache_config cfg;
    const void *p;
    size_t n;
    char buf[256];
    kcache_hash128 before;
    KT_CHECK(kcache_key_init(&k, "dup") == KCACHE_OK);
    KT_CHECK(kcache_key_str(&k, "a", "1") == KCACHE_OK);
    before = k.digest;
    KT_CHECK(kcache_key_str(&k, "a", "1") == KCACHE_EEXIST);
    KT_CHECK(kcache_key_bytes(&k, "a", "1", 1) == KCACHE_EEXIST);
    KT_CHECK(kcache_key_u64(&k, "a", 1) == KCACHE_EEXIST);
    KT_CHECK(kcache_key_file(&k, "a", "/etc/hostname") == KCACHE_EEXIST);
    KT_CHECK_EQ_U64(k.count, 1);
    KT_CHECK(heq(k.digest, before)); /* a refused add changes nothing */
    KT_CHECK(k.error == KCACHE_EEXIST);
    /* a later good add succeeds but the error stays */
    KT_CHECK(kcache_key_str(&k, "b", "2") == KCACHE_OK);
    KT_CHECK(k.error == KCACHE_EEXIST);

    kcache_config_init(&cfg);
    cfg.persistent = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) { kcache_key_free(&k); return; }
    KT_CHECK(kcache_put(kc, &k, "x", 1) == KCACHE_EEXIST); /* put refuses a key with an error */
    KT_CHECK(kcache_get(kc, &k, &p, &n) != KCACHE_OK);
    KT_CHECK(p == NULL && n == 0);
    {
        /* a good key with the same digest as the bad one cannot lend it a hit */
        kcache_key g;
        kcache_key_init(&g, "dup");
        kcache_key_str(&g, "a", "1");
        kcache_key_str(&g, "b", "2");
        KT_CHECK(heq(g.digest, k.digest)); /* same fields: the digest alone would match */
        KT_CHECK(kcache_put(kc, &g, "payload", 7) == KCACHE_OK);
        KT_CHECK(kcache_get(kc, &g, &p, &n) == KCACHE_OK);
        if (p) kcache_release(kc, p);
        KT_CHECK(kcache_get(kc, &k, &p, &n) != KCACHE_OK);
        KT_CHECK(p == NULL);
        KT_CHECK(kcache_remove(kc, &k) != KCACHE_OK);
        KT_CHECK(kcache_get(kc, &g, &p, &n) == KCACHE_OK); /* the bad key's remove removed nothing */
        if (p) kcache_release(kc, p);
        kcache_key_free(&g);
    }
    kcache_explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "incomplete") != NULL, "explain: %s", buf);
    kcache_close(kc);
    kcache_key_free(&k);
}

static void test_previews(void)
{
    kcache_key k;
    const kcache_key_field *f;
    char hex[33], want[128], longs[200], path[700];
    unsigned char bin[10] = {0, 1, 2, 3, 0xff, 0xfe, 0x80, 7, 8, 9};
    unsigned char big[65];
    size_t i;
    KT_CHECK(kcache_key_init(&k, "preview") == KCACHE_OK);
    kcache_key_str(&k, "short", "-O2 -DN=4");
    kcache_key_str(&k, "esc", "a\nb\tc\"d\\e\x01\x7f");
    kcache_key_str(&k, "empty", "");
    memset(longs, 'x', 150);
    longs[150] = 0;
    kcache_key_str(&k, "long", longs);
    kcache_key_bytes(&k, "bin", bin, sizeof bin);
    kcache_key_bytes(&k, "textbytes", "hello", 5);
    memset(big, 'a', sizeof big);
    kcache_key_bytes(&k, "bigtext", big, sizeof big); /* over 64 bytes: a digest even when printable */
    kcache_key_u64(&k, "zero", 0);
    kcache_key_u64(&k, "max", UINT64_MAX);
    kcache_key_file(&k, "dep", "/nonexistent/dir/file.cl");
    KT_CHECK(k.error == KCACHE_ENOENT); /* the missing file */

    if ((f = field_named(&k, "short")) != NULL) {
        KT_CHECK_STR(f->preview, "-O2 -DN=4");
        KT_CHECK_EQ_U64(f->type, KCACHE_FIELD_STR);
        KT_CHECK_EQ_U64(f->size, 9);
        KT_CHECK(heq(f->digest, kcache_hash("-O2 -DN=4", 9)));
    } else KT_FAILF("no field short");
    if ((f = field_named(&k, "esc")) != NULL) KT_CHECK_STR(f->preview, "a\\nb\\tc\\\"d\\\\e\\x01\\x7f");
    else KT_FAILF("no field esc");
    if ((f = field_named(&k, "empty")) != NULL) {
        KT_CHECK_STR(f->preview, "");
        KT_CHECK_EQ_U64(f->size, 0);
        KT_CHECK(heq(f->digest, kcache_hash(NULL, 0)));
    } else KT_FAILF("no field empty");
    if ((f = field_named(&k, "long")) != NULL) {
        memset(want, 'x', 64);
        memcpy(want + 64, "...", 4);
        KT_CHECK_STR(f->preview, want);
        KT_CHECK_EQ_U64(f->size, 150);
        KT_CHECK(heq(f->digest, kcache_hash(longs, 150)));
    } else KT_FAILF("no field long");
    if ((f = field_named(&k, "bin")) != NULL) {
        kcache_hash_hex(kcache_hash(bin, sizeof bin), hex);
        snprintf(want, sizeof want, "<10 bytes xxh128:%s>", hex);
        KT_CHECK_STR(f->preview, want);
        KT_CHECK_EQ_U64(f->type, KCACHE_FIELD_BYTES);
    } else KT_FAILF("no field bin");
    if ((f = field_named(&k, "textbytes")) != NULL) KT_CHECK_STR(f->preview, "hello");
    else KT_FAILF("no field textbytes");
    if ((f = field_named(&k, "bigtext")) != NULL) {
        kcache_hash_hex(kcache_hash(big, sizeof big), hex);
        snprintf(want, sizeof want, "<65 bytes xxh128:%s>", hex);
        KT_CHECK_STR(f->preview, want);
    } else KT_FAILF("no field bigtext");
    if ((f = field_named(&k, "zero")) != NULL) {
        unsigned char le[8];
        KT_CHECK_STR(f->preview, "0");
        KT_CHECK_EQ_U64(f->type, KCACHE_FIELD_U64);
        KT_CHECK_EQ_U64(f->size, 8);
        kcache__put_u64(le, 0);
        KT_CHECK(heq(f->digest, kcache_hash(le, 8)));
    } else KT_FAILF("no field zero");
    if ((f = field_named(&k, "max")) != NULL) KT_CHECK_STR(f->preview, "18446744073709551615");
    else KT_FAILF("no field max");
    if ((f = field_named(&k, "dep")) != NULL) {
        KT_CHECK_STR(f->preview, "/nonexistent/dir/file.cl");
        KT_CHECK_EQ_U64(f->type, KCACHE_FIELD_FILE);
        KT_CHECK(heq(f->digest, kcache_hash("/nonexistent/dir/file.cl", strlen("/nonexistent/dir/file.cl"))));
    } else KT_FAILF("no field dep");
    /* every preview is printable and within its array */
    for (i = 0; i < k.count; i++) {
        const char *p = kcache__key_fields(&k)[i].preview;
        size_t j, len = strnlen(p, KCACHE_PREVIEW_MAX);
        KT_CHECK_MSG(len < KCACHE_PREVIEW_MAX, "preview of %s not terminated", kcache__key_fields(&k)[i].name);
        for (j = 0; j < len; j++) KT_CHECK(p[j] >= 0x20 && p[j] < 0x7f);
    }
    kcache_key_free(&k);

    /* escapes that do not fit: 64 control bytes make 256 escaped characters; the preview is cut
       on a whole escape and ends with "..." */
    {
        char ctl[65];
        memset(ctl, 1, 64);
        ctl[64] = 0;
        kcache_key_init(&k, "preview");
        kcache_key_str(&k, "ctl", ctl);
        f = field_named(&k, "ctl");
        if (f) {
            size_t len = strnlen(f->preview, KCACHE_PREVIEW_MAX);
            KT_CHECK(len < KCACHE_PREVIEW_MAX);
            KT_CHECK(len >= 3 && strcmp(f->preview + len - 3, "...") == 0);
            KT_CHECK(strncmp(f->preview, "\\x01\\x01\\x01", 12) == 0);
            KT_CHECK((len - 3) % 4 == 0);
        }
        kcache_key_free(&k);
    }

    /* a long path keeps its end: "..." then the last 64 bytes */
    memset(path, 0, sizeof path);
    strcpy(path, "/very/long/");
    for (i = strlen(path); i < 200; i++) path[i] = (char)('a' + i % 26);
    strcpy(path + 200, "/end.cl");
    kcache_key_init(&k, "preview");
    kcache_key_file(&k, "dep", path);
    if ((f = field_named(&k, "dep")) != NULL) {
        snprintf(want, sizeof want, "...%s", path + strlen(path) - 64);
        KT_CHECK_STR(f->preview, want);
        KT_CHECK(heq(f->digest, kcache_hash(path, strlen(path))));
    }
    kcache_key_free(&k);
}

/* A long path whose last 64 bytes escape to more than the preview's room (UTF-8 names, tabs,
   backslashes): the preview must stay inside its array and the field digest must stay the hash
   of the path. */
static void test_file_preview_escaped_tail(void)
{
    kcache_key k, back;
    const kcache_key_field *f;
    char path[1024];
    size_t i, len;
    unsigned char rec[4096];
    kcache__wbuf w;
    strcpy(path, "/some/project/directory/with/a/long/name/");
    len = strlen(path);
    for (i = 0; i < 40; i++) { /* 40 x "é" (0xc3 0xa9): the last 64 bytes all escape to \xNN */
        path[len++] = (char)0xc3;
        path[len++] = (char)0xa9;
    }
    path[len] = 0;
    KT_CHECK(kcache_key_init(&k, "utf8") == KCACHE_OK);
    kcache_key_file(&k, "dep", path); /* missing: ENOENT, but the field is there */
    f = field_named(&k, "dep");
    if (!f) { KT_FAILF("no field dep"); kcache_key_free(&k); return; }
    KT_CHECK_MSG(strnlen(f->preview, KCACHE_PREVIEW_MAX) < KCACHE_PREVIEW_MAX,
                 "preview of a long escaped path overruns preview[%d] (strlen %zu)", KCACHE_PREVIEW_MAX,
                 strlen(f->preview));
    KT_CHECK_MSG(heq(f->digest, kcache_hash(path, len)),
                 "field digest is not kcache_hash(path): the preview wrote over it");
    KT_CHECK(strncmp(f->preview, "...", 3) == 0);
    /* the key's record must still parse */
    KT_CHECK(kcache__record_size(&k) <= sizeof rec);
    w.p = rec; w.len = 0; w.cap = sizeof rec; w.overflow = 0;
    k.error = KCACHE_OK; /* the record of the fields, whatever the stat said */
    kcache__record_write(&k, &w);
    KT_CHECK(!w.overflow);
    KT_CHECK_MSG(kcache__record_parse(rec, w.len, &back) == KCACHE_OK, "the record of that key does not parse back");
    kcache_key_free(&back);
    kcache_key_free(&k);
}

/* The content digest a lookup (by kc, may be NULL, under policy) takes for a file field
   (kcache_key_file leaves it pending); *read: whether the file itself was read for it (not a memo
   of the process or of the store). */
static kcache_hash128 content_in(kcache *kc, const kcache_key *k, const char *name, int policy, int *read)
{
    kcache_key *copy = NULL;
    const kcache_key *rk = kcache__key_resolve(kc, k, policy, &copy);
    const kcache_key_field *f = rk ? field_named(rk, name) : NULL;
    kcache_hash128 h = {0, 0};
    if (f && rk->error == KCACHE_OK) {
        h = f->content;
        if (read) *read = f->reserved == 0;
    }
    kcache__key_drop(kc ? &kc->mem : NULL, copy);
    return h;
}
static kcache_hash128 content_of(const kcache_key *k, const char *name, int *read)
{
    return content_in(NULL, k, name, KCACHE_STAMP_HYBRID, read);
}

/* Unchanged dependencies cost a stat, not a read: a file keyed again under the same stat takes its
   content digest from the process's memo; an edited one is read again; KCACHE_STAMP=content reads
   it every time; a big file's digest is kept in the store, so a process with an empty memo (the
   memo wiped here) takes it from there, also after a touch that left the content as it was. */
static void test_key_file_memo(void)
{
    kcache_key k, k2;
    const kcache_key_field *f;
    char path[600], dir[600], *big;
    int read = -1;
    size_t i, nbig = ((size_t)1 << 20) + 4096;
    kcache_hash128 h;
    kcache *kc;
    kcache_config cfg;
    const void *p;
    size_t n;
    struct timespec ts[2];

    snprintf(path, sizeof path, "%s/memo.cl", tmpdir);
    write_file(path, "kernel one", 10);
    kcache_key_init(&k, "memo");
    KT_CHECK(kcache_key_file(&k, "src", path) == KCACHE_OK);
    f = field_named(&k, "src");
    KT_CHECK(f && f->reserved == KCACHE__FF_PENDING); /* nothing read yet */
    h = content_of(&k, "src", &read);
    KT_CHECK(heq(h, kcache_hash("kernel one", 10)) && read == 1);
    kcache_key_init(&k2, "memo");
    KT_CHECK(kcache_key_file(&k2, "src", path) == KCACHE_OK);
    f = field_named(&k2, "src");
    KT_CHECK_MSG(f && f->reserved == KCACHE__FF_MEMO, "an unchanged file keyed again is not taken from the memo");
    KT_CHECK(f && heq(f->content, h));
    h = content_of(&k2, "src", &read);
    KT_CHECK(heq(h, kcache_hash("kernel one", 10)) && read == 0);
    read = -1; /* KCACHE_STAMP=content reads it all the same */
    KT_CHECK(heq(content_in(NULL, &k2, "src", KCACHE_STAMP_CONTENT, &read), h) && read == 1);
    kcache_key_free(&k);
    kcache_key_free(&k2);
    write_file(path, "kernel two", 10); /* same size, other content (and another ctime) */
    kcache_key_init(&k, "memo");
    KT_CHECK(kcache_key_file(&k, "src", path) == KCACHE_OK);
    f = field_named(&k, "src");
    KT_CHECK(f && f->reserved == KCACHE__FF_PENDING);
    KT_CHECK(heq(content_of(&k, "src", &read), kcache_hash("kernel two", 10)) && read == 1);
    kcache_key_free(&k);

    /* a big file's digest in the store */
    snprintf(path, sizeof path, "%s/big.so", tmpdir);
    snprintf(dir, sizeof dir, "%s/memo-store", tmpdir);
    big = (char *)malloc(nbig);
    if (!big) { KT_FAILF("malloc"); return; }
    for (i = 0; i < nbig; i++) big[i] = (char)(i * 7 + (i >> 12));
    write_file(path, big, nbig);
    kcache_config_init(&cfg);
    cfg.dir = dir;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK && kcache_dir(kc) != NULL);
    if (!kc) { free(big); return; }
    kcache_key_init(&k, "lib");
    KT_CHECK(kcache_key_file(&k, "library", path) == KCACHE_OK);
    KT_CHECK(kcache_put(kc, &k, "ptx", 3) == KCACHE_OK); /* reads the file once, keeps its digest */
    kcache_key_free(&k);
    memset(kcache__reg.memo, 0, sizeof kcache__reg.memo); /* as in a new process */
    kcache_key_init(&k, "lib");
    KT_CHECK(kcache_key_file(&k, "library", path) == KCACHE_OK);
    read = -1;
    KT_CHECK(heq(content_in(kc, &k, "library", KCACHE_STAMP_HYBRID, &read), kcache_hash(big, nbig)));
    KT_CHECK_MSG(read == 0, "a big file's digest was not taken from the store");
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK && n == 3);
    if (n == 3) kcache_release(kc, p);
    kcache_key_free(&k);
    /* touched, content as it was: a hybrid hit; the next process takes the new stat's digest from the store */
    ts[0].tv_sec = ts[1].tv_sec = time(NULL) + 100;
    ts[0].tv_nsec = ts[1].tv_nsec = 0;
    KT_CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
    kcache_key_init(&k, "lib");
    KT_CHECK(kcache_key_file(&k, "library", path) == KCACHE_OK);
    KT_CHECK_MSG(kcache_get(kc, &k, &p, &n) == KCACHE_OK && n == 3, "a touched, unchanged dependency misses under hybrid");
    if (n == 3) kcache_release(kc, p);
    kcache_key_free(&k);
    memset(kcache__reg.memo, 0, sizeof kcache__reg.memo);
    kcache_key_init(&k, "lib");
    KT_CHECK(kcache_key_file(&k, "library", path) == KCACHE_OK);
    read = -1;
    KT_CHECK(heq(content_in(kc, &k, "library", KCACHE_STAMP_HYBRID, &read), kcache_hash(big, nbig)));
    KT_CHECK_MSG(read == 0, "the touched file's digest was not kept in the store");
    kcache_key_free(&k);
    kcache_close(kc);
    free(big);
}

static void test_key_file(void)
{
    kcache_key k, k2;
    const kcache_key_field *f;
    char path[600], data[3000];
    struct stat st;
    size_t i;
    int64_t mt;
    kcache *kc;
    kcache_config cfg;
    const void *p;
    size_t n;
    snprintf(path, sizeof path, "%s/src.cl", tmpdir);
    for (i = 0; i < sizeof data; i++) data[i] = (char)('A' + i % 50);
    write_file(path, data, sizeof data);
    KT_CHECK(stat(path, &st) == 0);
    mt = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;

    KT_CHECK(kcache_key_init(&k, "file") == KCACHE_OK);
    KT_CHECK(kcache_key_file(&k, "src", path) == KCACHE_OK);
    KT_CHECK(k.error == KCACHE_OK);
    f = field_named(&k, "src");
    if (f) {
        KT_CHECK_EQ_U64(f->type, KCACHE_FIELD_FILE);
        KT_CHECK_EQ_U64((uint64_t)f->mtime_ns, (uint64_t)mt);
        KT_CHECK_EQ_U64(f->file_size, sizeof data);
        KT_CHECK(heq(content_of(&k, "src", NULL), kcache_hash(data, sizeof data)));
        KT_CHECK(heq(f->digest, kcache_hash(path, strlen(path))));
        KT_CHECK_EQ_U64(f->size, strlen(path));
        if (strlen(path) <= 64) KT_CHECK_STR(f->preview, path);
    } else KT_FAILF("no field src");

    /* the stamp is not in the digest: different content, same name and path, same digest */
    data[0] = 'z';
    write_file(path, data, sizeof data);
    KT_CHECK(kcache_key_init(&k2, "file") == KCACHE_OK);
    KT_CHECK(kcache_key_file(&k2, "src", path) == KCACHE_OK);
    KT_CHECK(heq(k.digest, k2.digest));
    KT_CHECK(heq(content_of(&k2, "src", NULL), kcache_hash(data, sizeof data)));
    kcache_key_free(&k2);

    /* an empty file */
    snprintf(path, sizeof path, "%s/empty.cl", tmpdir);
    write_file(path, "", 0);
    kcache_key_init(&k2, "file");
    KT_CHECK(kcache_key_file(&k2, "e", path) == KCACHE_OK);
    f = field_named(&k2, "e");
    if (f) {
        KT_CHECK_EQ_U64(f->file_size, 0);
        KT_CHECK(heq(content_of(&k2, "e", NULL), kcache_hash(NULL, 0)));
    }
    kcache_key_free(&k2);
    kcache_key_free(&k);

    /* a missing file: ENOENT, the error is kept, and the key never matches */
    snprintf(path, sizeof path, "%s/missing.cl", tmpdir);
    kcache_key_init(&k, "file");
    KT_CHECK(kcache_key_file(&k, "src", path) == KCACHE_ENOENT);
    KT_CHECK(k.error == KCACHE_ENOENT);
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (kc) {
        KT_CHECK(kcache_put(kc, &k, "abc", 3) != KCACHE_OK);
        KT_CHECK(kcache_get(kc, &k, &p, &n) != KCACHE_OK);
        kcache_close(kc);
    }
    kcache_key_free(&k);

    /* a directory is not a readable file */
    kcache_key_init(&k, "file");
    KT_CHECK(kcache_key_file(&k, "src", tmpdir) != KCACHE_OK);
    KT_CHECK(k.error != KCACHE_OK);
    kcache_key_free(&k);
}

static void test_bad_input(void)
{
    kcache_key k;
    char unit[KCACHE_UNIT_MAX + 8], name[KCACHE_FIELD_NAME_MAX + 8];
    kcache_hash128 z;

    KT_CHECK(kcache_key_init(NULL, "u") == KCACHE_EINVAL);
    KT_CHECK(kcache_key_init(&k, NULL) == KCACHE_EINVAL);
    KT_CHECK(k.error == KCACHE_EINVAL);
    KT_CHECK(kcache_key_str(&k, "a", "b") == KCACHE_OK || k.error != KCACHE_OK); /* safe to use */
    KT_CHECK(k.error == KCACHE_EINVAL); /* still never matches */
    kcache_key_free(&k);
    KT_CHECK(kcache_key_init(&k, "") == KCACHE_EINVAL);
    kcache_key_free(&k);

    memset(unit, 'u', sizeof unit);
    unit[KCACHE_UNIT_MAX - 1] = 0; /* 255 bytes + NUL: the longest */
    KT_CHECK(kcache_key_init(&k, unit) == KCACHE_OK);
    KT_CHECK_EQ_U64(strlen(k.unit), KCACHE_UNIT_MAX - 1);
    kcache_key_free(&k);
    unit[KCACHE_UNIT_MAX - 1] = 'u';
    unit[KCACHE_UNIT_MAX] = 0; /* 256 bytes: too long */
    KT_CHECK(kcache_key_init(&k, unit) == KCACHE_ETOOBIG);
    KT_CHECK(k.error == KCACHE_ETOOBIG);
    kcache_key_free(&k);

    KT_CHECK(kcache_key_init(&k, "bad") == KCACHE_OK);
    memset(name, 'n', sizeof name);
    name[KCACHE_FIELD_NAME_MAX - 1] = 0; /* 47 bytes: the longest */
    KT_CHECK(kcache_key_u64(&k, name, 1) == KCACHE_OK);
    KT_CHECK(k.error == KCACHE_OK);
    name[KCACHE_FIELD_NAME_MAX - 1] = 'n';
    name[KCACHE_FIELD_NAME_MAX] = 0; /* 48 bytes */
    KT_CHECK(kcache_key_u64(&k, name, 1) == KCACHE_ETOOBIG);
    KT_CHECK(k.error == KCACHE_ETOOBIG);
    KT_CHECK_EQ_U64(k.count, 1);
    kcache_key_free(&k);

    /* NULL and empty names, NULL values, a non-printable name: EINVAL, recorded */
#define BAD(call, want)                                                                          \
    do {                                                                                         \
        kcache_key_init(&k, "bad");                                                              \
        KT_CHECK_MSG((call) == (want), "%s != %s", #call, #want);                                \
        KT_CHECK_MSG(k.error == (want), "%s: error not kept", #call);                           \
        KT_CHECK_EQ_U64(k.count, 0);                                                             \
        kcache_key_free(&k);                                                                     \
    } while (0)
    BAD(kcache_key_str(&k, NULL, "v"), KCACHE_EINVAL);
    BAD(kcache_key_str(&k, "", "v"), KCACHE_EINVAL);
    BAD(kcache_key_str(&k, "n", NULL), KCACHE_EINVAL);
    BAD(kcache_key_bytes(&k, NULL, "v", 1), KCACHE_EINVAL);
    BAD(kcache_key_bytes(&k, "n", NULL, 1), KCACHE_EINVAL);
    BAD(kcache_key_bytes(&k, "", "v", 1), KCACHE_EINVAL);
    BAD(kcache_key_u64(&k, NULL, 1), KCACHE_EINVAL);
    BAD(kcache_key_u64(&k, "", 1), KCACHE_EINVAL);
    BAD(kcache_key_u64(&k, "tab\there", 1), KCACHE_EINVAL);
    BAD(kcache_key_u64(&k, "nl\n", 1), KCACHE_EINVAL);
    BAD(kcache_key_u64(&k, "\xc3\xa9", 1), KCACHE_EINVAL);
    BAD(kcache_key_file(&k, NULL, "/etc/passwd"), KCACHE_EINVAL);
    BAD(kcache_key_file(&k, "f", NULL), KCACHE_EINVAL);
    BAD(kcache_key_file(&k, "f", ""), KCACHE_EINVAL);
#undef BAD
    /* NULL, 0 is an empty value */
    kcache_key_init(&k, "bad");
    KT_CHECK(kcache_key_bytes(&k, "empty", NULL, 0) == KCACHE_OK);
    KT_CHECK(k.error == KCACHE_OK);
    kcache_key_free(&k);

    /* NULL keys */
    KT_CHECK(kcache_key_str(NULL, "a", "b") == KCACHE_EINVAL);
    KT_CHECK(kcache_key_str(NULL, "a", NULL) == KCACHE_EINVAL);
    KT_CHECK(kcache_key_bytes(NULL, "a", "b", 1) == KCACHE_EINVAL);
    KT_CHECK(kcache_key_bytes(NULL, "a", NULL, 1) == KCACHE_EINVAL);
    KT_CHECK(kcache_key_u64(NULL, "a", 1) == KCACHE_EINVAL);
    KT_CHECK(kcache_key_file(NULL, "a", "/etc/passwd") == KCACHE_EINVAL);
    KT_CHECK(kcache_key_file(NULL, "a", NULL) == KCACHE_EINVAL);
    KT_CHECK(kcache_key_host(NULL) == KCACHE_EINVAL);
    KT_CHECK(kcache_key_host_from(NULL, NULL) == KCACHE_EINVAL);
    z = kcache_key_digest(NULL);
    KT_CHECK(z.lo == 0 && z.hi == 0);
    kcache_key_free(NULL);
}

static void test_big_field(void)
{
    size_t n = (size_t)64 << 20, i;
    unsigned char *big = (unsigned char *)malloc(n);
    kcache_key k, k2;
    const kcache_key_field *f;
    char hex[33], want[128];
    if (!big) { KT_FAILF("malloc 64 MiB"); return; }
    for (i = 0; i < n; i += 8) {
        uint64_t v = (uint64_t)i * 0x9E3779B97F4A7C15ULL;
        memcpy(big + i, &v, 8);
    }
    KT_CHECK(kcache_key_init(&k, "big") == KCACHE_OK);
    KT_CHECK(kcache_key_bytes(&k, "blob", big, n) == KCACHE_OK);
    KT_CHECK(k.error == KCACHE_OK);
    f = field_named(&k, "blob");
    if (f) {
        KT_CHECK_EQ_U64(f->size, n);
        KT_CHECK(heq(f->digest, kcache_hash(big, n)));
        kcache_hash_hex(f->digest, hex);
        snprintf(want, sizeof want, "<%zu bytes xxh128:%s>", n, hex);
        KT_CHECK_STR(f->preview, want);
    }
    /* one byte different at the end: another key */
    big[n - 1] ^= 1;
    kcache_key_init(&k2, "big");
    kcache_key_bytes(&k2, "blob", big, n);
    KT_CHECK(!heq(k.digest, k2.digest));
    kcache_key_free(&k2);
    /* a 64 MiB string (all text) */
    memset(big, 's', n - 1);
    big[n - 1] = 0;
    KT_CHECK(kcache_key_str(&k, "text", (const char *)big) == KCACHE_OK);
    f = field_named(&k, "text");
    if (f) {
        KT_CHECK_EQ_U64(f->size, n - 1);
        KT_CHECK(strlen(f->preview) == 67 && strcmp(f->preview + 64, "...") == 0);
    }
    kcache_key_free(&k);
    free(big);
}

/* ---- the key record ------------------------------------------------------------------------ */

static unsigned char *record_of(const kcache_key *k, size_t *len)
{
    size_t n = kcache__record_size(k);
    unsigned char *p = (unsigned char *)malloc(n + 16);
    kcache__wbuf w;
    w.p = p; w.len = 0; w.cap = n; w.overflow = 0;
    kcache__record_write(k, &w);
    if (w.overflow || w.len != n) { free(p); *len = 0; return NULL; }
    *len = n;
    return p;
}

static void build_record_key(kcache_key *k)
{
    char path[600], name[32];
    int i;
    snprintf(path, sizeof path, "%s/dep.h", tmpdir);
    write_file(path, "#define N 4\n", 12);
    kcache_key_init(k, "record.unit");
    kcache_key_str(k, "source", "__kernel void f(__global int *a) { a[0] = 1; }\n\tdone");
    kcache_key_bytes(k, "spec", "\x00\x01\x02\xff", 4);
    kcache_key_u64(k, "ver", 77);
    kcache_key_file(k, "dep", path);
    kcache_key_str(k, "empty", "");
    for (i = 0; i < 20; i++) { /* past the inline room */
        snprintf(name, sizeof name, "extra.%02d", i);
        kcache_key_u64(k, name, (uint64_t)i * 1000003u);
    }
}

static void test_record_roundtrip(void)
{
    kcache_key k, back;
    unsigned char *rec;
    size_t len;
    uint32_t i;
    build_record_key(&k);
    KT_CHECK(k.error == KCACHE_OK);
    rec = record_of(&k, &len);
    KT_CHECK(rec != NULL);
    if (!rec) { kcache_key_free(&k); return; }
    KT_CHECK(kcache__record_parse(rec, len, &back) == KCACHE_OK);
    KT_CHECK(back.error == KCACHE_OK);
    KT_CHECK_STR(back.unit, k.unit);
    KT_CHECK_EQ_U64(back.count, k.count);
    KT_CHECK(heq(kcache_key_digest(&back), kcache_key_digest(&k)));
    for (i = 0; i < k.count && i < back.count; i++) {
        const kcache_key_field *a = &kcache__key_fields(&k)[i], *b = &kcache__key_fields(&back)[i];
        KT_CHECK_STR(a->name, b->name);
        KT_CHECK_STR(a->preview, b->preview);
        KT_CHECK(heq(a->digest, b->digest));
        KT_CHECK_EQ_U64(a->size, b->size);
        KT_CHECK_EQ_U64(a->type, b->type);
        KT_CHECK_EQ_U64((uint64_t)a->mtime_ns, (uint64_t)b->mtime_ns);
        KT_CHECK_EQ_U64(a->file_size, b->file_size);
        KT_CHECK(heq(a->content, b->content));
    }
    KT_CHECK(kcache__record_match(rec, len, &k, KCACHE_STAMP_HYBRID) == KCACHE__MATCH);
    KT_CHECK(kcache__record_match(rec, len, &back, KCACHE_STAMP_CONTENT) == KCACHE__MATCH);
    {
        /* the record written from the parsed key is byte-identical */
        size_t len2;
        unsigned char *rec2 = record_of(&back, &len2);
        KT_CHECK(rec2 && len2 == len && memcmp(rec, rec2, len) == 0);
        free(rec2);
    }
    kcache_key_free(&back);

    /* an empty key (no field) round-trips too */
    {
        kcache_key e;
        size_t elen;
        unsigned char *erec;
        kcache_key_init(&e, "e");
        erec = record_of(&e, &elen);
        KT_CHECK(erec && kcache__record_parse(erec, elen, &back) == KCACHE_OK);
        KT_CHECK(heq(back.digest, e.digest));
        kcache_key_free(&back);
        free(erec);
        kcache_key_free(&e);
    }

    /* every truncation is ECORRUPT (and leaves a key that is safe to free and never matches) */
    for (i = 0; i < len; i++) {
        kcache_status s = kcache__record_parse(rec, i, &back);
        KT_CHECK_MSG(s == KCACHE_ECORRUPT, "truncated to %u bytes: %s", (unsigned)i, kcache_strerror(s));
        KT_CHECK(back.error != KCACHE_OK);
        kcache_key_free(&back);
        if (s != KCACHE_ECORRUPT) break;
    }
    free(rec);
    kcache_key_free(&k);
}

static void test_record_mutations(void)
{
    kcache_key k, back;
    unsigned char *rec, *m;
    size_t len;
    int t, ok = 0, bad = 0, other = 0;
    build_record_key(&k);
    rec = record_of(&k, &len);
    if (!rec) { KT_FAILF("no record"); kcache_key_free(&k); return; }
    m = (unsigned char *)malloc(len + 64);
    for (t = 0; t < 5000; t++) {
        size_t mlen = len, j;
        int edits = 1 + (int)(rng() % 4);
        kcache_status s;
        memcpy(m, rec, len);
        for (j = 0; j < (size_t)edits; j++) {
            size_t at = (size_t)(rng() % len);
            switch (rng() % 5) {
            case 0: m[at] ^= (unsigned char)(1u << (rng() % 8)); break; /* flip a bit */
            case 1: m[at] = (unsigned char)rng(); break;                 /* random byte */
            case 2: m[at] = (rng() & 1) ? 0xff : 0; break;               /* extremes */
            case 3: mlen = at; break;                                    /* truncate */
            default: m[rng() % 4] = (unsigned char)rng(); break;         /* the unit length / count */
            }
        }
        if (t % 7 == 0) { /* trailing garbage */
            for (j = 0; j < 16; j++) m[mlen + j] = (unsigned char)rng();
            mlen += 16;
        }
        s = kcache__record_parse(m, mlen, &back);
        if (s == KCACHE_OK) {
            ok++;
            if (back.error != KCACHE_OK) KT_FAILF("mutation %d: OK but error %d", t, (int)back.error);
            /* a valid key: its digest is the canonical one and its record re-encodes */
            if (!heq(back.digest, kcache__key_compute_digest(&back))) KT_FAILF("mutation %d: stale digest", t);
            {
                size_t l2;
                unsigned char *r2 = record_of(&back, &l2);
                kcache_key again;
                if (!r2 || kcache__record_parse(r2, l2, &again) != KCACHE_OK || !heq(again.digest, back.digest))
                    KT_FAILF("mutation %d: a parsed key does not re-encode", t);
                kcache_key_free(&again);
                free(r2);
            }
        } else if (s == KCACHE_ECORRUPT) {
            bad++;
            if (back.error == KCACHE_OK) KT_FAILF("mutation %d: ECORRUPT but the key has no error", t);
        } else {
            other++;
            KT_FAILF("mutation %d: %s", t, kcache_strerror(s));
        }
        kcache_key_free(&back);
    }
    KT_CHECK(bad > 0);
    KT_CHECK_EQ_U64(other, 0);
    free(m);
    free(rec);
    kcache_key_free(&k);
}

/* ---- the host tuple ------------------------------------------------------------------------ */

static void test_host(void)
{
    kcache_key k, k2;
    const kcache_key_field *f;
    kcache *kc;
    kcache_config cfg;
    char *old_name = getenv("KCACHE_CPU_NAME") ? strdup(getenv("KCACHE_CPU_NAME")) : NULL;
    char *old_feat = getenv("KCACHE_CPU_FEATURES") ? strdup(getenv("KCACHE_CPU_FEATURES")) : NULL;

    unsetenv("KCACHE_CPU_NAME");
    unsetenv("KCACHE_CPU_FEATURES");
    KT_CHECK(kcache_key_init(&k, "host") == KCACHE_OK);
    KT_CHECK(kcache_key_host(&k) == KCACHE_OK);
    KT_CHECK(k.error == KCACHE_OK);
    KT_CHECK_EQ_U64(k.count, 3);
    f = field_named(&k, "host.os_arch");
    KT_CHECK(f && f->type == KCACHE_FIELD_STR && f->size > 0);
#if defined(__linux__) && defined(__x86_64__)
    if (f) KT_CHECK_STR(f->preview, "linux-x86_64");
#endif
    f = field_named(&k, "host.cpu_name");
    KT_CHECK(f && f->type == KCACHE_FIELD_STR && f->size > 0);
    f = field_named(&k, "host.cpu_features");
    KT_CHECK(f && f->type == KCACHE_FIELD_STR);
    /* twice in one key: refused */
    KT_CHECK(kcache_key_host(&k) == KCACHE_EEXIST);
    kcache_key_free(&k);

    /* kcache_key_host_from gives the same digest as kcache_key_host */
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    kcache_key_init(&k, "host");
    kcache_key_str(&k, "src", "x");
    kcache_key_host(&k);
    kcache_key_init(&k2, "host");
    kcache_key_host_from(&k2, kc);
    kcache_key_str(&k2, "src", "x");
    KT_CHECK(k2.error == KCACHE_OK);
    KT_CHECK(heq(kcache_key_digest(&k), kcache_key_digest(&k2)));
    kcache_key_free(&k2);
    kcache_key_init(&k2, "host");
    kcache_key_str(&k2, "src", "x");
    KT_CHECK(kcache_key_host_from(&k2, NULL) == KCACHE_OK); /* NULL cache: detected here */
    KT_CHECK(heq(kcache_key_digest(&k), kcache_key_digest(&k2)));
    kcache_key_free(&k2);
    kcache_close(kc);

    /* the overrides */
    setenv("KCACHE_CPU_NAME", "portable-cpu", 1);
    setenv("KCACHE_CPU_FEATURES", "+sse2,-avx512f", 1);
    kcache_key_init(&k2, "host");
    kcache_key_str(&k2, "src", "x");
    KT_CHECK(kcache_key_host(&k2) == KCACHE_OK);
#ifdef KCACHE_NO_ENV /* no variable is read: the detected CPU, as without the overrides */
    KT_CHECK(heq(k.digest, k2.digest));
#else
    f = field_named(&k2, "host.cpu_name");
    if (f) {
        KT_CHECK_STR(f->preview, "portable-cpu");
        KT_CHECK(heq(f->digest, kcache_hash("portable-cpu", 12)));
    }
    f = field_named(&k2, "host.cpu_features");
    if (f) {
        KT_CHECK_STR(f->preview, "+sse2,-avx512f");
        KT_CHECK(heq(f->digest, kcache_hash("+sse2,-avx512f", 14)));
    }
    KT_CHECK(!heq(k.digest, k2.digest)); /* unless this CPU is called portable-cpu */
#endif
    /* the same overrides through a cache opened with them */
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    {
        kcache_key k3;
        kcache_key_init(&k3, "host");
        kcache_key_host_from(&k3, kc);
        kcache_key_str(&k3, "src", "x");
        KT_CHECK(heq(k3.digest, k2.digest));
        kcache_key_free(&k3);
    }
    kcache_close(kc);
    kcache_key_free(&k2);
    /* an empty name override means "detect" (the name would otherwise be empty) */
    setenv("KCACHE_CPU_NAME", "", 1);
    unsetenv("KCACHE_CPU_FEATURES");
    kcache_key_init(&k2, "host");
    kcache_key_str(&k2, "src", "x");
    kcache_key_host(&k2);
    KT_CHECK(heq(k.digest, k2.digest));
    kcache_key_free(&k2);
    kcache_key_free(&k);

    if (old_name) setenv("KCACHE_CPU_NAME", old_name, 1); else unsetenv("KCACHE_CPU_NAME");
    if (old_feat) setenv("KCACHE_CPU_FEATURES", old_feat, 1); else unsetenv("KCACHE_CPU_FEATURES");
    free(old_name);
    free(old_feat);
}

/* ---- the golden digest ----------------------------------------------------------------------
 * This value is the on-disk identity of a key. If this check fails, every entry every user has
 * ever stored is invalidated (they all miss and recompile). A change to the canonical form (the
 * domain tag, the encoding of unit, count, type, name, size or value digest) must be a deliberate
 * format change, with a new domain tag and a REVISIONS note, never a side effect. */
#define GOLDEN_HEX "6c59ec2b688b2a6ae2587e4030ba1cae"

static void test_golden(void)
{
    kcache_key k;
    char hex[33];
    static const unsigned char spec[5] = {0, 1, 2, 3, 255};
    kcache_key_init(&k, "golden.kernel");
    kcache_key_str(&k, "source", "__kernel void k(__global float *x) { x[get_global_id(0)] *= 2.0f; }");
    kcache_key_str(&k, "options", "-cl-fast-relaxed-math -DN=64");
    kcache_key_u64(&k, "version", 42);
    kcache_key_bytes(&k, "spec", spec, sizeof spec);
    kcache_key_str(&k, "host.cpu_name", "skylake");
    KT_CHECK(k.error == KCACHE_OK);
    kcache_hash_hex(kcache_key_digest(&k), hex);
    KT_CHECK_STR(hex, GOLDEN_HEX);

    /* the same digest from the documented canonical form, written out here by hand: the tag
       "kcache-key-1", u16 unit length, unit, u32 field count, then per field in name order
       u8 type, u8 name length, name, u64 value length, u64 digest lo, u64 digest hi */
    {
        unsigned char buf[1024];
        size_t o = 0;
        uint32_t i;
        const kcache_key_field *f = kcache__key_fields(&k);
        memcpy(buf, "kcache-key-1", 12);
        o = 12;
        kcache__put_u16(buf + o, (uint16_t)strlen(k.unit));
        o += 2;
        memcpy(buf + o, k.unit, strlen(k.unit));
        o += strlen(k.unit);
        kcache__put_u32(buf + o, k.count);
        o += 4;
        for (i = 0; i < k.count; i++) {
            size_t nl = strlen(f[i].name);
            if (i) KT_CHECK(strcmp(f[i - 1].name, f[i].name) < 0);
            buf[o++] = (unsigned char)f[i].type;
            buf[o++] = (unsigned char)nl;
            memcpy(buf + o, f[i].name, nl);
            o += nl;
            kcache__put_u64(buf + o, f[i].size);
            kcache__put_u64(buf + o + 8, f[i].digest.lo);
            kcache__put_u64(buf + o + 16, f[i].digest.hi);
            o += 24;
        }
        KT_CHECK(heq(kcache_hash(buf, o), kcache_key_digest(&k)));
        /* and each field digest is the plain hash of its value */
        KT_CHECK(heq(field_named(&k, "options")->digest, kcache_hash("-cl-fast-relaxed-math -DN=64", 28)));
        KT_CHECK(heq(field_named(&k, "spec")->digest, kcache_hash(spec, sizeof spec)));
    }
    kcache_key_free(&k);
}


/* The one escaping rule (DESIGN "Escaping"): printable UTF-8 kept, controls, invalid bytes, C1
   and bidi controls escaped; the shell quoting reads back through bash as the same bytes. */
static void test_escape_rule(void)
{
    char out[128];
    KT_CHECK_STR(kcache__escs(out, sizeof out, "blur"), "blur");
    KT_CHECK_STR(kcache__escs(out, sizeof out, "a\nb\x1b[2Jc\xff"), "a\\x0ab\\x1b[2Jc\\xff");
    KT_CHECK_STR(kcache__escs(out, sizeof out, "caf\xc3\xa9/\xe6\x97\xa5"), "caf\xc3\xa9/\xe6\x97\xa5");
    KT_CHECK_STR(kcache__escs(out, sizeof out, "x\xc2\x9by"), "x\\u{009b}y");            /* C1 CSI */
    KT_CHECK_STR(kcache__escs(out, sizeof out, "x\xe2\x80\xaey"), "x\\u{202e}y");        /* RLO */
    KT_CHECK_STR(kcache__escs(out, sizeof out, "x\xe2\x81\xa6y"), "x\\u{2066}y");        /* LRI */
    KT_CHECK_STR(kcache__escs(out, sizeof out, "\xc0\xaf"), "\\xc0\\xaf");               /* overlong */
    KT_CHECK_STR(kcache__escs(out, sizeof out, "\xed\xa0\x80"), "\\xed\\xa0\\x80");      /* surrogate */
    KT_CHECK_STR(kcache__escs(out, sizeof out, "\xe6\x97"), "\\xe6\\x97");               /* cut */
    KT_CHECK_STR(kcache__escs(out, sizeof out, "\x7f"), "\\x7f");
    KT_CHECK_STR(kcache__esc(out, sizeof out, "a\0b", 3), "a\\x00b");
    KT_CHECK_STR(kcache__escs(out, 8, "abcdefghij"), "abcd...");
    KT_CHECK_STR(kcache__escs(out, 8, "\x1b\x1b\x1b"), "\\x1b...");
    KT_CHECK_STR(kcache__escs(out, sizeof out, NULL), "(null)");
    KT_CHECK_STR(kcache__shell_quote(out, sizeof out, "/tmp/kc-1/e"), "/tmp/kc-1/e");
    KT_CHECK_STR(kcache__shell_quote(out, sizeof out, "/tmp/a b"), "'/tmp/a b'");
    KT_CHECK_STR(kcache__shell_quote(out, sizeof out, "it's"), "'it'\\''s'");
    KT_CHECK_STR(kcache__shell_quote(out, sizeof out, ""), "''");
    KT_CHECK_STR(kcache__shell_quote(out, sizeof out, "a\nb'c\\"), "$'a\\x0ab\\'c\\\\'");
    KT_CHECK_STR(kcache__shell_quote(out, sizeof out, "caf\xc3\xa9"), "'caf\xc3\xa9'");
    KT_CHECK_STR(kcache__shell_quote(out, sizeof out, "x\xe2\x80\xae"), "$'x\\xe2\\x80\\xae'");
    {
        static const char *const paths[] = { "/tmp/a b", "it's", "a\nb'c\\", "x\xe2\x80\xae\x1b$(id)`id`", "caf\xc3\xa9 *" };
        size_t i;
        for (i = 0; i < sizeof paths / sizeof paths[0]; i++) {
            char cmd[256], back[64];
            FILE *f;
            size_t n = 0;
            /* bash: dash (Debian's sh) has no $'...' yet */
            char script[64];
            snprintf(script, sizeof script, "/tmp/kt-quote-%ld.sh", (long)getpid());
            f = fopen(script, "w");
            if (!f) { KT_FAILF("fopen"); continue; }
            fprintf(f, "printf %%s %s", kcache__shell_quote(out, sizeof out, paths[i]));
            fclose(f);
            snprintf(cmd, sizeof cmd, "bash %s", script);
            f = popen(cmd, "r");
            if (!f) { KT_FAILF("popen"); remove(script); continue; }
            n = fread(back, 1, sizeof back - 1, f);
            back[n] = 0;
            pclose(f);
            remove(script);
            KT_CHECK_MSG(strcmp(back, paths[i]) == 0, "path %zu read back through the shell as %s", i, back);
        }
    }
}
int main(void)
{
    make_tmpdir();
    KT_RUN(test_order_independent);
    KT_RUN(test_inline_room);
    KT_RUN(test_distinct);
    KT_RUN(test_duplicates_sticky);
    KT_RUN(test_previews);
    KT_RUN(test_file_preview_escaped_tail);
    KT_RUN(test_key_file);
    KT_RUN(test_key_file_memo);
    KT_RUN(test_bad_input);
    KT_RUN(test_big_field);
    KT_RUN(test_record_roundtrip);
    KT_RUN(test_record_mutations);
    KT_RUN(test_host);
    KT_RUN(test_golden);
    KT_RUN(test_escape_rule);
    rm_tmpdir();
    KT_EXIT();
}
