/* kcache-top.c - a live view of a kcache store that other processes are using.
 *
 *   kcache-top [-b] [-n N] [-d SECONDS] [-s hits|misses|size|last] [-U UNIT] [-a] [DIR]
 *   kcache-top -b --json|--prometheus [--output FILE] [-n N] [-d SECONDS] [DIR]
 *
 * What it shows comes from the store itself, read-only, through kcache.h's public API for tools
 * (>>toolapi; no private name of the library is used here): DIR/stats (where every process using
 * the store publishes its counters and recent events), config.file (the accounted size, entries
 * and limit) and the units' index logs (i/XX/<unit>.kci: overloads, dependency stamps, what left
 * and why, traced misses). It never writes, locks or repairs anything in DIR, so it is safe to
 * point at any store, live or not.
 *
 * Interactive: a header (directory, size against the limit, entries, units, processes), the remote
 * tier when one is in use (its hit ratio, puts, errors and timeouts, calls skipped, mean latency,
 * and the circuit breakers open now), rates per
 * second with a short history, the event log (newest first), the top units (sortable); Enter on a
 * unit opens its detail (overloads and their fields, dependency stamps, what left, recent misses
 * with their reasons), Esc goes back. Keys: q quit, p pause, s sort, Tab switch list, ? help,
 * arrows / PgUp / PgDn / Home / End scroll.
 * Batch (-b): N plain-text snapshots (-n N, default 1) on stdout, for scripts, logs and tests;
 * with -U UNIT, the unit's detail instead. --json (a JSON object per line and snapshot) and
 * --prometheus (the text exposition format) carry every counter for monitoring; --output FILE
 * replaces FILE atomically at each snapshot (node_exporter's textfile collector).
 * Started before the store exists, it waits for DIR to appear (batch: each snapshot waits its
 * interval, and the last says if it never came).
 * Exit status: 0; 2 for a usage error, a directory that never appeared or cannot be read, or an
 * interactive run without a terminal.
 *
 * Build: cc -std=c99 -O2 -I. -o build/kcache-top tools/kcache-top.c -lncursesw -lpthread
 * Without curses: -DKCACHE_TOP_NO_CURSES and no -lncursesw: batch mode (-b) only; the interactive
 * view says "built without curses: only -b" and exits 2. */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"

#ifndef KCACHE_TOP_NO_CURSES /* built without curses (no curses header): batch mode only */
#include <curses.h>
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ktext.h" /* kt_line, kt_lb_add: every %s and %c argument through kcache.h's escaping rule */

#if defined(__GNUC__) || defined(__clang__)
#define KT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define KT_VIEW_ONLY __attribute__((unused)) /* used by the interactive view (and fuzz_stats) only */
#else
#define KT_PRINTF(a, b)
#define KT_VIEW_ONLY
#endif

#define KT_HIST 240     /* rate samples kept for the sparklines */
#define KT_EVENTS 2000  /* events kept (the rings hold the last 64 of each process) */
#define KT_NCTR KCACHE_CTR_COUNT
#define KT_NSLOT KCACHE_STATS_SLOTS

enum { KT_TEXT, KT_JSON, KT_PROMETHEUS };
enum { M_HITS, M_MISSES, M_PUTS, M_EVICTIONS, M_READ, M_WRITTEN, M_N };
static const char *const kt_metric_name[M_N] = {"hits", "misses", "puts", "evictions", "bytes_read", "bytes_written"};
enum { SORT_HITS, SORT_MISSES, SORT_SIZE, SORT_LAST, SORT_N };
static const char *const kt_sort_name[SORT_N] = {"hits", "misses", "size", "last"};
static const char *const kt_state_name[] = {"free", "live", "dead", "other-ns"}; /* by kcache_slot_state */
/* colours */
enum { C_NORM, C_HEAD, C_GOOD, C_WARN, C_BAD, C_DIM, C_SEL, C_TITLE, C_N };

/* ---------------------------------------------------------------------------------------------- */
/* the model                                                                                      */

enum { U_MEM, U_DISK, U_MISS, U_PUTS, U_BYTES, U_N };
typedef struct kt_seen_unit {
    uint64_t hash, c[U_N];
    int64_t last;
    int reason; /* of its last miss, when it has missed */
    char name[KCACHE_STATS_UNIT_NAME + 1];
    uint32_t namelen;
} kt_seen_unit;
typedef struct kt_seen_slot {
    uint64_t owner, opened;
    kt_seen_unit u[KCACHE_STATS_UNITS];
    uint64_t ev_seq; /* the events read from this slot's ring so far */
} kt_seen_slot;

typedef struct kt_unit {
    uint64_t hash;
    char name[KCACHE_UNIT_MAX];
    int full_name;                 /* name is the whole name (from an index or short enough) */
    uint64_t gone[U_N], live[U_N]; /* counts of sessions no longer visible / visible now */
    int64_t last_pub;              /* last event of the unit in any slot */
    int64_t last_change;           /* when kcache-top saw its hits change */
    uint64_t prev_hits;
    int last_reason;               /* of the newest miss known (-1: none) */
    int unit_table_reason;         /* last_reason came from a unit table, not an event */
    int64_t last_miss;
    uint32_t last_miss_pid;
    /* from the index */
    int in_index, ix_seen;
    uint64_t ix_ino, ix_size;
    int64_t ix_mtime;
    uint32_t overloads, gone_n, missed_n;
    uint64_t bytes;
    int64_t stored;
    int traced_reason;
    int64_t traced_when;
    uint32_t traced_pid;
    char sigs[160];                /* numba units: the live overloads' signatures, "int64|float64" */
} kt_unit;

typedef struct kt_event {
    int64_t time;
    uint32_t pid, namelen;
    int kind, reason;
    uint64_t size, count, hash;
    char unit[KCACHE_STATS_EVENT_NAME + 1];
} kt_event;

static struct {
    /* options */
    char dir[4096];
    double interval;
    int batch, sort, ascii, color, utf8;
    int format;         /* KT_TEXT, KT_JSON, KT_PROMETHEUS (batch) */
    const char *output; /* --output FILE: each snapshot replaces it atomically */
    long iterations;
    const char *detail_unit;
    /* the store */
    kcache_reader *rd; /* the store, opened to read (NULL until DIR exists) */
    int stamp_policy;
    /* config.file */
    int have_cf, cf_sound;
    uint64_t cf_bytes, cf_entries, cf_gen, cf_limit, cf_evictions;
    /* DIR/stats */
    kcache_stats_file *sf; /* NULL: none (stats_note says why) */
    char stats_note[160];
    int64_t stats_created;
    /* the latest sample */
    int64_t wall;
    double t, t_prev;
    int samples;
    uint64_t tot[KT_NCTR], tot_prev[KT_NCTR];
    int consistent;
    kcache_stats_slot slot[KT_NSLOT];
    int nclaimed, nlive;
    double rate[M_N], hist[M_N][KT_HIST];
    int hist_n;
    /* units */
    kt_unit *u;
    size_t nu, capu;
    uint32_t *uhash; /* open addressing: index + 1, 0 = empty */
    size_t uhash_cap;
    kt_seen_slot seen[KT_NSLOT];
    size_t nindex;
    uint64_t scanned_gen;
    double scanned_t;
    int scanned;
    /* events */
    kt_event *ev;
    size_t nev;
} K;

