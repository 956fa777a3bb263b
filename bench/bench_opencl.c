/* bench_opencl - time to the first kernel result of one OpenCL program, several ways, on the first
   OpenCL device (its header names the platform and device; PoCL on the CPU where the figures in
   README were measured):

       cold       clCreateProgramWithSource + clBuildProgram, PoCL's kernel cache off (POCL_KERNEL_CACHE=0)
       pocl       the same with PoCL's own kernel cache on and warm
       kcache     kcache_cl_build on a warm store, PoCL's cache off
       raw        the binary read from a file + clCreateProgramWithBinary + clBuildProgram, PoCL's cache
                  off: the floor for any cache that stores binaries
       kc+pocl    kcache_cl_build on a warm store with PoCL's cache on (and warm from earlier loads)
       pyopencl   PyOpenCL's cached build (cl.Program(...).build() on a warm cache, PoCL's cache off),
                  when a python3 on this machine imports pyopencl and numpy

   "Time to first result" runs from just before the program is made (the context and queue exist) to
   the first kernel's output read back. Every measurement is a fresh process (PoCL, like every driver,
   keeps programs per process), forked before anything touched OpenCL; the median of several is
   reported. Two programs, a small one (one kernel) and a 50-kernel one, each under two PoCL settings:

       default    PoCL as installed. PoCL compiles a work-group function specialised for the launch's
                  local size at the first clEnqueueNDRangeKernel of a kernel (tens of ms); a binary taken
                  right after the build holds only the generic one, so every binary-based load with
                  PoCL's cache off (kcache, raw, PyOpenCL) pays that compile at the first launch, while
                  PoCL's own cache keeps the specialised functions of earlier runs.
       nospec     POCL_WORK_GROUP_SPECIALIZATION=0: the generic work-group function is used as it is.

   Then the in-process repeat: kcache_cl_build again for a program this process built.
   Ratios, not absolute times, are the result: kcache/raw (goal <= 1.1), pocl/kcache (goal >= 20).

   Last, a cold start: P processes (P = the cores, at most 4: PoCL compiles on the CPU) start together
   on an empty store, each needing the same N = 4 x P programs of 10 kernels: with one
   kcache_cl_build_many each, and with one kcache_cl_build per program (the chain: each program is
   compiled once, but one after another while the other processes wait). Both as ratios against the
   floor: one fresh process building ceil(N / P) of the programs with clBuildProgram and taking each
   one's binary (what a cache of binaries must have made: PoCL makes the machine code then), no cache
   (that is ceil(N / P) x one program's build time), measured in the same run, runs interleaved (goal
   for the batch: <= 1.5x). Then the warm start: a new process's kcache_cl_build_many of the stored
   programs vs one kcache_cl_build hit each (goal <= 1.2x). --start-only runs this part alone.
   Last, on PoCL, its cache empty (a fresh container, CI): four programs (a 2D FFT pipeline of six
   kernels in float and in double, the demo's Mandelbrot kernel, the 50-kernel program with every
   kernel launched), each built with kcache_cl_build_program and updated with kcache_cl_update after
   its first results: a warm store into an empty PoCL cache against one into a warm PoCL cache (goal
   <= 3x), and the run that fills the store against no cache (see pocl_empty).
   --pocl-empty-only runs this part alone.
   Options: --quick (fewer runs), --dir DIR (stores and PoCL caches there; default /tmp). Build: cc -std=c99 -O2 -I. bench/bench_opencl.c -lOpenCL -lpthread -lm */
#define KCACHE_IMPLEMENTATION
#ifndef KCACHE_OPENCL
#define KCACHE_OPENCL
#endif
#define KCACHE_TEST_CL /* kcache_test_cl_payload_ok: a hit's binary check, timed alone */
#include "kcache.h"

#include "../examples/opencl_demo_kernel.h"

#include <ftw.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/wait.h>

enum { N = 4096, MANY = 50 };

static char g_dir[256];
static double *g_out; /* shared with the children: one result each */

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const char *SMALL =
    "kernel void k0(global const float *x, global float *y) {\n"
    "    size_t i = get_global_id(0);\n"
    "    float v = x[i];\n"
    "    y[i] = (v * 3.0f + 1.0f) * v - 2.0f;\n"
    "}\n";

/* Kernel k of the bench's shape with its constants (loops, the sine's factor, y's factor), into s
   (cap bytes); its length. */
static size_t shaped_kernel(char *s, size_t cap, int k, int loops, int sine, int mul) {
    return (size_t)snprintf(s, cap,
                            "kernel void k%d(global const float *x, global float *y) {\n"
                            "    size_t i = get_global_id(0);\n"
                            "    float v = x[i], acc = 0.0f;\n"
                            "    for (int t = 0; t < %d; t++) acc = acc * 0.5f + sin(v * %d.0f + (float)t);\n"
                            "    y[i] = (v * %d.0f + 1.0f) * v - 2.0f + acc * 0.0f;\n"
                            "}\n",
                            k, loops, sine, mul);
}

/* 50 kernels of the same shape, each with constants of its own (a run-time code generator's output). */
static char *many_source(void) {
    size_t cap = (size_t)MANY * 512, len = 0;
    char *s = (char *)malloc(cap);
    int k;
    for (k = 0; k < MANY; k++) len += shaped_kernel(s + len, cap - len, k, 4 + k % 7, k + 1, k == 0 ? 3 : k + 3);
    return s;
}

typedef struct prog { const char *name, *src, *opt; } prog;

/* ---- the child: one way of getting the program, timed to the first result ---- */

enum { COLD, POCL, KCACHE, RAW, PREP, REPEAT, HITPATH };

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *b;
    long len;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    b = (char *)malloc(len > 0 ? (size_t)len : 1);
    *n = fread(b, 1, (size_t)(len > 0 ? len : 0), f);
    fclose(f);
    return b;
}

