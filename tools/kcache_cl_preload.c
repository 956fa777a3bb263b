/* kcache_cl_preload.c: build/libkcache_cl.so, kcache for OpenCL programs nobody changes.

   LD_PRELOAD=/path/to/libkcache_cl.so program   caches every OpenCL program the program builds from
   source with clBuildProgram, in the kcache store its environment names (KCACHE_DIR, KCACHE_DEBUG,
   KCACHE_ENABLE ... as for any kcache user), through kcache_cl_build_program: keyed by source,
   options and device, single flight across processes, written through at each build (nothing is
   left for exit: the store is never closed, the process just ends).

   The design (why a twin): kcache_cl_build_program swaps *program for a program made from the
   stored binaries, but a preload cannot change the handle its caller holds. So each build from
   source gets a twin: a new source program made from the caller's program's source and context,
   built (or loaded, on a hit) by kcache_cl_build_program. The caller's program itself is never
   built; every call that takes it (clCreateKernel, clCreateKernelsInProgram, clGetProgramInfo,
   clGetProgramBuildInfo) is served by its twin, and clGetKernelInfo's CL_KERNEL_PROGRAM gives the
   caller's handle back. clGetProgramInfo answers CL_PROGRAM_REFERENCE_COUNT, CL_PROGRAM_SOURCE,
   CL_PROGRAM_IL and CL_PROGRAM_CONTEXT from the caller's program (the one it retains and releases),
   everything else (devices, binaries, kernel names) from the twin; build logs, status and options
   are the twin's, the driver's own. The cost: one more clCreateProgramWithSource per build (a copy
   of the source), a table lookup under a mutex in each wrapped call, and the caller's unbuilt
   source program kept until its release. When the caller's program's count reaches zero at
   clReleaseProgram, kcache_cl_update stores the twin's binary again if the driver's has grown
   (PoCL's first-launch code), and the twin is released (its kernels keep it alive as usual). A
   caller's CL_PROGRAM_BINARY_SIZES / CL_PROGRAM_BINARIES are answered from the store (the bytes
   kcache stored for that source, options and device), not by the twin: PoCL freezes a program's
   binary at the first such query, and a caller that asks right after the build (clFFT does) would
   keep the update from storing what the first launches added.

   Passed straight through (the driver's own call): programs made from binaries or IL (so a program
   that caches for itself, as PyOpenCL does, is not cached twice), clCompileProgram and
   clLinkProgram, and anything while kcache itself calls OpenCL (a per-thread re-entry guard).
   A pfn_notify is called, synchronously, once the build is done (the spec allows either).
   A build that fails is the driver's: its error and log, on the twin (a failure compiles twice).

   Off: KCACHE_CL_PRELOAD=0 in the environment (the whole process), KCACHE_ENABLE=0 (kcache off),
   or KCACHE_CL_PRELOAD_SKIP=name,name,...: a process whose executable has one of these names, or
   an OpenCL program whose source has one of them as a word followed by "(" (a kernel or function
   it defines or calls), is built by the driver alone. */
#define _GNU_SOURCE 1 /* RTLD_NEXT */
#define KCACHE_OPENCL
#define KCACHE_IMPLEMENTATION
#include "kcache.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef cl_int (*build_fn)(cl_program, cl_uint, const cl_device_id *, const char *,
                           void (CL_CALLBACK *)(cl_program, void *), void *);
typedef cl_int (*release_fn)(cl_program);
typedef cl_int (*info_fn)(cl_program, cl_program_info, size_t, void *, size_t *);
typedef cl_int (*build_info_fn)(cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *);
typedef cl_kernel (*kernel_fn)(cl_program, const char *, cl_int *);
typedef cl_int (*kernels_fn)(cl_program, cl_uint, cl_kernel *, cl_uint *);
typedef cl_int (*kernel_info_fn)(cl_kernel, cl_kernel_info, size_t, void *, size_t *);

/* The driver's functions (the ICD loader's, or a layer's below us) and the one kcache */
static struct {
    build_fn build;
    release_fn release;
    info_fn info;
    build_info_fn build_info;
    kernel_fn kernel;
    kernels_fn kernels;
    kernel_info_fn kernel_info;
    kcache *kc;
    int off;          /* KCACHE_CL_PRELOAD=0, or this executable skipped */
    char *skip;       /* KCACHE_CL_PRELOAD_SKIP, copied: ",name,name," */
    pthread_key_t guard; /* set while kcache calls OpenCL: our wrappers pass straight through */
} real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

