/* vkc.h - a Vulkan compute set-up for the tests and the bench: the first device (lavapipe here),
   a storage buffer, and a pipeline of tests/vkc.h's shader (v[i] = v[i] * 2 + ADD, ADD a
   specialization constant), made through a kcache_vk_create_fn and run to check its results. */
#ifndef VKC_H
#define VKC_H
#include <vulkan/vulkan.h>
#include <stdint.h>
#include <string.h>

/* examples/vk_double.comp compiled with `glslc -O -mfmt=num` (the example compiles it at run
   time with shaderc; the test and the bench take these words) */
static const uint32_t vkc_spirv[] = {
0x07230203,0x00010000,0x000d000b,0x00000023,
0x00000000,0x00020011,0x00000001,0x0006000b,
0x00000001,0x4c534c47,0x6474732e,0x3035342e,
0x00000000,0x0003000e,0x00000000,0x00000001,
0x0006000f,0x00000005,0x00000004,0x6e69616d,
0x00000000,0x0000000b,0x00060010,0x00000004,
0x00000011,0x00000040,0x00000001,0x00000001,
0x00040047,0x0000000b,0x0000000b,0x0000001c,
0x00040047,0x00000010,0x00000006,0x00000004,
0x00050048,0x00000011,0x00000000,0x00000023,
0x00000000,0x00030047,0x00000011,0x00000003,
0x00040047,0x00000013,0x00000022,0x00000000,
0x00040047,0x00000013,0x00000021,0x00000000,
0x00040047,0x0000001d,0x00000001,0x00000000,
0x00040047,0x00000022,0x0000000b,0x00000019,
0x00020013,0x00000002,0x00030021,0x00000003,
0x00000002,0x00040015,0x00000006,0x00000020,
0x00000000,0x00040017,0x00000009,0x00000006,
0x00000003,0x00040020,0x0000000a,0x00000001,
0x00000009,0x0004003b,0x0000000a,0x0000000b,
0x00000001,0x0004002b,0x00000006,0x0000000c,
0x00000000,0x00040020,0x0000000d,0x00000001,
0x00000006,0x0003001d,0x00000010,0x00000006,
0x0003001e,0x00000011,0x00000010,0x00040020,
0x00000012,0x00000002,0x00000011,0x0004003b,
0x00000012,0x00000013,0x00000002,0x00040015,
0x00000014,0x00000020,0x00000001,0x0004002b,
0x00000014,0x00000015,0x00000000,0x00040020,
0x00000018,0x00000002,0x00000006,0x0004002b,
0x00000006,0x0000001b,0x00000002,0x00040032,
0x00000006,0x0000001d,0x00000001,0x0004002b,
0x00000006,0x00000020,0x00000040,0x0004002b,
0x00000006,0x00000021,0x00000001,0x0006002c,
0x00000009,0x00000022,0x00000020,0x00000021,
0x00000021,0x00050036,0x00000002,0x00000004,
0x00000000,0x00000003,0x000200f8,0x00000005,
0x00050041,0x0000000d,0x0000000e,0x0000000b,
0x0000000c,0x0004003d,0x00000006,0x0000000f,
0x0000000e,0x00060041,0x00000018,0x00000019,
0x00000013,0x00000015,0x0000000f,0x0004003d,
0x00000006,0x0000001a,0x00000019,0x00050084,
0x00000006,0x0000001c,0x0000001a,0x0000001b,
0x00050080,0x00000006,0x0000001e,0x0000001c,
0x0000001d,0x0003003e,0x00000019,0x0000001e,
0x000100fd,0x00010038
};

#define VKC_N 256 /* elements: 4 workgroups of 64 */

typedef struct vkc {
    VkInstance inst;
    VkPhysicalDevice pd;
    VkDevice dev;
    VkQueue queue;
    uint32_t qfam;
    VkBuffer buf;
    VkDeviceMemory mem;
    VkShaderModule module;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkDescriptorPool pool;
    VkDescriptorSet set;
    VkCommandPool cpool;
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
} vkc;

/* What a create call makes: the shader with ADD = add. */
typedef struct vkc_pipe {
    vkc *vk;
    uint32_t add;
    int calls;              /* create calls */
    int with_cache;         /* ... of them with a VkPipelineCache (not VK_NULL_HANDLE) */
    VkPipelineCache last;   /* the cache of the last call */
    size_t last_cache_size; /* vkGetPipelineCacheData's size of that cache when create began */
    VkResult fail;          /* VK_SUCCESS, or what create returns instead of making the pipeline */
} vkc_pipe;

