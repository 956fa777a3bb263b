/* inspect_store.c - kcache-inspect: kcache stores, their views and their upkeep.
 *
 * A store's summary and consistency check, one unit's index, one entry file, and the commands
 * that change a store: --make-layer, --evict-older-than, --trim, --remove-unit, --clear.  It reads
 * through kcache.h's public API for tools (>>toolapi: kcache_reader, kcache_entry_read,
 * kcache_index_load, kcache_read_accounting, ...), so that the tool and the library cannot disagree
 * on what is valid, and changes a store only through the library's public calls.  This is the file
 * of the tool that compiles kcache.h's implementation (KCACHE_IMPLEMENTATION); the other files
 * include kcache.h for its declarations only, and take the few helpers they need through the ki_
 * functions at the top of this file. */
#define KCACHE_IMPLEMENTATION
#include "inspect.h"
#include "ktext.h"   /* ktext_eprintf: the store commands' messages */

/* ---------------------------------------------------------------------------------------- */
/* What the other files take from kcache.h (only this file compiles its implementation).     */

/* a feature string fits the size inspect.h gives it */
typedef char ki_host_features_fit[KI_HOST_FEATURES_MAX >= KCACHE_HOST_FEATURES_MAX ? 1 : -1];
/* kcache.h names the CPU as the newest LLVM inspect_llvm.c knows */
typedef char ki_llvm_newest_same[KI_LLVM_NEWEST == KCACHE_HOST_CPU_LLVM ? 1 : -1];

char *ki_escs(char *out, size_t cap, const char *s) { return kcache_escape(out, cap, s, s ? strlen(s) : 0); }
char *ki_shell_quote(char *out, size_t cap, const char *s) { return kcache_shell_quote(out, cap, s); }
void ki_host_cpu_name(char *out, size_t cap) { kcache_host_cpu_name(out, cap); }
size_t ki_host_cpu_features(char *out, size_t cap) { return kcache_host_cpu_features(out, cap); }

/* ======================================================================================== */
/* kcache stores.                                                                            */
/*                                                                                           */
/* Read only: a kcache_reader (no kcache_open, which creates and repairs; no lock, no write).  */
/* The formats are kcache.h's, and so are the decoders: this file only says what they found.  */
/* Everything read is bounded: an entry's header (KCACHE_ENTRY_HEADER_MAX), an index          */
/* (KCACHE_INDEX_MAX), the units tracked, the misses and bad entries kept, the report          */
/* (KI_MAX_OUTPUT).                                                                            */

#define KS_MAX_UNITS   65536       /* distinct units tracked by a store summary */
#define KS_SHOW_UNITS  10          /* units listed in a text summary */
#define KS_SHOW_MAX    1000        /* overloads, units listed at most (JSON too) */
#define KS_SHOW_MISSES 10          /* newest traced misses in a store summary */
#define KS_SHOW_BAD    20          /* bad entries listed by --verify */

static void ks_time(char *out, size_t cap, int64_t ns)
{
    time_t t;
    struct tm tm;
    if (ns <= 0) { ki_fmt(out, cap, "unknown time"); return; }
    t = (time_t)(ns / 1000000000);
    if (!gmtime_r(&t, &tm) || strftime(out, cap, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0) ki_fmt(out, cap, "?");
}

static void ks_size(char *out, size_t cap, uint64_t n)
{
    static const char units[] = "KMGTPE";
    double v = (double)n;
    int i = -1;
    if (n < 1024) { ki_fmt(out, cap, "%llu byte%s", (unsigned long long)n, n == 1 ? "" : "s"); return; }
    while (v >= 1024.0 && i < 5) { v /= 1024.0; i++; }
    ki_fmt(out, cap, "%.1f %ciB", v, units[i]);
}

static void ks_hex(kcache_hash128 d, char out[33]) { kcache_hash_hex(d, out); }
static int ks_same(kcache_hash128 a, kcache_hash128 b) { return a.lo == b.lo && a.hi == b.hi; }

static const char *ks_reason_word(uint32_t r) { return r < KCACHE_REASON_COUNT ? kcache_reason_name((kcache_reason)r) : "unknown"; }
static const char *ks_reason_text(uint32_t r) { return r < KCACHE_REASON_COUNT ? kcache_reason_text((kcache_reason)r) : "unknown reason"; }
static const char *ks_type_name(uint32_t t)
{
    switch (t) {
    case KCACHE_FIELD_BYTES: return "bytes";
    case KCACHE_FIELD_STR: return "str";
    case KCACHE_FIELD_U64: return "u64";
    case KCACHE_FIELD_FILE: return "file";
    default: return "?";
    }
}
static const char *ks_policy_name(int p)
{
    return p == KCACHE_STAMP_MTIME ? "mtime" : p == KCACHE_STAMP_CONTENT ? "content" : "hybrid";
}

/* Bytes as text by kcache.h's rule (previews are already escaped by kcache: their backslashes
   are kept as they are, and escaping them again changes nothing). */
static void ks_text(ki_out *o, const char *s, size_t n) { ko_esc(o, s, n); }

/* Writes s starting at column col, breaking lines at spaces before column 78 (a word longer
   than a line is cut); continuation lines start with indent spaces.  Ends with a newline. */
static void ks_wrap(ki_out *o, const char *s, size_t col, size_t indent)
{
    const size_t width = 78;
    size_t k;
    while (*s && !o->full) {
        size_t sp = 0, w = 0;
        while (s[sp] == ' ') sp++;
        while (s[sp + w] && s[sp + w] != ' ') w++;
        if (!w) break; /* trailing spaces */
        if (col > indent && col + sp + w > width) {
            ko_putc(o, '\n');
            for (k = 0; k < indent; k++) ko_putc(o, ' ');
            col = indent;
            s += sp;
            continue;
        }
        for (k = 0; k < sp; k++) ko_putc(o, ' ');
        col += sp;
        s += sp;
        if (col + w > width) { /* alone on its line and still too long: cut it */
            size_t take = width > col + 8 ? width - col : 8;
            if (take > w) take = w;
            ks_text(o, s, take);
            s += take;
            if (*s) {
                ko_putc(o, '\n');
                for (k = 0; k < indent; k++) ko_putc(o, ' ');
                col = indent;
            }
            continue;
        }
        ks_text(o, s, w);
        col += w;
        s += w;
    }
    ko_putc(o, '\n');
}

static void ks_json_hex(ki_out *o, kcache_hash128 d)
{
    char hx[33];
    ks_hex(d, hx);
    ko_json_cstr(o, hx);
}
static void ks_json_time(ki_out *o, const char *key, int64_t ns)
{
    char t[64];
    ko_printf(o, "\"%s_ns\": %lld, \"%s\": ", key, (long long)ns, key);
    if (ns <= 0) { ko_puts(o, "null"); return; }
    ks_time(t, sizeof t, ns);
    ko_json_cstr(o, t);
}

/* Reads up to n bytes at off; the count read (short at the end of the file), -1 on error. */
long long ks_pread(int fd, void *buf, size_t n, uint64_t off)
{
    size_t have = 0;
    while (have < n) {
        ssize_t r = pread(fd, (char *)buf + have, n - have, (off_t)(off + have));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return have ? (long long)have : -1;
        if (r == 0) break;
        have += (size_t)r;
    }
    return (long long)have;
}

/* ---------------------------------------------------------------------------------------- */
/* An entry: e/XX/<digest>.kce, decoded by kcache_entry_read, check by check.                  */

typedef struct ks_entry {
    kcache_entry_info i;     /* the checks: 1 holds, 0 fails, -1 not checkable; i.problem the first failure */
    kcache_key key;          /* the decoded key record (kcache_entry_read always sets it: free it) */
} ks_entry;

static void ks_entry_free(ks_entry *e) { kcache_key_free(&e->key); }

/* Reads an entry file (inside the store r, or a path the user named when r is NULL) with its
   payload checksum.  The kcache_status; err says why when it is not an entry at all. */
static kcache_status ks_entry_read(kcache_reader *r, const char *path, ks_entry *e, char *err, size_t errcap)
{
    kcache_status s = kcache_entry_read(r, path, 1, &e->i, &e->key);
    if (s != KCACHE_OK) ki_fmt(err, errcap, "%s", e->i.problem);
    return s;
}

/* A header-level problem: kcache rejects the entry before looking at stamps or the payload. */
static int ks_entry_header_bad(const ks_entry *e)
{
    return !e->i.lengths_ok || e->i.header_sum != 1 || e->i.padding != 1 || e->i.record != 1 || e->i.record_digest != 1 || e->i.name_digest == 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Dependencies: a file field's stamp against the file now.                                  */

typedef struct ks_dep {
    const kcache_key_field *f;
    char path[PATH_MAX];
    int checkable;           /* the path is known exactly, and the file was looked at */
    int found;               /* the preview kept only the path's end: the path was found (ks_dep_find) */
    const char *why_not;     /* when not */
    char why_buf[64];        /* why_not's text when it names a number */
    int exists;              /* there now */
    int regular;
    int err;                 /* errno of the open */
    int64_t mtime;
    uint64_t size;
    int hashed;              /* content hashed */
    int sized;               /* another size than stored: stat taken, content not read (it changed) */
    int diff;                /* KCACHE_STAMP_DIFF_* bits */
    int stale;               /* under the policy */
} ks_dep;

/* A preview's text unescaped into out (NUL-terminated): its length, or (size_t)-1 when it does not
   fit or holds a NUL. */
static size_t ks_unescape(const char *p, char *out, size_t cap)
{
    size_t o = 0;
    while (*p && o + 1 < cap) {
        char c = *p++;
        if (c == '\\' && *p) {
            char e = *p++;
            if (e == 'n') c = '\n';
            else if (e == 't') c = '\t';
            else if (e == 'x' && p[0] && p[1] && ki_hexval((unsigned char)p[0]) >= 0 && ki_hexval((unsigned char)p[1]) >= 0) {
                c = (char)(ki_hexval((unsigned char)p[0]) * 16 + ki_hexval((unsigned char)p[1]));
                p += 2;
            } else c = e;
        }
        out[o++] = c;
    }
    out[o] = 0;
    return *p || memchr(out, 0, o) ? (size_t)-1 : o;
}

/* The path a file field names, from its preview, when the preview holds all of it: the digest and
   length of what it unescapes to must be the field's. */
static int ks_dep_path(const kcache_key_field *f, char *out, size_t cap)
{
    size_t n = ks_unescape(f->preview, out, cap);
    return n == f->size && ks_same(kcache_hash(out, n), f->digest);
}

/* ---- a path longer than the preview keeps -------------------------------------------------
   kcache keeps a path's last 64 bytes ("...tail") and the digest and length of all of it. The
   missing start is looked for on this machine, breadth first (short paths first: system and home
   directories before deep trees), from the working directory's nearest ancestors and then from
   "/": a directory entry whose path runs to where the tail begins is a candidate, taken only when
   the whole path's length and XXH3-128 are the field's, so a wrong path is never reported. At
   most KS_FIND_DIRS directories are read: a path whose missing start is long and far from here
   may stay unknown (the verdict then says it was not checked). */
#define KS_FIND_DIRS 4000
#define KS_FIND_QUEUE 65536
typedef struct ks_find {
    const kcache_key_field *f;
    const char *tail;
    size_t tail_len, missing; /* the path is missing bytes, then the tail */
    unsigned dirs_left;
    char **queue;             /* directories to read, each ending in '/' and shorter than missing */
    size_t head, count;
    char *out;
    size_t cap;
    int found;
} ks_find;

/* p[0..missing) then the tail: the path when its digest is the field's. */
static void ks_find_try(ks_find *s, const char *p)
{
    if (s->missing + s->tail_len + 1 > s->cap) return;
    memcpy(s->out, p, s->missing);
    memcpy(s->out + s->missing, s->tail, s->tail_len + 1);
    s->found = ks_same(kcache_hash(s->out, s->missing + s->tail_len), s->f->digest);
}

static void ks_find_push(ks_find *s, const char *dir, size_t len)
{
    char *c;
    if (s->count >= KS_FIND_QUEUE || (c = (char *)malloc(len + 1)) == NULL) return;
    memcpy(c, dir, len + 1);
    s->queue[(s->head + s->count++) % KS_FIND_QUEUE] = c;
}

/* The entries of one directory (a path ending in '/', shorter than the missing start). */
static void ks_find_read(ks_find *s, const char *dir)
{
    static char buf[PATH_MAX];
    size_t len = strlen(dir);
    DIR *d;
    struct dirent *e;
    if (len >= s->missing || (d = opendir(dir)) == NULL) return;
    s->dirs_left--;
    memcpy(buf, dir, len);
    while (!s->found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name), full = len + n;
        int ki_is_dir;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || full + 2 > sizeof buf) continue;
        memcpy(buf + len, e->d_name, n + 1);
        if (full >= s->missing) { /* the missing start ends inside this name: the rest of it must begin the tail */
            size_t over = full - s->missing;
            if (over <= s->tail_len && memcmp(buf + s->missing, s->tail, over) == 0) ks_find_try(s, buf);
            continue;
        }
        buf[full] = '/';
        buf[full + 1] = 0;
        if (full + 1 == s->missing) { ks_find_try(s, buf); continue; } /* ... or with its '/' */
#ifdef DT_DIR
        if (e->d_type == DT_DIR) ki_is_dir = 1;
        else if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) ki_is_dir = 0;
        else
#endif
        {
            struct stat sb;
            ki_is_dir = stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode);
        }
        if (ki_is_dir) ks_find_push(s, buf, full + 1);
    }
    closedir(d);
}

/* A cut path found again (see above): 1 with the path in out. */
static int ks_dep_search(const kcache_key_field *f, char *out, size_t cap)
{
    static char tail[KCACHE_PREVIEW_MAX], cwd[PATH_MAX];
    ks_find s;
    size_t n, tl, seeds = 0;
    if (strncmp(f->preview, "...", 3) != 0 || f->size >= PATH_MAX || (tl = ks_unescape(f->preview + 3, tail, sizeof tail)) == (size_t)-1 ||
        tl == 0 || tl >= f->size)
        return 0;
    memset(&s, 0, sizeof s);
    s.f = f;
    s.tail = tail;
    s.tail_len = tl;
    s.missing = (size_t)f->size - tl;
    s.dirs_left = KS_FIND_DIRS;
    s.out = out;
    s.cap = cap;
    if ((s.queue = (char **)malloc(KS_FIND_QUEUE * sizeof *s.queue)) == NULL) return 0;
    if (s.missing == 1) ks_find_try(&s, "/");
    /* the working directory's two nearest ancestors that fit (the program that made the key often
       ran nearby), then the root */
    if (getcwd(cwd, sizeof cwd) && cwd[0] == '/')
        for (n = strlen(cwd); n > 1 && seeds < 2; n--)
            if ((cwd[n] == '/' || cwd[n] == 0) && n + 1 < s.missing) {
                char c0 = cwd[n], c1 = cwd[n + 1];
                cwd[n] = '/', cwd[n + 1] = 0;
                ks_find_push(&s, cwd, n + 1);
                cwd[n] = c0, cwd[n + 1] = c1;
                seeds++;
            }
    ks_find_push(&s, "/", 1);
    while (!s.found && s.count && s.dirs_left) {
        char *dir = s.queue[s.head];
        s.head = (s.head + 1) % KS_FIND_QUEUE;
        s.count--;
        ks_find_read(&s, dir);
        free(dir);
    }
    while (s.count) {
        free(s.queue[s.head]);
        s.head = (s.head + 1) % KS_FIND_QUEUE;
        s.count--;
    }
    free(s.queue);
    return s.found;
}

/* ks_dep_search once per path: a unit's overloads mostly name the same dependencies, and a search
   that finds nothing reads KS_FIND_DIRS directories each time (a quarter second). The digest and
   length name the path; the last KS_FIND_MEMO answers are kept. */
