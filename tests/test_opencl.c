/* test_opencl.c - kcache_cl_build on a real OpenCL driver (PoCL on the CPU).
 *
 * Every group works in its own mkdtemp directory: its own kcache store (KCACHE_DIR) and PoCL cache
 * (POCL_CACHE_DIR, with POCL_KERNEL_CACHE=0 so that only kcache can make a build fast). PoCL reads
 * its environment when the platform is first used, so all OpenCL work happens in forked children
 * ("a new process" is literally one); the parent never touches OpenCL. Children report failures
 * as FAIL lines of their own and by exit status; numbers the parent compares go through a shared
 * page. No OpenCL platform at all is a failure, not a skip.
 *
 * White-box where it helps: the store's entry file of a key (kcache__entry_name) is corrupted or
 * truncated on disk, and payloads are replaced through kcache_put to reach the checks that stand
 * between a stored binary and the driver.
 *
 * Environment: KT_ONLY=substring runs only the matching groups; KT_TIMES=1 prints each group's
 * time on stderr.
 *
 * Build: cc -std=c99 -I. tests/test_opencl.c -lOpenCL -lpthread  (kcache.h with its OpenCL part) */
#define KCACHE_IMPLEMENTATION
#ifndef KCACHE_OPENCL
#define KCACHE_OPENCL
#endif
/* Every clBuildProgram kcache.h makes goes through kt_build_program (the builds from source are
   counted there, and held back for the "rounds" of the batch groups): the name is replaced while
   kcache.h (and the <CL/cl.h> it includes, which then declares kt_build_program) is read; the real
   one is declared again after. */
#define clBuildProgram kt_build_program
#include "kcache.h"
#undef clBuildProgram
extern CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program, cl_uint, const cl_device_id *, const char *,
                                                      void(CL_CALLBACK *)(cl_program, void *), void *);
#include "kt.h"

#include <ftw.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define RUN(fn)                                                                              \
    do {                                                                                     \
        struct timespec t0_, t1_;                                                            \
        if (getenv("KT_ONLY") && !strstr(#fn, getenv("KT_ONLY"))) break;                     \
        clock_gettime(CLOCK_MONOTONIC, &t0_);                                                \
        kt_current = #fn;                                                                    \
        kt_failures_here = 0;                                                                \
        test_begin();                                                                        \
        fn();                                                                                \
        test_end();                                                                          \
        if (kt_failures_here == 0) printf("ok %s\n", #fn);                                   \
        kt_failures_total += kt_failures_here;                                               \
        clock_gettime(CLOCK_MONOTONIC, &t1_);                                                \
        if (getenv("KT_TIMES"))                                                              \
            fprintf(stderr, "  (%s: %.2f s)\n", #fn,                                         \
                    (double)(t1_.tv_sec - t0_.tv_sec) + (t1_.tv_nsec - t0_.tv_nsec) / 1e9);  \
        fflush(stdout);                                                                      \
    } while (0)

/* ---- per-group directories and children --------------------------------------------------- */

#define KT_PROGS 16 /* programs a batch group names ("/" "* prog N *" "/" in their sources); N 15: any other */

typedef struct shared {
    int hit[8];
    uint64_t builds[8], rejects[8], hits_disk[8];
    double ns;
    char text[8][8192];
    char lib[4096];
    /* kt_build_program's counts of builds from source, every process (atomics) */
    int compiles[KT_PROGS];   /* per program */
    int proc_compiles[8];     /* per process (g_slot) */
    int started;              /* every process */
    int workers, keys;        /* rounds: build b waits until min(keys, (b / workers + 1) x workers) started */
    int stalled;              /* a round that did not fill within KT_GATE_MS: someone waited instead of building */
} shared;
static shared *g_sh; /* a MAP_SHARED page: children write, the parent reads */
static char g_base[256];
static int g_slot; /* this process's number, in a group of processes */

#define KT_GATE_MS 30000 /* a watchdog, far above a round's compile (PoCL: ~0.5 s, several under ASan) */

static int64_t kt_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A build from source (the program has a source; a load from binaries has none) is counted, and in
   rounds waits until its round has filled: every worker of every process builds at once, or one of
   them waited on another's build while a program nobody built was left (then the round never fills,
   and the watchdog says so). */
CL_API_ENTRY cl_int CL_API_CALL kt_build_program(cl_program prog, cl_uint n, const cl_device_id *devs, const char *options,
                                                void(CL_CALLBACK *notify)(cl_program, void *), void *user) {
    size_t len = 0;
    char *src;
    if (g_sh && clGetProgramInfo(prog, CL_PROGRAM_SOURCE, 0, NULL, &len) == CL_SUCCESS && len > 1 &&
        (src = (char *)malloc(len)) != NULL) {
        if (clGetProgramInfo(prog, CL_PROGRAM_SOURCE, len, src, NULL) == CL_SUCCESS) {
            const char *m = strstr(src, "/* prog ");
            int id = m ? atoi(m + 8) : KT_PROGS - 1, b;
            if (id < 0 || id >= KT_PROGS) id = KT_PROGS - 1;
            __atomic_add_fetch(&g_sh->compiles[id], 1, __ATOMIC_SEQ_CST);
            __atomic_add_fetch(&g_sh->proc_compiles[g_slot & 7], 1, __ATOMIC_SEQ_CST);
            b = __atomic_fetch_add(&g_sh->started, 1, __ATOMIC_SEQ_CST);
            if (g_sh->workers) {
                int w = g_sh->workers, want = (b / w + 1) * w;
                int64_t until = kt_now_ms() + KT_GATE_MS;
                if (want > g_sh->keys) want = g_sh->keys;
                while (__atomic_load_n(&g_sh->started, __ATOMIC_SEQ_CST) < want && !__atomic_load_n(&g_sh->stalled, __ATOMIC_SEQ_CST)) {
                    if (kt_now_ms() > until) { __atomic_store_n(&g_sh->stalled, 1, __ATOMIC_SEQ_CST); break; }
                    struct timespec nap = {0, 2000000};
                    nanosleep(&nap, NULL);
                }
            }
        }
        free(src);
    }
    return clBuildProgram(prog, n, devs, options, notify, user);
}

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s; (void)flag; (void)f;
    return remove(p);
}

static void test_begin(void) {
    char p[512];
    snprintf(g_base, sizeof g_base, "/tmp/kcache-cltest-XXXXXX");
    if (!mkdtemp(g_base)) { perror("mkdtemp"); exit(2); }
    snprintf(p, sizeof p, "%s/kc", g_base);
    setenv("KCACHE_DIR", p, 1);
    snprintf(p, sizeof p, "%s/pocl", g_base);
    setenv("POCL_CACHE_DIR", p, 1);
    setenv("POCL_KERNEL_CACHE", "0", 1);
    unsetenv("POCL_DEVICES");
    unsetenv("OCL_ICD_VENDORS");
    unsetenv("KCACHE_ENABLE");
    unsetenv("KCACHE_DEBUG");
    memset(g_sh, 0, sizeof *g_sh);
}

static void test_end(void) {
    if (!getenv("KT_KEEP")) nftw(g_base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#if defined(__SANITIZE_ADDRESS__)
#define KT_ASAN 1
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KT_SANITIZED 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KT_ASAN 1
#endif
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KT_SANITIZED 1
#endif
#endif

#if defined(KT_ASAN)
int __lsan_do_recoverable_leak_check(void);
#define KT_LEAK_CHECK() (getenv("KT_LEAKS") ? __lsan_do_recoverable_leak_check() : 0)
#else
#define KT_LEAK_CHECK() 0
#endif

/* A child ends here: _exit (no atexit handlers of the parent's), after a leak check under ASan
   with KT_LEAKS=1 (PoCL and LLVM keep allocations of their own to the end, hence opt-in). */
static void child_exit(void) {
    if (KT_LEAK_CHECK()) { printf("FAIL %s: leaks (above)\n", kt_current); kt_failures_here++; }
    fflush(stdout);
    _exit(kt_failures_here ? 1 : 0);
}

/* Runs fn(arg) in a child and waits; its FAIL lines are its own, its status says whether any. */
static void in_child(void (*fn)(int), int arg) {
    pid_t pid;
    int st = 0;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) { KT_FAILF("fork: %s", strerror(errno)); return; }
    if (pid == 0) {
        kt_failures_here = 0;
        fn(arg);
        fflush(stdout);
        child_exit();
    }
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(st)) KT_FAILF("child %d died of signal %d", arg, WTERMSIG(st));
    else if (WEXITSTATUS(st) != 0) kt_failures_here++; /* it printed its FAIL lines */
}

/* ---- OpenCL in a child ---------------------------------------------------------------------- */

typedef struct clenv {
    cl_platform_id plat;
    cl_device_id dev[4];
    cl_uint ndev;
    cl_context ctx;
    cl_command_queue q[4];
    kcache *kc;
} clenv;

static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_log[1 << 16]; /* the debug lines of this child's kcache */
static size_t g_log_len;

static void collect(void *user, const char *line) {
    (void)user;
    pthread_mutex_lock(&g_log_lock);
    kt_log_append(g_log, sizeof g_log, &g_log_len, line);
    pthread_mutex_unlock(&g_log_lock);
}

/* The end of this child's debug lines, for the parent. */
static void keep_log(int slot) {
    size_t cap = sizeof g_sh->text[slot] - 1, n = g_log_len < cap ? g_log_len : cap;
    memcpy(g_sh->text[slot], g_log + (g_log_len - n), n);
    g_sh->text[slot][n] = 0;
}

static int count_in(const char *text, const char *what) {
    int n = 0;
    while ((text = strstr(text, what)) != NULL) { n++; text += strlen(what); }
    return n;
}

static int count_lines(const char *what) {
    int n = 0;
    const char *p = g_log;
    pthread_mutex_lock(&g_log_lock);
    while ((p = strstr(p, what)) != NULL) { n++; p += strlen(what); }
    pthread_mutex_unlock(&g_log_lock);
    return n;
}

static int cl_up(clenv *E) {
    cl_uint n = 0, i;
    cl_int e;
    kcache_config cfg;
    memset(E, 0, sizeof *E);
    if (clGetPlatformIDs(1, &E->plat, &n) != CL_SUCCESS || n == 0) {
        KT_FAILF("no OpenCL platform (install pocl-opencl-icd): these tests need one");
        return 0;
    }
    if (clGetDeviceIDs(E->plat, CL_DEVICE_TYPE_ALL, 4, E->dev, &E->ndev) != CL_SUCCESS || E->ndev == 0) {
        KT_FAILF("no OpenCL device");
        return 0;
    }
    E->ctx = clCreateContext(NULL, E->ndev, E->dev, NULL, NULL, &e);
    if (!E->ctx) { KT_FAILF("clCreateContext: %d", (int)e); return 0; }
    for (i = 0; i < E->ndev; i++) E->q[i] = clCreateCommandQueue(E->ctx, E->dev[i], 0, &e);
    kcache_config_init(&cfg);
    cfg.debug = 1;
    cfg.log = collect;
    if (kcache_open(&E->kc, &cfg) != KCACHE_OK || !E->kc) { KT_FAILF("kcache_open"); return 0; }
    if (!kcache_dir(E->kc) && !getenv("KCACHE_ENABLE")) KT_FAILF("no store at %s", getenv("KCACHE_DIR"));
    return 1;
}

static void cl_down(clenv *E) {
    cl_uint i;
    kcache_close(E->kc);
    for (i = 0; i < E->ndev; i++)
        if (E->q[i]) clReleaseCommandQueue(E->q[i]);
    if (E->ctx) clReleaseContext(E->ctx);
}

/* The index of the device whose name starts with prefix ("basic", "pthread"), or 0. */
static cl_uint dev_named(clenv *E, const char *prefix) {
    cl_uint i;
    for (i = 0; i < E->ndev; i++) {
        char name[256] = {0};
        clGetDeviceInfo(E->dev[i], CL_DEVICE_NAME, sizeof name - 1, name, NULL);
        if (strncmp(name, prefix, strlen(prefix)) == 0) return i;
    }
    return 0;
}

static const char *K_SRC =
    "kernel void k(global const float *x, global float *y) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = x[i] * MUL + ADD;\n"
    "}\n";
static const char *K_OPT = "-DMUL=2 -DADD=1";

/* Runs kernel k of prog on device d and checks y = x*mul + add. */
static int right(clenv *E, cl_program prog, cl_uint d, float mul, float add) {
    enum { N = 256 };
    float x[N], y[N];
    size_t g = N;
    cl_int e;
    int i, bad = 0;
    cl_mem bx, by;
    cl_kernel k;
    if (!prog) return 0;
    k = clCreateKernel(prog, "k", &e);
    if (!k) { KT_FAILF("clCreateKernel: %d", (int)e); return 0; }
    for (i = 0; i < N; i++) { x[i] = (float)i; y[i] = -1; }
    bx = clCreateBuffer(E->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x, &e);
    by = clCreateBuffer(E->ctx, CL_MEM_WRITE_ONLY, sizeof y, NULL, &e);
    clSetKernelArg(k, 0, sizeof bx, &bx);
    clSetKernelArg(k, 1, sizeof by, &by);
    e = clEnqueueNDRangeKernel(E->q[d], k, 1, NULL, &g, NULL, 0, NULL, NULL);
    if (e == CL_SUCCESS) e = clEnqueueReadBuffer(E->q[d], by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL);
    for (i = 0; i < N; i++) bad += y[i] != (float)i * mul + add;
    clReleaseMemObject(bx);
    clReleaseMemObject(by);
    clReleaseKernel(k);
    if (e != CL_SUCCESS || bad) KT_FAILF("kernel on device %u: status %d, %d wrong values (y[3] = %g)", (unsigned)d, (int)e, bad, y[3]);
    return e == CL_SUCCESS && !bad;
}

static cl_program build(clenv *E, cl_uint nd, const cl_device_id *devs, const char *unit, const char *src, const char *opt,
                        int *hit) {
    cl_int err = 1;
    cl_program p = kcache_cl_build(E->kc, E->ctx, nd, devs, unit, 1, &src, NULL, opt, hit, &err);
    if (!p) {
        char log[4096];
        kcache_cl_build_log(E->kc, log, sizeof log);
        KT_FAILF("kcache_cl_build %s: %d\n%s", unit, (int)err, log);
    }
    KT_CHECK((p != NULL) == (err == CL_SUCCESS));
    return p;
}

static void explain(clenv *E, cl_uint d, const char *unit, const char *src, const char *opt, char *out, size_t cap) {
    kcache_key k;
    if (kcache_cl_key(E->kc, &k, E->dev[d], unit, 1, &src, NULL, opt) != KCACHE_OK) KT_FAILF("kcache_cl_key");
    kcache_explain(E->kc, &k, out, cap);
    kcache_key_free(&k);
}

static void note_stats(clenv *E, int slot, int hit) {
    kcache_stats s;
    kcache_get_stats(E->kc, &s);
    g_sh->hit[slot] = hit;
    g_sh->builds[slot] = s.builds;
    g_sh->rejects[slot] = s.rejects;
    g_sh->hits_disk[slot] = s.hits_disk;
}

/* A plain build of K_SRC/K_OPT on device 0 (a child): miss or hit, checked for the right result. */
static void child_build_k(int slot) {
    clenv E;
    int hit = -1;
    cl_program p;
    if (!cl_up(&E)) return;
    explain(&E, 0, "k", K_SRC, K_OPT, g_sh->text[slot], sizeof g_sh->text[slot]);
    p = build(&E, 1, E.dev, "k", K_SRC, K_OPT, &hit);
    right(&E, p, 0, 2, 1);
    note_stats(&E, slot, hit);
    if (p) clReleaseProgram(p);
    cl_down(&E);
}

/* ---- the groups --------------------------------------------------------------------------------- */

static void platform_present(void) { /* no platform: FAIL here (cl_up says so), never a skip */
    in_child(child_build_k, 0);
}

static void child_repeat(int slot) {
    clenv E;
    int hit = -1, first, i, reps = 20000;
    cl_program p, q;
    struct timespec t0, t1;
    if (!cl_up(&E)) return;
    p = build(&E, 1, E.dev, "k", K_SRC, K_OPT, &hit);
    first = hit;
    right(&E, p, 0, 2, 1);
    q = build(&E, 1, E.dev, "k", K_SRC, K_OPT, &hit);
    KT_CHECK_MSG(q == p && hit == 1, "a repeat gives the program already built (%p vs %p, hit %d)", (void *)q, (void *)p, hit);
    if (q) clReleaseProgram(q);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < reps; i++) {
        const char *src = K_SRC;
        q = kcache_cl_build(E.kc, E.ctx, 1, E.dev, "k", 1, &src, NULL, K_OPT, &hit, NULL);
        clReleaseProgram(q);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    g_sh->ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / reps;
    KT_CHECK(q == p && hit == 1);
    note_stats(&E, slot, first);
    clReleaseProgram(p);
    cl_down(&E);
}

static void cached_binary_right_in_new_process(void) {
    in_child(child_repeat, 0);
    KT_CHECK_MSG(g_sh->hit[0] == 0 && g_sh->builds[0] == 1, "first process: hit %d, builds %llu", g_sh->hit[0],
                 (unsigned long long)g_sh->builds[0]);
    in_child(child_repeat, 1);
    KT_CHECK_MSG(g_sh->hit[1] == 1 && g_sh->builds[1] == 0 && g_sh->hits_disk[1] >= 1,
                 "second process: hit %d, builds %llu, disk hits %llu", g_sh->hit[1], (unsigned long long)g_sh->builds[1],
                 (unsigned long long)g_sh->hits_disk[1]);
    in_child(child_build_k, 2);
    KT_CHECK_MSG(strncmp(g_sh->text[2], "hit: disk", 9) == 0, "explain: %s", g_sh->text[2]);
    fprintf(stderr, "  in-process repeat: %.0f ns per kcache_cl_build + clReleaseProgram\n", g_sh->ns);
    /* no timing assertion here: make bench measures the repeat against its goal (1 us) */
}

/* threads: many at once on a program nobody built: one compile, every program right */
typedef struct thr { clenv *E; cl_program p; int hit; char log[256]; size_t loglen; const char *src; } thr;
static void *thr_build(void *v) {
    thr *t = (thr *)v;
    cl_int err;
    t->p = kcache_cl_build(t->E->kc, t->E->ctx, 1, t->E->dev, "threads", 1, &t->src, NULL, K_OPT, &t->hit, &err);
    t->loglen = kcache_cl_build_log(t->E->kc, t->log, sizeof t->log);
    return NULL;
}

static void child_threads(int slot) {
    clenv E;
    thr t[4];
    pthread_t th[4];
    int i;
    if (!cl_up(&E)) return;
    for (i = 0; i < 4; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].E = &E;
        t[i].src = K_SRC;
        pthread_create(&th[i], NULL, thr_build, &t[i]);
    }
    for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (i = 0; i < 4; i++) {
        right(&E, t[i].p, 0, 2, 1);
        if (t[i].p) clReleaseProgram(t[i].p);
    }
    KT_CHECK_MSG(count_lines("compile threads") == 1, "threads: %d compiles\n%s", count_lines("compile threads"), g_log);
    note_stats(&E, slot, t[0].hit);
    cl_down(&E);
}

