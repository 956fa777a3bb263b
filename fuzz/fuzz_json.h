/* fuzz_json.h - a strict JSON syntax check for the fuzz targets' --json reports (RFC 8259
   grammar; strings must be valid UTF-8). Shared by fuzz_pickle.c and fuzz_store.c, included after
   tools/inspect_store.c (kcache.h's kcache__utf8_seq, kcache-inspect's ki_hexval). */
#ifndef FUZZ_JSON_H
#define FUZZ_JSON_H
typedef struct jp { const char *p, *e; int depth; } jp;
static void jp_ws(jp *j) { while (j->p < j->e && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t')) j->p++; }
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
                for (k = 1; k <= 4; k++) if (j->p + k >= j->e || ki_hexval((unsigned char)j->p[k]) < 0) return 0;
                j->p += 5;
                continue;
            }
            if (!strchr("\"\\/bfnrt", *j->p)) return 0;
            j->p++;
            continue;
        }
        if (c >= 0x80) {
            uint32_t cp;
            size_t l = kcache__utf8_seq((const unsigned char *)j->p, (size_t)(j->e - j->p), &cp);
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
    if (!s) return 0;
    j.p = s; j.e = s + n; j.depth = 0;
    if (!jp_value(&j)) return 0;
    jp_ws(&j);
    return j.p == j.e;
}
#endif