#define KS_FIND_MEMO 16
static int ks_dep_find(const kcache_key_field *f, char *out, size_t cap)
{
    static struct { kcache_hash128 digest; uint64_t size; char *path; int found; } memo[KS_FIND_MEMO];
    static size_t used, next;
    size_t i;
    for (i = 0; i < used; i++)
        if (memo[i].size == f->size && ks_same(memo[i].digest, f->digest)) {
            if (!memo[i].found || strlen(memo[i].path) >= cap) return 0;
            memcpy(out, memo[i].path, strlen(memo[i].path) + 1);
            return 1;
        }
    i = used < KS_FIND_MEMO ? used++ : next++ % KS_FIND_MEMO;
    free(memo[i].path);
    memo[i].path = NULL;
    memo[i].digest = f->digest;
    memo[i].size = f->size;
    memo[i].found = ks_dep_search(f, out, cap);
    if (memo[i].found && (memo[i].path = (char *)malloc(strlen(out) + 1)) != NULL) memcpy(memo[i].path, out, strlen(out) + 1);
    else if (memo[i].found) memo[i].size = UINT64_MAX; /* no memory: not kept (no field is that long) */
    return memo[i].found;
}

/* The store's owner chose the path, and whoever runs this tool (root, a reader of a shared store)
   must not be made to follow a link, block on a FIFO or read another user's file: kcache_dep_now
   looks at it without following a link or blocking, and reads only the owner's (or root's)
   regular file of the size the key records. Anything else is said, never read. */
static void ks_dep_check(const kcache_key_field *f, const ki_opts *op, uint32_t owner, ks_dep *d)
{
    kcache_dep now;
    memset(d, 0, sizeof *d);
    d->f = f;
    if (op->no_deps) { d->why_not = "not checked"; return; }
    if (!ks_dep_path(f, d->path, sizeof d->path)) {
        int cut = strncmp(f->preview, "...", 3) == 0 || f->size > KCACHE_PREVIEW_BYTES;
        if (!cut || !(d->found = ks_dep_find(f, d->path, sizeof d->path))) {
            d->why_not = cut ? "path cut, and not found here by its end, length and digest: cannot check"
                             : "the preview is not the path, cannot check";
            return;
        }
    }
    kcache_dep_now(f, d->path, owner, UINT64_MAX, &now); /* (the size stored bounds what is read) */
    switch (now.state) {
    case KCACHE_DEP_SYMLINK:
        d->why_not = kcache_dep_state_text(now.state);
        return;
    case KCACHE_DEP_FOREIGN:
        ki_fmt(d->why_buf, sizeof d->why_buf, "owned by uid %lu: not read", (unsigned long)now.uid);
        d->why_not = d->why_buf;
        return;
    default:
        break;
    }
    d->checkable = 1;
    d->err = now.error;
    if (now.state == KCACHE_DEP_MISSING) {
        d->stale = 1; /* kcache_key_file fails: the program cannot even build this key */
        d->diff = KCACHE_STAMP_DIFF_MTIME | KCACHE_STAMP_DIFF_SIZE | KCACHE_STAMP_DIFF_CONTENT;
        return;
    }
    d->exists = 1;
    d->regular = now.state != KCACHE_DEP_NOT_REGULAR;
    d->mtime = now.now.mtime_ns;
    d->size = now.now.file_size;
    d->hashed = now.state == KCACHE_DEP_READ;
    d->sized = now.state == KCACHE_DEP_OTHER_SIZE;
    if (d->hashed || d->sized) d->diff = kcache_stamp_compare(f, &now.now);
    else d->diff = KCACHE_STAMP_DIFF_MTIME | KCACHE_STAMP_DIFF_SIZE | KCACHE_STAMP_DIFF_CONTENT; /* unreadable: differs */
    if (d->sized) d->diff |= KCACHE_STAMP_DIFF_CONTENT; /* another size is other bytes */
    d->stale = !(d->hashed || d->sized) || kcache_stamp_stale(d->diff, op->stamp);
}

/* "mtime, size, content" for the differing parts. */
static void ks_dep_what(const ks_dep *d, char *out, size_t cap)
{
    ki_fmt(out, cap, "%s%s%s%s%s", (d->diff & KCACHE_STAMP_DIFF_MTIME) ? "mtime" : "",
           (d->diff & KCACHE_STAMP_DIFF_MTIME) && (d->diff & (KCACHE_STAMP_DIFF_SIZE | KCACHE_STAMP_DIFF_CONTENT)) ? ", " : "",
           (d->diff & KCACHE_STAMP_DIFF_SIZE) ? "size" : "",
           (d->diff & KCACHE_STAMP_DIFF_SIZE) && (d->diff & KCACHE_STAMP_DIFF_CONTENT) ? ", " : "",
           (d->diff & KCACHE_STAMP_DIFF_CONTENT) ? "content" : "");
}

/* One line about a dependency now: "mtime same, size same, content same", "missing now", ... */
static void ks_dep_now(const ks_dep *d, char *out, size_t cap)
{
    if (!d->checkable) { ki_fmt(out, cap, "%s", d->why_not ? d->why_not : "not checked"); return; }
    if (!d->exists) { ki_fmt(out, cap, "missing now (%s)", strerror(d->err)); return; }
    if (!d->regular) { ki_fmt(out, cap, "not a regular file now"); return; }
    if (!d->hashed && !d->sized) { ki_fmt(out, cap, "unreadable now (%s)", strerror(d->err)); return; }
    ki_fmt(out, cap, "mtime %s, size %s, content %s%s", (d->diff & KCACHE_STAMP_DIFF_MTIME) ? (d->f->mtime_ns ? "differs" : "not recorded") : "same",
           (d->diff & KCACHE_STAMP_DIFF_SIZE) ? "differs" : "same", (d->diff & KCACHE_STAMP_DIFF_CONTENT) ? "differs" : "same",
           d->diff && !d->stale ? " (the stamp policy keeps it)" : "");
}

/* ---------------------------------------------------------------------------------------- */
/* An overload's verdict.                                                                    */

enum { KS_PRESENT, KS_MISSING, KS_CORRUPT, KS_STALE, KS_UNCHECKED, KS_NCODES };
static const char *const ks_code_name[KS_NCODES] = { "present", "missing", "corrupt", "stale", "unchecked" };

typedef struct ks_verdict {
    int code;
    char text[640];
} ks_verdict;

/* entry: 1 read (e decoded), 0 absent, -1 not looked for (no store); evicted_ns: when the eviction
   log says it left, 0 if it does not.  The order is the order kcache checks a lookup in: the
   file, its header, the dependencies' stamps, then the payload checksum. */
