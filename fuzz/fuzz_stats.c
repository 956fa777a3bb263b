/* fuzz_stats.c - libFuzzer target for DIR/stats, the file every kcache publishes into for
 * kcache-top: its readers (kcache.h's checks and kcache-top's batch path) and the writer that
 * attaches to a file already there.
 *
 *   clang -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I. \
 *         -o build/fuzz_stats fuzz/fuzz_stats.c -lncursesw -lpthread
 *   build/fuzz_stats -max_total_time=600 build/fuzz-work/stats fuzz/corpus/stats
 *
 * The input is a stats file's bytes. The file is 1 MiB and mostly zeros, so the seeds are real
 * files with their trailing zeros cut; the "repaired" image below pads them back, byte for byte.
 * Each input is written to DIR/stats of one temp directory (made once per process) as:
 *   1. the bytes as they are: kcache-top samples it and prints a snapshot (a file of the wrong
 *      size or header must be refused: no slot, no total, no event read from it);
 *   2. repaired: zero-padded or cut to the file's size, the layout fields and header checksum
 *      set, so that mutations reach the slots. kcache-top samples it three times (first through
 *      its own mapping, then from an exact-size heap copy, where ASan sees any read past the
 *      file), prints the snapshot and a unit's detail. Properties, against a decoder written
 *      here from the layout in kcache.h's >>pub comment (raw offsets, not kcache's accessors):
 *      the totals are the retired counters plus every claimed slot's; the claimed slots are
 *      counted; each unit's live counts are the sum of its entries in the readable slots'
 *      tables; every intact event of the readable rings is read (newest first), none twice;
 *      every line is printable. One input in 8 also truncates the mapped file under kcache-top
 *      (its SIGBUS guard must drop the mapping and say so).
 *   3. half of the inputs: a kcache opens the directory (on the repaired file, the file as it
 *      is, or the file as it is with a valid magic and checksum over its own layout fields),
 *      misses, puts, hits and closes. It must repair or refuse, never crash, never write outside
 *      the file: a damaged file is replaced by a new valid one (the old one not written in
 *      place), one of a newer version is left byte for byte, a valid one changes only in the
 *      retired counters and in the one slot claimed; after close the totals are what they were
 *      plus exactly this kcache's kcache_get_stats counters, the slot is free with an empty unit
 *      table, its ring holds the new events (this pid, this unit) and kcache-top reads all that
 *      back. The payload read back is the payload put; tmp/ holds no leftover.
 *
 * tools/kcache-top.c has no switch yet to leave its main() and interactive view out (as
 * kcache-inspect keeps its main in tools/inspect_main.c): KCACHE_TOP_NO_MAIN is defined for when it has,
 * and meanwhile its main is renamed while it is included (and the target links -lncursesw). */
#define KCACHE_TOP_NO_MAIN
#define main kcache_top_main_unused
/* kcache-top's consistent read pauses 200 us between its tries (up to 50); nothing changes the
   file under it here, so the pauses would only cost time: nanosleep returns at once in this
   program. */
#define nanosleep(req, rem) fuzz_nanosleep(req, rem)
#include "../tools/kcache-top.c"
#undef main
#undef nanosleep

#include <limits.h>
#include "fuzz_tmp.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

int fuzz_nanosleep(const struct timespec *req, struct timespec *rem)
{
    (void)req;
    (void)rem;
    return 0;
}

/* The layout as documented in kcache.h's >>pub comment; the decoder below uses these, so a
   layout that drifted from its documentation fails to compile here. */