static VkResult vkc_create(void *user, VkPipelineCache cache, VkPipeline *out) {
    vkc_pipe *p = (vkc_pipe *)user;
    VkSpecializationMapEntry me;
    VkSpecializationInfo si;
    VkComputePipelineCreateInfo ci;
    p->calls++;
    p->last = cache;
    p->last_cache_size = 0;
    if (cache != VK_NULL_HANDLE) {
        p->with_cache++;
        vkGetPipelineCacheData(p->vk->dev, cache, &p->last_cache_size, NULL);
    }
    if (p->fail != VK_SUCCESS) return p->fail;
    me.constantID = 0;
    me.offset = 0;
    me.size = sizeof p->add;
    memset(&si, 0, sizeof si);
    si.mapEntryCount = 1;
    si.pMapEntries = &me;
    si.dataSize = sizeof p->add;
    si.pData = &p->add;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = p->vk->module;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &si;
    ci.layout = p->vk->layout;
    return vkCreateComputePipelines(p->vk->dev, cache, 1, &ci, NULL, out);
}

/* Opens the first device with a compute queue. 0 and a reason in why when there is none. */
static int vkc_open(vkc *vk, char *why, size_t cap) {
    VkApplicationInfo app;
    VkInstanceCreateInfo ici;
    VkPhysicalDevice pds[8];
    uint32_t npd = 8, nq = 16, i;
    VkQueueFamilyProperties qf[16];
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci;
    VkDeviceCreateInfo dci;
    VkBufferCreateInfo bci;
    VkMemoryRequirements mr;
    VkPhysicalDeviceMemoryProperties mp;
    VkMemoryAllocateInfo mai;
    VkShaderModuleCreateInfo smci;
    VkDescriptorSetLayoutBinding b;
    VkDescriptorSetLayoutCreateInfo dslci;
    VkPipelineLayoutCreateInfo plci;
    VkDescriptorPoolSize ps;
    VkDescriptorPoolCreateInfo dpci;
    VkDescriptorSetAllocateInfo dsai;
    VkDescriptorBufferInfo dbi;
    VkWriteDescriptorSet w;
    VkCommandPoolCreateInfo cpci;
    memset(vk, 0, sizeof *vk);
    memset(&app, 0, sizeof app);
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "kcache";
    app.apiVersion = VK_API_VERSION_1_2;
    memset(&ici, 0, sizeof ici);
    ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ici.pApplicationInfo = &app;
    if (vkCreateInstance(&ici, NULL, &vk->inst) != VK_SUCCESS) { snprintf(why, cap, "no Vulkan instance (no driver: mesa-vulkan-drivers)"); return 0; }
    if (vkEnumeratePhysicalDevices(vk->inst, &npd, pds) < 0 || npd == 0) { snprintf(why, cap, "no Vulkan device"); return 0; }
    vk->pd = pds[0];
    {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(vk->pd, &props);
        memcpy(vk->name, props.deviceName, sizeof vk->name);
    }
    vkGetPhysicalDeviceQueueFamilyProperties(vk->pd, &nq, qf);
    for (i = 0; i < nq && !(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT); i++) {
    }
    if (i == nq) { snprintf(why, cap, "no compute queue on %.64s", vk->name); return 0; }
    vk->qfam = i;
    memset(&qci, 0, sizeof qci);
    qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    qci.queueFamilyIndex = vk->qfam;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    memset(&dci, 0, sizeof dci);
    dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    if (vkCreateDevice(vk->pd, &dci, NULL, &vk->dev) != VK_SUCCESS) { snprintf(why, cap, "vkCreateDevice failed"); return 0; }
    vkGetDeviceQueue(vk->dev, vk->qfam, 0, &vk->queue);
    memset(&bci, 0, sizeof bci);
    bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bci.size = VKC_N * sizeof(uint32_t);
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    if (vkCreateBuffer(vk->dev, &bci, NULL, &vk->buf) != VK_SUCCESS) { snprintf(why, cap, "vkCreateBuffer failed"); return 0; }
    vkGetBufferMemoryRequirements(vk->dev, vk->buf, &mr);
    vkGetPhysicalDeviceMemoryProperties(vk->pd, &mp);
    for (i = 0; i < mp.memoryTypeCount; i++)
        if ((mr.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) ==
                                                    (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT))
            break;
    if (i == mp.memoryTypeCount) { snprintf(why, cap, "no host-visible coherent memory"); return 0; }
    memset(&mai, 0, sizeof mai);
    mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    mai.allocationSize = mr.size;
    mai.memoryTypeIndex = i;
    if (vkAllocateMemory(vk->dev, &mai, NULL, &vk->mem) != VK_SUCCESS || vkBindBufferMemory(vk->dev, vk->buf, vk->mem, 0) != VK_SUCCESS) {
        snprintf(why, cap, "buffer memory failed");
        return 0;
    }
    memset(&smci, 0, sizeof smci);
    smci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    smci.codeSize = sizeof vkc_spirv;
    smci.pCode = vkc_spirv;
    if (vkCreateShaderModule(vk->dev, &smci, NULL, &vk->module) != VK_SUCCESS) { snprintf(why, cap, "vkCreateShaderModule failed"); return 0; }
    memset(&b, 0, sizeof b);
    b.binding = 0;
    b.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b.descriptorCount = 1;
    b.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    memset(&dslci, 0, sizeof dslci);
    dslci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    dslci.bindingCount = 1;
    dslci.pBindings = &b;
    memset(&plci, 0, sizeof plci);
    plci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    plci.setLayoutCount = 1;
    plci.pSetLayouts = &vk->dsl;
    ps.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    ps.descriptorCount = 1;
    memset(&dpci, 0, sizeof dpci);
    dpci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    dpci.maxSets = 1;
    dpci.poolSizeCount = 1;
    dpci.pPoolSizes = &ps;
    if (vkCreateDescriptorSetLayout(vk->dev, &dslci, NULL, &vk->dsl) != VK_SUCCESS ||
        vkCreatePipelineLayout(vk->dev, &plci, NULL, &vk->layout) != VK_SUCCESS ||
        vkCreateDescriptorPool(vk->dev, &dpci, NULL, &vk->pool) != VK_SUCCESS) {
        snprintf(why, cap, "layouts failed");
        return 0;
    }
    memset(&dsai, 0, sizeof dsai);
    dsai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    dsai.descriptorPool = vk->pool;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &vk->dsl;
    if (vkAllocateDescriptorSets(vk->dev, &dsai, &vk->set) != VK_SUCCESS) { snprintf(why, cap, "descriptor set failed"); return 0; }
    dbi.buffer = vk->buf;
    dbi.offset = 0;
    dbi.range = VK_WHOLE_SIZE;
    memset(&w, 0, sizeof w);
    w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    w.dstSet = vk->set;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &dbi;
    vkUpdateDescriptorSets(vk->dev, 1, &w, 0, NULL);
    memset(&cpci, 0, sizeof cpci);
    cpci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    cpci.queueFamilyIndex = vk->qfam;
    if (vkCreateCommandPool(vk->dev, &cpci, NULL, &vk->cpool) != VK_SUCCESS) { snprintf(why, cap, "command pool failed"); return 0; }
    return 1;
}