static void threads_compile_once(void) { in_child(child_threads, 0); }

/* processes: two at once, one compile */
static int g_go[2];
static void child_race(int slot) {
    char c;
    if (read(g_go[0], &c, 1) != 1) KT_FAILF("barrier");
    child_build_k(slot);
}

static void processes_compile_once(void) {
    pid_t pid[2];
    int i, st;
    if (pipe(g_go) != 0) { KT_FAILF("pipe"); return; }
    fflush(stdout);
    for (i = 0; i < 2; i++) {
        pid[i] = fork();
        if (pid[i] == 0) {
            kt_failures_here = 0;
            child_race(i);
            child_exit();
        }
    }
    if (write(g_go[1], "go", 2) != 2) KT_FAILF("barrier");
    for (i = 0; i < 2; i++) {
        waitpid(pid[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) KT_FAILF("racer %d: status %d", i, st);
    }
    close(g_go[0]);
    close(g_go[1]);
    KT_CHECK_MSG(g_sh->builds[0] + g_sh->builds[1] == 1, "two processes compiled %llu times",
                 (unsigned long long)(g_sh->builds[0] + g_sh->builds[1]));
}

/* changed options, changed source, an edited #included header: misses, each explained */
static const char *g_src2, *g_opt2;
static float g_mul2, g_add2;
static void child_build_2(int slot) {
    clenv E;
    int hit = -1;
    cl_program p;
    if (!cl_up(&E)) return;
    explain(&E, 0, "k", g_src2, g_opt2, g_sh->text[slot], sizeof g_sh->text[slot]);
    p = build(&E, 1, E.dev, "k", g_src2, g_opt2, &hit);
    right(&E, p, 0, g_mul2, g_add2);
    note_stats(&E, slot, hit);
    if (p) clReleaseProgram(p);
    cl_down(&E);
}

static void changed_options_miss_explained(void) {
    in_child(child_build_k, 0);
    g_src2 = K_SRC;
    g_opt2 = "-DMUL=3 -DADD=1";
    g_mul2 = 3;
    g_add2 = 1;
    in_child(child_build_2, 1);
    KT_CHECK(g_sh->hit[1] == 0 && g_sh->builds[1] == 1);
    KT_CHECK_MSG(strstr(g_sh->text[1], "miss") && strstr(g_sh->text[1], "cl.options") && strstr(g_sh->text[1], "-DMUL=2") &&
                     strstr(g_sh->text[1], "-DMUL=3"),
                 "explain: %s", g_sh->text[1]);
    if (getenv("KT_VERBOSE")) fprintf(stderr, "  explain: %s\n", g_sh->text[1]);
    in_child(child_build_2, 2);
    KT_CHECK(g_sh->hit[2] == 1);
}

static void changed_source_miss_explained(void) {
    in_child(child_build_k, 0);
    g_src2 =
        "kernel void k(global const float *x, global float *y) {\n"
        "    size_t i = get_global_id(0);\n"
        "    y[i] = x[i] * MUL + ADD + 1.0f;\n"
        "}\n";
    g_opt2 = K_OPT;
    g_mul2 = 2;
    g_add2 = 2;
    in_child(child_build_2, 1);
    KT_CHECK(g_sh->hit[1] == 0 && g_sh->builds[1] == 1);
    KT_CHECK_MSG(strstr(g_sh->text[1], "miss") && strstr(g_sh->text[1], "cl.source"), "explain: %s", g_sh->text[1]);
    if (getenv("KT_VERBOSE")) fprintf(stderr, "  explain: %s\n", g_sh->text[1]);
}

static const char *H_SRC =
    "#include \"add.h\"\n"
    "kernel void k(global const float *x, global float *y) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = x[i] * MUL + ADD;\n"
    "}\n";
static char g_hopt[600], g_more[1400];

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) { KT_FAILF("%s: %s", path, strerror(errno)); return; }
    fputs(text, f);
    fclose(f);
}