#define FS_HEADER 4096u
#define FS_SLOTS 64u
#define FS_SLOT 16896u
#define FS_NCTR 48u
#define FS_RETIRED 128u
#define FS_CTR 128u
#define FS_UNITS 512u
#define FS_EVENTS 8704u
#define FS_FILE ((size_t)FS_HEADER + (size_t)FS_SLOTS * FS_SLOT)
typedef char fs_layout_documented[(FS_SLOT == KCACHE__PUB_SLOT_BYTES && FS_FILE == KCACHE__PUB_FILE_BYTES &&
                                   FS_EVENTS == KCACHE__PUB_EVENTS_AT && FS_UNITS == KCACHE__PUB_UNITS_AT &&
                                   FS_CTR == KCACHE__PUB_CTR_AT && FS_NCTR == KCACHE__PUB_COUNTERS &&
                                   KCACHE__PUB_UNITS == 64 && KCACHE__PUB_EVENTS == 64 && KCACHE__PUB_UNIT_BYTES == 128 &&
                                   KCACHE__PUB_EVENT_BYTES == 128) ? 1 : -1];

static char g_dir[1024];
static char g_path[1100], g_new[1100];
static unsigned char *g_img, *g_after; /* the repaired image; the file read back after a writer */
static size_t g_img_used;              /* bytes of g_img that may be non-zero */
static unsigned g_writer_runs;
static unsigned long g_log_lines;
static FILE *g_null;                   /* batch output goes nowhere: printing it is what is exercised */

/* ---- the temp directory ---- */

static void at_exit_clean(void)
{
    empty_dir(g_dir);
    rmdir(g_dir);
}

static void init_once(void)
{
    const char *t = getenv("TMPDIR");
    if (g_img) return;
    if (!t || t[0] != '/' || strlen(t) >= 900) t = "/tmp";
    sweep_stale(t, "kcache-fuzz-stats-");
    snprintf(g_dir, sizeof g_dir, "%s/kcache-fuzz-stats-%u-XXXXXX", t, (unsigned)getpid());
    CHECK(mkdtemp(g_dir) != NULL);
    snprintf(g_path, sizeof g_path, "%s/stats", g_dir);
    snprintf(g_new, sizeof g_new, "%s/stats.new", g_dir);
    g_img = (unsigned char *)calloc(1, FS_FILE);
    g_after = (unsigned char *)malloc(FS_FILE);
    CHECK(g_img && g_after);
    g_null = fopen("/dev/null", "w");
    CHECK(g_null != NULL);
    K.ev = (kt_event *)malloc(KT_EVENTS * sizeof *K.ev);
    CHECK(K.ev != NULL);
    atexit(at_exit_clean);
}

/* DIR/stats := n bytes of p, then zeros up to size (a sparse tail: most of a stats file is
   zeros), always a new inode. */