static void ks_verdict_of(int entry, const ks_entry *e, const char *entry_err, const ks_dep *deps, size_t ndeps,
                          int64_t evicted_ns, ks_verdict *v)
{
    size_t k, len = 0, nstale = 0, nskip = 0;
    char t[64];
    v->code = KS_PRESENT;
    v->text[0] = 0;
    for (k = 0; k < ndeps; k++) {
        if (deps[k].stale) nstale++;
        if (!deps[k].checkable) nskip++;
    }
    if (entry == 0) {
        v->code = KS_MISSING;
        if (evicted_ns) { ks_time(t, sizeof t, evicted_ns); ki_fmt(v->text, sizeof v->text, "entry missing: evicted by the size limit at %s", t); }
        else ki_fmt(v->text, sizeof v->text, "entry missing (evicted?)");
        return;
    }
    if (entry > 0 && (entry_err || ks_entry_header_bad(e))) {
        v->code = KS_CORRUPT;
        ki_fmt(v->text, sizeof v->text, "entry corrupt: %s", entry_err ? entry_err : e->i.problem);
        return;
    }
    if (nstale) {
        v->code = KS_STALE;
        len = (size_t)ki_fmt(v->text, sizeof v->text, "stale: ");
        for (k = 0; k < ndeps && len < sizeof v->text; k++) {
            char what[40];
            if (!deps[k].stale) continue;
            ks_dep_what(&deps[k], what, sizeof what);
            if (!deps[k].exists)
                len += (size_t)ki_fmt(v->text + len, sizeof v->text - len, "%sdep %s (%.100s) missing", len > 7 ? "; " : "",
                                      deps[k].f->name, deps[k].path);
            else
                len += (size_t)ki_fmt(v->text + len, sizeof v->text - len, "%sdep %s (%.100s) changed (%s)", len > 7 ? "; " : "",
                                      deps[k].f->name, deps[k].path, what);
        }
        return;
    }
    if (entry > 0 && e->i.payload == 0) {
        v->code = KS_CORRUPT;
        ki_fmt(v->text, sizeof v->text, "entry corrupt: %s", e->i.problem);
        return;
    }
    if (entry < 0) { v->code = KS_UNCHECKED; len = (size_t)ki_fmt(v->text, sizeof v->text, "entry not checked (no store)"); }
    else len = (size_t)ki_fmt(v->text, sizeof v->text, "present");
    if (nskip && len < sizeof v->text) {
        const char *why = "";
        for (k = 0; k < ndeps && !why[0]; k++) if (!deps[k].checkable && deps[k].why_not) why = deps[k].why_not;
        ki_fmt(v->text + len, sizeof v->text - len, " (%zu dependenc%s not checked: %s)", nskip, nskip == 1 ? "y" : "ies", why);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Fields.                                                                                   */

static int ks_preview_is_digest(const kcache_key_field *f) { return kcache_preview_is_digest(f); }

/* "    name  type  "preview"" lines of a key's fields (file fields with their stamp now, when deps). */
static void ks_fields_text(ki_out *o, const kcache_key *k, const ks_dep *deps, size_t indent)
{
    const kcache_key_field *f = kcache_key_field_at(k, 0); /* (one array) */
    size_t w = 4, i, j, d = 0;
    for (i = 0; i < k->count; i++) { size_t l = strlen(f[i].name); if (l > w) w = l; }
    if (w > 22) w = 22;
    for (i = 0; i < k->count && !o->full; i++) {
        char line[400];
        size_t n = strlen(f[i].name), col;
        int quote = f[i].type != KCACHE_FIELD_U64 && !ks_preview_is_digest(&f[i]);
        for (j = 0; j < indent; j++) ko_putc(o, ' ');
        ks_text(o, f[i].name, n);
        col = indent + n;
        if (n > w) { ko_putc(o, '\n'); for (j = 0; j < indent + w; j++) ko_putc(o, ' '); col = indent + w; }
        for (; col < indent + w; col++) ko_putc(o, ' ');
        ko_printf(o, "  %-5s ", ks_type_name(f[i].type));
        col += 8;
        ki_fmt(line, sizeof line, "%s%s%s", quote ? "\"" : "", f[i].preview, quote ? "\"" : "");
        ks_wrap(o, line, col, indent + w + 8);
        if (f[i].type == KCACHE_FIELD_FILE && deps) {
            char now[200], t[64];
            const ks_dep *dp = &deps[d++];
            if (dp->found) { /* the preview shows only the path's end */
                for (j = 0; j < indent + 2; j++) ko_putc(o, ' ');
                ki_fmt(line, sizeof line, "path:   %s (found by the end, length and digest kept)", dp->path);
                ks_wrap(o, line, indent + 2, indent + 10);
            }
            for (j = 0; j < indent + 2; j++) ko_putc(o, ' ');
            ks_time(t, sizeof t, f[i].mtime_ns);
            ki_fmt(line, sizeof line, "stored: mtime %s, size %llu", f[i].mtime_ns ? t : "not recorded", (unsigned long long)f[i].file_size);
            ks_wrap(o, line, indent + 2, indent + 10);
            for (j = 0; j < indent + 2; j++) ko_putc(o, ' ');
            ks_dep_now(dp, now, sizeof now);
            ki_fmt(line, sizeof line, "now:    %s", now);
            ks_wrap(o, line, indent + 2, indent + 10);
        }
    }
}

static void ks_fields_json(ki_out *o, const kcache_key *k, const ks_dep *deps)
{
    const kcache_key_field *f = kcache_key_field_at(k, 0); /* (one array) */
    size_t i, d = 0;
    ko_puts(o, "[");
    for (i = 0; i < k->count && !o->full; i++) {
        ko_printf(o, "%s{\"name\": ", i ? ", " : "");
        ko_json_cstr(o, f[i].name);
        ko_printf(o, ", \"type\": \"%s\", \"size\": %llu, \"preview\": ", ks_type_name(f[i].type), (unsigned long long)f[i].size);
        ko_json_cstr(o, f[i].preview);
        ko_puts(o, ", \"digest\": ");
        ks_json_hex(o, f[i].digest);
        if (f[i].type == KCACHE_FIELD_FILE) {
            ko_printf(o, ", \"stamp\": {\"mtime_ns\": %lld, \"size\": %llu, \"content\": ", (long long)f[i].mtime_ns,
                      (unsigned long long)f[i].file_size);
            ks_json_hex(o, f[i].content);
            ko_puts(o, "}");
            if (deps) {
                const ks_dep *dp = &deps[d++];
                ko_printf(o, ", \"now\": {\"checked\": %s", dp->checkable ? "true" : "false");
                if (!dp->checkable) { ko_puts(o, ", \"why\": "); ko_json_cstr(o, dp->why_not); }
                else {
                    ko_puts(o, ", \"path\": ");
                    ko_json_cstr(o, dp->path);
                    ko_printf(o, ", \"path_found\": %s, \"exists\": %s", dp->found ? "true" : "false", dp->exists ? "true" : "false");
                    if (dp->exists)
                        ko_printf(o, ", \"mtime_ns\": %lld, \"size\": %llu, \"regular\": %s, \"hashed\": %s", (long long)dp->mtime,
                                  (unsigned long long)dp->size, dp->regular ? "true" : "false", dp->hashed ? "true" : "false");
                    ko_printf(o, ", \"mtime_same\": %s, \"size_same\": %s, \"content_same\": %s, \"stale\": %s",
                              (dp->diff & KCACHE_STAMP_DIFF_MTIME) ? "false" : "true", (dp->diff & KCACHE_STAMP_DIFF_SIZE) ? "false" : "true",
                              (dp->diff & KCACHE_STAMP_DIFF_CONTENT) ? "false" : "true", dp->stale ? "true" : "false");
                }
                ko_puts(o, "}");
            }
        }
        ko_puts(o, "}");
    }
    ko_puts(o, "]");
}

/* An index item's key record as ks_fields_json writes it, or null when the record is damaged. */
static void ks_record_fields_json(ki_out *o, const kcache_index_item *it)
{
    kcache_key k;
    if (kcache_record_decode(it->record, it->record_len, &k) == KCACHE_OK) ks_fields_json(o, &k, NULL);
    else ko_puts(o, "null");
    kcache_key_free(&k);
}

/* The dependency checks of a key's file fields, in field order (free the result). */
static ks_dep *ks_deps_of(const kcache_key *k, const ki_opts *op, uint32_t owner, size_t *n)
{
    const kcache_key_field *f = kcache_key_field_at(k, 0); /* (one array) */
    size_t i, c = 0;
    ks_dep *d;
    *n = 0;
    for (i = 0; i < k->count; i++) c += f[i].type == KCACHE_FIELD_FILE;
    d = (ks_dep *)calloc(c ? c : 1, sizeof *d);
    if (!d) return NULL;
    for (i = 0; i < k->count; i++)
        if (f[i].type == KCACHE_FIELD_FILE) ks_dep_check(&f[i], op, owner, &d[(*n)++]);
    return d;
}

/* ---------------------------------------------------------------------------------------- */
/* A unit's index: i/XX/<xxh128 of the unit>.kci, an append-only log kcache_index_load       */
/* replays as kcache does (damaged records skipped and counted).                              */

typedef struct ks_index {
    kcache_index *x;
    kcache_index_log log;
    char unit[KCACHE_UNIT_MAX];      /* the unit, NUL-terminated (log.unit_len bytes; a NUL inside cuts it) */
} ks_index;

static void ks_index_set(ks_index *ix, kcache_index *x)
{
    ix->x = x;
    kcache_index_log_info(x, &ix->log);
    memcpy(ix->unit, ix->log.unit, ix->log.unit_len);
    ix->unit[ix->log.unit_len] = 0;
}
static void ks_index_free(ks_index *ix)
{
    kcache_index_free(ix->x);
    ix->x = NULL;
}
static uint32_t ks_n(const ks_index *ix, kcache_index_list l) { return kcache_index_count(ix->x, l); }
static const kcache_index_item *ks_item(const ks_index *ix, kcache_index_list l, uint32_t i) { return kcache_index_at(ix->x, l, i); }

/* ---------------------------------------------------------------------------------------- */
/* config.file: the accounting header, the eviction log, the use table.                      */

typedef struct ks_cf {
    int present;             /* a regular file of at least a header's size */
    kcache_accounting a;     /* its header, with kcache's checks (a.valid) */
    kcache_eviction evlog[KCACHE_EVICTION_LOG];
    unsigned evlog_n;        /* slots in use */
    char why[160];           /* when not present or not valid */
} ks_cf;

/* What kcache_accounting_decode found, in words. */
static void ks_cf_judge(ks_cf *c, kcache_status s)
{
    memset(c->why, 0, sizeof c->why);
    if (s == KCACHE_OK || (s == KCACHE_ECORRUPT && c->a.file_size >= 4096 && !c->a.magic_ok)) {
        c->present = 1;
        if (!c->a.valid)
            ki_fmt(c->why, sizeof c->why, "%s", !c->a.magic_ok ? "no KCACHECF magic" : !c->a.version_ok ? "another format version"
                                               : !c->a.geometry_ok ? "its size does not fit its use table" : "header checksum fails");
        return;
    }
    c->present = 0;
    if (s == KCACHE_ENOENT) ki_fmt(c->why, sizeof c->why, "missing");
    else if (s == KCACHE_EUNSAFE) ki_fmt(c->why, sizeof c->why, "not a regular file");
    else if (s == KCACHE_ECORRUPT) ki_fmt(c->why, sizeof c->why, "truncated (%lld bytes)", (long long)c->a.file_size);
    else ki_fmt(c->why, sizeof c->why, "%s", kcache_strerror(s));
}

/* When the eviction log says d left the store (0 when it does not remember it). */
static int64_t ks_cf_evicted(const ks_cf *c, kcache_hash128 d)
{
    unsigned i;
    if (!c || !c->present || !c->a.magic_ok) return 0;
    for (i = 0; i < c->evlog_n; i++)
        if (ks_same(c->evlog[i].digest, d)) return c->evlog[i].when ? c->evlog[i].when : 1;
    return 0;
}

/* Reads config.file in a store.  0 when it is there and readable (valid or not). */
static int ks_cf_read(kcache_reader *r, ks_cf *c)
{
    kcache_status s;
    memset(c, 0, sizeof *c);
    s = kcache_read_accounting(r, &c->a);
    if (s == KCACHE_OK) kcache_read_evictions(r, c->evlog, &c->evlog_n);
    ks_cf_judge(c, s);
    return c->present ? 0 : -1;
}

/* The same from a header in memory (the fuzz target's way in). */
static KI_MAYBE_UNUSED void ks_cf_decode(const unsigned char *hdr, uint64_t file_size, ks_cf *c)
{
    memset(c, 0, sizeof *c);
    ks_cf_judge(c, kcache_accounting_decode(hdr, 4096, file_size, &c->a, c->evlog, &c->evlog_n));
}

/* ---------------------------------------------------------------------------------------- */
/* Explaining a traced miss from the index it is in.                                          */

/* Appends to out (cap bytes) at *len, as kcache's explanations are built: the text stops at the
   first character that does not fit, and *len counts what it needed. */
static void ks_cat(char *out, size_t cap, size_t *len, const char *fmt, ...) KI_PRINTF(4, 5);
static void ks_cat(char *out, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(*len < cap ? out + *len : NULL, *len < cap ? cap - *len : 0, fmt, ap);
    va_end(ap);
    if (n > 0) *len += (size_t)n;
}

/* Why a traced miss missed, in words: the closest live overload and the fields that differ, the
   dependency that changed, when it was evicted... */
static void ks_explain_miss(const ks_index *ix, const kcache_index_item *m, const ks_cf *cf, int policy, char *out, size_t cap)
{
    kcache_key now;
    char t[64];
    uint32_t i;
    size_t len = 0;
    out[0] = 0;
    if (kcache_record_decode(m->record, m->record_len, &now) != KCACHE_OK) {
        kcache_key_free(&now);
        ks_cat(out, cap, &len, "%s (the missed key's record does not decode)", ks_reason_text(m->reason));
        return;
    }
    switch (m->reason) {
    case KCACHE_REASON_FIELD: {
        /* the closest overload live now, else the closest of those gone since */
        kcache_key best, cand;
        int best_eq = -1, l, eq;
        uint32_t best_i = 0;
        for (l = KCACHE_INDEX_LIVE; l <= KCACHE_INDEX_GONE && best_eq < 0; l++) {
            uint32_t others = 0;
            for (i = 0; i < ks_n(ix, (kcache_index_list)l); i++) {
                const kcache_index_item *it = ks_item(ix, (kcache_index_list)l, i);
                /* the overload this miss went on to store is not what it missed against (a numba
                   function compiled for another CPU: its own overload would explain nothing) */
                if (ks_same(it->digest, m->digest)) continue;
                others++;
                eq = kcache_record_compare(it->record, it->record_len, &now, &cand);
                kcache_key_free(&cand);
                if (eq > best_eq) { best_eq = eq; best_i = i; }
            }
            if (best_eq >= 0) {
                const kcache_index_item *it = ks_item(ix, (kcache_index_list)l, best_i);
                ks_cat(out, cap, &len, "closest of %u %s overload(s): ", others, l == KCACHE_INDEX_LIVE ? "live" : "since gone");
                kcache_record_decode(it->record, it->record_len, &best);
                len += kcache_key_diff_text(&best, &now, len < cap ? out + len : NULL, len < cap ? cap - len : 0);
                kcache_key_free(&best);
            }
        }
        if (best_eq < 0) ks_cat(out, cap, &len, "a field differs (no overload left to compare with)");
        break;
    }
    case KCACHE_REASON_STAMP: {
        int at = -1;
        kcache_key stored;
        for (i = ks_n(ix, KCACHE_INDEX_GONE); i-- > 0;)
            if (ks_same(ks_item(ix, KCACHE_INDEX_GONE, i)->digest, m->digest)) { at = (int)i; break; }
        if (at >= 0 && kcache_record_decode(ks_item(ix, KCACHE_INDEX_GONE, (uint32_t)at)->record, ks_item(ix, KCACHE_INDEX_GONE, (uint32_t)at)->record_len,
                                            &stored) == KCACHE_OK &&
            stored.count == now.count) {
            size_t before;
            ks_cat(out, cap, &len, "a dependency changed: ");
            before = len;
            len += kcache_key_stamps_text(&stored, &now, policy, len < cap ? out + len : NULL, len < cap ? cap - len : 0);
            if (len == before) ks_cat(out, cap, &len, "(the stamps differ under another policy than %s)", ks_policy_name(policy));
        } else {
            /* The gone record leaves the index when the same key is stored again (numba's units:
               an edited callee, then the recompile). The stamps it was stored with are, near
               enough, those of the newest earlier traced lookup of the same key: compare with that. */
            int before_at = -1;
            kcache_key then;
            if (at >= 0) kcache_key_free(&stored);
            at = -1;
            for (i = 0; i < ks_n(ix, KCACHE_INDEX_MISSED); i++) {
                const kcache_index_item *it = ks_item(ix, KCACHE_INDEX_MISSED, i);
                if (it != m && ks_same(it->digest, m->digest) && it->when < m->when &&
                    (before_at < 0 || it->when > ks_item(ix, KCACHE_INDEX_MISSED, (uint32_t)before_at)->when))
                    before_at = (int)i;
            }
            if (before_at >= 0) {
                const kcache_index_item *it = ks_item(ix, KCACHE_INDEX_MISSED, (uint32_t)before_at);
                if (kcache_record_decode(it->record, it->record_len, &then) == KCACHE_OK && then.count == now.count) {
                    size_t was;
                    ks_time(t, sizeof t, it->when);
                    ks_cat(out, cap, &len, "a dependency changed since the lookup traced at %s (the stored stamps left the index "
                                           "when the key was stored again): ", t);
                    was = len;
                    len += kcache_key_stamps_text(&then, &now, policy, len < cap ? out + len : NULL, len < cap ? cap - len : 0);
                    if (len == was) ks_cat(out, cap, &len, "(no stamp differs from that lookup's under %s)", ks_policy_name(policy));
                } else {
                    before_at = -1;
                }
                kcache_key_free(&then);
            }
            if (before_at < 0) ks_cat(out, cap, &len, "a dependency changed (the stored stamps are no longer in the index)");
        }
        if (at >= 0) kcache_key_free(&stored);
        break;
    }
    case KCACHE_REASON_EVICTED: {
        int64_t when = ks_cf_evicted(cf, m->digest);
        for (i = 0; i < ks_n(ix, KCACHE_INDEX_GONE) && !when; i++)
            if (ks_same(ks_item(ix, KCACHE_INDEX_GONE, i)->digest, m->digest)) when = ks_item(ix, KCACHE_INDEX_GONE, i)->when;
        ks_time(t, sizeof t, when);
        ks_cat(out, cap, &len, "evicted by the size limit%s%s", when > 1 ? " at " : "", when > 1 ? t : "");
        break;
    }
    case KCACHE_REASON_COLD:
        ks_cat(out, cap, &len, "cold: the unit had no stored overload then");
        break;
    default:
        ks_cat(out, cap, &len, "%s", ks_reason_text(m->reason));
        break;
    }
    kcache_key_free(&now);
    if (len >= cap && cap > 4) memcpy(out + cap - 4, "...", 4);
}

/* ---------------------------------------------------------------------------------------- */
/* The report of one unit's index.                                                           */

typedef struct ks_store_ref {
    kcache_reader *r;        /* the store the index belongs to, or NULL */
    ks_cf cf;
    char path[4096];         /* its absolute path, "" when none */
    uint32_t owner;          /* its directory's owner: whose dependency files are read (and root's) */
} ks_store_ref;

/* What checking one live overload found. */
typedef struct ks_over {
    const kcache_index_item *it;
    const kcache_key *key;   /* the entry's key record when it decodes, else the index's; NULL: neither */
    kcache_key ikey;         /* the index's record decoded (always freed) */
    ks_entry e;              /* (its key always freed) */
    int entry;               /* 1 read, 0 absent, -1 not looked for */
    char entry_err[160];     /* the entry exists but cannot be read as one */
    int64_t evicted;
    int rec_differs;         /* the entry's key record is not the index's */
    ks_dep *deps;
    size_t ndeps;
    ks_verdict v;
} ks_over;

static void ks_over_free(ks_over *ov)
{
    kcache_key_free(&ov->ikey);
    ks_entry_free(&ov->e);
    free(ov->deps);
    memset(ov, 0, sizeof *ov);
}

/* Checks one live overload: its entry in the store (header, key, payload) and its dependencies. */
static void ks_over_check(const kcache_index_item *it, const ks_store_ref *st, const ki_opts *op, uint32_t owner, ks_over *ov)
{
    memset(ov, 0, sizeof *ov);
    ov->it = it;
    ov->entry = -1;
    kcache_key_init(&ov->e.key, NULL);
    if (st && st->r) {
        char rel[48], err[200];
        kcache_status s;
        kcache_entry_path(it->digest, rel, sizeof rel);
        s = ks_entry_read(st->r, rel, &ov->e, err, sizeof err);
        ov->entry = 1;
        if (s == KCACHE_ENOENT) { ov->entry = 0; ov->evicted = ks_cf_evicted(&st->cf, it->digest); }
        else if (s != KCACHE_OK && strncmp(err, "cannot open: ", 13) == 0) ki_fmt(ov->entry_err, sizeof ov->entry_err, "cannot open %s: %s", rel, err + 13);
        else if (s != KCACHE_OK) ki_fmt(ov->entry_err, sizeof ov->entry_err, "%s", err);
        else {
            kcache_hash128 rs = kcache_hash(it->record, it->record_len);
            if (ov->e.i.record_len != it->record_len || !ks_same(ov->e.i.record_sum, rs)) ov->rec_differs = 1;
            if (ov->e.i.record == 1) ov->key = &ov->e.key; /* the record kcache checks a lookup against */
        }
    }
    if (kcache_record_decode(it->record, it->record_len, &ov->ikey) == KCACHE_OK && !ov->key) ov->key = &ov->ikey;
    if (ov->key) ov->deps = ks_deps_of(ov->key, op, owner, &ov->ndeps);
    ks_verdict_of(ov->entry, &ov->e, ov->entry_err[0] ? ov->entry_err : NULL, ov->deps, ov->ndeps, ov->evicted, &ov->v);
    if (!ov->key && ov->v.code == KS_PRESENT) {
        ov->v.code = KS_CORRUPT;
        ki_fmt(ov->v.text, sizeof ov->v.text, "index record corrupt: its key record does not decode");
    }
}

static void ks_short_hex(kcache_hash128 d, char out[33])
{
    ks_hex(d, out);
    out[16] = 0;
}

static void ks_index_text(ki_out *o, const ks_index *ix, const char *file, const ks_store_ref *st, const ki_opts *op, uint32_t owner)
{
    uint32_t i;
    size_t counts[KS_NCODES];
    char t[64], sz[48], hx[33], line[800];
    memset(counts, 0, sizeof counts);
    ko_puts(o, "index      ");
    ks_wrap(o, file, 11, 11);
    ko_puts(o, "unit       ");
    ks_text(o, ix->unit, ix->log.unit_len);
    ko_putc(o, '\n');
    ks_size(sz, sizeof sz, ix->log.bytes);
    ko_printf(o, "log        %zu record%s, %s", ix->log.records, ix->log.records == 1 ? "" : "s", sz);
    if (ix->log.rewritten_at) { ks_size(sz, sizeof sz, ix->log.rewritten_at); ko_printf(o, " (rewritten at %s)", sz); }
    ko_putc(o, '\n');
    if (ix->log.damaged_bytes)
        ko_printf(o, "           damaged: %zu byte%s in %zu place%s do%s not decode as records (a torn\n"
                     "           tail or damage: kcache skips %s and reads on)\n",
                  ix->log.damaged_bytes, ix->log.damaged_bytes == 1 ? "" : "s", ix->log.damaged_places, ix->log.damaged_places == 1 ? "" : "s",
                  ix->log.damaged_bytes == 1 ? "es" : "", ix->log.damaged_bytes == 1 ? "it" : "them");
    if (st && st->path[0]) { ko_puts(o, "store      "); ks_wrap(o, st->path, 11, 11); }
    else ko_puts(o, "store      none (the index is not inside a store's i/XX/): entries not checked\n");
    ko_printf(o, "stamps     %s (%s)\n", ks_policy_name(op->stamp), op->stamp_from);
    ko_printf(o, "overloads  %u live\n", ks_n(ix, KCACHE_INDEX_LIVE));
    for (i = 0; i < ks_n(ix, KCACHE_INDEX_LIVE) && !o->full; i++) {
        ks_over ov;
        const kcache_index_item *it = ks_item(ix, KCACHE_INDEX_LIVE, i);
        ks_over_check(it, st, op, owner, &ov);
        counts[ov.v.code]++;
        if (i < KS_SHOW_MAX) {
            ks_short_hex(it->digest, hx);
            ks_time(t, sizeof t, it->when);
            ks_size(sz, sizeof sz, it->size);
            ko_printf(o, "  [%u] %s  stored %s, %s\n", i + 1, hx, t, sz);
            if (ov.key) ks_fields_text(o, ov.key, ov.deps, 6);
            if (ov.rec_differs) ko_puts(o, "      note: the entry's key record is not the index's (the entry's is shown)\n");
            ki_fmt(line, sizeof line, "verdict: %s", ov.v.text);
            ko_puts(o, "      ");
            ks_wrap(o, line, 6, 15);
        }
        ks_over_free(&ov);
    }
    if (ks_n(ix, KCACHE_INDEX_LIVE) > KS_SHOW_MAX) ko_printf(o, "  ... %u more not shown\n", ks_n(ix, KCACHE_INDEX_LIVE) - KS_SHOW_MAX);
    ko_printf(o, "gone       %u", ks_n(ix, KCACHE_INDEX_GONE));
    if (ix->log.dropped[KCACHE_INDEX_GONE]) ko_printf(o, " (and %zu older ones kcache forgets)", ix->log.dropped[KCACHE_INDEX_GONE]);
    ko_putc(o, '\n');
    for (i = 0; i < ks_n(ix, KCACHE_INDEX_GONE) && !o->full; i++) {
        const kcache_index_item *it = ks_item(ix, KCACHE_INDEX_GONE, i);
        kcache_key k;
        ks_short_hex(it->digest, hx);
        ks_time(t, sizeof t, it->when);
        ki_fmt(line, sizeof line, "%s  %s  %s: %s", t, hx, ks_reason_word(it->reason), ks_reason_text(it->reason));
        ko_puts(o, "  ");
        ks_wrap(o, line, 2, 6);
        if (kcache_record_decode(it->record, it->record_len, &k) == KCACHE_OK) ks_fields_text(o, &k, NULL, 6);
        else if (it->record_len) ko_puts(o, "      (its key record does not decode)\n");
        kcache_key_free(&k);
    }
    ko_printf(o, "misses     %u traced", ks_n(ix, KCACHE_INDEX_MISSED));
    if (ix->log.dropped[KCACHE_INDEX_MISSED]) ko_printf(o, " (and %zu older ones kcache forgets)", ix->log.dropped[KCACHE_INDEX_MISSED]);
    ko_puts(o, ks_n(ix, KCACHE_INDEX_MISSED) ? "\n" : " (KCACHE_TRACE=1 keeps them)\n");
    for (i = ks_n(ix, KCACHE_INDEX_MISSED); i-- > 0 && !o->full;) {
        const kcache_index_item *it = ks_item(ix, KCACHE_INDEX_MISSED, i);
        char why[600];
        ks_time(t, sizeof t, it->when);
        ko_printf(o, "  %s  pid %u  %s\n", t, (unsigned)it->pid, ks_reason_word(it->reason));
        ks_explain_miss(ix, it, st ? &st->cf : NULL, op->stamp, why, sizeof why);
        ko_puts(o, "      ");
        ks_wrap(o, why, 6, 6);
    }
    {
        size_t len, c;
        const char *sep = "";
        len = (size_t)ki_fmt(line, sizeof line, "%u overload%s: ", ks_n(ix, KCACHE_INDEX_LIVE), ks_n(ix, KCACHE_INDEX_LIVE) == 1 ? "" : "s");
        for (c = 0; c < KS_NCODES; c++) {
            if (!counts[c]) continue;
            len += (size_t)ki_fmt(line + len, len < sizeof line ? sizeof line - len : 0, "%s%zu %s", sep, counts[c], ks_code_name[c]);
            sep = ", ";
            if (len >= sizeof line) break;
        }
        if (!ks_n(ix, KCACHE_INDEX_LIVE)) ki_fmt(line, sizeof line, "no live overload: the next lookup of this unit compiles");
        ko_puts(o, "verdict    ");
        ks_wrap(o, line, 11, 11);
    }
}

static void ks_item_json_head(ki_out *o, const kcache_index_item *it)
{
    ko_puts(o, "{\"digest\": ");
    ks_json_hex(o, it->digest);
    ko_puts(o, ", ");
    ks_json_time(o, "when", it->when);
    ko_printf(o, ", \"payload_bytes\": %llu", (unsigned long long)it->size);
}

static void ks_index_json(ki_out *o, const ks_index *ix, const char *file, const ks_store_ref *st, const ki_opts *op, uint32_t owner)
{
    uint32_t i;
    size_t counts[KS_NCODES], c;
    memset(counts, 0, sizeof counts);
    ko_puts(o, "{\n  \"format\": \"kcache-index\",\n  \"file\": ");
    ko_json_cstr(o, file);
    ko_puts(o, ",\n  \"store\": ");
    ko_json_cstr(o, st && st->path[0] ? st->path : NULL);
    ko_puts(o, ",\n  \"unit\": ");
    ko_json_str(o, (const unsigned char *)ix->unit, ix->log.unit_len);
    ko_printf(o, ",\n  \"log\": {\"bytes\": %zu, \"records\": %zu, \"rewritten_at\": %llu, \"damaged_bytes\": %zu, \"damaged_places\": %zu, "
                 "\"records_by_kind\": {\"live\": %zu, \"gone\": %zu, \"missed\": %zu, \"forgotten\": %zu}}",
              ix->log.bytes, ix->log.records, (unsigned long long)ix->log.rewritten_at, ix->log.damaged_bytes, ix->log.damaged_places, ix->log.by_kind[0], ix->log.by_kind[1], ix->log.by_kind[2],
              ix->log.by_kind[3]);
    ko_printf(o, ",\n  \"stamp_policy\": \"%s\"", ks_policy_name(op->stamp));
    ko_puts(o, ",\n  \"overloads\": [");
    for (i = 0; i < ks_n(ix, KCACHE_INDEX_LIVE) && !o->full; i++) {
        ks_over ov;
        const kcache_index_item *it = ks_item(ix, KCACHE_INDEX_LIVE, i);
        ks_over_check(it, st, op, owner, &ov);
        counts[ov.v.code]++;
        if (i < KS_SHOW_MAX) {
            ko_puts(o, i ? ",\n    " : "\n    ");
            ks_item_json_head(o, it);
            ko_puts(o, ", \"fields\": ");
            if (ov.key) ks_fields_json(o, ov.key, ov.deps);
            else ko_puts(o, "null");
            ko_printf(o, ", \"entry\": {\"state\": \"%s\"", ov.entry < 0 ? "unchecked" : ov.entry == 0 ? "missing"
                                                          : (ov.entry_err[0] || ks_entry_header_bad(&ov.e) || ov.e.i.payload == 0) ? "corrupt" : "present");
            ko_puts(o, ", \"problem\": ");
            ko_json_cstr(o, ov.entry_err[0] ? ov.entry_err : ov.entry > 0 && ov.e.i.problem[0] ? ov.e.i.problem : NULL);
            ko_printf(o, ", \"record_differs_from_index\": %s", ov.rec_differs ? "true" : "false");
            ko_puts(o, ", ");
            ks_json_time(o, "evicted", ov.evicted > 1 ? ov.evicted : 0);
            ko_printf(o, "}, \"verdict\": {\"code\": \"%s\", \"text\": ", ks_code_name[ov.v.code]);
            ko_json_cstr(o, ov.v.text);
            ko_puts(o, "}}");
        }
        ks_over_free(&ov);
    }
    if (ks_n(ix, KCACHE_INDEX_LIVE)) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"overloads_total\": %u", ks_n(ix, KCACHE_INDEX_LIVE));
    ko_puts(o, ",\n  \"gone\": [");
    for (i = 0; i < ks_n(ix, KCACHE_INDEX_GONE) && !o->full; i++) {
        const kcache_index_item *it = ks_item(ix, KCACHE_INDEX_GONE, i);
        ko_puts(o, i ? ",\n    " : "\n    ");
        ks_item_json_head(o, it);
        ko_printf(o, ", \"reason\": \"%s\", \"reason_text\": ", ks_reason_word(it->reason));
        ko_json_cstr(o, ks_reason_text(it->reason));
        ko_puts(o, ", \"fields\": ");
        ks_record_fields_json(o, it);
        ko_puts(o, "}");
    }
    if (ks_n(ix, KCACHE_INDEX_GONE)) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"gone_forgotten\": %zu", ix->log.dropped[KCACHE_INDEX_GONE]);
    ko_puts(o, ",\n  \"misses\": [");
    for (i = ks_n(ix, KCACHE_INDEX_MISSED); i-- > 0 && !o->full;) {
        const kcache_index_item *it = ks_item(ix, KCACHE_INDEX_MISSED, i);
        char why[600];
        ko_puts(o, i + 1 < ks_n(ix, KCACHE_INDEX_MISSED) ? ",\n    " : "\n    ");
        ks_item_json_head(o, it);
        ko_printf(o, ", \"pid\": %u, \"reason\": \"%s\", \"explanation\": ", (unsigned)it->pid, ks_reason_word(it->reason));
        ks_explain_miss(ix, it, st ? &st->cf : NULL, op->stamp, why, sizeof why);
        ko_json_cstr(o, why);
        ko_puts(o, ", \"fields\": ");
        ks_record_fields_json(o, it);
        ko_puts(o, "}");
    }
    if (ks_n(ix, KCACHE_INDEX_MISSED)) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"misses_forgotten\": %zu", ix->log.dropped[KCACHE_INDEX_MISSED]);
    ko_puts(o, ",\n  \"verdict\": {");
    for (c = 0; c < KS_NCODES; c++) ko_printf(o, "%s\"%s\": %zu", c ? ", " : "", ks_code_name[c], counts[c]);
    ko_puts(o, "}\n}\n");
}

