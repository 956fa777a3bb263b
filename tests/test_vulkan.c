/* test_vulkan.c - kcache_vk_pipeline on a real driver (lavapipe, mesa-vulkan-drivers): a pipeline
   made cold, then from the stored blob in a new process, with right results each time; the key per
   device (kcache_vk_key, explain, remove); damaged and foreign blobs rejected before the driver sees
   them; single flight across threads; create's own failures; kc NULL.

   lavapipe's pipeline cache data is its 32-byte header alone, so here the test proves correctness,
   not speed (bench/bench_vulkan.c measures). */
#define KCACHE_IMPLEMENTATION
#define KCACHE_VULKAN
#include "kcache.h"
#include "kt.h"
#include "examples/vk_compute.h"

#include <ftw.h>
#include <pthread.h>

#if defined(__SANITIZE_ADDRESS__)
#define KT_ASAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KT_ASAN 1
#endif
#endif
#if defined(KT_ASAN)
void __lsan_do_leak_check(void);
/* the drivers' own: lavapipe keeps a few allocations for the process's life */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libvulkan_lvp.so\nleak:libLLVM\nleak:libvulkan.so\n"; }
#endif
#include <sys/wait.h>

static char g_base[256];

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s; (void)flag; (void)f;
    return remove(p);
}

/* A fresh store for each group; the log collected so that a group can read what kcache said. */
static char g_log[16384];
static size_t g_log_len;
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static void collect(void *user, const char *line) {
    (void)user;
    pthread_mutex_lock(&g_log_lock);
    kt_log_append(g_log, sizeof g_log, &g_log_len, line);
    pthread_mutex_unlock(&g_log_lock);
}

static kcache *open_cache(void) {
    kcache_config cfg;
    kcache *kc = NULL;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/kc", g_base);
    kcache_config_defaults(&cfg);
    cfg.dir = dir;
    cfg.debug = 1;
    cfg.log = collect;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return NULL;
    return kc;
}

static void fresh_store(void) {
    if (g_base[0]) nftw(g_base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    snprintf(g_base, sizeof g_base, "/tmp/kcache-vktest-XXXXXX");
    if (!mkdtemp(g_base)) { perror("mkdtemp"); exit(2); }
    g_log_len = 0;
    g_log[0] = 0;
}

static vkc g_vk;

/* The caller's part of the key: the SPIR-V and the specialization. */
static void caller_key(kcache_key *k, uint32_t add) {
    kcache_key_init(k, "double");
    kcache_key_bytes(k, "spirv", vkc_spirv, sizeof vkc_spirv);
    kcache_key_str(k, "entry", "main");
    kcache_key_u64(k, "spec.add", add);
}

/* What create makes in this test: the shader with ADD = add, on the test's device. */
static void pipe_for(vkc_pipe *p, uint32_t add) {
    memset(p, 0, sizeof *p);
    p->vk = &g_vk;
    p->add = add;
}

static uint64_t hits(kcache *kc) {
    kcache_stats st;
    kcache_get_stats(kc, &st);
    return st.hits_mem + st.hits_disk;
}

static void cold_then_hit_results_right(void) {
    kcache *kc;
    kcache_key k;
    vkc_pipe p;
    VkPipeline pipe = VK_NULL_HANDLE;
    kcache_stats st;
    pid_t pid;
    int status = 0;
    fresh_store();
    kc = open_cache();
    KT_CHECK(kc != NULL);
    if (!kc) return;
    caller_key(&k, 3);
    pipe_for(&p, 3);
    KT_CHECK(kcache_vk_pipeline(kc, g_vk.pd, g_vk.dev, &k, vkc_create, &p, &pipe) == VK_SUCCESS);
    KT_CHECK(pipe != VK_NULL_HANDLE);
    KT_CHECK_EQ_U64(p.calls, 1);
    KT_CHECK_EQ_U64(p.with_cache, 1);        /* cold, with an empty cache whose blob is kept */
    KT_CHECK(vkc_run_check(&g_vk, pipe, 3));
    vkDestroyPipeline(g_vk.dev, pipe, NULL);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.puts, 1);
    KT_CHECK_EQ_U64(hits(kc), 0);
    /* the same process again: a memory hit, create given a cache made from the blob */
    pipe = VK_NULL_HANDLE;
    KT_CHECK(kcache_vk_pipeline(kc, g_vk.pd, g_vk.dev, &k, vkc_create, &p, &pipe) == VK_SUCCESS);
    KT_CHECK_EQ_U64(p.calls, 2);
    KT_CHECK_EQ_U64(p.with_cache, 2);
    KT_CHECK(p.last_cache_size >= 32); /* the stored blob reached the driver: its header at least */
    KT_CHECK_EQ_U64(hits(kc), 1);
    KT_CHECK(vkc_run_check(&g_vk, pipe, 3));
    vkDestroyPipeline(g_vk.dev, pipe, NULL);
    kcache_close(kc);
    kcache_key_free(&k);
    /* a new process with its own device: a disk hit and right results. Started by exec, not a bare
       fork: a child of a process that holds a GPU driver (NVIDIA's) cannot use that driver */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_vulkan", "--disk-hit-child", g_base, (char *)NULL);
        _exit(127);
    }
    KT_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* kcache_vk_key gives the key kcache_vk_pipeline stores under: explain says it hits, remove removes
   it; the device's identity is in it, so another specialization or another device is another key. */
