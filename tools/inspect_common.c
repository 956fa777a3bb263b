/* inspect_common.c - kcache-inspect: what every part of it uses.
 *
 * snprintf that always terminates; the output sink every report is written through (a FILE or a
 * growing memory buffer, with a byte budget, every string from outside escaped by kcache.h's rule,
 * and JSON strings carrying the same escapes); the arena a decode allocates from; small byte
 * helpers; paths as Python normalizes them; and files read whole, bounded, never a FIFO. */
#include "inspect.h"
#include "ktext.h"   /* ko_printf: every %s and %c argument through kcache.h's escaping rule */

/* snprintf that always terminates; truncation is intended wherever it is used. */
int ki_fmt(char *buf, size_t cap, const char *fmt, ...)
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

void ko_write(ki_out *o, const char *s, size_t n)
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
void ko_puts(ki_out *o, const char *s) { ko_write(o, s, strlen(s)); }
void ko_putc(ki_out *o, char c) { ko_write(o, &c, 1); }
/* printf whose %s and %c arguments are escaped (ktext.h): a name from outside cannot reach the
   terminal raw, whichever message prints it; newlines and layout belong in fmt. */
void ko_printf(ki_out *o, const char *fmt, ...)
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
void ko_esc(ki_out *o, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, k = 0;
    char buf[256];
    while (i < n && !o->full) {
        size_t used, l;
        if (p[i] >= 0x20 && p[i] < 0x7f) { used = l = 1; buf[k] = (char)p[i]; } /* (most of it) */
        else l = kcache_escape_char(p + i, n - i, buf + k, &used);
        k += l;
        i += used;
        if (k > sizeof buf - 12) { ko_write(o, buf, k); k = 0; }
    }
    ko_write(o, buf, k);
}
void ko_free(ki_out *o) { free(o->buf); o->buf = NULL; o->len = o->cap = 0; }

/* ---------------------------------------------------------------------------------------- */
/* Arena: every node and copied string of one decode; freed at once.                        */

#define KI_BLOCK_HDR ((sizeof(ki_block) + 15u) & ~(size_t)15u)

void *ka_alloc(ki_arena *a, size_t n)
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
void ka_free(ki_arena *a)
{
    while (a->head) { ki_block *n = a->head->next; free(a->head); a->head = n; }
    a->total = 0;
}

uint64_t ki_rd_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    int i;
    for (i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

int ki_hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Text-safe string: kcache.h's rule (valid printable UTF-8 as is; controls, invalid bytes, C1 and
   bidi controls escaped), with a backslash doubled so that a rendered value reads back. */
void ko_text(ki_out *o, const unsigned char *s, size_t n, size_t max)
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
void ko_json_str(ki_out *o, const unsigned char *s, size_t n)
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
        l = kcache_escape_char(s + i, n - i, one, &used);
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
void ko_json_cstr(ki_out *o, const char *s)
{
    if (!s) { ko_puts(o, "null"); return; }
    ko_json_str(o, (const unsigned char *)s, strlen(s));
}

/* ---------------------------------------------------------------------------------------- */
/* Paths.                                                                                    */

/* Python's os.path.abspath: join with the cwd, then normalize lexically (no symlinks). */
int ki_abspath(const char *p, char *out, size_t cap)
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

void ki_path_dirname(const char *p, char *out, size_t cap)
{
    const char *sl = strrchr(p, '/');
    if (!sl) { ki_fmt(out, cap, "."); return; }
    if (sl == p) { ki_fmt(out, cap, "/"); return; }
    ki_fmt(out, cap, "%.*s", (int)(sl - p), p);
}
const char *ki_path_base(const char *p)
{
    const char *sl = strrchr(p, '/');
    return sl ? sl + 1 : p;
}
/* fopen for reading a regular file only: a FIFO or device someone put in its place is neither
   waited on (opened O_NONBLOCK) nor read. */
FILE *ki_fopen_regular(const char *path, const char *mode)
{
    struct stat sb;
    FILE *f;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || !(f = fdopen(fd, mode))) { close(fd); return NULL; }
    return f;
}

int ki_is_file(const char *p, struct stat *st)
{
    struct stat s;
    if (!st) st = &s;
    return stat(p, st) == 0 && S_ISREG(st->st_mode);
}
int ki_is_dir(const char *p)
{
    struct stat s;
    return stat(p, &s) == 0 && S_ISDIR(s.st_mode);
}
int ki_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

/* Reads a whole regular file of at most max bytes, open as fd (taken), into a malloc'd buffer;
   NULL on failure.  Anything else (a FIFO, a device) is not read: it could block forever. */
static unsigned char *ki_slurp_fd(int fd, size_t max, size_t *len)
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
unsigned char *ki_slurp(const char *path, size_t max, size_t *len)
{
    return ki_slurp_fd(open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), max, len);
}
unsigned char *ki_slurp_at(int dfd, const char *name, size_t max, size_t *len)
{
    return ki_slurp_fd(openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW), max, len);
}

void ko_json_tri(ki_out *o, int v) { ko_puts(o, v < 0 ? "null" : v ? "true" : "false"); }

/* Reads a whole file, at most KI_MAX_FILE bytes. */
unsigned char *ki_read_file(const char *path, size_t *len, char *err, size_t errcap)
{
    FILE *f = ki_fopen_regular(path, "rb");
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
