/* mica_file.c: whole-file reads, atomic writes, files and folders.
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

char *mica_c_path(mica_string path) {
    char *p = mica_alloc((size_t)path.len + 1, 0);
    memcpy(p, path.data ? path.data : "", (size_t)path.len);
    return p;
}

mica_string mica_read_file(mica_string path, int line) {
    char *name = mica_c_path(path);
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
    char *name = mica_c_path(path);
    struct stat info;
    bool exists = stat(name, &info) == 0;
    mica_free(name);
    return exists;
}

/* All of data to fd; 0 on success, else errno. */
int mica_write_all(int fd, const void *bytes, size_t size) {
    const char *data = bytes;
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

/* Begin writing `name` atomically: the bytes go to a temporary beside the
 * target, which mica_atomic_commit renames into place. A symlink is followed
 * and the file it names replaced; a path that is no regular file (a device
 * such as /dev/null) is written in place, since renaming over it would remove
 * the device. 0 on success, else errno (and w holds nothing). */
int mica_atomic_begin(const char *name, mica_atomic *w) {
    char *resolved = follow_links(name);
    struct stat info;
    w->target = resolved;
    w->temp = NULL;
    if (stat(resolved, &info) == 0 && !S_ISREG(info.st_mode)) {
        w->fd = open(resolved, O_WRONLY | O_TRUNC);
    } else {
        size_t n = strlen(resolved);
        w->temp = mica_alloc(n + 32, 0);
        snprintf(w->temp, n + 32, "%s.tmp%ld", resolved, (long)getpid());
        w->fd = open(w->temp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    if (w->fd >= 0) return 0;
    int error = errno;
    mica_free(w->temp);
    mica_free(w->target);
    return error;
}

/* Finish a write begun by mica_atomic_begin: the temporary, flushed to disk,
 * becomes the target. `error` is an earlier write's errno (0: none), which
 * abandons the write instead. 0 on success, else errno. */
int mica_atomic_commit(mica_atomic *w, int error) {
    if (w->temp != NULL && error == 0 && fsync(w->fd) != 0) error = errno;
    if (close(w->fd) != 0 && error == 0) error = errno;
    if (w->temp != NULL) {
        if (error == 0 && rename(w->temp, w->target) != 0) error = errno;
        if (error != 0) unlink(w->temp);
        else remove_stale_temporaries(w->target);
    }
    mica_free(w->temp);
    mica_free(w->target);
    return error;
}

/* Write `size` bytes at `data` to `name` atomically; 0 on success, else errno. */
int mica_write_atomically(const char *name, const void *data, size_t size) {
    mica_atomic w;
    int error = mica_atomic_begin(name, &w);
    if (error != 0) return error;
    return mica_atomic_commit(&w, mica_write_all(w.fd, data, size));
}

void mica_write_file(mica_string path, mica_string text, int line) {
    char *name = mica_c_path(path);
    int error = mica_write_atomically(name, text.data ? text.data : "", (size_t)text.len);
    if (error != 0) mica_trapf(line, "cannot write '%s': %s", name, strerror(error));
    mica_free(name);
}

/* ---- files and folders: each answers false, naming the path, instead of trapping ---- */

static int by_bytes(const void *a, const void *b) {
    return (int)mica_str_compare(*(const mica_string *)a, *(const mica_string *)b);
}

bool mica_list_dir(mica_string path, int64_t *len, mica_string **e) {
    char *name = mica_c_path(path);
    DIR *d = opendir(name);
    if (d == NULL) {
        bool ok = mica_fail("cannot list '%s': %s", name, strerror(errno));
        mica_free(name);
        return ok;
    }
    mica_strings_drop(len, e);
    int64_t capacity = 0;
    struct dirent *item;
    errno = 0;
    while ((item = readdir(d)) != NULL) {
        if (strcmp(item->d_name, ".") != 0 && strcmp(item->d_name, "..") != 0)
            mica_strings_push(len, e, &capacity, mica_str_lit(item->d_name, (int64_t)strlen(item->d_name)));
        errno = 0;
    }
    int error = errno;
    closedir(d);
    qsort(*e, (size_t)*len, sizeof **e, by_bytes);
    bool ok = error == 0 || mica_fail("cannot list '%s': %s", name, strerror(error));
    mica_free(name);
    return ok;
}

/* The answer of a call that returned `result` (0: done) on the path `name`, which it frees. */
static bool answer(int result, const char *doing, char *name) {
    bool ok = result == 0 || mica_fail("cannot %s '%s': %s", doing, name, strerror(errno));
    mica_free(name);
    return ok;
}

bool mica_make_dir(mica_string path) {
    char *name = mica_c_path(path);
    return answer(mkdir(name, 0777), "make folder", name);
}

bool mica_remove_file(mica_string path) {
    char *name = mica_c_path(path);
    return answer(unlink(name), "remove", name);
}

bool mica_rename_file(mica_string from, mica_string to) {
    char *old_name = mica_c_path(from), *new_name = mica_c_path(to);
    bool ok = rename(old_name, new_name) == 0 ||
              mica_fail("cannot rename '%s' to '%s': %s", old_name, new_name, strerror(errno));
    mica_free(old_name);
    mica_free(new_name);
    return ok;
}

bool mica_file_size(mica_string path, int64_t *n) {
    char *name = mica_c_path(path);
    struct stat info;
    int result = stat(name, &info);
    if (result == 0 && S_ISDIR(info.st_mode)) {
        errno = EISDIR; /* a folder's st_size is its listing's, not a size a reader would want */
        result = -1;
    }
    if (result == 0) *n = (int64_t)info.st_size;
    return answer(result, "read the size of", name);
}