static double child(int how, const prog *P, int slot) {
    cl_platform_id plat;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    cl_program p = NULL;
    cl_kernel k;
    cl_mem bx, by;
    cl_int e;
    float *x = (float *)malloc(sizeof(float) * N), *y = (float *)malloc(sizeof(float) * N);
    size_t g = N, i;
    double t0, t1, tb, tk;
    char path[512];
    kcache *kc = NULL;
    int hit = 0;
    const char *src = P->src;
    if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS || clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
        fprintf(stderr, "bench_opencl: no OpenCL device\n");
        return -1;
    }
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    q = clCreateCommandQueue(ctx, dev, 0, &e);
    for (i = 0; i < N; i++) x[i] = (float)i / N;
    snprintf(path, sizeof path, "%s/%s.bin", g_dir, P->name);
    if (how == KCACHE || how == PREP || how == REPEAT) kcache_open(&kc, NULL);

    if (how == HITPATH) { /* kcache's own work in a hit, in a fresh process: key, store read, binary check */
        kcache_key key;
        const void *data;
        size_t size;
        char why[128];
        double a, b, c, d;
        size_t len = strlen(src);
        kcache_open(&kc, NULL);
        a = now_ms();
        kcache_cl_key(kc, &key, dev, P->name, 1, &src, &len, P->opt);
        b = now_ms();
        if (kcache_get(kc, &key, &data, &size) != KCACHE_OK) { fprintf(stderr, "bench_opencl: no entry\n"); return -1; }
        c = now_ms();
        if (!kcache_test_cl_payload_ok(dev, data, size, why, sizeof why)) fprintf(stderr, "bench_opencl: %s\n", why);
        d = now_ms();
        g_out[slot] = (b - a) * 1e3;
        g_out[slot + 1] = (c - b) * 1e3;
        g_out[slot + 2] = (d - c) * 1e3;
        g_out[slot + 3] = (double)size;
        kcache_release(kc, data);
        kcache_key_free(&key);
        kcache_close(kc);
        return 0;
    }
    t0 = now_ms();
    if (how == COLD || how == POCL) {
        p = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
        e = clBuildProgram(p, 1, &dev, P->opt, NULL, NULL);
    } else if (how == KCACHE || how == PREP || how == REPEAT) {
        p = kcache_cl_build(kc, ctx, 1, &dev, P->name, 1, &src, NULL, P->opt, &hit, &e);
        if (how == KCACHE && !hit) fprintf(stderr, "bench_opencl: kcache missed on a warm store\n");
    } else if (how == RAW) {
        size_t n;
        char *bin = read_file(path, &n);
        const unsigned char *b = (const unsigned char *)bin;
        cl_int st;
        p = bin ? clCreateProgramWithBinary(ctx, 1, &dev, &n, &b, &st, &e) : NULL;
        if (p) e = clBuildProgram(p, 1, &dev, P->opt, NULL, NULL);
        free(bin);
    }
    if (!p || e != CL_SUCCESS) { fprintf(stderr, "bench_opencl: %s: no program (%d)\n", P->name, (int)e); return -1; }
    tb = now_ms();
    k = clCreateKernel(p, "k0", &e);
    bx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * N, x, &e);
    by = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(float) * N, NULL, &e);
    clSetKernelArg(k, 0, sizeof bx, &bx);
    clSetKernelArg(k, 1, sizeof by, &by);
    tk = now_ms();
    clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
    clEnqueueReadBuffer(q, by, CL_TRUE, 0, sizeof(float) * N, y, 0, NULL, NULL);
    t1 = now_ms();
    if (getenv("BENCH_SPLIT"))
        fprintf(stderr, "  [%s how %d] program %.2f ms, kernel+buffers %.2f ms, first launch %.2f ms\n", P->name, how, tb - t0, tk - tb,
                t1 - tk);
    for (i = 0; i < N; i++) {
        float v = x[i], want = (v * 3.0f + 1.0f) * v - 2.0f;
        if (fabsf(y[i] - want) > 1e-4f * (1.0f + fabsf(want))) { fprintf(stderr, "bench_opencl: wrong result\n"); return -1; }
    }
    if (how == PREP) { /* the binary, for RAW */
        size_t n;
        unsigned char *bin;
        FILE *f;
        clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL);
        bin = (unsigned char *)malloc(n);
        clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL);
        if ((f = fopen(path, "wb")) != NULL) { fwrite(bin, 1, n, f); fclose(f); }
        free(bin);
    }
    if (how == REPEAT) { /* the in-process cache: the same call again and again */
        int r, reps = 200000;
        double a = now_ms();
        for (r = 0; r < reps; r++) {
            cl_program again = kcache_cl_build(kc, ctx, 1, &dev, P->name, 1, &src, NULL, P->opt, &hit, &e);
            clReleaseProgram(again);
        }
        g_out[slot] = (now_ms() - a) * 1e6 / reps; /* ns per call */
    } else {
        g_out[slot] = t1 - t0;
    }
    clReleaseMemObject(bx);
    clReleaseMemObject(by);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    kcache_close(kc);
    free(x);
    free(y);
    return g_out[slot];
}

static const char *g_setting = "default"; /* names the PoCL cache directory of a setting */

/* one fresh process for one measurement */
static double run(int how, const prog *P, int pocl_cache) {
    pid_t pid;
    int st;
    char v[300];
    g_out[0] = -1;
    setenv("POCL_KERNEL_CACHE", pocl_cache ? "1" : "0", 1);
    snprintf(v, sizeof v, "%s/pocl-%s", g_dir, g_setting);
    setenv("POCL_CACHE_DIR", v, 1);
    snprintf(v, sizeof v, "%s/kcache-%s", g_dir, g_setting);
    setenv("KCACHE_DIR", v, 1);
    fflush(stdout);
    pid = fork();
    if (pid == 0) _exit(child(how, P, 0) < 0 ? 1 : 0);
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    return g_out[0];
}

/* The platform and device the measurements use (the first of each, as in child), asked in a fresh
   process like every measurement: "NAME (VENDOR), device NAME (CPU|GPU|...)"; 1 when it is PoCL. */
static int platform_used(char *out, size_t cap) {
    char *shared = (char *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pid_t pid;
    int st, pocl = 0;
    snprintf(out, cap, "no OpenCL platform");
    if (shared == MAP_FAILED) return 0;
    shared[0] = 0;
    fflush(stdout);
    if ((pid = fork()) == 0) {
        cl_platform_id plat;
        cl_device_id dev;
        cl_device_type type = 0;
        char name[256] = "?", vendor[256] = "?", dname[256] = "?";
        if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS) _exit(1);
        clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
        clGetPlatformInfo(plat, CL_PLATFORM_VENDOR, sizeof vendor - 1, vendor, NULL);
        if (clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) == CL_SUCCESS) {
            clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname - 1, dname, NULL);
            clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
        }
        snprintf(shared + 1, 4095, "%s (%s), device %s (%s)", name, vendor, dname,
                 type & CL_DEVICE_TYPE_CPU ? "CPU" : type & CL_DEVICE_TYPE_GPU ? "GPU" : type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator" : "other");
        shared[0] = strstr(name, "Portable Computing Language") || strstr(vendor, "pocl") ? 'p' : 'o';
        _exit(0);
    }
    if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 && shared[0]) {
        snprintf(out, cap, "%s", shared + 1);
        pocl = shared[0] == 'p';
    }
    munmap(shared, 4096);
    return pocl;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(int how, const prog *P, int pocl_cache, int runs) {
    double v[32];
    int i;
    if (runs > 32) runs = 32;
    for (i = 0; i < runs; i++)
        if ((v[i] = run(how, P, pocl_cache)) < 0) return -1;
    qsort(v, (size_t)runs, sizeof v[0], cmp);
    return v[runs / 2];
}

