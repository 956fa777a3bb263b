/* kcache_vk.h - Vulkan pipelines through kcache: a kept pipeline cache per pipeline, checked per
   device before the driver sees it.                            (MIT license at the end)

   A companion of kcache.h (the core): kcache_vk_pipeline makes one pipeline through the cache,
   kcache_vk_key adds a device's identity to a key. README.md ("Vulkan pipelines") is the manual.

   BUILD
       Put this file beside kcache.h. In the ONE file that compiles kcache's implementation:
           #define KCACHE_IMPLEMENTATION
           #include "kcache.h"
           #include "kcache_vk.h"
       and include both without the define wherever kcache_vk_pipeline is called. Link -lvulkan
       (the loader; <vulkan/vulkan.h> from Debian's libvulkan-dev) besides what kcache.h needs.
       The 0.4 way still builds the same: define KCACHE_VULKAN and include "kcache.h" alone;
       kcache.h then includes this file from its own directory (and stops with an #error naming
       kcache_vk.h when it is not there). This file defines KCACHE_VULKAN itself, so code that
       tests the switch sees it whichever way it was included. The order does not matter: the
       Vulkan part needs no hook in the core, only the core's implementation before its own
       (this file includes kcache.h first).

   WHAT IT USES OF THE CORE
       The public API alone: keys (kcache_key_copy to add the device's identity to a copy of the
       caller's key, kcache_key_fail), kcache_get_or_build, kcache_put, kcache_remove,
       kcache_release, and the services for companions (kcache.h's >>kit): kcache_enabled,
       kcache_companion_state (the devices identified, kept per kcache and freed at
       kcache_close), kcache_count_reject (a refused blob, counted and logged as kcache's own
       rejects) and kcache_monotonic_ns. Its private names start with kcache_vk__ / KCACHE_VK__.
       Windows: compiles (with mingw-w64; no driver-library stamp there).
*/
#ifndef KCACHE_VK_H
#define KCACHE_VK_H
#ifndef KCACHE_VULKAN
#define KCACHE_VULKAN /* for code that tests the switch; kcache.h then includes nothing more */
#endif
#include "kcache.h"
#include <vulkan/vulkan.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Makes the pipeline: create(user, cache, &pipeline) with the VkPipelineCache it is given (create
   passes it to vkCreateComputePipelines / vkCreateGraphicsPipelines and returns their result). */
typedef VkResult (*kcache_vk_create_fn)(void *user, VkPipelineCache cache, VkPipeline *out);

/* Adds the identity of pd's driver to a key (initialised by the caller with what it knows: SPIR-V,
   entry points, layout, specialization): fields "vk.vendor_id", "vk.device_id", "vk.driver_version",
   "vk.device_name", "vk.pipeline_cache_uuid", "vk.layer"; "vk.driver_id" and "vk.driver_info" where
   the device reports Vulkan 1.2 and the loader 1.1 (create the instance with apiVersion 1.1 or later:
   kcache calls vkGetPhysicalDeviceProperties2); "vk.driver.library", the stamp of the driver library
   the process loaded, where it can be found (Linux, a known driver). kcache_vk_pipeline adds the same
   fields, so kcache_explain and kcache_remove on such a key speak of its entry. */
KCACHE_API kcache_status kcache_vk_key(kcache_key *k, VkPhysicalDevice pd);

/* Creates one pipeline through the cache. k: what the caller knows (kcache adds the device's
   identity, as kcache_vk_key does, to a copy). On a hit the stored blob's header is checked against
   pd (header length and version, vendor, device, pipelineCacheUUID) before a VkPipelineCache is made
   from it; create then makes the pipeline with that cache. On a miss create runs with an empty cache
   and the blob the driver leaves in it is stored: one pipeline per entry, so processes share, evict
   and explain pipelines one by one; concurrent misses of one pipeline create it once (single
   flight). A blob that fails the check never reaches the driver: it is removed, counted as a reject,
   and the pipeline is made cold; so is one the driver refuses, or with which create fails. The
   VkPipelineCache is made and destroyed inside the call. kc NULL (or caching off): create runs with
   VK_NULL_HANDLE. Returns create's result (VK_SUCCESS with *out set), or a Vulkan error of kcache's
   own (VK_ERROR_INITIALIZATION_FAILED for bad arguments, VK_ERROR_OUT_OF_HOST_MEMORY). A caching
   failure is never the caller's: the pipeline is still made. Thread-safe. */
