/* fuzz_pickle.c - libFuzzer target for kcache-inspect's pickle reader and numba .nbi decoder.
 *
 *   make build/fuzz_pickle   (this file, which includes tools/inspect_store.c for kcache.h's
 *                             implementation, with kcache-inspect's other files but its main)
 *   build/fuzz_pickle -max_total_time=300 build/fuzz-corpus fuzz/corpus/pickle
 *
 * Each input goes through: the bare pickle reader (every pickle in it, rendered), then the
 * whole .nbi path (decode, assess, text report with a host CPU given, JSON report with none,
 * raw dump), then the other readers a numba source goes through: the input as a zip archive
 * (member lookup, inflate, CRC) and as raw deflate data, and as Python text (its lines, a
 * notebook cell's function, its imports).  The JSON is checked for well-formedness here, so a
 * malformed report aborts like a crash does.  Nothing is written to the terminal. */
#include "../tools/inspect_store.c"   /* kcache.h's implementation (fuzz_json.h's UTF-8 reader) */

#include "fuzz_json.h"

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

    /* 3. the input as a zip archive, and as a raw deflate stream */
    {
        size_t len = 0;
        unsigned char *m = zip_member_mem(data, size, "fuzz.zip", "mod.py", &len, err, sizeof err);
        if (!m && !err[0]) __builtin_trap();
        if (m && len > KI_MAX_MEMBER) __builtin_trap();
        free(m);
        m = zi_inflate(data, size, 1 << 20, &len);
        if (m && len > (1u << 20)) __builtin_trap();
        free(m);
    }

    /* 4. the input as Python text: lines, a notebook cell's function, the imports */
    {
        size_t nl = 0, first = 0, last = 0, k;
        py_line *L = py_lines(data, size, &nl);
        if (L) {
            for (k = 0; k < nl; k++)
                if (L[k].start > L[k].end || L[k].end > size || L[k].code_end > L[k].end || (k && L[k].start != L[k - 1].end))
                    __builtin_trap();
            if (py_cell_function(data, L, nl, "0000000000", &first, &last) && (first > last || last >= nl)) __builtin_trap();
            free(L);
        }
        {
            nb_deps D;
            memset(&D, 0, sizeof D);
            D.d = (nb_dep *)calloc(KI_MAX_DEPS, sizeof *D.d);
            if (D.d) {
                D.roots[D.nroots++] = "/nonexistent-kcache-fuzz";
                D.from_dir = "/nonexistent-kcache-fuzz/pkg";
                py_imports(data, size, deps_stmt, &D);
                if (D.n != 0) __builtin_trap();   /* nothing resolves under a root that does not exist */
                free(D.d);
            }
        }
    }
    return 0;
}