static void child_header(int slot) {
    clenv E;
    int hit = -1;
    cl_program p, q;
    if (!cl_up(&E)) return;
    explain(&E, 0, "h", H_SRC, g_hopt, g_sh->text[slot], sizeof g_sh->text[slot]);
    p = build(&E, 1, E.dev, "h", H_SRC, g_hopt, &hit);
    right(&E, p, 0, 2, g_add2);
    note_stats(&E, slot, hit);
    if (slot == 2) {
        /* the same process, the header edited again: the in-process cache notices too */
        write_file(g_more, "#define BASE 6\n");
        q = build(&E, 1, E.dev, "h", H_SRC, g_hopt, &hit);
        KT_CHECK_MSG(hit == 0 && q != p, "after an edit in-process: hit %d", hit);
        right(&E, q, 0, 2, 7);
        if (q) clReleaseProgram(q);
    }
    if (p) clReleaseProgram(p);
    cl_down(&E);
}

static void edited_header_miss_explained(void) {
    char dir[512], sub[600], add[600];
    if (strlen(g_base) > 200) return;
    snprintf(dir, sizeof dir, "%s/inc", g_base);
    snprintf(sub, sizeof sub, "%s/inc/sub", g_base);
    mkdir(dir, 0700);
    mkdir(sub, 0700);
    snprintf(add, sizeof add, "%s/add.h", dir);
    snprintf(g_more, sizeof g_more, "%s/more.h", sub);
    write_file(add, "#include \"sub/more.h\" /* relative to this header */\n#define ADD (BASE + 1)\n");
    write_file(g_more, "#define BASE 0\n");
    snprintf(g_hopt, sizeof g_hopt, "-DMUL=2 -I %s", dir);
    g_add2 = 1;
    in_child(child_header, 0);
    KT_CHECK(g_sh->hit[0] == 0);
    in_child(child_header, 1);
    KT_CHECK_MSG(g_sh->hit[1] == 1, "unchanged headers: hit %d (%s)", g_sh->hit[1], g_sh->text[1]);
    write_file(g_more, "#define BASE 4\n"); /* same size, new content and mtime */
    g_add2 = 5;
    in_child(child_header, 2);
    KT_CHECK(g_sh->hit[2] == 0);
    KT_CHECK_MSG(strstr(g_sh->text[2], "dependency") && strstr(g_sh->text[2], "more.h") && strstr(g_sh->text[2], "cl.include"),
                 "explain: %s", g_sh->text[2]);
    if (getenv("KT_VERBOSE")) fprintf(stderr, "  explain: %s\n", g_sh->text[2]);
}

/* damaged entries on disk: the store's checks reject them; a rebuild replaces them */
static int g_damage; /* 0: flip a byte of the payload, 1: cut the file in half */
static void child_damage(int slot) {
    clenv E;
    kcache_key k;
    char name[48], path[700];
    struct stat sb;
    int fd;
    (void)slot;
    if (!cl_up(&E)) return;
    kcache_cl_key(E.kc, &k, E.dev[0], "k", 1, &K_SRC, NULL, K_OPT);
    kcache__entry_name(k.digest, name);
    snprintf(path, sizeof path, "%s/%s", kcache_dir(E.kc), name);
    kcache_key_free(&k);
    fd = open(path, O_RDWR);
    if (fd < 0 || fstat(fd, &sb) != 0) { KT_FAILF("%s: %s", path, strerror(errno)); cl_down(&E); return; }
    if (g_damage == 0) {
        unsigned char c;
        off_t at = sb.st_size - 3000; /* inside the binary */
        if (pread(fd, &c, 1, at) != 1) KT_FAILF("pread");
        c ^= 0x5a;
        if (pwrite(fd, &c, 1, at) != 1) KT_FAILF("pwrite");
    } else {
        if (ftruncate(fd, sb.st_size / 2) != 0) KT_FAILF("ftruncate");
    }
    close(fd);
    cl_down(&E);
}

static void damaged_entry(int how) {
    g_damage = how;
    in_child(child_build_k, 0);
    in_child(child_damage, 0);
    in_child(child_build_k, 1);
    KT_CHECK_MSG(g_sh->hit[1] == 0 && g_sh->builds[1] == 1, "after damage: hit %d builds %llu", g_sh->hit[1],
                 (unsigned long long)g_sh->builds[1]);
    KT_CHECK_MSG(strstr(g_sh->text[1], "rejected") != NULL, "explain: %s", g_sh->text[1]);
    if (getenv("KT_VERBOSE")) fprintf(stderr, "  explain: %s\n", g_sh->text[1]);
    in_child(child_build_k, 2); /* the entry was replaced by a good one */
    KT_CHECK_MSG(g_sh->hit[2] == 1 && strncmp(g_sh->text[2], "hit: disk", 9) == 0, "after the rebuild: hit %d (%s)", g_sh->hit[2],
                 g_sh->text[2]);
}
static void corrupt_entry_rebuilt(void) { damaged_entry(0); }
static void truncated_entry_rebuilt(void) { damaged_entry(1); }

/* payloads with a good checksum but a bad binary, put under the key: kcache's own checks or the
   driver's refusal must catch them before anything runs */
static int g_bad; /* 0: another device's binary, 1: cut short, 2: a version PoCL refuses, 3: a path escaping PoCL's dir */
static void child_plant(int slot) {
    clenv E;
    kcache_key kb, kp;
    const void *data;
    size_t size;
    cl_uint b, t;
    unsigned char *copy;
    (void)slot;
    if (!cl_up(&E)) return;
    b = dev_named(&E, "basic");
    t = dev_named(&E, "pthread");
    kcache_cl_key(E.kc, &kb, E.dev[g_bad == 0 ? b : t], "k", 1, &K_SRC, NULL, K_OPT);
    kcache_cl_key(E.kc, &kp, E.dev[t], "k", 1, &K_SRC, NULL, K_OPT);
    if (kcache_get(E.kc, &kb, &data, &size) != KCACHE_OK) {
        KT_FAILF("no entry to plant from");
    } else {
        copy = (unsigned char *)malloc(size);
        memcpy(copy, data, size);
        kcache_release(E.kc, data);
        KT_CHECK(memcmp(copy + 32, "poclbin", 8) == 0);
        if (g_bad == 1) { /* the first 60% of the binary, the header's length made to match */
            size = 32 + (size - 32) * 6 / 10;
            kcache__put_u64(copy + 8, size - 32);
        } else if (g_bad == 2) {
            kcache__put_u32(copy + 32 + 16, 5); /* PoCL binary format version 5 */
        } else if (g_bad == 3) { /* the first file's name: "/program.bc" -> "/../../x.bc" */
            unsigned char *pn = copy + 32 + 77 + 8 + 4;
            KT_CHECK(memcmp(pn, "/program.bc", 11) == 0);
            memcpy(pn, "/../../x.bc", 11);
        }
        KT_CHECK(kcache_put(E.kc, &kp, copy, size) == KCACHE_OK);
        free(copy);
    }
    kcache_key_free(&kb);
    kcache_key_free(&kp);
    cl_down(&E);
}

static void child_build_on(int slot) { /* builds K on the device named by g_sh->text[7] */
    clenv E;
    int hit = -1;
    cl_uint d;
    cl_program p;
    if (!cl_up(&E)) return;
    d = dev_named(&E, g_sh->text[7]);
    p = build(&E, 1, &E.dev[d], "k", K_SRC, K_OPT, &hit);
    right(&E, p, d, 2, 1);
    note_stats(&E, slot, hit);
    keep_log(slot);
    if (p) clReleaseProgram(p);
    cl_down(&E);
}

static void planted(int bad, const char *why) {
    g_bad = bad;
    setenv("POCL_DEVICES", "basic pthread", 1);
    snprintf(g_sh->text[7], sizeof g_sh->text[7], "%s", bad == 0 ? "basic" : "pthread");
    in_child(child_build_on, 0);
    in_child(child_plant, 0);
    snprintf(g_sh->text[7], sizeof g_sh->text[7], "pthread");
    in_child(child_build_on, 1);
    KT_CHECK_MSG(g_sh->hit[1] == 0 && g_sh->rejects[1] == 1 && g_sh->builds[1] == 1, "hit %d rejects %llu builds %llu", g_sh->hit[1],
                 (unsigned long long)g_sh->rejects[1], (unsigned long long)g_sh->builds[1]);
    KT_CHECK_MSG(strstr(g_sh->text[1], why) != NULL, "debug lines lack \"%s\":\n%s", why, g_sh->text[1]);
    in_child(child_build_on, 2); /* replaced by a good entry */
    KT_CHECK_MSG(g_sh->hit[2] == 1 && g_sh->rejects[2] == 0, "after the rebuild: hit %d rejects %llu", g_sh->hit[2],
                 (unsigned long long)g_sh->rejects[2]);
}
static void other_devices_binary_rebuilt(void) { planted(0, "for another device"); }
static void cut_binary_never_reaches_driver(void) { planted(1, "PoCL"); }
static void driver_refusal_rebuilt(void) { planted(2, "driver refused"); }
static void escaping_path_never_reaches_driver(void) { planted(3, "leaves its directory"); }

