/* vk_pipeline.c - a Vulkan compute pipeline at start-up, both of its compile steps cached:
   GLSL to SPIR-V with shaderc (kcache_get_or_build), then the pipeline itself from a kept
   VkPipelineCache blob (kcache_vk_pipeline). Runs the pipeline and checks every result, and prints
   what each step cost; run it twice to see the second start.

       build/vk_pipeline           # uses KCACHE_DIR (default ~/.cache/kcache)
       build/vk_pipeline --fresh   # removes this program's two entries first

   On lavapipe (a CPU driver: mesa-vulkan-drivers) the pipeline step is cheap either way, as
   lavapipe compiles lazily; on a GPU driver it is the step that costs (DESIGN: 82-526 ms cold on
   an H100, under 1.5 ms from the blob). */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kcache_vk.h"
#include "examples/vk_compute.h"

#include <shaderc/shaderc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char glsl[] =
    "#version 450\n"
    "// Doubles every element and adds a specialization constant: small, but a real pipeline.\n"
    "layout(local_size_x = 64) in;\n"
    "layout(constant_id = 0) const uint ADD = 1;\n"
    "layout(std430, binding = 0) buffer Data { uint v[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    v[i] = v[i] * 2u + ADD;\n"
    "}\n";

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* kcache_build_fn: the GLSL compiled to SPIR-V by shaderc, optimised. */
static int compile_glsl(void *user, void **out, size_t *size) {
    shaderc_compiler_t c = shaderc_compiler_initialize();
    shaderc_compile_options_t o = shaderc_compile_options_initialize();
    shaderc_compilation_result_t r;
    int rc = 1;
    (void)user;
    if (!c || !o) return 1;
    shaderc_compile_options_set_optimization_level(o, shaderc_optimization_level_performance);
    r = shaderc_compile_into_spv(c, glsl, sizeof glsl - 1, shaderc_compute_shader, "vk_double.comp", "main", o);
    if (shaderc_result_get_compilation_status(r) != shaderc_compilation_status_success) {
        fprintf(stderr, "vk_pipeline: shaderc: %s\n", shaderc_result_get_error_message(r));
    } else if ((*out = KCACHE_MALLOC(shaderc_result_get_length(r))) != NULL) {
        *size = shaderc_result_get_length(r);
        memcpy(*out, shaderc_result_get_bytes(r), *size);
        rc = 0;
    }
    shaderc_result_release(r);
    shaderc_compile_options_release(o);
    shaderc_compiler_release(c);
    return rc;
}

/* The pipeline's create function: vkc_create with the SPIR-V that the first step gave. */
typedef struct app_pipe {
    vkc_pipe base;
    const void *spirv;
    size_t spirv_size;
} app_pipe;

static VkResult create_pipeline(void *user, VkPipelineCache cache, VkPipeline *out) {
    app_pipe *a = (app_pipe *)user;
    VkShaderModuleCreateInfo ci;
    VkShaderModule m, keep = a->base.vk->module;
    VkResult r;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    ci.codeSize = a->spirv_size;
    ci.pCode = (const uint32_t *)a->spirv;
    if ((r = vkCreateShaderModule(a->base.vk->dev, &ci, NULL, &m)) != VK_SUCCESS) return r;
    a->base.vk->module = m;
    r = vkc_create(&a->base, cache, out);
    a->base.vk->module = keep;
    vkDestroyShaderModule(a->base.vk->dev, m, NULL);
    return r;
}

