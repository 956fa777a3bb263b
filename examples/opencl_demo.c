/* opencl_demo - an OpenCL program built once, loaded from kcache after that (make demo).

   The program renders escape counts of the Mandelbrot set with an OpenCL kernel on the first device
   and sums them on the host. Its binary is cached by kcache_cl_build; each run prints the time to the
   first kernel result (from asking for the program to reading the result back). Run it twice
   (make demo does):

       ./opencl_demo             # the first run of all compiles (and stores its time)
       ./opencl_demo             # loads the binary from the cache and says how much faster that was
       ./opencl_demo --fresh     # drops this program's entries first, so it compiles again

   The cache is the default one ($KCACHE_DIR, else $XDG_CACHE_HOME/kcache or ~/.cache/kcache).
   PoCL keeps a kernel cache of its own; this demo turns it off (POCL_KERNEL_CACHE=0) unless you set
   that variable yourself, so that what the second run saves is kcache's doing (on PoCL it says so;
   other platforms ignore the variable). */
#define KCACHE_IMPLEMENTATION
#ifndef KCACHE_OPENCL
#define KCACHE_OPENCL /* the OpenCL part of kcache.h (needs -lOpenCL) */
#endif
#include "kcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opencl_demo_kernel.h"

enum { W = 512, H = 512 };