static void key_per_device_explain_remove(void) {
    kcache *kc;
    kcache_key k, full, other;
    vkc_pipe p;
    VkPipeline pipe = VK_NULL_HANDLE;
    char buf[512];
    const void *data;
    size_t size;
    fresh_store();
    kc = open_cache();
    if (!kc) { KT_FAILF("open"); return; }
    pipe_for(&p, 5);
    caller_key(&k, 5);
    KT_CHECK(kcache_vk_pipeline(kc, g_vk.pd, g_vk.dev, &k, vkc_create, &p, &pipe) == VK_SUCCESS);
    vkDestroyPipeline(g_vk.dev, pipe, NULL);
    caller_key(&full, 5);
    KT_CHECK(kcache_vk_key(&full, g_vk.pd) == KCACHE_OK);
    KT_CHECK(kcache_key_digest(&full).lo != kcache_key_digest(&k).lo);
    KT_CHECK(kcache_get(kc, &k, &data, &size) == KCACHE_MISS); /* the caller's part alone is not the entry */
    KT_CHECK(kcache_get(kc, &full, &data, &size) == KCACHE_OK);
    if (size >= 64) {
        VkPhysicalDeviceProperties props;
        const unsigned char *b = (const unsigned char *)data + 32;
        vkGetPhysicalDeviceProperties(g_vk.pd, &props);
        KT_CHECK(memcmp(data, "kcvkpc01", 8) == 0);
        KT_CHECK(memcmp(b + 16, props.pipelineCacheUUID, VK_UUID_SIZE) == 0);
        kcache_release(kc, data);
    } else {
        KT_FAILF("stored payload of %zu bytes", size);
        if (size) kcache_release(kc, data);
    }
    kcache_explain(kc, &full, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "hit") != NULL, "explain: %s", buf);
    {
        const kcache_key_field *f = full.heap ? full.heap : full.inline_fields;
        uint32_t i, found = 0;
        for (i = 0; i < full.count; i++)
            if (!strcmp(f[i].name, "vk.pipeline_cache_uuid") || !strcmp(f[i].name, "vk.vendor_id") || !strcmp(f[i].name, "vk.device_id") ||
                !strcmp(f[i].name, "vk.driver_version") || !strcmp(f[i].name, "vk.driver_id") || !strcmp(f[i].name, "vk.driver_info") ||
                !strcmp(f[i].name, "vk.driver.library"))
                found++;
        KT_CHECK_EQ_U64(found, 7); /* lavapipe reports 1.3 and its library is mapped */
    }
    caller_key(&other, 6);
    kcache_vk_key(&other, g_vk.pd);
    kcache_explain(kc, &other, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "spec.add") != NULL, "explain of another specialization: %s", buf);
    KT_CHECK(kcache_remove(kc, &full) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &full, &data, &size) == KCACHE_MISS);
    KT_CHECK(kcache_vk_key(&other, VK_NULL_HANDLE) == KCACHE_EINVAL);
    kcache_key_free(&other);
    kcache_key_free(&full);
    kcache_key_free(&k);
    kcache_close(kc);
}