KCACHE_API VkResult kcache_vk_pipeline(kcache *kc, VkPhysicalDevice pd, VkDevice dev, const kcache_key *k,
                                       kcache_vk_create_fn create, void *user, VkPipeline *out);

#ifdef __cplusplus
}
#endif
#define KCACHE_VK__DECLARED /* (kcache.h's own include of this file, inside the one above, compiles nothing) */
#endif /* KCACHE_VK_H */

/* ============================================================================================== */
/*                                        IMPLEMENTATION                                          */
/* ============================================================================================== */
/* After the core's implementation (same file: KCACHE_IMPLEMENTED, which the core leaves undefined
   where it could not be compiled, its one #error saying why) and this file's declarations. */
#if defined(KCACHE_IMPLEMENTATION) && defined(KCACHE_VK__DECLARED) && defined(KCACHE_IMPLEMENTED) && \
    !defined(KCACHE_VK__IMPLEMENTED)
#define KCACHE_VK__IMPLEMENTED

#define KCACHE_VK__MAGIC "kcvkpc01" /* payload: magic, blob size, create ns, reserved, the driver's blob */
#define KCACHE_VK__HDR 32
#define KCACHE_VK__LAYER 1          /* the "vk.layer" key field: bump when the key or payload changes */
#define KCACHE_VK__BLOB_HDR 32      /* VkPipelineCacheHeaderVersionOne: length, version, vendor, device, UUID */
#define KCACHE_VK__PATH_MAX 4096

