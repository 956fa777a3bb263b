/* opencl_demo - an OpenCL program built once, loaded from kcache after that (make demo).

   The program renders escape counts of the Mandelbrot set with an OpenCL kernel on the first device
   and sums them on the host. It is built where a program calls clBuildProgram, with its one-line
   replacement kcache_cl_build_program, and after its first launch it calls kcache_cl_update (which
   stores the binary again when the driver's grew: PoCL adds the work-group function it compiles at
   a kernel's first launch). Each run prints the time to the first kernel result (from making the
   program to reading the result back). Run it twice (make demo does):

       ./opencl_demo             # the first run of all compiles (and stores its time)
       ./opencl_demo             # loads the binary from the cache and says how much faster that was
       ./opencl_demo --fresh     # drops this program's entries first, so it compiles again

   The cache is the default one ($KCACHE_DIR, else $XDG_CACHE_HOME/kcache or ~/.cache/kcache).
   PoCL keeps a kernel cache of its own; each run of this demo gives it a new, empty directory (as a
   fresh container or CI job has), so that what a hit saves is kcache's doing, and on a hit it runs
   itself once more on that directory, now warm, and prints the two first-result times: kcache's
   binary into an empty PoCL cache against a warm one. POCL_KERNEL_CACHE=0 turns PoCL's cache off
   instead (other platforms ignore these variables). */
#define KCACHE_IMPLEMENTATION
#ifndef KCACHE_OPENCL
#define KCACHE_OPENCL /* the OpenCL part of kcache.h (needs -lOpenCL) */
#endif
#include "kcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ftw.h>
#include <sys/stat.h>

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
               "  builds an OpenCL program (a Mandelbrot kernel) with kcache_cl_build_program on the first device,\n"
               "  calls kcache_cl_update after its first launch, and prints the time to the first kernel result:\n"
               "  the first run of all compiles and stores the binary, later runs load it from the cache\n"
               "  (KCACHE_DIR, else $XDG_CACHE_HOME/kcache or ~/.cache/kcache) and say how much faster that was.\n"
               "  On PoCL each run gives PoCL's own cache a new, empty directory (a fresh container), and a hit\n"
               "  is timed again with that directory warm; POCL_KERNEL_CACHE=0 turns PoCL's cache off instead.\n"
               "  --fresh     drop this program's entries first, so that it compiles again\n"
               "  -h, --help  this text\n"
               "exit status: 0; 1 when OpenCL or kcache fails; 2 for a usage error\n");
}

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s; (void)flag; (void)f;
    return remove(p);
}

/* The stored payload's size under key (0: none), for what kcache_cl_update did. */
static size_t stored_size(kcache *kc, const kcache_key *key) {
    const void *d;
    size_t n = 0;
    if (kcache_get(kc, key, &d, &n) != KCACHE_OK) return 0;
    kcache_release(kc, d);
    return n;
}

