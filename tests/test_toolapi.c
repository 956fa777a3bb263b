/* test_toolapi.c - kcache.h's read-only API for tools (>>toolapi): a store made by the library
 * itself is read back through every kcache_reader call, then damaged (a wrong magic, a flipped
 * byte, a FIFO or symlink where a file belongs, a stats image cut short) to see each call refuse
 * it with its status, never hang and never read past what it was given.
 * Prints "ok NAME" / "FAIL NAME: ..." lines (tests/kt.h). */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_root[256]; /* a temp directory: the store is g_root/s, dependencies beside it */
static char g_store[300];

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_root, name); }

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) { KT_FAILF("cannot write %s", path); return; }
    fputs(text, f);
    fclose(f);
}

/* A key of unit `unit`: fields opt=<opt>, and dep=<path> when path is not NULL. */
static void make_key(kcache_key *k, const char *unit, const char *opt, const char *path) {
    kcache_key_init(k, unit);
    kcache_key_str(k, "opt", opt);
    if (path) kcache_key_file(k, "dep", path);
}

/* The store the groups read: unit "blur" with two overloads (one with a dependency), unit
   "sharpen" with one, and a traced field miss of "blur"; kc stays open (its stats slot live). */
static kcache *g_kc;
static void make_store(void) {
    kcache_config c;
    kcache_key k;
    char dep[300];
    const void *p;
    size_t n;
    kcache_config_init(&c);
    c.dir = g_store;
    c.trace = 1;
    c.publish = 1;
    if (kcache_open(&g_kc, &c) != KCACHE_OK) { KT_FAILF("kcache_open %s", g_store); return; }
    path_in(dep, sizeof dep, "dep.h");
    write_file(dep, "#define A 1\n");
    make_key(&k, "blur", "1", dep);
    KT_CHECK(kcache_put(g_kc, &k, "payload-1", 9) == KCACHE_OK);
    kcache_key_free(&k);
    make_key(&k, "blur", "2", NULL);
    KT_CHECK(kcache_put(g_kc, &k, "payload-2", 9) == KCACHE_OK);
    kcache_key_free(&k);
    make_key(&k, "sharpen", "1", NULL);
    KT_CHECK(kcache_put(g_kc, &k, "payload-3", 9) == KCACHE_OK);
    KT_CHECK(kcache_get(g_kc, &k, &p, &n) == KCACHE_OK);
    if (n == 9) kcache_release(g_kc, p);
    kcache_key_free(&k);
    make_key(&k, "blur", "3", NULL); /* a field miss, traced */
    KT_CHECK(kcache_get(g_kc, &k, &p, &n) == KCACHE_MISS);
    kcache_key_free(&k);
}

static void reader_open_close(void) {
    kcache_reader *r = NULL;
    char file[300];
    KT_CHECK(kcache_reader_open(NULL, g_store) == KCACHE_EINVAL);
    KT_CHECK(kcache_reader_open(&r, NULL) == KCACHE_EINVAL && r == NULL);
    KT_CHECK(kcache_reader_open(&r, "") == KCACHE_EINVAL);
    path_in(file, sizeof file, "none");
    KT_CHECK(kcache_reader_open(&r, file) == KCACHE_ENOENT && r == NULL);
    path_in(file, sizeof file, "dep.h");
    KT_CHECK(kcache_reader_open(&r, file) == KCACHE_EUNSAFE && r == NULL); /* a file, not a directory */
    KT_CHECK(kcache_reader_open(&r, g_store) == KCACHE_OK && r != NULL);
    KT_CHECK_EQ_U64(kcache_reader_owner(r), geteuid());
    kcache_reader_close(r);
    kcache_reader_close(NULL);
    KT_CHECK_EQ_U64(kcache_reader_owner(NULL), 0);
}

static void default_dir(void) {
    char out[512], *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
    char saved_home[512] = "", saved_xdg[512] = "";
    if (home) snprintf(saved_home, sizeof saved_home, "%s", home);
    if (xdg) snprintf(saved_xdg, sizeof saved_xdg, "%s", xdg);
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    KT_CHECK(kcache_default_dir(out, sizeof out) == KCACHE_OK);
    KT_CHECK_STR(out, "/x/cache/kcache");
    KT_CHECK(kcache_default_dir(out, 5) == KCACHE_ETOOBIG);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/h", 1);
    KT_CHECK(kcache_default_dir(out, sizeof out) == KCACHE_OK);
    KT_CHECK_STR(out, "/h/.cache/kcache");
    setenv("HOME", "relative", 1);
    KT_CHECK(kcache_default_dir(out, sizeof out) == KCACHE_ENOENT);
    KT_CHECK(kcache_default_dir(NULL, 10) == KCACHE_EINVAL);
    if (home) setenv("HOME", saved_home, 1); else unsetenv("HOME");
    if (xdg) setenv("XDG_CACHE_HOME", saved_xdg, 1);
}

static void text_helpers(void) {
    char out[128], one[11];
    size_t used = 99;
    uint64_t v = 0;
    KT_CHECK_STR(kcache_escape(out, sizeof out, "a\x1b[2Jb", 6), "a\\x1b[2Jb");
    KT_CHECK_STR(kcache_escape(out, sizeof out, "\xe2\x80\xae" "x", 4), "\\u{202e}x");  /* a bidi control */
    KT_CHECK_STR(kcache_escape(out, sizeof out, "caf\xc3\xa9", 5), "caf\xc3\xa9");       /* printable UTF-8 stays */
    KT_CHECK_STR(kcache_escape(out, sizeof out, "\xff", 1), "\\xff");                     /* invalid UTF-8 */
    KT_CHECK_STR(kcache_escape(out, sizeof out, NULL, 3), "(null)");
    KT_CHECK_STR(kcache_escape(out, 7, "abcdefgh", 8), "abc..."); /* cut to fit at a character, said, terminated */
    KT_CHECK(kcache_escape_char((const unsigned char *)"\n", 1, one, &used) == 4 && used == 1);
    KT_CHECK_STR(one, "\\x0a");
    KT_CHECK(kcache_escape_char((const unsigned char *)"\xc3\xa9", 2, one, &used) == 2 && used == 2);
    KT_CHECK(kcache_escape_char((const unsigned char *)"", 0, one, &used) == 0 && used == 0);
    KT_CHECK_STR(kcache_shell_quote(out, sizeof out, "plain/path"), "plain/path");
    KT_CHECK_STR(kcache_shell_quote(out, sizeof out, "it's"), "'it'\\''s'");
    KT_CHECK(kcache_parse_size("1K", &v) == KCACHE_OK && v == 1024);
    KT_CHECK(kcache_parse_size("3GiB", &v) == KCACHE_OK && v == ((uint64_t)3 << 30));
    KT_CHECK(kcache_parse_size("x", &v) == KCACHE_EINVAL);
    KT_CHECK(kcache_parse_size("99999999999999999999", &v) == KCACHE_EINVAL); /* overflows */
    KT_CHECK(kcache_parse_size(NULL, &v) == KCACHE_EINVAL);
    KT_CHECK_STR(kcache_reason_text(KCACHE_REASON_STAMP), "a dependency changed");
    KT_CHECK_STR(kcache_reason_text((kcache_reason)99), "unknown");
}

