#!/usr/bin/env bash
# scripts/windows.sh [--build-only] [TEST...]
#   TEST: a program of tests/ (default: test_windows test_key test_lru test_hash).
#
# Builds test programs for Windows (x86_64, mingw-w64) and runs each under wine. Prints tests/kt.h's
# protocol with every name prefixed "windows/PROGRAM/": "ok windows/test_windows/persistence",
# "FAIL windows/test_key/...: why". A program that crashes, times out or prints no check is a FAIL.
# Exit status 0 only when nothing failed.
#
# Build flags are the Makefile's: -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror; no -lpthread (the
# Win32 layer uses SRW locks, condition variables and Win32 threads).
#   - test_windows.c is a Windows program (no fork: it starts itself again for the cross-process
#     checks) and is built as it is.
#   - test_key.c, test_lru.c and test_hash.c are POSIX programs: they get a small compatibility
#     header written by this script (build/win/compat: setenv/unsetenv, getenv copies that outlive
#     them as glibc's do, mkdtemp, stat with st_mtim, pread, remove of directories, nftw, utimensat,
#     sys/wait.h, and popen running /bin/sh through wine, which starts Unix programs from
#     CreateProcessW), forced in with -include. Their checks run unchanged.
#
# wine runs headless: DISPLAY is cleared, WINEDEBUG=-all, and mono/gecko are never offered (their
# installers would open a window). The prefix is private: build/win/wineprefix, made on first use
# (a few seconds, about 700 MB) and reused. Binaries go to build/win/ (rebuilt when an input changed).
# Environment: KT_TIMEOUT (seconds per program, default 300), KCACHE_H_DIR (directory holding the
# kcache.h to test, default the repository root).
# Debian packages: gcc-mingw-w64-x86-64, wine and wine64.
set -u
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/win
limit=${KT_TIMEOUT:-300}
hdir=${KCACHE_H_DIR:-$root}
cc=x86_64-w64-mingw32-gcc
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(test_windows test_key test_lru test_hash)
flags="-std=c99 -O2 -Wall -Wextra -Wpedantic -Werror"

wine=""
for w in wine wine64; do command -v "$w" >/dev/null && { wine=$w; break; }; done
missing=""
command -v "$cc" >/dev/null || missing="$missing $cc (Debian: gcc-mingw-w64-x86-64)"
[ $build_only -eq 1 ] || [ -n "$wine" ] || missing="$missing wine (Debian: wine)"
if [ -n "$missing" ]; then
    echo "FAIL windows: missing:$missing"
    exit 1
fi
mkdir -p "$out/compat/sys" || exit 1

# ---- the compatibility header for the POSIX test programs ----
compat=$out/compat/posix_compat.h
cat >"$compat.new" <<'C'
/* Written by scripts/windows.sh: just enough POSIX for tests/test_key.c, test_lru.c and
   test_hash.c built with mingw-w64 and run under wine. Forced in with -include. */
#ifndef KT_POSIX_COMPAT_H
#define KT_POSIX_COMPAT_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <io.h>
#include <fcntl.h>
#include <direct.h>
#include <sys/types.h>
#include <sys/stat.h>
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#define KT_UNUSED __attribute__((unused)) /* a test uses some of these */

/* struct stat with st_mtim (nanoseconds), as POSIX 2008 has it */
struct kt_stat {
    unsigned st_mode, st_nlink, st_uid, st_gid;
    unsigned long long st_dev, st_ino;
    long long st_size;
    time_t st_mtime;
    struct timespec st_mtim;
};
KT_UNUSED static int kt_stat(const char *path, struct kt_stat *st) {
    WIN32_FILE_ATTRIBUTE_DATA a;
    unsigned long long t;
    memset(st, 0, sizeof *st);
    if (!GetFileAttributesExA(path, GetFileExInfoStandard, &a)) { errno = ENOENT; return -1; }
    st->st_mode = (a.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) ? (_S_IFDIR | 0700) : (_S_IFREG | 0600);
    st->st_nlink = 1;
    st->st_size = (long long)(((unsigned long long)a.nFileSizeHigh << 32) | a.nFileSizeLow);
    t = (((unsigned long long)a.ftLastWriteTime.dwHighDateTime << 32) | a.ftLastWriteTime.dwLowDateTime) - 116444736000000000ULL;
    st->st_mtim.tv_sec = (time_t)(t / 10000000);
    st->st_mtim.tv_nsec = (long)(t % 10000000) * 100;
    st->st_mtime = st->st_mtim.tv_sec;
    return 0;
}
#define stat kt_stat
#ifndef S_ISDIR
#define S_ISDIR(m) (((m) & _S_IFMT) == _S_IFDIR)
#define S_ISREG(m) (((m) & _S_IFMT) == _S_IFREG)
#endif