/* several devices */
static void child_two(int slot) {
    clenv E;
    int hit = -1;
    cl_program p;
    if (!cl_up(&E)) return;
    if (E.ndev != 2) { KT_FAILF("POCL_DEVICES=\"pthread pthread\" gave %u devices", (unsigned)E.ndev); cl_down(&E); return; }
    if (slot == 0) {
        p = build(&E, 1, &E.dev[1], "k", K_SRC, K_OPT, &hit); /* the second device only */
        right(&E, p, 1, 2, 1);
    } else {
        p = build(&E, 0, NULL, "k", K_SRC, K_OPT, &hit); /* every device of the context */
        right(&E, p, 0, 2, 1);
        right(&E, p, 1, 2, 1);
    }
    note_stats(&E, slot, hit);
    keep_log(slot);
    if (p) clReleaseProgram(p);
    cl_down(&E);
}

/* two devices (PoCL gives a second "pthread" device a vendor id of its own, so the two have keys
   of their own): the one already cached is loaded, only the other is compiled */
static void two_devices_one_cached(void) {
    setenv("POCL_DEVICES", "pthread pthread", 1);
    in_child(child_two, 0);
    in_child(child_two, 1);
    KT_CHECK_MSG(g_sh->hit[1] == 0 && g_sh->builds[1] == 1 && g_sh->hits_disk[1] >= 1, "hit %d builds %llu disk hits %llu", g_sh->hit[1],
                 (unsigned long long)g_sh->builds[1], (unsigned long long)g_sh->hits_disk[1]);
    KT_CHECK_MSG(count_in(g_sh->text[1], "compile k for 1 device(s)") == 1 && !strstr(g_sh->text[1], "for 2 device"),
                 "only the device that missed is compiled:\n%s", g_sh->text[1]);
    in_child(child_two, 2);
    KT_CHECK_MSG(g_sh->hit[2] == 1 && g_sh->builds[2] == 0 && !strstr(g_sh->text[2], "compile k"), "third run: hit %d\n%s", g_sh->hit[2],
                 g_sh->text[2]);
    setenv("POCL_DEVICES", "basic pthread", 1); /* two different devices, neither cached: one compile for both */
    in_child(child_two, 3);
    KT_CHECK_MSG(g_sh->hit[3] == 0 && count_in(g_sh->text[3], "compile k for ") == 1 && strstr(g_sh->text[3], "basic-"),
                 "basic + pthread:\n%s", g_sh->text[3]);
    in_child(child_two, 4);
    KT_CHECK(g_sh->hit[4] == 1);
}

/* a source that does not build: error and log, nothing cached; logs are per thread */
static void *thr_good(void *v) { return thr_build(v); }

static void child_fail(int slot) {
    clenv E;
    const char *bad = "kernel void k(global float *y) { y[0] = undefined_thing; }\n";
    char log[8192];
    cl_int err = 0;
    int hit = 7;
    cl_program p;
    kcache_stats s;
    thr t;
    pthread_t th;
    kcache_key key;
    const void *data;
    size_t size;
    (void)slot;
    if (!cl_up(&E)) return;
    p = kcache_cl_build(E.kc, E.ctx, 1, E.dev, "bad", 1, &bad, NULL, "", &hit, &err);
    KT_CHECK(p == NULL && err == CL_BUILD_PROGRAM_FAILURE && hit == 0);
    KT_CHECK(kcache_cl_build_log(E.kc, log, sizeof log) > 0);
    KT_CHECK_MSG(strstr(log, "undefined_thing") && strstr(log, "error"), "log: %s", log);
    /* another thread builds fine meanwhile: its log is its own, this thread's stays */
    memset(&t, 0, sizeof t);
    t.E = &E;
    t.src = K_SRC;
    pthread_create(&th, NULL, thr_good, &t);
    pthread_join(th, NULL);
    KT_CHECK(t.p != NULL && t.loglen == 0);
    if (t.p) clReleaseProgram(t.p);
    KT_CHECK(kcache_cl_build_log(E.kc, log, sizeof log) > 0 && strstr(log, "undefined_thing"));
    /* not cached: the next call compiles again */
    p = kcache_cl_build(E.kc, E.ctx, 1, E.dev, "bad", 1, &bad, NULL, "", &hit, &err);
    KT_CHECK(p == NULL && err == CL_BUILD_PROGRAM_FAILURE);
    KT_CHECK_MSG(count_lines("compile bad") == 2, "%d compiles of the bad source", count_lines("compile bad"));
    kcache_cl_key(E.kc, &key, E.dev[0], "bad", 1, &bad, NULL, "");
    KT_CHECK(kcache_get(E.kc, &key, &data, &size) == KCACHE_MISS);
    kcache_key_free(&key);
    kcache_get_stats(E.kc, &s);
    KT_CHECK_MSG(s.rejects == 0 && s.builds == 3, "rejects %llu builds %llu", (unsigned long long)s.rejects, (unsigned long long)s.builds);
    /* bad arguments: an error and a log that says so */
    p = kcache_cl_build(E.kc, NULL, 1, E.dev, "bad", 1, &bad, NULL, "", &hit, &err);
    KT_CHECK(p == NULL && err == CL_INVALID_CONTEXT);
    KT_CHECK(kcache_cl_build_log(E.kc, log, sizeof log) > 0 && strstr(log, "CL_INVALID_CONTEXT"));
    p = kcache_cl_build(E.kc, E.ctx, 1, E.dev, "bad", 0, NULL, NULL, "", &hit, &err);
    KT_CHECK(p == NULL && err == CL_INVALID_VALUE);
    /* a success clears the thread's log */
    p = build(&E, 1, E.dev, "k", K_SRC, K_OPT, &hit);
    KT_CHECK(kcache_cl_build_log(E.kc, log, sizeof log) == 0 && log[0] == 0);
    if (p) clReleaseProgram(p);
    cl_down(&E);
}

static void build_failure_logged_not_cached(void) { in_child(child_fail, 0); }

/* a caller's mistake (a device not in the context, a device named twice) is the driver's answer,
   and no reason to drop what the cache holds */
static void child_callers_errors(int slot) {
    clenv E;
    int hit = -1;
    cl_int err = 0;
    cl_uint b, t;
    cl_device_id twice[2];
    cl_context only;
    cl_program p;
    kcache_key key;
    const void *data;
    size_t size;
    kcache_stats s;
    const char *src = K_SRC;
    (void)slot;
    if (!cl_up(&E)) return;
    b = dev_named(&E, "basic");
    t = dev_named(&E, "pthread");
    p = build(&E, 1, &E.dev[b], "k", K_SRC, K_OPT, &hit); /* stores basic's entry */
    if (p) clReleaseProgram(p);
    only = clCreateContext(NULL, 1, &E.dev[t], NULL, NULL, &err);
    p = kcache_cl_build(E.kc, only, 1, &E.dev[b], "k", 1, &src, NULL, K_OPT, &hit, &err);
    KT_CHECK_MSG(p == NULL && err != CL_SUCCESS, "a device outside the context: %p, %d", (void *)p, (int)err);
    if (p) clReleaseProgram(p);
    twice[0] = twice[1] = E.dev[t];
    p = kcache_cl_build(E.kc, E.ctx, 2, twice, "k", 1, &src, NULL, K_OPT, &hit, &err);
    if (p) clReleaseProgram(p);
    kcache_get_stats(E.kc, &s);
    KT_CHECK_EQ_U64(s.rejects, 0);
    kcache_cl_key(E.kc, &key, E.dev[b], "k", 1, &src, NULL, K_OPT);
    KT_CHECK_MSG(kcache_get(E.kc, &key, &data, &size) == KCACHE_OK, "the entry is still there");
    if (size) kcache_release(E.kc, data);
    kcache_key_free(&key);
    clReleaseContext(only);
    cl_down(&E);
}

static void callers_errors_keep_entries(void) {
    setenv("POCL_DEVICES", "basic pthread", 1);
    in_child(child_callers_errors, 0);
}

/* the driver library: unchanged is a hit; a new library (a driver upgrade) is a miss, explained */
static void child_find_lib(int slot) {
    clenv E;
    (void)slot;
    if (!cl_up(&E)) return;
    if (!kcache__cl_driver_path(E.plat, g_sh->lib, sizeof g_sh->lib)) KT_FAILF("the driver library was not found");
    cl_down(&E);
}

static void driver_library_changed_miss_explained(void) {
    char root[600], libdir[5000], lib[10000], link[5100], share[700], vendors[700], icd[20000], target[4200], *slash;
    const char *multi;
    FILE *f;
    in_child(child_find_lib, 0);
    if (!g_sh->lib[0]) return;
    /* a copy of the vendor library in a tree shaped like /usr (PoCL finds its files relative to
       itself: <libdir>/pocl and <libdir>/../../share/pocl), named by an OCL_ICD_VENDORS directory */
    slash = strrchr(g_sh->lib, '/');
    *slash = 0; /* g_sh->lib is now the library's directory, e.g. /usr/lib/x86_64-linux-gnu */
    multi = strrchr(g_sh->lib, '/') + 1;
    snprintf(root, sizeof root, "%s/usr", g_base);
    snprintf(libdir, sizeof libdir, "%s/lib/%s", root, multi);
    snprintf(share, sizeof share, "%s/share", root);
    mkdir(root, 0700);
    snprintf(lib, sizeof lib, "%s/lib", root);
    mkdir(lib, 0700);
    mkdir(libdir, 0700);
    mkdir(share, 0700);
    snprintf(lib, sizeof lib, "%s/%s", libdir, slash + 1);
    snprintf(icd, sizeof icd, "cp '%s/%s' '%s'", g_sh->lib, slash + 1, lib);
    KT_CHECK(system(icd) == 0);
    snprintf(link, sizeof link, "%s/pocl", libdir);
    snprintf(target, sizeof target, "%s/pocl", g_sh->lib);
    KT_CHECK(symlink(target, link) == 0);
    snprintf(link, sizeof link, "%s/pocl", share);
    snprintf(target, sizeof target, "%s/../../share/pocl", g_sh->lib);
    KT_CHECK(symlink(target, link) == 0);
    snprintf(vendors, sizeof vendors, "%s/vendors", g_base);
    mkdir(vendors, 0700);
    snprintf(icd, sizeof icd, "%s/pocl.icd", vendors);
    f = fopen(icd, "w");
    if (f) { fprintf(f, "%s\n", lib); fclose(f); }
    setenv("OCL_ICD_VENDORS", vendors, 1);

    in_child(child_build_k, 0);
    KT_CHECK(g_sh->hit[0] == 0);
    in_child(child_build_k, 1);
    KT_CHECK_MSG(g_sh->hit[1] == 1, "unchanged install: hit %d (%s)", g_sh->hit[1], g_sh->text[1]);
    /* "upgrade" the driver: new bytes at the end of the library (ignored by the loader), new mtime */
    f = fopen(lib, "ab");
    if (f) { fputs("kcache-test-upgrade", f); fclose(f); }
    in_child(child_build_k, 2);
    KT_CHECK_MSG(g_sh->hit[2] == 0 && g_sh->builds[2] == 1, "after the upgrade: hit %d builds %llu", g_sh->hit[2],
                 (unsigned long long)g_sh->builds[2]);
    KT_CHECK_MSG(strstr(g_sh->text[2], "dependency") && strstr(g_sh->text[2], "cl.driver.library") && strstr(g_sh->text[2], "libpocl"),
                 "explain: %s", g_sh->text[2]);
    if (getenv("KT_VERBOSE")) fprintf(stderr, "  explain: %s\n", g_sh->text[2]);
}

