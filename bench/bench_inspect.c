/* bench_inspect - what kcache-inspect costs on a big numba index, as a ratio to its floor.
 *
 *   (a) the text report of a 200-overload numba 0.68 index (bench/data/numba-200: one function
 *       compiled for 200 signatures by numba 0.68.1, its real index of 232 KB), with its 200 .nbc
 *       data files beside it (copies of its first one, 7.9 KB): the whole assessment, as
 *       `kcache-inspect --cpu C --features F FILE.nbi` does it, C and F those of the machine
 *       that made it, so that every machine does the same work (decode, the source's sha256
 *       stamp, every data file present and unpickling, the imports, the report)
 *                                                                                goal <= 20 ms
 *   (b) the same as --json
 *   (c) the text report with this machine's CPU detected, as `kcache-inspect FILE.nbi` does:
 *       the features are then compared name by name (another LLVM's list); on another CPU than
 *       the index's, nothing matches and no data file is read, so this one varies by machine
 *   (d) the floor: reading the index, the source and the 200 data files (open, read, close)
 *
 * Timings are the best of several rounds in one process (a run of the tool adds a process
 * start, about 2 ms here); the machine is noisy: read the ratio, not the absolute numbers.
 * Everything runs in a temp directory on the filesystem of $TMPDIR (default /tmp).
 *
 * Build: make build/bench_inspect (this file with kcache-inspect's files but its main) */
#include "../tools/inspect.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 15

static unsigned char *read_all(const char *path, size_t *len)
{
    unsigned char *b = ki_slurp(path, KI_MAX_FILE, len);
    if (!b) { fprintf(stderr, "bench_inspect: cannot read %s\n", path); exit(1); }
    return b;
}

static void write_all(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) { fprintf(stderr, "bench_inspect: cannot write %s\n", path); exit(1); }
}

static double best_of(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[0];
}

int main(int argc, char **argv)
{
    const char *data = argc > 1 ? argv[1] : "bench/data/numba-200";
    const char *tmpd = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[4096], path[8192], ix_path[8192], src_path[8192];
    unsigned char *ix_buf, *nbc, *src;
    size_t ix_len, nbc_len, src_len, k, nfiles = 0;
    double t_text[ROUNDS], t_json[ROUNDS], t_det[ROUNDS], t_floor[ROUNDS];
    nb_index ix;
    char err[600];
    int r;
    ki_opts op;
    char cpu[128], *feat;

    /* the fixture, with 200 data files named as its index names them */
    snprintf(dir, sizeof dir, "%s/kcache-bench-inspect.%ld", tmpd, (long)getpid());
    snprintf(path, sizeof path, "%s/__pycache__", dir);
    if (mkdir(dir, 0700) != 0 || mkdir(path, 0700) != 0) { fprintf(stderr, "bench_inspect: cannot make %s\n", path); return 1; }
    snprintf(path, sizeof path, "%s/__pycache__/m200.pick-4.py311.nbi", data);
    ix_buf = read_all(path, &ix_len);
    snprintf(path, sizeof path, "%s/__pycache__/m200.pick-4.py311.1.nbc", data);
    nbc = read_all(path, &nbc_len);
    snprintf(path, sizeof path, "%s/m200.py", data);
    src = read_all(path, &src_len);
    snprintf(ix_path, sizeof ix_path, "%s/__pycache__/m200.pick-4.py311.nbi", dir);
    snprintf(src_path, sizeof src_path, "%s/m200.py", dir);
    write_all(ix_path, ix_buf, ix_len);
    write_all(src_path, src, src_len);
    if (nb_decode(ix_buf, ix_len, &ix, err, sizeof err) != 0 || ix.nov != 200) {
        fprintf(stderr, "bench_inspect: the fixture is not a 200-overload index (%s)\n", err);
        return 1;
    }
    /* the CPU the index was made on, given as --cpu/--features would: the same work on any machine
       (every overload matches, so every data file is checked) */
    memset(&op, 0, sizeof op);
    snprintf(cpu, sizeof cpu, "%.*s", (int)ix.ov[0].cpu->n, (const char *)ix.ov[0].cpu->s);
    feat = (char *)malloc(ix.ov[0].features->n + 1);
    if (!feat) return 1;
    memcpy(feat, ix.ov[0].features->s, ix.ov[0].features->n);
    feat[ix.ov[0].features->n] = 0;
    op.cpu = cpu;
    op.features = feat;
    for (k = 0; k < ix.nov; k++) {
        if (!ix.ov[k].data) continue;
        snprintf(path, sizeof path, "%s/__pycache__/%.*s", dir, (int)ix.ov[k].data->n, (const char *)ix.ov[k].data->s);
        write_all(path, nbc, nbc_len);
        nfiles++;
    }
    nb_index_free(&ix);

    for (r = 0; r < ROUNDS; r++) {
        ki_out o;
        double t0;
        int json;
        for (json = 0; json < 3; json++) {
            ki_opts o2 = op;
            memset(&o, 0, sizeof o);
            o2.json = json == 1;
            if (json == 2) o2.cpu = o2.features = NULL;   /* detected */
            t0 = now_s();
            if (ki_numba_report(ix_buf, ix_len, ix_path, &o2, &o, err, sizeof err) != 0) {
                fprintf(stderr, "bench_inspect: %s\n", err);
                return 1;
            }
            (json == 0 ? t_text : json == 1 ? t_json : t_det)[r] = now_s() - t0;
            if (r == 0 && !json && !strstr(o.buf, "verdict    hit: 200 of 200")) {
                fprintf(stderr, "bench_inspect: not the report expected:\n%.*s\n", (int)(o.len < 3000 ? o.len : 3000), o.buf);
                return 1;
            }
            ko_free(&o);
        }
        /* the floor: the bytes the report has to read, read and nothing else */
        {
            double t1 = now_s();
            size_t n, total = 0;
            unsigned char *b = ki_slurp(ix_path, KI_MAX_FILE, &n);
            total += n;
            free(b);
            b = ki_slurp(src_path, KI_MAX_FILE, &n);
            total += n;
            free(b);
            for (k = 1; k <= nfiles; k++) {
                snprintf(path, sizeof path, "%s/__pycache__/m200.pick-4.py311.%zu.nbc", dir, k);
                b = ki_slurp(path, KI_MAX_FILE, &n);
                total += n;
                free(b);
            }
            t_floor[r] = now_s() - t1;
            if (total == 0) return 1;
        }
    }
    {
        double text = best_of(t_text, ROUNDS), json = best_of(t_json, ROUNDS), det = best_of(t_det, ROUNDS);
        double floor_ = best_of(t_floor, ROUNDS);
        printf("kcache-inspect on a 200-overload numba index (%zu KB) with its %zu data files (%zu KB each):\n", ix_len >> 10,
               nfiles, nbc_len >> 10);
        printf("  (a) text report   %7.2f ms  goal <= 20 ms   %5.1fx the floor\n", text * 1e3, text / floor_);
        printf("  (b) --json        %7.2f ms                  %5.1fx the floor\n", json * 1e3, json / floor_);
        printf("  (c) CPU detected  %7.2f ms                  %5.1fx the floor (varies with the machine's CPU)\n", det * 1e3,
               det / floor_);
        printf("  (d) floor: read the index, the source and the data files  %6.2f ms\n", floor_ * 1e3);
        printf("  (best of %d rounds; running the tool adds a process start)\n", ROUNDS);
    }
    free(ix_buf);
    free(nbc);
    free(src);
    free(feat);
    rm_rf(dir);
    return 0;
}