static double kt_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int64_t kt_wall_ns(void) { /* (the clock kcache stamps its events with) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static void kt_sleep(double seconds) {
    struct timespec ts;
    if (seconds <= 0) return;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9) + 1000;
    if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
    nanosleep(&ts, NULL);
}


/* ---------------------------------------------------------------------------------------------- */
/* units                                                                                          */

static kt_unit *kt_unit_get(uint64_t hash, int create) {
    size_t i;
    if (K.uhash_cap) {
        for (i = (size_t)hash & (K.uhash_cap - 1); K.uhash[i]; i = (i + 1) & (K.uhash_cap - 1))
            if (K.u[K.uhash[i] - 1].hash == hash) return &K.u[K.uhash[i] - 1];
    }
    if (!create) return NULL;
    if (K.nu == K.capu) {
        size_t ncap = K.capu ? K.capu * 2 : 256;
        kt_unit *nu = (kt_unit *)realloc(K.u, ncap * sizeof *nu);
        if (!nu) return NULL;
        K.u = nu;
        K.capu = ncap;
    }
    if ((K.nu + 1) * 2 > K.uhash_cap) { /* rehash */
        size_t ncap = K.uhash_cap ? K.uhash_cap * 2 : 512, j;
        uint32_t *nh = (uint32_t *)calloc(ncap, sizeof *nh);
        if (!nh) return NULL;
        for (j = 0; j < K.nu; j++) {
            for (i = (size_t)K.u[j].hash & (ncap - 1); nh[i]; i = (i + 1) & (ncap - 1)) {
            }
            nh[i] = (uint32_t)(j + 1);
        }
        free(K.uhash);
        K.uhash = nh;
        K.uhash_cap = ncap;
    }
    memset(&K.u[K.nu], 0, sizeof K.u[K.nu]);
    K.u[K.nu].hash = hash;
    K.u[K.nu].last_reason = -1;
    K.u[K.nu].traced_reason = -1;
    for (i = (size_t)hash & (K.uhash_cap - 1); K.uhash[i]; i = (i + 1) & (K.uhash_cap - 1)) {
    }
    K.uhash[i] = (uint32_t)(K.nu + 1);
    return &K.u[K.nu++];
}

static uint64_t kt_unit_hash(const char *name) {
    uint64_t h = kcache_hash(name, strlen(name)).lo;
    return h ? h : 1;
}
static uint64_t kt_hits(const kt_unit *u) { return u->gone[U_MEM] + u->live[U_MEM] + u->gone[U_DISK] + u->live[U_DISK]; }
static uint64_t kt_cnt(const kt_unit *u, int c) { return u->gone[c] + u->live[c]; }
static int64_t kt_last_use(const kt_unit *u) {
    int64_t t = u->last_pub;
    if (u->last_change > t) t = u->last_change;
    if (u->stored > t) t = u->stored;
    return t;
}

/* How a unit is shown. kcache_numba's units are "numba:" and numba's file name base
   (module.qualname-LINE.pyXY, LINE numba's disambiguator): shown as module.qualname[signature],
   the signatures those of the unit's live overloads (numba.signature fields) when known. Other
   units as they are named. */
static const char *kt_label(const char *name, const char *sigs, char *buf, size_t cap) {
    const char *base, *dash, *p;
    size_t len;
    if (strncmp(name, "numba:", 6) != 0 || !name[6]) return name;
    base = name + 6;
    len = strlen(base);
    dash = strrchr(base, '-');
    if (dash && (p = strstr(dash, ".py")) != NULL && p[3] >= '0' && p[3] <= '9') len = (size_t)(dash - base);
    if (sigs && sigs[0]) snprintf(buf, cap, "%.*s[%s]", (int)len, base, sigs);
    else snprintf(buf, cap, "%.*s", (int)len, base);
    return buf;
}
static const char *kt_unit_label(const kt_unit *u, char *buf, size_t cap) { return kt_label(u->name, u->sigs, buf, cap); }
/* An event's unit as shown: its name as the event has it (cut at KCACHE_STATS_EVENT_NAME), with the
   signatures of its unit when the index told them. */
static const char *kt_event_label(const kt_event *e, char *buf, size_t cap) {
    const kt_unit *u = e->hash ? kt_unit_get(e->hash, 0) : NULL;
    return kt_label(e->unit, u ? u->sigs : NULL, buf, cap);
}

/* A numba overload's signature as numba's repr of its argument tuple has it, "(int64, float64)"
   or "(int64,)", shown without the tuple's parentheses and trailing comma. */
static void kt_sig_add(char *sigs, size_t cap, const kcache_key_field *f) {
    char one[KCACHE_PREVIEW_MAX];
    size_t n, have = strlen(sigs);
    const char *p = f->preview, *hit;
    if (kcache_preview_is_digest(f)) p = "...";   /* longer than a preview keeps */
    n = strlen(p);
    if (n >= 2 && p[0] == '(' && p[n - 1] == ')') { p++; n -= 2; if (n && p[n - 1] == ',') n--; }
    if (n >= sizeof one) n = sizeof one - 1;
    memcpy(one, p, n);
    one[n] = 0;
    for (hit = strstr(sigs, one); hit && n; hit = strstr(hit + 1, one)) /* each signature once */
        if ((hit == sigs || hit[-1] == '|') && (hit[n] == 0 || hit[n] == '|')) return;
    if (have + (have ? 1 : 0) + n + 1 > cap) return;
    snprintf(sigs + have, cap - have, "%s%s", have ? "|" : "", one);
}

/* ---------------------------------------------------------------------------------------------- */
/* reading the store                                                                              */

static void kt_read_cf(void) {
    kcache_accounting a;
    K.have_cf = kcache_read_accounting(K.rd, &a) == KCACHE_OK;
    if (!K.have_cf) return;
    K.cf_bytes = a.bytes;
    K.cf_entries = a.entries;
    K.cf_gen = a.generation;
    K.cf_limit = a.limit;
    K.cf_evictions = a.evictions;
    K.cf_sound = a.sound;
}

static void kt_unmap(void) {
    kcache_stats_file_close(K.sf);
    K.sf = NULL;
}

static void kt_retire_seen(kt_seen_unit *s);

/* Maps DIR/stats read-only (again when it was replaced). */
static void kt_map_stats(void) {
    kcache_status st;
    if (K.sf && !kcache_stats_file_replaced(K.sf, K.rd)) return;
    kt_unmap();
    st = kcache_stats_file_open(K.rd, &K.sf);
    switch (st) {
    case KCACHE_OK: break;
    case KCACHE_ENOENT: snprintf(K.stats_note, sizeof K.stats_note, "no stats file (no process has published here)"); return;
    case KCACHE_EINVAL: snprintf(K.stats_note, sizeof K.stats_note, "stats file of a newer version (not shown)"); return;
    case KCACHE_ECORRUPT: snprintf(K.stats_note, sizeof K.stats_note, "stats file damaged (the next process replaces it)"); return;
    case KCACHE_EUNSAFE: snprintf(K.stats_note, sizeof K.stats_note, "stats file not a regular file of the store's owner (not read)"); return;
    default: snprintf(K.stats_note, sizeof K.stats_note, "stats file: %s", st == KCACHE_EIO ? strerror(errno) : kcache_strerror(st)); return;
    }
    {   /* another file (replaced): what was seen in the old one is history */
        int i, j;
        for (i = 0; i < KT_NSLOT; i++) {
            for (j = 0; j < KCACHE_STATS_UNITS; j++) kt_retire_seen(&K.seen[i].u[j]);
            memset(&K.seen[i], 0, sizeof K.seen[i]);
        }
    }
    K.stats_created = kcache_stats_file_created(K.sf);
    K.stats_note[0] = 0;
}

/* A truncated stats file (something outside kcache shrank it) is SIGBUS on access: caught here. */
static sigjmp_buf kt_bus_jmp;
static volatile sig_atomic_t kt_bus_armed;
static void kt_on_bus(int sig) {
    if (kt_bus_armed) siglongjmp(kt_bus_jmp, 1);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The slots and totals (kcache_stats_file_read: consistent, the retired counters included). */
static void kt_read_slots(void) {
    static kcache_stats_snapshot snap; /* (25 KiB: not on the stack) */
    kcache_stats_file_read(K.sf, &snap);
    K.consistent = snap.consistent;
    memcpy(K.tot, snap.totals, sizeof K.tot);
    memcpy(K.slot, snap.slots, sizeof K.slot);
    K.nclaimed = (int)snap.claimed;
    K.nlive = (int)snap.processes;
}

static void kt_retire_seen(kt_seen_unit *s) {
    kt_unit *u;
    int c;
    if (!s->hash) return;
    u = kt_unit_get(s->hash, 1);
    if (u) for (c = 0; c < U_N; c++) u->gone[c] += s->c[c];
    memset(s, 0, sizeof *s);
}

/* The unit tables: what each slot counted per unit, kept across samples so that a slot that goes
   away (its process closed the cache, or died and was reclaimed) still counts. */
static void kt_read_units(void) {
    int i, j, c;
    for (i = 0; i < KT_NSLOT; i++) {
        kt_seen_slot *ss = &K.seen[i];
        const kcache_stats_slot *v = &K.slot[i];
        kcache_stats_unit tab[KCACHE_STATS_UNITS];
        if (v->setting_up) continue; /* being claimed: next time */
        if (!v->owner || v->owner != ss->owner || (uint64_t)v->opened != ss->opened) {
            for (j = 0; j < KCACHE_STATS_UNITS; j++) kt_retire_seen(&ss->u[j]);
            ss->owner = v->owner;
            ss->opened = (uint64_t)v->opened;
        }
        if (!v->owner || (v->epoch & 1) || kcache_stats_file_units(K.sf, (unsigned)i, tab) != KCACHE_OK) continue;
        for (j = 0; j < KCACHE_STATS_UNITS; j++) {
            const kcache_stats_unit *e = &tab[j];
            kt_seen_unit cur;
            if (e->changing) continue; /* changing right now: keep what was seen */
            memset(&cur, 0, sizeof cur);
            cur.hash = e->hash;
            cur.c[U_MEM] = e->hits_memory;
            cur.c[U_DISK] = e->hits_store;
            cur.c[U_MISS] = e->misses;
            cur.c[U_PUTS] = e->puts;
            cur.c[U_BYTES] = e->bytes_put;
            cur.last = e->last;
            cur.namelen = e->name_len;
            cur.reason = (int)e->last_miss;
            memcpy(cur.name, e->name, sizeof cur.name);
            if (ss->u[j].hash != cur.hash) kt_retire_seen(&ss->u[j]);
            ss->u[j] = cur;
        }
    }
    for (i = 0; i < (int)K.nu; i++) memset(K.u[i].live, 0, sizeof K.u[i].live);
    for (i = 0; i < KT_NSLOT; i++)
        for (j = 0; j < KCACHE_STATS_UNITS; j++) {
            const kt_seen_unit *su = &K.seen[i].u[j];
            kt_unit *u;
            if (!su->hash || !(u = kt_unit_get(su->hash, 1))) continue;
            for (c = 0; c < U_N; c++) u->live[c] += su->c[c];
            if (su->last > u->last_pub) u->last_pub = su->last;
            if (su->c[U_MISS] && u->last_miss == 0 && su->reason < KCACHE_REASON_COUNT) {
                u->last_reason = su->reason; /* no event of it seen: the unit table's word, timed by its last event */
                u->unit_table_reason = 1;
                u->last_miss_pid = K.slot[i].pid;
            }
            if (!u->name[0] || (!u->full_name && su->namelen <= KCACHE_STATS_UNIT_NAME)) {
                snprintf(u->name, sizeof u->name, "%s%s", su->name, su->namelen > KCACHE_STATS_UNIT_NAME ? "..." : "");
                u->full_name = su->namelen <= KCACHE_STATS_UNIT_NAME;
            }
        }
}

static int kt_ev_cmp(const void *a, const void *b) {
    const kt_event *x = (const kt_event *)a, *y = (const kt_event *)b;
    return x->time < y->time ? 1 : x->time > y->time ? -1 : 0;
}

/* New events of every slot's ring, merged into the list kept (newest first). */
static void kt_read_events(void) {
    int i;
    size_t before = K.nev;
    for (i = 0; i < KT_NSLOT; i++) {
        kcache_stats_event got[KCACHE_STATS_EVENTS];
        unsigned n = 0, k;
        if (K.slot[i].epoch & 1) continue;
        kcache_stats_file_events(K.sf, (unsigned)i, &K.seen[i].ev_seq, got, KCACHE_STATS_EVENTS, &n);
        for (k = 0; k < n; k++) {
            kt_event ev;
            ev.time = got[k].time;
            ev.hash = got[k].unit_hash;
            ev.size = got[k].size;
            ev.pid = got[k].pid;
            ev.kind = (int)got[k].kind;
            ev.reason = got[k].reason;
            ev.namelen = got[k].name_len;
            ev.count = got[k].count;
            memcpy(ev.unit, got[k].unit, sizeof ev.unit);
            if (K.nev == KT_EVENTS) { /* full: the oldest goes (the list is sorted newest first) */
                qsort(K.ev, K.nev, sizeof *K.ev, kt_ev_cmp);
                K.nev = KT_EVENTS * 3 / 4;
                before = K.nev;
            }
            K.ev[K.nev++] = ev;
        }
    }
    if (K.nev != before) {
        size_t j;
        qsort(K.ev, K.nev, sizeof *K.ev, kt_ev_cmp);
        for (j = K.nev; j-- > 0;) { /* oldest first: the newest miss of a unit wins */
            const kt_event *e = &K.ev[j];
            kt_unit *u;
            if (e->kind != KCACHE_EVENT_MISS || !e->hash || !(u = kt_unit_get(e->hash, 1))) continue;
            if (e->time >= u->last_miss) {
                u->last_miss = e->time;
                u->unit_table_reason = 0;
                u->last_reason = e->reason;
                u->last_miss_pid = e->pid;
            }
            if (!u->name[0]) snprintf(u->name, sizeof u->name, "%s%s", e->unit, e->namelen > KCACHE_STATS_EVENT_NAME ? "..." : "");
        }
    }
}

/* Summarises one unit's index log (unit: its name, from the header). */
static void kt_index_one(kt_unit *u, const char *unit) {
    kcache_index *ix;
    uint32_t i, nl;
    if (kcache_index_read(K.rd, unit, &ix) != KCACHE_OK) return;
    snprintf(u->name, sizeof u->name, "%s", unit);
    u->full_name = 1;
    u->overloads = nl = kcache_index_count(ix, KCACHE_INDEX_LIVE);
    u->gone_n = kcache_index_count(ix, KCACHE_INDEX_GONE);
    u->missed_n = kcache_index_count(ix, KCACHE_INDEX_MISSED);
    u->bytes = 0;
    u->stored = 0;
    u->sigs[0] = 0;
    for (i = 0; i < nl; i++) {
        const kcache_index_item *it = kcache_index_at(ix, KCACHE_INDEX_LIVE, i);
        u->bytes += it->size;
        if (it->when > u->stored) u->stored = it->when;
        if (strncmp(unit, "numba:", 6) == 0) {
            kcache_key k;
            if (kcache_record_decode(it->record, it->record_len, &k) == KCACHE_OK) {
                const kcache_key_field *f = kcache_key_field_at(&k, 0); /* (one array) */
                uint32_t j;
                for (j = 0; j < k.count; j++)
                    if (strcmp(f[j].name, "numba.signature") == 0) kt_sig_add(u->sigs, sizeof u->sigs, &f[j]);
            }
            kcache_key_free(&k);
        }
    }
    if (u->missed_n) {
        const kcache_index_item *m = kcache_index_at(ix, KCACHE_INDEX_MISSED, u->missed_n - 1);
        u->traced_reason = (int)m->reason;
        u->traced_when = m->when;
        u->traced_pid = m->pid;
    }
    kcache_index_free(ix);
}

/* Walks i/XX/ for the units' index logs; re-reads only those that changed since the last walk. */
static void kt_scan_index(void) {
    kcache_index_walk *w;
    kcache_index_file f;
    size_t i;
    for (i = 0; i < K.nu; i++) K.u[i].ix_seen = 0;
    K.nindex = 0;
    if (kcache_index_walk_open(K.rd, &w) != KCACHE_OK) return;
    while (kcache_index_walk_next(w, &f) == KCACHE_OK) {
        kt_unit *u;
        char unit[KCACHE_UNIT_MAX];
        K.nindex++;
        u = kt_unit_get(f.name_lo ? f.name_lo : 1, 1);
        if (!u) continue;
        u->ix_seen = 1;
        if (u->in_index && u->ix_ino == f.ino && u->ix_size == f.size && u->ix_mtime == f.mtime_ns) continue;
        if (kcache_index_walk_unit(w, unit, sizeof unit) == KCACHE_OK) kt_index_one(u, unit);
        u->in_index = 1;
        u->ix_ino = f.ino;
        u->ix_size = f.size;
        u->ix_mtime = f.mtime_ns;
    }
    kcache_index_walk_close(w);
    for (i = 0; i < K.nu; i++)
        if (K.u[i].in_index && !K.u[i].ix_seen) { /* its index is gone: the unit left the store */
            K.u[i].in_index = 0;
            K.u[i].overloads = K.u[i].gone_n = K.u[i].missed_n = 0;
            K.u[i].bytes = 0;
        }
}

/* One sample of everything. */
static void kt_sample(void) {
    int c, i;
    double dt;
    K.t_prev = K.t;
    memcpy(K.tot_prev, K.tot, sizeof K.tot);
    K.t = kt_mono();
    K.wall = kt_wall_ns();
    kt_read_cf();
    kt_map_stats();
    if (K.sf) {
        kt_bus_armed = 1;
        if (sigsetjmp(kt_bus_jmp, 1) == 0) {
            kt_read_slots();
            kt_read_units();
            kt_read_events();
        } else {
            kt_unmap();
            snprintf(K.stats_note, sizeof K.stats_note, "the stats file was truncated by something outside kcache");
        }
        kt_bus_armed = 0;
    } else {
        memset(K.slot, 0, sizeof K.slot);
        K.nclaimed = K.nlive = 0;
    }
    if (!K.scanned || (K.cf_gen != K.scanned_gen && K.t - K.scanned_t >= K.interval * 0.9) || K.t - K.scanned_t >= 30) {
        kt_scan_index();
        K.scanned = 1;
        K.scanned_gen = K.cf_gen;
        K.scanned_t = K.t;
    }
    for (i = 0; i < (int)K.nu; i++) {
        uint64_t h = kt_hits(&K.u[i]);
        if (K.samples && h > K.u[i].prev_hits) K.u[i].last_change = K.wall;
        K.u[i].prev_hits = h;
    }
    dt = K.t - K.t_prev;
    if (K.samples && dt > 0) {
        double d[M_N];
#define KT_DELTA(x) (K.tot[x] >= K.tot_prev[x] ? (double)(K.tot[x] - K.tot_prev[x]) : 0.0)
        d[M_HITS] = KT_DELTA(KCACHE_CTR_HITS_MEMORY) + KT_DELTA(KCACHE_CTR_HITS_STORE) + KT_DELTA(KCACHE_CTR_HITS_REMOTE) +
                    KT_DELTA(KCACHE_CTR_HITS_LAYER);
        d[M_MISSES] = KT_DELTA(KCACHE_CTR_MISSES);
        d[M_PUTS] = KT_DELTA(KCACHE_CTR_PUTS);
        d[M_EVICTIONS] = KT_DELTA(KCACHE_CTR_EVICTIONS);
        d[M_READ] = KT_DELTA(KCACHE_CTR_BYTES_READ);
        d[M_WRITTEN] = KT_DELTA(KCACHE_CTR_BYTES_WRITTEN);
#undef KT_DELTA
        for (c = 0; c < M_N; c++) {
            K.rate[c] = d[c] / dt;
            if (K.hist_n == KT_HIST) memmove(K.hist[c], K.hist[c] + 1, sizeof(double) * (KT_HIST - 1));
            K.hist[c][K.hist_n == KT_HIST ? KT_HIST - 1 : K.hist_n] = K.rate[c];
        }
        if (K.hist_n < KT_HIST) K.hist_n++;
    }
    K.samples++;
}

/* ---------------------------------------------------------------------------------------------- */
/* text: lines with colour marks (\001 + '0' + colour), printed plain in batch mode               */

typedef struct kt_lines { char **v; size_t n, cap; } kt_lines;
typedef struct kt_lb { char s[4096]; size_t n; } kt_lb;

static void kt_lb_reset(kt_lb *b) { b->n = 0; b->s[0] = 0; }
static void kt_lb_col(kt_lb *b, int color) {
    if (b->n + 3 < sizeof b->s) {
        b->s[b->n++] = '\001';
        b->s[b->n++] = (char)('0' + color);
        b->s[b->n] = 0;
    }
}
/* Appends fmt to the line, its %s and %c arguments escaped (ktext.h): a unit name or a file name
   cannot reach the terminal raw, nor forge a colour mark or a line. Cut at the line's end. */
static void kt_lb_vadd(kt_lb *b, const char *fmt, va_list ap) {
    ktext t;
    size_t n;
    if (b->n + 1 >= sizeof b->s) return;
    ktext_init(&t);
    ktext_vfmt(&t, fmt, ap);
    n = t.len < sizeof b->s - 1 - b->n ? t.len : sizeof b->s - 1 - b->n;
    memcpy(b->s + b->n, t.p, n);
    b->n += n;
    b->s[b->n] = 0;
    ktext_free(&t);
}
static void kt_lb_add(kt_lb *b, const char *fmt, ...) KT_PRINTF(2, 3);
static void kt_lb_add(kt_lb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kt_lb_vadd(b, fmt, ap);
    va_end(ap);
}
static void kt_push(kt_lines *L, const kt_lb *b) {
    char *s;
    if (L->n == L->cap) {
        size_t ncap = L->cap ? L->cap * 2 : 64;
        char **nv = (char **)realloc(L->v, ncap * sizeof *nv);
        if (!nv) return;
        L->v = nv;
        L->cap = ncap;
    }
    s = (char *)malloc(b->n + 1);
    if (!s) return;
    memcpy(s, b->s, b->n + 1);
    L->v[L->n++] = s;
}
static void kt_line(kt_lines *L, int color, const char *fmt, ...) KT_PRINTF(3, 4);
static void kt_line(kt_lines *L, int color, const char *fmt, ...) {
    kt_lb b;
    va_list ap;
    kt_lb_reset(&b);
    if (color) kt_lb_col(&b, color);
    va_start(ap, fmt);
    kt_lb_vadd(&b, fmt, ap);
    va_end(ap);
    kt_push(L, &b);
}
static void kt_lines_free(kt_lines *L) {
    size_t i;
    for (i = 0; i < L->n; i++) free(L->v[i]);
    free(L->v);
    memset(L, 0, sizeof *L);
}
static void kt_print_plain(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '\001') { if (s[1]) s++; continue; }
        fputc(*s, f);
    }
    fputc('\n', f);
}

