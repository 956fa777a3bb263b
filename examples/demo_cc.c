/* demo_cc - a kernel compiled at run time, cached by kcache.

   The program generates C source for a small kernel, compiles it with the system C compiler into a
   shared object, loads it with dlopen and runs it. The shared object is cached under a key naming
   everything that went into it (source, options, compiler, host), so the next run loads it from
   the cache instead of compiling. Run it twice:

       ./demo_cc             # the first run of all compiles
       ./demo_cc             # loads from the cache and says how much time that saved
       ./demo_cc --fresh     # drops this kernel's entry first, so it compiles again

   The cache is the default one ($KCACHE_DIR, else $XDG_CACHE_HOME/kcache or ~/.cache/kcache). */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

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

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The compiler binary that `cc` runs, found on PATH: it goes into the key as a file dependency,
   so an upgraded compiler is a miss that kcache_explain names ("a dependency changed"). */
static int find_compiler(char *out, size_t cap) {
    const char *path = getenv("PATH");
    char dir[4096], cand[4352];
    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (n && n < sizeof dir) {
            memcpy(dir, path, n);
            dir[n] = 0;
            snprintf(cand, sizeof cand, "%s/cc", dir);
            if (access(cand, X_OK) == 0 && realpath(cand, dir)) {
                snprintf(out, cap, "%s", dir);
                return 1;
            }
        }
        path += n + (path[n] == ':');
    }
    return 0;
}

/* Compiles the kernel into a shared object and returns its bytes (malloc'd). */
static unsigned char *compile_kernel(size_t *size) {
    char dir[] = "/tmp/kcache-demo-XXXXXX", src[64], obj[64], cmd[256];
    unsigned char *bytes = NULL;
    FILE *f;
    long n;
    if (!mkdtemp(dir)) return NULL;
    snprintf(src, sizeof src, "%s/kernel.c", dir);
    snprintf(obj, sizeof obj, "%s/kernel.so", dir);
    f = fopen(src, "w");
    if (!f) return NULL;
    fputs(kernel_source, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc %s -o %s %s", compile_options, obj, src);
    if (system(cmd) == 0 && (f = fopen(obj, "rb")) != NULL) {
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        rewind(f);
        bytes = n > 0 ? (unsigned char *)malloc((size_t)n) : NULL;
        if (bytes && fread(bytes, 1, (size_t)n, f) != (size_t)n) { free(bytes); bytes = NULL; }
        fclose(f);
        *size = (size_t)n;
    }
    remove(src);
    remove(obj);
    rmdir(dir);
    return bytes;
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

int main(int argc, char **argv) {
    kcache *kc;
    kcache_key key;
    char cc[4096], why[512];
    const void *cached = NULL;
    size_t cached_size = 0, so_size = 0;
    unsigned char *payload = NULL;
    double t0, t_ready, compile_ms = 0;
    void *handle, *fn;
    long (*kernel)(int);
    int hit, fresh = argc > 1 && strcmp(argv[1], "--fresh") == 0;

    if (kcache_open(&kc, NULL) != KCACHE_OK) return 1;
    t0 = now_ms();
    if (!find_compiler(cc, sizeof cc)) { fprintf(stderr, "demo: no cc on PATH\n"); return 1; }
    kcache_key_init(&key, "demo.mandelbrot");
    kcache_key_str(&key, "source", kernel_source);
    kcache_key_str(&key, "options", compile_options);
    kcache_key_file(&key, "compiler", cc);
    kcache_key_host_from(&key, kc);
    if (fresh) { /* kcache_explain would now say "never stored": true of the store, not of the story */
        kcache_remove(kc, &key);
        snprintf(why, sizeof why, "removed on purpose (--fresh), so this run compiles");
    } else {
        kcache_explain(kc, &key, why, sizeof why);
    }

    hit = kcache_get(kc, &key, &cached, &cached_size) == KCACHE_OK && cached_size > 8;
    if (hit) {
        /* the payload is the compile time of the run that built it, then the shared object */
        memcpy(&compile_ms, cached, sizeof compile_ms);
        fn = load_kernel((const unsigned char *)cached + 8, cached_size - 8, &handle);
    } else {
        double c0 = now_ms();
        unsigned char *so = compile_kernel(&so_size);
        compile_ms = now_ms() - c0;
        if (!so) { fprintf(stderr, "demo: the C compiler failed\n"); return 1; }
        payload = (unsigned char *)malloc(so_size + 8);
        if (!payload) return 1;
        memcpy(payload, &compile_ms, 8);
        memcpy(payload + 8, so, so_size);
        free(so);
        kcache_put(kc, &key, payload, so_size + 8); /* a failure here only loses the cache entry */
        fn = load_kernel(payload + 8, so_size, &handle);
    }
    t_ready = now_ms() - t0;
    if (!fn) { fprintf(stderr, "demo: could not load the kernel: %s\n", dlerror()); return 1; }
    memcpy(&kernel, &fn, sizeof kernel);

    printf("kcache demo  (store: %s)\n", kcache_dir(kc) ? kcache_dir(kc) : "none, memory only");
    printf("  before : %s\n", why);
    printf("  kernel : %ld\n", kernel(200));
    if (hit)
        printf("  run    : HIT  - kernel ready in %.2f ms; compiling it took %.1f ms: %.0fx faster\n", t_ready, compile_ms,
               compile_ms / (t_ready > 0.001 ? t_ready : 0.001));
    else
        printf("  run    : MISS - compiled with cc and cached: kernel ready in %.1f ms (compile %.1f ms)\n", t_ready, compile_ms);
    if (cached) kcache_release(kc, cached);
    free(payload);
    dlclose(handle);
    kcache_key_free(&key);
    kcache_close(kc);
    return 0;
}
