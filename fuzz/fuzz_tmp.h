/* fuzz_tmp.h - the fuzz targets' temp directories: removing a tree without following symlinks,
   and sweeping what an earlier run left when it died. Included after kcache.h (which brings the
   system headers). */
#ifndef FUZZ_TMP_H
#define FUZZ_TMP_H
#include <dirent.h>
#include <limits.h>
#include <signal.h>

static void rm_tree_at(int dfd, const char *name);

/* Removes everything inside the directory open as fd, and closes fd. */
static void empty_dir_fd(int fd)
{
    DIR *dp = fdopendir(fd);
    struct dirent *de;
    if (!dp) { close(fd); return; }
    while ((de = readdir(dp)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) rm_tree_at(fd, de->d_name);
    closedir(dp);
}

/* Removes everything inside dir (not dir itself). */
static void empty_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) empty_dir_fd(fd);
}

static void rm_tree_at(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        empty_dir_fd(fd);
        unlinkat(dfd, name, AT_REMOVEDIR);
    } else {
        unlinkat(dfd, name, 0);
    }
}

/* Removes what an earlier run of this target left in tmp when it died (a crash skips the exit
   handler): directories named prefix<pid>-..., of pids that are gone. */
static void sweep_stale(const char *tmp, const char *prefix)
{
    DIR *dp = opendir(tmp);
    struct dirent *de;
    size_t pl = strlen(prefix);
    if (!dp) return;
    while ((de = readdir(dp)) != NULL) {
        char *end;
        unsigned long pid;
        if (strncmp(de->d_name, prefix, pl) != 0) continue;
        pid = strtoul(de->d_name + pl, &end, 10);
        if (end == de->d_name + pl || *end != '-' || pid == 0 || pid > INT_MAX) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        rm_tree_at(dirfd(dp), de->d_name);
    }
    closedir(dp);
}
#endif
