/* fuzz_pickle.c - libFuzzer target for kcache-inspect's pickle reader and numba .nbi decoder.
 *
 *   clang -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -DKCACHE_INSPECT_NO_MAIN \
 *         -o build/fuzz_pickle fuzz/fuzz_pickle.c
 *   build/fuzz_pickle -max_total_time=300 build/fuzz-corpus fuzz/corpus/pickle
 *
 * Each input goes through: the bare pickle reader (every pickle in it, rendered), then the
 * whole .nbi path (decode, assess, text report with a host CPU given, JSON report with none,
 * raw dump).  The JSON is checked for well-formedness here, so a malformed report aborts like
 * a crash does.  Nothing is written to the terminal. */
#include "../tools/kcache-inspect.c"

/* A strict JSON syntax check (RFC 8259 grammar; strings must be valid UTF-8). */
typedef struct jp { const char *p, *e; int depth; } jp;
static int jp_ws(jp *j) { while (j->p < j->e && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t')) j->p++; return 1; }
static int jp_value(jp *j);
static int jp_string(jp *j)
{
    if (j->p >= j->e || *j->p != '"') return 0;
    j->p++;
    while (j->p < j->e && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20) return 0;
        if (c == '\\') {
            j->p++;
            if (j->p >= j->e) return 0;
            if (*j->p == 'u') {
                int k;
                for (k = 1; k <= 4; k++) if (j->p + k >= j->e || hexval((unsigned char)j->p[k]) < 0) return 0;
                j->p += 5;
                continue;
            }
            if (!strchr("\"\\/bfnrt", *j->p)) return 0;
            j->p++;
            continue;
        }
        if (c >= 0x80) {
            size_t l = utf8_len((const unsigned char *)j->p, (size_t)(j->e - j->p));
            if (!l) return 0;
            j->p += l;
            continue;
        }
        j->p++;
    }
    if (j->p >= j->e) return 0;
    j->p++;
    return 1;
}
static int jp_number(jp *j)
{
    const char *s = j->p;
    if (j->p < j->e && *j->p == '-') j->p++;
    if (j->p >= j->e || *j->p < '0' || *j->p > '9') return 0;
    if (*j->p == '0') j->p++;
    else while (j->p < j->e && *j->p >= '0' && *j->p <= '9') j->p++;
    if (j->p < j->e && *j->p == '.') {
        j->p++;
        if (j->p >= j->e || *j->p < '0' || *j->p > '9') return 0;
        while (j->p < j->e && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->e && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->e && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->e || *j->p < '0' || *j->p > '9') return 0;
        while (j->p < j->e && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    return j->p > s;
}
static int jp_lit(jp *j, const char *w)
{
    size_t l = strlen(w);
    if ((size_t)(j->e - j->p) < l || memcmp(j->p, w, l) != 0) return 0;
    j->p += l;
    return 1;
}
static int jp_value(jp *j)
{
    jp_ws(j);
    if (j->p >= j->e || ++j->depth > 64) return 0;
    switch (*j->p) {
    case '{':
        j->p++; jp_ws(j);
        if (j->p < j->e && *j->p == '}') { j->p++; break; }
        for (;;) {
            jp_ws(j);
            if (!jp_string(j)) return 0;
            jp_ws(j);
            if (j->p >= j->e || *j->p != ':') return 0;
            j->p++;
            if (!jp_value(j)) return 0;
            jp_ws(j);
            if (j->p < j->e && *j->p == ',') { j->p++; continue; }
            if (j->p < j->e && *j->p == '}') { j->p++; break; }
            return 0;
        }
        break;
    case '[':
        j->p++; jp_ws(j);
        if (j->p < j->e && *j->p == ']') { j->p++; break; }
        for (;;) {
            if (!jp_value(j)) return 0;
            jp_ws(j);
            if (j->p < j->e && *j->p == ',') { j->p++; continue; }
            if (j->p < j->e && *j->p == ']') { j->p++; break; }
            return 0;
        }
        break;
    case '"': if (!jp_string(j)) return 0; break;
    case 't': if (!jp_lit(j, "true")) return 0; break;
    case 'f': if (!jp_lit(j, "false")) return 0; break;
    case 'n': if (!jp_lit(j, "null")) return 0; break;
    default: if (!jp_number(j)) return 0;
    }
    j->depth--;
    return 1;
}
static int json_ok(const char *s, size_t n)
{
    jp j;
    j.p = s; j.e = s + n; j.depth = 0;
    if (!jp_value(&j)) return 0;
    jp_ws(&j);
    return j.p == j.e;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char err[400];
    ki_opts op;
    ki_out o;
    int rc1, rc2;

    /* 1. the bare pickle reader: every pickle in the input, back to back */
    {
        ki_arena a;
        size_t pos = 0;
        int n;
        memset(&a, 0, sizeof a);
        a.limit = KI_MAX_MEM;
        for (n = 0; n < 4 && pos < size; n++) {
            pk_parser P;
            pk_node *v = NULL;
            size_t end = pos;
            pk_parser_init(&P, &a);
            if (pk_load(&P, data, size, pos, &end, &v) != 0) {
                if (!P.err[0]) __builtin_trap();           /* every failure has a message */
                pk_parser_free(&P);
                break;
            }
            pk_parser_free(&P);
            if (!v || end <= pos || end > size) __builtin_trap();
            memset(&o, 0, sizeof o);
            o.limit = 1 << 20;
            pk_repr(&o, v, 0);
            nb_type_str(&o, v, 0, 1);
            ko_free(&o);
            pos = end;
        }
        ka_free(&a);
    }

    /* 2. the .nbi path: text with a host CPU given, then JSON without one, and the dump */
    memset(&op, 0, sizeof op);
    op.cpu = "znver3";
    op.features = "+64bit,+avx,-avx512f,+sse4.2";
    op.triple = "x86_64-pc-linux-gnu";
    op.numba_version = (size & 1) ? "0.56.4" : NULL;
    memset(&o, 0, sizeof o);
    o.limit = 1 << 20;
    rc1 = ki_numba_report(data, size, "/nonexistent-kcache-fuzz/__pycache__/mod.f-3.py311.nbi", &op, &o, err, sizeof err);
    if (rc1 != 0 && !err[0]) __builtin_trap();
    ko_free(&o);

    memset(&op, 0, sizeof op);
    op.json = 1;
    op.dump = 0;
    memset(&o, 0, sizeof o);
    o.limit = 4 << 20;
    err[0] = 0;
    rc2 = ki_numba_report(data, size, "/nonexistent-kcache-fuzz/x_0123456789abcdef0123456789abcdef01234567/m.g-1.py312.nbi",
                          &op, &o, err, sizeof err);
    if (rc1 != rc2) __builtin_trap();                      /* decoding does not depend on the options */
    if (rc2 == 0 && !o.full && !json_ok(o.buf, o.len)) __builtin_trap();
    ko_free(&o);

    if (rc2 == 0) {
        memset(&op, 0, sizeof op);
        op.dump = 1;
        memset(&o, 0, sizeof o);
        o.limit = 1 << 20;
        (void)ki_numba_report(data, size, "plain.nbi", &op, &o, err, sizeof err);
        ko_free(&o);
    }
    return 0;
}