/* The caller's programs and their twins */
typedef struct twin_pair { cl_program app, twin; } twin_pair;
static pthread_mutex_t twins_mu = PTHREAD_MUTEX_INITIALIZER;
static twin_pair *twins;
static size_t ntwins, captwins;

static void *next_sym(const char *name) { return dlsym(RTLD_NEXT, name); }

static int word_in(const char *list, const char *w, size_t n) {
    const char *p = list;
    while (p && (p = strstr(p, w)) != NULL) {
        if (p > list && p[-1] == ',' && p[n] == ',') return 1;
        p++;
    }
    return 0;
}

static void real_init(void) {
    const char *v = getenv("KCACHE_CL_PRELOAD"), *s = getenv("KCACHE_CL_PRELOAD_SKIP");
    /* dlsym's function pointers come back as void *: copied, as POSIX allows */
    void *p;
    p = next_sym("clBuildProgram"); memcpy(&real.build, &p, sizeof p);
    p = next_sym("clReleaseProgram"); memcpy(&real.release, &p, sizeof p);
    p = next_sym("clGetProgramInfo"); memcpy(&real.info, &p, sizeof p);
    p = next_sym("clGetProgramBuildInfo"); memcpy(&real.build_info, &p, sizeof p);
    p = next_sym("clCreateKernel"); memcpy(&real.kernel, &p, sizeof p);
    p = next_sym("clCreateKernelsInProgram"); memcpy(&real.kernels, &p, sizeof p);
    p = next_sym("clGetKernelInfo"); memcpy(&real.kernel_info, &p, sizeof p);
    pthread_key_create(&real.guard, NULL);
    real.off = v && strcmp(v, "0") == 0;
    if (s && *s) {
        size_t n = strlen(s);
        if ((real.skip = (char *)malloc(n + 3)) != NULL) {
            char exe[4096];
            ssize_t m = readlink("/proc/self/exe", exe, sizeof exe - 1);
            real.skip[0] = ',';
            memcpy(real.skip + 1, s, n);
            real.skip[n + 1] = ',';
            real.skip[n + 2] = 0;
            if (m > 0) {
                const char *b;
                exe[m] = 0;
                b = strrchr(exe, '/');
                b = b ? b + 1 : exe;
                if (word_in(real.skip, b, strlen(b))) real.off = 1;
            }
        }
    }
    if (!real.build || !real.release || !real.info || !real.build_info || !real.kernel || !real.kernels ||
        !real.kernel_info)
        real.off = 1; /* no driver below: every wrapper that can still forward does */
}

/* The store is opened at the first build from source, not at the first OpenCL call: a process that
   only loads binaries (PyOpenCL from its own cache) never opens it */
static pthread_once_t kc_once = PTHREAD_ONCE_INIT;
static void kc_init(void) {
    pthread_setspecific(real.guard, &real);
    if (kcache_open(&real.kc, NULL) != KCACHE_OK) real.kc = NULL; /* a cache that cannot open is no error */
    pthread_setspecific(real.guard, NULL);
}

static void init(void) { pthread_once(&real_once, real_init); }
static int guarded(void) { return pthread_getspecific(real.guard) != NULL; }
static void guard(int on) { pthread_setspecific(real.guard, on ? &real : NULL); }

/* The twin of app, or NULL */
static cl_program twin_of(cl_program app) {
    cl_program t = NULL;
    size_t i;
    pthread_mutex_lock(&twins_mu);
    for (i = 0; i < ntwins && !t; i++)
        if (twins[i].app == app) t = twins[i].twin;
    pthread_mutex_unlock(&twins_mu);
    return t;
}

/* Sets app's twin (t NULL: drops it); returns the twin it replaced, for the caller to release */
static cl_program twin_set(cl_program app, cl_program t) {
    cl_program old = NULL;
    size_t i;
    pthread_mutex_lock(&twins_mu);
    for (i = 0; i < ntwins; i++)
        if (twins[i].app == app) break;
    if (i < ntwins) {
        old = twins[i].twin;
        if (t) twins[i].twin = t;
        else twins[i] = twins[--ntwins];
    } else if (t) {
        if (ntwins == captwins) {
            size_t nc = captwins ? captwins * 2 : 64;
            twin_pair *n = (twin_pair *)realloc(twins, nc * sizeof *n);
            if (n) { twins = n; captwins = nc; }
        }
        if (ntwins < captwins) { twins[ntwins].app = app; twins[ntwins].twin = t; ntwins++; }
        else old = t; /* no memory: the twin is dropped (the caller then builds in place) */
    }
    pthread_mutex_unlock(&twins_mu);
    return old;
}

