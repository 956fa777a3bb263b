/* fuzz_store.c - libFuzzer target for kcache's on-disk parsers and kcache-inspect's kcache mode.
 *
 *   make build/fuzz_store   (this file, which includes tools/inspect_store.c for kcache.h's private
 *                            parsers, with kcache-inspect's other files but its main)
 *   build/fuzz_store -max_total_time=300 build/fuzz-store-corpus fuzz/corpus/store
 *
 * Each input goes through every parser, as it is and "repaired": the checksums an input cannot
 * forge (XXH3-128 over a header, a record, a payload) are recomputed, so that mutations reach the
 * code behind them.
 *   - kcache__record_parse (a key record), with properties: a record that decodes has its declared
 *     field count, printable names in strictly increasing order, terminated previews; it matches
 *     the key decoded from it (kcache__record_match); written again (kcache__record_write) it
 *     decodes to the same digest.
 *   - the entry header check: kcache_entry_decode (the checks of kcache__entry_check one by one),
 *     through kcache-inspect's text and JSON reports (the JSON is checked for well-formedness here).
 *   - the index log: kcache_index_decode (kcache__ix_decode and the library's replay, which skips
 *     damaged bytes and resyncs), reports as above, and the traced misses explained
 *     (kcache_key_diff_text, kcache_key_stamps_text).
 *   - config.file's header: kcache__acct_valid against kcache_accounting_decode (what
 *     kcache-inspect reads it with), eviction log included.
 *   - environment values: kcache__parse_size and kcache__parse_bool, with properties (a plain
 *     number parses to itself, a suffix multiplies, "1"/"0" and friends are booleans).
 *   - temp file names: kcache__temp_name (which names the temp sweep may remove), against the
 *     grammar written out here: <pid>-[ix-|grow-|cf-|stats-]<hex>[-<hex>].tmp or <pid>-junk-<hex>,
 *     pid 1 to 10 digits, hex groups 1 to 16 lower-case digits; anything else is never kcache's.
 * Nothing touches the filesystem (dependency checks are off) and nothing is written to the
 * terminal. */
#include "../tools/inspect_store.c"

#include "fuzz_json.h"

/* ---- the parsers ---- */

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

/* Whether a record's unit or one of its names (as far as they can be located) holds a NUL. */
static int record_has_nul(const unsigned char *p, size_t n)
{
    size_t ul, pos, i;
    unsigned cnt, f;
    if (n < 2) return 0;
    ul = kcache__get_u16(p);
    if (2 + ul + 2 > n) return 0;
    if (memchr(p + 2, 0, ul)) return 1;
    cnt = kcache__get_u16(p + 2 + ul);
    pos = 2 + ul + 2;
    for (f = 0; f < cnt && pos + 28 <= n; f++) {
        unsigned type = p[pos], nl = p[pos + 1], pl = p[pos + 2];
        if (pos + 28 + nl > n) return 0;
        for (i = 0; i < nl; i++) if (p[pos + 28 + i] == 0) return 1;
        pos += 28 + nl + pl + (type == KCACHE_FIELD_FILE ? 32 : 0);
    }
    return 0;
}

