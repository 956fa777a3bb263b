/* bench_vulkan.c - a start-up that makes PIPES compute pipelines (one shader, PIPES specializations),
   made four ways, each in a fresh process with its own device (the way a game's second start meets
   it); the time per pipeline, medians of several runs, as ratios:

     cold          the driver compiles it: its own disk cache off (MESA_SHADER_CACHE_DISABLE,
                   __GL_SHADER_DISK_CACHE=0)
     driver cache  the driver's own disk cache, warmed by an earlier process
     raw blob      a VkPipelineCache blob the program kept in a file: read, vkCreatePipelineCache,
                   create (what an engine does by hand: the floor)
     kcache hit    kcache_vk_pipeline from a store warmed by an earlier process

   Goals on a GPU driver: kcache hit within 1.1x the raw blob, and at least 10x faster than the
   driver's own cache. lavapipe (a CPU driver, what this machine has) keeps only a 32-byte header in
   its pipeline cache and compiles lazily: its figures show kcache's own overhead, not the driver's
   savings, and the bench says so. */
#define KCACHE_IMPLEMENTATION
#define KCACHE_VULKAN
#include "kcache.h"
#include "examples/vk_compute.h"
#include "bench/bench_util.h"

#include <sys/wait.h>

#define RUNS 9
#define PIPES 8

enum { COLD, DRIVER, RAW, HIT, WAYS };
static const char *const way_name[WAYS] = { "cold", "driver cache", "raw blob", "kcache hit" };
static char g_dir[256];

/* In a child: opens the device, makes the PIPES pipelines the given way, writes the seconds per
   pipeline (their making only: not the device's opening) to fd, or -1 when one failed or computed
   wrong results. */
static void one(int way, int fd) {
    vkc vk;
    vkc_pipe p;
    VkPipeline pipe[PIPES];
    char why[256], path[512];
    double t0, dt = -1;
    kcache *kc = NULL;
    int i, ok = 1;
    if (way == COLD) {
        setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
        setenv("__GL_SHADER_DISK_CACHE", "0", 1);
    }
    if (!vkc_open(&vk, why, sizeof why)) {
        if (write(fd, &dt, sizeof dt) != (ssize_t)sizeof dt) _exit(1);
        _exit(1);
    }
    if (way == HIT) {
        kcache_config cfg;
        kcache_config_defaults(&cfg);
        snprintf(path, sizeof path, "%s/kc", g_dir);
        cfg.dir = path;
        kcache_open(&kc, &cfg);
    }
    memset(&p, 0, sizeof p);
    p.vk = &vk;
    t0 = now_s();
    for (i = 0; i < PIPES; i++) {
        VkResult r = VK_ERROR_UNKNOWN;
        p.add = (uint32_t)i + 3;
        pipe[i] = VK_NULL_HANDLE;
        if (way == COLD || way == DRIVER) {
            r = vkc_create(&p, VK_NULL_HANDLE, &pipe[i]);
        } else if (way == RAW) { /* an engine's own: a file per pipeline, read whole */
            VkPipelineCacheCreateInfo ci;
            VkPipelineCache cache = VK_NULL_HANDLE;
            static unsigned char buf[1 << 20];
            size_t n = 0;
            FILE *f;
            snprintf(path, sizeof path, "%s/blob-%d", g_dir, i);
            if ((f = fopen(path, "rb")) != NULL) {
                n = fread(buf, 1, sizeof buf, f);
                fclose(f);
            }
            memset(&ci, 0, sizeof ci);
            ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
            ci.initialDataSize = n;
            ci.pInitialData = buf;
            if (vkCreatePipelineCache(vk.dev, &ci, NULL, &cache) == VK_SUCCESS) {
                r = vkc_create(&p, cache, &pipe[i]);
                vkDestroyPipelineCache(vk.dev, cache, NULL);
            }
        } else {
            kcache_key k;
            kcache_key_init(&k, "double");
            kcache_key_bytes(&k, "spirv", vkc_spirv, sizeof vkc_spirv);
            kcache_key_u64(&k, "spec.add", p.add);
            r = kcache_vk_pipeline(kc, vk.pd, vk.dev, &k, vkc_create, &p, &pipe[i]);
            kcache_key_free(&k);
        }
        if (r != VK_SUCCESS) ok = 0;
    }
    dt = (now_s() - t0) / PIPES;
    for (i = 0; i < PIPES; i++) {
        if (ok && !vkc_run_check(&vk, pipe[i], (uint32_t)i + 3)) ok = 0;
        if (pipe[i] != VK_NULL_HANDLE) vkDestroyPipeline(vk.dev, pipe[i], NULL);
    }
    if (!ok) dt = -1;
    kcache_close(kc);
    vkc_close(&vk);
    if (write(fd, &dt, sizeof dt) != (ssize_t)sizeof dt) _exit(1);
    _exit(0);
}

