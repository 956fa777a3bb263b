/* kcache-inspect.c - explain cache indexes: numba's .nbi files and kcache stores.
 *
 *   kcache-inspect [options] FILE.nbi     will numba recompile this function, and why?
 *   kcache-inspect [options] DIR          a kcache store: size against limit and accounting,
 *                                         entries, units, use, temp files, traced misses
 *   kcache-inspect [options] DIR UNIT     one unit's index: overloads, fields, dependencies
 *   kcache-inspect [options] FILE.kci     the same from an index file
 *   kcache-inspect [options] FILE.kce     one entry: header, key fields, checksums
 *
 * numba mode: a .nbi file is two pickles back to back: the numba version string, then
 * (stamp, overloads), where overloads maps (signature, (target triple, cpu name, cpu
 * features), (bytecode sha256, closure sha256)) to the name of the .nbc data file.  numba
 * ignores the whole index when the version differs from the running numba, or when the
 * stamp differs from the source file's: (st_mtime, st_size) up to numba 0.67,
 * (floor(st_mtime), st_size) with 0.62-0.67's opt-in InTreeCacheLocatorFsAgnostic, and the
 * 32-byte sha256 digest of the source's content from 0.68 on.  An overload is used only when
 * its whole key equals the running process's, so the CPU name and feature string must match
 * exactly.
 *
 * The pickle reader below builds a symbolic tree and never executes anything: GLOBAL and
 * REDUCE only record names and arguments.  Every length is checked against the input left,
 * and node count, memory, stack and output are bounded, so any byte string gives either a
 * tree or an error message, never a crash or an unbounded allocation.
 *
 * kcache mode reads a store without changing it: no kcache_open (which creates and repairs),
 * no lock, no write; config.file is read with pread.  It decodes with kcache.h's own static
 * functions (kcache__record_parse, kcache__ix_decode, kcache__cf_valid, ...) so that the tool
 * and the library cannot disagree on what is valid, and takes the host CPU from kcache.h's
 * detector for the numba half as well.
 *
 * Build: cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -I. -o build/kcache-inspect \
 *           tools/kcache-inspect.c -lpthread
 * Define KCACHE_INSPECT_NO_MAIN to include this file elsewhere (the fuzz targets do).
 * Exit status: 0 whenever the file or store decodes, whatever the verdict; 2 for a file or
 * directory that cannot be read or decoded and for usage errors. */

/* kcache.h first: its implementation half sets the feature macros before any system header. */
#define KCACHE_STATIC
#define KCACHE_IMPLEMENTATION
#include "../kcache.h"

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#if defined(__GNUC__) || defined(__clang__)
#define KI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define KI_MAYBE_UNUSED __attribute__((unused))
#else
#define KI_PRINTF(a, b)
#define KI_MAYBE_UNUSED
#endif

/* ---------------------------------------------------------------------------------------- */
/* Limits.  A real numba index is a few KiB; these are far above that and far below harm.   */

#define KI_MAX_FILE      (64u << 20)   /* largest .nbi read */
#define KI_MAX_MEM       (256u << 20)  /* arena bytes for one decode */
#define KI_MAX_NODES     (2u << 20)    /* pickle nodes for one decode */
#define KI_MAX_STACK     (1u << 20)    /* pickle stack entries */
#define KI_MAX_DEPTH     64            /* nesting rendered before "..." */
#define KI_INLINE_LIMIT  4096          /* bytes of one rendered value in text output */
#define KI_MAX_OUTPUT    (16u << 20)   /* bytes of one whole report */
#define KI_MAX_OVERLOADS 10000         /* overloads in one index (real ones: a handful) */

/* snprintf that always terminates; truncation is intended wherever it is used. */
static int ki_fmt(char *buf, size_t cap, const char *fmt, ...) KI_PRINTF(3, 4);
static int ki_fmt(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Output sink: a FILE, or a growing memory buffer, with a byte budget.                      */

typedef struct ki_out {
    FILE *f;        /* write here when non-NULL, else into buf */
    char *buf;
    size_t len, cap;
    size_t limit;   /* 0: KI_MAX_OUTPUT */
    int full;       /* the budget ran out: further writes are dropped */
} ki_out;

static void ko_write(ki_out *o, const char *s, size_t n)
{
    size_t limit = o->limit ? o->limit : KI_MAX_OUTPUT;
    if (o->full || n == 0) return;
    if (n > limit - o->len) { n = limit - o->len; o->full = 1; }
    if (o->f) {
        if (n) fwrite(s, 1, n, o->f);
        o->len += n;
        return;
    }
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        char *nb;
        while (cap < o->len + n + 1) cap *= 2;
        nb = (char *)realloc(o->buf, cap);
        if (!nb) { o->full = 1; return; }
        o->buf = nb; o->cap = cap;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = 0;
}
static void ko_puts(ki_out *o, const char *s) { ko_write(o, s, strlen(s)); }
static void ko_putc(ki_out *o, char c) { ko_write(o, &c, 1); }
static void ko_printf(ki_out *o, const char *fmt, ...) KI_PRINTF(2, 3);
static void ko_printf(ki_out *o, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) { ko_write(o, tmp, (size_t)n); return; }
    {
        char *big = (char *)malloc((size_t)n + 1);
        if (!big) { o->full = 1; return; }
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        ko_write(o, big, (size_t)n);
        free(big);
    }
}
static void ko_free(ki_out *o) { free(o->buf); o->buf = NULL; o->len = o->cap = 0; }

/* ---------------------------------------------------------------------------------------- */
/* Arena: every node and copied string of one decode; freed at once.                        */

typedef struct ki_block { struct ki_block *next; size_t used, cap; } ki_block;
#define KI_BLOCK_HDR ((sizeof(ki_block) + 15u) & ~(size_t)15u)

typedef struct ki_arena { ki_block *head; size_t total, limit; } ki_arena;

static void *ka_alloc(ki_arena *a, size_t n)
{
    ki_block *b = a->head;
    void *p;
    if (n > a->limit) return NULL;
    n = (n + 15u) & ~(size_t)15u;
    if (n == 0) n = 16;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        if (cap > a->limit - a->total) return NULL;
        b = (ki_block *)malloc(KI_BLOCK_HDR + cap);
        if (!b) return NULL;
        b->next = a->head; b->used = 0; b->cap = cap;
        a->head = b;
        a->total += cap;
    }
    p = (char *)b + KI_BLOCK_HDR + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}
