/* test_windows.c - kcache's Win32 platform layer, on Windows or under wine (scripts/windows.sh).
 *
 * No fork on Windows: the cross-process checks start this program again with CreateProcessW
 * ("test_windows.exe child DIR", "test_windows.exe hold DIR EVENT EVENT"). Everything happens in
 * a fresh directory under %TEMP%, removed at the end. */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#ifndef _WIN32
#error "test_windows.c is a Windows program (scripts/windows.sh builds it with mingw-w64)"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <shellapi.h>
#include <io.h>
#include <fcntl.h>

static char g_root[1024];    /* the test's temp directory, UTF-8 */
static WCHAR g_rootw[1024];  /* ... and as UTF-16 */
static WCHAR g_self[1024];   /* this program */
static int g_seq;

/* ---- helpers ---- */

static void to_wide(const char *s, WCHAR *out, int cap) {
    if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, out, cap) <= 0) out[0] = 0;
}

/* A fresh directory name under the root (not created). */
static void new_dir(char *out, size_t cap, const char *tag) {
    snprintf(out, cap, "%s\\%s-%d", g_root, tag, ++g_seq);
}

static void cfg_for(kcache_config *cfg, const char *dir) {
    kcache_config_init(cfg);
    cfg->dir = dir;
    cfg->persistent = 1;
    cfg->enable = 1;
    cfg->max_size = 0;
    cfg->debug = 0;
    cfg->lock_timeout_ms = 10000;
}

static kcache *open_at(const char *dir) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_status s;
    cfg_for(&cfg, dir);
    s = kcache_open(&kc, &cfg);
    KT_CHECK_MSG(s == KCACHE_OK && kc, "kcache_open(%s): %s", dir, kcache_strerror(s));
    if (s != KCACHE_OK) return NULL;
    /* kcache_open falls back to memory only: every disk check needs the store */
    KT_CHECK_MSG(kcache_dir(kc) && kcache_dir(kc)[0], "%s: opened in memory only", dir);
    return kc;
}

static void key_for(kcache_key *k, const char *unit, const char *name) {
    kcache_key_init(k, unit);
    kcache_key_str(k, "name", name);
    kcache_key_u64(k, "version", 7);
}

/* The payload a test stores under a name: derived from it, so a reader can check it. */
static size_t payload_for(const char *name, unsigned char *buf, size_t n) {
    kcache_hash128 h = kcache_hash(name, strlen(name));
    size_t i;
    for (i = 0; i < n; i++) {
        buf[i] = (unsigned char)(h.lo >> (8 * (i % 8))) ^ (unsigned char)i;
        if (i % 8 == 7) h.lo = h.lo * 6364136223846793005ULL + h.hi;
    }
    return n;
}

static kcache_status put_named(kcache *kc, const char *unit, const char *name, size_t n) {
    kcache_key k;
    unsigned char *buf = (unsigned char *)malloc(n ? n : 1);
    kcache_status s;
    if (!buf) return KCACHE_ENOMEM;
    payload_for(name, buf, n);
    key_for(&k, unit, name);
    s = kcache_put(kc, &k, buf, n);
    kcache_key_free(&k);
    free(buf);
    return s;
}

/* KCACHE_OK when the entry is there with the right payload, KCACHE_ECORRUPT when its bytes are
   wrong, else get's status. */
static kcache_status get_named(kcache *kc, const char *unit, const char *name, size_t n) {
    kcache_key k;
    const void *data = NULL;
    size_t size = 0;
    kcache_status s;
    key_for(&k, unit, name);
    s = kcache_get(kc, &k, &data, &size);
    kcache_key_free(&k);
    if (s == KCACHE_OK) {
        unsigned char *want = (unsigned char *)malloc(n ? n : 1);
        if (!want || size != n || (payload_for(name, want, n), memcmp(want, data, n) != 0)) s = KCACHE_ECORRUPT;
        free(want);
        kcache_release(kc, data);
    }
    return s;
}

static int exists_w(const WCHAR *path) { return GetFileAttributesW(path) != INVALID_FILE_ATTRIBUTES; }