/* no cache, caching off, forgetting a context */
static void child_nocache(int slot) {
    clenv E;
    int hit = -1;
    cl_int err;
    cl_program p;
    kcache_stats s0, s1;
    const char *src = K_SRC;
    if (!cl_up(&E)) return;
    if (slot == 0) { /* kc NULL: builds, like clBuildProgram */
        p = kcache_cl_build(NULL, E.ctx, 1, E.dev, "k", 1, &src, NULL, K_OPT, &hit, &err);
        KT_CHECK(p && hit == 0 && err == CL_SUCCESS);
        right(&E, p, 0, 2, 1);
        if (p) clReleaseProgram(p);
        KT_CHECK(kcache_cl_build_log(NULL, NULL, 0) == 0);
    } else if (slot == 1) { /* KCACHE_ENABLE=0: builds every time, stores nothing */
        int i;
        for (i = 0; i < 2; i++) {
            p = build(&E, 1, E.dev, "k", K_SRC, K_OPT, &hit);
            KT_CHECK(hit == 0);
            right(&E, p, 0, 2, 1);
            if (p) clReleaseProgram(p);
        }
        kcache_get_stats(E.kc, &s0);
        KT_CHECK(s0.puts == 0 && s0.disk_entries == 0);
    } else { /* forget: the next call loads from the store again */
        p = build(&E, 1, E.dev, "k", K_SRC, K_OPT, &hit);
        if (p) clReleaseProgram(p);
        kcache_get_stats(E.kc, &s0);
        kcache_cl_forget(E.kc, E.ctx);
        p = build(&E, 1, E.dev, "k", K_SRC, K_OPT, &hit);
        kcache_get_stats(E.kc, &s1);
        KT_CHECK_MSG(hit == 1 && s1.hits_disk + s1.hits_mem > s0.hits_disk + s0.hits_mem && s1.builds == s0.builds,
                     "after forget: hit %d", hit);
        right(&E, p, 0, 2, 1);
        if (p) clReleaseProgram(p);
        kcache_cl_forget(E.kc, NULL);
    }
    cl_down(&E);
}

static void without_a_cache(void) {
    in_child(child_nocache, 0);
    setenv("KCACHE_ENABLE", "0", 1);
    in_child(child_nocache, 1);
    unsetenv("KCACHE_ENABLE");
    in_child(child_nocache, 2);
}


/* ---- kcache_cl_build_many: a start-up that compiles a set of programs ---------------------------- */

/* Program i of the batch groups: k with y = x*2 + 1 + i, named by a comment the hook reads. */
static char g_psrc[KT_PROGS][512];
static const char *prog_src(int i) {
    snprintf(g_psrc[i], sizeof g_psrc[i],
             "/* prog %d */\n"
             "kernel void k(global const float *x, global float *y) {\n"
             "    size_t i = get_global_id(0);\n"
             "    y[i] = x[i] * MUL + ADD + %d.0f;\n"
             "}\n",
             i, i);
    return g_psrc[i];
}
static const char *BAD_SRC = "/* prog 14 */\nkernel void k(global float *y) { y[0] = undefined_thing; }\n";

/* The programs ids[0..n) built at once on device 0: kcache_cl_build_many on `threads` threads, or
   with KT_CL_SERIAL=1 (or built against a kcache.h without it: -DKT_NO_CL_MANY) one kcache_cl_build
   after another, as a start-up did before. Each program that built is checked by running it. */
static int g_threads = 1;
static cl_int build_set(clenv *E, const int *ids, int n, cl_program *out, int *hits, cl_int *errs, char (*logs)[2048], size_t *loglens) {
    const char *srcs[KT_PROGS];
    char units[KT_PROGS][32];
    cl_int first = CL_SUCCESS;
    int i;
    const char *serial = getenv("KT_CL_SERIAL");
    for (i = 0; i < n; i++) {
        srcs[i] = ids[i] == 14 ? BAD_SRC : prog_src(ids[i]);
        snprintf(units[i], sizeof units[i], "prog%d", ids[i]);
    }
#ifndef KT_NO_CL_MANY
    if (!serial || strcmp(serial, "1") != 0) {
        kcache_cl_program progs[KT_PROGS];
        memset(progs, 0, sizeof progs);
        for (i = 0; i < n; i++) {
            progs[i].unit = units[i];
            progs[i].nsrc = 1;
            progs[i].srcs = &srcs[i];
            progs[i].options = K_OPT;
            progs[i].log = logs[i];
            progs[i].log_cap = sizeof logs[i];
            progs[i].hit = -1;
        }
        first = kcache_cl_build_many(E->kc, E->ctx, 1, E->dev, progs, (size_t)n, (unsigned)g_threads);
        for (i = 0; i < n; i++) {
            out[i] = progs[i].program;
            hits[i] = progs[i].hit;
            errs[i] = progs[i].err;
            loglens[i] = progs[i].log_len;
        }
        return first;
    }
#endif
    (void)serial;
    for (i = 0; i < n; i++) {
        out[i] = kcache_cl_build(E->kc, E->ctx, 1, E->dev, units[i], 1, &srcs[i], NULL, K_OPT, &hits[i], &errs[i]);
        loglens[i] = kcache_cl_build_log(E->kc, logs[i], sizeof logs[i]);
        if (errs[i] != CL_SUCCESS && first == CL_SUCCESS) first = errs[i];
    }
    return first;
}

/* Processes started together (a pipe closed by the parent), each running fn(slot) after cl_up. */
static int g_gate[2];
static void wait_gate(void) {
    char c;
    if (read(g_gate[0], &c, 1) < 0) KT_FAILF("gate");
}
static void run_together(int nprocs, void (*fn)(int)) {
    pid_t pid[8];
    int i, st;
    if (pipe(g_gate) != 0) { KT_FAILF("pipe"); return; }
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < nprocs; i++) {
        pid[i] = fork();
        if (pid[i] == 0) {
            close(g_gate[1]);
            kt_failures_here = 0;
            g_slot = i;
            fn(i);
            child_exit();
        }
    }
    close(g_gate[0]);
    close(g_gate[1]); /* go */
    for (i = 0; i < nprocs; i++) {
        while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR) {
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) KT_FAILF("process %d: status %d", i, st);
    }
}

enum { SET_N = 6 };
static void child_set(int slot) {
    clenv E;
    int ids[SET_N], hits[SET_N], i;
    cl_program p[SET_N];
    cl_int errs[SET_N], first;
    char logs[SET_N][2048];
    size_t loglens[SET_N];
    if (!cl_up(&E)) return;
    for (i = 0; i < SET_N; i++) ids[i] = i;
    wait_gate();
    first = build_set(&E, ids, SET_N, p, hits, errs, logs, loglens);
    KT_CHECK_MSG(first == CL_SUCCESS, "process %d: %d", slot, (int)first);
    for (i = 0; i < SET_N; i++) {
        KT_CHECK_MSG(p[i] && errs[i] == CL_SUCCESS, "process %d, program %d: %d\n%s", slot, i, (int)errs[i], logs[i]);
        right(&E, p[i], 0, 2, (float)(1 + i));
        if (p[i]) clReleaseProgram(p[i]);
    }
    note_stats(&E, slot, hits[0]);
    cl_down(&E);
}

/* P processes x T threads need the same programs at once: each program compiled once over all of
   them, and in rounds of P x T (each builds a share at once; with one kcache_cl_build after another
   they build in a chain, the round never fills, and the watchdog says so) */
static void check_set(int nprocs, const char *what) {
    int i, total = 0;
    for (i = 0; i < SET_N; i++) {
        KT_CHECK_MSG(g_sh->compiles[i] == 1, "%s: program %d compiled %d times", what, i, g_sh->compiles[i]);
        total += g_sh->compiles[i];
    }
    for (i = 0; i < nprocs && nprocs > 1; i++) KT_CHECK_MSG(g_sh->proc_compiles[i] >= 1, "%s: process %d compiled nothing", what, i);
    KT_CHECK_MSG(!g_sh->stalled, "%s: a round of compiles did not fill: one waited on another's program while one nobody built was left", what);
    printf("# %s: %d compiles of %d programs; per process:", what, total, SET_N);
    for (i = 0; i < nprocs; i++) printf(" %d", g_sh->proc_compiles[i]);
    printf("\n");
}

/* procs processes x threads threads build the set together; each program once, spread (check_set) */
static void spread_set(int procs, int threads, const char *what) {
    g_sh->workers = procs * threads;
    g_sh->keys = SET_N;
    g_threads = threads;
    run_together(procs, child_set);
    g_threads = 1;
    check_set(procs, what);
}

static void many_programs_spread_over_processes(void) {
    spread_set(3, 1, "3 processes x 6 programs");
    /* warm: a new process compiles nothing, every program a hit from the store */
    g_sh->workers = 0;
    memset(g_sh->compiles, 0, sizeof g_sh->compiles);
    run_together(1, child_set);
    KT_CHECK_MSG(g_sh->builds[0] == 0 && g_sh->hit[0] == 1 && g_sh->started == SET_N, "warm run: builds %llu, hit %d, compiles %d",
                 (unsigned long long)g_sh->builds[0], g_sh->hit[0], g_sh->started - SET_N);
}


