/* ktext.h - printf for kcache's tools, with every string argument escaped (included by
 * kcache-inspect's files (tools/inspect_*.c) and by tools/kcache-top.c, after kcache.h).
 *
 * Whatever a tool prints came, often enough, from outside: a unit name, a file name found on
 * disk, a CPU name in a numba index. kcache.h's one rule (kcache_escape_char: valid printable UTF-8
 * as it is; control bytes, invalid UTF-8, the C1 and the bidi controls as \xHH or \u{XXXX})
 * applies here to every %s and %c argument, whatever the format says around it, so that a message
 * cannot forget it: such text never starts a line, moves the cursor or reorders what follows. The
 * tool's own words pass unchanged (they are printable ASCII), and the rule is idempotent (its
 * output is printable), so text escaped earlier is not changed again. Newlines and layout belong
 * in the format string, never in an argument. Numbers are formatted by snprintf as they are. */
#ifndef KTEXT_H
#define KTEXT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rule's one step (a character in, its text out): kcache.h's public kcache_escape_char (any
   file of a tool may call it; the implementation is compiled in one of them), which both tools
   use. A test may name a function of its own here. */
#ifndef KTEXT_ESC_CHAR
#define KTEXT_ESC_CHAR kcache_escape_char
#endif

typedef struct ktext {
    char *p;        /* the text (NUL-terminated); buf until it outgrows it */
    size_t len, cap;
    int failed;     /* out of memory: the text is cut */
    char buf[512];
} ktext;

static void ktext_init(ktext *t)
{
    t->p = t->buf;
    t->len = 0;
    t->cap = sizeof t->buf;
    t->failed = 0;
    t->buf[0] = 0;
}
static void ktext_free(ktext *t)
{
    if (t->p != t->buf) free(t->p);
    ktext_init(t);
}
static void ktext_put(ktext *t, const char *s, size_t n)
{
    if (t->failed || !n) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap * 2;
        char *np;
        while (cap < t->len + n + 1) cap *= 2;
        np = (char *)(t->p == t->buf ? malloc(cap) : realloc(t->p, cap));
        if (!np) { t->failed = 1; return; }
        if (t->p == t->buf) memcpy(np, t->buf, t->len + 1);
        t->p = np;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = 0;
}
/* n bytes of s by the rule; width: the least bytes written (spaces before, or after when left). */
static void ktext_esc(ktext *t, const char *s, size_t n, size_t width, int left)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, start = t->len, w;
    while (i < n) {
        char one[11];
        size_t used, l = KTEXT_ESC_CHAR(p + i, n - i, one, &used);
        ktext_put(t, one, l);
        i += used;
    }
    w = t->len - start;
    if (w < width && !t->failed) {
        size_t pad = width - w, k;
        for (k = 0; k < pad; k++) ktext_put(t, " ", 1);
        if (!left && !t->failed) { /* the spaces go first */
            memmove(t->p + start + pad, t->p + start, w);
            memset(t->p + start, ' ', pad);
        }
    }
}