/* ---- formatting ---- */

static const char *kt_bytes(uint64_t v, char *buf, size_t cap) {
    const char *u = "KMGTP";
    double d = (double)v;
    int i = -1;
    if (v < 1024) { snprintf(buf, cap, "%lluB", (unsigned long long)v); return buf; }
    while (d >= 1024 && i < 4) { d /= 1024; i++; }
    snprintf(buf, cap, d < 10 ? "%.1f%c" : "%.0f%c", d, u[i]);
    return buf;
}
static const char *kt_num(double v, char *buf, size_t cap) {
    if (v < 10000) snprintf(buf, cap, v < 10 && v != (double)(long)v ? "%.1f" : "%.0f", v);
    else if (v < 1e7) snprintf(buf, cap, "%.1fk", v / 1e3);
    else snprintf(buf, cap, "%.1fM", v / 1e6);
    return buf;
}
/* "HH:MM:SS" today, "MM-DD HH:MM" before; full: "YYYY-MM-DD HH:MM:SS.mmm" */
static const char *kt_time(int64_t ns, int full, char *buf, size_t cap) {
    time_t t = (time_t)(ns / 1000000000), now = time(NULL);
    struct tm tm, tn;
    if (ns <= 0) { snprintf(buf, cap, "-"); return buf; }
    localtime_r(&t, &tm);
    localtime_r(&now, &tn);
    if (full) {
        char s[32];
        strftime(s, sizeof s, "%Y-%m-%d %H:%M:%S", &tm);
        snprintf(buf, cap, "%s.%03d", s, (int)((ns / 1000000) % 1000));
    } else if (tm.tm_year == tn.tm_year && tm.tm_yday == tn.tm_yday) {
        strftime(buf, cap, "%H:%M:%S", &tm);
    } else {
        strftime(buf, cap, "%m-%d %H:%M", &tm);
    }
    return buf;
}
KT_VIEW_ONLY static const char *kt_ago(int64_t ns, char *buf, size_t cap) {
    int64_t d = ns > 0 ? (K.wall - ns) / 1000000000 : 0; /* (a time from a damaged file may be anything) */
    if (ns <= 0) snprintf(buf, cap, "-");
    else if (d < 0) snprintf(buf, cap, "now");
    else if (d < 120) snprintf(buf, cap, "%llds ago", (long long)d);
    else if (d < 7200) snprintf(buf, cap, "%lldm ago", (long long)(d / 60));
    else if (d < 172800) snprintf(buf, cap, "%lldh ago", (long long)(d / 3600));
    else snprintf(buf, cap, "%lldd ago", (long long)(d / 86400));
    return buf;
}
static const char *kt_reason_word(int r) { return r >= 0 && r < KCACHE_REASON_COUNT ? kcache_reason_name((kcache_reason)r) : "-"; }
static const char *kt_reason_text(int r) { return kcache_reason_text((kcache_reason)r); }
/* Hits from every tier: memory, the store, and below it (read-only layers, the remote). */
static uint64_t kt_all_hits(void) {
    return K.tot[KCACHE_CTR_HITS_MEMORY] + K.tot[KCACHE_CTR_HITS_STORE] + K.tot[KCACHE_CTR_HITS_REMOTE] + K.tot[KCACHE_CTR_HITS_LAYER];
}
/* Circuit breakers open now: each live process's opens minus closes (a closing cache closes its
   own; a dead process's are not open anywhere). */
static uint64_t kt_breakers_open(void) {
    uint64_t n = 0;
    int i;
    for (i = 0; i < KT_NSLOT; i++) {
        const kcache_stats_slot *v = &K.slot[i];
        if ((v->state == KCACHE_SLOT_LIVE || v->state == KCACHE_SLOT_OTHER_DOMAIN) && v->counters[KCACHE_CTR_BREAKER_OPENS] > v->counters[KCACHE_CTR_BREAKER_CLOSES])
            n += v->counters[KCACHE_CTR_BREAKER_OPENS] - v->counters[KCACHE_CTR_BREAKER_CLOSES];
    }
    return n;
}
/* Remote shard i of the stats file's shard table (what every process using the store counted for
   it): 1 with its URL (escaped: it came from the file) and hits, misses, errors, timeouts and
   skipped calls in v; 0 when that entry is free. */
static int kt_shard(unsigned i, char *url, size_t cap, uint64_t v[5]) {
    kcache_stats_row row;
    int c;
    if (!K.sf || kcache_stats_file_row(K.sf, KCACHE_STATS_SHARDS, i, &row) != KCACHE_OK || !row.id) return 0;
    for (c = 0; c < 5; c++) v[c] = row.value[c];
    kcache_escape(url, cap, row.name, strlen(row.name));
    return 1;
}
KT_VIEW_ONLY static int kt_remote_used(void) { /* (layer hits are the layers', shown in the totals) */
    return K.tot[KCACHE_CTR_REMOTE_LOOKUPS] || K.tot[KCACHE_CTR_REMOTE_PUTS] || K.tot[KCACHE_CTR_REMOTE_ERRORS] ||
           K.tot[KCACHE_CTR_REMOTE_SKIPPED];
}
static double kt_remote_ratio(void) {
    uint64_t n = K.tot[KCACHE_CTR_REMOTE_LOOKUPS];
    return n ? 100.0 * (double)K.tot[KCACHE_CTR_HITS_REMOTE] / (double)n : 0.0;
}
static double kt_remote_latency_ms(void) {
    uint64_t n = K.tot[KCACHE_CTR_REMOTE_CALLS];
    return n ? (double)K.tot[KCACHE_CTR_REMOTE_LATENCY_NS] / (double)n / 1e6 : 0.0;
}

static const char *kt_kind_name(int k) {
    switch (k) {
    case KCACHE_EVENT_HIT_MEMORY: return "hit-mem";
    case KCACHE_EVENT_HIT_STORE: return "hit-disk";
    case KCACHE_EVENT_HIT_REMOTE: return "hit-remote";
    case KCACHE_EVENT_HIT_LAYER: return "hit-layer";
    case KCACHE_EVENT_MISS: return "miss";
    case KCACHE_EVENT_PUT: return "put";
    case KCACHE_EVENT_EVICT: return "evict";
    default: return "?";
    }
}
KT_VIEW_ONLY static int kt_kind_color(int k, int reason) {
    switch (k) {
    case KCACHE_EVENT_HIT_MEMORY: case KCACHE_EVENT_HIT_STORE: case KCACHE_EVENT_HIT_REMOTE: case KCACHE_EVENT_HIT_LAYER: return C_GOOD;
    case KCACHE_EVENT_MISS: return reason == KCACHE_REASON_REJECTED ? C_BAD : C_WARN;
    case KCACHE_EVENT_EVICT: return C_BAD;
    default: return C_NORM;
    }
}

/* A sparkline of the last w rate samples. */
static void kt_spark(kt_lb *b, int metric, int w, int ascii) {
    static const char *const blocks[8] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
                                          "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88"};
    static const char levels[] = "_.:-=+*#%@";
    int n = K.hist_n < w ? K.hist_n : w, i;
    double mx = 0;
    for (i = K.hist_n - n; i < K.hist_n; i++) if (K.hist[metric][i] > mx) mx = K.hist[metric][i];
    for (i = K.hist_n - n; i < K.hist_n; i++) {
        double v = K.hist[metric][i];
        if (ascii) {
            int l = mx > 0 ? (int)(v / mx * 9.0 + 0.5) : 0;
            if (v > 0 && l == 0) l = 1;
            kt_lb_add(b, "%c", levels[l]);
        } else {
            int l = mx > 0 ? (int)(v / mx * 7.0 + 0.5) : 0;
            if (v > 0 && l == 0) l = 1;
            kt_lb_add(b, "%s", v > 0 || mx > 0 ? blocks[l] : blocks[0]);
        }
    }
}

KT_VIEW_ONLY static const char *kt_metric_fmt(int m, double v, char *buf, size_t cap) {
    if (m == M_READ || m == M_WRITTEN) {
        char t[32];
        snprintf(buf, cap, "%s/s", kt_bytes((uint64_t)(v + 0.5), t, sizeof t));
        return buf;
    }
    return kt_num(v, buf, cap);
}

/* ---- sorting units ---- */

static int kt_sort_key;
static int kt_unit_cmp(const void *a, const void *b) {
    const kt_unit *x = *(const kt_unit *const *)a, *y = *(const kt_unit *const *)b;
    uint64_t vx = 0, vy = 0;
    switch (kt_sort_key) {
    case SORT_HITS: vx = kt_hits(x); vy = kt_hits(y); break;
    case SORT_MISSES: vx = kt_cnt(x, U_MISS); vy = kt_cnt(y, U_MISS); break;
    case SORT_SIZE: vx = x->bytes; vy = y->bytes; break;
    default: vx = (uint64_t)kt_last_use(x); vy = (uint64_t)kt_last_use(y); break;
    }
    if (vx != vy) return vx < vy ? 1 : -1;
    return strcmp(x->name, y->name);
}
/* The units to show, sorted (the caller frees the array). */
static kt_unit **kt_sorted_units(size_t *n) {
    kt_unit **v = (kt_unit **)malloc((K.nu ? K.nu : 1) * sizeof *v);
    size_t i, m = 0;
    if (!v) { *n = 0; return NULL; }
    for (i = 0; i < K.nu; i++) {
        kt_unit *u = &K.u[i];
        if (!u->name[0]) continue; /* known only by a hash so far */
        if (!u->in_index && !kt_hits(u) && !kt_cnt(u, U_MISS) && !kt_cnt(u, U_PUTS) && u->last_miss == 0) continue;
        v[m++] = u;
    }
    kt_sort_key = K.sort;
    qsort(v, m, sizeof *v, kt_unit_cmp);
    *n = m;
    return v;
}

/* ---------------------------------------------------------------------------------------------- */
/* a unit's detail                                                                                */

static int kt_cf_use(kcache_hash128 d, int64_t *use) { return kcache_read_last_use(K.rd, d, use) == KCACHE_OK; }

static const char *kt_field_type(uint32_t t) {
    switch (t) {
    case KCACHE_FIELD_BYTES: return "bytes";
    case KCACHE_FIELD_STR: return "str";
    case KCACHE_FIELD_U64: return "u64";
    case KCACHE_FIELD_FILE: return "file";
    default: return "?";
    }
}

/* A dependency's stamp as stored, and the file as it is now. Its path came from the store, so the
   store's owner chose it: kcache_dep_now looks without following a link or blocking, and reads
   only her (or root's) regular file of the size recorded, at most KT_DEP_READ_MAX of it. */
#define KT_DEP_READ_MAX ((uint64_t)64 << 20) /* a refresh hashes no more than this per dependency */
static void kt_dep_line(kt_lines *L, const kcache_key_field *f) {
    kt_lb b;
    char t1[48], h[33];
    kt_lb_reset(&b);
    kcache_hash_hex(f->content, h);
    kt_lb_add(&b, "        stamp  mtime %s  size %llu  xxh128 %.16s", kt_time(f->mtime_ns, 1, t1, sizeof t1), (unsigned long long)f->file_size, h);
    if (strncmp(f->preview, "...", 3) != 0 && kcache_hash(f->preview, strlen(f->preview)).lo == f->digest.lo) {
        kcache_dep dep;
        kcache_dep_now(f, f->preview, kcache_reader_owner(K.rd), KT_DEP_READ_MAX, &dep);
        kt_lb_add(&b, "  now: ");
        if (dep.state == KCACHE_DEP_READ || dep.state == KCACHE_DEP_OTHER_SIZE) {
            int d = kcache_stamp_compare(f, &dep.now);
            if (dep.state == KCACHE_DEP_OTHER_SIZE) d |= KCACHE_STAMP_DIFF_CONTENT; /* another size is other bytes */
            if (!d) {
                kt_lb_col(&b, C_GOOD);
                kt_lb_add(&b, "same");
            } else {
                kt_lb_col(&b, kcache_stamp_stale(d, K.stamp_policy) ? C_BAD : C_WARN);
                kt_lb_add(&b, "changed:%s%s%s%s", (d & KCACHE_STAMP_DIFF_MTIME) ? " mtime" : "", (d & KCACHE_STAMP_DIFF_SIZE) ? " size" : "",
                          (d & KCACHE_STAMP_DIFF_CONTENT) ? " content" : "",
                          kcache_stamp_stale(d, K.stamp_policy) ? " (stale: the next get misses)" : " (content same: still used)");
            }
        } else {
            kt_lb_col(&b, C_BAD);
            if (dep.state == KCACHE_DEP_FOREIGN) kt_lb_add(&b, "owned by uid %lu: not read", (unsigned long)dep.uid);
            else if (dep.state == KCACHE_DEP_ERROR) kt_lb_add(&b, "cannot open: %s", strerror(dep.error));
            else kt_lb_add(&b, "%s", kcache_dep_state_text(dep.state));
        }
    } else {
        kt_lb_add(&b, "  now: (path cut in the preview; not checked)");
    }
    kt_push(L, &b);
}

/* The fields of a stored key record, as kcache-inspect shows them. */
static void kt_fields(kt_lines *L, const unsigned char *rec, uint32_t len) {
    kcache_key k;
    uint32_t i;
    if (kcache_record_decode(rec, len, &k) != KCACHE_OK) {
        kt_line(L, C_BAD, "      (key record damaged)");
        kcache_key_free(&k);
        return;
    }
    for (i = 0; i < k.count; i++) {
        const kcache_key_field *f = kcache_key_field_at(&k, i);
        kt_line(L, 0, "      %-20s %-5s = \"%s\"%s", f->name, kt_field_type(f->type), f->preview,
                f->type == KCACHE_FIELD_BYTES && f->size > 64 ? "  (long: compared by digest)" : "");
        if (f->type == KCACHE_FIELD_FILE) kt_dep_line(L, f);
    }
    kcache_key_free(&k);
}

typedef struct kt_miss { int64_t when; uint32_t pid; int reason, traced; char text[1024]; } kt_miss;
static int kt_miss_cmp(const void *a, const void *b) {
    const kt_miss *x = (const kt_miss *)a, *y = (const kt_miss *)b;
    return x->when < y->when ? 1 : x->when > y->when ? -1 : 0;
}