/* threads of one process (one context: clBuildProgram from several threads at once) */
static void many_programs_spread_over_threads(void) { spread_set(1, 3, "1 process x 3 threads x 6 programs"); }

/* 2 processes x 2 threads */
static void many_programs_spread_over_processes_and_threads(void) { spread_set(2, 2, "2 processes x 2 threads x 6 programs"); }

/* one batch: a program twice (built once, the same program for both), a program that does not build
   (its own entry fails, with its log; the others build), a log buffer too small (cut, its full length
   said); then a new process: the good ones all hits, nothing compiled but the failure again */
static void child_mixed(int slot) {
    static const int ids[] = {0, 1, 0, 14, 2};
    enum { M = 5 };
    clenv E;
    cl_program p[M];
    int hits[M], i;
    cl_int errs[M], first;
    char logs[M][2048], log[4096];
    size_t loglens[M];
    kcache_stats s0, s1;
    int bad0 = g_sh->compiles[14];
    if (!cl_up(&E)) return;
    kcache_get_stats(E.kc, &s0);
    first = build_set(&E, ids, M, p, hits, errs, logs, loglens);
    kcache_get_stats(E.kc, &s1);
    KT_CHECK_MSG(first == CL_BUILD_PROGRAM_FAILURE, "the call's status: %d", (int)first);
    KT_CHECK_MSG(p[3] == NULL && errs[3] == CL_BUILD_PROGRAM_FAILURE && hits[3] == 0, "the bad program: %p, %d", (void *)p[3], (int)errs[3]);
    KT_CHECK_MSG(loglens[3] > 0 && strstr(logs[3], "undefined_thing") && strstr(logs[3], "error") && loglens[3] == strlen(logs[3]),
                 "the bad program's log (%zu): %s", loglens[3], logs[3]);
    KT_CHECK_MSG(kcache_cl_build_log(E.kc, log, sizeof log) == loglens[3] && strcmp(log, logs[3]) == 0, "the thread's log: %s", log);
    for (i = 0; i < M; i++) {
        if (i == 3) continue;
        KT_CHECK_MSG(p[i] && errs[i] == CL_SUCCESS && loglens[i] == 0 && logs[i][0] == 0, "program %d (%d): %p, %d, log %s", i, ids[i],
                     (void *)p[i], (int)errs[i], logs[i]);
        KT_CHECK_MSG(hits[i] == slot, "program %d: hit %d in process %d", i, hits[i], slot);
        right(&E, p[i], 0, 2, (float)(1 + ids[i]));
    }
    KT_CHECK_MSG(p[2] == p[0], "the same program twice in one call: %p and %p", (void *)p[0], (void *)p[2]);
    if (slot == 0) {
        KT_CHECK_MSG(g_sh->compiles[0] == 1 && g_sh->compiles[1] == 1 && g_sh->compiles[2] == 1 && g_sh->compiles[14] == 1,
                     "compiles: %d %d %d, the bad one %d", g_sh->compiles[0], g_sh->compiles[1], g_sh->compiles[2], g_sh->compiles[14]);
    } else {
        KT_CHECK_MSG(g_sh->compiles[0] == 1 && g_sh->compiles[1] == 1 && g_sh->compiles[2] == 1 && g_sh->compiles[14] == bad0 + 1,
                     "warm: compiles %d %d %d, the bad one %d more", g_sh->compiles[0], g_sh->compiles[1], g_sh->compiles[2],
                     g_sh->compiles[14] - bad0);
        KT_CHECK_MSG(s1.builds - s0.builds == 1, "warm: %llu builds", (unsigned long long)(s1.builds - s0.builds));
    }
    for (i = 0; i < M; i++)
        if (p[i]) clReleaseProgram(p[i]);
#ifndef KT_NO_CL_MANY
    { /* a log buffer of 16 bytes: cut there, NUL-terminated, the full length said */
        const char *bad = BAD_SRC;
        char small[16];
        kcache_cl_program one;
        memset(&one, 0, sizeof one);
        memset(small, 'x', sizeof small);
        one.unit = "bad";
        one.nsrc = 1;
        one.srcs = &bad;
        one.log = small;
        one.log_cap = sizeof small;
        KT_CHECK(kcache_cl_build_many(E.kc, E.ctx, 1, E.dev, &one, 1, 2) == CL_BUILD_PROGRAM_FAILURE);
        KT_CHECK_MSG(one.program == NULL && one.log_len > 16 && strlen(small) == 15, "log_len %zu, '%s'", one.log_len, small);
        KT_CHECK_MSG(kcache_cl_build_log(E.kc, log, sizeof log) == one.log_len && strncmp(log, small, 15) == 0, "the thread's log: %s", log);
        KT_CHECK(kcache_cl_build_many(E.kc, E.ctx, 1, E.dev, NULL, 0, 1) == CL_SUCCESS);
        KT_CHECK(kcache_cl_build_many(E.kc, E.ctx, 1, E.dev, NULL, 1, 1) == CL_INVALID_VALUE);
        one.srcs = NULL; /* bad arguments fail that entry, saying why */
        KT_CHECK(kcache_cl_build_many(E.kc, E.ctx, 1, E.dev, &one, 1, 1) == CL_INVALID_VALUE);
        KT_CHECK_MSG(one.program == NULL && one.err == CL_INVALID_VALUE && strstr(small, "kcache_cl_build"), "'%s'", small);
    }
#endif
    cl_down(&E);
}

static void many_programs_duplicate_and_failure(void) {
    g_threads = 3; /* the failing compile on a builder thread: its log still reaches the caller's */
    in_child(child_mixed, 0);
    g_threads = 1;
    in_child(child_mixed, 1);
}

/* several devices whose keys miss (PoCL's "basic" and "pthread": keys of their own), the same
   program needed by two processes at once: each compiles one device, at once (rounds of 2); one
   clBuildProgram for every device would compile both in the first process while the other waits */
static void child_both_devices(int slot) {
    clenv E;
    int hit = -1;
    cl_program p;
    if (!cl_up(&E)) return;
    if (E.ndev != 2) { KT_FAILF("POCL_DEVICES=\"basic pthread\" gave %u devices", (unsigned)E.ndev); cl_down(&E); return; }
    wait_gate();
    p = build(&E, 0, NULL, "k", K_SRC, K_OPT, &hit);
    right(&E, p, 0, 2, 1);
    right(&E, p, 1, 2, 1);
    note_stats(&E, slot, hit);
    keep_log(slot);
    if (p) clReleaseProgram(p);
    cl_down(&E);
}

static void several_devices_spread_over_processes(void) {
    setenv("POCL_DEVICES", "basic pthread", 1);
    g_sh->workers = 2;
    g_sh->keys = 2;
    run_together(2, child_both_devices);
    KT_CHECK_MSG(g_sh->compiles[KT_PROGS - 1] == 2 && g_sh->proc_compiles[0] == 1 && g_sh->proc_compiles[1] == 1,
                 "2 devices: %d compiles, per process %d %d", g_sh->compiles[KT_PROGS - 1], g_sh->proc_compiles[0], g_sh->proc_compiles[1]);
    KT_CHECK_MSG(!g_sh->stalled, "2 devices: one process waited on the other's compile while a device nobody compiled was left");
    KT_CHECK_MSG(count_in(g_sh->text[0], "compile k for 1 device(s)") == 1 && count_in(g_sh->text[1], "compile k for 1 device(s)") == 1,
                 "one device each:\n%s\n--\n%s", g_sh->text[0], g_sh->text[1]);
    g_sh->workers = 0;
    run_together(1, child_both_devices); /* warm: both loaded */
    KT_CHECK_MSG(g_sh->hit[0] == 1 && g_sh->builds[0] == 0 && g_sh->compiles[KT_PROGS - 1] == 2, "warm: hit %d, builds %llu",
                 g_sh->hit[0], (unsigned long long)g_sh->builds[0]);
}

/* kcache_cl_device_key: a device's identity on a key of the caller's own (a plan blob): the same
   fields kcache_cl_key uses, so a program key made by hand from it has kcache_cl_key's digest; a blob
   keyed on one device misses on another, and kcache_explain names the device field */
static void child_device_key(int slot) {
    clenv E;
    kcache_key a, b, c;
    const void *data;
    size_t size;
    char why[2048];
    cl_uint other;
    (void)slot;
    if (!cl_up(&E)) return;
    KT_CHECK(kcache_cl_key(E.kc, &a, E.dev[0], "k", 1, &K_SRC, NULL, K_OPT) == KCACHE_OK);
    kcache_key_init(&b, "k");
    kcache_key_bytes(&b, "cl.source", K_SRC, strlen(K_SRC));
    kcache_key_str(&b, "cl.options", K_OPT);
    kcache_key_u64(&b, "cl.layer", KCACHE__CL_LAYER);
    KT_CHECK(kcache_cl_device_key(&b, E.dev[0]) == KCACHE_OK);
    KT_CHECK_MSG(kcache__same(kcache_key_digest(&a), kcache_key_digest(&b)) && a.count == b.count,
                 "kcache_cl_key and a key made with kcache_cl_device_key differ (%u and %u fields)", (unsigned)a.count,
                 (unsigned)b.count);
    kcache_key_free(&a);
    kcache_key_free(&b);

    /* a plan blob keyed by device */
    kcache_key_init(&a, "plan");
    kcache_key_str(&a, "plan.desc", "1d c2c 1024");
    KT_CHECK(kcache_cl_device_key(&a, E.dev[0]) == KCACHE_OK);
    KT_CHECK(kcache_put(E.kc, &a, "blob", 4) == KCACHE_OK);
    KT_CHECK(kcache_get(E.kc, &a, &data, &size) == KCACHE_OK && size == 4);
    if (size == 4) kcache_release(E.kc, data);
    other = 1; /* "basic" and "pthread": two devices of one driver, told apart by name and version */
    if (E.ndev == 2) {
        kcache_key_init(&c, "plan");
        kcache_key_str(&c, "plan.desc", "1d c2c 1024");
        KT_CHECK(kcache_cl_device_key(&c, E.dev[other]) == KCACHE_OK);
        KT_CHECK(kcache_get(E.kc, &c, &data, &size) == KCACHE_MISS);
        kcache_explain(E.kc, &c, why, sizeof why);
        KT_CHECK_MSG(strstr(why, "cl.device.") != NULL, "explain on another device: %s", why);
        kcache_key_free(&c);
    } else {
        KT_FAILF("POCL_DEVICES=\"basic pthread\" gave %u devices", (unsigned)E.ndev);
    }
    kcache_key_free(&a);

    /* misuse: an error, recorded in the key */
    kcache_key_init(&c, "plan");
    KT_CHECK(kcache_cl_device_key(&c, NULL) == KCACHE_EINVAL && c.error == KCACHE_EINVAL);
    KT_CHECK(kcache_put(E.kc, &c, "x", 1) != KCACHE_OK);
    kcache_key_free(&c);
    KT_CHECK(kcache_cl_device_key(NULL, E.dev[0]) == KCACHE_EINVAL);
    cl_down(&E);
}