int main(int argc, char **argv) {
    kcache *kc = NULL;
    kcache_key sk, pk;
    vkc vk;
    app_pipe ap;
    const void *spirv = NULL;
    size_t spirv_size = 0;
    VkPipeline pipe = VK_NULL_HANDLE;
    kcache_stats before, after;
    char why[256];
    int fresh = 0, i, ok;
    double t0, t_spirv, t_pipe;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fresh")) fresh = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: vk_pipeline [--fresh]\n"
                   "  Compiles a GLSL compute shader to SPIR-V (shaderc) and makes its Vulkan pipeline, both\n"
                   "  through kcache, runs it and checks the results. --fresh removes both entries first.\n");
            return 0;
        } else {
            fprintf(stderr, "vk_pipeline: unknown option %s (try --help)\n", argv[i]);
            return 2;
        }
    }
    if (!vkc_open(&vk, why, sizeof why)) {
        fprintf(stderr, "vk_pipeline: %s\n", why);
        vkc_close(&vk);
        return 1;
    }
    kcache_open(&kc, NULL); /* defaults, then the environment; a store it cannot use: memory only */

    /* step 1: GLSL to SPIR-V, keyed by the source, the options and the shaderc library itself */
    kcache_key_init(&sk, "vk_double.spirv");
    kcache_key_str(&sk, "glsl", glsl);
    kcache_key_str(&sk, "options", "-O");
    {   /* the library's stamp: an upgrade of shaderc is a miss (a function's address as data: memcpy) */
        shaderc_compilation_result_t (*fn)(const shaderc_compiler_t, const char *, size_t, shaderc_shader_kind, const char *,
                                           const char *, const shaderc_compile_options_t) = shaderc_compile_into_spv;
        const void *addr = NULL;
        memcpy(&addr, &fn, sizeof addr < sizeof fn ? sizeof addr : sizeof fn);
        kcache_key_library(&sk, "shaderc", addr);
    }
    /* step 2: the pipeline, keyed by its SPIR-V and specialization (kcache adds the device) */
    if (fresh) kcache_remove(kc, &sk);
    kcache_get_stats(kc, &before);
    t0 = now_ms();
    if (kcache_get_or_build(kc, &sk, compile_glsl, NULL, &spirv, &spirv_size) != KCACHE_OK) {
        fprintf(stderr, "vk_pipeline: GLSL to SPIR-V failed\n");
        return 1;
    }
    t_spirv = now_ms() - t0;
    kcache_get_stats(kc, &after);
    printf("GLSL to SPIR-V: %8.3f ms (%s, %zu bytes)\n", t_spirv, after.builds > before.builds ? "compiled by shaderc" : "from the cache", spirv_size);

    kcache_key_init(&pk, "vk_double");
    kcache_key_bytes(&pk, "spirv", spirv, spirv_size);
    kcache_key_str(&pk, "entry", "main");
    kcache_key_u64(&pk, "spec.add", 3);
    if (fresh) {
        kcache_key full;
        kcache_key_init(&full, "vk_double");
        kcache_key_bytes(&full, "spirv", spirv, spirv_size);
        kcache_key_str(&full, "entry", "main");
        kcache_key_u64(&full, "spec.add", 3);
        kcache_vk_key(&full, vk.pd);
        kcache_remove(kc, &full);
        kcache_key_free(&full);
    }
    memset(&ap, 0, sizeof ap);
    ap.base.vk = &vk;
    ap.base.add = 3;
    ap.spirv = spirv;
    ap.spirv_size = spirv_size;
    kcache_get_stats(kc, &before);
    t0 = now_ms();
    if (kcache_vk_pipeline(kc, vk.pd, vk.dev, &pk, create_pipeline, &ap, &pipe) != VK_SUCCESS) {
        fprintf(stderr, "vk_pipeline: the pipeline could not be made\n");
        return 1;
    }
    t_pipe = now_ms() - t0;
    kcache_get_stats(kc, &after);
    printf("pipeline:       %8.3f ms (%s, on %s)\n", t_pipe,
           after.hits_mem + after.hits_disk > before.hits_mem + before.hits_disk ? "from the cache" : "made cold, blob stored", vk.name);
    ok = vkc_run_check(&vk, pipe, 3);
    printf("results:        %s (%d elements, v[i] = 2i + 3)\n", ok ? "all right" : "WRONG", VKC_N);
    vkDestroyPipeline(vk.dev, pipe, NULL);
    kcache_release(kc, spirv);
    kcache_key_free(&pk);
    kcache_key_free(&sk);
    kcache_close(kc);
    vkc_close(&vk);
    return ok ? 0 : 1;
}
