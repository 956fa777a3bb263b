/* inspect.h - what the files of kcache-inspect share: the system headers, the limits, the types
 * more than one file reads and the functions one file defines for the others.
 *
 * kcache-inspect is one program built from tools/inspect_*.c (the Makefile's TOOL_INSPECT_SRC):
 *   inspect_main.c     arguments, dispatch, usage
 *   inspect_common.c   output sink, arena, paths, bounded file reading
 *   inspect_pickle.c   the pickle reader and Python-like rendering
 *   inspect_sha.c      SHA-1 and SHA-256
 *   inspect_numba.c    numba's indexes: decoding, locators, imports, verdicts, --prune
 *   inspect_llvm.c     the host CPU as each numba's LLVM names it, --host
 *   inspect_zip.c      zip members and inflate
 *   inspect_pysrc.c    Python source text: lines, notebook cells, imports
 *   inspect_store.c    kcache stores, through kcache.h's public API for tools (the one file
 *                      compiling kcache.h's implementation)
 * Private to the tool: outside tools/ only the fuzz targets and bench/bench_inspect.c include it,
 * and they build from the same files.  A function here keeps the prefix of its part (ki_ general,
 * ko_ output, ka_ arena, pk_ pickle, nb_/deps_/pr_ numba, feat_ CPU features, zi_/zip_ zip, py_
 * Python text, sha_, ks_ store); everything not listed here is static to its file. */
#ifndef KCACHE_INSPECT_H
#define KCACHE_INSPECT_H

/* One view of the system in every file: what kcache.h's implementation half sets in
   inspect_store.c (the GNU extensions on Linux, a 64-bit off_t), so that a struct stat passed
   from one file to another has one layout. */
#if (defined(__linux__) || defined(__GNU__) || defined(__CYGWIN__)) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#ifndef _FILE_OFFSET_BITS
#define _FILE_OFFSET_BITS 64
#endif
#include "../kcache.h"

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <fcntl.h>
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
#define KI_MAX_MEMBER    (64u << 20)   /* largest zip member read */

/* ---------------------------------------------------------------------------------------- */
/* kcache.h's helpers, defined in inspect_store.c (the only file that compiles its           */
/* implementation). The escaping rule's one step is kcache_escape_char (ktext.h's too).      */

#define KI_HOST_FEATURES_MAX 4096      /* a host feature string fits (KCACHE_HOST_FEATURES_MAX) */
char *ki_escs(char *out, size_t cap, const char *s);          /* kcache_escape: a string escaped */
char *ki_shell_quote(char *out, size_t cap, const char *s);   /* kcache_shell_quote */
void ki_host_cpu_name(char *out, size_t cap);                 /* kcache_host_cpu_name: the newest LLVM's */
size_t ki_host_cpu_features(char *out, size_t cap);           /* kcache_host_cpu_features */

/* ---------------------------------------------------------------------------------------- */
/* The options of a run (every part reads them), and the host CPU a numba run sees.          */

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
    const char *pycache_prefix;       /* --pycache-prefix DIR: the run's -X pycache_prefix (else PYTHONPYCACHEPREFIX) */
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
    char cpu_buf[128], feat_buf[KI_HOST_FEATURES_MAX];
    /* detected: kcache's own (newest LLVM's) name, and what the reading numba's LLVM calls it */
    char detected[128];
    char numba[16];                   /* "0.56", the numba whose LLVM was asked */
    int nllvm;                        /* LLVM majors that numba builds with: 0..2 */
    int llvm[2];
    char llvm_name[2][128];
    int llvm_used;                    /* index into llvm[] of the name taken, -1: none */
    char llvm_note[400];              /* how the name was chosen, when worth saying */
} ki_host;

/* ---------------------------------------------------------------------------------------- */
/* inspect_common.c: output, arena, bytes, paths, files.                                    */