/* The binaries a caller asks of its program, as kcache stored them: a driver freezes a program's
   binary at the first CL_PROGRAM_BINARIES query (PoCL does), so a caller that asks right after the
   build (clFFT does, for its own cache) would leave a twin built from source without what its
   first launches add, and kcache_cl_update at the release with nothing to store; and a twin loaded
   from the store was given its binary without PoCL's generic work-group functions (kcache leaves
   them out where a kernel has a specialised one), which PoCL would compile again to answer. The
   caller gets the stored bytes instead (for a miss, what the driver gave kcache at the end of the
   build, from a program of the same source), the same ones for its size and binaries queries. */
typedef struct twin_bins { cl_program twin; cl_uint n; size_t *sizes; unsigned char **bins; } twin_bins;
static twin_bins *tbins;
static size_t ntbins, captbins;

static void twin_bins_free(twin_bins *b) {
    cl_uint i;
    for (i = 0; i < b->n; i++) free(b->bins[i]);
    free(b->bins);
    free(b->sizes);
}

/* Forgets t's binaries (t is being released) */
static void twin_bins_drop(cl_program t) {
    size_t i;
    pthread_mutex_lock(&twins_mu);
    for (i = 0; i < ntbins; i++)
        if (tbins[i].twin == t) {
            twin_bins_free(&tbins[i]);
            tbins[i] = tbins[--ntbins];
            break;
        }
    pthread_mutex_unlock(&twins_mu);
}

/* The stored binaries of twin t of app, one per device of t, read from the store once (0: a device
   with no entry, or a query the driver refuses: the driver answers). Called with the guard on. */
static int twin_bins_get(cl_program app, cl_program t, twin_bins *out) {
    cl_uint n = 0, i;
    cl_device_id *devs = NULL;
    size_t len = 0, olen = 0, k;
    char *src = NULL, *opts = NULL;
    twin_bins b;
    int ok = 0;
    memset(&b, 0, sizeof b);
    pthread_mutex_lock(&twins_mu);
    for (k = 0; k < ntbins; k++)
        if (tbins[k].twin == t) { *out = tbins[k]; ok = 1; break; }
    pthread_mutex_unlock(&twins_mu);
    if (ok) return 1;
    if (!real.kc || real.info(app, CL_PROGRAM_SOURCE, 0, NULL, &len) != CL_SUCCESS || len <= 1 ||
        real.info(t, CL_PROGRAM_NUM_DEVICES, sizeof n, &n, NULL) != CL_SUCCESS || n == 0 || n > 64)
        return 0;
    devs = (cl_device_id *)malloc(sizeof *devs * n);
    src = (char *)malloc(len + 1);
    b.sizes = (size_t *)calloc(n, sizeof *b.sizes);
    b.bins = (unsigned char **)calloc(n, sizeof *b.bins);
    if (!devs || !src || !b.sizes || !b.bins || real.info(t, CL_PROGRAM_DEVICES, sizeof *devs * n, devs, NULL) != CL_SUCCESS ||
        real.info(app, CL_PROGRAM_SOURCE, len, src, NULL) != CL_SUCCESS ||
        real.build_info(t, devs[0], CL_PROGRAM_BUILD_OPTIONS, 0, NULL, &olen) != CL_SUCCESS ||
        (opts = (char *)malloc(olen + 1)) == NULL ||
        real.build_info(t, devs[0], CL_PROGRAM_BUILD_OPTIONS, olen, opts, NULL) != CL_SUCCESS)
        goto done;
    src[len] = 0;
    opts[olen] = 0;
    b.n = n;
    for (i = 0; i < n; i++) { /* the entry kcache_cl_build_program stored for this device */
        const char *s = src;
        kcache_key key;
        const void *d;
        size_t sz;
        if (kcache_cl_key(real.kc, &key, devs[i], "opencl", 1, &s, NULL, opts) != KCACHE_OK ||
            kcache_get(real.kc, &key, &d, &sz) != KCACHE_OK) {
            kcache_key_free(&key);
            goto done;
        }
        kcache_key_free(&key);
        /* a payload: "kcclbin1", the binary's size, two words, the binary */
        if (sz > 32 && memcmp(d, "kcclbin1", 8) == 0 && (b.bins[i] = (unsigned char *)malloc(sz - 32)) != NULL) {
            memcpy(b.bins[i], (const unsigned char *)d + 32, sz - 32);
            b.sizes[i] = sz - 32;
        }
        kcache_release(real.kc, d);
        if (!b.bins[i]) goto done;
    }
    pthread_mutex_lock(&twins_mu);
    if (ntbins == captbins) {
        size_t nc = captbins ? captbins * 2 : 16;
        twin_bins *nb = (twin_bins *)realloc(tbins, nc * sizeof *nb);
        if (nb) { tbins = nb; captbins = nc; }
    }
    if (ntbins < captbins) {
        b.twin = t;
        tbins[ntbins++] = b;
        *out = b;
        ok = 1;
    }
    pthread_mutex_unlock(&twins_mu);
done:
    if (!ok) twin_bins_free(&b);
    free(devs);
    free(src);
    free(opts);
    return ok;
}