static int kt_miss_room(kt_miss **ms, size_t n, size_t *cap) {
    kt_miss *nv;
    if (n < *cap) return 1;
    nv = (kt_miss *)realloc(*ms, (*cap ? *cap * 2 : 32) * sizeof *nv);
    if (!nv) return 0;
    *ms = nv;
    *cap = *cap ? *cap * 2 : 32;
    return 1;
}

static void kt_detail(kt_lines *L, kt_unit *u) {
    kcache_index *ix = NULL;
    kcache_status r = KCACHE_ENOENT;
    char t1[48], t2[48], hex[33], rel[48], b1[32];
    kt_miss *ms = NULL;
    size_t nm = 0, cap = 0, j;
    uint32_t i, n_live = 0, n_gone = 0, n_missed = 0;
    kt_lb b;
    if (u->full_name) r = kcache_index_read(K.rd, u->name, &ix);
    if (r == KCACHE_OK) {
        n_live = kcache_index_count(ix, KCACHE_INDEX_LIVE);
        n_gone = kcache_index_count(ix, KCACHE_INDEX_GONE);
        n_missed = kcache_index_count(ix, KCACHE_INDEX_MISSED);
    }
    if (strncmp(u->name, "numba:", 6) == 0) {
        char lab[KCACHE_UNIT_MAX + 200];
        kt_line(L, C_TITLE, "UNIT %s  (numba: %s)", u->name, kt_unit_label(u, lab, sizeof lab));
    } else
        kt_line(L, C_TITLE, "UNIT %s", u->name);
    if (r == KCACHE_OK) {
        size_t records, bytes;
        kcache_index_path(u->name, rel, sizeof rel);
        kcache_index_size(ix, &records, &bytes);
        kt_line(L, 0, "  index     %s/%s (%zu records, %zu bytes)", K.dir, rel, records, bytes);
    } else if (r == KCACHE_ECORRUPT) {
        kt_line(L, C_BAD, "  index     damaged (the next put of the unit rewrites it)");
    } else {
        kt_line(L, C_DIM, "  index     none: %s", u->full_name ? "never stored in this directory" : "the unit's full name is not known");
    }
    kt_lb_reset(&b);
    kt_lb_add(&b, "  counted   hits %llu (memory %llu, disk %llu)  misses %llu  puts %llu (%s)  last use %s",
              (unsigned long long)kt_hits(u), (unsigned long long)kt_cnt(u, U_MEM), (unsigned long long)kt_cnt(u, U_DISK),
              (unsigned long long)kt_cnt(u, U_MISS), (unsigned long long)kt_cnt(u, U_PUTS), kt_bytes(kt_cnt(u, U_BYTES), b1, sizeof b1),
              kt_time(kt_last_use(u), 1, t1, sizeof t1));
    kt_push(L, &b);
    kt_line(L, C_DIM, "            (counted by the processes attached while kcache-top ran: a process that closed its cache");
    kt_line(L, C_DIM, "            before kcache-top started leaves no per-unit count, only the totals and the event log)");
    {
        /* what the store's own record (DIR/stats) still holds of the unit: the event rings outlive
           their processes; memory hits are sampled there, disk hits, misses and puts are not */
        uint64_t n[8];
        memset(n, 0, sizeof n);
        for (j = 0; j < K.nev; j++)
            if (K.ev[j].hash == u->hash && K.ev[j].kind > 0 && K.ev[j].kind < 8) n[K.ev[j].kind]++;
        kt_line(L, 0, "  in log    hits %llu (memory %llu sampled, disk %llu)  misses %llu  puts %llu",
                (unsigned long long)(n[KCACHE_EVENT_HIT_MEMORY] + n[KCACHE_EVENT_HIT_STORE]), (unsigned long long)n[KCACHE_EVENT_HIT_MEMORY],
                (unsigned long long)n[KCACHE_EVENT_HIT_STORE], (unsigned long long)n[KCACHE_EVENT_MISS], (unsigned long long)n[KCACHE_EVENT_PUT]);
        kt_line(L, C_DIM, "            (the store's own record: the events DIR/stats keeps, the last %d of each process slot,", KCACHE_STATS_EVENTS);
        kt_line(L, C_DIM, "            those of processes that have exited included)");
    }
    kt_lb_reset(&b);
    kt_lb_add(&b, "  last miss ");
    {
        int reason = u->last_reason;
        int64_t when = u->last_miss;
        uint32_t pid = u->last_miss_pid;
        if (u->traced_reason >= 0 && u->traced_when > when) { reason = u->traced_reason; when = u->traced_when; pid = u->traced_pid; }
        if (reason >= 0) {
            kt_lb_col(&b, C_WARN);
            kt_lb_add(&b, "%s (%s)", kt_reason_word(reason), kt_reason_text(reason));
            kt_lb_col(&b, 0);
            if (when) kt_lb_add(&b, " at %s by pid %u", kt_time(when, 1, t1, sizeof t1), (unsigned)pid);
            else kt_lb_add(&b, " by pid %u (its time has left the event log)", (unsigned)pid);
        } else {
            kt_lb_add(&b, "none seen");
        }
    }
    kt_push(L, &b);
    /* recent misses: traced ones (KCACHE_TRACE) explained in full, then the events' */
    if (r == KCACHE_OK)
        for (i = 0; i < n_missed; i++) {
            const kcache_index_item *it = kcache_index_at(ix, KCACHE_INDEX_MISSED, i);
            if (!kt_miss_room(&ms, nm, &cap)) break;
            memset(&ms[nm], 0, sizeof ms[nm]);
            ms[nm].when = it->when;
            ms[nm].pid = it->pid;
            ms[nm].reason = (int)it->reason;
            ms[nm].traced = 1;
            kcache_index_explain(ix, i, u->name, K.stamp_policy, ms[nm].text, sizeof ms[nm].text);
            nm++;
        }
    for (j = 0; j < K.nev; j++) {
        const kt_event *e = &K.ev[j];
        size_t k;
        int dup = 0;
        if (e->kind != KCACHE_EVENT_MISS || e->hash != u->hash) continue;
        for (k = 0; k < nm; k++)
            if (ms[k].traced && ms[k].pid == e->pid && ms[k].reason == e->reason && ms[k].when - e->time < 1000000000 &&
                e->time - ms[k].when < 1000000000)
                dup = 1;
        if (dup) continue;
        if (!kt_miss_room(&ms, nm, &cap)) break;
        memset(&ms[nm], 0, sizeof ms[nm]);
        ms[nm].when = e->time;
        ms[nm].pid = e->pid;
        ms[nm].reason = e->reason;
        snprintf(ms[nm].text, sizeof ms[nm].text, "miss: %s", kt_reason_text(e->reason));
        nm++;
    }
    kt_line(L, 0, "%s", "");
    kt_line(L, C_HEAD, "RECENT MISSES (%zu, newest first)", nm);
    if (nm) qsort(ms, nm, sizeof *ms, kt_miss_cmp);
    for (j = 0; j < nm; j++) {
        kt_lb_reset(&b);
        kt_lb_add(&b, "  %s  pid %-7u ", kt_time(ms[j].when, 1, t1, sizeof t1), (unsigned)ms[j].pid);
        kt_lb_col(&b, ms[j].reason == KCACHE_REASON_REJECTED ? C_BAD : C_WARN);
        kt_lb_add(&b, "%-10s", kt_reason_word(ms[j].reason));
        kt_lb_col(&b, 0);
        kt_lb_add(&b, " %s%s", ms[j].text, ms[j].traced ? "" : "  [event]");
        kt_push(L, &b);
    }
    if (!nm) kt_line(L, C_DIM, "  none seen (KCACHE_TRACE=1 in a program keeps its misses' fields in the index)");
    kt_line(L, 0, "%s", "");
    if (r == KCACHE_OK) {
        kt_line(L, C_HEAD, "OVERLOADS (%u stored)", n_live);
        for (i = 0; i < n_live; i++) {
            const kcache_index_item *it = kcache_index_at(ix, KCACHE_INDEX_LIVE, n_live - 1 - i);
            int64_t use = 0;
            int present;
            present = kcache_entry_stat(K.rd, it->digest, NULL) == KCACHE_OK; /* (a file there, if not a sound one) */
            kcache_hash_hex(it->digest, hex);
            kt_lb_reset(&b);
            kt_lb_add(&b, "  [%u] %.16s  %s  stored %s by pid %u  last use %s  ", i + 1, hex, kt_bytes(it->size, b1, sizeof b1),
                      kt_time(it->when, 1, t1, sizeof t1), (unsigned)it->pid,
                      kt_cf_use(it->digest, &use) ? kt_time(use, 1, t2, sizeof t2) : "-");
            kt_lb_col(&b, present ? C_GOOD : C_BAD);
            kt_lb_add(&b, "%s", present ? "entry present" : "entry missing (evicted)");
            kt_push(L, &b);
            kt_fields(L, it->record, it->record_len);
        }
        if (n_gone) {
            kt_line(L, 0, "%s", "");
            kt_line(L, C_HEAD, "GONE (%u)", n_gone);
        }
        for (i = 0; i < n_gone; i++) {
            const kcache_index_item *it = kcache_index_at(ix, KCACHE_INDEX_GONE, n_gone - 1 - i);
            kcache_hash_hex(it->digest, hex);
            kt_lb_reset(&b);
            kt_lb_add(&b, "  [%u] %.16s  ", i + 1, hex);
            kt_lb_col(&b, C_WARN);
            kt_lb_add(&b, "%s", kt_reason_word((int)it->reason));
            kt_lb_col(&b, 0);
            kt_lb_add(&b, " (%s) at %s", kt_reason_text((int)it->reason), kt_time(it->when, 1, t1, sizeof t1));
            kt_push(L, &b);
        }
    }
    free(ms);
    kcache_index_free(ix);
}