/* Little-endian, whatever the host: the payload's header and the driver's blob header. */
static uint32_t kcache_vk__get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t kcache_vk__get_u64(const unsigned char *p) { return kcache_vk__get_u32(p) | (uint64_t)kcache_vk__get_u32(p + 4) << 32; }
static void kcache_vk__put_u64(unsigned char *p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The key fields of one device. */
typedef struct kcache_vk__ident {
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceDriverProperties drv;
    int have_drv;
} kcache_vk__ident;

/* The driver's identity beyond vkGetPhysicalDeviceProperties (which the caller filled in). */
static void kcache_vk__identify_driver(VkPhysicalDevice pd, kcache_vk__ident *id) {
    uint32_t loader = VK_API_VERSION_1_0;
    memset(&id->drv, 0, sizeof id->drv);
    id->have_drv = 0;
    /* vkGetPhysicalDeviceProperties2 is Vulkan 1.1's (vkEnumerateInstanceVersion, which says the
       loader has it, rescans the loader's manifests: a fraction of a millisecond, hence kept per
       device); the driver properties are 1.2's */
    if (id->props.apiVersion >= VK_API_VERSION_1_2 && vkEnumerateInstanceVersion(&loader) == VK_SUCCESS && loader >= VK_API_VERSION_1_1) {
        VkPhysicalDeviceProperties2 p2;
        memset(&p2, 0, sizeof p2);
        p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
        id->drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
        p2.pNext = &id->drv;
        vkGetPhysicalDeviceProperties2(pd, &p2);
        id->drv.pNext = NULL;
        id->have_drv = id->drv.driverID != 0;
    }
}

/* The file name (a part of it) of the library each driver ships as, by VkDriverId. */
static const char *kcache_vk__driver_lib(uint32_t driver_id) {
    switch (driver_id) {
    case 1: case 2: return "amdvlk";                 /* AMD's own drivers */
    case 3: return "libvulkan_radeon.";              /* RADV */
    case 4: return "libGLX_nvidia.";                 /* NVIDIA's */
    case 6: return "libvulkan_intel";                /* ANV (and hasvk) */
    case 10: return "libvk_swiftshader.";
    case 13: return "libvulkan_lvp.";                /* lavapipe */
    case 14: return "libMoltenVK.";
    case 17: return "libvulkan_freedreno.";          /* turnip */
    case 18: return "libvulkan_broadcom.";           /* v3dv */
    case 19: return "libvulkan_panfrost.";           /* panvk */
    case 21: return "libvulkan_virtio.";             /* venus */
    case 23: return "libvulkan_nouveau.";            /* NVK */
    default: return NULL;
    }
}

/* The loaded driver library of a device: the loaded object whose file name starts with the driver's
   library name (the loader loads every installed driver; they have distinct names), the lowest such
   path so that the choice does not depend on load order. dl_iterate_phdr walks the loader's own list
   (microseconds; /proc/self/maps costs a game with LLVM loaded half a millisecond), where it is
   visible: glibc declares it only for _GNU_SOURCE, which a system header included before kcache.h
   under -std=gnu11 leaves out; /proc/self/maps then (issue 37). 0, or ENOENT. */
#if (defined(__linux__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__)) && \
    (!defined(__GLIBC__) || defined(__USE_GNU))
#include <link.h>
#define KCACHE_VK__PHDR 1
#elif defined(__linux__)
#define KCACHE_VK__MAPS 1
#endif
#if defined(KCACHE_VK__PHDR) || defined(KCACHE_VK__MAPS)
#include <fcntl.h>
#include <unistd.h>
#endif
typedef struct kcache_vk__find {
    const char *want;
    char *out;
    size_t cap;
    int found;
} kcache_vk__find;

/* One loaded object's path: kept when its file name is the driver's and it sorts lowest. */
#if defined(KCACHE_VK__PHDR) || defined(KCACHE_VK__MAPS)
static void kcache_vk__find_path(kcache_vk__find *f, const char *p) {
    const char *base;
    if (!p || p[0] != '/') return;
    base = strrchr(p, '/') + 1;
    if (strncmp(base, f->want, strlen(f->want)) != 0 || strlen(p) >= f->cap) return;
    if (!f->found || strcmp(p, f->out) < 0) strcpy(f->out, p);
    f->found = 1;
}

#endif

#if defined(KCACHE_VK__PHDR)
static int kcache_vk__find_one(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    kcache_vk__find_path((kcache_vk__find *)arg, info->dlpi_name);
    return 0;
}
#elif defined(KCACHE_VK__MAPS)
/* Each mapping's path, the sixth field of its line (a line too long for the buffer is skipped). */
static void kcache_vk__find_maps(kcache_vk__find *f) {
    char line[1200];
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    FILE *m = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!m) {
        if (fd >= 0) close(fd);
        return;
    }
    while (fgets(line, sizeof line, m)) {
        char *p = strchr(line, '/'), *nl = strchr(line, '\n');
        if (!nl) { /* the rest of an overlong line */
            int c;
            while ((c = fgetc(m)) != EOF && c != '\n') {
            }
            continue;
        }
        *nl = 0;
        kcache_vk__find_path(f, p);
    }
    fclose(m);
}
#endif

static int kcache_vk__driver_path(const kcache_vk__ident *id, char *out, size_t cap) {
    kcache_vk__find f;
    f.want = id->have_drv ? kcache_vk__driver_lib((uint32_t)id->drv.driverID) : NULL;
    f.out = out;
    f.cap = cap;
    f.found = 0;
    if (!f.want) return ENOENT;
#if defined(KCACHE_VK__PHDR)
    dl_iterate_phdr(kcache_vk__find_one, &f);
#elif defined(KCACHE_VK__MAPS)
    kcache_vk__find_maps(&f);
#endif
    return f.found ? 0 : ENOENT;
}

/* Whether the driver library at path can be opened to be read (without blocking: it is a path
   the loader mapped, but a FIFO put there must not hang the caller). */