static void device_key_for_any_blob(void) {
    setenv("POCL_DEVICES", "basic pthread", 1);
    in_child(child_device_key, 0);
}

/* kcache_cl_build_program: where clBuildProgram was. g_bp says how a child builds K_SRC with
   g_opt2 (checked by running it: y = x * g_mul2 + g_add2) on device g_bp_dev (-1: all, as 0/NULL) */
enum { BP_SWAP, BP_HELD, BP_CL_BUILD };
static int g_bp = BP_SWAP, g_bp_dev = 0;
static void child_bp(int slot) {
    clenv E;
    cl_program p, orig;
    cl_int e;
    cl_uint nd = g_bp_dev < 0 ? 0 : 1;
    const cl_device_id *devs;
    int hit = -1;
    if (!cl_up(&E)) return;
    devs = g_bp_dev < 0 ? NULL : &E.dev[g_bp_dev];
    if (g_bp == BP_CL_BUILD) {
        p = kcache_cl_build(E.kc, E.ctx, nd, devs, NULL, 1, &K_SRC, NULL, g_opt2, &hit, &e);
    } else {
        orig = p = clCreateProgramWithSource(E.ctx, 1, &K_SRC, NULL, &e);
        if (g_bp == BP_HELD) clRetainProgram(p);
        e = kcache_cl_build_program(E.kc, &p, nd, devs, g_opt2);
        if (g_bp == BP_HELD) {
            KT_CHECK_MSG(p == orig, "a program others hold was swapped");
            clReleaseProgram(orig);
        }
        KT_CHECK_MSG(e == CL_SUCCESS, "kcache_cl_build_program: %d", (int)e);
    }
    right(&E, p, g_bp_dev < 0 ? 0 : (cl_uint)g_bp_dev, g_mul2, g_add2);
    if (g_bp_dev < 0 && E.ndev > 1) right(&E, p, 1, g_mul2, g_add2);
    note_stats(&E, slot, hit);
    if (p) clReleaseProgram(p);
    cl_down(&E);
}

static void bp_run(int slot, int how, int dev, const char *opt, float mul) {
    g_bp = how;
    g_bp_dev = dev;
    g_opt2 = opt;
    g_mul2 = mul;
    g_add2 = 1;
    in_child(child_bp, slot);
}

#define BP_COMPILES (g_sh->compiles[KT_PROGS - 1])
static void build_program_hits_in_new_process(void) {
    bp_run(0, BP_SWAP, 0, K_OPT, 2);
    KT_CHECK_MSG(BP_COMPILES == 1 && g_sh->builds[0] == 1, "first: %d compiles, %llu builds", BP_COMPILES,
                 (unsigned long long)g_sh->builds[0]);
    bp_run(1, BP_SWAP, 0, K_OPT, 2);
    KT_CHECK_MSG(BP_COMPILES == 1 && g_sh->builds[1] == 0 && g_sh->hits_disk[1] == 1, "second process: %d compiles, %llu builds, %llu disk hits",
                 BP_COMPILES, (unsigned long long)g_sh->builds[1], (unsigned long long)g_sh->hits_disk[1]);
    bp_run(2, BP_CL_BUILD, 0, K_OPT, 2); /* kcache_cl_build (unit NULL) shares its entries */
    KT_CHECK_MSG(BP_COMPILES == 1 && g_sh->hit[2] == 1, "kcache_cl_build after it: %d compiles, hit %d", BP_COMPILES, g_sh->hit[2]);
    bp_run(3, BP_SWAP, 0, "-DMUL=3 -DADD=1", 3); /* other options: a miss, never the other's binary */
    KT_CHECK_MSG(BP_COMPILES == 2 && g_sh->builds[3] == 1 && g_sh->hits_disk[3] == 0, "other options: %d compiles, %llu disk hits",
                 BP_COMPILES, (unsigned long long)g_sh->hits_disk[3]);
}

static void build_program_shares_kcache_cl_build_entries(void) {
    bp_run(0, BP_CL_BUILD, 0, K_OPT, 2);
    bp_run(1, BP_SWAP, 0, K_OPT, 2);
    KT_CHECK_MSG(BP_COMPILES == 1 && g_sh->hits_disk[1] == 1, "after kcache_cl_build: %d compiles, %llu disk hits", BP_COMPILES,
                 (unsigned long long)g_sh->hits_disk[1]);
}

static void build_program_held_built_in_place_and_stored(void) {
    bp_run(0, BP_HELD, 0, K_OPT, 2); /* in place, then stored */
    KT_CHECK_MSG(BP_COMPILES == 1, "held: %d compiles", BP_COMPILES);
    bp_run(1, BP_SWAP, 0, K_OPT, 2);
    KT_CHECK_MSG(BP_COMPILES == 1 && g_sh->hits_disk[1] == 1, "after an in-place build: %d compiles, %llu disk hits", BP_COMPILES,
                 (unsigned long long)g_sh->hits_disk[1]);
}

/* devices: built for one, then the other alone misses; then both (0/NULL) hit */
static void build_program_devices_keyed(void) {
    setenv("POCL_DEVICES", "basic pthread", 1);
    bp_run(0, BP_SWAP, 1, K_OPT, 2);
    bp_run(1, BP_SWAP, 0, K_OPT, 2);
    KT_CHECK_MSG(BP_COMPILES == 2 && g_sh->hits_disk[1] == 0, "device 0 after device 1: %d compiles, %llu disk hits", BP_COMPILES,
                 (unsigned long long)g_sh->hits_disk[1]);
    bp_run(2, BP_SWAP, -1, K_OPT, 2);
    KT_CHECK_MSG(BP_COMPILES == 2 && g_sh->hits_disk[2] == 2, "both devices: %d compiles, %llu disk hits", BP_COMPILES,
                 (unsigned long long)g_sh->hits_disk[2]);
}

/* processes at once on a cold store: one compile */
static void child_bp_together(int slot) {
    wait_gate();
    child_bp(slot);
}
static void build_program_processes_compile_once(void) {
    g_bp = BP_SWAP;
    g_bp_dev = 0;
    g_opt2 = K_OPT;
    g_mul2 = 2;
    g_add2 = 1;
    run_together(3, child_bp_together);
    KT_CHECK_MSG(BP_COMPILES == 1, "3 processes at once: %d compiles", BP_COMPILES);
}

/* what clBuildProgram says: a failure's code and log on the caller's program; misuse; a program from
   binaries passed straight through */
static void child_bp_errors(int slot) {
    clenv E;
    cl_program p, q;
    cl_int e, st = 0;
    char log[4096] = {0};
    const char *bad = BAD_SRC;
    unsigned char *bin = NULL;
    size_t bsize = 0;
    (void)slot;
    if (!cl_up(&E)) return;
    p = clCreateProgramWithSource(E.ctx, 1, &bad, NULL, &e);
    q = p;
    e = kcache_cl_build_program(E.kc, &p, 1, E.dev, K_OPT);
    KT_CHECK_MSG(e == CL_BUILD_PROGRAM_FAILURE && p == q, "a bad source: %d", (int)e);
    clGetProgramBuildInfo(p, E.dev[0], CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    KT_CHECK_MSG(strstr(log, "undefined_thing") != NULL, "the caller's program's log: %s", log);
    clReleaseProgram(p);
    KT_CHECK(kcache_cl_build_program(E.kc, NULL, 0, NULL, NULL) == CL_INVALID_PROGRAM);
    p = NULL;
    KT_CHECK(kcache_cl_build_program(E.kc, &p, 0, NULL, NULL) == CL_INVALID_PROGRAM);
    p = clCreateProgramWithSource(E.ctx, 1, &K_SRC, NULL, &e);
    KT_CHECK(kcache_cl_build_program(E.kc, &p, 1, NULL, K_OPT) == CL_INVALID_VALUE);
    KT_CHECK(kcache_cl_build_program(E.kc, &p, 1, E.dev, K_OPT) == CL_SUCCESS && right(&E, p, 0, 2, 1));
    /* a program from binaries: the driver's build, as it is */
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bsize, &bsize, NULL) == CL_SUCCESS && bsize &&
        (bin = (unsigned char *)malloc(bsize)) != NULL &&
        clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS) {
        const unsigned char *cb = bin;
        int before = BP_COMPILES;
        q = clCreateProgramWithBinary(E.ctx, 1, E.dev, &bsize, &cb, &st, &e);
        cl_program was = q;
        KT_CHECK(kcache_cl_build_program(E.kc, &q, 1, E.dev, K_OPT) == CL_SUCCESS && q == was && right(&E, q, 0, 2, 1));
        KT_CHECK(BP_COMPILES == before);
        clReleaseProgram(q);
    } else {
        KT_FAILF("no binary to load");
    }
    free(bin);
    clReleaseProgram(p);
    cl_down(&E);
}
static void build_program_errors_as_clBuildProgram(void) { in_child(child_bp_errors, 0); }

/* kcache_cl_update: a binary the driver grew at the first launch (PoCL's work-group function) is
   stored again; one that did not grow, or a program kcache cannot key, is left alone */
static uint64_t stored_size(clenv *E, const char *opt) {
    kcache_key k;
    const void *d;
    size_t n = 0;
    const char *src = K_SRC;
    if (kcache_cl_key(E->kc, &k, E->dev[0], "opencl", 1, &src, NULL, opt) != KCACHE_OK) KT_FAILF("kcache_cl_key");
    if (kcache_get(E->kc, &k, &d, &n) == KCACHE_OK) kcache_release(E->kc, d);
    else n = 0;
    kcache_key_free(&k);
    return n;
}

