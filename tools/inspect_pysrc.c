/* inspect_pysrc.c - kcache-inspect: Python source text, scanned without running it.
 *
 * A source's physical lines and which of them continue a logical line, a notebook cell's
 * function (IPython's locator names it by its first lines), and the import statements, which
 * the numba half follows to the module files they load. */
#include "inspect.h"

/* ---------------------------------------------------------------------------------------- */
/* Python source text: physical lines, and which of them continue a logical line (an open    */
/* bracket, an open triple-quoted string, a trailing backslash), for the notebook locator's  */
/* function text and for the imports.                                                        */

#define KI_MAX_PY_LINES 200000

/* Splits t into at most max physical lines (*nl of them, malloc'd); NULL when out of memory. */
py_line *py_lines(const unsigned char *t, size_t n, size_t *nl)
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
int py_cell_function(const unsigned char *t, const py_line *L, size_t nl, const char *disamb,
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
        ki_hex_of(d, 32, hx);
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
void py_imports(const unsigned char *t, size_t n, py_stmt_fn fn, void *user)
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