typedef struct ki_out {
    FILE *f;        /* write here when non-NULL, else into buf */
    char *buf;
    size_t len, cap;
    size_t limit;   /* 0: KI_MAX_OUTPUT */
    int full;       /* the budget ran out: further writes are dropped */
} ki_out;
typedef struct ki_block { struct ki_block *next; size_t used, cap; } ki_block;
typedef struct ki_arena { ki_block *head; size_t total, limit; } ki_arena;

int ki_fmt(char *buf, size_t cap, const char *fmt, ...) KI_PRINTF(3, 4);
void ko_write(ki_out *o, const char *s, size_t n);
void ko_puts(ki_out *o, const char *s);
void ko_putc(ki_out *o, char c);
void ko_printf(ki_out *o, const char *fmt, ...) KI_PRINTF(2, 3);
void ko_esc(ki_out *o, const char *s, size_t n);
void ko_free(ki_out *o);
void *ka_alloc(ki_arena *a, size_t n);
void ka_free(ki_arena *a);
uint64_t ki_rd_le(const unsigned char *p, int n);
int ki_hexval(int c);
void ko_text(ki_out *o, const unsigned char *s, size_t n, size_t max);
void ko_json_str(ki_out *o, const unsigned char *s, size_t n);
void ko_json_cstr(ki_out *o, const char *s);
int ki_abspath(const char *p, char *out, size_t cap);
void ki_path_dirname(const char *p, char *out, size_t cap);
const char *ki_path_base(const char *p);
FILE *ki_fopen_regular(const char *path, const char *mode);
int ki_is_file(const char *p, struct stat *st);
int ki_is_dir(const char *p);
int ki_ends_with(const char *s, const char *suffix);
unsigned char *ki_slurp(const char *path, size_t max, size_t *len);
unsigned char *ki_slurp_at(int dfd, const char *name, size_t max, size_t *len);
void ko_json_tri(ki_out *o, int v);
unsigned char *ki_read_file(const char *path, size_t *len, char *err, size_t errcap);

/* ---------------------------------------------------------------------------------------- */
/* inspect_pickle.c: the pickle reader.                                                      */

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

const char *pk_kind_name(int k);
void pk_parser_init(pk_parser *P, ki_arena *a);
void pk_parser_free(pk_parser *P);
int pk_load(pk_parser *P, const unsigned char *buf, size_t len, size_t start, size_t *end, pk_node **out);
int pk_node_is_str(const pk_node *n, const char *s);
int pk_bytes_eq(const unsigned char *a, size_t an, const char *s);
int ki_dbl_is_finite(double d);
void ki_fmt_double(char *out, size_t cap, double d);
void pk_repr(ki_out *o, pk_node *n, int depth);
int pk_node_eq_cstr(const pk_node *n, const char *s);
int pk_node_str_eq(const pk_node *a, const pk_node *b);

/* ---------------------------------------------------------------------------------------- */
/* inspect_sha.c                                                                             */

typedef struct ki_sha { uint32_t h[8]; uint64_t len; unsigned char blk[64]; size_t fill; int is256; } ki_sha;

void sha_init(ki_sha *s, int is256);
void sha_update(ki_sha *s, const void *data, size_t n);
void sha_final(ki_sha *s, unsigned char *out);
void ki_hex_of(const unsigned char *p, size_t n, char *out);

/* ---------------------------------------------------------------------------------------- */
/* inspect_numba.c: numba's indexes.                                                         */

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

void nb_type_str(ki_out *o, pk_node *n, int depth, int top);
void nb_index_free(nb_index *ix);
int nb_decode(const unsigned char *buf, size_t len, nb_index *ix, char *err, size_t errcap);
void deps_stmt(void *user, char *s);
int ki_numba_report(const unsigned char *buf, size_t len, const char *path, const ki_opts *op, ki_out *o,
                    char *err, size_t errcap);
char **nb_dir_indexes(const char *dir, size_t *n);
int ki_numba_dir_report(const char *dir, char **names, size_t n, const ki_opts *op, ki_out *o);
int pr_nbc_base(const char *name, char *base, size_t cap);
int ki_prune(const char *const *paths, int npaths, const ki_opts *op, ki_out *o);

