/* mica_file.c: whole-file reads and atomic writes.
 *
 * WriteFile never leaves a half-written file behind: it writes a temporary
 * file beside the target, flushes it to disk, then renames it into place.
 * A writer killed mid-write leaves its temporary; the next successful write
 * of the same file removes it.
 */
#include "mica.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *c_path(mica_string path) {
    char *p = mica_alloc((size_t)path.len + 1, 0);
    memcpy(p, path.data ? path.data : "", (size_t)path.len);
    return p;
}

mica_string mica_read_file(mica_string path, int line) {
    char *name = c_path(path);
    FILE *f = fopen(name, "rb");
    if (f == NULL) mica_trapf(line, "cannot read '%s': %s", name, strerror(errno));
    mica_string s = {0, NULL};
    size_t capacity = 1 << 16;
    s.data = mica_alloc(capacity + 1, line);
    size_t got;
    while ((got = fread(s.data + s.len, 1, capacity - (size_t)s.len, f)) > 0) {
        s.len += (int64_t)got;
        if ((size_t)s.len == capacity) {
            s.data = mica_resize(s.data, (int64_t)capacity + 1, (int64_t)capacity * 2 + 1, 1, line);
            capacity *= 2;
        }
    }
    if (ferror(f)) mica_trapf(line, "cannot read '%s': %s", name, strerror(errno));
    fclose(f);
    s.data[s.len] = 0;
    mica_free(name);
    return s;
}

bool mica_file_exists(mica_string path) {
    char *name = c_path(path);
    struct stat info;
    bool exists = stat(name, &info) == 0;
    mica_free(name);
    return exists;
}

/* All of data to fd; 0 on success, else errno. */
static int write_all(int fd, const char *data, size_t size) {
    while (size > 0) {
        ssize_t wrote = write(fd, data, size);
        if (wrote < 0) {
            if (errno != EINTR) return errno;
        } else {
            data += wrote;
            size -= (size_t)wrote;
        }
    }
    return 0;
}

/* The file a path names once its symlinks are followed (which need not exist yet). */
static char *follow_links(const char *name) {
    size_t n = strlen(name);
    char *path = mica_alloc(n + 1, 0);
    memcpy(path, name, n);
    for (int hops = 0; hops < 40; hops++) {
        char link[4096];
        ssize_t got = readlink(path, link, sizeof link - 1);
        if (got < 0) break; /* not a symlink */
        link[got] = 0;
        const char *slash = strrchr(path, '/');
        size_t keep = link[0] == '/' || slash == NULL ? 0 : (size_t)(slash - path) + 1; /* a relative link: its directory */
        char *next = mica_alloc(keep + (size_t)got + 1, 0);
        memcpy(next, path, keep);
        memcpy(next + keep, link, (size_t)got);
        mica_free(path);
        path = next;
    }
    return path;
}

/* Remove the temporaries `target.tmpPID` beside target whose writer no longer
 * runs: what a kill during an earlier write left behind. */
static void remove_stale_temporaries(const char *target) {
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    size_t base_len = strlen(base);
    char *folder = mica_alloc(slash ? (size_t)(slash - target) + 2 : 2, 0);
    if (slash) memcpy(folder, target, slash == target ? 1 : (size_t)(slash - target));
    else folder[0] = '.';
    DIR *d = opendir(folder);
    mica_free(folder);
    if (d == NULL) return;
    struct dirent *item;
    while ((item = readdir(d)) != NULL) {
        const char *pid_text = item->d_name + base_len + 4;
        if (strncmp(item->d_name, base, base_len) != 0 || strncmp(item->d_name + base_len, ".tmp", 4) != 0 ||
            *pid_text < '1' || *pid_text > '9')
            continue;
        char *stop;
        long pid = strtol(pid_text, &stop, 10);
        if (*stop == 0 && pid <= INT32_MAX && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            unlinkat(dirfd(d), item->d_name, 0);
    }
    closedir(d);
}

/* Write `size` bytes at `data` to `name` atomically; 0 on success, else errno.
 * A symlink is followed and the file it names replaced; a path that is no
 * regular file (a device such as /dev/null) is written in place, since
 * renaming over it would remove the device. */
int mica_write_atomically(const char *name, const void *data, size_t size) {
    char *resolved = follow_links(name);
    const char *target = resolved;
    struct stat info;
    int error = 0;
    if (stat(target, &info) == 0 && !S_ISREG(info.st_mode)) {
        int fd = open(target, O_WRONLY | O_TRUNC);
        if (fd < 0) {
            error = errno;
        } else {
            error = write_all(fd, data, size);
            if (close(fd) != 0 && error == 0) error = errno;
        }
        mica_free(resolved);
        return error;
    }
    size_t n = strlen(target);
    char *temp = mica_alloc(n + 32, 0);
    snprintf(temp, n + 32, "%s.tmp%ld", target, (long)getpid());
    int fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        error = errno;
    } else {
        error = write_all(fd, data, size);
        if (error == 0 && fsync(fd) != 0) error = errno;
        if (close(fd) != 0 && error == 0) error = errno;
        if (error == 0 && rename(temp, target) != 0) error = errno;
        if (error != 0) unlink(temp);
        else remove_stale_temporaries(target);
    }
    mica_free(temp);
    mica_free(resolved);
    return error;
}

void mica_write_file(mica_string path, mica_string text, int line) {
    char *name = c_path(path);
    int error = mica_write_atomically(name, text.data ? text.data : "", (size_t)text.len);
    if (error != 0) mica_trapf(line, "cannot write '%s': %s", name, strerror(error));
    mica_free(name);
}