static void accounting(void) {
    kcache_reader *r;
    kcache_accounting a;
    kcache_key k;
    int64_t when = -1;
    char empty[300], cf[320];
    path_in(empty, sizeof empty, "empty");
    mkdir(empty, 0700);
    if (kcache_reader_open(&r, empty) != KCACHE_OK) { KT_FAILF("reader on %s", empty); return; }
    KT_CHECK(kcache_read_accounting(r, &a) == KCACHE_ENOENT); /* not a store yet */
    KT_CHECK(kcache_read_last_use(r, kcache_hash("x", 1), &when) == KCACHE_ENOENT);
    snprintf(cf, sizeof cf, "%s/config.file", empty);
    write_file(cf, "KCACHECX but not a config.file at all, long enough to be read as one: "
                   "................................................................................");
    KT_CHECK(kcache_read_accounting(r, &a) == KCACHE_ECORRUPT);
    KT_CHECK(kcache_read_last_use(r, kcache_hash("x", 1), &when) == KCACHE_ECORRUPT);
    kcache_reader_close(r);
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader on %s", g_store); return; }
    KT_CHECK(kcache_read_accounting(r, &a) == KCACHE_OK);
    KT_CHECK_EQ_U64(a.entries, 3);
    KT_CHECK(a.bytes > 27 && a.sound && a.generation > 0);
    KT_CHECK(kcache_read_accounting(r, NULL) == KCACHE_EINVAL && kcache_read_accounting(NULL, &a) == KCACHE_EINVAL);
    make_key(&k, "sharpen", "1", NULL);
    KT_CHECK(kcache_read_last_use(r, kcache_key_digest(&k), &when) == KCACHE_OK && when > 0);
    kcache_key_free(&k);
    KT_CHECK(kcache_read_last_use(r, kcache_hash("never", 5), &when) == KCACHE_MISS);
    kcache_reader_close(r);
}

static void entries(void) {
    kcache_reader *r;
    kcache_key k;
    char rel[48];
    uint64_t size = 0;
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader"); return; }
    make_key(&k, "sharpen", "1", NULL);
    KT_CHECK(kcache_entry_path(kcache_key_digest(&k), rel, sizeof rel) == KCACHE_OK);
    KT_CHECK(strncmp(rel, "e/", 2) == 0 && strlen(rel) == 41 && strcmp(rel + 37, ".kce") == 0);
    KT_CHECK(kcache_entry_path(kcache_key_digest(&k), rel, 10) == KCACHE_EINVAL);
    KT_CHECK(kcache_entry_stat(r, kcache_key_digest(&k), &size) == KCACHE_OK && size > 9);
    KT_CHECK(kcache_entry_stat(r, kcache_hash("never", 5), &size) == KCACHE_ENOENT && size == 0);
    KT_CHECK(kcache_entry_stat(NULL, kcache_key_digest(&k), NULL) == KCACHE_EINVAL);
    kcache_key_free(&k);
    kcache_reader_close(r);
}

static void records_and_stamps(void) {
    kcache_key k;
    kcache_key_field a, b;
    unsigned char junk[16] = {1, 2, 3};
    KT_CHECK(kcache_record_decode(junk, sizeof junk, &k) == KCACHE_ECORRUPT);
    kcache_key_free(&k);
    KT_CHECK(kcache_record_decode(NULL, 3, &k) == KCACHE_ECORRUPT);
    kcache_key_free(&k);
    KT_CHECK(kcache_record_decode(junk, 3, NULL) == KCACHE_EINVAL);
    KT_CHECK(kcache_key_field_at(NULL, 0) == NULL);
    memset(&a, 0, sizeof a);
    a.mtime_ns = 5;
    a.file_size = 10;
    a.content = kcache_hash("x", 1);
    b = a;
    KT_CHECK(kcache_stamp_compare(&a, &b) == 0);
    b.mtime_ns = 6;
    KT_CHECK(kcache_stamp_compare(&a, &b) == KCACHE_STAMP_DIFF_MTIME);
    KT_CHECK(kcache_stamp_stale(KCACHE_STAMP_DIFF_MTIME, KCACHE_STAMP_MTIME));
    KT_CHECK(!kcache_stamp_stale(KCACHE_STAMP_DIFF_MTIME, KCACHE_STAMP_HYBRID)); /* content the same: still used */
    KT_CHECK(!kcache_stamp_stale(KCACHE_STAMP_DIFF_MTIME, KCACHE_STAMP_CONTENT));
    b.file_size = 11;
    b.content = kcache_hash("y", 1);
    KT_CHECK(kcache_stamp_compare(&a, &b) == (KCACHE_STAMP_DIFF_MTIME | KCACHE_STAMP_DIFF_SIZE | KCACHE_STAMP_DIFF_CONTENT));
    KT_CHECK(kcache_stamp_stale(KCACHE_STAMP_DIFF_CONTENT, KCACHE_STAMP_CONTENT));
    KT_CHECK(kcache_stamp_compare(NULL, &b) != 0);
}

