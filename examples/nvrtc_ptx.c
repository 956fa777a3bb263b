/* nvrtc_ptx - CUDA C compiled to PTX at run time with NVRTC, cached by kcache.

   The PTX is cached under a key naming everything that went into it: the source, the options, the
   target architecture, NVRTC's version, and the NVRTC library this process actually loaded
   (kcache_key_library on nvrtcCompileProgram: a toolkit upgrade is a miss that kcache_explain
   names, never a stale PTX). NVRTC runs without a GPU. With --run the PTX, compiled or cached, is
   loaded by the CUDA driver (cuModuleLoadData) and saxpy runs on the GPU, its result checked; the
   driver (libcuda.so.1) is looked up at run time, so the example builds and runs without one.
   Run it twice:

       ./nvrtc_ptx                      # the first run compiles
       ./nvrtc_ptx                      # loads the PTX from the cache
       ./nvrtc_ptx --arch compute_90    # another architecture: another entry
       ./nvrtc_ptx --fresh -o saxpy.ptx # drops the entry first; writes the PTX to a file
       ./nvrtc_ptx --run                # and runs the kernel on the GPU (exit 3: no CUDA driver)
       ./nvrtc_ptx --ranks 16 --kernels 24 [--threads T] [--fresh]
                                        # a start-up: 16 processes (ranks) at once, each needing 24
                                        # variants (-DVARIANT=k): each compiled once, shared out

   Build (the Makefile does, when a CUDA toolkit is in /usr/local/cuda*):
       cc -std=c99 -I. -I/usr/local/cuda/include examples/nvrtc_ptx.c -L/usr/local/cuda/lib64 \
          -Wl,-rpath,/usr/local/cuda/lib64 -lnvrtc -lpthread -ldl
   The cache is the default one ($KCACHE_DIR, else $XDG_CACHE_HOME/kcache or ~/.cache/kcache). */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "jit_cache.h"

#include <dlfcn.h>
#include <nvrtc.h>

