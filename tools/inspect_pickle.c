/* inspect_pickle.c - kcache-inspect: the pickle reader.
 *
 * Python's pickle protocols 0-5 read into a symbolic tree, and that tree rendered back as a
 * Python-like repr.  Nothing is executed: GLOBAL and REDUCE only record names and arguments.
 * Every length is checked against the input left, and node count, memory, stack and output are
 * bounded, so any byte string gives either a tree or an error message, never a crash or an
 * unbounded allocation (fuzz/fuzz_pickle.c holds it to that). */
#include "inspect.h"

/* ---------------------------------------------------------------------------------------- */
/* Pickle reader: protocols 0-5 into a symbolic tree.                                       */

const char *pk_kind_name(int k)
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

void pk_parser_init(pk_parser *P, ki_arena *a)
{
    memset(P, 0, sizeof *P);
    P->arena = a;
}
void pk_parser_free(pk_parser *P)
{
    free(P->stack); free(P->marks); free(P->mkeys); free(P->mvals);
    P->stack = NULL; P->marks = NULL; P->mkeys = NULL; P->mvals = NULL;
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
                int h = ki_hexval(s[i + 2 + (size_t)k]);
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
            if (i + 2 < n && ki_hexval(s[i + 1]) >= 0 && ki_hexval(s[i + 2]) >= 0) {
                d[o++] = (unsigned char)(ki_hexval(s[i + 1]) * 16 + ki_hexval(s[i + 2]));
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
int pk_load(pk_parser *P, const unsigned char *buf, size_t len, size_t start, size_t *end, pk_node **out)
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
            fl = ki_rd_le(buf + pos, 8);
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
            if (w == 4) n->i = (int32_t)(uint32_t)ki_rd_le(buf + pos, 4);
            else n->i = (int64_t)ki_rd_le(buf + pos, w);
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
                n = ki_rd_le(buf + pos, 4);
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
            n = ki_rd_le(buf + pos, w);
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
            key = (uint32_t)ki_rd_le(buf + pos, op == 'h' ? 1 : 4);
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
                key = (uint32_t)ki_rd_le(buf + pos, op == 'q' ? 1 : 4);
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
            code = w == 4 ? (int64_t)(int32_t)(uint32_t)ki_rd_le(buf + pos, 4) : (int64_t)ki_rd_le(buf + pos, w);
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

int pk_node_is_str(const pk_node *n, const char *s)
{
    size_t l = strlen(s);
    return n && n->kind == PK_STR && n->n == l && memcmp(n->s, s, l) == 0;
}
int pk_bytes_eq(const unsigned char *a, size_t an, const char *s)
{
    size_t l = strlen(s);
    return an == l && memcmp(a, s, l) == 0;
}

int ki_dbl_is_finite(double d) { return d == d && d - d == 0.0; }

/* Shortest text that reads back as the same double (Python's repr), or inf/nan. */
void ki_fmt_double(char *out, size_t cap, double d)
{
    int prec;
    if (d != d) { ki_fmt(out, cap, "nan"); return; }
    if (!ki_dbl_is_finite(d)) { ki_fmt(out, cap, d > 0 ? "inf" : "-inf"); return; }
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

void pk_repr(ki_out *o, pk_node *n, int depth)
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
    case PK_FLOAT: ki_fmt_double(tmp, sizeof tmp, n->f); ko_puts(o, tmp); break;
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

int pk_node_eq_cstr(const pk_node *n, const char *s) { return n && n->kind == PK_STR && pk_bytes_eq(n->s, n->n, s); }
int pk_node_str_eq(const pk_node *a, const pk_node *b)
{
    return a && b && a->n == b->n && (a->n == 0 || memcmp(a->s, b->s, a->n) == 0);
}