static void dependencies(void) {
    kcache_key k;
    kcache_dep d;
    char dep[300], other[300];
    const kcache_key_field *f;
    uint32_t me = (uint32_t)geteuid();
    path_in(dep, sizeof dep, "d2.h");
    write_file(dep, "#define B 2\n");
    make_key(&k, "u", "1", dep);
    f = kcache_key_field_at(&k, 0); /* fields sorted: dep, opt */
    if (!f || strcmp(f->name, "dep") != 0) { KT_FAILF("no dep field"); kcache_key_free(&k); return; }
    KT_CHECK(kcache_dep_now(f, dep, me, 1 << 20, &d) == KCACHE_OK && d.state == KCACHE_DEP_READ);
    /* (the key's own stamp has no content until a lookup needs it: compare stat, then content) */
    KT_CHECK(d.now.mtime_ns == f->mtime_ns && d.now.file_size == f->file_size);
    KT_CHECK(d.now.content.lo == kcache_hash("#define B 2\n", 12).lo);
    KT_CHECK(kcache_dep_now(f, dep, me, 4, &d) == KCACHE_OK && d.state == KCACHE_DEP_READ && d.now.content.lo == 0); /* over max_read */
    write_file(dep, "#define B 22\n");
    KT_CHECK(kcache_dep_now(f, dep, me, 1 << 20, &d) == KCACHE_OK && d.state == KCACHE_DEP_OTHER_SIZE && d.now.file_size == 13 &&
             d.now.content.lo == 0);
    path_in(other, sizeof other, "d2.fifo");
    if (mkfifo(other, 0600) == 0) /* opened without blocking, never read */
        KT_CHECK(kcache_dep_now(f, other, me, 1 << 20, &d) == KCACHE_OK && d.state == KCACHE_DEP_NOT_REGULAR);
    path_in(other, sizeof other, "d2.link");
    if (symlink(dep, other) == 0) KT_CHECK(kcache_dep_now(f, other, me, 1 << 20, &d) == KCACHE_OK && d.state == KCACHE_DEP_SYMLINK);
    path_in(other, sizeof other, "d2.none");
    KT_CHECK(kcache_dep_now(f, other, me, 1 << 20, &d) == KCACHE_OK && d.state == KCACHE_DEP_MISSING);
    KT_CHECK(kcache_dep_now(f, g_root, me, 1 << 20, &d) == KCACHE_OK && d.state == KCACHE_DEP_NOT_REGULAR); /* a directory */
    if (me == 0) { /* root's files are always trusted: another user's */
        KT_CHECK(chown(dep, 65534, 65534) == 0);
        KT_CHECK(kcache_dep_now(f, dep, 0, 1 << 20, &d) == KCACHE_OK && d.state == KCACHE_DEP_FOREIGN && d.uid == 65534);
    } else {
        KT_CHECK(kcache_dep_now(f, dep, me + 1, 1 << 20, &d) == KCACHE_OK && d.state == KCACHE_DEP_FOREIGN && d.uid == me);
    }
    KT_CHECK(kcache_dep_now(NULL, dep, me, 1, &d) == KCACHE_EINVAL && kcache_dep_now(f, "", me, 1, &d) == KCACHE_EINVAL);
    KT_CHECK_STR(kcache_dep_state_text(KCACHE_DEP_SYMLINK), "a symlink: not followed");
    KT_CHECK_STR(kcache_dep_state_text((kcache_dep_state)42), "unknown");
    kcache_key_free(&k);
}

static void index_logs(void) {
#ifndef KCACHE_NO_EXPLAIN
    kcache_reader *r;
    kcache_index *ix = NULL;
    const kcache_index_item *it;
    kcache_key k;
    char rel[48], path[400], text[600];
    size_t records = 0, bytes = 0, need;
    uint32_t i;
    int with_dep = 0;
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader"); return; }
    KT_CHECK(kcache_index_read(r, "never", &ix) == KCACHE_ENOENT && ix == NULL);
    KT_CHECK(kcache_index_read(r, "", &ix) == KCACHE_EINVAL && kcache_index_read(NULL, "blur", &ix) == KCACHE_EINVAL);
    if (kcache_index_read(r, "blur", &ix) != KCACHE_OK) { KT_FAILF("index of blur"); kcache_reader_close(r); return; }
    KT_CHECK_EQ_U64(kcache_index_count(ix, KCACHE_INDEX_LIVE), 2);
    KT_CHECK_EQ_U64(kcache_index_count(ix, KCACHE_INDEX_GONE), 0);
    KT_CHECK_EQ_U64(kcache_index_count(ix, KCACHE_INDEX_MISSED), 1);
    KT_CHECK(kcache_index_count(ix, KCACHE_INDEX_LISTS) == 0 && kcache_index_count(NULL, KCACHE_INDEX_LIVE) == 0);
    KT_CHECK(kcache_index_at(ix, KCACHE_INDEX_LIVE, 2) == NULL);
    for (i = 0; (it = kcache_index_at(ix, KCACHE_INDEX_LIVE, i)) != NULL; i++) {
        const kcache_key_field *f;
        KT_CHECK(it->size == 9 && it->when > 0 && it->record && it->record_len > 0);
        KT_CHECK(kcache_record_decode(it->record, it->record_len, &k) == KCACHE_OK);
        KT_CHECK_STR(k.unit, "blur");
        f = kcache_key_field_at(&k, 0);
        if (f && f->type == KCACHE_FIELD_FILE) with_dep = 1;
        KT_CHECK(kcache_key_digest(&k).lo == it->digest.lo);
        kcache_key_free(&k);
    }
    KT_CHECK(with_dep);
    kcache_index_size(ix, &records, &bytes);
    KT_CHECK(records >= 3 && bytes > 100);
    it = kcache_index_at(ix, KCACHE_INDEX_MISSED, 0);
    KT_CHECK(it && it->reason == KCACHE_REASON_FIELD && it->pid == (uint32_t)getpid());
    need = kcache_index_explain(ix, 0, "blur", KCACHE_STAMP_HYBRID, text, sizeof text);
    KT_CHECK_MSG(need == strlen(text) && strstr(text, "miss: a field differs: closest of 2 stored overload(s) of unit \"blur\": ") == text &&
                     strstr(text, "opt: \"") != NULL,
                 "explained as '%s'", text);
    KT_CHECK(kcache_index_explain(ix, 0, "blur", KCACHE_STAMP_HYBRID, text, 8) == need && strlen(text) < 8); /* cut, terminated */
    KT_CHECK(kcache_index_explain(ix, 1, "blur", KCACHE_STAMP_HYBRID, text, sizeof text) == 0 && text[0] == 0);
    kcache_index_free(ix);
    kcache_index_free(NULL);
    /* a damaged header: refused, as the library refuses it */
    KT_CHECK(kcache_index_path("blur", rel, sizeof rel) == KCACHE_OK && strncmp(rel, "i/", 2) == 0 && strcmp(rel + 37, ".kci") == 0);
    KT_CHECK(kcache_index_path("blur", rel, 8) == KCACHE_EINVAL);
    snprintf(path, sizeof path, "%s/%s", g_store, rel);
    {
        int fd = open(path, O_WRONLY);
        KT_CHECK(fd >= 0 && pwrite(fd, "X", 1, 2) == 1);
        if (fd >= 0) close(fd);
    }
    KT_CHECK(kcache_index_read(r, "blur", &ix) == KCACHE_ECORRUPT && ix == NULL);
    kcache_reader_close(r);
#else
    kcache_reader *r;
    kcache_index *ix = (kcache_index *)1;
    char text[8] = "x";
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader"); return; }
    KT_CHECK(kcache_index_read(r, "blur", &ix) == KCACHE_EDISABLED && ix == NULL);
    KT_CHECK(kcache_index_explain(NULL, 0, "blur", 0, text, sizeof text) == 0 && text[0] == 0);
    kcache_reader_close(r);
#endif
}