/* PyOpenCL's cached build, timed inside python the same way (fresh interpreter per run) */
static const char *g_python; /* an interpreter that imports pyopencl, or NULL */
static double pyopencl_median(const prog *P, int runs) {
    char script[600], cmd[4096], line[128];
    double v[32];
    FILE *f;
    int i;
    snprintf(script, sizeof script, "%s/py_%s.py", g_dir, P->name);
    f = fopen(script, "w");
    if (!f) return -1;
    fprintf(f,
            "import sys, time\n"
            "import numpy as np\n"
            "import pyopencl as cl\n"
            "src = open(sys.argv[1]).read()\n"
            "plat = cl.get_platforms()[0]\n"
            "dev = plat.get_devices()[0]\n"
            "ctx = cl.Context([dev])\n"
            "q = cl.CommandQueue(ctx)\n"
            "x = (np.arange(%d, dtype=np.float32) / %d).astype(np.float32)\n"
            "y = np.empty_like(x)\n"
            "t0 = time.perf_counter()\n"
            "prg = cl.Program(ctx, src).build(options=sys.argv[2].split())\n"
            "mf = cl.mem_flags\n"
            "bx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)\n"
            "by = cl.Buffer(ctx, mf.WRITE_ONLY, y.nbytes)\n"
            "prg.k0(q, x.shape, None, bx, by)\n"
            "cl.enqueue_copy(q, y, by)\n"
            "t1 = time.perf_counter()\n"
            "assert np.allclose(y, (x * 3 + 1) * x - 2, rtol=1e-4, atol=1e-4)\n"
            "print((t1 - t0) * 1e3)\n",
            N, N);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/py_%s.cl", g_dir, P->name);
    f = fopen(cmd, "w");
    if (!f) return -1;
    fputs(P->src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "XDG_CACHE_HOME='%s/xdg-%s' POCL_KERNEL_CACHE=0 POCL_CACHE_DIR='%s/pocl-py' %s '%s' '%s/py_%s.cl' '%s' 2>/dev/null",
             g_dir, g_setting, g_dir, g_python, script, g_dir, P->name, P->opt);
    for (i = -1; i < runs; i++) { /* the first run fills PyOpenCL's cache */
        f = popen(cmd, "r");
        if (!f || !fgets(line, sizeof line, f)) { if (f) pclose(f); return -1; }
        if (pclose(f) != 0) return -1;
        if (i >= 0) v[i] = atof(line);
    }
    qsort(v, (size_t)runs, sizeof v[0], cmp);
    return v[runs / 2];
}

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s; (void)flag; (void)f;
    return remove(p);
}


/* ---- a cold start: P processes x N programs ---------------------------------------------------- */

enum { START_KERNELS = 10, START_MAX = 16 };
enum { START_MANY, START_CHAIN, START_FLOOR };

typedef struct start_rep { double end_ms; int builds, ok; } start_rep;

/* Program p of the cold start: START_KERNELS kernels of the bench's shape, constants of its own. */
static char *start_source(int p) {
    size_t cap = (size_t)START_KERNELS * 512, len = 0;
    char *s = (char *)malloc(cap);
    int k;
    for (k = 0; k < START_KERNELS; k++) len += shaped_kernel(s + len, cap - len, k, 4 + (k + p) % 7, p * START_KERNELS + k + 1, 3);
    return s;
}

/* One process of a cold start: OpenCL up, then (after the gate) the programs [0, n) built `how`. */
static void start_child(int how, int r, int n, int ready, int gate, start_rep *rep) {
    cl_platform_id plat;
    cl_device_id dev;
    cl_context ctx;
    cl_int e;
    kcache *kc = NULL;
    kcache_cl_program progs[START_MAX];
    char *srcs[START_MAX], unit[START_MAX][16], c = 1;
    int i;
    if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS || clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) _exit(1);
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    if (how != START_FLOOR && kcache_open(&kc, NULL) != KCACHE_OK) _exit(1);
    memset(progs, 0, sizeof progs);
    for (i = 0; i < n; i++) {
        srcs[i] = start_source(i);
        snprintf(unit[i], sizeof unit[i], "start%d", i);
        progs[i].unit = unit[i];
        progs[i].nsrc = 1;
        progs[i].srcs = (const char **)&srcs[i];
        progs[i].options = "-cl-mad-enable";
    }
    if (write(ready, &c, 1) != 1 || read(gate, &c, 1) < 0) _exit(1);
    if (how == START_MANY) {
        kcache_cl_build_many(kc, ctx, 1, &dev, progs, (size_t)n, 1);
    } else {
        for (i = 0; i < n; i++) {
            if (how == START_CHAIN) {
                progs[i].program = kcache_cl_build(kc, ctx, 1, &dev, unit[i], 1, progs[i].srcs, NULL, progs[i].options, NULL, &progs[i].err);
            } else { /* the floor: the compiler alone, and its binary (what any cache of binaries takes
                        from it: PoCL makes the machine code only when the binary is asked for) */
                cl_program p = clCreateProgramWithSource(ctx, 1, progs[i].srcs, NULL, &e);
                size_t size = 0;
                unsigned char *bin;
                if (p && clBuildProgram(p, 1, &dev, progs[i].options, NULL, NULL) == CL_SUCCESS &&
                    clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) == CL_SUCCESS && size &&
                    (bin = (unsigned char *)malloc(size)) != NULL) {
                    if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS) progs[i].program = p;
                    free(bin);
                }
                if (p && !progs[i].program) clReleaseProgram(p);
            }
        }
    }
    rep[r].end_ms = now_ms();
    if (kc) {
        kcache_stats st;
        kcache_get_stats(kc, &st);
        rep[r].builds = (int)st.builds;
    }
    for (i = 0; i < n; i++) {
        cl_kernel k = progs[i].program ? clCreateKernel(progs[i].program, "k0", &e) : NULL;
        rep[r].ok += k != NULL;
        if (k) clReleaseKernel(k);
        if (progs[i].program) clReleaseProgram(progs[i].program);
        free(srcs[i]);
    }
    clReleaseContext(ctx);
    kcache_close(kc);
    _exit(0);
}

/* procs processes building n programs `how` on a store of their own (run `run`), started together:
   the wall time from the gate to the last one done; -1 when one failed. *builds: every compile. */