/* ---------------------------------------------------------------------------------------- */
/* inspect_llvm.c: the host CPU.                                                             */

#define KI_LLVM_OLDEST 9               /* the LLVMs whose x86 CPU names are known: numba 0.50's */
#define KI_LLVM_NEWEST 22              /* ... to 0.66-0.68's (the one kcache.h's names are) */

enum { KI_X86_OTHER, KI_X86_INTEL, KI_X86_AMD };
typedef struct ki_x86_cpu {
    unsigned vendor, family, model;   /* KI_X86_*; family and model as LLVM computes them */
    const char *features;             /* "+a,-b,...": which features it has, as kcache names them */
} ki_x86_cpu;

/* What LLVM major version llvm's host detection calls this CPU.  1 for a version in the table
 * (KI_LLVM_OLDEST..KI_LLVM_NEWEST, x86), 0 for one outside it (out gets the nearest version's
 * name), 2 where names are not tracked per version (elsewhere: out gets kcache's one name). */
int ki_host_cpu_name_llvm(unsigned llvm, char *out, size_t cap);
/* What LLVM v (KI_LLVM_OLDEST..KI_LLVM_NEWEST) calls the x86 CPU x. */
const char *ki_x86_name(const ki_x86_cpu *x, unsigned v);
int ki_numba_minor(const char *v, size_t n);
void ki_host_resolve(const ki_opts *op, const nb_index *ix, ki_host *h);
size_t feat_diff(ki_out *o, const unsigned char *a, size_t an, const unsigned char *b, size_t bn,
                 size_t max, int json, int by_name);
int feat_match_by_name(const unsigned char *a, size_t an, const unsigned char *b, size_t bn);
int feat_in_flatten_order(const unsigned char *s, size_t n);
size_t feat_count(const pk_node *f, size_t *enabled);
void ki_host_report(const ki_opts *op, ki_out *o);

/* ---------------------------------------------------------------------------------------- */
/* inspect_zip.c, inspect_pysrc.c                                                            */

unsigned char *zi_inflate(const unsigned char *p, size_t n, size_t max, size_t *outlen);
unsigned char *zip_member_mem(const unsigned char *zip, size_t n, const char *path, const char *name, size_t *len,
                              char *err, size_t errcap);
unsigned char *zip_member(const char *path, const char *name, size_t *len, char *err, size_t errcap);

typedef struct py_line {
    size_t start, end;        /* [start, end): the physical line, its '\n' included when present */
    size_t code_end;          /* just past its last character before a comment and trailing blanks */
    int indent;               /* columns before the first character (a tab: to the next multiple of 8) */
    int blank;                /* starts no statement: only blanks and a comment, outside any string */
    int continues;            /* the logical line goes on past this physical line */
} py_line;

typedef void (*py_stmt_fn)(void *user, char *stmt);

py_line *py_lines(const unsigned char *t, size_t n, size_t *nl);
int py_cell_function(const unsigned char *t, const py_line *L, size_t nl, const char *disamb,
                     size_t *first, size_t *last);
void py_imports(const unsigned char *t, size_t n, py_stmt_fn fn, void *user);

/* ---------------------------------------------------------------------------------------- */
/* inspect_store.c: kcache stores.                                                           */

/* the store commands ki_tidy runs */
enum { KI_TIDY_NONE, KI_TIDY_OLDER, KI_TIDY_TRIM, KI_TIDY_UNIT, KI_TIDY_CLEAR };

long long ks_pread(int fd, void *buf, size_t n, uint64_t off);
int ki_store_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap);
int ki_unit_report(const char *path, const char *unit, const ki_opts *op, ki_out *o, char *err, size_t errcap);
int ki_index_file_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap);
int ki_entry_file_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap);
int ki_make_layer(const char *src, const char *dest, const char *const *units, int nunits, int private_modes, ki_out *o,
                  char *err, size_t errcap);
int ki_tidy(int what, const char *arg, const char *dir, int yes);

#endif