static void index_walk(void) {
    kcache_reader *r;
    kcache_index_walk *w;
    kcache_index_file f;
    char unit[KCACHE_UNIT_MAX], junk[400];
    int files = 0, named = 0;
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader"); return; }
    KT_CHECK(kcache_index_walk_open(NULL, &w) == KCACHE_EINVAL);
    if (kcache_index_walk_open(r, &w) != KCACHE_OK) { KT_FAILF("walk"); kcache_reader_close(r); return; }
    KT_CHECK(kcache_index_walk_unit(w, unit, sizeof unit) == KCACHE_ENOENT); /* no current file yet */
    while (kcache_index_walk_next(w, &f) == KCACHE_OK) {
        files++;
        KT_CHECK(f.size > 0 && f.ino && f.mtime_ns > 0 && strncmp(f.path, "i/", 2) == 0);
        if (kcache_index_walk_unit(w, unit, sizeof unit) == KCACHE_OK && strcmp(unit, "sharpen") == 0) {
            named++;
            KT_CHECK(f.name_lo == kcache_hash("sharpen", 7).lo);
            KT_CHECK(kcache_index_walk_unit(w, unit, 3) == KCACHE_ETOOBIG);
        }
    }
    KT_CHECK(kcache_index_walk_next(w, &f) == KCACHE_MISS);
    kcache_index_walk_close(w);
#ifndef KCACHE_NO_EXPLAIN
    KT_CHECK_EQ_U64(files, 2);
    KT_CHECK_EQ_U64(named, 1);
#else
    KT_CHECK_EQ_U64(files, 0); /* no index is written */
    kcache_index_walk_close(NULL);
    kcache_reader_close(r);
    return;
#endif
    /* a name that is not an index's, and a FIFO with an index's name: skipped, never opened */
    snprintf(junk, sizeof junk, "%s/i/00/not-an-index", g_store);
    mkdir(junk, 0700); /* (i/00 may not exist: then this makes nothing) */
    snprintf(junk, sizeof junk, "%s/i/00", g_store);
    mkdir(junk, 0700);
    snprintf(junk, sizeof junk, "%s/i/00/0000000000000000000000000000abcd.kci", g_store);
    KT_CHECK(mkfifo(junk, 0600) == 0);
    files = 0;
    if (kcache_index_walk_open(r, &w) == KCACHE_OK) {
        while (kcache_index_walk_next(w, &f) == KCACHE_OK) files++;
        kcache_index_walk_close(w);
    }
    KT_CHECK_EQ_U64(files, 2);
    unlink(junk);
    kcache_index_walk_close(NULL);
    kcache_reader_close(r);
}