static int kcache_vk__readable(const char *path) {
#if defined(KCACHE_VK__PHDR) || defined(KCACHE_VK__MAPS)
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return 0;
    close(fd);
    return 1;
#else
    (void)path; /* (no driver path is found here) */
    return 0;
#endif
}

static kcache_status kcache_vk__key_ident(kcache_key *k, const kcache_vk__ident *id, const char *driver_path) {
    kcache_status s = kcache_key_u64(k, "vk.layer", KCACHE_VK__LAYER);
    if (s == KCACHE_OK) s = kcache_key_u64(k, "vk.vendor_id", id->props.vendorID);
    if (s == KCACHE_OK) s = kcache_key_u64(k, "vk.device_id", id->props.deviceID);
    if (s == KCACHE_OK) s = kcache_key_u64(k, "vk.driver_version", id->props.driverVersion);
    if (s == KCACHE_OK) s = kcache_key_str(k, "vk.device_name", id->props.deviceName);
    if (s == KCACHE_OK) s = kcache_key_bytes(k, "vk.pipeline_cache_uuid", id->props.pipelineCacheUUID, VK_UUID_SIZE);
    if (s == KCACHE_OK && id->have_drv) {
        char info[2 * VK_MAX_DRIVER_NAME_SIZE + 2];
        snprintf(info, sizeof info, "%.*s %.*s", (int)VK_MAX_DRIVER_NAME_SIZE, id->drv.driverName,
                 (int)VK_MAX_DRIVER_INFO_SIZE, id->drv.driverInfo);
        s = kcache_key_u64(k, "vk.driver_id", (uint64_t)id->drv.driverID);
        if (s == KCACHE_OK) s = kcache_key_str(k, "vk.driver_info", info);
    }
    /* a driver upgrade that kept its version numbers is a miss too; an unreadable library keys by path */
    if (s == KCACHE_OK && driver_path) {
        int readable = kcache_vk__readable(driver_path);
        s = readable ? kcache_key_file(k, "vk.driver.library", driver_path) : kcache_key_str(k, "vk.driver.library", driver_path);
    }
    return s;
}

KCACHE_API kcache_status kcache_vk_key(kcache_key *k, VkPhysicalDevice pd) {
    kcache_vk__ident id;
    char *path;
    kcache_status s;
    if (!k) return KCACHE_EINVAL;
    if (pd == VK_NULL_HANDLE) return kcache_key_fail(k, KCACHE_EINVAL);
    vkGetPhysicalDeviceProperties(pd, &id.props);
    kcache_vk__identify_driver(pd, &id);
    if ((path = (char *)KCACHE_MALLOC(KCACHE_VK__PATH_MAX)) == NULL) return kcache_key_fail(k, KCACHE_ENOMEM);
    s = kcache_vk__key_ident(k, &id, kcache_vk__driver_path(&id, path, KCACHE_VK__PATH_MAX) == 0 ? path : NULL);
    KCACHE_FREE(path);
    return s;
}

/* What the driver needs of a stored payload: the blob's header is VkPipelineCacheHeaderVersionOne,
   little-endian whatever the host, for this very device and driver build. 1 when it is, else 0 and
   why. */