/* What vkGetPipelineCacheData says of a cache made with no initial data, now. */
static size_t empty_cache_size(void) {
    VkPipelineCacheCreateInfo ci;
    VkPipelineCache cache = VK_NULL_HANDLE;
    size_t n = 0;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    if (vkCreatePipelineCache(g_vk.dev, &ci, NULL, &cache) != VK_SUCCESS) return 0;
    vkGetPipelineCacheData(g_vk.dev, cache, &n, NULL);
    vkDestroyPipelineCache(g_vk.dev, cache, NULL);
    return n;
}

/* A stored payload rewritten into each damaged or foreign shape: the driver never gets it (create
   is given an empty cache), it is counted as a reject, and a good blob replaces it. */
static void damaged_and_foreign_blobs_rejected(void) {
    static const char *const kinds[] = { "magic",  "length", "short-header", "header-version", "vendor",
                                         "device", "uuid",   "header-len",   "header-len-inside" };
    size_t i;
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        kcache *kc;
        kcache_key k, full;
        vkc_pipe p;
        VkPipeline pipe = VK_NULL_HANDLE;
        const void *data;
        size_t size;
        unsigned char *bad;
        kcache_stats st;
        size_t empty;
        unsigned j;
        fresh_store();
        kc = open_cache();
        if (!kc) { KT_FAILF("open"); return; }
        pipe_for(&p, 7);
        caller_key(&k, 7);
        caller_key(&full, 7);
        kcache_vk_key(&full, g_vk.pd);
        KT_CHECK(kcache_vk_pipeline(kc, g_vk.pd, g_vk.dev, &k, vkc_create, &p, &pipe) == VK_SUCCESS);
        vkDestroyPipeline(g_vk.dev, pipe, NULL);
        if (kcache_get(kc, &full, &data, &size) != KCACHE_OK) { KT_FAILF("%s: nothing stored", kinds[i]); kcache_close(kc); continue; }
        bad = (unsigned char *)malloc(size + 64);
        memcpy(bad, data, size);
        kcache_release(kc, data);
        if (!strcmp(kinds[i], "magic")) bad[0] ^= 1;
        else if (!strcmp(kinds[i], "length")) bad[8] ^= 4;
        else if (!strcmp(kinds[i], "short-header")) { size = 32 + 16; bad[8] = 16; }
        else if (!strcmp(kinds[i], "header-version")) bad[32 + 4] = 2;
        else if (!strcmp(kinds[i], "vendor")) bad[32 + 8] ^= 0x10;
        else if (!strcmp(kinds[i], "device")) bad[32 + 12] ^= 0x01;
        else if (!strcmp(kinds[i], "uuid")) bad[32 + 16 + 15] ^= 0x80;
        else if (!strcmp(kinds[i], "header-len")) bad[32] = 0xff; /* longer than lavapipe's blob */
        else if (!strcmp(kinds[i], "header-len-inside")) { /* 40, inside a blob grown by 64 bytes, as NVIDIA's are */
            memset(bad + size, 0, 64);
            size += 64;
            for (j = 0; j < 8; j++) bad[8 + j] = (unsigned char)((size - 32) >> (8 * j)); /* the blob's length, little-endian */
            bad[32] = 40;
        }
        KT_CHECK(kcache_put(kc, &full, bad, size) == KCACHE_OK);
        free(bad);
        p.calls = p.with_cache = 0;
        g_log_len = 0;
        g_log[0] = 0;
        pipe = VK_NULL_HANDLE;
        empty = empty_cache_size();
        KT_CHECK(kcache_vk_pipeline(kc, g_vk.pd, g_vk.dev, &k, vkc_create, &p, &pipe) == VK_SUCCESS);
        /* what an empty cache holds is the driver's: lavapipe's 32-byte header, more on NVIDIA's */
        KT_CHECK_MSG(p.calls == 1 && p.with_cache == 1 && p.last_cache_size <= empty, "%s: create %d calls, cache size %zu (empty: %zu)",
                     kinds[i], p.calls, p.last_cache_size, empty);
        KT_CHECK_MSG(vkc_run_check(&g_vk, pipe, 7), "%s: results", kinds[i]);
        vkDestroyPipeline(g_vk.dev, pipe, NULL);
        kcache_get_stats(kc, &st);
        KT_CHECK_MSG(st.rejects == 1, "%s: %llu rejects", kinds[i], (unsigned long long)st.rejects);
        KT_CHECK_MSG(strstr(g_log, "reject double: pipeline cache") != NULL, "%s: log %s", kinds[i], g_log);
        /* the good blob is back */
        if (kcache_get(kc, &full, &data, &size) == KCACHE_OK) {
            KT_CHECK_MSG(memcmp(data, "kcvkpc01", 8) == 0 && size >= 64, "%s: not replaced", kinds[i]);
            kcache_release(kc, data);
        } else {
            KT_FAILF("%s: nothing stored after the reject", kinds[i]);
        }
        kcache_key_free(&full);
        kcache_key_free(&k);
        kcache_close(kc);
    }
}