static cl_program app_of(cl_program t) {
    cl_program a = NULL;
    size_t i;
    pthread_mutex_lock(&twins_mu);
    for (i = 0; i < ntwins && !a; i++)
        if (twins[i].twin == t) a = twins[i].app;
    pthread_mutex_unlock(&twins_mu);
    return a;
}

/* Whether the source names a skipped word followed by "(" */
static int source_skipped(const char *src) {
    const char *p = real.skip;
    if (!p) return 0;
    while (*p) {
        const char *e = strchr(++p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *q = src;
        if (n) {
            while ((q = strchr(q, p[0])) != NULL) {
                if (strncmp(q, p, n) == 0 && (q == src || !(q[-1] == '_' || (q[-1] >= '0' && q[-1] <= '9') ||
                                                         ((q[-1] | 32) >= 'a' && (q[-1] | 32) <= 'z')))) {
                    const char *r = q + n;
                    while (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\r') r++;
                    if (*r == '(') return 1;
                }
                q++;
            }
        }
        if (!e) break;
        p = e;
    }
    return 0;
}

/* The twin: a new source program of app's source, built by kcache; NULL when app is not for us
   (made from binaries or IL, skipped, a query the driver refuses, or no store) */
static cl_program make_twin(cl_program app, cl_uint ndev, const cl_device_id *devs, const char *options,
                            cl_int *err) {
    cl_context ctx = NULL;
    size_t len = 0;
    char *src;
    cl_program t = NULL;
    cl_int e;
    if (real.info(app, CL_PROGRAM_CONTEXT, sizeof ctx, &ctx, NULL) != CL_SUCCESS || !ctx ||
        real.info(app, CL_PROGRAM_SOURCE, 0, NULL, &len) != CL_SUCCESS || len <= 1)
        return NULL;
    if ((src = (char *)malloc(len + 1)) == NULL) return NULL;
    if (real.info(app, CL_PROGRAM_SOURCE, len, src, NULL) == CL_SUCCESS) {
        const char *s = src;
        src[len] = 0;
        len = strlen(src);
        if (len && !source_skipped(src) && (pthread_once(&kc_once, kc_init), real.kc)) {
            guard(1);
            t = clCreateProgramWithSource(ctx, 1, &s, &len, &e);
            if (t) *err = kcache_cl_build_program(real.kc, &t, ndev, devs, options);
            guard(0);
        }
    }
    free(src);
    return t;
}

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                                               const char *options,
                                               void (CL_CALLBACK *pfn_notify)(cl_program, void *),
                                               void *user_data) {
    cl_program t, old;
    cl_int e = CL_SUCCESS;
    init();
    if (!real.build) return CL_INVALID_OPERATION;
    if (guarded() || real.off || !program || (!pfn_notify && user_data) || (num_devices == 0) != (device_list == NULL))
        return real.build(program, num_devices, device_list, options, pfn_notify, user_data);
    t = make_twin(program, num_devices, device_list, options, &e);
    if (!t) return real.build(program, num_devices, device_list, options, pfn_notify, user_data);
    old = twin_set(program, t); /* a rebuild: a new twin; the old one lives on in its kernels */
    if (old == t) { /* not kept (no memory): built in place instead */
        guard(1); real.release(t); guard(0);
        return real.build(program, num_devices, device_list, options, pfn_notify, user_data);
    }
    if (old) { twin_bins_drop(old); guard(1); real.release(old); guard(0); }
    if (pfn_notify) pfn_notify(program, user_data);
    return e;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseProgram(cl_program program) {
    cl_program t;
    cl_uint refs = 0;
    init();
    if (!real.release) return CL_INVALID_PROGRAM;
    if (guarded() || !(t = twin_of(program))) return real.release(program);
    if (real.info(program, CL_PROGRAM_REFERENCE_COUNT, sizeof refs, &refs, NULL) == CL_SUCCESS && refs == 1) {
        twin_set(program, NULL);
        twin_bins_drop(t);
        guard(1);
        kcache_cl_update(real.kc, t); /* a twin loaded from the store is no source program: EINVAL, nothing done */
        real.release(t);
        guard(0);
    }
    return real.release(program);
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramInfo(cl_program program, cl_program_info param_name,
                                                 size_t param_value_size, void *param_value,
                                                 size_t *param_value_size_ret) {
    cl_program t;
    twin_bins b;
    init();
    if (!real.info) return CL_INVALID_PROGRAM;
    if (!guarded() && param_name != CL_PROGRAM_REFERENCE_COUNT && param_name != CL_PROGRAM_SOURCE &&
        param_name != CL_PROGRAM_CONTEXT && param_name != 0x1169 /* CL_PROGRAM_IL */ &&
        (t = twin_of(program)) != NULL) {
        int served;
        cl_program app = program;
        program = t;
        if (param_name != CL_PROGRAM_BINARY_SIZES && param_name != CL_PROGRAM_BINARIES)
            return real.info(program, param_name, param_value_size, param_value, param_value_size_ret);
        guard(1);
        served = twin_bins_get(app, t, &b);
        guard(0);
        if (served) { /* the stored binaries: the twin stays unfrozen until its release */
            size_t need = (size_t)b.n * (param_name == CL_PROGRAM_BINARIES ? sizeof(unsigned char *) : sizeof(size_t));
            cl_uint i;
            if (param_value_size_ret) *param_value_size_ret = need;
            if (!param_value) return CL_SUCCESS;
            if (param_value_size < need) return CL_INVALID_VALUE;
            for (i = 0; i < b.n; i++) {
                if (param_name == CL_PROGRAM_BINARY_SIZES) {
                    ((size_t *)param_value)[i] = b.sizes[i];
                } else {
                    unsigned char *to = ((unsigned char **)param_value)[i];
                    if (to) memcpy(to, b.bins[i], b.sizes[i]);
                }
            }
            return CL_SUCCESS;
        }
    }
    return real.info(program, param_name, param_value_size, param_value, param_value_size_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramBuildInfo(cl_program program, cl_device_id device,
                                                      cl_program_build_info param_name, size_t param_value_size,
                                                      void *param_value, size_t *param_value_size_ret) {
    cl_program t;
    init();
    if (!real.build_info) return CL_INVALID_PROGRAM;
    if (!guarded() && (t = twin_of(program)) != NULL) program = t;
    return real.build_info(program, device, param_name, param_value_size, param_value, param_value_size_ret);
}

CL_API_ENTRY cl_kernel CL_API_CALL clCreateKernel(cl_program program, const char *kernel_name, cl_int *errcode_ret) {
    cl_program t;
    init();
    if (!real.kernel) {
        if (errcode_ret) *errcode_ret = CL_INVALID_PROGRAM;
        return NULL;
    }
    if (!guarded() && (t = twin_of(program)) != NULL) program = t;
    return real.kernel(program, kernel_name, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clCreateKernelsInProgram(cl_program program, cl_uint num_kernels, cl_kernel *kernels,
                                                         cl_uint *num_kernels_ret) {
    cl_program t;
    init();
    if (!real.kernels) return CL_INVALID_PROGRAM;
    if (!guarded() && (t = twin_of(program)) != NULL) program = t;
    return real.kernels(program, num_kernels, kernels, num_kernels_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetKernelInfo(cl_kernel kernel, cl_kernel_info param_name, size_t param_value_size,
                                                void *param_value, size_t *param_value_size_ret) {
    cl_int e;
    init();
    if (!real.kernel_info) return CL_INVALID_KERNEL;
    e = real.kernel_info(kernel, param_name, param_value_size, param_value, param_value_size_ret);
    if (e == CL_SUCCESS && !guarded() && param_name == CL_KERNEL_PROGRAM && param_value &&
        param_value_size >= sizeof(cl_program)) {
        cl_program p, a;
        memcpy(&p, param_value, sizeof p);
        if ((a = app_of(p)) != NULL) memcpy(param_value, &a, sizeof a); /* the handle the caller knows */
    }
    return e;
}