static double start_run(int how, int procs, int n, const char *store, int *builds) {
    start_rep *rep = (start_rep *)mmap(NULL, sizeof(start_rep) * START_MAX, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int gate[2], ready[2], r, st, bad = 0;
    double t0, end = 0;
    char v[400], c;
    if (rep == MAP_FAILED || pipe(gate) != 0 || pipe(ready) != 0) return -1;
    memset(rep, 0, sizeof(start_rep) * START_MAX);
    snprintf(v, sizeof v, "%s/start-%s", g_dir, store);
    setenv("KCACHE_DIR", v, 1);
    setenv("POCL_KERNEL_CACHE", "0", 1);
    snprintf(v, sizeof v, "%s/pocl-start", g_dir);
    setenv("POCL_CACHE_DIR", v, 1);
    for (r = 0; r < procs; r++) {
        fflush(stdout);
        if (fork() == 0) {
            close(gate[1]);
            close(ready[0]);
            start_child(how, r, n, ready[1], gate[0], rep);
        }
    }
    close(gate[0]);
    close(ready[1]);
    for (r = 0; r < procs; r++)
        if (read(ready[0], &c, 1) != 1) bad = 1;
    t0 = now_ms();
    close(gate[1]); /* go */
    while (wait(&st) > 0)
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
    close(ready[0]);
    *builds = 0;
    for (r = 0; r < procs; r++) {
        if (rep[r].end_ms > end) end = rep[r].end_ms;
        if (rep[r].ok != n) bad = 1;
        *builds += rep[r].builds;
    }
    munmap(rep, sizeof(start_rep) * START_MAX);
    return bad ? -1 : end - t0;
}

static void cold_start(int quick) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int procs = cores < 1 ? 1 : cores > 4 ? 4 : (int)cores, n = 4 * procs, each = (n + procs - 1) / procs;
    int runs = quick ? 1 : 3, r, bm = 0, bc = 0, nb, wb = 0;
    double many[8], chain[8], floor_[8], wmany[8], whits[8], fm, fc, ff, load[3] = {0, 0, 0};
    char store[32];
    for (r = 0; r < runs; r++) { /* interleaved, so that the machine's moods fall on each alike */
        snprintf(store, sizeof store, "floor-%d", r);
        floor_[r] = start_run(START_FLOOR, 1, each, store, &nb);
        snprintf(store, sizeof store, "many-%d", r);
        many[r] = start_run(START_MANY, procs, n, store, &nb);
        bm = nb;
        /* the warm start on that store: a new process's kcache_cl_build_many vs one kcache_cl_build hit each */
        wmany[r] = start_run(START_MANY, 1, n, store, &nb);
        wb += nb;
        whits[r] = start_run(START_CHAIN, 1, n, store, &nb);
        wb += nb;
        snprintf(store, sizeof store, "chain-%d", r);
        chain[r] = start_run(START_CHAIN, procs, n, store, &nb);
        bc = nb;
        if (floor_[r] < 0 || many[r] < 0 || chain[r] < 0 || wmany[r] < 0 || whits[r] < 0) { printf("cold start: a run failed\n"); return; }
    }
    qsort(wmany, (size_t)runs, sizeof wmany[0], cmp);
    qsort(whits, (size_t)runs, sizeof whits[0], cmp);
    qsort(many, (size_t)runs, sizeof many[0], cmp);
    qsort(chain, (size_t)runs, sizeof chain[0], cmp);
    qsort(floor_, (size_t)runs, sizeof floor_[0], cmp);
    fm = many[runs / 2];
    fc = chain[runs / 2];
    ff = floor_[runs / 2];
    getloadavg(load, 3);
    printf("cold start, %d processes x %d programs of %d kernels on one empty store (median of %d; load average %.2f):\n", procs, n,
           START_KERNELS, runs, load[0]);
    printf("  floor: one process building ceil(N/P) = %d programs (clBuildProgram and the binary), no cache: %.0f ms (%.0f ms a program)\n",
           each, ff, ff / each);
    printf("  kcache_cl_build_many      %7.0f ms = %5.2fx the floor, %d compiles (goal <= 1.5x, each program once)\n", fm, fm / ff, bm);
    printf("  one kcache_cl_build each  %7.0f ms = %5.2fx the floor, %d compiles (the chain: about P = %dx)\n", fc, fc / ff, bc, procs);
    printf("  warm start, a new process: kcache_cl_build_many of the %d stored programs %.1f ms vs one kcache_cl_build hit each %.1f ms: %.2fx"
           " (goal <= 1.2x), %d compiles\n",
           n, wmany[runs / 2], whits[runs / 2], wmany[runs / 2] / whits[runs / 2], wb);
}

/* ---- PoCL's cache empty: a warm kcache into a fresh container, and the run that fills ---------- */

/* A 2D FFT as an FFT library generates it: a 64-point FFT in local memory (one work-group a row,
   barriers), Stockham radix-2 stages for the columns, a tiled transpose, real-to-complex packing and
   a scale; REAL is float or double (a program each). The pipeline runs forward then inverse and
   checks the input comes back. */
static const char *FFT_SRC =
    "#ifdef USE_DOUBLE\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "typedef double R; typedef double2 R2;\n"
    "#else\n"
    "typedef float R; typedef float2 R2;\n"
    "#endif\n"
    "#define PI_R ((R)3.14159265358979323846)\n"
    "R2 cmul(R2 a, R2 b) { return (R2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }\n"
    "R2 twiddle(int k, int p, int sign) { R a = (R)sign * PI_R * (R)k / (R)p; return (R2)(cos(a), sin(a)); }\n"
    "kernel void pack_real(global const R *in, global R2 *out) {\n"
    "    size_t i = get_global_id(0); out[i] = (R2)(in[i], (R)0);\n"
    "}\n"
    "kernel void fft64_rows(global R2 *data, int sign, local R2 *a, local R2 *b) {\n"
    "    int t = get_local_id(0), row = get_group_id(0);\n"
    "    global R2 *d = data + row * 64;\n"
    "    a[t] = d[t]; a[t + 32] = d[t + 32];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (int p = 1; p < 64; p <<= 1) {\n"
    "        int k = t & (p - 1);\n"
    "        R2 u0 = a[t], u1 = cmul(a[t + 32], twiddle(k, p, sign));\n"
    "        int j = (t << 1) - k;\n"
    "        b[j] = u0 + u1; b[j + p] = u0 - u1;\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        local R2 *s = a; a = b; b = s;\n"
    "    }\n"
    "    d[t] = a[t]; d[t + 32] = a[t + 32];\n"
    "}\n"
    "kernel void fft_stage(global const R2 *in, global R2 *out, int n, int p, int sign) {\n"
    "    int i = get_global_id(0), row = get_global_id(1);\n"
    "    int k = i & (p - 1), hn = n >> 1;\n"
    "    in += row * n; out += row * n;\n"
    "    R2 u0 = in[i], u1 = cmul(in[i + hn], twiddle(k, p, sign));\n"
    "    int j = (i << 1) - k;\n"
    "    out[j] = u0 + u1; out[j + p] = u0 - u1;\n"
    "}\n"
    "kernel void transpose(global const R2 *in, global R2 *out, int w, int h, local R2 *tile) {\n"
    "    int lx = get_local_id(0), ly = get_local_id(1);\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    tile[ly * 17 + lx] = in[y * w + x];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    int ox = get_group_id(1) * 16 + lx, oy = get_group_id(0) * 16 + ly;\n"
    "    out[oy * h + ox] = tile[lx * 17 + ly];\n"
    "}\n"
    "kernel void scale(global R2 *x, R s) { size_t i = get_global_id(0); x[i] *= s; }\n"
    "kernel void real_part(global const R2 *in, global R *out) { size_t i = get_global_id(0); out[i] = in[i].x; }\n";