static void rm_tree(const WCHAR *dir) {
    WCHAR pat[2048], sub[2048];
    WIN32_FIND_DATAW fd;
    HANDLE h;
    _snwprintf(pat, 2048, L"%ls\\*", dir);
    pat[2047] = 0;
    h = FindFirstFileW(pat, &fd);
    if (h != INVALID_HANDLE_VALUE) {
        do {
            if (!wcscmp(fd.cFileName, L".") || !wcscmp(fd.cFileName, L"..")) continue;
            _snwprintf(sub, 2048, L"%ls\\%ls", dir, fd.cFileName);
            sub[2047] = 0;
            if ((fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) && !(fd.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT))
                rm_tree(sub);
            else if (fd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
                RemoveDirectoryW(sub);
            else {
                SetFileAttributesW(sub, FILE_ATTRIBUTE_NORMAL);
                DeleteFileW(sub);
            }
        } while (FindNextFileW(h, &fd));
        FindClose(h);
    }
    RemoveDirectoryW(dir);
}

/* Finds the one .kce file under DIR\e (the first found); 0 when none. */
static int find_entry(const char *dir, WCHAR *out, size_t cap) {
    WCHAR pat[1024], sub[1024];
    WIN32_FIND_DATAW sd, ed;
    HANDLE hs, he;
    int found = 0;
    to_wide(dir, sub, 1024);
    _snwprintf(pat, 1024, L"%ls\\e\\*", sub);
    pat[1023] = 0;
    hs = FindFirstFileW(pat, &sd);
    if (hs == INVALID_HANDLE_VALUE) return 0;
    do {
        WCHAR epat[1024];
        if (sd.cFileName[0] == L'.' || !(sd.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) continue;
        _snwprintf(epat, 1024, L"%ls\\e\\%ls\\*.kce", sub, sd.cFileName);
        epat[1023] = 0;
        he = FindFirstFileW(epat, &ed);
        if (he != INVALID_HANDLE_VALUE) {
            _snwprintf(out, cap, L"%ls\\e\\%ls\\%ls", sub, sd.cFileName, ed.cFileName);
            out[cap - 1] = 0;
            found = 1;
            FindClose(he);
        }
    } while (!found && FindNextFileW(hs, &sd));
    FindClose(hs);
    return found;
}

/* Starts this program with the given arguments: its process handle, NULL if it could not. */
static HANDLE spawn(const WCHAR *args) {
    WCHAR cmd[4096];
    STARTUPINFOW si;
    PROCESS_INFORMATION pi;
    _snwprintf(cmd, 4096, L"\"%ls\" %ls", g_self, args);
    cmd[4095] = 0;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    fflush(stdout);
    if (!CreateProcessW(g_self, cmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi)) return NULL;
    CloseHandle(pi.hThread);
    return pi.hProcess;
}
/* Its exit code (-1: never started; 98: killed after two minutes). */
static int wait_exit(HANDLE p) {
    DWORD code = 99;
    if (!p) return -1;
    if (WaitForSingleObject(p, 120000) != WAIT_OBJECT_0) { TerminateProcess(p, 98); code = 98; }
    else GetExitCodeProcess(p, &code);
    CloseHandle(p);
    return (int)code;
}

/* ---- child modes (another process) ---- */

#define XPROC_N 8

/* "child DIR": reads what the parent put, puts its own; exit 0 when all was right. */
static int child_main(const char *dir) {
    kcache *kc;
    kcache_config cfg;
    char name[64];
    int i, bad = 0;
    cfg_for(&cfg, dir);
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return 10;
    for (i = 0; i < XPROC_N; i++) {
        snprintf(name, sizeof name, "parent-%d", i);
        if (get_named(kc, "xproc", name, 1000 + (size_t)i * 77) != KCACHE_OK) bad++;
    }
    for (i = 0; i < XPROC_N; i++) {
        snprintf(name, sizeof name, "child-%d", i);
        if (put_named(kc, "xproc", name, 3000 + (size_t)i * 13) != KCACHE_OK) bad++;
    }
    if (kcache_verify(kc, 0) != KCACHE_OK) bad++;
    kcache_close(kc);
    return bad ? 20 + (bad > 50 ? 50 : bad) : 0;
}

/* "hold DIR HELD RELEASE": takes byte 0 of DIR\lock (the store lock) as another kcache would,
   signals HELD, and keeps it until RELEASE is signalled (or 60 s pass). */
static int hold_main(const char *dir, const char *held, const char *release) {
    WCHAR path[1024], wd[1024], wh[128], wr[128];
    HANDLE f, eh, er;
    OVERLAPPED ov;
    to_wide(dir, wd, 1024);
    to_wide(held, wh, 128);
    to_wide(release, wr, 128);
    _snwprintf(path, 1024, L"%ls\\lock", wd);
    path[1023] = 0;
    f = CreateFileW(path, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING, 0, NULL);
    if (f == INVALID_HANDLE_VALUE) return 30;
    memset(&ov, 0, sizeof ov);
    if (!LockFileEx(f, LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ov)) return 31;
    eh = OpenEventW(EVENT_MODIFY_STATE, FALSE, wh);
    er = OpenEventW(SYNCHRONIZE, FALSE, wr);
    if (!eh || !er) return 32;
    SetEvent(eh);
    WaitForSingleObject(er, 60000);
    CloseHandle(f); /* releases the lock */
    return 0;
}

/* ---- the checks ---- */

static void memory_only(void) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK && kc);
    if (!kc) return;
    KT_CHECK(kcache_dir(kc) == NULL || kcache_dir(kc)[0] == 0);
    KT_CHECK(get_named(kc, "mem", "a", 100) == KCACHE_MISS);
    KT_CHECK(put_named(kc, "mem", "a", 100) == KCACHE_OK);
    KT_CHECK(put_named(kc, "mem", "b", 0) == KCACHE_OK);
    KT_CHECK(get_named(kc, "mem", "a", 100) == KCACHE_OK);
    KT_CHECK(get_named(kc, "mem", "b", 0) == KCACHE_OK);
    KT_CHECK(get_named(kc, "mem", "c", 100) == KCACHE_MISS);
    kcache_close(kc);
}

static void disk_put_get(void) {
    char dir[1024];
    kcache *kc;
    kcache_stats st;
    WCHAR w[1024], e[1024];
    new_dir(dir, sizeof dir, "disk");
    kc = open_at(dir);
    if (!kc) return;
    KT_CHECK(get_named(kc, "disk", "x", 5000) == KCACHE_MISS);
    KT_CHECK(put_named(kc, "disk", "x", 5000) == KCACHE_OK);
    KT_CHECK(put_named(kc, "disk", "empty", 0) == KCACHE_OK);
    KT_CHECK(get_named(kc, "disk", "x", 5000) == KCACHE_OK);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.disk_entries, 2);
    KT_CHECK_EQ_U64(st.store_errors, 0);
    kcache_close(kc);
    /* the store's layout, spelled with backslashes */
    to_wide(dir, w, 1024);
    _snwprintf(e, 1024, L"%ls\\config.file", w);
    KT_CHECK(exists_w(e));
    _snwprintf(e, 1024, L"%ls\\lock", w);
    KT_CHECK(exists_w(e));
    KT_CHECK(find_entry(dir, e, 1024));
}