static int kcache_vk__blob_ok(const kcache_vk__ident *id, const void *data, size_t size, char *why, size_t cap) {
    const unsigned char *p = (const unsigned char *)data, *b;
    uint64_t n;
    uint32_t hlen, hver;
    if (!p || size < KCACHE_VK__HDR || memcmp(p, KCACHE_VK__MAGIC, 8) != 0) {
        snprintf(why, cap, "not a pipeline cache stored by kcache_vk_pipeline");
        return 0;
    }
    n = kcache_vk__get_u64(p + 8);
    if (n != size - KCACHE_VK__HDR) { snprintf(why, cap, "the blob's length disagrees with the entry's"); return 0; }
    if (n < KCACHE_VK__BLOB_HDR) { snprintf(why, cap, "a %llu-byte blob has no pipeline cache header", (unsigned long long)n); return 0; }
    b = p + KCACHE_VK__HDR;
    hlen = kcache_vk__get_u32(b);
    hver = kcache_vk__get_u32(b + 4);
    /* version one's header is exactly 32 bytes (the spec's valid usage for headerSize); a longer one
       inside a large blob (NVIDIA's are kilobytes) would still reach the driver */
    if (hlen != KCACHE_VK__BLOB_HDR) { snprintf(why, cap, "header length %u in a %llu-byte blob", hlen, (unsigned long long)n); return 0; }
    if (hver != (uint32_t)VK_PIPELINE_CACHE_HEADER_VERSION_ONE) { snprintf(why, cap, "header version %u", hver); return 0; }
    if (kcache_vk__get_u32(b + 8) != id->props.vendorID || kcache_vk__get_u32(b + 12) != id->props.deviceID) {
        snprintf(why, cap, "made for vendor 0x%x device 0x%x, not this device (0x%x 0x%x)", kcache_vk__get_u32(b + 8),
                    kcache_vk__get_u32(b + 12), id->props.vendorID, id->props.deviceID);
        return 0;
    }
    if (memcmp(b + 16, id->props.pipelineCacheUUID, VK_UUID_SIZE) != 0) {
        snprintf(why, cap, "made by another driver build (pipelineCacheUUID differs)");
        return 0;
    }
    return 1;
}

typedef struct kcache_vk__job {
    VkDevice dev;
    kcache_vk_create_fn create;
    void *user;
    VkPipeline pipeline;
    VkResult vr;
    int ran;
} kcache_vk__job;

/* The build of a miss: the pipeline made cold with an empty cache, and the blob that cache then holds
   as the payload. A pipeline made is the job's even when no blob comes of it. */
static int kcache_vk__build(void *user, void **out, size_t *out_size) {
    kcache_vk__job *j = (kcache_vk__job *)user;
    VkPipelineCacheCreateInfo ci;
    VkPipelineCache cache = VK_NULL_HANDLE;
    unsigned char *buf = NULL;
    size_t n = 0;
    int64_t t0;
    VkResult r;
    j->ran = 1;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    if (vkCreatePipelineCache(j->dev, &ci, NULL, &cache) != VK_SUCCESS) cache = VK_NULL_HANDLE;
    t0 = kcache_monotonic_ns();
    j->vr = j->create(j->user, cache, &j->pipeline);
    if (j->vr != VK_SUCCESS || cache == VK_NULL_HANDLE) {
        if (cache != VK_NULL_HANDLE) vkDestroyPipelineCache(j->dev, cache, NULL);
        return 1;
    }
    t0 = kcache_monotonic_ns() - t0;
    r = vkGetPipelineCacheData(j->dev, cache, &n, NULL);
    if (r == VK_SUCCESS && (buf = (unsigned char *)KCACHE_MALLOC(KCACHE_VK__HDR + n + 1)) != NULL)
        r = vkGetPipelineCacheData(j->dev, cache, &n, buf + KCACHE_VK__HDR);
    vkDestroyPipelineCache(j->dev, cache, NULL);
    if (!buf || r != VK_SUCCESS) {
        KCACHE_FREE(buf);
        return 1;
    }
    memcpy(buf, KCACHE_VK__MAGIC, 8);
    kcache_vk__put_u64(buf + 8, (uint64_t)n);
    kcache_vk__put_u64(buf + 16, (uint64_t)t0);
    kcache_vk__put_u64(buf + 24, 0);
    *out = buf;
    *out_size = KCACHE_VK__HDR + n;
    return 0;
}

/* The devices kcache_vk_pipeline has identified, so that a hit costs vkGetPhysicalDeviceProperties
   and no more: a device is known again by its handle and the identity those properties give (a
   handle of a destroyed instance may come back as another device's). */