typedef struct flight_arg {
    kcache *kc;
    int builds;
    VkResult vr;
    int ok;
} flight_arg;

/* create that takes a while, so that the threads' misses overlap */
static VkResult slow_create(void *user, VkPipelineCache cache, VkPipeline *out) {
    struct timespec ts = { 0, 50 * 1000000L };
    nanosleep(&ts, NULL);
    return vkc_create(user, cache, out);
}

static void *flight_thread(void *v) {
    flight_arg *a = (flight_arg *)v;
    kcache_key k;
    vkc_pipe p;
    VkPipeline pipe = VK_NULL_HANDLE;
    pipe_for(&p, 11);
    caller_key(&k, 11);
    a->vr = kcache_vk_pipeline(a->kc, g_vk.pd, g_vk.dev, &k, slow_create, &p, &pipe);
    a->ok = a->vr == VK_SUCCESS && pipe != VK_NULL_HANDLE;
    if (pipe != VK_NULL_HANDLE) vkDestroyPipeline(g_vk.dev, pipe, NULL);
    kcache_key_free(&k);
    return NULL;
}

/* Four threads missing one pipeline at once: it is built once (one put, one build), each gets one. */
static void threads_create_once(void) {
    kcache *kc;
    pthread_t t[4];
    flight_arg a[4];
    kcache_stats st;
    int i;
    fresh_store();
    kc = open_cache();
    if (!kc) { KT_FAILF("open"); return; }
    for (i = 0; i < 4; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].kc = kc;
        pthread_create(&t[i], NULL, flight_thread, &a[i]);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        KT_CHECK_MSG(a[i].ok, "thread %d: %d", i, (int)a[i].vr);
    }
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.builds, 1);
    KT_CHECK_EQ_U64(st.puts, 1);
    kcache_close(kc);
}

/* create's own failure is the caller's result, nothing is stored; kc NULL runs create without a
   cache; bad arguments are refused without calling create. */
