/* nvrtc_ptx - CUDA C compiled to PTX at run time with NVRTC, cached by kcache.

   The PTX is cached under a key naming everything that went into it: the source, the options, the
   target architecture, NVRTC's version, and the NVRTC library this process actually loaded
   (kcache_key_library on nvrtcCompileProgram: a toolkit upgrade is a miss that kcache_explain
   names, never a stale PTX). NVRTC runs without a GPU; loading the PTX (cuModuleLoadData) is the
   driver's part and is not done here. Run it twice:

       ./nvrtc_ptx                      # the first run compiles
       ./nvrtc_ptx                      # loads the PTX from the cache
       ./nvrtc_ptx --arch compute_90    # another architecture: another entry
       ./nvrtc_ptx --fresh -o saxpy.ptx # drops the entry first; writes the PTX to a file

   Build (the Makefile does, when a CUDA toolkit is in /usr/local/cuda*):
       cc -std=c99 -I. -I/usr/local/cuda/include examples/nvrtc_ptx.c -L/usr/local/cuda/lib64 \
          -Wl,-rpath,/usr/local/cuda/lib64 -lnvrtc -lpthread
   The cache is the default one ($KCACHE_DIR, else $XDG_CACHE_HOME/kcache or ~/.cache/kcache). */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "jit_cache.h"

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

int main(int argc, char **argv) {
    static const char *const options[] = {"--std=c++17", "-default-device"};
    const char *arch = "compute_75", *out_path = NULL;
    char arch_option[64], joined[256];
    kcache *kc;
    kcache_key key;
    jit_result r;
    ptx_job job;
    const void *nvrtc_fn;
    const char *target;
    int major = 0, minor = 0, i, fresh = 0;
    nvrtcResult (*compile_fn)(nvrtcProgram, int, const char *const *) = nvrtcCompileProgram;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fresh") == 0) fresh = 1;
        else if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) arch = argv[++i];
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out_path = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--fresh] [--arch compute_XX] [-o file.ptx]\n", argv[0]);
            return 2;
        }
    }
    snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s", arch);
    snprintf(joined, sizeof joined, "%s %s", options[0], options[1]);
    job.arch_option = arch_option;
    job.options = options;
    job.noptions = 2;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) { fprintf(stderr, "nvrtc: nvrtcVersion failed\n"); return 1; }

    if (kcache_open(&kc, NULL) != KCACHE_OK) return 1;
    kcache_key_init(&key, "nvrtc.saxpy");
    kcache_key_str(&key, "source", saxpy_source);
    kcache_key_str(&key, "options", joined);
    kcache_key_str(&key, "arch", arch);
    kcache_key_u64(&key, "nvrtc.version", (uint64_t)major * 1000 + (uint64_t)minor);
    JIT_FN_ADDRESS(compile_fn, nvrtc_fn);
    if (kcache_key_library(&key, "nvrtc.library", nvrtc_fn) != KCACHE_OK)
        fprintf(stderr, "nvrtc: the loaded NVRTC library was not found; the key has no stamp of it\n");
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
    jit_release(kc, &r);
    kcache_key_free(&key);
    kcache_close(kc);
    return 0;
}