static double run_one(int way) {
    int fds[2], st = 0;
    double dt = -1;
    pid_t pid;
    if (pipe(fds) != 0) return -1;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        close(fds[0]);
        one(way, fds[1]);
    }
    close(fds[1]);
    if (read(fds[0], &dt, sizeof dt) != (ssize_t)sizeof dt) dt = -1;
    close(fds[0]);
    waitpid(pid, &st, 0);
    return dt;
}

/* Warms the driver's cache and kcache's store (a cold start each, in children) and writes the
   blobs an engine would have kept, one file per pipeline. */
static int warm(void) {
    vkc vk;
    vkc_pipe p;
    char why[256], path[512];
    int i;
    if (run_one(DRIVER) < 0 || run_one(HIT) < 0) return 0;
    if (!vkc_open(&vk, why, sizeof why)) return 0;
    memset(&p, 0, sizeof p);
    p.vk = &vk;
    for (i = 0; i < PIPES; i++) {
        VkPipeline pipe = VK_NULL_HANDLE;
        VkPipelineCacheCreateInfo ci;
        VkPipelineCache cache = VK_NULL_HANDLE;
        size_t n = 0;
        unsigned char *buf;
        FILE *f;
        p.add = (uint32_t)i + 3;
        memset(&ci, 0, sizeof ci);
        ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
        vkCreatePipelineCache(vk.dev, &ci, NULL, &cache);
        vkc_create(&p, cache, &pipe);
        vkGetPipelineCacheData(vk.dev, cache, &n, NULL);
        buf = (unsigned char *)malloc(n ? n : 1);
        vkGetPipelineCacheData(vk.dev, cache, &n, buf);
        snprintf(path, sizeof path, "%s/blob-%d", g_dir, i);
        if ((f = fopen(path, "wb")) != NULL) {
            fwrite(buf, 1, n, f);
            fclose(f);
        }
        free(buf);
        vkDestroyPipeline(vk.dev, pipe, NULL);
        vkDestroyPipelineCache(vk.dev, cache, NULL);
    }
    vkc_close(&vk);
    return 1;
}

int main(void) {
    double t[WAYS][RUNS], med[WAYS];
    vkc vk;
    char why[256], name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE], env[512];
    int w, i, cpu;
    if (!vkc_open(&vk, why, sizeof why)) {
        printf("bench_vulkan: skipped: %s\n", why);
        vkc_close(&vk);
        return 0;
    }
    memcpy(name, vk.name, sizeof name);
    vkc_close(&vk);
    cpu = strstr(name, "llvmpipe") != NULL || strstr(name, "SwiftShader") != NULL;
    snprintf(g_dir, sizeof g_dir, "/tmp/kcache-bench-vk-XXXXXX");
    if (!mkdtemp(g_dir)) { perror("mkdtemp"); return 1; }
    /* the driver's own disk cache, in a directory of the bench's */
    snprintf(env, sizeof env, "%s/mesa", g_dir);
    setenv("MESA_SHADER_CACHE_DIR", env, 1);
    snprintf(env, sizeof env, "%s/nv", g_dir);
    setenv("__GL_SHADER_DISK_CACHE_PATH", env, 1);
    setenv("__GL_SHADER_DISK_CACHE_SKIP_CLEANUP", "1", 1);
    if (!warm()) { printf("bench_vulkan: could not warm the caches\n"); rm_rf(g_dir); return 1; }
    for (i = 0; i < RUNS; i++)
        for (w = 0; w < WAYS; w++) t[w][i] = run_one(w);
    for (w = 0; w < WAYS; w++) {
        for (i = 0; i < RUNS; i++)
            if (t[w][i] < 0) { printf("bench_vulkan: %s failed\n", way_name[w]); rm_rf(g_dir); return 1; }
        med[w] = median_of(t[w], RUNS);
    }
    printf("%d compute pipelines on %s, each way in a fresh process, per pipeline (median of %d):\n", PIPES, name, RUNS);
    for (w = 0; w < WAYS; w++) printf("  %-13s %9.3f ms\n", way_name[w], med[w] * 1e3);
    printf("  kcache hit / raw blob        %6.2fx   (goal <= 1.1x)\n", med[HIT] / med[RAW]);
    printf("  driver cache / kcache hit    %6.2fx   (goal >= 10x on a GPU driver)\n", med[DRIVER] / med[HIT]);
    printf("  cold / kcache hit            %6.2fx\n", med[COLD] / med[HIT]);
    if (cpu)
        printf("  (a CPU driver: its pipeline cache is a header and it compiles lazily, so these show kcache's\n"
               "   overhead, not the savings; the GPU figures are still to be measured: scripts/gpu-check.sh)\n");
    rm_rf(g_dir);
    return 0;
}