static void put_file(const unsigned char *p, size_t n, size_t size)
{
    int fd = open(g_new, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t off = 0;
    CHECK(fd >= 0);
    while (off < n) {
        ssize_t w = write(fd, p + off, n - off);
        CHECK(w > 0);
        off += (size_t)w;
    }
    CHECK(ftruncate(fd, (off_t)size) == 0);
    close(fd);
    CHECK(rename(g_new, g_path) == 0);
}

/* ---- the decoder: what a reader must find in a file ---- */

static uint64_t w64(const unsigned char *img, size_t off) { return kcache__get_u64(img + off); }
static const unsigned char *slot_of(const unsigned char *img, unsigned i) { return img + FS_HEADER + (size_t)i * FS_SLOT; }

typedef struct fs_expect {
    uint64_t tot[FS_NCTR];
    unsigned claimed;
    int any_odd;      /* a slot being changed (odd epoch): the reader may call its read inconsistent */
    size_t events;    /* intact events in the readable rings */
} fs_expect;

/* The events a reader takes from slot s's ring: the last 64 sequence numbers up to the head, each
   where its sequence word says it is. Counted with a bounded loop (a head of 2^64-1 is a ring
   like any other). */
static size_t ring_events(const unsigned char *s)
{
    uint64_t head = kcache__get_u64(s + 48), first, k, n = 0;
    if (!head) return 0;
    first = head > 64 ? head - 63 : 1;
    for (k = 0; k <= head - first; k++) {
        uint64_t seq = first + k;
        if (kcache__get_u64(s + FS_EVENTS + (size_t)((seq - 1) % 64) * 128) == seq) n++;
    }
    return (size_t)n;
}

static void decode(const unsigned char *img, fs_expect *x)
{
    unsigned i, c;
    memset(x, 0, sizeof *x);
    for (c = 0; c < FS_NCTR; c++) x->tot[c] = w64(img, FS_RETIRED + 8 * c);
    for (i = 0; i < FS_SLOTS; i++) {
        const unsigned char *s = slot_of(img, i);
        uint64_t owner = kcache__get_u64(s), epoch = kcache__get_u64(s + 8);
        if (owner) {
            x->claimed++;
            for (c = 0; c < FS_NCTR; c++) x->tot[c] += kcache__get_u64(s + FS_CTR + 8 * c);
        }
        if (epoch & 1) x->any_odd = 1;
        if (!(epoch & 1)) x->events += ring_events(s);
    }
}

/* Each unit's live counts: the sum of its entries in every slot whose table a reader takes
   (claimed, set up, even epoch). An open-addressing table of the hashes seen. */
#define UT_CAP 8192
static struct { uint64_t hash, c[5]; } g_ut[UT_CAP];
static void check_units(const unsigned char *img)
{
    static const unsigned word[5] = {1, 2, 3, 4, 7}; /* U_MEM, U_DISK, U_MISS, U_PUTS, U_BYTES */
    unsigned i, j, c;
    size_t k;
    memset(g_ut, 0, sizeof g_ut);
    for (i = 0; i < FS_SLOTS; i++) {
        const unsigned char *s = slot_of(img, i);
        uint64_t owner = kcache__get_u64(s), epoch = kcache__get_u64(s + 8);
        if (!owner || (owner & KCACHE__PUB_SETTING_UP) || (epoch & 1)) continue;
        for (j = 0; j < 64; j++) {
            const unsigned char *e = s + FS_UNITS + (size_t)j * 128;
            uint64_t h = kcache__get_u64(e);
            if (!h) continue;
            for (k = (size_t)(h % UT_CAP); g_ut[k].hash && g_ut[k].hash != h; k = (k + 1) % UT_CAP) {
            }
            g_ut[k].hash = h;
            for (c = 0; c < 5; c++) g_ut[k].c[c] += kcache__get_u64(e + 8 * word[c]);
        }
    }
    for (k = 0; k < UT_CAP; k++) {
        kt_unit *u;
        if (!g_ut[k].hash) continue;
        u = kt_unit_get(g_ut[k].hash, 0);
        CHECK(u != NULL);
        CHECK(u->live[U_MEM] == g_ut[k].c[0] && u->live[U_DISK] == g_ut[k].c[1] && u->live[U_MISS] == g_ut[k].c[2] &&
              u->live[U_PUTS] == g_ut[k].c[3] && u->live[U_BYTES] == g_ut[k].c[4]);
    }
}

/* ---- kcache-top ---- */

/* A fresh kcache-top on the temp directory (what its main sets up before the first sample). */
static void top_reset(int sort, int ascii)
{
    kt_event *ev = K.ev;
    kcache_reader *rd = K.rd;
    kt_unmap();
    free(K.u);
    free(K.uhash);
    memset(&K, 0, sizeof K);
    K.ev = ev;
    K.interval = 2.0;
    K.iterations = 1;
    K.batch = 1;
    K.sort = sort % SORT_N;
    K.ascii = ascii;
    K.utf8 = !ascii;
    snprintf(K.dir, sizeof K.dir, "%s", g_dir);
    if (!rd) CHECK(kcache_reader_open(&rd, g_dir) == KCACHE_OK); /* the fuzzer made the store: its files are trusted */
    K.rd = rd;
}

/* Every line printable: colour marks (\001 and a colour digit) and printable bytes only. */
static void check_lines(const kt_lines *L)
{
    size_t i;
    const char *s;
    for (i = 0; i < L->n; i++)
        for (s = L->v[i]; *s; s++) {
            if (*s == '\001') { s++; CHECK(*s >= '0' && *s < '0' + C_N); continue; }
            CHECK((unsigned char)*s >= 0x20 && *s != 0x7f);
        }
}

static void check_read(const fs_expect *x)
{
    size_t i;
    unsigned c;
    for (c = 0; c < FS_NCTR; c++) CHECK(K.tot[c] == x->tot[c]);
    CHECK((unsigned)K.nclaimed == x->claimed);
    if (!x->any_odd) CHECK(K.consistent);
    CHECK(x->events <= KT_EVENTS ? K.nev == x->events : K.nev <= KT_EVENTS);
    for (i = 1; i < K.nev; i++) CHECK(K.ev[i - 1].time >= K.ev[i].time); /* newest first */
    for (i = 0; i < K.nev; i++) CHECK(strlen(K.ev[i].unit) <= KCACHE__PUB_EVENT_NAME);
    for (i = 0; i < KT_NSLOT; i++) CHECK(strlen(K.slot[i].name) <= 16);
}

static void check_text(const char *s)
{
    CHECK(s != NULL && strlen(s) < 64);
    for (; *s; s++) CHECK((unsigned char)*s >= 0x20 && *s != 0x7f);
}

/* The formatters the interactive view applies to the same sample. */
static void interactive_formatters(void)
{
    char b[64];
    size_t i;
    int m;
    for (i = 0; i < K.nev; i++) {
        int c = kt_kind_color(K.ev[i].kind, K.ev[i].reason);
        CHECK(c >= 0 && c < C_N);
        check_text(kt_ago(K.ev[i].time, b, sizeof b));
    }
    for (m = 0; m < M_N; m++) check_text(kt_metric_fmt(m, K.rate[m], b, sizeof b));
}

static void snapshot_and_detail(const char *unit)
{
    kt_lines L;
    size_t i;
    unsigned long long hits = 0;
    int seen = 0;
    memset(&L, 0, sizeof L);
    kt_snapshot(&L, 1, 1);
    check_lines(&L);
    for (i = 0; i < L.n; i++) kt_print_plain(g_null, L.v[i]);
    interactive_formatters();
    for (i = 0; i < L.n; i++)
        if (sscanf(L.v[i], "totals     hits=%llu", &hits) == 1) { /* the same number the header shows */
            CHECK(hits == K.tot[KCACHE__PUB_HITS_MEM] + K.tot[KCACHE__PUB_HITS_DISK] + K.tot[KCACHE__PUB_HITS_REMOTE] +
                              K.tot[KCACHE__PUB_HITS_LAYER]); /* every tier's */
            seen = 1;
        }
    CHECK(seen);
    kt_lines_free(&L);
    if (unit && unit[0]) {
        kt_unit *u = kt_find_unit(unit), tmp;
        if (!u) { /* what main does for a unit it does not know */
            memset(&tmp, 0, sizeof tmp);
            snprintf(tmp.name, sizeof tmp.name, "%s", unit);
            tmp.full_name = 1;
            tmp.hash = kt_unit_hash(unit);
            tmp.last_reason = tmp.traced_reason = -1;
            u = &tmp;
        }
        kt_detail(&L, u);
        check_lines(&L);
        kt_lines_free(&L);
    }
}

/* kcache-top against a file that is (valid) or is not (!x) one it must read. */
static void top_run(const fs_expect *x, uint64_t h, const char *unit, int bus)
{
    int round;
    top_reset((int)((h >> 3) % SORT_N), (int)(h >> 5) & 1);
    kt_sample();
    if (!x) {
        unsigned c;
        CHECK(K.sf == NULL && K.stats_note[0] && K.nclaimed == 0 && K.nev == 0);
        for (c = 0; c < FS_NCTR; c++) CHECK(K.tot[c] == 0);
        snapshot_and_detail(NULL);
        return;
    }
    CHECK(K.sf != NULL);
    check_read(x);
    {   /* the same file from an exact-size heap copy: ASan sees a read past its end */
        unsigned char *copy = (unsigned char *)malloc(FS_FILE);
        kcache_stats_file *sf;
        int fd = open(g_path, O_RDONLY | O_CLOEXEC);
        size_t got = 0;
        CHECK(copy != NULL && fd >= 0);
        while (got < FS_FILE) {
            ssize_t r = pread(fd, copy + got, FS_FILE - got, (off_t)got);
            CHECK(r > 0);
            got += (size_t)r;
        }
        close(fd);
        check_units(copy);
        kt_unmap();
        CHECK(kcache_stats_file_from_image(copy, FS_FILE, &sf) == KCACHE_OK);
        K.sf = sf;
        for (round = 0; round < 2; round++) { /* an image is never replaced: kcache-top keeps it */
            kt_sample();
            CHECK(K.sf == sf);
            check_read(x);
            check_units(copy);
        }
        snapshot_and_detail(unit);
        kt_unmap();
        free(copy);
    }
    if (bus) { /* the mapped file cut short by something else: kcache-top's SIGBUS guard */
        struct sigaction sa, old;
        off_t keep = (off_t)FS_HEADER * (off_t)(1 + (h >> 16) % 200);
        top_reset(0, 1);
        kt_sample();
        CHECK(K.sf != NULL);
        CHECK(truncate(g_path, keep) == 0);
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = kt_on_bus;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, &old); /* libFuzzer's own handler goes back afterwards */
        kt_sample();
        sigaction(SIGBUS, &old, NULL);
        CHECK(K.sf == NULL && strstr(K.stats_note, "truncated") != NULL);
    }
}