enum { FFT_N = 64 };

/* The FFT pipeline forward and back on a 64x64 input; 0 when the input came back. */
static int fft_pipeline(cl_context ctx, cl_command_queue q, cl_program p, int dbl) {
    const char *names[6] = {"pack_real", "fft64_rows", "fft_stage", "transpose", "scale", "real_part"};
    cl_kernel k[6];
    cl_mem in, a, b, out;
    cl_int e = CL_SUCCESS;
    size_t rs = dbl ? sizeof(double) : sizeof(float), n2 = (size_t)FFT_N * FFT_N, i;
    size_t g1 = n2, rows_g = (size_t)FFT_N * 32, rows_l = 32, st_g[2] = {FFT_N / 2, FFT_N}, tr_g[2] = {FFT_N, FFT_N}, tr_l[2] = {16, 16};
    unsigned char *host = (unsigned char *)malloc(rs * n2), *back = (unsigned char *)malloc(rs * n2);
    int n = FFT_N, w = FFT_N, sign, pass, pp, bad = 0;
    for (i = 0; i < 6; i++) {
        k[i] = clCreateKernel(p, names[i], &e);
        if (!k[i]) return 1;
    }
    for (i = 0; i < n2; i++) {
        double v = (double)((i * 7919) % 257) / 257.0 - 0.5;
        if (dbl) ((double *)host)[i] = v; else ((float *)host)[i] = (float)v;
    }
    in = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, rs * n2, host, &e);
    a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * rs * n2, NULL, &e);
    b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * rs * n2, NULL, &e);
    out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, rs * n2, NULL, &e);
    clSetKernelArg(k[0], 0, sizeof in, &in);
    clSetKernelArg(k[0], 1, sizeof a, &a);
    e |= clEnqueueNDRangeKernel(q, k[0], 1, NULL, &g1, NULL, 0, NULL, NULL);
    for (pass = 0; pass < 2; pass++) { /* forward, then inverse */
        sign = pass == 0 ? -1 : 1;
        /* rows in local memory */
        clSetKernelArg(k[1], 0, sizeof a, &a);
        clSetKernelArg(k[1], 1, sizeof sign, &sign);
        clSetKernelArg(k[1], 2, 2 * rs * 64, NULL);
        clSetKernelArg(k[1], 3, 2 * rs * 64, NULL);
        e |= clEnqueueNDRangeKernel(q, k[1], 1, NULL, &rows_g, &rows_l, 0, NULL, NULL);
        /* transpose a -> b, columns by Stockham stages (b <-> a), transpose back to a */
        clSetKernelArg(k[3], 0, sizeof a, &a);
        clSetKernelArg(k[3], 1, sizeof b, &b);
        clSetKernelArg(k[3], 2, sizeof w, &w);
        clSetKernelArg(k[3], 3, sizeof w, &w);
        clSetKernelArg(k[3], 4, 2 * rs * 16 * 17, NULL);
        e |= clEnqueueNDRangeKernel(q, k[3], 2, NULL, tr_g, tr_l, 0, NULL, NULL);
        for (pp = 1, i = 0; pp < FFT_N; pp <<= 1, i++) {
            cl_mem from = i % 2 ? a : b, to = i % 2 ? b : a;
            clSetKernelArg(k[2], 0, sizeof from, &from);
            clSetKernelArg(k[2], 1, sizeof to, &to);
            clSetKernelArg(k[2], 2, sizeof n, &n);
            clSetKernelArg(k[2], 3, sizeof pp, &pp);
            clSetKernelArg(k[2], 4, sizeof sign, &sign);
            e |= clEnqueueNDRangeKernel(q, k[2], 2, NULL, st_g, NULL, 0, NULL, NULL);
        }
        /* 6 stages: the columns ended in b */
        clSetKernelArg(k[3], 0, sizeof b, &b);
        clSetKernelArg(k[3], 1, sizeof a, &a);
        e |= clEnqueueNDRangeKernel(q, k[3], 2, NULL, tr_g, tr_l, 0, NULL, NULL);
    }
    if (dbl) {
        double s = 1.0 / (double)n2;
        clSetKernelArg(k[4], 1, sizeof s, &s);
    } else {
        float s = 1.0f / (float)n2;
        clSetKernelArg(k[4], 1, sizeof s, &s);
    }
    clSetKernelArg(k[4], 0, sizeof a, &a);
    e |= clEnqueueNDRangeKernel(q, k[4], 1, NULL, &g1, NULL, 0, NULL, NULL);
    clSetKernelArg(k[5], 0, sizeof a, &a);
    clSetKernelArg(k[5], 1, sizeof out, &out);
    e |= clEnqueueNDRangeKernel(q, k[5], 1, NULL, &g1, NULL, 0, NULL, NULL);
    e |= clEnqueueReadBuffer(q, out, CL_TRUE, 0, rs * n2, back, 0, NULL, NULL);
    for (i = 0; i < n2 && e == CL_SUCCESS; i++) {
        double x = dbl ? ((double *)host)[i] : ((float *)host)[i], y = dbl ? ((double *)back)[i] : ((float *)back)[i];
        if (fabs(x - y) > (dbl ? 1e-9 : 1e-4)) bad = 1;
    }
    for (i = 0; i < 6; i++) clReleaseKernel(k[i]);
    clReleaseMemObject(in);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(out);
    free(host);
    free(back);
    return e != CL_SUCCESS || bad;
}

