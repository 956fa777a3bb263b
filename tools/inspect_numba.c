/* inspect_numba.c - kcache-inspect: numba's .nbi indexes, and what numba will do with one.
 *
 * The index decoded (its two pickles: the numba version, then the stamp and the overloads), the
 * source found where numba's locators find it and its stamp checked, each overload's key compared
 * with what this run computes (CPU name and features: inspect_llvm.c; the bytecode hash, asked of
 * a Python), its data file checked, the imported modules scanned for changes numba does not see,
 * and a verdict, as text or JSON; a directory of indexes; --prune, the one numba command that
 * removes files.  The pickles are read by inspect_pickle.c, zip members by inspect_zip.c and
 * Python text by inspect_pysrc.c. */
#include "inspect.h"

/* ---------------------------------------------------------------------------------------- */
/* numba types: by their state['name'] (every numba Type pickles its name), Signatures as   */
/* "(args) -> return".                                                                       */

static const pk_node *dict_get(const pk_node *d, const char *key)
{
    size_t k;
    if (!d || d->kind != PK_DICT) return NULL;
    for (k = 0; k + 1 < d->nv; k += 2)
        if (pk_node_is_str(d->v[k], key)) return d->v[k + 1];
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
            !(n->a && n->a->kind == PK_GLOBAL && pk_bytes_eq(n->a->s2, n->a->n2, "_type_reconstructor")))
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

void nb_type_str(ki_out *o, pk_node *n, int depth, int top)
{
    const pk_node *nm, *cls;
    if (o->full) return;
    if (!n) { ko_puts(o, "?"); return; }
    if (depth > KI_MAX_DEPTH || n->busy) { ko_puts(o, "..."); return; }
    if ((nm = type_name(n)) != NULL) { ko_text(o, nm->s, nm->n, 512); return; }
    cls = obj_class(n, 0);
    if (cls && pk_bytes_eq(cls->s2, cls->n2, "Signature") && n->state && n->state->kind == PK_TUPLE && n->state->nv >= 2) {
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
/* The numba index.                                                                          */

void nb_index_free(nb_index *ix)
{
    ka_free(&ix->arena);
    memset(ix, 0, sizeof *ix);
}

static int is_hex_str(const pk_node *n, size_t len)
{
    size_t k;
    if (!n || n->kind != PK_STR || n->n != len) return 0;
    for (k = 0; k < len; k++) if (ki_hexval(n->s[k]) < 0) return 0;
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
int nb_decode(const unsigned char *buf, size_t len, nb_index *ix, char *err, size_t errcap)
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
            o->data_name_ok = o->value->n > 0 && o->value->n < 1024 && !pk_bytes_eq(o->value->s, o->value->n, ".") &&
                              !pk_bytes_eq(o->value->s, o->value->n, "..");
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
        for (k = 0; k < 10; k++) if (ki_hexval(nm->disamb[k]) < 0) hex = 0;
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
        if (ki_is_file(out, NULL)) {
            nb_split_module(nm, i);
            return 1;
        }
    }
    return 0;
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
    ki_hex_of(d, 20, out);
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
    for (k = bl > 40 ? bl - 40 : 0; hexok && k < bl; k++) if (ki_hexval(dbase[k]) < 0 || (dbase[k] >= 'A' && dbase[k] <= 'F')) hexok = 0;
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
            if (ki_is_file(zip, NULL) && s[5]) { ki_fmt(member, mcap, "%s", s + 5); return 1; }
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
    ki_path_dirname(index_abs, dir, sizeof dir);
    layout = dir_layout(ki_path_base(dir), parent, sizeof parent, hash);
    src->reads = -1;
    /* a source that is not there (a moved or deleted tree) runs nowhere: nothing to say of it */
    if (src->kind == SRC_CELL || !src->path[0] || !src->found) return;
    /* numba's py_file: the source as imported; for a zip member, ARCHIVE/MEMBER */
    if (src->kind == SRC_ZIP) ki_fmt(py_file, sizeof py_file, "%s/%s", src->path, src->member);
    else ki_fmt(py_file, sizeof py_file, "%s", src->path);
    if (ki_abspath(py_file, abs, sizeof abs) != 0) return;
    ki_path_dirname(abs, py_dir, sizeof py_dir);
    /* the index is named after the source file's base name */
    modbase = ki_path_base(abs);
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
        src->reads = strcmp(want, hash) == 0 && strcmp(ki_path_base(py_dir), parent) == 0;
        if (!src->reads)
            ki_fmt(src->reads_why, sizeof src->reads_why, "this cache subdirectory was made for a source in another directory "
                   "(the tree was moved or copied): numba running %.400s looks in %.200s_%.12s..., never here",
                   abs, ki_path_base(py_dir), want);
    }
}