/* Runs pipe over v[i] = i and checks v[i] == 2i + add for every element: 1 when all are right. */
static int vkc_run_check(vkc *vk, VkPipeline pipe, uint32_t add) {
    uint32_t *v, i;
    int ok = 1;
    VkCommandBufferAllocateInfo cai;
    VkCommandBuffer cb;
    VkCommandBufferBeginInfo bi;
    VkSubmitInfo si;
    if (vkMapMemory(vk->dev, vk->mem, 0, VK_WHOLE_SIZE, 0, (void **)&v) != VK_SUCCESS) return 0;
    for (i = 0; i < VKC_N; i++) v[i] = i;
    memset(&cai, 0, sizeof cai);
    cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    cai.commandPool = vk->cpool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    if (vkAllocateCommandBuffers(vk->dev, &cai, &cb) != VK_SUCCESS) { vkUnmapMemory(vk->dev, vk->mem); return 0; }
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkBeginCommandBuffer(cb, &bi);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, vk->layout, 0, 1, &vk->set, 0, NULL);
    vkCmdDispatch(cb, VKC_N / 64, 1, 1);
    vkEndCommandBuffer(cb);
    memset(&si, 0, sizeof si);
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    if (vkQueueSubmit(vk->queue, 1, &si, VK_NULL_HANDLE) != VK_SUCCESS || vkQueueWaitIdle(vk->queue) != VK_SUCCESS) ok = 0;
    for (i = 0; ok && i < VKC_N; i++)
        if (v[i] != 2 * i + add) ok = 0;
    vkFreeCommandBuffers(vk->dev, vk->cpool, 1, &cb);
    vkUnmapMemory(vk->dev, vk->mem);
    return ok;
}

static void vkc_close(vkc *vk) {
    if (vk->dev) {
        vkDeviceWaitIdle(vk->dev);
        if (vk->cpool) vkDestroyCommandPool(vk->dev, vk->cpool, NULL);
        if (vk->pool) vkDestroyDescriptorPool(vk->dev, vk->pool, NULL);
        if (vk->layout) vkDestroyPipelineLayout(vk->dev, vk->layout, NULL);
        if (vk->dsl) vkDestroyDescriptorSetLayout(vk->dev, vk->dsl, NULL);
        if (vk->module) vkDestroyShaderModule(vk->dev, vk->module, NULL);
        if (vk->buf) vkDestroyBuffer(vk->dev, vk->buf, NULL);
        if (vk->mem) vkFreeMemory(vk->dev, vk->mem, NULL);
        vkDestroyDevice(vk->dev, NULL);
    }
    if (vk->inst) vkDestroyInstance(vk->inst, NULL);
    memset(vk, 0, sizeof *vk);
}
#endif