/* ---------------------------------------------------------------------------------------- */
/* The report of one entry file.                                                             */

static void ks_entry_report(ki_out *o, const ks_entry *e, const char *file, const ki_opts *op, uint32_t owner)
{
    ks_dep *deps = NULL;
    size_t ndeps = 0;
    ks_verdict v;
    char hx[33], t[64], s1[48], s2[48];
    if (e->i.record == 1) deps = ks_deps_of(&e->key, op, owner, &ndeps);
    ks_verdict_of(1, e, NULL, deps, ndeps, 0, &v);
    if (v.code == KS_PRESENT && strncmp(v.text, "present", 7) == 0) {
        char rest[sizeof v.text];
        ki_fmt(rest, sizeof rest, "%s", v.text + 7);
        ki_fmt(v.text, sizeof v.text, "sound%s", rest);
    }
    ks_hex(e->i.digest, hx);
    ks_time(t, sizeof t, e->i.created);
    if (op->json) {
        ko_puts(o, "{\n  \"format\": \"kcache-entry\",\n  \"file\": ");
        ko_json_cstr(o, file);
        ko_puts(o, ",\n  \"unit\": ");
        if (e->i.record == 1) ko_json_cstr(o, e->key.unit); else ko_puts(o, "null");
        ko_printf(o, ",\n  \"digest\": \"%s\",\n  ", hx);
        ks_json_time(o, "created", e->i.created);
        ko_printf(o, ",\n  \"version\": %u, \"flags\": %u, \"header_bytes\": %u, \"record_bytes\": %u, \"payload_bytes\": %llu, "
                     "\"file_bytes\": %llu",
                  e->i.version, e->i.flags, e->i.header_len, e->i.record_len, (unsigned long long)e->i.payload_len, (unsigned long long)e->i.file_size);
        ko_puts(o, ",\n  \"payload_checksum\": ");
        ks_json_hex(o, e->i.payload_sum);
        ko_printf(o, ",\n  \"checks\": {\"lengths\": %s, \"header_checksum\": ", e->i.lengths_ok ? "true" : "false");
        ko_json_tri(o, e->i.header_sum);
        ko_puts(o, ", \"padding\": "); ko_json_tri(o, e->i.padding);
        ko_puts(o, ", \"key_record\": "); ko_json_tri(o, e->i.record);
        ko_puts(o, ", \"record_digest\": "); ko_json_tri(o, e->i.record_digest);
        ko_puts(o, ", \"file_name_digest\": "); ko_json_tri(o, e->i.name_digest);
        ko_puts(o, ", \"payload_checksum\": "); ko_json_tri(o, e->i.payload);
        ko_puts(o, "},\n  \"problem\": ");
        ko_json_cstr(o, e->i.problem[0] ? e->i.problem : NULL);
        ko_puts(o, ",\n  \"fields\": ");
        if (e->i.record == 1) ks_fields_json(o, &e->key, deps); else ko_puts(o, "null");
        ko_printf(o, ",\n  \"verdict\": {\"code\": \"%s\", \"text\": ", v.code == KS_PRESENT ? "sound" : ks_code_name[v.code]);
        ko_json_cstr(o, v.text);
        ko_puts(o, "}\n}\n");
    } else {
        ko_puts(o, "entry      ");
        ks_wrap(o, file, 11, 11);
        ko_puts(o, "unit       ");
        if (e->i.record == 1) ks_text(o, e->key.unit, strlen(e->key.unit)); else ko_puts(o, "? (the key record does not decode)");
        ko_printf(o, "\ndigest     %s%s\n", hx, e->i.name_digest == 1 ? " (the file name's)" : e->i.name_digest == 0 ? " (NOT the file name's)" : "");
        ko_printf(o, "created    %s\n", t);
        ks_size(s1, sizeof s1, e->i.payload_len);
        ks_size(s2, sizeof s2, e->i.file_size);
        ko_printf(o, "sizes      header %u bytes (key record %u), payload %s, file %s\n", e->i.header_len, e->i.record_len, s1, s2);
        ko_printf(o, "checks     lengths %s, header checksum %s, padding %s,\n", e->i.lengths_ok ? "ok" : "BAD",
                  e->i.header_sum == 1 ? "ok" : e->i.header_sum == 0 ? "FAILS" : "not checkable", e->i.padding == 1 ? "zero" : e->i.padding == 0 ? "NOT ZERO" : "not checkable");
        ko_printf(o, "           key record %s, payload checksum %s\n",
                  e->i.record != 1 ? (e->i.record == 0 ? "DOES NOT DECODE" : "not checkable") : e->i.record_digest == 1 ? "ok (its digest is the header's)" : "ok but its digest is NOT the header's",
                  e->i.payload == 1 ? "ok" : e->i.payload == 0 ? "FAILS" : "not checkable");
        if (e->i.record == 1) {
            ko_printf(o, "fields     %u\n", e->key.count);
            ks_fields_text(o, &e->key, deps, 2);
        }
        ko_puts(o, "verdict    ");
        ks_wrap(o, v.text, 11, 11);
    }
    free(deps);
}

/* Decodes and reports one entry held in memory (the fuzz target's way in).  0, or 2 with err. */
static KI_MAYBE_UNUSED int ki_entry_report_mem(const unsigned char *buf, size_t len, const char *file, const ki_opts *op, ki_out *o,
                                               char *err, size_t errcap)
{
    ks_entry e;
    if (kcache_entry_decode(buf, len, len, &e.i, &e.key) != KCACHE_OK) {
        ki_fmt(err, errcap, "%s", e.i.problem);
        ks_entry_free(&e);
        return 2;
    }
    ks_entry_report(o, &e, file, op, (uint32_t)geteuid());
    ks_entry_free(&e);
    return 0;
}

/* Reports one decoded index, with or without its store (owner: whose dependency files are read). */
static void ks_index_report(kcache_index *x, const char *file, const ks_store_ref *st, uint32_t owner, const ki_opts *op, ki_out *o)
{
    ks_index ix;
    ks_index_set(&ix, x);
    if (op->json) ks_index_json(o, &ix, file, st, op, owner);
    else ks_index_text(o, &ix, file, st, op, owner);
    ks_index_free(&ix);
}

