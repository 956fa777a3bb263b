/* inspect_store.c - kcache-inspect: kcache stores, their views and their upkeep.
 *
 * A store's summary and consistency check, one unit's index, one entry file, and the commands
 * that change a store: --make-layer, --evict-older-than, --trim, --remove-unit, --clear.  It
 * decodes with kcache.h's own functions, so this is the one file of the tool that compiles
 * kcache.h's implementation (KCACHE_IMPLEMENTATION): the other files include kcache.h for its
 * declarations only, and take the few private functions they need through the ki_ functions
 * at the top of this file. */
#define KCACHE_IMPLEMENTATION
#include "inspect.h"

/* ---------------------------------------------------------------------------------------- */
/* What the other files take from kcache.h's private half (only this file compiles it).      */

/* the sizes inspect.h gives them hold what kcache.h writes */
typedef char ki_host_features_fit[KI_HOST_FEATURES_MAX >= KCACHE__HOST_FEATURES_MAX ? 1 : -1];
typedef char ki_llvm_range_same[KI_LLVM_OLDEST == KCACHE__LLVM_OLDEST && KI_LLVM_NEWEST == KCACHE__LLVM_NEWEST ? 1 : -1];

size_t ki_esc_char(const unsigned char *s, size_t n, char out[11], size_t *used) { return kcache__esc_char(s, n, out, used); }
char *ki_escs(char *out, size_t cap, const char *s) { return kcache__escs(out, cap, s); }
char *ki_shell_quote(char *out, size_t cap, const char *s) { return kcache__shell_quote(out, cap, s); }
void ki_host_cpu_name(char *out, size_t cap) { kcache__host_cpu_name(out, cap); }
size_t ki_host_cpu_features(char *out, size_t cap) { return kcache__host_cpu_features(out, cap); }
int ki_host_cpu_name_llvm(unsigned llvm, char *out, size_t cap) { return kcache__host_cpu_name_llvm(llvm, out, cap); }

/* ======================================================================================== */
/* kcache stores.                                                                            */
/*                                                                                           */
/* Read only: no kcache_open (it creates and repairs), no lock, no write, config.file read    */
/* with pread.  The formats are kcache.h's (>>store, >>index, >>key); its own decoders are    */
/* used wherever they exist, so the tool and the library agree on what is valid.  Everything  */
/* read is bounded: an entry's header (KS_MAX_HEADER), an index (KCACHE__IX_MAX), the units   */
/* tracked, the misses and bad entries kept, the report (KI_MAX_OUTPUT).                      */

#define KS_MAX_HEADER  (16u << 20) /* an entry header beyond this is damage (the largest real one: 14 MiB) */
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
static const char *ks_reason_text(uint32_t r) { return r < KCACHE_REASON_COUNT ? kcache__reason_text[r] : "unknown reason"; }
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

/* Opens a file inside a store for reading: no symlink as the last component, never blocking
   on a FIFO planted there. */
static int ks_open_in(int dirfd, const char *rel)
{
    return openat(dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
}

/* ---------------------------------------------------------------------------------------- */
/* An entry: e/XX/<digest>.kce.                                                               */

typedef struct ks_entry {
    uint64_t file_size;
    unsigned version, flags;
    uint32_t hlen, rlen;
    uint64_t plen;
    kcache_hash128 digest, psum;
    int64_t created;
    int lengths_ok;          /* header, record and payload lengths agree with each other and the file */
    int hdr_sum;             /* 1 ok, 0 fails, -1 not checkable */
    int pad;                 /* 1 zero, 0 not, -1 not checkable */
    int rec;                 /* 1 decodes, 0 not, -1 not checkable */
    int rec_digest;          /* 1 the record's digest is the header's, 0 not, -1 unknown */
    int payload;             /* 1 checksum ok, 0 fails, -1 not checked */
    int name_digest;         /* 1 the file name is the header's digest, 0 not, -1 not a digest name */
    int key_set;             /* key must be freed */
    kcache_key key;          /* the decoded key record */
    const unsigned char *rec_bytes; /* into the caller's buffer */
    char problem[200];       /* the first thing wrong (in the order kcache checks), "" when sound */
} ks_entry;

static void ks_entry_free(ks_entry *e)
{
    if (e->key_set) kcache_key_free(&e->key);
    e->key_set = 0;
}

static void ks_problem(char *p, size_t cap, const char *fmt, ...) KI_PRINTF(3, 4);
static void ks_problem(char *p, size_t cap, const char *fmt, ...)
{
    va_list ap;
    if (p[0]) return; /* the first one stays */
    va_start(ap, fmt);
    vsnprintf(p, cap, fmt, ap);
    va_end(ap);
}

/* Decodes an entry's header from its first `have` bytes (the file has file_size).  0 when it is
   a kcache entry (sound or not: e->problem says), -1 with a message when it is not one at all. */
static int ks_entry_decode(const unsigned char *h, size_t have, uint64_t file_size, ks_entry *e, char *err, size_t errcap)
{
    uint64_t rec_end;
    memset(e, 0, sizeof *e);
    e->file_size = file_size;
    e->hdr_sum = e->pad = e->rec = e->rec_digest = e->payload = e->name_digest = -1;
    if (have > file_size) have = (size_t)file_size;
    if (have < 8 || memcmp(h, "KCENTRY", 8) != 0) {
        ki_fmt(err, errcap, "not a kcache entry (no KCENTRY magic)");
        return -1;
    }
    if (have < KCACHE__ENTRY_FIXED) {
        ki_fmt(err, errcap, "truncated: %zu bytes, shorter than an entry's fixed header (%d)", have, KCACHE__ENTRY_FIXED);
        return -1;
    }
    e->version = kcache__get_u16(h + 8);
    e->flags = kcache__get_u16(h + 10);
    /* version 2: a zstd payload (KCACHE_COMPRESS); its checksum is over the stored bytes, as here */
    if (e->version != KCACHE__ENTRY_VERSION && !(e->version == KCACHE__ENTRY_VERSION_ZSTD && e->flags == KCACHE__ENTRY_ZSTD)) {
        ki_fmt(err, errcap, "entry format version %u; this tool reads versions %d and %d (zstd payload)", e->version, KCACHE__ENTRY_VERSION,
               KCACHE__ENTRY_VERSION_ZSTD);
        return -1;
    }
    e->hlen = kcache__get_u32(h + 12);
    e->plen = kcache__get_u64(h + 16);
    e->digest.lo = kcache__get_u64(h + 24);
    e->digest.hi = kcache__get_u64(h + 32);
    e->psum.lo = kcache__get_u64(h + 40);
    e->psum.hi = kcache__get_u64(h + 48);
    e->created = (int64_t)kcache__get_u64(h + 56);
    e->rlen = kcache__get_u32(h + 64);
    rec_end = (uint64_t)KCACHE__ENTRY_FIXED + e->rlen;
    /* the order of kcache__store_read: lengths, header checksum, padding, key, payload */
    e->lengths_ok = e->hlen % 16 == 0 && e->hlen <= file_size && e->rlen <= e->hlen && rec_end + 8 + 16 <= e->hlen &&
                    e->plen == file_size - e->hlen;
    if (!e->lengths_ok) {
        if (e->hlen > file_size)
            ks_problem(e->problem, sizeof e->problem, "truncated: the header says %u bytes of header, the file has %llu",
                       e->hlen, (unsigned long long)file_size);
        else if (e->hlen % 16 != 0 || e->rlen > e->hlen || rec_end + 8 + 16 > e->hlen)
            ks_problem(e->problem, sizeof e->problem, "inconsistent lengths (header %u, key record %u bytes)", e->hlen, e->rlen);
        else
            ks_problem(e->problem, sizeof e->problem, "payload length %llu, but %llu bytes follow the header",
                       (unsigned long long)e->plen, (unsigned long long)(file_size - e->hlen));
    }
    if (rec_end + 8 <= have) {
        e->hdr_sum = kcache__get_u64(h + rec_end) == kcache_hash(h, (size_t)rec_end).lo;
        if (!e->hdr_sum) ks_problem(e->problem, sizeof e->problem, "header checksum fails");
    } else {
        ks_problem(e->problem, sizeof e->problem, "the key record (%u bytes) runs past the header", e->rlen);
    }
    if (e->hlen <= have && rec_end + 8 <= e->hlen) {
        size_t m;
        e->pad = 1;
        for (m = (size_t)rec_end + 8; m < e->hlen; m++)
            if (h[m] != 0) { e->pad = 0; break; }
        if (!e->pad) ks_problem(e->problem, sizeof e->problem, "the padding after the key record is not zero");
    }
    if (rec_end <= have) {
        e->key_set = 1;
        e->rec_bytes = h + KCACHE__ENTRY_FIXED;
        e->rec = kcache__record_parse(h + KCACHE__ENTRY_FIXED, e->rlen, &e->key) == KCACHE_OK;
        if (!e->rec) ks_problem(e->problem, sizeof e->problem, "the key record does not decode");
        else if (kcache__record_match(h + KCACHE__ENTRY_FIXED, e->rlen, &e->key, KCACHE_STAMP_HYBRID) != KCACHE__MATCH) {
            /* kcache__record_parse cuts a unit or name at a NUL byte; kcache's lookup compares the
               whole record, so no key can ever match this one */
            e->rec = 0;
            ks_problem(e->problem, sizeof e->problem, "the key record does not match its own decoding (a NUL byte in a name?)");
        }
        else {
            e->rec_digest = ks_same(e->key.digest, e->digest);
            if (!e->rec_digest) ks_problem(e->problem, sizeof e->problem, "the key record's digest is not the header's");
        }
    }
    return 0;
}

/* A header-level problem: kcache rejects the entry before looking at stamps or the payload. */
static int ks_entry_header_bad(const ks_entry *e)
{
    return !e->lengths_ok || e->hdr_sum != 1 || e->pad != 1 || e->rec != 1 || e->rec_digest != 1 || e->name_digest == 0;
}

static void ks_entry_payload_result(ks_entry *e, kcache_hash128 sum)
{
    e->payload = ks_same(sum, e->psum);
    if (!e->payload) ks_problem(e->problem, sizeof e->problem, "payload checksum fails");
}

/* The payload checksum, the payload being the rest of buf. */
static void ks_entry_payload_mem(const unsigned char *buf, size_t len, ks_entry *e)
{
    if (!e->lengths_ok || (uint64_t)len != e->file_size) return;
    ks_entry_payload_result(e, kcache_hash(buf + e->hlen, (size_t)e->plen));
}

/* The payload checksum, streamed from the file. */
static void ks_entry_payload_fd(int fd, ks_entry *e)
{
    static unsigned char buf[1 << 16];
    kcache_hash_state st;
    uint64_t done = 0;
    if (!e->lengths_ok) return;
    kcache_hash_init(&st);
    while (done < e->plen) {
        size_t n = e->plen - done < sizeof buf ? (size_t)(e->plen - done) : sizeof buf;
        long long r = ks_pread(fd, buf, n, e->hlen + done);
        if (r <= 0) {
            e->payload = 0;
            ks_problem(e->problem, sizeof e->problem, "the payload cannot be read (%s)", r < 0 ? strerror(errno) : "short file");
            return;
        }
        kcache_hash_update(&st, buf, (size_t)r);
        done += (uint64_t)r;
    }
    ks_entry_payload_result(e, kcache_hash_final(&st));
}

/* Reads and decodes an open entry file: its header always, its payload checksum with
   check_payload.  *hbuf receives the header bytes (free it).  0, or -1 with a message. */
static int ks_entry_read_fd(int fd, int check_payload, ks_entry *e, unsigned char **hbuf, char *err, size_t errcap)
{
    struct stat sb;
    unsigned char fixed[KCACHE__ENTRY_FIXED];
    size_t want;
    long long got;
    uint32_t hlen;
    *hbuf = NULL;
    memset(e, 0, sizeof *e);
    if (fstat(fd, &sb) != 0) { ki_fmt(err, errcap, "cannot stat: %s", strerror(errno)); return -1; }
    if (!S_ISREG(sb.st_mode)) { ki_fmt(err, errcap, "not a regular file"); return -1; }
    got = ks_pread(fd, fixed, sizeof fixed, 0);
    if (got < 0) { ki_fmt(err, errcap, "cannot read: %s", strerror(errno)); return -1; }
    if (got < (long long)sizeof fixed) return ks_entry_decode(fixed, (size_t)got, (uint64_t)sb.st_size, e, err, errcap);
    hlen = kcache__get_u32(fixed + 12);
    want = hlen < KCACHE__ENTRY_FIXED ? KCACHE__ENTRY_FIXED : hlen > KS_MAX_HEADER ? KS_MAX_HEADER : hlen;
    if ((uint64_t)want > (uint64_t)sb.st_size) want = (size_t)sb.st_size;
    *hbuf = (unsigned char *)malloc(want ? want : 1);
    if (!*hbuf) { ki_fmt(err, errcap, "out of memory"); return -1; }
    got = ks_pread(fd, *hbuf, want, 0);
    if (got < 0) { ki_fmt(err, errcap, "cannot read: %s", strerror(errno)); free(*hbuf); *hbuf = NULL; return -1; }
    if (ks_entry_decode(*hbuf, (size_t)got, (uint64_t)sb.st_size, e, err, errcap) != 0) {
        ks_entry_free(e);
        free(*hbuf);
        *hbuf = NULL;
        return -1;
    }
    if (hlen > KS_MAX_HEADER) ks_problem(e->problem, sizeof e->problem, "implausible header length %u", hlen);
    if (check_payload) ks_entry_payload_fd(fd, e);
    return 0;
}

/* Whether a file name is "<32 hex>.<ext>"; *d gets the digest it names. */
static int ks_digest_name(const char *name, const char *ext, kcache_hash128 *d)
{
    char tmp[40];
    size_t n = strlen(name);
    if (n != 36 || strcmp(name + 32, ext) != 0) return 0;
    memcpy(tmp, name, 32);
    memcpy(tmp + 32, ".kce", 5);
    return kcache__parse_entry_name(tmp, d);
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
        int cut = strncmp(f->preview, "...", 3) == 0 || f->size > KCACHE__PREVIEW_BYTES;
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
    ki_fmt(out, cap, "%s%s%s%s%s", (d->diff & KCACHE__STAMP_MTIME) ? "mtime" : "",
           (d->diff & KCACHE__STAMP_MTIME) && (d->diff & (KCACHE__STAMP_SIZE | KCACHE__STAMP_CONTENT)) ? ", " : "",
           (d->diff & KCACHE__STAMP_SIZE) ? "size" : "",
           (d->diff & KCACHE__STAMP_SIZE) && (d->diff & KCACHE__STAMP_CONTENT) ? ", " : "",
           (d->diff & KCACHE__STAMP_CONTENT) ? "content" : "");
}

/* One line about a dependency now: "mtime same, size same, content same", "missing now", ... */
static void ks_dep_now(const ks_dep *d, char *out, size_t cap)
{
    if (!d->checkable) { ki_fmt(out, cap, "%s", d->why_not ? d->why_not : "not checked"); return; }
    if (!d->exists) { ki_fmt(out, cap, "missing now (%s)", strerror(d->err)); return; }
    if (!d->regular) { ki_fmt(out, cap, "not a regular file now"); return; }
    if (!d->hashed && !d->sized) { ki_fmt(out, cap, "unreadable now (%s)", strerror(d->err)); return; }
    ki_fmt(out, cap, "mtime %s, size %s, content %s%s", (d->diff & KCACHE__STAMP_MTIME) ? (d->f->mtime_ns ? "differs" : "not recorded") : "same",
           (d->diff & KCACHE__STAMP_SIZE) ? "differs" : "same", (d->diff & KCACHE__STAMP_CONTENT) ? "differs" : "same",
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
        ki_fmt(v->text, sizeof v->text, "entry corrupt: %s", entry_err ? entry_err : e->problem);
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
    if (entry > 0 && e->payload == 0) {
        v->code = KS_CORRUPT;
        ki_fmt(v->text, sizeof v->text, "entry corrupt: %s", e->problem);
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

static int ks_preview_is_digest(const kcache_key_field *f)
{
    const char *p = f->preview;
    if (f->type != KCACHE_FIELD_BYTES || *p != '<') return 0;
    p++;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return strncmp(p, " bytes xxh128:", 14) == 0;
}

/* "    name  type  "preview"" lines of a key's fields (file fields with their stamp now, when deps). */
static void ks_fields_text(ki_out *o, const kcache_key *k, const ks_dep *deps, size_t indent)
{
    const kcache_key_field *f = kcache__key_fields(k);
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
    const kcache_key_field *f = kcache__key_fields(k);
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
                              (dp->diff & KCACHE__STAMP_MTIME) ? "false" : "true", (dp->diff & KCACHE__STAMP_SIZE) ? "false" : "true",
                              (dp->diff & KCACHE__STAMP_CONTENT) ? "false" : "true", dp->stale ? "true" : "false");
                }
                ko_puts(o, "}");
            }
        }
        ko_puts(o, "}");
    }
    ko_puts(o, "]");
}