/* Read-only layers (KCACHE_LAYERS): ';' between them (paths have a colon), a hit from the second
   one copied into the store, nothing made in either layer. */
static void layers(void) {
    char la[1024], lb[1024], local[1024], spec[2100];
    WCHAR w[1024], e[1024];
    kcache_config cfg;
    kcache_stats st;
    kcache *kc;
    new_dir(la, sizeof la, "layer-a");
    new_dir(lb, sizeof lb, "layer-b");
    new_dir(local, sizeof local, "layer-local");
    if (!(kc = open_at(la))) return;
    KT_CHECK(put_named(kc, "lay", "one", 3000) == KCACHE_OK);
    kcache_close(kc);
    if (!(kc = open_at(lb))) return;
    KT_CHECK(put_named(kc, "lay", "two", 4000) == KCACHE_OK);
    kcache_close(kc);
    to_wide(lb, w, 1024);
    _snwprintf(e, 1024, L"%ls\\lock", w);
    KT_CHECK(DeleteFileW(e)); /* a layer has none (kcache-inspect --make-layer removes it): none may appear */
    snprintf(spec, sizeof spec, "%s;%s", la, lb);
    cfg_for(&cfg, local);
    cfg.layers = spec;
    kc = NULL;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK && kc);
    if (!kc) return;
    KT_CHECK(get_named(kc, "lay", "two", 4000) == KCACHE_OK);
    KT_CHECK(get_named(kc, "lay", "one", 3000) == KCACHE_OK);
    KT_CHECK(put_named(kc, "lay", "three", 100) == KCACHE_OK);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_layer, 2);
    kcache_close(kc);
    KT_CHECK(!exists_w(e));
    if (!(kc = open_at(local))) return; /* the copies */
    KT_CHECK(get_named(kc, "lay", "two", 4000) == KCACHE_OK);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_disk, 1);
    kcache_close(kc);
    if (!(kc = open_at(lb))) return; /* the layer got nothing */
    KT_CHECK(get_named(kc, "lay", "three", 100) == KCACHE_MISS);
    kcache_close(kc);
}

static void persistence(void) {
    char dir[1024];
    kcache *a, *b;
    kcache_stats st;
    int i;
    char name[32];
    new_dir(dir, sizeof dir, "persist");
    a = open_at(dir);
    if (!a) return;
    for (i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "k%d", i);
        KT_CHECK(put_named(a, "persist", name, 100 + (size_t)i * 500) == KCACHE_OK);
    }
    kcache_close(a);
    b = open_at(dir);
    if (!b) return;
    for (i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "k%d", i);
        KT_CHECK_MSG(get_named(b, "persist", name, 100 + (size_t)i * 500) == KCACHE_OK, "%s not read back", name);
    }
    kcache_get_stats(b, &st);
    KT_CHECK_EQ_U64(st.hits_disk, 20);
    KT_CHECK_EQ_U64(st.hits_mem, 0);
    /* two objects open at once on one store: a put through one is a disk hit in the other */
    a = open_at(dir);
    if (a) {
        KT_CHECK(put_named(a, "persist", "both", 777) == KCACHE_OK);
        KT_CHECK(get_named(b, "persist", "both", 777) == KCACHE_OK);
        kcache_close(a);
    }
    KT_CHECK(kcache_remove(b, NULL) == KCACHE_EINVAL);
    kcache_close(b);
}

static void second_process(void) {
    char dir[1024], name[64];
    WCHAR args[1200], wd[1024];
    kcache *kc;
    int i, code;
    new_dir(dir, sizeof dir, "xproc");
    kc = open_at(dir);
    if (!kc) return;
    for (i = 0; i < XPROC_N; i++) {
        snprintf(name, sizeof name, "parent-%d", i);
        KT_CHECK(put_named(kc, "xproc", name, 1000 + (size_t)i * 77) == KCACHE_OK);
    }
    to_wide(dir, wd, 1024);
    _snwprintf(args, 1200, L"child \"%ls\"", wd);
    code = wait_exit(spawn(args)); /* the parent keeps its kcache open meanwhile */
    KT_CHECK_MSG(code == 0, "child exited with %d", code);
    for (i = 0; i < XPROC_N; i++) {
        snprintf(name, sizeof name, "child-%d", i);
        KT_CHECK_MSG(get_named(kc, "xproc", name, 3000 + (size_t)i * 13) == KCACHE_OK, "%s (the child's) not read", name);
    }
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
}

typedef struct {
    const char *dir;
    volatile LONG *released;
    kcache_status status;
    LONG released_at_return;
} putter;
static DWORD WINAPI putter_main(void *arg) {
    putter *p = (putter *)arg;
    kcache_config cfg;
    kcache *kc = NULL;
    cfg_for(&cfg, p->dir);
    cfg.lock_timeout_ms = 60000;
    p->status = kcache_open(&kc, &cfg);
    if (p->status == KCACHE_OK) p->status = put_named(kc, "lock", "waited", 4321);
    p->released_at_return = InterlockedCompareExchange(p->released, 0, 0);
    if (kc) kcache_close(kc);
    return 0;
}