/* The demo's Mandelbrot kernel over 512x512; 0 when the escape counts sum as a source build's do. */
static int mandel_pipeline(cl_context ctx, cl_command_queue q, cl_program p, int unused) {
    cl_int e, w = 512, h = 512;
    size_t g[2] = {512, 512}, i;
    long long sum = 0;
    int *px = (int *)malloc(sizeof(int) * 512 * 512);
    cl_kernel k = clCreateKernel(p, "mandel", &e);
    cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * 512 * 512, NULL, &e);
    (void)unused;
    if (!k) return 1;
    clSetKernelArg(k, 0, sizeof out, &out);
    clSetKernelArg(k, 1, sizeof w, &w);
    clSetKernelArg(k, 2, sizeof h, &h);
    e = clEnqueueNDRangeKernel(q, k, 2, NULL, g, NULL, 0, NULL, NULL);
    e |= clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof(int) * 512 * 512, px, 0, NULL, NULL);
    for (i = 0; i < (size_t)512 * 512; i++) sum += px[i];
    clReleaseMemObject(out);
    clReleaseKernel(k);
    free(px);
    if (e != CL_SUCCESS || sum <= 0) return 1;
    if (g_out[8] == 0) g_out[8] = (double)sum; /* the first run's sum (shared with every later child) */
    return (double)sum != g_out[8];
}

/* Every kernel of the 50-kernel program (a code generator's output), each launched once and checked. */
static int many_pipeline(cl_context ctx, cl_command_queue q, cl_program p, int unused) {
    float *x = (float *)malloc(sizeof(float) * N), *y = (float *)malloc(sizeof(float) * N);
    size_t g = N, i;
    cl_int e = CL_SUCCESS;
    cl_mem bx, by;
    int kk, bad = 0;
    (void)unused;
    for (i = 0; i < N; i++) x[i] = (float)i / N;
    bx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * N, x, &e);
    by = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(float) * N, NULL, &e);
    for (kk = 0; kk < MANY && !bad; kk++) {
        char name[16];
        float mul = kk == 0 ? 3.0f : (float)(kk + 3);
        cl_kernel k;
        snprintf(name, sizeof name, "k%d", kk);
        if ((k = clCreateKernel(p, name, &e)) == NULL) { bad = 1; break; }
        clSetKernelArg(k, 0, sizeof bx, &bx);
        clSetKernelArg(k, 1, sizeof by, &by);
        e |= clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
        e |= clEnqueueReadBuffer(q, by, CL_TRUE, 0, sizeof(float) * N, y, 0, NULL, NULL);
        for (i = 0; i < N; i++) {
            float v = x[i], want = (v * mul + 1.0f) * v - 2.0f;
            if (fabsf(y[i] - want) > 1e-3f * (1.0f + fabsf(want))) bad = 1;
        }
        clReleaseKernel(k);
    }
    clReleaseMemObject(bx);
    clReleaseMemObject(by);
    free(x);
    free(y);
    return e != CL_SUCCESS || bad;
}

typedef struct epro { const char *name, *src, *opt; int (*pipeline)(cl_context, cl_command_queue, cl_program, int); int arg; } epro;

enum { E_NONE, E_KCACHE };
enum { PE_FIRST = 0, PE_TOTAL = 1, PE_HIT = 2, PE_PUTS = 3, PE_BUILD = 4 };

/* One fresh process: the program built (E_NONE: clCreateProgramWithSource + clBuildProgram;
   E_KCACHE: the same with kcache_cl_build_program, then kcache_cl_update after the first results, as
   the README says to), its pipeline run and checked. g_out: the time to the first (checked) result,
   the time with the update, whether kcache hit, the update's puts. */
static int empty_child(int how, const epro *E) {
    cl_platform_id plat;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    cl_program p;
    cl_int e;
    kcache *kc = NULL;
    kcache_stats s0, s1;
    const char *src = E->src;
    double t0, tb;
    if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS || clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) return 1;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    q = clCreateCommandQueue(ctx, dev, 0, &e);
    if (how == E_KCACHE && kcache_open(&kc, NULL) != KCACHE_OK) return 1;
    t0 = now_ms();
    p = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
    if (how == E_KCACHE) e = kcache_cl_build_program(kc, &p, 1, &dev, E->opt);
    else e = clBuildProgram(p, 1, &dev, E->opt, NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        fprintf(stderr, "bench_opencl: %s: the build failed (%d): %s\n", E->name, (int)e, log);
        return 1;
    }
    tb = now_ms();
    g_out[PE_BUILD] = tb - t0;
    if (E->pipeline(ctx, q, p, E->arg) != 0) { fprintf(stderr, "bench_opencl: %s: wrong result\n", E->name); return 1; }
    g_out[PE_FIRST] = now_ms() - t0;
    if (kc) {
        kcache_get_stats(kc, &s0);
        kcache_cl_update(kc, p); /* (a program loaded from binaries: nothing to do, KCACHE_EINVAL) */
        kcache_get_stats(kc, &s1);
        g_out[PE_HIT] = s0.builds == 0;
        g_out[PE_PUTS] = (double)(s1.puts - s0.puts);
    }
    g_out[PE_TOTAL] = now_ms() - t0;
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    kcache_close(kc);
    return 0;
}

/* One measurement in a fresh process: PoCL's cache `pocl` (0 off, else on in directory pdir), the
   store sdir (NULL: no kcache). -1 when it failed. */
static double empty_run(int how, const epro *E, int pocl, const char *pdir, const char *sdir, double *total) {
    pid_t pid;
    int st;
    char v[400];
    g_out[PE_FIRST] = -1;
    g_out[PE_HIT] = g_out[PE_PUTS] = 0;
    setenv("POCL_KERNEL_CACHE", pocl ? "1" : "0", 1);
    snprintf(v, sizeof v, "%s/%s", g_dir, pdir);
    setenv("POCL_CACHE_DIR", v, 1);
    snprintf(v, sizeof v, "%s/%s", g_dir, sdir ? sdir : "no-store");
    setenv("KCACHE_DIR", v, 1);
    fflush(stdout);
    pid = fork();
    if (pid == 0) _exit(empty_child(how, E));
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    if (total) *total = g_out[PE_TOTAL];
    return g_out[PE_FIRST];
}

static double med(double *v, int n) {
    qsort(v, (size_t)n, sizeof v[0], cmp);
    return v[n / 2];
}