#define KCACHE_VK__DEVICES 8
#define KCACHE_VK__KNOWN_PATH 1024
typedef struct kcache_vk__known {
    VkPhysicalDevice pd;
    kcache_vk__ident id;
    int have_path;
    char path[KCACHE_VK__KNOWN_PATH];
} kcache_vk__known;
typedef struct kcache_vk__state {
    kcache_vk__known dev[KCACHE_VK__DEVICES];
    unsigned n, next; /* known devices; the one replaced next when all slots are taken */
} kcache_vk__state;

static int kcache_vk__same(const VkPhysicalDeviceProperties *a, const VkPhysicalDeviceProperties *b) {
    return a->vendorID == b->vendorID && a->deviceID == b->deviceID && a->driverVersion == b->driverVersion &&
           a->apiVersion == b->apiVersion && memcmp(a->pipelineCacheUUID, b->pipelineCacheUUID, VK_UUID_SIZE) == 0 &&
           strcmp(a->deviceName, b->deviceName) == 0;
}

/* A device looked up in, or added to, the kcache's state (kcache_companion_state: under its lock). */
#define KCACHE_VK__STATE "kcache_vk"
typedef struct kcache_vk__visit {
    VkPhysicalDevice pd;
    kcache_vk__ident *id; /* props in; the rest out when known (or in, to add) */
    char *path;           /* sizeof(kcache_vk__known.path) bytes, or NULL */
    int have_path, known;
} kcache_vk__visit;

static void kcache_vk__find_known(void *state, void *arg) {
    kcache_vk__state *st = (kcache_vk__state *)state;
    kcache_vk__visit *v = (kcache_vk__visit *)arg;
    unsigned i;
    for (i = 0; i < st->n; i++)
        if (st->dev[i].pd == v->pd && kcache_vk__same(&st->dev[i].id.props, &v->id->props)) {
            v->id->drv = st->dev[i].id.drv;
            v->id->have_drv = st->dev[i].id.have_drv;
            v->have_path = st->dev[i].have_path && v->path;
            if (v->have_path) strcpy(v->path, st->dev[i].path);
            v->known = 1;
            return;
        }
}

static void kcache_vk__add_known(void *state, void *arg) {
    kcache_vk__state *st = (kcache_vk__state *)state;
    const kcache_vk__visit *v = (const kcache_vk__visit *)arg;
    unsigned i;
    for (i = 0; i < st->n && st->dev[i].pd != v->pd; i++) {
    }
    if (i == st->n && st->n < KCACHE_VK__DEVICES) st->n++;
    else if (i == st->n) i = st->next++ % KCACHE_VK__DEVICES;
    st->dev[i].pd = v->pd;
    st->dev[i].id = *v->id;
    st->dev[i].have_path = v->have_path;
    if (v->have_path) strcpy(st->dev[i].path, v->path);
}

/* k's copy with pd's identity added (full), and that identity (id). */
static kcache_status kcache_vk__key_for(kcache *kc, VkPhysicalDevice pd, const kcache_key *k, kcache_key *full, kcache_vk__ident *id) {
    kcache_vk__visit v;
    kcache_status s;
    v.pd = pd;
    v.id = id;
    v.path = (char *)KCACHE_MALLOC(KCACHE_VK__KNOWN_PATH);
    v.have_path = v.known = 0;
    vkGetPhysicalDeviceProperties(pd, &id->props);
    (void)kcache_companion_state(kc, KCACHE_VK__STATE, sizeof(kcache_vk__state), NULL, kcache_vk__find_known, &v);
    if (!v.known) { /* (two threads meeting a new device at once both identify it: harmless) */
        kcache_vk__identify_driver(pd, id);
        v.have_path = v.path && kcache_vk__driver_path(id, v.path, KCACHE_VK__KNOWN_PATH) == 0;
        (void)kcache_companion_state(kc, KCACHE_VK__STATE, sizeof(kcache_vk__state), NULL, kcache_vk__add_known, &v);
    }
    s = kcache_key_copy(full, k);
    if (s == KCACHE_OK) s = kcache_vk__key_ident(full, id, v.have_path ? v.path : NULL);
    KCACHE_FREE(v.path);
    return s;
}