static void stats_file(void) {
#if !defined(KCACHE_NO_PUB)
    kcache_reader *r;
    kcache_stats_file *sf = NULL, *img;
    static kcache_stats_snapshot snap, snap2;
    kcache_stats_unit units[KCACHE_STATS_UNITS];
    kcache_stats_event ev[KCACHE_STATS_EVENTS];
    kcache_stats_row row;
    kcache_stats stats;
    unsigned i, j, n = 0, puts = 0, mine = 0;
    uint64_t seq = 0;
    int found_unit = 0;
    char path[420], empty[300];
    unsigned char *copy;
    FILE *fp;
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader"); return; }
    KT_CHECK(kcache_stats_file_open(NULL, &sf) == KCACHE_EINVAL);
    if (kcache_stats_file_open(r, &sf) != KCACHE_OK) { KT_FAILF("no stats file in %s", g_store); kcache_reader_close(r); return; }
    KT_CHECK(kcache_stats_file_created(sf) > 0 && !kcache_stats_file_replaced(sf, r));
    KT_CHECK(kcache_stats_file_read(sf, &snap) == KCACHE_OK);
    kcache_get_stats(g_kc, &stats);
    KT_CHECK_EQ_U64(snap.totals[KCACHE_CTR_PUTS], stats.puts);
    KT_CHECK_EQ_U64(snap.totals[KCACHE_CTR_MISSES], stats.misses);
#ifndef KCACHE_NO_EXPLAIN /* (without an index a field miss is not told from a cold one) */
    KT_CHECK_EQ_U64(snap.totals[KCACHE_CTR_MISSES_BY_REASON + KCACHE_REASON_FIELD], 1);
#endif
    KT_CHECK(snap.claimed >= 1 && snap.processes >= 1 && snap.consistent);
    for (i = 0; i < KCACHE_STATS_SLOTS; i++) {
        if (snap.slots[i].pid != (uint32_t)getpid() || snap.slots[i].state != KCACHE_SLOT_LIVE) continue;
        mine = i + 1;
        KT_CHECK_EQ_U64(snap.slots[i].counters[KCACHE_CTR_PUTS], 3);
        KT_CHECK(snap.slots[i].opened > 0 && snap.slots[i].events >= 4);
    }
    KT_CHECK_MSG(mine, "no live slot of this process");
    if (mine) {
        KT_CHECK(kcache_stats_file_units(sf, mine - 1, units) == KCACHE_OK);
        for (j = 0; j < KCACHE_STATS_UNITS; j++)
            if (units[j].hash == kcache_hash("blur", 4).lo) {
                found_unit = 1;
                KT_CHECK(units[j].puts == 2 && units[j].misses == 1 && units[j].name_len == 4);
#ifndef KCACHE_NO_EXPLAIN
                KT_CHECK(units[j].last_miss == KCACHE_REASON_FIELD);
#endif
                KT_CHECK_STR(units[j].name, "blur");
            }
        KT_CHECK(found_unit);
        KT_CHECK(kcache_stats_file_events(sf, mine - 1, &seq, ev, KCACHE_STATS_EVENTS, &n) == KCACHE_OK);
        KT_CHECK(n >= 4 && seq == snap.slots[mine - 1].events);
        for (j = 0; j < n; j++) {
            if (ev[j].kind == KCACHE_EVENT_PUT) puts++;
            KT_CHECK(ev[j].pid == (uint32_t)getpid() && (j == 0 || ev[j].seq > ev[j - 1].seq));
        }
        KT_CHECK_EQ_U64(puts, 3);
        KT_CHECK(kcache_stats_file_events(sf, mine - 1, &seq, ev, KCACHE_STATS_EVENTS, &n) == KCACHE_OK && n == 0); /* none new */
        seq = 0;
        KT_CHECK(kcache_stats_file_events(sf, mine - 1, &seq, ev, 2, &n) == KCACHE_OK && n == 2 && seq == ev[1].seq); /* cap */
    }
    KT_CHECK(kcache_stats_file_units(sf, KCACHE_STATS_SLOTS, units) == KCACHE_EINVAL);
    KT_CHECK(kcache_stats_file_events(sf, 0, NULL, ev, 1, &n) == KCACHE_EINVAL);
    KT_CHECK_EQ_U64(kcache_stats_file_rows(KCACHE_STATS_SHARDS), 24);
    KT_CHECK(kcache_stats_file_row(sf, KCACHE_STATS_SHARDS, 0, &row) == KCACHE_OK && row.id == 0); /* no remote: all free */
    KT_CHECK(kcache_stats_file_row(sf, KCACHE_STATS_SHARDS, 24, &row) == KCACHE_EINVAL);
    /* the same bytes as an image; then the image cut short or damaged */
    snprintf(path, sizeof path, "%s/stats", g_store);
    copy = (unsigned char *)malloc((size_t)1 << 21);
    fp = fopen(path, "rb");
    n = fp && copy ? (unsigned)fread(copy, 1, (size_t)1 << 21, fp) : 0;
    if (fp) fclose(fp);
    KT_CHECK(n > 4096);
    if (copy && n > 4096) {
        KT_CHECK(kcache_stats_file_from_image(copy, n, &img) == KCACHE_OK);
        KT_CHECK(kcache_stats_file_read(img, &snap2) == KCACHE_OK && snap2.totals[KCACHE_CTR_PUTS] == snap.totals[KCACHE_CTR_PUTS]);
        KT_CHECK(!kcache_stats_file_replaced(img, r));
        kcache_stats_file_close(img);
        KT_CHECK(kcache_stats_file_from_image(copy, n - 1, &img) == KCACHE_ECORRUPT && img == NULL);
        KT_CHECK(kcache_stats_file_from_image(copy, 100, &img) == KCACHE_ECORRUPT);
        copy[20] ^= 1; /* the header's checksum fails */
        KT_CHECK(kcache_stats_file_from_image(copy, n, &img) == KCACHE_ECORRUPT);
    }
    free(copy);
    kcache_stats_file_close(sf);
    kcache_stats_file_close(NULL);
    /* no stats file; a FIFO in its place (never opened for reading, never waited on) */
    path_in(empty, sizeof empty, "nostats");
    mkdir(empty, 0700);
    kcache_reader_close(r);
    if (kcache_reader_open(&r, empty) != KCACHE_OK) { KT_FAILF("reader on %s", empty); return; }
    KT_CHECK(kcache_stats_file_open(r, &sf) == KCACHE_ENOENT && sf == NULL);
    snprintf(path, sizeof path, "%s/stats", empty);
    KT_CHECK(mkfifo(path, 0600) == 0);
    KT_CHECK(kcache_stats_file_open(r, &sf) == KCACHE_EUNSAFE && sf == NULL);
    unlink(path);
    write_file(path, "KCSTATS but damaged");
    KT_CHECK(kcache_stats_file_open(r, &sf) == KCACHE_ECORRUPT && sf == NULL);
    kcache_reader_close(r);
#else
    kcache_reader *r;
    kcache_stats_file *sf = (kcache_stats_file *)1;
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader"); return; }
    KT_CHECK(kcache_stats_file_open(r, &sf) == KCACHE_EDISABLED && sf == NULL);
    kcache_reader_close(r);
#endif
}

/* ---- 0.5: what kcache-inspect reads (the header whole, the eviction log, the use table, entry
   files check by check, the entry and index files of a store, temp files, the explain texts) ---- */

static int read_whole(const char *path, unsigned char *buf, size_t cap, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    *len = fread(buf, 1, cap, f);
    fclose(f);
    return 1;
}

static void host_names(void) {
    char name[128], feat[KCACHE_HOST_FEATURES_MAX];
    size_t n;
    kcache_host_cpu_name(name, sizeof name);
    KT_CHECK(name[0] != 0);
    n = kcache_host_cpu_features(feat, sizeof feat);
    KT_CHECK(n == strlen(feat));
    kcache_host_cpu_name(NULL, 5); /* (nothing to write into: nothing written) */
    KT_CHECK(kcache_host_cpu_features(NULL, 5) == 0);
}

