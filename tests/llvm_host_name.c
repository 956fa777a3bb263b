/* llvm_host_name.c - prints "MAJOR:NAME " for each LLVM library given (an llvmlite's
   libllvmlite.so or a libLLVM): what its host detection calls this CPU. Run under qemu-x86_64 with
   a made-up CPUID by tests/test_inspect.sh and scripts/llvm-host-names.sh.
   Build: cc -O1 -o llvm_host_name tests/llvm_host_name.c -ldl */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    int i;
    for (i = 1; i < argc; i++) {
        void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
        void (*py)(const char **);
        unsigned (*pyver)(void);
        const char *(*c)(void);
        const char *name = "?", *p;
        if (!h) { printf("?:load-failed "); continue; }
        *(void **)&py = dlsym(h, "LLVMPY_GetHostCPUName");
        if (py) {
            *(void **)&pyver = dlsym(h, "LLVMPY_GetVersionInfo");
            py(&name);
            printf("%u:%s ", pyver ? (pyver() >> 16) & 0xff : 0, name);
        } else {
            *(void **)&c = dlsym(h, "LLVMGetHostCPUName");
            p = strstr(argv[i], "LLVM-") ? strstr(argv[i], "LLVM-") + 5 : strstr(argv[i], ".so.") + 4;
            printf("%d:%s ", atoi(p), c ? c() : "?");
        }
    }
    printf("\n");
    return 0;
}