static void lock_held_elsewhere(void) {
    char dir[1024], held[64], rel[64];
    WCHAR args[1400], wd[1024], wh[64], wr[64];
    HANDLE eh, er, child, th;
    kcache *kc, *quick;
    kcache_config cfg;
    volatile LONG released = 0;
    putter p;
    int code;
    new_dir(dir, sizeof dir, "lock");
    kc = open_at(dir); /* makes the store and its lock file */
    if (!kc) return;
    snprintf(held, sizeof held, "kcache-test-held-%lu", (unsigned long)GetCurrentProcessId());
    snprintf(rel, sizeof rel, "kcache-test-release-%lu", (unsigned long)GetCurrentProcessId());
    to_wide(held, wh, 64);
    to_wide(rel, wr, 64);
    eh = CreateEventW(NULL, TRUE, FALSE, wh);
    er = CreateEventW(NULL, TRUE, FALSE, wr);
    to_wide(dir, wd, 1024);
    _snwprintf(args, 1400, L"hold \"%ls\" %ls %ls", wd, wh, wr);
    child = spawn(args);
    KT_CHECK(child != NULL);
    if (!child || WaitForSingleObject(eh, 60000) != WAIT_OBJECT_0) {
        KT_FAILF("the holder never took the lock");
        SetEvent(er);
        wait_exit(child);
        kcache_close(kc);
        return;
    }
    /* a short lock timeout: the put gives up (ELOCK, kept in memory only), no hang */
    cfg_for(&cfg, dir);
    cfg.lock_timeout_ms = 50;
    quick = NULL;
    KT_CHECK(kcache_open(&quick, &cfg) == KCACHE_OK);
    if (quick) {
        kcache_stats st;
        KT_CHECK(put_named(quick, "lock", "given-up", 2000) == KCACHE_ELOCK);
        KT_CHECK(get_named(quick, "lock", "given-up", 2000) == KCACHE_OK); /* from memory */
        kcache_get_stats(quick, &st);
        KT_CHECK(st.store_errors >= 1);
        kcache_close(quick);
    }
    KT_CHECK(get_named(kc, "lock", "given-up", 2000) == KCACHE_MISS); /* never reached the store */
    /* a long one: the put waits for the holder, then succeeds */
    p.dir = dir;
    p.released = &released;
    p.status = KCACHE_EIO;
    p.released_at_return = -1;
    th = CreateThread(NULL, 0, putter_main, &p, 0, NULL);
    KT_CHECK(th != NULL);
    Sleep(500); /* time for the put to reach the lock; were it not blocked, it would be done */
    InterlockedExchange(&released, 1);
    SetEvent(er);
    code = wait_exit(child);
    KT_CHECK_MSG(code == 0, "holder exited with %d", code);
    if (th) {
        WaitForSingleObject(th, INFINITE);
        CloseHandle(th);
    }
    KT_CHECK_MSG(p.status == KCACHE_OK, "put behind the lock: %s", kcache_strerror(p.status));
    KT_CHECK_MSG(p.released_at_return == 1, "the put finished while another process held the store lock");
    KT_CHECK(get_named(kc, "lock", "waited", 4321) == KCACHE_OK);
    CloseHandle(eh);
    CloseHandle(er);
    kcache_close(kc);
}

static void corrupt_entry(void) {
    char dir[1024];
    WCHAR path[1024];
    kcache *kc;
    kcache_stats st;
    HANDLE f;
    new_dir(dir, sizeof dir, "corrupt");
    kc = open_at(dir);
    if (!kc) return;
    KT_CHECK(put_named(kc, "bad", "victim", 4096) == KCACHE_OK);
    kcache_close(kc);
    KT_CHECK(find_entry(dir, path, 1024));
    f = CreateFileW(path, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING, 0, NULL);
    KT_CHECK(f != INVALID_HANDLE_VALUE);
    if (f != INVALID_HANDLE_VALUE) { /* flip a payload byte: the file's last */
        LARGE_INTEGER sz, at;
        unsigned char c = 0;
        DWORD n = 0;
        GetFileSizeEx(f, &sz);
        at.QuadPart = sz.QuadPart - 1;
        SetFilePointerEx(f, at, NULL, FILE_BEGIN);
        KT_CHECK(ReadFile(f, &c, 1, &n, NULL) && n == 1);
        c ^= 0x40;
        SetFilePointerEx(f, at, NULL, FILE_BEGIN);
        KT_CHECK(WriteFile(f, &c, 1, &n, NULL) && n == 1);
        CloseHandle(f);
    }
    kc = open_at(dir);
    if (!kc) return;
    KT_CHECK(get_named(kc, "bad", "victim", 4096) == KCACHE_MISS);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.rejects >= 1);
    KT_CHECK(st.misses_by_reason[KCACHE_REASON_REJECTED] >= 1);
    /* put again: the bad file is replaced */
    KT_CHECK(put_named(kc, "bad", "victim", 4096) == KCACHE_OK);
    kcache_close(kc);
    kc = open_at(dir);
    if (!kc) return;
    KT_CHECK(get_named(kc, "bad", "victim", 4096) == KCACHE_OK);
    kcache_close(kc);
}

