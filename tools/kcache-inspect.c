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
 * Exit status: 0 whenever the tool says what numba (or kcache) will do, whatever the verdict (an
 * empty or garbage .nbi is "numba will raise"); 2 when it cannot: a file or directory that
 * cannot be read, is not a numba index nor a kcache store, index or entry, and usage errors. */

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
#include <ftw.h>
#include <dirent.h>
#include <sys/wait.h>
#include "ktext.h"   /* ko_printf: every %s and %c argument through kcache.h's escaping rule */

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
/* printf whose %s and %c arguments are escaped (ktext.h): a name from outside cannot reach the
   terminal raw, whichever message prints it; newlines and layout belong in fmt. */
static void ko_printf(ki_out *o, const char *fmt, ...) KI_PRINTF(2, 3);
static void ko_printf(ki_out *o, const char *fmt, ...)
{
    ktext t;
    va_list ap;
    ktext_init(&t);
    va_start(ap, fmt);
    ktext_vfmt(&t, fmt, ap);
    va_end(ap);
    if (t.failed) o->full = 1;
    else ko_write(o, t.p, t.len);
    ktext_free(&t);
}
/* n bytes of outside text, escaped by the rule. */
static void ko_esc(ki_out *o, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, k = 0;
    char buf[256];
    while (i < n && !o->full) {
        size_t used, l;
        if (p[i] >= 0x20 && p[i] < 0x7f) { used = l = 1; buf[k] = (char)p[i]; } /* (most of it) */
        else l = kcache__esc_char(p + i, n - i, buf + k, &used);
        k += l;
        i += used;
        if (k > sizeof buf - 12) { ko_write(o, buf, k); k = 0; }
    }
    ko_write(o, buf, k);
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

/* UNICODE (protocol 0): raw-unicode-escape (backslash-u and 4 hex digits, backslash-U and 8), other bytes latin-1. */
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
            if (i + 2 + (size_t)w > n) return NULL;   /* a truncated escape */
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

/* Text-safe string: kcache.h's rule (valid printable UTF-8 as is; controls, invalid bytes, C1 and
   bidi controls escaped), with a backslash doubled so that a rendered value reads back. */
static void ko_text(ki_out *o, const unsigned char *s, size_t n, size_t max)
{
    size_t i = 0, j;
    if (max && n > max) n = max;
    while (i < n && !o->full) {
        for (j = i; j < n && s[j] != '\\'; j++) {}
        ko_esc(o, (const char *)s + i, j - i);
        if (j < n) ko_puts(o, "\\\\");
        i = j + 1;
    }
}

/* A JSON string whose value is the text mode's: s escaped by kcache.h's rule (so a control byte,
   invalid UTF-8, a C1 or bidi control arrives as the same \xHH or \u{XXXX} text), then quoted. */
static void ko_json_str(ki_out *o, const unsigned char *s, size_t n)
{
    size_t i = 0, k = 1, j;
    char buf[256];
    buf[0] = '"';
    while (i < n && !o->full) {
        char one[11];
        size_t used, l;
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\') { /* (most of it) */
            buf[k++] = (char)s[i++];
            if (k > sizeof buf - 24) { ko_write(o, buf, k); k = 0; }
            continue;
        }
        l = kcache__esc_char(s + i, n - i, one, &used);
        for (j = 0; j < l; j++) {
            if (one[j] == '"' || one[j] == '\\') buf[k++] = '\\';
            buf[k++] = one[j];
        }
        i += used;
        if (k > sizeof buf - 24) { ko_write(o, buf, k); k = 0; }
    }
    buf[k++] = '"';
    ko_write(o, buf, k);
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
    int data_bad;                  /* the .nbc does not unpickle: numba raises loading it */
    int code_match;                /* its bytecode hash is the function's now: -1 unknown, 0, 1 */
    char *data_err;                /* why (arena) */
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
    char body_err[240];            /* the body does not decode: what numba's pickle.loads meets */
    char version_err[200];         /* the version pickle does not load: numba's pickle.load raises */
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

/* The version pickle does not load: numba raises from pickle.load before it compares anything.
 * The index then holds no version (an empty string stands in) and the body is not read. */
static int nb_version_bad(nb_index *ix)
{
    static const unsigned char none[1] = {0};
    ix->version = (pk_node *)ka_alloc(&ix->arena, sizeof *ix->version);
    if (!ix->version) return -1;
    memset(ix->version, 0, sizeof *ix->version);
    ix->version->kind = PK_STR;
    ix->version->s = none;
    ix->version->n = 0;
    ix->version_end = ix->body_end = ix->len;
    ki_fmt(ix->body_err, sizeof ix->body_err, "not read: %s", ix->version_err);
    return 0;
}

/* Decodes buf as a numba index.  0 when the version pickle decodes to a string: then either
 * the body decoded too, or ix->body_err says why not (numba stops at the version when it is
 * not its own, and raises from pickle.loads when it is, so both are verdicts, not errors).
 * -1 with a one-line message in err when the file is not a numba index at all. */
static int nb_decode(const unsigned char *buf, size_t len, nb_index *ix, char *err, size_t errcap)
{
    pk_parser P;
    pk_node *body;
    size_t k;
    memset(ix, 0, sizeof *ix);
    ix->arena.limit = KI_MAX_MEM;
    ix->stamp_kind = ST_OTHER;
    ix->buf = buf; ix->len = len;
    /* numba's _load_index runs pickle.load(f) on whatever the file holds: an empty or garbage
       .nbi is not skipped, the load raises (EOFError, UnpicklingError) out of every first call */
    if (len == 0 || buf[0] != 0x80) {
        if (len == 0) ki_fmt(ix->version_err, sizeof ix->version_err, "the file is empty (EOFError: Ran out of input)");
        else ki_fmt(ix->version_err, sizeof ix->version_err, "the file does not start with a pickle PROTO opcode "
                    "(first byte 0x%02x: UnpicklingError: invalid load key)", buf[0]);
        if (nb_version_bad(ix) != 0) { ki_fmt(err, errcap, "out of memory"); return -1; }
        return 0;
    }
    pk_parser_init(&P, &ix->arena);
    if (pk_load(&P, buf, len, 0, &ix->version_end, &ix->version) != 0) {
        ki_fmt(ix->version_err, sizeof ix->version_err, "the version pickle does not unpickle: %s (%s)", P.err,
               ix->version_end >= len || strstr(P.err, "truncated") ? "EOFError or UnpicklingError" : "UnpicklingError");
        pk_parser_free(&P);
        if (nb_version_bad(ix) != 0) { ki_fmt(err, errcap, "out of memory"); return -1; }
        return 0;
    }
    ix->version_proto = P.proto;
    pk_parser_free(&P);
    if (ix->version->kind != PK_STR) {
        ki_fmt(err, errcap, "not a numba index: the first pickle is a %s, not the numba version string",
                 pk_kind_name(ix->version->kind));
        return -1;
    }
    ix->body_end = len;
    if (ix->version_end >= len) {
        ki_fmt(ix->body_err, sizeof ix->body_err, "no index body after the version pickle (EOFError: the file ends at byte %zu)", len);
        return 0;
    }
    pk_parser_init(&P, &ix->arena);   /* numba unpickles the body separately: a fresh memo */
    if (pk_load(&P, buf, len, ix->version_end, &ix->body_end, &body) != 0) {
        ki_fmt(ix->body_err, sizeof ix->body_err, "the index body does not unpickle: %s", P.err);
        pk_parser_free(&P);
        ix->body_end = len;
        return 0;
    }
    ix->body_proto = P.proto;
    pk_parser_free(&P);
    /* numba unpacks "stamp, overloads = pickle.loads(data)" and calls overloads.get(key) */
    if (body->kind != PK_TUPLE || body->nv != 2) {
        ki_fmt(ix->body_err, sizeof ix->body_err, "the index body is a %s%s, not the pair (stamp, overloads)",
                 pk_kind_name(body->kind), body->kind == PK_TUPLE ? " of another length" : "");
        return 0;
    }
    if (body->v[1]->kind != PK_DICT) {
        ki_fmt(ix->body_err, sizeof ix->body_err, "the index's overloads are a %s, not a dict", pk_kind_name(body->v[1]->kind));
        return 0;
    }
    ix->stamp = body->v[0];
    ix->overloads = body->v[1];
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
        o->code_match = -1;
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

/* numba -> llvmlite -> LLVM.  numba's magic tuple holds the CPU name that *its* LLVM's host
 * detection returns, and LLVM learns CPUs release by release (a CPU newer than the LLVM is
 * "generic", or an older family name), so the name an index must hold to be used depends on
 * the LLVM of the numba that reads it.  Each numba release pins one llvmlite minor (its wheels'
 * metadata: numba 0.50.0 "llvmlite<0.34,>=0.33.0.dev0", 0.57.0 "<0.41,>=0.40.0dev0", ...,
 * 0.63.0 and 0.64.0 both "<0.47,>=0.46.0dev0", 0.68.0 "<0.51,>=0.50.0dev0"; the PyPI pages of
 * 0.51 and 0.54 say "llvmlite 0.34.*" and "0.37.*"), and each llvmlite builds with the LLVM of
 * llvmlite's "Historical compatibility table" (its README: 0.33 LLVM 9, 0.34-0.36 10,
 * 0.37-0.39 11, 0.40 11 and 14, 0.41-0.43 14, 0.44 15 and 16, 0.45-0.47 20, 0.48+ 22).  The
 * LLVM of each wheel was checked by loading it (llvm_version_info: 0.33.0 9.0.1, 0.36.0 10.0.1,
 * 0.39.1 11.1.0, 0.40.1 and 0.43.0 14.0.6, 0.44.0 15.0.7, 0.47.0 20.1.8, 0.50.0 22.1.0).
 * Distributions may build with another LLVM: Debian 12's llvmlite 0.39.1 reports LLVM 14.  The
 * index tells the two apart: each overload holds the target triple of the LLVM that wrote it,
 * "x86_64-unknown-linux-gnu" from every PyPI wheel above, "x86_64-pc-linux-gnu" from Debian's
 * LLVM (both checked with llvmlite's get_process_triple). */
typedef struct ki_numba_llvm {
    unsigned char lo, hi;          /* numba 0.lo .. 0.hi */
    unsigned char llvm[2];         /* [0] the LLVM of PyPI's wheels; [1] another build's, 0: none known */
    const char *other;             /* who builds with llvm[1] */
    const char *other_triple;      /* the end of the target triple that build writes, NULL: not known */
} ki_numba_llvm;

#define KI_PYPI_TRIPLE "-unknown-linux-gnu"   /* llvmlite's wheels, x86-64 Linux */

static const ki_numba_llvm ki_numba_llvms[] = {
    {50, 50, {9, 0}, NULL, NULL},
    {51, 53, {10, 0}, NULL, NULL},
    {54, 55, {11, 0}, NULL, NULL},
    {56, 56, {11, 14}, "Debian 12's python3-numba", "-pc-linux-gnu"},
    {57, 57, {14, 11}, "llvmlite 0.40 built with LLVM 11", NULL},
    {58, 60, {14, 0}, NULL, NULL},
    {61, 61, {15, 16}, "llvmlite 0.44 built with LLVM 16", NULL},
    {62, 65, {20, 0}, NULL, NULL},
    {66, 68, {22, 0}, NULL, NULL},
};

/* "0.56.4" -> 56; -1 when it is not 0.N[...]. */
static int numba_minor(const char *v, size_t n)
{
    size_t i = 2;
    int m = 0;
    if (n < 3 || v[0] != '0' || v[1] != '.' || v[2] < '0' || v[2] > '9') return -1;
    while (i < n && v[i] >= '0' && v[i] <= '9' && m < 10000) m = m * 10 + (v[i++] - '0');
    return m;
}

typedef struct ki_opts {
    const char *path;
    const char *source;
    const char *cpu, *features, *triple, *numba_version;
    int llvm_version;                 /* --llvm-version N; 0: from the numba version */
    int json, dump, force_numba;
    const char *paths[16];            /* --path DIR: roots where imported modules are looked up */
    int npaths;
    const char *cache_dir;            /* --cache-dir DIR: NUMBA_CACHE_DIR of the run ("": unset) */
    const char *locator_classes;      /* --locator-classes LIST: NUMBA_CACHE_LOCATOR_CLASSES of the run */
    const char *python;               /* --python PATH: the interpreter that compiles the source */
    int no_bytecode;                  /* --no-bytecode: do not compile the source */
    /* --prune */
    int prune, prune_yes, prune_other_cpu;
    /* kcache mode */
    const char *unit;                 /* DIR UNIT */
    int verify;                       /* --verify: every checksum in the store */
    int stamp;                        /* KCACHE_STAMP_*: how a dependency's stamp is judged */
    const char *stamp_from;
    int no_deps;                      /* do not look at dependency files (the fuzz target) */
    int no_imports;                   /* numba: do not scan the source's imports (--prune) */
    int host;                         /* --host: this machine's CPU names */
    /* --make-layer SRC DEST */
    int make_layer, private_layer;
    const char **layer_units;         /* --unit NAME (repeatable) */
    int nlayer_units;
} ki_opts;

typedef struct ki_host {
    const char *cpu, *features;       /* NULL: unknown; cpu is what the reading numba computes */
    const char *cpu_from, *features_from;
    int features_by_name;             /* detected: compare with an index name by name */
    char cpu_buf[128], feat_buf[KCACHE__HOST_FEATURES_MAX];
    /* detected: kcache's own (newest LLVM's) name, and what the reading numba's LLVM calls it */
    char detected[128];
    char numba[16];                   /* "0.56", the numba whose LLVM was asked */
    int nllvm;                        /* LLVM majors that numba builds with: 0..2 */
    int llvm[2];
    char llvm_name[2][128];
    int llvm_used;                    /* index into llvm[] of the name taken, -1: none */
    char llvm_note[400];              /* how the name was chosen, when worth saying */
} ki_host;

static int str_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        int ca = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a, cb = *b >= 'A' && *b <= 'Z' ? *b + 32 : *b;
        if (ca != cb) return 0;
    }
    return *a == *b;
}

/* The LLVM majors the numba of version v builds with ([0]: PyPI's).  0 when numba is older than
 * the table (LLVM 8 or older); a numba newer than the table is taken to use the newest LLVM. */
static int numba_llvms(int minor, int *llvm, const char **other, const char **other_triple, int *beyond)
{
    size_t k;
    *other = *other_triple = NULL;
    *beyond = 0;
    for (k = 0; k < sizeof ki_numba_llvms / sizeof ki_numba_llvms[0]; k++) {
        const ki_numba_llvm *e = &ki_numba_llvms[k];
        if (minor >= e->lo && minor <= e->hi) {
            llvm[0] = e->llvm[0];
            llvm[1] = e->llvm[1];
            *other = e->other;
            *other_triple = e->other_triple;
            return e->llvm[1] ? 2 : 1;
        }
    }
    if (minor > ki_numba_llvms[sizeof ki_numba_llvms / sizeof ki_numba_llvms[0] - 1].hi) {
        llvm[0] = KCACHE__LLVM_NEWEST;
        *beyond = 1;
        return 1;
    }
    return 0;
}

static int feat_match_by_name(const unsigned char *a, size_t an, const unsigned char *b, size_t bn);

/* Whether an index holds an overload compiled on this machine by a numba that named it cpu: its
 * CPU name and its features (by name: another LLVM's list) are this host's, so not an override
 * such as NUMBA_CPU_NAME=generic (whose features are ""). */
static int index_has_cpu(const nb_index *ix, const char *cpu, const char *feat)
{
    size_t k;
    for (k = 0; k < ix->nov; k++)
        if (ix->ov[k].shape_ok && ix->ov[k].cpu->n == strlen(cpu) && memcmp(ix->ov[k].cpu->s, cpu, ix->ov[k].cpu->n) == 0 &&
            feat_match_by_name(ix->ov[k].features->s, ix->ov[k].features->n, (const unsigned char *)feat, strlen(feat)))
            return 1;
    return 0;
}

/* Whether an overload of ix has a target triple ending in tail. */
static int index_has_triple(const nb_index *ix, const char *tail)
{
    size_t k, tl = strlen(tail);
    for (k = 0; k < ix->nov; k++)
        if (ix->ov[k].shape_ok && ix->ov[k].triple->n >= tl && memcmp(ix->ov[k].triple->s + ix->ov[k].triple->n - tl, tail, tl) == 0)
            return 1;
    return 0;
}

/* This machine's CPU as the numba that reads ix sees it.  --cpu, --features and numba's own
 * NUMBA_CPU_NAME / NUMBA_CPU_FEATURES win.  Otherwise kcache.h's detector gives the name (its
 * stable, newest-LLVM name, and what LLVM N calls this CPU) and the features: numba's LLVM
 * names a different set of features than the detector (on a Zen 5, LLVM 14 knows 32 fewer,
 * LLVM 22 6 fewer: names it dropped), so a detected feature string is compared with an index's name by name:
 * every feature both name must agree, one named by only one side is not compared.  --features
 * and NUMBA_CPU_FEATURES are compared byte for byte, as numba does. */
static void host_resolve(const ki_opts *op, const nb_index *ix, ki_host *h)
{
    const char *env_cpu = getenv("NUMBA_CPU_NAME"), *env_feat = getenv("NUMBA_CPU_FEATURES");
    const char *ver = op->numba_version;
    size_t vn;
    int minor, k, beyond = 0, in_table = 1;
    const char *other = NULL, *other_triple = NULL;
    memset(h, 0, sizeof *h);
    h->llvm_used = -1;
    if (op->cpu) { h->cpu = op->cpu; h->cpu_from = "--cpu"; }
    else if (env_cpu) { h->cpu = env_cpu; h->cpu_from = "NUMBA_CPU_NAME"; }
    if (op->features) { h->features = op->features; h->features_from = "--features"; }
    else if (env_feat) { h->features = env_feat; h->features_from = "NUMBA_CPU_FEATURES"; }
    else if (h->cpu && str_ieq(h->cpu, "generic")) { h->features = ""; h->features_from = "numba's default for generic"; }
    if (h->cpu && h->features) return;
    kcache__host_cpu_name(h->detected, sizeof h->detected);
    kcache__host_cpu_features(h->feat_buf, sizeof h->feat_buf);
    if (!h->features) {
        h->features = h->feat_buf;
        h->features_from = "detected (compared by name)";
        h->features_by_name = 1;
    }
    if (h->cpu || !h->detected[0]) return;
    h->cpu_from = "detected";
    ki_fmt(h->cpu_buf, sizeof h->cpu_buf, "%s", h->detected);
    h->cpu = h->cpu_buf;
    /* which LLVM reads the index: --llvm-version, else the numba's (--numba-version, else the
       index's own version) */
    if (ver) {
        vn = strlen(ver);
    } else {
        ver = (const char *)ix->version->s;
        vn = ix->version->n;
    }
    minor = numba_minor(ver, vn);
    if (minor >= 0) ki_fmt(h->numba, sizeof h->numba, "0.%d", minor);
    if (op->llvm_version > 0) {
        h->llvm[0] = op->llvm_version;
        h->nllvm = 1;
        other = "--llvm-version";
    } else if (minor >= 0) {
        h->nllvm = numba_llvms(minor, h->llvm, &other, &other_triple, &beyond);
    }
    if (!h->nllvm) {
        ki_fmt(h->llvm_note, sizeof h->llvm_note, "numba %.20s is older than kcache's table of numba's LLVMs (LLVM 8 or "
               "older): taking the newest LLVM's name (pass --cpu or --llvm-version if numba names it otherwise)",
               minor >= 0 ? h->numba : "of an unrecognized version");
        return;
    }
    for (k = 0; k < h->nllvm; k++) {
        int r = kcache__host_cpu_name_llvm((unsigned)h->llvm[k], h->llvm_name[k], sizeof h->llvm_name[k]);
        if (r != 1) in_table = 0;
        if (r == 2) ki_fmt(h->llvm_note, sizeof h->llvm_note, "kcache does not track this platform's CPU names per LLVM version");
    }
    h->llvm_used = 0;
    /* the triple says which build wrote the index, so which LLVM reads it, even where both
       name this CPU alike (a Zen 5 is generic to LLVM 11 and 14): llvm_used reports that LLVM */
    if (h->nllvm == 2 && other_triple) {
        int t0 = index_has_triple(ix, KI_PYPI_TRIPLE), t1 = index_has_triple(ix, other_triple);
        if (t0 != t1) h->llvm_used = t1;
    }
    if (h->nllvm == 2 && strcmp(h->llvm_name[0], h->llvm_name[1]) != 0) {
        /* the two builds name this CPU differently: an index written here holds one of them */
        int has0 = index_has_cpu(ix, h->llvm_name[0], h->feat_buf), has1 = index_has_cpu(ix, h->llvm_name[1], h->feat_buf);
        int t0 = index_has_triple(ix, KI_PYPI_TRIPLE), t1 = other_triple && index_has_triple(ix, other_triple);
        char pick[160];
        if (t0 != t1) {   /* the triple says which build wrote the index */
            h->llvm_used = t1;
            ki_fmt(pick, sizeof pick, "the index's target triple (...%s) is that build's: taken as this numba's",
                   t1 ? other_triple : KI_PYPI_TRIPLE);
        } else if (has0 != has1) {
            h->llvm_used = has1;
            ki_fmt(pick, sizeof pick, "the index holds LLVM %d's name: taken as this numba's", h->llvm[h->llvm_used]);
        } else {
            ki_fmt(pick, sizeof pick, "taking PyPI's (pass --llvm-version N for the other)");
        }
        ki_fmt(h->llvm_note, sizeof h->llvm_note, "numba %s's LLVM %d (PyPI's wheels) calls it %s, LLVM %d (%s) %s; %s", h->numba,
               h->llvm[0], h->llvm_name[0], h->llvm[1], other ? other : "another build", h->llvm_name[1], pick);
    } else if (beyond) {
        ki_fmt(h->llvm_note, sizeof h->llvm_note, "numba %s is newer than kcache's table of numba's LLVMs: taking LLVM %d's "
               "name (pass --cpu or --llvm-version if its LLVM names this CPU otherwise)", h->numba, h->llvm[0]);
    } else if (!in_table && !h->llvm_note[0]) {
        ki_fmt(h->llvm_note, sizeof h->llvm_note, "LLVM %d is outside kcache's table of LLVM host names (LLVM %d-%d): "
               "taking the nearest one's name", h->llvm[0], KCACHE__LLVM_OLDEST, KCACHE__LLVM_NEWEST);
    }
    if (h->llvm_name[h->llvm_used][0]) ki_fmt(h->cpu_buf, sizeof h->cpu_buf, "%s", h->llvm_name[h->llvm_used]);
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
 * feature both name agrees, b names most (4 in 5) of a's features, and a names at least half
 * of b's, so that two LLVMs' lists of one CPU match while "" or a short list never matches a
 * full one.  b is kcache.h's list, every name of LLVM 14..22: an older LLVM's list names fewer
 * (LLVM 14's 88 of its 120 on a Zen 5), so b's side is held to half, not 4 in 5. */
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
    return common * 5 >= na * 4 && common * 2 >= nb;
}

/* Whether a feature string is in the form numba computes for the host: llvmlite's
 * FeatureMap.flatten(), "+name" or "-name" for each feature, sorted by name, joined by ",".  A
 * string in another order can only come from NUMBA_CPU_FEATURES, and numba compares the strings
 * byte for byte: the same features in another order are another key. */
static int feat_in_flatten_order(const unsigned char *s, size_t n)
{
    static feat fs[KI_MAX_FEATS];
    size_t nf = feat_parse(s, n, fs, KI_MAX_FEATS), k;
    if (nf >= KI_MAX_FEATS) return 0;
    for (k = 0; k < n; k++) if (s[k] == ' ') return 0;
    for (k = 0; k < nf; k++) {
        if (fs[k].name == (const char *)s || (fs[k].name[-1] != '+' && fs[k].name[-1] != '-')) return 0;
        if (k && feat_cmp(&fs[k - 1], &fs[k]) >= 0) return 0;
    }
    return 1;
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
/* fopen for reading a regular file only: a FIFO or device someone put in its place is neither
   waited on (opened O_NONBLOCK) nor read. */
static FILE *fopen_regular(const char *path, const char *mode)
{
    struct stat sb;
    FILE *f;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || !(f = fdopen(fd, mode))) { close(fd); return NULL; }
    return f;
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
static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

/* What the index file name says: [PREFIX-]FULLNAME-DISAMBIGUATOR.pyXY[abiflags].nbi.  FULLNAME
 * is the source file's base name without .py, a dot, and the function's qualified name ('<' and
 * '>' removed, so "make.<locals>.f" is "make.locals.f"); DISAMBIGUATOR is the function's first
 * line, or for a notebook cell (IPython's locator) the first 10 hex digits of the sha256 of the
 * function's first two lines.  PREFIX names a library cache: numba's one is "guf", the
 * @guvectorize wrapper (numba/np/ufunc/wrappers.py: make_library_cache('guf')), which gives a
 * function two indexes, "mod.f-4..." for the kernel and "guf-mod.f-4..." for its wrapper. */
typedef struct nb_name {
    char fullname[1024];
    char prefix[16];          /* "guf" or "" */
    char disamb[128];
    char pytag[32];
    long line;                /* -1 when the disambiguator is not a line number (IPython) */
    char module[512];         /* the module file's base name, as found or guessed */
    char qualname[1024];
    char func[512];
    int notebook;             /* a notebook cell: "ipython-input-N-HASH" or ipykernel's "NNN" module */
    int ok;
} nb_name;

static void nb_split_module(nb_name *nm, size_t ml)
{
    const char *fn = nm->fullname, *last;
    if (ml >= sizeof nm->module) ml = sizeof nm->module - 1;
    memcpy(nm->module, fn, ml);
    nm->module[ml] = 0;
    ki_fmt(nm->qualname, sizeof nm->qualname, "%s", fn[ml] ? fn + ml + 1 : "");
    last = strrchr(nm->qualname, '.');
    ki_fmt(nm->func, sizeof nm->func, "%s", last ? last + 1 : nm->qualname);
}

static void nb_parse_name(const char *base, nb_name *nm)
{
    size_t n = strlen(base), i, dash, k;
    const char *dot;
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
    if (strncmp(base, "guf-", 4) == 0 && dash > 4) {
        ki_fmt(nm->prefix, sizeof nm->prefix, "guf");
        base += 4;
        dash -= 4;
    }
    memcpy(nm->fullname, base, dash);
    nm->fullname[dash] = 0;
    {
        char *end;
        long v = strtol(nm->disamb, &end, 10);
        if (nm->disamb[0] >= '0' && nm->disamb[0] <= '9' && !*end) nm->line = v;
    }
    /* first guess: the module is the part before the first dot */
    dot = strchr(nm->fullname, '.');
    nb_split_module(nm, dot ? (size_t)(dot - nm->fullname) : strlen(nm->fullname));
    /* IPython's locator: the cell's pseudo file "<ipython-input-N-HASH>" (brackets removed), or
       ipykernel's "/tmp/ipykernel_PID/NNN.py", and 10 hex digits for a disambiguator */
    if (strlen(nm->disamb) == 10 && nm->line < 0) {
        int hex = 1, digits = nm->module[0] != 0;
        for (k = 0; k < 10; k++) if (hexval(nm->disamb[k]) < 0) hex = 0;
        for (k = 0; nm->module[k]; k++) if (nm->module[k] < '0' || nm->module[k] > '9') digits = 0;
        nm->notebook = hex && (strncmp(nm->module, "ipython-input-", 14) == 0 || digits);
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
            nb_split_module(nm, i);
            return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Zip members: numba 0.68's ZipCacheLocator stamps a function imported from a zip archive    */
/* with the sha256 of the member's bytes.  Stored and deflated members (what zipimport reads);*/
/* every length is checked, the output is bounded and its CRC-32 compared with the archive's.*/

#define KI_MAX_MEMBER (64u << 20)

static uint32_t zi_crc32(const unsigned char *p, size_t n)
{
    uint32_t table[256], c = 0xffffffffu;
    size_t i;
    int k;
    for (i = 0; i < 256; i++) {
        uint32_t v = (uint32_t)i;
        for (k = 0; k < 8; k++) v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
        table[i] = v;
    }
    for (i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

/* Inflate (RFC 1951): canonical Huffman codes decoded bit by bit, which is slow and simple;
 * a source file is small. */
typedef struct zi_in {
    const unsigned char *p;
    size_t n, pos;
    uint32_t bits;
    int nbits;
    unsigned char *out;
    size_t len, cap, max;
} zi_in;

typedef struct zi_huff {
    unsigned short count[16];   /* codes of each length */
    unsigned short sym[320];    /* symbols in code order */
} zi_huff;

static int zi_need(zi_in *z, int n, unsigned *v)
{
    while (z->nbits < n) {
        if (z->pos >= z->n) return -1;
        z->bits |= (uint32_t)z->p[z->pos++] << z->nbits;
        z->nbits += 8;
    }
    *v = z->bits & ((1u << n) - 1u);
    z->bits >>= n;
    z->nbits -= n;
    return 0;
}

/* Builds the code from code lengths; -1 when the lengths over-subscribe the code. */
static int zi_build(zi_huff *h, const unsigned char *lens, int n)
{
    unsigned short offs[16];
    int i, left = 1;
    memset(h->count, 0, sizeof h->count);
    for (i = 0; i < n; i++) h->count[lens[i]]++;
    h->count[0] = 0;
    for (i = 1; i < 16; i++) {
        left <<= 1;
        left -= h->count[i];
        if (left < 0) return -1;
    }
    offs[1] = 0;
    for (i = 1; i < 15; i++) offs[i + 1] = (unsigned short)(offs[i] + h->count[i]);
    for (i = 0; i < n; i++) if (lens[i]) h->sym[offs[lens[i]]++] = (unsigned short)i;
    return 0;
}

static int zi_decode(zi_in *z, const zi_huff *h)
{
    int code = 0, first = 0, index = 0, len;
    for (len = 1; len < 16; len++) {
        unsigned b;
        int count = h->count[len];
        if (zi_need(z, 1, &b) != 0) return -1;
        code |= (int)b;
        if (code - count < first) return h->sym[index + (code - first)];
        index += count;
        first += count;
        first <<= 1;
        code <<= 1;
    }
    return -1;
}

static int zi_put(zi_in *z, unsigned char c)
{
    if (z->len == z->cap) {
        size_t nc = z->cap ? z->cap * 2 : 4096;
        unsigned char *nb;
        if (z->len >= z->max) return -1;
        if (nc > z->max) nc = z->max;
        nb = (unsigned char *)realloc(z->out, nc);
        if (!nb) return -1;
        z->out = nb;
        z->cap = nc;
    }
    z->out[z->len++] = c;
    return 0;
}

static int zi_codes(zi_in *z, const zi_huff *lit, const zi_huff *dist)
{
    static const unsigned short lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                             35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const unsigned char lextra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                             3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static const unsigned short dbase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
                                             257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
                                             8193, 12289, 16385, 24577};
    static const unsigned char dextra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                             7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    for (;;) {
        int sym = zi_decode(z, lit);
        unsigned e, len, d;
        if (sym < 0) return -1;
        if (sym < 256) { if (zi_put(z, (unsigned char)sym) != 0) return -1; continue; }
        if (sym == 256) return 0;
        sym -= 257;
        if (sym >= 29 || zi_need(z, lextra[sym], &e) != 0) return -1;
        len = lbase[sym] + e;
        sym = zi_decode(z, dist);
        if (sym < 0 || sym >= 30 || zi_need(z, dextra[sym], &e) != 0) return -1;
        d = dbase[sym] + e;
        if (d > z->len) return -1;
        while (len--) if (zi_put(z, z->out[z->len - d]) != 0) return -1;
    }
}

static int zi_dynamic(zi_in *z, zi_huff *lit, zi_huff *dist)
{
    static const unsigned char order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    unsigned char lens[320];
    unsigned hlit, hdist, hclen, v;
    int i = 0;
    zi_huff cl;
    if (zi_need(z, 5, &hlit) || zi_need(z, 5, &hdist) || zi_need(z, 4, &hclen)) return -1;
    hlit += 257; hdist += 1; hclen += 4;
    if (hlit > 286 || hdist > 30) return -1;
    memset(lens, 0, sizeof lens);
    for (i = 0; i < (int)hclen; i++) { if (zi_need(z, 3, &v)) return -1; lens[order[i]] = (unsigned char)v; }
    if (zi_build(&cl, lens, 19) != 0) return -1;
    i = 0;
    while (i < (int)(hlit + hdist)) {
        int sym = zi_decode(z, &cl), rep = 0;
        unsigned char val = 0;
        if (sym < 0) return -1;
        if (sym < 16) { lens[i++] = (unsigned char)sym; continue; }
        if (sym == 16) { if (i == 0 || zi_need(z, 2, &v)) return -1; val = lens[i - 1]; rep = 3 + (int)v; }
        else if (sym == 17) { if (zi_need(z, 3, &v)) return -1; rep = 3 + (int)v; }
        else { if (zi_need(z, 7, &v)) return -1; rep = 11 + (int)v; }
        if (i + rep > (int)(hlit + hdist)) return -1;
        while (rep--) lens[i++] = val;
    }
    if (lens[256] == 0) return -1;
    if (zi_build(lit, lens, (int)hlit) != 0 || zi_build(dist, lens + hlit, (int)hdist) != 0) return -1;
    return 0;
}

/* Inflates p[0..n) into a malloc'd buffer of at most max bytes; NULL on any error. */
static unsigned char *zi_inflate(const unsigned char *p, size_t n, size_t max, size_t *outlen)
{
    zi_in z;
    unsigned last = 0, type;
    memset(&z, 0, sizeof z);
    z.p = p; z.n = n; z.max = max;
    while (!last) {
        if (zi_need(&z, 1, &last) || zi_need(&z, 2, &type)) goto fail;
        if (type == 0) {             /* stored: byte aligned LEN, NLEN, then LEN bytes */
            unsigned len;
            z.bits = 0; z.nbits = 0;
            if (z.n - z.pos < 4) goto fail;
            len = p[z.pos] | (unsigned)p[z.pos + 1] << 8;
            if ((len ^ 0xffffu) != (p[z.pos + 2] | (unsigned)p[z.pos + 3] << 8)) goto fail;
            z.pos += 4;
            if (z.n - z.pos < len) goto fail;
            while (len--) if (zi_put(&z, p[z.pos++]) != 0) goto fail;
        } else if (type == 1) {      /* fixed codes */
            zi_huff lit, dist;
            unsigned char lens[320];
            int i;
            for (i = 0; i < 144; i++) lens[i] = 8;
            for (; i < 256; i++) lens[i] = 9;
            for (; i < 280; i++) lens[i] = 7;
            for (; i < 288; i++) lens[i] = 8;
            zi_build(&lit, lens, 288);
            for (i = 0; i < 30; i++) lens[i] = 5;
            zi_build(&dist, lens, 30);
            if (zi_codes(&z, &lit, &dist) != 0) goto fail;
        } else if (type == 2) {
            zi_huff lit, dist;
            if (zi_dynamic(&z, &lit, &dist) != 0 || zi_codes(&z, &lit, &dist) != 0) goto fail;
        } else goto fail;
    }
    *outlen = z.len;
    if (!z.out) z.out = (unsigned char *)malloc(1);
    return z.out;
fail:
    free(z.out);
    return NULL;
}

static uint32_t rd_le32(const unsigned char *p) { return (uint32_t)rd_le(p, 4); }
static unsigned rd_le16(const unsigned char *p) { return (unsigned)rd_le(p, 2); }

/* Finds member name in the zip archive zip[0..n) (path names it in messages).  Returns a
 * malloc'd copy of its bytes (*len of them) or NULL with a one-line reason in err. */
static unsigned char *zip_member_mem(const unsigned char *zip, size_t n, const char *path, const char *name, size_t *len,
                                     char *err, size_t errcap)
{
    unsigned char *out = NULL;
    size_t eocd, cd, k, nl = strlen(name);
    unsigned entries, e;
    /* the end of central directory record: 22 bytes plus a comment of up to 64 KiB, at the end */
    if (n < 22) { ki_fmt(err, errcap, "%s: not a zip archive (too short)", path); return NULL; }
    for (eocd = n - 22;; eocd--) {
        if (rd_le32(zip + eocd) == 0x06054b50u && eocd + 22 + rd_le16(zip + eocd + 20) == n) break;
        if (eocd == 0 || n - eocd > 22 + 65535) { ki_fmt(err, errcap, "%s: not a zip archive (no end of central directory)", path); return NULL; }
    }
    entries = rd_le16(zip + eocd + 10);
    cd = rd_le32(zip + eocd + 16);
    if (cd > eocd) { ki_fmt(err, errcap, "%s: bad zip central directory offset", path); return NULL; }
    for (e = 0, k = cd; e < entries; e++) {
        unsigned method, fnl, xl, cl;
        uint32_t crc, csize, usize, lho;
        if (eocd - k < 46 || rd_le32(zip + k) != 0x02014b50u) { ki_fmt(err, errcap, "%s: bad zip central directory entry", path); return NULL; }
        method = rd_le16(zip + k + 10);
        crc = rd_le32(zip + k + 16);
        csize = rd_le32(zip + k + 20);
        usize = rd_le32(zip + k + 24);
        fnl = rd_le16(zip + k + 28); xl = rd_le16(zip + k + 30); cl = rd_le16(zip + k + 32);
        lho = rd_le32(zip + k + 42);
        if (eocd - k - 46 < (size_t)fnl + xl + cl) { ki_fmt(err, errcap, "%s: bad zip central directory entry", path); return NULL; }
        if (fnl == nl && memcmp(zip + k + 46, name, nl) == 0) {
            size_t data;
            if (csize == 0xffffffffu || usize == 0xffffffffu || lho == 0xffffffffu) { ki_fmt(err, errcap, "%s: %s is a zip64 member (not read here)", path, name); return NULL; }
            if (usize > KI_MAX_MEMBER) { ki_fmt(err, errcap, "%s: %s is larger than %u MiB", path, name, KI_MAX_MEMBER >> 20); return NULL; }
            if (n < 30 || lho > n - 30 || rd_le32(zip + lho) != 0x04034b50u) { ki_fmt(err, errcap, "%s: bad local header for %s", path, name); return NULL; }
            data = (size_t)lho + 30 + rd_le16(zip + lho + 26) + rd_le16(zip + lho + 28);
            if (data > n || n - data < csize) { ki_fmt(err, errcap, "%s: %s is truncated", path, name); return NULL; }
            if (method == 0) {
                if (csize != usize) { ki_fmt(err, errcap, "%s: %s: stored sizes differ", path, name); return NULL; }
                out = (unsigned char *)malloc(usize ? usize : 1);
                if (!out) { ki_fmt(err, errcap, "out of memory"); return NULL; }
                memcpy(out, zip + data, usize);
                *len = usize;
            } else if (method == 8) {
                out = zi_inflate(zip + data, csize, usize, len);
                if (!out || *len != usize) { free(out); ki_fmt(err, errcap, "%s: %s does not inflate", path, name); return NULL; }
            } else {
                ki_fmt(err, errcap, "%s: %s uses compression method %u (zipimport reads stored and deflated only)", path, name, method);
                return NULL;
            }
            if (zi_crc32(out, *len) != crc) { free(out); ki_fmt(err, errcap, "%s: %s fails its CRC-32", path, name); return NULL; }
            return out;
        }
        k += 46 + (size_t)fnl + xl + cl;
    }
    ki_fmt(err, errcap, "%s has no member %s", path, name);
    return NULL;
}

static unsigned char *slurp(const char *path, size_t max, size_t *len);

/* Reads member name of the zip archive at path; as zip_member_mem. */
static unsigned char *zip_member(const char *path, const char *name, size_t *len, char *err, size_t errcap)
{
    size_t n = 0;
    unsigned char *zip = slurp(path, (size_t)KI_MAX_FILE * 4, &n), *out;
    if (!zip) { ki_fmt(err, errcap, "cannot read %s (or larger than %u MiB)", path, (KI_MAX_FILE >> 20) * 4); return NULL; }
    out = zip_member_mem(zip, n, path, name, len, err, errcap);
    free(zip);
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* Python source text: physical lines, and which of them continue a logical line (an open    */
/* bracket, an open triple-quoted string, a trailing backslash), for the notebook locator's  */
/* function text and for the imports.                                                        */

typedef struct py_line {
    size_t start, end;        /* [start, end): the physical line, its '\n' included when present */
    size_t code_end;          /* just past its last character before a comment and trailing blanks */
    int indent;               /* columns before the first character (a tab: to the next multiple of 8) */
    int blank;                /* starts no statement: only blanks and a comment, outside any string */
    int continues;            /* the logical line goes on past this physical line */
} py_line;

#define KI_MAX_PY_LINES 200000

/* Splits t into at most max physical lines (*nl of them, malloc'd); NULL when out of memory. */
static py_line *py_lines(const unsigned char *t, size_t n, size_t *nl)
{
    size_t i = 0, cnt = 0, cap = 0;
    int depth = 0;
    unsigned char triple = 0;          /* the quote of an open triple-quoted string */
    py_line *L = NULL;
    *nl = 0;
    while (i < n && cnt < KI_MAX_PY_LINES) {
        py_line *l;
        size_t j = i;
        int col = 0, backslash = 0, comment = 0;
        unsigned char q = 0;           /* an open single-quoted string */
        if (cnt == cap) {
            py_line *nlp;
            cap = cap ? cap * 2 : 256;
            nlp = (py_line *)realloc(L, cap * sizeof *L);
            if (!nlp) { free(L); return NULL; }
            L = nlp;
        }
        l = &L[cnt++];
        l->start = i;
        while (j < n && (t[j] == ' ' || t[j] == '\t' || t[j] == '\f')) { col = t[j] == '\t' ? (col / 8 + 1) * 8 : col + 1; j++; }
        l->indent = col;
        l->blank = !triple && !depth && (j >= n || t[j] == '\n' || t[j] == '\r' || t[j] == '#');
        l->code_end = j;
        while (j < n && t[j] != '\n') {
            unsigned char c = t[j];
            if (triple) {
                if (c == '\\' && j + 1 < n && t[j + 1] != '\n') j++;
                else if (c == triple && n - j > 2 && t[j + 1] == c && t[j + 2] == c) { triple = 0; j += 2; }
            } else if (q) {
                if (c == '\\' && j + 1 < n && t[j + 1] != '\n') j++;
                else if (c == q) q = 0;
            } else if (c == '#') {
                comment = 1;
                break;
            } else if (c == '"' || c == '\'') {
                if (n - j > 2 && t[j + 1] == c && t[j + 2] == c) { triple = c; j += 2; }
                else q = c;
            } else if (c == '(' || c == '[' || c == '{') depth++;
            else if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
            if (c != ' ' && c != '\t' && c != '\r' && c != '\f') l->code_end = j + 1;
            j++;
        }
        while (j < n && t[j] != '\n') j++;
        {
            size_t p = j;
            if (p > l->start && t[p - 1] == '\r') p--;
            backslash = !comment && p > l->start && t[p - 1] == '\\';
        }
        if (j < n) j++;                /* the '\n' */
        l->end = j;
        l->continues = triple || depth > 0 || backslash;
        i = j;
    }
    *nl = cnt;
    return L;
}

/* The text numba's IPython locator hashes: inspect.getsource(func), the function's lines from
 * its first decorator to the end of its block (inspect.getblock: up to the last logical line
 * before the first statement indented no deeper than the decorator), each ending in '\n'
 * (IPython keeps a cell in linecache as lines ending in '\n').  The first line is the one
 * whose pair with the next hashes (sha256, first 10 hex digits) to the disambiguator.
 * Returns 1 with the line range [*first, *last], 0 when no two lines hash to it. */
static int cell_function(const unsigned char *t, const py_line *L, size_t nl, const char *disamb,
                         size_t *first, size_t *last)
{
    size_t s;
    for (s = 0; s + 1 < nl; s++) {
        ki_sha h;
        unsigned char d[32];
        char hx[65];
        size_t e, k, def;
        int base;
        sha_init(&h, 1);
        for (k = s; k <= s + 1; k++) {
            sha_update(&h, t + L[k].start, L[k].end - L[k].start);
            if (L[k].end == L[k].start || t[L[k].end - 1] != '\n') sha_update(&h, "\n", 1);
        }
        sha_final(&h, d);
        hex_of(d, 32, hx);
        if (strncmp(hx, disamb, 10) != 0) continue;
        base = L[s].indent;
        def = s;
        for (;;) {                     /* decorators (each may span lines), then the def */
            size_t p = L[def].start;
            while (p < L[def].end && (t[p] == ' ' || t[p] == '\t')) p++;
            if (p >= L[def].end || t[p] != '@') break;
            while (def + 1 < nl && L[def].continues) def++;
            if (def + 1 >= nl) break;
            def++;
        }
        e = def;
        while (e + 1 < nl && L[e].continues) e++;
        /* a body on the def's own line ("def f(x): return x") ends the block there */
        if (L[e].code_end > L[e].start && t[L[e].code_end - 1] == ':') {
            size_t k2 = e + 1;
            while (k2 < nl) {
                if (L[k2].blank) { k2++; continue; }
                if (L[k2].indent <= base) break;
                e = k2;
                while (e + 1 < nl && L[e].continues) e++;
                k2 = e + 1;
            }
        }
        *first = s;
        *last = e;
        return 1;
    }
    return 0;
}

/* Calls fn for each "import" or "from" statement of a Python text, with the statement's text
 * (a logical line, its physical lines joined with blanks, comments dropped). */
typedef void (*py_stmt_fn)(void *user, char *stmt);

static void py_imports(const unsigned char *t, size_t n, py_stmt_fn fn, void *user)
{
    size_t nl, k = 0;
    py_line *L = py_lines(t, n, &nl);
    char stmt[4096];
    if (!L) return;
    while (k < nl) {
        size_t e = k, o = 0, j;
        while (e + 1 < nl && L[e].continues) e++;
        for (j = k; j <= e; j++) {
            size_t p = L[j].start, stop = L[j].continues ? L[j].end : L[j].code_end;
            while (p < stop && o + 1 < sizeof stmt) {
                unsigned char c = t[p++];
                stmt[o++] = c == '\n' || c == '\r' || c == '\t' || c == '\\' || c == '(' || c == ')' ? ' ' : (char)c;
            }
        }
        stmt[o] = 0;
        if (!L[k].blank) {
            char *s = stmt, *semi;
            for (;;) {                 /* statements joined with ';' */
                while (*s == ' ') s++;
                semi = strchr(s, ';');
                if (semi) *semi = 0;
                if (strncmp(s, "import ", 7) == 0 || strncmp(s, "from ", 5) == 0) fn(user, s);
                if (!semi) break;
                s = semi + 1;
            }
        }
        k = e + 1;
    }
    free(L);
}

/* ---------------------------------------------------------------------------------------- */
/* Where numba looks: its locators.                                                          */

enum { SRC_FILE, SRC_ZIP, SRC_CELL };

typedef struct nb_source {
    int kind;                 /* SRC_*: a .py file, a zip archive's member, a notebook cell's text */
    char path[4096];          /* the source file; SRC_ZIP: the archive */
    char member[1024];        /* SRC_ZIP: the member's path inside the archive */
    const char *how;          /* how it was found */
    char note[600];           /* about the cache layout, when worth saying */
    int found;                /* 1: path exists (SRC_ZIP: the archive does) */
    struct stat st;
    int reads;                /* 1 numba running this source looks up this index file, 0 never, -1 unknown */
    char reads_why[900];      /* why it never does */
    int line_checked;         /* 1 ok, 0 not checked, -1 the line does not start the function */
    char line_text[200];
    long moved_to;            /* the function's first line now, when it moved; else -1 */
    /* the locator numba picks for this source in the run's environment (nb_locate) */
    const char *locator;      /* its class name; NULL: not worked out */
    char locator_why[300];    /* what made numba pick it (or why it cannot be said) */
    char numba_index[4200];   /* the index file numba opens for this function */
    int locator_floor;        /* InTreeCacheLocatorFsAgnostic: the stamp is (floor(st_mtime), st_size) */
    int locator_raises;       /* numba raises picking a locator (no locator, an unknown class) */
} nb_source;

static void sha1_hex(const char *s, char out[41])
{
    ki_sha h;
    unsigned char d[20];
    sha_init(&h, 0);
    sha_update(&h, s, strlen(s));
    sha_final(&h, d);
    hex_of(d, 20, out);
}

/* The cache directory's layout, from its name: numba's in-tree __pycache__, or a
 * PARENTDIR_SHA1 subdirectory of NUMBA_CACHE_DIR or of the user-wide cache (numba's
 * get_suitable_cache_subpath: the sha1 of the source's directory, os.path.abspath, utf-8). */
enum { LAYOUT_OTHER, LAYOUT_PYCACHE, LAYOUT_HASH };

static int dir_layout(const char *dbase, char *parent, size_t pcap, char hash[41])
{
    size_t bl = strlen(dbase), k;
    int hexok = bl > 41 && dbase[bl - 41] == '_';
    if (strcmp(dbase, "__pycache__") == 0) return LAYOUT_PYCACHE;
    for (k = bl > 40 ? bl - 40 : 0; hexok && k < bl; k++) if (hexval(dbase[k]) < 0 || (dbase[k] >= 'A' && dbase[k] <= 'F')) hexok = 0;
    if (!hexok || bl - 41 >= pcap) return LAYOUT_OTHER;
    memcpy(parent, dbase, bl - 41);
    parent[bl - 41] = 0;
    memcpy(hash, dbase + bl - 40, 40);
    hash[40] = 0;
    return LAYOUT_HASH;
}

/* A path naming a zip archive's member, "DIR/lib.zip/pkg/mod.py" as numba's ZipCacheLocator
 * splits it: the first component ending in ".zip" is the archive (when it is a file). */
static int split_zip_path(const char *p, char *zip, size_t zcap, char *member, size_t mcap)
{
    const char *s = p;
    while ((s = strstr(s, ".zip/")) != NULL) {
        size_t zl = (size_t)(s - p) + 4;
        if (zl < zcap) {
            memcpy(zip, p, zl);
            zip[zl] = 0;
            if (is_file(zip, NULL) && s[5]) { ki_fmt(member, mcap, "%s", s + 5); return 1; }
        }
        s += 4;
    }
    return 0;
}

/* Sets src->reads: whether numba, running the source found, looks up this very index file. */
static void check_layout(const char *index_abs, const nb_name *nm, nb_source *src)
{
    char dir[4096], parent[1024], hash[41], py_file[8192], py_dir[8192], abs[8192], want[41];
    const char *modbase;
    int layout;
    path_dirname(index_abs, dir, sizeof dir);
    layout = dir_layout(path_base(dir), parent, sizeof parent, hash);
    src->reads = -1;
    /* a source that is not there (a moved or deleted tree) runs nowhere: nothing to say of it */
    if (src->kind == SRC_CELL || !src->path[0] || !src->found) return;
    /* numba's py_file: the source as imported; for a zip member, ARCHIVE/MEMBER */
    if (src->kind == SRC_ZIP) ki_fmt(py_file, sizeof py_file, "%s/%s", src->path, src->member);
    else ki_fmt(py_file, sizeof py_file, "%s", src->path);
    if (ki_abspath(py_file, abs, sizeof abs) != 0) return;
    path_dirname(abs, py_dir, sizeof py_dir);
    /* the index is named after the source file's base name */
    modbase = path_base(abs);
    if (nm->ok && !nm->notebook && !(strlen(modbase) == strlen(nm->module) + 3 && strncmp(modbase, nm->module, strlen(nm->module)) == 0 &&
                                      strcmp(modbase + strlen(nm->module), ".py") == 0)) {
        src->reads = 0;
        ki_fmt(src->reads_why, sizeof src->reads_why, "numba names %s's indexes after its file, %.200s, not %.200s.py",
               nm->func, modbase, nm->module);
        return;
    }
    if (layout == LAYOUT_PYCACHE) {
        char want_dir[8200];
        ki_fmt(want_dir, sizeof want_dir, "%s/__pycache__", py_dir);
        src->reads = strcmp(want_dir, dir) == 0;
        if (!src->reads)
            ki_fmt(src->reads_why, sizeof src->reads_why, "numba caches %.300s's functions in %.400s (or in NUMBA_CACHE_DIR), "
                   "not in this __pycache__", modbase, want_dir);
    } else if (layout == LAYOUT_HASH) {
        sha1_hex(py_dir, want);
        src->reads = strcmp(want, hash) == 0 && strcmp(path_base(py_dir), parent) == 0;
        if (!src->reads)
            ki_fmt(src->reads_why, sizeof src->reads_why, "this cache subdirectory was made for a source in another directory "
                   "(the tree was moved or copied): numba running %.400s looks in %.200s_%.12s..., never here",
                   abs, path_base(py_dir), want);
    }
}

/* The source is nm's module file in dir (its name when it is not there). */
static void source_in_dir(nb_source *src, nb_name *nm, const char *dir, const char *how)
{
    char file[4096];
    src->how = how;
    if (find_module_file(dir, nm, file, sizeof file)) {
        ki_fmt(src->path, sizeof src->path, "%s", file);
        src->found = is_file(file, &src->st);
    } else {
        ki_fmt(src->path, sizeof src->path, "%s/%s.py", dir, nm->module);
    }
}

/* Finds the source file numba would stamp, as its locators do: --source; a notebook cell's
 * index needs the cell's text (--source); the __pycache__ parent; for a PARENTDIR_SHA1
 * subdirectory (NUMBA_CACHE_DIR, the user-wide cache), which cannot be inverted, candidate
 * directories are tried: the index's ancestors and the current directory's, and a PARENTDIR
 * child of each, first for the directory whose sha1 matches, then by name alone (a tree that
 * was moved or copied: numba never reads it there).  A PARENTDIR ending in ".zip" is a zip
 * archive (numba 0.68's ZipCacheLocator, in the user-wide cache). */
static void locate_source(const char *index_abs, nb_name *nm, const ki_opts *op, nb_source *src)
{
    char dir[4096], cand[4096], file[4096], parent[1024], hash[41];
    int layout;
    memset(src, 0, sizeof *src);
    src->moved_to = -1;
    src->reads = -1;
    path_dirname(index_abs, dir, sizeof dir);
    layout = dir_layout(path_base(dir), parent, sizeof parent, hash);
    if (op->source) {
        char zip[4096], member[1024];
        src->how = "--source";
        if (nm->ok && nm->notebook) {
            src->kind = SRC_CELL;
            src->how = "--source (the notebook cell's text)";
        } else if (split_zip_path(op->source, zip, sizeof zip, member, sizeof member)) {
            src->kind = SRC_ZIP;
            ki_fmt(src->member, sizeof src->member, "%s", member);
            ki_fmt(src->path, sizeof src->path, "%s", zip);
            src->how = "--source (a zip archive's member)";
            src->found = is_file(zip, &src->st);
            return;
        }
        ki_fmt(src->path, sizeof src->path, "%s", op->source);
        src->found = is_file(op->source, &src->st);
        if (src->found && nm->ok && src->kind == SRC_FILE) {
            /* learn the module/qualname split from the file name given */
            const char *b = path_base(op->source);
            size_t bl = strlen(b);
            if (bl > 3 && strcmp(b + bl - 3, ".py") == 0 && strncmp(nm->fullname, b, bl - 3) == 0 &&
                (nm->fullname[bl - 3] == '.' || nm->fullname[bl - 3] == 0) && bl - 3 < sizeof nm->module)
                nb_split_module(nm, bl - 3);
        }
        return;
    }
    if (!nm->ok) { src->how = "none: the index file name is not numba's FUNC-LINE.pyXY.nbi"; return; }
    if (nm->notebook) {
        src->kind = SRC_CELL;
        src->how = "none: a notebook cell's index (IPython's locator, stamped with the sha256 of the function's text): "
                   "pass --source FILE holding the cell's text";
        return;
    }
    if (layout == LAYOUT_PYCACHE) {
        path_dirname(dir, cand, sizeof cand);
        source_in_dir(src, nm, cand, "__pycache__ parent (numba's in-tree cache)");
        return;
    }
    if (layout != LAYOUT_HASH) {
        src->how = "none: the index is neither in a __pycache__ nor in a NUMBA_CACHE_DIR subdirectory (pass --source)";
        return;
    }
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
                    int c;
                    path_dirname(cur, up, sizeof up);
                    if (strcmp(up, cur) == 0) break;
                    ki_fmt(cur, sizeof cur, "%s", up);
                    for (c = 0; c < 2; c++) {   /* cur itself, then cur/PARENTDIR */
                        char abs[4096], want[41];
                        if (c == 0) {
                            if (strcmp(path_base(cur), parent) != 0 && !(parent[0] == 0 && strcmp(cur, "/") == 0)) continue;
                            ki_fmt(cand, sizeof cand, "%s", cur);
                        } else {
                            if (!parent[0]) continue;
                            if ((size_t)ki_fmt(cand, sizeof cand, "%s/%s", strcmp(cur, "/") ? cur : "", parent) >= sizeof cand) continue;
                        }
                        if (ki_abspath(cand, abs, sizeof abs) != 0) continue;
                        if (ends_with(abs, ".zip") && is_file(abs, NULL)) {
                            /* a zip archive's top-level member */
                            sha1_hex(abs, want);
                            if (pass == 0 && strcmp(want, hash) == 0) {
                                src->kind = SRC_ZIP;
                                ki_fmt(src->path, sizeof src->path, "%s", abs);
                                ki_fmt(src->member, sizeof src->member, "%s.py", nm->module);
                                src->found = is_file(abs, &src->st);
                                src->how = "the user-wide cache's layout for a zip archive: the directory hash matches "
                                           "(the member is taken as MODULE.py at the top; --source ARCHIVE.zip/MEMBER says otherwise)";
                                return;
                            }
                            continue;
                        }
                        if (!is_dir(abs)) continue;
                        if (pass == 0) {
                            sha1_hex(abs, want);
                            if (strcmp(want, hash) != 0) continue;
                            source_in_dir(src, nm, abs, "NUMBA_CACHE_DIR layout: the directory hash matches");
                            return;
                        }
                        if (!have_name && find_module_file(abs, nm, file, sizeof file)) {
                            have_name = 1;
                            ki_fmt(by_name, sizeof by_name, "%s", file);
                        }
                    }
                    if (strcmp(cur, "/") == 0) break;
                }
            }
        }
        if (have_name) {
            ki_fmt(src->path, sizeof src->path, "%s", by_name);
            src->found = is_file(by_name, &src->st);
            src->how = "NUMBA_CACHE_DIR layout, by directory name (the directory hash does not match)";
            return;
        }
        src->how = "none: NUMBA_CACHE_DIR layout (PARENTDIR_SHA1-OF-SOURCE-DIR) and no candidate directory matches (pass --source)";
        ki_fmt(src->path, sizeof src->path, "%s/%s.py", parent[0] ? parent : "", nm->module);
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
    if (!src->found || src->kind != SRC_FILE || nm->line <= 0 || !fl) return;
    f = fopen_regular(src->path, "r");
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

/* Reads a whole regular file of at most max bytes, open as fd (taken), into a malloc'd buffer;
   NULL on failure.  Anything else (a FIFO, a device) is not read: it could block forever. */
static unsigned char *slurp_fd(int fd, size_t max, size_t *len)
{
    struct stat sb;
    FILE *f;
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0, got;
    if (fd < 0) return NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || !(f = fdopen(fd, "rb"))) { close(fd); return NULL; }
    for (;;) {
        if (n == cap) {
            unsigned char *nb;
            if (cap >= max) { fclose(f); free(buf); return NULL; }
            cap = cap ? cap * 2 : 16384;
            if (cap > max) cap = max;
            nb = (unsigned char *)realloc(buf, cap + 1);
            if (!nb) { fclose(f); free(buf); return NULL; }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) { fclose(f); free(buf); return NULL; }
    fclose(f);
    if (!buf) buf = (unsigned char *)malloc(1);
    *len = n;
    return buf;
}
/* The same by path (opened without blocking on a FIFO), and by name in a directory (no link). */
static unsigned char *slurp(const char *path, size_t max, size_t *len)
{
    return slurp_fd(open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), max, len);
}
static unsigned char *slurp_at(int dfd, const char *name, size_t max, size_t *len)
{
    return slurp_fd(openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW), max, len);
}

static int sha256_file(const char *path, unsigned char out[32])
{
    FILE *f = fopen_regular(path, "rb");
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
static int ts_after(const struct stat *a, const struct stat *b)
{
    return a->st_mtim.tv_sec > b->st_mtim.tv_sec || (a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec > b->st_mtim.tv_nsec);
}

/* ---------------------------------------------------------------------------------------- */
/* Imported modules: numba stamps only the function's own file, so code compiled against a   */
/* module it imports is reused after that module changes.  The modules a source imports that  */
/* resolve to files (beside it, in the package root above it, under --path, PYTHONPATH and   */
/* the running Python's site directories), and theirs in turn, are the dependencies; one      */
/* changed after the index was written is warned about.  A module found in a site directory   */
/* (an installed library) is one too: numba no more notices an upgrade of a library whose     */
/* jitted functions or constants it compiled in than an edit beside the source.  Its own      */
/* imports are not followed (an install rewrites the library's files together, so the file    */
/* imported shows the change, and numpy's hundreds of files stay out); a directory a .pth     */
/* file there names (an editable install: the user's own tree) is followed as PYTHONPATH is.  */
/* The standard library is no dependency (numba implements what it supports of it itself,     */
/* and the index's pyXY tag ties it to one Python), but a module found there is not looked    */
/* for further, as Python's own search stops there.                                          */

#define KI_MAX_DEPS 256

typedef struct nb_dep {
    char path[4096];
    struct stat st;
    int stale;                /* changed after the index was written */
    int level;                /* 1: imported by the source itself */
    int in_site;              /* found in a site directory: its imports are not followed */
} nb_dep;

typedef struct nb_deps {
    nb_dep *d;
    size_t n;
    size_t nstale;
    const char *roots[64];    /* where absolute imports resolve, in sys.path's order */
    unsigned char root_kind[64];  /* KI_ROOT_*: what a module found under the root is */
    size_t nroots;
    char rootbuf[2][4096];
    char pythonpath[4096];    /* the run's PYTHONPATH, split at ':' into roots */
    char sitebuf[16384];      /* the site and standard library directories, and .pth lines */
    size_t siteused;
    const char *from_dir;     /* the importing file's directory (relative imports) */
    int level;
    int add_kind;             /* the root kind deps_add files what it finds under */
} nb_deps;

enum { KI_ROOT_FOLLOW, KI_ROOT_SITE, KI_ROOT_STDLIB };

static void deps_add(nb_deps *D, const char *path)
{
    char abs[4096];
    size_t k;
    struct stat st;
    if (D->add_kind == KI_ROOT_STDLIB) return;
    if (D->n >= KI_MAX_DEPS || ki_abspath(path, abs, sizeof abs) != 0 || !is_file(abs, &st)) return;
    for (k = 0; k < D->n; k++) if (strcmp(D->d[k].path, abs) == 0) return;
    ki_fmt(D->d[D->n].path, sizeof D->d[D->n].path, "%s", abs);
    D->d[D->n].st = st;
    D->d[D->n].stale = 0;
    D->d[D->n].level = D->level;
    D->d[D->n].in_site = D->add_kind == KI_ROOT_SITE;
    D->n++;
}

/* Resolves dotted module name mod (its length n) under dir: every package's __init__.py on the
 * way and the module itself (mod.py or mod/__init__.py); with sub, also dir/mod/sub.py (a
 * submodule imported by "from mod import sub").  Returns 1 when the module resolved. */
static int deps_resolve(nb_deps *D, const char *dir, const char *mod, size_t n, const char *sub, size_t subn)
{
    char p[4096];
    size_t i, o;
    int ok = 0;
    if ((o = (size_t)ki_fmt(p, sizeof p, "%s", dir)) >= sizeof p - 2) return 0;
    for (i = 0; i <= n; i++) {
        if (i < n && mod[i] != '.') {
            if (o + 2 >= sizeof p) return 0;
            if (i == 0 || mod[i - 1] == '.') p[o++] = '/';
            p[o++] = mod[i];
            continue;
        }
        p[o] = 0;
        if (i < n) {                   /* a package on the way */
            char q[4200];
            ki_fmt(q, sizeof q, "%s/__init__.py", p);
            if (!is_file(q, NULL)) return 0;
            deps_add(D, q);
            continue;
        }
        {
            char q[4200];
            ki_fmt(q, sizeof q, "%s.py", p);
            if (n && is_file(q, NULL)) { deps_add(D, q); ok = 1; }
            ki_fmt(q, sizeof q, "%s/__init__.py", p);
            if (is_file(q, NULL)) {
                deps_add(D, q);
                ok = 1;
                if (sub && subn && subn < 512) {
                    ki_fmt(q, sizeof q, "%s/%.*s.py", p, (int)subn, sub);
                    deps_add(D, q);
                    ki_fmt(q, sizeof q, "%s/%.*s/__init__.py", p, (int)subn, sub);
                    deps_add(D, q);
                }
            }
            if (!n && sub && subn && subn < 512) {   /* "from . import sub" */
                ki_fmt(q, sizeof q, "%s/%.*s.py", p, (int)subn, sub);
                if (is_file(q, NULL)) { deps_add(D, q); ok = 1; }
                ki_fmt(q, sizeof q, "%s/%.*s/__init__.py", p, (int)subn, sub);
                if (is_file(q, NULL)) { deps_add(D, q); ok = 1; }
            }
        }
    }
    return ok;
}

static int is_ident(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || (unsigned char)c >= 0x80; }

/* One "import a.b as c, d" or "from [.]*mod import x, y" statement. */
static void deps_stmt(void *user, char *s)
{
    nb_deps *D = (nb_deps *)user;
    size_t r;
    if (strncmp(s, "import ", 7) == 0) {
        char *p = s + 7;
        for (;;) {
            char *m;
            size_t n;
            while (*p == ' ') p++;
            m = p;
            while (is_ident(*p) || *p == '.') p++;
            n = (size_t)(p - m);
            if (n) for (r = 0; r < D->nroots; r++) { D->add_kind = D->root_kind[r]; if (deps_resolve(D, D->roots[r], m, n, NULL, 0)) break; }
            D->add_kind = KI_ROOT_FOLLOW;
            p = strchr(p, ',');
            if (!p) break;
            p++;
        }
    } else {
        char *p = s + 5, *m, *names, base[4096];
        size_t n, dots = 0;
        while (*p == ' ') p++;
        while (*p == '.') { dots++; p++; }
        m = p;
        while (is_ident(*p) || *p == '.') p++;
        n = (size_t)(p - m);
        names = strstr(p, " import ");
        if (!names) return;
        names += 8;
        for (;;) {   /* each imported name may be a submodule */
            char *x;
            size_t xn;
            while (*names == ' ' || *names == ',') names++;
            if (!*names) break;
            x = names;                 /* a name, or "*": the module alone */
            while (is_ident(*names)) names++;
            xn = (size_t)(names - x);
            if (dots) {
                size_t k;
                ki_fmt(base, sizeof base, "%s", D->from_dir);
                for (k = 1; k < dots; k++) { char up[4096]; path_dirname(base, up, sizeof up); ki_fmt(base, sizeof base, "%s", up); }
                deps_resolve(D, base, m, n, xn ? x : NULL, xn);
            } else if (n) {
                for (r = 0; r < D->nroots; r++) {
                    D->add_kind = D->root_kind[r];
                    if (deps_resolve(D, D->roots[r], m, n, xn ? x : NULL, xn)) break;
                }
                D->add_kind = KI_ROOT_FOLLOW;
            }
            while (*names && *names != ',') names++;
            if (!*names) break;
        }
    }
}

/* Where the Python numba runs on finds installed modules, asked of it without running anything
 * installed there (-I -S: no .pth file's code, no PYTHON* variables), a venv's pyvenv.cfg read
 * as site.py reads it: "stdlib\tDIR" and "site\tDIR" lines in sys.path's order (a venv's own
 * site directory, the user's unless disabled, the base Python's when the venv includes it). */
#define NB_SITE_PY \
    "import os, site, sys, sysconfig\n" \
    "out = [('stdlib', sysconfig.get_path('stdlib')), ('stdlib', sysconfig.get_path('platstdlib'))]\n" \
    "exe_dir = os.path.dirname(os.path.abspath(sys.executable))\n" \
    "user = not os.environ.get('PYTHONNOUSERSITE') and site.check_enableusersite() is not False\n" \
    "venv, system = None, 'true'\n" \
    "for c in (os.path.join(exe_dir, 'pyvenv.cfg'), os.path.join(os.path.dirname(exe_dir), 'pyvenv.cfg')):\n" \
    "    if os.path.isfile(c):\n" \
    "        venv, system = os.path.dirname(exe_dir), 'false'\n" \
    "        for ln in open(c, encoding='utf-8', errors='replace'):\n" \
    "            k, eq, v = ln.partition('=')\n" \
    "            if eq and k.strip().lower() == 'include-system-site-packages': system = v.strip().lower()\n" \
    "        break\n" \
    "if venv: sys.prefix = sys.exec_prefix = venv  # as site.venv() sets them (Debian's site dirs follow)\n" \
    "if venv: out += [('site', p) for p in site.getsitepackages([venv])]\n" \
    "if user and system == 'true': out.append(('site', site.getusersitepackages()))\n" \
    "if system == 'true': out += [('site', p) for p in site.getsitepackages([sys.base_prefix, sys.base_exec_prefix])]\n" \
    "seen = set()\n" \
    "for k, p in out:\n" \
    "    if p and p not in seen and '\\n' not in p: seen.add(p); print(k + '\\t' + p)\n"
static const char nb_site_py[] = NB_SITE_PY;

/* The answer of python exe to nb_site_py, remembered for the next index (a directory of them
 * asks once); "" when it cannot be asked. */
static char nb_site_asked[512], nb_site_answer[8192];
static int nb_site_have;

/* Remembers what python exe said to nb_site_py (the bytecode check asks it in its own run). */
static void nb_python_site_set(const char *exe, const char *answer)
{
    nb_site_have = 1;
    ki_fmt(nb_site_asked, sizeof nb_site_asked, "%s", exe);
    ki_fmt(nb_site_answer, sizeof nb_site_answer, "%s", answer);
}

static const char *nb_python_site(const char *exe)
{
    char *answer = nb_site_answer;
    int pfd[2], status = 0;
    size_t n = 0;
    pid_t pid;
    if (nb_site_have && strcmp(nb_site_asked, exe) == 0) return answer;
    nb_site_have = 1;
    ki_fmt(nb_site_asked, sizeof nb_site_asked, "%s", exe);
    answer[0] = 0;
    if (pipe(pfd) != 0) return answer;
    fflush(stdout);
    pid = fork();
    if (pid < 0) { close(pfd[0]); close(pfd[1]); return answer; }
    if (pid == 0) {
        int dn = open("/dev/null", O_RDWR);
        dup2(pfd[1], 1);
        if (dn >= 0) { dup2(dn, 0); dup2(dn, 2); }
        close(pfd[0]);
        alarm(30);
        execlp(exe, exe, "-I", "-S", "-c", nb_site_py, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    for (;;) {
        ssize_t got = read(pfd[0], answer + n, sizeof nb_site_answer - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
        if (n == sizeof nb_site_answer - 1) break;
    }
    answer[n] = 0;
    close(pfd[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) answer[0] = 0;
    return answer;
}

/* Keeps a copy of s (n bytes) in D's site buffer and adds it as a root of that kind. */
static void deps_root(nb_deps *D, const char *s, size_t n, int kind)
{
    char *p = D->sitebuf + D->siteused;
    if (D->nroots >= sizeof D->roots / sizeof D->roots[0] || n == 0 || D->siteused + n + 1 > sizeof D->sitebuf) return;
    memcpy(p, s, n);
    p[n] = 0;
    D->siteused += n + 1;
    D->root_kind[D->nroots] = (unsigned char)kind;
    D->roots[D->nroots++] = p;
}

static int pth_name(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return e->d_name[0] != '.' && n > 4 && strcmp(e->d_name + n - 4, ".pth") == 0;
}

/* The site directories of python exe as roots, each followed by the directories its .pth files
 * name (sorted by file name, as site.py reads them; an "import" line is code, never run). */
static void deps_site_roots(nb_deps *D, const char *exe)
{
    const char *a = nb_python_site(exe), *nl;
    for (; *a; a = nl + 1) {
        const char *tab = strchr(a, '\t');
        int kind;
        nl = strchr(a, '\n');
        if (!nl || !tab || tab > nl) break;
        kind = strncmp(a, "stdlib\t", 7) == 0 ? KI_ROOT_STDLIB : KI_ROOT_SITE;
        {
            char dir[4096];
            struct dirent **names = NULL;
            int k, cnt;
            ki_fmt(dir, sizeof dir, "%.*s", (int)(nl - tab - 1), tab + 1);
            if (!is_dir(dir)) continue;
            deps_root(D, dir, strlen(dir), kind);
            if (kind != KI_ROOT_SITE || (cnt = scandir(dir, &names, pth_name, alphasort)) < 0) continue;
            for (k = 0; k < cnt; k++) {
                char pth[4400];
                size_t len, i = 0;
                unsigned char *text;
                ki_fmt(pth, sizeof pth, "%s/%s", dir, names[k]->d_name);
                free(names[k]);
                if (!(text = slurp(pth, 1u << 20, &len))) continue;
                while (i < len) {
                    size_t j = i, e;
                    char line[4096], full[8200];
                    while (j < len && text[j] != '\n') j++;
                    e = j;
                    while (e > i && (text[e - 1] == '\r' || text[e - 1] == ' ' || text[e - 1] == '\t')) e--;
                    if (e > i && text[i] != '#' && !(e - i > 7 && memcmp(text + i, "import", 6) == 0 && (text[i + 6] == ' ' || text[i + 6] == '\t')) &&
                        e - i < sizeof line && !memchr(text + i, 0, e - i)) {
                        memcpy(line, text + i, e - i);
                        line[e - i] = 0;
                        if (line[0] == '/') ki_fmt(full, sizeof full, "%s", line);
                        else ki_fmt(full, sizeof full, "%s/%s", dir, line);
                        if (is_dir(full)) deps_root(D, full, strlen(full), KI_ROOT_FOLLOW);
                    }
                    i = j + 1;
                }
                free(text);
            }
            free(names);
        }
    }
}

/* The dependencies of source file src (its imports, transitively), and which changed after
 * the index (its stat in ix_st) was written; python (NULL: none known) is the interpreter
 * whose site directories are searched too. */
static void deps_scan(const char *src, const struct stat *ix_st, const ki_opts *op, const char *python, nb_deps *D)
{
    size_t done = 0, k;
    char dir[4096], top[4096];
    memset(D, 0, sizeof *D);
    D->d = (nb_dep *)calloc(KI_MAX_DEPS, sizeof *D->d);
    if (!D->d) return;
    path_dirname(src, dir, sizeof dir);
    /* roots: the source's directory (a script's sys.path[0]), the directory above its top
       package (where "import pkg.mod" resolves), the current directory, then --path */
    ki_fmt(D->rootbuf[0], sizeof D->rootbuf[0], "%s", dir);
    D->roots[D->nroots++] = D->rootbuf[0];
    ki_fmt(top, sizeof top, "%s", dir);
    for (;;) {
        char init[4200], up[4096];
        ki_fmt(init, sizeof init, "%s/__init__.py", top);
        if (!is_file(init, NULL)) break;
        path_dirname(top, up, sizeof up);
        if (strcmp(up, top) == 0) break;
        ki_fmt(top, sizeof top, "%s", up);
    }
    if (strcmp(top, dir) != 0) {
        ki_fmt(D->rootbuf[1], sizeof D->rootbuf[1], "%s", top);
        D->roots[D->nroots++] = D->rootbuf[1];
    }
    /* the current directory: sys.path[0] for python -m and -c, and for a script run from it
       (the tool runs where the run does) */
    {
        char cwd[4096];
        if (getcwd(cwd, sizeof cwd)) deps_root(D, cwd, strlen(cwd), KI_ROOT_FOLLOW);
    }
    for (k = 0; k < (size_t)op->npaths && D->nroots < sizeof D->roots / sizeof D->roots[0]; k++) D->roots[D->nroots++] = op->paths[k];
    /* the run's PYTHONPATH: numba's process imports through it as well */
    {
        const char *pp = getenv("PYTHONPATH");
        char *t, *save = NULL;
        ki_fmt(D->pythonpath, sizeof D->pythonpath, "%s", pp ? pp : "");
        for (t = strtok_r(D->pythonpath, ":", &save); t && D->nroots < sizeof D->roots / sizeof D->roots[0]; t = strtok_r(NULL, ":", &save))
            if (*t) D->roots[D->nroots++] = t;
    }
    /* then the standard library and the site directories, as the run's Python has them */
    if (python) deps_site_roots(D, python);
    /* the source first (it is the stamped file itself: not a dependency), then each found file */
    {
        char abs[4096];
        if (ki_abspath(src, abs, sizeof abs) != 0) return;
        ki_fmt(D->d[0].path, sizeof D->d[0].path, "%s", abs);
        if (!is_file(abs, &D->d[0].st)) return;
        D->n = 1;
    }
    while (done < D->n) {
        size_t len;
        unsigned char *text = D->d[done].in_site ? NULL : slurp(D->d[done].path, 4u << 20, &len);
        char fdir[4096];
        if (text) {
            path_dirname(D->d[done].path, fdir, sizeof fdir);
            D->from_dir = fdir;
            D->level = D->d[done].level + 1;
            py_imports(text, len, deps_stmt, D);
            free(text);
        }
        done++;
    }
    for (k = 1; k < D->n; k++) {
        D->d[k].stale = ts_after(&D->d[k].st, ix_st);
        D->nstale += (size_t)D->d[k].stale;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Assessment: what numba will do.                                                           */

typedef struct nb_report {
    char index_abs[4096];
    struct stat ix_st;         /* the index file's own stat: when it was written */
    int have_ix_st;
    nb_name name;
    nb_source src;
    ki_host host;
    int stamp_state;           /* 1 match, 0 mismatch, -1 cannot check */
    char stamp_why[600];       /* why it cannot be checked, or what differs */
    double src_mtime;
    long long src_size;
    int have_src_digest;
    unsigned char src_digest[32];
    char cell_hex[65];         /* SRC_CELL: the sha256 hex of the function's text now */
    long cell_first, cell_last;  /* SRC_CELL: the function's lines in the cell (1-based) */
    int version_state;         /* 1 equal, 0 differs, -1 not given */
    const char *verdict_code;
    char verdict[1400];
    size_t n_match, n_usable, n_unknown, n_missing, n_bad;
    size_t n_sigs, n_sigs_covered;
    nb_deps deps;              /* imported modules; deps.nstale of them changed after the index */
    int deps_checked;
    /* the function's bytecode now, compiled by a Python of the index's version (nb_bytecode) */
    int code_checked;          /* 1: code_hex is the sha256 of its co_code now */
    char code_hex[65];
    int code_freevars;         /* it is a closure: its cells' hash cannot be known without running it */
    char code_why[400];        /* why the bytecode was not checked */
    char python[300];          /* the Python that compiled it */
    size_t n_code_match;       /* overloads whose bytecode hash is the function's now */
} nb_report;

static void nb_report_free(nb_report *R) { free(R->deps.d); R->deps.d = NULL; }

/* Whether a .nbc data file unpickles as numba's _load_data needs: pickle.loads raises on a
 * truncated or damaged one (UnpicklingError, EOFError), out of the user's call; only a missing
 * one (OSError) makes numba recompile.  0 ok, -1 with the reason in err. */
static int nbc_check(const char *path, char *err, size_t cap)
{
    size_t len = 0, end = 0;
    unsigned char *buf = slurp(path, KI_MAX_FILE, &len);
    ki_arena a;
    pk_parser P;
    pk_node *v = NULL;
    int rc = 0;
    if (!buf) { ki_fmt(err, cap, "cannot be read"); return -1; }
    if (len == 0) { free(buf); ki_fmt(err, cap, "empty (pickle.loads raises EOFError)"); return -1; }
    memset(&a, 0, sizeof a);
    a.limit = KI_MAX_MEM;
    pk_parser_init(&P, &a);
    if (pk_load(&P, buf, len, 0, &end, &v) != 0) {
        ki_fmt(err, cap, "does not unpickle (%s)", P.err);
        rc = -1;
    }
    pk_parser_free(&P);
    ka_free(&a);
    free(buf);
    return rc;
}

/* Whether numba computes an (int, int) stamp: its locator, when known, says; else the index's own form. */
static int nb_floor_stamp(const nb_index *ix, const nb_source *src)
{
    if (src->locator && src->kind == SRC_FILE && strcmp(src->locator, "unknown") != 0 && strcmp(src->locator, "none") != 0)
        return src->locator_floor;
    return ix->stamp_kind == ST_FLOOR_SIZE;
}

/* The stamp numba computes now, compared with the index's. */
static void check_stamp(nb_index *ix, nb_report *R)
{
    nb_source *src = &R->src;
    R->stamp_state = -1;
    if (src->kind == SRC_CELL) {
        size_t len = 0, nl = 0, first, last, k;
        unsigned char *text;
        py_line *L;
        if (!src->found) { ki_fmt(R->stamp_why, sizeof R->stamp_why, "%s", src->path[0] ? "the cell's text file does not exist" : "the cell's text is needed (--source FILE)"); return; }
        if (ix->stamp_kind != ST_HEXHASH) { ki_fmt(R->stamp_why, sizeof R->stamp_why, "a notebook index should hold a sha256 hex stamp: not checkable"); return; }
        text = slurp(src->path, KI_MAX_FILE, &len);
        if (!text) { ki_fmt(R->stamp_why, sizeof R->stamp_why, "cannot read the cell's text"); return; }
        L = py_lines(text, len, &nl);
        if (L && cell_function(text, L, nl, R->name.disamb, &first, &last)) {
            ki_sha h;
            unsigned char d[32];
            sha_init(&h, 1);
            for (k = first; k <= last; k++) {
                sha_update(&h, text + L[k].start, L[k].end - L[k].start);
                if (L[k].end == L[k].start || text[L[k].end - 1] != '\n') sha_update(&h, "\n", 1);
            }
            sha_final(&h, d);
            hex_of(d, 32, R->cell_hex);
            R->cell_first = (long)first + 1;
            R->cell_last = (long)last + 1;
            R->stamp_state = ix->stamp->n == 64 && memcmp(R->cell_hex, ix->stamp->s, 64) == 0;
            if (!R->stamp_state)
                ki_fmt(R->stamp_why, sizeof R->stamp_why, "%s's text (cell lines %ld-%ld) differs (sha256 %.16s... now)",
                       R->name.func, R->cell_first, R->cell_last, R->cell_hex);
        } else if (L) {
            /* no two lines hash to the disambiguator: numba files this function under another name */
            src->reads = 0;
            ki_fmt(src->reads_why, sizeof src->reads_why, "no two lines of the cell hash to the disambiguator %s: %s's first "
                   "two lines changed (or it is not in this cell), so numba files it under another index name",
                   R->name.disamb, R->name.func);
            ki_fmt(R->stamp_why, sizeof R->stamp_why, "%s's first two lines are not in the cell", R->name.func);
        }
        free(L);
        free(text);
        return;
    }
    if (!src->found) {
        ki_fmt(R->stamp_why, sizeof R->stamp_why, "source not found (pass --source FILE)");
        return;
    }
    R->src_mtime = py_st_mtime(&src->st);
    R->src_size = (long long)src->st.st_size;
    switch (ix->stamp_kind) {
    case ST_MTIME_SIZE:
    case ST_FLOOR_SIZE: {
        /* the stamp numba computes is its locator's: floor(st_mtime) for the fs-agnostic in-tree one,
           the float otherwise (Python compares an int and a float by value); a zip member's is
           the archive's own (st_mtime, st_size) (numba 0.61-0.67's ZipCacheLocator) */
        double want = nb_floor_stamp(ix, src) ? py_floor(R->src_mtime) : R->src_mtime;
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
    case ST_SHA256: {
        int ok;
        if (src->kind == SRC_ZIP) {
            char err[600];
            size_t len = 0;
            unsigned char *m = zip_member(src->path, src->member, &len, err, sizeof err);
            ki_sha h;
            if (!m) { ki_fmt(R->stamp_why, sizeof R->stamp_why, "%s", err); return; }
            sha_init(&h, 1);
            sha_update(&h, m, len);
            sha_final(&h, R->src_digest);
            R->src_size = (long long)len;
            free(m);
            ok = 0;
        } else ok = sha256_file(src->path, R->src_digest);
        if (ok == 0) {
            R->have_src_digest = 1;
            R->stamp_state = memcmp(R->src_digest, ix->stamp->s, 32) == 0;
            if (!R->stamp_state) {
                char a[65];
                hex_of(R->src_digest, 32, a);
                ki_fmt(R->stamp_why, sizeof R->stamp_why, "content differs (sha256 %.16s... now)", a);
            }
        } else {
            ki_fmt(R->stamp_why, sizeof R->stamp_why, "cannot read the source to hash it");
        }
        break;
    }
    case ST_HEXHASH:
        ki_fmt(R->stamp_why, sizeof R->stamp_why, "the stamp hashes a notebook cell's function (IPython's locator): "
               "pass --source FILE holding the cell's text");
        break;
    default:
        ki_fmt(R->stamp_why, sizeof R->stamp_why, "unrecognized stamp form: not checkable");
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Which index numba opens: its locators, tried in order, in the run's environment.         */

/* Whether numba's ensure_cache_path (os.makedirs(path, exist_ok=True), then a temporary file
 * in it) succeeds for dir, as the user running the tool: the deepest part of dir that exists
 * must be a directory this user may write to. */
static int nb_dir_ensurable(const char *dir)
{
    char cur[4096], up[4096];
    struct stat st;
    if (ki_abspath(dir, cur, sizeof cur) != 0) return 0;
    for (;;) {
        if (stat(cur, &st) == 0) return S_ISDIR(st.st_mode) && access(cur, W_OK | X_OK) == 0;
        if (errno != ENOENT) return 0;
        path_dirname(cur, up, sizeof up);
        if (strcmp(up, cur) == 0) return 0;
        ki_fmt(cur, sizeof cur, "%s", up);
    }
}

/* numba's user-wide cache directory (appdirs' user_cache_dir on Linux): $XDG_CACHE_HOME/numba,
 * else ~/.cache/numba. */
static void nb_user_cache_dir(char *out, size_t cap)
{
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (x) ki_fmt(out, cap, "%s/numba", x);
    else ki_fmt(out, cap, "%s/.cache/numba", home && *home ? home : "");
}

/* The locator numba picks for src's function, as CacheImpl.__init__ does: each class's
 * from_function in turn, the first that returns one wins.  NUMBA_CACHE_DIR (or --cache-dir)
 * selects _UserProvidedCacheLocator; the in-tree __pycache__ needs to be creatable and
 * writable; the user-wide cache (and, from numba 0.61 on, a zip archive's member, whose
 * locator checks nothing) lies under $XDG_CACHE_HOME/numba.  numba 0.62+ reads the list from
 * NUMBA_CACHE_LOCATOR_CLASSES when it is set (or --locator-classes): an unknown bare name
 * raises, a dotted name of another module is a class the tool cannot know.  Sets
 * src->numba_index to the index file numba opens, and src->reads to whether it is this one. */
static void nb_locate(const char *index_abs, const nb_name *nm, const nb_index *ix, const ki_opts *op, nb_source *src)
{
    static const char *const deflt[] = {"UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator",
                                        "IPythonCacheLocator", "ZipCacheLocator"};
    const char *ncd = op->cache_dir ? op->cache_dir : getenv("NUMBA_CACHE_DIR");
    const char *ncd_from = op->cache_dir ? "--cache-dir" : "NUMBA_CACHE_DIR";
    const char *classes = NULL, *classes_from = NULL;
    char py_file[8192], abs[8192], py_dir[8192], sub[8192], dir[8192], ucd[4096], list[1024], ixdir[4096];
    const char *names[32], *ver = op->numba_version;
    size_t nnames = 0, k, vn;
    int minor, exists;
    char *save = NULL, *t;
    if (src->kind == SRC_CELL || !src->found || !nm->ok || nm->notebook || src->reads == 0) return;
    vn = ver ? strlen(ver) : ix->version->n;
    minor = numba_minor(ver ? ver : (const char *)ix->version->s, vn);
    if (src->kind == SRC_ZIP) ki_fmt(py_file, sizeof py_file, "%s/%s", src->path, src->member);
    else ki_fmt(py_file, sizeof py_file, "%s", src->path);
    if (ki_abspath(py_file, abs, sizeof abs) != 0) return;
    path_dirname(abs, py_dir, sizeof py_dir);
    /* get_suitable_cache_subpath: the source directory's name, '_', the sha1 of its path */
    {
        char h[41];
        sha1_hex(py_dir, h);
        ki_fmt(sub, sizeof sub, "%s_%s", path_base(py_dir), h);
    }
    exists = src->kind == SRC_FILE;   /* os.path.exists(py_file): a zip member's path is not a file */
    nb_user_cache_dir(ucd, sizeof ucd);
    if (minor >= 62) {
        classes = op->locator_classes ? op->locator_classes : getenv("NUMBA_CACHE_LOCATOR_CLASSES");
        classes_from = op->locator_classes ? "--locator-classes" : "NUMBA_CACHE_LOCATOR_CLASSES";
        if (classes && !*classes) classes = NULL;
    }
    if (classes) {
        ki_fmt(list, sizeof list, "%s", classes);
        for (t = strtok_r(list, ",", &save); t && nnames < sizeof names / sizeof names[0]; t = strtok_r(NULL, ",", &save)) {
            size_t l;
            while (*t == ' ' || *t == '\t') t++;
            l = strlen(t);
            while (l && (t[l - 1] == ' ' || t[l - 1] == '\t')) t[--l] = 0;
            if (strncmp(t, "numba.core.caching.", 19) == 0) t += 19;
            names[nnames++] = t;
        }
    } else {
        for (k = 0; k < sizeof deflt / sizeof deflt[0]; k++) names[nnames++] = deflt[k];
    }
    dir[0] = 0;
    for (k = 0; k < nnames && !dir[0]; k++) {
        const char *c = names[k];
        if (c[0] == '_') c++;   /* numba < 0.62 names them _UserProvidedCacheLocator, ... */
        if (strcmp(c, "UserProvidedCacheLocator") == 0) {
            char d[8192];
            if (!ncd || !*ncd || !exists) continue;
            ki_fmt(d, sizeof d, "%s/%s", ncd, sub);
            if (!nb_dir_ensurable(d)) continue;
            ki_fmt(dir, sizeof dir, "%s", d);
            src->locator = "UserProvidedCacheLocator";
            ki_fmt(src->locator_why, sizeof src->locator_why, "%s is %.200s", ncd_from, ncd);
        } else if (strcmp(c, "InTreeCacheLocator") == 0 || strcmp(c, "InTreeCacheLocatorFsAgnostic") == 0) {
            char d[8192];
            if (!exists) continue;
            ki_fmt(d, sizeof d, "%s/__pycache__", py_dir);
            if (!nb_dir_ensurable(d)) continue;
            ki_fmt(dir, sizeof dir, "%s", d);
            src->locator = c[18] ? "InTreeCacheLocatorFsAgnostic" : "InTreeCacheLocator";
            src->locator_floor = c[18] != 0;
            ki_fmt(src->locator_why, sizeof src->locator_why, "%s%s, and the source's __pycache__ can be written",
                   ncd && *ncd ? "" : "NUMBA_CACHE_DIR is not set", ncd && *ncd ? "NUMBA_CACHE_DIR's directory cannot be written" : "");
        } else if (strcmp(c, "UserWideCacheLocator") == 0) {
            char d[8192];
            if (!exists) continue;
            ki_fmt(d, sizeof d, "%s/%s", ucd, sub);
            if (!nb_dir_ensurable(d)) continue;
            ki_fmt(dir, sizeof dir, "%s", d);
            src->locator = "UserWideCacheLocator";
            ki_fmt(src->locator_why, sizeof src->locator_why, "the source's __pycache__ cannot be created or written%s",
                   ncd && *ncd ? "" : " and NUMBA_CACHE_DIR is not set");
        } else if (strcmp(c, "IPythonCacheLocator") == 0) {
            if (strncmp(path_base(py_dir), "ipykernel_", 10) == 0) {
                src->reads = -1;
                ki_fmt(src->locator_why, sizeof src->locator_why, "a file in an ipykernel_ directory: IPython's locator, "
                       "whose cache directory the tool does not know");
                return;
            }
        } else if (strcmp(c, "ZipCacheLocator") == 0) {
            if (minor >= 0 && minor < 61 && !classes) continue;   /* numba < 0.61 has no zip locator */
            if (!strstr(abs, ".zip")) continue;
            ki_fmt(dir, sizeof dir, "%s/%s", ucd, sub);
            src->locator = "ZipCacheLocator";
            ki_fmt(src->locator_why, sizeof src->locator_why, "the source is a zip archive's member");
        } else if (strchr(c, '.')) {
            src->reads = -1;
            ki_fmt(src->locator_why, sizeof src->locator_why, "%s names the class %.200s, which the tool does not know: "
                   "cannot say which index numba opens", classes_from, c);
            src->locator = "unknown";
            return;
        } else {
            src->locator = "none";
            src->locator_raises = 1;
            ki_fmt(src->locator_why, sizeof src->locator_why, "%s names %.200s, which is no numba locator class: "
                   "numba raises RuntimeError (Unknown cache locator class) when the function is decorated", classes_from, c);
            return;
        }
    }
    if (!dir[0]) {
        src->locator = "none";
        src->locator_raises = 1;
        ki_fmt(src->locator_why, sizeof src->locator_why, "no locator takes the source (no cache directory can be written%s): "
               "numba raises RuntimeError (cannot cache function: no locator available) when the function is decorated",
               classes ? ", or the listed classes do not apply" : "");
        return;
    }
    {
        char want[8192], have[4096], rw[PATH_MAX], rh[PATH_MAX];
        path_dirname(index_abs, ixdir, sizeof ixdir);
        if (ki_abspath(dir, want, sizeof want) != 0) return;
        ki_fmt(have, sizeof have, "%s", ixdir);
        if (realpath(want, rw) && realpath(have, rh)) { ki_fmt(want, sizeof want, "%s", rw); ki_fmt(have, sizeof have, "%s", rh); }
        ki_fmt(src->numba_index, sizeof src->numba_index, "%s/%s", dir, path_base(index_abs));
        if (strcmp(want, have) == 0) { src->reads = 1; return; }
        src->reads = 0;
        ki_fmt(src->reads_why, sizeof src->reads_why, "numba's %s is used (%s): it opens %.1500s, not this index",
               src->locator, src->locator_why, src->numba_index);
        if (!(ncd && *ncd) && !op->cache_dir && dir_layout(path_base(ixdir), sub, sizeof sub, want) == LAYOUT_HASH)
            ki_fmt(src->reads_why + strlen(src->reads_why), sizeof src->reads_why - strlen(src->reads_why),
                   " (if the run sets NUMBA_CACHE_DIR, pass it: --cache-dir DIR)");
    }
}

/* The function's bytecode as numba hashes it for the index key (sha256 of __code__.co_code):
 * the source is compiled, never run, by a Python of the index's version in isolated mode (-I -S:
 * no site, no PYTHON* variables, no script directory), at the optimization level the run's
 * PYTHONOPTIMIZE gives, and the code object with the function's name and first line is found
 * by walking the module's constants.  The child is bounded by an alarm. */
static const char nb_compile_py[] =
    "import sys, hashlib\n"
    "path, name, line, opt, member = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]\n"
    "if member:\n"
    "    import zipfile\n"
    "    src = zipfile.ZipFile(path).read(member)\n"
    "else:\n"
    "    src = open(path, 'rb').read()\n"
    "code = compile(src, path, 'exec', dont_inherit=True, optimize=opt)\n"
    "print('%d.%d' % sys.version_info[:2])\n"
    "todo = [code]\n"
    "while todo:\n"
    "    c = todo.pop()\n"
    "    for k in c.co_consts:\n"
    "        if hasattr(k, 'co_code'):\n"
    "            todo.append(k)\n"
    "            if k.co_name.replace('<', '').replace('>', '') == name and k.co_firstlineno == line:\n"
    "                print(hashlib.sha256(k.co_code).hexdigest(), len(k.co_freevars))\n"
    NB_SITE_PY;   /* and the site directories, for the imports: one Python start, not two */

static void nb_bytecode(const ki_opts *op, nb_report *R)
{
    const nb_name *nm = &R->name;
    char py[64], want[16], line[32], opt[8], out[10240];
    char *site;
    const char *env_opt = getenv("PYTHONOPTIMIZE"), *exe;
    int pfd[2], status = 0, level = 0;
    pid_t pid;
    size_t n = 0, k;
    long maj, mnr;
    char *end, *nl;
    if (op->no_bytecode) { ki_fmt(R->code_why, sizeof R->code_why, "not checked (--no-bytecode)"); return; }
    if (!nm->ok || nm->line <= 0 || !R->src.found || (R->src.kind != SRC_FILE && R->src.kind != SRC_ZIP)) {
        ki_fmt(R->code_why, sizeof R->code_why, "not checked: %s", !R->src.found ? "the source was not found" : "not a function in a .py file");
        return;
    }
    /* "py311", "py311d": Python 3.11 */
    maj = nm->pytag[2] - '0';
    mnr = strtol(nm->pytag + 3, &end, 10);
    if (strncmp(nm->pytag, "py", 2) != 0 || maj < 2 || maj > 9 || end == nm->pytag + 3 || mnr < 0 || mnr > 99) {
        ki_fmt(R->code_why, sizeof R->code_why, "not checked: the Python tag %s is not pyXY", nm->pytag);
        return;
    }
    ki_fmt(want, sizeof want, "%ld.%ld", maj, mnr);
    ki_fmt(py, sizeof py, "python%s", want);
    exe = op->python ? op->python : py;
    /* PYTHONOPTIMIZE as Python reads it: a number, or any other non-empty string meaning 1 */
    if (env_opt && *env_opt) { long v = strtol(env_opt, &end, 10); level = *end ? 1 : v < 0 ? 0 : v > 2 ? 2 : (int)v; }
    ki_fmt(line, sizeof line, "%ld", nm->line);
    ki_fmt(opt, sizeof opt, "%d", level);
    if (pipe(pfd) != 0) { ki_fmt(R->code_why, sizeof R->code_why, "not checked: pipe: %s", strerror(errno)); return; }
    fflush(stdout);
    pid = fork();
    if (pid < 0) { close(pfd[0]); close(pfd[1]); ki_fmt(R->code_why, sizeof R->code_why, "not checked: fork: %s", strerror(errno)); return; }
    if (pid == 0) {
        int dn = open("/dev/null", O_RDWR);
        dup2(pfd[1], 1);
        if (dn >= 0) { dup2(dn, 0); dup2(dn, 2); }
        close(pfd[0]);
        alarm(30);   /* survives exec: a compile that hangs is killed */
        execlp(exe, exe, "-I", "-S", "-c", nb_compile_py, R->src.path, nm->func, line, opt, R->src.kind == SRC_ZIP ? R->src.member : "",
               (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    for (;;) {
        ssize_t got = read(pfd[0], out + n, sizeof out - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
        if (n == sizeof out - 1) break;
    }
    out[n] = 0;
    close(pfd[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    ki_fmt(R->python, sizeof R->python, "%.200s", exe);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && (site = strstr(out, "\nstdlib\t")) != NULL) {
        nb_python_site_set(exe, site + 1);   /* the imports' search asks no second time */
        site[1] = 0;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            ki_fmt(R->code_why, sizeof R->code_why, "not checked: no %.200s here to compile the source with (Python %s wrote this "
                   "index; --python PATH names one)", exe, want);
        else
            ki_fmt(R->code_why, sizeof R->code_why, "not checked: %.200s could not compile the source (a syntax error for Python %s?)",
                   exe, want);
        return;
    }
    nl = strchr(out, '\n');
    if (!nl || (size_t)(nl - out) != strlen(want) || strncmp(out, want, strlen(want)) != 0) {
        ki_fmt(R->code_why, sizeof R->code_why, "not checked: %.200s is Python %.*s, the index was written by Python %s", exe,
               nl ? (int)(nl - out) < 16 ? (int)(nl - out) : 16 : 0, out, want);
        return;
    }
    /* the first code object with that name and first line (numba's disambiguator) */
    if (strlen(nl + 1) < 66) {
        ki_fmt(R->code_why, sizeof R->code_why, "not checked: no function %.200s starting at line %ld in the source", nm->func, nm->line);
        return;
    }
    for (k = 0; k < 64; k++) if (hexval(nl[1 + k]) < 0) return;
    memcpy(R->code_hex, nl + 1, 64);
    R->code_hex[64] = 0;
    R->code_freevars = atoi(nl + 66) > 0;
    R->code_checked = 1;
    ki_fmt(R->code_why, sizeof R->code_why, "compiled by %.200s -I -S at optimization level %d (PYTHONOPTIMIZE)", exe, level);
}

/* Whether the decorator compiles when the module is imported (its signatures are given:
 * @cfunc(SIG), @njit("int64(int64)"), @vectorize([...]), @guvectorize([...], ...)): numba then
 * loads the cache, and raises from a damaged one, at import, not at the first call. */
static int nb_eager(const nb_source *src)
{
    const char *t = src->line_text, *p;
    if (src->line_checked != 1 || t[0] != '@') return 0;
    if (strstr(t, "cfunc(")) return 1;
    if ((p = strstr(t, "jit(")) != NULL || (p = strstr(t, "vectorize(")) != NULL) {
        p = strchr(p, '(') + 1;
        while (*p == ' ') p++;
        return *p == '"' || *p == '\'' || *p == '[' || *p == '(' || strncmp(p, "signature", 9) == 0;
    }
    return 0;
}

/* "mod.f" or "f" as the verdicts name the function. */
static const char *fn_name(const nb_report *R) { return R->name.ok ? R->name.func : "the function"; }

static void nb_assess(nb_index *ix, const char *path, const ki_opts *op, nb_report *R)
{
    size_t k, j;
    char dir[4096];
    const char *fn;
    char ver[48];
    const pk_node *feat_memo = NULL;
    int feat_memo_match = 0;
    memset(R, 0, sizeof *R);
    if (ki_abspath(path, R->index_abs, sizeof R->index_abs) != 0) ki_fmt(R->index_abs, sizeof R->index_abs, "%s", path);
    R->have_ix_st = stat(R->index_abs, &R->ix_st) == 0;
    nb_parse_name(path_base(R->index_abs), &R->name);
    locate_source(R->index_abs, &R->name, op, &R->src);
    check_layout(R->index_abs, &R->name, &R->src);
    check_source_line(&R->src, &R->name);
    if (R->src.reads != 0 && R->src.line_checked == -1 && R->src.moved_to > 0) {
        R->src.reads = 0;
        ki_fmt(R->src.reads_why, sizeof R->src.reads_why, "%s now starts at line %ld, not %ld: numba looks up %s%s%s-%ld.%s.nbi, "
               "never this index", R->name.func, R->src.moved_to, R->name.line, R->name.prefix, R->name.prefix[0] ? "-" : "",
               R->name.fullname, R->src.moved_to, R->name.pytag);
    }
    nb_locate(R->index_abs, &R->name, ix, op, &R->src);
    host_resolve(op, ix, &R->host);
    fn = fn_name(R);
    ki_fmt(ver, sizeof ver, "%.*s", (int)(ix->version->n < 40 ? ix->version->n : 40), (const char *)ix->version->s);
    R->version_state = -1;
    if (op->numba_version && !ix->version_err[0]) R->version_state = bytes_eq(ix->version->s, ix->version->n, op->numba_version);
    if (!ix->body_err[0]) check_stamp(ix, R);
    else ki_fmt(R->stamp_why, sizeof R->stamp_why, "the index body does not decode");
    /* the key holds the bytecode's hash: only worth a compile when the stamp lets numba that far */
    if (R->stamp_state == 1 && ix->nov && R->src.reads != 0 && !op->no_deps && !op->no_imports) nb_bytecode(op, R);
    else if (op->no_deps || op->no_imports) ki_fmt(R->code_why, sizeof R->code_why, "not checked");
    else ki_fmt(R->code_why, sizeof R->code_why, "not checked (numba gets no further than the %s)",
                R->src.reads == 0 ? "index it opens" : "stamp");

    /* overloads: data files and the CPU */
    path_dirname(R->index_abs, dir, sizeof dir);
    for (k = 0; k < ix->nov; k++) {
        nb_overload *o = &ix->ov[k];
        char p[8192];
        if (o->data && o->data_name_ok) {
            struct stat st;
            ki_fmt(p, sizeof p, "%s/%.*s", dir, (int)o->data->n, (const char *)o->data->s);
            o->data_exists = is_file(p, &st);
            if (o->data_exists) o->data_size = (long long)st.st_size;
        } else {
            o->data_exists = 0;
        }
        if (!o->shape_ok) { o->cpu_match = 0; o->usable = 0; continue; }
        o->code_match = R->code_checked ? node_eq_cstr(o->code, R->code_hex) : -1;
        if (o->code_match == 1) R->n_code_match++;
        {
            int known = 1, match = 1;
            if (R->host.cpu) match &= node_eq_cstr(o->cpu, R->host.cpu); else known = 0;
            if (!R->host.features) known = 0;
            else if (R->host.features_by_name) {
                /* an index holds one feature string many times: compared once */
                if (!feat_memo || !node_str_eq(feat_memo, o->features)) {
                    feat_memo = o->features;
                    feat_memo_match = feat_match_by_name(o->features->s, o->features->n, (const unsigned char *)R->host.features,
                                                         strlen(R->host.features)) &&
                                      (o->features->n == 0 || feat_in_flatten_order(o->features->s, o->features->n));
                }
                match &= feat_memo_match;
            }
            else match &= node_eq_cstr(o->features, R->host.features);
            if (op->triple) match &= node_eq_cstr(o->triple, op->triple);
            o->cpu_match = !match ? 0 : known ? 1 : -1;
        }
        /* the data file numba loads for a matching key must unpickle */
        if (o->cpu_match != 0 && o->code_match != 0 && o->data_exists == 1) {
            char err[300];
            if (nbc_check(p, err, sizeof err) != 0) {
                o->data_bad = 1;
                o->data_err = (char *)ka_alloc(&ix->arena, strlen(err) + 1);
                if (o->data_err) memcpy(o->data_err, err, strlen(err) + 1);
            }
        }
        o->usable = o->cpu_match == 0 || o->code_match == 0 || o->data_exists == 0 || o->data_bad ? 0 : o->cpu_match;
        if (o->cpu_match == 1 && o->code_match != 0) R->n_match++;
        if (o->usable == 1) R->n_usable++;
        if (o->cpu_match == -1) R->n_unknown++;
        if (o->data_exists == 0) R->n_missing++;
        if (o->data_bad) R->n_bad++;
    }

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

    /* the verdict, in the order numba meets each condition: which index file it opens, the
       version pickle, the body, the stamp, then each signature's key and data file */
    {
        const char *srcbase = R->src.path[0] ? path_base(R->src.path) : "the source";
        char cpus[300] = "";
        size_t used = 0, ncpu = 0;
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
        if (R->src.locator_raises) {
            R->verdict_code = "raises";
            ki_fmt(R->verdict, sizeof R->verdict, "numba will raise: %s; it never reads this index", R->src.locator_why);
        } else if (R->src.locator && strcmp(R->src.locator, "unknown") == 0) {
            /* another module's locator class: where it caches, and how it stamps, are its own */
            R->verdict_code = "unknown-locator";
            ki_fmt(R->verdict, sizeof R->verdict, "cannot say: %s", R->src.locator_why);
        } else if (R->src.reads == 0) {
            R->verdict_code = "never-read";
            ki_fmt(R->verdict, sizeof R->verdict, "numba never reads this index: %s -> %s recompiles (and caches it elsewhere)",
                   R->src.reads_why, fn);
        } else if (ix->version_err[0]) {
            R->verdict_code = "raises";
            ki_fmt(R->verdict, sizeof R->verdict,
                   "numba will raise: %s: numba's pickle.load of the index's version fails before anything is compared, so %s%s "
                   "raises instead of compiling (whatever numba version runs); remove the index "
                   "(kcache-inspect --prune FILE --yes)", ix->version_err,
                   nb_eager(&R->src) ? "importing the module (the decorator compiles at import) of " : "every call that compiles of ", fn);
        } else if (R->version_state == 0) {
            R->verdict_code = "version-mismatch";
            ki_fmt(R->verdict, sizeof R->verdict,
                   "numba version differs (index %s, running %.40s) -> numba reads no further than the version: the whole "
                   "index is ignored, %s recompiles%s", ver, op->numba_version, fn,
                   ix->body_err[0] ? " (the body does not decode either; numba never unpickles it)" : "");
        } else if (ix->body_err[0]) {
            R->verdict_code = "raises";
            ki_fmt(R->verdict, sizeof R->verdict,
                   "numba will raise: numba %s reads its own version, then pickle.loads of the body fails (%s): %s%s raises "
                   "instead of compiling; remove the index (kcache-inspect --prune FILE --yes)",
                   ver, ix->body_err, nb_eager(&R->src) ? "importing the module (the decorator compiles at import) of " :
                   "the first call of ", fn);
        } else if (ix->nov == 0) {
            R->verdict_code = "empty";
            ki_fmt(R->verdict, sizeof R->verdict, "empty index: no overloads recorded, %s compiles on every first call", fn);
        } else if (R->stamp_state == 0) {
            R->verdict_code = "stale";
            ki_fmt(R->verdict, sizeof R->verdict, "stamp mismatch: %.100s %s -> all %zu overloads discarded, %s recompiles",
                   srcbase, R->stamp_why, ix->nov, fn);
        } else if (R->stamp_state > 0 && R->code_checked && !R->n_code_match) {
            R->verdict_code = "stale";
            ki_fmt(R->verdict, sizeof R->verdict, "bytecode differs: the stamp matches, but %s's bytecode now (sha256 %.16s...) is in no "
                   "overload's key (an edit that kept the size and the mtime) -> numba reads the index, uses none of its %zu "
                   "overloads, %s recompiles", fn, R->code_hex, ix->nov, fn);
        } else if (R->stamp_state < 0) {
            R->verdict_code = "unchecked";
            ki_fmt(R->verdict, sizeof R->verdict, "cannot check the stamp: %s; %zu overloads recorded (CPU %s)",
                   R->stamp_why, ix->nov, cpus);
        } else if (R->n_bad) {
            char list[300] = "";
            size_t u = 0;
            for (k = 0; k < ix->nov && u + 60 < sizeof list; k++)
                if (ix->ov[k].data_bad)
                    u += (size_t)ki_fmt(list + u, sizeof list - u, "%s[%zu] %.*s %s", u ? "; " : "", k + 1,
                                        (int)(ix->ov[k].data->n < 80 ? ix->ov[k].data->n : 80), (const char *)ix->ov[k].data->s,
                                        ix->ov[k].data_err ? ix->ov[k].data_err : "");
            R->verdict_code = "raises";
            ki_fmt(R->verdict, sizeof R->verdict,
                   "numba will raise: %zu of %zu overloads for this CPU have a data file that does not unpickle (%s): %s "
                   "raises instead of compiling; %zu usable; remove it (kcache-inspect --prune FILE --yes)",
                   R->n_bad, ix->nov, list, nb_eager(&R->src) ? "importing the module (the decorator compiles at import)" :
                   "the first call with that signature", R->n_usable);
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
            if (R->n_match && R->n_missing) {
                /* numba's _load_overload: a missing data file (OSError) is a miss, not a raise */
                R->verdict_code = "data-missing";
                ki_fmt(R->verdict, sizeof R->verdict, "miss: the overloads for this CPU have no .nbc data file -> %s recompiles", fn);
            } else {
                int same_name = 0;
                for (k = 0; k < ix->nov; k++) if (ix->ov[k].shape_ok && node_eq_cstr(ix->ov[k].cpu, R->host.cpu)) same_name = 1;
                ki_fmt(R->verdict, sizeof R->verdict,
                       "miss: 0 of %zu overloads match this CPU (%.60s; index has %s%s) -> every signature of %s recompiles",
                       ix->nov, R->host.cpu, cpus, same_name ? ", same name but other features" : "", fn);
            }
        }
    }

    /* numba reuses code from this index: is any module it imports newer than the index? */
    if (!op->no_deps && !op->no_imports && R->have_ix_st && R->src.found && R->src.kind == SRC_FILE &&
        (strcmp(R->verdict_code, "hit") == 0 || strcmp(R->verdict_code, "partial") == 0 ||
         strcmp(R->verdict_code, "stamp-ok") == 0 || (strcmp(R->verdict_code, "raises") == 0 && R->n_usable))) {
        char py[64];
        const char *python = op->python;
        /* the Python of the index's pyXY tag, as the bytecode check runs it */
        if (!python && strncmp(R->name.pytag, "py", 2) == 0 && R->name.pytag[2] >= '2' && R->name.pytag[2] <= '9' &&
            R->name.pytag[3] >= '0' && R->name.pytag[3] <= '9') {
            ki_fmt(py, sizeof py, "python%c.%ld", R->name.pytag[2], strtol(R->name.pytag + 3, NULL, 10));
            python = py;
        }
        deps_scan(R->src.path, &R->ix_st, op, python, &R->deps);
        R->deps_checked = 1;
    }
}

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
    case ST_HEXHASH: return "sha256 (hex) of the function's text in a notebook cell (IPython's locator)";
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
        ko_esc(o, p, w);
        col += w;
        p = q;
    }
    ko_putc(o, '\n');
}

static void report_text(ki_out *o, nb_index *ix, nb_report *R, const ki_opts *op)
{
    size_t k, j;
    char tmp[128], utc[64];
    ki_out memo;                       /* the last overload's features line, and whose features */
    const pk_node *memo_feat = NULL;
    memset(&memo, 0, sizeof memo);
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
    if (R->src.kind == SRC_ZIP) ko_printf(o, "source     %s, member %s\n", R->src.path, R->src.member);
    else if (R->src.path[0] && !R->src.found && R->src.kind == SRC_FILE)
        ko_printf(o, "source     not found (looked for %s)\n", path_base(R->src.path));
    else ko_printf(o, "source     %s%s\n", R->src.path[0] ? R->src.path : "not found", R->src.kind == SRC_CELL && R->src.path[0] ? " (a notebook cell)" : "");
    ko_puts(o, "           found by: ");
    ko_wrap(o, R->src.how ? R->src.how : "?", 21, 21);
    if (R->src.path[0] && !R->src.found && R->src.kind != SRC_FILE) ko_puts(o, "           the file does not exist\n");
    if (R->src.note[0]) { ko_puts(o, "           note: "); ko_wrap(o, R->src.note, 17, 17); }
    if (R->name.prefix[0]) ko_printf(o, "           note: %s-... is @guvectorize's wrapper index; the kernel has its own (%s-%s.%s.nbi)\n",
                                     R->name.prefix, R->name.fullname, R->name.disamb, R->name.pytag);
    if (R->src.line_checked == 1 && R->src.line_text[0]) ko_printf(o, "           line %ld: %.70s\n", R->name.line, R->src.line_text);
    else if (R->src.line_checked == -1 && R->src.moved_to <= 0)
        ko_printf(o, "           note: line %ld does not start %s\n", R->name.line, R->name.func);
    if (R->src.reads == 0) { ko_puts(o, "           NEVER READ: "); ko_wrap(o, R->src.reads_why, 23, 11); }
    else if (R->src.locator && R->src.locator_why[0]) {
        char l[800];
        ki_fmt(l, sizeof l, "numba's %s (%s)%s", R->src.locator, R->src.locator_why, R->src.reads == 1 ? ": it opens this index" : "");
        ko_puts(o, "           locator: "); ko_wrap(o, l, 20, 20);
    }
    if (R->src.kind == SRC_CELL && R->cell_first > 0)
        ko_printf(o, "           %s is cell lines %ld-%ld\n", R->name.func, R->cell_first, R->cell_last);
    ko_printf(o, "stamp      %s\n", stamp_kind_text(ix->stamp_kind));
    if (ix->stamp_kind == ST_MTIME_SIZE || ix->stamp_kind == ST_FLOOR_SIZE) {
        fmt_double(tmp, sizeof tmp, ix->stamp_mtime);
        fmt_utc(utc, sizeof utc, ix->stamp_mtime);
        ko_printf(o, "  index    mtime %s%s%s%s, size %lld\n", tmp, utc[0] ? " (" : "", utc, utc[0] ? ")" : "", ix->stamp_size);
        if (R->src.found) {
            double m = nb_floor_stamp(ix, &R->src) ? py_floor(R->src_mtime) : R->src_mtime;
            fmt_double(tmp, sizeof tmp, m);
            fmt_utc(utc, sizeof utc, m);
            ko_printf(o, "  source   mtime %s%s%s%s, size %lld\n", tmp, utc[0] ? " (" : "", utc, utc[0] ? ")" : "", R->src_size);
        }
    } else if (ix->stamp_kind == ST_SHA256) {
        char hx[65];
        hex_of(ix->stamp->s, 32, hx);
        ko_printf(o, "  index    sha256 %s\n", hx);
        if (R->have_src_digest) { hex_of(R->src_digest, 32, hx); ko_printf(o, "  source   sha256 %s\n", hx); }
    } else if (ix->stamp_kind == ST_HEXHASH) {
        ko_printf(o, "  index    sha256 %.64s (hex)\n", (const char *)ix->stamp->s);
        if (R->cell_hex[0]) ko_printf(o, "  source   sha256 %s (%s's text in the cell)\n", R->cell_hex, R->name.func);
    } else if (!ix->stamp) {
        ko_puts(o, "  index    ? (the body does not decode)\n");
    } else {
        char *s = render_to(&ix->arena, ix->stamp, 0, 200);
        ko_printf(o, "  index    %s\n", s ? s : "?");
    }
    if (R->stamp_state == 1) ko_puts(o, "  check    match\n");
    else ko_printf(o, "  check    %s%s\n", R->stamp_state == 0 ? "MISMATCH: " : "", R->stamp_why);
    {
        char l[800];
        if (R->code_checked) {
            ko_printf(o, "bytecode   sha256 %s\n", R->code_hex);
            ki_fmt(l, sizeof l, "%s; %zu of %zu overloads hold it", R->code_why, R->n_code_match, ix->nov);
            ko_puts(o, "           "); ko_wrap(o, l, 11, 11);
            if (R->code_freevars)
                ko_puts(o, "           a closure: its captured values are hashed too, and cannot be known without\n"
                           "           running the code: not checked\n");
        } else {
            ko_puts(o, "bytecode   "); ko_wrap(o, R->code_why, 11, 11);
        }
    }
    if (ix->stamp_kind == ST_MTIME_SIZE && R->stamp_state == 1)
        ko_puts(o, "  note     numba <= 0.67 compares (st_mtime, st_size), then looks up the key, which holds the sha256 of\n"
                   "           the function's bytecode: an edit that keeps the size, with the mtime put back, is reused as it\n"
                   "           is (stale code) only when the bytecode stays the same (a changed constant, x + 1 to x + 2);\n"
                   "           a changed operation (a + b to a - b) recompiles.  numba >= 0.68 hashes the content\n");
    {
        char line[400];
        if (!R->host.cpu && !R->host.features)
            ki_fmt(line, sizeof line, "unknown (pass --cpu and --features, or set NUMBA_CPU_NAME and NUMBA_CPU_FEATURES)");
        else if (R->host.cpu && R->host.detected[0] && strcmp(R->host.cpu_from, "detected") == 0 && strcmp(R->host.cpu, R->host.detected) != 0)
            ki_fmt(line, sizeof line, "%.100s; numba %s's LLVM calls it %.100s (detected), features %s%s", R->host.detected,
                   R->host.numba[0] ? R->host.numba : "?", R->host.cpu, R->host.features ? "from " : "unknown (pass --features)",
                   R->host.features ? R->host.features_from : "");
        else
            ki_fmt(line, sizeof line, "%.100s (%s), features %s%s", R->host.cpu ? R->host.cpu : "name unknown",
                   R->host.cpu ? R->host.cpu_from : "pass --cpu", R->host.features ? "from " : "unknown (pass --features)",
                   R->host.features ? R->host.features_from : "");
        ko_puts(o, "host CPU   ");
        ko_wrap(o, line, 11, 11);
        if (R->host.llvm_note[0]) { ko_puts(o, "           "); ko_wrap(o, R->host.llvm_note, 11, 11); }
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
            if (k > 1 && memo.buf && memo_feat && node_str_eq(memo_feat, ov->features)) {
                ko_write(o, memo.buf, memo.len);   /* the same features as the overload before: the same line */
            } else {
                ki_out *final = o;
                size_t en, nf = feat_count(ov->features, &en);
                ko_free(&memo);
                memo.limit = 1 << 16;
                memo_feat = ov->features;
                o = &memo;
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
                    if (ov->features->n && !feat_in_flatten_order(ov->features->s, ov->features->n))
                        ko_puts(o, "\n                but NOT in numba's order (sorted by name): NUMBA_CPU_FEATURES wrote it, and numba\n"
                                   "                compares the strings byte for byte: not this host's key");
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
                o = final;
                if (memo.buf) ko_write(o, memo.buf, memo.len);
                if (memo.full) ko_free(&memo);
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
            else if (ov->data_bad) ko_printf(o, "  (%lld bytes, BROKEN: %s; numba raises loading it)\n", ov->data_size,
                                             ov->data_err ? ov->data_err : "?");
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
    ko_free(&memo);
    if (ix->body_err[0]) { ko_puts(o, "body       DOES NOT DECODE: "); ko_wrap(o, ix->body_err, 29, 11); }
    else if (ix->body_end < ix->len) ko_printf(o, "note       %zu bytes after the index body (numba ignores them)\n", ix->len - ix->body_end);
    ko_printf(o, "verdict    %s\n", R->verdict);   /* one line: scripts grep it */
    if (R->deps_checked) {
        for (k = 1; k < R->deps.n && !o->full; k++) {
            char a[64], b[64], line[5000];
            const nb_dep *d = &R->deps.d[k];
            if (!d->stale) continue;
            fmt_utc(a, sizeof a, (double)d->st.st_mtim.tv_sec);
            fmt_utc(b, sizeof b, (double)R->ix_st.st_mtim.tv_sec);
            ki_fmt(line, sizeof line, "numba will reuse code compiled against the old %s: %s changed (%s) after this index was "
                   "written (%s), and numba stamps only %s; remove the index to recompile", path_base(d->path), d->path, a, b,
                   R->src.path[0] ? path_base(R->src.path) : "the source");
            ko_puts(o, "warning    ");
            ko_wrap(o, line, 11, 11);
        }
        if (!R->deps.nstale && R->deps.n > 1)
            ko_printf(o, "imports    %zu imported module file%s, none changed since the index was written\n", R->deps.n - 1,
                      R->deps.n == 2 ? "" : "s");
    }
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
    ki_out memo;                       /* the last overload's features_diff, and whose features */
    const pk_node *memo_feat = NULL;
    memset(&memo, 0, sizeof memo);
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
    ko_puts(o, ",\n  \"library_prefix\": "); if (R->name.prefix[0]) ko_json_cstr(o, R->name.prefix); else ko_puts(o, "null");
    ko_puts(o, ",\n  \"source\": {\"kind\": ");
    ko_json_cstr(o, R->src.kind == SRC_ZIP ? "zip-member" : R->src.kind == SRC_CELL ? "notebook-cell" : "file");
    ko_puts(o, ", \"path\": "); if (R->src.path[0] && (R->src.found || R->src.kind != SRC_FILE)) ko_json_cstr(o, R->src.path); else ko_puts(o, "null");
    ko_puts(o, ", \"looked_for\": "); if (R->src.path[0] && !R->src.found) ko_json_cstr(o, R->src.path); else ko_puts(o, "null");
    ko_puts(o, ", \"member\": "); if (R->src.kind == SRC_ZIP) ko_json_cstr(o, R->src.member); else ko_puts(o, "null");
    ko_puts(o, ", \"numba_reads_this_index\": "); json_tri(o, R->src.reads);
    ko_puts(o, ", \"never_read_why\": "); if (R->src.reads == 0) ko_json_cstr(o, R->src.reads_why); else ko_puts(o, "null");
    ko_puts(o, ", \"locator\": "); ko_json_cstr(o, R->src.locator);
    ko_puts(o, ", \"locator_why\": "); if (R->src.locator_why[0]) ko_json_cstr(o, R->src.locator_why); else ko_puts(o, "null");
    ko_puts(o, ", \"numba_opens\": "); if (R->src.numba_index[0]) ko_json_cstr(o, R->src.numba_index); else ko_puts(o, "null");
    ko_puts(o, ", \"cell_lines\": "); if (R->cell_first > 0) ko_printf(o, "[%ld, %ld]", R->cell_first, R->cell_last); else ko_puts(o, "null");
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
    ko_puts(o, ",\n  \"body_error\": "); if (ix->body_err[0]) ko_json_cstr(o, ix->body_err); else ko_puts(o, "null");
    ko_puts(o, ",\n  \"version_error\": "); if (ix->version_err[0]) ko_json_cstr(o, ix->version_err); else ko_puts(o, "null");
    ko_puts(o, ",\n  \"bytecode\": {\"checked\": "); ko_puts(o, R->code_checked ? "true" : "false");
    ko_puts(o, ", \"sha256\": "); if (R->code_checked) ko_json_cstr(o, R->code_hex); else ko_puts(o, "null");
    ko_puts(o, ", \"closure_checked\": "); ko_puts(o, R->code_checked && !R->code_freevars ? "true" : "false");
    ko_puts(o, ", \"python\": "); if (R->python[0]) ko_json_cstr(o, R->python); else ko_puts(o, "null");
    ko_puts(o, ", \"why\": "); ko_json_cstr(o, R->code_why);
    ko_puts(o, "}");
    ko_puts(o, ",\n  \"stamp\": {\"kind\": ");
    ko_json_cstr(o, !ix->stamp ? NULL : ix->stamp_kind == ST_MTIME_SIZE ? "mtime-size" : ix->stamp_kind == ST_FLOOR_SIZE ? "floor-mtime-size" :
                     ix->stamp_kind == ST_SHA256 ? "sha256" : ix->stamp_kind == ST_HEXHASH ? "ipython-sha256-hex" : "other");
    if (ix->stamp_kind == ST_MTIME_SIZE || ix->stamp_kind == ST_FLOOR_SIZE) {
        ko_puts(o, ", \"mtime\": "); json_double(o, ix->stamp_mtime);
        ko_printf(o, ", \"size\": %lld", ix->stamp_size);
        if (R->src.found) {
            double m = nb_floor_stamp(ix, &R->src) ? py_floor(R->src_mtime) : R->src_mtime;
            ko_puts(o, ", \"source_mtime\": "); json_double(o, m);
            ko_puts(o, ", \"mtime_diff_s\": "); json_double(o, m - ix->stamp_mtime);
            ko_printf(o, ", \"source_size\": %lld", R->src_size);
        }
    } else if (ix->stamp_kind == ST_SHA256) {
        char hx[65];
        hex_of(ix->stamp->s, 32, hx);
        ko_puts(o, ", \"sha256\": "); ko_json_cstr(o, hx);
        if (R->have_src_digest) { hex_of(R->src_digest, 32, hx); ko_puts(o, ", \"source_sha256\": "); ko_json_cstr(o, hx); }
    } else if (ix->stamp_kind == ST_HEXHASH) {
        ko_puts(o, ", \"sha256\": "); json_node_str(o, ix->stamp);
        ko_puts(o, ", \"source_sha256\": "); if (R->cell_hex[0]) ko_json_cstr(o, R->cell_hex); else ko_puts(o, "null");
    } else if (ix->stamp) {
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
    ko_puts(o, ", \"detected_cpu\": "); ko_json_cstr(o, R->host.detected[0] ? R->host.detected : NULL);
    ko_puts(o, ", \"numba_llvm\": ");
    if (R->host.nllvm) {
        int q;
        ko_puts(o, "{\"numba\": "); ko_json_cstr(o, R->host.numba[0] ? R->host.numba : NULL);
        ko_puts(o, ", \"llvm\": [");
        for (q = 0; q < R->host.nllvm; q++) ko_printf(o, "%s%d", q ? ", " : "", R->host.llvm[q]);
        ko_puts(o, "], \"names\": [");
        for (q = 0; q < R->host.nllvm; q++) { if (q) ko_puts(o, ", "); ko_json_cstr(o, R->host.llvm_name[q]); }
        ko_puts(o, "], \"llvm_used\": ");
        if (R->host.llvm_used >= 0) ko_printf(o, "%d", R->host.llvm[R->host.llvm_used]); else ko_puts(o, "null");
        ko_puts(o, ", \"note\": "); ko_json_cstr(o, R->host.llvm_note[0] ? R->host.llvm_note : NULL);
        ko_puts(o, "}");
    } else {
        ko_puts(o, "null");
    }
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
            if (rname && k > 0 && memo.buf && memo_feat && node_str_eq(memo_feat, ov->features)) {
                ko_write(o, memo.buf, memo.len);   /* the same features as the overload before */
            } else if (rname) {   /* by name: the features both name that disagree, else every difference */
                int by_name = R->host.features && R->host.features_by_name &&
                              (feat_match_by_name(ov->features->s, ov->features->n, rs, rn) ||
                               feat_diff(NULL, ov->features->s, ov->features->n, rs, rn, 0, 0, 1) > 0);
                ko_free(&memo);
                memo.limit = 1 << 16;
                memo_feat = ov->features;
                feat_diff(&memo, ov->features->s, ov->features->n, rs, rn, 4096, 1, by_name);
                if (memo.buf) ko_write(o, memo.buf, memo.len);
                if (memo.full) ko_free(&memo);
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
        ko_puts(o, ", \"data_error\": "); if (ov->data_bad) ko_json_cstr(o, ov->data_err); else ko_puts(o, "null");
        ko_puts(o, ", \"data_size\": "); if (ov->data_size >= 0) ko_printf(o, "%lld", ov->data_size); else ko_puts(o, "null");
        ko_puts(o, ", \"cpu_match\": "); json_tri(o, ov->cpu_match);
        ko_puts(o, ", \"usable\": "); json_tri(o, ov->usable);
        ko_puts(o, ", \"bytecode_matches\": "); json_tri(o, ov->code_match);
        ko_puts(o, "}");
    }
    ko_free(&memo);
    ko_puts(o, "\n  ]");
    ko_printf(o, ",\n  \"trailing_bytes\": %zu", ix->body_err[0] ? (size_t)0 : ix->len - ix->body_end);
    ko_puts(o, ",\n  \"imports\": ");
    if (R->deps_checked) {
        size_t q, w = 0;
        ko_printf(o, "{\"files\": %zu, \"changed_after_index\": [", R->deps.n ? R->deps.n - 1 : 0);
        for (q = 1; q < R->deps.n; q++) {
            if (!R->deps.d[q].stale) continue;
            ko_printf(o, "%s{\"path\": ", w++ ? ", " : "");
            ko_json_cstr(o, R->deps.d[q].path);
            ko_printf(o, ", \"mtime_ns\": %lld%09ld}", (long long)R->deps.d[q].st.st_mtim.tv_sec, (long)R->deps.d[q].st.st_mtim.tv_nsec);
        }
        ko_puts(o, "]}");
    } else ko_puts(o, "null");
    ko_puts(o, ",\n  \"warnings\": [");
    if (R->deps_checked) {
        size_t q, w = 0;
        for (q = 1; q < R->deps.n; q++) {
            if (!R->deps.d[q].stale) continue;
            ko_printf(o, "%s{\"kind\": \"stale-dependency\", \"path\": ", w++ ? ", " : "");
            ko_json_cstr(o, R->deps.d[q].path);
            ko_puts(o, "}");
        }
    }
    ko_puts(o, "]");
    ko_puts(o, ",\n  \"verdict\": {\"code\": "); ko_json_cstr(o, R->verdict_code);
    ko_puts(o, ", \"text\": "); ko_json_cstr(o, R->verdict);
    ko_puts(o, ", \"raises_at\": ");
    ko_json_cstr(o, strcmp(R->verdict_code, "raises") != 0 ? NULL : R->src.locator_raises || nb_eager(&R->src) ? "import" : "call");
    ko_printf(o, ", \"overloads\": %zu, \"usable\": %zu, \"cpu_unknown\": %zu, \"data_missing\": %zu, \"data_broken\": %zu, "
                 "\"signatures\": %zu, \"signatures_covered\": %zu, \"stale_dependencies\": %zu}\n}\n",
              ix->nov, R->n_usable, R->n_unknown, R->n_missing, R->n_bad, R->n_sigs, R->n_sigs_covered, R->deps.nstale);
}

/* The raw symbolic trees of both pickles (--dump). */
static void report_dump(ki_out *o, nb_index *ix)
{
    ko_puts(o, "version pickle: ");
    pk_repr(o, ix->version, 0);
    if (!ix->stamp) { ko_printf(o, "\nbody pickle:    does not decode: %s\n", ix->body_err); return; }
    ko_puts(o, "\nbody pickle:    (");
    pk_repr(o, ix->stamp, 0);
    ko_puts(o, ", ");
    pk_repr(o, ix->overloads, 0);
    ko_puts(o, ")\n");
}

/* ---------------------------------------------------------------------------------------- */
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
    nb_report_free(R);
    free(R);
    nb_index_free(&ix);
    return 0;
}

static int nb_name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The .nbi files directly in dir, sorted (malloc'd names, *n of them); NULL when none or when dir
 * is a kcache store (config.file, e/ or i/ in it). */
static char **nb_dir_indexes(const char *dir, size_t *n)
{
    DIR *d;
    struct dirent *de;
    char **names = NULL, p[4200];
    size_t cap = 0;
    *n = 0;
    ki_fmt(p, sizeof p, "%s/config.file", dir);
    if (access(p, F_OK) == 0) return NULL;
    ki_fmt(p, sizeof p, "%s/e", dir);
    if (is_dir(p)) return NULL;
    ki_fmt(p, sizeof p, "%s/i", dir);
    if (is_dir(p)) return NULL;
    if (!(d = opendir(dir))) return NULL;
    while ((de = readdir(d)) != NULL && *n < 100000) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".nbi") != 0) continue;
        if (*n == cap) {
            char **nn = (char **)realloc(names, (cap = cap ? cap * 2 : 16) * sizeof *names);
            if (!nn) break;
            names = nn;
        }
        if (!(names[*n] = (char *)malloc(l + 1))) break;
        memcpy(names[(*n)++], de->d_name, l + 1);
    }
    closedir(d);
    if (!*n) { free(names); return NULL; }
    qsort(names, *n, sizeof *names, nb_name_cmp);
    return names;
}

/* A numba cache directory (a __pycache__, a NUMBA_CACHE_DIR subdirectory): every index in it,
 * one report after another (JSON: {"format": "numba-index-dir", "indexes": [...]}).  An index
 * that cannot be read is said so in its place; the directory is still reported. */
static KI_MAYBE_UNUSED int ki_numba_dir_report(const char *dir, char **names, size_t n, const ki_opts *op, ki_out *o)
{
    size_t k;
    if (op->json) { ko_puts(o, "{\"format\": \"numba-index-dir\", \"dir\": "); ko_json_cstr(o, dir); ko_puts(o, ", \"indexes\": [\n"); }
    for (k = 0; k < n && !o->full; k++) {
        char path[8400], err[600];
        size_t len = 0;
        unsigned char *buf;
        ki_fmt(path, sizeof path, "%s/%s", dir, names[k]);
        if (op->json && k) ko_puts(o, ",\n");
        else if (!op->json && k) ko_putc(o, '\n');
        buf = slurp(path, KI_MAX_FILE, &len);
        if (!buf) ki_fmt(err, sizeof err, "cannot be read (or larger than %u MiB)", KI_MAX_FILE >> 20);
        if (buf && ki_numba_report(buf, len, path, op, o, err, sizeof err) == 0) { free(buf); continue; }
        free(buf);
        if (op->json) {
            ko_puts(o, "{\"file\": "); ko_json_cstr(o, path); ko_puts(o, ", \"error\": "); ko_json_cstr(o, err); ko_puts(o, "}");
        } else {
            char e[1300];
            ko_printf(o, "file       %s\nerror      %s\n", kcache__escs(e, sizeof e, path), err);
        }
    }
    if (op->json) ko_puts(o, "\n]}\n");
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* --host: this machine's CPU as each LLVM, and so each numba release, names it.             */

static KI_MAYBE_UNUSED void ki_host_report(const ki_opts *op, ki_out *o)
{
    char stable[128], name[128];
    static char feat[KCACHE__HOST_FEATURES_MAX];
    unsigned v;
    size_t k;
    int r;
    kcache__host_cpu_name(stable, sizeof stable);
    kcache__host_cpu_features(feat, sizeof feat);
    r = kcache__host_cpu_name_llvm(KCACHE__LLVM_NEWEST, name, sizeof name);
    if (op->json) {
        ko_puts(o, "{\n  \"cpu\": "); ko_json_cstr(o, stable);
        ko_puts(o, ",\n  \"features\": "); ko_json_cstr(o, feat);
        ko_printf(o, ",\n  \"names_per_llvm\": %s", r == 2 ? "false" : "true");
        ko_puts(o, ",\n  \"llvm\": {");
        for (v = KCACHE__LLVM_OLDEST; v <= KCACHE__LLVM_NEWEST; v++) {
            kcache__host_cpu_name_llvm(v, name, sizeof name);
            ko_printf(o, "%s\"%u\": ", v == KCACHE__LLVM_OLDEST ? "" : ", ", v);
            ko_json_cstr(o, name);
        }
        ko_puts(o, "},\n  \"numba\": [");
        for (k = 0; k < sizeof ki_numba_llvms / sizeof ki_numba_llvms[0]; k++) {
            const ki_numba_llvm *e = &ki_numba_llvms[k];
            int q;
            ko_printf(o, "%s\n    {\"numba\": [\"0.%d\", \"0.%d\"], \"llvm\": [", k ? "," : "", e->lo, e->hi);
            for (q = 0; q < 2 && e->llvm[q]; q++) ko_printf(o, "%s%d", q ? ", " : "", e->llvm[q]);
            ko_puts(o, "], \"names\": [");
            for (q = 0; q < 2 && e->llvm[q]; q++) {
                kcache__host_cpu_name_llvm(e->llvm[q], name, sizeof name);
                if (q) ko_puts(o, ", ");
                ko_json_cstr(o, name);
            }
            ko_puts(o, "], \"other_build\": "); ko_json_cstr(o, e->other);
            ko_puts(o, "}");
        }
        ko_puts(o, "\n  ]\n}\n");
        return;
    }
    ko_printf(o, "host CPU   %s (kcache's name: LLVM %d's)\n", stable, KCACHE__LLVM_NEWEST);
    {
        size_t en = 0, nf;
        pk_node tmpn;
        memset(&tmpn, 0, sizeof tmpn);
        tmpn.s = (const unsigned char *)feat;
        tmpn.n = strlen(feat);
        nf = feat_count(&tmpn, &en);
        ko_printf(o, "features   %zu listed, %zu enabled (as kcache names them; numba's LLVM lists its own set):\n  %s\n", nf, en, feat);
    }
    if (r == 2) ko_puts(o, "per LLVM   not tracked on this platform: every LLVM is taken to name it as above\n");
    else {
        char prev[128] = "";
        ko_puts(o, "per LLVM  ");
        for (v = KCACHE__LLVM_OLDEST; v <= KCACHE__LLVM_NEWEST; v++) {
            kcache__host_cpu_name_llvm(v, name, sizeof name);
            if (strcmp(name, prev) != 0) ko_printf(o, "%s %u+ %s", prev[0] ? "," : "", v, name);
            ki_fmt(prev, sizeof prev, "%s", name);
        }
        ko_putc(o, '\n');
    }
    ko_puts(o, "numba's    (numba -> its LLVM -> what that LLVM calls this CPU)\n");
    for (k = 0; k < sizeof ki_numba_llvms / sizeof ki_numba_llvms[0]; k++) {
        const ki_numba_llvm *e = &ki_numba_llvms[k];
        char n0[128], n1[128] = "";
        kcache__host_cpu_name_llvm(e->llvm[0], n0, sizeof n0);
        if (e->llvm[1]) kcache__host_cpu_name_llvm(e->llvm[1], n1, sizeof n1);
        char label[32];
        if (e->lo == e->hi) ki_fmt(label, sizeof label, "0.%d", e->lo);
        else ki_fmt(label, sizeof label, "0.%d-0.%d", e->lo, e->hi);
        ko_printf(o, "  %-10s LLVM %-2d %s", label, e->llvm[0], n0);
        if (e->llvm[1]) ko_printf(o, "; LLVM %d (%s) %s", e->llvm[1], e->other, n1);
        ko_putc(o, '\n');
    }
}

/* ---------------------------------------------------------------------------------------- */
/* --prune PATH...: removes the index and data files numba would crash on or can never use    */
/* again, so the next run recompiles cleanly.  A dry run unless --yes.  Only inside a          */
/* __pycache__, a PARENTDIR_SHA1 cache subdirectory (NUMBA_CACHE_DIR, the user-wide cache) or  */
/* IPython's numba_cache; only regular files named as numba names them; nothing else, ever.   */

typedef struct pr_ctx {
    const ki_opts *op;
    ki_out *o;
    size_t n_files, n_done, n_failed, n_indexes, n_left;
    int depth;
} pr_ctx;

static int pr_is_cache_dir(const char *dir)
{
    char parent[1024], hash[41];
    const char *b = path_base(dir);
    return dir_layout(b, parent, sizeof parent, hash) != LAYOUT_OTHER || strcmp(b, "numba_cache") == 0;
}

/* One file to remove: said, and removed with --yes (unlinkat on the directory's descriptor,
 * after checking the name is a regular file there, not a link). */
static void pr_remove(pr_ctx *C, int dfd, const char *dir, const char *name, const char *why)
{
    struct stat st;
    int done = 0;
    char err[200] = "";
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return;
    C->n_files++;
    if (C->op->prune_yes) {
        if (unlinkat(dfd, name, 0) == 0) { done = 1; C->n_done++; }
        else { ki_fmt(err, sizeof err, "%s", strerror(errno)); C->n_failed++; }
    }
    if (C->op->json) {
        ko_printf(C->o, "%s\n    {\"path\": ", C->n_files > 1 ? "," : "");
        {
            char p[8192];
            ki_fmt(p, sizeof p, "%s/%s", dir, name);
            ko_json_cstr(C->o, p);
        }
        ko_puts(C->o, ", \"reason\": "); ko_json_cstr(C->o, why);
        ko_printf(C->o, ", \"removed\": %s", done ? "true" : "false");
        ko_puts(C->o, ", \"error\": "); ko_json_cstr(C->o, err[0] ? err : NULL);
        ko_puts(C->o, "}");
    } else {
        ko_printf(C->o, "%s %s/%s\n           %s%s%s\n", C->op->prune_yes ? (done ? "removed   " : "FAILED    ") : "would remove", dir,
                  name, why, err[0] ? ": " : "", err);
    }
}

static int pr_name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* BASE.N.nbc -> BASE (into base), 1; else 0. */
static int pr_nbc_base(const char *name, char *base, size_t cap)
{
    size_t n = strlen(name), i;
    if (n < 5 || strcmp(name + n - 4, ".nbc") != 0) return 0;
    i = n - 4;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') i--;
    if (i == n - 4 || i < 2 || name[i - 1] != '.' || i - 1 >= cap) return 0;
    memcpy(base, name, i - 1);
    base[i - 1] = 0;
    return 1;
}

/* Assesses every index of one cache directory (only, when it is set, the one named only) and
 * removes what numba would crash on or never use: an index that raises, is stale or of another
 * numba version (--numba-version), or (--other-cpu) holds nothing for this CPU, with its data
 * files; a data file that raises; a data file no index lists. */
static void pr_dir(pr_ctx *C, int dfd, const char *dir, const char *only)
{
    DIR *d;
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0, k, j;
    unsigned char *kept;
    d = fdopendir(dfd);
    if (!d) { close(dfd); return; }
    while ((de = readdir(d)) != NULL && n < 200000) {
        size_t l = strlen(de->d_name);
        if (!(ends_with(de->d_name, ".nbi") || ends_with(de->d_name, ".nbc"))) continue;
        if (n == cap) {
            char **nn = (char **)realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
            if (!nn) break;
            names = nn;
        }
        names[n] = (char *)malloc(l + 1);
        if (!names[n]) break;
        memcpy(names[n++], de->d_name, l + 1);
    }
    qsort(names, n, sizeof *names, pr_name_cmp);
    kept = (unsigned char *)calloc(n ? n : 1, 1);    /* 1: a live index lists this .nbc */
    for (k = 0; k < n && kept; k++) {
        char path[8192], base[4096], err[600];
        unsigned char *buf;
        size_t len = 0;
        nb_index ix;
        nb_report *R;
        const char *why = NULL;
        char whybuf[1600];
        int all = 0;
        if (!ends_with(names[k], ".nbi")) continue;
        if (only && strcmp(only, names[k]) != 0) {
            /* not the one asked about: its data files are not orphans */
            ki_fmt(base, sizeof base, "%.*s", (int)(strlen(names[k]) - 4), names[k]);
            for (j = 0; j < n; j++) { char b2[4096]; if (pr_nbc_base(names[j], b2, sizeof b2) && strcmp(b2, base) == 0) kept[j] = 1; }
            continue;
        }
        C->n_indexes++;
        ki_fmt(path, sizeof path, "%s/%s", dir, names[k]);
        ki_fmt(base, sizeof base, "%.*s", (int)(strlen(names[k]) - 4), names[k]);
        buf = slurp_at(dfd, names[k], KI_MAX_FILE, &len);   /* the index in this directory: no link, no FIFO */
        if (!buf) continue;
        if (nb_decode(buf, len, &ix, err, sizeof err) != 0) {
            /* the version pickle does not decode: numba's pickle.load raises on it */
            ki_fmt(whybuf, sizeof whybuf, "numba raises reading it: %s", err);
            why = whybuf;
            all = 1;
        } else if ((R = (nb_report *)malloc(sizeof *R)) != NULL) {
            nb_assess(&ix, path, C->op, R);
            if (strcmp(R->verdict_code, "raises") == 0 && ix.body_err[0]) { ki_fmt(whybuf, sizeof whybuf, "%s", R->verdict); why = whybuf; all = 1; }
            else if (strcmp(R->verdict_code, "stale") == 0 || strcmp(R->verdict_code, "version-mismatch") == 0) {
                ki_fmt(whybuf, sizeof whybuf, "%s", R->verdict); why = whybuf; all = 1;
            } else if (C->op->prune_other_cpu && strcmp(R->verdict_code, "cpu-mismatch") == 0 && !R->n_match) {
                ki_fmt(whybuf, sizeof whybuf, "--other-cpu: %s", R->verdict); why = whybuf; all = 1;
            }
            if (!all) {
                /* a live index: its listed data files stay, unless they raise or (--other-cpu) are another CPU's */
                for (j = 0; j < ix.nov; j++) {
                    nb_overload *ov = &ix.ov[j];
                    size_t q;
                    const char *dwhy = NULL;
                    char dbuf[600];
                    if (!ov->data || !ov->data_name_ok) continue;
                    if (ov->data_bad) { ki_fmt(dbuf, sizeof dbuf, "numba raises loading it: %s", ov->data_err ? ov->data_err : "?"); dwhy = dbuf; }
                    else if (C->op->prune_other_cpu && ov->cpu_match == 0 && ov->shape_ok) {
                        ki_fmt(dbuf, sizeof dbuf, "--other-cpu: overload [%zu] is for CPU %.*s", j + 1, (int)(ov->cpu->n < 60 ? ov->cpu->n : 60),
                               (const char *)ov->cpu->s);
                        dwhy = dbuf;
                    }
                    for (q = 0; q < n; q++) {
                        if (strlen(names[q]) != ov->data->n || memcmp(names[q], ov->data->s, ov->data->n) != 0) continue;
                        if (dwhy) pr_remove(C, dfd, dir, names[q], dwhy);
                        else kept[q] = 1;
                    }
                }
            }
            nb_report_free(R);
            free(R);
        }
        nb_index_free(&ix);
        free(buf);
        if (all) {
            pr_remove(C, dfd, dir, names[k], why);
            for (j = 0; j < n; j++) {
                char b2[4096];
                if (pr_nbc_base(names[j], b2, sizeof b2) && strcmp(b2, base) == 0) {
                    pr_remove(C, dfd, dir, names[j], "the data of that index");
                    kept[j] = 2;
                }
            }
        } else {
            C->n_left++;
            for (j = 0; j < n; j++) {   /* what it does not list is an orphan (below) */
                char b2[4096];
                if (pr_nbc_base(names[j], b2, sizeof b2) && strcmp(b2, base) == 0 && !kept[j]) kept[j] = 3;
            }
        }
    }
    /* data files no live index lists: numba never reads them (it numbers new ones past them) */
    for (k = 0; k < n && kept; k++) {
        char b2[4096], ix_name[4200];
        if (!ends_with(names[k], ".nbc") || kept[k] == 1 || kept[k] == 2) continue;
        if (!pr_nbc_base(names[k], b2, sizeof b2)) continue;
        if (only && !(strlen(only) == strlen(b2) + 4 && strncmp(only, b2, strlen(b2)) == 0)) continue;
        ki_fmt(ix_name, sizeof ix_name, "%s.nbi", b2);
        pr_remove(C, dfd, dir, names[k], kept[k] == 3 ? "its index does not list it: numba never reads it" :
                                          "no index of that name: numba never reads it");
    }
    for (k = 0; k < n; k++) free(names[k]);
    free(names);
    free(kept);
    closedir(d);
}

/* Walks the directory open as dfd (its path abs, for what is printed and for pr_is_cache_dir):
 * every level below is opened relative to its parent's descriptor, never through a link, so a
 * directory someone swaps for a symlink during the walk cannot take it (and its removals, made
 * through these descriptors) outside the tree it was given.  Takes dfd. */
static void pr_walk(pr_ctx *C, int dfd, const char *abs)
{
    DIR *d;
    struct dirent *de;
    if (pr_is_cache_dir(abs)) { pr_dir(C, dfd, abs, NULL); return; }
    if (C->depth >= 32 || !(d = fdopendir(dfd))) { close(dfd); return; }
    C->depth++;
    while ((de = readdir(d)) != NULL) {
        char sub[8192];
        int fd;
        if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2]))) continue;
        if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) continue;
        fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;   /* not a directory, or a link to one: never followed */
        ki_fmt(sub, sizeof sub, "%s/%s", abs, de->d_name);
        pr_walk(C, fd, sub);
    }
    C->depth--;
    closedir(d);
}

static void pr_path(pr_ctx *C, const char *path)
{
    struct stat st;
    char abs[4096], dir[4096];
    int fd;
    if (ki_abspath(path, abs, sizeof abs) != 0 || lstat(abs, &st) != 0) {
        if (C->op->json) return;
        ko_printf(C->o, "left alone %s: %s\n", path, strerror(errno ? errno : ENOENT));
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        if ((fd = open(abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) pr_walk(C, fd, abs);
        return;
    }
    path_dirname(abs, dir, sizeof dir);
    if (!S_ISREG(st.st_mode) || !(ends_with(abs, ".nbi") || ends_with(abs, ".nbc")) || !pr_is_cache_dir(dir)) {
        if (!C->op->json)
            ko_printf(C->o, "left alone %s: only .nbi and .nbc files in a __pycache__ or a numba cache directory are pruned\n", abs);
        return;
    }
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) return;
    if (ends_with(abs, ".nbi")) pr_dir(C, fd, dir, path_base(abs));
    else {
        char b2[4096], ix_name[4200];
        if (!pr_nbc_base(path_base(abs), b2, sizeof b2)) { close(fd); return; }
        ki_fmt(ix_name, sizeof ix_name, "%s.nbi", b2);
        pr_dir(C, fd, dir, ix_name);
    }
}

static KI_MAYBE_UNUSED int ki_prune(const char *const *paths, int npaths, const ki_opts *op, ki_out *o)
{
    pr_ctx C;
    ki_opts op2 = *op;
    int i;
    op2.no_imports = 1;
    memset(&C, 0, sizeof C);
    C.op = &op2;
    C.o = o;
    if (op->json) ko_printf(o, "{\n  \"mode\": \"%s\",\n  \"files\": [", op->prune_yes ? "remove" : "dry-run");
    for (i = 0; i < npaths; i++) pr_path(&C, paths[i]);
    if (op->json) {
        if (C.n_files) ko_puts(o, "\n  ");
        ko_printf(o, "],\n  \"indexes_checked\": %zu, \"indexes_kept\": %zu, \"listed\": %zu, \"removed\": %zu, \"failed\": %zu\n}\n",
                  C.n_indexes, C.n_left, C.n_files, C.n_done, C.n_failed);
    } else {
        ko_printf(o, "%zu index%s checked, %zu kept; %zu file%s %s%s\n", C.n_indexes, C.n_indexes == 1 ? "" : "es", C.n_left, C.n_files,
                  C.n_files == 1 ? "" : "s", op->prune_yes ? "removed" : "would be removed (a dry run: --yes removes them)",
                  C.n_failed ? ", some FAILED" : "");
    }
    return C.n_failed ? 2 : 0;
}

/* ======================================================================================== */
/* kcache stores.                                                                            */
/*                                                                                           */
/* Read only: no kcache_open (it creates and repairs), no lock, no write, config.file read    */
/* with pread.  The formats are kcache.h's (>>store, >>index, >>key); its own decoders are    */
/* used wherever they exist, so the tool and the library agree on what is valid.  Everything  */
/* read is bounded: an entry's header (KS_MAX_HEADER), an index (KCACHE__IX_MAX), the units   */
/* tracked, the misses and bad entries kept, the report (KI_MAX_OUTPUT).                      */

#define KS_MAX_HEADER  (16u << 20) /* an entry header beyond this is damage (the largest real one: 14 MiB) */
#define KS_MAX_UNITS   65536       /* distinct units tracked by a store summary */
#define KS_SHOW_UNITS  10          /* units listed in a text summary */
#define KS_SHOW_MAX    1000        /* overloads, units listed at most (JSON too) */
#define KS_SHOW_MISSES 10          /* newest traced misses in a store summary */
#define KS_SHOW_BAD    20          /* bad entries listed by --verify */

static void ks_time(char *out, size_t cap, int64_t ns)
{
    time_t t;
    struct tm tm;
    if (ns <= 0) { ki_fmt(out, cap, "unknown time"); return; }
    t = (time_t)(ns / 1000000000);
    if (!gmtime_r(&t, &tm) || strftime(out, cap, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0) ki_fmt(out, cap, "?");
}

static void ks_size(char *out, size_t cap, uint64_t n)
{
    static const char units[] = "KMGTPE";
    double v = (double)n;
    int i = -1;
    if (n < 1024) { ki_fmt(out, cap, "%llu byte%s", (unsigned long long)n, n == 1 ? "" : "s"); return; }
    while (v >= 1024.0 && i < 5) { v /= 1024.0; i++; }
    ki_fmt(out, cap, "%.1f %ciB", v, units[i]);
}

static void ks_hex(kcache_hash128 d, char out[33]) { kcache_hash_hex(d, out); }
static int ks_same(kcache_hash128 a, kcache_hash128 b) { return a.lo == b.lo && a.hi == b.hi; }

static const char *ks_reason_word(uint32_t r) { return r < KCACHE_REASON_COUNT ? kcache_reason_name((kcache_reason)r) : "unknown"; }
static const char *ks_reason_text(uint32_t r) { return r < KCACHE_REASON_COUNT ? kcache__reason_text[r] : "unknown reason"; }
static const char *ks_type_name(uint32_t t)
{
    switch (t) {
    case KCACHE_FIELD_BYTES: return "bytes";
    case KCACHE_FIELD_STR: return "str";
    case KCACHE_FIELD_U64: return "u64";
    case KCACHE_FIELD_FILE: return "file";
    default: return "?";
    }
}
static const char *ks_policy_name(int p)
{
    return p == KCACHE_STAMP_MTIME ? "mtime" : p == KCACHE_STAMP_CONTENT ? "content" : "hybrid";
}

/* Bytes as text by kcache.h's rule (previews are already escaped by kcache: their backslashes
   are kept as they are, and escaping them again changes nothing). */
static void ks_text(ki_out *o, const char *s, size_t n) { ko_esc(o, s, n); }

/* Writes s starting at column col, breaking lines at spaces before column 78 (a word longer
   than a line is cut); continuation lines start with indent spaces.  Ends with a newline. */
static void ks_wrap(ki_out *o, const char *s, size_t col, size_t indent)
{
    const size_t width = 78;
    size_t k;
    while (*s && !o->full) {
        size_t sp = 0, w = 0;
        while (s[sp] == ' ') sp++;
        while (s[sp + w] && s[sp + w] != ' ') w++;
        if (!w) break; /* trailing spaces */
        if (col > indent && col + sp + w > width) {
            ko_putc(o, '\n');
            for (k = 0; k < indent; k++) ko_putc(o, ' ');
            col = indent;
            s += sp;
            continue;
        }
        for (k = 0; k < sp; k++) ko_putc(o, ' ');
        col += sp;
        s += sp;
        if (col + w > width) { /* alone on its line and still too long: cut it */
            size_t take = width > col + 8 ? width - col : 8;
            if (take > w) take = w;
            ks_text(o, s, take);
            s += take;
            if (*s) {
                ko_putc(o, '\n');
                for (k = 0; k < indent; k++) ko_putc(o, ' ');
                col = indent;
            }
            continue;
        }
        ks_text(o, s, w);
        col += w;
        s += w;
    }
    ko_putc(o, '\n');
}

static void ks_json_hex(ki_out *o, kcache_hash128 d)
{
    char hx[33];
    ks_hex(d, hx);
    ko_json_cstr(o, hx);
}
static void ks_json_time(ki_out *o, const char *key, int64_t ns)
{
    char t[64];
    ko_printf(o, "\"%s_ns\": %lld, \"%s\": ", key, (long long)ns, key);
    if (ns <= 0) { ko_puts(o, "null"); return; }
    ks_time(t, sizeof t, ns);
    ko_json_cstr(o, t);
}

/* Reads up to n bytes at off; the count read (short at the end of the file), -1 on error. */
static long long ks_pread(int fd, void *buf, size_t n, uint64_t off)
{
    size_t have = 0;
    while (have < n) {
        ssize_t r = pread(fd, (char *)buf + have, n - have, (off_t)(off + have));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return have ? (long long)have : -1;
        if (r == 0) break;
        have += (size_t)r;
    }
    return (long long)have;
}

/* Opens a file inside a store for reading: no symlink as the last component, never blocking
   on a FIFO planted there. */
static int ks_open_in(int dirfd, const char *rel)
{
    return openat(dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
}

/* ---------------------------------------------------------------------------------------- */
/* An entry: e/XX/<digest>.kce.                                                               */

typedef struct ks_entry {
    uint64_t file_size;
    unsigned version, flags;
    uint32_t hlen, rlen;
    uint64_t plen;
    kcache_hash128 digest, psum;
    int64_t created;
    int lengths_ok;          /* header, record and payload lengths agree with each other and the file */
    int hdr_sum;             /* 1 ok, 0 fails, -1 not checkable */
    int pad;                 /* 1 zero, 0 not, -1 not checkable */
    int rec;                 /* 1 decodes, 0 not, -1 not checkable */
    int rec_digest;          /* 1 the record's digest is the header's, 0 not, -1 unknown */
    int payload;             /* 1 checksum ok, 0 fails, -1 not checked */
    int name_digest;         /* 1 the file name is the header's digest, 0 not, -1 not a digest name */
    int key_set;             /* key must be freed */
    kcache_key key;          /* the decoded key record */
    const unsigned char *rec_bytes; /* into the caller's buffer */
    char problem[200];       /* the first thing wrong (in the order kcache checks), "" when sound */
} ks_entry;

static void ks_entry_free(ks_entry *e)
{
    if (e->key_set) kcache_key_free(&e->key);
    e->key_set = 0;
}

static void ks_problem(char *p, size_t cap, const char *fmt, ...) KI_PRINTF(3, 4);
static void ks_problem(char *p, size_t cap, const char *fmt, ...)
{
    va_list ap;
    if (p[0]) return; /* the first one stays */
    va_start(ap, fmt);
    vsnprintf(p, cap, fmt, ap);
    va_end(ap);
}

/* Decodes an entry's header from its first `have` bytes (the file has file_size).  0 when it is
   a kcache entry (sound or not: e->problem says), -1 with a message when it is not one at all. */
static int ks_entry_decode(const unsigned char *h, size_t have, uint64_t file_size, ks_entry *e, char *err, size_t errcap)
{
    uint64_t rec_end;
    memset(e, 0, sizeof *e);
    e->file_size = file_size;
    e->hdr_sum = e->pad = e->rec = e->rec_digest = e->payload = e->name_digest = -1;
    if (have > file_size) have = (size_t)file_size;
    if (have < 8 || memcmp(h, "KCENTRY", 8) != 0) {
        ki_fmt(err, errcap, "not a kcache entry (no KCENTRY magic)");
        return -1;
    }
    if (have < KCACHE__ENTRY_FIXED) {
        ki_fmt(err, errcap, "truncated: %zu bytes, shorter than an entry's fixed header (%d)", have, KCACHE__ENTRY_FIXED);
        return -1;
    }
    e->version = kcache__get_u16(h + 8);
    e->flags = kcache__get_u16(h + 10);
    /* version 2: a zstd payload (KCACHE_COMPRESS); its checksum is over the stored bytes, as here */
    if (e->version != KCACHE__ENTRY_VERSION && !(e->version == KCACHE__ENTRY_VERSION_ZSTD && e->flags == KCACHE__ENTRY_ZSTD)) {
        ki_fmt(err, errcap, "entry format version %u; this tool reads versions %d and %d (zstd payload)", e->version, KCACHE__ENTRY_VERSION,
               KCACHE__ENTRY_VERSION_ZSTD);
        return -1;
    }
    e->hlen = kcache__get_u32(h + 12);
    e->plen = kcache__get_u64(h + 16);
    e->digest.lo = kcache__get_u64(h + 24);
    e->digest.hi = kcache__get_u64(h + 32);
    e->psum.lo = kcache__get_u64(h + 40);
    e->psum.hi = kcache__get_u64(h + 48);
    e->created = (int64_t)kcache__get_u64(h + 56);
    e->rlen = kcache__get_u32(h + 64);
    rec_end = (uint64_t)KCACHE__ENTRY_FIXED + e->rlen;
    /* the order of kcache__store_read: lengths, header checksum, padding, key, payload */
    e->lengths_ok = e->hlen % 16 == 0 && e->hlen <= file_size && e->rlen <= e->hlen && rec_end + 8 + 16 <= e->hlen &&
                    e->plen == file_size - e->hlen;
    if (!e->lengths_ok) {
        if (e->hlen > file_size)
            ks_problem(e->problem, sizeof e->problem, "truncated: the header says %u bytes of header, the file has %llu",
                       e->hlen, (unsigned long long)file_size);
        else if (e->hlen % 16 != 0 || e->rlen > e->hlen || rec_end + 8 + 16 > e->hlen)
            ks_problem(e->problem, sizeof e->problem, "inconsistent lengths (header %u, key record %u bytes)", e->hlen, e->rlen);
        else
            ks_problem(e->problem, sizeof e->problem, "payload length %llu, but %llu bytes follow the header",
                       (unsigned long long)e->plen, (unsigned long long)(file_size - e->hlen));
    }
    if (rec_end + 8 <= have) {
        e->hdr_sum = kcache__get_u64(h + rec_end) == kcache_hash(h, (size_t)rec_end).lo;
        if (!e->hdr_sum) ks_problem(e->problem, sizeof e->problem, "header checksum fails");
    } else {
        ks_problem(e->problem, sizeof e->problem, "the key record (%u bytes) runs past the header", e->rlen);
    }
    if (e->hlen <= have && rec_end + 8 <= e->hlen) {
        size_t m;
        e->pad = 1;
        for (m = (size_t)rec_end + 8; m < e->hlen; m++)
            if (h[m] != 0) { e->pad = 0; break; }
        if (!e->pad) ks_problem(e->problem, sizeof e->problem, "the padding after the key record is not zero");
    }
    if (rec_end <= have) {
        e->key_set = 1;
        e->rec_bytes = h + KCACHE__ENTRY_FIXED;
        e->rec = kcache__record_parse(h + KCACHE__ENTRY_FIXED, e->rlen, &e->key) == KCACHE_OK;
        if (!e->rec) ks_problem(e->problem, sizeof e->problem, "the key record does not decode");
        else if (kcache__record_match(h + KCACHE__ENTRY_FIXED, e->rlen, &e->key, KCACHE_STAMP_HYBRID) != KCACHE__MATCH) {
            /* kcache__record_parse cuts a unit or name at a NUL byte; kcache's lookup compares the
               whole record, so no key can ever match this one */
            e->rec = 0;
            ks_problem(e->problem, sizeof e->problem, "the key record does not match its own decoding (a NUL byte in a name?)");
        }
        else {
            e->rec_digest = ks_same(e->key.digest, e->digest);
            if (!e->rec_digest) ks_problem(e->problem, sizeof e->problem, "the key record's digest is not the header's");
        }
    }
    return 0;
}

/* A header-level problem: kcache rejects the entry before looking at stamps or the payload. */
static int ks_entry_header_bad(const ks_entry *e)
{
    return !e->lengths_ok || e->hdr_sum != 1 || e->pad != 1 || e->rec != 1 || e->rec_digest != 1 || e->name_digest == 0;
}

static void ks_entry_payload_result(ks_entry *e, kcache_hash128 sum)
{
    e->payload = ks_same(sum, e->psum);
    if (!e->payload) ks_problem(e->problem, sizeof e->problem, "payload checksum fails");
}

/* The payload checksum, the payload being the rest of buf. */
static void ks_entry_payload_mem(const unsigned char *buf, size_t len, ks_entry *e)
{
    if (!e->lengths_ok || (uint64_t)len != e->file_size) return;
    ks_entry_payload_result(e, kcache_hash(buf + e->hlen, (size_t)e->plen));
}

/* The payload checksum, streamed from the file. */
static void ks_entry_payload_fd(int fd, ks_entry *e)
{
    static unsigned char buf[1 << 16];
    kcache_hash_state st;
    uint64_t done = 0;
    if (!e->lengths_ok) return;
    kcache_hash_init(&st);
    while (done < e->plen) {
        size_t n = e->plen - done < sizeof buf ? (size_t)(e->plen - done) : sizeof buf;
        long long r = ks_pread(fd, buf, n, e->hlen + done);
        if (r <= 0) {
            e->payload = 0;
            ks_problem(e->problem, sizeof e->problem, "the payload cannot be read (%s)", r < 0 ? strerror(errno) : "short file");
            return;
        }
        kcache_hash_update(&st, buf, (size_t)r);
        done += (uint64_t)r;
    }
    ks_entry_payload_result(e, kcache_hash_final(&st));
}

/* Reads and decodes an open entry file: its header always, its payload checksum with
   check_payload.  *hbuf receives the header bytes (free it).  0, or -1 with a message. */
static int ks_entry_read_fd(int fd, int check_payload, ks_entry *e, unsigned char **hbuf, char *err, size_t errcap)
{
    struct stat sb;
    unsigned char fixed[KCACHE__ENTRY_FIXED];
    size_t want;
    long long got;
    uint32_t hlen;
    *hbuf = NULL;
    memset(e, 0, sizeof *e);
    if (fstat(fd, &sb) != 0) { ki_fmt(err, errcap, "cannot stat: %s", strerror(errno)); return -1; }
    if (!S_ISREG(sb.st_mode)) { ki_fmt(err, errcap, "not a regular file"); return -1; }
    got = ks_pread(fd, fixed, sizeof fixed, 0);
    if (got < 0) { ki_fmt(err, errcap, "cannot read: %s", strerror(errno)); return -1; }
    if (got < (long long)sizeof fixed) return ks_entry_decode(fixed, (size_t)got, (uint64_t)sb.st_size, e, err, errcap);
    hlen = kcache__get_u32(fixed + 12);
    want = hlen < KCACHE__ENTRY_FIXED ? KCACHE__ENTRY_FIXED : hlen > KS_MAX_HEADER ? KS_MAX_HEADER : hlen;
    if ((uint64_t)want > (uint64_t)sb.st_size) want = (size_t)sb.st_size;
    *hbuf = (unsigned char *)malloc(want ? want : 1);
    if (!*hbuf) { ki_fmt(err, errcap, "out of memory"); return -1; }
    got = ks_pread(fd, *hbuf, want, 0);
    if (got < 0) { ki_fmt(err, errcap, "cannot read: %s", strerror(errno)); free(*hbuf); *hbuf = NULL; return -1; }
    if (ks_entry_decode(*hbuf, (size_t)got, (uint64_t)sb.st_size, e, err, errcap) != 0) {
        ks_entry_free(e);
        free(*hbuf);
        *hbuf = NULL;
        return -1;
    }
    if (hlen > KS_MAX_HEADER) ks_problem(e->problem, sizeof e->problem, "implausible header length %u", hlen);
    if (check_payload) ks_entry_payload_fd(fd, e);
    return 0;
}

/* Whether a file name is "<32 hex>.<ext>"; *d gets the digest it names. */
static int ks_digest_name(const char *name, const char *ext, kcache_hash128 *d)
{
    char tmp[40];
    size_t n = strlen(name);
    if (n != 36 || strcmp(name + 32, ext) != 0) return 0;
    memcpy(tmp, name, 32);
    memcpy(tmp + 32, ".kce", 5);
    return kcache__parse_entry_name(tmp, d);
}

/* ---------------------------------------------------------------------------------------- */
/* Dependencies: a file field's stamp against the file now.                                  */

typedef struct ks_dep {
    const kcache_key_field *f;
    char path[PATH_MAX];
    int checkable;           /* the path is known exactly */
    int found;               /* the preview kept only the path's end: the path was found (ks_dep_find) */
    const char *why_not;     /* when not */
    int exists;              /* stat succeeded */
    int regular;
    int err;                 /* errno of stat or of the read */
    int64_t mtime;
    uint64_t size;
    int hashed;              /* content hashed */
    int diff;                /* KCACHE__STAMP_* bits */
    int stale;               /* under the policy */
} ks_dep;

/* A preview's text unescaped into out (NUL-terminated): its length, or (size_t)-1 when it does not
   fit or holds a NUL. */
static size_t ks_unescape(const char *p, char *out, size_t cap)
{
    size_t o = 0;
    while (*p && o + 1 < cap) {
        char c = *p++;
        if (c == '\\' && *p) {
            char e = *p++;
            if (e == 'n') c = '\n';
            else if (e == 't') c = '\t';
            else if (e == 'x' && p[0] && p[1] && hexval((unsigned char)p[0]) >= 0 && hexval((unsigned char)p[1]) >= 0) {
                c = (char)(hexval((unsigned char)p[0]) * 16 + hexval((unsigned char)p[1]));
                p += 2;
            } else c = e;
        }
        out[o++] = c;
    }
    out[o] = 0;
    return *p || memchr(out, 0, o) ? (size_t)-1 : o;
}

/* The path a file field names, from its preview, when the preview holds all of it: the digest and
   length of what it unescapes to must be the field's. */
static int ks_dep_path(const kcache_key_field *f, char *out, size_t cap)
{
    size_t n = ks_unescape(f->preview, out, cap);
    return n == f->size && ks_same(kcache_hash(out, n), f->digest);
}

/* ---- a path longer than the preview keeps -------------------------------------------------
   kcache keeps a path's last 64 bytes ("...tail") and the digest and length of all of it. The
   missing start is looked for on this machine, breadth first (short paths first: system and home
   directories before deep trees), from the working directory's nearest ancestors and then from
   "/": a directory entry whose path runs to where the tail begins is a candidate, taken only when
   the whole path's length and XXH3-128 are the field's, so a wrong path is never reported. At
   most KS_FIND_DIRS directories are read: a path whose missing start is long and far from here
   may stay unknown (the verdict then says it was not checked). */
#define KS_FIND_DIRS 4000
#define KS_FIND_QUEUE 65536
typedef struct ks_find {
    const kcache_key_field *f;
    const char *tail;
    size_t tail_len, missing; /* the path is missing bytes, then the tail */
    unsigned dirs_left;
    char **queue;             /* directories to read, each ending in '/' and shorter than missing */
    size_t head, count;
    char *out;
    size_t cap;
    int found;
} ks_find;

/* p[0..missing) then the tail: the path when its digest is the field's. */
static void ks_find_try(ks_find *s, const char *p)
{
    if (s->missing + s->tail_len + 1 > s->cap) return;
    memcpy(s->out, p, s->missing);
    memcpy(s->out + s->missing, s->tail, s->tail_len + 1);
    s->found = ks_same(kcache_hash(s->out, s->missing + s->tail_len), s->f->digest);
}

static void ks_find_push(ks_find *s, const char *dir, size_t len)
{
    char *c;
    if (s->count >= KS_FIND_QUEUE || (c = (char *)malloc(len + 1)) == NULL) return;
    memcpy(c, dir, len + 1);
    s->queue[(s->head + s->count++) % KS_FIND_QUEUE] = c;
}

/* The entries of one directory (a path ending in '/', shorter than the missing start). */
static void ks_find_read(ks_find *s, const char *dir)
{
    static char buf[PATH_MAX];
    size_t len = strlen(dir);
    DIR *d;
    struct dirent *e;
    if (len >= s->missing || (d = opendir(dir)) == NULL) return;
    s->dirs_left--;
    memcpy(buf, dir, len);
    while (!s->found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name), full = len + n;
        int is_dir;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || full + 2 > sizeof buf) continue;
        memcpy(buf + len, e->d_name, n + 1);
        if (full >= s->missing) { /* the missing start ends inside this name: the rest of it must begin the tail */
            size_t over = full - s->missing;
            if (over <= s->tail_len && memcmp(buf + s->missing, s->tail, over) == 0) ks_find_try(s, buf);
            continue;
        }
        buf[full] = '/';
        buf[full + 1] = 0;
        if (full + 1 == s->missing) { ks_find_try(s, buf); continue; } /* ... or with its '/' */
#ifdef DT_DIR
        if (e->d_type == DT_DIR) is_dir = 1;
        else if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) is_dir = 0;
        else
#endif
        {
            struct stat sb;
            is_dir = stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode);
        }
        if (is_dir) ks_find_push(s, buf, full + 1);
    }
    closedir(d);
}

/* A cut path found again (see above): 1 with the path in out. */
static int ks_dep_search(const kcache_key_field *f, char *out, size_t cap)
{
    static char tail[KCACHE_PREVIEW_MAX], cwd[PATH_MAX];
    ks_find s;
    size_t n, tl, seeds = 0;
    if (strncmp(f->preview, "...", 3) != 0 || f->size >= PATH_MAX || (tl = ks_unescape(f->preview + 3, tail, sizeof tail)) == (size_t)-1 ||
        tl == 0 || tl >= f->size)
        return 0;
    memset(&s, 0, sizeof s);
    s.f = f;
    s.tail = tail;
    s.tail_len = tl;
    s.missing = (size_t)f->size - tl;
    s.dirs_left = KS_FIND_DIRS;
    s.out = out;
    s.cap = cap;
    if ((s.queue = (char **)malloc(KS_FIND_QUEUE * sizeof *s.queue)) == NULL) return 0;
    if (s.missing == 1) ks_find_try(&s, "/");
    /* the working directory's two nearest ancestors that fit (the program that made the key often
       ran nearby), then the root */
    if (getcwd(cwd, sizeof cwd) && cwd[0] == '/')
        for (n = strlen(cwd); n > 1 && seeds < 2; n--)
            if ((cwd[n] == '/' || cwd[n] == 0) && n + 1 < s.missing) {
                char c0 = cwd[n], c1 = cwd[n + 1];
                cwd[n] = '/', cwd[n + 1] = 0;
                ks_find_push(&s, cwd, n + 1);
                cwd[n] = c0, cwd[n + 1] = c1;
                seeds++;
            }
    ks_find_push(&s, "/", 1);
    while (!s.found && s.count && s.dirs_left) {
        char *dir = s.queue[s.head];
        s.head = (s.head + 1) % KS_FIND_QUEUE;
        s.count--;
        ks_find_read(&s, dir);
        free(dir);
    }
    while (s.count) {
        free(s.queue[s.head]);
        s.head = (s.head + 1) % KS_FIND_QUEUE;
        s.count--;
    }
    free(s.queue);
    return s.found;
}

/* ks_dep_search once per path: a unit's overloads mostly name the same dependencies, and a search
   that finds nothing reads KS_FIND_DIRS directories each time (a quarter second). The digest and
   length name the path; the last KS_FIND_MEMO answers are kept. */
#define KS_FIND_MEMO 16
static int ks_dep_find(const kcache_key_field *f, char *out, size_t cap)
{
    static struct { kcache_hash128 digest; uint64_t size; char *path; int found; } memo[KS_FIND_MEMO];
    static size_t used, next;
    size_t i;
    for (i = 0; i < used; i++)
        if (memo[i].size == f->size && ks_same(memo[i].digest, f->digest)) {
            if (!memo[i].found || strlen(memo[i].path) >= cap) return 0;
            memcpy(out, memo[i].path, strlen(memo[i].path) + 1);
            return 1;
        }
    i = used < KS_FIND_MEMO ? used++ : next++ % KS_FIND_MEMO;
    free(memo[i].path);
    memo[i].path = NULL;
    memo[i].digest = f->digest;
    memo[i].size = f->size;
    memo[i].found = ks_dep_search(f, out, cap);
    if (memo[i].found && (memo[i].path = (char *)malloc(strlen(out) + 1)) != NULL) memcpy(memo[i].path, out, strlen(out) + 1);
    else if (memo[i].found) memo[i].size = UINT64_MAX; /* no memory: not kept (no field is that long) */
    return memo[i].found;
}

/* Hashes a regular file, at most the size it had when opened (never blocks on a FIFO, never reads
   a device forever).  0, or an errno. */
static int ks_hash_file(const char *path, kcache_hash128 *out, uint64_t *size)
{
    static unsigned char buf[1 << 16];
    kcache_hash_state st;
    struct stat sb;
    uint64_t done = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), e;
    if (fd < 0) return errno ? errno : EIO;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) { e = errno ? errno : EINVAL; close(fd); return e ? e : EINVAL; }
    kcache_hash_init(&st);
    while (done < (uint64_t)sb.st_size) {
        size_t n = (uint64_t)sb.st_size - done < sizeof buf ? (size_t)((uint64_t)sb.st_size - done) : sizeof buf;
        long long r = ks_pread(fd, buf, n, done);
        if (r < 0) { e = errno; close(fd); return e ? e : EIO; }
        if (r == 0) break;
        kcache_hash_update(&st, buf, (size_t)r);
        done += (uint64_t)r;
    }
    close(fd);
    *out = kcache_hash_final(&st);
    *size = done;
    return 0;
}

static void ks_dep_check(const kcache_key_field *f, const ki_opts *op, ks_dep *d)
{
    struct stat sb;
    kcache_key_field now;
    memset(d, 0, sizeof *d);
    d->f = f;
    if (op->no_deps) { d->why_not = "not checked"; return; }
    if (!ks_dep_path(f, d->path, sizeof d->path)) {
        int cut = strncmp(f->preview, "...", 3) == 0 || f->size > KCACHE__PREVIEW_BYTES;
        if (!cut || !(d->found = ks_dep_find(f, d->path, sizeof d->path))) {
            d->why_not = cut ? "path cut, and not found here by its end, length and digest: cannot check"
                             : "the preview is not the path, cannot check";
            return;
        }
    }
    d->checkable = 1;
    if (stat(d->path, &sb) != 0) {
        d->err = errno;
        d->stale = 1; /* kcache_key_file fails: the program cannot even build this key */
        d->diff = KCACHE__STAMP_MTIME | KCACHE__STAMP_SIZE | KCACHE__STAMP_CONTENT;
        return;
    }
    d->exists = 1;
    d->regular = S_ISREG(sb.st_mode);
    d->mtime = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    d->size = (uint64_t)sb.st_size;
    memset(&now, 0, sizeof now);
    now.mtime_ns = d->mtime;
    now.file_size = d->size;
    if (d->regular && (d->err = ks_hash_file(d->path, &now.content, &now.file_size)) == 0) d->hashed = 1;
    if (!d->hashed) { now.content.lo = ~f->content.lo; now.content.hi = f->content.hi; } /* unreadable: differs */
    d->diff = kcache__stamp_diff(f, &now);
    d->stale = !d->hashed || kcache__stamp_stale(d->diff, op->stamp);
}

/* "mtime, size, content" for the differing parts. */
static void ks_dep_what(const ks_dep *d, char *out, size_t cap)
{
    ki_fmt(out, cap, "%s%s%s%s%s", (d->diff & KCACHE__STAMP_MTIME) ? "mtime" : "",
           (d->diff & KCACHE__STAMP_MTIME) && (d->diff & (KCACHE__STAMP_SIZE | KCACHE__STAMP_CONTENT)) ? ", " : "",
           (d->diff & KCACHE__STAMP_SIZE) ? "size" : "",
           (d->diff & KCACHE__STAMP_SIZE) && (d->diff & KCACHE__STAMP_CONTENT) ? ", " : "",
           (d->diff & KCACHE__STAMP_CONTENT) ? "content" : "");
}

/* One line about a dependency now: "mtime same, size same, content same", "missing now", ... */
static void ks_dep_now(const ks_dep *d, char *out, size_t cap)
{
    if (!d->checkable) { ki_fmt(out, cap, "%s", d->why_not ? d->why_not : "not checked"); return; }
    if (!d->exists) { ki_fmt(out, cap, "missing now (%s)", strerror(d->err)); return; }
    if (!d->regular) { ki_fmt(out, cap, "not a regular file now"); return; }
    if (!d->hashed) { ki_fmt(out, cap, "unreadable now (%s)", strerror(d->err)); return; }
    ki_fmt(out, cap, "mtime %s, size %s, content %s%s", (d->diff & KCACHE__STAMP_MTIME) ? (d->f->mtime_ns ? "differs" : "not recorded") : "same",
           (d->diff & KCACHE__STAMP_SIZE) ? "differs" : "same", (d->diff & KCACHE__STAMP_CONTENT) ? "differs" : "same",
           d->diff && !d->stale ? " (the stamp policy keeps it)" : "");
}

/* ---------------------------------------------------------------------------------------- */
/* An overload's verdict.                                                                    */

enum { KS_PRESENT, KS_MISSING, KS_CORRUPT, KS_STALE, KS_UNCHECKED, KS_NCODES };
static const char *const ks_code_name[KS_NCODES] = { "present", "missing", "corrupt", "stale", "unchecked" };

typedef struct ks_verdict {
    int code;
    char text[640];
} ks_verdict;

/* entry: 1 read (e decoded), 0 absent, -1 not looked for (no store); evicted_ns: when the eviction
   log says it left, 0 if it does not.  The order is the order kcache checks a lookup in: the
   file, its header, the dependencies' stamps, then the payload checksum. */
static void ks_verdict_of(int entry, const ks_entry *e, const char *entry_err, const ks_dep *deps, size_t ndeps,
                          int64_t evicted_ns, ks_verdict *v)
{
    size_t k, len = 0, nstale = 0, nskip = 0;
    char t[64];
    v->code = KS_PRESENT;
    v->text[0] = 0;
    for (k = 0; k < ndeps; k++) {
        if (deps[k].stale) nstale++;
        if (!deps[k].checkable) nskip++;
    }
    if (entry == 0) {
        v->code = KS_MISSING;
        if (evicted_ns) { ks_time(t, sizeof t, evicted_ns); ki_fmt(v->text, sizeof v->text, "entry missing: evicted by the size limit at %s", t); }
        else ki_fmt(v->text, sizeof v->text, "entry missing (evicted?)");
        return;
    }
    if (entry > 0 && (entry_err || ks_entry_header_bad(e))) {
        v->code = KS_CORRUPT;
        ki_fmt(v->text, sizeof v->text, "entry corrupt: %s", entry_err ? entry_err : e->problem);
        return;
    }
    if (nstale) {
        v->code = KS_STALE;
        len = (size_t)ki_fmt(v->text, sizeof v->text, "stale: ");
        for (k = 0; k < ndeps && len < sizeof v->text; k++) {
            char what[40];
            if (!deps[k].stale) continue;
            ks_dep_what(&deps[k], what, sizeof what);
            if (!deps[k].exists)
                len += (size_t)ki_fmt(v->text + len, sizeof v->text - len, "%sdep %s (%.100s) missing", len > 7 ? "; " : "",
                                      deps[k].f->name, deps[k].path);
            else
                len += (size_t)ki_fmt(v->text + len, sizeof v->text - len, "%sdep %s (%.100s) changed (%s)", len > 7 ? "; " : "",
                                      deps[k].f->name, deps[k].path, what);
        }
        return;
    }
    if (entry > 0 && e->payload == 0) {
        v->code = KS_CORRUPT;
        ki_fmt(v->text, sizeof v->text, "entry corrupt: %s", e->problem);
        return;
    }
    if (entry < 0) { v->code = KS_UNCHECKED; len = (size_t)ki_fmt(v->text, sizeof v->text, "entry not checked (no store)"); }
    else len = (size_t)ki_fmt(v->text, sizeof v->text, "present");
    if (nskip && len < sizeof v->text) {
        const char *why = "";
        for (k = 0; k < ndeps && !why[0]; k++) if (!deps[k].checkable && deps[k].why_not) why = deps[k].why_not;
        ki_fmt(v->text + len, sizeof v->text - len, " (%zu dependenc%s not checked: %s)", nskip, nskip == 1 ? "y" : "ies", why);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Fields.                                                                                   */

static int ks_preview_is_digest(const kcache_key_field *f)
{
    const char *p = f->preview;
    if (f->type != KCACHE_FIELD_BYTES || *p != '<') return 0;
    p++;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return strncmp(p, " bytes xxh128:", 14) == 0;
}

/* "    name  type  "preview"" lines of a key's fields (file fields with their stamp now, when deps). */
static void ks_fields_text(ki_out *o, const kcache_key *k, const ks_dep *deps, size_t indent)
{
    const kcache_key_field *f = kcache__key_fields(k);
    size_t w = 4, i, j, d = 0;
    for (i = 0; i < k->count; i++) { size_t l = strlen(f[i].name); if (l > w) w = l; }
    if (w > 22) w = 22;
    for (i = 0; i < k->count && !o->full; i++) {
        char line[400];
        size_t n = strlen(f[i].name), col;
        int quote = f[i].type != KCACHE_FIELD_U64 && !ks_preview_is_digest(&f[i]);
        for (j = 0; j < indent; j++) ko_putc(o, ' ');
        ks_text(o, f[i].name, n);
        col = indent + n;
        if (n > w) { ko_putc(o, '\n'); for (j = 0; j < indent + w; j++) ko_putc(o, ' '); col = indent + w; }
        for (; col < indent + w; col++) ko_putc(o, ' ');
        ko_printf(o, "  %-5s ", ks_type_name(f[i].type));
        col += 8;
        ki_fmt(line, sizeof line, "%s%s%s", quote ? "\"" : "", f[i].preview, quote ? "\"" : "");
        ks_wrap(o, line, col, indent + w + 8);
        if (f[i].type == KCACHE_FIELD_FILE && deps) {
            char now[200], t[64];
            const ks_dep *dp = &deps[d++];
            if (dp->found) { /* the preview shows only the path's end */
                for (j = 0; j < indent + 2; j++) ko_putc(o, ' ');
                ki_fmt(line, sizeof line, "path:   %s (found by the end, length and digest kept)", dp->path);
                ks_wrap(o, line, indent + 2, indent + 10);
            }
            for (j = 0; j < indent + 2; j++) ko_putc(o, ' ');
            ks_time(t, sizeof t, f[i].mtime_ns);
            ki_fmt(line, sizeof line, "stored: mtime %s, size %llu", f[i].mtime_ns ? t : "not recorded", (unsigned long long)f[i].file_size);
            ks_wrap(o, line, indent + 2, indent + 10);
            for (j = 0; j < indent + 2; j++) ko_putc(o, ' ');
            ks_dep_now(dp, now, sizeof now);
            ki_fmt(line, sizeof line, "now:    %s", now);
            ks_wrap(o, line, indent + 2, indent + 10);
        }
    }
}

static void ks_fields_json(ki_out *o, const kcache_key *k, const ks_dep *deps)
{
    const kcache_key_field *f = kcache__key_fields(k);
    size_t i, d = 0;
    ko_puts(o, "[");
    for (i = 0; i < k->count && !o->full; i++) {
        ko_printf(o, "%s{\"name\": ", i ? ", " : "");
        ko_json_cstr(o, f[i].name);
        ko_printf(o, ", \"type\": \"%s\", \"size\": %llu, \"preview\": ", ks_type_name(f[i].type), (unsigned long long)f[i].size);
        ko_json_cstr(o, f[i].preview);
        ko_puts(o, ", \"digest\": ");
        ks_json_hex(o, f[i].digest);
        if (f[i].type == KCACHE_FIELD_FILE) {
            ko_printf(o, ", \"stamp\": {\"mtime_ns\": %lld, \"size\": %llu, \"content\": ", (long long)f[i].mtime_ns,
                      (unsigned long long)f[i].file_size);
            ks_json_hex(o, f[i].content);
            ko_puts(o, "}");
            if (deps) {
                const ks_dep *dp = &deps[d++];
                ko_printf(o, ", \"now\": {\"checked\": %s", dp->checkable ? "true" : "false");
                if (!dp->checkable) { ko_puts(o, ", \"why\": "); ko_json_cstr(o, dp->why_not); }
                else {
                    ko_puts(o, ", \"path\": ");
                    ko_json_cstr(o, dp->path);
                    ko_printf(o, ", \"path_found\": %s, \"exists\": %s", dp->found ? "true" : "false", dp->exists ? "true" : "false");
                    if (dp->exists)
                        ko_printf(o, ", \"mtime_ns\": %lld, \"size\": %llu, \"regular\": %s, \"hashed\": %s", (long long)dp->mtime,
                                  (unsigned long long)dp->size, dp->regular ? "true" : "false", dp->hashed ? "true" : "false");
                    ko_printf(o, ", \"mtime_same\": %s, \"size_same\": %s, \"content_same\": %s, \"stale\": %s",
                              (dp->diff & KCACHE__STAMP_MTIME) ? "false" : "true", (dp->diff & KCACHE__STAMP_SIZE) ? "false" : "true",
                              (dp->diff & KCACHE__STAMP_CONTENT) ? "false" : "true", dp->stale ? "true" : "false");
                }
                ko_puts(o, "}");
            }
        }
        ko_puts(o, "}");
    }
    ko_puts(o, "]");
}

/* The dependency checks of a key's file fields, in field order (free the result). */
static ks_dep *ks_deps_of(const kcache_key *k, const ki_opts *op, size_t *n)
{
    const kcache_key_field *f = kcache__key_fields(k);
    size_t i, c = 0;
    ks_dep *d;
    *n = 0;
    for (i = 0; i < k->count; i++) c += f[i].type == KCACHE_FIELD_FILE;
    d = (ks_dep *)calloc(c ? c : 1, sizeof *d);
    if (!d) return NULL;
    for (i = 0; i < k->count; i++)
        if (f[i].type == KCACHE_FIELD_FILE) ks_dep_check(&f[i], op, &d[(*n)++]);
    return d;
}

/* ---------------------------------------------------------------------------------------- */
/* A unit's index: i/XX/<xxh128 of the unit>.kci, an append-only log replayed as kcache does.  */

typedef struct ks_index {
    const unsigned char *buf;
    size_t len, hlen, ulen;
    size_t skipped, stretches;       /* bytes that do not decode as a record (kcache skips them), in how many places */
    size_t skipped_end;              /* (decoding) just past the last skipped byte, from hlen */
    char unit[KCACHE_UNIT_MAX];      /* the unit, NUL-terminated (ulen bytes; a NUL inside cuts it) */
    uint64_t compacted;              /* the log's length after its last rewrite */
    size_t records, kinds[4];        /* records decoded, by kind (live, gone, missed, forgotten) */
    kcache__ix_item *list[KCACHE__IX_LISTS];
    uint32_t n[KCACHE__IX_LISTS], cap[KCACHE__IX_LISTS];
    size_t dropped[KCACHE__IX_LISTS]; /* older gone and missed items kcache forgets too */
} ks_index;

static void ks_index_free(ks_index *ix)
{
    int l;
    for (l = 0; l < KCACHE__IX_LISTS; l++) free(ix->list[l]);
    memset(ix, 0, sizeof *ix);
}

static int ks_index_push(ks_index *ix, int l, const kcache__ix_item *it)
{
    if (l != KCACHE__IX_LIVE && ix->n[l] == KCACHE__IX_KEEP) { /* bounded as kcache bounds it: the oldest goes */
        memmove(ix->list[l], ix->list[l] + 1, sizeof *it * (KCACHE__IX_KEEP - 1));
        ix->n[l]--;
        ix->dropped[l]++;
    }
    if (ix->n[l] == ix->cap[l]) {
        uint32_t nc = ix->cap[l] ? ix->cap[l] * 2 : 8;
        kcache__ix_item *ni = (kcache__ix_item *)realloc(ix->list[l], sizeof *ni * nc);
        if (!ni) return 0;
        ix->list[l] = ni;
        ix->cap[l] = nc;
    }
    ix->list[l][ix->n[l]++] = *it;
    return 1;
}

/* Decodes an index held in memory (buf stays the caller's; items point into it) as
   kcache__ix_read does: a damaged or torn record is skipped byte by byte up to the next sound
   one.  0 when its header is sound; -1 with a message when it is not a kcache index or its
   header fails. */
static int ks_index_decode(const unsigned char *buf, size_t len, ks_index *ix, char *err, size_t errcap)
{
    kcache__rbuf r;
    kcache__ix_item *recs = NULL;
    unsigned char *kinds = NULL;
    uint32_t *table = NULL;
    size_t cap, tsz, mask, nrec = 0, i;
    unsigned ver;
    memset(ix, 0, sizeof *ix);
    ix->buf = buf;
    ix->len = len;
    if (len < 8 || memcmp(buf, "KCINDEX", 8) != 0) { ki_fmt(err, errcap, "not a kcache index (no KCINDEX magic)"); return -1; }
    if (len < 26) { ki_fmt(err, errcap, "truncated: %zu bytes, shorter than an index header", len); return -1; }
    ver = kcache__get_u16(buf + 8);
    if (ver != KCACHE__IX_VERSION) {
        ki_fmt(err, errcap, "index format version %u; this tool reads version %d", ver, KCACHE__IX_VERSION);
        return -1;
    }
    ix->ulen = kcache__get_u16(buf + 24);
    if (ix->ulen == 0 || ix->ulen >= KCACHE_UNIT_MAX) { ki_fmt(err, errcap, "implausible unit name length %zu", ix->ulen); return -1; }
    ix->hlen = 26 + ix->ulen + 8;
    if (len < ix->hlen) { ki_fmt(err, errcap, "truncated: %zu bytes, the header needs %zu", len, ix->hlen); return -1; }
    if (kcache__get_u64(buf + ix->hlen - 8) != kcache_hash(buf, ix->hlen - 8).lo) {
        ki_fmt(err, errcap, "index header checksum fails");
        return -1;
    }
    memcpy(ix->unit, buf + 26, ix->ulen);
    ix->unit[ix->ulen] = 0;
    ix->compacted = kcache__get_u64(buf + 16);
    cap = (len - ix->hlen) / 60 + 1; /* a record is at least 60 bytes */
    for (tsz = 64; tsz < cap * 2; tsz <<= 1) {
    }
    mask = tsz - 1;
    recs = (kcache__ix_item *)malloc(sizeof *recs * cap);
    kinds = (unsigned char *)malloc(cap);
    table = (uint32_t *)malloc(sizeof *table * tsz);
    if (!recs || !kinds || !table) {
        free(recs); free(kinds); free(table);
        ki_fmt(err, errcap, "out of memory");
        return -1;
    }
    memset(table, 0xff, sizeof *table * tsz);
    r.p = buf; r.len = len; r.pos = ix->hlen; r.bad = 0;
    while (nrec < cap && r.pos < r.len) {
        size_t at = r.pos, h;
        int kind = kcache__ix_decode(&r, &recs[nrec]);
        if (kind < 0) { /* damaged or torn: look for the next sound record, as kcache does */
            if (!ix->skipped || at != ix->hlen + ix->skipped_end) ix->stretches++;
            ix->skipped++;
            ix->skipped_end = at + 1 - ix->hlen;
            r.pos = at + 1;
            continue;
        }
        kinds[nrec] = (unsigned char)kind;
        ix->kinds[kind]++;
        if (kind != KCACHE__IX_MISSED) { /* the latest state of each digest wins */
            for (h = (size_t)recs[nrec].digest.lo & mask; table[h] != 0xffffffffu; h = (h + 1) & mask)
                if (ks_same(recs[table[h]].digest, recs[nrec].digest)) break;
            table[h] = (uint32_t)nrec;
        }
        nrec++;
    }
    if (r.pos < r.len) { ix->skipped += r.len - r.pos; if (ix->skipped_end != r.pos - ix->hlen) ix->stretches++; }
    ix->records = nrec;
    for (i = 0; i < nrec; i++) {
        size_t h;
        int ok = 1;
        if (kinds[i] == KCACHE__IX_MISSED) ok = ks_index_push(ix, KCACHE__IX_MISSED, &recs[i]);
        else if (kinds[i] != KCACHE__IX_FORGET) {
            for (h = (size_t)recs[i].digest.lo & mask; table[h] != 0xffffffffu; h = (h + 1) & mask)
                if (ks_same(recs[table[h]].digest, recs[i].digest)) break;
            if (table[h] == i) ok = ks_index_push(ix, kinds[i], &recs[i]);
        }
        if (!ok) {
            free(recs); free(kinds); free(table);
            ks_index_free(ix);
            ki_fmt(err, errcap, "out of memory");
            return -1;
        }
    }
    free(recs);
    free(kinds);
    free(table);
    return 0;
}

/* Reads a whole index file (at most KCACHE__IX_MAX bytes, as kcache reads it). */
static unsigned char *ks_read_index_fd(int fd, size_t *len, char *err, size_t errcap)
{
    struct stat sb;
    unsigned char *buf;
    long long got;
    if (fstat(fd, &sb) != 0) { ki_fmt(err, errcap, "cannot stat: %s", strerror(errno)); return NULL; }
    if (!S_ISREG(sb.st_mode)) { ki_fmt(err, errcap, "not a regular file"); return NULL; }
    if ((uint64_t)sb.st_size > KCACHE__IX_MAX) {
        ki_fmt(err, errcap, "%lld bytes: larger than any index kcache reads (%zu MiB)", (long long)sb.st_size, KCACHE__IX_MAX >> 20);
        return NULL;
    }
    buf = (unsigned char *)malloc(sb.st_size ? (size_t)sb.st_size : 1);
    if (!buf) { ki_fmt(err, errcap, "out of memory"); return NULL; }
    got = ks_pread(fd, buf, (size_t)sb.st_size, 0);
    if (got < 0) { ki_fmt(err, errcap, "cannot read: %s", strerror(errno)); free(buf); return NULL; }
    *len = (size_t)got;
    return buf;
}

/* ---------------------------------------------------------------------------------------- */
/* config.file: the accounting header, the eviction log, the use table.                      */

typedef struct ks_cf {
    int present;             /* a regular file of at least a header's size */
    int valid;               /* as kcache__cf_valid decides */
    int magic_ok, version_ok, geometry_ok, sum_ok;
    uint64_t file_size, nslots;
    uint32_t version, lg;
    uint64_t accounted, entries, generation, limit, evictions;
    uint32_t busy;
    int64_t created;
    uint64_t evlog_next;
    struct { kcache_hash128 d; int64_t when; uint64_t size; } evlog[KCACHE__EVLOG_SLOTS];
    int evlog_n;             /* slots in use */
    char why[160];           /* when not present or not valid */
} ks_cf;

/* Decodes config.file's first page (hdr holds KCACHE__CF_HEADER bytes) of a file of file_size. */
static void ks_cf_decode(const unsigned char *hdr, uint64_t file_size, ks_cf *c)
{
    int i;
    memset(c, 0, sizeof *c);
    c->present = 1;
    c->file_size = file_size;
    c->magic_ok = memcmp(hdr, "KCACHECF", 8) == 0;
    c->version = kcache__get_u32(hdr + 8);
    c->version_ok = c->version == KCACHE__CF_VERSION && kcache__get_u32(hdr + 12) == KCACHE__CF_HEADER;
    c->lg = kcache__get_u32(hdr + 16);
    c->geometry_ok = kcache__get_u32(hdr + 20) == KCACHE__WAYS && c->lg >= 4 && c->lg <= 24 &&
                     file_size == KCACHE__CF_HEADER + ((uint64_t)KCACHE__WAYS << c->lg) * KCACHE__SLOT;
    c->sum_ok = kcache__get_u64(hdr + KCACHE__CF_SUMMED) == kcache_hash(hdr, KCACHE__CF_SUMMED).lo;
    c->valid = kcache__cf_valid(hdr, file_size);
    c->accounted = kcache__get_u64(hdr + 24);
    c->entries = kcache__get_u64(hdr + 32);
    c->generation = kcache__get_u64(hdr + 40);
    c->busy = kcache__get_u32(hdr + 48);
    c->limit = kcache__get_u64(hdr + 56);
    c->evictions = kcache__get_u64(hdr + 64);
    c->created = (int64_t)kcache__get_u64(hdr + 72);
    c->evlog_next = kcache__get_u64(hdr + KCACHE__EVLOG_AT - 8);
    for (i = 0; i < KCACHE__EVLOG_SLOTS; i++) {
        const unsigned char *s = hdr + KCACHE__EVLOG_AT + i * 32;
        c->evlog[i].d.lo = kcache__get_u64(s);
        c->evlog[i].d.hi = kcache__get_u64(s + 8);
        c->evlog[i].when = (int64_t)kcache__get_u64(s + 16);
        c->evlog[i].size = kcache__get_u64(s + 24);
        if (c->evlog[i].d.lo || c->evlog[i].d.hi) c->evlog_n++;
    }
    /* the use table's geometry: the file's size decides it, as kcache maps it */
    if (file_size > KCACHE__CF_HEADER && (file_size - KCACHE__CF_HEADER) % KCACHE__SLOT == 0) {
        uint64_t n = (file_size - KCACHE__CF_HEADER) / KCACHE__SLOT;
        if (n >= 4 * KCACHE__WAYS && n <= ((uint64_t)KCACHE__WAYS << 24) && (n & (n - 1)) == 0) c->nslots = n;
    }
    if (!c->valid)
        ki_fmt(c->why, sizeof c->why, "%s", !c->magic_ok ? "no KCACHECF magic" : !c->version_ok ? "another format version"
                                           : !c->geometry_ok ? "its size does not fit its use table" : "header checksum fails");
}

/* When the eviction log says d left the store (0 when it does not remember it). */
static int64_t ks_cf_evicted(const ks_cf *c, kcache_hash128 d)
{
    int i;
    if (!c || !c->present || !c->magic_ok) return 0;
    for (i = 0; i < KCACHE__EVLOG_SLOTS; i++)
        if (c->evlog[i].d.lo == d.lo && c->evlog[i].d.hi == d.hi) return c->evlog[i].when ? c->evlog[i].when : 1;
    return 0;
}

/* Reads config.file in a store (pread only).  0 when it is there and readable (valid or not). */
static int ks_cf_read(int dirfd, ks_cf *c)
{
    unsigned char hdr[KCACHE__CF_HEADER];
    struct stat sb;
    int fd = ks_open_in(dirfd, "config.file");
    memset(c, 0, sizeof *c);
    if (fd < 0) { ki_fmt(c->why, sizeof c->why, "%s", errno == ENOENT ? "missing" : strerror(errno)); return -1; }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) { close(fd); ki_fmt(c->why, sizeof c->why, "not a regular file"); return -1; }
    if (sb.st_size < KCACHE__CF_HEADER || ks_pread(fd, hdr, sizeof hdr, 0) != (long long)sizeof hdr) {
        close(fd);
        ki_fmt(c->why, sizeof c->why, "truncated (%lld bytes)", (long long)sb.st_size);
        return -1;
    }
    close(fd);
    ks_cf_decode(hdr, (uint64_t)sb.st_size, c);
    return 0;
}

/* The use table's slot for d (one pread of its bucket); 1 with its last use and size when found. */
static int ks_slot_lookup(int cffd, const ks_cf *c, kcache_hash128 d, int64_t *use, uint64_t *size)
{
    unsigned char b[KCACHE__WAYS * KCACHE__SLOT];
    uint64_t bucket;
    int w;
    if (cffd < 0 || !c->nslots) return 0;
    bucket = (d.lo & (c->nslots / KCACHE__WAYS - 1)) * KCACHE__WAYS;
    if (ks_pread(cffd, b, sizeof b, KCACHE__CF_HEADER + bucket * KCACHE__SLOT) != (long long)sizeof b) return 0;
    for (w = 0; w < KCACHE__WAYS; w++) {
        const unsigned char *s = b + w * KCACHE__SLOT;
        if (kcache__get_u64(s) == d.lo && kcache__get_u64(s + 8) == d.hi) {
            *use = (int64_t)kcache__get_u64(s + 16);
            *size = kcache__get_u64(s + 24);
            return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Explaining a traced miss from the index it is in.                                          */

/* Why a traced miss missed, in words: the closest live overload and the fields that differ, the
   dependency that changed, when it was evicted... */
static void ks_explain_miss(const ks_index *ix, const kcache__ix_item *m, const ks_cf *cf, int policy, char *out, size_t cap)
{
    kcache__sb b;
    kcache_key now;
    char t[64];
    uint32_t i;
    b.p = out; b.cap = cap; b.len = 0;
    out[0] = 0;
    if (kcache__record_parse(m->rec, m->rec_len, &now) != KCACHE_OK) {
        kcache_key_free(&now);
        kcache__sb_add(&b, "%s (the missed key's record does not decode)", ks_reason_text(m->reason));
        return;
    }
    switch (m->reason) {
    case KCACHE_REASON_FIELD: {
        /* the closest overload live now, else the closest of those gone since */
        kcache_key best, cand;
        int best_eq = -1, l;
        for (l = KCACHE__IX_LIVE; l <= KCACHE__IX_GONE && best_eq < 0; l++) {
            for (i = 0; i < ix->n[l]; i++) {
                int eq = kcache__equal_fields(ix->list[l][i].rec, ix->list[l][i].rec_len, &now, &cand);
                if (eq >= 0) kcache__keep_closest(&best, &best_eq, &cand, eq);
            }
            if (best_eq >= 0) {
                kcache__sb_add(&b, "closest of %u %s overload(s): ", ix->n[l], l == KCACHE__IX_LIVE ? "live" : "since gone");
                kcache__sb_diff(&b, &best, &now);
                kcache_key_free(&best);
            }
        }
        if (best_eq < 0) kcache__sb_add(&b, "a field differs (no overload left to compare with)");
        break;
    }
    case KCACHE_REASON_STAMP: {
        int at = -1;
        kcache_key stored;
        for (i = ix->n[KCACHE__IX_GONE]; i-- > 0;)
            if (ks_same(ix->list[KCACHE__IX_GONE][i].digest, m->digest)) { at = (int)i; break; }
        if (at >= 0 && kcache__record_parse(ix->list[KCACHE__IX_GONE][at].rec, ix->list[KCACHE__IX_GONE][at].rec_len, &stored) == KCACHE_OK &&
            stored.count == now.count) {
            size_t before;
            kcache__sb_add(&b, "a dependency changed: ");
            before = b.len;
            kcache__sb_stamps(&b, &stored, &now, policy);
            if (b.len == before) kcache__sb_add(&b, "(the stamps differ under another policy than %s)", ks_policy_name(policy));
        } else {
            kcache__sb_add(&b, "a dependency changed (the stored stamps are no longer in the index)");
        }
        if (at >= 0) kcache_key_free(&stored);
        break;
    }
    case KCACHE_REASON_EVICTED: {
        int64_t when = ks_cf_evicted(cf, m->digest);
        for (i = 0; i < ix->n[KCACHE__IX_GONE] && !when; i++)
            if (ks_same(ix->list[KCACHE__IX_GONE][i].digest, m->digest)) when = ix->list[KCACHE__IX_GONE][i].when;
        ks_time(t, sizeof t, when);
        kcache__sb_add(&b, "evicted by the size limit%s%s", when > 1 ? " at " : "", when > 1 ? t : "");
        break;
    }
    case KCACHE_REASON_COLD:
        kcache__sb_add(&b, "cold: the unit had no stored overload then");
        break;
    default:
        kcache__sb_add(&b, "%s", ks_reason_text(m->reason));
        break;
    }
    kcache_key_free(&now);
    if (b.len >= cap && cap > 4) memcpy(out + cap - 4, "...", 4);
}

/* ---------------------------------------------------------------------------------------- */
/* The report of one unit's index.                                                           */

typedef struct ks_store_ref {
    int dirfd;               /* the store the index belongs to, or -1 */
    int cffd;                /* its config.file, or -1 */
    ks_cf cf;
    char path[4096];         /* its absolute path, "" when none */
} ks_store_ref;

/* What checking one live overload found. */
typedef struct ks_over {
    const kcache__ix_item *it;
    kcache_key key;          /* from the entry's record when it decodes, else the index's */
    int key_ok;
    ks_entry e;
    int entry;               /* 1 read, 0 absent, -1 not looked for */
    char entry_err[160];     /* the entry exists but cannot be read as one */
    int64_t evicted;
    int rec_differs;         /* the entry's key record is not the index's */
    ks_dep *deps;
    size_t ndeps;
    ks_verdict v;
} ks_over;

static void ks_over_free(ks_over *ov)
{
    if (ov->key_ok) kcache_key_free(&ov->key);
    ks_entry_free(&ov->e);
    free(ov->deps);
    memset(ov, 0, sizeof *ov);
}

/* Checks one live overload: its entry in the store (header, key, payload) and its dependencies. */
static void ks_over_check(const kcache__ix_item *it, const ks_store_ref *st, const ki_opts *op, ks_over *ov)
{
    const kcache_key *k = NULL;
    memset(ov, 0, sizeof *ov);
    ov->it = it;
    ov->entry = -1;
    if (st && st->dirfd >= 0) {
        char rel[48];
        int fd;
        kcache__entry_name(it->digest, rel);
        fd = ks_open_in(st->dirfd, rel);
        if (fd < 0) {
            if (errno == ENOENT || errno == ENOTDIR) { ov->entry = 0; ov->evicted = ks_cf_evicted(&st->cf, it->digest); }
            else { ov->entry = 1; ki_fmt(ov->entry_err, sizeof ov->entry_err, "cannot open %s: %s", rel, errno == ELOOP ? "a symlink in place of the entry" : strerror(errno)); }
        } else {
            unsigned char *h = NULL;
            char err[200];
            ov->entry = 1;
            if (ks_entry_read_fd(fd, 1, &ov->e, &h, err, sizeof err) != 0) ki_fmt(ov->entry_err, sizeof ov->entry_err, "%s", err);
            else {
                if (!ks_same(ov->e.digest, it->digest)) { ov->e.name_digest = 0; ks_problem(ov->e.problem, sizeof ov->e.problem, "the entry's digest is not its file name's"); }
                else ov->e.name_digest = 1;
                if (ov->e.rec_bytes && (ov->e.rlen != it->rec_len || memcmp(ov->e.rec_bytes, it->rec, it->rec_len) != 0)) ov->rec_differs = 1;
                if (ov->e.rec == 1) { k = &ov->e.key; } /* the record kcache checks a lookup against */
                ov->e.rec_bytes = NULL;                 /* h goes now */
            }
            free(h);
            close(fd);
        }
    }
    if (k) {
        ov->key = *k;                /* moved: the entry no longer owns it */
        ov->e.key_set = 0;
        ov->key_ok = 1;
    } else {
        ov->key_ok = 1;
        if (kcache__record_parse(it->rec, it->rec_len, &ov->key) != KCACHE_OK) {
            kcache_key_free(&ov->key);
            ov->key_ok = 0;
        }
    }
    if (ov->key_ok) ov->deps = ks_deps_of(&ov->key, op, &ov->ndeps);
    ks_verdict_of(ov->entry, &ov->e, ov->entry_err[0] ? ov->entry_err : NULL, ov->deps, ov->ndeps, ov->evicted, &ov->v);
    if (!ov->key_ok && ov->v.code == KS_PRESENT) {
        ov->v.code = KS_CORRUPT;
        ki_fmt(ov->v.text, sizeof ov->v.text, "index record corrupt: its key record does not decode");
    }
}

static void ks_short_hex(kcache_hash128 d, char out[33])
{
    ks_hex(d, out);
    out[16] = 0;
}

static void ks_index_text(ki_out *o, const ks_index *ix, const char *file, const ks_store_ref *st, const ki_opts *op)
{
    uint32_t i;
    size_t counts[KS_NCODES];
    char t[64], sz[48], hx[33], line[800];
    memset(counts, 0, sizeof counts);
    ko_puts(o, "index      ");
    ks_wrap(o, file, 11, 11);
    ko_puts(o, "unit       ");
    ks_text(o, ix->unit, ix->ulen);
    ko_putc(o, '\n');
    ks_size(sz, sizeof sz, ix->len);
    ko_printf(o, "log        %zu record%s, %s", ix->records, ix->records == 1 ? "" : "s", sz);
    if (ix->compacted) { ks_size(sz, sizeof sz, ix->compacted); ko_printf(o, " (rewritten at %s)", sz); }
    ko_putc(o, '\n');
    if (ix->skipped)
        ko_printf(o, "           damaged: %zu byte%s in %zu place%s do%s not decode as records (a torn\n"
                     "           tail or damage: kcache skips %s and reads on)\n",
                  ix->skipped, ix->skipped == 1 ? "" : "s", ix->stretches, ix->stretches == 1 ? "" : "s",
                  ix->skipped == 1 ? "es" : "", ix->skipped == 1 ? "it" : "them");
    if (st && st->path[0]) { ko_puts(o, "store      "); ks_wrap(o, st->path, 11, 11); }
    else ko_puts(o, "store      none (the index is not inside a store's i/XX/): entries not checked\n");
    ko_printf(o, "stamps     %s (%s)\n", ks_policy_name(op->stamp), op->stamp_from);
    ko_printf(o, "overloads  %u live\n", ix->n[KCACHE__IX_LIVE]);
    for (i = 0; i < ix->n[KCACHE__IX_LIVE] && !o->full; i++) {
        ks_over ov;
        const kcache__ix_item *it = &ix->list[KCACHE__IX_LIVE][i];
        ks_over_check(it, st, op, &ov);
        counts[ov.v.code]++;
        if (i < KS_SHOW_MAX) {
            ks_short_hex(it->digest, hx);
            ks_time(t, sizeof t, it->when);
            ks_size(sz, sizeof sz, it->size);
            ko_printf(o, "  [%u] %s  stored %s, %s\n", i + 1, hx, t, sz);
            if (ov.key_ok) ks_fields_text(o, &ov.key, ov.deps, 6);
            if (ov.rec_differs) ko_puts(o, "      note: the entry's key record is not the index's (the entry's is shown)\n");
            ki_fmt(line, sizeof line, "verdict: %s", ov.v.text);
            ko_puts(o, "      ");
            ks_wrap(o, line, 6, 15);
        }
        ks_over_free(&ov);
    }
    if (ix->n[KCACHE__IX_LIVE] > KS_SHOW_MAX) ko_printf(o, "  ... %u more not shown\n", ix->n[KCACHE__IX_LIVE] - KS_SHOW_MAX);
    ko_printf(o, "gone       %u", ix->n[KCACHE__IX_GONE]);
    if (ix->dropped[KCACHE__IX_GONE]) ko_printf(o, " (and %zu older ones kcache forgets)", ix->dropped[KCACHE__IX_GONE]);
    ko_putc(o, '\n');
    for (i = 0; i < ix->n[KCACHE__IX_GONE] && !o->full; i++) {
        const kcache__ix_item *it = &ix->list[KCACHE__IX_GONE][i];
        kcache_key k;
        ks_short_hex(it->digest, hx);
        ks_time(t, sizeof t, it->when);
        ki_fmt(line, sizeof line, "%s  %s  %s: %s", t, hx, ks_reason_word(it->reason), ks_reason_text(it->reason));
        ko_puts(o, "  ");
        ks_wrap(o, line, 2, 6);
        if (kcache__record_parse(it->rec, it->rec_len, &k) == KCACHE_OK) ks_fields_text(o, &k, NULL, 6);
        else if (it->rec_len) ko_puts(o, "      (its key record does not decode)\n");
        kcache_key_free(&k);
    }
    ko_printf(o, "misses     %u traced", ix->n[KCACHE__IX_MISSED]);
    if (ix->dropped[KCACHE__IX_MISSED]) ko_printf(o, " (and %zu older ones kcache forgets)", ix->dropped[KCACHE__IX_MISSED]);
    ko_puts(o, ix->n[KCACHE__IX_MISSED] ? "\n" : " (KCACHE_TRACE=1 keeps them)\n");
    for (i = ix->n[KCACHE__IX_MISSED]; i-- > 0 && !o->full;) {
        const kcache__ix_item *it = &ix->list[KCACHE__IX_MISSED][i];
        char why[600];
        ks_time(t, sizeof t, it->when);
        ko_printf(o, "  %s  pid %u  %s\n", t, (unsigned)it->pid, ks_reason_word(it->reason));
        ks_explain_miss(ix, it, st ? &st->cf : NULL, op->stamp, why, sizeof why);
        ko_puts(o, "      ");
        ks_wrap(o, why, 6, 6);
    }
    {
        size_t len, c;
        const char *sep = "";
        len = (size_t)ki_fmt(line, sizeof line, "%u overload%s: ", ix->n[KCACHE__IX_LIVE], ix->n[KCACHE__IX_LIVE] == 1 ? "" : "s");
        for (c = 0; c < KS_NCODES; c++) {
            if (!counts[c]) continue;
            len += (size_t)ki_fmt(line + len, len < sizeof line ? sizeof line - len : 0, "%s%zu %s", sep, counts[c], ks_code_name[c]);
            sep = ", ";
            if (len >= sizeof line) break;
        }
        if (!ix->n[KCACHE__IX_LIVE]) ki_fmt(line, sizeof line, "no live overload: the next lookup of this unit compiles");
        ko_puts(o, "verdict    ");
        ks_wrap(o, line, 11, 11);
    }
}

static void ks_item_json_head(ki_out *o, const kcache__ix_item *it)
{
    ko_puts(o, "{\"digest\": ");
    ks_json_hex(o, it->digest);
    ko_puts(o, ", ");
    ks_json_time(o, "when", it->when);
    ko_printf(o, ", \"payload_bytes\": %llu", (unsigned long long)it->size);
}

static void ks_index_json(ki_out *o, const ks_index *ix, const char *file, const ks_store_ref *st, const ki_opts *op)
{
    uint32_t i;
    size_t counts[KS_NCODES], c;
    memset(counts, 0, sizeof counts);
    ko_puts(o, "{\n  \"format\": \"kcache-index\",\n  \"file\": ");
    ko_json_cstr(o, file);
    ko_puts(o, ",\n  \"store\": ");
    ko_json_cstr(o, st && st->path[0] ? st->path : NULL);
    ko_puts(o, ",\n  \"unit\": ");
    ko_json_str(o, (const unsigned char *)ix->unit, ix->ulen);
    ko_printf(o, ",\n  \"log\": {\"bytes\": %zu, \"records\": %zu, \"rewritten_at\": %llu, \"damaged_bytes\": %zu, \"damaged_places\": %zu, "
                 "\"records_by_kind\": {\"live\": %zu, \"gone\": %zu, \"missed\": %zu, \"forgotten\": %zu}}",
              ix->len, ix->records, (unsigned long long)ix->compacted, ix->skipped, ix->stretches, ix->kinds[0], ix->kinds[1], ix->kinds[2],
              ix->kinds[3]);
    ko_printf(o, ",\n  \"stamp_policy\": \"%s\"", ks_policy_name(op->stamp));
    ko_puts(o, ",\n  \"overloads\": [");
    for (i = 0; i < ix->n[KCACHE__IX_LIVE] && !o->full; i++) {
        ks_over ov;
        const kcache__ix_item *it = &ix->list[KCACHE__IX_LIVE][i];
        ks_over_check(it, st, op, &ov);
        counts[ov.v.code]++;
        if (i < KS_SHOW_MAX) {
            ko_puts(o, i ? ",\n    " : "\n    ");
            ks_item_json_head(o, it);
            ko_puts(o, ", \"fields\": ");
            if (ov.key_ok) ks_fields_json(o, &ov.key, ov.deps);
            else ko_puts(o, "null");
            ko_printf(o, ", \"entry\": {\"state\": \"%s\"", ov.entry < 0 ? "unchecked" : ov.entry == 0 ? "missing"
                                                          : (ov.entry_err[0] || ks_entry_header_bad(&ov.e) || ov.e.payload == 0) ? "corrupt" : "present");
            ko_puts(o, ", \"problem\": ");
            ko_json_cstr(o, ov.entry_err[0] ? ov.entry_err : ov.entry > 0 && ov.e.problem[0] ? ov.e.problem : NULL);
            ko_printf(o, ", \"record_differs_from_index\": %s", ov.rec_differs ? "true" : "false");
            ko_puts(o, ", ");
            ks_json_time(o, "evicted", ov.evicted > 1 ? ov.evicted : 0);
            ko_printf(o, "}, \"verdict\": {\"code\": \"%s\", \"text\": ", ks_code_name[ov.v.code]);
            ko_json_cstr(o, ov.v.text);
            ko_puts(o, "}}");
        }
        ks_over_free(&ov);
    }
    if (ix->n[KCACHE__IX_LIVE]) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"overloads_total\": %u", ix->n[KCACHE__IX_LIVE]);
    ko_puts(o, ",\n  \"gone\": [");
    for (i = 0; i < ix->n[KCACHE__IX_GONE] && !o->full; i++) {
        const kcache__ix_item *it = &ix->list[KCACHE__IX_GONE][i];
        kcache_key k;
        ko_puts(o, i ? ",\n    " : "\n    ");
        ks_item_json_head(o, it);
        ko_printf(o, ", \"reason\": \"%s\", \"reason_text\": ", ks_reason_word(it->reason));
        ko_json_cstr(o, ks_reason_text(it->reason));
        ko_puts(o, ", \"fields\": ");
        if (kcache__record_parse(it->rec, it->rec_len, &k) == KCACHE_OK) ks_fields_json(o, &k, NULL);
        else ko_puts(o, "null");
        kcache_key_free(&k);
        ko_puts(o, "}");
    }
    if (ix->n[KCACHE__IX_GONE]) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"gone_forgotten\": %zu", ix->dropped[KCACHE__IX_GONE]);
    ko_puts(o, ",\n  \"misses\": [");
    for (i = ix->n[KCACHE__IX_MISSED]; i-- > 0 && !o->full;) {
        const kcache__ix_item *it = &ix->list[KCACHE__IX_MISSED][i];
        kcache_key k;
        char why[600];
        ko_puts(o, i + 1 < ix->n[KCACHE__IX_MISSED] ? ",\n    " : "\n    ");
        ks_item_json_head(o, it);
        ko_printf(o, ", \"pid\": %u, \"reason\": \"%s\", \"explanation\": ", (unsigned)it->pid, ks_reason_word(it->reason));
        ks_explain_miss(ix, it, st ? &st->cf : NULL, op->stamp, why, sizeof why);
        ko_json_cstr(o, why);
        ko_puts(o, ", \"fields\": ");
        if (kcache__record_parse(it->rec, it->rec_len, &k) == KCACHE_OK) ks_fields_json(o, &k, NULL);
        else ko_puts(o, "null");
        kcache_key_free(&k);
        ko_puts(o, "}");
    }
    if (ix->n[KCACHE__IX_MISSED]) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"misses_forgotten\": %zu", ix->dropped[KCACHE__IX_MISSED]);
    ko_puts(o, ",\n  \"verdict\": {");
    for (c = 0; c < KS_NCODES; c++) ko_printf(o, "%s\"%s\": %zu", c ? ", " : "", ks_code_name[c], counts[c]);
    ko_puts(o, "}\n}\n");
}

/* ---------------------------------------------------------------------------------------- */
/* The report of one entry file.                                                             */

static void ks_entry_report(ki_out *o, const ks_entry *e, const char *file, const ki_opts *op)
{
    ks_dep *deps = NULL;
    size_t ndeps = 0;
    ks_verdict v;
    char hx[33], t[64], s1[48], s2[48];
    if (e->rec == 1) deps = ks_deps_of(&e->key, op, &ndeps);
    ks_verdict_of(1, e, NULL, deps, ndeps, 0, &v);
    if (v.code == KS_PRESENT && strncmp(v.text, "present", 7) == 0) {
        char rest[sizeof v.text];
        ki_fmt(rest, sizeof rest, "%s", v.text + 7);
        ki_fmt(v.text, sizeof v.text, "sound%s", rest);
    }
    ks_hex(e->digest, hx);
    ks_time(t, sizeof t, e->created);
    if (op->json) {
        ko_puts(o, "{\n  \"format\": \"kcache-entry\",\n  \"file\": ");
        ko_json_cstr(o, file);
        ko_puts(o, ",\n  \"unit\": ");
        if (e->rec == 1) ko_json_cstr(o, e->key.unit); else ko_puts(o, "null");
        ko_printf(o, ",\n  \"digest\": \"%s\",\n  ", hx);
        ks_json_time(o, "created", e->created);
        ko_printf(o, ",\n  \"version\": %u, \"flags\": %u, \"header_bytes\": %u, \"record_bytes\": %u, \"payload_bytes\": %llu, "
                     "\"file_bytes\": %llu",
                  e->version, e->flags, e->hlen, e->rlen, (unsigned long long)e->plen, (unsigned long long)e->file_size);
        ko_puts(o, ",\n  \"payload_checksum\": ");
        ks_json_hex(o, e->psum);
        ko_printf(o, ",\n  \"checks\": {\"lengths\": %s, \"header_checksum\": ", e->lengths_ok ? "true" : "false");
        json_tri(o, e->hdr_sum);
        ko_puts(o, ", \"padding\": "); json_tri(o, e->pad);
        ko_puts(o, ", \"key_record\": "); json_tri(o, e->rec);
        ko_puts(o, ", \"record_digest\": "); json_tri(o, e->rec_digest);
        ko_puts(o, ", \"file_name_digest\": "); json_tri(o, e->name_digest);
        ko_puts(o, ", \"payload_checksum\": "); json_tri(o, e->payload);
        ko_puts(o, "},\n  \"problem\": ");
        ko_json_cstr(o, e->problem[0] ? e->problem : NULL);
        ko_puts(o, ",\n  \"fields\": ");
        if (e->rec == 1) ks_fields_json(o, &e->key, deps); else ko_puts(o, "null");
        ko_printf(o, ",\n  \"verdict\": {\"code\": \"%s\", \"text\": ", v.code == KS_PRESENT ? "sound" : ks_code_name[v.code]);
        ko_json_cstr(o, v.text);
        ko_puts(o, "}\n}\n");
    } else {
        ko_puts(o, "entry      ");
        ks_wrap(o, file, 11, 11);
        ko_puts(o, "unit       ");
        if (e->rec == 1) ks_text(o, e->key.unit, strlen(e->key.unit)); else ko_puts(o, "? (the key record does not decode)");
        ko_printf(o, "\ndigest     %s%s\n", hx, e->name_digest == 1 ? " (the file name's)" : e->name_digest == 0 ? " (NOT the file name's)" : "");
        ko_printf(o, "created    %s\n", t);
        ks_size(s1, sizeof s1, e->plen);
        ks_size(s2, sizeof s2, e->file_size);
        ko_printf(o, "sizes      header %u bytes (key record %u), payload %s, file %s\n", e->hlen, e->rlen, s1, s2);
        ko_printf(o, "checks     lengths %s, header checksum %s, padding %s,\n", e->lengths_ok ? "ok" : "BAD",
                  e->hdr_sum == 1 ? "ok" : e->hdr_sum == 0 ? "FAILS" : "not checkable", e->pad == 1 ? "zero" : e->pad == 0 ? "NOT ZERO" : "not checkable");
        ko_printf(o, "           key record %s, payload checksum %s\n",
                  e->rec != 1 ? (e->rec == 0 ? "DOES NOT DECODE" : "not checkable") : e->rec_digest == 1 ? "ok (its digest is the header's)" : "ok but its digest is NOT the header's",
                  e->payload == 1 ? "ok" : e->payload == 0 ? "FAILS" : "not checkable");
        if (e->rec == 1) {
            ko_printf(o, "fields     %u\n", e->key.count);
            ks_fields_text(o, &e->key, deps, 2);
        }
        ko_puts(o, "verdict    ");
        ks_wrap(o, v.text, 11, 11);
    }
    free(deps);
}

/* Decodes and reports one entry held in memory (the fuzz target's way in).  0, or 2 with err. */
static KI_MAYBE_UNUSED int ki_entry_report_mem(const unsigned char *buf, size_t len, const char *file, const ki_opts *op, ki_out *o,
                                               char *err, size_t errcap)
{
    ks_entry e;
    if (ks_entry_decode(buf, len, len, &e, err, errcap) != 0) { ks_entry_free(&e); return 2; }
    ks_entry_payload_mem(buf, len, &e);
    ks_entry_report(o, &e, file, op);
    ks_entry_free(&e);
    return 0;
}

/* Decodes and reports one index held in memory, with or without its store.  0, or 2 with err. */
static int ki_index_report_mem(const unsigned char *buf, size_t len, const char *file, const ks_store_ref *st, const ki_opts *op,
                               ki_out *o, char *err, size_t errcap)
{
    ks_index ix;
    if (ks_index_decode(buf, len, &ix, err, errcap) != 0) return 2;
    if (op->json) ks_index_json(o, &ix, file, st, op);
    else ks_index_text(o, &ix, file, st, op);
    ks_index_free(&ix);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* A store's summary.                                                                        */

typedef struct ks_unit {
    kcache_hash128 id;           /* xxh128 of the name: its index file's name */
    char *name;                  /* NULL until known */
    size_t nlen;
    uint64_t entries, bytes;
    uint32_t live, gone, missed, live_missing;
    int has_index, index_bad;
} ks_unit;

typedef struct ks_miss {
    int64_t when;
    uint32_t pid, reason;
    char unit[KCACHE_UNIT_MAX];
    size_t ulen;
    char why[400];
} ks_miss;

typedef struct ks_bad {
    char file[48];
    char unit[KCACHE_UNIT_MAX];
    char why[200];
} ks_bad;

typedef struct ks_store {
    ks_store_ref ref;
    int have_cf, have_e, have_i, have_tmp;
    int dir_refused;             /* kcache refuses this directory: another owner, or writable by others */
    int dir_root;                /* root's, read by another user: kcache uses it read-only */
    char dir_why[120];
    uint64_t entries, bytes, stray, stray_bytes, misplaced, unreadable;
    uint64_t no_slot, size_differs;
    int table_read;
    uint64_t slots_used, slot_bytes, slots_without_file;
    int64_t oldest, newest;
    kcache_hash128 oldest_d, newest_d;
    uint64_t verified, bad, indexes_verified;
    ks_bad badlist[KS_SHOW_BAD];
    uint64_t indexes, bad_indexes, torn_indexes, misplaced_indexes, live_missing;
    uint64_t tmp_files, tmp_orphaned, tmp_live, tmp_bytes, tmp_orphan_bytes;
    ks_unit *units;
    size_t nunits, ucap, tcap, units_over;
    uint32_t *utable;
    ks_miss misses[KS_SHOW_MISSES];
    size_t nmisses;
    uint64_t misses_total;
} ks_store;

static void ks_store_free(ks_store *S)
{
    size_t i;
    for (i = 0; i < S->nunits; i++) free(S->units[i].name);
    free(S->units);
    free(S->utable);
    if (S->ref.cffd >= 0) close(S->ref.cffd);
    if (S->ref.dirfd >= 0) close(S->ref.dirfd);
    S->units = NULL;
    S->utable = NULL;
    S->ref.cffd = S->ref.dirfd = -1;
}

/* The unit with this id, added when new; NULL past KS_MAX_UNITS (counted in units_over). */
static ks_unit *ks_unit_get(ks_store *S, kcache_hash128 id)
{
    size_t h, i;
    if (S->tcap) {
        for (h = (size_t)id.lo & (S->tcap - 1); S->utable[h] != 0xffffffffu; h = (h + 1) & (S->tcap - 1))
            if (ks_same(S->units[S->utable[h]].id, id)) return &S->units[S->utable[h]];
    }
    if (S->nunits >= KS_MAX_UNITS) { S->units_over++; return NULL; }
    if ((S->nunits + 1) * 2 > S->tcap) { /* keep the table at most half full */
        size_t nt = S->tcap ? S->tcap * 2 : 1024;
        uint32_t *t = (uint32_t *)malloc(sizeof *t * nt);
        if (!t) { S->units_over++; return NULL; }
        memset(t, 0xff, sizeof *t * nt);
        for (i = 0; i < S->nunits; i++) {
            for (h = (size_t)S->units[i].id.lo & (nt - 1); t[h] != 0xffffffffu; h = (h + 1) & (nt - 1)) {
            }
            t[h] = (uint32_t)i;
        }
        free(S->utable);
        S->utable = t;
        S->tcap = nt;
    }
    if (S->nunits == S->ucap) {
        size_t nc = S->ucap ? S->ucap * 2 : 256;
        ks_unit *nu = (ks_unit *)realloc(S->units, sizeof *nu * nc);
        if (!nu) { S->units_over++; return NULL; }
        S->units = nu;
        S->ucap = nc;
    }
    for (h = (size_t)id.lo & (S->tcap - 1); S->utable[h] != 0xffffffffu; h = (h + 1) & (S->tcap - 1)) {
    }
    memset(&S->units[S->nunits], 0, sizeof S->units[0]);
    S->units[S->nunits].id = id;
    S->utable[h] = (uint32_t)S->nunits;
    return &S->units[S->nunits++];
}

static ks_unit *ks_unit_named(ks_store *S, const char *name, size_t len)
{
    ks_unit *u = ks_unit_get(S, kcache_hash(name, len));
    if (u && !u->name && (u->name = (char *)malloc(len + 1)) != NULL) {
        memcpy(u->name, name, len);
        u->name[len] = 0;
        u->nlen = len;
    }
    return u;
}

/* The unit an entry belongs to, from the start of its key record (one pread). */
static int ks_entry_unit_fd(int fd, char *out, size_t *len)
{
    unsigned char h[KCACHE__ENTRY_FIXED + 2 + KCACHE_UNIT_MAX];
    long long n = ks_pread(fd, h, sizeof h, 0);
    size_t ul;
    if (n < KCACHE__ENTRY_FIXED + 2 || memcmp(h, "KCENTRY", 8) != 0) return 0;
    ul = kcache__get_u16(h + KCACHE__ENTRY_FIXED);
    if (ul == 0 || ul >= KCACHE_UNIT_MAX || (size_t)n < KCACHE__ENTRY_FIXED + 2 + ul) return 0;
    memcpy(out, h + KCACHE__ENTRY_FIXED + 2, ul);
    out[ul] = 0;
    *len = ul;
    return 1;
}
static int ks_entry_unit(int dirfd_, kcache_hash128 d, char *out, size_t *len)
{
    char rel[48];
    int fd, ok;
    kcache__entry_name(d, rel);
    if ((fd = ks_open_in(dirfd_, rel)) < 0) return 0;
    ok = ks_entry_unit_fd(fd, out, len);
    close(fd);
    return ok;
}
static int ks_entry_exists(int dirfd_, kcache_hash128 d)
{
    char rel[48];
    struct stat sb;
    kcache__entry_name(d, rel);
    return fstatat(dirfd_, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Keeps the newest KS_SHOW_MISSES traced misses of the store. */
static void ks_miss_offer(ks_store *S, const ks_index *ix, const kcache__ix_item *m, int policy)
{
    ks_miss *slot = NULL;
    size_t i;
    S->misses_total++;
    if (S->nmisses < KS_SHOW_MISSES) slot = &S->misses[S->nmisses++];
    else {
        for (i = 0; i < S->nmisses; i++)
            if (!slot || S->misses[i].when < slot->when) slot = &S->misses[i];
        if (slot->when >= m->when) return;
    }
    slot->when = m->when;
    slot->pid = m->pid;
    slot->reason = m->reason;
    memcpy(slot->unit, ix->unit, ix->ulen + 1);
    slot->ulen = ix->ulen;
    ks_explain_miss(ix, m, &S->ref.cf, policy, slot->why, sizeof slot->why);
}

static int ks_miss_cmp(const void *a, const void *b)
{
    const ks_miss *x = (const ks_miss *)a, *y = (const ks_miss *)b;
    return x->when > y->when ? -1 : x->when < y->when;
}
static int ks_unit_cmp(const void *a, const void *b)
{
    const ks_unit *x = (const ks_unit *)a, *y = (const ks_unit *)b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->entries != y->entries) return x->entries > y->entries ? -1 : 1;
    if (!x->name || !y->name) return !x->name - !y->name;
    return strcmp(x->name, y->name);
}

/* Opens DIR/SUB (a directory, not a symlink) for reading its names. */
static DIR *ks_opendir_in(int dirfd_, const char *sub, int *fd)
{
    DIR *dp;
    *fd = openat(dirfd_, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0) return NULL;
    dp = fdopendir(*fd);
    if (!dp) { close(*fd); *fd = -1; }
    return dp;
}

static int ks_dot(const char *n) { return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])); }

/* Calls fn for every name (but . and ..) in the shards top/00 .. top/ff of a store (top 'e' or
   'i'), with the shard's descriptor and its name ("e/XX"); fn returns nonzero to stop. */
typedef int (*ks_shard_fn)(void *ctx, int shardfd, const char *rel, const char *name);
static void ks_each_in_shards(int dirfd_, char top, ks_shard_fn fn, void *ctx)
{
    int shard, stop = 0;
    for (shard = 0; shard < 256 && !stop; shard++) {
        char rel[8];
        int fd;
        DIR *dp;
        struct dirent *de;
        snprintf(rel, sizeof rel, "%c/%02x", top, shard);
        if (!(dp = ks_opendir_in(dirfd_, rel, &fd))) continue;
        while (!stop && (de = readdir(dp)) != NULL)
            if (!ks_dot(de->d_name)) stop = fn(ctx, fd, rel, de->d_name);
        closedir(dp);
    }
}

typedef struct ks_walk_ctx { ks_store *S; const ki_opts *op; } ks_walk_ctx;
static int ks_walk_entry(void *ctx, int fd, const char *rel, const char *name)
{
    ks_store *S = ((ks_walk_ctx *)ctx)->S;
    const ki_opts *op = ((ks_walk_ctx *)ctx)->op;
    kcache_hash128 d;
    struct stat sb;
    char ubuf[KCACHE_UNIT_MAX];
    size_t ulen = 0;
    int efd, got_unit = 0;
    int64_t use;
    uint64_t ssize;
    if (fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) return 0;
    if (!ks_digest_name(name, ".kce", &d) || !S_ISREG(sb.st_mode)) {
        if (!S_ISDIR(sb.st_mode)) { S->stray++; S->stray_bytes += (uint64_t)sb.st_size; }
        return 0;
    }
    S->entries++; /* counted as kcache's scan counts it, even in the wrong shard */
    S->bytes += (uint64_t)sb.st_size;
    if (S->table_read) {
        if (!ks_slot_lookup(S->ref.cffd, &S->ref.cf, d, &use, &ssize)) S->no_slot++;
        else if (ssize != (uint64_t)sb.st_size) S->size_differs++;
    }
    if (strncmp(name, rel + 2, 2) != 0) { S->misplaced++; return 0; } /* but a lookup never finds it */
    efd = openat(fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (efd < 0) { S->unreadable++; return 0; }
    if (op->verify) {
        ks_entry e;
        unsigned char *h = NULL;
        char err[200];
        int rc = ks_entry_read_fd(efd, 1, &e, &h, err, sizeof err);
        S->verified++;
        if (rc == 0) {
            e.name_digest = ks_same(e.digest, d);
            if (!e.name_digest) ks_problem(e.problem, sizeof e.problem, "the entry's digest is not its file name's");
            if (e.rec == 1) { ulen = strlen(e.key.unit); memcpy(ubuf, e.key.unit, ulen + 1); got_unit = 1; }
        }
        if (rc != 0 || e.problem[0]) {
            if (S->bad < KS_SHOW_BAD) {
                ks_bad *b = &S->badlist[S->bad];
                ki_fmt(b->file, sizeof b->file, "%s/%s", rel, name);
                ki_fmt(b->why, sizeof b->why, "%s", rc != 0 ? err : e.problem);
                b->unit[0] = 0;
                if (got_unit || ks_entry_unit_fd(efd, ubuf, &ulen)) { memcpy(b->unit, ubuf, ulen + 1); got_unit = 1; }
            }
            S->bad++;
        }
        if (rc == 0) ks_entry_free(&e);
        free(h);
    }
    if (!got_unit) got_unit = ks_entry_unit_fd(efd, ubuf, &ulen);
    close(efd);
    if (got_unit) {
        ks_unit *u = ks_unit_named(S, ubuf, ulen);
        if (u) { u->entries++; u->bytes += (uint64_t)sb.st_size; }
    }
    return 0;
}
static void ks_walk_entries(ks_store *S, const ki_opts *op)
{
    ks_walk_ctx c;
    c.S = S;
    c.op = op;
    ks_each_in_shards(S->ref.dirfd, 'e', ks_walk_entry, &c);
}

/* Streams the use table: slots in use, their bytes, oldest and newest use, slots without a file. */
static void ks_walk_table(ks_store *S)
{
    static unsigned char buf[2048 * KCACHE__SLOT];
    uint64_t i = 0, n = S->ref.cf.nslots;
    while (i < n) {
        size_t want = (size_t)((n - i) * KCACHE__SLOT < sizeof buf ? (n - i) * KCACHE__SLOT : sizeof buf), k;
        long long got = ks_pread(S->ref.cffd, buf, want, KCACHE__CF_HEADER + i * KCACHE__SLOT);
        if (got < (long long)want) { S->table_read = 0; return; }
        for (k = 0; k < want; k += KCACHE__SLOT) {
            kcache_hash128 d;
            int64_t use;
            d.lo = kcache__get_u64(buf + k);
            d.hi = kcache__get_u64(buf + k + 8);
            if (!d.lo && !d.hi) continue;
            use = (int64_t)kcache__get_u64(buf + k + 16);
            S->slots_used++;
            S->slot_bytes += kcache__get_u64(buf + k + 24);
            if (!S->oldest || use < S->oldest) { S->oldest = use; S->oldest_d = d; }
            if (!S->newest || use > S->newest) { S->newest = use; S->newest_d = d; }
            if (!ks_entry_exists(S->ref.dirfd, d)) S->slots_without_file++;
        }
        i += want / KCACHE__SLOT;
    }
}

static void ks_walk_indexes(ks_store *S, const ki_opts *op)
{
    int shard;
    for (shard = 0; shard < 256; shard++) {
        char rel[8];
        int fd;
        DIR *dp;
        struct dirent *de;
        snprintf(rel, sizeof rel, "i/%02x", shard);
        if (!(dp = ks_opendir_in(S->ref.dirfd, rel, &fd))) continue;
        while ((de = readdir(dp)) != NULL) {
            kcache_hash128 id;
            ks_index ix;
            ks_unit *u;
            unsigned char *buf;
            size_t len = 0;
            char err[200];
            uint32_t k;
            int ifd;
            if (!ks_digest_name(de->d_name, ".kci", &id)) continue;
            S->indexes++;
            if ((ifd = openat(fd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) < 0) { S->bad_indexes++; continue; }
            buf = ks_read_index_fd(ifd, &len, err, sizeof err);
            close(ifd);
            if (!buf || ks_index_decode(buf, len, &ix, err, sizeof err) != 0) {
                S->bad_indexes++;
                if ((u = ks_unit_get(S, id)) != NULL) { u->has_index = 1; u->index_bad = 1; }
                free(buf);
                continue;
            }
            if (op->verify) S->indexes_verified++;
            if (!ks_same(kcache_hash(ix.unit, ix.ulen), id) || strlen(ix.unit) != ix.ulen || strncmp(de->d_name, rel + 2, 2) != 0) {
                S->misplaced_indexes++; /* kcache never reads it under this name */
            } else if ((u = ks_unit_named(S, ix.unit, ix.ulen)) != NULL) {
                u->has_index = 1;
                u->live = ix.n[KCACHE__IX_LIVE];
                u->gone = ix.n[KCACHE__IX_GONE];
                u->missed = ix.n[KCACHE__IX_MISSED];
                for (k = 0; k < ix.n[KCACHE__IX_LIVE]; k++)
                    if (!ks_entry_exists(S->ref.dirfd, ix.list[KCACHE__IX_LIVE][k].digest)) u->live_missing++;
                S->live_missing += u->live_missing;
            }
            if (ix.skipped) S->torn_indexes++;
            for (k = 0; k < ix.n[KCACHE__IX_MISSED]; k++) ks_miss_offer(S, &ix, &ix.list[KCACHE__IX_MISSED][k], op->stamp);
            ks_index_free(&ix);
            free(buf);
        }
        closedir(dp);
    }
}

static void ks_walk_tmp(ks_store *S)
{
    int fd;
    DIR *dp = ks_opendir_in(S->ref.dirfd, "tmp", &fd);
    struct dirent *de;
    int64_t now = kcache__now_ns();
    if (!dp) return;
    while ((de = readdir(dp)) != NULL) {
        struct stat sb;
        unsigned long pid;
        char *end;
        if (de->d_name[0] == '.') continue;
        if (fstatat(fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) continue;
        S->tmp_files++;
        S->tmp_bytes += (uint64_t)sb.st_size;
        (void)end;
        /* what kcache__store_sweep_temps removes: a regular file with a name kcache's writers make,
           of a dead writer or a day old (anything else there is not kcache's, and stays) */
        if (kcache__temp_name(de->d_name, &pid) && S_ISREG(sb.st_mode) &&
            ((pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) || (int64_t)sb.st_mtime * 1000000000 < now - (int64_t)86400 * 1000000000)) {
            S->tmp_orphaned++;
            S->tmp_orphan_bytes += (uint64_t)sb.st_size;
        } else {
            S->tmp_live++;
        }
    }
    closedir(dp);
}

/* Opens a store read-only: its directory, config.file.  0, or -1 with a message. */
static int ks_store_open(const char *path, ks_store_ref *ref, char *err, size_t errcap)
{
    struct stat sb;
    memset(ref, 0, sizeof *ref);
    ref->cffd = -1;
    ref->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ref->dirfd < 0) { ki_fmt(err, errcap, "cannot open the directory: %s", strerror(errno)); return -1; }
    if (ki_abspath(path, ref->path, sizeof ref->path) != 0) ki_fmt(ref->path, sizeof ref->path, "%s", path);
    if (fstatat(ref->dirfd, "config.file", &sb, AT_SYMLINK_NOFOLLOW) != 0 && !kcache__is_dir_nofollow(ref->dirfd, "e") &&
        !kcache__is_dir_nofollow(ref->dirfd, "i")) {
        DIR *dp = fdopendir(dup(ref->dirfd));
        int readable = dp != NULL && readdir(dp) != NULL;
        if (dp) closedir(dp);
        ki_fmt(err, errcap, "%s", readable ? "not a kcache store (no config.file, e/ or i/)" : "cannot read the directory");
        close(ref->dirfd);
        ref->dirfd = -1;
        return -1;
    }
    ks_cf_read(ref->dirfd, &ref->cf);
    ref->cffd = ks_open_in(ref->dirfd, "config.file");
    if (ref->cffd >= 0 && (fstat(ref->cffd, &sb) != 0 || !S_ISREG(sb.st_mode))) { close(ref->cffd); ref->cffd = -1; }
    return 0;
}

/* Problems (kcache will repair or refuse something) and notes (it cleans them up as it goes). */
typedef struct ks_list { char item[12][240]; int n; } ks_list;
static void ks_add(ks_list *l, const char *fmt, ...) KI_PRINTF(2, 3);
static void ks_add(ks_list *l, const char *fmt, ...)
{
    va_list ap;
    if (l->n >= 12) return;
    va_start(ap, fmt);
    vsnprintf(l->item[l->n++], sizeof l->item[0], fmt, ap);
    va_end(ap);
}

static void ks_store_assess(const ks_store *S, ks_list *P, ks_list *N)
{
    const ks_cf *c = &S->ref.cf;
    char a[48], b[48];
    memset(P, 0, sizeof *P);
    memset(N, 0, sizeof *N);
    if (S->dir_refused) ks_add(P, "kcache refuses this directory (%s): memory only", S->dir_why);
    if (S->dir_root) ks_add(N, "root's: kcache reads it for you and never writes it (a site-wide store, or a layer: KCACHE_LAYERS)");
    if (!c->present) ks_add(P, "config.file %s: the next writer rebuilds it by a scan", c->why[0] ? c->why : "missing");
    else if (!c->valid) ks_add(P, "config.file damaged (%s): the next writer rebuilds it by a scan", c->why);
    if (c->present && c->busy) ks_add(P, "config.file marked busy: a writer is updating it now, or died mid-update (the next one rebuilds it)");
    if (c->present && c->magic_ok && (c->accounted != S->bytes || c->entries != S->entries)) {
        ks_size(a, sizeof a, c->accounted);
        ks_size(b, sizeof b, S->bytes);
        ks_add(P, "the accounting (%s, %llu entries) differs from the entries (%s, %llu entries)", a, (unsigned long long)c->entries, b,
               (unsigned long long)S->entries);
    }
    if (S->table_read && (S->no_slot || S->slots_without_file || S->size_differs))
        ks_add(P, "the use table disagrees with e/: %llu entries without a slot, %llu slots without an entry, %llu sizes differ",
               (unsigned long long)S->no_slot, (unsigned long long)S->slots_without_file, (unsigned long long)S->size_differs);
    if (c->present && c->valid && c->limit && (c->accounted > c->limit || S->bytes > c->limit)) {
        ks_size(a, sizeof a, S->bytes > c->accounted ? S->bytes : c->accounted);
        ks_size(b, sizeof b, c->limit);
        ks_add(P, "over the limit: %s > %s", a, b);
    }
    if (S->bad) ks_add(P, "%llu corrupt entr%s (kcache rejects and removes %s at the next lookup)", (unsigned long long)S->bad,
                       S->bad == 1 ? "y" : "ies", S->bad == 1 ? "it" : "them");
    if (S->unreadable) ks_add(P, "%llu entries cannot be opened", (unsigned long long)S->unreadable);
    if (S->misplaced) ks_add(P, "%llu entries in the wrong shard (kcache never finds them)", (unsigned long long)S->misplaced);
    if (S->bad_indexes) ks_add(P, "%llu index file%s do%s not decode (the next put of the unit rewrites it)", (unsigned long long)S->bad_indexes,
                               S->bad_indexes == 1 ? "" : "s", S->bad_indexes == 1 ? "es" : "");
    if (S->misplaced_indexes) ks_add(P, "%llu index files named for another unit", (unsigned long long)S->misplaced_indexes);
    if (S->stray) ks_add(N, "%llu stray files in e/ (kcache removes them at its next scan)", (unsigned long long)S->stray);
    if (S->tmp_orphaned) {
        ks_size(a, sizeof a, S->tmp_orphan_bytes);
        ks_add(N, "%llu orphaned temp file%s (%s; the next kcache_open removes them)", (unsigned long long)S->tmp_orphaned,
               S->tmp_orphaned == 1 ? "" : "s", a);
    }
    if (S->torn_indexes) ks_add(N, "%llu index log%s with damaged or torn records (kcache skips them; a rewrite drops them)",
                                (unsigned long long)S->torn_indexes, S->torn_indexes == 1 ? "" : "s");
    if (S->live_missing) ks_add(N, "%llu overloads listed live whose entry is gone (evicted: the next rewrite of their index lists them as gone)",
                                (unsigned long long)S->live_missing);
}

static void ks_unit_label(const ks_unit *u, char *out, size_t cap)
{
    ki_out t;
    memset(&t, 0, sizeof t);
    t.limit = 2048;
    if (u->name) ks_text(&t, u->name, u->nlen);
    else { char hx[33]; ks_hex(u->id, hx); ko_printf(&t, "? (index %.2s/%.8s...)", hx, hx); }
    ki_fmt(out, cap, "%s", t.buf ? t.buf : "");
    ko_free(&t);
}

static void ks_store_text(ki_out *o, ks_store *S, const ki_opts *op, const ks_list *P, const ks_list *N)
{
    const ks_cf *c = &S->ref.cf;
    char t[64], t2[64], a[48], b[48], line[1200], name[600];
    size_t i;
    int k;
    ko_puts(o, "store      ");
    ks_wrap(o, S->ref.path, 11, 11);
    ko_puts(o, "config     ");
    if (!c->present) ki_fmt(line, sizeof line, "config.file %s", c->why[0] ? c->why : "missing");
    else {
        ks_time(t, sizeof t, c->created);
        ki_fmt(line, sizeof line, "config.file %s: format %u, created %s, use table of %llu slots, generation %llu%s",
               c->valid ? "valid" : "DAMAGED", c->version, t, (unsigned long long)c->nslots, (unsigned long long)c->generation,
               c->busy ? ", BUSY" : "");
        if (!c->valid) ki_fmt(line + strlen(line), sizeof line - strlen(line), " (%s: its numbers are not trusted)", c->why);
    }
    ks_wrap(o, line, 11, 11);
    if (c->present) {
        if (c->limit) { ks_size(a, sizeof a, c->limit); ko_printf(o, "limit      %s (%llu bytes; the last writer's)\n", a, (unsigned long long)c->limit); }
        else ko_puts(o, "limit      none (the last writer had no limit)\n");
        ks_size(a, sizeof a, c->accounted);
        ko_printf(o, "accounted  %s in %llu entr%s (%llu bytes)\n", a, (unsigned long long)c->entries, c->entries == 1 ? "y" : "ies",
                  (unsigned long long)c->accounted);
    }
    ks_size(a, sizeof a, S->bytes);
    ki_fmt(line, sizeof line, "%s in %llu entr%s (%llu bytes)", a, (unsigned long long)S->entries, S->entries == 1 ? "y" : "ies",
           (unsigned long long)S->bytes);
    if (c->present && c->magic_ok) {
        if (c->accounted == S->bytes && c->entries == S->entries) ki_fmt(line + strlen(line), sizeof line - strlen(line), ": as accounted");
        else
            ki_fmt(line + strlen(line), sizeof line - strlen(line), ": DIFFERS from the accounting by %+lld bytes, %+lld entries",
                   (long long)(S->bytes - c->accounted), (long long)(S->entries - c->entries));
    }
    ko_puts(o, "real       ");
    ks_wrap(o, line, 11, 11);
    if (S->table_read) {
        ks_size(a, sizeof a, S->slot_bytes);
        ki_fmt(line, sizeof line, "%llu of %llu slots used (%s)", (unsigned long long)S->slots_used, (unsigned long long)c->nslots, a);
        if (!S->no_slot && !S->slots_without_file && !S->size_differs)
            ki_fmt(line + strlen(line), sizeof line - strlen(line), "; every entry has its slot");
        else
            ki_fmt(line + strlen(line), sizeof line - strlen(line), "; %llu entries without a slot, %llu slots without an entry, %llu sizes differ",
                   (unsigned long long)S->no_slot, (unsigned long long)S->slots_without_file, (unsigned long long)S->size_differs);
        ko_puts(o, "use table  ");
        ks_wrap(o, line, 11, 11);
        if (S->slots_used) {
            char u1[KCACHE_UNIT_MAX], u2[KCACHE_UNIT_MAX];
            size_t l1 = 0, l2 = 0;
            ks_unit fake;
            memset(&fake, 0, sizeof fake);
            ks_time(t, sizeof t, S->oldest);
            ks_time(t2, sizeof t2, S->newest);
            if (!ks_entry_unit(S->ref.dirfd, S->oldest_d, u1, &l1)) { memcpy(u1, "?", 2); l1 = 1; }
            if (!ks_entry_unit(S->ref.dirfd, S->newest_d, u2, &l2)) { memcpy(u2, "?", 2); l2 = 1; }
            fake.name = u1; fake.nlen = l1;
            ks_unit_label(&fake, name, sizeof name);
            ki_fmt(line, sizeof line, "oldest %s (unit %.60s),", t, name);
            ko_puts(o, "last use   ");
            ks_wrap(o, line, 11, 11);
            fake.name = u2; fake.nlen = l2;
            ks_unit_label(&fake, name, sizeof name);
            ki_fmt(line, sizeof line, "newest %s (unit %.60s)", t2, name);
            ko_puts(o, "           ");
            ks_wrap(o, line, 11, 11);
        }
    } else if (c->present) {
        ko_puts(o, "use table  not read (its size is not a use table's)\n");
    }
    if (c->present && c->magic_ok) {
        int64_t latest = 0;
        for (k = 0; k < KCACHE__EVLOG_SLOTS; k++) if (c->evlog[k].when > latest) latest = c->evlog[k].when;
        ko_printf(o, "evictions  %llu", (unsigned long long)c->evictions);
        if (latest) { ks_time(t, sizeof t, latest); ko_printf(o, " (the log remembers %d; the latest at %s)", c->evlog_n, t); }
        ko_putc(o, '\n');
    }
    ko_printf(o, "units      %llu", (unsigned long long)(S->nunits + S->units_over));
    if (S->units_over) ko_printf(o, " (%llu not tracked: more than %d)", (unsigned long long)S->units_over, KS_MAX_UNITS);
    ko_putc(o, '\n');
    /* the index columns: overloads listed live (and of those, how many have no entry any more:
       evicted), gone, traced misses */
    if (S->nunits) ko_puts(o, "  unit                     entries      size   live evicted  gone missed\n");
    for (i = 0; i < S->nunits && i < KS_SHOW_UNITS && !o->full; i++) {
        const ks_unit *u = &S->units[i];
        char idx[80];
        ks_unit_label(u, name, sizeof name);
        if (strlen(name) > 24) memcpy(name + 21, "...", 4);
        ks_size(a, sizeof a, u->bytes);
        if (!u->has_index) ki_fmt(idx, sizeof idx, "  (no index)");
        else if (u->index_bad) ki_fmt(idx, sizeof idx, "  (index damaged)");
        else ki_fmt(idx, sizeof idx, "%6u %7u %5u %6u", u->live, u->live_missing, u->gone, u->missed);
        ko_printf(o, "  %-24s %7llu %9s %s\n", name, (unsigned long long)u->entries, a, idx);
    }
    if (S->nunits > KS_SHOW_UNITS) ko_printf(o, "  ... %zu more (--json lists up to %d)\n", S->nunits - KS_SHOW_UNITS, KS_SHOW_MAX);
    ko_printf(o, "indexes    %llu", (unsigned long long)S->indexes);
    if (S->bad_indexes || S->torn_indexes || S->misplaced_indexes)
        ko_printf(o, " (%llu damaged, %llu with damaged records, %llu misnamed)", (unsigned long long)S->bad_indexes, (unsigned long long)S->torn_indexes,
                  (unsigned long long)S->misplaced_indexes);
    ko_putc(o, '\n');
    ks_size(a, sizeof a, S->tmp_orphan_bytes);
    ks_size(b, sizeof b, S->tmp_bytes);
    if (!S->tmp_files) ki_fmt(line, sizeof line, "none");
    else
        ki_fmt(line, sizeof line, "%llu in tmp/ (%s): %llu orphaned (%s; their writer is gone or they are a day old: the next kcache_open removes them), %llu in progress",
               (unsigned long long)S->tmp_files, b, (unsigned long long)S->tmp_orphaned, a, (unsigned long long)S->tmp_live);
    ko_puts(o, "temp files ");
    ks_wrap(o, line, 11, 11);
    if (!S->misses_total) ko_puts(o, "misses     none traced (KCACHE_TRACE=1 keeps them)\n");
    else ko_printf(o, "misses     %llu traced (KCACHE_TRACE), newest first:\n", (unsigned long long)S->misses_total);
    for (i = 0; i < S->nmisses && !o->full; i++) {
        const ks_miss *m = &S->misses[i];
        ks_unit fake;
        memset(&fake, 0, sizeof fake);
        fake.name = (char *)m->unit;
        fake.nlen = m->ulen;
        ks_unit_label(&fake, name, sizeof name);
        ks_time(t, sizeof t, m->when);
        ki_fmt(line, sizeof line, "%s  %s  %s (pid %u)", t, name, ks_reason_word(m->reason), (unsigned)m->pid);
        ko_puts(o, "  ");
        ks_wrap(o, line, 2, 6);
        ko_puts(o, "      ");
        ks_wrap(o, m->why, 6, 6);
    }
    if (op->verify) {
        ko_printf(o, "verify     %llu entries read whole, %llu indexes: %llu bad entr%s\n", (unsigned long long)S->verified,
                  (unsigned long long)S->indexes_verified, (unsigned long long)S->bad, S->bad == 1 ? "y" : "ies");
        for (i = 0; i < S->bad && i < KS_SHOW_BAD && !o->full; i++) {
            const ks_bad *bd = &S->badlist[i];
            ks_unit fake;
            memset(&fake, 0, sizeof fake);
            fake.name = (char *)bd->unit;
            fake.nlen = strlen(bd->unit);
            ks_unit_label(&fake, name, sizeof name);
            ki_fmt(line, sizeof line, "%s (unit %.60s): %s", bd->file, bd->unit[0] ? name : "?", bd->why);
            ko_puts(o, "  ");
            ks_wrap(o, line, 2, 6);
        }
    }
    for (k = 0; k < N->n; k++) { ko_puts(o, k ? "           " : "notes      "); ks_wrap(o, N->item[k], 11, 11); }
    if (!P->n) ki_fmt(line, sizeof line, "consistent");
    else {
        size_t len = (size_t)ki_fmt(line, sizeof line, "%d problem%s: ", P->n, P->n == 1 ? "" : "s");
        for (k = 0; k < P->n && len < sizeof line; k++) len += (size_t)ki_fmt(line + len, sizeof line - len, "%s%s", k ? "; " : "", P->item[k]);
    }
    ko_puts(o, "verdict    ");
    ks_wrap(o, line, 11, 11);
}

static void ks_store_json(ki_out *o, ks_store *S, const ki_opts *op, const ks_list *P, const ks_list *N)
{
    const ks_cf *c = &S->ref.cf;
    size_t i;
    int k;
    ko_puts(o, "{\n  \"format\": \"kcache-store\",\n  \"store\": ");
    ko_json_cstr(o, S->ref.path);
    ko_printf(o, ",\n  \"config\": {\"present\": %s, \"valid\": %s, \"problem\": ", c->present ? "true" : "false", c->valid ? "true" : "false");
    ko_json_cstr(o, c->valid ? NULL : c->why[0] ? c->why : "missing");
    if (c->present) {
        ko_printf(o, ", \"version\": %u, \"slots\": %llu, \"generation\": %llu, \"busy\": %s, ", c->version, (unsigned long long)c->nslots,
                  (unsigned long long)c->generation, c->busy ? "true" : "false");
        ks_json_time(o, "created", c->created);
        ko_printf(o, ", \"limit\": %llu, \"accounted_bytes\": %llu, \"accounted_entries\": %llu, \"evictions\": %llu",
                  (unsigned long long)c->limit, (unsigned long long)c->accounted, (unsigned long long)c->entries,
                  (unsigned long long)c->evictions);
    }
    ko_puts(o, "}");
    ko_printf(o, ",\n  \"real\": {\"bytes\": %llu, \"entries\": %llu, \"stray_files\": %llu, \"misplaced\": %llu, \"unreadable\": %llu}",
              (unsigned long long)S->bytes, (unsigned long long)S->entries, (unsigned long long)S->stray,
              (unsigned long long)S->misplaced, (unsigned long long)S->unreadable);
    ko_puts(o, ",\n  \"accounting_matches\": ");
    json_tri(o, c->present && c->magic_ok ? (c->accounted == S->bytes && c->entries == S->entries) : -1);
    ko_printf(o, ",\n  \"use_table\": {\"read\": %s", S->table_read ? "true" : "false");
    if (S->table_read) {
        char u[KCACHE_UNIT_MAX];
        size_t ul;
        ko_printf(o, ", \"slots_used\": %llu, \"bytes\": %llu, \"entries_without_slot\": %llu, \"slots_without_entry\": %llu, "
                     "\"sizes_differ\": %llu, ",
                  (unsigned long long)S->slots_used, (unsigned long long)S->slot_bytes, (unsigned long long)S->no_slot,
                  (unsigned long long)S->slots_without_file, (unsigned long long)S->size_differs);
        ks_json_time(o, "oldest_use", S->oldest);
        ko_puts(o, ", \"oldest_unit\": ");
        if (S->slots_used && ks_entry_unit(S->ref.dirfd, S->oldest_d, u, &ul)) ko_json_str(o, (const unsigned char *)u, ul); else ko_puts(o, "null");
        ko_puts(o, ", ");
        ks_json_time(o, "newest_use", S->newest);
        ko_puts(o, ", \"newest_unit\": ");
        if (S->slots_used && ks_entry_unit(S->ref.dirfd, S->newest_d, u, &ul)) ko_json_str(o, (const unsigned char *)u, ul); else ko_puts(o, "null");
    }
    ko_puts(o, "}");
    ko_puts(o, ",\n  \"eviction_log\": [");
    for (k = 0, i = 0; c->present && c->magic_ok && k < KCACHE__EVLOG_SLOTS; k++) {
        if (!c->evlog[k].d.lo && !c->evlog[k].d.hi) continue;
        ko_puts(o, i++ ? ", " : "");
        ko_puts(o, "{\"digest\": ");
        ks_json_hex(o, c->evlog[k].d);
        ko_puts(o, ", ");
        ks_json_time(o, "when", c->evlog[k].when);
        ko_printf(o, ", \"bytes\": %llu}", (unsigned long long)c->evlog[k].size);
    }
    ko_printf(o, "],\n  \"units_total\": %llu,\n  \"units\": [", (unsigned long long)(S->nunits + S->units_over));
    for (i = 0; i < S->nunits && i < KS_SHOW_MAX && !o->full; i++) {
        const ks_unit *u = &S->units[i];
        ko_puts(o, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
        if (u->name) ko_json_str(o, (const unsigned char *)u->name, u->nlen); else ko_puts(o, "null");
        ko_puts(o, ", \"id\": ");
        ks_json_hex(o, u->id);
        ko_printf(o, ", \"entries\": %llu, \"bytes\": %llu, \"index\": %s, \"index_ok\": %s, \"live\": %u, \"gone\": %u, \"missed\": %u, "
                     "\"live_without_entry\": %u}",
                  (unsigned long long)u->entries, (unsigned long long)u->bytes, u->has_index ? "true" : "false",
                  u->has_index && !u->index_bad ? "true" : "false", u->live, u->gone, u->missed, u->live_missing);
    }
    if (S->nunits) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"indexes\": {\"count\": %llu, \"damaged\": %llu, \"with_damaged_records\": %llu, \"misnamed\": %llu}",
              (unsigned long long)S->indexes, (unsigned long long)S->bad_indexes, (unsigned long long)S->torn_indexes,
              (unsigned long long)S->misplaced_indexes);
    ko_printf(o, ",\n  \"temp_files\": {\"count\": %llu, \"bytes\": %llu, \"orphaned\": %llu, \"orphaned_bytes\": %llu, \"in_progress\": %llu}",
              (unsigned long long)S->tmp_files, (unsigned long long)S->tmp_bytes, (unsigned long long)S->tmp_orphaned,
              (unsigned long long)S->tmp_orphan_bytes, (unsigned long long)S->tmp_live);
    ko_printf(o, ",\n  \"misses\": {\"traced\": %llu, \"recent\": [", (unsigned long long)S->misses_total);
    for (i = 0; i < S->nmisses && !o->full; i++) {
        const ks_miss *m = &S->misses[i];
        ko_puts(o, i ? ",\n    {" : "\n    {");
        ks_json_time(o, "when", m->when);
        ko_puts(o, ", \"unit\": ");
        ko_json_str(o, (const unsigned char *)m->unit, m->ulen);
        ko_printf(o, ", \"pid\": %u, \"reason\": \"%s\", \"explanation\": ", (unsigned)m->pid, ks_reason_word(m->reason));
        ko_json_cstr(o, m->why);
        ko_puts(o, "}");
    }
    if (S->nmisses) ko_puts(o, "\n  ");
    ko_printf(o, "]}");
    ko_puts(o, ",\n  \"verify\": ");
    if (!op->verify) ko_puts(o, "null");
    else {
        ko_printf(o, "{\"entries\": %llu, \"indexes\": %llu, \"bad\": %llu, \"bad_entries\": [", (unsigned long long)S->verified,
                  (unsigned long long)S->indexes_verified, (unsigned long long)S->bad);
        for (i = 0; i < S->bad && i < KS_SHOW_BAD; i++) {
            ko_puts(o, i ? ", {\"file\": " : "{\"file\": ");
            ko_json_cstr(o, S->badlist[i].file);
            ko_puts(o, ", \"unit\": ");
            ko_json_cstr(o, S->badlist[i].unit[0] ? S->badlist[i].unit : NULL);
            ko_puts(o, ", \"problem\": ");
            ko_json_cstr(o, S->badlist[i].why);
            ko_puts(o, "}");
        }
        ko_puts(o, "]}");
    }
    ko_printf(o, ",\n  \"verdict\": {\"consistent\": %s, \"problems\": [", P->n ? "false" : "true");
    for (k = 0; k < P->n; k++) { ko_puts(o, k ? ", " : ""); ko_json_cstr(o, P->item[k]); }
    ko_puts(o, "], \"notes\": [");
    for (k = 0; k < N->n; k++) { ko_puts(o, k ? ", " : ""); ko_json_cstr(o, N->item[k]); }
    ko_puts(o, "]}\n}\n");
}

/* The store summary of the directory path.  0, or 2 with a message. */
static KI_MAYBE_UNUSED int ki_store_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_store *S = (ks_store *)calloc(1, sizeof *S);
    ks_list *P = (ks_list *)malloc(sizeof *P), *N = (ks_list *)malloc(sizeof *N);
    struct stat sb;
    if (!S || !P || !N) { free(S); free(P); free(N); ki_fmt(err, errcap, "out of memory"); return 2; }
    if (ks_store_open(path, &S->ref, err, errcap) != 0) { free(S); free(P); free(N); return 2; }
    if (fstat(S->ref.dirfd, &sb) == 0 && (sb.st_mode & 022) == 0 && sb.st_uid == 0 && geteuid() != 0) S->dir_root = 1;
    else if (fstat(S->ref.dirfd, &sb) == 0 && (sb.st_uid != geteuid() || (sb.st_mode & 022) != 0)) {
        S->dir_refused = 1;
        ki_fmt(S->dir_why, sizeof S->dir_why, "%s", sb.st_uid != geteuid() ? "owned by another user" : "writable by group or others");
    }
    S->table_read = S->ref.cffd >= 0 && S->ref.cf.present && S->ref.cf.nslots > 0;
    if (S->table_read) ks_walk_table(S);
    ks_walk_entries(S, op);
    ks_walk_indexes(S, op);
    ks_walk_tmp(S);
    free(S->utable); /* the units are sorted now: the table's indices no longer hold */
    S->utable = NULL;
    S->tcap = 0;
    if (S->nunits) qsort(S->units, S->nunits, sizeof *S->units, ks_unit_cmp);
    if (S->nmisses) qsort(S->misses, S->nmisses, sizeof *S->misses, ks_miss_cmp);
    ks_store_assess(S, P, N);
    if (op->json) ks_store_json(o, S, op, P, N);
    else ks_store_text(o, S, op, P, N);
    ks_store_free(S);
    free(S);
    free(P);
    free(N);
    return 0;
}

/* Up to 8 unit names of a store's indexes, for a message. */
static void ks_some_units(int dirfd_, char *out, size_t cap)
{
    int shard, n = 0;
    size_t len = 0;
    out[0] = 0;
    for (shard = 0; shard < 256 && n < 8; shard++) {
        char rel[8];
        int fd;
        DIR *dp;
        struct dirent *de;
        snprintf(rel, sizeof rel, "i/%02x", shard);
        if (!(dp = ks_opendir_in(dirfd_, rel, &fd))) continue;
        while ((de = readdir(dp)) != NULL && n < 8) {
            unsigned char h[26 + KCACHE_UNIT_MAX];
            kcache_hash128 id;
            int ifd;
            long long got;
            size_t ul, j;
            if (!ks_digest_name(de->d_name, ".kci", &id)) continue;
            if ((ifd = openat(fd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) < 0) continue;
            got = ks_pread(ifd, h, sizeof h, 0);
            close(ifd);
            if (got < 26 || memcmp(h, "KCINDEX", 8) != 0) continue;
            ul = kcache__get_u16(h + 24);
            if (ul == 0 || ul >= KCACHE_UNIT_MAX || (size_t)got < 26 + ul) continue;
            for (j = 0; j < ul; j++) if (h[26 + j] < 0x20 || h[26 + j] >= 0x7f) h[26 + j] = '?';
            len += (size_t)ki_fmt(out + len, len < cap ? cap - len : 0, "%s\"%.*s\"", n ? ", " : "", (int)(ul > 40 ? 40 : ul), (const char *)h + 26);
            n++;
            if (len >= cap) break;
        }
        closedir(dp);
    }
}

/* One unit's index in the store at path.  0, or 2 with a message. */
static KI_MAYBE_UNUSED int ki_unit_report(const char *path, const char *unit, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_store_ref *ref = (ks_store_ref *)calloc(1, sizeof *ref);
    char rel[48], file[4200], e2[200];
    unsigned char *buf;
    size_t len = 0, ul = strlen(unit);
    int fd, rc;
    if (!ref) { ki_fmt(err, errcap, "out of memory"); return 2; }
    if (ul == 0 || ul >= KCACHE_UNIT_MAX) { free(ref); ki_fmt(err, errcap, "a unit name has 1 to %d bytes", KCACHE_UNIT_MAX - 1); return 2; }
    if (ks_store_open(path, ref, err, errcap) != 0) { free(ref); return 2; }
    kcache__ix_name(unit, rel);
    ki_fmt(file, sizeof file, "%s/%s", ref->path, rel);
    fd = ks_open_in(ref->dirfd, rel);
    if (fd < 0) {
        if (errno == ENOENT) {
            char some[400];
            ks_some_units(ref->dirfd, some, sizeof some);
            ki_fmt(err, errcap, "no index for unit \"%.80s\" (%s): never stored here%s%s", unit, rel, some[0] ? "; units with an index: " : "", some);
        } else {
            ki_fmt(err, errcap, "%s: cannot open: %s", rel, strerror(errno));
        }
        rc = 2;
    } else {
        buf = ks_read_index_fd(fd, &len, e2, sizeof e2);
        close(fd);
        if (!buf) { ki_fmt(err, errcap, "%s: %s", rel, e2); rc = 2; }
        else {
            rc = ki_index_report_mem(buf, len, file, ref, op, o, e2, sizeof e2);
            if (rc) ki_fmt(err, errcap, "%s: %s", rel, e2);
            free(buf);
        }
    }
    if (ref->cffd >= 0) close(ref->cffd);
    close(ref->dirfd);
    free(ref);
    return rc;
}

/* The store an index or entry file lies in: ROOT of ROOT/i/XX/NAME or ROOT/e/XX/NAME. */
static int ks_store_of_file(const char *file, char which, ks_store_ref *ref)
{
    char abs[4096], shard[4096], top[4096], root[4096], err[200];
    const char *b;
    memset(ref, 0, sizeof *ref);
    ref->dirfd = ref->cffd = -1;
    if (ki_abspath(file, abs, sizeof abs) != 0) return -1;
    path_dirname(abs, shard, sizeof shard);
    b = path_base(shard);
    if (strlen(b) != 2 || hexval((unsigned char)b[0]) < 0 || hexval((unsigned char)b[1]) < 0) return -1;
    path_dirname(shard, top, sizeof top);
    b = path_base(top);
    if (b[0] != which || b[1] != 0) return -1;
    path_dirname(top, root, sizeof root);
    if (ks_store_open(root, ref, err, sizeof err) != 0) { ref->dirfd = ref->cffd = -1; return -1; }
    return 0;
}

/* A .kci file.  0, or 2 with a message. */
static KI_MAYBE_UNUSED int ki_index_file_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_store_ref *ref = (ks_store_ref *)calloc(1, sizeof *ref);
    char abs[4096];
    unsigned char *buf;
    size_t len = 0;
    int fd, rc;
    if (!ref) { ki_fmt(err, errcap, "out of memory"); return 2; }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) { free(ref); ki_fmt(err, errcap, "cannot open: %s", strerror(errno)); return 2; }
    buf = ks_read_index_fd(fd, &len, err, errcap);
    close(fd);
    if (!buf) { free(ref); return 2; }
    if (ks_store_of_file(path, 'i', ref) != 0) ref->dirfd = ref->cffd = -1;
    if (ki_abspath(path, abs, sizeof abs) != 0) ki_fmt(abs, sizeof abs, "%s", path);
    rc = ki_index_report_mem(buf, len, abs, ref->dirfd >= 0 ? ref : NULL, op, o, err, errcap);
    free(buf);
    if (ref->cffd >= 0) close(ref->cffd);
    if (ref->dirfd >= 0) close(ref->dirfd);
    free(ref);
    return rc;
}

/* A .kce file.  0, or 2 with a message. */
static KI_MAYBE_UNUSED int ki_entry_file_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_entry e;
    unsigned char *h = NULL;
    char abs[4096];
    kcache_hash128 d;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) { ki_fmt(err, errcap, "cannot open: %s", strerror(errno)); return 2; }
    if (ks_entry_read_fd(fd, 1, &e, &h, err, errcap) != 0) { close(fd); return 2; }
    close(fd);
    if (ks_digest_name(path_base(path), ".kce", &d)) {
        e.name_digest = ks_same(d, e.digest);
        if (!e.name_digest) ks_problem(e.problem, sizeof e.problem, "the entry's digest is not its file name's");
    }
    if (ki_abspath(path, abs, sizeof abs) != 0) ki_fmt(abs, sizeof abs, "%s", path);
    ks_entry_report(o, &e, abs, op);
    ks_entry_free(&e);
    free(h);
    return 0;
}

#ifndef KCACHE_INSPECT_NO_MAIN
/* ---------------------------------------------------------------------------------------- */
/* --make-layer SRC DEST [--unit NAME]... [--private]: a read-only layer (KCACHE_LAYERS).      */
/*
 * The one command here that writes a store, and it writes only DEST, a directory it makes (or an
 * empty one): SRC is read as the rest of this tool reads a store (no lock, nothing written).
 * Every entry chosen (all, or those of the --unit units) is read whole and validated as kcache
 * validates a hit: its key record against its file name and header, both checksums. A sound one
 * is stored in DEST by kcache.h's own put, which writes the entry, the unit's index (its live
 * overloads: what kcache_explain and `kcache-inspect DEST UNIT` read) and the accounting in
 * config.file, so DEST is laid out as a store and found consistent. Entries get a new header
 * around the same key record (dependency stamps included) and payload; a zstd entry
 * (KCACHE_COMPRESS) would need zstd, which this tool is built without, so such entries are left
 * out and counted. The lock file and tmp/ go at the end (nobody writes a layer) and the modes
 * become 0755 / 0644 so that every user may read it (--private: 0700 / 0600). A layer is as
 * trustworthy as SRC: only entries of SRC's owner (or root's) that nobody else may write are taken,
 * each judged on the file it copies from, and kcache uses a layer only when it is root's or the
 * user's own (kcache.h's SECURITY).
 */

typedef struct ml_item { kcache_hash128 d, unit; int copied; } ml_item;
typedef struct ml_run {
    const char *const *units;   /* --unit NAME..., NULL: every unit */
    int nunits;
    unsigned long *unit_hits;   /* entries found per --unit */
    ml_item *items;
    size_t n, cap;
    uint64_t copied, bytes, corrupt, compressed, foreign, nunits_copied;
} ml_run;

static int ml_unit_index(const ml_run *R, const char *unit)
{
    int i;
    for (i = 0; i < R->nunits; i++)
        if (strcmp(R->units[i], unit) == 0) return i;
    return -1;
}

/* Pass 1: the entries to copy (their unit read from the header's first bytes). */
typedef struct ml_scan_ctx { ml_run *R; uid_t owner; int failed; } ml_scan_ctx;
static int ml_scan_one(void *ctx, int fd, const char *rel, const char *name)
{
    ml_scan_ctx *c = (ml_scan_ctx *)ctx;
    ml_run *R = c->R;
    kcache_hash128 d;
    struct stat sb;
    char unit[KCACHE_UNIT_MAX];
    size_t ulen = 0;
    int efd, got, which = -1;
    if (!ks_digest_name(name, ".kce", &d) || strncmp(name, rel + 2, 2) != 0) return 0;
    if (fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode)) return 0;
    if ((sb.st_uid != c->owner && sb.st_uid != 0) || (sb.st_mode & 022)) { R->foreign++; return 0; }
    if ((efd = openat(fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) < 0) { R->corrupt++; return 0; }
    got = ks_entry_unit_fd(efd, unit, &ulen);
    close(efd);
    if (!got) { R->corrupt++; return 0; }
    if (R->units && (which = ml_unit_index(R, unit)) < 0) return 0;
    if (which >= 0) R->unit_hits[which]++;
    if (R->n == R->cap) {
        size_t cap = R->cap ? R->cap * 2 : 256;
        ml_item *p = (ml_item *)realloc(R->items, cap * sizeof *p);
        if (!p) { c->failed = 1; return 1; }
        R->items = p;
        R->cap = cap;
    }
    R->items[R->n].d = d;
    R->items[R->n].unit = kcache_hash(unit, ulen);
    R->items[R->n].copied = 0;
    R->n++;
    return 0;
}
static int ml_scan(int sfd, uid_t owner, ml_run *R, char *err, size_t errcap)
{
    ml_scan_ctx c;
    c.R = R;
    c.owner = owner;
    c.failed = 0;
    ks_each_in_shards(sfd, 'e', ml_scan_one, &c);
    if (c.failed) { ki_fmt(err, errcap, "out of memory"); return -1; }
    return 0;
}

/* Pass 2, one entry: opened once, relative to its shard's directory (neither of them a link), and
   judged by the open file, not by what pass 1 saw under that name (another member of a shared-group
   store may have renamed her own file over it since): a regular file of the store's owner or root
   that nobody else may write. Its header and the size it says come first, so a sparse or huge file
   is not read; then the entry is read whole, validated and stored in dst. -1 (with err) when dst
   failed. */
static int ml_copy_one(int efd, uid_t owner, kcache__store *dst, ml_item *it, ml_run *R, char *err, size_t errcap)
{
    char rel[48], shard[3];
    unsigned char fixed[KCACHE__ENTRY_FIXED];
    struct stat sb;
    kcache__blob *b;
    kcache__read rd;
    kcache__store_ev ev;
    kcache_key k;
    kcache_status s;
    const unsigned char *h;
    size_t size, rlen;
    uint64_t hlen, plen;
    long long have;
    int fd, sfd;
    kcache__entry_name(it->d, rel); /* "e/XX/<digest>.kce" */
    memcpy(shard, rel + 2, 2);
    shard[2] = 0;
    sfd = openat(efd, shard, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    fd = sfd < 0 ? -1 : openat(sfd, rel + 5, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (sfd >= 0) close(sfd);
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        if (fd >= 0) close(fd);
        R->corrupt++;
        return 0;
    }
    if ((sb.st_uid != owner && sb.st_uid != 0) || (sb.st_mode & 022)) { close(fd); R->foreign++; return 0; }
    have = ks_pread(fd, fixed, sizeof fixed, 0);
    hlen = have == (long long)sizeof fixed ? kcache__get_u32(fixed + 12) : 0;
    plen = have == (long long)sizeof fixed ? kcache__get_u64(fixed + 16) : 0;
    if (have != (long long)sizeof fixed || memcmp(fixed, "KCENTRY", 8) != 0 || kcache__get_u64(fixed + 24) != it->d.lo ||
        kcache__get_u64(fixed + 32) != it->d.hi || hlen < KCACHE__ENTRY_FIXED + 24 || plen > ((uint64_t)1 << 40) ||
        hlen + plen != (uint64_t)sb.st_size || (uint64_t)sb.st_size > (uint64_t)((size_t)-1 / 2) ||
        !(b = kcache__blob_alloc(NULL, (size_t)sb.st_size, 0))) {
        close(fd);
        R->corrupt++;
        return 0;
    }
    size = (size_t)sb.st_size;
    have = ks_pread(fd, kcache__blob_bytes(b), size, 0);
    close(fd);
    h = kcache__blob_bytes(b);
    rlen = kcache__get_u32(h + 64);
    memset(&k, 0, sizeof k);
    if (have != (long long)size || memcmp(h, "KCENTRY", 8) != 0 || rlen > size - KCACHE__ENTRY_FIXED ||
        kcache__record_parse(h + KCACHE__ENTRY_FIXED, rlen, &k) != KCACHE_OK || !ks_same(k.digest, it->d)) {
        if (k.magic) kcache_key_free(&k);
        kcache__blob_unref(b);
        R->corrupt++;
        return 0;
    }
    memset(&rd, 0, sizeof rd);
    kcache__entry_check(b, (size_t)have, size, &k, KCACHE_STAMP_HYBRID, 0, (uint64_t)1 << 40, &rd); /* takes b */
    KCACHE_FREE(rd.rec);
    if (rd.status != KCACHE_OK) {
        if (rd.status == KCACHE_ENOENT) R->compressed++; /* a zstd entry: not readable here */
        else R->corrupt++;
        kcache_key_free(&k);
        return 0;
    }
    memset(&ev, 0, sizeof ev);
    s = kcache__store_put(dst, &k, rd.blob->data, rd.blob->size, &ev);
    kcache__blob_unref(rd.blob);
    if (s == KCACHE_OK && ev.evicted) { /* the disk's reserve made kcache evict: the layer would lack entries */
        s = KCACHE_ENOSPC;
        ki_fmt(err, errcap, "the filesystem of the layer is nearly full (kcache keeps 5 %% of it free)");
    } else if (s != KCACHE_OK) {
        ki_fmt(err, errcap, "storing unit \"%s\": %s%s%s", k.unit, kcache_strerror(s), ev.note[0] ? ": " : "", ev.note);
    }
    kcache_key_free(&k);
    if (s != KCACHE_OK) return -1;
    it->copied = 1;
    R->copied++;
    R->bytes += size;
    return 0;
}

static mode_t ml_dir_mode, ml_file_mode;
static int ml_chmod_one(const char *p, const struct stat *s, int flag, struct FTW *f)
{
    (void)f;
    if (flag == FTW_D || flag == FTW_DP) return chmod(p, ml_dir_mode) == 0 ? 0 : -1;
    if (flag == FTW_F && S_ISREG(s->st_mode)) return chmod(p, ml_file_mode) == 0 ? 0 : -1;
    return 0;
}

/* Whether the directory names something (other than . and ..); -1 when it cannot be read. */
static int ml_dir_used(const char *path)
{
    DIR *dp = opendir(path);
    struct dirent *de;
    int used = 0;
    if (!dp) return -1;
    while (!used && (de = readdir(dp)) != NULL) used = !ks_dot(de->d_name);
    closedir(dp);
    return used;
}

static int ml_unit_count_cmp(const void *a, const void *b) { return memcmp(a, b, sizeof(kcache_hash128)); }

static int ki_make_layer(const char *src, const char *dest, const char *const *units, int nunits, int private_modes, ki_out *o,
                         char *err, size_t errcap)
{
    char src_abs[4096], dest_abs[4096], parent[4096], real_src[PATH_MAX], real_parent[PATH_MAX], why[600], a[48];
    ml_run R;
    struct stat sb;
    kcache__store *dst = NULL;
    kcache_config cfg;
    kcache_hash128 *uh;
    uid_t owner;
    int sfd = -1, efd = -1, rc = 2, i;
    size_t j;
    memset(&R, 0, sizeof R);
    R.units = nunits ? units : NULL;
    R.nunits = nunits;
    if (ki_abspath(src, src_abs, sizeof src_abs) != 0 || ki_abspath(dest, dest_abs, sizeof dest_abs) != 0) {
        ki_fmt(err, errcap, "a path is too long");
        return 2;
    }
    sfd = open(src_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0 || fstat(sfd, &sb) != 0) { ki_fmt(err, errcap, "%s: cannot open the store: %s", src, strerror(errno)); goto out; }
    owner = sb.st_uid;
    efd = openat(sfd, "e", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (efd < 0) { ki_fmt(err, errcap, "%s: not a kcache store with entries (no e/)", src); goto out; }
    if (nunits && !(R.unit_hits = (unsigned long *)calloc((size_t)nunits, sizeof *R.unit_hits))) { ki_fmt(err, errcap, "out of memory"); goto out; }
    if (ml_scan(sfd, owner, &R, err, errcap) != 0) goto out;
    for (i = 0; i < nunits; i++)
        if (!R.unit_hits[i]) {
            char q[4096 + 16];
            ki_fmt(err, errcap, "%s: no entry of unit \"%s\" (kcache-inspect %s lists the units); nothing made", src, units[i],
                   kcache__shell_quote(q, sizeof q, src));
            goto out;
        }
    if (!R.n) { ki_fmt(err, errcap, "%s: no entries to copy; nothing made", src); goto out; }
    /* DEST: new (its parent exists: no directory is made on the way) or empty, and not in SRC */
    path_dirname(dest_abs, parent, sizeof parent);
    if (lstat(dest_abs, &sb) == 0 && (!S_ISDIR(sb.st_mode) || ml_dir_used(dest_abs) != 0)) {
        ki_fmt(err, errcap, "%s exists and is not an empty directory: a layer is made in a new one", dest);
        goto out;
    }
    if (!realpath(parent, real_parent) || stat(real_parent, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        ki_fmt(err, errcap, "%s: its directory %s does not exist: make it first", dest, parent);
        goto out;
    }
    if (!realpath(src_abs, real_src)) { ki_fmt(err, errcap, "%s: %s", src, strerror(errno)); goto out; }
    if (strcmp(real_parent, real_src) == 0 || (strncmp(real_parent, real_src, strlen(real_src)) == 0 && real_parent[strlen(real_src)] == '/')) {
        ki_fmt(err, errcap, "%s is inside the store %s: a layer is made outside it", dest, src);
        goto out;
    }
    memset(&cfg, 0, sizeof cfg); /* no limit, no environment: every entry chosen, as it is */
    cfg.fsync = 1;               /* made once, read by many: on disk before it is announced */
    cfg.lock_timeout_ms = 10000;
    why[0] = 0;
    if (kcache__store_open(&dst, dest_abs, &cfg, why, sizeof why) != KCACHE_OK || dst->readonly) {
        ki_fmt(err, errcap, "cannot make the layer %s: %s", dest, why[0] ? why : "not writable");
        goto out;
    }
    for (j = 0; j < R.n; j++)
        if (ml_copy_one(efd, owner, dst, &R.items[j], &R, why, sizeof why) != 0) {
            ki_fmt(err, errcap, "%s: %s; the layer is incomplete: remove it", dest, why);
            goto out;
        }
    kcache__store_close(dst);
    dst = NULL;
    {   /* nobody writes a layer: no lock file, no tmp/ (kcache makes them again if it is ever used as a store) */
        int dfd = open(dest_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd >= 0) {
            unlinkat(dfd, "lock", 0);
            unlinkat(dfd, "tmp", AT_REMOVEDIR);
            close(dfd);
        }
    }
    ml_dir_mode = private_modes ? 0700 : 0755;
    ml_file_mode = private_modes ? 0600 : 0644;
    if (nftw(dest_abs, ml_chmod_one, 32, FTW_PHYS) != 0) { ki_fmt(err, errcap, "%s: cannot set the modes: %s", dest, strerror(errno)); goto out; }
    if ((uh = (kcache_hash128 *)malloc(R.n * sizeof *uh)) != NULL) { /* the distinct units copied */
        size_t n = 0;
        for (j = 0; j < R.n; j++)
            if (R.items[j].copied) uh[n++] = R.items[j].unit;
        qsort(uh, n, sizeof *uh, ml_unit_count_cmp);
        for (j = 0; j < n; j++) R.nunits_copied += j == 0 || !ks_same(uh[j], uh[j - 1]);
        free(uh);
    }
    ks_size(a, sizeof a, R.bytes);
    ko_puts(o, "layer      ");
    ks_wrap(o, dest_abs, 11, 11);
    ko_puts(o, "from       ");
    ks_wrap(o, src_abs, 11, 11);
    ko_printf(o, "copied     %llu entr%s of %llu unit%s (%s)\n", (unsigned long long)R.copied, R.copied == 1 ? "y" : "ies",
              (unsigned long long)R.nunits_copied, R.nunits_copied == 1 ? "" : "s", a);
    if (R.corrupt || R.compressed || R.foreign) {
        char line[600];
        ki_fmt(line, sizeof line, "%llu corrupt, %llu compressed (KCACHE_COMPRESS: this kcache-inspect has no zstd), %llu not the store's owner's or root's alone (made or writable by another user)",
               (unsigned long long)R.corrupt, (unsigned long long)R.compressed, (unsigned long long)R.foreign);
        ko_puts(o, "left out   ");
        ks_wrap(o, line, 11, 11);
    }
    ko_printf(o, "modes      directories %o, files %o: %s\n", (unsigned)ml_dir_mode, (unsigned)ml_file_mode,
              private_modes ? "yours alone" : "every user may read it (kcache uses a layer that is root's or the user's own)");
    {   /* a line to paste into a shell: quoted, not wrapped */
        char q[4096 * 4 + 16];
        ko_printf(o, "use        KCACHE_LAYERS=%s\n", kcache__shell_quote(q, sizeof q, dest_abs));
    }
    rc = 0;
out:
    if (dst) kcache__store_close(dst);
    if (efd >= 0) close(efd);
    if (sfd >= 0) close(sfd);
    free(R.items);
    free(R.unit_hits);
    return rc;
}

/* Reads a whole file, at most KI_MAX_FILE bytes. */
static unsigned char *read_file(const char *path, size_t *len, char *err, size_t errcap)
{
    FILE *f = fopen_regular(path, "rb");
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

/* ---- store commands: --evict-older-than, --trim, --remove-unit, --clear (issue 28) ----
   Through the library's own calls (kcache_evict_older_than, ...), on the store opened as a program
   opens it: its lock, its accounting kept exact, its checks (another user's store is refused). */
enum { KI_TIDY_NONE, KI_TIDY_OLDER, KI_TIDY_TRIM, KI_TIDY_UNIT, KI_TIDY_CLEAR };

/* AGE as 90s, 30m, 12h, 7d (a bare number: seconds). 1 with *secs, 0 when it is not one. */
static int ki_parse_age(const char *s, uint64_t *secs)
{
    uint64_t v = 0, mul = 1;
    const char *p = s;
    if (!s || !*s) return 0;
    while (*p >= '0' && *p <= '9') {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) return 0;
        v = v * 10 + (uint64_t)(*p++ - '0');
    }
    if (p == s) return 0;
    if (*p == 's') p++;
    else if (*p == 'm') { mul = 60; p++; }
    else if (*p == 'h') { mul = 3600; p++; }
    else if (*p == 'd') { mul = 86400; p++; }
    if (*p || (v && mul > UINT64_MAX / v)) return 0;
    *secs = v * mul;
    return 1;
}

static void ki_eprintf(const char *fmt, ...) KI_PRINTF(1, 2);
static int ki_tidy(int what, const char *arg, const char *dir, int yes)
{
    static const char *const name[] = {"", "--evict-older-than", "--trim", "--remove-unit", "--clear"};
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_tidy done;
    kcache_status s = KCACHE_EINVAL;
    struct stat sb;
    char why[1024], cf[4200], q[1100], shown[1100];
    uint64_t v = 0;
    int fd;
    if (what == KI_TIDY_OLDER && !ki_parse_age(arg, &v)) {
        ki_eprintf("kcache-inspect: --evict-older-than '%s' is not an age (90s, 30m, 12h, 7d)\n", arg);
        return 2;
    }
    if (what == KI_TIDY_TRIM && !kcache__parse_size(arg, &v)) {
        ki_eprintf("kcache-inspect: --trim '%s' is not a size (bytes, or with K, M, G, T as KCACHE_MAX_SIZE takes it)\n", arg);
        return 2;
    }
    /* a store that is there: a mistyped DIR must not become a new, empty store */
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        ki_eprintf("kcache-inspect: %s %s: %s\n", name[what], dir, stat(dir, &sb) != 0 ? strerror(errno) : "not a directory");
        return 2;
    }
    snprintf(cf, sizeof cf, "%s/config.file", dir);
    if (lstat(cf, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        ki_eprintf("kcache-inspect: %s %s: not a kcache store (no config.file)\n", name[what], dir);
        return 2;
    }
    kcache_config_defaults(&cfg); /* as given: no KCACHE_ENABLE=0 or KCACHE_DIR from the environment */
    cfg.dir = dir;
    cfg.publish = 0;
    cfg.mem_entries = 1;
    if ((fd = open(cf, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) >= 0) { /* the store's own limit, kept as it is */
        unsigned char h[64];
        if (ks_pread(fd, h, sizeof h, 0) == (long long)sizeof h && memcmp(h, "KCACHECF", 8) == 0) cfg.max_size = kcache__get_u64(h + 56);
        close(fd);
    }
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { ki_eprintf("kcache-inspect: out of memory\n"); return 2; }
    if (!kcache_store_in_use(kc, why, sizeof why) || why[0]) {
        ki_eprintf("kcache-inspect: %s %s: %s\n", name[what], dir, why[0] ? why : "the store cannot be used");
        kcache_close(kc);
        return 2;
    }
    switch (what) {
    case KI_TIDY_OLDER: s = kcache_evict_older_than(kc, v, !yes, &done); break;
    case KI_TIDY_TRIM: s = kcache_trim(kc, v, !yes, &done); break;
    case KI_TIDY_UNIT: s = kcache_remove_unit(kc, arg, !yes, &done); break;
    default: s = kcache_clear(kc, !yes, &done); break;
    }
    if (s != KCACHE_OK) {
        ki_eprintf("kcache-inspect: %s %s: %s\n", name[what], dir, kcache_strerror(s));
        kcache_close(kc);
        return 2;
    }
    kcache__shell_quote(q, sizeof q, dir);
    kcache__escs(shown, sizeof shown, dir); /* a path is printed escaped, as every name from outside */
    if (!yes) {
        printf("would remove %llu entries (%llu bytes) from %s\n", (unsigned long long)done.entries, (unsigned long long)done.bytes, shown);
        char qa[600];
        kcache__shell_quote(qa, sizeof qa, what == KI_TIDY_CLEAR ? "" : arg);
        printf("(a dry run: kcache-inspect %s%s%s --yes %s removes them)\n", name[what], what == KI_TIDY_CLEAR ? "" : " ",
               what == KI_TIDY_CLEAR ? "" : qa, q);
    } else {
        kcache_stats st;
        kcache_get_stats(kc, &st);
        printf("removed %llu entries (%llu bytes) from %s; it now holds %llu entries, %llu bytes\n", (unsigned long long)done.entries,
               (unsigned long long)done.bytes, shown, (unsigned long long)st.disk_entries, (unsigned long long)st.disk_bytes);
    }
    kcache_close(kc);
    return fflush(stdout) != 0 ? 2 : 0;
}

/* A message on stderr, its %s and %c arguments escaped as ko_printf's (a path or unit name). */
static void ki_eprintf(const char *fmt, ...) KI_PRINTF(1, 2);
static void ki_eprintf(const char *fmt, ...)
{
    ktext t;
    va_list ap;
    ktext_init(&t);
    va_start(ap, fmt);
    ktext_vfmt(&t, fmt, ap);
    va_end(ap);
    fputs(t.p, stderr);
    ktext_free(&t);
}

static void usage(FILE *f)
{
    fputs("usage: kcache-inspect [options] FILE.nbi    explain a numba cache index\n"
          "       kcache-inspect --make-layer [--unit NAME]... SRC DEST   a read-only layer from a store\n"
          "       kcache-inspect [options] DIR         summary and consistency check of a kcache store\n"
          "                                            (a numba cache directory: every .nbi in it)\n"
          "       kcache-inspect --evict-older-than AGE|--trim SIZE|--remove-unit NAME|--clear [--yes] DIR\n"
          "       kcache-inspect [options] DIR UNIT    one unit of a store: overloads, fields, dependencies\n"
          "       kcache-inspect [options] FILE.kci    the same from a kcache index file\n"
          "       kcache-inspect [options] FILE.kce    one kcache entry: header, key fields, checksums\n"
          , f);
    /* (two strings: C99 compilers need take no string longer than 4095 bytes) */
    fputs("options:\n"
          "  --json               the same facts as JSON\n"
          "  --verify             kcache: read every entry whole and check every checksum\n"
          "  --stamp POLICY       kcache: judge dependency stamps by mtime, content or hybrid\n"
          "                       (default: KCACHE_STAMP, else hybrid)\n"
          "  --source FILE        numba: the .py file the index belongs to (default: found as numba does)\n"
          "  --cpu NAME           numba: this machine's CPU name as LLVM names it\n"
          "                       (default: NUMBA_CPU_NAME, else detected)\n"
          "  --features STR       numba: this machine's CPU features, \"+a,-b,...\"\n"
          "                       (default: NUMBA_CPU_FEATURES, else detected)\n"
          "  --triple TRIPLE      numba: also require this target triple\n"
          "  --numba-version VER  numba: the numba that will run (an index of another version is ignored;\n"
          "                       default: the index's version); also picks the LLVM that names the CPU\n"
          "  --llvm-version N     numba: that numba's LLVM major version, where builds differ (Debian's\n"
          "                       numba 0.56 uses LLVM 14, PyPI's 11)\n"
          "  --cache-dir DIR      numba: the run's NUMBA_CACHE_DIR ('' for unset; default: this environment's)\n"
          "  --locator-classes L  numba >= 0.62: the run's NUMBA_CACHE_LOCATOR_CLASSES (default: this environment's)\n"
          "  --python PATH        numba: the Python that compiles the source to compare its bytecode with the\n"
          "                       index's, and whose site directories imports are looked up in (default:\n"
          "                       pythonX.Y on PATH, X.Y from the index's name)\n"
          "  --no-bytecode        numba: do not compile the source (the bytecode is then not checked)\n"
          "  --path DIR           numba: also look up imported modules under DIR (repeatable), for the\n"
          "                       warning that numba reuses code compiled against an older module\n"
          "  --host               this machine's CPU: its name, and what each LLVM and numba calls it\n"
          "  --prune PATH...      numba: remove the index and data files numba would raise on or never\n"
          "                       use again (stale, another --numba-version, unlisted data), only inside\n"
          "                       __pycache__ or a numba cache directory; a dry run unless --yes\n"
          "  --yes                --prune and the store commands: remove, not only list\n"
          "  --other-cpu          --prune: also what is compiled for another CPU than this one\n"
          "  --make-layer SRC DEST  make DEST (new, or empty) a read-only layer for KCACHE_LAYERS from the\n"
          "                       store SRC: its entries validated and copied, with their units' indexes;\n"
          "                       directories 0755, files 0644 so that other users may read it\n"
          "  --unit NAME          --make-layer: only this unit's entries (repeatable)\n"
          "  --private            --make-layer: directories 0700, files 0600 (yours alone)\n"
          "store commands (on a store DIR; a dry run unless --yes; exit 0 done, 2 error):\n"
          "  --evict-older-than AGE  remove the entries not used for longer than AGE (90s, 30m, 12h, 7d)\n"
          "  --trim SIZE          remove the least recently used entries until DIR holds at most SIZE\n"
          "                       (bytes, or with K, M, G, T, as KCACHE_MAX_SIZE takes it)\n"
          "  --remove-unit NAME   remove every entry of unit NAME, and its index\n"
          "  --clear              remove every entry\n"
          "  --numba              read FILE as a numba index whatever its name\n"
          "  --dump               numba: also print the decoded pickles\n"
          "  -h, --help           this text\n"
          "exit status: 0 when the tool says what numba or kcache will do (whatever the verdict), 2 when\n"
          "it cannot (unreadable, not a numba index nor a kcache store, bad arguments)\n", f);
}

int main(int argc, char **argv)
{
    ki_opts op;
    int i, rc, dashdash = 0, nprune = 0, tidy = KI_TIDY_NONE;
    const char *tidy_arg = NULL;
    const char **prune = (const char **)argv + 1;   /* the positional arguments, gathered in argv's own slots */
    static const char *layer_units[256];            /* --make-layer's --unit NAMEs */
    struct stat st;
    unsigned char *buf;
    size_t len = 0;
    char err[600];
    const char *stamp = NULL, *env;
    ki_out o;
    memset(&op, 0, sizeof op);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (dashdash || a[0] != '-' || !a[1]) {
            prune[nprune++] = a;   /* FILE|DIR [UNIT], or --prune's PATHs */
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { usage(stdout); return 0; }
        else if (strcmp(a, "--json") == 0) op.json = 1;
        else if (strcmp(a, "--dump") == 0) op.dump = 1;
        else if (strcmp(a, "--numba") == 0) op.force_numba = 1;
        else if (strcmp(a, "--verify") == 0) op.verify = 1;
        else if (strcmp(a, "--stamp") == 0) slot = &stamp;
        else if (strcmp(a, "--source") == 0) slot = &op.source;
        else if (strcmp(a, "--cpu") == 0) slot = &op.cpu;
        else if (strcmp(a, "--features") == 0) slot = &op.features;
        else if (strcmp(a, "--triple") == 0) slot = &op.triple;
        else if (strcmp(a, "--numba-version") == 0) slot = &op.numba_version;
        else if (strcmp(a, "--cache-dir") == 0) slot = &op.cache_dir;
        else if (strcmp(a, "--locator-classes") == 0) slot = &op.locator_classes;
        else if (strcmp(a, "--python") == 0) slot = &op.python;
        else if (strcmp(a, "--no-bytecode") == 0) op.no_bytecode = 1;
        else if (strcmp(a, "--host") == 0) op.host = 1;
        else if (strcmp(a, "--prune") == 0) op.prune = 1;
        else if (strcmp(a, "--yes") == 0) op.prune_yes = 1;
        else if (strcmp(a, "--other-cpu") == 0) op.prune_other_cpu = 1;
        else if (strcmp(a, "--evict-older-than") == 0 || strcmp(a, "--trim") == 0 || strcmp(a, "--remove-unit") == 0 ||
                 strcmp(a, "--clear") == 0) {
            int w = a[2] == 'e' ? KI_TIDY_OLDER : a[2] == 't' ? KI_TIDY_TRIM : a[2] == 'r' ? KI_TIDY_UNIT : KI_TIDY_CLEAR;
            if (tidy) { fprintf(stderr, "kcache-inspect: one store command at a time\n"); return 2; }
            tidy = w;
            if (w != KI_TIDY_CLEAR) {
                if (i + 1 >= argc) { fprintf(stderr, "kcache-inspect: %s needs a value\n", a); return 2; }
                tidy_arg = argv[++i];
            }
            continue;
        }
        else if (strcmp(a, "--make-layer") == 0) op.make_layer = 1;
        else if (strcmp(a, "--private") == 0) op.private_layer = 1;
        else if (strcmp(a, "--unit") == 0) {
            if (i + 1 >= argc) { ki_eprintf("kcache-inspect: %s needs a value\n", a); return 2; }
            if (op.nlayer_units == (int)(sizeof layer_units / sizeof layer_units[0])) { fprintf(stderr, "kcache-inspect: at most 256 --unit\n"); return 2; }
            op.layer_units = layer_units;
            op.layer_units[op.nlayer_units++] = argv[++i];
            continue;
        }
        else if (strcmp(a, "--llvm-version") == 0 || strcmp(a, "--path") == 0) {
            char *end;
            long v;
            if (i + 1 >= argc) { ki_eprintf("kcache-inspect: %s needs a value\n", a); return 2; }
            if (a[2] == 'p') {
                if (op.npaths == (int)(sizeof op.paths / sizeof op.paths[0])) { fprintf(stderr, "kcache-inspect: at most 16 --path\n"); return 2; }
                op.paths[op.npaths++] = argv[++i];
                continue;
            }
            v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1000) { ki_eprintf("kcache-inspect: --llvm-version '%s' is not an LLVM major version\n", argv[i]); return 2; }
            op.llvm_version = (int)v;
            continue;
        }
        else if (strcmp(a, "--") == 0) dashdash = 1;
        else { ki_eprintf("kcache-inspect: unknown option '%s' (try --help)\n", a); return 2; }
        if (slot) {
            if (i + 1 >= argc) { ki_eprintf("kcache-inspect: %s needs a value\n", a); return 2; }
            *slot = argv[++i];
        }
    }
    if (op.host) {
        memset(&o, 0, sizeof o);
        ki_host_report(&op, &o);
        fwrite(o.buf ? o.buf : "", 1, o.len, stdout);
        ko_free(&o);
        return fflush(stdout) != 0 ? 2 : 0;
    }
    if (tidy) {
        if (nprune != 1 || op.prune || op.make_layer) { fprintf(stderr, "kcache-inspect: a store command takes one store DIR\n"); return 2; }
        return ki_tidy(tidy, tidy_arg, prune[0], op.prune_yes);
    }
    if ((op.nlayer_units || op.private_layer) && !op.make_layer) { fprintf(stderr, "kcache-inspect: --unit and --private go with --make-layer\n"); return 2; }
    if (op.make_layer) {
        if (nprune != 2 || op.prune) { fprintf(stderr, "kcache-inspect: --make-layer takes a store SRC and a new directory DEST\n"); return 2; }
        memset(&o, 0, sizeof o);
        err[0] = 0;
        rc = ki_make_layer(prune[0], prune[1], op.layer_units, op.nlayer_units, op.private_layer, &o, err, sizeof err);
        if (rc != 0) { ko_free(&o); ki_eprintf("kcache-inspect: --make-layer: %s\n", err); return rc; }
        fwrite(o.buf ? o.buf : "", 1, o.len, stdout);
        ko_free(&o);
        return fflush(stdout) != 0 ? 2 : 0;
    }
    if (nprune > 2 && !op.prune) {
        ki_eprintf("kcache-inspect: one FILE or DIR only, or DIR and UNIT (got a third: '%s')\n", prune[2]);
        return 2;
    }
    op.path = nprune > 0 ? prune[0] : NULL;
    op.unit = nprune > 1 ? prune[1] : NULL;
    if ((op.prune_yes || op.prune_other_cpu) && !op.prune) { fprintf(stderr, "kcache-inspect: --yes and --other-cpu go with --prune\n"); return 2; }
    if (op.prune) {
        if (!nprune) { fprintf(stderr, "kcache-inspect: --prune needs a PATH (a cache directory, a tree, or .nbi/.nbc files)\n"); return 2; }
        memset(&o, 0, sizeof o);
        rc = ki_prune(prune, nprune, &op, &o);
        fwrite(o.buf ? o.buf : "", 1, o.len, stdout);
        ko_free(&o);
        return fflush(stdout) != 0 ? 2 : rc;
    }
    if (!op.path) { usage(stderr); return 2; }
    /* how dependency stamps are judged: as the program using the store judges them */
    op.stamp = KCACHE_STAMP_HYBRID;
    op.stamp_from = "kcache's default";
    if (!stamp && (env = getenv("KCACHE_STAMP")) != NULL && *env) { stamp = env; op.stamp_from = "KCACHE_STAMP"; }
    else if (stamp) op.stamp_from = "--stamp";
    if (stamp) {
        if (strcmp(stamp, "hybrid") == 0) op.stamp = KCACHE_STAMP_HYBRID;
        else if (strcmp(stamp, "mtime") == 0) op.stamp = KCACHE_STAMP_MTIME;
        else if (strcmp(stamp, "content") == 0) op.stamp = KCACHE_STAMP_CONTENT;
        else { ki_eprintf("kcache-inspect: %s '%s' is not mtime, content or hybrid\n", op.stamp_from, stamp); return 2; }
    }
    if (stat(op.path, &st) != 0) { ki_eprintf("kcache-inspect: %s: %s\n", op.path, strerror(errno)); return 2; }
    if (op.unit && !S_ISDIR(st.st_mode)) {
        ki_eprintf("kcache-inspect: one FILE or DIR only (got '%s' and '%s'; a UNIT follows a store DIR)\n", op.path, op.unit);
        return 2;
    }
    memset(&o, 0, sizeof o);
    err[0] = 0;
    if (S_ISDIR(st.st_mode)) {
        size_t nnbi = 0, k;
        char **nbis = op.unit ? NULL : nb_dir_indexes(op.path, &nnbi);
        if (nbis) {   /* a numba cache directory, not a kcache store */
            rc = ki_numba_dir_report(op.path, nbis, nnbi, &op, &o);
            for (k = 0; k < nnbi; k++) free(nbis[k]);
            free(nbis);
        } else
        rc = op.unit ? ki_unit_report(op.path, op.unit, &op, &o, err, sizeof err) : ki_store_report(op.path, &op, &o, err, sizeof err);
    } else if (!S_ISREG(st.st_mode)) {
        ki_eprintf("kcache-inspect: %s: not a regular file or a directory\n", op.path);
        return 2;
    } else {
        int kind = 0; /* 1 numba, 2 kcache index, 3 kcache entry, 4 config.file */
        char nbi[4096];
        if (!op.force_numba && pr_nbc_base(op.path, nbi, sizeof nbi - 4)) { /* BASE.N.nbc: its index is BASE.nbi */
            char q[4200];
            strcat(nbi, ".nbi");
            ki_eprintf("kcache-inspect: %s is a numba data file (.nbc), which holds compiled code only; pass its index: kcache-inspect %s\n",
                    op.path, kcache__shell_quote(q, sizeof q, nbi));
            return 2;
        }
        if (op.force_numba || ends_with(op.path, ".nbi")) kind = 1;
        else if (ends_with(op.path, ".kci")) kind = 2;
        else if (ends_with(op.path, ".kce")) kind = 3;
        else {
            unsigned char head[8];
            int fd = open(op.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
            long long got;
            if (fd < 0) { ki_eprintf("kcache-inspect: %s: cannot open: %s\n", op.path, strerror(errno)); return 2; }
            got = ks_pread(fd, head, sizeof head, 0);
            close(fd);
            if (got == 8 && memcmp(head, "KCENTRY", 8) == 0) kind = 3;
            else if (got == 8 && memcmp(head, "KCINDEX", 8) == 0) kind = 2;
            else if (got == 8 && memcmp(head, "KCACHECF", 8) == 0) kind = 4;
            else if (got > 0 && head[0] == 0x80) kind = 1;
            else {
                ki_eprintf("kcache-inspect: %s: not a numba index (.nbi), a kcache index (.kci), entry (.kce) or "
                                "config.file, nor a store directory\n", op.path);
                return 2;
            }
        }
        if (kind == 1) {
            buf = read_file(op.path, &len, err, sizeof err);
            if (!buf) { ki_eprintf("kcache-inspect: %s: %s\n", op.path, err); return 2; }
            rc = ki_numba_report(buf, len, op.path, &op, &o, err, sizeof err);
            free(buf);
        } else if (kind == 2) {
            rc = ki_index_file_report(op.path, &op, &o, err, sizeof err);
        } else if (kind == 3) {
            rc = ki_entry_file_report(op.path, &op, &o, err, sizeof err);
        } else {
            char dir[4096], abs[4096];
            if (ki_abspath(op.path, abs, sizeof abs) != 0) ki_fmt(abs, sizeof abs, "%s", op.path);
            path_dirname(abs, dir, sizeof dir);
            rc = ki_store_report(dir, &op, &o, err, sizeof err);
        }
    }
    if (rc == 0 && o.full) {
        rc = 2;
        ki_fmt(err, sizeof err, "the report exceeds %u MiB: not a plausible index", KI_MAX_OUTPUT >> 20);
    }
    if (rc != 0) {
        ko_free(&o);
        ki_eprintf("kcache-inspect: %s: %s\n", op.path, err[0] ? err : "cannot be decoded");
        return 2;
    }
    fwrite(o.buf ? o.buf : "", 1, o.len, stdout);
    ko_free(&o);
    if (fflush(stdout) != 0) return 2;
    return 0;
}
#endif