static const char *source = OPENCL_DEMO_SOURCE;
static const char *options = OPENCL_DEMO_OPTIONS;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Whether the platform is PoCL (its name is "Portable Computing Language", its vendor "The pocl
   project"): its own kernel cache, and what this demo says about it, are PoCL's alone. */
static int is_pocl(const char *platform_name, const char *vendor) {
    char v[128];
    size_t i;
    for (i = 0; vendor[i] && i + 1 < sizeof v; i++) v[i] = (char)(vendor[i] >= 'A' && vendor[i] <= 'Z' ? vendor[i] - 'A' + 'a' : vendor[i]);
    v[i] = 0;
    return strstr(platform_name, "Portable Computing Language") != NULL || strstr(v, "pocl") != NULL;
}

/* The key under which a building run leaves its time for the runs that load: the program's own
   key digest names it, so another program (or device) never reads this one's time. */
static void timing_key(kcache_key *t, const kcache_key *program) {
    char hex[33];
    kcache_hash_hex(kcache_key_digest(program), hex);
    kcache_key_init(t, "demo.opencl.first_result_ms");
    kcache_key_str(t, "program", hex);
}

static void usage(FILE *f) {
    fprintf(f, "usage: opencl_demo [--fresh]\n"
               "  builds an OpenCL program (a Mandelbrot kernel) with kcache_cl_build on the first device and\n"
               "  prints the time to the first kernel result: the first run of all compiles and stores the\n"
               "  binary, later runs load it from the cache (KCACHE_DIR, else $XDG_CACHE_HOME/kcache or\n"
               "  ~/.cache/kcache) and say how much faster that was\n"
               "  --fresh     drop this program's entries first, so that it compiles again\n"
               "  -h, --help  this text\n"
               "exit status: 0; 1 when OpenCL or kcache fails; 2 for a usage error\n");
}

int main(int argc, char **argv) {
    int fresh = 0, a;
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0) { usage(stdout); return 0; }
        if (strcmp(argv[a], "--fresh") == 0) { fresh = 1; continue; }
        fprintf(stderr, "opencl_demo: unknown argument '%s'\n", argv[a]);
        usage(stderr);
        return 2;
    }
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    cl_mem out;
    cl_int err, w = W, h = H;
    kcache *kc = NULL;
    kcache_key key, tkey;
    char why[512], devname[128] = "?", platname[128] = "?", vendor[128] = "?";
    const void *stored;
    size_t ssize, global[2] = {W, H}, i;
    double t0, ms, built_ms = 0;
    long long sum = 0;
    int hit = 0, *pixels = (int *)malloc(sizeof(int) * W * H);

    if (!getenv("POCL_KERNEL_CACHE")) setenv("POCL_KERNEL_CACHE", "0", 1); /* before the first OpenCL call */
    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
        fprintf(stderr, "opencl_demo: no OpenCL device (on Debian: apt install pocl-opencl-icd)\n");
        return 1;
    }
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof devname - 1, devname, NULL);
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof platname - 1, platname, NULL);
    clGetPlatformInfo(platform, CL_PLATFORM_VENDOR, sizeof vendor - 1, vendor, NULL);
    ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    queue = clCreateCommandQueue(ctx, device, 0, &err);
    if (kcache_open(&kc, NULL) != KCACHE_OK) return 1;

    kcache_cl_key(kc, &key, device, "demo.opencl.mandelbrot", 1, &source, NULL, options);
    timing_key(&tkey, &key);
    if (fresh) {
        kcache_remove(kc, &key);
        kcache_remove(kc, &tkey);
    }
    if (fresh) /* kcache_explain would now say "never stored": true of the store, not of the story */
        snprintf(why, sizeof why, "removed on purpose (--fresh), so this run compiles");
    else
        kcache_explain(kc, &key, why, sizeof why);

    /* the time to the first result: build (or load), make the kernel, run it, read the result */
    t0 = now_ms();
    program = kcache_cl_build(kc, ctx, 1, &device, "demo.opencl.mandelbrot", 1, &source, NULL, options, &hit, &err);
    if (!program) {
        char log[8192];
        kcache_cl_build_log(kc, log, sizeof log);
        fprintf(stderr, "opencl_demo: the build failed (%d):\n%s\n", (int)err, log);
        return 1;
    }
    kernel = clCreateKernel(program, "mandel", &err);
    out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * W * H, NULL, &err);
    clSetKernelArg(kernel, 0, sizeof out, &out);
    clSetKernelArg(kernel, 1, sizeof w, &w);
    clSetKernelArg(kernel, 2, sizeof h, &h);
    clEnqueueNDRangeKernel(queue, kernel, 2, NULL, global, NULL, 0, NULL, NULL);
    err = clEnqueueReadBuffer(queue, out, CL_TRUE, 0, sizeof(int) * W * H, pixels, 0, NULL, NULL);
    ms = now_ms() - t0;
    if (err != CL_SUCCESS) { fprintf(stderr, "opencl_demo: the kernel failed (%d)\n", (int)err); return 1; }
    for (i = 0; i < (size_t)W * H; i++) sum += pixels[i];

    if (!hit) {
        kcache_put(kc, &tkey, &ms, sizeof ms); /* for the next run's factor; losing it costs nothing */
    } else if (kcache_get(kc, &tkey, &stored, &ssize) == KCACHE_OK) {
        if (ssize == sizeof built_ms) memcpy(&built_ms, stored, sizeof built_ms);
        kcache_release(kc, stored);
    }

    printf("kcache OpenCL demo  (store: %s; platform: %s; device: %s)\n", kcache_dir(kc) ? kcache_dir(kc) : "none, memory only",
           platname, devname);
    printf("  before : %s\n", why);
    printf("  result : %lld (escape counts of %dx%d pixels)\n", sum, W, H);
    if (!hit)
        printf("  run    : MISS - compiled and cached: first result in %.1f ms\n", ms);
    else if (built_ms > 0)
        printf("  run    : HIT  - first result in %.1f ms; the run that compiled took %.1f ms: %.0fx faster\n", ms, built_ms,
               built_ms / (ms > 0.001 ? ms : 0.001));
    else
        printf("  run    : HIT  - first result in %.1f ms (the compiling run's time is not in the cache)\n", ms);
    if (is_pocl(platname, vendor) && strcmp(getenv("POCL_KERNEL_CACHE"), "0") == 0) /* (other drivers: nothing to say) */
        printf("  note   : PoCL's own kernel cache is off (POCL_KERNEL_CACHE=0), so the time saved is kcache's; most of\n"
               "           a hit's time is PoCL compiling a work-group function for this launch size at the first\n"
               "           launch, which its own cache keeps when it is on (make bench: kc+pocl)\n");

    kcache_key_free(&key);
    kcache_key_free(&tkey);
    clReleaseMemObject(out);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    kcache_close(kc);
    free(pixels);
    return 0;
}