static void eviction_and_verify(void) {
    char dir[1024], name[32];
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_stats st;
    int i, present = 0;
    new_dir(dir, sizeof dir, "evict");
    cfg_for(&cfg, dir);
    cfg.max_size = 64 * 1024;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    for (i = 0; i < 60; i++) {
        snprintf(name, sizeof name, "e%d", i);
        KT_CHECK(put_named(kc, "evict", name, 4000) == KCACHE_OK);
    }
    kcache_get_stats(kc, &st);
    KT_CHECK(st.evictions > 0);
    KT_CHECK_MSG(st.disk_bytes <= cfg.max_size, "%llu bytes stored over a limit of %llu", (unsigned long long)st.disk_bytes,
                 (unsigned long long)cfg.max_size);
    KT_CHECK(st.disk_entries > 0 && st.disk_entries < 60);
    KT_CHECK(kcache_verify(kc, 1) == KCACHE_OK);
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
    /* what the store says it holds is what a new process finds */
    kc = open_at(dir);
    if (!kc) return;
    for (i = 0; i < 60; i++) {
        kcache_status s;
        snprintf(name, sizeof name, "e%d", i);
        s = get_named(kc, "evict", name, 4000);
        KT_CHECK(s == KCACHE_OK || s == KCACHE_MISS);
        present += s == KCACHE_OK;
    }
    KT_CHECK_EQ_U64(present, st.disk_entries);
    KT_CHECK(get_named(kc, "evict", "e59", 4000) == KCACHE_OK); /* the newest survives */
    kcache_close(kc);
}

static void utf8_directory(void) {
    char dir[1024];
    WCHAR want[1024], cfgw[1100];
    kcache *kc;
    snprintf(dir, sizeof dir, "%s\\cach\xc3\xa9-\xc3\xbc\\sub", g_root); /* "caché-ü" */
    kc = open_at(dir);
    if (!kc) return;
    KT_CHECK(put_named(kc, "utf8", "v", 1234) == KCACHE_OK);
    kcache_close(kc);
    _snwprintf(want, 1024, L"%ls\\cach\x00e9-\x00fc\\sub", g_rootw);
    _snwprintf(cfgw, 1100, L"%ls\\config.file", want);
    KT_CHECK_MSG(exists_w(cfgw), "no config.file in the directory named in UTF-16");
    kc = open_at(dir);
    if (!kc) return;
    KT_CHECK(get_named(kc, "utf8", "v", 1234) == KCACHE_OK);
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
}

static void default_directory(void) {
    WCHAR lad[1024], env[1100], cfgw[1100];
    kcache *kc = NULL;
    const char *d;
    char want[1024];
    _snwprintf(lad, 1024, L"%ls\\appdata-\x00fc", g_rootw);
    CreateDirectoryW(lad, NULL);
    _snwprintf(env, 1100, L"LOCALAPPDATA=%ls", lad);
    _wputenv(env);
    _putenv("KCACHE_DIR=");
    _putenv("KCACHE_PERSISTENT=");
    _putenv("KCACHE_ENABLE=");
    KT_CHECK(getenv("KCACHE_DIR") == NULL);
    KT_CHECK(kcache_open(&kc, NULL) == KCACHE_OK && kc);
    if (!kc) return;
    d = kcache_dir(kc);
    snprintf(want, sizeof want, "%s\\appdata-\xc3\xbc\\kcache", g_root);
    KT_CHECK_STR(d, want);
    KT_CHECK(put_named(kc, "default", "v", 300) == KCACHE_OK);
    kcache_close(kc);
    _snwprintf(cfgw, 1100, L"%ls\\kcache\\config.file", lad);
    KT_CHECK(exists_w(cfgw));
    /* KCACHE_DIR still wins */
    {
        char other[1024], envs[1100];
        new_dir(other, sizeof other, "override");
        snprintf(envs, sizeof envs, "KCACHE_DIR=%s", other);
        _putenv(envs);
        kc = NULL;
        KT_CHECK(kcache_open(&kc, NULL) == KCACHE_OK && kc);
        if (kc) {
            KT_CHECK_STR(kcache_dir(kc), other);
            kcache_close(kc);
        }
        _putenv("KCACHE_DIR=");
    }
    /* no LOCALAPPDATA: memory only, still working */
    _putenv("LOCALAPPDATA=");
    kc = NULL;
    KT_CHECK(kcache_open(&kc, NULL) == KCACHE_OK && kc);
    if (kc) {
        KT_CHECK(kcache_dir(kc) == NULL || kcache_dir(kc)[0] == 0);
        KT_CHECK(put_named(kc, "default", "m", 10) == KCACHE_OK);
        KT_CHECK(get_named(kc, "default", "m", 10) == KCACHE_OK);
        kcache_close(kc);
    }
}

static void dependency_stamp(void) {
    char dir[1024], src[1024];
    WCHAR srcw[1024];
    kcache *kc;
    kcache_key k;
    FILE *f;
    const void *data;
    size_t size;
    new_dir(dir, sizeof dir, "stamp");
    snprintf(src, sizeof src, "%s\\kernel-\xc3\xa9.cl", g_root);
    to_wide(src, srcw, 1024);
    f = _wfopen(srcw, L"wb");
    KT_CHECK(f != NULL);
    if (!f) return;
    fputs("kernel void k(void) {}\n", f);
    fclose(f);
    kc = open_at(dir);
    if (!kc) return;
    kcache_key_init(&k, "stamp");
    KT_CHECK(kcache_key_file(&k, "src", src) == KCACHE_OK);
    KT_CHECK(kcache_put(kc, &k, "bin", 3) == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);
    f = _wfopen(srcw, L"ab"); /* the dependency changes: size and content */
    if (f) {
        fputs("// edited\n", f);
        fclose(f);
    }
    kc = open_at(dir);
    if (!kc) return;
    kcache_key_init(&k, "stamp");
    KT_CHECK(kcache_key_file(&k, "src", src) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &data, &size) == KCACHE_MISS);
    KT_CHECK(kcache_put(kc, &k, "bin2", 4) == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);
    kc = open_at(dir);
    if (!kc) return;
    kcache_key_init(&k, "stamp");
    KT_CHECK(kcache_key_file(&k, "src", src) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &data, &size) == KCACHE_OK && size == 4 && memcmp(data, "bin2", 4) == 0);
    if (size == 4) kcache_release(kc, data);
    kcache_key_free(&k);
    kcache_close(kc);
}

