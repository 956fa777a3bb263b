/* inspect_main.c - kcache-inspect: explain cache indexes: numba's .nbi files and kcache stores.
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
 * The pickle reader (inspect_pickle.c) builds a symbolic tree and never executes anything:
 * GLOBAL and REDUCE only record names and arguments.  Every length is checked against the input
 * left, and node count, memory, stack and output are bounded, so any byte string gives either a
 * tree or an error message, never a crash or an unbounded allocation.
 *
 * kcache mode (inspect_store.c) reads a store without changing it: no kcache_open (which
 * creates and repairs), no lock, no write.  It decodes with kcache.h's public API for tools
 * (kcache_reader, kcache_entry_read, kcache_index_load, kcache_read_accounting, ...), the
 * library's own decoders, so that the tool and the library cannot disagree on what is valid, and
 * takes the host CPU from kcache.h's detector for the numba half as well.
 *
 * This file holds main: the arguments and which part answers them.  The tool is built from
 * every tools/inspect_*.c (inspect.h lists them); the fuzz targets and bench/bench_inspect.c
 * build from the same files without this one.
 * Build: cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -I. -o build/kcache-inspect \
 *           tools/inspect_*.c -lpthread
 * Exit status: 0 whenever the tool says what numba (or kcache) will do, whatever the verdict (an
 * empty or garbage .nbi is "numba will raise"); 2 when it cannot: a file or directory that
 * cannot be read, is not a numba index nor a kcache store, index or entry, and usage errors. */