/* The dependency checks of a key's file fields, in field order (free the result). */
static ks_dep *ks_deps_of(const kcache_key *k, const ki_opts *op, uint32_t owner, size_t *n)
{
    const kcache_key_field *f = kcache__key_fields(k);
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
/* A unit's index: i/XX/<xxh128 of the unit>.kci, an append-only log replayed as kcache does.  */

typedef struct ks_index {
    const unsigned char *buf;
    size_t len, hlen, ulen;
    size_t skipped, stretches;       /* bytes that do not decode as a record (kcache skips them), in how many places */
    size_t skipped_end;              /* (decoding) just past the last skipped byte, from hlen */
    char unit[KCACHE_UNIT_MAX];      /* the unit, NUL-terminated (ulen bytes; a NUL inside cuts it) */
    uint64_t compacted;              /* the log's length after its last rewrite */
    size_t records, kinds[4];        /* records decoded, by kind (live, gone, missed, forgotten) */
    kcache__ix_item *list[KCACHE__IX_LISTS];
    uint32_t n[KCACHE__IX_LISTS], cap[KCACHE__IX_LISTS];
    size_t dropped[KCACHE__IX_LISTS]; /* older gone and missed items kcache forgets too */
} ks_index;

static void ks_index_free(ks_index *ix)
{
    int l;
    for (l = 0; l < KCACHE__IX_LISTS; l++) free(ix->list[l]);
    memset(ix, 0, sizeof *ix);
}

static int ks_index_push(ks_index *ix, int l, const kcache__ix_item *it)
{
    if (l != KCACHE__IX_LIVE && ix->n[l] == KCACHE__IX_KEEP) { /* bounded as kcache bounds it: the oldest goes */
        memmove(ix->list[l], ix->list[l] + 1, sizeof *it * (KCACHE__IX_KEEP - 1));
        ix->n[l]--;
        ix->dropped[l]++;
    }
    if (ix->n[l] == ix->cap[l]) {
        uint32_t nc = ix->cap[l] ? ix->cap[l] * 2 : 8;
        kcache__ix_item *ni = (kcache__ix_item *)realloc(ix->list[l], sizeof *ni * nc);
        if (!ni) return 0;
        ix->list[l] = ni;
        ix->cap[l] = nc;
    }
    ix->list[l][ix->n[l]++] = *it;
    return 1;
}

/* Decodes an index held in memory (buf stays the caller's; items point into it) as
   kcache__ix_read does: a damaged or torn record is skipped byte by byte up to the next sound
   one.  0 when its header is sound; -1 with a message when it is not a kcache index or its
   header fails. */
static int ks_index_decode(const unsigned char *buf, size_t len, ks_index *ix, char *err, size_t errcap)
{
    kcache__rbuf r;
    kcache__ix_item *recs = NULL;
    unsigned char *kinds = NULL;
    uint32_t *table = NULL;
    size_t cap, tsz, mask, nrec = 0, i;
    unsigned ver;
    memset(ix, 0, sizeof *ix);
    ix->buf = buf;
    ix->len = len;
    if (len < 8 || memcmp(buf, "KCINDEX", 8) != 0) { ki_fmt(err, errcap, "not a kcache index (no KCINDEX magic)"); return -1; }
    if (len < 26) { ki_fmt(err, errcap, "truncated: %zu bytes, shorter than an index header", len); return -1; }
    ver = kcache__get_u16(buf + 8);
    if (ver != KCACHE__IX_VERSION) {
        ki_fmt(err, errcap, "index format version %u; this tool reads version %d", ver, KCACHE__IX_VERSION);
        return -1;
    }
    ix->ulen = kcache__get_u16(buf + 24);
    if (ix->ulen == 0 || ix->ulen >= KCACHE_UNIT_MAX) { ki_fmt(err, errcap, "implausible unit name length %zu", ix->ulen); return -1; }
    ix->hlen = 26 + ix->ulen + 8;
    if (len < ix->hlen) { ki_fmt(err, errcap, "truncated: %zu bytes, the header needs %zu", len, ix->hlen); return -1; }
    if (kcache__get_u64(buf + ix->hlen - 8) != kcache_hash(buf, ix->hlen - 8).lo) {
        ki_fmt(err, errcap, "index header checksum fails");
        return -1;
    }
    memcpy(ix->unit, buf + 26, ix->ulen);
    ix->unit[ix->ulen] = 0;
    ix->compacted = kcache__get_u64(buf + 16);
    cap = (len - ix->hlen) / 60 + 1; /* a record is at least 60 bytes */
    for (tsz = 64; tsz < cap * 2; tsz <<= 1) {
    }
    mask = tsz - 1;
    recs = (kcache__ix_item *)malloc(sizeof *recs * cap);
    kinds = (unsigned char *)malloc(cap);
    table = (uint32_t *)malloc(sizeof *table * tsz);
    if (!recs || !kinds || !table) {
        free(recs); free(kinds); free(table);
        ki_fmt(err, errcap, "out of memory");
        return -1;
    }
    memset(table, 0xff, sizeof *table * tsz);
    r.p = buf; r.len = len; r.pos = ix->hlen; r.bad = 0;
    while (nrec < cap && r.pos < r.len) {
        size_t at = r.pos, h;
        int kind = kcache__ix_decode(&r, &recs[nrec]);
        if (kind < 0) { /* damaged or torn: look for the next sound record, as kcache does */
            if (!ix->skipped || at != ix->hlen + ix->skipped_end) ix->stretches++;
            ix->skipped++;
            ix->skipped_end = at + 1 - ix->hlen;
            r.pos = at + 1;
            continue;
        }
        kinds[nrec] = (unsigned char)kind;
        ix->kinds[kind]++;
        if (kind != KCACHE__IX_MISSED) { /* the latest state of each digest wins */
            for (h = (size_t)recs[nrec].digest.lo & mask; table[h] != 0xffffffffu; h = (h + 1) & mask)
                if (ks_same(recs[table[h]].digest, recs[nrec].digest)) break;
            table[h] = (uint32_t)nrec;
        }
        nrec++;
    }
    if (r.pos < r.len) { ix->skipped += r.len - r.pos; if (ix->skipped_end != r.pos - ix->hlen) ix->stretches++; }
    ix->records = nrec;
    for (i = 0; i < nrec; i++) {
        size_t h;
        int ok = 1;
        if (kinds[i] == KCACHE__IX_MISSED) ok = ks_index_push(ix, KCACHE__IX_MISSED, &recs[i]);
        else if (kinds[i] != KCACHE__IX_FORGET) {
            for (h = (size_t)recs[i].digest.lo & mask; table[h] != 0xffffffffu; h = (h + 1) & mask)
                if (ks_same(recs[table[h]].digest, recs[i].digest)) break;
            if (table[h] == i) ok = ks_index_push(ix, kinds[i], &recs[i]);
        }
        if (!ok) {
            free(recs); free(kinds); free(table);
            ks_index_free(ix);
            ki_fmt(err, errcap, "out of memory");
            return -1;
        }
    }
    free(recs);
    free(kinds);
    free(table);
    return 0;
}

/* Reads a whole index file (at most KCACHE__IX_MAX bytes, as kcache reads it). */
static unsigned char *ks_read_index_fd(int fd, size_t *len, char *err, size_t errcap)
{
    struct stat sb;
    unsigned char *buf;
    long long got;
    if (fstat(fd, &sb) != 0) { ki_fmt(err, errcap, "cannot stat: %s", strerror(errno)); return NULL; }
    if (!S_ISREG(sb.st_mode)) { ki_fmt(err, errcap, "not a regular file"); return NULL; }
    if ((uint64_t)sb.st_size > KCACHE__IX_MAX) {
        ki_fmt(err, errcap, "%lld bytes: larger than any index kcache reads (%zu MiB)", (long long)sb.st_size, KCACHE__IX_MAX >> 20);
        return NULL;
    }
    buf = (unsigned char *)malloc(sb.st_size ? (size_t)sb.st_size : 1);
    if (!buf) { ki_fmt(err, errcap, "out of memory"); return NULL; }
    got = ks_pread(fd, buf, (size_t)sb.st_size, 0);
    if (got < 0) { ki_fmt(err, errcap, "cannot read: %s", strerror(errno)); free(buf); return NULL; }
    *len = (size_t)got;
    return buf;
}

/* ---------------------------------------------------------------------------------------- */
/* config.file: the accounting header, the eviction log, the use table.                      */

typedef struct ks_cf {
    int present;             /* a regular file of at least a header's size */
    int valid;               /* as kcache__acct_valid decides */
    int magic_ok, version_ok, geometry_ok, sum_ok;
    uint64_t file_size, nslots;
    uint32_t version, lg;
    uint64_t accounted, entries, generation, limit, evictions;
    uint32_t busy;
    int64_t created;
    uint64_t evlog_next;
    struct { kcache_hash128 d; int64_t when; uint64_t size; } evlog[KCACHE__EVLOG_SLOTS];
    int evlog_n;             /* slots in use */
    char why[160];           /* when not present or not valid */
} ks_cf;

/* Decodes config.file's first page (hdr holds KCACHE__ACCT_HEADER bytes) of a file of file_size. */
static void ks_cf_decode(const unsigned char *hdr, uint64_t file_size, ks_cf *c)
{
    int i;
    memset(c, 0, sizeof *c);
    c->present = 1;
    c->file_size = file_size;
    c->magic_ok = memcmp(hdr, "KCACHECF", 8) == 0;
    c->version = kcache__get_u32(hdr + 8);
    c->version_ok = c->version == KCACHE__ACCT_VERSION && kcache__get_u32(hdr + 12) == KCACHE__ACCT_HEADER;
    c->lg = kcache__get_u32(hdr + 16);
    c->geometry_ok = kcache__get_u32(hdr + 20) == KCACHE__WAYS && c->lg >= 4 && c->lg <= 24 &&
                     file_size == KCACHE__ACCT_HEADER + ((uint64_t)KCACHE__WAYS << c->lg) * KCACHE__SLOT;
    c->sum_ok = kcache__get_u64(hdr + KCACHE__ACCT_SUMMED) == kcache_hash(hdr, KCACHE__ACCT_SUMMED).lo;
    c->valid = kcache__acct_valid(hdr, file_size);
    c->accounted = kcache__get_u64(hdr + 24);
    c->entries = kcache__get_u64(hdr + 32);
    c->generation = kcache__get_u64(hdr + 40);
    c->busy = kcache__get_u32(hdr + 48);
    c->limit = kcache__get_u64(hdr + 56);
    c->evictions = kcache__get_u64(hdr + 64);
    c->created = (int64_t)kcache__get_u64(hdr + 72);
    c->evlog_next = kcache__get_u64(hdr + KCACHE__EVLOG_AT - 8);
    for (i = 0; i < KCACHE__EVLOG_SLOTS; i++) {
        const unsigned char *s = hdr + KCACHE__EVLOG_AT + i * 32;
        c->evlog[i].d.lo = kcache__get_u64(s);
        c->evlog[i].d.hi = kcache__get_u64(s + 8);
        c->evlog[i].when = (int64_t)kcache__get_u64(s + 16);
        c->evlog[i].size = kcache__get_u64(s + 24);
        if (c->evlog[i].d.lo || c->evlog[i].d.hi) c->evlog_n++;
    }
    /* the use table's geometry: the file's size decides it, as kcache maps it */
    if (file_size > KCACHE__ACCT_HEADER && (file_size - KCACHE__ACCT_HEADER) % KCACHE__SLOT == 0) {
        uint64_t n = (file_size - KCACHE__ACCT_HEADER) / KCACHE__SLOT;
        if (n >= 4 * KCACHE__WAYS && n <= ((uint64_t)KCACHE__WAYS << 24) && (n & (n - 1)) == 0) c->nslots = n;
    }
    if (!c->valid)
        ki_fmt(c->why, sizeof c->why, "%s", !c->magic_ok ? "no KCACHECF magic" : !c->version_ok ? "another format version"
                                           : !c->geometry_ok ? "its size does not fit its use table" : "header checksum fails");
}

/* When the eviction log says d left the store (0 when it does not remember it). */
static int64_t ks_cf_evicted(const ks_cf *c, kcache_hash128 d)
{
    int i;
    if (!c || !c->present || !c->magic_ok) return 0;
    for (i = 0; i < KCACHE__EVLOG_SLOTS; i++)
        if (c->evlog[i].d.lo == d.lo && c->evlog[i].d.hi == d.hi) return c->evlog[i].when ? c->evlog[i].when : 1;
    return 0;
}

/* Reads config.file in a store (pread only).  0 when it is there and readable (valid or not). */
static int ks_cf_read(int dirfd, ks_cf *c)
{
    unsigned char hdr[KCACHE__ACCT_HEADER];
    struct stat sb;
    int fd = ks_open_in(dirfd, "config.file");
    memset(c, 0, sizeof *c);
    if (fd < 0) { ki_fmt(c->why, sizeof c->why, "%s", errno == ENOENT ? "missing" : strerror(errno)); return -1; }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) { close(fd); ki_fmt(c->why, sizeof c->why, "not a regular file"); return -1; }
    if (sb.st_size < KCACHE__ACCT_HEADER || ks_pread(fd, hdr, sizeof hdr, 0) != (long long)sizeof hdr) {
        close(fd);
        ki_fmt(c->why, sizeof c->why, "truncated (%lld bytes)", (long long)sb.st_size);
        return -1;
    }
    close(fd);
    ks_cf_decode(hdr, (uint64_t)sb.st_size, c);
    return 0;
}