/* For each program, time to the first result (its whole pipeline, checked) in fresh processes:
     none-empty  no kcache, PoCL's cache on and empty (a fresh container without kcache)
     fill        the run that fills an empty store, PoCL's cache on and empty: kcache_cl_build_program's
                 miss; fill+upd: with kcache_cl_update after the first results, as a program calls it
     hit-empty   a warm store (filled so), PoCL's cache on and empty (a fresh container, CI)
     hit-warm    a warm store, PoCL's cache on and warm (the same PoCL cache directory again)
     none-off / fill-off / hit-off   the same with PoCL's cache off (POCL_KERNEL_CACHE=0)
   The fills run `runs` times each on a store of their own, interleaved with the no-cache runs; the
   hits (cheap) run `hruns` times in pairs, hit-empty then hit-warm, on the last store filled.
   Ratios: hit-empty/hit-warm (goal <= 3x), fill+upd/none-empty and fill-off/none-off (the fill's
   cost). Then where hit-empty's time goes: the build (kcache's lookup and PoCL unpacking the binary
   into its empty cache) against the pipeline (launches: a compile at a first launch would show here). */
static void pocl_empty(int quick) {
    epro E[4];
    char *many = many_source(), pdir[64], sdir[64], soff[64];
    int runs = quick ? 1 : 3, hruns = quick ? 3 : 11, i, r, bad;
    double load[3] = {0, 0, 0}, split[4][4];
    E[0].name = "fft2d-f32"; E[0].src = FFT_SRC; E[0].opt = "-cl-mad-enable"; E[0].pipeline = fft_pipeline; E[0].arg = 0;
    E[1].name = "fft2d-f64"; E[1].src = FFT_SRC; E[1].opt = "-DUSE_DOUBLE"; E[1].pipeline = fft_pipeline; E[1].arg = 1;
    E[2].name = "mandel"; E[2].src = OPENCL_DEMO_SOURCE; E[2].opt = OPENCL_DEMO_OPTIONS; E[2].pipeline = mandel_pipeline; E[2].arg = 0;
    E[3].name = "many50"; E[3].src = many; E[3].opt = "-cl-mad-enable"; E[3].pipeline = many_pipeline; E[3].arg = 0;
    memset(split, 0, sizeof split);
    getloadavg(load, 3);
    printf("PoCL's cache empty (a fresh container): time to the first checked result (ms) of each program's whole pipeline, fresh\n"
           "processes; medians of %d fills and %d hits; load average %.2f\n", runs, hruns, load[0]);
    printf("%-10s %10s %8s %8s %9s %8s | %8s %8s %8s | %11s %9s %9s\n", "program", "none-empty", "fill", "fill+upd", "hit-empty", "hit-warm",
           "none-off", "fill-off", "hit-off", "hit-e/hit-w", "fill/none", "off: f/n");
    for (i = 0; i < 4; i++) {
        double ne[32], fe[32], fu[32], he[32], hw[32], no[32], fo[32], ho[32], sp[4][32], t;
        int hits = 0, puts = 0;
        g_out[8] = 0; /* (mandel: the first run's sum, which every later run must give) */
        bad = 0;
        for (r = 0; r < runs; r++) { /* each fill on an empty store and an empty PoCL cache of its own */
            snprintf(pdir, sizeof pdir, "pe-none-%s-%d", E[i].name, r);
            ne[r] = empty_run(E_NONE, &E[i], 1, pdir, NULL, NULL);
            snprintf(pdir, sizeof pdir, "pe-fill-%s-%d", E[i].name, r);
            snprintf(sdir, sizeof sdir, "pe-store-%s-%d", E[i].name, r);
            fe[r] = empty_run(E_KCACHE, &E[i], 1, pdir, sdir, &fu[r]);
            puts += (int)g_out[PE_PUTS];
            no[r] = empty_run(E_NONE, &E[i], 0, "pe-off", NULL, NULL);
            snprintf(soff, sizeof soff, "pe-store-off-%s-%d", E[i].name, r);
            fo[r] = empty_run(E_KCACHE, &E[i], 0, "pe-off", soff, &t);
            if (ne[r] < 0 || fe[r] < 0 || no[r] < 0 || fo[r] < 0) bad = 1;
        }
        for (r = 0; r < hruns && !bad; r++) {
            snprintf(pdir, sizeof pdir, "pe-hit-%s-%d", E[i].name, r);
            he[r] = empty_run(E_KCACHE, &E[i], 1, pdir, sdir, NULL);
            hits += (int)g_out[PE_HIT];
            sp[0][r] = g_out[PE_BUILD];
            sp[1][r] = g_out[PE_FIRST] - g_out[PE_BUILD];
            hw[r] = empty_run(E_KCACHE, &E[i], 1, pdir, sdir, NULL); /* the same PoCL cache, now warm */
            hits += (int)g_out[PE_HIT];
            sp[2][r] = g_out[PE_BUILD];
            sp[3][r] = g_out[PE_FIRST] - g_out[PE_BUILD];
            ho[r] = empty_run(E_KCACHE, &E[i], 0, "pe-off", soff, NULL);
            hits += (int)g_out[PE_HIT];
            if (he[r] < 0 || hw[r] < 0 || ho[r] < 0) bad = 1;
        }
        if (bad) { printf("%-10s a run failed\n", E[i].name); continue; }
        {
            double mne = med(ne, runs), mfe = med(fe, runs), mfu = med(fu, runs), mhe = med(he, hruns), mhw = med(hw, hruns);
            double mno = med(no, runs), mfo = med(fo, runs), mho = med(ho, hruns);
            int c;
            for (c = 0; c < 4; c++) split[i][c] = med(sp[c], hruns);
            printf("%-10s %10.1f %8.1f %8.1f %9.1f %8.1f | %8.1f %8.1f %8.1f | %10.2fx %8.2fx %8.2fx%s\n", E[i].name, mne, mfe, mfu, mhe, mhw,
                   mno, mfo, mho, mhe / mhw, mfu / mne, mfo / mno,
                   hits == 3 * hruns && puts == runs ? "" : "  (a hit missed, or an update stored nothing)");
        }
        fflush(stdout);
    }
    printf("goals: hit-empty <= 3x hit-warm; the fill (with the update) measured against none-empty\n");
    for (i = 0; i < 4; i++)
        if (split[i][0] > 0)
            printf("  %-10s hit-empty: build %.1f ms + pipeline %.1f ms; hit-warm: build %.1f ms + pipeline %.1f ms\n", E[i].name, split[i][0],
                   split[i][1], split[i][2], split[i][3]);
    free(many);
}