/* The unit named (exactly, else the only one it begins) for -U. */
static kt_unit *kt_find_unit(const char *name) {
    size_t i;
    kt_unit *found = NULL;
    int n = 0;
    for (i = 0; i < K.nu; i++)
        if (strcmp(K.u[i].name, name) == 0) return &K.u[i];
    for (i = 0; i < K.nu; i++)
        if (strncmp(K.u[i].name, name, strlen(name)) == 0) { found = &K.u[i]; n++; }
    if (n == 1) return found;
    {
        /* a unit known only from its index (no events yet): found by its hash */
        kt_unit *u = kt_unit_get(kt_unit_hash(name), 0);
        if (u) return u;
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* the snapshot (batch)                                                                           */

static void kt_snapshot(kt_lines *L, int index, int count) {
    char t1[48], t2[48];
    kt_lb b;
    size_t n, i;
    kt_unit **us;
    int c, shown;
    static const char *const cn[] = {"hits_mem", "hits_disk", "misses", "puts", "evictions", "rejects", "bytes_read",
                                     "bytes_written", "mem_evictions", "builds", "build_waits", "store_errors"};
    kt_line(L, 0, "kcache-top snapshot %d of %d  %s  dir %s", index, count, kt_time(K.wall, 1, t1, sizeof t1), K.dir);
    if (K.have_cf)
        kt_line(L, 0, "store      bytes %llu limit %llu used %.2f%% entries %llu units %zu evictions %llu%s",
                (unsigned long long)K.cf_bytes, (unsigned long long)K.cf_limit,
                K.cf_limit ? 100.0 * (double)K.cf_bytes / (double)K.cf_limit : 0.0, (unsigned long long)K.cf_entries, K.nindex,
                (unsigned long long)K.cf_evictions, K.cf_sound ? "" : " (accounting being updated or to be rebuilt)");
    else
        kt_line(L, 0, "store      no config.file (not a kcache store yet) units %zu", K.nindex);
    if (K.sf)
        kt_line(L, 0, "stats      created %s slots %d of %d claimed processes %d%s", kt_time(K.stats_created, 1, t1, sizeof t1),
                K.nclaimed, KT_NSLOT, K.nlive, K.consistent ? "" : " (read while changing)");
    else
        kt_line(L, 0, "stats      %s processes 0", K.stats_note[0] ? K.stats_note : "none");
    kt_lb_reset(&b);
    kt_lb_add(&b, "totals     hits=%llu", (unsigned long long)kt_all_hits());
    for (c = 0; c <= KCACHE_CTR_STORE_ERRORS; c++) kt_lb_add(&b, " %s=%llu", cn[c], (unsigned long long)K.tot[c]);
    kt_push(L, &b);
    kt_line(L, 0,
            "remote     hits_remote=%llu hits_layer=%llu lookups=%llu ratio=%.1f%% puts=%llu errors=%llu timeouts=%llu skipped=%llu "
            "rejects=%llu calls=%llu latency_ms=%.3f breaker_opens=%llu breakers_open=%llu",
            (unsigned long long)K.tot[KCACHE_CTR_HITS_REMOTE], (unsigned long long)K.tot[KCACHE_CTR_HITS_LAYER],
            (unsigned long long)K.tot[KCACHE_CTR_REMOTE_LOOKUPS], kt_remote_ratio(), (unsigned long long)K.tot[KCACHE_CTR_REMOTE_PUTS],
            (unsigned long long)K.tot[KCACHE_CTR_REMOTE_ERRORS], (unsigned long long)K.tot[KCACHE_CTR_REMOTE_TIMEOUTS],
            (unsigned long long)K.tot[KCACHE_CTR_REMOTE_SKIPPED], (unsigned long long)K.tot[KCACHE_CTR_REMOTE_REJECTS],
            (unsigned long long)K.tot[KCACHE_CTR_REMOTE_CALLS], kt_remote_latency_ms(), (unsigned long long)K.tot[KCACHE_CTR_BREAKER_OPENS],
            (unsigned long long)kt_breakers_open());
    {
        unsigned i;
        for (i = 0; i < kcache_stats_file_rows(KCACHE_STATS_SHARDS); i++) {
            char url[400];
            uint64_t v[5];
            if (kt_shard(i, url, sizeof url, v))
                kt_line(L, 0, "shard      %s hits=%llu misses=%llu errors=%llu timeouts=%llu skipped=%llu", url, (unsigned long long)v[0],
                        (unsigned long long)v[1], (unsigned long long)v[2], (unsigned long long)v[3], (unsigned long long)v[4]);
        }
    }
    kt_lb_reset(&b);
    kt_lb_add(&b, "misses     ");
    for (c = 1; c < KCACHE_REASON_COUNT; c++)
        kt_lb_add(&b, "%s%s=%llu", c > 1 ? " " : "", kt_reason_word(c), (unsigned long long)K.tot[KCACHE_CTR_MISSES_BY_REASON + c]);
    kt_push(L, &b);
    kt_lb_reset(&b);
    kt_lb_add(&b, "rates/s   ");
    for (c = 0; c < M_N; c++) {
        if (K.samples > 1) kt_lb_add(&b, " %s=%.1f", kt_metric_name[c], K.rate[c]);
        else kt_lb_add(&b, " %s=-", kt_metric_name[c]);
    }
    kt_push(L, &b);
    if (K.hist_n > 1) {
        for (c = 0; c < M_N; c++) {
            kt_lb_reset(&b);
            kt_lb_add(&b, "history    %-14s |", kt_metric_name[c]);
            kt_spark(&b, c, 60, 1);
            kt_lb_add(&b, "|");
            kt_push(L, &b);
        }
    }
    kt_line(L, 0, "PROCESSES");
    kt_line(L, 0, "  %-4s %-8s %-16s %-8s %-23s %10s %10s %8s %8s", "SLOT", "PID", "NAME", "STATE", "OPENED", "HITS_MEM", "HITS_DISK",
            "MISSES", "PUTS");
    for (i = 0; i < KT_NSLOT; i++) {
        const kcache_stats_slot *v = &K.slot[i];
        if (!v->owner) continue;
        kt_line(L, 0, "  %-4zu %-8u %-16s %-8s %-23s %10llu %10llu %8llu %8llu", i, (unsigned)v->pid, v->name[0] ? v->name : "?",
                kt_state_name[v->state], kt_time((int64_t)v->opened, 1, t1, sizeof t1), (unsigned long long)v->counters[KCACHE_CTR_HITS_MEMORY],
                (unsigned long long)v->counters[KCACHE_CTR_HITS_STORE], (unsigned long long)v->counters[KCACHE_CTR_MISSES],
                (unsigned long long)v->counters[KCACHE_CTR_PUTS]);
    }
    shown = K.nev < 30 ? (int)K.nev : 30;
    kt_line(L, 0, "EVENTS (newest first, %d of %zu)", shown, K.nev);
    kt_line(L, 0, "  %-23s %-8s %-8s %-32s %10s %s", "TIME", "PID", "KIND", "UNIT", "SIZE", "REASON");
    for (c = 0; c < shown; c++) {
        const kt_event *e = &K.ev[c];
        char what[64], lab[KCACHE_STATS_EVENT_NAME + 200];
        if (e->kind == KCACHE_EVENT_PUT) snprintf(what, sizeof what, "%s", e->reason ? kcache_strerror((kcache_status)e->reason) : "stored");
        else if (e->kind == KCACHE_EVENT_EVICT) snprintf(what, sizeof what, "%llu entries", (unsigned long long)e->count);
        else snprintf(what, sizeof what, "%s", e->kind == KCACHE_EVENT_MISS ? kt_reason_word(e->reason) : "-");
        kt_line(L, 0, "  %-23s %-8u %-8s %-32s %10llu %s", kt_time(e->time, 1, t1, sizeof t1), (unsigned)e->pid, kt_kind_name(e->kind),
                e->unit[0] ? kt_event_label(e, lab, sizeof lab) : "-", (unsigned long long)e->size, what);
    }
    us = kt_sorted_units(&n);
    kt_line(L, 0, "UNITS (%zu, sorted by %s)", n, kt_sort_name[K.sort]);
    kt_line(L, 0, "  %-32s %8s %8s %8s %7s %6s %9s %9s %-23s %s", "UNIT", "HITS", "MEM", "DISK", "MISSES", "PUTS", "OVERLOADS", "SIZE",
            "LAST_USE", "LAST_MISS");
    for (i = 0; i < n; i++) {
        const kt_unit *u = us[i];
        int reason = u->traced_reason >= 0 && u->traced_when > u->last_miss ? u->traced_reason : u->last_reason;
        char lab[KCACHE_UNIT_MAX + 200];
        kt_line(L, 0, "  %-32s %8llu %8llu %8llu %7llu %6llu %9u %9llu %-23s %s", kt_unit_label(u, lab, sizeof lab), (unsigned long long)kt_hits(u),
                (unsigned long long)kt_cnt(u, U_MEM), (unsigned long long)kt_cnt(u, U_DISK), (unsigned long long)kt_cnt(u, U_MISS),
                (unsigned long long)kt_cnt(u, U_PUTS), u->overloads, (unsigned long long)u->bytes,
                kt_time(kt_last_use(u), 1, t2, sizeof t2), kt_reason_word(reason));
    }
    free(us);
}

#ifndef KCACHE_TOP_NO_MAIN /* fuzz/fuzz_stats.c includes everything above */
/* ---------------------------------------------------------------------------------------------- */
/* machine-readable snapshots: --json and --prometheus (issue 35), --output FILE                  */

/* The metrics' names are DESIGN's ("Metrics names"): Prometheus's with kcache_ and _total, the
   JSON's the same without them. Every text that came from the stats file (a shard's URL, a process
   name) goes through kcache_escape first (DESIGN's one escaping rule), then the format's own
   escaping of backslash and double quote. The shard URLs are published without credentials (the
   library shows a URL so everywhere), so no password can reach these outputs. */

typedef struct kt_buf { char *s; size_t n, cap; int failed; } kt_buf;
static void kt_bputs(kt_buf *o, const char *s, size_t n) {
    if (o->failed) return;
    if (o->n + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 16384;
        char *p;
        while (o->n + n + 1 > cap) cap *= 2;
        if (!(p = (char *)realloc(o->s, cap))) { o->failed = 1; return; }
        o->s = p;
        o->cap = cap;
    }
    memcpy(o->s + o->n, s, n);
    o->n += n;
    o->s[o->n] = 0;
}
static void kt_bstr(kt_buf *o, const char *s) { kt_bputs(o, s, strlen(s)); }
static void kt_bprintf(kt_buf *o, const char *fmt, ...) KT_PRINTF(2, 3);
static void kt_bprintf(kt_buf *o, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    kt_bputs(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}
/* s (from outside) escaped by DESIGN's rule, then quoted for JSON or a Prometheus label value:
   both take \\ and \" (the rule leaves no control character for \n to be needed). */
static void kt_bquote(kt_buf *o, const char *s) {
    char e[1024];
    const char *p;
    kcache_escape(e, sizeof e, s, strlen(s));
    kt_bstr(o, "\"");
    for (p = e; *p; p++) {
        if (*p == '\\' || *p == '"') kt_bstr(o, "\\");
        kt_bputs(o, p, 1);
    }
    kt_bstr(o, "\"");
}

/* What the counters say, in one place for both formats. */
enum { KT_TIER_MEMORY, KT_TIER_STORE, KT_TIER_LAYER, KT_TIER_REMOTE, KT_TIERS };
static const char *const kt_tier_name[KT_TIERS] = {"memory", "store", "layer", "remote"};
static const int kt_tier_ctr[KT_TIERS] = {KCACHE_CTR_HITS_MEMORY, KCACHE_CTR_HITS_STORE, KCACHE_CTR_HITS_LAYER, KCACHE_CTR_HITS_REMOTE};
/* Plain counters: name (without kcache_ / _total), counter, help. */
static const struct { const char *name; int ctr; const char *help; } kt_plain[] = {
    {"puts", KCACHE_CTR_PUTS, "Entries stored (kcache_put and builds)."},
    {"evictions", KCACHE_CTR_EVICTIONS, "Entries the store evicted to stay under its size limit."},
    {"rejects", KCACHE_CTR_REJECTS, "Entries that failed validation (corrupt, a binary the driver refused, a bad remote value)."},
    {"builds", KCACHE_CTR_BUILDS, "Builds run by kcache_get_or_build and the batch (a miss that compiled)."},
    {"build_waits", KCACHE_CTR_BUILD_WAITS, "Calls that waited for another thread, process or machine building the same key."},
    {"builds_claimed_elsewhere", KCACHE_CTR_BUILDS_CLAIMED_ELSEWHERE,
     "Builds of a key whose cluster build claim another process or machine held: duplicate builds (a rebuild storm's measure)."},
    {"memory_evictions", KCACHE_CTR_MEMORY_EVICTIONS, "Entries the memory LRU dropped."},
    {"store_errors", KCACHE_CTR_STORE_ERRORS, "Store operations that failed (a full disk, a refused store)."},
    {"bytes_read", KCACHE_CTR_BYTES_READ, "Payload bytes handed out by hits."},
    {"bytes_written", KCACHE_CTR_BYTES_WRITTEN, "Payload bytes stored by puts."},
    {"remote_lookups", KCACHE_CTR_REMOTE_LOOKUPS, "Local misses that asked the remote tier."},
    {"remote_puts", KCACHE_CTR_REMOTE_PUTS, "Entries stored on the remote tier."},
    {"remote_rejects", KCACHE_CTR_REMOTE_REJECTS, "Remote values that failed validation (deleted there)."},
    {"remote_breaker_opens", KCACHE_CTR_BREAKER_OPENS, "Times a process's circuit breaker for a shard opened."},
};
/* One shard row: its counts for the outputs. */
typedef struct kt_row {
    char url[KCACHE_STATS_ROW_NAME + 1];
    const char *node;  /* a backend's node (a Redis Cluster's), in url's buffer; "": a shard's row */
    uint64_t hits, misses, calls_ok, calls_error, calls_timeout, calls_skipped;
    int open;
    double open_since; /* seconds since 1970, 0: closed */
} kt_row;
/* Row i of the shards' table, then (i past it) of the nodes' (KCACHE_STATS_NODES: "<shard> <node>"). */
static unsigned kt_nrows(void) { return kcache_stats_file_rows(KCACHE_STATS_SHARDS) + kcache_stats_file_rows(KCACHE_STATS_NODES); }
static int kt_row_get(unsigned i, kt_row *r) {
    kcache_stats_row row;
    uint64_t errors, timeouts;
    unsigned nshards = kcache_stats_file_rows(KCACHE_STATS_SHARDS);
    kcache_stats_table t = i < nshards ? KCACHE_STATS_SHARDS : KCACHE_STATS_NODES;
    char *sp;
    if (!K.sf || kcache_stats_file_row(K.sf, t, i < nshards ? i : i - nshards, &row) != KCACHE_OK || !row.id) return 0;
    memset(r, 0, sizeof *r);
    memcpy(r->url, row.name, sizeof r->url);
    r->url[sizeof r->url - 1] = 0;
    r->node = "";
    if (t == KCACHE_STATS_NODES) {
        if (!(sp = strrchr(r->url, ' '))) return 0; /* (being written) */
        *sp = 0;
        r->node = sp + 1;
    }
    r->hits = row.value[0];
    r->misses = row.value[1];
    errors = row.value[2];
    timeouts = row.value[3] < errors ? row.value[3] : errors;
    r->calls_skipped = row.value[4];
    r->calls_timeout = timeouts;
    r->calls_error = errors - timeouts;
    if (row.nvalues >= 7) { /* calls made, and the breaker (a file of 0.5 or later) */
        r->calls_ok = row.value[5] > errors ? row.value[5] - errors : 0;
        r->open = row.value[6] != 0;
        r->open_since = (double)row.value[6] / 1e9;
    }
    return 1;
}

static void kt_json(kt_buf *o, int attached) {
    unsigned i, c, first = 1;
    kt_row r;
    kt_bprintf(o, "{\"time\":%.3f,\"dir\":", (double)K.wall / 1e9);
    kt_bquote(o, K.dir);
    if (!attached) { kt_bstr(o, ",\"store\":null,\"stats\":null}\n"); return; }
    if (K.have_cf)
        kt_bprintf(o, ",\"store_bytes\":%llu,\"store_limit_bytes\":%llu,\"store_entries\":%llu", (unsigned long long)K.cf_bytes,
                   (unsigned long long)K.cf_limit, (unsigned long long)K.cf_entries);
    kt_bprintf(o, ",\"stats\":%s", K.sf ? "true" : "false");
    if (!K.sf) {
        kt_bstr(o, ",\"stats_note\":");
        kt_bquote(o, K.stats_note[0] ? K.stats_note : "none");
    } else {
        kt_bprintf(o, ",\"stats_created\":%.3f,\"consistent\":%s", (double)K.stats_created / 1e9, K.consistent ? "true" : "false");
    }
    kt_bprintf(o, ",\"processes\":%d,\"slots_claimed\":%d,\"hits\":{", K.nlive, K.nclaimed);
    for (i = 0; i < KT_TIERS; i++) kt_bprintf(o, "%s\"%s\":%llu", i ? "," : "", kt_tier_name[i], (unsigned long long)K.tot[kt_tier_ctr[i]]);
    kt_bstr(o, "},\"misses\":{");
    for (c = 1; c < KCACHE_REASON_COUNT; c++)
        kt_bprintf(o, "%s\"%s\":%llu", c > 1 ? "," : "", kt_reason_word((int)c), (unsigned long long)K.tot[KCACHE_CTR_MISSES_BY_REASON + c]);
    kt_bstr(o, "}");
    for (i = 0; i < sizeof kt_plain / sizeof kt_plain[0]; i++)
        kt_bprintf(o, ",\"%s\":%llu", kt_plain[i].name, (unsigned long long)K.tot[kt_plain[i].ctr]);
    kt_bprintf(o, ",\"remote_call_seconds\":%.6f,\"remote_breakers_open\":%llu,\"shards\":[",
               (double)K.tot[KCACHE_CTR_REMOTE_LATENCY_NS] / 1e9, (unsigned long long)kt_breakers_open());
    for (i = 0; i <= kt_nrows(); i++) {
        if (i == kcache_stats_file_rows(KCACHE_STATS_SHARDS)) kt_bstr(o, "],\"nodes\":["), first = 1; /* then a backend's nodes: same fields */
        if (i == kt_nrows() || !kt_row_get(i, &r)) continue;
        kt_bstr(o, first ? "{\"shard\":" : ",{\"shard\":");
        first = 0;
        kt_bquote(o, r.url);
        kt_bstr(o, ",\"node\":");
        kt_bquote(o, r.node);
        kt_bprintf(o, ",\"remote_calls\":{\"ok\":%llu,\"error\":%llu,\"timeout\":%llu,\"skipped\":%llu}", (unsigned long long)r.calls_ok,
                   (unsigned long long)r.calls_error, (unsigned long long)r.calls_timeout, (unsigned long long)r.calls_skipped);
        kt_bprintf(o, ",\"remote_shard_lookups\":{\"hit\":%llu,\"miss\":%llu},\"remote_breaker_open\":%d,\"remote_breaker_opened_timestamp_seconds\":%.3f}",
                   (unsigned long long)r.hits, (unsigned long long)r.misses, r.open, r.open_since);
    }
    kt_bstr(o, "],\"slots\":[");
    for (i = 0, first = 1; i < KT_NSLOT; i++) {
        const kcache_stats_slot *v = &K.slot[i];
        if (!v->owner) continue;
        kt_bprintf(o, "%s{\"slot\":%u,\"pid\":%u,\"name\":", first ? "" : ",", i, (unsigned)v->pid);
        first = 0;
        kt_bquote(o, v->name);
        kt_bprintf(o, ",\"state\":\"%s\",\"opened\":%.3f,\"hits\":{\"memory\":%llu,\"store\":%llu},\"misses\":%llu,\"puts\":%llu,\"builds\":%llu}",
                   kt_state_name[v->state], (double)v->opened / 1e9, (unsigned long long)v->counters[KCACHE_CTR_HITS_MEMORY],
                   (unsigned long long)v->counters[KCACHE_CTR_HITS_STORE], (unsigned long long)v->counters[KCACHE_CTR_MISSES],
                   (unsigned long long)v->counters[KCACHE_CTR_PUTS], (unsigned long long)v->counters[KCACHE_CTR_BUILDS]);
    }
    kt_bstr(o, "]}\n");
}

/* Prometheus's text exposition format (version 0.0.4): each family's HELP and TYPE, then its
   samples; counters end in _total. */
static void kt_prom_family(kt_buf *o, const char *name, const char *type, const char *help) {
    kt_bprintf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}
static void kt_prom_shard_labels(kt_buf *o, const char *name, const kt_row *r) {
    kt_bprintf(o, "%s{shard=", name);
    kt_bquote(o, r->url);
    kt_bstr(o, ",node=");
    kt_bquote(o, r->node);
}
static void kt_prometheus(kt_buf *o, int attached) {
    unsigned i, c, nrows = kt_nrows();
    kt_row r;
    kt_prom_family(o, "kcache_stats_file_present", "gauge", "1 when the directory's stats file was read (0: none yet, or unreadable).");
    kt_bprintf(o, "kcache_stats_file_present %d\n", attached && K.sf ? 1 : 0);
    if (!attached) return;
    if (K.have_cf) {
        kt_prom_family(o, "kcache_store_bytes", "gauge", "Bytes of the entries in the store, as accounted.");
        kt_bprintf(o, "kcache_store_bytes %llu\n", (unsigned long long)K.cf_bytes);
        kt_prom_family(o, "kcache_store_limit_bytes", "gauge", "The store's size limit (KCACHE_MAX_SIZE; 0: none).");
        kt_bprintf(o, "kcache_store_limit_bytes %llu\n", (unsigned long long)K.cf_limit);
        kt_prom_family(o, "kcache_store_entries", "gauge", "Entries in the store.");
        kt_bprintf(o, "kcache_store_entries %llu\n", (unsigned long long)K.cf_entries);
    }
    if (!K.sf) return;
    kt_prom_family(o, "kcache_processes", "gauge", "Processes publishing in the stats file now.");
    kt_bprintf(o, "kcache_processes %d\n", K.nlive);
    kt_prom_family(o, "kcache_stats_created_timestamp_seconds", "gauge", "When the stats file was made: counters count from then.");
    kt_bprintf(o, "kcache_stats_created_timestamp_seconds %.3f\n", (double)K.stats_created / 1e9);
    kt_prom_family(o, "kcache_hits_total", "counter", "Lookups answered, by the tier that answered.");
    for (i = 0; i < KT_TIERS; i++) kt_bprintf(o, "kcache_hits_total{tier=\"%s\"} %llu\n", kt_tier_name[i], (unsigned long long)K.tot[kt_tier_ctr[i]]);
    kt_prom_family(o, "kcache_misses_total", "counter", "Lookups that missed, by their reason.");
    for (c = 1; c < KCACHE_REASON_COUNT; c++)
        kt_bprintf(o, "kcache_misses_total{reason=\"%s\"} %llu\n", kt_reason_word((int)c), (unsigned long long)K.tot[KCACHE_CTR_MISSES_BY_REASON + c]);
    for (i = 0; i < sizeof kt_plain / sizeof kt_plain[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "kcache_%s_total", kt_plain[i].name);
        kt_prom_family(o, name, "counter", kt_plain[i].help);
        kt_bprintf(o, "%s %llu\n", name, (unsigned long long)K.tot[kt_plain[i].ctr]);
    }
    kt_prom_family(o, "kcache_remote_call_seconds_total", "counter", "Time spent in remote calls (with kcache_remote_calls_total: the mean latency).");
    kt_bprintf(o, "kcache_remote_call_seconds_total %.6f\n", (double)K.tot[KCACHE_CTR_REMOTE_LATENCY_NS] / 1e9);
    kt_prom_family(o, "kcache_remote_breakers_open", "gauge", "Circuit breakers open now, summed over the live processes and their shards.");
    kt_bprintf(o, "kcache_remote_breakers_open %llu\n", (unsigned long long)kt_breakers_open());
    kt_prom_family(o, "kcache_remote_calls_total", "counter",
                   "Remote calls per shard and node, by result (skipped: not made, the breaker was open).");
    for (i = 0; i < nrows; i++) {
        static const char *const res[4] = {"ok", "error", "timeout", "skipped"};
        uint64_t v[4];
        if (!kt_row_get(i, &r)) continue;
        v[0] = r.calls_ok, v[1] = r.calls_error, v[2] = r.calls_timeout, v[3] = r.calls_skipped;
        for (c = 0; c < 4; c++) {
            kt_prom_shard_labels(o, "kcache_remote_calls_total", &r);
            kt_bprintf(o, ",result=\"%s\"} %llu\n", res[c], (unsigned long long)v[c]);
        }
    }
    kt_prom_family(o, "kcache_remote_shard_lookups_total", "counter", "Remote lookups per shard and node, by what it had (hit: a valid entry).");
    for (i = 0; i < nrows; i++) {
        if (!kt_row_get(i, &r) || r.node[0]) continue; /* (a shard's: a node's has no lookups of its own) */
        kt_prom_shard_labels(o, "kcache_remote_shard_lookups_total", &r);
        kt_bprintf(o, ",result=\"hit\"} %llu\n", (unsigned long long)r.hits);
        kt_prom_shard_labels(o, "kcache_remote_shard_lookups_total", &r);
        kt_bprintf(o, ",result=\"miss\"} %llu\n", (unsigned long long)r.misses);
    }
    kt_prom_family(o, "kcache_remote_breaker_open", "gauge",
                   "1 while a circuit breaker for the shard is open: its last call failed and none succeeded since.");
    for (i = 0; i < nrows; i++) {
        if (!kt_row_get(i, &r)) continue;
        kt_prom_shard_labels(o, "kcache_remote_breaker_open", &r);
        kt_bprintf(o, "} %d\n", r.open);
    }
    kt_prom_family(o, "kcache_remote_breaker_opened_timestamp_seconds", "gauge", "When the shard's open breaker opened (0: closed).");
    for (i = 0; i < nrows; i++) {
        if (!kt_row_get(i, &r)) continue;
        kt_prom_shard_labels(o, "kcache_remote_breaker_opened_timestamp_seconds", &r);
        kt_bprintf(o, "} %.3f\n", r.open_since);
    }
}

/* --output: the whole snapshot replaces FILE at once (a temp file in its directory, then rename),
   so that a reader (node_exporter's textfile collector) never sees it partial; the temp file's
   name starts with '.' and does not end in .prom, which the collector ignores. */
static char kt_tmp_path[4200];
static volatile sig_atomic_t kt_tmp_live;
static void kt_on_term(int sig) {
    if (kt_tmp_live) unlink(kt_tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}
static int kt_write_atomic(const char *file, const kt_buf *o) {
    const char *slash = strrchr(file, '/');
    mode_t um = umask(0);
    int fd, e = 0;
    size_t off = 0;
    umask(um);
    if (slash) snprintf(kt_tmp_path, sizeof kt_tmp_path, "%.*s/.%s.XXXXXX", (int)(slash - file), file, slash + 1);
    else snprintf(kt_tmp_path, sizeof kt_tmp_path, ".%s.XXXXXX", file);
    kt_tmp_live = 1;
    if ((fd = mkstemp(kt_tmp_path)) < 0) {
        kt_tmp_live = 0;
        ktext_eprintf("kcache-top: cannot write %s: %s\n", file, strerror(errno));
        return 0;
    }
    while (off < o->n && !e) {
        ssize_t w = write(fd, o->s + off, o->n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) e = w < 0 ? errno : EIO;
        else off += (size_t)w;
    }
    if (!e && fchmod(fd, 0666 & ~um) != 0) e = errno; /* as a new file gets: node_exporter may be another user */
    if (close(fd) != 0 && !e) e = errno;
    if (!e && rename(kt_tmp_path, file) != 0) e = errno;
    if (e) unlink(kt_tmp_path);
    kt_tmp_live = 0;
    if (e) ktext_eprintf("kcache-top: cannot write %s: %s\n", file, strerror(e));
    return !e;
}

/* ---------------------------------------------------------------------------------------------- */
/* the interactive view                                                                           */

/* The interactive keys, for the help view and --help alike. */
static const char *const kt_keys[] = {
    "  q          quit",
    "  p          pause / resume sampling",
    "  s          cycle the units' sort: hits, misses, size, last use",
    "  Tab        move between the units and the event log",
    "  Up Down PgUp PgDn Home End   scroll",
    "  Enter      a unit's detail: overloads, fields, dependency stamps, recent misses",
    "  Esc        back",
    "  ? or h     this help (any key leaves it)",
};

#ifndef KCACHE_TOP_NO_CURSES
enum { V_MAIN, V_DETAIL, V_HELP };
static struct {
    int view, paused, focus; /* focus 0: units, 1: events */
    size_t sel, top, ev_top, d_top;
    uint64_t sel_hash, detail_hash;
    kt_lines detail;
    double next;
} V;

static attr_t kt_attr[C_N];

static void kt_colors(void) {
    int i;
    for (i = 0; i < C_N; i++) kt_attr[i] = A_NORMAL;
    kt_attr[C_HEAD] = A_BOLD;
    kt_attr[C_SEL] = A_REVERSE;
    kt_attr[C_TITLE] = A_REVERSE | A_BOLD;
    kt_attr[C_DIM] = A_DIM;
    kt_attr[C_BAD] = A_BOLD;
    if (!K.color || !has_colors()) return;
    start_color();
    use_default_colors();
    init_pair(1, COLOR_CYAN, -1);
    init_pair(2, COLOR_GREEN, -1);
    init_pair(3, COLOR_YELLOW, -1);
    init_pair(4, COLOR_RED, -1);
    init_pair(5, COLOR_BLUE, -1);
    init_pair(6, COLOR_BLACK, COLOR_CYAN);
    kt_attr[C_HEAD] = (attr_t)(COLOR_PAIR(1) | A_BOLD);
    kt_attr[C_GOOD] = (attr_t)COLOR_PAIR(2);
    kt_attr[C_WARN] = (attr_t)COLOR_PAIR(3);
    kt_attr[C_BAD] = (attr_t)(COLOR_PAIR(4) | A_BOLD);
    kt_attr[C_DIM] = (attr_t)(COLOR_PAIR(5));
    kt_attr[C_TITLE] = (attr_t)(COLOR_PAIR(6) | A_BOLD);
}

/* Draws a marked-up line at row y, cut to the screen's width; base: an attribute for all of it. */
static void kt_draw(int y, const char *s, attr_t base, int fill) {
    int x = 0, w = COLS;
    attr_t a = base | kt_attr[C_NORM];
    if (y < 0 || y >= LINES) return;
    move(y, 0);
    attrset(a);
    while (*s && x < w) {
        const char *run = s;
        int cols = 0;
        if (*s == '\001') {
            int c = s[1] ? s[1] - '0' : 0;
            a = base | (c >= 0 && c < C_N ? kt_attr[c] : A_NORMAL);
            attrset(a);
            s += s[1] ? 2 : 1;
            continue;
        }
        while (*s && *s != '\001' && x + cols < w) {
            unsigned char ch = (unsigned char)*s;
            int len = ch < 0x80 ? 1 : ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc0 ? 2 : 1, k;
            for (k = 1; k < len; k++)
                if (!s[k]) len = k;
            s += len;
            cols++;
        }
        addnstr(run, (int)(s - run));
        x += cols;
    }
    attrset(base);
    if (fill) while (x++ < w) addch(' ');
    attrset(A_NORMAL);
}

static void kt_draw_title(const char *what) {
    char t1[48], line[600];
    char dir[sizeof line];
    snprintf(line, sizeof line, " kcache-top  %.500s%s%.60s", kcache_escape(dir, sizeof dir, K.dir, strlen(K.dir)), what ? "  " : "", what ? what : "");
    kt_draw(0, line, kt_attr[C_TITLE], 1);
    snprintf(line, sizeof line, "%s  every %gs%s ", kt_time(K.wall, 0, t1, sizeof t1), K.interval, V.paused ? "  PAUSED" : "");
    if ((int)strlen(line) < COLS) {
        attrset(kt_attr[C_TITLE]);
        mvaddstr(0, COLS - (int)strlen(line), line);
        attrset(A_NORMAL);
    }
}

static void kt_draw_main(void) {
    kt_lb b;
    char t1[48], t2[48], t3[48];
    int y = 1, c, h = LINES, w = COLS, rows_ev, rows_units, namew, i, compact;
    size_t n, k;
    kt_unit **us;
    uint64_t hits = kt_all_hits();
    kt_draw_title(NULL);
    /* size against the limit */
    kt_lb_reset(&b);
    kt_lb_col(&b, C_HEAD);
    kt_lb_add(&b, "Store ");
    kt_lb_col(&b, 0);
    if (K.have_cf) {
        double f = K.cf_limit ? (double)K.cf_bytes / (double)K.cf_limit : 0;
        int bw = w >= 100 ? 30 : w >= 70 ? 16 : 8, fillc = (int)(f * bw + 0.5);
        if (f > 0 && fillc == 0) fillc = 1;
        if (fillc > bw) fillc = bw;
        kt_lb_add(&b, "[");
        kt_lb_col(&b, f > 0.9 ? C_BAD : f > 0.6 ? C_WARN : C_GOOD);
        for (i = 0; i < bw; i++) kt_lb_add(&b, "%c", i < fillc ? '#' : ' ');
        kt_lb_col(&b, 0);
        kt_lb_add(&b, "] %s / %s (%.1f%%)  entries %llu  units %zu  processes %d", kt_bytes(K.cf_bytes, t1, sizeof t1),
                  K.cf_limit ? kt_bytes(K.cf_limit, t2, sizeof t2) : "no limit", f * 100.0, (unsigned long long)K.cf_entries, K.nindex,
                  K.nlive);
    } else {
        kt_lb_add(&b, "no config.file yet  units %zu  processes %d", K.nindex, K.nlive);
    }
    kt_draw(y++, b.s, 0, 0);
    /* totals */
    kt_lb_reset(&b);
    kt_lb_col(&b, C_HEAD);
    kt_lb_add(&b, "Total ");
    kt_lb_col(&b, 0);
    kt_lb_add(&b, "hits %llu (mem %llu, disk %llu", (unsigned long long)hits, (unsigned long long)K.tot[KCACHE_CTR_HITS_MEMORY],
              (unsigned long long)K.tot[KCACHE_CTR_HITS_STORE]);
    /* the tiers below the store, each its own counter: a layer hit is no remote hit */
    if (K.tot[KCACHE_CTR_HITS_LAYER]) kt_lb_add(&b, ", layer %llu", (unsigned long long)K.tot[KCACHE_CTR_HITS_LAYER]);
    if (K.tot[KCACHE_CTR_HITS_REMOTE]) kt_lb_add(&b, ", remote %llu", (unsigned long long)K.tot[KCACHE_CTR_HITS_REMOTE]);
    kt_lb_add(&b, ")  ratio %.1f%%  misses %llu  puts %llu  evictions %llu  rejects %llu",
              hits + K.tot[KCACHE_CTR_MISSES] ? 100.0 * (double)hits / (double)(hits + K.tot[KCACHE_CTR_MISSES]) : 0.0,
              (unsigned long long)K.tot[KCACHE_CTR_MISSES], (unsigned long long)K.tot[KCACHE_CTR_PUTS],
              (unsigned long long)K.tot[KCACHE_CTR_EVICTIONS], (unsigned long long)K.tot[KCACHE_CTR_REJECTS]);
    kt_draw(y++, b.s, 0, 0);
    kt_lb_reset(&b);
    kt_lb_col(&b, C_HEAD);
    kt_lb_add(&b, "Miss  ");
    kt_lb_col(&b, 0);
    for (c = 1; c < KCACHE_REASON_COUNT; c++)
        kt_lb_add(&b, "%s %llu  ", kt_reason_word(c), (unsigned long long)K.tot[KCACHE_CTR_MISSES_BY_REASON + c]);
    if (!K.sf) kt_lb_add(&b, " [%s]", K.stats_note);
    kt_draw(y++, b.s, 0, 0);
    if (kt_remote_used()) { /* the tiers below the store */
        uint64_t open = kt_breakers_open();
        kt_lb_reset(&b);
        kt_lb_col(&b, C_HEAD);
        kt_lb_add(&b, "Remote ");
        kt_lb_col(&b, 0);
        kt_lb_add(&b, "hits %llu of %llu lookups (%.1f%%)  puts %llu  ", (unsigned long long)K.tot[KCACHE_CTR_HITS_REMOTE],
                  (unsigned long long)K.tot[KCACHE_CTR_REMOTE_LOOKUPS], kt_remote_ratio(), (unsigned long long)K.tot[KCACHE_CTR_REMOTE_PUTS]);
        kt_lb_col(&b, K.tot[KCACHE_CTR_REMOTE_ERRORS] ? C_WARN : 0);
        kt_lb_add(&b, "errors %llu (timeouts %llu)  skipped %llu  rejects %llu", (unsigned long long)K.tot[KCACHE_CTR_REMOTE_ERRORS],
                  (unsigned long long)K.tot[KCACHE_CTR_REMOTE_TIMEOUTS], (unsigned long long)K.tot[KCACHE_CTR_REMOTE_SKIPPED],
                  (unsigned long long)K.tot[KCACHE_CTR_REMOTE_REJECTS]);
        kt_lb_col(&b, 0);
        kt_lb_add(&b, "  latency %.2f ms  breaker ", kt_remote_latency_ms());
        kt_lb_col(&b, open ? C_BAD : C_GOOD);
        if (open) kt_lb_add(&b, "OPEN (%llu)", (unsigned long long)open);
        else kt_lb_add(&b, "closed");
        kt_lb_col(&b, 0);
        kt_draw(y++, b.s, 0, 0);
        for (i = 0; i < (int)kcache_stats_file_rows(KCACHE_STATS_SHARDS) && h >= 30 && i < 4; i++) { /* the first shards, one line each, on a tall screen */
            char url[200];
            uint64_t v[5];
            if (!kt_shard((unsigned)i, url, sizeof url, v)) continue;
            kt_lb_reset(&b);
            kt_lb_add(&b, "  %-40s hits %llu  misses %llu  ", url, (unsigned long long)v[0], (unsigned long long)v[1]);
            kt_lb_col(&b, v[2] ? C_WARN : 0);
            kt_lb_add(&b, "errors %llu (timeouts %llu)  skipped %llu", (unsigned long long)v[2], (unsigned long long)v[3], (unsigned long long)v[4]);
            kt_lb_col(&b, 0);
            kt_draw(y++, b.s, 0, 0);
        }
    }
    /* rates */
    if (h >= 24) {
        int sw = w - 26;
        if (sw > KT_HIST) sw = KT_HIST;
        for (c = 0; c < M_N; c++) {
            static const char *const label[M_N] = {"hits/s", "misses/s", "puts/s", "evictions/s", "read", "written"};
            kt_lb_reset(&b);
            kt_lb_add(&b, " %-12s", label[c]);
            kt_lb_col(&b, c == M_MISSES || c == M_EVICTIONS ? C_WARN : C_GOOD);
            kt_lb_add(&b, "%10s ", K.samples > 1 ? kt_metric_fmt(c, K.rate[c], t1, sizeof t1) : "-");
            kt_lb_col(&b, c == M_MISSES || c == M_EVICTIONS ? C_WARN : C_GOOD);
            if (sw > 4) kt_spark(&b, c, sw, !K.utf8);
            kt_draw(y++, b.s, 0, 0);
        }
    } else {
        kt_lb_reset(&b);
        kt_lb_col(&b, C_HEAD);
        kt_lb_add(&b, "Rate/s");
        kt_lb_col(&b, 0);
        for (c = 0; c < M_N; c++)
            kt_lb_add(&b, " %s %s", kt_metric_name[c], K.samples > 1 ? kt_metric_fmt(c, K.rate[c], t1, sizeof t1) : "-");
        kt_draw(y++, b.s, 0, 0);
    }
    /* events and units share the rest: a third for events */
    {
        int left = h - y - 1 - 3; /* two section titles, the units' column header, the key line */
        if (left < 2) left = 2;
        rows_ev = left / 3;
        if (rows_ev < 1) rows_ev = 1;
        rows_units = left - rows_ev;
    }
    kt_lb_reset(&b);
    kt_lb_add(&b, "EVENTS newest first (%zu)%s", K.nev, V.focus == 1 ? "  [Tab: units]" : "");
    kt_draw(y++, b.s, kt_attr[C_HEAD] | (V.focus == 1 ? A_UNDERLINE : 0), 0);
    if (V.ev_top + (size_t)rows_ev > K.nev) V.ev_top = K.nev > (size_t)rows_ev ? K.nev - (size_t)rows_ev : 0;
    for (i = 0; i < rows_ev; i++) {
        size_t at = V.ev_top + (size_t)i;
        const kt_event *e;
        char what[64], lab[KCACHE_STATS_EVENT_NAME + 200];
        if (at >= K.nev) { if (i == 0) kt_draw(y, "  (no events yet)", kt_attr[C_DIM], 0); y++; continue; }
        e = &K.ev[at];
        if (e->kind == KCACHE_EVENT_PUT) snprintf(what, sizeof what, "%s", e->reason ? kcache_strerror((kcache_status)e->reason) : "");
        else if (e->kind == KCACHE_EVENT_EVICT) snprintf(what, sizeof what, "%llu entries", (unsigned long long)e->count);
        else snprintf(what, sizeof what, "%s", e->kind == KCACHE_EVENT_MISS ? kt_reason_word(e->reason) : "");
        kt_lb_reset(&b);
        kt_lb_add(&b, " %s  %-7u ", kt_time(e->time, 1, t1, sizeof t1) + 11, (unsigned)e->pid);
        kt_lb_col(&b, kt_kind_color(e->kind, e->reason));
        kt_lb_add(&b, "%-8s", kt_kind_name(e->kind));
        kt_lb_col(&b, 0);
        kt_lb_add(&b, " %-28.28s %8s  %s", e->unit[0] ? kt_event_label(e, lab, sizeof lab) : "-", kt_bytes(e->size, t2, sizeof t2), what);
        kt_draw(y++, b.s, 0, 0);
    }
    /* units */
    us = kt_sorted_units(&n);
    for (k = 0; k < n; k++)
        if (us[k]->hash == V.sel_hash) { V.sel = k; break; }
    if (V.sel >= n) V.sel = n ? n - 1 : 0;
    if (V.sel < V.top) V.top = V.sel;
    if (V.sel >= V.top + (size_t)rows_units) V.top = V.sel + 1 - (size_t)rows_units;
    if (n) V.sel_hash = us[V.sel]->hash;
    kt_lb_reset(&b);
    kt_lb_add(&b, "UNITS %zu  sort: %s  (s: sort  Enter: detail)", n, kt_sort_name[K.sort]);
    kt_draw(y++, b.s, kt_attr[C_HEAD] | (V.focus == 0 ? A_UNDERLINE : 0), 0);
    compact = w < 96; /* narrow: no PUTS, OVLD, SIZE columns, so that names stay readable */
    namew = w - (compact ? 46 : 66);
    if (namew > 48) namew = 48;
    if (namew < 12) namew = 12;
    kt_lb_reset(&b);
    if (compact) kt_lb_add(&b, " %-*s %8s %7s %-9s %-9s", namew, "UNIT", "HITS", "MISSES", "LAST USE", "LAST MISS");
    else kt_lb_add(&b, " %-*s %8s %7s %6s %5s %7s %-9s %-9s", namew, "UNIT", "HITS", "MISSES", "PUTS", "OVLD", "SIZE", "LAST USE", "LAST MISS");
    kt_draw(y++, b.s, A_BOLD, 1);
    for (i = 0; i < rows_units; i++) {
        size_t at = V.top + (size_t)i;
        const kt_unit *u;
        int reason;
        char lab[KCACHE_UNIT_MAX + 200];
        if (at >= n) { if (i == 0 && !n) kt_draw(y, "  (no units yet)", kt_attr[C_DIM], 0); y++; continue; }
        u = us[at];
        reason = u->traced_reason >= 0 && u->traced_when > u->last_miss ? u->traced_reason : u->last_reason;
        kt_lb_reset(&b);
        kt_lb_add(&b, " %-*.*s %8s ", namew, namew, kt_unit_label(u, lab, sizeof lab), kt_num((double)kt_hits(u), t1, sizeof t1));
        kt_lb_col(&b, kt_cnt(u, U_MISS) ? C_WARN : 0);
        kt_lb_add(&b, "%7s", kt_num((double)kt_cnt(u, U_MISS), t2, sizeof t2));
        kt_lb_col(&b, 0);
        if (compact) kt_lb_add(&b, " %-9s ", kt_ago(kt_last_use(u), t2, sizeof t2));
        else
            kt_lb_add(&b, " %6s %5u %7s %-9s ", kt_num((double)kt_cnt(u, U_PUTS), t3, sizeof t3), u->overloads,
                      u->in_index ? kt_bytes(u->bytes, t1, sizeof t1) : "-", kt_ago(kt_last_use(u), t2, sizeof t2));
        kt_lb_col(&b, reason >= 0 ? (reason == KCACHE_REASON_REJECTED ? C_BAD : C_WARN) : 0);
        kt_lb_add(&b, "%s", reason >= 0 ? kt_reason_word(reason) : "-");
        kt_draw(y++, b.s, at == V.sel && V.focus == 0 ? kt_attr[C_SEL] : 0, at == V.sel && V.focus == 0);
    }
    free(us);
    kt_draw(LINES - 1,
            K.utf8 ? " q quit  p pause  s sort  Enter detail  Tab switch list  \xe2\x86\x91\xe2\x86\x93 PgUp PgDn scroll  ? help"
                   : " q quit  p pause  s sort  Enter detail  Tab switch list  arrows PgUp PgDn scroll  ? help",
            kt_attr[C_TITLE], 1);
}

static kt_unit *kt_unit_by_hash(uint64_t h) { return kt_unit_get(h, 0); }

static void kt_build_detail(void) {
    kt_unit *u = kt_unit_by_hash(V.detail_hash);
    kt_lines_free(&V.detail);
    if (u) kt_detail(&V.detail, u);
    else kt_line(&V.detail, C_BAD, "unit not found");
}

static void kt_draw_lines(const kt_lines *L, size_t *top, const char *title, const char *keys) {
    int rows = LINES - 2, i;
    kt_draw_title(title);
    if (L->n <= (size_t)rows) *top = 0;
    else if (*top > L->n - (size_t)rows) *top = L->n - (size_t)rows;
    for (i = 0; i < rows; i++) {
        size_t at = *top + (size_t)i;
        if (at < L->n) kt_draw(1 + i, L->v[at], 0, 0);
    }
    kt_draw(LINES - 1, keys, kt_attr[C_TITLE], 1);
}

static void kt_help(kt_lines *L) {
    size_t i;
    kt_line(L, C_HEAD, "kcache-top: a live view of a kcache store");
    kt_line(L, 0, "%s", "");
    for (i = 0; i < sizeof kt_keys / sizeof kt_keys[0]; i++) kt_line(L, 0, "%s", kt_keys[i]);
    kt_line(L, 0, "%s", "");
    kt_line(L, 0, "  Every process using the store publishes its counters and events in DIR/stats;");
    kt_line(L, 0, "  kcache-top only reads it, config.file and the index logs. Rates are per second");
    kt_line(L, 0, "  over the refresh interval (-d); memory hits appear in the event log sampled");
    kt_line(L, 0, "  (at most one per entry and second); per-unit counts cover the processes seen");
    kt_line(L, 0, "  while kcache-top runs.");
}

static void kt_render(void) {
    erase();
    if (LINES < 8 || COLS < 40) {
        mvaddstr(0, 0, "kcache-top: terminal too small");
    } else if (!K.rd) {
        char line[600];
        K.wall = kt_wall_ns();
        kt_draw_title("waiting");
        snprintf(line, sizeof line, " %.500s does not exist yet: waiting for it to appear", K.dir);
        kt_draw(2, line, kt_attr[C_WARN], 0);
        kt_draw(3, " (a program makes it when it first uses the store; kcache-top shows it then)", kt_attr[C_DIM], 0);
        kt_draw(5, " q quit", kt_attr[C_DIM], 0);
    } else if (V.view == V_DETAIL) {
        kt_draw_lines(&V.detail, &V.d_top, "(unit)", " Esc back  q quit  p pause  Up Down PgUp PgDn scroll");
    } else if (V.view == V_HELP) {
        kt_lines L;
        size_t top = 0;
        memset(&L, 0, sizeof L);
        kt_help(&L);
        kt_draw_lines(&L, &top, "(help)", " any key: back");
        kt_lines_free(&L);
    } else {
        kt_draw_main();
    }
    refresh();
}

static void kt_scroll(int key) {
    int page = LINES - 2 > 1 ? LINES - 4 : 1;
    size_t *p;
    if (V.view == V_DETAIL) p = &V.d_top;
    else if (V.focus == 1) p = &V.ev_top;
    else p = &V.sel;
    switch (key) {
    case KEY_UP: if (*p) (*p)--; break;
    case KEY_DOWN: (*p)++; break;
    case KEY_PPAGE: *p = *p > (size_t)page ? *p - (size_t)page : 0; break;
    case KEY_NPAGE: *p += (size_t)page; break;
    case KEY_HOME: *p = 0; break;
    case KEY_END: *p = (size_t)-1 / 2; break;
    default: break;
    }
    if (V.view == V_MAIN && V.focus == 0) {
        size_t n;
        kt_unit **us = kt_sorted_units(&n);
        if (V.sel >= n) V.sel = n ? n - 1 : 0;
        if (n) V.sel_hash = us[V.sel]->hash;
        free(us);
    }
    if (V.view == V_DETAIL && V.d_top > V.detail.n) V.d_top = V.detail.n;
}

static int kt_attach(void);
static int kt_interactive(void) {
    int quit = 0, rc = 0;
    long refreshes = 1;
    if (K.rd != NULL) kt_sample();
    initscr();
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    kt_colors();
    memset(&V, 0, sizeof V);
    V.next = kt_mono() + K.interval;
    kt_render();
    while (!quit) {
        double now = kt_mono();
        int ms = (int)((V.next - now) * 1000.0), ch;
        if (ms < 0) ms = 0;
        timeout(ms);
        ch = getch();
        if (ch != ERR) {
            if (V.view == V_HELP && ch != KEY_RESIZE) {
                V.view = V_MAIN;
                if (ch == 'q' || ch == 'Q') quit = 1;
            } else {
                switch (ch) {
                case 'q': case 'Q': quit = 1; break;
                case 'p': case 'P': V.paused = !V.paused; break;
                case 's': case 'S': K.sort = (K.sort + 1) % SORT_N; V.top = 0; break;
                case '?': case 'h': V.view = V_HELP; break;
                case '\t': if (V.view == V_MAIN) V.focus = !V.focus; break;
                case '\n': case '\r': case KEY_ENTER:
                    if (V.view == V_MAIN && V.focus == 0 && V.sel_hash) {
                        V.detail_hash = V.sel_hash;
                        V.d_top = 0;
                        kt_build_detail();
                        V.view = V_DETAIL;
                    }
                    break;
                case 27: case KEY_BACKSPACE: case 127: case KEY_LEFT:
                    if (V.view == V_DETAIL) V.view = V_MAIN;
                    break;
                case KEY_RESIZE: clearok(stdscr, TRUE); break;
                case KEY_UP: case KEY_DOWN: case KEY_PPAGE: case KEY_NPAGE: case KEY_HOME: case KEY_END: kt_scroll(ch); break;
                default: break;
                }
            }
            if (!quit) kt_render();
            continue;
        }
        if (kt_mono() + 0.001 >= V.next) {
            int was = K.rd != NULL, at = kt_attach(); /* (waiting for the store to appear) */
            if (at == 2) { quit = 1; rc = 2; }
            if (at == 0 && (!V.paused || !was)) {
                kt_sample();
                if (V.view == V_DETAIL) kt_build_detail();
                refreshes++;
                if (K.iterations > 0 && refreshes >= K.iterations) quit = 1;
            }
            V.next += K.interval;
            if (V.next < kt_mono()) V.next = kt_mono() + K.interval;
            if (at == 1 && K.iterations > 0 && ++refreshes >= K.iterations) quit = 1;
            kt_render();
        }
    }
    endwin();
    kt_lines_free(&V.detail);
    if (!K.rd && rc == 0) {
        fprintf(stderr, "kcache-top: %s never appeared\n", K.dir);
        rc = 2;
    }
    return rc;
}
#define KT_INTERACTIVE 1
#else
#define KT_INTERACTIVE 0 /* (main says so before it starts anything) */
#endif /* KCACHE_TOP_NO_CURSES */

/* ---------------------------------------------------------------------------------------------- */

/* Opens the store directory once it is there: 0 attached; 1 not there yet (kcache-top was started
   before the first program that uses the store: it waits); 2 an error, said on stderr. */
static int kt_attach(void) {
    struct stat sb;
    DIR *dp;
    if (K.rd != NULL) return 0;
    if (stat(K.dir, &sb) != 0) {
        if (errno == ENOENT) return 1;
        ktext_eprintf("kcache-top: %s: %s\n", K.dir, strerror(errno));
        return 2;
    }
    if (!S_ISDIR(sb.st_mode)) { ktext_eprintf("kcache-top: %s: not a directory\n", K.dir); return 2; }
    if ((dp = opendir(K.dir)) == NULL) { ktext_eprintf("kcache-top: %s: cannot read it: %s\n", K.dir, strerror(errno)); return 2; }
    closedir(dp);
    if (kcache_reader_open(&K.rd, K.dir) != KCACHE_OK) { /* (its owner is whom its files are trusted from) */
        ktext_eprintf("kcache-top: %s: cannot open it: %s\n", K.dir, strerror(errno));
        return 2;
    }
    return 0;
}

static void kt_usage(FILE *f) {
    size_t i;
    fprintf(f, "usage: kcache-top [-b] [-n N] [-d SECONDS] [-s hits|misses|size|last] [-U UNIT] [-a] [DIR]\n"
               "       kcache-top -b --json|--prometheus [--output FILE] [-n N] [-d SECONDS] [DIR]\n"
               "  DIR        the store, or a KCACHE_STATS_DIR (default: KCACHE_DIR, else $XDG_CACHE_HOME/kcache,\n"
               "             else ~/.cache/kcache)\n"
               "  -b         batch: plain-text snapshots on stdout\n"
               "  --json     batch: one JSON object per line and snapshot (every counter, the shard table)\n"
               "  --prometheus  batch: Prometheus's text format (kcache_hits_total{tier=...}, ...)\n"
               "  --output FILE  with --json or --prometheus: each snapshot replaces FILE atomically\n"
               "             (node_exporter's textfile collector: FILE ending in .prom in its directory)\n"
               "  -n N       snapshots (batch; default 1) or refreshes before exiting (interactive)\n"
               "  -d SECS    refresh interval (default 2)\n"
               "  -s KEY     sort the units by hits, misses, size or last (use)\n"
               "  -U UNIT    batch: the unit's detail instead of the snapshot\n"
               "  -a         ASCII only (no UTF-8 sparklines)\n"
               "  -h, --help this text\n"
               "keys (interactive):\n");
    for (i = 0; i < sizeof kt_keys / sizeof kt_keys[0]; i++) fprintf(f, "%s\n", kt_keys[i]);
    fprintf(f, "kcache-top only reads DIR: it never writes, locks or repairs anything there.\n"
               "Started before DIR exists, it waits for it to appear (batch: each snapshot waits -d).\n"
               "exit status: 0; 2 for a usage error, a directory that never appeared or cannot be read, or an\n"
               "  interactive run without a terminal\n");
}

int main(int argc, char **argv) {
    int i, s;
    const char *dir = NULL;
    struct sigaction sa;
    kcache_config cfg;
    memset(&K, 0, sizeof K);
    K.interval = 2.0;
    K.iterations = -1;
    K.color = 1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { kt_usage(stdout); return 0; }
        if (strcmp(a, "-b") == 0) { K.batch = 1; continue; }
        if (strcmp(a, "--json") == 0 || strcmp(a, "--prometheus") == 0) {
            int f = a[2] == 'j' ? KT_JSON : KT_PROMETHEUS;
            if (K.format && K.format != f) { fprintf(stderr, "kcache-top: --json or --prometheus, not both\n"); return 2; }
            K.format = f;
            K.batch = 1; /* (machine-readable output is batch output) */
            continue;
        }
        if (strcmp(a, "--output") == 0 || strncmp(a, "--output=", 9) == 0) {
            K.output = a[8] == '=' ? a + 9 : i + 1 < argc ? argv[++i] : NULL;
            if (!K.output || !*K.output) { fprintf(stderr, "kcache-top: --output needs a file\n"); return 2; }
            continue;
        }
        if (strcmp(a, "-a") == 0) { K.ascii = 1; continue; }
        if (strcmp(a, "--") == 0) { if (i + 1 < argc) dir = argv[++i]; continue; }
        if (a[0] == '-' && a[1] && strchr("ndsU", a[1]) && !a[2]) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            char *end;
            if (!v) { ktext_eprintf("kcache-top: %s needs a value\n", a); kt_usage(stderr); return 2; }
            if (a[1] == 'n') {
                K.iterations = strtol(v, &end, 10);
                if (end == v || *end || K.iterations < 1) { fprintf(stderr, "kcache-top: -n wants a count of 1 or more\n"); return 2; }
            } else if (a[1] == 'd') {
                K.interval = strtod(v, &end);
                if (end == v || *end || !(K.interval >= 0.05) || K.interval > 86400) {
                    fprintf(stderr, "kcache-top: -d wants seconds from 0.05 to 86400\n");
                    return 2;
                }
            } else if (a[1] == 's') {
                for (s = 0; s < SORT_N && strcmp(v, kt_sort_name[s]) != 0; s++) {
                }
                if (s == SORT_N) { fprintf(stderr, "kcache-top: -s wants hits, misses, size or last\n"); return 2; }
                K.sort = s;
            } else {
                K.detail_unit = v;
            }
            continue;
        }
        if (a[0] == '-' && a[1]) { ktext_eprintf("kcache-top: unknown option %s\n", a); kt_usage(stderr); return 2; }
        if (dir) { fprintf(stderr, "kcache-top: one directory only\n"); return 2; }
        dir = a;
    }
    kcache_config_init(&cfg);
    K.stamp_policy = cfg.stamp;
    if (!dir) dir = cfg.dir;
    if (!dir || !*dir) {
        if (kcache_default_dir(K.dir, sizeof K.dir) != KCACHE_OK) { fprintf(stderr, "kcache-top: no directory given and no KCACHE_DIR, XDG_CACHE_HOME or HOME\n"); return 2; }
    } else if (strlen(dir) >= sizeof K.dir) {
        fprintf(stderr, "kcache-top: the path is too long\n");
        return 2;
    } else {
        strcpy(K.dir, dir);
    }
    if (!K.batch && !KT_INTERACTIVE) { fprintf(stderr, "kcache-top: built without curses: only -b\n"); return 2; }
    if (K.detail_unit && !K.batch) { fprintf(stderr, "kcache-top: -U is for batch mode (-b); interactively, press Enter on a unit\n"); return 2; }
    if (K.detail_unit && K.format) { fprintf(stderr, "kcache-top: -U shows a unit as text; --json and --prometheus show the counters\n"); return 2; }
    if (K.output && !K.format) { fprintf(stderr, "kcache-top: --output goes with --json or --prometheus\n"); return 2; }
    if ((s = kt_attach()) == 2) return 2;
    if (s == 1 && !K.batch) ktext_eprintf("kcache-top: %s does not exist yet; waiting for it (a program makes it when it first uses the store)\n", K.dir);
    K.ev = (kt_event *)malloc(KT_EVENTS * sizeof *K.ev);
    if (!K.ev) return 1;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = kt_on_bus;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    if (K.output) { /* no temp file left behind when stopped between its creation and the rename */
        sa.sa_handler = kt_on_term;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
    }
    setlocale(LC_ALL, "");
    K.utf8 = !K.ascii && strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
    if (K.batch) {
        long n = K.iterations > 0 ? K.iterations : 1, it;
        int write_failed = 0;
        setvbuf(stdout, NULL, _IOFBF, 0);
        for (it = 1; it <= n; it++) {
            kt_lines L;
            size_t j;
            memset(&L, 0, sizeof L);
            if ((s = kt_attach()) == 2) return 2;
            if (K.format) { /* one JSON object per line, or one exposition, per snapshot */
                kt_buf o;
                memset(&o, 0, sizeof o);
                if (s == 0) kt_sample();
                else K.wall = kt_wall_ns();
                if (K.format == KT_JSON) kt_json(&o, s == 0);
                else kt_prometheus(&o, s == 0);
                if (o.failed) { fprintf(stderr, "kcache-top: out of memory\n"); return 2; }
                if (K.output) write_failed |= !kt_write_atomic(K.output, &o);
                else {
                    if (it > 1 && K.format == KT_PROMETHEUS) printf("\n");
                    fwrite(o.s, 1, o.n, stdout);
                    fflush(stdout);
                }
                free(o.s);
                if (s == 1 && it == n) {
                    ktext_eprintf("kcache-top: %s never appeared\n", K.dir);
                    return 2;
                }
                if (it < n) {
                    double until = kt_mono() + K.interval;
                    while (kt_mono() < until) kt_sleep(until - kt_mono());
                }
                continue;
            }
            if (s == 1) {
                char t1[48];
                K.wall = kt_wall_ns();
                kt_line(&L, 0, "kcache-top snapshot %d of %d  %s  dir %s", (int)it, (int)n, kt_time(K.wall, 1, t1, sizeof t1), K.dir);
                if (it < n) kt_line(&L, 0, "store      none yet: %s does not exist; waiting for a program to make it", K.dir);
                else kt_line(&L, 0, "store      never appeared: %s still does not exist after %ld snapshot(s)", K.dir, n);
            } else if (K.detail_unit) {
                kt_sample();
                kt_unit *u = kt_find_unit(K.detail_unit);
                if (u) kt_detail(&L, u);
                else {
                    kt_unit tmp;
                    memset(&tmp, 0, sizeof tmp);
                    snprintf(tmp.name, sizeof tmp.name, "%s", K.detail_unit);
                    tmp.full_name = 1;
                    tmp.hash = kt_unit_hash(K.detail_unit);
                    tmp.last_reason = tmp.traced_reason = -1;
                    kt_detail(&L, &tmp);
                }
            } else {
                kt_sample();
                kt_snapshot(&L, (int)it, (int)n);
            }
            for (j = 0; j < L.n; j++) kt_print_plain(stdout, L.v[j]);
            if (it < n) printf("\n");
            fflush(stdout);
            kt_lines_free(&L);
            if (s == 1 && it == n) return 2; /* the store never came */
            if (it < n) {
                double until = kt_mono() + K.interval;
                while (kt_mono() < until) kt_sleep(until - kt_mono());
            }
        }
        return write_failed ? 2 : 0;
    }
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
        fprintf(stderr, "kcache-top: not a terminal; use -b for batch mode\n");
        return 2;
    }
    if (!K.utf8) K.ascii = 1;
#if KT_INTERACTIVE
    return kt_interactive();
#else
    return 2;
#endif
}
#endif /* KCACHE_TOP_NO_MAIN */