/* The pipeline made cold, its blob stored when the key can hold it. */
static VkResult kcache_vk__cold(kcache *kc, const kcache_key *full, kcache_vk__job *j) {
    void *blob = NULL;
    size_t n = 0;
    j->ran = 0;
    if (kcache_vk__build(j, &blob, &n) == 0) {
        if (kc && full) (void)kcache_put(kc, full, blob, n);
        KCACHE_FREE(blob);
    }
    return j->vr;
}

KCACHE_API VkResult kcache_vk_pipeline(kcache *kc, VkPhysicalDevice pd, VkDevice dev, const kcache_key *k,
                                       kcache_vk_create_fn create, void *user, VkPipeline *out) {
    kcache_vk__job j;
    kcache_vk__ident id;
    kcache_key *full;
    const void *data = NULL;
    size_t size = 0;
    kcache_status s;
    VkResult vr;
    char why[160], said[200];
    int enabled = kcache_enabled(kc); /* (first: a debug build checks kc for misuse here) */
    if (!create || !out || dev == VK_NULL_HANDLE || pd == VK_NULL_HANDLE) return VK_ERROR_INITIALIZATION_FAILED;
    *out = VK_NULL_HANDLE;
    if (!enabled || !k) return create(user, VK_NULL_HANDLE, out);
    memset(&j, 0, sizeof j);
    j.dev = dev;
    j.create = create;
    j.user = user;
    if ((full = (kcache_key *)KCACHE_MALLOC(sizeof *full)) == NULL) return create(user, VK_NULL_HANDLE, out);
    if (kcache_vk__key_for(kc, pd, k, full, &id) != KCACHE_OK) {
        vr = kcache_vk__cold(NULL, NULL, &j); /* a key that cannot be made never matches: no cache */
        goto done;
    }
    s = kcache_get_or_build(kc, full, kcache_vk__build, &j, &data, &size);
    if (j.ran) { /* this call made the pipeline (stored or not) */
        if (s == KCACHE_OK) kcache_release(kc, data);
        vr = j.vr;
        goto done;
    }
    if (s != KCACHE_OK) { /* the cache failed without building: make it here */
        vr = kcache_vk__cold(kc, full, &j);
        goto done;
    }
    if (!kcache_vk__blob_ok(&id, data, size, why, sizeof why)) {
        kcache_release(kc, data);
    } else {
        VkPipelineCacheCreateInfo ci;
        VkPipelineCache cache = VK_NULL_HANDLE;
        memset(&ci, 0, sizeof ci);
        ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
        ci.initialDataSize = size - KCACHE_VK__HDR;
        ci.pInitialData = (const unsigned char *)data + KCACHE_VK__HDR;
        vr = vkCreatePipelineCache(dev, &ci, NULL, &cache);
        kcache_release(kc, data); /* the driver copies what it keeps of the initial data */
        if (vr != VK_SUCCESS) {
            snprintf(why, sizeof why, "the driver refused it (vkCreatePipelineCache: %d)", (int)vr);
        } else {
            vr = create(user, cache, out);
            vkDestroyPipelineCache(dev, cache, NULL);
            if (vr == VK_SUCCESS) goto done;
            snprintf(why, sizeof why, "the pipeline could not be made with it (%d)", (int)vr);
            *out = VK_NULL_HANDLE;
        }
    }
    kcache_remove(kc, full);
    snprintf(said, sizeof said, "pipeline cache %s; removed, made cold", why);
    kcache_count_reject(kc, full, said);
    vr = kcache_vk__cold(kc, full, &j);
done:
    if (vr == VK_SUCCESS && !*out) *out = j.pipeline;
    kcache_key_free(full);
    KCACHE_FREE(full);
    return vr;
}

#endif /* KCACHE_VK__IMPLEMENTED */

/*
MIT License

Copyright (c) 2026 the kcache authors

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT
NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES
OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*/