static void accounting_whole(void) {
    kcache_reader *r;
    kcache_accounting a;
    kcache_eviction ev[KCACHE_EVICTION_LOG];
    kcache_use_row rows[64], row;
    kcache_key k;
    unsigned n = 9, seen = 0;
    uint64_t at;
    char empty[300];
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader"); return; }
    KT_CHECK(kcache_reader_is_store(r));
    KT_CHECK(kcache_read_accounting(r, &a) == KCACHE_OK);
    KT_CHECK(a.valid && a.magic_ok && a.version_ok && a.geometry_ok && a.checksum_ok && a.version == 1 && !a.busy && a.created > 0);
    KT_CHECK(a.use_slots >= 16 && a.file_size == 4096 + a.use_slots * 32);
    KT_CHECK(kcache_read_evictions(r, ev, &n) == KCACHE_OK && n == 0); /* nothing evicted */
    KT_CHECK(kcache_read_evictions(r, NULL, &n) == KCACHE_EINVAL);
    for (at = 0; at < a.use_slots; at += 64) { /* the whole table: one row per entry */
        unsigned i, want = a.use_slots - at < 64 ? (unsigned)(a.use_slots - at) : 64;
        KT_CHECK(kcache_read_use_table(r, at, want, rows, &n) == KCACHE_OK);
        for (i = 0; i < n; i++) KT_CHECK(rows[i].last_use > 0 && rows[i].size > 9 && kcache_entry_stat(r, rows[i].digest, NULL) == KCACHE_OK);
        seen += n;
    }
    KT_CHECK_EQ_U64(seen, 3);
    KT_CHECK(kcache_read_use_table(r, a.use_slots, 1, rows, &n) == KCACHE_ECORRUPT && n == 0); /* past its end */
    make_key(&k, "sharpen", "1", NULL);
    KT_CHECK(kcache_read_use(r, kcache_key_digest(&k), &row) == KCACHE_OK && row.digest.lo == kcache_key_digest(&k).lo && row.size > 9);
    kcache_key_free(&k);
    KT_CHECK(kcache_read_use(r, kcache_hash("never", 5), &row) == KCACHE_MISS);
    kcache_reader_close(r);
    /* "empty" (accounting's): its config.file is garbage without the magic */
    path_in(empty, sizeof empty, "empty");
    if (kcache_reader_open(&r, empty) != KCACHE_OK) { KT_FAILF("reader on %s", empty); return; }
    KT_CHECK(kcache_read_accounting(r, &a) == KCACHE_ECORRUPT && a.file_size > 0 && !a.valid);
    KT_CHECK(kcache_read_evictions(r, ev, &n) == KCACHE_ECORRUPT && n == 0);
    KT_CHECK(kcache_read_use(r, kcache_hash("x", 1), &row) == KCACHE_ECORRUPT);
    kcache_reader_close(r);
}

static void entry_files(void) {
    static unsigned char file[4096], copy[4096];
    kcache_reader *r;
    kcache_entry_info e;
    kcache_key k, got;
    char rel[48], path[400], link[400], unit[KCACHE_UNIT_MAX];
    size_t len = 0;
    void *data = NULL;
    size_t size = 0;
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader"); return; }
    make_key(&k, "sharpen", "1", NULL);
    kcache_entry_path(kcache_key_digest(&k), rel, sizeof rel);
    KT_CHECK(kcache_entry_read(r, rel, 1, &e, &got) == KCACHE_OK);
    KT_CHECK_MSG(e.problem[0] == 0 && e.lengths_ok && e.header_sum == 1 && e.padding == 1 && e.record == 1 && e.record_digest == 1 &&
                     e.name_digest == 1 && e.payload == 1 && e.payload_len == 9 && e.version == 1,
                 "problem '%s'", e.problem);
    KT_CHECK_STR(got.unit, "sharpen");
    kcache_key_free(&got);
    KT_CHECK(kcache_entry_unit(r, rel, unit, sizeof unit) == KCACHE_OK);
    KT_CHECK_STR(unit, "sharpen");
    KT_CHECK(kcache_entry_unit(r, rel, unit, 3) == KCACHE_ETOOBIG);
    KT_CHECK(kcache_entry_load(r, kcache_key_digest(&k), &got, &data, &size) == KCACHE_OK && size == 9 && data && memcmp(data, "payload-3", 9) == 0);
    KT_CHECK(kcache_key_digest(&got).lo == kcache_key_digest(&k).lo);
    kcache_key_free(&got);
    KCACHE_FREE(data);
    KT_CHECK(kcache_entry_load(r, kcache_hash("never", 5), &got, &data, &size) == KCACHE_ENOENT && data == NULL);
    kcache_key_free(&got);
    /* the same bytes in memory, then damaged one check at a time */
    snprintf(path, sizeof path, "%s/%s", g_store, rel);
    KT_CHECK(read_whole(path, file, sizeof file, &len) && len == e.file_size);
    KT_CHECK(kcache_entry_decode(file, len, len, &e, &got) == KCACHE_OK && e.payload == 1 && e.problem[0] == 0);
    kcache_key_free(&got);
    KT_CHECK(kcache_entry_decode(file, e.header_len, len, &e, &got) == KCACHE_OK && e.payload == -1 && e.record == 1); /* header only */
    kcache_key_free(&got);
    memcpy(copy, file, len);
    copy[len - 1] ^= 1;
    KT_CHECK(kcache_entry_decode(copy, len, len, &e, &got) == KCACHE_OK && e.payload == 0 && e.header_sum == 1);
    KT_CHECK_STR(e.problem, "payload checksum fails");
    kcache_key_free(&got);
    memcpy(copy, file, len);
    copy[72 + 3] ^= 1; /* inside the key record (after the fixed header's 72 bytes) */
    KT_CHECK(kcache_entry_decode(copy, len, len, &e, &got) == KCACHE_OK && e.header_sum == 0);
    KT_CHECK_STR(e.problem, "header checksum fails");
    kcache_key_free(&got);
    KT_CHECK(kcache_entry_decode(file, len, len + 5, &e, &got) == KCACHE_OK && !e.lengths_ok && e.payload == -1); /* a longer file */
    kcache_key_free(&got);
    KT_CHECK(kcache_entry_decode(file, 40, len, &e, &got) == KCACHE_ECORRUPT && strstr(e.problem, "truncated") == e.problem);
    kcache_key_free(&got);
    memcpy(copy, file, len);
    copy[0] = 'X';
    KT_CHECK(kcache_entry_decode(copy, len, len, &e, &got) == KCACHE_ECORRUPT);
    KT_CHECK_STR(e.problem, "not a kcache entry (no KCENTRY magic)");
    kcache_key_free(&got);
    memcpy(copy, file, len);
    copy[8] = 9; /* a format version from the future */
    KT_CHECK(kcache_entry_decode(copy, len, len, &e, &got) == KCACHE_ECORRUPT && strstr(e.problem, "entry format version 9") == e.problem);
    kcache_key_free(&got);
    /* files that are not entries: refused without reading (or blocking) */
    path_in(link, sizeof link, "e.link");
    KT_CHECK(symlink(path, link) == 0);
    KT_CHECK(kcache_entry_read(NULL, link, 1, &e, &got) == KCACHE_OK && e.payload == 1); /* a path the caller named: followed */
    kcache_key_free(&got);
    path_in(link, sizeof link, "e.fifo");
    KT_CHECK(mkfifo(link, 0600) == 0);
    KT_CHECK(kcache_entry_read(NULL, link, 1, &e, &got) == KCACHE_EUNSAFE);
    KT_CHECK_STR(e.problem, "not a regular file");
    kcache_key_free(&got);
    path_in(link, sizeof link, "e.none");
    KT_CHECK(kcache_entry_read(NULL, link, 1, &e, &got) == KCACHE_ENOENT && e.error == ENOENT);
    kcache_key_free(&got);
    KT_CHECK(kcache_entry_read(r, "e/00/none.kce", 1, &e, &got) == KCACHE_ENOENT);
    kcache_key_free(&got);
    KT_CHECK(kcache_entry_read(r, rel, 1, NULL, &got) == KCACHE_EINVAL);
    kcache_key_free(&got);
    /* writable by others: not loaded for a copy */
    KT_CHECK(chmod(path, 0666) == 0);
    KT_CHECK(kcache_entry_load(r, kcache_key_digest(&k), &got, &data, &size) == KCACHE_EUNSAFE && data == NULL);
    kcache_key_free(&got);
    KT_CHECK(chmod(path, 0600) == 0);
    kcache_key_free(&k);
    kcache_reader_close(r);
}