/* Decodes and reports one index held in memory, with or without its store (the fuzz target's way
   in).  0, or 2 with err. */
static KI_MAYBE_UNUSED int ki_index_report_mem(const unsigned char *buf, size_t len, const char *file, const ks_store_ref *st,
                                               const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    kcache_index *x;
    if (kcache_index_decode(buf, len, &x, err, errcap) != KCACHE_OK) return 2;
    ks_index_report(x, file, st, st ? st->owner : (uint32_t)geteuid(), op, o);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* A store's summary.                                                                        */

typedef struct ks_unit {
    kcache_hash128 id;           /* xxh128 of the name: its index file's name */
    char *name;                  /* NULL until known */
    size_t nlen;
    uint64_t entries, bytes;
    uint32_t live, gone, missed, live_missing;
    int has_index, index_bad;
} ks_unit;

typedef struct ks_miss {
    int64_t when;
    uint32_t pid, reason;
    char unit[KCACHE_UNIT_MAX];
    size_t ulen;
    char why[400];
} ks_miss;

typedef struct ks_bad {
    char file[48];
    char unit[KCACHE_UNIT_MAX];
    char why[200];
} ks_bad;

typedef struct ks_store {
    ks_store_ref ref;
    int have_cf, have_e, have_i, have_tmp;
    int dir_refused;             /* kcache refuses this directory: another owner, or writable by others */
    int dir_root;                /* root's, read by another user: kcache uses it read-only */
    char dir_why[120];
    uint64_t entries, bytes, stray, stray_bytes, misplaced, unreadable;
    uint64_t no_slot, size_differs;
    int table_read;
    uint64_t slots_used, slot_bytes, slots_without_file;
    int64_t oldest, newest;
    kcache_hash128 oldest_d, newest_d;
    uint64_t verified, bad, indexes_verified;
    ks_bad badlist[KS_SHOW_BAD];
    uint64_t indexes, bad_indexes, torn_indexes, misplaced_indexes, live_missing;
    uint64_t tmp_files, tmp_orphaned, tmp_live, tmp_bytes, tmp_orphan_bytes;
    ks_unit *units;
    size_t nunits, ucap, tcap, units_over;
    uint32_t *utable;
    ks_miss misses[KS_SHOW_MISSES];
    size_t nmisses;
    uint64_t misses_total;
} ks_store;

static void ks_store_free(ks_store *S)
{
    size_t i;
    for (i = 0; i < S->nunits; i++) free(S->units[i].name);
    free(S->units);
    free(S->utable);
    kcache_reader_close(S->ref.r);
    S->units = NULL;
    S->utable = NULL;
    S->ref.r = NULL;
}

/* The unit with this id, added when new; NULL past KS_MAX_UNITS (counted in units_over). */
static ks_unit *ks_unit_get(ks_store *S, kcache_hash128 id)
{
    size_t h, i;
    if (S->tcap) {
        for (h = (size_t)id.lo & (S->tcap - 1); S->utable[h] != 0xffffffffu; h = (h + 1) & (S->tcap - 1))
            if (ks_same(S->units[S->utable[h]].id, id)) return &S->units[S->utable[h]];
    }
    if (S->nunits >= KS_MAX_UNITS) { S->units_over++; return NULL; }
    if ((S->nunits + 1) * 2 > S->tcap) { /* keep the table at most half full */
        size_t nt = S->tcap ? S->tcap * 2 : 1024;
        uint32_t *t = (uint32_t *)malloc(sizeof *t * nt);
        if (!t) { S->units_over++; return NULL; }
        memset(t, 0xff, sizeof *t * nt);
        for (i = 0; i < S->nunits; i++) {
            for (h = (size_t)S->units[i].id.lo & (nt - 1); t[h] != 0xffffffffu; h = (h + 1) & (nt - 1)) {
            }
            t[h] = (uint32_t)i;
        }
        free(S->utable);
        S->utable = t;
        S->tcap = nt;
    }
    if (S->nunits == S->ucap) {
        size_t nc = S->ucap ? S->ucap * 2 : 256;
        ks_unit *nu = (ks_unit *)realloc(S->units, sizeof *nu * nc);
        if (!nu) { S->units_over++; return NULL; }
        S->units = nu;
        S->ucap = nc;
    }
    for (h = (size_t)id.lo & (S->tcap - 1); S->utable[h] != 0xffffffffu; h = (h + 1) & (S->tcap - 1)) {
    }
    memset(&S->units[S->nunits], 0, sizeof S->units[0]);
    S->units[S->nunits].id = id;
    S->utable[h] = (uint32_t)S->nunits;
    return &S->units[S->nunits++];
}

static ks_unit *ks_unit_named(ks_store *S, const char *name, size_t len)
{
    ks_unit *u = ks_unit_get(S, kcache_hash(name, len));
    if (u && !u->name && (u->name = (char *)malloc(len + 1)) != NULL) {
        memcpy(u->name, name, len);
        u->name[len] = 0;
        u->nlen = len;
    }
    return u;
}

/* The unit an entry belongs to, from the start of its key record (one small read). */
static int ks_entry_unit(kcache_reader *r, kcache_hash128 d, char *out, size_t *len)
{
    char rel[48];
    kcache_entry_path(d, rel, sizeof rel);
    if (kcache_entry_unit(r, rel, out, KCACHE_UNIT_MAX) != KCACHE_OK) return 0;
    *len = strlen(out);
    return 1;
}
/* Whether something is where the entry of d belongs. */
static int ks_entry_exists(kcache_reader *r, kcache_hash128 d)
{
    kcache_status s = kcache_entry_stat(r, d, NULL);
    return s == KCACHE_OK || s == KCACHE_EUNSAFE;
}

/* Keeps the newest KS_SHOW_MISSES traced misses of the store. */
static void ks_miss_offer(ks_store *S, const ks_index *ix, const kcache_index_item *m, int policy)
{
    ks_miss *slot = NULL;
    size_t i;
    S->misses_total++;
    if (S->nmisses < KS_SHOW_MISSES) slot = &S->misses[S->nmisses++];
    else {
        for (i = 0; i < S->nmisses; i++)
            if (!slot || S->misses[i].when < slot->when) slot = &S->misses[i];
        if (slot->when >= m->when) return;
    }
    slot->when = m->when;
    slot->pid = m->pid;
    slot->reason = m->reason;
    memcpy(slot->unit, ix->unit, ix->log.unit_len + 1);
    slot->ulen = ix->log.unit_len;
    ks_explain_miss(ix, m, &S->ref.cf, policy, slot->why, sizeof slot->why);
}

static int ks_miss_cmp(const void *a, const void *b)
{
    const ks_miss *x = (const ks_miss *)a, *y = (const ks_miss *)b;
    return x->when > y->when ? -1 : x->when < y->when;
}
static int ks_unit_cmp(const void *a, const void *b)
{
    const ks_unit *x = (const ks_unit *)a, *y = (const ks_unit *)b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    if (x->entries != y->entries) return x->entries > y->entries ? -1 : 1;
    if (!x->name || !y->name) return !x->name - !y->name;
    return strcmp(x->name, y->name);
}

static void ks_walk_entries(ks_store *S, const ki_opts *op)
{
    kcache_entry_walk *w;
    kcache_entry_file f;
    if (kcache_entry_walk_open(S->ref.r, &w) != KCACHE_OK) return;
    while (kcache_entry_walk_next(w, &f) == KCACHE_OK) {
        char ubuf[KCACHE_UNIT_MAX];
        size_t ulen = 0;
        int got_unit = 0;
        kcache_use_row row;
        kcache_status us;
        if (!f.named || f.kind != KCACHE_KIND_FILE) {
            if (f.kind != KCACHE_KIND_DIR) { S->stray++; S->stray_bytes += f.size; }
            continue;
        }
        S->entries++; /* counted as kcache's scan counts it, even in the wrong shard */
        S->bytes += f.size;
        if (S->table_read) {
            if (kcache_read_use(S->ref.r, f.digest, &row) != KCACHE_OK) S->no_slot++;
            else if (row.size != f.size) S->size_differs++;
        }
        if (f.other_shard) { S->misplaced++; continue; } /* but a lookup never finds it */
        us = kcache_entry_unit(S->ref.r, f.path, ubuf, sizeof ubuf);
        if (us == KCACHE_ENOENT || us == KCACHE_EUNSAFE || us == KCACHE_EIO) { S->unreadable++; continue; }
        got_unit = us == KCACHE_OK;
        if (got_unit) ulen = strlen(ubuf);
        if (op->verify) {
            ks_entry e;
            char err[200];
            kcache_status rc = ks_entry_read(S->ref.r, f.path, &e, err, sizeof err);
            S->verified++;
            if (rc != KCACHE_OK || e.i.problem[0]) {
                if (S->bad < KS_SHOW_BAD) {
                    ks_bad *b = &S->badlist[S->bad];
                    ki_fmt(b->file, sizeof b->file, "%s", f.path);
                    ki_fmt(b->why, sizeof b->why, "%s", rc != KCACHE_OK ? err : e.i.problem);
                    b->unit[0] = 0;
                    if (got_unit) memcpy(b->unit, ubuf, ulen + 1);
                }
                S->bad++;
            }
            ks_entry_free(&e);
        }
        if (got_unit) {
            ks_unit *u = ks_unit_named(S, ubuf, ulen);
            if (u) { u->entries++; u->bytes += f.size; }
        }
    }
    kcache_entry_walk_close(w);
}

/* Streams the use table: slots in use, their bytes, oldest and newest use, slots without a file. */
static void ks_walk_table(ks_store *S)
{
    static kcache_use_row rows[2048];
    uint64_t i = 0, n = S->ref.cf.a.use_slots;
    while (i < n) {
        unsigned want = n - i < 2048 ? (unsigned)(n - i) : 2048, got = 0, k;
        if (kcache_read_use_table(S->ref.r, i, want, rows, &got) != KCACHE_OK) { S->table_read = 0; return; }
        for (k = 0; k < got; k++) {
            kcache_hash128 d = rows[k].digest;
            int64_t use = rows[k].last_use;
            S->slots_used++;
            S->slot_bytes += rows[k].size;
            if (!S->oldest || use < S->oldest) { S->oldest = use; S->oldest_d = d; }
            if (!S->newest || use > S->newest) { S->newest = use; S->newest_d = d; }
            if (!ks_entry_exists(S->ref.r, d)) S->slots_without_file++;
        }
        i += want;
    }
}

static void ks_walk_indexes(ks_store *S, const ki_opts *op)
{
    kcache_index_walk *w;
    kcache_index_file f;
    if (kcache_index_walk_open(S->ref.r, &w) != KCACHE_OK) return;
    while (kcache_index_walk_next(w, &f) == KCACHE_OK) {
        ks_index ix;
        kcache_index *x;
        ks_unit *u;
        char err[200];
        uint32_t k;
        S->indexes++;
        if (kcache_index_load(S->ref.r, f.path, &x, err, sizeof err) != KCACHE_OK) {
            S->bad_indexes++;
            if ((u = ks_unit_get(S, f.name)) != NULL) { u->has_index = 1; u->index_bad = 1; }
            continue;
        }
        ks_index_set(&ix, x);
        if (op->verify) S->indexes_verified++;
        if (!ks_same(kcache_hash(ix.unit, ix.log.unit_len), f.name) || strlen(ix.unit) != ix.log.unit_len || f.other_shard) {
            S->misplaced_indexes++; /* kcache never reads it under this name */
        } else if ((u = ks_unit_named(S, ix.unit, ix.log.unit_len)) != NULL) {
            u->has_index = 1;
            u->live = ks_n(&ix, KCACHE_INDEX_LIVE);
            u->gone = ks_n(&ix, KCACHE_INDEX_GONE);
            u->missed = ks_n(&ix, KCACHE_INDEX_MISSED);
            for (k = 0; k < u->live; k++)
                if (!ks_entry_exists(S->ref.r, ks_item(&ix, KCACHE_INDEX_LIVE, k)->digest)) u->live_missing++;
            S->live_missing += u->live_missing;
        }
        if (ix.log.damaged_bytes) S->torn_indexes++;
        for (k = 0; k < ks_n(&ix, KCACHE_INDEX_MISSED); k++) ks_miss_offer(S, &ix, ks_item(&ix, KCACHE_INDEX_MISSED, k), op->stamp);
        ks_index_free(&ix);
    }
    kcache_index_walk_close(w);
}

static void ks_walk_tmp(ks_store *S)
{
    kcache_temp_files t;
    if (kcache_read_temp_files(S->ref.r, &t) != KCACHE_OK) return;
    S->tmp_files = t.files;
    S->tmp_bytes = t.bytes;
    S->tmp_orphaned = t.orphaned;
    S->tmp_orphan_bytes = t.orphaned_bytes;
    S->tmp_live = t.in_progress;
}

/* Opens a store read-only: its directory, config.file.  0, or -1 with a message. */
static int ks_store_open(const char *path, ks_store_ref *ref, char *err, size_t errcap)
{
    kcache_status s;
    memset(ref, 0, sizeof *ref);
    if ((s = kcache_reader_open(&ref->r, path)) != KCACHE_OK) {
        ki_fmt(err, errcap, "cannot open the directory: %s", s == KCACHE_ENOENT ? strerror(ENOENT) : s == KCACHE_EUNSAFE ? strerror(ENOTDIR)
                                                              : s == KCACHE_ENOMEM ? strerror(ENOMEM) : strerror(errno));
        ref->r = NULL;
        return -1;
    }
    if (ki_abspath(path, ref->path, sizeof ref->path) != 0) ki_fmt(ref->path, sizeof ref->path, "%s", path);
    ref->owner = kcache_reader_owner(ref->r);
    if (!kcache_reader_is_store(ref->r)) {
        DIR *dp = opendir(path);
        int readable = dp != NULL && readdir(dp) != NULL;
        if (dp) closedir(dp);
        ki_fmt(err, errcap, "%s", readable ? "not a kcache store (no config.file, e/ or i/)" : "cannot read the directory");
        kcache_reader_close(ref->r);
        ref->r = NULL;
        return -1;
    }
    ks_cf_read(ref->r, &ref->cf);
    return 0;
}

/* Problems (kcache will repair or refuse something) and notes (it cleans them up as it goes). */
typedef struct ks_list { char item[12][240]; int n; } ks_list;
static void ks_add(ks_list *l, const char *fmt, ...) KI_PRINTF(2, 3);
static void ks_add(ks_list *l, const char *fmt, ...)
{
    va_list ap;
    if (l->n >= 12) return;
    va_start(ap, fmt);
    vsnprintf(l->item[l->n++], sizeof l->item[0], fmt, ap);
    va_end(ap);
}

static void ks_store_assess(const ks_store *S, ks_list *P, ks_list *N)
{
    const ks_cf *c = &S->ref.cf;
    char a[48], b[48];
    memset(P, 0, sizeof *P);
    memset(N, 0, sizeof *N);
    if (S->dir_refused) ks_add(P, "kcache refuses this directory (%s): memory only", S->dir_why);
    if (S->dir_root) ks_add(N, "root's: kcache reads it for you and never writes it (a site-wide store, or a layer: KCACHE_LAYERS)");
    if (!c->present) ks_add(P, "config.file %s: the next writer rebuilds it by a scan", c->why[0] ? c->why : "missing");
    else if (!c->a.valid) ks_add(P, "config.file damaged (%s): the next writer rebuilds it by a scan", c->why);
    if (c->present && c->a.busy) ks_add(P, "config.file marked busy: a writer is updating it now, or died mid-update (the next one rebuilds it)");
    if (c->present && c->a.magic_ok && (c->a.bytes != S->bytes || c->a.entries != S->entries)) {
        ks_size(a, sizeof a, c->a.bytes);
        ks_size(b, sizeof b, S->bytes);
        ks_add(P, "the accounting (%s, %llu entries) differs from the entries (%s, %llu entries)", a, (unsigned long long)c->a.entries, b,
               (unsigned long long)S->entries);
    }
    if (S->table_read && (S->no_slot || S->slots_without_file || S->size_differs))
        ks_add(P, "the use table disagrees with e/: %llu entries without a slot, %llu slots without an entry, %llu sizes differ",
               (unsigned long long)S->no_slot, (unsigned long long)S->slots_without_file, (unsigned long long)S->size_differs);
    if (c->present && c->a.valid && c->a.limit && (c->a.bytes > c->a.limit || S->bytes > c->a.limit)) {
        ks_size(a, sizeof a, S->bytes > c->a.bytes ? S->bytes : c->a.bytes);
        ks_size(b, sizeof b, c->a.limit);
        ks_add(P, "over the limit: %s > %s", a, b);
    }
    if (S->bad) ks_add(P, "%llu corrupt entr%s (kcache rejects and removes %s at the next lookup)", (unsigned long long)S->bad,
                       S->bad == 1 ? "y" : "ies", S->bad == 1 ? "it" : "them");
    if (S->unreadable) ks_add(P, "%llu entries cannot be opened", (unsigned long long)S->unreadable);
    if (S->misplaced) ks_add(P, "%llu entries in the wrong shard (kcache never finds them)", (unsigned long long)S->misplaced);
    if (S->bad_indexes) ks_add(P, "%llu index file%s do%s not decode (the next put of the unit rewrites it)", (unsigned long long)S->bad_indexes,
                               S->bad_indexes == 1 ? "" : "s", S->bad_indexes == 1 ? "es" : "");
    if (S->misplaced_indexes) ks_add(P, "%llu index files named for another unit", (unsigned long long)S->misplaced_indexes);
    if (S->stray) ks_add(N, "%llu stray files in e/ (kcache removes them at its next scan)", (unsigned long long)S->stray);
    if (S->tmp_orphaned) {
        ks_size(a, sizeof a, S->tmp_orphan_bytes);
        ks_add(N, "%llu orphaned temp file%s (%s; the next kcache_open removes them)", (unsigned long long)S->tmp_orphaned,
               S->tmp_orphaned == 1 ? "" : "s", a);
    }
    if (S->torn_indexes) ks_add(N, "%llu index log%s with damaged or torn records (kcache skips them; a rewrite drops them)",
                                (unsigned long long)S->torn_indexes, S->torn_indexes == 1 ? "" : "s");
    if (S->live_missing) ks_add(N, "%llu overloads listed live whose entry is gone (evicted: the next rewrite of their index lists them as gone)",
                                (unsigned long long)S->live_missing);
}

static void ks_unit_label(const ks_unit *u, char *out, size_t cap)
{
    ki_out t;
    memset(&t, 0, sizeof t);
    t.limit = 2048;
    if (u->name) ks_text(&t, u->name, u->nlen);
    else { char hx[33]; ks_hex(u->id, hx); ko_printf(&t, "? (index %.2s/%.8s...)", hx, hx); }
    ki_fmt(out, cap, "%s", t.buf ? t.buf : "");
    ko_free(&t);
}

static void ks_store_text(ki_out *o, ks_store *S, const ki_opts *op, const ks_list *P, const ks_list *N)
{
    const ks_cf *c = &S->ref.cf;
    char t[64], t2[64], a[48], b[48], line[1200], name[600];
    size_t i;
    int k;
    ko_puts(o, "store      ");
    ks_wrap(o, S->ref.path, 11, 11);
    ko_puts(o, "config     ");
    if (!c->present) ki_fmt(line, sizeof line, "config.file %s", c->why[0] ? c->why : "missing");
    else {
        ks_time(t, sizeof t, c->a.created);
        ki_fmt(line, sizeof line, "config.file %s: format %u, created %s, use table of %llu slots, generation %llu%s",
               c->a.valid ? "valid" : "DAMAGED", c->a.version, t, (unsigned long long)c->a.use_slots, (unsigned long long)c->a.generation,
               c->a.busy ? ", BUSY" : "");
        if (!c->a.valid) ki_fmt(line + strlen(line), sizeof line - strlen(line), " (%s: its numbers are not trusted)", c->why);
    }
    ks_wrap(o, line, 11, 11);
    if (c->present) {
        if (c->a.limit) { ks_size(a, sizeof a, c->a.limit); ko_printf(o, "limit      %s (%llu bytes; the last writer's)\n", a, (unsigned long long)c->a.limit); }
        else ko_puts(o, "limit      none (the last writer had no limit)\n");
        ks_size(a, sizeof a, c->a.bytes);
        ko_printf(o, "accounted  %s in %llu entr%s (%llu bytes)\n", a, (unsigned long long)c->a.entries, c->a.entries == 1 ? "y" : "ies",
                  (unsigned long long)c->a.bytes);
    }
    ks_size(a, sizeof a, S->bytes);
    ki_fmt(line, sizeof line, "%s in %llu entr%s (%llu bytes)", a, (unsigned long long)S->entries, S->entries == 1 ? "y" : "ies",
           (unsigned long long)S->bytes);
    if (c->present && c->a.magic_ok) {
        if (c->a.bytes == S->bytes && c->a.entries == S->entries) ki_fmt(line + strlen(line), sizeof line - strlen(line), ": as accounted");
        else
            ki_fmt(line + strlen(line), sizeof line - strlen(line), ": DIFFERS from the accounting by %+lld bytes, %+lld entries",
                   (long long)(S->bytes - c->a.bytes), (long long)(S->entries - c->a.entries));
    }
    ko_puts(o, "real       ");
    ks_wrap(o, line, 11, 11);
    if (S->table_read) {
        ks_size(a, sizeof a, S->slot_bytes);
        ki_fmt(line, sizeof line, "%llu of %llu slots used (%s)", (unsigned long long)S->slots_used, (unsigned long long)c->a.use_slots, a);
        if (!S->no_slot && !S->slots_without_file && !S->size_differs)
            ki_fmt(line + strlen(line), sizeof line - strlen(line), "; every entry has its slot");
        else
            ki_fmt(line + strlen(line), sizeof line - strlen(line), "; %llu entries without a slot, %llu slots without an entry, %llu sizes differ",
                   (unsigned long long)S->no_slot, (unsigned long long)S->slots_without_file, (unsigned long long)S->size_differs);
        ko_puts(o, "use table  ");
        ks_wrap(o, line, 11, 11);
        if (S->slots_used) {
            char u1[KCACHE_UNIT_MAX], u2[KCACHE_UNIT_MAX];
            size_t l1 = 0, l2 = 0;
            ks_unit fake;
            memset(&fake, 0, sizeof fake);
            ks_time(t, sizeof t, S->oldest);
            ks_time(t2, sizeof t2, S->newest);
            if (!ks_entry_unit(S->ref.r, S->oldest_d, u1, &l1)) { memcpy(u1, "?", 2); l1 = 1; }
            if (!ks_entry_unit(S->ref.r, S->newest_d, u2, &l2)) { memcpy(u2, "?", 2); l2 = 1; }
            fake.name = u1; fake.nlen = l1;
            ks_unit_label(&fake, name, sizeof name);
            ki_fmt(line, sizeof line, "oldest %s (unit %.60s),", t, name);
            ko_puts(o, "last use   ");
            ks_wrap(o, line, 11, 11);
            fake.name = u2; fake.nlen = l2;
            ks_unit_label(&fake, name, sizeof name);
            ki_fmt(line, sizeof line, "newest %s (unit %.60s)", t2, name);
            ko_puts(o, "           ");
            ks_wrap(o, line, 11, 11);
        }
    } else if (c->present) {
        ko_puts(o, "use table  not read (its size is not a use table's)\n");
    }
    if (c->present && c->a.magic_ok) {
        int64_t latest = 0;
        for (k = 0; k < (int)c->evlog_n; k++) if (c->evlog[k].when > latest) latest = c->evlog[k].when;
        ko_printf(o, "evictions  %llu", (unsigned long long)c->a.evictions);
        if (latest) { ks_time(t, sizeof t, latest); ko_printf(o, " (the log remembers %d; the latest at %s)", c->evlog_n, t); }
        ko_putc(o, '\n');
    }
    ko_printf(o, "units      %llu", (unsigned long long)(S->nunits + S->units_over));
    if (S->units_over) ko_printf(o, " (%llu not tracked: more than %d)", (unsigned long long)S->units_over, KS_MAX_UNITS);
    ko_putc(o, '\n');
    /* the index columns: overloads listed live (and of those, how many have no entry any more:
       evicted), gone, traced misses */
    if (S->nunits) ko_puts(o, "  unit                     entries      size   live evicted  gone missed\n");
    for (i = 0; i < S->nunits && i < KS_SHOW_UNITS && !o->full; i++) {
        const ks_unit *u = &S->units[i];
        char idx[80];
        ks_unit_label(u, name, sizeof name);
        if (strlen(name) > 24) memcpy(name + 21, "...", 4);
        ks_size(a, sizeof a, u->bytes);
        if (!u->has_index) ki_fmt(idx, sizeof idx, "  (no index)");
        else if (u->index_bad) ki_fmt(idx, sizeof idx, "  (index damaged)");
        else ki_fmt(idx, sizeof idx, "%6u %7u %5u %6u", u->live, u->live_missing, u->gone, u->missed);
        ko_printf(o, "  %-24s %7llu %9s %s\n", name, (unsigned long long)u->entries, a, idx);
    }
    if (S->nunits > KS_SHOW_UNITS) ko_printf(o, "  ... %zu more (--json lists up to %d)\n", S->nunits - KS_SHOW_UNITS, KS_SHOW_MAX);
    ko_printf(o, "indexes    %llu", (unsigned long long)S->indexes);
    if (S->bad_indexes || S->torn_indexes || S->misplaced_indexes)
        ko_printf(o, " (%llu damaged, %llu with damaged records, %llu misnamed)", (unsigned long long)S->bad_indexes, (unsigned long long)S->torn_indexes,
                  (unsigned long long)S->misplaced_indexes);
    ko_putc(o, '\n');
    ks_size(a, sizeof a, S->tmp_orphan_bytes);
    ks_size(b, sizeof b, S->tmp_bytes);
    if (!S->tmp_files) ki_fmt(line, sizeof line, "none");
    else
        ki_fmt(line, sizeof line, "%llu in tmp/ (%s): %llu orphaned (%s; their writer is gone or they are a day old: the next kcache_open removes them), %llu in progress",
               (unsigned long long)S->tmp_files, b, (unsigned long long)S->tmp_orphaned, a, (unsigned long long)S->tmp_live);
    ko_puts(o, "temp files ");
    ks_wrap(o, line, 11, 11);
    if (!S->misses_total) ko_puts(o, "misses     none traced (KCACHE_TRACE=1 keeps them)\n");
    else ko_printf(o, "misses     %llu traced (KCACHE_TRACE), newest first:\n", (unsigned long long)S->misses_total);
    for (i = 0; i < S->nmisses && !o->full; i++) {
        const ks_miss *m = &S->misses[i];
        ks_unit fake;
        memset(&fake, 0, sizeof fake);
        fake.name = (char *)m->unit;
        fake.nlen = m->ulen;
        ks_unit_label(&fake, name, sizeof name);
        ks_time(t, sizeof t, m->when);
        ki_fmt(line, sizeof line, "%s  %s  %s (pid %u)", t, name, ks_reason_word(m->reason), (unsigned)m->pid);
        ko_puts(o, "  ");
        ks_wrap(o, line, 2, 6);
        ko_puts(o, "      ");
        ks_wrap(o, m->why, 6, 6);
    }
    if (op->verify) {
        ko_printf(o, "verify     %llu entries read whole, %llu indexes: %llu bad entr%s\n", (unsigned long long)S->verified,
                  (unsigned long long)S->indexes_verified, (unsigned long long)S->bad, S->bad == 1 ? "y" : "ies");
        for (i = 0; i < S->bad && i < KS_SHOW_BAD && !o->full; i++) {
            const ks_bad *bd = &S->badlist[i];
            ks_unit fake;
            memset(&fake, 0, sizeof fake);
            fake.name = (char *)bd->unit;
            fake.nlen = strlen(bd->unit);
            ks_unit_label(&fake, name, sizeof name);
            ki_fmt(line, sizeof line, "%s (unit %.60s): %s", bd->file, bd->unit[0] ? name : "?", bd->why);
            ko_puts(o, "  ");
            ks_wrap(o, line, 2, 6);
        }
    }
    for (k = 0; k < N->n; k++) { ko_puts(o, k ? "           " : "notes      "); ks_wrap(o, N->item[k], 11, 11); }
    if (!P->n) ki_fmt(line, sizeof line, "consistent");
    else {
        size_t len = (size_t)ki_fmt(line, sizeof line, "%d problem%s: ", P->n, P->n == 1 ? "" : "s");
        for (k = 0; k < P->n && len < sizeof line; k++) len += (size_t)ki_fmt(line + len, sizeof line - len, "%s%s", k ? "; " : "", P->item[k]);
    }
    ko_puts(o, "verdict    ");
    ks_wrap(o, line, 11, 11);
}

static void ks_store_json(ki_out *o, ks_store *S, const ki_opts *op, const ks_list *P, const ks_list *N)
{
    const ks_cf *c = &S->ref.cf;
    size_t i;
    int k;
    ko_puts(o, "{\n  \"format\": \"kcache-store\",\n  \"store\": ");
    ko_json_cstr(o, S->ref.path);
    ko_printf(o, ",\n  \"config\": {\"present\": %s, \"valid\": %s, \"problem\": ", c->present ? "true" : "false", c->a.valid ? "true" : "false");
    ko_json_cstr(o, c->a.valid ? NULL : c->why[0] ? c->why : "missing");
    if (c->present) {
        ko_printf(o, ", \"version\": %u, \"slots\": %llu, \"generation\": %llu, \"busy\": %s, ", c->a.version, (unsigned long long)c->a.use_slots,
                  (unsigned long long)c->a.generation, c->a.busy ? "true" : "false");
        ks_json_time(o, "created", c->a.created);
        ko_printf(o, ", \"limit\": %llu, \"accounted_bytes\": %llu, \"accounted_entries\": %llu, \"evictions\": %llu",
                  (unsigned long long)c->a.limit, (unsigned long long)c->a.bytes, (unsigned long long)c->a.entries,
                  (unsigned long long)c->a.evictions);
    }
    ko_puts(o, "}");
    ko_printf(o, ",\n  \"real\": {\"bytes\": %llu, \"entries\": %llu, \"stray_files\": %llu, \"misplaced\": %llu, \"unreadable\": %llu}",
              (unsigned long long)S->bytes, (unsigned long long)S->entries, (unsigned long long)S->stray,
              (unsigned long long)S->misplaced, (unsigned long long)S->unreadable);
    ko_puts(o, ",\n  \"accounting_matches\": ");
    ko_json_tri(o, c->present && c->a.magic_ok ? (c->a.bytes == S->bytes && c->a.entries == S->entries) : -1);
    ko_printf(o, ",\n  \"use_table\": {\"read\": %s", S->table_read ? "true" : "false");
    if (S->table_read) {
        char u[KCACHE_UNIT_MAX];
        size_t ul;
        ko_printf(o, ", \"slots_used\": %llu, \"bytes\": %llu, \"entries_without_slot\": %llu, \"slots_without_entry\": %llu, "
                     "\"sizes_differ\": %llu, ",
                  (unsigned long long)S->slots_used, (unsigned long long)S->slot_bytes, (unsigned long long)S->no_slot,
                  (unsigned long long)S->slots_without_file, (unsigned long long)S->size_differs);
        ks_json_time(o, "oldest_use", S->oldest);
        ko_puts(o, ", \"oldest_unit\": ");
        if (S->slots_used && ks_entry_unit(S->ref.r, S->oldest_d, u, &ul)) ko_json_str(o, (const unsigned char *)u, ul); else ko_puts(o, "null");
        ko_puts(o, ", ");
        ks_json_time(o, "newest_use", S->newest);
        ko_puts(o, ", \"newest_unit\": ");
        if (S->slots_used && ks_entry_unit(S->ref.r, S->newest_d, u, &ul)) ko_json_str(o, (const unsigned char *)u, ul); else ko_puts(o, "null");
    }
    ko_puts(o, "}");
    ko_puts(o, ",\n  \"eviction_log\": [");
    for (k = 0, i = 0; c->present && c->a.magic_ok && k < (int)c->evlog_n; k++) {
        ko_puts(o, i++ ? ", " : "");
        ko_puts(o, "{\"digest\": ");
        ks_json_hex(o, c->evlog[k].digest);
        ko_puts(o, ", ");
        ks_json_time(o, "when", c->evlog[k].when);
        ko_printf(o, ", \"bytes\": %llu}", (unsigned long long)c->evlog[k].size);
    }
    ko_printf(o, "],\n  \"units_total\": %llu,\n  \"units\": [", (unsigned long long)(S->nunits + S->units_over));
    for (i = 0; i < S->nunits && i < KS_SHOW_MAX && !o->full; i++) {
        const ks_unit *u = &S->units[i];
        ko_puts(o, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
        if (u->name) ko_json_str(o, (const unsigned char *)u->name, u->nlen); else ko_puts(o, "null");
        ko_puts(o, ", \"id\": ");
        ks_json_hex(o, u->id);
        ko_printf(o, ", \"entries\": %llu, \"bytes\": %llu, \"index\": %s, \"index_ok\": %s, \"live\": %u, \"gone\": %u, \"missed\": %u, "
                     "\"live_without_entry\": %u}",
                  (unsigned long long)u->entries, (unsigned long long)u->bytes, u->has_index ? "true" : "false",
                  u->has_index && !u->index_bad ? "true" : "false", u->live, u->gone, u->missed, u->live_missing);
    }
    if (S->nunits) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"indexes\": {\"count\": %llu, \"damaged\": %llu, \"with_damaged_records\": %llu, \"misnamed\": %llu}",
              (unsigned long long)S->indexes, (unsigned long long)S->bad_indexes, (unsigned long long)S->torn_indexes,
              (unsigned long long)S->misplaced_indexes);
    ko_printf(o, ",\n  \"temp_files\": {\"count\": %llu, \"bytes\": %llu, \"orphaned\": %llu, \"orphaned_bytes\": %llu, \"in_progress\": %llu}",
              (unsigned long long)S->tmp_files, (unsigned long long)S->tmp_bytes, (unsigned long long)S->tmp_orphaned,
              (unsigned long long)S->tmp_orphan_bytes, (unsigned long long)S->tmp_live);
    ko_printf(o, ",\n  \"misses\": {\"traced\": %llu, \"recent\": [", (unsigned long long)S->misses_total);
    for (i = 0; i < S->nmisses && !o->full; i++) {
        const ks_miss *m = &S->misses[i];
        ko_puts(o, i ? ",\n    {" : "\n    {");
        ks_json_time(o, "when", m->when);
        ko_puts(o, ", \"unit\": ");
        ko_json_str(o, (const unsigned char *)m->unit, m->ulen);
        ko_printf(o, ", \"pid\": %u, \"reason\": \"%s\", \"explanation\": ", (unsigned)m->pid, ks_reason_word(m->reason));
        ko_json_cstr(o, m->why);
        ko_puts(o, "}");
    }
    if (S->nmisses) ko_puts(o, "\n  ");
    ko_printf(o, "]}");
    ko_puts(o, ",\n  \"verify\": ");
    if (!op->verify) ko_puts(o, "null");
    else {
        ko_printf(o, "{\"entries\": %llu, \"indexes\": %llu, \"bad\": %llu, \"bad_entries\": [", (unsigned long long)S->verified,
                  (unsigned long long)S->indexes_verified, (unsigned long long)S->bad);
        for (i = 0; i < S->bad && i < KS_SHOW_BAD; i++) {
            ko_puts(o, i ? ", {\"file\": " : "{\"file\": ");
            ko_json_cstr(o, S->badlist[i].file);
            ko_puts(o, ", \"unit\": ");
            ko_json_cstr(o, S->badlist[i].unit[0] ? S->badlist[i].unit : NULL);
            ko_puts(o, ", \"problem\": ");
            ko_json_cstr(o, S->badlist[i].why);
            ko_puts(o, "}");
        }
        ko_puts(o, "]}");
    }
    ko_printf(o, ",\n  \"verdict\": {\"consistent\": %s, \"problems\": [", P->n ? "false" : "true");
    for (k = 0; k < P->n; k++) { ko_puts(o, k ? ", " : ""); ko_json_cstr(o, P->item[k]); }
    ko_puts(o, "], \"notes\": [");
    for (k = 0; k < N->n; k++) { ko_puts(o, k ? ", " : ""); ko_json_cstr(o, N->item[k]); }
    ko_puts(o, "]}\n}\n");
}

/* The store summary of the directory path.  0, or 2 with a message. */
int ki_store_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_store *S = (ks_store *)calloc(1, sizeof *S);
    ks_list *P = (ks_list *)malloc(sizeof *P), *N = (ks_list *)malloc(sizeof *N);
    struct stat sb;
    if (!S || !P || !N) { free(S); free(P); free(N); ki_fmt(err, errcap, "out of memory"); return 2; }
    if (ks_store_open(path, &S->ref, err, errcap) != 0) { free(S); free(P); free(N); return 2; }
    if (stat(S->ref.path, &sb) == 0 && (sb.st_mode & 022) == 0 && sb.st_uid == 0 && geteuid() != 0) S->dir_root = 1;
    else if (stat(S->ref.path, &sb) == 0 && (sb.st_uid != geteuid() || (sb.st_mode & 022) != 0)) {
        S->dir_refused = 1;
        ki_fmt(S->dir_why, sizeof S->dir_why, "%s", sb.st_uid != geteuid() ? "owned by another user" : "writable by group or others");
    }
    S->table_read = S->ref.cf.present && S->ref.cf.a.use_slots > 0;
    if (S->table_read) ks_walk_table(S);
    ks_walk_entries(S, op);
    ks_walk_indexes(S, op);
    ks_walk_tmp(S);
    free(S->utable); /* the units are sorted now: the table's indices no longer hold */
    S->utable = NULL;
    S->tcap = 0;
    if (S->nunits) qsort(S->units, S->nunits, sizeof *S->units, ks_unit_cmp);
    if (S->nmisses) qsort(S->misses, S->nmisses, sizeof *S->misses, ks_miss_cmp);
    ks_store_assess(S, P, N);
    if (op->json) ks_store_json(o, S, op, P, N);
    else ks_store_text(o, S, op, P, N);
    ks_store_free(S);
    free(S);
    free(P);
    free(N);
    return 0;
}