#include "inspect.h"
#include "ktext.h"   /* ktext_eprintf: messages with every name escaped */

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
          "  --pycache-prefix DIR numba: the run's -X pycache_prefix, where Python looks for the source's .pyc\n"
          "                       (default: PYTHONPYCACHEPREFIX; '' for none)\n"
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
        else if (strcmp(a, "--pycache-prefix") == 0) slot = &op.pycache_prefix;
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
            if (i + 1 >= argc) { ktext_eprintf("kcache-inspect: %s needs a value\n", a); return 2; }
            if (op.nlayer_units == (int)(sizeof layer_units / sizeof layer_units[0])) { fprintf(stderr, "kcache-inspect: at most 256 --unit\n"); return 2; }
            op.layer_units = layer_units;
            op.layer_units[op.nlayer_units++] = argv[++i];
            continue;
        }
        else if (strcmp(a, "--llvm-version") == 0 || strcmp(a, "--path") == 0) {
            char *end;
            long v;
            if (i + 1 >= argc) { ktext_eprintf("kcache-inspect: %s needs a value\n", a); return 2; }
            if (a[2] == 'p') {
                if (op.npaths == (int)(sizeof op.paths / sizeof op.paths[0])) { fprintf(stderr, "kcache-inspect: at most 16 --path\n"); return 2; }
                op.paths[op.npaths++] = argv[++i];
                continue;
            }
            v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1000) { ktext_eprintf("kcache-inspect: --llvm-version '%s' is not an LLVM major version\n", argv[i]); return 2; }
            op.llvm_version = (int)v;
            continue;
        }
        else if (strcmp(a, "--") == 0) dashdash = 1;
        else { ktext_eprintf("kcache-inspect: unknown option '%s' (try --help)\n", a); return 2; }
        if (slot) {
            if (i + 1 >= argc) { ktext_eprintf("kcache-inspect: %s needs a value\n", a); return 2; }
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
        if (rc != 0) { ko_free(&o); ktext_eprintf("kcache-inspect: --make-layer: %s\n", err); return rc; }
        fwrite(o.buf ? o.buf : "", 1, o.len, stdout);
        ko_free(&o);
        return fflush(stdout) != 0 ? 2 : 0;
    }
    if (nprune > 2 && !op.prune) {
        ktext_eprintf("kcache-inspect: one FILE or DIR only, or DIR and UNIT (got a third: '%s')\n", prune[2]);
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
        else { ktext_eprintf("kcache-inspect: %s '%s' is not mtime, content or hybrid\n", op.stamp_from, stamp); return 2; }
    }
    if (stat(op.path, &st) != 0) { ktext_eprintf("kcache-inspect: %s: %s\n", op.path, strerror(errno)); return 2; }
    if (op.unit && !S_ISDIR(st.st_mode)) {
        ktext_eprintf("kcache-inspect: one FILE or DIR only (got '%s' and '%s'; a UNIT follows a store DIR)\n", op.path, op.unit);
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
        ktext_eprintf("kcache-inspect: %s: not a regular file or a directory\n", op.path);
        return 2;
    } else {
        int kind = 0; /* 1 numba, 2 kcache index, 3 kcache entry, 4 config.file */
        char nbi[4096];
        if (!op.force_numba && pr_nbc_base(op.path, nbi, sizeof nbi - 4)) { /* BASE.N.nbc: its index is BASE.nbi */
            char q[4200];
            strcat(nbi, ".nbi");
            ktext_eprintf("kcache-inspect: %s is a numba data file (.nbc), which holds compiled code only; pass its index: kcache-inspect %s\n",
                    op.path, ki_shell_quote(q, sizeof q, nbi));
            return 2;
        }
        if (op.force_numba || ki_ends_with(op.path, ".nbi")) kind = 1;
        else if (ki_ends_with(op.path, ".kci")) kind = 2;
        else if (ki_ends_with(op.path, ".kce")) kind = 3;
        else {
            unsigned char head[8];
            int fd = open(op.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
            long long got;
            if (fd < 0) { ktext_eprintf("kcache-inspect: %s: cannot open: %s\n", op.path, strerror(errno)); return 2; }
            got = ks_pread(fd, head, sizeof head, 0);
            close(fd);
            if (got == 8 && memcmp(head, "KCENTRY", 8) == 0) kind = 3;
            else if (got == 8 && memcmp(head, "KCINDEX", 8) == 0) kind = 2;
            else if (got == 8 && memcmp(head, "KCACHECF", 8) == 0) kind = 4;
            else if (got > 0 && head[0] == 0x80) kind = 1;
            else {
                ktext_eprintf("kcache-inspect: %s: not a numba index (.nbi), a kcache index (.kci), entry (.kce) or "
                                "config.file, nor a store directory\n", op.path);
                return 2;
            }
        }
        if (kind == 1) {
            buf = ki_read_file(op.path, &len, err, sizeof err);
            if (!buf) { ktext_eprintf("kcache-inspect: %s: %s\n", op.path, err); return 2; }
            rc = ki_numba_report(buf, len, op.path, &op, &o, err, sizeof err);
            free(buf);
        } else if (kind == 2) {
            rc = ki_index_file_report(op.path, &op, &o, err, sizeof err);
        } else if (kind == 3) {
            rc = ki_entry_file_report(op.path, &op, &o, err, sizeof err);
        } else {
            char dir[4096], abs[4096];
            if (ki_abspath(op.path, abs, sizeof abs) != 0) ki_fmt(abs, sizeof abs, "%s", op.path);
            ki_path_dirname(abs, dir, sizeof dir);
            rc = ki_store_report(dir, &op, &o, err, sizeof err);
        }
    }
    if (rc == 0 && o.full) {
        rc = 2;
        ki_fmt(err, sizeof err, "the report exceeds %u MiB: not a plausible index", KI_MAX_OUTPUT >> 20);
    }
    if (rc != 0) {
        ko_free(&o);
        ktext_eprintf("kcache-inspect: %s: %s\n", op.path, err[0] ? err : "cannot be decoded");
        return 2;
    }
    fwrite(o.buf ? o.buf : "", 1, o.len, stdout);
    ko_free(&o);
    if (fflush(stdout) != 0) return 2;
    return 0;
}