static void entry_walk_and_temp(void) {
    kcache_reader *r;
    kcache_entry_walk *w;
    kcache_entry_file f;
    kcache_temp_files t, t2;
    char path[400];
    int named = 0, stray = 0;
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader"); return; }
    snprintf(path, sizeof path, "%s/e/00", g_store);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/e/00/stray", g_store);
    write_file(path, "x");
    KT_CHECK(kcache_entry_walk_open(NULL, &w) == KCACHE_EINVAL);
    if (kcache_entry_walk_open(r, &w) != KCACHE_OK) { KT_FAILF("walk"); kcache_reader_close(r); return; }
    while (kcache_entry_walk_next(w, &f) == KCACHE_OK) {
        if (f.named) {
            named++;
            KT_CHECK(f.kind == KCACHE_KIND_FILE && !f.other_shard && f.size > 9 && kcache_entry_stat(r, f.digest, NULL) == KCACHE_OK);
        } else {
            stray++;
            KT_CHECK_STR(f.path, "e/00/stray");
        }
    }
    KT_CHECK(kcache_entry_walk_next(w, &f) == KCACHE_MISS);
    kcache_entry_walk_close(w);
    kcache_entry_walk_close(NULL);
    KT_CHECK_EQ_U64(named, 3);
    KT_CHECK_EQ_U64(stray, 1);
    unlink(path);
    /* tmp/: a dead writer's temp file (pid 2^31-2 runs nowhere) is orphaned; a name not kcache's stays */
    KT_CHECK(kcache_read_temp_files(r, &t) == KCACHE_OK);
    snprintf(path, sizeof path, "%s/tmp/2147483646-ab12.tmp", g_store);
    write_file(path, "12345");
    snprintf(path, sizeof path, "%s/tmp/notkcaches", g_store);
    write_file(path, "1");
    KT_CHECK(kcache_read_temp_files(r, &t2) == KCACHE_OK);
    KT_CHECK(t2.files == t.files + 2 && t2.orphaned == t.orphaned + 1 && t2.orphaned_bytes == t.orphaned_bytes + 5 && t2.in_progress == t.in_progress + 1);
    unlink(path);
    snprintf(path, sizeof path, "%s/tmp/2147483646-ab12.tmp", g_store);
    unlink(path);
    KT_CHECK(kcache_read_temp_files(NULL, &t) == KCACHE_EINVAL);
    kcache_reader_close(r);
}

static void explain_texts(void) {
    kcache_key a, b;
    char dep[300], text[400];
    const kcache_key_field *f;
    unsigned char big[100];
    size_t need;
    path_in(dep, sizeof dep, "d3.h");
    write_file(dep, "one\n");
    make_key(&a, "u", "1", dep);
    write_file(dep, "three\n");
    make_key(&b, "u", "2", dep);
    need = kcache_key_diff_text(&a, &b, text, sizeof text);
    KT_CHECK_MSG(need == strlen(text) && strstr(text, "opt: \"1\" (stored) vs \"2\" (now)") != NULL, "diff '%s'", text);
    KT_CHECK(kcache_key_diff_text(&a, &b, text, 6) == need && strlen(text) < 6);
    need = kcache_key_stamps_text(&a, &b, KCACHE_STAMP_HYBRID, text, sizeof text);
    KT_CHECK_MSG(need == strlen(text) && strstr(text, "file dep (") == text && strstr(text, " size") != NULL, "stamps '%s'", text);
    KT_CHECK(kcache_key_diff_text(NULL, &b, text, sizeof text) == 0 && text[0] == 0);
    kcache_key_free(&a);
    kcache_key_free(&b);
    kcache_key_init(&a, "u");
    memset(big, 7, sizeof big);
    kcache_key_bytes(&a, "blob", big, sizeof big);
    kcache_key_str(&a, "name", "x");
    f = kcache_key_field_at(&a, 0);
    KT_CHECK(f && kcache_preview_is_digest(f));
    f = kcache_key_field_at(&a, 1);
    KT_CHECK(f && !kcache_preview_is_digest(f));
    KT_CHECK(!kcache_preview_is_digest(NULL));
    kcache_key_free(&a);
}