/* Up to 8 unit names of a store's indexes, for a message. */
static void ks_some_units(kcache_reader *r, char *out, size_t cap)
{
    kcache_index_walk *w;
    kcache_index_file f;
    int n = 0;
    size_t len = 0;
    out[0] = 0;
    if (kcache_index_walk_open(r, &w) != KCACHE_OK) return;
    while (n < 8 && len < cap && kcache_index_walk_next(w, &f) == KCACHE_OK) {
        char u[KCACHE_UNIT_MAX];
        size_t ul, j;
        if (kcache_index_walk_unit(w, u, sizeof u) != KCACHE_OK) continue;
        ul = strlen(u);
        for (j = 0; j < ul; j++) if ((unsigned char)u[j] < 0x20 || (unsigned char)u[j] >= 0x7f) u[j] = '?';
        len += (size_t)ki_fmt(out + len, len < cap ? cap - len : 0, "%s\"%.*s\"", n ? ", " : "", (int)(ul > 40 ? 40 : ul), u);
        n++;
    }
    kcache_index_walk_close(w);
}

/* One unit's index in the store at path.  0, or 2 with a message. */
int ki_unit_report(const char *path, const char *unit, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_store_ref *ref = (ks_store_ref *)calloc(1, sizeof *ref);
    char rel[48], file[4200], e2[200];
    kcache_index *x;
    kcache_status s;
    size_t ul = strlen(unit);
    int rc = 0;
    if (!ref) { ki_fmt(err, errcap, "out of memory"); return 2; }
    if (ul == 0 || ul >= KCACHE_UNIT_MAX) { free(ref); ki_fmt(err, errcap, "a unit name has 1 to %d bytes", KCACHE_UNIT_MAX - 1); return 2; }
    if (ks_store_open(path, ref, err, errcap) != 0) { free(ref); return 2; }
    kcache_index_path(unit, rel, sizeof rel);
    ki_fmt(file, sizeof file, "%s/%s", ref->path, rel);
    s = kcache_index_load(ref->r, rel, &x, e2, sizeof e2);
    if (s == KCACHE_ENOENT) {
        char some[400];
        ks_some_units(ref->r, some, sizeof some);
        ki_fmt(err, errcap, "no index for unit \"%.80s\" (%s): never stored here%s%s", unit, rel, some[0] ? "; units with an index: " : "", some);
        rc = 2;
    } else if (s != KCACHE_OK) {
        ki_fmt(err, errcap, "%s: %s", rel, e2);
        rc = 2;
    } else {
        ks_index_report(x, file, ref, ref->owner, op, o);
    }
    kcache_reader_close(ref->r);
    free(ref);
    return rc;
}