static void fuzz_record(const unsigned char *p, size_t n)
{
    kcache_key k, again;
    kcache_status s = kcache__record_parse(p, n, &k);
    /* a name holding a NUL cannot be the key's: such a record is corrupt
       (tests/data/store-regress/record-*-nul.*, found by this target) */
    CHECK(!(s == KCACHE_OK && record_has_nul(p, n)));
    if (s == KCACHE_OK) {
        const kcache_key_field *f = kcache__key_fields(&k);
        uint32_t i;
        size_t len, j;
        unsigned char *buf;
        kcache__wbuf w;
        CHECK(k.error == KCACHE_OK && k.count == kcache__get_u16(p + 2 + kcache__get_u16(p)));
        for (i = 0; i < k.count; i++) {
            size_t nl = strnlen(f[i].name, KCACHE_FIELD_NAME_MAX);
            CHECK(nl > 0 && nl < KCACHE_FIELD_NAME_MAX);
            for (j = 0; j < nl; j++) CHECK(f[i].name[j] >= 0x20 && f[i].name[j] < 0x7f);
            CHECK(strnlen(f[i].preview, KCACHE_PREVIEW_MAX) < KCACHE_PREVIEW_MAX);
            CHECK(f[i].type >= KCACHE_FIELD_BYTES && f[i].type <= KCACHE_FIELD_FILE);
            if (i) CHECK(strcmp(f[i - 1].name, f[i].name) < 0);
        }
        /* the record matches the key decoded from it */
        CHECK(kcache__record_match(p, n, &k, KCACHE_STAMP_HYBRID) == KCACHE__MATCH);
        CHECK(kcache__record_match(p, n, &k, KCACHE_STAMP_CONTENT) == KCACHE__MATCH);
        /* written again, it decodes to the same key */
        len = kcache__record_size(&k);
        buf = (unsigned char *)malloc(len ? len : 1);
        if (buf) {
            w.p = buf; w.len = 0; w.cap = len; w.overflow = 0;
            kcache__record_write(&k, &w);
            CHECK(!w.overflow && w.len == len);
            CHECK(kcache__record_parse(buf, len, &again) == KCACHE_OK);
            CHECK(ks_same(again.digest, k.digest) && again.count == k.count);
            CHECK(kcache__record_match(buf, len, &k, KCACHE_STAMP_HYBRID) == KCACHE__MATCH);
            kcache_key_free(&again);
            free(buf);
        }
    }
    kcache_key_free(&k);
}

static void report_both(int (*fn)(const unsigned char *, size_t, const char *, const ks_store_ref *, const ki_opts *, ki_out *, char *, size_t),
                        const unsigned char *p, size_t n)
{
    ki_opts op;
    ki_out o;
    char err[400];
    int rc1, rc2;
    memset(&op, 0, sizeof op);
    op.no_deps = 1;
    op.stamp = (int)(n % 3);
    op.stamp_from = "fuzz";
    memset(&o, 0, sizeof o);
    o.limit = 4 << 20;
    err[0] = 0;
    rc1 = fn(p, n, "/fuzz/x", NULL, &op, &o, err, sizeof err);
    CHECK(rc1 == 0 || err[0]);
    ko_free(&o);
    op.json = 1;
    memset(&o, 0, sizeof o);
    o.limit = 4 << 20;
    err[0] = 0;
    rc2 = fn(p, n, "/fuzz/x", NULL, &op, &o, err, sizeof err);
    CHECK(rc1 == rc2);
    CHECK(rc2 != 0 || o.full || json_ok(o.buf, o.len));
    ko_free(&o);
}

static int entry_fn(const unsigned char *p, size_t n, const char *file, const ks_store_ref *st, const ki_opts *op, ki_out *o, char *err,
                    size_t errcap)
{
    (void)st;
    return ki_entry_report_mem(p, n, file, op, o, err, errcap);
}
static int index_fn(const unsigned char *p, size_t n, const char *file, const ks_store_ref *st, const ki_opts *op, ki_out *o, char *err,
                    size_t errcap)
{
    return ki_index_report_mem(p, n, file, st, op, o, err, errcap);
}

/* An entry with the sums an input cannot forge recomputed: payload length, digest (from the key
   record when it decodes), payload checksum, header checksum. */
static void fix_entry(unsigned char *b, size_t n)
{
    uint32_t hlen, rlen;
    uint64_t rec_end;
    kcache_key k;
    if (n < KCACHE__ENTRY_FIXED) return;
    memcpy(b, "KCENTRY", 8);
    kcache__put_u16(b + 8, KCACHE__ENTRY_VERSION);
    hlen = kcache__get_u32(b + 12);
    rlen = kcache__get_u32(b + 64);
    rec_end = (uint64_t)KCACHE__ENTRY_FIXED + rlen;
    if (hlen <= n) {
        kcache_hash128 s = kcache_hash(b + hlen, n - hlen);
        kcache__put_u64(b + 16, n - hlen);
        kcache__put_u64(b + 40, s.lo);
        kcache__put_u64(b + 48, s.hi);
    }
    if (rec_end + 8 <= n) {
        if (kcache__record_parse(b + KCACHE__ENTRY_FIXED, rlen, &k) == KCACHE_OK) {
            kcache__put_u64(b + 24, k.digest.lo);
            kcache__put_u64(b + 32, k.digest.hi);
        }
        kcache_key_free(&k);
        kcache__put_u64(b + rec_end, kcache_hash(b, (size_t)rec_end).lo);
    }
}

