/* opencl_many - a program of tens of kernels generated at run time, as a runtime or an array
   library makes them: one element-wise kernel for every (operation, element type) pair, 40 in one
   OpenCL program, built with kcache_cl_build and each run once and checked against the host.

   The first run compiles the whole program (a second or more on a CPU device) and stores the device
   binary; later runs load it. Within one run, building the same program again (as a library does
   each time a caller asks for one of its kernels) comes from memory in well under a microsecond.

       cc -std=c99 -I. examples/opencl_many.c -lOpenCL -lpthread -o many
       ./many; ./many        # KCACHE_DIR=... to choose the store; KCACHE_DEBUG=1 to watch it */
#define KCACHE_IMPLEMENTATION
#ifndef KCACHE_OPENCL
#define KCACHE_OPENCL /* the OpenCL part of kcache.h (needs -lOpenCL) */
#endif
#include "kcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The whole program: kernel <op>_<type>(a, b, out) for every pair. */
static char *generate(void) {
    size_t cap = 64 * 1024, len = 0;
    char *src = (char *)malloc(cap);
    int o, t;
    for (t = 0; t < NTYPES; t++)
        for (o = 0; o < NOPS; o++)
            len += (size_t)snprintf(src + len, cap - len,
                                    "kernel void %s_%s(global const %s *pa, global const %s *pb, global %s *out) {\n"
                                    "    size_t i = get_global_id(0);\n"
                                    "    %s a = pa[i], b = pb[i];\n"
                                    "    out[i] = (%s)(%s);\n"
                                    "}\n",
                                    ops[o], types[t], types[t], types[t], types[t], types[t], types[t], exprs[o]);
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

int main(void) {
    static const size_t size[] = {sizeof(float), sizeof(int), sizeof(unsigned), sizeof(short), sizeof(unsigned short)};
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
    size_t global = N;

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
    for (t = 0; t < NTYPES; t++) {
        void *a = malloc(size[t] * N), *b = malloc(size[t] * N), *out = malloc(size[t] * N);
        cl_mem ba, bb, bo;
        fill(t, a, 0);
        fill(t, b, 1);
        ba = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size[t] * N, a, &err);
        bb = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size[t] * N, b, &err);
        bo = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, size[t] * N, NULL, &err);
        for (o = 0; o < NOPS; o++) {
            cl_kernel k;
            snprintf(name, sizeof name, "%s_%s", ops[o], types[t]);
            k = clCreateKernel(program, name, &err);
            if (!k) { fprintf(stderr, "many: no kernel %s\n", name); wrong++; continue; }
            clSetKernelArg(k, 0, sizeof ba, &ba);
            clSetKernelArg(k, 1, sizeof bb, &bb);
            clSetKernelArg(k, 2, sizeof bo, &bo);
            clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, NULL, 0, NULL, NULL);
            clEnqueueReadBuffer(queue, bo, CL_TRUE, 0, size[t] * N, out, 0, NULL, NULL);
            if (kernels++ == 0) t_first = now_ms() - t0;
            for (i = 0; i < N; i++)
                if (at(t, out, i) != expect(o, t, at(t, a, i), at(t, b, i))) { wrong++; break; }
            clReleaseKernel(k);
        }
        clReleaseMemObject(ba);
        clReleaseMemObject(bb);
        clReleaseMemObject(bo);
        free(a);
        free(b);
        free(out);
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
