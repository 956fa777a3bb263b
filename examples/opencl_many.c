/* opencl_many - a program of tens of kernels generated at run time, as a runtime or an array
   library makes them: one element-wise kernel for every (operation, element type) pair, 40 in one
   OpenCL program, built with kcache_cl_build and each run once and checked against the host.

   The first run compiles the whole program (a second or more on a CPU device) and stores the device
   binary; later runs load it. Within one run, building the same program again (as a library does
   each time a caller asks for one of its kernels) comes from memory in well under a microsecond.

       cc -std=c99 -I. examples/opencl_many.c -lOpenCL -lpthread -o many
       ./many; ./many        # KCACHE_DIR=... to choose the store; KCACHE_DEBUG=1 to watch it

   With --ranks P --programs N, a start-up that needs N programs (one kernel each), run as P
   processes at once (MPI ranks, a job array): each builds the set with one kcache_cl_build_many, so
   that every program is compiled once and the compiles are shared out among the processes (--serial:
   one kcache_cl_build per program instead, the chain the batch call removes: each program compiled
   once, but one after another while the other processes wait).

       ./many --ranks 4 --programs 16 [--threads T] [--serial]   # twice: the second compiles nothing */
#define KCACHE_IMPLEMENTATION
#ifndef KCACHE_OPENCL
#define KCACHE_OPENCL /* the OpenCL part of kcache.h (needs -lOpenCL) */
#endif
#include "kcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { N = 1000 };

static const char *const ops[] = {"add", "sub", "mul", "min", "max", "avg", "absdiff", "mad"};
static const char *const exprs[] = {"a + b", "a - b", "a * b", "min(a, b)", "max(a, b)", "(a + b) / 2", "(a > b ? a - b : b - a)",
                                    "a * b + a"};
static const char *const types[] = {"float", "int", "uint", "short", "ushort"};
#define NOPS (int)(sizeof ops / sizeof ops[0])
#define NTYPES (int)(sizeof types / sizeof types[0])

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Kernel <op>_<type>(a, b, out) for op o and type t, into src (cap bytes); its length. */
static size_t kernel_source(int o, int t, char *src, size_t cap) {
    return (size_t)snprintf(src, cap,
                            "kernel void %s_%s(global const %s *pa, global const %s *pb, global %s *out) {\n"
                            "    size_t i = get_global_id(0);\n"
                            "    %s a = pa[i], b = pb[i];\n"
                            "    out[i] = (%s)(%s);\n"
                            "}\n",
                            ops[o], types[t], types[t], types[t], types[t], types[t], types[t], exprs[o]);
}

/* The whole program: kernel <op>_<type>(a, b, out) for every pair. */
static char *generate(void) {
    size_t cap = 64 * 1024, len = 0;
    char *src = (char *)malloc(cap);
    int o, t;
    for (t = 0; t < NTYPES; t++)
        for (o = 0; o < NOPS; o++) len += kernel_source(o, t, src + len, cap - len);
    return src;
}

/* What the host computes for op o on a, b, converted to type t as the kernel stores it. */
static double expect(int o, int t, double a, double b) {
    double r = 0;
    switch (o) {
    case 0: r = a + b; break;
    case 1: r = a - b; break;
    case 2: r = a * b; break;
    case 3: r = a < b ? a : b; break;
    case 4: r = a > b ? a : b; break;
    case 5: r = t == 0 ? (a + b) / 2 : (double)(((long)a + (long)b) / 2); break;
    case 6: r = a > b ? a - b : b - a; break;
    case 7: r = a * b + a; break;
    }
    switch (t) { /* the wrap of the unsigned types, as a store to them does */
    case 2: return (double)(unsigned)(long)r;
    case 4: return (double)(unsigned short)(long)r;
    default: return r;
    }
}

static void fill(int t, void *p, int which) {
    int i;
    for (i = 0; i < N; i++) {
        int v = which ? (i * 7) % 30 + 1 : i % 50;
        switch (t) {
        case 0: ((float *)p)[i] = (float)v; break;
        case 1: ((int *)p)[i] = v; break;
        case 2: ((unsigned *)p)[i] = (unsigned)v; break;
        case 3: ((short *)p)[i] = (short)v; break;
        case 4: ((unsigned short *)p)[i] = (unsigned short)v; break;
        }
    }
}
static double at(int t, const void *p, int i) {
    switch (t) {
    case 0: return ((const float *)p)[i];
    case 1: return ((const int *)p)[i];
    case 2: return ((const unsigned *)p)[i];
    case 3: return ((const short *)p)[i];
    default: return ((const unsigned short *)p)[i];
    }
}

static int whole_program(void);

static const size_t type_size[] = {sizeof(float), sizeof(int), sizeof(unsigned), sizeof(short), sizeof(unsigned short)};