/* pread: the file position is left where it was */
KT_UNUSED static long long kt_pread(int fd, void *buf, size_t n, long long at) {
    long long pos = _lseeki64(fd, 0, SEEK_CUR), r;
    if (pos < 0 || _lseeki64(fd, at, SEEK_SET) < 0) return -1;
    r = _read(fd, buf, (unsigned)n);
    _lseeki64(fd, pos, SEEK_SET);
    return r;
}
#define pread kt_pread

/* getenv: a copy that outlives a later setenv/unsetenv of the variable, as glibc's strings do
   (test_lru reads a kcache_config's dir after clearing KCACHE_DIR; msvcrt frees the old string).
   Also applies to kcache.h's own getenv calls in this translation unit. Copies are never freed. */
KT_UNUSED static char *kt_getenv(const char *name) {
    const char *v = getenv(name);
    return v ? _strdup(v) : NULL;
}
#define getenv kt_getenv

KT_UNUSED static int kt_setenv(const char *name, const char *value, int overwrite) {
    if (!overwrite && getenv(name)) return 0;
    return _putenv_s(name, value) == 0 ? 0 : -1; /* Windows: an empty value removes the variable */
}
KT_UNUSED static int kt_unsetenv(const char *name) { return _putenv_s(name, "") == 0 ? 0 : -1; }
#define setenv kt_setenv
#define unsetenv kt_unsetenv

KT_UNUSED static char *kt_mkdtemp(char *t) {
    if (!_mktemp(t) || _mkdir(t) != 0) return NULL;
    return t;
}
#define mkdtemp kt_mkdtemp
#define mkdir(path, mode) _mkdir(path) /* (direct.h, included above, declares the one-argument form) */
#include <process.h>
#define getpid() ((int)GetCurrentProcessId())
/* clock_gettime without winpthreads: wall clock from the system time, monotonic from the counter */
#ifndef CLOCK_REALTIME
#define CLOCK_REALTIME 0
#define CLOCK_MONOTONIC 1
#endif
KT_UNUSED static int kt_clock_gettime(int clk, struct timespec *ts) {
    if (clk == CLOCK_REALTIME) {
        FILETIME ft;
        unsigned long long t;
        GetSystemTimePreciseAsFileTime(&ft);
        t = (((unsigned long long)ft.dwHighDateTime << 32) | ft.dwLowDateTime) - 116444736000000000ULL;
        ts->tv_sec = (time_t)(t / 10000000);
        ts->tv_nsec = (long)(t % 10000000) * 100;
    } else {
        LARGE_INTEGER c, f;
        QueryPerformanceCounter(&c);
        QueryPerformanceFrequency(&f);
        ts->tv_sec = (time_t)(c.QuadPart / f.QuadPart);
        ts->tv_nsec = (long)((c.QuadPart % f.QuadPart) * 1000000000LL / f.QuadPart);
    }
    return 0;
}
#define clock_gettime(c, t) kt_clock_gettime((int)(c), t)

/* utimensat(AT_FDCWD, path, times, 0): the modification time only, which is what the tests set */
#ifndef AT_FDCWD
#define AT_FDCWD (-100)
#endif
KT_UNUSED static int kt_utimensat(int dirfd, const char *path, const struct timespec ts[2], int flags) {
    HANDLE h;
    FILETIME ft;
    unsigned long long v = ((unsigned long long)ts[1].tv_sec + 11644473600ULL) * 10000000ULL + (unsigned long long)ts[1].tv_nsec / 100;
    BOOL ok;
    (void)dirfd; (void)flags;
    h = CreateFileA(path, FILE_WRITE_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
                    FILE_FLAG_BACKUP_SEMANTICS, NULL);
    if (h == INVALID_HANDLE_VALUE) { errno = ENOENT; return -1; }
    ft.dwLowDateTime = (DWORD)v;
    ft.dwHighDateTime = (DWORD)(v >> 32);
    ok = SetFileTime(h, NULL, NULL, &ft);
    CloseHandle(h);
    return ok ? 0 : -1;
}
#define utimensat kt_utimensat

/* popen(cmd, "r") through /bin/sh: wine starts Unix programs from CreateProcessW (but gives them
   no Windows pipe and cannot wait for them), so the command writes a temp file and then a marker,
   which this waits for. pclose reports 0: a test judges by what it read. */