static int build_calls;
static int build_fn(void *user, void **out, size_t *out_size) {
    (void)user;
    build_calls++;
    *out = KCACHE_MALLOC(5);
    if (!*out) return 1;
    memcpy(*out, "built", 5);
    *out_size = 5;
    return 0;
}
static void get_or_build(void) {
    char dir[1024];
    kcache *kc;
    kcache_key k;
    const void *data = NULL;
    size_t size = 0;
    new_dir(dir, sizeof dir, "build");
    kc = open_at(dir);
    if (!kc) return;
    key_for(&k, "gob", "one");
    build_calls = 0;
    KT_CHECK(kcache_get_or_build(kc, &k, build_fn, NULL, &data, &size) == KCACHE_OK);
    KT_CHECK(size == 5 && data && memcmp(data, "built", 5) == 0);
    if (data) kcache_release(kc, data);
    kcache_close(kc);
    kc = open_at(dir); /* the build claim (a lock far into the lock file) was released */
    if (kc) {
        data = NULL;
        KT_CHECK(kcache_get_or_build(kc, &k, build_fn, NULL, &data, &size) == KCACHE_OK);
        if (data) kcache_release(kc, data);
        KT_CHECK_EQ_U64(build_calls, 1);
        kcache_close(kc);
    }
    kcache_key_free(&k);
}

/* Threads of one process on one kcache: the SRW lock and condition variable paths. */
typedef struct { kcache *kc; int id; int bad; } worker;
static DWORD WINAPI worker_main(void *arg) {
    worker *w = (worker *)arg;
    char name[32];
    int i;
    for (i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "t%d-%d", w->id, i % 10);
        if (i < 10 && put_named(w->kc, "threads", name, 600 + (size_t)i) != KCACHE_OK) w->bad++;
        if (i >= 10 && get_named(w->kc, "threads", name, 600 + (size_t)(i % 10)) != KCACHE_OK) w->bad++;
    }
    return 0;
}
static void threads(void) {
    char dir[1024];
    kcache *kc;
    HANDLE th[4];
    worker w[4];
    int i;
    new_dir(dir, sizeof dir, "threads");
    kc = open_at(dir);
    if (!kc) return;
    for (i = 0; i < 4; i++) {
        w[i].kc = kc;
        w[i].id = i;
        w[i].bad = 0;
        th[i] = CreateThread(NULL, 0, worker_main, &w[i], 0, NULL);
    }
    for (i = 0; i < 4; i++) {
        if (th[i]) {
            WaitForSingleObject(th[i], INFINITE);
            CloseHandle(th[i]);
        }
        KT_CHECK_MSG(th[i] && w[i].bad == 0, "thread %d: %d bad operations", i, w[i].bad);
    }
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
}

/* A temp file whose writer is gone is removed when a store is opened; a live writer's stays.
   The dead writer is a real process of this test that has exited. */
static void temp_sweep(void) {
    char dir[1024];
    WCHAR wd[1024], dead[1100], live[1100];
    kcache *kc;
    HANDLE p;
    DWORD pid;
    new_dir(dir, sizeof dir, "sweep");
    kc = open_at(dir);
    if (!kc) return;
    kcache_close(kc);
    p = spawn(L"exit");
    KT_CHECK(p != NULL);
    if (!p) return;
    pid = GetProcessId(p);
    KT_CHECK(wait_exit(p) == 0);
    to_wide(dir, wd, 1024);
    _snwprintf(dead, 1100, L"%ls\\tmp\\%lu-1-2.tmp", wd, (unsigned long)pid);
    _snwprintf(live, 1100, L"%ls\\tmp\\%lu-1-2.tmp", wd, (unsigned long)GetCurrentProcessId());
    CloseHandle(CreateFileW(dead, GENERIC_WRITE, 0, NULL, CREATE_NEW, 0, NULL));
    CloseHandle(CreateFileW(live, GENERIC_WRITE, 0, NULL, CREATE_NEW, 0, NULL));
    KT_CHECK(exists_w(dead) && exists_w(live));
    kc = open_at(dir);
    if (!kc) return;
    KT_CHECK_MSG(!exists_w(dead), "the exited writer's temp file is still there");
    KT_CHECK_MSG(exists_w(live), "a running writer's temp file was removed");
    kcache_close(kc);
}

/* Enough entries to double the use table (config.file replaced by a bigger one while mapped). */
static void table_growth(void) {
    char dir[1024], name[32];
    kcache *kc;
    kcache_stats st;
    WCHAR wd[1024], cf[1100];
    WIN32_FILE_ATTRIBUTE_DATA a;
    uint64_t before = 0, after = 0;
    int i, bad = 0;
    new_dir(dir, sizeof dir, "grow");
    to_wide(dir, wd, 1024);
    _snwprintf(cf, 1100, L"%ls\\config.file", wd);
    kc = open_at(dir);
    if (!kc) return;
    if (GetFileAttributesExW(cf, GetFileExInfoStandard, &a)) before = ((uint64_t)a.nFileSizeHigh << 32) | a.nFileSizeLow;
    for (i = 0; i < 3200; i++) {
        snprintf(name, sizeof name, "g%d", i);
        bad += put_named(kc, "grow", name, 8) != KCACHE_OK;
    }
    KT_CHECK_EQ_U64(bad, 0);
    if (GetFileAttributesExW(cf, GetFileExInfoStandard, &a)) after = ((uint64_t)a.nFileSizeHigh << 32) | a.nFileSizeLow;
    KT_CHECK_MSG(after > before && before > 0, "config.file %llu -> %llu bytes", (unsigned long long)before, (unsigned long long)after);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.disk_entries, 3200);
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
    kc = open_at(dir);
    if (!kc) return;
    for (i = 0, bad = 0; i < 3200; i += 7) {
        snprintf(name, sizeof name, "g%d", i);
        bad += get_named(kc, "grow", name, 8) != KCACHE_OK;
    }
    KT_CHECK_EQ_U64(bad, 0);
    kcache_close(kc);
}