/* Runs kernel `name` of program on the sample data of type t and checks it against op o: 0 if right. */
static int check_kernel(cl_context ctx, cl_command_queue queue, cl_program program, const char *name, int o, int t) {
    size_t global = N;
    void *a = malloc(type_size[t] * N), *b = malloc(type_size[t] * N), *out = malloc(type_size[t] * N);
    cl_int err;
    cl_mem ba, bb, bo;
    cl_kernel k;
    int i, wrong = 0;
    fill(t, a, 0);
    fill(t, b, 1);
    ba = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, type_size[t] * N, a, &err);
    bb = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, type_size[t] * N, b, &err);
    bo = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, type_size[t] * N, NULL, &err);
    k = clCreateKernel(program, name, &err);
    if (!k) {
        fprintf(stderr, "many: no kernel %s\n", name);
        wrong = 1;
    } else {
        clSetKernelArg(k, 0, sizeof ba, &ba);
        clSetKernelArg(k, 1, sizeof bb, &bb);
        clSetKernelArg(k, 2, sizeof bo, &bo);
        err = clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, NULL, 0, NULL, NULL);
        if (err == CL_SUCCESS) err = clEnqueueReadBuffer(queue, bo, CL_TRUE, 0, type_size[t] * N, out, 0, NULL, NULL);
        wrong = err != CL_SUCCESS;
        for (i = 0; i < N && !wrong; i++) wrong = at(t, out, i) != expect(o, t, at(t, a, i), at(t, b, i));
        clReleaseKernel(k);
    }
    clReleaseMemObject(ba);
    clReleaseMemObject(bb);
    clReleaseMemObject(bo);
    free(a);
    free(b);
    free(out);
    return wrong;
}

/* ---- --ranks P --programs N: a start-up that compiles a set of programs, P processes at once ---- */

typedef struct rank_report { int ok, compiled, failed; double ready_ms; } rank_report;

/* Program i: the one kernel <op>_<type> for op i % NOPS, type i / NOPS. */
static void program_source(int i, char *src, size_t cap, char *unit, size_t ucap) {
    int o = i % NOPS, t = i / NOPS;
    kernel_source(o, t, src, cap);
    snprintf(unit, ucap, "many.%s_%s", ops[o], types[t]);
}

/* One process: opens the default store, waits for the gate, builds the n programs at once (or one
   kcache_cl_build after another), runs each kernel once and reports. */
static void rank(int r, int n, unsigned threads, int serial, int gate, rank_report *rep) {
    kcache_cl_program progs[NOPS * NTYPES];
    char src[NOPS * NTYPES][512], unit[NOPS * NTYPES][48], name[64];
    const char *srcs[NOPS * NTYPES];
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
    cl_int err;
    kcache *kc = NULL;
    kcache_stats st;
    double t0;
    char c;
    int i;
    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
        fprintf(stderr, "many: rank %d: no OpenCL device\n", r);
        _exit(1);
    }
    ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    queue = clCreateCommandQueue(ctx, device, 0, &err);
    if (kcache_open(&kc, NULL) != KCACHE_OK) _exit(1);
    memset(progs, 0, sizeof progs);
    for (i = 0; i < n; i++) {
        program_source(i, src[i], sizeof src[i], unit[i], sizeof unit[i]);
        srcs[i] = src[i];
        progs[i].unit = unit[i];
        progs[i].nsrc = 1;
        progs[i].srcs = &srcs[i];
        progs[i].options = "-cl-std=CL1.2";
    }
    if (read(gate, &c, 1) < 0) _exit(1);
    t0 = now_ms();
    if (serial) {
        for (i = 0; i < n; i++)
            progs[i].program = kcache_cl_build(kc, ctx, 1, &device, progs[i].unit, 1, progs[i].srcs, NULL, progs[i].options,
                                               &progs[i].hit, &progs[i].err);
    } else {
        kcache_cl_build_many(kc, ctx, 1, &device, progs, (size_t)n, threads);
    }
    rep[r].ready_ms = now_ms() - t0;
    kcache_get_stats(kc, &st);
    rep[r].compiled = (int)st.builds;
    for (i = 0; i < n; i++) {
        if (!progs[i].program) {
            fprintf(stderr, "many: rank %d: %s failed (%d)\n", r, unit[i], (int)progs[i].err);
            rep[r].failed++;
            continue;
        }
        snprintf(name, sizeof name, "%s", unit[i] + 5);
        if (check_kernel(ctx, queue, progs[i].program, name, i % NOPS, i / NOPS) == 0) rep[r].ok++;
        clReleaseProgram(progs[i].program);
    }
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    kcache_close(kc);
    _exit(0);
}