/* The store an index or entry file lies in: ROOT of ROOT/i/XX/NAME or ROOT/e/XX/NAME. */
static int ks_store_of_file(const char *file, char which, ks_store_ref *ref)
{
    char abs[4096], shard[4096], top[4096], root[4096], err[200];
    const char *b;
    memset(ref, 0, sizeof *ref);
    if (ki_abspath(file, abs, sizeof abs) != 0) return -1;
    ki_path_dirname(abs, shard, sizeof shard);
    b = ki_path_base(shard);
    if (strlen(b) != 2 || ki_hexval((unsigned char)b[0]) < 0 || ki_hexval((unsigned char)b[1]) < 0) return -1;
    ki_path_dirname(shard, top, sizeof top);
    b = ki_path_base(top);
    if (b[0] != which || b[1] != 0) return -1;
    ki_path_dirname(top, root, sizeof root);
    if (ks_store_open(root, ref, err, sizeof err) != 0) { ref->r = NULL; return -1; }
    return 0;
}

/* The owner of a file outside a store: whose dependency files are read (and root's). */
static uint32_t ks_file_owner(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint32_t)sb.st_uid : 0;
}

/* A .kci file.  0, or 2 with a message. */
int ki_index_file_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_store_ref *ref = (ks_store_ref *)calloc(1, sizeof *ref);
    char abs[4096];
    kcache_index *x;
    if (!ref) { ki_fmt(err, errcap, "out of memory"); return 2; }
    if (kcache_index_load(NULL, path, &x, err, errcap) != KCACHE_OK) { free(ref); return 2; }
    if (ks_store_of_file(path, 'i', ref) != 0) ref->r = NULL;
    if (ki_abspath(path, abs, sizeof abs) != 0) ki_fmt(abs, sizeof abs, "%s", path);
    ks_index_report(x, abs, ref->r ? ref : NULL, ref->r ? ref->owner : ks_file_owner(path), op, o); /* outside a store: whoever made the index */
    kcache_reader_close(ref->r);
    free(ref);
    return 0;
}

/* A .kce file.  0, or 2 with a message. */
int ki_entry_file_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_entry e;
    char abs[4096];
    uint32_t owner = ks_file_owner(path); /* outside a store: whoever made the entry */
    ks_store_ref *ref;
    if (ks_entry_read(NULL, path, &e, err, errcap) != KCACHE_OK) { ks_entry_free(&e); return 2; }
    if ((ref = (ks_store_ref *)calloc(1, sizeof *ref)) != NULL) { /* inside one: the store's owner */
        if (ks_store_of_file(path, 'e', ref) == 0) owner = ref->owner;
        kcache_reader_close(ref->r);
        free(ref);
    }
    if (ki_abspath(path, abs, sizeof abs) != 0) ki_fmt(abs, sizeof abs, "%s", path);
    ks_entry_report(o, &e, abs, op, owner);
    ks_entry_free(&e);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* --make-layer SRC DEST [--unit NAME]... [--private]: a read-only layer (KCACHE_LAYERS).      */
/*
 * The one command here that writes a store, and it writes only DEST, a directory it makes (or an
 * empty one): SRC is read as the rest of this tool reads a store (no lock, nothing written).
 * Every entry chosen (all, or those of the --unit units) is read whole and validated as kcache
 * validates a hit (kcache_entry_load): its key record against its file name and header, both
 * checksums. A sound one is stored in DEST by kcache_put on DEST opened as a store (no limit, no
 * memory copies), which writes the entry, the unit's index (its live overloads: what
 * kcache_explain and `kcache-inspect DEST UNIT` read) and the accounting in config.file, so DEST is
 * laid out as a store and found consistent. Entries get a new header
 * around the same key record (dependency stamps included) and payload; a zstd entry
 * (KCACHE_COMPRESS) would need zstd, which this tool is built without, so such entries are left
 * out and counted. The lock file and tmp/ go at the end (nobody writes a layer) and the modes
 * become 0755 / 0644 so that every user may read it (--private: 0700 / 0600). A layer is as
 * trustworthy as SRC: only entries of SRC's owner (or root's) that nobody else may write are taken,
 * each judged on the file it copies from, and kcache uses a layer only when it is root's or the
 * user's own (kcache.h's SECURITY).
 */

typedef struct ml_item { kcache_hash128 d, unit; int copied; } ml_item;
typedef struct ml_run {
    const char *const *units;   /* --unit NAME..., NULL: every unit */
    int nunits;
    unsigned long *unit_hits;   /* entries found per --unit */
    ml_item *items;
    size_t n, cap;
    uint64_t copied, bytes, corrupt, compressed, foreign, nunits_copied;
} ml_run;

static int ml_unit_index(const ml_run *R, const char *unit)
{
    int i;
    for (i = 0; i < R->nunits; i++)
        if (strcmp(R->units[i], unit) == 0) return i;
    return -1;
}

/* Pass 1: the entries to copy (their unit read from the header's first bytes). */
static int ml_scan(kcache_reader *sr, ml_run *R, char *err, size_t errcap)
{
    kcache_entry_walk *w;
    kcache_entry_file f;
    uint32_t owner = kcache_reader_owner(sr);
    int failed = 0;
    if (kcache_entry_walk_open(sr, &w) != KCACHE_OK) { ki_fmt(err, errcap, "out of memory"); return -1; }
    while (!failed && kcache_entry_walk_next(w, &f) == KCACHE_OK) {
        char unit[KCACHE_UNIT_MAX];
        int which = -1;
        if (!f.named || f.other_shard || f.kind != KCACHE_KIND_FILE) continue;
        if ((f.uid != owner && f.uid != 0) || (f.mode & 022)) { R->foreign++; continue; }
        if (kcache_entry_unit(sr, f.path, unit, sizeof unit) != KCACHE_OK) { R->corrupt++; continue; }
        if (R->units && (which = ml_unit_index(R, unit)) < 0) continue;
        if (which >= 0) R->unit_hits[which]++;
        if (R->n == R->cap) {
            size_t cap = R->cap ? R->cap * 2 : 256;
            ml_item *p = (ml_item *)realloc(R->items, cap * sizeof *p);
            if (!p) { failed = 1; break; }
            R->items = p;
            R->cap = cap;
        }
        R->items[R->n].d = f.digest;
        R->items[R->n].unit = kcache_hash(unit, strlen(unit));
        R->items[R->n].copied = 0;
        R->n++;
    }
    kcache_entry_walk_close(w);
    if (failed) { ki_fmt(err, errcap, "out of memory"); return -1; }
    return 0;
}