int main(int argc, char **argv) {
    static const char *const pythons[] = {"python3", "/usr/bin/python3"};
    int quick = 0, start_only = 0, empty_only = 0, i, m, set;
    prog P[2];
    double repeat_ns[2] = {-1, -1}, hitpath[2][4];
    char *many = many_source(), probe[300];
    P[0].name = "small";
    P[0].src = SMALL;
    P[0].opt = "-cl-mad-enable";
    P[1].name = "many50";
    P[1].src = many;
    P[1].opt = "-cl-mad-enable";
    int runs, cold_runs;
    /* --dir: where the stores and PoCL's caches go (default /tmp). On a tmpfs (/dev/shm) PoCL's
       fdatasync of each file it unpacks from a binary costs nothing: the empty-cache hit's rows then
       show what is left when the disk is out of the picture */
    const char *dir = "/tmp";
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--start-only") == 0) start_only = 1;
        else if (strcmp(argv[i], "--pocl-empty-only") == 0) empty_only = 1;
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) dir = argv[++i];
    }
    runs = quick ? 3 : 11;
    cold_runs = quick ? 1 : 3;
    g_out = (double *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    snprintf(g_dir, sizeof g_dir, "%s/kcache-bench-opencl-XXXXXX", dir);
    if (g_out == MAP_FAILED || !mkdtemp(g_dir)) { perror("bench_opencl"); return 1; }
    if (empty_only) {
        pocl_empty(quick);
        if (!getenv("KT_KEEP")) nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(many);
        return 0;
    }
    if (start_only) {
        cold_start(quick);
        if (!getenv("KT_KEEP")) nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(many);
        return 0;
    }
    for (m = 0; m < 2 && !g_python; m++) {
        snprintf(probe, sizeof probe, "%s -c 'import pyopencl, numpy' >/dev/null 2>&1", pythons[m]);
        if (system(probe) == 0) g_python = pythons[m];
    }

    {
        double load[3] = {0, 0, 0};
        char plat[600];
        int pocl = platform_used(plat, sizeof plat);
        getloadavg(load, 3);
        printf("time to first kernel result (ms), median of %d fresh processes (cold: %d); %s; load average %.2f\n", runs, cold_runs,
               plat, load[0]);
        if (!pocl) printf("(not PoCL: POCL_KERNEL_CACHE means nothing to this platform, so pocl and kc+pocl measure what cold and kcache do)\n");
    }
    printf("%-8s %-8s %8s %8s %8s %8s %8s %8s | %7s %8s %8s %8s\n", "program", "setting", "cold", "pocl", "kcache", "raw", "kc+pocl",
           g_python ? "pyopencl" : "", "kc/raw", "pocl/kc", "cold/kc", g_python ? "py/kc" : "");
    for (set = 0; set < 2; set++) {
        g_setting = set == 0 ? "default" : "nospec";
        if (set == 1) setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 1);
        for (i = 0; i < 2; i++) {
            double cold, pocl, kc, raw, kcp, py = -1, v[4][32];
            int r, c;
            static const int how[4] = {POCL, KCACHE, RAW, KCACHE}, pc[4] = {1, 0, 0, 1};
            if (run(PREP, &P[i], 0) < 0) { printf("%s: the program does not build\n", P[i].name); return 1; }
            cold = median(COLD, &P[i], 0, cold_runs);
            run(POCL, &P[i], 1);   /* fills PoCL's cache */
            run(KCACHE, &P[i], 1); /* the first load with PoCL's cache on fills it */
            for (r = 0; r < runs; r++) /* round robin, so that the machine's moods fall on every column alike */
                for (c = 0; c < 4; c++)
                    if ((v[c][r] = run(how[c], &P[i], pc[c])) < 0) { printf("%s: a run failed\n", P[i].name); return 1; }
            for (c = 0; c < 4; c++) qsort(v[c], (size_t)runs, sizeof v[c][0], cmp);
            pocl = v[0][runs / 2];
            kc = v[1][runs / 2];
            raw = v[2][runs / 2];
            kcp = v[3][runs / 2];
            if (g_python) py = pyopencl_median(&P[i], runs);
            printf("%-8s %-8s %8.1f %8.1f %8.2f %8.2f %8.2f ", P[i].name, g_setting, cold, pocl, kc, raw, kcp);
            if (g_python) printf("%8.1f", py); else printf("%8s", "");
            printf(" | %6.2fx %7.1fx %7.0fx", kc / raw, pocl / kc, cold / kc);
            if (g_python) printf(" %7.1fx", py / kc);
            printf("\n");
            printf("%-17s minima: pocl %.1f, kcache %.2f, raw %.2f, kc+pocl %.2f ms: kc/raw %.2fx, pocl/kc %.1fx, pocl/(kc+pocl) %.1fx\n", "",
                   v[0][0], v[1][0], v[2][0], v[3][0], v[1][0] / v[2][0], v[0][0] / v[1][0], v[0][0] / v[3][0]);
            fflush(stdout);
            if (set == 0) {
                double v[4][32];
                int r, c;
                run(REPEAT, &P[i], 0);
                repeat_ns[i] = g_out[0];
                for (r = 0; r < runs; r++) {
                    run(HITPATH, &P[i], 0);
                    for (c = 0; c < 4; c++) v[c][r] = g_out[c];
                }
                for (c = 0; c < 4; c++) {
                    qsort(v[c], (size_t)runs, sizeof v[c][0], cmp);
                    hitpath[i][c] = v[c][runs / 2];
                }
            }
        }
    }
    unsetenv("POCL_WORK_GROUP_SPECIALIZATION");
    {
        double load[3] = {0, 0, 0};
        getloadavg(load, 3);
        printf("goals: kcache/raw <= 1.1x; pocl/kcache >= 20x   (load average now %.2f: other work on the machine makes the medians noisy)\n",
               load[0]);
    }
    for (i = 0; i < 2; i++)
        printf("kcache's own work in a hit of %s (fresh process, median): key %.0f us (driver library stamp included), "
               "store read %.0f us, binary check %.0f us; %.0f-byte entry\n",
               P[i].name, hitpath[i][0], hitpath[i][1], hitpath[i][2], hitpath[i][3]);
    printf("in-process repeat (kcache_cl_build of a program this process built, then clReleaseProgram): small %.0f ns, %d-kernel %.0f ns"
           " (%zu bytes of source hashed per call); goal < 1000 ns\n",
           repeat_ns[0], MANY, repeat_ns[1], strlen(many));
    if (!g_python) printf("(no pyopencl column: no python3 here imports pyopencl and numpy; apt install python3-pyopencl adds it)\n");
    else printf("(pyopencl: %s)\n", g_python);
    cold_start(quick);
    {
        char plat[600];
        if (platform_used(plat, sizeof plat)) pocl_empty(quick); /* (PoCL's cache settings: PoCL's alone) */
    }
    if (!getenv("KT_KEEP")) nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(many);
    return 0;
}