static void index_files(void) {
#ifndef KCACHE_NO_EXPLAIN
    static unsigned char file[8192];
    kcache_reader *r;
    kcache_index *ix = NULL, *same = NULL;
    kcache_index_log log;
    kcache_index_walk *w;
    kcache_index_file f;
    const kcache_index_item *it;
    kcache_key now, dec;
    char rel[48], path[400], why[120], unit[KCACHE_UNIT_MAX];
    size_t len = 0;
    uint32_t i;
    int best = -1, eq;
    if (kcache_reader_open(&r, g_store) != KCACHE_OK) { KT_FAILF("reader"); return; }
    kcache_index_path("blur", rel, sizeof rel);
    snprintf(path, sizeof path, "%s/%s", g_store, rel);
    KT_CHECK(read_whole(path, file, sizeof file - 16, &len) && len > 100);
    KT_CHECK(kcache_index_decode(file, len, &ix, why, sizeof why) == KCACHE_OK && ix);
    KT_CHECK(kcache_index_read(r, "blur", &same) == KCACHE_OK);
    KT_CHECK(kcache_index_count(ix, KCACHE_INDEX_LIVE) == kcache_index_count(same, KCACHE_INDEX_LIVE) &&
             kcache_index_count(ix, KCACHE_INDEX_MISSED) == kcache_index_count(same, KCACHE_INDEX_MISSED));
    kcache_index_log_info(ix, &log);
    KT_CHECK(log.unit_len == 4 && memcmp(log.unit, "blur", 4) == 0 && log.bytes == len && log.records >= 3 && log.by_kind[0] >= 2 &&
             log.by_kind[2] == 1 && log.damaged_bytes == 0 && log.damaged_places == 0 && log.rewritten_at > 0);
    /* the closest live overload to a key, as a tool finds it */
    make_key(&now, "blur", "2", NULL);
    for (i = 0; (it = kcache_index_at(ix, KCACHE_INDEX_LIVE, i)) != NULL; i++) {
        eq = kcache_record_compare(it->record, it->record_len, &now, &dec);
        if (eq > best) best = eq;
        if (eq >= 0) KT_CHECK_STR(dec.unit, "blur");
        kcache_key_free(&dec);
    }
    KT_CHECK_EQ_U64(best, 1); /* opt=2: the overload without the dependency */
    KT_CHECK(kcache_record_compare("junk", 4, &now, &dec) == -1);
    kcache_key_free(&dec);
    kcache_key_free(&now);
    kcache_index_free(ix);
    kcache_index_free(same);
    /* damage: a torn tail is skipped and counted; a header that is not an index's is refused */
    memcpy(file + len, "torn!!!", 7);
    KT_CHECK(kcache_index_decode(file, len + 7, &ix, why, sizeof why) == KCACHE_OK);
    kcache_index_log_info(ix, &log);
    KT_CHECK(log.damaged_bytes == 7 && log.damaged_places == 1 && kcache_index_count(ix, KCACHE_INDEX_LIVE) == 2);
    kcache_index_free(ix);
    KT_CHECK(kcache_index_decode(file, 20, &ix, why, sizeof why) == KCACHE_ECORRUPT && ix == NULL && strstr(why, "truncated") == why);
    file[0] = 'X';
    KT_CHECK(kcache_index_decode(file, len, &ix, why, sizeof why) == KCACHE_ECORRUPT && ix == NULL);
    KT_CHECK_STR(why, "not a kcache index (no KCINDEX magic)");
    KT_CHECK(kcache_index_decode(NULL, 5, &ix, why, sizeof why) == KCACHE_EINVAL);
    /* from files */
    KT_CHECK(kcache_index_load(r, rel, &ix, why, sizeof why) == KCACHE_OK && kcache_index_count(ix, KCACHE_INDEX_LIVE) == 2);
    kcache_index_free(ix);
    KT_CHECK(kcache_index_load(NULL, path, &ix, why, sizeof why) == KCACHE_OK);
    kcache_index_free(ix);
    KT_CHECK(kcache_index_load(r, "i/00/0000000000000000000000000000beef.kci", &ix, why, sizeof why) == KCACHE_ENOENT && ix == NULL &&
             strstr(why, "cannot open") == why);
    path_in(path, sizeof path, "ix.fifo");
    KT_CHECK(mkfifo(path, 0600) == 0);
    KT_CHECK(kcache_index_load(NULL, path, &ix, why, sizeof why) == KCACHE_EUNSAFE && ix == NULL);
    KT_CHECK_STR(why, "not a regular file");
    /* the walk names each file's whole digest */
    if (kcache_index_walk_open(r, &w) == KCACHE_OK) {
        while (kcache_index_walk_next(w, &f) == KCACHE_OK) {
            KT_CHECK(f.name.lo == f.name_lo && !f.other_shard);
            if (kcache_index_walk_unit(w, unit, sizeof unit) == KCACHE_OK) {
                kcache_hash128 h = kcache_hash(unit, strlen(unit));
                KT_CHECK(h.lo == f.name.lo && h.hi == f.name.hi);
            }
        }
        kcache_index_walk_close(w);
    }
    kcache_reader_close(r);
#else
    kcache_index *ix = (kcache_index *)1;
    KT_CHECK(kcache_index_decode("KCINDEX", 8, &ix, NULL, 0) == KCACHE_EDISABLED && ix == NULL);
#endif
}

static void remove_tree(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(void) {
    const char *t = getenv("TMPDIR");
    if (!t || t[0] != '/' || strlen(t) > 150) t = "/tmp";
    snprintf(g_root, sizeof g_root, "%s/kcache-toolapi-XXXXXX", t);
    if (!mkdtemp(g_root)) { printf("FAIL setup: mkdtemp\n"); return 1; }
    snprintf(g_store, sizeof g_store, "%s/s", g_root);
    unsetenv("KCACHE_DIR");
    unsetenv("KCACHE_STATS");
    KT_RUN(make_store);
    KT_RUN(reader_open_close);
    KT_RUN(default_dir);
    KT_RUN(text_helpers);
    KT_RUN(accounting);
    KT_RUN(entries);
    KT_RUN(records_and_stamps);
    KT_RUN(dependencies);
    KT_RUN(index_walk);
    KT_RUN(stats_file);
    KT_RUN(host_names);
    KT_RUN(accounting_whole);
    KT_RUN(entry_files);
    KT_RUN(entry_walk_and_temp);
    KT_RUN(explain_texts);
    KT_RUN(index_files);
    KT_RUN(index_logs); /* last: it damages an index */
    kcache_close(g_kc);
    remove_tree(g_root);
    return kt_failures_total ? 1 : 0;
}