/* The source is nm's module file in dir (its name when it is not there). */
static void source_in_dir(nb_source *src, nb_name *nm, const char *dir, const char *how)
{
    char file[4096];
    src->how = how;
    if (find_module_file(dir, nm, file, sizeof file)) {
        ki_fmt(src->path, sizeof src->path, "%s", file);
        src->found = ki_is_file(file, &src->st);
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
    ki_path_dirname(index_abs, dir, sizeof dir);
    layout = dir_layout(ki_path_base(dir), parent, sizeof parent, hash);
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
            src->found = ki_is_file(zip, &src->st);
            return;
        }
        ki_fmt(src->path, sizeof src->path, "%s", op->source);
        src->found = ki_is_file(op->source, &src->st);
        if (src->found && nm->ok && src->kind == SRC_FILE) {
            /* learn the module/qualname split from the file name given */
            const char *b = ki_path_base(op->source);
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
        ki_path_dirname(dir, cand, sizeof cand);
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
                    ki_path_dirname(cur, up, sizeof up);
                    if (strcmp(up, cur) == 0) break;
                    ki_fmt(cur, sizeof cur, "%s", up);
                    for (c = 0; c < 2; c++) {   /* cur itself, then cur/PARENTDIR */
                        char abs[4096], want[41];
                        if (c == 0) {
                            if (strcmp(ki_path_base(cur), parent) != 0 && !(parent[0] == 0 && strcmp(cur, "/") == 0)) continue;
                            ki_fmt(cand, sizeof cand, "%s", cur);
                        } else {
                            if (!parent[0]) continue;
                            if ((size_t)ki_fmt(cand, sizeof cand, "%s/%s", strcmp(cur, "/") ? cur : "", parent) >= sizeof cand) continue;
                        }
                        if (ki_abspath(cand, abs, sizeof abs) != 0) continue;
                        if (ki_ends_with(abs, ".zip") && ki_is_file(abs, NULL)) {
                            /* a zip archive's top-level member */
                            sha1_hex(abs, want);
                            if (pass == 0 && strcmp(want, hash) == 0) {
                                src->kind = SRC_ZIP;
                                ki_fmt(src->path, sizeof src->path, "%s", abs);
                                ki_fmt(src->member, sizeof src->member, "%s.py", nm->module);
                                src->found = ki_is_file(abs, &src->st);
                                src->how = "the user-wide cache's layout for a zip archive: the directory hash matches "
                                           "(the member is taken as MODULE.py at the top; --source ARCHIVE.zip/MEMBER says otherwise)";
                                return;
                            }
                            continue;
                        }
                        if (!ki_is_dir(abs)) continue;
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
            src->found = ki_is_file(by_name, &src->st);
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
    f = ki_fopen_regular(src->path, "r");
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
    FILE *f = ki_fopen_regular(path, "rb");
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
    if (!ki_dbl_is_finite(d) || d >= 9007199254740992.0 || d <= -9007199254740992.0) return d;
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

enum { KI_ROOT_FOLLOW, KI_ROOT_SITE, KI_ROOT_STDLIB };

static void deps_add(nb_deps *D, const char *path)
{
    char abs[4096];
    size_t k;
    struct stat st;
    if (D->add_kind == KI_ROOT_STDLIB) return;
    if (D->n >= KI_MAX_DEPS || ki_abspath(path, abs, sizeof abs) != 0 || !ki_is_file(abs, &st)) return;
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
            if (!ki_is_file(q, NULL)) return 0;
            deps_add(D, q);
            continue;
        }
        {
            char q[4200];
            ki_fmt(q, sizeof q, "%s.py", p);
            if (n && ki_is_file(q, NULL)) { deps_add(D, q); ok = 1; }
            ki_fmt(q, sizeof q, "%s/__init__.py", p);
            if (ki_is_file(q, NULL)) {
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
                if (ki_is_file(q, NULL)) { deps_add(D, q); ok = 1; }
                ki_fmt(q, sizeof q, "%s/%.*s/__init__.py", p, (int)subn, sub);
                if (ki_is_file(q, NULL)) { deps_add(D, q); ok = 1; }
            }
        }
    }
    return ok;
}

static int is_ident(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || (unsigned char)c >= 0x80; }

/* One "import a.b as c, d" or "from [.]*mod import x, y" statement. */
void deps_stmt(void *user, char *s)
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
                for (k = 1; k < dots; k++) { char up[4096]; ki_path_dirname(base, up, sizeof up); ki_fmt(base, sizeof base, "%s", up); }
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

/* Runs a Python: argv[0] (looked up in PATH) with argv's arguments, stdin and stderr on /dev/null,
 * killed by an alarm after 30 s (it survives exec: a child that hangs is killed).  Its output, up
 * to cap - 1 bytes, goes into out (NUL-terminated) and its wait status into *status.  NULL, or
 * the call that failed ("pipe", "fork"; errno says why) when no child ran (out is then ""). */
static const char *nb_run_python(const char *const *argv, char *out, size_t cap, int *status)
{
    int pfd[2];
    size_t n = 0;
    pid_t pid;
    out[0] = 0;
    *status = 0;
    if (pipe(pfd) != 0) return "pipe";
    fflush(stdout);
    pid = fork();
    if (pid < 0) { int e = errno; close(pfd[0]); close(pfd[1]); errno = e; return "fork"; }
    if (pid == 0) {
        int dn = open("/dev/null", O_RDWR);
        dup2(pfd[1], 1);
        if (dn >= 0) { dup2(dn, 0); dup2(dn, 2); }
        close(pfd[0]);
        alarm(30);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(pfd[1]);
    for (;;) {
        ssize_t got = read(pfd[0], out + n, cap - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
        if (n == cap - 1) break;
    }
    out[n] = 0;
    close(pfd[0]);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {}
    return NULL;
}

static const char *nb_python_site(const char *exe)
{
    const char *argv[] = {exe, "-I", "-S", "-c", nb_site_py, NULL};
    char *answer = nb_site_answer;
    int status = 0;
    if (nb_site_have && strcmp(nb_site_asked, exe) == 0) return answer;
    nb_site_have = 1;
    ki_fmt(nb_site_asked, sizeof nb_site_asked, "%s", exe);
    if (nb_run_python(argv, answer, sizeof nb_site_answer, &status)) return answer;
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
            if (!ki_is_dir(dir)) continue;
            deps_root(D, dir, strlen(dir), kind);
            if (kind != KI_ROOT_SITE || (cnt = scandir(dir, &names, pth_name, alphasort)) < 0) continue;
            for (k = 0; k < cnt; k++) {
                char pth[4400];
                size_t len, i = 0;
                unsigned char *text;
                ki_fmt(pth, sizeof pth, "%s/%s", dir, names[k]->d_name);
                free(names[k]);
                if (!(text = ki_slurp(pth, 1u << 20, &len))) continue;
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
                        if (ki_is_dir(full)) deps_root(D, full, strlen(full), KI_ROOT_FOLLOW);
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
    ki_path_dirname(src, dir, sizeof dir);
    /* roots: the source's directory (a script's sys.path[0]), the directory above its top
       package (where "import pkg.mod" resolves), the current directory, then --path */
    ki_fmt(D->rootbuf[0], sizeof D->rootbuf[0], "%s", dir);
    D->roots[D->nroots++] = D->rootbuf[0];
    ki_fmt(top, sizeof top, "%s", dir);
    for (;;) {
        char init[4200], up[4096];
        ki_fmt(init, sizeof init, "%s/__init__.py", top);
        if (!ki_is_file(init, NULL)) break;
        ki_path_dirname(top, up, sizeof up);
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
        if (!ki_is_file(abs, &D->d[0].st)) return;
        D->n = 1;
    }
    while (done < D->n) {
        size_t len;
        unsigned char *text = D->d[done].in_site ? NULL : ki_slurp(D->d[done].path, 4u << 20, &len);
        char fdir[4096];
        if (text) {
            ki_path_dirname(D->d[done].path, fdir, sizeof fdir);
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
    unsigned char *buf = ki_slurp(path, KI_MAX_FILE, &len);
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
        text = ki_slurp(src->path, KI_MAX_FILE, &len);
        if (!text) { ki_fmt(R->stamp_why, sizeof R->stamp_why, "cannot read the cell's text"); return; }
        L = py_lines(text, len, &nl);
        if (L && py_cell_function(text, L, nl, R->name.disamb, &first, &last)) {
            ki_sha h;
            unsigned char d[32];
            sha_init(&h, 1);
            for (k = first; k <= last; k++) {
                sha_update(&h, text + L[k].start, L[k].end - L[k].start);
                if (L[k].end == L[k].start || text[L[k].end - 1] != '\n') sha_update(&h, "\n", 1);
            }
            sha_final(&h, d);
            ki_hex_of(d, 32, R->cell_hex);
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
                if (!ki_dbl_is_finite(diff)) ki_fmt(d, sizeof d, "mtime differs");
                else if (diff >= 0.001 || diff <= -0.001) ki_fmt(d, sizeof d, "mtime differs by %+.3f s", diff);
                else ki_fmt(d, sizeof d, "mtime differs by %+.3g s", diff);
                if (ki_dbl_is_finite(diff) && py_floor(want) == py_floor(ix->stamp_mtime) && (want == py_floor(want) || ix->stamp_mtime == py_floor(ix->stamp_mtime)))
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
                ki_hex_of(R->src_digest, 32, a);
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
        ki_path_dirname(cur, up, sizeof up);
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
    minor = ki_numba_minor(ver ? ver : (const char *)ix->version->s, vn);
    if (src->kind == SRC_ZIP) ki_fmt(py_file, sizeof py_file, "%s/%s", src->path, src->member);
    else ki_fmt(py_file, sizeof py_file, "%s", src->path);
    if (ki_abspath(py_file, abs, sizeof abs) != 0) return;
    ki_path_dirname(abs, py_dir, sizeof py_dir);
    /* get_suitable_cache_subpath: the source directory's name, '_', the sha1 of its path */
    {
        char h[41];
        sha1_hex(py_dir, h);
        ki_fmt(sub, sizeof sub, "%s_%s", ki_path_base(py_dir), h);
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
            if (strncmp(ki_path_base(py_dir), "ipykernel_", 10) == 0) {
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
        ki_path_dirname(index_abs, ixdir, sizeof ixdir);
        if (ki_abspath(dir, want, sizeof want) != 0) return;
        ki_fmt(have, sizeof have, "%s", ixdir);
        if (realpath(want, rw) && realpath(have, rh)) { ki_fmt(want, sizeof want, "%s", rw); ki_fmt(have, sizeof have, "%s", rh); }
        ki_fmt(src->numba_index, sizeof src->numba_index, "%s/%s", dir, ki_path_base(index_abs));
        if (strcmp(want, have) == 0) { src->reads = 1; return; }
        src->reads = 0;
        ki_fmt(src->reads_why, sizeof src->reads_why, "numba's %s is used (%s): it opens %.1500s, not this index",
               src->locator, src->locator_why, src->numba_index);
        if (!(ncd && *ncd) && !op->cache_dir && dir_layout(ki_path_base(ixdir), sub, sizeof sub, want) == LAYOUT_HASH)
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
    const char *env_opt = getenv("PYTHONOPTIMIZE"), *exe, *failed;
    int status = 0, level = 0;
    size_t k;
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
    {
        const char *argv[] = {exe, "-I", "-S", "-c", nb_compile_py, R->src.path, nm->func, line, opt,
                              R->src.kind == SRC_ZIP ? R->src.member : "", NULL};
        if ((failed = nb_run_python(argv, out, sizeof out, &status)) != NULL) {
            ki_fmt(R->code_why, sizeof R->code_why, "not checked: %s: %s", failed, strerror(errno));
            return;
        }
    }
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
    for (k = 0; k < 64; k++) if (ki_hexval(nl[1 + k]) < 0) return;
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
    nb_parse_name(ki_path_base(R->index_abs), &R->name);
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
    ki_host_resolve(op, ix, &R->host);
    fn = fn_name(R);
    ki_fmt(ver, sizeof ver, "%.*s", (int)(ix->version->n < 40 ? ix->version->n : 40), (const char *)ix->version->s);
    R->version_state = -1;
    if (op->numba_version && !ix->version_err[0]) R->version_state = pk_bytes_eq(ix->version->s, ix->version->n, op->numba_version);
    if (!ix->body_err[0]) check_stamp(ix, R);
    else ki_fmt(R->stamp_why, sizeof R->stamp_why, "the index body does not decode");
    /* the key holds the bytecode's hash: only worth a compile when the stamp lets numba that far */
    if (R->stamp_state == 1 && ix->nov && R->src.reads != 0 && !op->no_deps && !op->no_imports) nb_bytecode(op, R);
    else if (op->no_deps || op->no_imports) ki_fmt(R->code_why, sizeof R->code_why, "not checked");
    else ki_fmt(R->code_why, sizeof R->code_why, "not checked (numba gets no further than the %s)",
                R->src.reads == 0 ? "index it opens" : "stamp");

    /* overloads: data files and the CPU */
    ki_path_dirname(R->index_abs, dir, sizeof dir);
    for (k = 0; k < ix->nov; k++) {
        nb_overload *o = &ix->ov[k];
        char p[8192];
        if (o->data && o->data_name_ok) {
            struct stat st;
            ki_fmt(p, sizeof p, "%s/%.*s", dir, (int)o->data->n, (const char *)o->data->s);
            o->data_exists = ki_is_file(p, &st);
            if (o->data_exists) o->data_size = (long long)st.st_size;
        } else {
            o->data_exists = 0;
        }
        if (!o->shape_ok) { o->cpu_match = 0; o->usable = 0; continue; }
        o->code_match = R->code_checked ? pk_node_eq_cstr(o->code, R->code_hex) : -1;
        if (o->code_match == 1) R->n_code_match++;
        {
            int known = 1, match = 1;
            if (R->host.cpu) match &= pk_node_eq_cstr(o->cpu, R->host.cpu); else known = 0;
            if (!R->host.features) known = 0;
            else if (R->host.features_by_name) {
                /* an index holds one feature string many times: compared once */
                if (!feat_memo || !pk_node_str_eq(feat_memo, o->features)) {
                    feat_memo = o->features;
                    feat_memo_match = feat_match_by_name(o->features->s, o->features->n, (const unsigned char *)R->host.features,
                                                         strlen(R->host.features)) &&
                                      (o->features->n == 0 || feat_in_flatten_order(o->features->s, o->features->n));
                }
                match &= feat_memo_match;
            }
            else match &= pk_node_eq_cstr(o->features, R->host.features);
            if (op->triple) match &= pk_node_eq_cstr(o->triple, op->triple);
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
        const char *srcbase = R->src.path[0] ? ki_path_base(R->src.path) : "the source";
        char cpus[300] = "";
        size_t used = 0, ncpu = 0;
        for (k = 0; k < ix->nov && used + 40 < sizeof cpus; k++) {
            const pk_node *c = ix->ov[k].cpu;
            int seen = 0;
            if (!c) continue;
            for (j = 0; j < k; j++) if (ix->ov[j].cpu && pk_node_str_eq(ix->ov[j].cpu, c)) seen = 1;
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
                for (k = 0; k < ix->nov; k++) if (ix->ov[k].shape_ok && pk_node_eq_cstr(ix->ov[k].cpu, R->host.cpu)) same_name = 1;
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
    if (!ki_dbl_is_finite(t) || t < 0 || t > 253402300799.0) return;
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
        ko_printf(o, "source     not found (looked for %s)\n", ki_path_base(R->src.path));
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
        ki_fmt_double(tmp, sizeof tmp, ix->stamp_mtime);
        fmt_utc(utc, sizeof utc, ix->stamp_mtime);
        ko_printf(o, "  index    mtime %s%s%s%s, size %lld\n", tmp, utc[0] ? " (" : "", utc, utc[0] ? ")" : "", ix->stamp_size);
        if (R->src.found) {
            double m = nb_floor_stamp(ix, &R->src) ? py_floor(R->src_mtime) : R->src_mtime;
            ki_fmt_double(tmp, sizeof tmp, m);
            fmt_utc(utc, sizeof utc, m);
            ko_printf(o, "  source   mtime %s%s%s%s, size %lld\n", tmp, utc[0] ? " (" : "", utc, utc[0] ? ")" : "", R->src_size);
        }
    } else if (ix->stamp_kind == ST_SHA256) {
        char hx[65];
        ki_hex_of(ix->stamp->s, 32, hx);
        ko_printf(o, "  index    sha256 %s\n", hx);
        if (R->have_src_digest) { ki_hex_of(R->src_digest, 32, hx); ko_printf(o, "  source   sha256 %s\n", hx); }
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
            else if (ov->cpu_match == 0 && R->host.cpu && !pk_node_eq_cstr(ov->cpu, R->host.cpu)) ko_puts(o, "  (not this CPU)");
            ko_putc(o, '\n');
            ko_puts(o, "      features  ");
            if (k > 1 && memo.buf && memo_feat && pk_node_str_eq(memo_feat, ov->features)) {
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
                    if (!pk_node_str_eq(p->triple, ov->triple)) { ko_printf(o, "%starget", sep); sep = ", "; }
                    if (!pk_node_str_eq(p->cpu, ov->cpu)) { ko_printf(o, "%sCPU name", sep); sep = ", "; }
                    if (!pk_node_str_eq(p->features, ov->features)) { ko_printf(o, "%sCPU features", sep); sep = ", "; }
                    if (!pk_node_str_eq(p->code, ov->code)) { ko_printf(o, "%scode hash", sep); sep = ", "; }
                    if (!pk_node_str_eq(p->closure, ov->closure)) { ko_printf(o, "%sclosure hash", sep); sep = ", "; }
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
                   "written (%s), and numba stamps only %s; remove the index to recompile", ki_path_base(d->path), d->path, a, b,
                   R->src.path[0] ? ki_path_base(R->src.path) : "the source");
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
    if (!ki_dbl_is_finite(d)) { ko_puts(o, "null"); return; }
    ki_fmt_double(tmp, sizeof tmp, d);
    ko_puts(o, tmp);
}

static void report_json(ki_out *o, nb_index *ix, nb_report *R, const ki_opts *op)
{
    size_t k;
    ki_out memo;                       /* the last overload's features_diff, and whose features */
    const pk_node *memo_feat = NULL;
    memset(&memo, 0, sizeof memo);
    ko_puts(o, "{\n  \"file\": "); ko_json_cstr(o, R->index_abs);
    ko_puts(o, ",\n  \"format\": \"numba-index\"");
    ko_puts(o, ",\n  \"numba_version\": "); json_node_str(o, ix->version);
    ko_puts(o, ",\n  \"numba_version_matches\": "); ko_json_tri(o, R->version_state);
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
    ko_puts(o, ", \"numba_reads_this_index\": "); ko_json_tri(o, R->src.reads);
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
    ko_puts(o, ", \"line_starts_function\": "); ko_json_tri(o, R->src.line_checked == 0 ? -1 : R->src.line_checked == 1);
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
        ki_hex_of(ix->stamp->s, 32, hx);
        ko_puts(o, ", \"sha256\": "); ko_json_cstr(o, hx);
        if (R->have_src_digest) { ki_hex_of(R->src_digest, 32, hx); ko_puts(o, ", \"source_sha256\": "); ko_json_cstr(o, hx); }
    } else if (ix->stamp_kind == ST_HEXHASH) {
        ko_puts(o, ", \"sha256\": "); json_node_str(o, ix->stamp);
        ko_puts(o, ", \"source_sha256\": "); if (R->cell_hex[0]) ko_json_cstr(o, R->cell_hex); else ko_puts(o, "null");
    } else if (ix->stamp) {
        char *s = render_to(&ix->arena, ix->stamp, 0, 512);
        ko_puts(o, ", \"repr\": "); ko_json_cstr(o, s);
    }
    ko_puts(o, ", \"matches\": "); ko_json_tri(o, R->stamp_state);
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
            if (rname && k > 0 && memo.buf && memo_feat && pk_node_str_eq(memo_feat, ov->features)) {
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
                      pk_node_eq_cstr(ov->closure, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") ? "false" : "true");
        } else {
            ko_puts(o, ", \"key_repr\": "); ko_json_cstr(o, ov->key_repr);
        }
        ko_puts(o, ", \"data\": "); json_node_str(o, ov->data);
        ko_puts(o, ", \"data_exists\": "); ko_json_tri(o, ov->data_exists);
        ko_puts(o, ", \"data_error\": "); if (ov->data_bad) ko_json_cstr(o, ov->data_err); else ko_puts(o, "null");
        ko_puts(o, ", \"data_size\": "); if (ov->data_size >= 0) ko_printf(o, "%lld", ov->data_size); else ko_puts(o, "null");
        ko_puts(o, ", \"cpu_match\": "); ko_json_tri(o, ov->cpu_match);
        ko_puts(o, ", \"usable\": "); ko_json_tri(o, ov->usable);
        ko_puts(o, ", \"bytecode_matches\": "); ko_json_tri(o, ov->code_match);
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
int ki_numba_report(const unsigned char *buf, size_t len, const char *path, const ki_opts *op, ki_out *o,
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
char **nb_dir_indexes(const char *dir, size_t *n)
{
    DIR *d;
    struct dirent *de;
    char **names = NULL, p[4200];
    size_t cap = 0;
    *n = 0;
    ki_fmt(p, sizeof p, "%s/config.file", dir);
    if (access(p, F_OK) == 0) return NULL;
    ki_fmt(p, sizeof p, "%s/e", dir);
    if (ki_is_dir(p)) return NULL;
    ki_fmt(p, sizeof p, "%s/i", dir);
    if (ki_is_dir(p)) return NULL;
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
int ki_numba_dir_report(const char *dir, char **names, size_t n, const ki_opts *op, ki_out *o)
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
        buf = ki_slurp(path, KI_MAX_FILE, &len);
        if (!buf) ki_fmt(err, sizeof err, "cannot be read (or larger than %u MiB)", KI_MAX_FILE >> 20);
        if (buf && ki_numba_report(buf, len, path, op, o, err, sizeof err) == 0) { free(buf); continue; }
        free(buf);
        if (op->json) {
            ko_puts(o, "{\"file\": "); ko_json_cstr(o, path); ko_puts(o, ", \"error\": "); ko_json_cstr(o, err); ko_puts(o, "}");
        } else {
            char e[1300];
            ko_printf(o, "file       %s\nerror      %s\n", ki_escs(e, sizeof e, path), err);
        }
    }
    if (op->json) ko_puts(o, "\n]}\n");
    return 0;
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
    const char *b = ki_path_base(dir);
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
int pr_nbc_base(const char *name, char *base, size_t cap)
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
        if (!(ki_ends_with(de->d_name, ".nbi") || ki_ends_with(de->d_name, ".nbc"))) continue;
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
        if (!ki_ends_with(names[k], ".nbi")) continue;
        if (only && strcmp(only, names[k]) != 0) {
            /* not the one asked about: its data files are not orphans */
            ki_fmt(base, sizeof base, "%.*s", (int)(strlen(names[k]) - 4), names[k]);
            for (j = 0; j < n; j++) { char b2[4096]; if (pr_nbc_base(names[j], b2, sizeof b2) && strcmp(b2, base) == 0) kept[j] = 1; }
            continue;
        }
        C->n_indexes++;
        ki_fmt(path, sizeof path, "%s/%s", dir, names[k]);
        ki_fmt(base, sizeof base, "%.*s", (int)(strlen(names[k]) - 4), names[k]);
        buf = ki_slurp_at(dfd, names[k], KI_MAX_FILE, &len);   /* the index in this directory: no link, no FIFO */
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
        if (!ki_ends_with(names[k], ".nbc") || kept[k] == 1 || kept[k] == 2) continue;
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
    ki_path_dirname(abs, dir, sizeof dir);
    if (!S_ISREG(st.st_mode) || !(ki_ends_with(abs, ".nbi") || ki_ends_with(abs, ".nbc")) || !pr_is_cache_dir(dir)) {
        if (!C->op->json)
            ko_printf(C->o, "left alone %s: only .nbi and .nbc files in a __pycache__ or a numba cache directory are pruned\n", abs);
        return;
    }
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) return;
    if (ki_ends_with(abs, ".nbi")) pr_dir(C, fd, dir, ki_path_base(abs));
    else {
        char b2[4096], ix_name[4200];
        if (!pr_nbc_base(ki_path_base(abs), b2, sizeof b2)) { close(fd); return; }
        ki_fmt(ix_name, sizeof ix_name, "%s.nbi", b2);
        pr_dir(C, fd, dir, ix_name);
    }
}

int ki_prune(const char *const *paths, int npaths, const ki_opts *op, ki_out *o)
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
