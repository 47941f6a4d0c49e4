/* allocator.h: the runtime's allocator for the C harnesses that link a part of
 * the runtime without mica_core.c (and so without the rest of it). Included
 * once, by the harness's own file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *mica_alloc(size_t bytes, int line) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory at %d\n", line);
        exit(2);
    }
    return p;
}

void *mica_alloc_elements(int64_t count, size_t size, int line) {
    return mica_alloc((size_t)count * size, line);
}

void *mica_resize(void *data, int64_t old_count, int64_t new_count, size_t size, int line) {
    void *fresh = mica_alloc_elements(new_count, size, line);
    int64_t keep = old_count < new_count ? old_count : new_count;
    if (data && keep > 0) memcpy(fresh, data, (size_t)keep * size);
    free(data);
    return fresh;
}

void mica_free(void *p) {
    free(p);
}