/* The lowest free C runtime descriptor: kcache's descriptors wrap its handles, so one left open
   moves it up. */
static int lowest_free_fd(void) {
    int fd = _open("NUL", _O_RDONLY), r = fd;
    if (fd >= 0) _close(fd);
    return r;
}
/* Opening, using and closing stores leaves no descriptor or handle behind (files, directories,
   mappings, directory listings). */
static void no_handle_leak(void) {
    char dir[1024];
    DWORD before = 0, after = 0;
    int fd_before = -1, fd_after, round, counted;
    new_dir(dir, sizeof dir, "leak");
    for (round = 0; round < 6; round++) {
        kcache *kc = open_at(dir);
        if (!kc) return;
        KT_CHECK(put_named(kc, "leak", "a", 100) == KCACHE_OK);
        KT_CHECK(get_named(kc, "leak", "a", 100) == KCACHE_OK);
        KT_CHECK(put_named(kc, "leak", "b", 100) == KCACHE_OK);
        KT_CHECK(kcache_verify(kc, 1) == KCACHE_OK);
        kcache_close(kc);
        if (round == 0) { /* after the first round: lazy setup done */
            fd_before = lowest_free_fd();
            counted = GetProcessHandleCount(GetCurrentProcess(), &before);
        }
    }
    fd_after = lowest_free_fd();
    KT_CHECK_MSG(fd_before >= 0 && fd_after == fd_before, "lowest free descriptor %d, then %d", fd_before, fd_after);
    counted = GetProcessHandleCount(GetCurrentProcess(), &after) && counted && before > 0; /* 0 under wine: not counted */
    KT_CHECK_MSG(!counted || after <= before, "handles: %lu after the first round, %lu after five more", (unsigned long)before,
                 (unsigned long)after);
}

/* Under wine: runs a Unix command on the Unix names of two Windows paths (wine starts Unix
   programs from CreateProcessW, but cannot wait for them: the caller polls for the effect). */
static int wine_unix(const WCHAR *fmt, const WCHAR *a, const WCHAR *b) {
    typedef char *(CDECL * unix_name_fn)(const WCHAR *);
    unix_name_fn unix_name = (unix_name_fn)(void (*)(void))GetProcAddress(GetModuleHandleA("kernel32.dll"), "wine_get_unix_file_name");
    char *ua, *ub;
    int ran = 0;
    if (!unix_name) return 0;
    ua = unix_name(a);
    ub = b ? unix_name(b) : NULL;
    if (ua && (ub || !b)) {
        WCHAR cmd[3000];
        STARTUPINFOW si;
        PROCESS_INFORMATION pi;
        _snwprintf(cmd, 3000, fmt, ua, ub ? ub : "");
        cmd[2999] = 0;
        memset(&si, 0, sizeof si);
        si.cb = sizeof si;
        if (CreateProcessW(NULL, cmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi)) {
            CloseHandle(pi.hProcess);
            CloseHandle(pi.hThread);
            ran = 1;
        }
    }
    if (ua) HeapFree(GetProcessHeap(), 0, ua);
    if (ub) HeapFree(GetProcessHeap(), 0, ub);
    return ran;
}
static int is_link(const WCHAR *path) {
    DWORD attr = GetFileAttributesW(path);
    return attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_REPARSE_POINT);
}

/* Makes a symlink: CreateSymbolicLinkW (Windows with developer mode or the privilege), else under
   wine (whose CreateSymbolicLinkW does nothing) a Unix symlink through /bin/ln, which wine shows
   as a reparse point. 1 when the name is now a reparse point. */
static int make_link(const WCHAR *link, const WCHAR *target, int dir) {
    int i;
    CreateSymbolicLinkW(link, target, (dir ? SYMBOLIC_LINK_FLAG_DIRECTORY : 0) | 0x2 /* unprivileged */);
    if (is_link(link)) return 1;
    if (!wine_unix(L"/bin/ln -s \"%hs\" \"%hs\"", target, link)) return 0;
    for (i = 0; i < 1000 && GetFileAttributesW(link) == INVALID_FILE_ATTRIBUTES; i++) Sleep(10);
    Sleep(50); /* ln has made it: let it exit */
    return GetFileAttributesW(link) != INVALID_FILE_ATTRIBUTES; /* (wine 8 shows only directory links as reparse points) */
}
/* Removes a symlink itself (wine's RemoveDirectoryW would remove its target instead). */
static void remove_link(const WCHAR *link) {
    int i;
    if (wine_unix(L"/bin/rm -f \"%hs\"%hs", link, NULL)) {
        for (i = 0; i < 1000 && GetFileAttributesW(link) != INVALID_FILE_ATTRIBUTES; i++) Sleep(10);
        return;
    }
    if (!DeleteFileW(link)) RemoveDirectoryW(link);
}

static int count_files(const WCHAR *dir) {
    WCHAR probe[1100];
    WIN32_FIND_DATAW fd;
    HANDLE h;
    int n = 0;
    _snwprintf(probe, 1100, L"%ls\\*", dir);
    probe[1099] = 0;
    h = FindFirstFileW(probe, &fd);
    if (h != INVALID_HANDLE_VALUE) {
        do n += fd.cFileName[0] != L'.';
        while (FindNextFileW(h, &fd));
        FindClose(h);
    }
    return n;
}