int main(int argc, char **argv) {
    int fresh = 0, probe = 0, a;
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0) { usage(stdout); return 0; }
        if (strcmp(argv[a], "--fresh") == 0) { fresh = 1; continue; }
        if (strcmp(argv[a], "--probe") == 0) { probe = 1; continue; } /* (itself, timing a hit again: its time alone) */
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
    char why[512], devname[128] = "?", platname[128] = "?", vendor[128] = "?", pocl_dir[64] = "";
    const void *stored;
    size_t ssize, global[2] = {W, H}, i, before = 0, after = 0;
    double t0, ms, built_ms = 0, warm_ms = -1;
    long long sum = 0;
    int hit = 0, pocl_on = 0, *pixels = (int *)malloc(sizeof(int) * W * H);
    kcache_stats s0, s1;

    /* PoCL's own cache: a new, empty directory for this run (a fresh container), unless it is off.
       Before the first OpenCL call, which reads these variables. */
    if (!probe && !(getenv("POCL_KERNEL_CACHE") && strcmp(getenv("POCL_KERNEL_CACHE"), "0") == 0)) {
        snprintf(pocl_dir, sizeof pocl_dir, "/tmp/opencl_demo-pocl-XXXXXX");
        if (mkdtemp(pocl_dir)) {
            setenv("POCL_CACHE_DIR", pocl_dir, 1);
            setenv("POCL_KERNEL_CACHE", "1", 1);
            pocl_on = 1;
        } else {
            pocl_dir[0] = 0;
        }
    }
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

    /* the key kcache_cl_build_program gives this source, options and device (unit "opencl") */
    kcache_cl_key(kc, &key, device, NULL, 1, &source, NULL, options);
    timing_key(&tkey, &key);
    if (fresh) {
        kcache_remove(kc, &key);
        kcache_remove(kc, &tkey);
    }
    if (fresh) /* kcache_explain would now say "never stored": true of the store, not of the story */
        snprintf(why, sizeof why, "removed on purpose (--fresh), so this run compiles");
    else
        kcache_explain(kc, &key, why, sizeof why);

    /* the time to the first result: make and build (or load) the program, make the kernel, run it,
       read the result */
    kcache_get_stats(kc, &s0);
    t0 = now_ms();
    program = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    err = kcache_cl_build_program(kc, &program, 1, &device, options); /* was clBuildProgram(program, 1, &device, options, NULL, NULL) */
    if (err != CL_SUCCESS) {
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
    kcache_get_stats(kc, &s1);
    hit = s1.builds == s0.builds; /* nothing compiled: every device from the store */
    if (probe) { /* the time alone, for the run that asked; a miss is no hit's time (status 3) */
        printf("%.3f\n", ms);
        return hit ? 0 : 3;
    }

    /* after the first launch: the binary again, with what the driver added at the launch (PoCL's
       work-group function), for the next hit into an empty PoCL cache. A program loaded from the
       store has nothing to add (kcache_cl_update then says KCACHE_EINVAL). */
    before = stored_size(kc, &key);
    kcache_cl_update(kc, program);
    after = stored_size(kc, &key);

    if (!hit) {
        kcache_put(kc, &tkey, &ms, sizeof ms); /* for the next run's factor; losing it costs nothing */
    } else if (kcache_get(kc, &tkey, &stored, &ssize) == KCACHE_OK) {
        if (ssize == sizeof built_ms) memcpy(&built_ms, stored, sizeof built_ms);
        kcache_release(kc, stored);
    }
    if (hit && pocl_on && is_pocl(platname, vendor)) { /* itself once more, on the PoCL cache this run filled */
        char cmd[1200];
        FILE *f;
        snprintf(cmd, sizeof cmd, "'%s' --probe", argv[0]);
        if (!strchr(argv[0], '\'') && (f = popen(cmd, "r")) != NULL) {
            char line[64];
            if (fgets(line, sizeof line, f)) warm_ms = atof(line);
            if (pclose(f) != 0) warm_ms = -1;
        }
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
    if (!hit && after > before)
        printf("  update : kcache_cl_update after the first launch stored the binary again: %zu -> %zu bytes (with the\n"
               "           launch's work-group function, so that a hit into an empty PoCL cache does not compile it)\n",
               before, after);
    else if (!hit)
        printf("  update : kcache_cl_update after the first launch: the driver's binary did not grow (%zu bytes stored)\n", after);
    if (warm_ms > 0)
        printf("  pocl   : this hit went into an empty PoCL cache (a fresh container): %.1f ms; into the same cache, now\n"
               "           warm: %.1f ms: %.2fx\n", ms, warm_ms, ms / warm_ms);
    if (is_pocl(platname, vendor) && getenv("POCL_KERNEL_CACHE") && strcmp(getenv("POCL_KERNEL_CACHE"), "0") == 0) /* (other drivers: nothing to say) */
        printf("  note   : PoCL's own kernel cache is off (POCL_KERNEL_CACHE=0): kcache's binary is read right after\n"
               "           the build, and a hit compiles PoCL's work-group function again at the first launch\n");

    kcache_key_free(&key);
    kcache_key_free(&tkey);
    clReleaseMemObject(out);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    kcache_close(kc);
    free(pixels);
    if (pocl_dir[0]) nftw(pocl_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