static void ka_free(ki_arena *a)
{
    while (a->head) { ki_block *n = a->head->next; free(a->head); a->head = n; }
    a->total = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Pickle reader: protocols 0-5 into a symbolic tree.                                       */

typedef enum pk_kind {
    PK_NONE, PK_BOOL, PK_INT, PK_BIGINT, PK_FLOAT, PK_STR, PK_BYTES, PK_BYTEARRAY,
    PK_TUPLE, PK_LIST, PK_DICT, PK_SET, PK_FROZENSET,
    PK_GLOBAL,  /* s = module, s2 = name */
    PK_REDUCE,  /* a = callable, b = args */
    PK_NEWOBJ,  /* a = class, b = args, c = kwargs (NEWOBJ_EX) */
    PK_INST,    /* INST/OBJ: a = class, b = args tuple */
    PK_PERSID,  /* s = text id (PERSID) or a = object (BINPERSID) */
    PK_EXT,     /* i = extension code */
    PK_BUFFER   /* i = out-of-band buffer number */
} pk_kind;

typedef struct pk_node pk_node;
struct pk_node {
    unsigned char kind;
    unsigned char busy;           /* set while rendering: a cycle shows as <cycle> */
    unsigned char readonly;       /* READONLY_BUFFER seen */
    int64_t i;                    /* INT, BOOL, EXT, BUFFER; BIGINT: 1 = s is decimal text */
    double f;                     /* FLOAT */
    const unsigned char *s;       /* STR (utf-8 as stored), BYTES, BIGINT, GLOBAL module, PERSID */
    size_t n;
    const unsigned char *s2;      /* GLOBAL name */
    size_t n2;
    pk_node *a, *b, *c;           /* see pk_kind */
    pk_node *state;               /* BUILD */
    pk_node **v;                  /* items: containers; DICT holds key, value pairs */
    size_t nv, capv;
    pk_node *listitems, *dictitems; /* APPEND/SETITEM applied to an object */
};

typedef struct pk_parser {
    ki_arena *arena;
    size_t nodes;
    pk_node **stack; size_t sp, stack_cap;
    size_t *marks; size_t nmarks, marks_cap;
    /* memo: open addressing, uint32 key -> node */
    uint32_t *mkeys; pk_node **mvals; size_t mcap, mcount;
    int proto;
    int64_t buffers;
    char err[200];
    size_t err_off;
} pk_parser;

static const char *pk_kind_name(int k)
{
    static const char *names[] = { "None", "bool", "int", "int", "float", "str", "bytes",
        "bytearray", "tuple", "list", "dict", "set", "frozenset", "global", "object (REDUCE)",
        "object (NEWOBJ)", "object (INST)", "persistent id", "extension", "out-of-band buffer" };
    return (k >= 0 && k < (int)(sizeof names / sizeof names[0])) ? names[k] : "?";
}

static int pk_fail(pk_parser *P, size_t off, const char *fmt, ...) KI_PRINTF(3, 4);
static int pk_fail(pk_parser *P, size_t off, const char *fmt, ...)
{
    va_list ap;
    if (P->err[0]) return -1;   /* keep the first error */
    va_start(ap, fmt);
    vsnprintf(P->err, sizeof P->err, fmt, ap);
    va_end(ap);
    P->err_off = off;
    return -1;
}

static pk_node *pk_new(pk_parser *P, int kind)
{
    pk_node *n;
    if (P->nodes >= KI_MAX_NODES) return NULL;
    n = (pk_node *)ka_alloc(P->arena, sizeof *n);
    if (!n) return NULL;
    P->nodes++;
    n->kind = (unsigned char)kind;
    return n;
}

static int pk_add(pk_parser *P, pk_node *c, pk_node *item)
{
    if (c->nv == c->capv) {
        size_t cap = c->capv ? c->capv * 2 : 4;
        pk_node **nv;
        if (cap > (SIZE_MAX / sizeof *nv)) return -1;
        nv = (pk_node **)ka_alloc(P->arena, cap * sizeof *nv);
        if (!nv) return -1;
        if (c->nv) memcpy(nv, c->v, c->nv * sizeof *nv);
        c->v = nv; c->capv = cap;
    }
    c->v[c->nv++] = item;
    return 0;
}

static int pk_push(pk_parser *P, pk_node *n)
{
    if (!n) return -1;
    if (P->sp == P->stack_cap) {
        size_t cap = P->stack_cap ? P->stack_cap * 2 : 64;
        pk_node **ns;
        if (cap > KI_MAX_STACK) return -1;
        ns = (pk_node **)realloc(P->stack, cap * sizeof *ns);
        if (!ns) return -1;
        P->stack = ns; P->stack_cap = cap;
    }
    P->stack[P->sp++] = n;
    return 0;
}

static size_t pk_fence(const pk_parser *P) { return P->nmarks ? P->marks[P->nmarks - 1] : 0; }

static pk_node *pk_pop(pk_parser *P)
{
    if (P->sp <= pk_fence(P)) return NULL;
    return P->stack[--P->sp];
}
static pk_node *pk_top(pk_parser *P)
{
    if (P->sp <= pk_fence(P)) return NULL;
    return P->stack[P->sp - 1];
}

static int pk_memo_put(pk_parser *P, uint32_t key, pk_node *val)
{
    size_t i;
    if ((P->mcount + 1) * 2 > P->mcap) {
        size_t ncap = P->mcap ? P->mcap * 2 : 64, j;
        uint32_t *nk;
        pk_node **nvv;
        if (ncap > 2 * (size_t)KI_MAX_NODES + 64) return -1;
        nk = (uint32_t *)malloc(ncap * sizeof *nk);
        nvv = (pk_node **)calloc(ncap, sizeof *nvv);
        if (!nk || !nvv) { free(nk); free(nvv); return -1; }
        for (j = 0; j < P->mcap; j++) {
            if (!P->mvals[j]) continue;
            i = (P->mkeys[j] * 2654435761u) & (ncap - 1);
            while (nvv[i]) i = (i + 1) & (ncap - 1);
            nk[i] = P->mkeys[j]; nvv[i] = P->mvals[j];
        }
        free(P->mkeys); free(P->mvals);
        P->mkeys = nk; P->mvals = nvv; P->mcap = ncap;
    }
    i = (key * 2654435761u) & (P->mcap - 1);
    while (P->mvals[i]) {
        if (P->mkeys[i] == key) { P->mvals[i] = val; return 0; }
        i = (i + 1) & (P->mcap - 1);
    }
    P->mkeys[i] = key; P->mvals[i] = val;
    P->mcount++;
    return 0;
}
static pk_node *pk_memo_get(const pk_parser *P, uint32_t key)
{
    size_t i;
    if (!P->mcap) return NULL;
    i = (key * 2654435761u) & (P->mcap - 1);
    while (P->mvals[i]) {
        if (P->mkeys[i] == key) return P->mvals[i];
        i = (i + 1) & (P->mcap - 1);
    }
    return NULL;
}

static void pk_parser_init(pk_parser *P, ki_arena *a)
{
    memset(P, 0, sizeof *P);
    P->arena = a;
}
static void pk_parser_free(pk_parser *P)
{
    free(P->stack); free(P->marks); free(P->mkeys); free(P->mvals);
    P->stack = NULL; P->marks = NULL; P->mkeys = NULL; P->mvals = NULL;
}

static uint64_t rd_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    int i;
    for (i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Copies bytes into the arena (for text opcodes whose value is not the input verbatim). */
static unsigned char *pk_dup(pk_parser *P, const unsigned char *s, size_t n)
{
    unsigned char *d = (unsigned char *)ka_alloc(P->arena, n + 1);
    if (d && n) memcpy(d, s, n);
    return d;
}

static size_t utf8_put(unsigned char *d, uint32_t cp)
{
    if (cp < 0x80) { d[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { d[0] = (unsigned char)(0xC0 | (cp >> 6)); d[1] = (unsigned char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        d[0] = (unsigned char)(0xE0 | (cp >> 12)); d[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (unsigned char)(0x80 | (cp & 0x3F)); return 3;
    }
    d[0] = (unsigned char)(0xF0 | (cp >> 18)); d[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)); d[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}
static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* UNICODE (protocol 0): raw-unicode-escape; \uXXXX and \UXXXXXXXX, other bytes are latin-1. */
static pk_node *pk_raw_unicode(pk_parser *P, const unsigned char *s, size_t n)
{
    pk_node *nd = pk_new(P, PK_STR);
    unsigned char *d;
    size_t i = 0, o = 0;
    if (!nd || n > (SIZE_MAX - 1) / 2) return NULL;
    d = (unsigned char *)ka_alloc(P->arena, 2 * n + 1);
    if (!d) return NULL;
    while (i < n) {
        int w = 0;
        if (s[i] == '\\' && i + 1 < n && (s[i + 1] == 'u' || s[i + 1] == 'U')) w = s[i + 1] == 'u' ? 4 : 8;
        if (w) {
            uint32_t cp = 0;
            int k;
            if (i + 2 + (size_t)w > n) return NULL;   /* truncated \uXXXX */
            for (k = 0; k < w; k++) {
                int h = hexval(s[i + 2 + (size_t)k]);
                if (h < 0) return NULL;
                cp = (cp << 4) | (uint32_t)h;
            }
            if (cp > 0x10FFFF) return NULL;
            o += utf8_put(d + o, cp);
            i += 2 + (size_t)w;
            continue;
        }
        o += utf8_put(d + o, s[i]);
        i++;
    }
    nd->s = d; nd->n = o;
    return nd;
}

/* STRING (protocol 0): a quoted Python 2 str literal with backslash escapes. */
static pk_node *pk_quoted(pk_parser *P, const unsigned char *s, size_t n)
{
    pk_node *nd;
    unsigned char *d;
    size_t i, o = 0;
    if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0]) return NULL;
    s++; n -= 2;
    nd = pk_new(P, PK_STR);
    d = (unsigned char *)ka_alloc(P->arena, n + 1);
    if (!nd || !d) return NULL;
    for (i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c != '\\' || i + 1 >= n) { d[o++] = c; continue; }
        c = s[++i];
        switch (c) {
        case 'n': d[o++] = '\n'; break;
        case 't': d[o++] = '\t'; break;
        case 'r': d[o++] = '\r'; break;
        case 'a': d[o++] = 7; break;
        case 'b': d[o++] = 8; break;
        case 'f': d[o++] = 12; break;
        case 'v': d[o++] = 11; break;
        case 'x':
            if (i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
                d[o++] = (unsigned char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
                i += 2;
            } else {
                return NULL;
            }
            break;
        default:
            if (c >= '0' && c <= '7') {
                int v = c - '0', k;
                for (k = 0; k < 2 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7'; k++) v = v * 8 + (s[++i] - '0');
                d[o++] = (unsigned char)v;
            } else if (c == '\n') {
                /* line continuation */
            } else if (c == '\\' || c == '\'' || c == '"') {
                d[o++] = c;
            } else {
                d[o++] = '\\'; d[o++] = c;   /* Python keeps unknown escapes */
            }
        }
    }
    nd->s = d; nd->n = o;
    return nd;
}

/* Parses a decimal integer (optional sign, optional trailing L); big ones stay as text. */
static pk_node *pk_decimal(pk_parser *P, const unsigned char *s, size_t n)
{
    pk_node *nd;
    size_t i = 0, digits;
    int neg = 0;
    uint64_t v = 0;
    int big = 0;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\r')) n--;
    if (n && s[n - 1] == 'L') n--;
    if (i < n && (s[i] == '-' || s[i] == '+')) { neg = s[i] == '-'; i++; }
    if (i >= n) return NULL;
    for (digits = i; digits < n; digits++) {
        unsigned d = (unsigned)(s[digits] - '0');
        if (d > 9) return NULL;
        if (!big) {
            if (v > (UINT64_MAX - d) / 10) big = 1;
            else v = v * 10 + d;
        }
    }
    if (!big && (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)) big = 1;
    if (big) {
        nd = pk_new(P, PK_BIGINT);
        if (!nd) return NULL;
        nd->s = pk_dup(P, s, n);
        if (!nd->s) return NULL;
        nd->n = n; nd->i = 1;
        return nd;
    }
    nd = pk_new(P, PK_INT);
    if (!nd) return NULL;
    nd->i = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (neg && v == (uint64_t)INT64_MAX + 1) nd->i = INT64_MIN;
    return nd;
}

/* LONG1/LONG4: little-endian two's complement. */
static pk_node *pk_long_bytes(pk_parser *P, const unsigned char *p, size_t n)
{
    pk_node *nd;
    size_t i;
    int neg = n && (p[n - 1] & 0x80);
    size_t sig = n;   /* drop redundant sign-extension bytes */
    while (sig > 1 && p[sig - 1] == (neg ? 0xFF : 0x00) && ((p[sig - 2] & 0x80) != 0) == neg) sig--;
    if (sig <= 8) {
        uint64_t v = 0;
        nd = pk_new(P, PK_INT);
        if (!nd) return NULL;
        for (i = 0; i < 8; i++) {
            unsigned b = i < sig ? p[i] : (neg ? 0xFFu : 0u);
            v |= (uint64_t)b << (8 * i);
        }
        memcpy(&nd->i, &v, sizeof v);   /* two's complement reinterpretation */
        return nd;
    }
    nd = pk_new(P, PK_BIGINT);
    if (!nd) return NULL;
    nd->s = p; nd->n = sig; nd->i = 0;
    return nd;
}

/* Pops the items above the top mark into container c (in order), removing the mark. */
static int pk_pop_mark_into(pk_parser *P, pk_node *c, size_t off)
{
    size_t m, k;
    if (!P->nmarks) return pk_fail(P, off, "opcode needs a MARK but none is open");
    m = P->marks[--P->nmarks];
    for (k = m; k < P->sp; k++)
        if (c && pk_add(P, c, P->stack[k]) != 0) return pk_fail(P, off, "out of memory (limit)");
    P->sp = m;
    return 0;
}

static pk_node *pk_obj_items(pk_parser *P, pk_node *obj, int dict)
{
    pk_node **slot = dict ? &obj->dictitems : &obj->listitems;
    if (!*slot) *slot = pk_new(P, dict ? PK_DICT : PK_LIST);
    return *slot;
}

static int pk_is_obj(const pk_node *n)
{
    return n->kind == PK_REDUCE || n->kind == PK_NEWOBJ || n->kind == PK_INST || n->kind == PK_GLOBAL ||
           n->kind == PK_PERSID || n->kind == PK_EXT || n->kind == PK_BUFFER;
}

/* Reads one pickle from buf[start..len); *end is the offset just after its STOP. */
static int pk_load(pk_parser *P, const unsigned char *buf, size_t len, size_t start, size_t *end, pk_node **out)
{
    size_t pos = start;
#define NEED(k, what)                                                                          \
    do { if (len - pos < (size_t)(k))                                                          \
        return pk_fail(P, op_at, "truncated %s at byte %zu: needs %llu bytes, %zu left", what, \
                       op_at, (unsigned long long)(k), len - pos); } while (0)
#define PUSH(node)                                                                             \
    do { if (pk_push(P, (node)) != 0)                                                          \
        return pk_fail(P, op_at, "too much data at byte %zu (node, memory or stack limit)", op_at); } while (0)
#define POP(var, what)                                                                         \
    do { (var) = pk_pop(P);                                                                    \
        if (!(var)) return pk_fail(P, op_at, "stack underflow in %s at byte %zu", what, op_at); } while (0)
#define OOM() return pk_fail(P, op_at, "too much data at byte %zu (node or memory limit)", op_at)
    *out = NULL;
    for (;;) {
        size_t op_at = pos;
        unsigned op;
        if (pos >= len) return pk_fail(P, pos, "truncated: data ends at byte %zu before the pickle's STOP", pos);
        op = buf[pos++];
        switch (op) {
        case 0x80: { /* PROTO */
            NEED(1, "PROTO");
            P->proto = buf[pos++];
            if (P->proto > 5) return pk_fail(P, op_at, "unsupported pickle protocol %d at byte %zu", P->proto, op_at);
            break;
        }
        case 0x95: { /* FRAME: a length hint; checked, then read through */
            uint64_t fl;
            NEED(8, "FRAME");
            fl = rd_le(buf + pos, 8);
            pos += 8;
            if (fl > len - pos)
                return pk_fail(P, op_at, "truncated: FRAME at byte %zu announces %llu bytes, %zu left", op_at,
                               (unsigned long long)fl, len - pos);
            break;
        }
        case '.': { /* STOP */
            pk_node *v;
            POP(v, "STOP");
            *out = v;
            *end = pos;
            return 0;
        }
        case '(': /* MARK */
            if (P->nmarks == P->marks_cap) {
                size_t cap = P->marks_cap ? P->marks_cap * 2 : 16;
                size_t *nm;
                if (cap > KI_MAX_STACK) OOM();
                nm = (size_t *)realloc(P->marks, cap * sizeof *nm);
                if (!nm) OOM();
                P->marks = nm; P->marks_cap = cap;
            }
            P->marks[P->nmarks++] = P->sp;
            break;
        case '0': /* POP: an item, or the mark when none is above it */
            if (P->sp > pk_fence(P)) P->sp--;
            else if (P->nmarks) P->nmarks--;
            else return pk_fail(P, op_at, "stack underflow in POP at byte %zu", op_at);
            break;
        case '1': /* POP_MARK */
            if (pk_pop_mark_into(P, NULL, op_at) != 0) return -1;
            break;
        case '2': { /* DUP */
            pk_node *t = pk_top(P);
            if (!t) return pk_fail(P, op_at, "stack underflow in DUP at byte %zu", op_at);
            PUSH(t);
            break;
        }
        case 'N': PUSH(pk_new(P, PK_NONE)); break;
        case 0x88: case 0x89: { /* NEWTRUE, NEWFALSE */
            pk_node *n = pk_new(P, PK_BOOL);
            if (!n) OOM();
            n->i = op == 0x88;
            PUSH(n);
            break;
        }
        case 'J': case 'K': case 'M': { /* BININT, BININT1, BININT2 */
            int w = op == 'J' ? 4 : op == 'K' ? 1 : 2;
            pk_node *n;
            NEED(w, "BININT");
            n = pk_new(P, PK_INT);
            if (!n) OOM();
            if (w == 4) n->i = (int32_t)(uint32_t)rd_le(buf + pos, 4);
            else n->i = (int64_t)rd_le(buf + pos, w);
            pos += (size_t)w;
            PUSH(n);
            break;
        }
        case 0x8a: case 0x8b: { /* LONG1, LONG4 */
            uint64_t n;
            pk_node *nd;
            if (op == 0x8a) { NEED(1, "LONG1"); n = buf[pos++]; }
            else {
                NEED(4, "LONG4");
                n = rd_le(buf + pos, 4);
                pos += 4;
                if (n & 0x80000000u) return pk_fail(P, op_at, "LONG4 at byte %zu has a negative length", op_at);
            }
            NEED(n, "LONG");
            nd = pk_long_bytes(P, buf + pos, (size_t)n);
            if (!nd) OOM();
            pos += (size_t)n;
            PUSH(nd);
            break;
        }
        case 'G': { /* BINFLOAT: big-endian IEEE 754 double */
            uint64_t bits = 0;
            int k;
            pk_node *n;
            NEED(8, "BINFLOAT");
            for (k = 0; k < 8; k++) bits = (bits << 8) | buf[pos + (size_t)k];
            pos += 8;
            n = pk_new(P, PK_FLOAT);
            if (!n) OOM();
            memcpy(&n->f, &bits, sizeof bits);
            PUSH(n);
            break;
        }
        case 'I': case 'L': case 'F': case 'S': case 'V': case 'P': case 'g': case 'p': case 'c': case 'i': {
            /* text opcodes: one line (two for GLOBAL and INST) */
            const unsigned char *l1 = buf + pos, *nl, *l2 = NULL;
            size_t n1, n2 = 0;
            nl = (const unsigned char *)memchr(l1, '\n', len - pos);
            if (!nl) return pk_fail(P, op_at, "truncated: text opcode '%c' at byte %zu has no newline", (int)op, op_at);
            n1 = (size_t)(nl - l1);
            pos += n1 + 1;
            if (op == 'c' || op == 'i') {
                l2 = buf + pos;
                nl = (const unsigned char *)memchr(l2, '\n', len - pos);
                if (!nl) return pk_fail(P, op_at, "truncated: GLOBAL/INST at byte %zu lacks its name line", op_at);
                n2 = (size_t)(nl - l2);
                pos += n2 + 1;
            }
            if (op == 'I' || op == 'L') {
                pk_node *n;
                if (op == 'I' && n1 == 2 && l1[0] == '0' && (l1[1] == '0' || l1[1] == '1')) {
                    n = pk_new(P, PK_BOOL);
                    if (!n) OOM();
                    n->i = l1[1] == '1';
                } else {
                    n = pk_decimal(P, l1, n1);
                    if (!n) {
                        if (P->nodes >= KI_MAX_NODES) OOM();
                        return pk_fail(P, op_at, "bad integer text in INT/LONG at byte %zu", op_at);
                    }
                }
                PUSH(n);
            } else if (op == 'F') {
                char tmp[64], *endp;
                pk_node *n;
                if (n1 == 0 || n1 >= sizeof tmp) return pk_fail(P, op_at, "bad FLOAT text at byte %zu", op_at);
                memcpy(tmp, l1, n1);
                tmp[n1] = 0;
                n = pk_new(P, PK_FLOAT);
                if (!n) OOM();
                n->f = strtod(tmp, &endp);
                while (*endp == ' ' || *endp == '\r') endp++;
                if (endp == tmp || *endp) return pk_fail(P, op_at, "bad FLOAT text at byte %zu", op_at);
                PUSH(n);
            } else if (op == 'S') {
                pk_node *n;
                while (n1 && (l1[n1 - 1] == '\r' || l1[n1 - 1] == ' ')) n1--;
                n = pk_quoted(P, l1, n1);
                if (!n) {
                    if (P->nodes >= KI_MAX_NODES) OOM();
                    return pk_fail(P, op_at, "bad STRING text at byte %zu (not a quoted literal)", op_at);
                }
                PUSH(n);
            } else if (op == 'V') {
                pk_node *n = pk_raw_unicode(P, l1, n1);
                if (!n) return pk_fail(P, op_at, "bad UNICODE text at byte %zu", op_at);
                PUSH(n);
            } else if (op == 'P') {
                pk_node *n = pk_new(P, PK_PERSID);
                if (!n) OOM();
                n->s = l1; n->n = n1;
                PUSH(n);
            } else if (op == 'g' || op == 'p') {
                pk_node *k = pk_decimal(P, l1, n1);
                if (!k || k->kind != PK_INT || k->i < 0 || k->i > (int64_t)UINT32_MAX)
                    return pk_fail(P, op_at, "bad memo key in %s at byte %zu", op == 'g' ? "GET" : "PUT", op_at);
                if (op == 'g') {
                    pk_node *v = pk_memo_get(P, (uint32_t)k->i);
                    if (!v) return pk_fail(P, op_at, "GET at byte %zu: memo key %lld is not set", op_at, (long long)k->i);
                    PUSH(v);
                } else {
                    pk_node *t = pk_top(P);
                    if (!t) return pk_fail(P, op_at, "stack underflow in PUT at byte %zu", op_at);
                    if (pk_memo_put(P, (uint32_t)k->i, t) != 0) OOM();
                }
            } else { /* GLOBAL, INST */
                pk_node *g = pk_new(P, PK_GLOBAL);
                if (!g) OOM();
                g->s = l1; g->n = n1; g->s2 = l2; g->n2 = n2;
                if (op == 'c') {
                    PUSH(g);
                } else {
                    pk_node *inst = pk_new(P, PK_INST), *args = pk_new(P, PK_TUPLE);
                    if (!inst || !args) OOM();
                    if (pk_pop_mark_into(P, args, op_at) != 0) return -1;
                    inst->a = g; inst->b = args;
                    PUSH(inst);
                }
            }
            break;
        }
        case 'T': case 'U': case 'X': case 'B': case 'C': case 0x8c: case 0x8d: case 0x8e: case 0x96: {
            /* counted strings: BINSTRING, SHORT_BINSTRING, BINUNICODE, BINBYTES, SHORT_BINBYTES,
               SHORT_BINUNICODE, BINUNICODE8, BINBYTES8, BYTEARRAY8 */
            int w = (op == 'U' || op == 'C' || op == 0x8c) ? 1 : (op == 0x8d || op == 0x8e || op == 0x96) ? 8 : 4;
            int kind = (op == 'B' || op == 'C' || op == 0x8e) ? PK_BYTES : op == 0x96 ? PK_BYTEARRAY : PK_STR;
            uint64_t n;
            pk_node *nd;
            NEED(w, "string length");
            n = rd_le(buf + pos, w);
            pos += (size_t)w;
            if (op == 'T' && (n & 0x80000000u))
                return pk_fail(P, op_at, "BINSTRING at byte %zu has a negative length", op_at);
            NEED(n, "string");
            nd = pk_new(P, kind);
            if (!nd) OOM();
            nd->s = buf + pos; nd->n = (size_t)n;   /* points into the input: no copy */
            pos += (size_t)n;
            PUSH(nd);
            break;
        }
        case ')': PUSH(pk_new(P, PK_TUPLE)); break;
        case ']': PUSH(pk_new(P, PK_LIST)); break;
        case '}': PUSH(pk_new(P, PK_DICT)); break;
        case 0x8f: PUSH(pk_new(P, PK_SET)); break;
        case 't': case 'l': case 'd': case 0x91: { /* TUPLE, LIST, DICT, FROZENSET */
            int kind = op == 't' ? PK_TUPLE : op == 'l' ? PK_LIST : op == 'd' ? PK_DICT : PK_FROZENSET;
            pk_node *c = pk_new(P, kind);
            if (!c) OOM();
            if (op == 'd' && P->nmarks && ((P->sp - P->marks[P->nmarks - 1]) & 1))
                return pk_fail(P, op_at, "odd number of items for DICT at byte %zu", op_at);
            if (pk_pop_mark_into(P, c, op_at) != 0) return -1;
            PUSH(c);
            break;
        }
        case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
            int k = (int)op - 0x84, j;
            pk_node *c = pk_new(P, PK_TUPLE), *items[3];
            if (!c) OOM();
            for (j = k - 1; j >= 0; j--) POP(items[j], "TUPLEn");
            for (j = 0; j < k; j++) if (pk_add(P, c, items[j]) != 0) OOM();
            PUSH(c);
            break;
        }
        case 'a': { /* APPEND */
            pk_node *v, *t;
            POP(v, "APPEND");
            t = pk_top(P);
            if (!t) return pk_fail(P, op_at, "stack underflow in APPEND at byte %zu", op_at);
            if (t->kind != PK_LIST) {
                if (!pk_is_obj(t)) return pk_fail(P, op_at, "APPEND to a %s at byte %zu", pk_kind_name(t->kind), op_at);
                t = pk_obj_items(P, t, 0);
                if (!t) OOM();
            }
            if (pk_add(P, t, v) != 0) OOM();
            break;
        }
        case 'e': case 'u': case 0x90: { /* APPENDS, SETITEMS, ADDITEMS */
            size_t m, k;
            pk_node *t;
            if (!P->nmarks) return pk_fail(P, op_at, "APPENDS/SETITEMS/ADDITEMS at byte %zu without a MARK", op_at);
            m = P->marks[P->nmarks - 1];
            if (m == 0 || (P->nmarks >= 2 && m <= P->marks[P->nmarks - 2]))
                return pk_fail(P, op_at, "stack underflow in APPENDS/SETITEMS/ADDITEMS at byte %zu", op_at);
            t = P->stack[m - 1];
            if (op == 'u' && ((P->sp - m) & 1)) return pk_fail(P, op_at, "odd number of items for SETITEMS at byte %zu", op_at);
            {
                int want = op == 'e' ? PK_LIST : op == 'u' ? PK_DICT : PK_SET;
                if (t->kind != want) {
                    if (!pk_is_obj(t))
                        return pk_fail(P, op_at, "%s to a %s at byte %zu", op == 'e' ? "APPENDS" : op == 'u' ? "SETITEMS" : "ADDITEMS",
                                       pk_kind_name(t->kind), op_at);
                    t = pk_obj_items(P, t, op != 'e');
                    if (!t) OOM();
                }
            }
            for (k = m; k < P->sp; k++) if (pk_add(P, t, P->stack[k]) != 0) OOM();
            P->sp = m;
            P->nmarks--;
            break;
        }
        case 's': { /* SETITEM */
            pk_node *v, *k, *t;
            POP(v, "SETITEM");
            POP(k, "SETITEM");
            t = pk_top(P);
            if (!t) return pk_fail(P, op_at, "stack underflow in SETITEM at byte %zu", op_at);
            if (t->kind != PK_DICT) {
                if (!pk_is_obj(t)) return pk_fail(P, op_at, "SETITEM to a %s at byte %zu", pk_kind_name(t->kind), op_at);
                t = pk_obj_items(P, t, 1);
                if (!t) OOM();
            }
            if (pk_add(P, t, k) != 0 || pk_add(P, t, v) != 0) OOM();
            break;
        }
        case 'h': case 'j': { /* BINGET, LONG_BINGET */
            uint32_t key;
            pk_node *v;
            NEED(op == 'h' ? 1 : 4, "BINGET");
            key = (uint32_t)rd_le(buf + pos, op == 'h' ? 1 : 4);
            pos += op == 'h' ? 1 : 4;
            v = pk_memo_get(P, key);
            if (!v) return pk_fail(P, op_at, "GET at byte %zu: memo key %lu is not set", op_at, (unsigned long)key);
            PUSH(v);
            break;
        }
        case 'q': case 'r': case 0x94: { /* BINPUT, LONG_BINPUT, MEMOIZE */
            uint32_t key;
            pk_node *t;
            if (op == 0x94) {
                if (P->mcount >= UINT32_MAX) OOM();
                key = (uint32_t)P->mcount;
            } else {
                NEED(op == 'q' ? 1 : 4, "BINPUT");
                key = (uint32_t)rd_le(buf + pos, op == 'q' ? 1 : 4);
                pos += op == 'q' ? 1 : 4;
            }
            t = pk_top(P);
            if (!t) return pk_fail(P, op_at, "stack underflow in PUT at byte %zu", op_at);
            if (pk_memo_put(P, key, t) != 0) OOM();
            break;
        }
        case 0x93: { /* STACK_GLOBAL */
            pk_node *name, *mod, *g;
            POP(name, "STACK_GLOBAL");
            POP(mod, "STACK_GLOBAL");
            if (name->kind != PK_STR || mod->kind != PK_STR)
                return pk_fail(P, op_at, "STACK_GLOBAL at byte %zu needs two str", op_at);
            g = pk_new(P, PK_GLOBAL);
            if (!g) OOM();
            g->s = mod->s; g->n = mod->n; g->s2 = name->s; g->n2 = name->n;
            PUSH(g);
            break;
        }
        case 'R': { /* REDUCE: recorded, never called */
            pk_node *args, *fn, *r;
            POP(args, "REDUCE");
            POP(fn, "REDUCE");
            r = pk_new(P, PK_REDUCE);
            if (!r) OOM();
            r->a = fn; r->b = args;
            PUSH(r);
            break;
        }
        case 0x81: case 0x92: { /* NEWOBJ, NEWOBJ_EX */
            pk_node *kw = NULL, *args, *cls, *r;
            if (op == 0x92) POP(kw, "NEWOBJ_EX");
            POP(args, "NEWOBJ");
            POP(cls, "NEWOBJ");
            r = pk_new(P, PK_NEWOBJ);
            if (!r) OOM();
            r->a = cls; r->b = args; r->c = kw;
            PUSH(r);
            break;
        }
        case 'o': { /* OBJ: MARK cls args... */
            pk_node *args = pk_new(P, PK_TUPLE), *r = pk_new(P, PK_INST);
            size_t m;
            if (!args || !r) OOM();
            if (!P->nmarks || P->sp <= P->marks[P->nmarks - 1])
                return pk_fail(P, op_at, "OBJ at byte %zu without a class after its MARK", op_at);
            m = P->marks[P->nmarks - 1];
            r->a = P->stack[m];
            P->stack[m] = args;   /* placeholder, popped with the rest */
            if (pk_pop_mark_into(P, args, op_at) != 0) return -1;
            /* drop the placeholder itself from the argument list */
            if (args->nv) { memmove(args->v, args->v + 1, (args->nv - 1) * sizeof *args->v); args->nv--; }
            r->b = args;
            PUSH(r);
            break;
        }
        case 'b': { /* BUILD: the state is recorded on the object */
            pk_node *st, *t;
            POP(st, "BUILD");
            t = pk_top(P);
            if (!t) return pk_fail(P, op_at, "stack underflow in BUILD at byte %zu", op_at);
            t->state = st;
            break;
        }
        case 'Q': { /* BINPERSID */
            pk_node *pid, *n;
            POP(pid, "BINPERSID");
            n = pk_new(P, PK_PERSID);
            if (!n) OOM();
            n->a = pid;
            PUSH(n);
            break;
        }
        case 0x82: case 0x83: case 0x84: { /* EXT1, EXT2, EXT4 */
            int w = op == 0x82 ? 1 : op == 0x83 ? 2 : 4;
            int64_t code;
            pk_node *n;
            NEED(w, "EXT");
            code = w == 4 ? (int64_t)(int32_t)(uint32_t)rd_le(buf + pos, 4) : (int64_t)rd_le(buf + pos, w);
            pos += (size_t)w;
            if (code <= 0) return pk_fail(P, op_at, "EXT at byte %zu has code <= 0", op_at);
            n = pk_new(P, PK_EXT);
            if (!n) OOM();
            n->i = code;
            PUSH(n);
            break;
        }
        case 0x97: { /* NEXT_BUFFER: out-of-band data, represented, not resolved */
            pk_node *n = pk_new(P, PK_BUFFER);
            if (!n) OOM();
            n->i = P->buffers++;
            PUSH(n);
            break;
        }
        case 0x98: { /* READONLY_BUFFER */
            pk_node *t = pk_top(P);
            if (!t) return pk_fail(P, op_at, "stack underflow in READONLY_BUFFER at byte %zu", op_at);
            t->readonly = 1;
            break;
        }
        default:
            return pk_fail(P, op_at, "unknown pickle opcode 0x%02x at byte %zu", op, op_at);
        }
    }
#undef NEED
#undef PUSH
#undef POP
#undef OOM
}

/* ---------------------------------------------------------------------------------------- */
/* Rendering values: Python-like repr, bounded in depth and size, cycle-safe.               */

static int node_is_str(const pk_node *n, const char *s)
{
    size_t l = strlen(s);
    return n && n->kind == PK_STR && n->n == l && memcmp(n->s, s, l) == 0;
}
static int bytes_eq(const unsigned char *a, size_t an, const char *s)
{
    size_t l = strlen(s);
    return an == l && memcmp(a, s, l) == 0;
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    uint32_t cp;
    size_t k, need;
    if (s[0] < 0x80) return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) { need = 2; cp = s[0] & 0x1F; }
    else if (s[0] >= 0xE0 && s[0] <= 0xEF) { need = 3; cp = s[0] & 0x0F; }
    else if (s[0] >= 0xF0 && s[0] <= 0xF4) { need = 4; cp = s[0] & 0x07; }
    else return 0;
    if (n < need) return 0;
    for (k = 1; k < need; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if ((need == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (need == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return need;
}

/* Text-safe string: printable ASCII and valid UTF-8 as is, everything else \xNN. */
static void ko_text(ki_out *o, const unsigned char *s, size_t n, size_t max)
{
    size_t i = 0;
    if (max && n > max) n = max;
    while (i < n && !o->full) {
        size_t l = utf8_len(s + i, n - i);
        if (l == 1 && s[i] >= 0x20 && s[i] < 0x7F && s[i] != '\\') { ko_putc(o, (char)s[i]); i++; continue; }
        if (l > 1) { ko_write(o, (const char *)s + i, l); i += l; continue; }
        if (s[i] == '\\') ko_puts(o, "\\\\");
        else if (s[i] == '\n') ko_puts(o, "\\n");
        else if (s[i] == '\t') ko_puts(o, "\\t");
        else ko_printf(o, "\\x%02x", s[i]);
        i++;
    }
}

/* JSON string body: valid UTF-8 passes, invalid bytes become U+FFFD, controls are escaped. */
static void ko_json_str(ki_out *o, const unsigned char *s, size_t n)
{
    size_t i = 0;
    ko_putc(o, '"');
    while (i < n && !o->full) {
        size_t l = utf8_len(s + i, n - i);
        if (l == 0) { ko_puts(o, "\\ufffd"); i++; continue; }
        if (l > 1) { ko_write(o, (const char *)s + i, l); i += l; continue; }
        if (s[i] == '"') ko_puts(o, "\\\"");
        else if (s[i] == '\\') ko_puts(o, "\\\\");
        else if (s[i] == '\n') ko_puts(o, "\\n");
        else if (s[i] < 0x20 || s[i] == 0x7F) ko_printf(o, "\\u%04x", s[i]);
        else ko_putc(o, (char)s[i]);
        i++;
    }
    ko_putc(o, '"');
}
static void ko_json_cstr(ki_out *o, const char *s)
{
    if (!s) { ko_puts(o, "null"); return; }
    ko_json_str(o, (const unsigned char *)s, strlen(s));
}

static int dbl_is_finite(double d) { return d == d && d - d == 0.0; }

/* Shortest text that reads back as the same double (Python's repr), or inf/nan. */
static void fmt_double(char *out, size_t cap, double d)
{
    int prec;
    if (d != d) { ki_fmt(out, cap, "nan"); return; }
    if (!dbl_is_finite(d)) { ki_fmt(out, cap, d > 0 ? "inf" : "-inf"); return; }
    for (prec = 1; prec <= 17; prec++) {
        ki_fmt(out, cap, "%.*g", prec, d);
        if (strtod(out, NULL) == d) break;
    }
    if (!strpbrk(out, ".eEn") && strlen(out) + 2 < cap) strcat(out, ".0");
}

/* Decimal text of a little-endian two's complement integer of up to 64 bytes. */
static void fmt_bigint(ki_out *o, const pk_node *n)
{
    unsigned char mag[64];
    char dig[200];
    size_t len = n->n, i, nd = 0;
    int neg;
    if (n->i == 1) { ko_text(o, n->s, n->n, 200); return; }   /* already decimal text */
    if (len > sizeof mag) { ko_printf(o, "<int of %zu bytes>", len); return; }
    neg = len && (n->s[len - 1] & 0x80);
    for (i = 0; i < len; i++) mag[i] = neg ? (unsigned char)~n->s[i] : n->s[i];
    if (neg) { /* +1 to finish the two's complement negation */
        for (i = 0; i < len; i++) { if (++mag[i] != 0) break; }
    }
    for (;;) {
        unsigned rem = 0;
        int zero = 1;
        for (i = len; i-- > 0;) {
            unsigned cur = (rem << 8) | mag[i];
            mag[i] = (unsigned char)(cur / 10);
            rem = cur % 10;
            if (mag[i]) zero = 0;
        }
        dig[nd++] = (char)('0' + rem);
        if (zero || nd >= sizeof dig - 1) break;
    }
    if (neg) ko_putc(o, '-');
    while (nd) ko_putc(o, dig[--nd]);
}

static void pk_repr(ki_out *o, pk_node *n, int depth);

static void pk_repr_seq(ki_out *o, pk_node *n, const char *open, const char *close, int depth, int pairs)
{
    size_t k;
    ko_puts(o, open);
    for (k = 0; k < n->nv && !o->full; k++) {
        if (k) ko_puts(o, pairs && (k & 1) ? ": " : ", ");
        pk_repr(o, n->v[k], depth + 1);
    }
    if (n->kind == PK_TUPLE && n->nv == 1) ko_putc(o, ',');
    ko_puts(o, close);
}

static void pk_repr(ki_out *o, pk_node *n, int depth)
{
    char tmp[64];
    if (o->full) return;
    if (!n) { ko_puts(o, "<nothing>"); return; }
    if (depth > KI_MAX_DEPTH) { ko_puts(o, "..."); return; }
    if (n->busy) { ko_puts(o, "<cycle>"); return; }
    n->busy = 1;
    switch (n->kind) {
    case PK_NONE: ko_puts(o, "None"); break;
    case PK_BOOL: ko_puts(o, n->i ? "True" : "False"); break;
    case PK_INT: ko_printf(o, "%lld", (long long)n->i); break;
    case PK_BIGINT: fmt_bigint(o, n); break;
    case PK_FLOAT: fmt_double(tmp, sizeof tmp, n->f); ko_puts(o, tmp); break;
    case PK_STR: ko_putc(o, '\''); ko_text(o, n->s, n->n, KI_INLINE_LIMIT); if (n->n > KI_INLINE_LIMIT) ko_puts(o, "..."); ko_putc(o, '\''); break;
    case PK_BYTES:
    case PK_BYTEARRAY:
        ko_puts(o, n->kind == PK_BYTES ? "b'" : "bytearray(b'");
        {
            size_t k, m = n->n > 256 ? 256 : n->n;
            for (k = 0; k < m; k++) {
                unsigned c = n->s[k];
                if (c >= 0x20 && c < 0x7F && c != '\\' && c != '\'') ko_putc(o, (char)c);
                else ko_printf(o, "\\x%02x", c);
            }
            if (n->n > m) ko_printf(o, "...(%zu bytes)", n->n);
        }
        ko_puts(o, n->kind == PK_BYTES ? "'" : "')");
        break;
    case PK_TUPLE: pk_repr_seq(o, n, "(", ")", depth, 0); break;
    case PK_LIST: pk_repr_seq(o, n, "[", "]", depth, 0); break;
    case PK_DICT: pk_repr_seq(o, n, "{", "}", depth, 1); break;
    case PK_SET: if (n->nv) pk_repr_seq(o, n, "{", "}", depth, 0); else ko_puts(o, "set()"); break;
    case PK_FROZENSET: pk_repr_seq(o, n, "frozenset({", "})", depth, 0); break;
    case PK_GLOBAL: ko_text(o, n->s, n->n, 256); ko_putc(o, '.'); ko_text(o, n->s2, n->n2, 256); break;
    case PK_REDUCE:
    case PK_NEWOBJ:
    case PK_INST:
        pk_repr(o, n->a, depth + 1);
        if (n->b && n->b->kind == PK_TUPLE) {
            size_t k;
            ko_putc(o, '(');
            for (k = 0; k < n->b->nv && !o->full; k++) { if (k) ko_puts(o, ", "); pk_repr(o, n->b->v[k], depth + 1); }
        } else {
            ko_puts(o, "(*");
            pk_repr(o, n->b, depth + 1);
        }
        if (n->c) { ko_puts(o, ", **"); pk_repr(o, n->c, depth + 1); }
        ko_putc(o, ')');
        break;
    case PK_PERSID:
        ko_puts(o, "persistent_id(");
        if (n->a) pk_repr(o, n->a, depth + 1);
        else { ko_putc(o, '\''); ko_text(o, n->s, n->n, 256); ko_putc(o, '\''); }
        ko_putc(o, ')');
        break;
    case PK_EXT: ko_printf(o, "extension(%lld)", (long long)n->i); break;
    case PK_BUFFER: ko_printf(o, "<out-of-band buffer %lld>", (long long)n->i); break;
    default: ko_puts(o, "?"); break;
    }
    if (n->state) { ko_puts(o, " <state "); pk_repr(o, n->state, depth + 1); ko_putc(o, '>'); }
    if (n->listitems) { ko_puts(o, " <items "); pk_repr(o, n->listitems, depth + 1); ko_putc(o, '>'); }
    if (n->dictitems) { ko_puts(o, " <setitems "); pk_repr(o, n->dictitems, depth + 1); ko_putc(o, '>'); }
    n->busy = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* numba types: by their state['name'] (every numba Type pickles its name), Signatures as   */
/* "(args) -> return".                                                                       */

static const pk_node *dict_get(const pk_node *d, const char *key)
{
    size_t k;
    if (!d || d->kind != PK_DICT) return NULL;
    for (k = 0; k + 1 < d->nv; k += 2)
        if (node_is_str(d->v[k], key)) return d->v[k + 1];
    return NULL;
}

/* The class GLOBAL of an object node, looking through copyreg._reconstructor-style args. */
static const pk_node *obj_class(const pk_node *n, int depth)
{
    if (!n || depth > 8) return NULL;
    if (n->kind == PK_NEWOBJ || n->kind == PK_INST) return n->a && n->a->kind == PK_GLOBAL ? n->a : NULL;
    if (n->kind == PK_REDUCE && n->b && n->b->kind == PK_TUPLE) {
        size_t k;
        /* numba: _type_reconstructor(copyreg._reconstructor, (cls, object, None), state) */
        for (k = 0; k < n->b->nv; k++) {
            const pk_node *x = n->b->v[k];
            if (x->kind == PK_TUPLE && x->nv >= 1 && x->v[0]->kind == PK_GLOBAL) return x->v[0];
        }
        if (n->b->nv >= 1 && n->b->v[0]->kind == PK_GLOBAL &&
            !(n->a && n->a->kind == PK_GLOBAL && bytes_eq(n->a->s2, n->a->n2, "_type_reconstructor")))
            return n->b->v[0];
        return n->a && n->a->kind == PK_GLOBAL ? n->a : NULL;
    }
    return NULL;
}

/* state['name'] of a numba type object, when it has one. */
static const pk_node *type_name(const pk_node *n)
{
    const pk_node *nm;
    size_t k;
    if (!n) return NULL;
    if ((nm = dict_get(n->state, "name")) && nm->kind == PK_STR) return nm;
    if (n->kind == PK_REDUCE && n->b && n->b->kind == PK_TUPLE)
        for (k = 0; k < n->b->nv; k++)
            if ((nm = dict_get(n->b->v[k], "name")) && nm->kind == PK_STR) return nm;
    return NULL;
}

static void nb_type_str(ki_out *o, pk_node *n, int depth, int top);

static void nb_type_tuple(ki_out *o, pk_node *t, int depth)
{
    size_t k;
    ko_putc(o, '(');
    for (k = 0; k < t->nv && !o->full; k++) {
        if (k) ko_puts(o, ", ");
        nb_type_str(o, t->v[k], depth + 1, 0);
    }
    ko_putc(o, ')');
}

static void nb_type_str(ki_out *o, pk_node *n, int depth, int top)
{
    const pk_node *nm, *cls;
    if (o->full) return;
    if (!n) { ko_puts(o, "?"); return; }
    if (depth > KI_MAX_DEPTH || n->busy) { ko_puts(o, "..."); return; }
    if ((nm = type_name(n)) != NULL) { ko_text(o, nm->s, nm->n, 512); return; }
    cls = obj_class(n, 0);
    if (cls && bytes_eq(cls->s2, cls->n2, "Signature") && n->state && n->state->kind == PK_TUPLE && n->state->nv >= 2) {
        /* numba.core.typing.templates.Signature state: (return_type, args, recvr, pysig) */
        pk_node *ret = n->state->v[0], *args = n->state->v[1];
        n->busy = 1;
        if (args->kind == PK_TUPLE) nb_type_tuple(o, args, depth + 1);
        else nb_type_str(o, args, depth + 1, 0);
        ko_puts(o, " -> ");
        nb_type_str(o, ret, depth + 1, 0);
        n->busy = 0;
        return;
    }
    if (n->kind == PK_TUPLE && top) { n->busy = 1; nb_type_tuple(o, n, depth); n->busy = 0; return; }
    pk_repr(o, n, depth);
}

/* Renders into an arena string, at most max bytes. */
static char *render_to(ki_arena *a, pk_node *n, int type_mode, size_t max)
{
    ki_out o;
    char *s;
    memset(&o, 0, sizeof o);
    o.limit = max;
    if (type_mode) nb_type_str(&o, n, 0, 1);
    else pk_repr(&o, n, 0);
    s = (char *)ka_alloc(a, o.len + 4);
    if (s) {
        if (o.len) memcpy(s, o.buf, o.len);
        if (o.full) memcpy(s + (o.len >= 3 ? o.len - 3 : 0), "...", 3);
    }
    ko_free(&o);
    return s;
}

/* ---------------------------------------------------------------------------------------- */
/* SHA-1 (numba names a NUMBA_CACHE_DIR subdirectory after the sha1 of the source's         */
/* directory) and SHA-256 (numba >= 0.68's stamp is the sha256 digest of the source).       */
/* Written from FIPS 180-4.                                                                  */

typedef struct ki_sha { uint32_t h[8]; uint64_t len; unsigned char blk[64]; size_t fill; int is256; } ki_sha;

static uint32_t rol32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static uint32_t ror32(uint32_t x, int r) { return (x >> r) | (x << (32 - r)); }

static const uint32_t ki_k256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2 };

static void sha_init(ki_sha *s, int is256)
{
    static const uint32_t h1[5] = { 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0 };
    static const uint32_t h256[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    memset(s, 0, sizeof *s);
    s->is256 = is256;
    if (is256) memcpy(s->h, h256, sizeof h256);
    else memcpy(s->h, h1, sizeof h1);
}

static void sha_block(ki_sha *s, const unsigned char *p)
{
    uint32_t w[80], a, b, c, d, e, f, g, h, t1, t2;
    int i;
    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    if (!s->is256) {
        for (i = 16; i < 80; i++) w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3]; e = s->h[4];
        for (i = 0; i < 80; i++) {
            uint32_t fn, k;
            if (i < 20) { fn = (b & c) | (~b & d); k = 0x5A827999; }
            else if (i < 40) { fn = b ^ c ^ d; k = 0x6ED9EBA1; }
            else if (i < 60) { fn = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC; }
            else { fn = b ^ c ^ d; k = 0xCA62C1D6; }
            t1 = rol32(a, 5) + fn + e + k + w[i];
            e = d; d = c; c = rol32(b, 30); b = a; a = t1;
        }
        s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d; s->h[4] += e;
        return;
    }
    for (i = 16; i < 64; i++) {
        uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3]; e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
    for (i = 0; i < 64; i++) {
        t1 = h + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + ki_k256[i] + w[i];
        t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d; s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

static void sha_update(ki_sha *s, const void *data, size_t n)
{
    const unsigned char *p = (const unsigned char *)data;
    s->len += n;
    while (n) {
        size_t take = 64 - s->fill;
        if (take > n) take = n;
        memcpy(s->blk + s->fill, p, take);
        s->fill += take; p += take; n -= take;
        if (s->fill == 64) { sha_block(s, s->blk); s->fill = 0; }
    }
}

static void sha_final(ki_sha *s, unsigned char *out)
{
    uint64_t bits = s->len * 8;
    unsigned char pad = 0x80, z = 0, lb[8];
    int i, words = s->is256 ? 8 : 5;
    sha_update(s, &pad, 1);
    while (s->fill != 56) sha_update(s, &z, 1);
    for (i = 0; i < 8; i++) lb[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha_update(s, lb, 8);
    for (i = 0; i < words; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24); out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8); out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

static void hex_of(const unsigned char *p, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    size_t i;
    for (i = 0; i < n; i++) { out[2 * i] = hx[p[i] >> 4]; out[2 * i + 1] = hx[p[i] & 15]; }
    out[2 * n] = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The numba index.                                                                          */

typedef enum nb_stamp_kind {
    ST_MTIME_SIZE,   /* (st_mtime float, st_size int): numba <= 0.67 */
    ST_FLOOR_SIZE,   /* (floor(st_mtime) int, st_size int): 0.62-0.67 InTreeCacheLocatorFsAgnostic */
    ST_SHA256,       /* 32 bytes: sha256 of the source's content, numba >= 0.68 */
    ST_HEXHASH,      /* 64 hex chars: IPython locator, sha256 of the cell's source */
    ST_OTHER
} nb_stamp_kind;

typedef struct nb_overload {
    pk_node *key, *value;
    int shape_ok;                  /* key is (sig, (triple, cpu, features), (code, closure)) */
    char *sig;                     /* rendered signature */
    char *key_repr;                /* rendered key when its shape is not numba's */
    const pk_node *triple, *cpu, *features, *code, *closure;
    const pk_node *data;           /* .nbc file name */
    int data_name_ok;              /* a plain file name */
    int data_exists;               /* -1 unknown, 0, 1 */
    long long data_size;
    int cpu_match;                 /* -1 unknown, 0 no, 1 yes */
    int usable;                    /* -1 unknown, 0, 1 */
} nb_overload;

typedef struct nb_index {
    ki_arena arena;
    const unsigned char *buf;
    size_t len;
    pk_node *version;
    size_t version_end, body_end;
    int body_proto, version_proto;
    pk_node *stamp;
    int stamp_kind;
    double stamp_mtime;            /* ST_MTIME_SIZE, ST_FLOOR_SIZE */
    long long stamp_size;
    pk_node *overloads;
    nb_overload *ov;
    size_t nov;
} nb_index;

static void nb_index_free(nb_index *ix)
{
    ka_free(&ix->arena);
    memset(ix, 0, sizeof *ix);
}

static int is_hex_str(const pk_node *n, size_t len)
{
    size_t k;
    if (!n || n->kind != PK_STR || n->n != len) return 0;
    for (k = 0; k < len; k++) if (hexval(n->s[k]) < 0) return 0;
    return 1;
}

/* Decodes buf as a numba index.  0 on success; -1 with a one-line message in err. */
static int nb_decode(const unsigned char *buf, size_t len, nb_index *ix, char *err, size_t errcap)
{
    pk_parser P;
    pk_node *body;
    size_t k;
    memset(ix, 0, sizeof *ix);
    ix->arena.limit = KI_MAX_MEM;
    ix->buf = buf; ix->len = len;
    if (len == 0) { ki_fmt(err, errcap, "empty file"); return -1; }
    if (buf[0] != 0x80) {
        ki_fmt(err, errcap, "not a numba index: does not start with a pickle PROTO opcode (first byte 0x%02x)", buf[0]);
        return -1;
    }
    pk_parser_init(&P, &ix->arena);
    if (pk_load(&P, buf, len, 0, &ix->version_end, &ix->version) != 0) {
        ki_fmt(err, errcap, "cannot decode the version pickle: %s", P.err);
        pk_parser_free(&P);
        return -1;
    }
    ix->version_proto = P.proto;
    pk_parser_free(&P);
    if (ix->version->kind != PK_STR) {
        ki_fmt(err, errcap, "not a numba index: the first pickle is a %s, not the numba version string",
                 pk_kind_name(ix->version->kind));
        return -1;
    }
    if (ix->version_end >= len) {
        ki_fmt(err, errcap, "truncated: no index body after the version pickle (file ends at byte %zu)", len);
        return -1;
    }
    pk_parser_init(&P, &ix->arena);   /* numba unpickles the body separately: a fresh memo */
    if (pk_load(&P, buf, len, ix->version_end, &ix->body_end, &body) != 0) {
        ki_fmt(err, errcap, "cannot decode the index body: %s", P.err);
        pk_parser_free(&P);
        return -1;
    }
    ix->body_proto = P.proto;
    pk_parser_free(&P);
    if (body->kind != PK_TUPLE || body->nv != 2) {
        ki_fmt(err, errcap, "not a numba index: the body is a %s%s, not the pair (stamp, overloads)",
                 pk_kind_name(body->kind), body->kind == PK_TUPLE ? " of another length" : "");
        return -1;
    }
    ix->stamp = body->v[0];
    ix->overloads = body->v[1];
    if (ix->overloads->kind != PK_DICT) {
        ki_fmt(err, errcap, "not a numba index: overloads is a %s, not a dict", pk_kind_name(ix->overloads->kind));
        return -1;
    }
    /* the stamp */
    ix->stamp_kind = ST_OTHER;
    if (ix->stamp->kind == PK_TUPLE && ix->stamp->nv == 2 && ix->stamp->v[1]->kind == PK_INT) {
        if (ix->stamp->v[0]->kind == PK_FLOAT) { ix->stamp_kind = ST_MTIME_SIZE; ix->stamp_mtime = ix->stamp->v[0]->f; }
        else if (ix->stamp->v[0]->kind == PK_INT) { ix->stamp_kind = ST_FLOOR_SIZE; ix->stamp_mtime = (double)ix->stamp->v[0]->i; }
        ix->stamp_size = (long long)ix->stamp->v[1]->i;
    } else if (ix->stamp->kind == PK_BYTES && ix->stamp->n == 32) {
        ix->stamp_kind = ST_SHA256;
    } else if (is_hex_str(ix->stamp, 64)) {
        ix->stamp_kind = ST_HEXHASH;
    }
    /* the overloads */
    ix->nov = ix->overloads->nv / 2;
    if (ix->nov > KI_MAX_OVERLOADS) {
        ki_fmt(err, errcap, "not a plausible numba index: %zu overloads (the limit is %d)", ix->nov, KI_MAX_OVERLOADS);
        return -1;
    }
    if (ix->nov) {
        ix->ov = (nb_overload *)ka_alloc(&ix->arena, ix->nov * sizeof *ix->ov);
        if (!ix->ov) { ki_fmt(err, errcap, "too many overloads (memory limit)"); return -1; }
    }
    for (k = 0; k < ix->nov; k++) {
        nb_overload *o = &ix->ov[k];
        pk_node *key = ix->overloads->v[2 * k], *m, *h;
        o->key = key;
        o->value = ix->overloads->v[2 * k + 1];
        o->data_exists = -1;
        o->cpu_match = -1;
        o->usable = -1;
        o->data_size = -1;
        if (o->value->kind == PK_STR) {
            size_t j;
            o->data = o->value;
            o->data_name_ok = o->value->n > 0 && o->value->n < 1024 && !bytes_eq(o->value->s, o->value->n, ".") &&
                              !bytes_eq(o->value->s, o->value->n, "..");
            for (j = 0; j < o->value->n; j++)
                if (o->value->s[j] == '/' || o->value->s[j] == 0 || o->value->s[j] == '\\') o->data_name_ok = 0;
        }
        if (key->kind == PK_TUPLE && key->nv == 3 && (m = key->v[1])->kind == PK_TUPLE && m->nv == 3 &&
            m->v[0]->kind == PK_STR && m->v[1]->kind == PK_STR && m->v[2]->kind == PK_STR &&
            (h = key->v[2])->kind == PK_TUPLE && h->nv == 2 && h->v[0]->kind == PK_STR && h->v[1]->kind == PK_STR) {
            o->shape_ok = 1;
            o->triple = m->v[0]; o->cpu = m->v[1]; o->features = m->v[2];
            o->code = h->v[0]; o->closure = h->v[1];
            o->sig = render_to(&ix->arena, key->v[0], 1, 2048);
        } else {
            o->key_repr = render_to(&ix->arena, key, 0, 2048);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Host CPU.                                                                                 */

/* The one place that knows the host's CPU in numba's terms (LLVM's host CPU name and its
 * feature string "+a,-b,...").  kcache.h's detector gives both with LLVM's names, from CPUID
 * (or the platform's equivalent).  numba takes them from the LLVM inside its llvmlite, whose
 * tables are older or newer than the detector's: the two lists name different sets of features
 * (this machine's LLVM 14 knows 14 fewer than the detector, LLVM 22 15 more), so a detected
 * feature string is compared with an index's name by name: every feature both name must agree,
 * one named by only one side is not compared.  --features and NUMBA_CPU_FEATURES are compared
 * byte for byte, as numba does.  Returns 1 and fills name/feat when known, 0 when unknown. */
static int inspect_host_cpu(char *name, size_t name_cap, char *feat, size_t feat_cap)
{
    if (!name_cap || !feat_cap) return 0;
    kcache__host_cpu_name(name, name_cap);
    kcache__host_cpu_features(feat, feat_cap);
    return name[0] != 0;
}

typedef struct ki_opts {
    const char *path;
    const char *source;
    const char *cpu, *features, *triple, *numba_version;
    int json, dump, force_numba;
    /* kcache mode */
    const char *unit;                 /* DIR UNIT */
    int verify;                       /* --verify: every checksum in the store */
    int stamp;                        /* KCACHE_STAMP_*: how a dependency's stamp is judged */
    const char *stamp_from;
    int no_deps;                      /* do not look at dependency files (the fuzz target) */
} ki_opts;

typedef struct ki_host {
    const char *cpu, *features;       /* NULL: unknown */
    const char *cpu_from, *features_from;
    int features_by_name;             /* detected: compare with an index name by name */
    char cpu_buf[128], feat_buf[KCACHE__HOST_FEATURES_MAX];
} ki_host;

static int str_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        int ca = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a, cb = *b >= 'A' && *b <= 'Z' ? *b + 32 : *b;
        if (ca != cb) return 0;
    }
    return *a == *b;
}

static void host_resolve(const ki_opts *op, ki_host *h)
{
    const char *env_cpu = getenv("NUMBA_CPU_NAME"), *env_feat = getenv("NUMBA_CPU_FEATURES");
    int det;
    memset(h, 0, sizeof *h);
    if (op->cpu) { h->cpu = op->cpu; h->cpu_from = "--cpu"; }
    else if (env_cpu) { h->cpu = env_cpu; h->cpu_from = "NUMBA_CPU_NAME"; }
    if (op->features) { h->features = op->features; h->features_from = "--features"; }
    else if (env_feat) { h->features = env_feat; h->features_from = "NUMBA_CPU_FEATURES"; }
    else if (h->cpu && str_ieq(h->cpu, "generic")) { h->features = ""; h->features_from = "numba's default for generic"; }
    if (h->cpu && h->features) return;
    det = inspect_host_cpu(h->cpu_buf, sizeof h->cpu_buf, h->feat_buf, sizeof h->feat_buf);
    if (det) {
        if (!h->cpu) { h->cpu = h->cpu_buf; h->cpu_from = "detected"; }
        if (!h->features) {
            h->features = h->feat_buf;
            h->features_from = "detected, compared name by name";
            h->features_by_name = 1;
        }
    }
}

/* Feature strings: "+name,-name,...". */
typedef struct feat { const char *name; size_t len; char sign; } feat;

static size_t feat_parse(const unsigned char *s, size_t n, feat *out, size_t cap)
{
    size_t i = 0, cnt = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] != ',' && s[j] != ' ') j++;
        if (j > i && cnt < cap) {
            feat *f = &out[cnt++];
            f->sign = (s[i] == '+' || s[i] == '-') ? (char)s[i] : '+';
            f->name = (const char *)s + i + (s[i] == '+' || s[i] == '-');
            f->len = j - i - (size_t)(s[i] == '+' || s[i] == '-');
        }
        i = j + 1;
    }
    return cnt;
}

static int feat_cmp(const void *x, const void *y)
{
    const feat *a = (const feat *)x, *b = (const feat *)y;
    size_t l = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->name, b->name, l);
    return c ? c : a->len < b->len ? -1 : a->len > b->len;
}

#define KI_MAX_FEATS 1024

static void feat_emit(ki_out *o, char sign, const feat *f, size_t *nd, size_t max, int json)
{
    char buf[160];
    size_t l = f->len < 120 ? f->len : 120;
    buf[0] = sign;
    memcpy(buf + 1, f->name, l);
    buf[l + 1] = 0;
    if (*nd < max && o) {
        if (json) { if (*nd) ko_putc(o, ','); ko_json_cstr(o, buf); }
        else { ko_putc(o, ' '); ko_text(o, (const unsigned char *)buf, l + 1, 0); }
    }
    (*nd)++;
}

/* Writes the difference of features a against reference b, in name order: "+x" a enables x
 * where b does not, "-x" a disables x where b enables it, "?x" named by only one of the two
 * (left out with by_name: a detected reference names another LLVM's set of features).
 * Returns the number of differences; writes at most max of them.  Sorted merge: O(n log n)
 * whatever a hostile index holds; at most KI_MAX_FEATS entries of each string are compared. */
static size_t feat_diff(ki_out *o, const unsigned char *a, size_t an, const unsigned char *b, size_t bn,
                        size_t max, int json, int by_name)
{
    static feat fa[KI_MAX_FEATS], fb[KI_MAX_FEATS];
    size_t na = feat_parse(a, an, fa, KI_MAX_FEATS), nb = feat_parse(b, bn, fb, KI_MAX_FEATS), i = 0, j = 0, nd = 0;
    qsort(fa, na, sizeof *fa, feat_cmp);
    qsort(fb, nb, sizeof *fb, feat_cmp);
    while (i < na || j < nb) {
        int c = i >= na ? 1 : j >= nb ? -1 : feat_cmp(&fa[i], &fb[j]);
        if (c < 0) { if (!by_name) feat_emit(o, '?', &fa[i], &nd, max, json); i++; }
        else if (c > 0) { if (!by_name) feat_emit(o, '?', &fb[j], &nd, max, json); j++; }
        else {
            if (fa[i].sign != fb[j].sign) feat_emit(o, fa[i].sign, &fa[i], &nd, max, json);
            i++; j++;
        }
    }
    return nd;
}

/* Whether an index's feature string a matches a detected host string b name by name: every
 * feature both name agrees, and each side names mostly (4 in 5) features the other names too,
 * so that two LLVMs' lists of one CPU match while "" or a short list never matches a full one. */
static int feat_match_by_name(const unsigned char *a, size_t an, const unsigned char *b, size_t bn)
{
    static feat fa[KI_MAX_FEATS], fb[KI_MAX_FEATS];
    size_t na = feat_parse(a, an, fa, KI_MAX_FEATS), nb = feat_parse(b, bn, fb, KI_MAX_FEATS), i = 0, j = 0, common = 0;
    qsort(fa, na, sizeof *fa, feat_cmp);
    qsort(fb, nb, sizeof *fb, feat_cmp);
    while (i < na && j < nb) {
        int c = feat_cmp(&fa[i], &fb[j]);
        if (c < 0) i++;
        else if (c > 0) j++;
        else {
            if (fa[i].sign != fb[j].sign) return 0;
            common++; i++; j++;
        }
    }
    return common * 5 >= na * 4 && common * 5 >= nb * 4;
}

static size_t feat_count(const pk_node *f, size_t *enabled)
{
    static feat fs[KI_MAX_FEATS];
    size_t n = feat_parse(f->s, f->n, fs, KI_MAX_FEATS), k;
    *enabled = 0;
    for (k = 0; k < n; k++) if (fs[k].sign == '+') (*enabled)++;
    return n;
}

static int node_eq_cstr(const pk_node *n, const char *s) { return n && n->kind == PK_STR && bytes_eq(n->s, n->n, s); }
static int node_str_eq(const pk_node *a, const pk_node *b)
{
    return a && b && a->n == b->n && (a->n == 0 || memcmp(a->s, b->s, a->n) == 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Paths and the source file.                                                                */

/* Python's os.path.abspath: join with the cwd, then normalize lexically (no symlinks). */
static int ki_abspath(const char *p, char *out, size_t cap)
{
    char cwd[4096], tmp[8192];
    size_t o = 0, i = 0, n, root;
    size_t segstart[1024];
    size_t nseg = 0;
    if (p[0] == '/') {
        if (strlen(p) >= sizeof tmp) return -1;
        memcpy(tmp, p, strlen(p) + 1);
    } else {
        if (!getcwd(cwd, sizeof cwd)) return -1;
        if ((size_t)ki_fmt(tmp, sizeof tmp, "%s/%s", cwd, p) >= sizeof tmp) return -1;
    }
    n = strlen(tmp);
    if (cap < 3) return -1;
    out[o++] = '/';
    /* POSIX: exactly two leading slashes are kept */
    if (n >= 2 && tmp[1] == '/' && (n == 2 || tmp[2] != '/')) out[o++] = '/';
    root = o;
    while (i < n) {
        size_t j;
        while (i < n && tmp[i] == '/') i++;
        j = i;
        while (j < n && tmp[j] != '/') j++;
        if (j == i) break;
        if (j - i == 1 && tmp[i] == '.') { i = j; continue; }
        if (j - i == 2 && tmp[i] == '.' && tmp[i + 1] == '.') {
            if (nseg) o = segstart[--nseg];
            i = j;
            continue;
        }
        if (nseg == sizeof segstart / sizeof segstart[0]) return -1;
        segstart[nseg++] = o;
        if (o > root) out[o++] = '/';
        if (o + (j - i) + 1 >= cap) return -1;
        memcpy(out + o, tmp + i, j - i);
        o += j - i;
        i = j;
    }
    out[o] = 0;
    return 0;
}

static void path_dirname(const char *p, char *out, size_t cap)
{
    const char *sl = strrchr(p, '/');
    if (!sl) { ki_fmt(out, cap, "."); return; }
    if (sl == p) { ki_fmt(out, cap, "/"); return; }
    ki_fmt(out, cap, "%.*s", (int)(sl - p), p);
}
static const char *path_base(const char *p)
{
    const char *sl = strrchr(p, '/');
    return sl ? sl + 1 : p;
}
static int is_file(const char *p, struct stat *st)
{
    struct stat s;
    if (!st) st = &s;
    return stat(p, st) == 0 && S_ISREG(st->st_mode);
}
static int is_dir(const char *p)
{
    struct stat s;
    return stat(p, &s) == 0 && S_ISDIR(s.st_mode);
}

/* What the index file name says: FULLNAME-DISAMBIGUATOR.pyXY[abiflags].nbi */
typedef struct nb_name {
    char fullname[1024];
    char disamb[128];
    char pytag[32];
    long line;                /* -1 when the disambiguator is not a line number (IPython) */
    char module[512];         /* the module file's base name, as found or guessed */
    char qualname[1024];
    char func[512];
    int ok;
} nb_name;

static void nb_parse_name(const char *base, nb_name *nm)
{
    size_t n = strlen(base), i, dash;
    memset(nm, 0, sizeof *nm);
    nm->line = -1;
    if (n < 5 || strcmp(base + n - 4, ".nbi") != 0) return;
    n -= 4;
    /* ".pyXY[flags]" at the end */
    for (i = n; i-- > 0;) {
        if (base[i] == '.' && i + 3 < n && base[i + 1] == 'p' && base[i + 2] == 'y' && base[i + 3] >= '0' && base[i + 3] <= '9') break;
        if (i == 0) return;
    }
    if ((size_t)(n - i - 1) >= sizeof nm->pytag) return;
    memcpy(nm->pytag, base + i + 1, n - i - 1);
    nm->pytag[n - i - 1] = 0;
    for (dash = i; dash-- > 0;) if (base[dash] == '-') break;
    if (dash == (size_t)-1 || dash == 0 || i - dash - 1 >= sizeof nm->disamb || dash >= sizeof nm->fullname) return;
    memcpy(nm->disamb, base + dash + 1, i - dash - 1);
    nm->disamb[i - dash - 1] = 0;
    memcpy(nm->fullname, base, dash);
    nm->fullname[dash] = 0;
    {
        char *end;
        long v = strtol(nm->disamb, &end, 10);
        if (nm->disamb[0] >= '0' && nm->disamb[0] <= '9' && !*end) nm->line = v;
    }
    /* first guess: the module is the part before the first dot */
    {
        const char *dot = strchr(nm->fullname, '.');
        size_t ml = dot ? (size_t)(dot - nm->fullname) : strlen(nm->fullname);
        if (ml >= sizeof nm->module) ml = sizeof nm->module - 1;
        memcpy(nm->module, nm->fullname, ml);
        nm->module[ml] = 0;
        ki_fmt(nm->qualname, sizeof nm->qualname, "%s", dot ? dot + 1 : nm->fullname);
    }
    {
        const char *last = strrchr(nm->qualname, '.');
        ki_fmt(nm->func, sizeof nm->func, "%s", last ? last + 1 : nm->qualname);
    }
    nm->ok = 1;
}

/* In directory dir, finds the module file for nm's fullname: the module name is the file's
 * base name, which may itself hold dots, so every split is tried, shortest first. */
static int find_module_file(const char *dir, nb_name *nm, char *out, size_t cap)
{
    const char *fn = nm->fullname;
    size_t i, n = strlen(fn);
    for (i = 1; i <= n; i++) {
        if (i < n && fn[i] != '.') continue;
        if (i >= sizeof nm->module) break;
        if ((size_t)ki_fmt(out, cap, "%s/%.*s.py", dir, (int)i, fn) >= cap) continue;
        if (is_file(out, NULL)) {
            memcpy(nm->module, fn, i);
            nm->module[i] = 0;
            ki_fmt(nm->qualname, sizeof nm->qualname, "%s", i < n ? fn + i + 1 : "");
            {
                const char *last = strrchr(nm->qualname, '.');
                ki_fmt(nm->func, sizeof nm->func, "%s", last ? last + 1 : nm->qualname);
            }
            return 1;
        }
    }
    return 0;
}

typedef struct nb_source {
    char path[4096];
    const char *how;          /* how it was found */
    char note[600];           /* about the cache layout, when worth saying */
    int found;                /* 1: path is the source file */
    struct stat st;
    int line_checked;         /* 1 ok, 0 not checked, -1 the line does not start the function */
    char line_text[200];
    long moved_to;            /* the function's first line now, when it moved; else -1 */
} nb_source;

static int sha1_dir_matches(const char *dir, const char *hash40)
{
    ki_sha s;
    unsigned char d[20];
    char hx[41];
    sha_init(&s, 0);
    sha_update(&s, dir, strlen(dir));
    sha_final(&s, d);
    hex_of(d, 20, hx);
    return strcmp(hx, hash40) == 0;
}

/* numba's locators: __pycache__ beside the source (in-tree), or NUMBA_CACHE_DIR (and the
 * user-wide cache) holding PARENTDIR_SHA1 where SHA1 is the sha1 of the source's directory
 * (os.path.abspath, utf-8).  The latter cannot be inverted, so candidate directories are
 * tried: the index's ancestors and the current directory's, and a PARENTDIR child of each. */
static void locate_source(const char *index_abs, nb_name *nm, const ki_opts *op, nb_source *src)
{
    char dir[4096], cand[4096], file[4096];
    const char *dbase;
    memset(src, 0, sizeof *src);
    src->moved_to = -1;
    if (op->source) {
        ki_fmt(src->path, sizeof src->path, "%s", op->source);
        src->how = "--source";
        src->found = is_file(op->source, &src->st);
        if (src->found && nm->ok) {
            /* learn the module/qualname split from the file name given */
            const char *b = path_base(op->source);
            size_t bl = strlen(b);
            if (bl > 3 && strcmp(b + bl - 3, ".py") == 0 && strncmp(nm->fullname, b, bl - 3) == 0 &&
                (nm->fullname[bl - 3] == '.' || nm->fullname[bl - 3] == 0) && bl - 3 < sizeof nm->module) {
                memcpy(nm->module, b, bl - 3);
                nm->module[bl - 3] = 0;
                ki_fmt(nm->qualname, sizeof nm->qualname, "%s", nm->fullname[bl - 3] ? nm->fullname + bl - 2 : "");
                {
                    const char *last = strrchr(nm->qualname, '.');
                    ki_fmt(nm->func, sizeof nm->func, "%s", last ? last + 1 : nm->qualname);
                }
            }
        }
        return;
    }
    if (!nm->ok) { src->how = "none: the index file name is not numba's FUNC-LINE.pyXY.nbi"; return; }
    path_dirname(index_abs, dir, sizeof dir);
    dbase = path_base(dir);
    if (strcmp(dbase, "__pycache__") == 0) {
        path_dirname(dir, cand, sizeof cand);
        src->how = "__pycache__ parent (numba's in-tree cache)";
        if (find_module_file(cand, nm, file, sizeof file)) {
            ki_fmt(src->path, sizeof src->path, "%s", file);
            src->found = is_file(file, &src->st);
        } else {
            ki_fmt(src->path, sizeof src->path, "%s/%s.py", cand, nm->module);
        }
        return;
    }
    {
        size_t bl = strlen(dbase), k;
        char parent[1024], hash[41];
        int hexok = bl > 41 && dbase[bl - 41] == '_';
        for (k = bl > 40 ? bl - 40 : 0; hexok && k < bl; k++) if (hexval(dbase[k]) < 0 || (dbase[k] >= 'A' && dbase[k] <= 'F')) hexok = 0;
        if (!hexok || bl - 41 >= sizeof parent) {
            src->how = "none: the index is neither in a __pycache__ nor in a NUMBA_CACHE_DIR subdirectory (pass --source)";
            return;
        }
        memcpy(parent, dbase, bl - 41);
        parent[bl - 41] = 0;
        memcpy(hash, dbase + bl - 40, 40);
        hash[40] = 0;
        {
            /* candidates: ancestors of the cache dir, of the cwd, and a PARENTDIR child of each */
            char roots[2][4096], cwd[4096];
            int r, pass, have_name = 0;
            char by_name[4096] = "";
            ki_fmt(roots[0], sizeof roots[0], "%s", dir);
            if (getcwd(cwd, sizeof cwd)) ki_fmt(roots[1], sizeof roots[1], "%s/.", cwd);
            else roots[1][0] = 0;
            for (pass = 0; pass < 2; pass++) {
                for (r = 0; r < 2; r++) {
                    char cur[4096];
                    if (!roots[r][0]) continue;
                    ki_fmt(cur, sizeof cur, "%s", roots[r]);
                    for (;;) {
                        char up[4096];
                        path_dirname(cur, up, sizeof up);
                        if (strcmp(up, cur) == 0) break;
                        ki_fmt(cur, sizeof cur, "%s", up);
                        /* cur itself, then cur/PARENTDIR */
                        {
                            int c;
                            for (c = 0; c < 2; c++) {
                                char abs[4096];
                                if (c == 0) {
                                    if (strcmp(path_base(cur), parent) != 0 && !(parent[0] == 0 && strcmp(cur, "/") == 0)) continue;
                                    ki_fmt(cand, sizeof cand, "%s", cur);
                                } else {
                                    if (!parent[0]) continue;
                                    if ((size_t)ki_fmt(cand, sizeof cand, "%s/%s", strcmp(cur, "/") ? cur : "", parent) >= sizeof cand) continue;
                                }
                                if (ki_abspath(cand, abs, sizeof abs) != 0 || !is_dir(abs)) continue;
                                if (pass == 0 && sha1_dir_matches(abs, hash)) {
                                    src->how = "NUMBA_CACHE_DIR layout: the directory hash matches";
                                    if (find_module_file(abs, nm, file, sizeof file)) {
                                        ki_fmt(src->path, sizeof src->path, "%s", file);
                                        src->found = is_file(file, &src->st);
                                    } else {
                                        ki_fmt(src->path, sizeof src->path, "%s/%s.py", abs, nm->module);
                                    }
                                    return;
                                }
                                if (pass == 1 && !have_name && find_module_file(abs, nm, file, sizeof file)) {
                                    have_name = 1;
                                    ki_fmt(by_name, sizeof by_name, "%s", file);
                                }
                            }
                        }
                        if (strcmp(cur, "/") == 0) break;
                    }
                }
            }
            if (have_name) {
                char sd[4096];
                ki_fmt(src->path, sizeof src->path, "%s", by_name);
                src->found = is_file(by_name, &src->st);
                src->how = "NUMBA_CACHE_DIR layout, by directory name";
                path_dirname(by_name, sd, sizeof sd);
                ki_fmt(src->note, sizeof src->note,
                         "cache subdirectory %.12s... was made for another path than %.400s (moved or copied);"
                         " numba reading that source there looks in another subdirectory", hash, sd);
                return;
            }
            src->how = "none: NUMBA_CACHE_DIR layout (PARENTDIR_SHA1-OF-SOURCE-DIR) and no candidate directory matches (pass --source)";
            ki_fmt(src->path, sizeof src->path, "%s/%s.py", parent[0] ? parent : "", nm->module);
        }
    }
}

/* Checks that line nm->line of the source starts the function (numba's disambiguator is
 * co_firstlineno: the first decorator's line); when it does not, looks for "def FUNC". */
static void check_source_line(nb_source *src, const nb_name *nm)
{
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    long ln = 0, def_at = -1, deco_start = -1;
    size_t fl = strlen(nm->func);
    if (!src->found || nm->line <= 0 || !fl) return;
    f = fopen(src->path, "r");
    if (!f) return;
    src->line_checked = -1;
    while ((got = getline(&line, &cap, f)) > 0 && ln < 10000000) {
        const char *p = line;
        ln++;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '@') { if (deco_start < 0) deco_start = ln; }
        else if (strncmp(p, "def ", 4) == 0 || strncmp(p, "async def ", 10) == 0) {
            const char *q = p + (p[0] == 'a' ? 10 : 4);
            while (*q == ' ') q++;
            if (strncmp(q, nm->func, fl) == 0 && (q[fl] == '(' || q[fl] == ' ') && def_at < 0 && ln >= 1) {
                long first = deco_start > 0 ? deco_start : ln;
                if (first == nm->line) def_at = -2;
                else if (def_at == -1) def_at = first;
            }
            deco_start = -1;
        } else if (*p && *p != '\n' && *p != '#') {
            deco_start = -1;
        }
        if (ln == nm->line) {
            size_t l = strlen(p);
            while (l && (p[l - 1] == '\n' || p[l - 1] == '\r')) l--;
            if (l >= sizeof src->line_text) l = sizeof src->line_text - 1;
            memcpy(src->line_text, p, l);
            src->line_text[l] = 0;
            if (*p == '@' || strncmp(p, "def ", 4) == 0 || strncmp(p, "async def ", 10) == 0 || strstr(p, nm->func) ||
                strstr(p, "lambda"))
                src->line_checked = 1;
        }
    }
    free(line);
    fclose(f);
    if (def_at == -2) src->line_checked = 1;
    else if (src->line_checked != 1 && def_at > 0) src->moved_to = def_at;
}

static int sha256_file(const char *path, unsigned char out[32])
{
    FILE *f = fopen(path, "rb");
    unsigned char b[65536];
    size_t n;
    ki_sha s;
    if (!f) return -1;
    sha_init(&s, 1);
    while ((n = fread(b, 1, sizeof b, f)) > 0) sha_update(&s, b, n);
    if (ferror(f)) { fclose(f); return -1; }
    fclose(f);
    sha_final(&s, out);
    return 0;
}

/* CPython's st_mtime: seconds + nanoseconds * 1e-9, as a double. */
static double py_st_mtime(const struct stat *st)
{
    return (double)st->st_mtim.tv_sec + (double)st->st_mtim.tv_nsec * 1e-9;
}
static double py_floor(double d)
{
    double t;
    if (!dbl_is_finite(d) || d >= 9007199254740992.0 || d <= -9007199254740992.0) return d;
    t = (double)(long long)d;
    return t > d ? t - 1.0 : t;
}

/* ---------------------------------------------------------------------------------------- */
/* Assessment: what numba will do.                                                           */

typedef struct nb_report {
    char index_abs[4096];
    nb_name name;
    nb_source src;
    ki_host host;
    int stamp_state;           /* 1 match, 0 mismatch, -1 cannot check */
    char stamp_why[420];       /* why it cannot be checked, or what differs */
    double src_mtime;
    long long src_size;
    int have_src_digest;
    unsigned char src_digest[32];
    int version_state;         /* 1 equal, 0 differs, -1 not given */
    int ref;                   /* features reference: -1 host, else overload index */
    const char *verdict_code;
    char verdict[1024];
    size_t n_match, n_usable, n_unknown, n_missing;
    size_t n_sigs, n_sigs_covered;
} nb_report;

static void nb_assess(nb_index *ix, const char *path, const ki_opts *op, nb_report *R)
{
    size_t k, j;
    char dir[4096];
    memset(R, 0, sizeof *R);
    if (ki_abspath(path, R->index_abs, sizeof R->index_abs) != 0) ki_fmt(R->index_abs, sizeof R->index_abs, "%s", path);
    nb_parse_name(path_base(R->index_abs), &R->name);
    locate_source(R->index_abs, &R->name, op, &R->src);
    check_source_line(&R->src, &R->name);
    host_resolve(op, &R->host);
    R->version_state = -1;
    if (op->numba_version) R->version_state = bytes_eq(ix->version->s, ix->version->n, op->numba_version);

    /* stamp */
    R->stamp_state = -1;
    if (!R->src.found) {
        ki_fmt(R->stamp_why, sizeof R->stamp_why, "source not found (pass --source FILE)");
    } else {
        R->src_mtime = py_st_mtime(&R->src.st);
        R->src_size = (long long)R->src.st.st_size;
        switch (ix->stamp_kind) {
        case ST_MTIME_SIZE:
        case ST_FLOOR_SIZE: {
            double want = ix->stamp_kind == ST_FLOOR_SIZE ? py_floor(R->src_mtime) : R->src_mtime;
            int mt = want == ix->stamp_mtime, sz = R->src_size == ix->stamp_size;
            R->stamp_state = mt && sz;
            if (!R->stamp_state) {
                char d[240] = "", s[120] = "";
                if (!mt) {
                    double diff = want - ix->stamp_mtime;
                    if (!dbl_is_finite(diff)) ki_fmt(d, sizeof d, "mtime differs");
                    else if (diff >= 0.001 || diff <= -0.001) ki_fmt(d, sizeof d, "mtime differs by %+.3f s", diff);
                    else ki_fmt(d, sizeof d, "mtime differs by %+.3g s", diff);
                    if (dbl_is_finite(diff) && py_floor(want) == py_floor(ix->stamp_mtime) && (want == py_floor(want) || ix->stamp_mtime == py_floor(ix->stamp_mtime)))
                        ki_fmt(d + strlen(d), sizeof d - strlen(d), " (same second, one side has no fraction: a filesystem or copy keeping whole seconds)");
                }
                if (!sz) ki_fmt(s, sizeof s, "size differs (source %lld, index %lld)", R->src_size, ix->stamp_size);
                else ki_fmt(s, sizeof s, "size same (%lld: touched, checked out or copied?)", R->src_size);
                ki_fmt(R->stamp_why, sizeof R->stamp_why, "%s%s%s", d, d[0] ? ", " : "", s);
            }
            break;
        }
        case ST_SHA256:
            if (sha256_file(R->src.path, R->src_digest) == 0) {
                R->have_src_digest = 1;
                R->stamp_state = memcmp(R->src_digest, ix->stamp->s, 32) == 0;
                if (!R->stamp_state) {
                    char a[65];
                    hex_of(R->src_digest, 32, a);
                    ki_fmt(R->stamp_why, sizeof R->stamp_why, "content differs (sha256 %.16s... now)%s", a,
                             R->src_size == 0 ? "" : "");
                }
            } else {
                ki_fmt(R->stamp_why, sizeof R->stamp_why, "cannot read the source to hash it");
            }
            break;
        case ST_HEXHASH:
            ki_fmt(R->stamp_why, sizeof R->stamp_why, "the stamp hashes a notebook cell's source (IPython locator): not checkable here");
            break;
        default:
            ki_fmt(R->stamp_why, sizeof R->stamp_why, "unrecognized stamp form: not checkable");
        }
    }

    /* overloads: data files and the CPU */
    path_dirname(R->index_abs, dir, sizeof dir);
    for (k = 0; k < ix->nov; k++) {
        nb_overload *o = &ix->ov[k];
        if (o->data && o->data_name_ok) {
            char p[8192];
            struct stat st;
            ki_fmt(p, sizeof p, "%s/%.*s", dir, (int)o->data->n, (const char *)o->data->s);
            o->data_exists = is_file(p, &st);
            if (o->data_exists) o->data_size = (long long)st.st_size;
        } else {
            o->data_exists = 0;
        }
        if (!o->shape_ok) { o->cpu_match = 0; o->usable = 0; continue; }
        {
            int known = 1, match = 1;
            if (R->host.cpu) match &= node_eq_cstr(o->cpu, R->host.cpu); else known = 0;
            if (!R->host.features) known = 0;
            else if (R->host.features_by_name)
                match &= feat_match_by_name(o->features->s, o->features->n, (const unsigned char *)R->host.features,
                                            strlen(R->host.features));
            else match &= node_eq_cstr(o->features, R->host.features);
            if (op->triple) match &= node_eq_cstr(o->triple, op->triple);
            o->cpu_match = !match ? 0 : known ? 1 : -1;
        }
        o->usable = o->cpu_match == 0 || o->data_exists == 0 ? 0 : o->cpu_match;
        if (o->cpu_match == 1) R->n_match++;
        if (o->usable == 1) R->n_usable++;
        if (o->cpu_match == -1) R->n_unknown++;
        if (o->data_exists == 0) R->n_missing++;
    }
    R->ref = R->host.features ? -1 : 0;

    /* signatures covered (an index may hold one signature for several CPUs) */
    for (k = 0; k < ix->nov; k++) {
        int first = 1, covered = 0;
        if (!ix->ov[k].sig) continue;
        for (j = 0; j < k; j++) if (ix->ov[j].sig && strcmp(ix->ov[j].sig, ix->ov[k].sig) == 0) first = 0;
        if (!first) continue;
        R->n_sigs++;
        for (j = k; j < ix->nov; j++)
            if (ix->ov[j].sig && strcmp(ix->ov[j].sig, ix->ov[k].sig) == 0 && ix->ov[j].usable == 1) covered = 1;
        R->n_sigs_covered += (size_t)covered;
    }

    /* the verdict */
    {
        const char *fn = R->name.ok ? R->name.func : "the function";
        const char *srcbase = R->src.path[0] ? path_base(R->src.path) : "the source";
        char cpus[300] = "";
        size_t used = 0;
        size_t ncpu = 0;
        for (k = 0; k < ix->nov && used + 40 < sizeof cpus; k++) {
            const pk_node *c = ix->ov[k].cpu;
            int seen = 0;
            if (!c) continue;
            for (j = 0; j < k; j++) if (ix->ov[j].cpu && node_str_eq(ix->ov[j].cpu, c)) seen = 1;
            if (seen) continue;
            if (++ncpu > 4) { used += (size_t)ki_fmt(cpus + used, sizeof cpus - used, ", ..."); break; }
            used += (size_t)ki_fmt(cpus + used, sizeof cpus - used, "%s%.*s", used ? ", " : "",
                                     (int)(c->n < 32 ? c->n : 32), (const char *)c->s);
        }
        if (!cpus[0]) ki_fmt(cpus, sizeof cpus, "?");
        if (ix->nov == 0) {
            R->verdict_code = "empty";
            ki_fmt(R->verdict, sizeof R->verdict, "empty index: no overloads recorded, %s compiles on every first call", fn);
        } else if (R->version_state == 0) {
            R->verdict_code = "version-mismatch";
            /* ix->version->s is not NUL-terminated: print it bounded */
            ki_fmt(R->verdict, sizeof R->verdict,
                     "numba version differs (index %.*s, running %.40s) -> the whole index is ignored, all %zu overloads recompile",
                     (int)(ix->version->n < 40 ? ix->version->n : 40), (const char *)ix->version->s, op->numba_version, ix->nov);
        } else if (R->stamp_state == 0) {
            R->verdict_code = "stale";
            ki_fmt(R->verdict, sizeof R->verdict, "stamp mismatch: %.100s %s -> all %zu overloads discarded, %s recompiles",
                     srcbase, R->stamp_why, ix->nov, fn);
        } else if (R->stamp_state < 0) {
            R->verdict_code = "unchecked";
            ki_fmt(R->verdict, sizeof R->verdict, "cannot check the stamp: %s; %zu overloads recorded (CPU %s)",
                     R->stamp_why, ix->nov, cpus);
        } else if (R->n_unknown) {
            R->verdict_code = "stamp-ok";
            ki_fmt(R->verdict, sizeof R->verdict,
                     "stamp ok: %zu overloads for CPU %s; a hit where CPU name and features match "
                     "(host CPU unknown: pass --cpu/--features)", ix->nov, cpus);
        } else if (R->n_sigs && R->n_sigs_covered == R->n_sigs) {
            R->verdict_code = "hit";
            if (R->n_usable == ix->nov)
                ki_fmt(R->verdict, sizeof R->verdict, "hit: %zu of %zu overloads usable on this CPU (%.60s)", R->n_usable,
                         ix->nov, R->host.cpu);
            else {
                char list[120] = "";
                size_t u = 0;
                for (k = 0; k < ix->nov && u + 12 < sizeof list; k++)
                    if (ix->ov[k].usable == 1) u += (size_t)ki_fmt(list + u, sizeof list - u, "%s[%zu]", u ? " " : "", k + 1);
                ki_fmt(R->verdict, sizeof R->verdict,
                       "hit: %zu of %zu overloads usable on this CPU (%.60s): %s; every signature covered, the rest is unused",
                       R->n_usable, ix->nov, R->host.cpu, list);
            }
        } else if (R->n_usable) {
            R->verdict_code = "partial";
            ki_fmt(R->verdict, sizeof R->verdict,
                     "%zu of %zu overloads usable on this CPU (%.60s); %zu of %zu signatures compile on first call%s", R->n_usable,
                     ix->nov, R->host.cpu, R->n_sigs - R->n_sigs_covered, R->n_sigs,
                     R->n_missing ? " (some .nbc files are missing)" : "");
        } else {
            R->verdict_code = "cpu-mismatch";
            if (R->n_match && R->n_missing)
                ki_fmt(R->verdict, sizeof R->verdict, "miss: the overloads for this CPU have no .nbc data file -> %s recompiles", fn);
            else {
                int same_name = 0;
                for (k = 0; k < ix->nov; k++) if (ix->ov[k].shape_ok && node_eq_cstr(ix->ov[k].cpu, R->host.cpu)) same_name = 1;
                ki_fmt(R->verdict, sizeof R->verdict,
                       "miss: 0 of %zu overloads match this CPU (%.60s; index has %s%s) -> every signature of %s recompiles",
                       ix->nov, R->host.cpu, cpus, same_name ? ", same name but other features" : "", fn);
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Reports.                                                                                  */

static void fmt_utc(char *out, size_t cap, double t)
{
    time_t tt;
    struct tm tm;
    out[0] = 0;
    if (!dbl_is_finite(t) || t < 0 || t > 253402300799.0) return;
    tt = (time_t)t;
    if (!gmtime_r(&tt, &tm)) return;
    strftime(out, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static void put_node_text(ki_out *o, const pk_node *n, size_t max)
{
    if (!n) { ko_puts(o, "?"); return; }
    ko_text(o, n->s, n->n, max);
    if (n->n > max) ko_printf(o, "... (%zu bytes)", n->n);
}

static const char *stamp_kind_text(int k)
{
    switch (k) {
    case ST_MTIME_SIZE: return "(st_mtime, st_size) as numba <= 0.67 writes";
    case ST_FLOOR_SIZE: return "(floor(st_mtime), st_size): numba 0.62+ InTreeCacheLocatorFsAgnostic";
    case ST_SHA256: return "sha256 of the source's content, as numba >= 0.68 writes";
    case ST_HEXHASH: return "sha256 hex of a notebook cell (IPython locator)";
    default: return "unrecognized";
    }
}

/* Writes text word-wrapped at 78 columns; continuation lines start with indent spaces. */
static void ko_wrap(ki_out *o, const char *text, size_t col, size_t indent)
{
    const char *p = text;
    while (*p) {
        const char *q = p;
        size_t w;
        while (*q == ' ') q++;
        while (*q && *q != ' ') q++;
        w = (size_t)(q - p);
        if (col + w > 78 && col > indent) {
            size_t k;
            ko_putc(o, '\n');
            for (k = 0; k < indent; k++) ko_putc(o, ' ');
            col = indent;
            while (*p == ' ') { p++; w--; }
        }
        ko_write(o, p, w);
        col += w;
        p = q;
    }
    ko_putc(o, '\n');
}

static void report_text(ki_out *o, nb_index *ix, nb_report *R, const ki_opts *op)
{
    size_t k, j;
    char tmp[128], utc[64];
    ko_printf(o, "file       %s\n", R->index_abs);
    if (R->name.ok) {
        ko_printf(o, "function   %s", R->name.qualname[0] ? R->name.qualname : "?");
        ko_printf(o, " (module %s", R->name.module);
        if (R->name.line > 0) ko_printf(o, ", first line %ld", R->name.line);
        else ko_printf(o, ", disambiguator %s", R->name.disamb);
        if (R->name.pytag[2] >= '0' && R->name.pytag[2] <= '9' && R->name.pytag[3])
            ko_printf(o, "), Python %c.%s\n", R->name.pytag[2], R->name.pytag + 3);
        else
            ko_printf(o, "), Python tag %s\n", R->name.pytag);
    } else {
        ko_puts(o, "function   ? (the file name is not numba's FUNC-LINE.pyXY.nbi)\n");
    }
    ko_puts(o, "numba      ");
    put_node_text(o, ix->version, 64);
    if (R->version_state == 1) ko_puts(o, " (the running numba, per --numba-version)\n");
    else if (R->version_state == 0) ko_printf(o, " (running numba is %s: numba ignores this index)\n", op->numba_version);
    else ko_puts(o, " (numba reads the index only when it is exactly this version)\n");
    ko_printf(o, "source     %s\n", R->src.path[0] ? R->src.path : "not found");
    ko_puts(o, "           found by: ");
    ko_wrap(o, R->src.how ? R->src.how : "?", 21, 21);
    if (R->src.path[0] && !R->src.found) ko_puts(o, "           the file does not exist\n");
    if (R->src.note[0]) { ko_puts(o, "           note: "); ko_wrap(o, R->src.note, 17, 17); }
    if (R->src.line_checked == 1 && R->src.line_text[0]) ko_printf(o, "           line %ld: %.70s\n", R->name.line, R->src.line_text);
    else if (R->src.line_checked == -1) {
        if (R->src.moved_to > 0)
            ko_printf(o, "           note: %s now starts at line %ld, not %ld: numba will use %s-%ld.%s.nbi, not this index\n",
                      R->name.func, R->src.moved_to, R->name.line, R->name.fullname, R->src.moved_to, R->name.pytag);
        else
            ko_printf(o, "           note: line %ld does not start %s\n", R->name.line, R->name.func);
    }
    ko_printf(o, "stamp      %s\n", stamp_kind_text(ix->stamp_kind));
    if (ix->stamp_kind == ST_MTIME_SIZE || ix->stamp_kind == ST_FLOOR_SIZE) {
        fmt_double(tmp, sizeof tmp, ix->stamp_mtime);
        fmt_utc(utc, sizeof utc, ix->stamp_mtime);
        ko_printf(o, "  index    mtime %s%s%s%s, size %lld\n", tmp, utc[0] ? " (" : "", utc, utc[0] ? ")" : "", ix->stamp_size);
        if (R->src.found) {
            double m = ix->stamp_kind == ST_FLOOR_SIZE ? py_floor(R->src_mtime) : R->src_mtime;
            fmt_double(tmp, sizeof tmp, m);
            fmt_utc(utc, sizeof utc, m);
            ko_printf(o, "  source   mtime %s%s%s%s, size %lld\n", tmp, utc[0] ? " (" : "", utc, utc[0] ? ")" : "", R->src_size);
        }
    } else if (ix->stamp_kind == ST_SHA256) {
        char hx[65];
        hex_of(ix->stamp->s, 32, hx);
        ko_printf(o, "  index    sha256 %s\n", hx);
        if (R->have_src_digest) { hex_of(R->src_digest, 32, hx); ko_printf(o, "  source   sha256 %s\n", hx); }
    } else {
        char *s = render_to(&ix->arena, ix->stamp, 0, 200);
        ko_printf(o, "  index    %s\n", s ? s : "?");
    }
    if (R->stamp_state == 1) ko_puts(o, "  check    match\n");
    else ko_printf(o, "  check    %s%s\n", R->stamp_state == 0 ? "MISMATCH: " : "", R->stamp_why);
    {
        char line[400];
        if (!R->host.cpu && !R->host.features)
            ki_fmt(line, sizeof line, "unknown (pass --cpu and --features, or set NUMBA_CPU_NAME and NUMBA_CPU_FEATURES)");
        else
            ki_fmt(line, sizeof line, "%.100s (%s), features %s%s", R->host.cpu ? R->host.cpu : "name unknown",
                   R->host.cpu ? R->host.cpu_from : "pass --cpu", R->host.features ? "from " : "unknown (pass --features)",
                   R->host.features ? R->host.features_from : "");
        ko_puts(o, "host CPU   ");
        ko_wrap(o, line, 11, 11);
    }
    ko_printf(o, "overloads  %zu\n", ix->nov);
    for (k = 0; k < ix->nov && !o->full; k++) {
        nb_overload *ov = &ix->ov[k];
        ko_printf(o, "  [%zu] ", k + 1);
        if (!ov->shape_ok) {
            ko_printf(o, "unrecognized key (numba would never match it): %s\n", ov->key_repr ? ov->key_repr : "?");
        } else {
            ko_printf(o, "%s\n", ov->sig ? ov->sig : "?");
            ko_puts(o, "      target    "); put_node_text(o, ov->triple, 100); ko_putc(o, '\n');
            ko_puts(o, "      cpu       "); put_node_text(o, ov->cpu, 100);
            if (ov->cpu_match == 1) ko_puts(o, "  (matches this CPU)");
            else if (ov->cpu_match == 0 && R->host.cpu && !node_eq_cstr(ov->cpu, R->host.cpu)) ko_puts(o, "  (not this CPU)");
            ko_putc(o, '\n');
            ko_puts(o, "      features  ");
            {
                size_t en, nf = feat_count(ov->features, &en);
                const unsigned char *rs = NULL;
                size_t rn = 0;
                const char *rname = NULL;
                if (R->host.features) { rs = (const unsigned char *)R->host.features; rn = strlen(R->host.features); rname = "host"; }
                else if (k > 0 && ix->ov[0].shape_ok) { rs = ix->ov[0].features->s; rn = ix->ov[0].features->n; rname = "[1]"; }
                if (ov->features->n == 0) ko_puts(o, "none (\"\": the CPU model's defaults)");
                else ko_printf(o, "%zu listed, %zu enabled", nf, en);
                int by_name = R->host.features && R->host.features_by_name;
                /* by name, a mismatch lists the features both name that disagree, or (when none
                   does: the lists hardly overlap) every difference */
                if (by_name && feat_diff(NULL, ov->features->s, ov->features->n, rs, rn, 0, 0, 1) == 0) by_name = 0;
                if (R->host.features && R->host.features_by_name && feat_match_by_name(ov->features->s, ov->features->n, rs, rn)) {
                    ko_printf(o, "; same as %s", rname);
                    if (!(ov->features->n == rn && (rn == 0 || memcmp(ov->features->s, rs, rn) == 0)))
                        ko_printf(o, " name by name\n                (%zu named by one side only)",
                                  feat_diff(NULL, ov->features->s, ov->features->n, rs, rn, 0, 0, 0));
                    ko_putc(o, '\n');
                } else if (rname) {
                    if (ov->features->n == rn && (rn == 0 || memcmp(ov->features->s, rs, rn) == 0)) ko_printf(o, "; same as %s\n", rname);
                    else if (rn == 0 || ov->features->n == 0) {
                        size_t ren;
                        pk_node tmpn;
                        memset(&tmpn, 0, sizeof tmpn);
                        tmpn.s = rs; tmpn.n = rn;
                        if (rn == 0) ko_printf(o, "; %s has none\n", rname);
                        else ko_printf(o, "; %s lists %zu\n", rname, feat_count(&tmpn, &ren));
                    }
                    else {
                        size_t nd = feat_diff(NULL, ov->features->s, ov->features->n, rs, rn, 0, 0, by_name);
                        ko_printf(o, "; vs %s, %zu differ:", rname, nd);
                        {   /* wrap at 78 columns */
                            ki_out t;
                            size_t p = 0, col = 16;
                            memset(&t, 0, sizeof t);
                            t.limit = 4096;
                            feat_diff(&t, ov->features->s, ov->features->n, rs, rn, 40, 0, by_name);
                            ko_puts(o, "\n               ");
                            while (t.buf && p < t.len) {
                                size_t q = p + 1;
                                while (q < t.len && t.buf[q] != ' ') q++;
                                if (col + (q - p) > 78) { ko_puts(o, "\n               "); col = 15; }
                                ko_write(o, t.buf + p, q - p);
                                col += q - p;
                                p = q;
                            }
                            if (nd > 40) ko_printf(o, " ... %zu more", nd - 40);
                            ko_putc(o, '\n');
                            ko_free(&t);
                        }
                    }
                } else {
                    ko_puts(o, k == 0 && ix->nov > 1 ? " (the others are compared with this)\n" : "\n");
                }
            }
            ko_printf(o, "      code      %.*s...", (int)(ov->code->n < 16 ? ov->code->n : 16), (const char *)ov->code->s);
            if (ov->closure->n == 64 && memcmp(ov->closure->s, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 64) == 0)
                ko_puts(o, "  closure: none\n");
            else {
                ko_puts(o, "  closure: ");
                put_node_text(o, ov->closure, 16);
                ko_puts(o, "... (captured values are part of the key)\n");
            }
        }
        ko_puts(o, "      data      ");
        if (!ov->data) ko_puts(o, "? (the value is not a file name)\n");
        else {
            put_node_text(o, ov->data, 200);
            if (!ov->data_name_ok) ko_puts(o, "  (NOT a plain file name)\n");
            else if (ov->data_exists == 1) ko_printf(o, "  (%lld bytes)\n", ov->data_size);
            else ko_puts(o, "  (MISSING: numba recompiles this overload)\n");
        }
        /* same signature as an earlier overload: say what differs */
        if (ov->shape_ok && ov->sig) {
            for (j = 0; j < k; j++) {
                nb_overload *p = &ix->ov[j];
                if (!p->shape_ok || !p->sig || strcmp(p->sig, ov->sig) != 0) continue;
                {
                    const char *sep = "";
                    ko_printf(o, "      same signature as [%zu]; differs only in: ", j + 1);
                    if (!node_str_eq(p->triple, ov->triple)) { ko_printf(o, "%starget", sep); sep = ", "; }
                    if (!node_str_eq(p->cpu, ov->cpu)) { ko_printf(o, "%sCPU name", sep); sep = ", "; }
                    if (!node_str_eq(p->features, ov->features)) { ko_printf(o, "%sCPU features", sep); sep = ", "; }
                    if (!node_str_eq(p->code, ov->code)) { ko_printf(o, "%scode hash", sep); sep = ", "; }
                    if (!node_str_eq(p->closure, ov->closure)) { ko_printf(o, "%sclosure hash", sep); sep = ", "; }
                    if (!*sep) ko_puts(o, "nothing (a duplicate key)");
                    ko_putc(o, '\n');
                }
                break;
            }
        }
    }
    if (ix->body_end < ix->len) ko_printf(o, "note       %zu bytes after the index body (numba ignores them)\n", ix->len - ix->body_end);
    ko_printf(o, "verdict    %s\n", R->verdict);
}

static void json_node_str(ki_out *o, const pk_node *n)
{
    if (!n || (n->kind != PK_STR && n->kind != PK_BYTES)) { ko_puts(o, "null"); return; }
    ko_json_str(o, n->s, n->n);
}
static void json_double(ki_out *o, double d)
{
    char tmp[64];
    if (!dbl_is_finite(d)) { ko_puts(o, "null"); return; }
    fmt_double(tmp, sizeof tmp, d);
    ko_puts(o, tmp);
}
static void json_tri(ki_out *o, int v) { ko_puts(o, v < 0 ? "null" : v ? "true" : "false"); }

static void report_json(ki_out *o, nb_index *ix, nb_report *R, const ki_opts *op)
{
    size_t k;
    ko_puts(o, "{\n  \"file\": "); ko_json_cstr(o, R->index_abs);
    ko_puts(o, ",\n  \"format\": \"numba-index\"");
    ko_puts(o, ",\n  \"numba_version\": "); json_node_str(o, ix->version);
    ko_puts(o, ",\n  \"numba_version_matches\": "); json_tri(o, R->version_state);
    ko_puts(o, ",\n  \"pickle_protocols\": ["); ko_printf(o, "%d, %d]", ix->version_proto, ix->body_proto);
    ko_puts(o, ",\n  \"function\": ");
    if (R->name.ok) {
        ko_puts(o, "{\"module\": "); ko_json_cstr(o, R->name.module);
        ko_puts(o, ", \"qualname\": "); ko_json_cstr(o, R->name.qualname);
        ko_puts(o, ", \"name\": "); ko_json_cstr(o, R->name.func);
        ko_puts(o, ", \"line\": "); if (R->name.line > 0) ko_printf(o, "%ld", R->name.line); else ko_puts(o, "null");
        ko_puts(o, ", \"disambiguator\": "); ko_json_cstr(o, R->name.disamb);
        ko_puts(o, ", \"python_tag\": "); ko_json_cstr(o, R->name.pytag);
        ko_puts(o, "}");
    } else ko_puts(o, "null");
    ko_puts(o, ",\n  \"source\": {\"path\": "); if (R->src.path[0]) ko_json_cstr(o, R->src.path); else ko_puts(o, "null");
    ko_puts(o, ", \"found\": "); ko_puts(o, R->src.found ? "true" : "false");
    ko_puts(o, ", \"found_by\": "); ko_json_cstr(o, R->src.how);
    ko_puts(o, ", \"note\": "); if (R->src.note[0]) ko_json_cstr(o, R->src.note); else ko_puts(o, "null");
    if (R->src.found) {
        ko_puts(o, ", \"mtime\": "); json_double(o, R->src_mtime);
        if (R->src.st.st_mtim.tv_sec >= 0)
            ko_printf(o, ", \"mtime_ns\": %lld%09ld", (long long)R->src.st.st_mtim.tv_sec, (long)R->src.st.st_mtim.tv_nsec);
        ko_printf(o, ", \"size\": %lld", R->src_size);
    }
    ko_puts(o, ", \"line_starts_function\": "); json_tri(o, R->src.line_checked == 0 ? -1 : R->src.line_checked == 1);
    ko_puts(o, ", \"function_moved_to_line\": "); if (R->src.moved_to > 0) ko_printf(o, "%ld", R->src.moved_to); else ko_puts(o, "null");
    ko_puts(o, "}");
    ko_puts(o, ",\n  \"stamp\": {\"kind\": ");
    ko_json_cstr(o, ix->stamp_kind == ST_MTIME_SIZE ? "mtime-size" : ix->stamp_kind == ST_FLOOR_SIZE ? "floor-mtime-size" :
                     ix->stamp_kind == ST_SHA256 ? "sha256" : ix->stamp_kind == ST_HEXHASH ? "ipython-sha256-hex" : "other");
    if (ix->stamp_kind == ST_MTIME_SIZE || ix->stamp_kind == ST_FLOOR_SIZE) {
        ko_puts(o, ", \"mtime\": "); json_double(o, ix->stamp_mtime);
        ko_printf(o, ", \"size\": %lld", ix->stamp_size);
        if (R->src.found) {
            double m = ix->stamp_kind == ST_FLOOR_SIZE ? py_floor(R->src_mtime) : R->src_mtime;
            ko_puts(o, ", \"source_mtime\": "); json_double(o, m);
            ko_puts(o, ", \"mtime_diff_s\": "); json_double(o, m - ix->stamp_mtime);
            ko_printf(o, ", \"source_size\": %lld", R->src_size);
        }
    } else if (ix->stamp_kind == ST_SHA256) {
        char hx[65];
        hex_of(ix->stamp->s, 32, hx);
        ko_puts(o, ", \"sha256\": "); ko_json_cstr(o, hx);
        if (R->have_src_digest) { hex_of(R->src_digest, 32, hx); ko_puts(o, ", \"source_sha256\": "); ko_json_cstr(o, hx); }
    } else {
        char *s = render_to(&ix->arena, ix->stamp, 0, 512);
        ko_puts(o, ", \"repr\": "); ko_json_cstr(o, s);
    }
    ko_puts(o, ", \"matches\": "); json_tri(o, R->stamp_state);
    ko_puts(o, ", \"why\": "); if (R->stamp_why[0]) ko_json_cstr(o, R->stamp_why); else ko_puts(o, "null");
    ko_puts(o, "}");
    ko_puts(o, ",\n  \"host\": {\"cpu\": "); ko_json_cstr(o, R->host.cpu);
    ko_puts(o, ", \"cpu_from\": "); ko_json_cstr(o, R->host.cpu_from);
    ko_puts(o, ", \"features\": "); ko_json_cstr(o, R->host.features);
    ko_puts(o, ", \"features_from\": "); ko_json_cstr(o, R->host.features_from);
    ko_puts(o, ", \"features_compared\": "); ko_json_cstr(o, !R->host.features ? NULL : R->host.features_by_name ? "by-name" : "exact");
    ko_puts(o, ", \"triple\": "); ko_json_cstr(o, op->triple);
    ko_puts(o, "}");
    ko_puts(o, ",\n  \"overloads\": [");
    for (k = 0; k < ix->nov && !o->full; k++) {
        nb_overload *ov = &ix->ov[k];
        ko_printf(o, "%s\n    {\"index\": %zu, \"recognized\": %s", k ? "," : "", k + 1, ov->shape_ok ? "true" : "false");
        if (ov->shape_ok) {
            const unsigned char *rs = NULL;
            size_t rn = 0;
            const char *rname = NULL;
            ko_puts(o, ", \"signature\": "); ko_json_cstr(o, ov->sig);
            ko_puts(o, ", \"target\": "); json_node_str(o, ov->triple);
            ko_puts(o, ", \"cpu\": "); json_node_str(o, ov->cpu);
            ko_puts(o, ", \"features\": "); json_node_str(o, ov->features);
            if (R->host.features) { rs = (const unsigned char *)R->host.features; rn = strlen(R->host.features); rname = "host"; }
            else if (ix->ov[0].shape_ok) { rs = ix->ov[0].features->s; rn = ix->ov[0].features->n; rname = "overload 1"; }
            ko_puts(o, ", \"features_reference\": "); ko_json_cstr(o, rname);
            ko_puts(o, ", \"features_diff\": [");
            if (rname) {   /* by name: the features both name that disagree, else every difference */
                int by_name = R->host.features && R->host.features_by_name &&
                              (feat_match_by_name(ov->features->s, ov->features->n, rs, rn) ||
                               feat_diff(NULL, ov->features->s, ov->features->n, rs, rn, 0, 0, 1) > 0);
                feat_diff(o, ov->features->s, ov->features->n, rs, rn, 4096, 1, by_name);
            }
            ko_puts(o, "]");
            ko_puts(o, ", \"code_hash\": "); json_node_str(o, ov->code);
            ko_puts(o, ", \"closure_hash\": "); json_node_str(o, ov->closure);
            ko_printf(o, ", \"closure\": %s",
                      node_eq_cstr(ov->closure, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") ? "false" : "true");
        } else {
            ko_puts(o, ", \"key_repr\": "); ko_json_cstr(o, ov->key_repr);
        }
        ko_puts(o, ", \"data\": "); json_node_str(o, ov->data);
        ko_puts(o, ", \"data_exists\": "); json_tri(o, ov->data_exists);
        ko_puts(o, ", \"data_size\": "); if (ov->data_size >= 0) ko_printf(o, "%lld", ov->data_size); else ko_puts(o, "null");
        ko_puts(o, ", \"cpu_match\": "); json_tri(o, ov->cpu_match);
        ko_puts(o, ", \"usable\": "); json_tri(o, ov->usable);
        ko_puts(o, "}");
    }
    ko_puts(o, "\n  ]");
    ko_printf(o, ",\n  \"trailing_bytes\": %zu", ix->len - ix->body_end);
    ko_puts(o, ",\n  \"verdict\": {\"code\": "); ko_json_cstr(o, R->verdict_code);
    ko_puts(o, ", \"text\": "); ko_json_cstr(o, R->verdict);
    ko_printf(o, ", \"overloads\": %zu, \"usable\": %zu, \"cpu_unknown\": %zu, \"data_missing\": %zu, \"signatures\": %zu, "
                 "\"signatures_covered\": %zu}\n}\n",
              ix->nov, R->n_usable, R->n_unknown, R->n_missing, R->n_sigs, R->n_sigs_covered);
}

/* The raw symbolic trees of both pickles (--dump). */
static void report_dump(ki_out *o, nb_index *ix)
{
    ko_puts(o, "version pickle: ");
    pk_repr(o, ix->version, 0);
    ko_puts(o, "\nbody pickle:    (");
    pk_repr(o, ix->stamp, 0);
    ko_puts(o, ", ");
    pk_repr(o, ix->overloads, 0);
    ko_puts(o, ")\n");
}

/* ---------------------------------------------------------------------------------------- */
/* Entry points.                                                                             */

/* Decodes and reports one numba index held in memory: text or JSON into o.  Returns 0 when
 * it decodes, 2 with a message in err otherwise.  The fuzz target calls this directly. */
static KI_MAYBE_UNUSED int ki_numba_report(const unsigned char *buf, size_t len, const char *path, const ki_opts *op, ki_out *o,
                           char *err, size_t errcap)
{
    nb_index ix;
    nb_report *R;
    if (nb_decode(buf, len, &ix, err, errcap) != 0) { nb_index_free(&ix); return 2; }
    R = (nb_report *)malloc(sizeof *R);
    if (!R) { nb_index_free(&ix); ki_fmt(err, errcap, "out of memory"); return 2; }
    nb_assess(&ix, path, op, R);
    if (op->dump) report_dump(o, &ix);
    if (op->json) report_json(o, &ix, R, op);
    else report_text(o, &ix, R, op);
    free(R);
    nb_index_free(&ix);
    return 0;
}

#ifndef KCACHE_INSPECT_NO_MAIN
/* Reads a whole file, at most KI_MAX_FILE bytes. */
static unsigned char *read_file(const char *path, size_t *len, char *err, size_t errcap)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    if (!f) { ki_fmt(err, errcap, "cannot open: %s", strerror(errno)); return NULL; }
    for (;;) {
        size_t got;
        if (n == cap) {
            unsigned char *nb;
            cap = cap ? cap * 2 : 65536;
            if (cap > (size_t)KI_MAX_FILE + 1) cap = (size_t)KI_MAX_FILE + 1;
            if (n == cap) { fclose(f); free(buf); ki_fmt(err, errcap, "file larger than %u MiB: not a numba index", KI_MAX_FILE >> 20); return NULL; }
            nb = (unsigned char *)realloc(buf, cap);
            if (!nb) { fclose(f); free(buf); ki_fmt(err, errcap, "out of memory"); return NULL; }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) { fclose(f); free(buf); ki_fmt(err, errcap, "read error: %s", strerror(errno)); return NULL; }
    fclose(f);
    *len = n;
    if (!buf) buf = (unsigned char *)malloc(1);
    return buf;
}

static void usage(FILE *f)
{
    fputs("usage: kcache-inspect [options] FILE.nbi    explain a numba cache index\n"
          "       kcache-inspect [options] DIR         inspect a kcache store\n"
          "options:\n"
          "  --source FILE        the .py file the index belongs to (default: found as numba does)\n"
          "  --cpu NAME           this machine's CPU name as LLVM names it (default: NUMBA_CPU_NAME)\n"
          "  --features STR       this machine's CPU features, \"+a,-b,...\" (default: NUMBA_CPU_FEATURES)\n"
          "  --triple TRIPLE      also require this target triple\n"
          "  --numba-version VER  the numba that will run (an index of another version is ignored)\n"
          "  --numba              read FILE as a numba index whatever its name\n"
          "  --json               the same facts as JSON\n"
          "  --dump               also print the decoded pickles\n"
          "  -h, --help           this text\n"
          "exit status: 0 when the file decodes (whatever the verdict), 2 otherwise\n", f);
}

int main(int argc, char **argv)
{
    ki_opts op;
    int i, rc;
    struct stat st;
    unsigned char *buf;
    size_t len = 0, plen;
    char err[400];
    ki_out o;
    memset(&op, 0, sizeof op);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { usage(stdout); return 0; }
        else if (strcmp(a, "--json") == 0) op.json = 1;
        else if (strcmp(a, "--dump") == 0) op.dump = 1;
        else if (strcmp(a, "--numba") == 0) op.force_numba = 1;
        else if (strcmp(a, "--source") == 0) slot = &op.source;
        else if (strcmp(a, "--cpu") == 0) slot = &op.cpu;
        else if (strcmp(a, "--features") == 0) slot = &op.features;
        else if (strcmp(a, "--triple") == 0) slot = &op.triple;
        else if (strcmp(a, "--numba-version") == 0) slot = &op.numba_version;
        else if (strcmp(a, "--") == 0) { if (i + 1 < argc && !op.path) op.path = argv[++i]; if (i + 1 < argc) { fprintf(stderr, "kcache-inspect: one FILE or DIR only\n"); return 2; } }
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "kcache-inspect: unknown option '%s' (try --help)\n", a); return 2; }
        else if (!op.path) op.path = a;
        else { fprintf(stderr, "kcache-inspect: one FILE or DIR only (got '%s' and '%s')\n", op.path, a); return 2; }
        if (slot) {
            if (i + 1 >= argc) { fprintf(stderr, "kcache-inspect: %s needs a value\n", a); return 2; }
            *slot = argv[++i];
        }
    }
    if (!op.path) { usage(stderr); return 2; }
    if (stat(op.path, &st) != 0) { fprintf(stderr, "kcache-inspect: %s: %s\n", op.path, strerror(errno)); return 2; }
    plen = strlen(op.path);
    /* dispatch: numba index, or (later) a kcache store */
    if (S_ISDIR(st.st_mode) || (!op.force_numba && !(plen > 4 && strcmp(op.path + plen - 4, ".nbi") == 0))) {
        fprintf(stderr, "kcache-inspect: %s: kcache store inspection: not built in this version "
                        "(numba indexes end in .nbi; --numba reads any file as one)\n", op.path);
        return 2;
    }
    if (!S_ISREG(st.st_mode)) { fprintf(stderr, "kcache-inspect: %s: not a regular file\n", op.path); return 2; }
    buf = read_file(op.path, &len, err, sizeof err);
    if (!buf) { fprintf(stderr, "kcache-inspect: %s: %s\n", op.path, err); return 2; }
    memset(&o, 0, sizeof o);
    rc = ki_numba_report(buf, len, op.path, &op, &o, err, sizeof err);
    free(buf);
    if (rc == 0 && o.full) {
        rc = 2;
        ki_fmt(err, sizeof err, "the report exceeds %u MiB: not a plausible numba index", KI_MAX_OUTPUT >> 20);
    }
    if (rc != 0) {
        ko_free(&o);
        fprintf(stderr, "kcache-inspect: %s: %s\n", op.path, err);
        return 2;
    }
    fwrite(o.buf ? o.buf : "", 1, o.len, stdout);
    ko_free(&o);
    if (fflush(stdout) != 0) return 2;
    return 0;
}
#endif