static void create_failure_and_no_cache(void) {
    kcache *kc;
    kcache_key k;
    vkc_pipe p;
    VkPipeline pipe = VK_NULL_HANDLE;
    kcache_stats st;
    fresh_store();
    kc = open_cache();
    if (!kc) { KT_FAILF("open"); return; }
    pipe_for(&p, 13);
    p.fail = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    caller_key(&k, 13);
    KT_CHECK(kcache_vk_pipeline(kc, g_vk.pd, g_vk.dev, &k, vkc_create, &p, &pipe) == VK_ERROR_OUT_OF_DEVICE_MEMORY);
    KT_CHECK(pipe == VK_NULL_HANDLE);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.puts, 0);
    p.fail = VK_SUCCESS;
    p.calls = p.with_cache = 0;
    KT_CHECK(kcache_vk_pipeline(NULL, g_vk.pd, g_vk.dev, &k, vkc_create, &p, &pipe) == VK_SUCCESS);
    KT_CHECK(p.calls == 1 && p.with_cache == 0 && p.last == VK_NULL_HANDLE);
    KT_CHECK(vkc_run_check(&g_vk, pipe, 13));
    vkDestroyPipeline(g_vk.dev, pipe, NULL);
    p.calls = 0;
    KT_CHECK(kcache_vk_pipeline(kc, g_vk.pd, VK_NULL_HANDLE, &k, vkc_create, &p, &pipe) == VK_ERROR_INITIALIZATION_FAILED);
    KT_CHECK(kcache_vk_pipeline(kc, g_vk.pd, g_vk.dev, &k, NULL, &p, &pipe) == VK_ERROR_INITIALIZATION_FAILED);
    KT_CHECK(kcache_vk_pipeline(kc, g_vk.pd, g_vk.dev, &k, vkc_create, &p, NULL) == VK_ERROR_INITIALIZATION_FAILED);
    KT_CHECK_EQ_U64(p.calls, 0);
    kcache_key_free(&k);
    kcache_close(kc);
}

/* The child of cold_then_hit_results_right, in a process of its own: the store under base, made by
   the parent, gives a disk hit whose pipeline computes right. Exit 0 when it does. */
static int disk_hit_child(const char *base) {
    vkc vk2;
    char why[200];
    int ok = 0;
    snprintf(g_base, sizeof g_base, "%s", base);
    if (vkc_open(&vk2, why, sizeof why)) {
        kcache *c2 = open_cache();
        kcache_key k2;
        vkc_pipe p2;
        VkPipeline pp = VK_NULL_HANDLE;
        kcache_stats s2;
        memset(&p2, 0, sizeof p2);
        p2.vk = &vk2;
        p2.add = 3;
        caller_key(&k2, 3);
        if (c2 && kcache_vk_pipeline(c2, vk2.pd, vk2.dev, &k2, vkc_create, &p2, &pp) == VK_SUCCESS) {
            kcache_get_stats(c2, &s2);
            ok = s2.hits_disk == 1 && s2.puts == 0 && p2.with_cache == 1 && vkc_run_check(&vk2, pp, 3);
            if (!ok)
                fprintf(stderr, "disk-hit child: hits_disk %llu puts %llu with_cache %d\n", (unsigned long long)s2.hits_disk,
                        (unsigned long long)s2.puts, p2.with_cache);
            vkDestroyPipeline(vk2.dev, pp, NULL);
        } else {
            fprintf(stderr, "disk-hit child: %s\n", c2 ? "kcache_vk_pipeline failed" : "open failed");
        }
        kcache_key_free(&k2);
        kcache_close(c2);
    } else {
        fprintf(stderr, "disk-hit child: %s\n", why);
    }
#if defined(KT_ASAN)
    __lsan_do_leak_check(); /* while the driver is loaded, as main does */
#endif
    vkc_close(&vk2);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    char why[200];
    if (argc == 3 && !strcmp(argv[1], "--disk-hit-child")) return disk_hit_child(argv[2]);
    if (!vkc_open(&g_vk, why, sizeof why)) {
        printf("skip test_vulkan: %s\n", why);
        vkc_close(&g_vk);
        return 0;
    }
    printf("# device: %s\n", g_vk.name);
    KT_RUN(cold_then_hit_results_right);
    KT_RUN(key_per_device_explain_remove);
    KT_RUN(damaged_and_foreign_blobs_rejected);
    KT_RUN(threads_create_once);
    KT_RUN(create_failure_and_no_cache);
#if defined(KT_ASAN)
    /* now, while the driver is loaded: lavapipe's LLVM leaves allocations that LeakSanitizer, once
       the driver is unloaded, can only call "<unknown module>"; kcache's are all freed by now */
    __lsan_do_leak_check();
#endif
    vkc_close(&g_vk);
    if (g_base[0] && !getenv("KT_KEEP")) nftw(g_base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    KT_EXIT();
}