static void child_update(int slot) {
    clenv E;
    cl_program p;
    cl_int e;
    kcache_stats s0, s1, s2;
    if (!cl_up(&E)) return;
    g_sh->builds[slot] = stored_size(&E, K_OPT); /* (the size field carries the stored payload's size) */
    p = clCreateProgramWithSource(E.ctx, 1, &K_SRC, NULL, &e);
    e = clBuildProgram(p, 1, E.dev, K_OPT, NULL, NULL);
    KT_CHECK(e == CL_SUCCESS);
    right(&E, p, 0, 2, 1); /* the first launch */
    kcache_get_stats(E.kc, &s0);
    KT_CHECK(kcache_cl_update(E.kc, p) == KCACHE_OK);
    kcache_get_stats(E.kc, &s1);
    KT_CHECK(kcache_cl_update(E.kc, p) == KCACHE_OK); /* nothing grew since */
    kcache_get_stats(E.kc, &s2);
    g_sh->rejects[slot] = s1.puts - s0.puts;
    g_sh->hits_disk[slot] = s2.puts - s1.puts;
    g_sh->hit[slot] = (int)stored_size(&E, K_OPT);
    KT_CHECK(kcache_cl_update(E.kc, NULL) == KCACHE_EINVAL);
    clReleaseProgram(p);
    cl_down(&E);
}

/* the work-group functions PoCL unpacked into a cache directory: generic ("0-0-0") and specialised */
static int g_generic_so, g_specialised_so;
static int count_so(const char *p, const struct stat *s, int flag, struct FTW *f) {
    size_t n = strlen(p);
    (void)s; (void)f;
    if (flag == FTW_F && n > 3 && strcmp(p + n - 3, ".so") == 0) {
        if (strstr(p, "/0-0-0/")) g_generic_so++;
        else g_specialised_so++;
    }
    return 0;
}
static void count_unpacked(const char *dir) {
    g_generic_so = g_specialised_so = 0;
    nftw(dir, count_so, 16, FTW_PHYS);
}

static void update_stores_grown_binary(void) {
    char dir[600];
    bp_run(0, BP_SWAP, 0, K_OPT, 2); /* stored right after the build */
    in_child(child_update, 1);
    fprintf(stderr, "  stored after the build: %llu bytes; after the first launch: %d bytes\n",
            (unsigned long long)g_sh->builds[1], g_sh->hit[1]);
    KT_CHECK_MSG(g_sh->builds[1] > 0 && (uint64_t)g_sh->hit[1] > g_sh->builds[1] && g_sh->rejects[1] == 1 && g_sh->hits_disk[1] == 0,
                 "update: %llu bytes stored before, %d after, %llu puts, then %llu", (unsigned long long)g_sh->builds[1], g_sh->hit[1],
                 (unsigned long long)g_sh->rejects[1], (unsigned long long)g_sh->hits_disk[1]);
    /* a hit into an empty PoCL cache (PoCL's cache on) loads it and computes right */
    snprintf(dir, sizeof dir, "%s/pocl-empty", g_base);
    setenv("POCL_CACHE_DIR", dir, 1);
    setenv("POCL_KERNEL_CACHE", "1", 1);
    bp_run(2, BP_SWAP, 0, K_OPT, 2);
    KT_CHECK_MSG(BP_COMPILES == 1 && g_sh->hits_disk[2] == 1, "hit after the update: %d compiles, %llu disk hits", BP_COMPILES,
                 (unsigned long long)g_sh->hits_disk[2]);
    /* the load left out the generic work-group function (the stored binary has the one specialised
       at the first launch, which the launch used): PoCL wrote only what runs into its empty cache */
    count_unpacked(dir);
    KT_CHECK_MSG(g_specialised_so == 1 && g_generic_so == 0, "unpacked into an empty PoCL cache: %d specialised, %d generic",
                 g_specialised_so, g_generic_so);
    /* with specialisation off the generic function is the one that runs: kept */
    snprintf(dir, sizeof dir, "%s/pocl-empty-nospec", g_base);
    setenv("POCL_CACHE_DIR", dir, 1);
    setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 1);
    bp_run(3, BP_SWAP, 0, K_OPT, 2);
    unsetenv("POCL_WORK_GROUP_SPECIALIZATION");
    count_unpacked(dir);
    KT_CHECK_MSG(BP_COMPILES == 1 && g_sh->hits_disk[3] == 1 && g_generic_so == 1, "specialisation off: %d compiles, %llu disk hits, %d generic",
                 BP_COMPILES, (unsigned long long)g_sh->hits_disk[3], g_generic_so);
}

/* with PoCL's own cache on, a kcache miss leaves the caller's program unfrozen (the stored binary is
   read from a second program PoCL builds from its cache): after the first launch kcache_cl_update
   stores the grown binary. (Before, the caller's own program was read right after the build, and
   the update found nothing grown.) */
static void child_miss_then_update(int slot) {
    clenv E;
    cl_program p;
    cl_int e;
    uint64_t before;
    kcache_stats s0, s1;
    if (!cl_up(&E)) return;
    p = clCreateProgramWithSource(E.ctx, 1, &K_SRC, NULL, &e);
    KT_CHECK(kcache_cl_build_program(E.kc, &p, 1, E.dev, K_OPT) == CL_SUCCESS);
    before = stored_size(&E, K_OPT);
    right(&E, p, 0, 2, 1); /* the first launch */
    kcache_get_stats(E.kc, &s0);
    KT_CHECK(kcache_cl_update(E.kc, p) == KCACHE_OK);
    kcache_get_stats(E.kc, &s1);
    g_sh->builds[slot] = before;
    g_sh->hit[slot] = (int)stored_size(&E, K_OPT);
    g_sh->rejects[slot] = s1.puts - s0.puts;
    clReleaseProgram(p);
    cl_down(&E);
}

static void miss_leaves_program_unfrozen_with_pocl_cache(void) {
    setenv("POCL_KERNEL_CACHE", "1", 1);
    in_child(child_miss_then_update, 0);
    fprintf(stderr, "  stored at the miss: %llu bytes; after the first launch and kcache_cl_update: %d bytes\n",
            (unsigned long long)g_sh->builds[0], g_sh->hit[0]);
    KT_CHECK_MSG(g_sh->builds[0] > 0 && (uint64_t)g_sh->hit[0] > g_sh->builds[0] && g_sh->rejects[0] == 1,
                 "update after a miss: %llu bytes stored, then %d, %llu puts", (unsigned long long)g_sh->builds[0], g_sh->hit[0],
                 (unsigned long long)g_sh->rejects[0]);
    /* compiles: the miss, and its second program built from PoCL's cache */
    KT_CHECK_MSG(BP_COMPILES == 2, "%d builds from source", BP_COMPILES);
}

/* kcache_cl_update on a program kcache_cl_build built (a unit of its own): the grown binary replaces
   that unit's entry, keyed as kcache_cl_build keyed it (before: stored under kcache_cl_build_program's
   unit "opencl", a new entry nobody reads, the unit's own left small) */
static uint64_t stored_unit_size(clenv *E, const char *unit, cl_uint nsrc, const char **srcs, const char *opt) {
    kcache_key k;
    const void *d;
    size_t n = 0;
    if (kcache_cl_key(E->kc, &k, E->dev[0], unit, nsrc, srcs, NULL, opt) != KCACHE_OK) KT_FAILF("kcache_cl_key");
    if (kcache_get(E->kc, &k, &d, &n) == KCACHE_OK) kcache_release(E->kc, d);
    else n = 0;
    kcache_key_free(&k);
    return n;
}

static void child_build_update(int slot) {
    clenv E;
    cl_program p;
    cl_int e;
    int hit = 1;
    const char *two[2] = {"#define UNUSED_HELPER 1\n", K_SRC}; /* two strings: keyed one by one */
    if (!cl_up(&E)) return;
    p = kcache_cl_build(E.kc, E.ctx, 1, E.dev, "blur-upd", 2, two, NULL, K_OPT, &hit, &e);
    KT_CHECK(p && !hit);
    g_sh->builds[slot] = stored_unit_size(&E, "blur-upd", 2, two, K_OPT);
    right(&E, p, 0, 2, 1); /* the first launch */
    KT_CHECK(kcache_cl_update(E.kc, p) == KCACHE_OK);
    g_sh->hit[slot] = (int)stored_unit_size(&E, "blur-upd", 2, two, K_OPT);
    { /* no entry under kcache_cl_build_program's key (unit "opencl", the strings joined) */
        char joined[4096];
        const char *j = joined;
        snprintf(joined, sizeof joined, "%s%s", two[0], two[1]);
        g_sh->rejects[slot] = stored_unit_size(&E, "opencl", 1, &j, K_OPT);
    }
    clReleaseProgram(p);
    cl_down(&E);
}

static void update_keys_as_kcache_cl_build(void) {
    setenv("POCL_KERNEL_CACHE", "1", 1);
    in_child(child_build_update, 0);
    fprintf(stderr, "  unit blur-upd: %llu bytes stored at the miss, %d after the first launch and kcache_cl_update\n",
            (unsigned long long)g_sh->builds[0], g_sh->hit[0]);
    KT_CHECK_MSG(g_sh->builds[0] > 0 && (uint64_t)g_sh->hit[0] > g_sh->builds[0] && g_sh->rejects[0] == 0,
                 "update of a kcache_cl_build program: %llu bytes, then %d; %llu bytes under unit opencl", (unsigned long long)g_sh->builds[0],
                 g_sh->hit[0], (unsigned long long)g_sh->rejects[0]);
}

int main(void) {
    g_sh = (shared *)mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED) { perror("mmap"); return 2; }
    RUN(platform_present);
    RUN(cached_binary_right_in_new_process);
    RUN(threads_compile_once);
    RUN(processes_compile_once);
    RUN(changed_options_miss_explained);
    RUN(changed_source_miss_explained);
    RUN(edited_header_miss_explained);
    RUN(corrupt_entry_rebuilt);
    RUN(truncated_entry_rebuilt);
    RUN(other_devices_binary_rebuilt);
    RUN(cut_binary_never_reaches_driver);
    RUN(driver_refusal_rebuilt);
    RUN(escaping_path_never_reaches_driver);
    RUN(two_devices_one_cached);
    RUN(build_failure_logged_not_cached);
    RUN(callers_errors_keep_entries);
    RUN(driver_library_changed_miss_explained);
    RUN(without_a_cache);
    RUN(many_programs_spread_over_processes);
    RUN(many_programs_spread_over_threads);
    RUN(many_programs_spread_over_processes_and_threads);
    RUN(many_programs_duplicate_and_failure);
    RUN(several_devices_spread_over_processes);
    RUN(device_key_for_any_blob);
    RUN(build_program_hits_in_new_process);
    RUN(build_program_shares_kcache_cl_build_entries);
    RUN(build_program_held_built_in_place_and_stored);
    RUN(build_program_devices_keyed);
    RUN(build_program_processes_compile_once);
    RUN(build_program_errors_as_clBuildProgram);
    RUN(update_stores_grown_binary);
    RUN(miss_leaves_program_unfrozen_with_pocl_cache);
    RUN(update_keys_as_kcache_cl_build);
    KT_EXIT();
}