/* ---- the writer ---- */

static void log_sink(void *user, const char *line)
{
    (void)user;
    CHECK(line != NULL && strlen(line) < 1024);
    g_log_lines++;
}

/* The unit a writer uses: a name the file's unit tables hold (so the writer finds its own entry
   there), else "fuzz". */
static void pick_unit(const unsigned char *img, char *out, size_t cap)
{
    unsigned i, j;
    snprintf(out, cap, "fuzz");
    for (i = 0; i < FS_SLOTS; i++) {
        const unsigned char *s = slot_of(img, i);
        if (!kcache__get_u64(s)) continue;
        for (j = 0; j < 64; j++) {
            const unsigned char *e = s + FS_UNITS + (size_t)j * 128;
            uint64_t info = kcache__get_u64(e + 48);
            char name[KCACHE__PUB_UNIT_NAME + 1];
            if (!kcache__get_u64(e) || ((info >> 8) & 0xffff) > KCACHE__PUB_UNIT_NAME) continue;
            kcache__pub_get_name((const uint64_t *)(const void *)(e + 64), KCACHE__PUB_UNIT_NAME, name, sizeof name);
            if (name[0]) { snprintf(out, cap, "%s", name); return; }
        }
    }
}

static size_t read_back(unsigned char *buf, size_t cap, struct stat *st)
{
    int fd = open(g_path, O_RDONLY | O_CLOEXEC);
    size_t n = 0;
    CHECK(fd >= 0 && fstat(fd, st) == 0);
    while (n < cap) {
        ssize_t r = pread(fd, buf + n, cap - n, (off_t)n);
        CHECK(r >= 0);
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    return n;
}

/* Which counter of the stats file each kcache_get_stats counter is published as. */
static void published_delta(const kcache_stats *s, uint64_t d[FS_NCTR])
{
    int r;
    memset(d, 0, sizeof(uint64_t) * FS_NCTR);
    d[KCACHE__PUB_HITS_MEM] = s->hits_mem;
    d[KCACHE__PUB_HITS_DISK] = s->hits_disk;
    d[KCACHE__PUB_MISSES] = s->misses;
    d[KCACHE__PUB_PUTS] = s->puts;
    d[KCACHE__PUB_EVICTIONS] = s->evictions;
    d[KCACHE__PUB_REJECTS] = s->rejects;
    d[KCACHE__PUB_BYTES_READ] = s->bytes_read;
    d[KCACHE__PUB_BYTES_WRITTEN] = s->bytes_written;
    d[KCACHE__PUB_MEM_EVICTIONS] = s->mem_evictions;
    d[KCACHE__PUB_BUILDS] = s->builds;
    d[KCACHE__PUB_BUILD_WAITS] = s->build_waits;
    d[KCACHE__PUB_STORE_ERRORS] = s->store_errors;
    for (r = 0; r < KCACHE_REASON_COUNT; r++) d[KCACHE__PUB_MISS_REASON + r] = s->misses_by_reason[r];
}

/* A kcache on the directory whose stats file holds before[0..blen), zeros after used (vbefore:
   kcache__pub_valid of it). */
static void writer_run(const unsigned char *before, size_t used, size_t blen, int vbefore, uint64_t h)
{
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_key k;
    kcache_stats st;
    const void *got;
    size_t got_n, n, i, slot_i = 0;
    unsigned char payload[80];
    char unit[KCACHE__PUB_UNIT_NAME + 1];
    struct stat sb0, sb1;
    int old_fd, published, c;
    uint64_t owner_before = 0, head_before = 0, d[FS_NCTR];
    fs_expect xb, xa;

    if (++g_writer_runs % 64 == 0) empty_dir(g_dir); /* units named by inputs: keep the store small */
    put_file(before, used, blen);
    old_fd = open(g_path, O_RDONLY | O_CLOEXEC);
    CHECK(old_fd >= 0 && fstat(old_fd, &sb0) == 0);
    if (vbefore == 1) decode(before, &xb);
    else memset(&xb, 0, sizeof xb); /* replaced by a new, empty file */
    pick_unit(vbefore == 1 ? before : g_img, unit, sizeof unit);

    kcache_config_init(&cfg);
    cfg.dir = g_dir;
    cfg.max_size = 0;
    cfg.mem_entries = 4;
    cfg.mem_size = 1 << 16;
    cfg.enable = cfg.persistent = cfg.publish = 1;
    cfg.debug = (int)(h >> 8) & 1;
    cfg.trace = (int)(h >> 9) & 1;
    cfg.fsync = 0;
    cfg.write_policy = KCACHE_WRITE_THROUGH;
    cfg.stamp = KCACHE_STAMP_HYBRID;
    cfg.build_wait_ms = 0;
    cfg.lock_timeout_ms = 2000;
    cfg.log = log_sink;
    cfg.log_user = NULL;
    CHECK(kcache_open(&kc, &cfg) == KCACHE_OK && kc != NULL);
    CHECK(kc->store != NULL);
    published = kc->pub.map != NULL;
    if (published) {
        size_t off = (size_t)(kc->pub.slot - kc->pub.map);
        CHECK(kc->pub.slot != NULL && kc->pub.len == FS_FILE);
        CHECK(off >= FS_HEADER && (off - FS_HEADER) % FS_SLOT == 0 && (off - FS_HEADER) / FS_SLOT < FS_SLOTS);
        slot_i = (off - FS_HEADER) / FS_SLOT;
        if (vbefore == 1) {
            owner_before = kcache__get_u64(slot_of(before, (unsigned)slot_i));
            head_before = kcache__get_u64(slot_of(before, (unsigned)slot_i) + 48);
        }
    }
    CHECK(vbefore >= 0 || !published); /* a newer version is left alone */

    /* one key and payload per unit: an earlier input's entry is this one's, and the unit's index
       keeps one overload (kcache-top reads every index at each sample) */
    n = 16 + strlen(unit) % 64;
    for (i = 0; i < n; i++) payload[i] = (unsigned char)(kcache_hash(unit, strlen(unit)).lo >> (i % 8 * 8)) ^ (unsigned char)i;
    CHECK(kcache_key_init(&k, unit) == KCACHE_OK);
    CHECK(kcache_key_u64(&k, "k", 1) == KCACHE_OK);
    if (kcache_get(kc, &k, &got, &got_n) == KCACHE_OK) { /* stored by an earlier input: the same payload */
        CHECK(got_n == n && memcmp(got, payload, n) == 0);
        kcache_release(kc, got);
    }
    (void)kcache_put(kc, &k, payload, n);
    CHECK(kcache_get(kc, &k, &got, &got_n) == KCACHE_OK);
    CHECK(got_n == n && memcmp(got, payload, n) == 0);
    kcache_release(kc, got);
    kcache_get_stats(kc, &st);
    kcache_key_free(&k);
    kcache_close(kc);

    /* the file as it was when kcache opened it: a damaged one was not written in place */
    if (vbefore != 1) {
        unsigned char b[4096];
        size_t off;
        for (off = 0; off < blen; off += sizeof b) {
            size_t want = blen - off < sizeof b ? blen - off : sizeof b;
            CHECK(pread(old_fd, b, want, (off_t)off) == (ssize_t)want && memcmp(b, before + off, want) == 0);
        }
    }
    close(old_fd);
    n = read_back(g_after, FS_FILE, &sb1);
    if (vbefore < 0) { /* a newer version: the same file, byte for byte */
        CHECK(sb1.st_ino == sb0.st_ino && (size_t)sb1.st_size == blen && n == blen && memcmp(g_after, before, n) == 0);
        return;
    }
    if (!published) { /* valid and every slot taken (or no file could be made): nothing written */
        if (vbefore == 1) CHECK(n == blen && memcmp(g_after, before, n) == 0);
        return;
    }
    CHECK(n == FS_FILE && (size_t)sb1.st_size == FS_FILE && kcache__pub_valid(g_after, n) == 1);
    if (vbefore == 1) { /* only the retired counters and the claimed slot changed */
        size_t lo = FS_HEADER + slot_i * FS_SLOT, hi = lo + FS_SLOT;
        CHECK(sb1.st_ino == sb0.st_ino);
        CHECK(memcmp(g_after, before, FS_RETIRED) == 0);
        CHECK(memcmp(g_after + FS_RETIRED + 8 * FS_NCTR, before + FS_RETIRED + 8 * FS_NCTR, lo - (FS_RETIRED + 8 * FS_NCTR)) == 0);
        CHECK(memcmp(g_after + hi, before + hi, FS_FILE - hi) == 0);
    }
    /* the totals are what they were plus exactly what this kcache counted */
    decode(g_after, &xa);
    published_delta(&st, d);
    for (c = 0; c < (int)FS_NCTR; c++) CHECK(xa.tot[c] == xb.tot[c] + d[c]);
    CHECK(xa.claimed + (owner_before != 0) == xb.claimed);
    {   /* its slot: free, unit table empty, the new events in its ring */
        const unsigned char *s = slot_of(g_after, (unsigned)slot_i);
        uint64_t head = kcache__get_u64(s + 48), seq, lo_ev = st.misses + st.puts + st.hits_disk;
        unsigned j;
        CHECK(kcache__get_u64(s) == 0 && (kcache__get_u64(s + 8) & 1) == 0);
        for (j = 0; j < 64; j++) CHECK(kcache__get_u64(s + FS_UNITS + (size_t)j * 128) == 0);
        if (head_before < ((uint64_t)1 << 62)) {
            CHECK(head - head_before >= lo_ev && head - head_before <= lo_ev + st.hits_mem);
            for (seq = head > 64 ? head - 63 : 1; seq <= head; seq++) {
                const unsigned char *e = s + FS_EVENTS + (size_t)((seq - 1) % 64) * 128;
                char name[KCACHE__PUB_EVENT_NAME + 1];
                if (seq <= head_before) continue;
                CHECK(kcache__get_u64(e) == seq && kcache__get_u64(e + 40) == (uint64_t)getpid());
                kcache__pub_get_name((const uint64_t *)(const void *)(e + 48), KCACHE__PUB_EVENT_NAME, name, sizeof name);
                CHECK(strncmp(name, unit, KCACHE__PUB_EVENT_NAME) == 0);
            }
        }
    }
    {   /* nothing left behind in tmp/, nothing made beside the store's own files */
        DIR *dp = opendir(g_dir);
        struct dirent *de;
        char tmp[1200];
        CHECK(dp != NULL);
        while ((de = readdir(dp)) != NULL) {
            static const char *const ok[] = {".", "..", "stats", "config.file", "lock", "e", "i", "tmp"};
            size_t m, found = 0;
            for (m = 0; m < sizeof ok / sizeof ok[0]; m++) if (strcmp(de->d_name, ok[m]) == 0) found = 1;
            CHECK(found);
        }
        closedir(dp);
        snprintf(tmp, sizeof tmp, "%s/tmp", g_dir);
        CHECK((dp = opendir(tmp)) != NULL);
        while ((de = readdir(dp)) != NULL) CHECK(strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0);
        closedir(dp);
    }
    /* and kcache-top reads back what the writer left */
    top_run(&xa, h, unit, 0);
}

/* A hung input is a finding (kcache-top looped for ever on a ring head of 2^64-1:
   tests/data/stats-regress/top-event-head-max.stats), reported after -timeout=10 unless the
   command line sets one. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static char *args[512];
    static char timeout[] = "-timeout=10";
    int i;
    for (i = 0; i < *argc; i++)
        if (strncmp((*argv)[i], "-timeout=", 9) == 0) return 0;
    if (*argc + 2 > (int)(sizeof args / sizeof args[0])) return 0;
    for (i = 0; i < *argc; i++) args[i] = (*argv)[i];
    args[i++] = timeout;
    args[i] = NULL;
    *argc = i;
    *argv = args;
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    uint64_t h;
    size_t keep;
    fs_expect x;
    int v;
    char unit[KCACHE__PUB_UNIT_NAME + 1];
    if (size > FS_FILE) return 0;
    init_once();
    h = kcache_hash(data, size).lo;

    /* 1. as it is */
    put_file(data, size, size);
    v = size >= FS_HEADER ? kcache__pub_valid(data, size) : 0;
    if (v == 1) {
        decode(data, &x);
        pick_unit(data, unit, sizeof unit);
        top_run(&x, h, unit, 0);
    } else {
        top_run(NULL, h, NULL, 0);
    }

    /* 2. repaired: the input at the start of a zeroed file of the right size, header fixed */
    memset(g_img, 0, g_img_used);
    memcpy(g_img, data, size);
    g_img_used = size > FS_HEADER ? size : FS_HEADER;
    memcpy(g_img, "KCSTATS", 8);
    kcache__put_u32(g_img + 8, KCACHE__PUB_VERSION);
    kcache__put_u32(g_img + 12, FS_HEADER);
    kcache__put_u32(g_img + 16, FS_SLOTS);
    kcache__put_u32(g_img + 20, FS_SLOT);
    kcache__put_u32(g_img + 24, FS_NCTR);
    kcache__put_u32(g_img + 28, 64);
    kcache__put_u32(g_img + 32, 64);
    kcache__put_u32(g_img + 36, 16);
    kcache__put_u64(g_img + 48, kcache_hash(g_img, 48).lo);
    CHECK(kcache__pub_valid(g_img, FS_FILE) == 1);
    put_file(g_img, g_img_used, FS_FILE);
    decode(g_img, &x);
    pick_unit(g_img, unit, sizeof unit);
    top_run(&x, h, unit, (h & 7) == 7);

    /* 3. a kcache attaches to it: half of the inputs */
    switch ((h >> 12) & 7) {
    case 0: case 1:
        writer_run(g_img, g_img_used, FS_FILE, 1, h);
        break;
    case 2:
        writer_run(data, size, size, v, h);
        break;
    case 3: { /* the input's own layout fields under a valid magic and checksum */
        unsigned char *b;
        keep = size > FS_HEADER ? size : FS_HEADER;
        b = (unsigned char *)calloc(1, keep);
        CHECK(b != NULL);
        memcpy(b, data, size);
        memcpy(b, "KCSTATS", 8);
        kcache__put_u64(b + 48, kcache_hash(b, 48).lo);
        writer_run(b, keep, keep, kcache__pub_valid(b, keep), h);
        free(b);
        break;
    }
    default: break;
    }
    return 0;
}