static const char saxpy_source[] =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, unsigned n) {\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

typedef struct ptx_job { const char *arch_option, *const *options; int noptions; } ptx_job;

/* jit_compile_fn: NVRTC, the PTX back (with its NUL). */
static int compile_ptx(void *user, unsigned char **out, size_t *size) {
    const ptx_job *j = (const ptx_job *)user;
    const char *opts[8];
    nvrtcProgram prog;
    nvrtcResult e;
    size_t n = 0;
    int i, nopts = 0;
    for (i = 0; i < j->noptions && nopts < 7; i++) opts[nopts++] = j->options[i];
    opts[nopts++] = j->arch_option;
    if ((e = nvrtcCreateProgram(&prog, saxpy_source, "saxpy.cu", 0, NULL, NULL)) != NVRTC_SUCCESS) {
        fprintf(stderr, "nvrtc: %s\n", nvrtcGetErrorString(e));
        return 1;
    }
    e = nvrtcCompileProgram(prog, nopts, opts);
    if (e != NVRTC_SUCCESS) {
        size_t ln = 0;
        char *log;
        fprintf(stderr, "nvrtc: %s\n", nvrtcGetErrorString(e));
        if (nvrtcGetProgramLogSize(prog, &ln) == NVRTC_SUCCESS && (log = (char *)malloc(ln + 1)) != NULL) {
            if (nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) fprintf(stderr, "%s\n", log);
            free(log);
        }
        nvrtcDestroyProgram(&prog);
        return 1;
    }
    if (nvrtcGetPTXSize(prog, &n) != NVRTC_SUCCESS || (*out = (unsigned char *)malloc(n)) == NULL ||
        nvrtcGetPTX(prog, (char *)*out) != NVRTC_SUCCESS) {
        nvrtcDestroyProgram(&prog);
        return 1;
    }
    *size = n;
    nvrtcDestroyProgram(&prog);
    return 0;
}

/* ---- --ranks: many processes needing the same variants of the kernel ---- */

typedef struct ranks_ctx { ptx_job job; const char *joined, *arch; int major, minor; } ranks_ctx;

/* What names a PTX: the source, the options, the architecture, NVRTC's version and library. */
static void ptx_key(kcache_key *key, const char *joined, const char *arch, int major, int minor) {
    const void *nvrtc_fn;
    nvrtcResult (*compile_fn)(nvrtcProgram, int, const char *const *) = nvrtcCompileProgram;
    kcache_key_init(key, "nvrtc.saxpy");
    kcache_key_str(key, "source", saxpy_source);
    kcache_key_str(key, "options", joined);
    kcache_key_str(key, "arch", arch);
    kcache_key_u64(key, "nvrtc.version", (uint64_t)major * 1000 + (uint64_t)minor);
    JIT_FN_ADDRESS(compile_fn, nvrtc_fn);
    if (kcache_key_library(key, "nvrtc.library", nvrtc_fn) != KCACHE_OK)
        fprintf(stderr, "nvrtc: the loaded NVRTC library was not found; the key has no stamp of it\n");
}

/* jit_key_fn: variant i (user: the ranks_ctx). */
static void variant_key(kcache *kc, unsigned i, void *user, kcache_key *key) {
    const ranks_ctx *c = (const ranks_ctx *)user;
    (void)kc;
    ptx_key(key, c->joined, c->arch, c->major, c->minor);
    kcache_key_u64(key, "variant", i);
}

/* jit_compile_fn for jit_ranks: variant k, compiled with -DVARIANT=k (user: the jit_kernel). */
static int compile_variant(void *user, unsigned char **out, size_t *size) {
    const jit_kernel *k = (const jit_kernel *)user;
    ptx_job j = ((const ranks_ctx *)k->user)->job;
    const char *opts[8];
    char define[32];
    int i, n = 0;
    for (i = 0; i < j.noptions && n < 6; i++) opts[n++] = j.options[i];
    snprintf(define, sizeof define, "-DVARIANT=%u", k->index);
    opts[n++] = define;
    j.options = opts;
    j.noptions = n;
    return compile_ptx(&j, out, size);
}

/* ---- the CUDA driver, for --run ------------------------------------------------------------
   Its few entry points by name (dlsym), with their ABI spelled out here: the example needs
   neither cuda.h nor libcuda to build, and a machine without a GPU gets a message, not a failed
   load. Every handle is a pointer and a device pointer 64 bits on the 64-bit hosts CUDA runs on. */
typedef int cu_result;
typedef unsigned long long cu_devptr;
typedef struct cuda_driver {
    void *lib;
    cu_result (*init)(unsigned flags);
    cu_result (*device_get)(int *dev, int ordinal);
    cu_result (*device_name)(char *name, int len, int dev);
    cu_result (*primary_retain)(void **ctx, int dev);
    cu_result (*primary_release)(int dev);
    cu_result (*ctx_set_current)(void *ctx);
    cu_result (*module_load_data)(void **mod, const void *image);
    cu_result (*module_unload)(void *mod);
    cu_result (*module_function)(void **fn, void *mod, const char *name);
    cu_result (*mem_alloc)(cu_devptr *p, size_t n);
    cu_result (*mem_free)(cu_devptr p);
    cu_result (*to_device)(cu_devptr dst, const void *src, size_t n);
    cu_result (*to_host)(void *dst, cu_devptr src, size_t n);
    cu_result (*launch)(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared_bytes, void *stream, void **params, void **extra);
    cu_result (*synchronize)(void);
    cu_result (*error_name)(cu_result e, const char **name);
} cuda_driver;

static int cuda_symbol(cuda_driver *d, const char *name, void *fn_slot) {
    void *sym = dlsym(d->lib, name);
    if (!sym) return fprintf(stderr, "cuda: libcuda.so.1 has no %s\n", name), 1;
    memcpy(fn_slot, &sym, sizeof sym); /* object to function pointer: POSIX's dlsym guarantees it */
    return 0;
}

static int cuda_load(cuda_driver *d) {
    memset(d, 0, sizeof *d);
    if ((d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) == NULL) return -1;
    return cuda_symbol(d, "cuInit", &d->init) | cuda_symbol(d, "cuDeviceGet", &d->device_get) |
           cuda_symbol(d, "cuDeviceGetName", &d->device_name) | cuda_symbol(d, "cuDevicePrimaryCtxRetain", &d->primary_retain) |
           cuda_symbol(d, "cuDevicePrimaryCtxRelease_v2", &d->primary_release) |
           cuda_symbol(d, "cuCtxSetCurrent", &d->ctx_set_current) | cuda_symbol(d, "cuModuleLoadData", &d->module_load_data) |
           cuda_symbol(d, "cuModuleUnload", &d->module_unload) | cuda_symbol(d, "cuModuleGetFunction", &d->module_function) |
           cuda_symbol(d, "cuMemAlloc_v2", &d->mem_alloc) | cuda_symbol(d, "cuMemFree_v2", &d->mem_free) |
           cuda_symbol(d, "cuMemcpyHtoD_v2", &d->to_device) | cuda_symbol(d, "cuMemcpyDtoH_v2", &d->to_host) |
           cuda_symbol(d, "cuLaunchKernel", &d->launch) | cuda_symbol(d, "cuCtxSynchronize", &d->synchronize) |
           cuda_symbol(d, "cuGetErrorName", &d->error_name);
}

static int cuda_failed(const cuda_driver *d, cu_result e, const char *what) {
    const char *name = NULL;
    if (e == 0) return 0;
    if (d->error_name) d->error_name(e, &name);
    fprintf(stderr, "cuda: %s failed: %s (%d)\n", what, name ? name : "unknown error", e);
    return 1;
}

/* The PTX loaded by the driver, saxpy run on device 0 and every element checked: what a cached
   PTX is for. 0: all correct; 1: a driver call failed or a result was wrong; 3: no driver. */
static int run_on_gpu(const unsigned char *ptx) {
    enum { N = 1 << 20 };
    cuda_driver d;
    void *ctx = NULL, *mod = NULL, *fn = NULL;
    cu_devptr dx = 0, dy = 0;
    float a = 2.0f, *x, *y;
    unsigned n = N, i, wrong = 0;
    void *params[4];
    char name[256] = "";
    int dev = 0, rc = 1, loaded = cuda_load(&d);
    if (loaded < 0) {
        fprintf(stderr, "cuda: no CUDA driver here (dlopen libcuda.so.1: %s); the PTX is not run\n", dlerror());
        return 3;
    }
    x = (float *)malloc(sizeof *x * N);
    y = (float *)malloc(sizeof *y * N);
    if (loaded || !x || !y) goto out;
    for (i = 0; i < n; i++) x[i] = (float)i, y[i] = 1.0f;
    if (cuda_failed(&d, d.init(0), "cuInit") || cuda_failed(&d, d.device_get(&dev, 0), "cuDeviceGet") ||
        cuda_failed(&d, d.device_name(name, (int)sizeof name, dev), "cuDeviceGetName") ||
        cuda_failed(&d, d.primary_retain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
        cuda_failed(&d, d.ctx_set_current(ctx), "cuCtxSetCurrent") ||
        cuda_failed(&d, d.module_load_data(&mod, ptx), "cuModuleLoadData (the PTX)") ||
        cuda_failed(&d, d.module_function(&fn, mod, "saxpy"), "cuModuleGetFunction saxpy") ||
        cuda_failed(&d, d.mem_alloc(&dx, sizeof *x * N), "cuMemAlloc") || cuda_failed(&d, d.mem_alloc(&dy, sizeof *y * N), "cuMemAlloc") ||
        cuda_failed(&d, d.to_device(dx, x, sizeof *x * N), "cuMemcpyHtoD") ||
        cuda_failed(&d, d.to_device(dy, y, sizeof *y * N), "cuMemcpyHtoD"))
        goto out;
    params[0] = &a, params[1] = &dx, params[2] = &dy, params[3] = &n;
    if (cuda_failed(&d, d.launch(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel") ||
        cuda_failed(&d, d.synchronize(), "cuCtxSynchronize") || cuda_failed(&d, d.to_host(y, dy, sizeof *y * N), "cuMemcpyDtoH"))
        goto out;
    for (i = 0; i < n; i++) wrong += y[i] != 2.0f * (float)i + 1.0f;
    printf("  gpu    : saxpy on %s, PTX loaded by the CUDA driver: %u of %u results correct\n", name, n - wrong, n);
    rc = wrong != 0;
out:
    if (dx) d.mem_free(dx);
    if (dy) d.mem_free(dy);
    if (mod) d.module_unload(mod);
    if (ctx) d.primary_release(dev);
    free(x);
    free(y);
    dlclose(d.lib);
    return rc;
}

int main(int argc, char **argv) {
    static const char *const options[] = {"--std=c++17", "-default-device"};
    const char *arch = "compute_75", *out_path = NULL;
    char arch_option[64], joined[256];
    kcache *kc;
    kcache_key key;
    jit_result r;
    ptx_job job;
    const char *target;
    int major = 0, minor = 0, i, fresh = 0, run = 0, rc = 0;
    unsigned ranks = 0, kernels = 24, threads = 1;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fresh") == 0) fresh = 1;
        else if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) arch = argv[++i];
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out_path = argv[++i];
        else if (strcmp(argv[i], "--run") == 0) run = 1;
        else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) ranks = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--kernels") == 0 && i + 1 < argc) kernels = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = (unsigned)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--fresh] [--arch compute_XX] [-o file.ptx] [--run] [--ranks P [--kernels K] [--threads T]]\n", argv[0]);
            return 2;
        }
    }
    snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s", arch);
    snprintf(joined, sizeof joined, "%s %s", options[0], options[1]);
    job.arch_option = arch_option;
    job.options = options;
    job.noptions = 2;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) { fprintf(stderr, "nvrtc: nvrtcVersion failed\n"); return 1; }
    if (ranks > 0 && kernels > 0 && ranks <= 256 && kernels <= 4096) {
        ranks_ctx c;
        c.job = job;
        c.joined = joined;
        c.arch = arch;
        c.major = major;
        c.minor = minor;
        return jit_ranks("kcache nvrtc ranks", ranks, threads, kernels, fresh, variant_key, compile_variant, &c);
    }

    if (kcache_open(&kc, NULL) != KCACHE_OK) return 1;
    ptx_key(&key, joined, arch, major, minor);
    if (jit_get(kc, &key, fresh, compile_ptx, &job, &r) != 0) return 1;

    jit_report_head(kc, "kcache nvrtc", &r);
    target = strstr((const char *)r.data, ".target");
    printf("  ptx    : %zu bytes, NVRTC %d.%d, %.*s\n", r.size, major, minor, target ? (int)strcspn(target, "\n") : 0,
           target ? target : "");
    jit_report_run(&r, "NVRTC");
    if (out_path) {
        FILE *f = fopen(out_path, "wb");
        if (!f || fwrite(r.data, 1, r.size ? r.size - 1 : 0, f) != (r.size ? r.size - 1 : 0)) {
            fprintf(stderr, "nvrtc: cannot write %s\n", out_path);
            if (f) fclose(f);
            return 1;
        }
        fclose(f);
    }
    if (run) rc = run_on_gpu(r.data);
    jit_release(kc, &r);
    kcache_key_free(&key);
    kcache_close(kc);
    return rc;
}