/* A symlink or junction planted in the store is never followed: not as a shard directory (the
   put is refused and nothing is written where it points), not as an entry (a valid entry behind
   it is not read). */
static void reparse_point(void) {
    char dir[1024], outside[1024];
    WCHAR wd[1024], wo[1024], link[1100], entry[1100], copy[1100];
    kcache *kc;
    kcache_key k;
    char hex[33];
    new_dir(dir, sizeof dir, "reparse");
    new_dir(outside, sizeof outside, "outside");
    to_wide(dir, wd, 1024);
    to_wide(outside, wo, 1024);
    CreateDirectoryW(wo, NULL);
    kc = open_at(dir);
    if (!kc) return;
    kcache_close(kc);
    key_for(&k, "reparse", "x");
    kcache_hash_hex(kcache_key_digest(&k), hex);
    kcache_key_free(&k);
    _snwprintf(link, 1100, L"%ls\\e\\%c%c", wd, (WCHAR)hex[0], (WCHAR)hex[1]);
    if (!make_link(link, wo, 1)) {
        printf("# reparse_point: cannot make a symlink here; not checked\n");
        return; /* KT_RUN prints ok: nothing was checked, as the line above says */
    }
    kc = open_at(dir);
    if (!kc) return;
    KT_CHECK(put_named(kc, "reparse", "x", 100) != KCACHE_OK);
    KT_CHECK(kcache_verify(kc, 1) == KCACHE_OK); /* the scan skips it too */
    kcache_close(kc);
    KT_CHECK_MSG(count_files(wo) == 0, "%d file(s) written through the symlinked shard", count_files(wo));
    remove_link(link);

    /* an entry replaced by a symlink to a valid copy of itself */
    new_dir(dir, sizeof dir, "reparse-entry");
    to_wide(dir, wd, 1024);
    kc = open_at(dir);
    if (!kc) return;
    KT_CHECK(put_named(kc, "reparse", "y", 500) == KCACHE_OK);
    kcache_close(kc);
    KT_CHECK(find_entry(dir, entry, 1100));
    _snwprintf(copy, 1100, L"%ls\\copy.kce", wo);
    KT_CHECK(MoveFileExW(entry, copy, MOVEFILE_COPY_ALLOWED));
    if (!make_link(entry, copy, 0)) {
        printf("# reparse_point: cannot make a symlink to a file here; entry link not checked\n");
        remove_link(entry);
        return;
    }
    kc = open_at(dir);
    if (!kc) return;
    KT_CHECK(get_named(kc, "reparse", "y", 500) == KCACHE_MISS);
    kcache_close(kc);
    KT_CHECK(exists_w(copy));
    remove_link(entry);
}

int main(void) {
    WCHAR tmp[MAX_PATH + 1];
    char *args[8];
    int i, argc = 0;
    WCHAR **argv = CommandLineToArgvW(GetCommandLineW(), &argc); /* UTF-16 arguments, whatever the code page */
    if (!argv) return 3;
    for (i = 0; i < argc && i < 8; i++) {
        int n = WideCharToMultiByte(CP_UTF8, 0, argv[i], -1, NULL, 0, NULL, NULL);
        args[i] = (char *)malloc(n > 0 ? (size_t)n : 1);
        if (!args[i] || WideCharToMultiByte(CP_UTF8, 0, argv[i], -1, args[i], n, NULL, NULL) <= 0) return 3;
    }
    if (argc >= 3 && !strcmp(args[1], "child")) return child_main(args[2]);
    if (argc >= 5 && !strcmp(args[1], "hold")) return hold_main(args[2], args[3], args[4]);
    if (argc >= 2 && !strcmp(args[1], "exit")) return 0;

    if (!GetModuleFileNameW(NULL, g_self, 1024)) return 2;
    if (!GetTempPathW(MAX_PATH + 1, tmp)) return 2;
    for (i = 0;; i++) { /* a fresh directory (wine reuses pids) */
        _snwprintf(g_rootw, 1024, L"%lskcache-win-%lu-%d", tmp, (unsigned long)GetCurrentProcessId(), i);
        g_rootw[1023] = 0;
        if (CreateDirectoryW(g_rootw, NULL)) break;
        if (GetLastError() != ERROR_ALREADY_EXISTS || i > 1000) {
            printf("FAIL setup: cannot create a temp directory\n");
            return 1;
        }
    }
    if (WideCharToMultiByte(CP_UTF8, 0, g_rootw, -1, g_root, sizeof g_root, NULL, NULL) <= 0) return 2;
    _putenv("KCACHE_DIR=");
    _putenv("KCACHE_DEBUG=");
    _putenv("KCACHE_STATS=");

    KT_RUN(memory_only);
    KT_RUN(disk_put_get);
    KT_RUN(persistence);
    KT_RUN(layers);
    KT_RUN(second_process);
    KT_RUN(lock_held_elsewhere);
    KT_RUN(corrupt_entry);
    KT_RUN(eviction_and_verify);
    KT_RUN(utf8_directory);
    KT_RUN(dependency_stamp);
    KT_RUN(get_or_build);
    KT_RUN(threads);
    KT_RUN(reparse_point);
    KT_RUN(temp_sweep);
    KT_RUN(table_growth);
    KT_RUN(no_handle_leak);
    KT_RUN(default_directory);

    rm_tree(g_rootw);
    KT_EXIT();
}
