/* opencl_demo_kernel.h - the program examples/opencl_demo.c builds (make demo); bench/bench_remote.c
   measures its cold compile and caches its binary, so both take it from here. */
#ifndef OPENCL_DEMO_KERNEL_H
#define OPENCL_DEMO_KERNEL_H
#define OPENCL_DEMO_SOURCE                                                                       \
    "/* escape-time count of one pixel of the Mandelbrot set */\n"                               \
    "kernel void mandel(global int *out, int w, int h) {\n"                                       \
    "    int x = get_global_id(0), y = get_global_id(1);\n"                                       \
    "    float cr = -2.0f + 2.5f * x / w, ci = -1.25f + 2.5f * y / h, zr = 0.0f, zi = 0.0f;\n"     \
    "    int i = 0;\n"                                                                            \
    "    while (i < 256 && zr * zr + zi * zi < 4.0f) {\n"                                         \
    "        float t = zr * zr - zi * zi + cr;\n"                                                 \
    "        zi = 2.0f * zr * zi + ci;\n"                                                         \
    "        zr = t;\n"                                                                           \
    "        i++;\n"                                                                              \
    "    }\n"                                                                                     \
    "    out[y * w + x] = i;\n"                                                                   \
    "}\n"
#define OPENCL_DEMO_OPTIONS "-cl-mad-enable"
#endif