static int ranks_main(int ranks, int n, unsigned threads, int serial) {
    rank_report *rep = (rank_report *)mmap(NULL, sizeof *rep * (size_t)ranks, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int gate[2], r, compiled = 0, bad = 0;
    double slowest = 0;
    if (rep == MAP_FAILED || pipe(gate) != 0) return 1;
    memset(rep, 0, sizeof *rep * (size_t)ranks);
    for (r = 0; r < ranks; r++) {
        fflush(stdout);
        if (fork() == 0) {
            close(gate[1]);
            rank(r, n, threads, serial, gate[0], rep);
        }
    }
    close(gate[0]);
    close(gate[1]); /* go */
    while (wait(NULL) > 0) {
    }
    printf("many: %d processes start together, each needing the same %d programs (%s)\n", ranks, n,
           serial ? "one kcache_cl_build after another" : "one kcache_cl_build_many");
    printf("  compiled : per process");
    for (r = 0; r < ranks; r++) {
        printf(" %d", rep[r].compiled);
        compiled += rep[r].compiled;
        bad += rep[r].ok != n;
        if (rep[r].ready_ms > slowest) slowest = rep[r].ready_ms;
    }
    printf(" = %d compiles of %d programs%s\n", compiled, n,
           compiled == 0 ? " (all from the cache)" : compiled == n ? " (each once)" : "");
    printf("  ready    : every program of every process in %.0f ms\n", slowest);
    printf("  results  : %s\n", bad ? "WRONG" : "all right");
    return bad != 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: opencl_many [--ranks P --programs N [--threads T] [--serial]]\n"
               "  without arguments: 40 generated kernels in one program, built with kcache_cl_build\n"
               "  --ranks P --programs N  P processes at once (1-64), each building the same N programs (1-%d)\n"
               "                          with one kcache_cl_build_many: every program compiled once, shared out\n"
               "  --threads T             kcache_cl_build_many's threads in each process (default 1)\n"
               "  --serial                one kcache_cl_build per program instead (the chain the batch removes)\n"
               "exit status: 0; 1 when OpenCL or kcache fails or a result is wrong; 2 for a usage error\n",
            NOPS * NTYPES);
}

int main(int argc, char **argv) {
    int ranks = 0, nprogs = 0, serial = 0, a;
    unsigned threads = 1;
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0) { usage(stdout); return 0; }
        if (strcmp(argv[a], "--serial") == 0) { serial = 1; continue; }
        if (a + 1 < argc && strcmp(argv[a], "--ranks") == 0) { ranks = atoi(argv[++a]); continue; }
        if (a + 1 < argc && strcmp(argv[a], "--programs") == 0) { nprogs = atoi(argv[++a]); continue; }
        if (a + 1 < argc && strcmp(argv[a], "--threads") == 0) { threads = (unsigned)atoi(argv[++a]); continue; }
        fprintf(stderr, "opencl_many: unknown argument '%s'\n", argv[a]);
        usage(stderr);
        return 2;
    }
    if (ranks || nprogs) {
        if (ranks < 1 || ranks > 64 || nprogs < 1 || nprogs > NOPS * NTYPES || threads > 64) { usage(stderr); return 2; }
        return ranks_main(ranks, nprogs, threads, serial);
    }
    return whole_program();
}

static int whole_program(void) {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
    cl_program program, again;
    cl_int err;
    kcache *kc = NULL;
    kcache_key key;
    char *src = generate(), why[512], name[64];
    const char *srcs[1];
    double t0, t_build, t_first = 0, t_repeat;
    int hit = 0, o, t, i, wrong = 0, kernels = 0;

    srcs[0] = src;
    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
        fprintf(stderr, "many: no OpenCL device\n");
        return 1;
    }
    ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    queue = clCreateCommandQueue(ctx, device, 0, &err);
    kcache_open(&kc, NULL);

    /* what the cache knows before the build: why it would miss, or that it hits */
    kcache_cl_key(kc, &key, device, "many.elementwise", 1, srcs, NULL, "-cl-std=CL1.2");
    kcache_explain(kc, &key, why, sizeof why);
    kcache_key_free(&key);

    t0 = now_ms();
    program = kcache_cl_build(kc, ctx, 1, &device, "many.elementwise", 1, srcs, NULL, "-cl-std=CL1.2", &hit, &err);
    t_build = now_ms() - t0;
    if (!program) {
        char log[8192];
        kcache_cl_build_log(kc, log, sizeof log);
        fprintf(stderr, "many: build failed (%d):\n%s\n", (int)err, log);
        return 1;
    }

    /* every kernel once, checked */
    for (t = 0; t < NTYPES; t++)
        for (o = 0; o < NOPS; o++) {
            snprintf(name, sizeof name, "%s_%s", ops[o], types[t]);
            wrong += check_kernel(ctx, queue, program, name, o, t);
            if (kernels++ == 0) t_first = now_ms() - t0;
        }

    /* the same program asked for again in this process: from memory */
    t0 = now_ms();
    for (i = 0; i < 1000; i++) {
        again = kcache_cl_build(kc, ctx, 1, &device, "many.elementwise", 1, srcs, NULL, "-cl-std=CL1.2", NULL, &err);
        clReleaseProgram(again);
    }
    t_repeat = (now_ms() - t0) * 1e3 / 1000;

    printf("many: %d kernels in one program (%zu bytes of generated source)\n", kernels, strlen(src));
    printf("  before : %s\n", why);
    printf("  build  : %s in %.1f ms; first kernel result after %.1f ms\n", hit ? "loaded from the cache" : "compiled and cached",
           t_build, t_first);
    printf("  again  : %.2f us per kcache_cl_build of the same program in this process\n", t_repeat);
    printf("  results: %s\n", wrong ? "WRONG" : "all right");

    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    kcache_close(kc);
    free(src);
    return wrong != 0;
}