static char kt_popen_path[MAX_PATH + 64];
KT_UNUSED static FILE *kt_popen(const char *cmd, const char *mode) {
    typedef char *(CDECL * unix_name_fn)(const WCHAR *);
    unix_name_fn unix_name = (unix_name_fn)(void (*)(void))GetProcAddress(GetModuleHandleA("kernel32.dll"), "wine_get_unix_file_name");
    static int seq;
    char tmp[MAX_PATH], done[MAX_PATH + 80], *line, *u;
    WCHAR w[MAX_PATH + 64];
    STARTUPINFOA si;
    PROCESS_INFORMATION pi;
    size_t i, n = strlen(cmd), at;
    int k;
    (void)mode;
    if (!unix_name || !GetTempPathA(sizeof tmp, tmp)) return NULL;
    snprintf(kt_popen_path, sizeof kt_popen_path, "%skt-popen-%lu-%d.out", tmp, (unsigned long)GetCurrentProcessId(), ++seq);
    snprintf(done, sizeof done, "%s.done", kt_popen_path);
    MultiByteToWideChar(CP_ACP, 0, kt_popen_path, -1, w, MAX_PATH + 64);
    if ((u = unix_name(w)) == NULL) return NULL;
    line = (char *)malloc(2 * n + 2 * strlen(u) + 64);
    if (!line) return NULL;
    at = (size_t)sprintf(line, "/bin/sh -c \"(");
    for (i = 0; i < n; i++) { /* the Windows command-line rules wine parses back into argv */
        if (cmd[i] == '"' || cmd[i] == '\\') line[at++] = '\\';
        line[at++] = cmd[i];
    }
    at += (size_t)sprintf(line + at, ") > '%s'; touch '%s.done'\"", u, u);
    HeapFree(GetProcessHeap(), 0, u);
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    k = CreateProcessA(NULL, line, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi);
    free(line);
    if (!k) return NULL;
    CloseHandle(pi.hThread);
    CloseHandle(pi.hProcess);
    for (k = 0; k < 12000 && GetFileAttributesA(done) == INVALID_FILE_ATTRIBUTES; k++) Sleep(10);
    DeleteFileA(done);
    return fopen(kt_popen_path, "r");
}
KT_UNUSED static int kt_pclose(FILE *f) {
    int r = fclose(f) == 0 ? 0 : -1;
    DeleteFileA(kt_popen_path);
    return r;
}
/* remove(): directories too, as POSIX's does (nftw callbacks use it) */
KT_UNUSED static int kt_remove(const char *path) {
    DWORD a = GetFileAttributesA(path);
    if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY)) return _rmdir(path);
    return _unlink(path);
}
#define remove kt_remove
#undef popen
#undef pclose
#define popen kt_popen
#define pclose kt_pclose
#endif
C
cat >"$out/compat/sys/wait.h.new" <<'C'
/* Written by scripts/windows.sh: the status macros tests use on pclose's result. */
#ifndef KT_SYS_WAIT_H
#define KT_SYS_WAIT_H
#define WIFEXITED(s) ((s) != -1)
#define WEXITSTATUS(s) ((s) & 0xff)
#endif
C
cat >"$out/compat/ftw.h.new" <<'C'
/* Written by scripts/windows.sh: nftw for removing a test's temp tree (children first). */
#ifndef KT_FTW_H
#define KT_FTW_H
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <windows.h>
#define FTW_F 0
#define FTW_D 1
#define FTW_DNR 2
#define FTW_NS 3
#define FTW_SL 4
#define FTW_DP 5
#define FTW_PHYS 1
#define FTW_DEPTH 8
struct FTW { int base, level; };
static int kt_nftw_at(const char *path, int (*fn)(const char *, const struct stat *, int, struct FTW *), int level) {
    char sub[1024];
    WIN32_FIND_DATAA d;
    HANDLE h;
    struct stat st;
    struct FTW f;
    const char *slash = strrchr(path, '/'), *bs = strrchr(path, '\\');
    int r = 0;
    if (bs > slash) slash = bs;
    f.base = slash ? (int)(slash - path + 1) : 0;
    f.level = level;
    if (stat(path, &st) != 0) return fn(path, &st, FTW_NS, &f);
    if (st.st_mode & _S_IFDIR) {
        snprintf(sub, sizeof sub, "%s\\*", path);
        h = FindFirstFileA(sub, &d);
        if (h != INVALID_HANDLE_VALUE) {
            do {
                if (!strcmp(d.cFileName, ".") || !strcmp(d.cFileName, "..")) continue;
                snprintf(sub, sizeof sub, "%s\\%s", path, d.cFileName);
                r = kt_nftw_at(sub, fn, level + 1);
            } while (r == 0 && FindNextFileA(h, &d));
            FindClose(h);
        }
        return r ? r : fn(path, &st, FTW_DP, &f);
    }
    return fn(path, &st, FTW_F, &f);
}
KT_UNUSED static int nftw(const char *path, int (*fn)(const char *, const struct stat *, int, struct FTW *), int nopen, int flags) {
    (void)nopen; (void)flags; /* always FTW_DEPTH | FTW_PHYS here */
    return kt_nftw_at(path, fn, 0);
}
#endif
C
# write only what changed, so that make-style timestamps stay meaningful
for f in "$compat" "$out/compat/sys/wait.h" "$out/compat/ftw.h"; do
    if cmp -s "$f.new" "$f"; then rm -f "$f.new"; else mv -f "$f.new" "$f"; fi