/* An index: a valid header for unit "fuzz", then the input as records, each record's checksum
   and trailing length recomputed where its framing fits. */
static unsigned char *make_index(const unsigned char *p, size_t n, size_t *outlen)
{
    static const char unit[] = "fuzz";
    size_t hlen = 26 + 4 + 8, pos = 0;
    unsigned char *b = (unsigned char *)malloc(hlen + n + 1);
    if (!b) return NULL;
    memset(b, 0, hlen);
    memcpy(b, "KCINDEX", 8);
    kcache__put_u16(b + 8, KCACHE__IX_VERSION);
    kcache__put_u64(b + 16, hlen + n);
    kcache__put_u16(b + 24, 4);
    memcpy(b + 26, unit, 4);
    kcache__put_u64(b + 30, kcache_hash(b, 30).lo);
    memcpy(b + hlen, p, n);
    while (pos + 4 <= n) {
        unsigned char *r = b + hlen + pos;
        uint32_t body = kcache__get_u32(r);
        if (body < 48 || (uint64_t)pos + 4 + body + 12 > n) break;
        if (r[4] < 1 || r[4] > 4) r[4] = (unsigned char)(1 + r[4] % 4);
        kcache__put_u32(r + 4 + 44, body - 48);            /* the record length the body has room for */
        kcache__put_u64(r + 4 + body, kcache_hash(r + 4, body).lo);
        kcache__put_u32(r + 4 + body + 8, body);
        pos += 4 + (size_t)body + 12;
    }
    *outlen = hlen + n;
    return b;
}

static void fuzz_cf(const unsigned char *p, size_t n, int fix)
{
    unsigned char h[KCACHE__ACCT_HEADER];
    ks_cf c;
    uint64_t size;
    uint32_t lg;
    memset(h, 0, sizeof h);
    memcpy(h, p, n < sizeof h ? n : sizeof h);
    lg = kcache__get_u32(h + 16);
    size = n;
    if (fix) {
        memcpy(h, "KCACHECF", 8);
        kcache__put_u32(h + 8, KCACHE__ACCT_VERSION);
        kcache__put_u32(h + 12, KCACHE__ACCT_HEADER);
        lg = 4 + lg % 21;
        kcache__put_u32(h + 16, lg);
        kcache__put_u32(h + 20, KCACHE__WAYS);
        kcache__put_u64(h + KCACHE__ACCT_SUMMED, kcache_hash(h, KCACHE__ACCT_SUMMED).lo);
        size = KCACHE__ACCT_HEADER + ((uint64_t)KCACHE__WAYS << lg) * KCACHE__SLOT;
    }
    ks_cf_decode(h, size, &c);
    CHECK(c.a.valid == kcache__acct_valid(h, size));
    if (fix) CHECK(c.a.valid && c.a.use_slots == ((uint64_t)KCACHE__WAYS << lg));
    {
        kcache_hash128 d;
        d.lo = kcache__get_u64(h + KCACHE__EVLOG_AT);
        d.hi = kcache__get_u64(h + KCACHE__EVLOG_AT + 8);
        if (d.lo || d.hi) CHECK(ks_cf_evicted(&c, d) != 0 || !c.a.magic_ok);
    }
}