/* Pass 2, one entry: kcache_entry_load judges the open file, not what pass 1 saw under that name
   (another member of a shared-group store may have renamed her own file over it since): a regular
   file of the store's owner or root that nobody else may write, its header and the size it says
   first (a sparse or huge file is not read), then read whole and validated. A sound one is stored
   in dst. -1 (with err) when dst failed. */
static int ml_copy_one(kcache_reader *sr, kcache *dst, ml_item *it, ml_run *R, char *err, size_t errcap)
{
    kcache_key k;
    kcache_stats st;
    kcache_status s;
    void *data = NULL;
    size_t size = 0;
    uint64_t file_size = 0;
    kcache_entry_stat(sr, it->d, &file_size);
    s = kcache_entry_load(sr, it->d, &k, &data, &size);
    if (s != KCACHE_OK) {
        if (s == KCACHE_EDISABLED) R->compressed++; /* a zstd entry: not readable here */
        else if (s == KCACHE_EUNSAFE) R->foreign++;
        else R->corrupt++;
        kcache_key_free(&k);
        return 0;
    }
    s = kcache_put(dst, &k, data, size);
    free(data);
    kcache_get_stats(dst, &st);
    if (s == KCACHE_OK && (st.evictions || st.store_errors)) { /* the disk's reserve made kcache evict: the layer would lack entries */
        s = KCACHE_ENOSPC;
        ki_fmt(err, errcap, "the filesystem of the layer is nearly full (kcache keeps 5 %% of it free)");
    } else if (s != KCACHE_OK) {
        ki_fmt(err, errcap, "storing unit \"%s\": %s", k.unit, kcache_strerror(s));
    }
    kcache_key_free(&k);
    if (s != KCACHE_OK) return -1;
    it->copied = 1;
    R->copied++;
    R->bytes += file_size;
    return 0;
}

static mode_t ml_dir_mode, ml_file_mode;
static int ml_chmod_one(const char *p, const struct stat *s, int flag, struct FTW *f)
{
    (void)f;
    if (flag == FTW_D || flag == FTW_DP) return chmod(p, ml_dir_mode) == 0 ? 0 : -1;
    if (flag == FTW_F && S_ISREG(s->st_mode)) return chmod(p, ml_file_mode) == 0 ? 0 : -1;
    return 0;
}

static int ks_dot(const char *n) { return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])); }

/* Whether the directory names something (other than . and ..); -1 when it cannot be read. */
static int ml_dir_used(const char *path)
{
    DIR *dp = opendir(path);
    struct dirent *de;
    int used = 0;
    if (!dp) return -1;
    while (!used && (de = readdir(dp)) != NULL) used = !ks_dot(de->d_name);
    closedir(dp);
    return used;
}

static int ml_unit_count_cmp(const void *a, const void *b) { return memcmp(a, b, sizeof(kcache_hash128)); }

int ki_make_layer(const char *src, const char *dest, const char *const *units, int nunits, int private_modes, ki_out *o,
                  char *err, size_t errcap)
{
    char src_abs[4096], dest_abs[4096], parent[4096], real_src[PATH_MAX], real_parent[PATH_MAX], why[600], a[48];
    ml_run R;
    struct stat sb;
    kcache_reader *sr = NULL;
    kcache *dst = NULL;
    kcache_config cfg;
    kcache_hash128 *uh;
    kcache_status st;
    int rc = 2, i;
    size_t j;
    memset(&R, 0, sizeof R);
    R.units = nunits ? units : NULL;
    R.nunits = nunits;
    if (ki_abspath(src, src_abs, sizeof src_abs) != 0 || ki_abspath(dest, dest_abs, sizeof dest_abs) != 0) {
        ki_fmt(err, errcap, "a path is too long");
        return 2;
    }
    if ((st = kcache_reader_open(&sr, src_abs)) != KCACHE_OK) {
        ki_fmt(err, errcap, "%s: cannot open the store: %s", src, st == KCACHE_ENOENT ? strerror(ENOENT) : st == KCACHE_EUNSAFE ? strerror(ENOTDIR) : strerror(errno));
        goto out;
    }
    ki_fmt(why, sizeof why, "%s/e", src_abs);
    if (lstat(why, &sb) != 0 || !S_ISDIR(sb.st_mode)) { ki_fmt(err, errcap, "%s: not a kcache store with entries (no e/)", src); goto out; }
    if (nunits && !(R.unit_hits = (unsigned long *)calloc((size_t)nunits, sizeof *R.unit_hits))) { ki_fmt(err, errcap, "out of memory"); goto out; }
    if (ml_scan(sr, &R, err, errcap) != 0) goto out;
    for (i = 0; i < nunits; i++)
        if (!R.unit_hits[i]) {
            char q[4096 + 16];
            ki_fmt(err, errcap, "%s: no entry of unit \"%s\" (kcache-inspect %s lists the units); nothing made", src, units[i],
                   kcache_shell_quote(q, sizeof q, src));
            goto out;
        }
    if (!R.n) { ki_fmt(err, errcap, "%s: no entries to copy; nothing made", src); goto out; }
    /* DEST: new (its parent exists: no directory is made on the way) or empty, and not in SRC */
    ki_path_dirname(dest_abs, parent, sizeof parent);
    if (lstat(dest_abs, &sb) == 0 && (!S_ISDIR(sb.st_mode) || ml_dir_used(dest_abs) != 0)) {
        ki_fmt(err, errcap, "%s exists and is not an empty directory: a layer is made in a new one", dest);
        goto out;
    }
    if (!realpath(parent, real_parent) || stat(real_parent, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        ki_fmt(err, errcap, "%s: its directory %s does not exist: make it first", dest, parent);
        goto out;
    }
    if (!realpath(src_abs, real_src)) { ki_fmt(err, errcap, "%s: %s", src, strerror(errno)); goto out; }
    if (strcmp(real_parent, real_src) == 0 || (strncmp(real_parent, real_src, strlen(real_src)) == 0 && real_parent[strlen(real_src)] == '/')) {
        ki_fmt(err, errcap, "%s is inside the store %s: a layer is made outside it", dest, src);
        goto out;
    }
    kcache_config_defaults(&cfg); /* no environment */
    cfg.dir = dest_abs;
    cfg.max_size = 0;             /* no limit: every entry chosen, as it is */
    cfg.mem_entries = 1;
    cfg.mem_size = 1;             /* nothing kept in memory: each put goes straight to DEST */
    cfg.publish = 0;
    cfg.fsync = 1;                /* made once, read by many: on disk before it is announced */
    cfg.lock_timeout_ms = 10000;
    why[0] = 0;
    if (kcache_open(&dst, &cfg) != KCACHE_OK || !dst || !kcache_store_in_use(dst, why, sizeof why) || why[0]) {
        ki_fmt(err, errcap, "cannot make the layer %s: %s", dest, why[0] ? why : "not writable");
        goto out;
    }
    for (j = 0; j < R.n; j++)
        if (ml_copy_one(sr, dst, &R.items[j], &R, why, sizeof why) != 0) {
            ki_fmt(err, errcap, "%s: %s; the layer is incomplete: remove it", dest, why);
            goto out;
        }
    kcache_close(dst);
    dst = NULL;
    {   /* nobody writes a layer: no lock file, no tmp/ (kcache makes them again if it is ever used as a store) */
        int dfd = open(dest_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd >= 0) {
            unlinkat(dfd, "lock", 0);
            unlinkat(dfd, "tmp", AT_REMOVEDIR);
            close(dfd);
        }
    }
    ml_dir_mode = private_modes ? 0700 : 0755;
    ml_file_mode = private_modes ? 0600 : 0644;
    if (nftw(dest_abs, ml_chmod_one, 32, FTW_PHYS) != 0) { ki_fmt(err, errcap, "%s: cannot set the modes: %s", dest, strerror(errno)); goto out; }
    if ((uh = (kcache_hash128 *)malloc(R.n * sizeof *uh)) != NULL) { /* the distinct units copied */
        size_t n = 0;
        for (j = 0; j < R.n; j++)
            if (R.items[j].copied) uh[n++] = R.items[j].unit;
        qsort(uh, n, sizeof *uh, ml_unit_count_cmp);
        for (j = 0; j < n; j++) R.nunits_copied += j == 0 || !ks_same(uh[j], uh[j - 1]);
        free(uh);
    }
    ks_size(a, sizeof a, R.bytes);
    ko_puts(o, "layer      ");
    ks_wrap(o, dest_abs, 11, 11);
    ko_puts(o, "from       ");
    ks_wrap(o, src_abs, 11, 11);
    ko_printf(o, "copied     %llu entr%s of %llu unit%s (%s)\n", (unsigned long long)R.copied, R.copied == 1 ? "y" : "ies",
              (unsigned long long)R.nunits_copied, R.nunits_copied == 1 ? "" : "s", a);
    if (R.corrupt || R.compressed || R.foreign) {
        char line[600];
        ki_fmt(line, sizeof line, "%llu corrupt, %llu compressed (KCACHE_COMPRESS: this kcache-inspect has no zstd), %llu not the store's owner's or root's alone (made or writable by another user)",
               (unsigned long long)R.corrupt, (unsigned long long)R.compressed, (unsigned long long)R.foreign);
        ko_puts(o, "left out   ");
        ks_wrap(o, line, 11, 11);
    }
    ko_printf(o, "modes      directories %o, files %o: %s\n", (unsigned)ml_dir_mode, (unsigned)ml_file_mode,
              private_modes ? "yours alone" : "every user may read it (kcache uses a layer that is root's or the user's own)");
    {   /* a line to paste into a shell: quoted, not wrapped */
        char q[4096 * 4 + 16];
        ko_printf(o, "use        KCACHE_LAYERS=%s\n", kcache_shell_quote(q, sizeof q, dest_abs));
    }
    rc = 0;
out:
    if (dst) kcache_close(dst);
    kcache_reader_close(sr);
    free(R.items);
    free(R.unit_hits);
    return rc;
}

/* ---- store commands: --evict-older-than, --trim, --remove-unit, --clear (issue 28) ----
   Through the library's own calls (kcache_evict_older_than, ...), on the store opened as a program
   opens it: its lock, its accounting kept exact, its checks (another user's store is refused). */

/* AGE as 90s, 30m, 12h, 7d (a bare number: seconds). 1 with *secs, 0 when it is not one.
   Beside kcache.h's size parser (kcache_parse_size, --trim's) rather than through it: the digits
   are read the same way, but the suffixes say other things ("m" is minutes here, MiB there, which
   also takes upper case and a trailing B or iB), and the library itself has no use for an age. */
static int ki_parse_age(const char *s, uint64_t *secs)
{
    uint64_t v = 0, mul = 1;
    const char *p = s;
    if (!s || !*s) return 0;
    while (*p >= '0' && *p <= '9') {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) return 0;
        v = v * 10 + (uint64_t)(*p++ - '0');
    }
    if (p == s) return 0;
    if (*p == 's') p++;
    else if (*p == 'm') { mul = 60; p++; }
    else if (*p == 'h') { mul = 3600; p++; }
    else if (*p == 'd') { mul = 86400; p++; }
    if (*p || (v && mul > UINT64_MAX / v)) return 0;
    *secs = v * mul;
    return 1;
}

int ki_tidy(int what, const char *arg, const char *dir, int yes)
{
    static const char *const name[] = {"", "--evict-older-than", "--trim", "--remove-unit", "--clear"};
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_reader *r;
    kcache_tidy done;
    kcache_status s = KCACHE_EINVAL;
    struct stat sb;
    char why[1024], cf[4200], q[1100], shown[1100];
    uint64_t v = 0;
    if (what == KI_TIDY_OLDER && !ki_parse_age(arg, &v)) {
        ktext_eprintf("kcache-inspect: --evict-older-than '%s' is not an age (90s, 30m, 12h, 7d)\n", arg);
        return 2;
    }
    if (what == KI_TIDY_TRIM && kcache_parse_size(arg, &v) != KCACHE_OK) {
        ktext_eprintf("kcache-inspect: --trim '%s' is not a size (bytes, or with K, M, G, T as KCACHE_MAX_SIZE takes it)\n", arg);
        return 2;
    }
    /* a store that is there: a mistyped DIR must not become a new, empty store */
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        ktext_eprintf("kcache-inspect: %s %s: %s\n", name[what], dir, stat(dir, &sb) != 0 ? strerror(errno) : "not a directory");
        return 2;
    }
    snprintf(cf, sizeof cf, "%s/config.file", dir);
    if (lstat(cf, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        ktext_eprintf("kcache-inspect: %s %s: not a kcache store (no config.file)\n", name[what], dir);
        return 2;
    }
    kcache_config_defaults(&cfg); /* as given: no KCACHE_ENABLE=0 or KCACHE_DIR from the environment */
    cfg.dir = dir;
    cfg.publish = 0;
    cfg.mem_entries = 1;
    if (kcache_reader_open(&r, dir) == KCACHE_OK) { /* the store's own limit, kept as it is */
        kcache_accounting a;
        if (kcache_read_accounting(r, &a) == KCACHE_OK) cfg.max_size = a.limit;
        kcache_reader_close(r);
    }
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { ktext_eprintf("kcache-inspect: out of memory\n"); return 2; }
    if (!kcache_store_in_use(kc, why, sizeof why) || why[0]) {
        ktext_eprintf("kcache-inspect: %s %s: %s\n", name[what], dir, why[0] ? why : "the store cannot be used");
        kcache_close(kc);
        return 2;
    }
    switch (what) {
    case KI_TIDY_OLDER: s = kcache_evict_older_than(kc, v, !yes, &done); break;
    case KI_TIDY_TRIM: s = kcache_trim(kc, v, !yes, &done); break;
    case KI_TIDY_UNIT: s = kcache_remove_unit(kc, arg, !yes, &done); break;
    default: s = kcache_clear(kc, !yes, &done); break;
    }
    if (s != KCACHE_OK) {
        ktext_eprintf("kcache-inspect: %s %s: %s\n", name[what], dir, kcache_strerror(s));
        kcache_close(kc);
        return 2;
    }
    kcache_shell_quote(q, sizeof q, dir);
    kcache_escape(shown, sizeof shown, dir, strlen(dir)); /* a path is printed escaped, as every name from outside */
    if (!yes) {
        printf("would remove %llu entries (%llu bytes) from %s\n", (unsigned long long)done.entries, (unsigned long long)done.bytes, shown);
        char qa[600];
        kcache_shell_quote(qa, sizeof qa, what == KI_TIDY_CLEAR ? "" : arg);
        printf("(a dry run: kcache-inspect %s%s%s --yes %s removes them)\n", name[what], what == KI_TIDY_CLEAR ? "" : " ",
               what == KI_TIDY_CLEAR ? "" : qa, q);
    } else {
        kcache_stats st;
        kcache_get_stats(kc, &st);
        printf("removed %llu entries (%llu bytes) from %s; it now holds %llu entries, %llu bytes\n", (unsigned long long)done.entries,
               (unsigned long long)done.bytes, shown, (unsigned long long)st.disk_entries, (unsigned long long)st.disk_bytes);
    }
    kcache_close(kc);
    return fflush(stdout) != 0 ? 2 : 0;
}