done

# ---- build ----
status=0
built=()
for t in "${tests[@]}"; do
    src=$root/tests/$t.c
    exe=$out/$t.exe
    if [ ! -f "$src" ]; then echo "FAIL windows/$t: no tests/$t.c"; status=1; continue; fi
    extra=""
    [ "$t" = test_windows ] || extra="-I$out/compat -include $compat"
    # rebuilt when any input changed, whichever kcache.h (KCACHE_H_DIR) it is
    stamp=$(cat "$src" "$hdir/kcache.h" "$root/tests/kt.h" ${extra:+"$compat" "$out/compat/ftw.h" "$out/compat/sys/wait.h"} | cksum)
    if [ ! -f "$exe" ] || [ "$(cat "$exe.stamp" 2>/dev/null)" != "$stamp" ]; then
        rm -f "$exe" "$exe.stamp"
        if ! log=$("$cc" $flags -I"$hdir" -I"$root" -I"$root/tests" $extra -o "$exe" "$src" 2>&1); then
            echo "FAIL windows/$t: does not build: $(echo "$log" | grep -m3 -E 'error|warning' | tr '\n' ' ')"
            status=1
            continue
        fi
        echo "$stamp" >"$exe.stamp"
    fi
    built+=("$t")
done
# ---- the header as C++ and with clang for Windows (compile only) ----
for c in "x86_64-w64-mingw32-g++ -std=c++11 -x c++" "clang --target=x86_64-w64-mingw32 -std=c99 -x c"; do
    name=$(echo "$c" | awk '{print $1}' | sed 's/x86_64-w64-mingw32-//')
    if ! command -v "${c%% *}" >/dev/null; then echo "FAIL windows/compile_$name: ${c%% *} missing"; status=1; continue; fi
    if err=$($c -Wall -Wextra -Wpedantic -Werror -fsyntax-only -DKCACHE_IMPLEMENTATION "$hdir/kcache.h" 2>&1); then
        echo "ok windows/compile_$name"
    else
        echo "FAIL windows/compile_$name: $(echo "$err" | grep -m3 -E 'error' | tr '\n' ' ')"
        status=1
    fi
done
[ $build_only -eq 1 ] && exit $status

# ---- run under wine ----
export WINEPREFIX=$out/wineprefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" DISPLAY= WAYLAND_DISPLAY=
unset KCACHE_DIR KCACHE_DEBUG
if [ ! -f "$WINEPREFIX/system.reg" ]; then
    timeout 300 "$wine" wineboot -i >/dev/null 2>&1
    timeout 120 "${wine}server" -w >/dev/null 2>&1 || timeout 120 wineserver -w >/dev/null 2>&1 # registry written at exit
    if [ ! -f "$WINEPREFIX/system.reg" ]; then echo "FAIL windows: wineboot could not make $WINEPREFIX"; exit 1; fi
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "${built[@]}"; do
    start=$(date +%s)
    (cd "$out" && timeout -k 10 "$limit" "$wine" "$out/$t.exe") >"$log" 2>&1
    rc=$?
    tr -d '\r' <"$log" | sed -e "s|^ok |ok windows/$t/|" -e "s|^FAIL |FAIL windows/$t/|"
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL windows/$t: exited with status $rc"; f=1; fi
    if [ $rc -eq 0 ] && [ "$p" -eq 0 ]; then echo "FAIL windows/$t: ran no check"; f=1; fi
    [ "$f" -eq 0 ] || status=1
    echo "# windows/$t: $p ok, $f failed ($(( $(date +%s) - start )) s)"
done
# what a failed run left in the prefix's temp directory
rm -rf "$WINEPREFIX"/drive_c/users/*/Temp/kcache-win-* 2>/dev/null
"${wine}server" -k >/dev/null 2>&1 || wineserver -k >/dev/null 2>&1
exit $status