static void fuzz_env(const unsigned char *p, size_t n)
{
    char s[72];
    uint64_t v = 0, w = 0;
    int b = -1, digits = 1, ok;
    size_t i, l = n < 64 ? n : 64;
    memcpy(s, p, l);
    s[l] = 0;
    ok = kcache__parse_size(s, &v);
    (void)kcache__parse_bool(s, &b);
    for (i = 0; s[i]; i++) if (s[i] < '0' || s[i] > '9') digits = 0;
    if (digits && s[0] && i <= 19) { CHECK(ok && v == strtoull(s, NULL, 10)); }
    if (ok && strlen(s) >= 2 && strlen(s) < 60 && (s[strlen(s) - 1] == 'K' || s[strlen(s) - 1] == 'k') && s[strlen(s) - 2] >= '0' &&
        s[strlen(s) - 2] <= '9') {
        char t[72];
        memcpy(t, s, strlen(s) - 1);
        t[strlen(s) - 1] = 0;
        CHECK(kcache__parse_size(t, &w) && w * 1024 == v && w <= UINT64_MAX / 1024);
    }
    if (strcmp(s, "1") == 0 || strcmp(s, "yes") == 0 || strcmp(s, "true") == 0 || strcmp(s, "on") == 0) CHECK(b == 1);
    if (strcmp(s, "0") == 0 || strcmp(s, "no") == 0 || strcmp(s, "false") == 0 || strcmp(s, "off") == 0) CHECK(b == 0);
}

/* The temp-name grammar, by hand: 1 when name is one of kcache's, *pid its writer's. */
static size_t span_hex(const char *p)
{
    size_t n = 0;
    while ((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'f')) n++;
    return n;
}
static int temp_grammar(const char *name, unsigned long *pid)
{
    static const char *const kinds[] = {"", "ix-", "grow-", "cf-", "stats-"};
    size_t d = strspn(name, "0123456789"), k;
    const char *rest;
    if (d < 1 || d > 10 || name[d] != '-') return 0;
    *pid = strtoul(name, NULL, 10);
    rest = name + d + 1;
    if (strncmp(rest, "junk-", 5) == 0) {
        size_t h = span_hex(rest + 5);
        if (h >= 1 && h <= 16 && rest[5 + h] == 0) return 1;
    }
    for (k = 0; k < 5; k++) { /* longest prefix last: "" first, then the named kinds */
        const char *p = rest;
        size_t h1, h2;
        if (strncmp(p, kinds[k], strlen(kinds[k])) != 0) continue;
        p += strlen(kinds[k]);
        h1 = span_hex(p);
        if (h1 < 1 || h1 > 16) continue;
        p += h1;
        if (strcmp(p, ".tmp") == 0) return 1;
        if (*p != '-') continue;
        h2 = span_hex(p + 1);
        if (h2 >= 1 && h2 <= 16 && strcmp(p + 1 + h2, ".tmp") == 0) return 1;
    }
    return 0;
}
static void fuzz_temp_name(const unsigned char *data, size_t size)
{
    char name[80];
    unsigned long a = 0, b = 0;
    int ka, kb;
    if (size >= sizeof name) size = sizeof name - 1;
    memcpy(name, data, size);
    name[size] = 0;
    ka = kcache__temp_name(name, &a);
    kb = temp_grammar(name, &b);
    CHECK(ka == kb);
    CHECK(!ka || a == b);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    unsigned char *copy;
    size_t ilen = 0;
    if (size > (1u << 20)) return 0;
    /* 1. a key record, as is and after an entry's fixed header */
    fuzz_record(data, size);
    if (size > KCACHE__ENTRY_FIXED && memcmp(data, "KCENTRY", 8) == 0) {
        uint32_t rlen = kcache__get_u32(data + 64);
        fuzz_record(data + KCACHE__ENTRY_FIXED, rlen < size - KCACHE__ENTRY_FIXED ? rlen : size - KCACHE__ENTRY_FIXED);
    }
    /* 2. an entry, as is and repaired */
    report_both(entry_fn, data, size);
    if ((copy = (unsigned char *)malloc(size ? size : 1)) != NULL) {
        memcpy(copy, data, size);
        fix_entry(copy, size);
        report_both(entry_fn, copy, size);
        free(copy);
    }
    /* 3. an index, as is and built around the input */
    report_both(index_fn, data, size);
    if ((copy = make_index(data, size, &ilen)) != NULL) {
        report_both(index_fn, copy, ilen);
        free(copy);
    }
    /* 4. config.file's header, as is and repaired */
    fuzz_cf(data, size, 0);
    fuzz_cf(data, size, 1);
    /* 5. environment values */
    fuzz_env(data, size);
    /* 6. a temp file's name */
    fuzz_temp_name(data, size);
    return 0;
}