/* The use table's slot for d (one pread of its bucket); 1 with its last use and size when found. */
static int ks_slot_lookup(int cffd, const ks_cf *c, kcache_hash128 d, int64_t *use, uint64_t *size)
{
    unsigned char b[KCACHE__WAYS * KCACHE__SLOT];
    uint64_t bucket;
    int w;
    if (cffd < 0 || !c->nslots) return 0;
    bucket = (d.lo & (c->nslots / KCACHE__WAYS - 1)) * KCACHE__WAYS;
    if (ks_pread(cffd, b, sizeof b, KCACHE__ACCT_HEADER + bucket * KCACHE__SLOT) != (long long)sizeof b) return 0;
    for (w = 0; w < KCACHE__WAYS; w++) {
        const unsigned char *s = b + w * KCACHE__SLOT;
        if (kcache__get_u64(s) == d.lo && kcache__get_u64(s + 8) == d.hi) {
            *use = (int64_t)kcache__get_u64(s + 16);
            *size = kcache__get_u64(s + 24);
            return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Explaining a traced miss from the index it is in.                                          */

/* Why a traced miss missed, in words: the closest live overload and the fields that differ, the
   dependency that changed, when it was evicted... */
static void ks_explain_miss(const ks_index *ix, const kcache__ix_item *m, const ks_cf *cf, int policy, char *out, size_t cap)
{
    kcache__sb b;
    kcache_key now;
    char t[64];
    uint32_t i;
    b.p = out; b.cap = cap; b.len = 0;
    out[0] = 0;
    if (kcache__record_parse(m->rec, m->rec_len, &now) != KCACHE_OK) {
        kcache_key_free(&now);
        kcache__sb_add(&b, "%s (the missed key's record does not decode)", ks_reason_text(m->reason));
        return;
    }
    switch (m->reason) {
    case KCACHE_REASON_FIELD: {
        /* the closest overload live now, else the closest of those gone since */
        kcache_key best, cand;
        int best_eq = -1, l;
        for (l = KCACHE__IX_LIVE; l <= KCACHE__IX_GONE && best_eq < 0; l++) {
            for (i = 0; i < ix->n[l]; i++) {
                int eq = kcache__equal_fields(ix->list[l][i].rec, ix->list[l][i].rec_len, &now, &cand);
                if (eq >= 0) kcache__keep_closest(&best, &best_eq, &cand, eq);
            }
            if (best_eq >= 0) {
                kcache__sb_add(&b, "closest of %u %s overload(s): ", ix->n[l], l == KCACHE__IX_LIVE ? "live" : "since gone");
                kcache__sb_diff(&b, &best, &now);
                kcache_key_free(&best);
            }
        }
        if (best_eq < 0) kcache__sb_add(&b, "a field differs (no overload left to compare with)");
        break;
    }
    case KCACHE_REASON_STAMP: {
        int at = -1;
        kcache_key stored;
        for (i = ix->n[KCACHE__IX_GONE]; i-- > 0;)
            if (ks_same(ix->list[KCACHE__IX_GONE][i].digest, m->digest)) { at = (int)i; break; }
        if (at >= 0 && kcache__record_parse(ix->list[KCACHE__IX_GONE][at].rec, ix->list[KCACHE__IX_GONE][at].rec_len, &stored) == KCACHE_OK &&
            stored.count == now.count) {
            size_t before;
            kcache__sb_add(&b, "a dependency changed: ");
            before = b.len;
            kcache__sb_stamps(&b, &stored, &now, policy);
            if (b.len == before) kcache__sb_add(&b, "(the stamps differ under another policy than %s)", ks_policy_name(policy));
        } else {
            kcache__sb_add(&b, "a dependency changed (the stored stamps are no longer in the index)");
        }
        if (at >= 0) kcache_key_free(&stored);
        break;
    }
    case KCACHE_REASON_EVICTED: {
        int64_t when = ks_cf_evicted(cf, m->digest);
        for (i = 0; i < ix->n[KCACHE__IX_GONE] && !when; i++)
            if (ks_same(ix->list[KCACHE__IX_GONE][i].digest, m->digest)) when = ix->list[KCACHE__IX_GONE][i].when;
        ks_time(t, sizeof t, when);
        kcache__sb_add(&b, "evicted by the size limit%s%s", when > 1 ? " at " : "", when > 1 ? t : "");
        break;
    }
    case KCACHE_REASON_COLD:
        kcache__sb_add(&b, "cold: the unit had no stored overload then");
        break;
    default:
        kcache__sb_add(&b, "%s", ks_reason_text(m->reason));
        break;
    }
    kcache_key_free(&now);
    if (b.len >= cap && cap > 4) memcpy(out + cap - 4, "...", 4);
}

/* ---------------------------------------------------------------------------------------- */
/* The report of one unit's index.                                                           */

typedef struct ks_store_ref {
    int dirfd;               /* the store the index belongs to, or -1 */
    int cffd;                /* its config.file, or -1 */
    ks_cf cf;
    char path[4096];         /* its absolute path, "" when none */
    uint32_t owner;          /* its directory's owner: whose dependency files are read (and root's) */
} ks_store_ref;

/* What checking one live overload found. */
typedef struct ks_over {
    const kcache__ix_item *it;
    kcache_key key;          /* from the entry's record when it decodes, else the index's */
    int key_ok;
    ks_entry e;
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
    if (ov->key_ok) kcache_key_free(&ov->key);
    ks_entry_free(&ov->e);
    free(ov->deps);
    memset(ov, 0, sizeof *ov);
}

/* Checks one live overload: its entry in the store (header, key, payload) and its dependencies. */
static void ks_over_check(const kcache__ix_item *it, const ks_store_ref *st, const ki_opts *op, uint32_t owner, ks_over *ov)
{
    const kcache_key *k = NULL;
    memset(ov, 0, sizeof *ov);
    ov->it = it;
    ov->entry = -1;
    if (st && st->dirfd >= 0) {
        char rel[48];
        int fd;
        kcache__entry_name(it->digest, rel);
        fd = ks_open_in(st->dirfd, rel);
        if (fd < 0) {
            if (errno == ENOENT || errno == ENOTDIR) { ov->entry = 0; ov->evicted = ks_cf_evicted(&st->cf, it->digest); }
            else { ov->entry = 1; ki_fmt(ov->entry_err, sizeof ov->entry_err, "cannot open %s: %s", rel, errno == ELOOP ? "a symlink in place of the entry" : strerror(errno)); }
        } else {
            unsigned char *h = NULL;
            char err[200];
            ov->entry = 1;
            if (ks_entry_read_fd(fd, 1, &ov->e, &h, err, sizeof err) != 0) ki_fmt(ov->entry_err, sizeof ov->entry_err, "%s", err);
            else {
                if (!ks_same(ov->e.digest, it->digest)) { ov->e.name_digest = 0; ks_problem(ov->e.problem, sizeof ov->e.problem, "the entry's digest is not its file name's"); }
                else ov->e.name_digest = 1;
                if (ov->e.rec_bytes && (ov->e.rlen != it->rec_len || memcmp(ov->e.rec_bytes, it->rec, it->rec_len) != 0)) ov->rec_differs = 1;
                if (ov->e.rec == 1) { k = &ov->e.key; } /* the record kcache checks a lookup against */
                ov->e.rec_bytes = NULL;                 /* h goes now */
            }
            free(h);
            close(fd);
        }
    }
    if (k) {
        ov->key = *k;                /* moved: the entry no longer owns it */
        ov->e.key_set = 0;
        ov->key_ok = 1;
    } else {
        ov->key_ok = 1;
        if (kcache__record_parse(it->rec, it->rec_len, &ov->key) != KCACHE_OK) {
            kcache_key_free(&ov->key);
            ov->key_ok = 0;
        }
    }
    if (ov->key_ok) ov->deps = ks_deps_of(&ov->key, op, owner, &ov->ndeps);
    ks_verdict_of(ov->entry, &ov->e, ov->entry_err[0] ? ov->entry_err : NULL, ov->deps, ov->ndeps, ov->evicted, &ov->v);
    if (!ov->key_ok && ov->v.code == KS_PRESENT) {
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
    ks_text(o, ix->unit, ix->ulen);
    ko_putc(o, '\n');
    ks_size(sz, sizeof sz, ix->len);
    ko_printf(o, "log        %zu record%s, %s", ix->records, ix->records == 1 ? "" : "s", sz);
    if (ix->compacted) { ks_size(sz, sizeof sz, ix->compacted); ko_printf(o, " (rewritten at %s)", sz); }
    ko_putc(o, '\n');
    if (ix->skipped)
        ko_printf(o, "           damaged: %zu byte%s in %zu place%s do%s not decode as records (a torn\n"
                     "           tail or damage: kcache skips %s and reads on)\n",
                  ix->skipped, ix->skipped == 1 ? "" : "s", ix->stretches, ix->stretches == 1 ? "" : "s",
                  ix->skipped == 1 ? "es" : "", ix->skipped == 1 ? "it" : "them");
    if (st && st->path[0]) { ko_puts(o, "store      "); ks_wrap(o, st->path, 11, 11); }
    else ko_puts(o, "store      none (the index is not inside a store's i/XX/): entries not checked\n");
    ko_printf(o, "stamps     %s (%s)\n", ks_policy_name(op->stamp), op->stamp_from);
    ko_printf(o, "overloads  %u live\n", ix->n[KCACHE__IX_LIVE]);
    for (i = 0; i < ix->n[KCACHE__IX_LIVE] && !o->full; i++) {
        ks_over ov;
        const kcache__ix_item *it = &ix->list[KCACHE__IX_LIVE][i];
        ks_over_check(it, st, op, owner, &ov);
        counts[ov.v.code]++;
        if (i < KS_SHOW_MAX) {
            ks_short_hex(it->digest, hx);
            ks_time(t, sizeof t, it->when);
            ks_size(sz, sizeof sz, it->size);
            ko_printf(o, "  [%u] %s  stored %s, %s\n", i + 1, hx, t, sz);
            if (ov.key_ok) ks_fields_text(o, &ov.key, ov.deps, 6);
            if (ov.rec_differs) ko_puts(o, "      note: the entry's key record is not the index's (the entry's is shown)\n");
            ki_fmt(line, sizeof line, "verdict: %s", ov.v.text);
            ko_puts(o, "      ");
            ks_wrap(o, line, 6, 15);
        }
        ks_over_free(&ov);
    }
    if (ix->n[KCACHE__IX_LIVE] > KS_SHOW_MAX) ko_printf(o, "  ... %u more not shown\n", ix->n[KCACHE__IX_LIVE] - KS_SHOW_MAX);
    ko_printf(o, "gone       %u", ix->n[KCACHE__IX_GONE]);
    if (ix->dropped[KCACHE__IX_GONE]) ko_printf(o, " (and %zu older ones kcache forgets)", ix->dropped[KCACHE__IX_GONE]);
    ko_putc(o, '\n');
    for (i = 0; i < ix->n[KCACHE__IX_GONE] && !o->full; i++) {
        const kcache__ix_item *it = &ix->list[KCACHE__IX_GONE][i];
        kcache_key k;
        ks_short_hex(it->digest, hx);
        ks_time(t, sizeof t, it->when);
        ki_fmt(line, sizeof line, "%s  %s  %s: %s", t, hx, ks_reason_word(it->reason), ks_reason_text(it->reason));
        ko_puts(o, "  ");
        ks_wrap(o, line, 2, 6);
        if (kcache__record_parse(it->rec, it->rec_len, &k) == KCACHE_OK) ks_fields_text(o, &k, NULL, 6);
        else if (it->rec_len) ko_puts(o, "      (its key record does not decode)\n");
        kcache_key_free(&k);
    }
    ko_printf(o, "misses     %u traced", ix->n[KCACHE__IX_MISSED]);
    if (ix->dropped[KCACHE__IX_MISSED]) ko_printf(o, " (and %zu older ones kcache forgets)", ix->dropped[KCACHE__IX_MISSED]);
    ko_puts(o, ix->n[KCACHE__IX_MISSED] ? "\n" : " (KCACHE_TRACE=1 keeps them)\n");
    for (i = ix->n[KCACHE__IX_MISSED]; i-- > 0 && !o->full;) {
        const kcache__ix_item *it = &ix->list[KCACHE__IX_MISSED][i];
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
        len = (size_t)ki_fmt(line, sizeof line, "%u overload%s: ", ix->n[KCACHE__IX_LIVE], ix->n[KCACHE__IX_LIVE] == 1 ? "" : "s");
        for (c = 0; c < KS_NCODES; c++) {
            if (!counts[c]) continue;
            len += (size_t)ki_fmt(line + len, len < sizeof line ? sizeof line - len : 0, "%s%zu %s", sep, counts[c], ks_code_name[c]);
            sep = ", ";
            if (len >= sizeof line) break;
        }
        if (!ix->n[KCACHE__IX_LIVE]) ki_fmt(line, sizeof line, "no live overload: the next lookup of this unit compiles");
        ko_puts(o, "verdict    ");
        ks_wrap(o, line, 11, 11);
    }
}

static void ks_item_json_head(ki_out *o, const kcache__ix_item *it)
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
    ko_json_str(o, (const unsigned char *)ix->unit, ix->ulen);
    ko_printf(o, ",\n  \"log\": {\"bytes\": %zu, \"records\": %zu, \"rewritten_at\": %llu, \"damaged_bytes\": %zu, \"damaged_places\": %zu, "
                 "\"records_by_kind\": {\"live\": %zu, \"gone\": %zu, \"missed\": %zu, \"forgotten\": %zu}}",
              ix->len, ix->records, (unsigned long long)ix->compacted, ix->skipped, ix->stretches, ix->kinds[0], ix->kinds[1], ix->kinds[2],
              ix->kinds[3]);
    ko_printf(o, ",\n  \"stamp_policy\": \"%s\"", ks_policy_name(op->stamp));
    ko_puts(o, ",\n  \"overloads\": [");
    for (i = 0; i < ix->n[KCACHE__IX_LIVE] && !o->full; i++) {
        ks_over ov;
        const kcache__ix_item *it = &ix->list[KCACHE__IX_LIVE][i];
        ks_over_check(it, st, op, owner, &ov);
        counts[ov.v.code]++;
        if (i < KS_SHOW_MAX) {
            ko_puts(o, i ? ",\n    " : "\n    ");
            ks_item_json_head(o, it);
            ko_puts(o, ", \"fields\": ");
            if (ov.key_ok) ks_fields_json(o, &ov.key, ov.deps);
            else ko_puts(o, "null");
            ko_printf(o, ", \"entry\": {\"state\": \"%s\"", ov.entry < 0 ? "unchecked" : ov.entry == 0 ? "missing"
                                                          : (ov.entry_err[0] || ks_entry_header_bad(&ov.e) || ov.e.payload == 0) ? "corrupt" : "present");
            ko_puts(o, ", \"problem\": ");
            ko_json_cstr(o, ov.entry_err[0] ? ov.entry_err : ov.entry > 0 && ov.e.problem[0] ? ov.e.problem : NULL);
            ko_printf(o, ", \"record_differs_from_index\": %s", ov.rec_differs ? "true" : "false");
            ko_puts(o, ", ");
            ks_json_time(o, "evicted", ov.evicted > 1 ? ov.evicted : 0);
            ko_printf(o, "}, \"verdict\": {\"code\": \"%s\", \"text\": ", ks_code_name[ov.v.code]);
            ko_json_cstr(o, ov.v.text);
            ko_puts(o, "}}");
        }
        ks_over_free(&ov);
    }
    if (ix->n[KCACHE__IX_LIVE]) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"overloads_total\": %u", ix->n[KCACHE__IX_LIVE]);
    ko_puts(o, ",\n  \"gone\": [");
    for (i = 0; i < ix->n[KCACHE__IX_GONE] && !o->full; i++) {
        const kcache__ix_item *it = &ix->list[KCACHE__IX_GONE][i];
        kcache_key k;
        ko_puts(o, i ? ",\n    " : "\n    ");
        ks_item_json_head(o, it);
        ko_printf(o, ", \"reason\": \"%s\", \"reason_text\": ", ks_reason_word(it->reason));
        ko_json_cstr(o, ks_reason_text(it->reason));
        ko_puts(o, ", \"fields\": ");
        if (kcache__record_parse(it->rec, it->rec_len, &k) == KCACHE_OK) ks_fields_json(o, &k, NULL);
        else ko_puts(o, "null");
        kcache_key_free(&k);
        ko_puts(o, "}");
    }
    if (ix->n[KCACHE__IX_GONE]) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"gone_forgotten\": %zu", ix->dropped[KCACHE__IX_GONE]);
    ko_puts(o, ",\n  \"misses\": [");
    for (i = ix->n[KCACHE__IX_MISSED]; i-- > 0 && !o->full;) {
        const kcache__ix_item *it = &ix->list[KCACHE__IX_MISSED][i];
        kcache_key k;
        char why[600];
        ko_puts(o, i + 1 < ix->n[KCACHE__IX_MISSED] ? ",\n    " : "\n    ");
        ks_item_json_head(o, it);
        ko_printf(o, ", \"pid\": %u, \"reason\": \"%s\", \"explanation\": ", (unsigned)it->pid, ks_reason_word(it->reason));
        ks_explain_miss(ix, it, st ? &st->cf : NULL, op->stamp, why, sizeof why);
        ko_json_cstr(o, why);
        ko_puts(o, ", \"fields\": ");
        if (kcache__record_parse(it->rec, it->rec_len, &k) == KCACHE_OK) ks_fields_json(o, &k, NULL);
        else ko_puts(o, "null");
        kcache_key_free(&k);
        ko_puts(o, "}");
    }
    if (ix->n[KCACHE__IX_MISSED]) ko_puts(o, "\n  ");
    ko_printf(o, "],\n  \"misses_forgotten\": %zu", ix->dropped[KCACHE__IX_MISSED]);
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
    if (e->rec == 1) deps = ks_deps_of(&e->key, op, owner, &ndeps);
    ks_verdict_of(1, e, NULL, deps, ndeps, 0, &v);
    if (v.code == KS_PRESENT && strncmp(v.text, "present", 7) == 0) {
        char rest[sizeof v.text];
        ki_fmt(rest, sizeof rest, "%s", v.text + 7);
        ki_fmt(v.text, sizeof v.text, "sound%s", rest);
    }
    ks_hex(e->digest, hx);
    ks_time(t, sizeof t, e->created);
    if (op->json) {
        ko_puts(o, "{\n  \"format\": \"kcache-entry\",\n  \"file\": ");
        ko_json_cstr(o, file);
        ko_puts(o, ",\n  \"unit\": ");
        if (e->rec == 1) ko_json_cstr(o, e->key.unit); else ko_puts(o, "null");
        ko_printf(o, ",\n  \"digest\": \"%s\",\n  ", hx);
        ks_json_time(o, "created", e->created);
        ko_printf(o, ",\n  \"version\": %u, \"flags\": %u, \"header_bytes\": %u, \"record_bytes\": %u, \"payload_bytes\": %llu, "
                     "\"file_bytes\": %llu",
                  e->version, e->flags, e->hlen, e->rlen, (unsigned long long)e->plen, (unsigned long long)e->file_size);
        ko_puts(o, ",\n  \"payload_checksum\": ");
        ks_json_hex(o, e->psum);
        ko_printf(o, ",\n  \"checks\": {\"lengths\": %s, \"header_checksum\": ", e->lengths_ok ? "true" : "false");
        ko_json_tri(o, e->hdr_sum);
        ko_puts(o, ", \"padding\": "); ko_json_tri(o, e->pad);
        ko_puts(o, ", \"key_record\": "); ko_json_tri(o, e->rec);
        ko_puts(o, ", \"record_digest\": "); ko_json_tri(o, e->rec_digest);
        ko_puts(o, ", \"file_name_digest\": "); ko_json_tri(o, e->name_digest);
        ko_puts(o, ", \"payload_checksum\": "); ko_json_tri(o, e->payload);
        ko_puts(o, "},\n  \"problem\": ");
        ko_json_cstr(o, e->problem[0] ? e->problem : NULL);
        ko_puts(o, ",\n  \"fields\": ");
        if (e->rec == 1) ks_fields_json(o, &e->key, deps); else ko_puts(o, "null");
        ko_printf(o, ",\n  \"verdict\": {\"code\": \"%s\", \"text\": ", v.code == KS_PRESENT ? "sound" : ks_code_name[v.code]);
        ko_json_cstr(o, v.text);
        ko_puts(o, "}\n}\n");
    } else {
        ko_puts(o, "entry      ");
        ks_wrap(o, file, 11, 11);
        ko_puts(o, "unit       ");
        if (e->rec == 1) ks_text(o, e->key.unit, strlen(e->key.unit)); else ko_puts(o, "? (the key record does not decode)");
        ko_printf(o, "\ndigest     %s%s\n", hx, e->name_digest == 1 ? " (the file name's)" : e->name_digest == 0 ? " (NOT the file name's)" : "");
        ko_printf(o, "created    %s\n", t);
        ks_size(s1, sizeof s1, e->plen);
        ks_size(s2, sizeof s2, e->file_size);
        ko_printf(o, "sizes      header %u bytes (key record %u), payload %s, file %s\n", e->hlen, e->rlen, s1, s2);
        ko_printf(o, "checks     lengths %s, header checksum %s, padding %s,\n", e->lengths_ok ? "ok" : "BAD",
                  e->hdr_sum == 1 ? "ok" : e->hdr_sum == 0 ? "FAILS" : "not checkable", e->pad == 1 ? "zero" : e->pad == 0 ? "NOT ZERO" : "not checkable");
        ko_printf(o, "           key record %s, payload checksum %s\n",
                  e->rec != 1 ? (e->rec == 0 ? "DOES NOT DECODE" : "not checkable") : e->rec_digest == 1 ? "ok (its digest is the header's)" : "ok but its digest is NOT the header's",
                  e->payload == 1 ? "ok" : e->payload == 0 ? "FAILS" : "not checkable");
        if (e->rec == 1) {
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
    if (ks_entry_decode(buf, len, len, &e, err, errcap) != 0) { ks_entry_free(&e); return 2; }
    ks_entry_payload_mem(buf, len, &e);
    ks_entry_report(o, &e, file, op, (uint32_t)geteuid());
    ks_entry_free(&e);
    return 0;
}

/* Decodes and reports one index held in memory, with or without its store.  0, or 2 with err. */
static int ki_index_report_mem(const unsigned char *buf, size_t len, const char *file, const ks_store_ref *st, uint32_t owner,
                               const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_index ix;
    if (ks_index_decode(buf, len, &ix, err, errcap) != 0) return 2;
    if (op->json) ks_index_json(o, &ix, file, st, op, owner);
    else ks_index_text(o, &ix, file, st, op, owner);
    ks_index_free(&ix);
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
    if (S->ref.cffd >= 0) close(S->ref.cffd);
    if (S->ref.dirfd >= 0) close(S->ref.dirfd);
    S->units = NULL;
    S->utable = NULL;
    S->ref.cffd = S->ref.dirfd = -1;
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

/* The unit an entry belongs to, from the start of its key record (one pread). */
static int ks_entry_unit_fd(int fd, char *out, size_t *len)
{
    unsigned char h[KCACHE__ENTRY_FIXED + 2 + KCACHE_UNIT_MAX];
    long long n = ks_pread(fd, h, sizeof h, 0);
    size_t ul;
    if (n < KCACHE__ENTRY_FIXED + 2 || memcmp(h, "KCENTRY", 8) != 0) return 0;
    ul = kcache__get_u16(h + KCACHE__ENTRY_FIXED);
    if (ul == 0 || ul >= KCACHE_UNIT_MAX || (size_t)n < KCACHE__ENTRY_FIXED + 2 + ul) return 0;
    memcpy(out, h + KCACHE__ENTRY_FIXED + 2, ul);
    out[ul] = 0;
    *len = ul;
    return 1;
}
static int ks_entry_unit(int dirfd_, kcache_hash128 d, char *out, size_t *len)
{
    char rel[48];
    int fd, ok;
    kcache__entry_name(d, rel);
    if ((fd = ks_open_in(dirfd_, rel)) < 0) return 0;
    ok = ks_entry_unit_fd(fd, out, len);
    close(fd);
    return ok;
}
static int ks_entry_exists(int dirfd_, kcache_hash128 d)
{
    char rel[48];
    struct stat sb;
    kcache__entry_name(d, rel);
    return fstatat(dirfd_, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Keeps the newest KS_SHOW_MISSES traced misses of the store. */
static void ks_miss_offer(ks_store *S, const ks_index *ix, const kcache__ix_item *m, int policy)
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
    memcpy(slot->unit, ix->unit, ix->ulen + 1);
    slot->ulen = ix->ulen;
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

/* Opens DIR/SUB (a directory, not a symlink) for reading its names. */
static DIR *ks_opendir_in(int dirfd_, const char *sub, int *fd)
{
    DIR *dp;
    *fd = openat(dirfd_, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0) return NULL;
    dp = fdopendir(*fd);
    if (!dp) { close(*fd); *fd = -1; }
    return dp;
}

static int ks_dot(const char *n) { return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])); }

/* Calls fn for every name (but . and ..) in the shards top/00 .. top/ff of a store (top 'e' or
   'i'), with the shard's descriptor and its name ("e/XX"); fn returns nonzero to stop. */
typedef int (*ks_shard_fn)(void *ctx, int shardfd, const char *rel, const char *name);
static void ks_each_in_shards(int dirfd_, char top, ks_shard_fn fn, void *ctx)
{
    int shard, stop = 0;
    for (shard = 0; shard < 256 && !stop; shard++) {
        char rel[8];
        int fd;
        DIR *dp;
        struct dirent *de;
        snprintf(rel, sizeof rel, "%c/%02x", top, shard);
        if (!(dp = ks_opendir_in(dirfd_, rel, &fd))) continue;
        while (!stop && (de = readdir(dp)) != NULL)
            if (!ks_dot(de->d_name)) stop = fn(ctx, fd, rel, de->d_name);
        closedir(dp);
    }
}

typedef struct ks_walk_ctx { ks_store *S; const ki_opts *op; } ks_walk_ctx;
static int ks_walk_entry(void *ctx, int fd, const char *rel, const char *name)
{
    ks_store *S = ((ks_walk_ctx *)ctx)->S;
    const ki_opts *op = ((ks_walk_ctx *)ctx)->op;
    kcache_hash128 d;
    struct stat sb;
    char ubuf[KCACHE_UNIT_MAX];
    size_t ulen = 0;
    int efd, got_unit = 0;
    int64_t use;
    uint64_t ssize;
    if (fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) return 0;
    if (!ks_digest_name(name, ".kce", &d) || !S_ISREG(sb.st_mode)) {
        if (!S_ISDIR(sb.st_mode)) { S->stray++; S->stray_bytes += (uint64_t)sb.st_size; }
        return 0;
    }
    S->entries++; /* counted as kcache's scan counts it, even in the wrong shard */
    S->bytes += (uint64_t)sb.st_size;
    if (S->table_read) {
        if (!ks_slot_lookup(S->ref.cffd, &S->ref.cf, d, &use, &ssize)) S->no_slot++;
        else if (ssize != (uint64_t)sb.st_size) S->size_differs++;
    }
    if (strncmp(name, rel + 2, 2) != 0) { S->misplaced++; return 0; } /* but a lookup never finds it */
    efd = openat(fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (efd < 0) { S->unreadable++; return 0; }
    if (op->verify) {
        ks_entry e;
        unsigned char *h = NULL;
        char err[200];
        int rc = ks_entry_read_fd(efd, 1, &e, &h, err, sizeof err);
        S->verified++;
        if (rc == 0) {
            e.name_digest = ks_same(e.digest, d);
            if (!e.name_digest) ks_problem(e.problem, sizeof e.problem, "the entry's digest is not its file name's");
            if (e.rec == 1) { ulen = strlen(e.key.unit); memcpy(ubuf, e.key.unit, ulen + 1); got_unit = 1; }
        }
        if (rc != 0 || e.problem[0]) {
            if (S->bad < KS_SHOW_BAD) {
                ks_bad *b = &S->badlist[S->bad];
                ki_fmt(b->file, sizeof b->file, "%s/%s", rel, name);
                ki_fmt(b->why, sizeof b->why, "%s", rc != 0 ? err : e.problem);
                b->unit[0] = 0;
                if (got_unit || ks_entry_unit_fd(efd, ubuf, &ulen)) { memcpy(b->unit, ubuf, ulen + 1); got_unit = 1; }
            }
            S->bad++;
        }
        if (rc == 0) ks_entry_free(&e);
        free(h);
    }
    if (!got_unit) got_unit = ks_entry_unit_fd(efd, ubuf, &ulen);
    close(efd);
    if (got_unit) {
        ks_unit *u = ks_unit_named(S, ubuf, ulen);
        if (u) { u->entries++; u->bytes += (uint64_t)sb.st_size; }
    }
    return 0;
}
static void ks_walk_entries(ks_store *S, const ki_opts *op)
{
    ks_walk_ctx c;
    c.S = S;
    c.op = op;
    ks_each_in_shards(S->ref.dirfd, 'e', ks_walk_entry, &c);
}

/* Streams the use table: slots in use, their bytes, oldest and newest use, slots without a file. */
static void ks_walk_table(ks_store *S)
{
    static unsigned char buf[2048 * KCACHE__SLOT];
    uint64_t i = 0, n = S->ref.cf.nslots;
    while (i < n) {
        size_t want = (size_t)((n - i) * KCACHE__SLOT < sizeof buf ? (n - i) * KCACHE__SLOT : sizeof buf), k;
        long long got = ks_pread(S->ref.cffd, buf, want, KCACHE__ACCT_HEADER + i * KCACHE__SLOT);
        if (got < (long long)want) { S->table_read = 0; return; }
        for (k = 0; k < want; k += KCACHE__SLOT) {
            kcache_hash128 d;
            int64_t use;
            d.lo = kcache__get_u64(buf + k);
            d.hi = kcache__get_u64(buf + k + 8);
            if (!d.lo && !d.hi) continue;
            use = (int64_t)kcache__get_u64(buf + k + 16);
            S->slots_used++;
            S->slot_bytes += kcache__get_u64(buf + k + 24);
            if (!S->oldest || use < S->oldest) { S->oldest = use; S->oldest_d = d; }
            if (!S->newest || use > S->newest) { S->newest = use; S->newest_d = d; }
            if (!ks_entry_exists(S->ref.dirfd, d)) S->slots_without_file++;
        }
        i += want / KCACHE__SLOT;
    }
}

static void ks_walk_indexes(ks_store *S, const ki_opts *op)
{
    int shard;
    for (shard = 0; shard < 256; shard++) {
        char rel[8];
        int fd;
        DIR *dp;
        struct dirent *de;
        snprintf(rel, sizeof rel, "i/%02x", shard);
        if (!(dp = ks_opendir_in(S->ref.dirfd, rel, &fd))) continue;
        while ((de = readdir(dp)) != NULL) {
            kcache_hash128 id;
            ks_index ix;
            ks_unit *u;
            unsigned char *buf;
            size_t len = 0;
            char err[200];
            uint32_t k;
            int ifd;
            if (!ks_digest_name(de->d_name, ".kci", &id)) continue;
            S->indexes++;
            if ((ifd = openat(fd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) < 0) { S->bad_indexes++; continue; }
            buf = ks_read_index_fd(ifd, &len, err, sizeof err);
            close(ifd);
            if (!buf || ks_index_decode(buf, len, &ix, err, sizeof err) != 0) {
                S->bad_indexes++;
                if ((u = ks_unit_get(S, id)) != NULL) { u->has_index = 1; u->index_bad = 1; }
                free(buf);
                continue;
            }
            if (op->verify) S->indexes_verified++;
            if (!ks_same(kcache_hash(ix.unit, ix.ulen), id) || strlen(ix.unit) != ix.ulen || strncmp(de->d_name, rel + 2, 2) != 0) {
                S->misplaced_indexes++; /* kcache never reads it under this name */
            } else if ((u = ks_unit_named(S, ix.unit, ix.ulen)) != NULL) {
                u->has_index = 1;
                u->live = ix.n[KCACHE__IX_LIVE];
                u->gone = ix.n[KCACHE__IX_GONE];
                u->missed = ix.n[KCACHE__IX_MISSED];
                for (k = 0; k < ix.n[KCACHE__IX_LIVE]; k++)
                    if (!ks_entry_exists(S->ref.dirfd, ix.list[KCACHE__IX_LIVE][k].digest)) u->live_missing++;
                S->live_missing += u->live_missing;
            }
            if (ix.skipped) S->torn_indexes++;
            for (k = 0; k < ix.n[KCACHE__IX_MISSED]; k++) ks_miss_offer(S, &ix, &ix.list[KCACHE__IX_MISSED][k], op->stamp);
            ks_index_free(&ix);
            free(buf);
        }
        closedir(dp);
    }
}

static void ks_walk_tmp(ks_store *S)
{
    int fd;
    DIR *dp = ks_opendir_in(S->ref.dirfd, "tmp", &fd);
    struct dirent *de;
    int64_t now = kcache__now_ns();
    if (!dp) return;
    while ((de = readdir(dp)) != NULL) {
        struct stat sb;
        unsigned long pid;
        char *end;
        if (de->d_name[0] == '.') continue;
        if (fstatat(fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) continue;
        S->tmp_files++;
        S->tmp_bytes += (uint64_t)sb.st_size;
        (void)end;
        /* what kcache__store_sweep_temps removes: a regular file with a name kcache's writers make,
           of a dead writer or a day old (anything else there is not kcache's, and stays) */
        if (kcache__temp_name(de->d_name, &pid) && S_ISREG(sb.st_mode) &&
            ((pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) || (int64_t)sb.st_mtime * 1000000000 < now - (int64_t)86400 * 1000000000)) {
            S->tmp_orphaned++;
            S->tmp_orphan_bytes += (uint64_t)sb.st_size;
        } else {
            S->tmp_live++;
        }
    }
    closedir(dp);
}

/* Opens a store read-only: its directory, config.file.  0, or -1 with a message. */
static int ks_store_open(const char *path, ks_store_ref *ref, char *err, size_t errcap)
{
    struct stat sb;
    memset(ref, 0, sizeof *ref);
    ref->cffd = -1;
    ref->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ref->dirfd < 0) { ki_fmt(err, errcap, "cannot open the directory: %s", strerror(errno)); return -1; }
    if (ki_abspath(path, ref->path, sizeof ref->path) != 0) ki_fmt(ref->path, sizeof ref->path, "%s", path);
    ref->owner = fstat(ref->dirfd, &sb) == 0 ? (uint32_t)sb.st_uid : 0;
    if (fstatat(ref->dirfd, "config.file", &sb, AT_SYMLINK_NOFOLLOW) != 0 && !kcache__is_dir_nofollow(ref->dirfd, "e") &&
        !kcache__is_dir_nofollow(ref->dirfd, "i")) {
        DIR *dp = fdopendir(dup(ref->dirfd));
        int readable = dp != NULL && readdir(dp) != NULL;
        if (dp) closedir(dp);
        ki_fmt(err, errcap, "%s", readable ? "not a kcache store (no config.file, e/ or i/)" : "cannot read the directory");
        close(ref->dirfd);
        ref->dirfd = -1;
        return -1;
    }
    ks_cf_read(ref->dirfd, &ref->cf);
    ref->cffd = ks_open_in(ref->dirfd, "config.file");
    if (ref->cffd >= 0 && (fstat(ref->cffd, &sb) != 0 || !S_ISREG(sb.st_mode))) { close(ref->cffd); ref->cffd = -1; }
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
    else if (!c->valid) ks_add(P, "config.file damaged (%s): the next writer rebuilds it by a scan", c->why);
    if (c->present && c->busy) ks_add(P, "config.file marked busy: a writer is updating it now, or died mid-update (the next one rebuilds it)");
    if (c->present && c->magic_ok && (c->accounted != S->bytes || c->entries != S->entries)) {
        ks_size(a, sizeof a, c->accounted);
        ks_size(b, sizeof b, S->bytes);
        ks_add(P, "the accounting (%s, %llu entries) differs from the entries (%s, %llu entries)", a, (unsigned long long)c->entries, b,
               (unsigned long long)S->entries);
    }
    if (S->table_read && (S->no_slot || S->slots_without_file || S->size_differs))
        ks_add(P, "the use table disagrees with e/: %llu entries without a slot, %llu slots without an entry, %llu sizes differ",
               (unsigned long long)S->no_slot, (unsigned long long)S->slots_without_file, (unsigned long long)S->size_differs);
    if (c->present && c->valid && c->limit && (c->accounted > c->limit || S->bytes > c->limit)) {
        ks_size(a, sizeof a, S->bytes > c->accounted ? S->bytes : c->accounted);
        ks_size(b, sizeof b, c->limit);
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
        ks_time(t, sizeof t, c->created);
        ki_fmt(line, sizeof line, "config.file %s: format %u, created %s, use table of %llu slots, generation %llu%s",
               c->valid ? "valid" : "DAMAGED", c->version, t, (unsigned long long)c->nslots, (unsigned long long)c->generation,
               c->busy ? ", BUSY" : "");
        if (!c->valid) ki_fmt(line + strlen(line), sizeof line - strlen(line), " (%s: its numbers are not trusted)", c->why);
    }
    ks_wrap(o, line, 11, 11);
    if (c->present) {
        if (c->limit) { ks_size(a, sizeof a, c->limit); ko_printf(o, "limit      %s (%llu bytes; the last writer's)\n", a, (unsigned long long)c->limit); }
        else ko_puts(o, "limit      none (the last writer had no limit)\n");
        ks_size(a, sizeof a, c->accounted);
        ko_printf(o, "accounted  %s in %llu entr%s (%llu bytes)\n", a, (unsigned long long)c->entries, c->entries == 1 ? "y" : "ies",
                  (unsigned long long)c->accounted);
    }
    ks_size(a, sizeof a, S->bytes);
    ki_fmt(line, sizeof line, "%s in %llu entr%s (%llu bytes)", a, (unsigned long long)S->entries, S->entries == 1 ? "y" : "ies",
           (unsigned long long)S->bytes);
    if (c->present && c->magic_ok) {
        if (c->accounted == S->bytes && c->entries == S->entries) ki_fmt(line + strlen(line), sizeof line - strlen(line), ": as accounted");
        else
            ki_fmt(line + strlen(line), sizeof line - strlen(line), ": DIFFERS from the accounting by %+lld bytes, %+lld entries",
                   (long long)(S->bytes - c->accounted), (long long)(S->entries - c->entries));
    }
    ko_puts(o, "real       ");
    ks_wrap(o, line, 11, 11);
    if (S->table_read) {
        ks_size(a, sizeof a, S->slot_bytes);
        ki_fmt(line, sizeof line, "%llu of %llu slots used (%s)", (unsigned long long)S->slots_used, (unsigned long long)c->nslots, a);
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
            if (!ks_entry_unit(S->ref.dirfd, S->oldest_d, u1, &l1)) { memcpy(u1, "?", 2); l1 = 1; }
            if (!ks_entry_unit(S->ref.dirfd, S->newest_d, u2, &l2)) { memcpy(u2, "?", 2); l2 = 1; }
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
    if (c->present && c->magic_ok) {
        int64_t latest = 0;
        for (k = 0; k < KCACHE__EVLOG_SLOTS; k++) if (c->evlog[k].when > latest) latest = c->evlog[k].when;
        ko_printf(o, "evictions  %llu", (unsigned long long)c->evictions);
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
    ko_printf(o, ",\n  \"config\": {\"present\": %s, \"valid\": %s, \"problem\": ", c->present ? "true" : "false", c->valid ? "true" : "false");
    ko_json_cstr(o, c->valid ? NULL : c->why[0] ? c->why : "missing");
    if (c->present) {
        ko_printf(o, ", \"version\": %u, \"slots\": %llu, \"generation\": %llu, \"busy\": %s, ", c->version, (unsigned long long)c->nslots,
                  (unsigned long long)c->generation, c->busy ? "true" : "false");
        ks_json_time(o, "created", c->created);
        ko_printf(o, ", \"limit\": %llu, \"accounted_bytes\": %llu, \"accounted_entries\": %llu, \"evictions\": %llu",
                  (unsigned long long)c->limit, (unsigned long long)c->accounted, (unsigned long long)c->entries,
                  (unsigned long long)c->evictions);
    }
    ko_puts(o, "}");
    ko_printf(o, ",\n  \"real\": {\"bytes\": %llu, \"entries\": %llu, \"stray_files\": %llu, \"misplaced\": %llu, \"unreadable\": %llu}",
              (unsigned long long)S->bytes, (unsigned long long)S->entries, (unsigned long long)S->stray,
              (unsigned long long)S->misplaced, (unsigned long long)S->unreadable);
    ko_puts(o, ",\n  \"accounting_matches\": ");
    ko_json_tri(o, c->present && c->magic_ok ? (c->accounted == S->bytes && c->entries == S->entries) : -1);
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
        if (S->slots_used && ks_entry_unit(S->ref.dirfd, S->oldest_d, u, &ul)) ko_json_str(o, (const unsigned char *)u, ul); else ko_puts(o, "null");
        ko_puts(o, ", ");
        ks_json_time(o, "newest_use", S->newest);
        ko_puts(o, ", \"newest_unit\": ");
        if (S->slots_used && ks_entry_unit(S->ref.dirfd, S->newest_d, u, &ul)) ko_json_str(o, (const unsigned char *)u, ul); else ko_puts(o, "null");
    }
    ko_puts(o, "}");
    ko_puts(o, ",\n  \"eviction_log\": [");
    for (k = 0, i = 0; c->present && c->magic_ok && k < KCACHE__EVLOG_SLOTS; k++) {
        if (!c->evlog[k].d.lo && !c->evlog[k].d.hi) continue;
        ko_puts(o, i++ ? ", " : "");
        ko_puts(o, "{\"digest\": ");
        ks_json_hex(o, c->evlog[k].d);
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
    if (fstat(S->ref.dirfd, &sb) == 0 && (sb.st_mode & 022) == 0 && sb.st_uid == 0 && geteuid() != 0) S->dir_root = 1;
    else if (fstat(S->ref.dirfd, &sb) == 0 && (sb.st_uid != geteuid() || (sb.st_mode & 022) != 0)) {
        S->dir_refused = 1;
        ki_fmt(S->dir_why, sizeof S->dir_why, "%s", sb.st_uid != geteuid() ? "owned by another user" : "writable by group or others");
    }
    S->table_read = S->ref.cffd >= 0 && S->ref.cf.present && S->ref.cf.nslots > 0;
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
static void ks_some_units(int dirfd_, char *out, size_t cap)
{
    int shard, n = 0;
    size_t len = 0;
    out[0] = 0;
    for (shard = 0; shard < 256 && n < 8; shard++) {
        char rel[8];
        int fd;
        DIR *dp;
        struct dirent *de;
        snprintf(rel, sizeof rel, "i/%02x", shard);
        if (!(dp = ks_opendir_in(dirfd_, rel, &fd))) continue;
        while ((de = readdir(dp)) != NULL && n < 8) {
            unsigned char h[26 + KCACHE_UNIT_MAX];
            kcache_hash128 id;
            int ifd;
            long long got;
            size_t ul, j;
            if (!ks_digest_name(de->d_name, ".kci", &id)) continue;
            if ((ifd = openat(fd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) < 0) continue;
            got = ks_pread(ifd, h, sizeof h, 0);
            close(ifd);
            if (got < 26 || memcmp(h, "KCINDEX", 8) != 0) continue;
            ul = kcache__get_u16(h + 24);
            if (ul == 0 || ul >= KCACHE_UNIT_MAX || (size_t)got < 26 + ul) continue;
            for (j = 0; j < ul; j++) if (h[26 + j] < 0x20 || h[26 + j] >= 0x7f) h[26 + j] = '?';
            len += (size_t)ki_fmt(out + len, len < cap ? cap - len : 0, "%s\"%.*s\"", n ? ", " : "", (int)(ul > 40 ? 40 : ul), (const char *)h + 26);
            n++;
            if (len >= cap) break;
        }
        closedir(dp);
    }
}

/* One unit's index in the store at path.  0, or 2 with a message. */
int ki_unit_report(const char *path, const char *unit, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_store_ref *ref = (ks_store_ref *)calloc(1, sizeof *ref);
    char rel[48], file[4200], e2[200];
    unsigned char *buf;
    size_t len = 0, ul = strlen(unit);
    int fd, rc;
    if (!ref) { ki_fmt(err, errcap, "out of memory"); return 2; }
    if (ul == 0 || ul >= KCACHE_UNIT_MAX) { free(ref); ki_fmt(err, errcap, "a unit name has 1 to %d bytes", KCACHE_UNIT_MAX - 1); return 2; }
    if (ks_store_open(path, ref, err, errcap) != 0) { free(ref); return 2; }
    kcache__ix_name(unit, rel);
    ki_fmt(file, sizeof file, "%s/%s", ref->path, rel);
    fd = ks_open_in(ref->dirfd, rel);
    if (fd < 0) {
        if (errno == ENOENT) {
            char some[400];
            ks_some_units(ref->dirfd, some, sizeof some);
            ki_fmt(err, errcap, "no index for unit \"%.80s\" (%s): never stored here%s%s", unit, rel, some[0] ? "; units with an index: " : "", some);
        } else {
            ki_fmt(err, errcap, "%s: cannot open: %s", rel, strerror(errno));
        }
        rc = 2;
    } else {
        buf = ks_read_index_fd(fd, &len, e2, sizeof e2);
        close(fd);
        if (!buf) { ki_fmt(err, errcap, "%s: %s", rel, e2); rc = 2; }
        else {
            rc = ki_index_report_mem(buf, len, file, ref, ref->owner, op, o, e2, sizeof e2);
            if (rc) ki_fmt(err, errcap, "%s: %s", rel, e2);
            free(buf);
        }
    }
    if (ref->cffd >= 0) close(ref->cffd);
    close(ref->dirfd);
    free(ref);
    return rc;
}

/* The store an index or entry file lies in: ROOT of ROOT/i/XX/NAME or ROOT/e/XX/NAME. */
static int ks_store_of_file(const char *file, char which, ks_store_ref *ref)
{
    char abs[4096], shard[4096], top[4096], root[4096], err[200];
    const char *b;
    memset(ref, 0, sizeof *ref);
    ref->dirfd = ref->cffd = -1;
    if (ki_abspath(file, abs, sizeof abs) != 0) return -1;
    ki_path_dirname(abs, shard, sizeof shard);
    b = ki_path_base(shard);
    if (strlen(b) != 2 || ki_hexval((unsigned char)b[0]) < 0 || ki_hexval((unsigned char)b[1]) < 0) return -1;
    ki_path_dirname(shard, top, sizeof top);
    b = ki_path_base(top);
    if (b[0] != which || b[1] != 0) return -1;
    ki_path_dirname(top, root, sizeof root);
    if (ks_store_open(root, ref, err, sizeof err) != 0) { ref->dirfd = ref->cffd = -1; return -1; }
    return 0;
}

/* A .kci file.  0, or 2 with a message. */
int ki_index_file_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_store_ref *ref = (ks_store_ref *)calloc(1, sizeof *ref);
    char abs[4096];
    unsigned char *buf;
    size_t len = 0;
    struct stat sb;
    uint32_t owner;
    int fd, rc;
    if (!ref) { ki_fmt(err, errcap, "out of memory"); return 2; }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) { free(ref); ki_fmt(err, errcap, "cannot open: %s", strerror(errno)); return 2; }
    owner = fstat(fd, &sb) == 0 ? (uint32_t)sb.st_uid : 0; /* outside a store: whoever made the index */
    buf = ks_read_index_fd(fd, &len, err, errcap);
    close(fd);
    if (!buf) { free(ref); return 2; }
    if (ks_store_of_file(path, 'i', ref) != 0) ref->dirfd = ref->cffd = -1;
    if (ki_abspath(path, abs, sizeof abs) != 0) ki_fmt(abs, sizeof abs, "%s", path);
    rc = ki_index_report_mem(buf, len, abs, ref->dirfd >= 0 ? ref : NULL, ref->dirfd >= 0 ? ref->owner : owner, op, o, err, errcap);
    free(buf);
    if (ref->cffd >= 0) close(ref->cffd);
    if (ref->dirfd >= 0) close(ref->dirfd);
    free(ref);
    return rc;
}

/* A .kce file.  0, or 2 with a message. */
int ki_entry_file_report(const char *path, const ki_opts *op, ki_out *o, char *err, size_t errcap)
{
    ks_entry e;
    unsigned char *h = NULL;
    char abs[4096];
    kcache_hash128 d;
    struct stat sb;
    uint32_t owner;
    ks_store_ref *ref;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) { ki_fmt(err, errcap, "cannot open: %s", strerror(errno)); return 2; }
    owner = fstat(fd, &sb) == 0 ? (uint32_t)sb.st_uid : 0; /* outside a store: whoever made the entry */
    if (ks_entry_read_fd(fd, 1, &e, &h, err, errcap) != 0) { close(fd); return 2; }
    close(fd);
    if ((ref = (ks_store_ref *)calloc(1, sizeof *ref)) != NULL) { /* inside one: the store's owner */
        if (ks_store_of_file(path, 'e', ref) == 0) owner = ref->owner;
        if (ref->cffd >= 0) close(ref->cffd);
        if (ref->dirfd >= 0) close(ref->dirfd);
        free(ref);
    }
    if (ks_digest_name(ki_path_base(path), ".kce", &d)) {
        e.name_digest = ks_same(d, e.digest);
        if (!e.name_digest) ks_problem(e.problem, sizeof e.problem, "the entry's digest is not its file name's");
    }
    if (ki_abspath(path, abs, sizeof abs) != 0) ki_fmt(abs, sizeof abs, "%s", path);
    ks_entry_report(o, &e, abs, op, owner);
    ks_entry_free(&e);
    free(h);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* --make-layer SRC DEST [--unit NAME]... [--private]: a read-only layer (KCACHE_LAYERS).      */
/*
 * The one command here that writes a store, and it writes only DEST, a directory it makes (or an
 * empty one): SRC is read as the rest of this tool reads a store (no lock, nothing written).
 * Every entry chosen (all, or those of the --unit units) is read whole and validated as kcache
 * validates a hit: its key record against its file name and header, both checksums. A sound one
 * is stored in DEST by kcache.h's own put, which writes the entry, the unit's index (its live
 * overloads: what kcache_explain and `kcache-inspect DEST UNIT` read) and the accounting in
 * config.file, so DEST is laid out as a store and found consistent. Entries get a new header
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
typedef struct ml_scan_ctx { ml_run *R; uid_t owner; int failed; } ml_scan_ctx;
static int ml_scan_one(void *ctx, int fd, const char *rel, const char *name)
{
    ml_scan_ctx *c = (ml_scan_ctx *)ctx;
    ml_run *R = c->R;
    kcache_hash128 d;
    struct stat sb;
    char unit[KCACHE_UNIT_MAX];
    size_t ulen = 0;
    int efd, got, which = -1;
    if (!ks_digest_name(name, ".kce", &d) || strncmp(name, rel + 2, 2) != 0) return 0;
    if (fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode)) return 0;
    if ((sb.st_uid != c->owner && sb.st_uid != 0) || (sb.st_mode & 022)) { R->foreign++; return 0; }
    if ((efd = openat(fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) < 0) { R->corrupt++; return 0; }
    got = ks_entry_unit_fd(efd, unit, &ulen);
    close(efd);
    if (!got) { R->corrupt++; return 0; }
    if (R->units && (which = ml_unit_index(R, unit)) < 0) return 0;
    if (which >= 0) R->unit_hits[which]++;
    if (R->n == R->cap) {
        size_t cap = R->cap ? R->cap * 2 : 256;
        ml_item *p = (ml_item *)realloc(R->items, cap * sizeof *p);
        if (!p) { c->failed = 1; return 1; }
        R->items = p;
        R->cap = cap;
    }
    R->items[R->n].d = d;
    R->items[R->n].unit = kcache_hash(unit, ulen);
    R->items[R->n].copied = 0;
    R->n++;
    return 0;
}
static int ml_scan(int sfd, uid_t owner, ml_run *R, char *err, size_t errcap)
{
    ml_scan_ctx c;
    c.R = R;
    c.owner = owner;
    c.failed = 0;
    ks_each_in_shards(sfd, 'e', ml_scan_one, &c);
    if (c.failed) { ki_fmt(err, errcap, "out of memory"); return -1; }
    return 0;
}

/* Pass 2, one entry: opened once, relative to its shard's directory (neither of them a link), and
   judged by the open file, not by what pass 1 saw under that name (another member of a shared-group
   store may have renamed her own file over it since): a regular file of the store's owner or root
   that nobody else may write. Its header and the size it says come first, so a sparse or huge file
   is not read; then the entry is read whole, validated and stored in dst. -1 (with err) when dst
   failed. */
static int ml_copy_one(int efd, uid_t owner, kcache__store *dst, ml_item *it, ml_run *R, char *err, size_t errcap)
{
    char rel[48], shard[3];
    unsigned char fixed[KCACHE__ENTRY_FIXED];
    struct stat sb;
    kcache__blob *b;
    kcache__read rd;
    kcache__store_ev ev;
    kcache_key k;
    kcache_status s;
    const unsigned char *h;
    size_t size, rlen;
    uint64_t hlen, plen;
    long long have;
    int fd, sfd;
    kcache__entry_name(it->d, rel); /* "e/XX/<digest>.kce" */
    memcpy(shard, rel + 2, 2);
    shard[2] = 0;
    sfd = openat(efd, shard, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    fd = sfd < 0 ? -1 : openat(sfd, rel + 5, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (sfd >= 0) close(sfd);
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        if (fd >= 0) close(fd);
        R->corrupt++;
        return 0;
    }
    if ((sb.st_uid != owner && sb.st_uid != 0) || (sb.st_mode & 022)) { close(fd); R->foreign++; return 0; }
    have = ks_pread(fd, fixed, sizeof fixed, 0);
    hlen = have == (long long)sizeof fixed ? kcache__get_u32(fixed + 12) : 0;
    plen = have == (long long)sizeof fixed ? kcache__get_u64(fixed + 16) : 0;
    if (have != (long long)sizeof fixed || memcmp(fixed, "KCENTRY", 8) != 0 || kcache__get_u64(fixed + 24) != it->d.lo ||
        kcache__get_u64(fixed + 32) != it->d.hi || hlen < KCACHE__ENTRY_FIXED + 24 || plen > ((uint64_t)1 << 40) ||
        hlen + plen != (uint64_t)sb.st_size || (uint64_t)sb.st_size > (uint64_t)((size_t)-1 / 2) ||
        !(b = kcache__blob_alloc(NULL, (size_t)sb.st_size, 0))) {
        close(fd);
        R->corrupt++;
        return 0;
    }
    size = (size_t)sb.st_size;
    have = ks_pread(fd, kcache__blob_bytes(b), size, 0);
    close(fd);
    h = kcache__blob_bytes(b);
    rlen = kcache__get_u32(h + 64);
    memset(&k, 0, sizeof k);
    if (have != (long long)size || memcmp(h, "KCENTRY", 8) != 0 || rlen > size - KCACHE__ENTRY_FIXED ||
        kcache__record_parse(h + KCACHE__ENTRY_FIXED, rlen, &k) != KCACHE_OK || !ks_same(k.digest, it->d)) {
        if (k.magic) kcache_key_free(&k);
        kcache__blob_unref(b);
        R->corrupt++;
        return 0;
    }
    memset(&rd, 0, sizeof rd);
    kcache__entry_check(b, (size_t)have, size, &k, KCACHE_STAMP_HYBRID, 0, (uint64_t)1 << 40, &rd); /* takes b */
    KCACHE_FREE(rd.rec);
    if (rd.status != KCACHE_OK) {
        if (rd.status == KCACHE_ENOENT) R->compressed++; /* a zstd entry: not readable here */
        else R->corrupt++;
        kcache_key_free(&k);
        return 0;
    }
    memset(&ev, 0, sizeof ev);
    s = kcache__store_put(dst, &k, rd.blob->data, rd.blob->size, &ev);
    kcache__blob_unref(rd.blob);
    if (s == KCACHE_OK && ev.evicted) { /* the disk's reserve made kcache evict: the layer would lack entries */
        s = KCACHE_ENOSPC;
        ki_fmt(err, errcap, "the filesystem of the layer is nearly full (kcache keeps 5 %% of it free)");
    } else if (s != KCACHE_OK) {
        ki_fmt(err, errcap, "storing unit \"%s\": %s%s%s", k.unit, kcache_strerror(s), ev.note[0] ? ": " : "", ev.note);
    }
    kcache_key_free(&k);
    if (s != KCACHE_OK) return -1;
    it->copied = 1;
    R->copied++;
    R->bytes += size;
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
    kcache__store *dst = NULL;
    kcache_config cfg;
    kcache_hash128 *uh;
    uid_t owner;
    int sfd = -1, efd = -1, rc = 2, i;
    size_t j;
    memset(&R, 0, sizeof R);
    R.units = nunits ? units : NULL;
    R.nunits = nunits;
    if (ki_abspath(src, src_abs, sizeof src_abs) != 0 || ki_abspath(dest, dest_abs, sizeof dest_abs) != 0) {
        ki_fmt(err, errcap, "a path is too long");
        return 2;
    }
    sfd = open(src_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0 || fstat(sfd, &sb) != 0) { ki_fmt(err, errcap, "%s: cannot open the store: %s", src, strerror(errno)); goto out; }
    owner = sb.st_uid;
    efd = openat(sfd, "e", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (efd < 0) { ki_fmt(err, errcap, "%s: not a kcache store with entries (no e/)", src); goto out; }
    if (nunits && !(R.unit_hits = (unsigned long *)calloc((size_t)nunits, sizeof *R.unit_hits))) { ki_fmt(err, errcap, "out of memory"); goto out; }
    if (ml_scan(sfd, owner, &R, err, errcap) != 0) goto out;
    for (i = 0; i < nunits; i++)
        if (!R.unit_hits[i]) {
            char q[4096 + 16];
            ki_fmt(err, errcap, "%s: no entry of unit \"%s\" (kcache-inspect %s lists the units); nothing made", src, units[i],
                   kcache__shell_quote(q, sizeof q, src));
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
    memset(&cfg, 0, sizeof cfg); /* no limit, no environment: every entry chosen, as it is */
    cfg.fsync = 1;               /* made once, read by many: on disk before it is announced */
    cfg.lock_timeout_ms = 10000;
    why[0] = 0;
    if (kcache__store_open(&dst, dest_abs, &cfg, why, sizeof why) != KCACHE_OK || dst->readonly) {
        ki_fmt(err, errcap, "cannot make the layer %s: %s", dest, why[0] ? why : "not writable");
        goto out;
    }
    for (j = 0; j < R.n; j++)
        if (ml_copy_one(efd, owner, dst, &R.items[j], &R, why, sizeof why) != 0) {
            ki_fmt(err, errcap, "%s: %s; the layer is incomplete: remove it", dest, why);
            goto out;
        }
    kcache__store_close(dst);
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
        ko_printf(o, "use        KCACHE_LAYERS=%s\n", kcache__shell_quote(q, sizeof q, dest_abs));
    }
    rc = 0;
out:
    if (dst) kcache__store_close(dst);
    if (efd >= 0) close(efd);
    if (sfd >= 0) close(sfd);
    free(R.items);
    free(R.unit_hits);
    return rc;
}

/* ---- store commands: --evict-older-than, --trim, --remove-unit, --clear (issue 28) ----
   Through the library's own calls (kcache_evict_older_than, ...), on the store opened as a program
   opens it: its lock, its accounting kept exact, its checks (another user's store is refused). */

/* AGE as 90s, 30m, 12h, 7d (a bare number: seconds). 1 with *secs, 0 when it is not one. */
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
    kcache_tidy done;
    kcache_status s = KCACHE_EINVAL;
    struct stat sb;
    char why[1024], cf[4200], q[1100], shown[1100];
    uint64_t v = 0;
    int fd;
    if (what == KI_TIDY_OLDER && !ki_parse_age(arg, &v)) {
        ki_eprintf("kcache-inspect: --evict-older-than '%s' is not an age (90s, 30m, 12h, 7d)\n", arg);
        return 2;
    }
    if (what == KI_TIDY_TRIM && !kcache__parse_size(arg, &v)) {
        ki_eprintf("kcache-inspect: --trim '%s' is not a size (bytes, or with K, M, G, T as KCACHE_MAX_SIZE takes it)\n", arg);
        return 2;
    }
    /* a store that is there: a mistyped DIR must not become a new, empty store */
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        ki_eprintf("kcache-inspect: %s %s: %s\n", name[what], dir, stat(dir, &sb) != 0 ? strerror(errno) : "not a directory");
        return 2;
    }
    snprintf(cf, sizeof cf, "%s/config.file", dir);
    if (lstat(cf, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        ki_eprintf("kcache-inspect: %s %s: not a kcache store (no config.file)\n", name[what], dir);
        return 2;
    }
    kcache_config_defaults(&cfg); /* as given: no KCACHE_ENABLE=0 or KCACHE_DIR from the environment */
    cfg.dir = dir;
    cfg.publish = 0;
    cfg.mem_entries = 1;
    if ((fd = open(cf, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) >= 0) { /* the store's own limit, kept as it is */
        unsigned char h[64];
        if (ks_pread(fd, h, sizeof h, 0) == (long long)sizeof h && memcmp(h, "KCACHECF", 8) == 0) cfg.max_size = kcache__get_u64(h + 56);
        close(fd);
    }
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { ki_eprintf("kcache-inspect: out of memory\n"); return 2; }
    if (!kcache_store_in_use(kc, why, sizeof why) || why[0]) {
        ki_eprintf("kcache-inspect: %s %s: %s\n", name[what], dir, why[0] ? why : "the store cannot be used");
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
        ki_eprintf("kcache-inspect: %s %s: %s\n", name[what], dir, kcache_strerror(s));
        kcache_close(kc);
        return 2;
    }
    kcache__shell_quote(q, sizeof q, dir);
    kcache__escs(shown, sizeof shown, dir); /* a path is printed escaped, as every name from outside */
    if (!yes) {
        printf("would remove %llu entries (%llu bytes) from %s\n", (unsigned long long)done.entries, (unsigned long long)done.bytes, shown);
        char qa[600];
        kcache__shell_quote(qa, sizeof qa, what == KI_TIDY_CLEAR ? "" : arg);
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