/* Appends fmt with its arguments (the conversions of C99's printf but %n; %s and %c escaped). */
static void ktext_vfmt(ktext *t, const char *fmt, va_list ap)
{
    const char *f = fmt;
    while (*f) {
        char spec[64], num[512];
        size_t k = 1, width = 0;
        int left = 0, has_prec = 0, prec = 0, n = 0;
        char len1 = 0, len2 = 0, conv;
        const char *pct = strchr(f, '%');
        if (!pct) { ktext_put(t, f, strlen(f)); return; }
        ktext_put(t, f, (size_t)(pct - f));
        f = pct + 1;
        spec[0] = '%';
        while (*f && strchr("-+ #0", *f)) {
            if (*f == '-') left = 1;
            if (k < 8) spec[k++] = *f;
            f++;
        }
        if (*f == '*') {
            int w = va_arg(ap, int);
            if (w < 0) { left = 1; w = -w; if (k < 8) spec[k++] = '-'; }
            width = (size_t)w;
            f++;
        } else {
            while (*f >= '0' && *f <= '9') width = width * 10 + (size_t)(*f++ - '0');
        }
        if (width > 400) width = 400;
        if (width) k += (size_t)snprintf(spec + k, sizeof spec - k, "%u", (unsigned)width);
        if (*f == '.') {
            f++;
            has_prec = 1;
            if (*f == '*') { prec = va_arg(ap, int); f++; if (prec < 0) has_prec = 0; }
            else while (*f >= '0' && *f <= '9') prec = prec * 10 + (*f++ - '0');
            if (has_prec) k += (size_t)snprintf(spec + k, sizeof spec - k, ".%d", prec > 400 ? 400 : prec);
        }
        if (*f == 'h' || *f == 'l' || *f == 'z' || *f == 'j' || *f == 't' || *f == 'L') {
            len1 = *f++;
            if ((len1 == 'h' || len1 == 'l') && *f == len1) len2 = *f++;
            spec[k++] = len1;
            if (len2) spec[k++] = len2;
        }
        conv = *f;
        if (!conv) return;
        f++;
        spec[k++] = conv;
        spec[k] = 0;
        switch (conv) {
        case '%': ktext_put(t, "%", 1); continue;
        case 's': {
            const char *s = va_arg(ap, const char *);
            size_t sl;
            if (!s) s = "(null)";
            if (has_prec) { const char *z = (const char *)memchr(s, 0, (size_t)prec); sl = z ? (size_t)(z - s) : (size_t)prec; }
            else sl = strlen(s);
            ktext_esc(t, s, sl, width, left);
            continue;
        }
        case 'c': {
            char c = (char)va_arg(ap, int);
            ktext_esc(t, &c, 1, width, left);
            continue;
        }
        case 'd': case 'i':
            if (len1 == 'l' && len2) n = snprintf(num, sizeof num, spec, va_arg(ap, long long));
            else if (len1 == 'l') n = snprintf(num, sizeof num, spec, va_arg(ap, long));
            else if (len1 == 'z') n = snprintf(num, sizeof num, spec, va_arg(ap, size_t));
            else if (len1 == 'j') n = snprintf(num, sizeof num, spec, va_arg(ap, intmax_t));
            else if (len1 == 't') n = snprintf(num, sizeof num, spec, va_arg(ap, ptrdiff_t));
            else n = snprintf(num, sizeof num, spec, va_arg(ap, int));
            break;
        case 'u': case 'x': case 'X': case 'o':
            if (len1 == 'l' && len2) n = snprintf(num, sizeof num, spec, va_arg(ap, unsigned long long));
            else if (len1 == 'l') n = snprintf(num, sizeof num, spec, va_arg(ap, unsigned long));
            else if (len1 == 'z') n = snprintf(num, sizeof num, spec, va_arg(ap, size_t));
            else if (len1 == 'j') n = snprintf(num, sizeof num, spec, va_arg(ap, uintmax_t));
            else if (len1 == 't') n = snprintf(num, sizeof num, spec, va_arg(ap, ptrdiff_t));
            else n = snprintf(num, sizeof num, spec, va_arg(ap, unsigned));
            break;
        case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
            if (len1 == 'L') n = snprintf(num, sizeof num, spec, va_arg(ap, long double));
            else n = snprintf(num, sizeof num, spec, va_arg(ap, double));
            break;
        case 'p': n = snprintf(num, sizeof num, spec, va_arg(ap, void *)); break;
        default: /* %n, or not a conversion: printed as written, nothing taken */
            ktext_put(t, spec, k);
            continue;
        }
        if (n > 0) ktext_put(t, num, (size_t)n < sizeof num ? (size_t)n : sizeof num - 1);
    }
}

#if defined(__GNUC__) || defined(__clang__)
#define KTEXT_EPRINTF_ATTRS __attribute__((format(printf, 1, 2), unused)) /* (a file may print no message) */
#else
#define KTEXT_EPRINTF_ATTRS
#endif

/* A message on stderr, its %s and %c arguments escaped as every other (a path or a unit name). */
static void ktext_eprintf(const char *fmt, ...) KTEXT_EPRINTF_ATTRS;
static void ktext_eprintf(const char *fmt, ...)
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

#endif
