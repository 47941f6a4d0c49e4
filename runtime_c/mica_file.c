/* mica_file.c: whole-file reads and atomic writes.
 *
 * WriteFile never leaves a half-written file behind: it writes a temporary
 * file beside the target, flushes it to disk, then renames it into place.
 */
#include "mica.h"

#include <errno.h>
#include <fcntl.h>
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

/* Write `size` bytes at `data` to `name` atomically; 0 on success, else errno. */
int mica_write_atomically(const char *name, const void *data, size_t size) {
    size_t n = strlen(name);
    char *temp = mica_alloc(n + 32, 0);
    snprintf(temp, n + 32, "%s.tmp%ld", name, (long)getpid());
    int fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int error = 0;
    if (fd < 0) {
        error = errno;
    } else {
        const char *p = data;
        size_t left = size;
        while (left > 0 && error == 0) {
            ssize_t wrote = write(fd, p, left);
            if (wrote < 0) {
                if (errno != EINTR) error = errno;
            } else {
                p += wrote;
                left -= (size_t)wrote;
            }
        }
        if (error == 0 && fsync(fd) != 0) error = errno;
        if (close(fd) != 0 && error == 0) error = errno;
        if (error == 0 && rename(temp, name) != 0) error = errno;
        if (error != 0) unlink(temp);
    }
    mica_free(temp);
    return error;
}

void mica_write_file(mica_string path, mica_string text, int line) {
    char *name = c_path(path);
    int error = mica_write_atomically(name, text.data ? text.data : "", (size_t)text.len);
    if (error != 0) mica_trapf(line, "cannot write '%s': %s", name, strerror(error));
    mica_free(name);
}
