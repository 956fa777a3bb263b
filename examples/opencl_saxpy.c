/* opencl_saxpy - the smallest useful OpenCL program with kcache: y = a*x + y on the first device.

   kcache_cl_build takes what clCreateProgramWithSource + clBuildProgram take, and returns the built
   program. The first run compiles and stores the device binary; every later run loads it from the
   cache (KCACHE_DIR, else ~/.cache/kcache) in a millisecond or two instead of compiling.

       cc -std=c99 -I. examples/opencl_saxpy.c -lOpenCL -lpthread -o saxpy
       ./saxpy; ./saxpy          # the second run says "from the cache" */
#define KCACHE_IMPLEMENTATION
#ifndef KCACHE_OPENCL
#define KCACHE_OPENCL /* the OpenCL part of kcache.h (needs -lOpenCL) */
#endif
#include "kcache.h"

#include <stdio.h>

static const char *source =
    "kernel void saxpy(float a, global const float *x, global float *y) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

int main(void) {
    enum { N = 1024 };
    float x[N], y[N], a = 2.0f;
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    cl_mem bx, by;
    cl_int err;
    size_t global = N;
    int i, hit = 0, wrong = 0;
    kcache *kc = NULL;

    for (i = 0; i < N; i++) { x[i] = (float)i; y[i] = 1.0f; }
    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
        fprintf(stderr, "saxpy: no OpenCL device\n");
        return 1;
    }
    ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    queue = clCreateCommandQueue(ctx, device, 0, &err);

    kcache_open(&kc, NULL); /* a cache that cannot open is no error: kc NULL just builds */
    program = kcache_cl_build(kc, ctx, 1, &device, "saxpy", 1, &source, NULL, "-cl-fast-relaxed-math", &hit, &err);
    if (!program) {
        char log[4096];
        kcache_cl_build_log(kc, log, sizeof log);
        fprintf(stderr, "saxpy: build failed (%d):\n%s\n", (int)err, log);
        return 1;
    }

    kernel = clCreateKernel(program, "saxpy", &err);
    bx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
    by = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof y, y, &err);
    clSetKernelArg(kernel, 0, sizeof a, &a);
    clSetKernelArg(kernel, 1, sizeof bx, &bx);
    clSetKernelArg(kernel, 2, sizeof by, &by);
    clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    clEnqueueReadBuffer(queue, by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL);

    for (i = 0; i < N; i++) wrong += y[i] != a * (float)i + 1.0f;
    printf("saxpy: program %s; y[100] = %g; %s\n", hit ? "from the cache" : "compiled (and cached)", y[100],
           wrong ? "WRONG" : "all right");

    clReleaseMemObject(bx);
    clReleaseMemObject(by);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    kcache_close(kc);
    return wrong != 0;
}
