/* demo_cc - a kernel compiled at run time, cached by kcache.

   The program generates C source for a small kernel, compiles it with the system C compiler into a
   shared object, loads it with dlopen and runs it. The shared object is cached under a key naming
   everything that went into it (source, options, the compiler binary, host), so the next run loads
   it from the cache instead of compiling. Run it twice:

       ./demo_cc             # the first run of all compiles
       ./demo_cc             # loads from the cache and says how much time that saved
       ./demo_cc --fresh     # drops this kernel's entry first, so it compiles again
       ./demo_cc --ranks 4 --kernels 12 [--threads 2] [--fresh]
                             # a start-up: 4 processes at once, each needing 12 variants of the
                             # kernel (kcache_get_or_build_many): each compiled once, shared out

   The cache is the default one ($KCACHE_DIR, else $XDG_CACHE_HOME/kcache or ~/.cache/kcache).
   examples/jit_cache.h holds what this and nvrtc_ptx.c do the same way. */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "jit_cache.h"

#include <dlfcn.h>

static const char kernel_source[] =
    "/* escape-time count over a grid of the Mandelbrot set */\n"
    "long kernel(int n) {\n"
    "    long total = 0;\n"
    "    for (int y = 0; y < n; y++)\n"
    "        for (int x = 0; x < n; x++) {\n"
    "            double cr = -2.0 + 2.5 * x / n, ci = -1.25 + 2.5 * y / n, zr = 0, zi = 0;\n"
    "            int i = 0;\n"
    "            while (i < 256 && zr * zr + zi * zi < 4.0) {\n"
    "                double t = zr * zr - zi * zi + cr;\n"
    "                zi = 2 * zr * zi + ci;\n"
    "                zr = t;\n"
    "                i++;\n"
    "            }\n"
    "            total += i;\n"
    "        }\n"
    "    return total;\n"
    "}\n";
static const char compile_options[] = "-O2 -shared -fPIC";

/* jit_compile_fn: cc into a temp directory, the shared object's bytes back. user: NULL, or (from
   jit_ranks) the jit_kernel whose index names the variant (VARIANT, defined before the source). */
static int compile_kernel(void *user, unsigned char **out, size_t *size) {
    char dir[] = "/tmp/kcache-demo-XXXXXX", src[64], obj[64], cmd[256];
    FILE *f;
    long n;
    int rc = 1;
    if (!mkdtemp(dir)) return 1;
    snprintf(src, sizeof src, "%s/kernel.c", dir);
    snprintf(obj, sizeof obj, "%s/kernel.so", dir);
    if ((f = fopen(src, "w")) != NULL) {
        if (user) fprintf(f, "#define VARIANT %u\n", ((const jit_kernel *)user)->index);
        fputs(kernel_source, f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "cc %s -o %s %s", compile_options, obj, src);
        if (system(cmd) == 0 && (f = fopen(obj, "rb")) != NULL) {
            fseek(f, 0, SEEK_END);
            n = ftell(f);
            rewind(f);
            *out = n > 0 ? (unsigned char *)malloc((size_t)n) : NULL;
            if (*out && fread(*out, 1, (size_t)n, f) == (size_t)n) {
                *size = (size_t)n;
                rc = 0;
            } else {
                free(*out);
            }
            fclose(f);
        }
    }
    remove(src);
    remove(obj);
    rmdir(dir);
    if (rc) fprintf(stderr, "demo: the C compiler failed\n");
    return rc;
}

/* dlopen needs a file: the bytes go to a temp file that is unlinked once loaded. */
static void *load_kernel(const void *bytes, size_t size, void **handle) {
    char path[] = "/tmp/kcache-demo-so-XXXXXX";
    int fd = mkstemp(path);
    void *fn = NULL;
    *handle = NULL;
    if (fd < 0) return NULL;
    if (write(fd, bytes, size) == (ssize_t)size) {
        *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (*handle) fn = dlsym(*handle, "kernel");
    }
    close(fd);
    unlink(path);
    return fn;
}

/* jit_key_fn: variant i of the kernel (user: the compiler's path). */
static void variant_key(kcache *kc, unsigned i, void *user, kcache_key *key) {
    kcache_key_init(key, "demo.mandelbrot");
    kcache_key_str(key, "source", kernel_source);
    kcache_key_str(key, "options", compile_options);
    kcache_key_u64(key, "variant", i);
    kcache_key_file(key, "compiler", (const char *)user);
    kcache_key_host_from(key, kc);
}

int main(int argc, char **argv) {
    kcache *kc;
    kcache_key key;
    char cc[4096];
    jit_result r;
    void *handle, *fn;
    long (*kernel)(int);
    int fresh = 0, i;
    unsigned ranks = 0, kernels = 12, threads = 1;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fresh") == 0) fresh = 1;
        else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) ranks = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--kernels") == 0 && i + 1 < argc) kernels = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = (unsigned)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--fresh] [--ranks P [--kernels K] [--threads T]]\n", argv[0]);
            return 2;
        }
    }
    /* the compiler binary that `cc` runs is a file dependency: an upgraded compiler is a miss that
       kcache_explain names ("a dependency changed") */
    if (jit_find_program("cc", cc, sizeof cc) != 0) { fprintf(stderr, "demo: no cc on PATH\n"); return 1; }
    if (ranks > 0 && kernels > 0 && ranks <= 256 && kernels <= 4096)
        return jit_ranks("kcache demo ranks", ranks, threads, kernels, fresh, variant_key, compile_kernel, cc);
    if (kcache_open(&kc, NULL) != KCACHE_OK) return 1;
    kcache_key_init(&key, "demo.mandelbrot");
    kcache_key_str(&key, "source", kernel_source);
    kcache_key_str(&key, "options", compile_options);
    kcache_key_file(&key, "compiler", cc);
    kcache_key_host_from(&key, kc);
    if (jit_get(kc, &key, fresh, compile_kernel, NULL, &r) != 0) return 1;
    fn = load_kernel(r.data, r.size, &handle);
    if (!fn) { fprintf(stderr, "demo: could not load the kernel: %s\n", dlerror()); return 1; }
    memcpy(&kernel, &fn, sizeof kernel);

    jit_report_head(kc, "kcache demo", &r);
    printf("  kernel : %ld\n", kernel(200));
    jit_report_run(&r, "cc");
    jit_release(kc, &r);
    dlclose(handle);
    kcache_key_free(&key);
    kcache_close(kc);
    return 0;
}
