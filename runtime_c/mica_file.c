/* mica_file.c: whole-file reads, atomic writes, files and folders.
 *
 * WriteFile never leaves a half-written file behind: it writes a temporary
 * file beside the target, flushes it to disk, then renames it into place.
 * A writer killed mid-write leaves its temporary; the next successful write
 * of the same file removes it, at the cost of one listing of its folder per
 * run (below).
 */
#include "mica.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

/* All of data to fd through `put` (write(2), or a socket's send(2)), again
 * after a signal interrupts it; 0 on success, else errno. */
int mica_put_all(ssize_t (*put)(int fd, const void *bytes, size_t size), int fd, const void *bytes, size_t size) {
    const char *data = bytes;
    while (size > 0) {
        ssize_t wrote = put(fd, data, size);
        if (wrote < 0) {
            if (errno != EINTR) return errno;
        } else {
            data += wrote;
            size -= (size_t)wrote;
        }
    }
    return 0;
}

int mica_write_all(int fd, const void *bytes, size_t size) {
    return mica_put_all(write, fd, bytes, size);
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

/* ---- dead writers' temporaries ----
 *
 * A writer killed mid-write leaves its temporary `target.tmpPID`; the next
 * atomic write of the same target removes it, once its writer no longer runs.
 * Reading the folder at every commit made writing n files into one folder
 * cost n listings of a growing folder, O(n^2). Instead the first commit into
 * a folder in a run reads it once and keeps the dead writers' temporaries it
 * finds (few: one per writer killed), and each commit removes its own
 * target's. A writer that dies later in the run leaves its temporary to the
 * next run. A folder is known by its device and inode, whatever the path
 * ("out", "./out"). Tasks commit at once, so all of this is under sweep_lock. */

typedef struct {
    dev_t dev;
    ino_t ino;
} folder_id;

typedef struct {
    folder_id folder;
    char *name;        /* the temporary's, in its folder */
    size_t target_len; /* its target's name is name[0, target_len) */
} leftover;

static pthread_mutex_t sweep_lock = PTHREAD_MUTEX_INITIALIZER;
static folder_id *swept; /* an open-addressing set, at most half full; ino 0 marks a free slot */
static size_t swept_slots, swept_count;
static leftover *leftovers;
static size_t leftover_count, leftover_capacity;

static bool same_folder(folder_id a, folder_id b) {
    return a.dev == b.dev && a.ino == b.ino;
}

static folder_id *swept_slot(folder_id *set, size_t slots, folder_id f) {
    size_t i = ((size_t)f.ino * 0x9E3779B97F4A7C15u ^ (size_t)f.dev) & (slots - 1);
    while (set[i].ino != 0 && !same_folder(set[i], f)) i = (i + 1) & (slots - 1);
    return &set[i];
}

/* Add f to the swept folders; false if it was there already. */
static bool first_sweep_of(folder_id f) {
    if (f.ino == 0) return false; /* no inode to know it by: never swept (no file system gives 0) */
    if (2 * (swept_count + 1) > swept_slots) {
        size_t slots = swept_slots ? 2 * swept_slots : 64;
        folder_id *set = mica_alloc_elements((int64_t)slots, sizeof *set, 0);
        for (size_t i = 0; i < swept_slots; i++)
            if (swept[i].ino != 0) *swept_slot(set, slots, swept[i]) = swept[i];
        mica_free(swept);
        swept = set;
        swept_slots = slots;
    }
    folder_id *slot = swept_slot(swept, swept_slots, f);
    if (slot->ino != 0) return false;
    *slot = f;
    swept_count++;
    return true;
}

/* The length of the target a temporary `target.tmpPID` is for, when its writer
 * no longer runs; else 0. */
static size_t dead_writers_target(const char *name) {
    const char *tmp = NULL;
    for (const char *at = strstr(name, ".tmp"); at != NULL; at = strstr(at + 1, ".tmp")) tmp = at;
    if (tmp == NULL || tmp == name || tmp[4] < '1' || tmp[4] > '9') return 0;
    char *stop;
    long pid = strtol(tmp + 4, &stop, 10);
    bool dead = *stop == 0 && pid <= INT32_MAX && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
    return dead ? (size_t)(tmp - name) : 0;
}

static void keep_leftover(folder_id f, const char *name, size_t target_len) {
    if (leftover_count == leftover_capacity) {
        size_t more = leftover_capacity ? 2 * leftover_capacity : 8;
        leftovers = mica_resize(leftovers, (int64_t)leftover_capacity, (int64_t)more, sizeof *leftovers, 0);
        leftover_capacity = more;
    }
    size_t n = strlen(name);
    char *copy = mica_alloc(n + 1, 0);
    memcpy(copy, name, n);
    leftovers[leftover_count++] = (leftover){f, copy, target_len};
}

static void find_leftovers(folder_id f, const char *folder) {
    DIR *d = opendir(folder);
    if (d == NULL) return;
    struct dirent *item;
    while ((item = readdir(d)) != NULL) {
        size_t target_len = dead_writers_target(item->d_name);
        if (target_len > 0) keep_leftover(f, item->d_name, target_len);
    }
    closedir(d);
}

/* Remove the dead writers' temporaries of `base`, the target's name in `folder`. */
static void remove_leftovers(folder_id f, const char *folder, const char *base) {
    size_t base_len = strlen(base), folder_len = strlen(folder);
    for (size_t i = 0; i < leftover_count;) {
        leftover *l = &leftovers[i];
        if (!same_folder(l->folder, f) || l->target_len != base_len || memcmp(l->name, base, base_len) != 0) {
            i++;
            continue;
        }
        size_t n = folder_len + strlen(l->name) + 2;
        char *path = mica_alloc(n, 0);
        snprintf(path, n, "%s/%s", folder, l->name);
        unlink(path);
        mica_free(path);
        mica_free(l->name);
        *l = leftovers[--leftover_count]; /* the order of the rest does not matter */
    }
}

/* After a commit of target: its dead writers' temporaries removed (see above). */
static void remove_stale_temporaries(const char *target) {
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    char *folder = mica_alloc(slash ? (size_t)(slash - target) + 2 : 2, 0);
    if (slash) memcpy(folder, target, slash == target ? 1 : (size_t)(slash - target));
    else folder[0] = '.';
    struct stat info;
    if (stat(folder, &info) == 0) {
        folder_id f = {info.st_dev, info.st_ino};
        pthread_mutex_lock(&sweep_lock);
        if (first_sweep_of(f)) find_leftovers(f, folder);
        remove_leftovers(f, folder, base);
        pthread_mutex_unlock(&sweep_lock);
    }
    mica_free(folder);
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
